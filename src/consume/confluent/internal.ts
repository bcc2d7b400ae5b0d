/**
 * Shared plumbing of the confluent adapter: the client import, group-metadata handles, promisified
 * callbacks, record conversion. Not exported from the adapter's index.
 */
import { RdKafka } from '@confluentinc/kafka-javascript';
import type { ConsumerGroupMetadata, RawRecord, RecordHeader } from '../port.ts';
import { offsetFromNumber } from './settings.ts';
import { translateKafkaError } from './errors.ts';
import { FatalError } from '../../core/errors.ts';
import type { KafkaOperation } from './errors.ts';

export { RdKafka };
/** The consumer, with the cooperative-rebalance methods (and commitCb) lib/kafka-consumer.js has but types/rdkafka.d.ts omits. */
export type KafkaConsumerClient = InstanceType<typeof RdKafka.KafkaConsumer> & {
  incrementalAssign(assignments: RdKafka.TopicPartition[]): unknown;
  incrementalUnassign(assignments: RdKafka.TopicPartition[]): unknown;
  assignmentLost(): boolean;
  rebalanceProtocol(): 'NONE' | 'EAGER' | 'COOPERATIVE';
  setDefaultIsTimeoutOnlyForFirstMessage(isTimeoutOnlyForFirstMessage: boolean): void;
  /** Commits on a worker thread (commitSync there), calling back with its error. */
  commitCb(toppars: RdKafka.TopicPartitionOffsetAndMetadata[] | null, cb: (err: RdKafka.LibrdKafkaError | null) => void): unknown;
};
export type ProducerClient = InstanceType<typeof RdKafka.Producer>;

/** Group-metadata handles → the live consumer (the client reads the metadata at send time). */
const consumers = new WeakMap<object, KafkaConsumerClient>();

export function groupMetadataHandle(groupId: string, consumer: KafkaConsumerClient): ConsumerGroupMetadata {
  const handle = Object.freeze({ groupId }) as unknown as ConsumerGroupMetadata;
  consumers.set(handle, consumer);
  return handle;
}

export function consumerOf(handle: ConsumerGroupMetadata): KafkaConsumerClient | undefined {
  return consumers.get(handle);
}

/** Runs a node-style callback API as a promise, translating its error once. */
export function call<T = void>(operation: KafkaOperation, run: (cb: (err: unknown, value?: T) => void) => void, fenced?: () => boolean): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    try {
      run((err, value) => {
        if (err !== null && err !== undefined) reject(translateKafkaError(err, operation, fenced?.() ?? false));
        else resolve(value as T);
      });
    } catch (e) {
      reject(translateKafkaError(e, operation, fenced?.() ?? false));
    }
  });
}

/** Synchronous client calls (they throw LibrdKafkaError). */
export function sync<T>(operation: KafkaOperation, run: () => T): T {
  try {
    return run();
  } catch (e) {
    throw translateKafkaError(e, operation);
  }
}

function bytes(v: unknown): Uint8Array | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Uint8Array) return v; // Buffer is a Uint8Array: a view, no copy
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  return null;
}

/**
 * A header value as the binding must be given it to write what we mean. Its produce (src/producer.cc)
 * copies a Buffer's bytes from node::Buffer::Data, which is NULL for a buffer over a zero-length
 * ArrayBuffer — and librdkafka writes a NULL value as a null header — while a string goes through
 * std::string, whose pointer is never NULL; null itself it refuses. So null → a fresh zero-length Buffer
 * (a null header), an empty value → '' (an empty header, whatever buffer it came in), bytes → a Buffer.
 * Checked against Kafka's own consumer in test/integration/kafka-headers.test.ts.
 */
