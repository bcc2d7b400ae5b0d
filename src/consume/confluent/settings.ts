/**
 * librdkafka configuration for each client, built from pass-through Kafka settings (bootstrap.servers,
 * security.*, sasl.*, ssl.*, and the connector's consumer./producer./admin.override.* keys) plus the few
 * settings the exactly-once protocol cannot do without, which a user value may not contradict.
 *
 * Owns: the enforced settings and the checks. Must not: import the client or read the environment.
 */
import { ConfigError } from '../../core/errors.ts';
import { parseOffsetReset } from '../offset-range.ts';
import type { OffsetReset } from '../offset-range.ts';

export type ClientSettings = Readonly<Record<string, string>>;

/** librdkafka takes every property as a string; we never pass functions through settings. */
export type LibrdkafkaConfig = Record<string, string>;

function enforce(out: LibrdkafkaConfig, key: string, value: string, why: string): void {
  const given = out[key];
  if (given !== undefined && given.trim().toLowerCase() !== value) {
    throw new ConfigError(`Kafka setting ${key}=${given} cannot be used: ${why} (it must be ${value})`, { context: { key } });
  }
  out[key] = value;
}

function merged(layers: readonly (ClientSettings | undefined)[]): LibrdkafkaConfig {
  const out: LibrdkafkaConfig = {};
  for (const layer of layers) {
    if (layer === undefined) continue;
    for (const [k, v] of Object.entries(layer)) out[k] = String(v);
  }
  if ((out['bootstrap.servers'] ?? out['metadata.broker.list'] ?? '') === '') {
    throw new ConfigError('Kafka setting bootstrap.servers is required', { context: { key: 'bootstrap.servers' } });
  }
  return out;
}

/** The `auto.offset.reset` the user configured for the task consumer (connector override over worker `consumer.`), if any. */
export function sourceOffsetReset(base: ClientSettings, overrides: ClientSettings | undefined): OffsetReset | undefined {
  return parseOffsetReset(overrides?.['auto.offset.reset'] ?? base['auto.offset.reset']);
}

/**
 * The sink task's consumer: the connector's group, cooperative-sticky, manual offsets only. Where a partition
 * starts is decided by the source at assignment (consume/offset-range.ts: earliest without a committed offset,
 * like Connect's sink consumers); librdkafka's `auto.offset.reset` is `error` unless the user set one, so a
 * position that leaves the log later (retention passing a lagging task) fails instead of silently jumping.
 */
export function sourceConsumerConfig(base: ClientSettings, overrides: ClientSettings | undefined, groupId: string): LibrdkafkaConfig {
  const out = merged([base, overrides]);
  out['auto.offset.reset'] = sourceOffsetReset(base, overrides) ?? 'error';
  if (groupId === '') throw new ConfigError('the consumer group id may not be empty');
  enforce(out, 'group.id', groupId, 'the group is the connector\'s (connect-<name> or consumer.override.group.id)');
  enforce(out, 'enable.auto.commit', 'false', 'offsets are committed only in the commit cycle\'s transaction');
  enforce(out, 'enable.auto.offset.store', 'false', 'offsets are committed only in the commit cycle\'s transaction');
  const protocol = (out['group.protocol'] ?? 'classic').trim().toLowerCase();
  if (protocol === 'classic') {
    enforce(out, 'partition.assignment.strategy', 'cooperative-sticky', 'rebalances must be incremental so a revoke can finish its cycle first');
  }
  // librdkafka prefetches up to 64 MiB by default (native memory, outside any budget of ours); 16 MiB is
  // still several polls ahead of a task at full speed, measured without loss of throughput (docs/benchmarks.md).
  out['queued.max.messages.kbytes'] ??= '16384';
  return out;
}

/** The task's transactional producer: idempotent, one transactional.id per task. */
export function transactionalProducerConfig(base: ClientSettings, overrides: ClientSettings | undefined, transactionalId: string): LibrdkafkaConfig {
  const out = merged([base, overrides]);
  if (transactionalId === '') throw new ConfigError('the transactional.id may not be empty');
  enforce(out, 'transactional.id', transactionalId, 'each task uses the stable id <connector>-<task> so a restart fences its previous incarnation');
  enforce(out, 'enable.idempotence', 'true', 'transactions require the idempotent producer');
  return out;
}

