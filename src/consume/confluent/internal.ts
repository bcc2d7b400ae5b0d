/**
 * Shared plumbing of the confluent adapter: the client import, group-metadata handles, promisified
 * callbacks, record conversion. Not exported from the adapter's index.
 */
import { RdKafka } from '@confluentinc/kafka-javascript';
import type { ConsumerGroupMetadata, RawRecord, RecordHeader } from '../port.ts';
import { offsetFromNumber } from './settings.ts';
import { translateKafkaError } from './errors.ts';
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

export function nextTick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