export function headerValue(v: Uint8Array | string | null | undefined): Buffer | string {
  if (v === null || v === undefined) return Buffer.alloc(0);
  if (v.length === 0) return '';
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

/**
 * A client message as a RawRecord; key, value and header values stay views over the client's buffers.
 *
 * A null header value arrives as null only with the binding patched by scripts/patch-kafka-binding.ts:
 * as released it converts every header value with `Nan::Encode(value_string(), value_size(), BUFFER)`
 * (src/common.cc, ToV8Object), a zero-length Buffer for librdkafka's NULL pointer exactly as for an empty
 * value; see docs/sink.md ("a Kafka header whose value is null").
 */
export function toRawRecord(m: RdKafka.Message): RawRecord {
  const headers: RecordHeader[] = [];
  for (const h of m.headers ?? []) {
    for (const [key, value] of Object.entries(h)) headers.push({ key, value: bytes(value) });
  }
  const offset = offsetFromNumber(m.offset);
  return {
    topic: m.topic,
    partition: m.partition,
    offset: offset ?? BigInt(m.offset),
    timestamp: typeof m.timestamp === 'number' && m.timestamp >= 0 ? m.timestamp : null,
    key: bytes(m.key),
    value: bytes(m.value),
    headers,
  };
}

/**
 * A batch as the patched binding hands it over (scripts/patch-kafka-binding.ts, "packed batches"): the
 * keys and values of every message in one block after a table of 8 doubles per message, instead of a
 * JavaScript object and two Buffers made in C++ per message (measured: the largest single cost of the
 * task, docs/benchmarks.md).
 */
export interface PackedBatch {
  readonly count: number;
  /** Absent when count is 0. */
  readonly block?: Buffer;
  readonly topics: readonly string[];
  /** Flat: a message index, then that message's headers in the client's form; only messages that have headers. */
  readonly headers: readonly unknown[];
}

/** The table's columns per message (see the patch). */
const FIELDS = 8;

/**
 * The native consume with packed batches: what the client's `consume(n)` does, minus its per-message
 * 'data' events (nothing listens). Waits `timeoutMs` for the first message only. The native error object
 * carries code, isFatal, isRetriable as the client's own errors do (translateKafkaError reads those).
 */
export function consumePacked(consumer: KafkaConsumerClient, timeoutMs: number, maxRecords: number, cb: (err: unknown, batch?: PackedBatch) => void): void {
  (consumer as unknown as { _client: NativeConsumer })._client.consume(timeoutMs, maxRecords, true, (err, batch) => {
    // An addon built without the patch ignores the flag and hands over an array of messages: refuse it
    // rather than read no records from it.
    if ((err === null || err === undefined) && typeof batch?.count !== 'number') cb(new FatalError(UNPATCHED));
    else cb(err, batch);
  }, true);
}

const UNPATCHED = 'the Kafka client\'s native addon was built without Icefloe\'s patch (packed batches): run `node scripts/patch-kafka-binding.ts` after `npm ci` (the Dockerfile and scripts/quickstart do)';

interface NativeConsumer {
  consume(timeoutMs: number, n: number, timeoutOnlyForFirst: boolean, cb: (err: unknown, batch?: PackedBatch) => void, packed: true): void;
}

function headersOf(client: unknown): RecordHeader[] {
  const headers: RecordHeader[] = [];
  for (const h of (client as Record<string, unknown>[] | undefined) ?? []) {
    for (const [key, value] of Object.entries(h)) headers.push({ key, value: bytes(value) });
  }
  return headers;
}

const NO_HEADERS: readonly RecordHeader[] = Object.freeze([]);

/**
 * The batch's records, in the order consumed; `keep` filters by topic and partition (and sees the offset)
 * before a record is made. Keys and values are Buffer views over the batch's one block, so a record kept
 * alive keeps its batch's block alive (about as large as the poll's records).
 */
export function packedRecords(batch: PackedBatch, keep: (topic: string, partition: number, offset: bigint) => boolean): RawRecord[] {
  const { count, block, topics } = batch;
  if (count === 0 || block === undefined) return [];
  const table = new Float64Array(block.buffer, block.byteOffset, count * FIELDS);
  const data = block.byteOffset + count * FIELDS * 8;
  const withHeaders = new Map<number, unknown>();
  for (let i = 0; i + 1 < batch.headers.length; i += 2) withHeaders.set(batch.headers[i] as number, batch.headers[i + 1]);
  const out: RawRecord[] = [];
  for (let i = 0, f = 0; i < count; i++, f += FIELDS) {
    const topic = topics[table[f] as number] as string;
    const partition = table[f + 1] as number;
    const offset = BigInt(table[f + 2] as number);
    if (!keep(topic, partition, offset)) continue;
    const timestamp = table[f + 3] as number;
    const keyLength = table[f + 5] as number;
    const valueLength = table[f + 7] as number;
    out.push({
      topic,
      partition,
      offset,
      timestamp: timestamp >= 0 ? timestamp : null,
      key: keyLength < 0 ? null : Buffer.from(block.buffer, data + (table[f + 4] as number), keyLength),
      value: valueLength < 0 ? null : Buffer.from(block.buffer, data + (table[f + 6] as number), valueLength),
      headers: withHeaders.size === 0 ? NO_HEADERS : headersOf(withHeaders.get(i)),
    });
  }
  return out;
}

export function nextTick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
