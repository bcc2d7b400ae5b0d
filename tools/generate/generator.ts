/**
 * `icefloe generate`: registers the order schema (Avro, Protobuf) under the topic's value subject
 * (TopicNameStrategy) and produces `count` order events (orders.ts) to Kafka, paced to a rate, in batches
 * with several in flight, through the ports only (a RecordProducer, a SchemaRegistrar, a KafkaAdmin).
 *
 * Pacing: batch k is sent no earlier than `k × batchSize / rate` seconds after the start, so the average
 * rate holds over any stretch longer than a batch and a slow moment is caught up afterwards (no drift);
 * a batch covers about 50 ms at the chosen rate. At rate 0 batches go out as fast as the producer takes
 * them, with at most `maxInFlight` unconfirmed.
 *
 * Owns: option checks, topic preparation, pacing, statistics. Must not: know a Kafka client or a registry
 * library (index.ts, the tool's composition, wires the adapters).
 */
import { ConfigError } from '../../src/core/errors.ts';
import type { DeliveredRecord, KafkaAdmin, OutgoingRecord, RecordProducer } from '../../src/consume/port.ts';
import { topicNameSubject } from '../../src/decode/registry-port.ts';
import type { SchemaRegistrar } from '../../src/decode/registry-port.ts';
import { orderEncoder } from './order-encodings.ts';
import { orderAvroSchema, orderProtobufSchema } from './order-schemas.ts';
import { ORDER_FORMATS, OrderGenerator } from './orders.ts';
import type { OrderEvent, OrderFormat, SchemaVersion } from './orders.ts';

export interface GenerateOrdersOptions {
  readonly producer: RecordProducer;
  /** Registers the schema; required for avro and protobuf, unused for json and json-schema. */
  readonly registrar?: SchemaRegistrar;
  /** When given: creates the topic if it is missing (see `topicPartitions`) and checks `partitions` against it. */
  readonly admin?: KafkaAdmin;
  /** Partitions of the topic when `admin` has to create it (default 6). */
  readonly topicPartitions?: number;
  /** Replication factor when `admin` creates the topic (default -1: the broker's default). */
  readonly replicationFactor?: number;
  readonly topic: string;
  /** avro / protobuf: Confluent-framed with a registered schema; json-schema: JsonConverter envelope; json: bare JSON. */
  readonly format: OrderFormat;
  readonly count: number;
  /** Records per second; 0 (the default): as fast as possible. */
  readonly ratePerSec?: number;
  /** Produce only to these partitions (round robin over them); default: the key chooses (librdkafka's partitioner). */
  readonly partitions?: readonly number[];
  /** Default 1. */
  readonly seed?: number;
  /** Default 1. */
  readonly schemaVersion?: SchemaVersion;
  /**
   * Event time of the first event, then 10 ms apart: every value is a function of the seed. Without it,
   * event times follow the clock (live data: close to the records' Kafka timestamps).
   */
  readonly startTimeMs?: number;
  /** Called once per confirmed batch, with where each record landed and the events, position by position. */
  readonly onDelivered?: (delivered: readonly DeliveredRecord[], events: readonly OrderEvent[]) => void;
  /** Records per send; default: about 50 ms at the rate, 2,000 at rate 0. */
  readonly batchSize?: number;
  /** Unconfirmed batches at once (default 16). */
  readonly maxInFlight?: number;
  /** Clock for pacing and live event times (default Date.now). */
  readonly now?: () => number;
}

export interface GenerateStats {
  /** Records confirmed delivered. */
  readonly records: number;
  /** Their value bytes (keys and headers not counted). */
  readonly bytes: number;
  readonly durationMs: number;
  /** The registered schema's id; null for the JSON formats. */
  readonly schemaId: number | null;
}

const DEFAULT_TOPIC_PARTITIONS = 6;
const MAX_BATCH = 2000;

function checkOptions(o: GenerateOrdersOptions): void {
  const bad = (what: string): never => {
    throw new ConfigError(`generate: ${what}`);
  };
  if (o.topic === '') bad('the topic may not be empty');
  if (!ORDER_FORMATS.includes(o.format)) bad(`unknown format ${String(o.format)}: one of ${ORDER_FORMATS.join(', ')}`);
  if (!Number.isSafeInteger(o.count) || o.count < 0) bad(`count must be a non-negative integer, not ${o.count}`);
  const rate = o.ratePerSec ?? 0;
  if (!Number.isFinite(rate) || rate < 0) bad(`the rate must be a non-negative number of records per second, not ${rate}`);
  if (o.schemaVersion !== undefined && o.schemaVersion !== 1 && o.schemaVersion !== 2) bad(`schema version must be 1 or 2, not ${String(o.schemaVersion)}`);
  if (o.partitions !== undefined) {
    if (o.partitions.length === 0) bad('the list of partitions to produce to is empty');
    for (const p of o.partitions) if (!Number.isInteger(p) || p < 0) bad(`partition ${p} is not a partition number`);
  }
  if (o.topicPartitions !== undefined && (!Number.isInteger(o.topicPartitions) || o.topicPartitions < 1)) bad(`the topic needs at least one partition, not ${o.topicPartitions}`);
  if (o.batchSize !== undefined && (!Number.isInteger(o.batchSize) || o.batchSize < 1)) bad(`batch size must be a positive integer, not ${o.batchSize}`);
  if (o.maxInFlight !== undefined && (!Number.isInteger(o.maxInFlight) || o.maxInFlight < 1)) bad(`max in flight must be a positive integer, not ${o.maxInFlight}`);
}

