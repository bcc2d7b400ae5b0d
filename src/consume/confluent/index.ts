/**
 * The Kafka adapter over `@confluentinc/kafka-javascript` 1.10.1 (librdkafka 2.15): implements the ports
 * of consume/port.ts. Only app.ts and tests import it.
 *
 * API surface: the node-rdkafka-style callback API (`RdKafka.KafkaConsumer`, `Producer`, `AdminClient`),
 * not the KafkaJS-compatible promise API, because the exactly-once protocol needs exactly what the
 * KafkaJS layer hides:
 * - Batch polling with back-pressure: `consume(n)` returns at most n records and buffers nothing in JS.
 *   KafkaJS's `run({eachBatch})` drives its own loop, message cache and worker concurrency; the task loop
 *   must decide when to poll (cycle boundaries, commit in progress, paused partitions).
 * - Revocation that waits for our work: with a `rebalance_cb` function librdkafka does not proceed
 *   until we call incrementalUnassign, so `onRevoked` can finish (announce + commit) or abandon the cycle
 *   first, and the partitions reach another member only afterwards. The KafkaJS layer also awaits a user
 *   `rebalance_cb`, but inside its own consume loop and cache bookkeeping, which we would be fighting.
 * - Offsets: the KafkaJS layer carries offsets as strings and forbids `enable.auto.offset.store`; here
 *   they are numbers we convert to bigint at this boundary (librdkafka's offsets fit 2^53 in practice;
 *   larger ones fail loudly, never wrap).
 * - The same transactional calls (`sendOffsetsToTransaction(offsets, consumer)`, which reads the group
 *   metadata at call time, KIP-447) and the admin calls we need (createTopic, describeTopics with topic
 *   ids, listOffsets with READ_COMMITTED for the last stable offset) exist on both surfaces.
 * Errors from the client become core/errors.ts classes in errors.ts, by code and librdkafka's flags.
 *
 * Threads: the native addon does not load in worker threads; construct these clients on the main thread
 * (or in a child process per task).
 */
export { ConfluentKafkaSource } from './source.ts';
export type { SourceOptions } from './source.ts';
export { ConfluentTransactionalProducer } from './producer.ts';
export type { ProducerOptions } from './producer.ts';
export { ConfluentRecordProducer } from './record-producer.ts';
export { recordProducerConfig } from './record-producer-settings.ts';
export type { RecordProducerOptions } from './record-producer.ts';
export { ConfluentControlTopicReader } from './control-reader.ts';
export type { ControlReaderOptions } from './control-reader.ts';
export { ConfluentKafkaAdmin } from './admin.ts';
export type { AdminOptions } from './admin.ts';
export { translateKafkaError, KAFKA_CODES } from './errors.ts';
export type { ClientSettings } from './settings.ts';
export { sourceOffsetReset } from './settings.ts';
