/**
 * `TransactionalProducer` over librdkafka's transactional Producer. `sendOffsetsToTransaction` passes the
 * consumer itself: the client reads the group metadata (group id, member id, generation) at call time,
 * which is what the broker checks (KIP-447).
 *
 * Fencing: once librdkafka reports this producer fenced (`ERR__FENCED`, `PRODUCER_FENCED`,
 * `INVALID_PRODUCER_EPOCH`) every later error of it is reported as fenced too (librdkafka answers later
 * calls with a generic fatal error).
 *
 * Owns: the producer's lifecycle and transaction calls. Must not: retry a transaction or decide about
 * the cycle (the caller aborts and rewinds).
 */
import { ConfigError } from '../../core/errors.ts';
import { isFenced } from '../port.ts';
import type { ConsumerGroupMetadata, OutgoingRecord, TopicPartitionOffset, TransactionalProducer } from '../port.ts';
import { KAFKA_CODES, translateKafkaError } from './errors.ts';
import { RdKafka, call, consumerOf, sync } from './internal.ts';
import type { ProducerClient } from './internal.ts';
import { offsetToNumber, splitTopicConfig, transactionalProducerConfig } from './settings.ts';
import type { ClientSettings } from './settings.ts';

export interface ProducerOptions {
  readonly settings: ClientSettings;
  /** The connector's producer.override.* (prefix stripped). */
  readonly overrides?: ClientSettings;
  /** `<connector>-<task>`. */
  readonly transactionalId: string;
  readonly clientId?: string;
}

const DEFAULT_TIMEOUT_MS = 30_000;

function buffer(v: Uint8Array | string | null | undefined): Buffer | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export class ConfluentTransactionalProducer implements TransactionalProducer {
  readonly transactionalId: string;
  readonly #producer: ProducerClient;
  #fenced = false;

  private constructor(transactionalId: string, producer: ProducerClient) {
    this.transactionalId = transactionalId;
    this.#producer = producer;
  }

  static async connect(options: ProducerOptions): Promise<ConfluentTransactionalProducer> {
    const config = transactionalProducerConfig(options.settings, options.overrides, options.transactionalId);
    if (options.clientId !== undefined) config['client.id'] = options.clientId;
    const { global, topic } = splitTopicConfig(config);
    const producer = sync('connect', () => new RdKafka.Producer(global, topic));
    await call<unknown>('connect', (cb) => producer.connect({ timeout: 10_000 }, cb));
    // Serve librdkafka's events (errors, fatal errors) without a JS timer.
    producer.setPollInBackground(true);
    return new ConfluentTransactionalProducer(options.transactionalId, producer);
  }

  /** True once this producer was seen fenced; it can never commit again. */
  get fenced(): boolean {
    return this.#fenced;
  }

  private async txn(operation: Parameters<typeof call>[0], run: (cb: (err: unknown) => void) => void): Promise<void> {
    try {
      await call(operation, run, () => this.#fenced);
    } catch (e) {
      if (isFenced(e)) this.#fenced = true;
      throw e;
    }
  }

  initTransactions(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    return this.txn('init-transactions', (cb) => this.#producer.initTransactions(timeoutMs, cb));
  }

  beginTransaction(): Promise<void> {
    return this.txn('begin-transaction', (cb) => this.#producer.beginTransaction(cb));
  }

  async send(records: readonly OutgoingRecord[]): Promise<void> {
    for (const r of records) {
      const headers = r.headers?.map((h) => ({ [h.key]: buffer(h.value) ?? Buffer.alloc(0) }));
      for (let attempt = 0; ; attempt++) {
        try {
          this.#producer.produce(r.topic, r.partition ?? null, buffer(r.value), buffer(r.key), r.timestamp ?? null, undefined, headers);
          break;
        } catch (e) {
          const code = (e as { code?: unknown }).code;
          // The local queue is full: let librdkafka drain it (background polling serves it) and try again.
          if (code === KAFKA_CODES.ERR__QUEUE_FULL && attempt < 200) {
            await new Promise((resolve) => setTimeout(resolve, 25));
            continue;
          }
          const error = translateKafkaError(e, 'send', this.#fenced);
          if (isFenced(error)) this.#fenced = true;
          throw error;
        }
      }
    }
  }

  sendOffsetsToTransaction(offsets: readonly TopicPartitionOffset[], group: ConsumerGroupMetadata, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    const consumer = consumerOf(group);
    if (consumer === undefined) {
      return Promise.reject(new ConfigError('sendOffsetsToTransaction needs group metadata from a ConfluentKafkaSource'));
    }
    const tpos = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: offsetToNumber(o.offset) }));
    return this.txn('send-offsets', (cb) => this.#producer.sendOffsetsToTransaction(tpos, consumer, timeoutMs, cb));
  }

  commitTransaction(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    return this.txn('commit-transaction', (cb) => this.#producer.commitTransaction(timeoutMs, cb));
  }

  abortTransaction(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    return this.txn('abort-transaction', (cb) => this.#producer.abortTransaction(timeoutMs, cb));
  }

  async close(): Promise<void> {
    this.#producer.setPollInBackground(false);
    await call<unknown>('close', (cb) => this.#producer.disconnect(5_000, cb));
  }
}
