/**
 * One of distributed mode's state topics as a log every worker reads in full and keeps tailing, as Kafka
 * Connect's KafkaBasedLog does for its config and status topics (connect-rest.md §3.2): `start` makes sure
 * the topic exists and is compacted, reads it from the log start to the end offsets of that moment (the
 * initial load), then keeps reading what any worker appends; `append` writes a record and resolves once
 * this log has read it back (read-your-writes: a REST call that wrote a config answers from a snapshot
 * that holds it); `readToEnd` waits until everything written before the call has been read.
 *
 * Built only on the Kafka ports (consume/port.ts): `KafkaAdmin` for the topic, `RecordProducer` (idempotent,
 * acks=all) for writes, and a `ControlTopicReader` of its own (read_committed, bounded reads from given
 * positions) for reads. The log does not close these clients: whoever made them does, after `close()`.
 * One reader per log: a reader serves one read at a time.
 *
 * Records reach `onRecord` in offset order per partition, each once, from one loop: the loop never runs
 * two reads at once and never calls `onRecord` concurrently. A read that fails is retried after a backoff
 * with a warning; the log fails for good only when the topic was recreated under it (its position is past
 * the new topic's end), which no retry can repair.
 *
 * Owns: positions, the read loop, the topic checks. Must not: interpret records (state-records.ts does) or
 * decide what a record means for the cluster (the herder does).
 */
