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
 * Fenced or timed out by the coordinator: librdkafka reports a transaction the coordinator aborted for its
 * age (it bumps the producer epoch) exactly as a fence by another producer (`ERR__FENCED`). Only the age
 * tells them apart: the coordinator times a transaction out only after `transaction.timeout.ms`, counted
 * from its first partition or offsets, which is after our `beginTransaction`. A fence in a transaction
 * begun longer ago than that may be the coordinator's own abort (seen after a broker outage) and is
 * reported as `ProducerResetRequiredError`; in a younger one only another `initTransactions` with our
 * transactional.id can have bumped the epoch, so it is reported as fenced, naming the id. An old
 * transaction of a process that was itself frozen meanwhile (a timer that should have run every 500 ms
 * did not for FROZEN_MS) is a zombie's, whose successor fenced it: fenced too, never re-created (that
 * would fence the successor in turn).
 *
 * Re-creation (`reinitialize`): the client is disconnected (bounded: a stuck client is abandoned, not
 * waited for) and a new one with the same settings registers the transactional.id; librdkafka's
 * `initTransactions` is resumable, so after a time-out the same new client resumes it.
 *
 * Owns: the producer's lifecycle and transaction calls. Must not: retry a transaction or decide about
 * the cycle (the caller resumes, aborts, re-creates and rewinds).
 */
import { ConfigError, IcefloeError, RetriableError } from '../../core/errors.ts';
import { TransactionAbortRequiredError, TransactionCallTimedOutError, isFenced } from '../port.ts';
import type { ConsumerGroupMetadata, OutgoingRecord, TopicPartitionOffset, TransactionalProducer } from '../port.ts';
import { KAFKA_CODES, explainFence, translateKafkaError } from './errors.ts';
import { Reachability } from './reachability.ts';
import { RdKafka, call, consumerOf, headerValue, sync } from './internal.ts';
import type { ProducerClient } from './internal.ts';
import { offsetToNumber, splitTopicConfig, transactionalProducerConfig } from './settings.ts';
import { StallWatch } from './stall-watch.ts';
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

/** `transaction.timeout.ms` as librdkafka applies it (its default when unset or unusable). */
function transactionTimeoutMs(transactionTimeout: string | undefined): number {
  const t = transactionTimeout === undefined ? Number.NaN : Number(transactionTimeout);
  return Number.isFinite(t) && t > 0 ? t : DEFAULT_TRANSACTION_TIMEOUT_MS;
}

/** The transactional calls' time-out: half the transaction time-out (see the module header). */
export function transactionCallTimeoutMs(transactionTimeout: string | undefined): number {
  return Math.max(1000, Math.floor(transactionTimeoutMs(transactionTimeout) / 2));
}

/** How long a disconnect may take before a client is abandoned (a stuck one must not hold the task). */
const CLOSE_TIMEOUT_MS = 10_000;

/**
 * A time-out of a resumable call (commit, abort) as `TransactionCallTimedOutError`; others unchanged. A
 * commit that failed because the transaction's own records timed out carries the same code
 * (ERR__TIMED_OUT, "N message(s) timed out") but requires an abort: resuming it fails again at once, and a
 * task did so in a tight loop, hundreds of thousands of times, after a frozen broker came back (CI, e2e
 * sink-broker-freeze).
 */