/** Creates the topic if missing and checks that every chosen partition exists. */
async function prepareTopic(o: GenerateOrdersOptions, admin: KafkaAdmin): Promise<void> {
  await admin.ensureTopic({ name: o.topic, partitions: o.topicPartitions ?? DEFAULT_TOPIC_PARTITIONS, replicationFactor: o.replicationFactor ?? -1 });
  if (o.partitions === undefined) return;
  const n = await admin.partitionCount(o.topic);
  const missing = o.partitions.filter((p) => p >= n);
  if (missing.length > 0) throw new ConfigError(`generate: topic ${o.topic} has ${n} partitions; there is no partition ${missing.join(', ')}`);
}

/** Registers the format's schema (TopicNameStrategy subject) and returns its id; null for JSON. */
async function registerSchema(o: GenerateOrdersOptions, version: SchemaVersion): Promise<number | null> {
  if (o.format !== 'avro' && o.format !== 'protobuf') return null;
  if (o.registrar === undefined) throw new ConfigError(`generate: the ${o.format} format needs a schema registry`);
  const subject = topicNameSubject(o.topic);
  return o.format === 'avro'
    ? o.registrar.register(subject, { type: 'AVRO', schema: JSON.stringify(orderAvroSchema(version)) })
    : o.registrar.register(subject, { type: 'PROTOBUF', schema: orderProtobufSchema(version) });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Produces `count` order events; resolves with the statistics once every record is confirmed. */
export async function generateOrders(options: GenerateOrdersOptions): Promise<GenerateStats> {
  checkOptions(options);
  const now = options.now ?? Date.now;
  const version = options.schemaVersion ?? 1;
  const rate = options.ratePerSec ?? 0;
  if (options.admin !== undefined) await prepareTopic(options, options.admin);
  const schemaId = await registerSchema(options, version);

  const encode = orderEncoder(options.format, { schemaVersion: version, ...(schemaId === null ? {} : { schemaId }) });
  const events = new OrderGenerator({
    seed: options.seed ?? 1,
    schemaVersion: version,
    ...(options.startTimeMs === undefined ? { clock: now } : { startTimeMs: options.startTimeMs }),
  });
  const batchSize = options.batchSize ?? (rate > 0 ? Math.min(MAX_BATCH, Math.max(1, Math.ceil(rate / 20))) : MAX_BATCH);
  const maxInFlight = options.maxInFlight ?? 16;
  const only = options.partitions;
  const onDelivered = options.onDelivered;

  const started = now();
  let produced = 0;
  let records = 0;
  let bytes = 0;
  let failure: { error: unknown } | undefined;
  const inFlight = new Set<Promise<void>>();

  while (produced < options.count && failure === undefined) {
    if (rate > 0) {
      const wait = started + (produced / rate) * 1000 - now();
      if (wait > 0) await sleep(wait);
    }
    while (inFlight.size >= maxInFlight) await Promise.race(inFlight);
    if (failure !== undefined) break;

    const n = Math.min(batchSize, options.count - produced);
    // The events are kept until delivery only for onDelivered: at high rates, tens of thousands are in flight.
    const batchEvents: OrderEvent[] | undefined = onDelivered === undefined ? undefined : new Array<OrderEvent>(n);
    const batch: OutgoingRecord[] = new Array<OutgoingRecord>(n);
    let batchBytes = 0;
    for (let i = 0; i < n; i++) {
      const e = events.next();
      const value = encode(e);
      batchBytes += value.byteLength;
      if (batchEvents !== undefined) batchEvents[i] = e;
      batch[i] = {
        topic: options.topic,
        // The chosen partitions in turn, by event index: an even spread that does not depend on keys.
        partition: only === undefined ? null : (only[(produced + i) % only.length] as number),
        key: e.order_id, // orderKey's bytes: the producer encodes a string key as UTF-8 without a copy in JS
        value,
      };
    }
    produced += n;
    const sent: Promise<void> = options.producer.send(batch).then(
      (delivered) => {
        records += delivered.length;
        bytes += batchBytes;
        try {
          if (onDelivered !== undefined) onDelivered(delivered, batchEvents as OrderEvent[]);
        } catch (error) {
          failure ??= { error }; // a failing callback stops the run like a failed send, after the in-flight ones settle
        }
      },
      (error: unknown) => {
        failure ??= { error };
      },
    );
    const tracked = sent.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  }
  await Promise.all(inFlight);
  if (failure !== undefined) throw failure.error;
  return { records, bytes, durationMs: now() - started, schemaId };
}