import { ConfigError, FatalError, IcefloeError, RetriableError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import { Backoff } from '../../core/retry.ts';
import type { ControlTopicReader, KafkaAdmin, RawRecord, RecordProducer, TopicPartitionOffset } from '../../consume/port.ts';
import { keyPartition } from './key-partition.ts';
import type { JsonObject, StateEntry } from './state-records.ts';

export interface StateLogOptions {
  readonly topic: string;
  /** The worker setting that names the topic (`config.storage.topic`, `status.storage.topic`), for errors. */
  readonly setting: string;
  /** What the topic holds, for errors ("connector configurations", "connector and task statuses"). */
  readonly purpose: string;
  /** Partitions when the log creates the topic; an existing topic keeps its own. */
  readonly partitions: number;
  /** Replication factor when the log creates the topic; -1: the broker's default. */
  readonly replicationFactor: number;
  /** More topic configs for creation (`cleanup.policy` is always `compact`). */
  readonly topicConfigs?: Readonly<Record<string, string>>;
  /** Refuse a topic with more than one partition (the config topic: one order across all keys). */
  readonly singlePartition?: boolean;
  readonly admin: KafkaAdmin;
  readonly producer: RecordProducer;
  /** This log's own reader. */
  readonly reader: ControlTopicReader;
  readonly log: Logger;
  /** Wait between reads that found nothing (default 150 ms). */
  readonly idlePollMs?: number;
  /** Bounds of one read (defaults 5 s, 5,000 records): callbacks flow while a long topic loads. */
  readonly readTimeoutMs?: number;
  readonly maxRecordsPerRead?: number;
  /** How long `append` and `readToEnd` wait to read up to their target (default 30 s, Connect's). */
  readonly waitTimeoutMs?: number;
  /** Called once if the log fails for good (the topic was recreated); pending and later calls reject. */
  readonly onFailure?: (error: IcefloeError) => void;
}

/** A record as the log hands it over: the key and value as text (null value: tombstone). */
export interface StateLogRecord {
  readonly key: string;
  readonly value: string | null;
  readonly partition: number;
  readonly offset: bigint;
  readonly timestamp: number | null;
  /** True for records of the initial load (before the end offsets `start` read to). */
  readonly initial: boolean;
}

export interface InitialLoad {
  /** Where the initial load stopped, per partition (exclusive): a record at or past it is new. */
  readonly endOffsets: readonly TopicPartitionOffset[];
  readonly records: number;
  readonly elapsedMs: number;
}

interface Waiter {
  readonly targets: ReadonlyMap<number, bigint>;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

export class KafkaStateLog {
  readonly #o: StateLogOptions;
  readonly #idleMs: number;
  readonly #waitMs: number;
  /** Partition → next offset to read. */
  readonly #positions = new Map<number, bigint>();
  #partitions = 0;
  #initialEnd: ReadonlyMap<number, bigint> | undefined;
  #waiters: Waiter[] = [];
  #onRecord: ((record: StateLogRecord) => void) | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #closed = false;
  #failure: IcefloeError | undefined;
  /** Reads failing in a row (Kafka unreachable): since when, and the last error. */
  #unreadable: { sinceMs: number; error: string } | undefined;
  /** When the read in flight began (undefined: none in flight). */
  #readingSinceMs: number | undefined;

  constructor(options: StateLogOptions) {
    this.#o = options;
    this.#idleMs = options.idlePollMs ?? 150;
    this.#waitMs = options.waitTimeoutMs ?? 30_000;
  }

  get topic(): string {
    return this.#o.topic;
  }

  /** The topic's partition count (known after `start`). */
  get partitionCount(): number {
    return this.#partitions;
  }

  /**
   * Whether reads fail now (every read asks the broker for the log's offsets first, so one that succeeds
   * means Kafka answers): since when (wall clock) and the last error; undefined while reads succeed.
   */
  unreadable(): { readonly sinceMs: number; readonly error: string } | undefined {
    if (this.#unreadable !== undefined) return { ...this.#unreadable };
    // A read that does not answer (a broker frozen, or down before the client's time-outs run out) says so
    // before it fails: twice a read's own bound.
    const stuckMs = 2 * (this.#o.readTimeoutMs ?? 5_000);
    const since = this.#readingSinceMs;
    if (since !== undefined && Date.now() - since > stuckMs) return { sinceMs: since, error: `a read has not answered for ${Math.round((Date.now() - since) / 1000)} s` };
    return undefined;
  }

  /** Per partition, the next offset this log will read. */
  positions(): TopicPartitionOffset[] {
    return [...this.#positions].sort(([a], [b]) => a - b).map(([partition, offset]) => ({ topic: this.#o.topic, partition, offset }));
  }

  /**
   * Creates the topic (compacted) unless it exists, refuses one that cannot keep state, reads it from the
   * log start to its end offsets as of now, then keeps tailing it. Resolves when the initial load is read.
   */
  async start(onRecord: (record: StateLogRecord) => void): Promise<InitialLoad> {
    if (this.#onRecord !== undefined) throw new FatalError(`state log ${this.#o.topic}: start() called twice`);
    this.#onRecord = onRecord;
    const started = performance.now();
    await this.#prepareTopic();
    const marks = await this.#settle(() => this.#o.admin.watermarks(this.#o.topic));
    this.#partitions = marks.length;
    if (this.#o.singlePartition === true && marks.length > 1) {
      throw new ConfigError(
        `Topic '${this.#o.topic}' supplied via the '${this.#o.setting}' property is required to have a single partition in order to guarantee consistency of ${this.#o.purpose}, but found ${marks.length} partitions. ` +
          `Set '${this.#o.setting}' to a topic with one partition.`,
        { context: { topic: this.#o.topic, setting: this.#o.setting, partitions: marks.length } },
      );
    }
    const end = new Map<number, bigint>();
    for (const m of marks) {
      this.#positions.set(m.partition, m.low);
      end.set(m.partition, m.lastStable);
    }
    this.#initialEnd = end;
    let records = 0;
    const counting = this.#onRecord;
    this.#onRecord = (r) => {
      if (r.initial) records++;
      counting(r);
    };
    const loaded = this.#waitFor(end, Number.POSITIVE_INFINITY);
    this.#loop = this.#run();
    await loaded;
    const endOffsets = [...end].sort(([a], [b]) => a - b).map(([partition, offset]) => ({ topic: this.#o.topic, partition, offset }));
    return { endOffsets, records, elapsedMs: performance.now() - started };
  }

  /**
   * Writes one record (a null value: a tombstone) to the partition Connect would give its key, and resolves
   * with its offset once this log has read it (and handed it to `onRecord`).
   */
  async append(key: string, value: JsonObject | null): Promise<bigint> {
    const [offset] = await this.appendAll([{ key, value }]);
    return offset as bigint;
  }

  /** Writes the records in order (one producer call: a partition keeps their order) and waits as `append`. */
  async appendAll(entries: readonly StateEntry[]): Promise<bigint[]> {
    this.#requireStarted();
    if (entries.length === 0) return [];
    const delivered = await this.#o.producer.send(
      entries.map((e) => ({
        topic: this.#o.topic,
        partition: keyPartition(e.key, this.#partitions),
        key: e.key,
        value: e.value === null ? null : encoder.encode(JSON.stringify(e.value)),
      })),
    );
    const targets = new Map<number, bigint>();
    for (const d of delivered) targets.set(d.partition, bigmax(targets.get(d.partition) ?? 0n, d.offset + 1n));
    await this.#waitFor(targets, this.#waitMs);
    return delivered.map((d) => d.offset);
  }

  /** Resolves once this log has read every record written before the call. */
  async readToEnd(): Promise<void> {
    this.#requireStarted();
    const marks = await this.#o.admin.watermarks(this.#o.topic);
    await this.#waitFor(new Map(marks.map((m) => [m.partition, m.lastStable])), this.#waitMs);
  }

  /** Stops tailing; pending waits reject. Leaves the clients open (their owner closes them). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    this.#rejectAll(new RetriableError(`state log ${this.#o.topic} closed`));
    await this.#loop;
  }

  #requireStarted(): void {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#initialEnd === undefined || this.#closed) throw new RetriableError(`state log ${this.#o.topic} is not running`);
  }

  /**
   * ensureTopic, then the topic's cleanup.policy: only `compact` keeps the latest record of every key for
   * ever (`delete` would lose configs once retention passes them; `compact,delete` too). Connect refuses
   * such a topic at start with the same advice.
   */
  async #prepareTopic(): Promise<void> {
    const o = this.#o;
    const created = await o.admin.ensureTopic({
      name: o.topic,
      partitions: o.partitions,
      replicationFactor: o.replicationFactor,
      configs: { ...o.topicConfigs, 'cleanup.policy': 'compact' },
    });
    if (created) o.log.info('state topic created', { topic: o.topic, partitions: o.partitions, replicationFactor: o.replicationFactor });
    let configs: Readonly<Record<string, string>>;
    try {
      configs = await this.#settle(() => o.admin.topicConfigs(o.topic));
    } catch (e) {
      // The broker would not describe it (no DescribeConfigs permission, a protocol our config reader does
      // not speak): Connect goes on without the check in that case; so do we, and say so.
      if (e instanceof ConfigError && e.context['unknownTopic'] !== true) {
        o.log.warn('could not verify that the state topic is compacted', { topic: o.topic, setting: o.setting, error: errorMessage(e) });
        return;
      }
      throw e;
    }
    const policy = configs['cleanup.policy'];
    const policies = (policy ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
    if (policies.length !== 1 || policies[0] !== 'compact') {
      throw new ConfigError(
        `Topic '${o.topic}' supplied via the '${o.setting}' property is required to have 'cleanup.policy=compact' to guarantee consistency and durability of ${o.purpose}, ` +
          `but found the topic currently has 'cleanup.policy=${policy ?? ''}'. Continuing would likely result in eventually losing ${o.purpose} and problems restarting this cluster in the future. ` +
          `Change the '${o.setting}' property in the worker configuration to use a topic with 'cleanup.policy=compact'.`,
        { context: { topic: o.topic, setting: o.setting, cleanupPolicy: policy ?? null } },
      );
    }
  }

  /**
   * The calls right after ensureTopic: the topic exists (this worker or another one just created it), but a
   * broker may not know it yet for a moment (metadata lag), which the adapters report as a retriable or a
   * configuration error ("unknown topic"). Both are retried for up to 10 s; a lasting configuration error
   * (authorization, say) then surfaces as it is.
   */
  async #settle<T>(call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        return await call();
      } catch (e) {
        const lag = e instanceof IcefloeError && (e.retriable || e.code === 'CONFIG_INVALID');
        if (!lag || Date.now() > deadline) throw e;
        await sleep(200);
      }
    }
  }

  /** Resolves once every partition's position reached its target (rejects after `timeoutMs`). */
  #waitFor(targets: ReadonlyMap<number, bigint>, timeoutMs: number): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#reached(targets)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        targets,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      if (Number.isFinite(timeoutMs)) {
        timer = setTimeout(() => {
          this.#waiters = this.#waiters.filter((w) => w !== waiter);
          const want = [...targets].map(([p, o]) => `${p}@${o}`).join(', ');
          reject(new RetriableError(`state log ${this.#o.topic}: not read up to ${want} within ${timeoutMs} ms (at ${this.#describePositions()})`));
        }, timeoutMs);
      }
      this.#waiters.push(waiter);
      this.#wake?.();
    });
  }

  #reached(targets: ReadonlyMap<number, bigint>): boolean {
    for (const [p, target] of targets) if ((this.#positions.get(p) ?? 0n) < target) return false;
    return true;
  }

  #describePositions(): string {
    return this.positions().map((p) => `${p.partition}@${p.offset}`).join(', ');
  }

  #settleWaiters(): void {
    if (this.#waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.#waiters) {
      if (this.#reached(w.targets)) w.resolve();
      else still.push(w);
    }
    this.#waiters = still;
  }

  #rejectAll(e: unknown): void {
    const all = this.#waiters;
    this.#waiters = [];
    for (const w of all) w.reject(e);
  }

  /** The read loop: reads, hands records over, settles waiters; idles when there is nothing to read. */
  async #run(): Promise<void> {
    const backoff = new Backoff({ initialDelayMs: 100, maxDelayMs: 5_000 });
    while (!this.#closed) {
      let got: number;
      const began = Date.now();
      try {
        this.#readingSinceMs = began;
        got = await this.#readOnce();
        backoff.reset();
        this.#unreadable = undefined;
        this.#readingSinceMs = undefined;
      } catch (e) {
        this.#readingSinceMs = undefined;
        if (this.#closed) break;
        this.#unreadable = { sinceMs: this.#unreadable?.sinceMs ?? began, error: errorMessage(e) };
        if (this.#fatal(e)) return;
        await this.#skipDeleted(e).catch(() => undefined);
        const delay = backoff.next();
        this.#o.log.warn('reading the state topic failed; retrying', { topic: this.#o.topic, error: errorMessage(e), retryInMs: delay, failures: backoff.count });
        await this.#idle(delay);
        continue;
      }
      this.#settleWaiters();
      if (got === 0 && !this.#closed) await this.#idle(this.#waiters.length > 0 ? 20 : this.#idleMs);
    }
  }

  /** One bounded read from the current positions; returns how many records it handed over. */
  async #readOnce(): Promise<number> {
    const from = this.positions();
    const read = await this.#o.reader.read(from, { timeoutMs: this.#o.readTimeoutMs ?? 5_000, maxRecords: this.#o.maxRecordsPerRead ?? 5_000 });
    for (const r of read.records) {
      if (this.#closed) return 0;
      this.#deliver(r);
      this.#positions.set(r.partition, r.offset + 1n);
    }
    // The read may end past its last record (compacted gaps, transaction markers): take its end positions.
    for (const e of read.endOffsets) this.#positions.set(e.partition, bigmax(this.#positions.get(e.partition) ?? 0n, e.offset));
    return read.records.length;
  }

  #deliver(r: RawRecord): void {
    const onRecord = this.#onRecord as (record: StateLogRecord) => void;
    let key: string;
    let value: string | null;
    try {
      if (r.key === null) throw new Error('the record has no key');
      key = decoder.decode(r.key);
      value = r.value === null ? null : decoder.decode(r.value);
    } catch (e) {
      // Nothing a worker of ours or Connect writes; a foreign record is skipped, as Connect skips what it cannot convert.
      this.#o.log.warn('state topic record skipped: its key or value is not UTF-8 text', { topic: this.#o.topic, partition: r.partition, offset: String(r.offset), error: errorMessage(e) });
      return;
    }
    const initial = r.offset < (this.#initialEnd?.get(r.partition) ?? 0n);
    try {
      onRecord({ key, value, partition: r.partition, offset: r.offset, timestamp: r.timestamp, initial });
    } catch (e) {
      // The consumer's own bug must not stop the log for every other record; it is loud, not silent.
      this.#o.log.error('a state record handler failed', { topic: this.#o.topic, key, partition: r.partition, offset: String(r.offset), error: errorMessage(e) });
    }
  }

  /**
   * A read error no retry repairs: the position is past the topic's end (the topic was deleted and
   * recreated: what this log holds no longer describes it). Fails the log and says so.
   */
  #fatal(e: unknown): boolean {
    // The reader's "outside the log" error carries the high watermark; other FatalErrors (an error code the
    // adapter does not know) may pass, and are retried like the rest.
    if (!(e instanceof FatalError) || e.context['highWatermark'] === undefined) return false;
    this.#failure = new FatalError(`state log ${this.#o.topic}: ${e.message}; restart the worker`, { cause: e, context: { topic: this.#o.topic, setting: this.#o.setting } });
    this.#o.log.error('the state topic cannot be read any more', { topic: this.#o.topic, error: errorMessage(e) });
    this.#rejectAll(this.#failure);
    this.#o.onFailure?.(this.#failure);
    return true;
  }

  /**
   * A position below the log start (the reader refuses it: records were deleted under it, e.g. by
   * DeleteRecords; compaction alone never moves the log start past a live key) cannot be read from again:
   * the log moves on from the log start and says so.
   */
  async #skipDeleted(e: unknown): Promise<void> {
    if (!(e instanceof RetriableError) || e.context['logStart'] === undefined) return;
    for (const m of await this.#o.admin.watermarks(this.#o.topic)) {
      const at = this.#positions.get(m.partition);
      if (at !== undefined && at < m.low) {
        this.#o.log.warn('state topic records below the log start were deleted; reading on from the log start', { topic: this.#o.topic, partition: m.partition, position: String(at), logStart: String(m.low) });
        this.#positions.set(m.partition, m.low);
      }
    }
  }

  /** Waits `ms`, or less if woken (a new waiter, close). */
  async #idle(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
    this.#wake = undefined;
  }
}

function bigmax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