export function resumable(operation: string, e: unknown): unknown {
  if (e instanceof TransactionAbortRequiredError) return e;
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
  /** The producer's `transaction.timeout.ms`: a fence in an older transaction may be the coordinator's. */
  readonly transactionTimeoutMs: number;
  readonly #options: ProducerOptions;
  #producer: ProducerClient;
  #fenced = false;
  /** When the open transaction began (performance.now()); undefined when none is open. */
  #begunAt: number | undefined;
  /** A new client whose registration timed out: `reinitialize` resumes it instead of replacing the client. */
  #registering = false;
  readonly #stalls = new StallWatch();

  private constructor(options: ProducerOptions, producer: ProducerClient, transactionTimeoutMs: number) {
    this.#options = options;
    this.transactionalId = options.transactionalId;
    this.#producer = producer;
    this.transactionTimeoutMs = transactionTimeoutMs;
    this.callTimeoutMs = Math.max(1000, Math.floor(transactionTimeoutMs / 2));
  }

  static async connect(options: ProducerOptions): Promise<ConfluentTransactionalProducer> {
    const { producer, transactionTimeout } = await ConfluentTransactionalProducer.client(options);
    return new ConfluentTransactionalProducer(options, producer, transactionTimeoutMs(transactionTimeout));
  }

  private static async client(options: ProducerOptions): Promise<{ producer: ProducerClient; transactionTimeout: string | undefined }> {
    const config = transactionalProducerConfig(options.settings, options.overrides, options.transactionalId);
    if (options.clientId !== undefined) config['client.id'] = options.clientId;
    const { global, topic } = splitTopicConfig(config);
    const producer = sync('connect', () => new RdKafka.Producer(global, topic));
    const reach = new Reachability(config).watch(producer);
    await call<unknown>('connect', (cb) => producer.connect({ timeout: 10_000 }, cb)).catch((e: unknown) => {
      throw reach.explain(e);
    });
    // Serve librdkafka's events (errors, fatal errors) without a JS timer.
    producer.setPollInBackground(true);
    const timeout = config['transaction.timeout.ms'];
    return { producer, transactionTimeout: timeout === undefined ? undefined : String(timeout) };
  }

  /** True once this producer was seen fenced; it can never commit again. */
  get fenced(): boolean {
    return this.#fenced;
  }

  private async txn(operation: Parameters<typeof call>[0], run: (cb: (err: unknown) => void) => void): Promise<void> {
    try {
      await call(operation, run, () => this.#fenced);
    } catch (e) {
      throw this.explained(resumable(operation, e));
    }
  }

  /** A fence told apart from the coordinator's own time-out (module header); remembered once it is one. */
  private explained(e: unknown): unknown {
    if (!isFenced(e) || this.#fenced || !(e instanceof IcefloeError)) return e;
    const begunAt = this.#begunAt;
    const error = explainFence(e, {
      transactionalId: this.transactionalId,
      ageMs: begunAt === undefined ? undefined : performance.now() - begunAt,
      transactionTimeoutMs: this.transactionTimeoutMs,
      stalledMs: begunAt === undefined ? 0 : this.#stalls.longestSince(begunAt),
    });
    if (isFenced(error)) this.#fenced = true;
    return error;
  }

  initTransactions(timeoutMs = this.callTimeoutMs): Promise<void> {
    return this.txn('init-transactions', (cb) => this.#producer.initTransactions(timeoutMs, cb));
  }

  async reinitialize(timeoutMs = this.callTimeoutMs): Promise<void> {
    if (!this.#registering) {
      const old = this.#producer;
      // One client per transactional.id at a time: the old one goes first (its transaction is aborted by the
      // new registration, or by the coordinator's time-out if it never reached the broker).
      await closeClient(old);
      this.#producer = (await ConfluentTransactionalProducer.client(this.#options)).producer;
      this.#fenced = false;
      this.#begunAt = undefined;
      this.#registering = true;
    }
    try {
      await this.initTransactions(timeoutMs);
      this.#registering = false;
    } catch (e) {
      // A time-out leaves the registration pending in librdkafka (resumed by the next call); anything else
      // leaves the new client unusable, so the next call starts over with another one.
      if (!(e instanceof RetriableError) || e.context['kafkaCode'] !== KAFKA_CODES.ERR__TIMED_OUT) this.#registering = false;
      throw e;
    }
  }

  async beginTransaction(): Promise<void> {
    await this.txn('begin-transaction', (cb) => this.#producer.beginTransaction(cb));
    this.#begunAt = performance.now();
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
          throw this.explained(translateKafkaError(e, 'send', this.#fenced));
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

  async commitTransaction(timeoutMs = this.callTimeoutMs): Promise<void> {
    await this.txn('commit-transaction', (cb) => this.#producer.commitTransaction(timeoutMs, cb));
    this.#begunAt = undefined;
  }

  async abortTransaction(timeoutMs = this.callTimeoutMs): Promise<void> {
    await this.txn('abort-transaction', (cb) => this.#producer.abortTransaction(timeoutMs, cb));
    this.#begunAt = undefined;
  }

  async close(): Promise<void> {
    this.#stalls.stop();
    await closeClient(this.#producer, true);
  }
}

/** Disconnects a client, giving up after CLOSE_TIMEOUT_MS (`strict`: a failed or late disconnect rejects). */
async function closeClient(producer: ProducerClient, strict = false): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    producer.setPollInBackground(false);
    const closed = call<unknown>('close', (cb) => producer.disconnect(5_000, cb));
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new RetriableError(`Kafka close: the producer did not disconnect within ${CLOSE_TIMEOUT_MS} ms; it is abandoned`)), CLOSE_TIMEOUT_MS)));
    await Promise.race([closed, late]);
  } catch (e) {
    if (strict) throw e;
  } finally {
    clearTimeout(timer);
  }
}
