/**
 * `TransactionalProducer` over librdkafka's transactional Producer. `sendOffsetsToTransaction` passes the
 * consumer itself: the client reads the group metadata (group id, member id, generation) at call time,
 * which is what the broker checks (KIP-447).
 *
 * Fencing: once librdkafka reports this producer fenced (`ERR__FENCED`, `PRODUCER_FENCED`,
 * `INVALID_PRODUCER_EPOCH`) every later error of it is reported as fenced too (librdkafka answers later
 * calls with a generic fatal error).
 *
 * Time-outs: `commitTransaction` and `abortTransaction` are resumable in librdkafka: on a time-out
 * (`ERR__TIMED_OUT`, retriable) the operation continues in the background and stays the producer's
 * current call until the same method is called again; `beginTransaction`, `abortTransaction` or
 * `commitTransaction` (whichever differs) meanwhile fail with `ERR__CONFLICT`. Such a time-out is
 * reported as `TransactionCallTimedOutError` so the caller resumes the same call instead of aborting.
 * The calls' time-out is half the producer's `transaction.timeout.ms` (librdkafka default 60 s, so
 * 30 s): a call gives up, and can be resumed, well before the broker would time the transaction out.
 *
 * Owns: the producer's lifecycle and transaction calls. Must not: retry a transaction or decide about
 * the cycle (the caller resumes, aborts and rewinds).
 */
import { ConfigError, RetriableError } from '../../core/errors.ts';
import { TransactionCallTimedOutError, isFenced } from '../port.ts';
import type { ConsumerGroupMetadata, OutgoingRecord, TopicPartitionOffset, TransactionalProducer } from '../port.ts';
import { KAFKA_CODES, translateKafkaError } from './errors.ts';
import { RdKafka, call, consumerOf, headerValue, sync } from './internal.ts';
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

/** librdkafka's default `transaction.timeout.ms`. */
const DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000;

/** The transactional calls' time-out: half the transaction time-out (see the module header). */
export function transactionCallTimeoutMs(transactionTimeout: string | undefined): number {
  const t = transactionTimeout === undefined ? Number.NaN : Number(transactionTimeout);
  return Math.max(1000, Math.floor((Number.isFinite(t) && t > 0 ? t : DEFAULT_TRANSACTION_TIMEOUT_MS) / 2));
}

/** A time-out of a resumable call (commit, abort) as `TransactionCallTimedOutError`; others unchanged. */
function resumable(operation: string, e: unknown): unknown {
  if (!(e instanceof RetriableError) || e.context['kafkaCode'] !== KAFKA_CODES.ERR__TIMED_OUT) return e;
  if (operation === 'commit-transaction') return new TransactionCallTimedOutError('commitTransaction', `${e.message}: the commit goes on in the background; resume it by committing again`, { cause: e, context: e.context });
  if (operation === 'abort-transaction') return new TransactionCallTimedOutError('abortTransaction', `${e.message}: the abort goes on in the background; resume it by aborting again`, { cause: e, context: e.context });
  return e;
}

function buffer(v: Uint8Array | string | null | undefined): Buffer | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export class ConfluentTransactionalProducer implements TransactionalProducer {
  readonly transactionalId: string;
  /** Default time-out of the transactional calls (ms). */
  readonly callTimeoutMs: number;
  readonly #producer: ProducerClient;
  #fenced = false;

  private constructor(transactionalId: string, producer: ProducerClient, callTimeoutMs: number) {
    this.transactionalId = transactionalId;
    this.#producer = producer;
    this.callTimeoutMs = callTimeoutMs;
  }

  static async connect(options: ProducerOptions): Promise<ConfluentTransactionalProducer> {
    const config = transactionalProducerConfig(options.settings, options.overrides, options.transactionalId);
    if (options.clientId !== undefined) config['client.id'] = options.clientId;
    const { global, topic } = splitTopicConfig(config);
    const producer = sync('connect', () => new RdKafka.Producer(global, topic));
    await call<unknown>('connect', (cb) => producer.connect({ timeout: 10_000 }, cb));
    // Serve librdkafka's events (errors, fatal errors) without a JS timer.
    producer.setPollInBackground(true);
    const timeout = config['transaction.timeout.ms'];
    return new ConfluentTransactionalProducer(options.transactionalId, producer, transactionCallTimeoutMs(timeout === undefined ? undefined : String(timeout)));
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
      throw resumable(operation, e);
    }
  }

  initTransactions(timeoutMs = this.callTimeoutMs): Promise<void> {
    return this.txn('init-transactions', (cb) => this.#producer.initTransactions(timeoutMs, cb));
  }

  beginTransaction(): Promise<void> {
    return this.txn('begin-transaction', (cb) => this.#producer.beginTransaction(cb));
  }

  async send(records: readonly OutgoingRecord[]): Promise<void> {
    for (const r of records) {
      const headers = r.headers?.map((h) => ({ [h.key]: headerValue(h.value) }));
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

  sendOffsetsToTransaction(offsets: readonly TopicPartitionOffset[], group: ConsumerGroupMetadata, timeoutMs = this.callTimeoutMs): Promise<void> {
    const consumer = consumerOf(group);
    if (consumer === undefined) {
      return Promise.reject(new ConfigError('sendOffsetsToTransaction needs group metadata from a ConfluentKafkaSource'));
    }
    const tpos = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: offsetToNumber(o.offset) }));
    return this.txn('send-offsets', (cb) => this.#producer.sendOffsetsToTransaction(tpos, consumer, timeoutMs, cb));
  }

  commitTransaction(timeoutMs = this.callTimeoutMs): Promise<void> {
    return this.txn('commit-transaction', (cb) => this.#producer.commitTransaction(timeoutMs, cb));
  }

  abortTransaction(timeoutMs = this.callTimeoutMs): Promise<void> {
    return this.txn('abort-transaction', (cb) => this.#producer.abortTransaction(timeoutMs, cb));
  }

  async close(): Promise<void> {
    this.#producer.setPollInBackground(false);
    await call<unknown>('close', (cb) => this.#producer.disconnect(5_000, cb));
  }
}