/** The committer's control-topic reader: assignment only (no group membership), read_committed, no resets. */
export function controlReaderConfig(base: ClientSettings, readerGroupId: string): LibrdkafkaConfig {
  const out = merged([base]);
  // librdkafka's high-level consumer needs a group.id even when it only uses assign(); this one never joins
  // a group and never commits, so it leaves nothing on the broker.
  out['group.id'] = readerGroupId;
  enforce(out, 'enable.auto.commit', 'false', 'the committer keeps its positions in the table snapshots');
  enforce(out, 'enable.auto.offset.store', 'false', 'the committer keeps its positions in the table snapshots');
  enforce(out, 'isolation.level', 'read_committed', 'aborted or open announcements must never be applied');
  enforce(out, 'auto.offset.reset', 'error', 'a stored position outside the log must stop the committer, never jump');
  out['enable.partition.eof'] = 'true';
  // librdkafka prefetches up to 64 MiB by default; the committer reads a bounded amount per round
  // (icefloe.control.read.max-bytes), so a smaller prefetch keeps the reader's native memory bounded too.
  out['queued.max.messages.kbytes'] ??= '16384';
  // A read ends at the last stable offset, which is a transaction marker: librdkafka tells it has reached
  // it (the EOF event) only when a fetch comes back empty, and the broker holds an empty fetch for
  // fetch.wait.max.ms (librdkafka's default 500 ms) — half a second of every commit's latency, measured
  // (the committer's stepsMs.controlRead). The reader fetches only while a read runs, so a short wait costs
  // a few empty fetches per round, not a busy loop.
  out['fetch.wait.max.ms'] ??= '10';
  return out;
}

export function adminConfig(base: ClientSettings, overrides?: ClientSettings): LibrdkafkaConfig {
  return merged([base, overrides]);
}

/**
 * A Connect `topics.regex` for librdkafka's subscribe: librdkafka treats a name starting with `^` as a
 * regex (its own POSIX-like engine, not Java's or JS's) and matches it unanchored at the end, so we
 * anchor both ends to keep Connect's whole-name match.
 */
export function regexSubscription(pattern: string): string {
  if (pattern === '') throw new ConfigError('topics.regex may not be empty');
  const body = pattern.startsWith('^') ? pattern.slice(1) : pattern;
  const anchored = body.endsWith('$') && !body.endsWith('\\$') ? body.slice(0, -1) : body;
  return `^(${anchored})$`;
}

/** Kafka offsets are int64; the client carries them as JS numbers. */
export function offsetToNumber(offset: bigint): number {
  if (offset < 0n || offset > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ConfigError(`offset ${offset} is outside the range the Kafka client can carry (0..2^53-1)`);
  }
  return Number(offset);
}

/** A client offset as bigint; librdkafka's logical offsets (negative: invalid, beginning, end, stored) are null. */
export function offsetFromNumber(offset: number | undefined | null): bigint | null {
  if (offset === undefined || offset === null || !Number.isSafeInteger(offset) || offset < 0) return null;
  return BigInt(offset);
}

/** A Kafka topic id (two signed 64-bit halves) as the usual UUID text. */
export function uuidFromHalves(mostSignificantBits: bigint, leastSignificantBits: bigint): string {
  const hex = BigInt.asUintN(64, mostSignificantBits).toString(16).padStart(16, '0') + BigInt.asUintN(64, leastSignificantBits).toString(16).padStart(16, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * librdkafka's topic-level properties (CONFIGURATION.md, "Topic configuration properties"). The client
 * always installs a default topic configuration built from its second constructor argument, which
 * replaces any topic-level value given in the global configuration: `auto.offset.reset` passed globally
 * is silently ignored (observed: a new group started at the end, not at `earliest`). So these keys go
 * in the topic configuration.
 */
const TOPIC_LEVEL = new Set([
  'request.required.acks', 'acks', 'request.timeout.ms', 'message.timeout.ms', 'delivery.timeout.ms', 'queuing.strategy',
  'produce.offset.report', 'partitioner', 'compression.codec', 'compression.type', 'compression.level',
  'auto.commit.enable', 'auto.commit.interval.ms', 'auto.offset.reset', 'offset.store.path', 'offset.store.sync.interval.ms',
  'offset.store.method', 'consume.callback.max.messages',
]);

export function splitTopicConfig(config: LibrdkafkaConfig): { global: LibrdkafkaConfig; topic: LibrdkafkaConfig } {
  const global: LibrdkafkaConfig = {};
  const topic: LibrdkafkaConfig = {};
  for (const [k, v] of Object.entries(config)) {
    if (TOPIC_LEVEL.has(k)) topic[k] = v;
    else global[k] = v;
  }
  return { global, topic };
}

const CLUSTER_ID_LINE = /ClusterId: ([A-Za-z0-9_-]{22}),/;

/** The cluster id in librdkafka's `metadata` debug line ("ClusterId: <id>, ControllerId: <n>"), or undefined. */
export function clusterIdFromLogLine(message: string): string | undefined {
  return CLUSTER_ID_LINE.exec(message)?.[1];
}
