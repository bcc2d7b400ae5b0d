/**
 * The sink task loop: poll the task's partitions, hand each record to the data path (src/sink/), and end
 * a commit cycle through the channel (src/coordinate/task-channel.ts) when its trigger fires, on a
 * revocation, before a schema change, and when the task stops.
 *
 * Failures: a retriable one (broker, registry, catalog or store trouble, an aborted transaction)
 * abandons the cycle, backs off and reads again from the committed offsets, as Connect retries a sink
 * task's RetriableException — for as long as it takes by default, since nothing was lost and every
 * attempt is in the log and in the status (`progressNote`). Infrastructure failures never reach
 * errors.tolerance (the writer applies it to data errors only). The back-off grows with consecutive
 * failures up to errors.retry.delay.max.ms; a positive errors.retry.timeout fails the task once failures
 * went on that long without a committed cycle, or a partition waited that long for its schema (an
 * operator's alert; a FatalError, so the worker does not restart it). "Consecutive" ends with a committed
 * cycle, not with a poll that went through: after a rewind the records are read again without trouble,
 * and only the cycle's end reaches the store, the catalog or the broker's transaction again. A
 * transaction the broker made us abort (the group generation moved on: a rebalance under way) is the
 * protocol working, so it does not grow the back-off. Anything else (fenced, a bad configuration, a data
 * error the configuration does not tolerate) fails the task. A producer the broker left in a state it
 * cannot leave (a broker restart mid-transaction) is re-created by the channel within the same retry.
 *
 * Restarts: `restartable(error)` tells the worker whether a failed task may succeed as a new incarnation
 * (a broken client, an error we do not know) or ended by a decision a restart would repeat.
 *
 * One retriable failure is a single partition's, not the cycle's: a record whose writer schema the
 * registry cannot give yet. Its partition is held back from that record (seeked back, paused, resumed
 * after a growing back-off: partition-holds.ts) while the other partitions are handled and committed.
 *
 * Owns: the loop, retries, task state and metrics. Must not: decide what a record becomes (the writer)
 * or what is committed (the channel).
 */
import type { CrashPoints } from '../core/crash-points.ts';
import { CommitStateUnknownError, describeFailure, errorMessage, FatalError, IcefloeError, RetriableError } from '../core/errors.ts';
import type { RecordCoordinates } from '../core/errors.ts';
import { Backoff } from '../core/retry.ts';
import type { BackoffBounds } from '../core/retry.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ConverterKind } from '../config/converters.ts';
import { isFenced, partitionKey, requiresAbort } from '../consume/port.ts';
import type { KafkaSource, RawRecord, TransactionalProducer } from '../consume/port.ts';
import type { Catalog } from '../commit/port.ts';
import { TaskChannel } from '../coordinate/task-channel.ts';
import type { ChannelMetrics } from '../coordinate/task-channel.ts';
import { SinkWriter } from '../sink/sink-writer.ts';
import type { WriteOutcome, WriterMetrics } from '../sink/sink-writer.ts';
import type { ObjectStore } from '../upload/port.ts';
import type { ValueFormat } from '../decode/value-format.ts';
import { isSchemaUnavailable } from '../decode/registry-port.ts';
import { PartitionHolds } from './partition-holds.ts';
import { CallTracker, Watchdog } from './watchdog.ts';
import type { StallBound } from './watchdog.ts';

export interface SinkTaskDeps {
  /**
   * Distributed mode: a task fenced by another process may be restarted (views of the placement differ for
   * a moment after a change; the worker that no longer places the task stops its copy), not FAILED for good.
   */
  readonly restartFenced?: boolean;
  readonly connector: ConnectorConfig;
  readonly taskId: number;
  readonly source: KafkaSource;
  readonly producer: TransactionalProducer;
  readonly catalog: Catalog;
  /** Data files, manifests (the tables' location schemes). */
  readonly store: ObjectStore;
  readonly format: ValueFormat;
  /** The effective key converter (it decides the type of the key metadata column). */
  readonly keyConverter: ConverterKind;
  /** The effective value converter's class, as dead letters name it; default the connector's own. */
  readonly valueConverterClass?: string;
  readonly crash: CrashPoints;
  readonly log: Logger;
  /** Largest control record (announcements are split above it); default 900 KiB, under Kafka's 1 MiB. */
  readonly maxControlRecordBytes?: number;
  /** Buffered column bytes across the task's writers before the largest is flushed; default 256 MiB. */
  readonly memoryBudgetBytes?: number;
  /** Called after a cycle's transaction committed (wakes an in-process committer). */
  readonly onAnnounced?: () => void;
  readonly nowMs?: () => number;
  /** Waits between retries (tests pass one that does not wait). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** How long a partition waits for a record's schema before it is tried again; default SCHEMA_WAIT_BACKOFF. */
  readonly schemaWaitBackoff?: BackoffBounds;
  /** Numbers in [0, 1) for the back-offs' jitter (tests pass a fixed one); default Math.random. */
  readonly random?: () => number;
  /**
   * The calls the task is inside (watchdog.ts): the task tracks its Kafka, store and catalog calls in it;
   * app.ts passes the one it tracks the registry's calls in too. Default: a new one.
   */
  readonly calls?: CallTracker;
  /** The progress watchdog's bound (watchdog.ts `stallBound`); absent or 0: no watchdog. */
  readonly stallBound?: StallBound;
}

export type TaskState = 'UNASSIGNED' | 'RUNNING' | 'PAUSED' | 'FAILED' | 'STOPPED';

export interface TaskMetrics extends WriterMetrics, ChannelMetrics {
  recordsConsumed: number;
  bytesConsumed: number;
  /** Times a partition was paused (or its pause made longer) because a record's schema could not be fetched yet. */
  schemaWaits: number;
}

const POLL_MAX_RECORDS = 4096;
const MAX_POLL_WAIT_MS = 200;
/**
 * The first wait after a failed cycle; later ones grow with consecutive failures, with jitter, up to
 * errors.retry.delay.max.ms (core/retry.ts).
 */
const CYCLE_INITIAL_DELAY_MS = 200;

/** The task's retry back-off for the connector's errors.retry.delay.max.ms. */
export function cycleBackoff(delayMaxMs: number): BackoffBounds {
  return { initialDelayMs: Math.min(CYCLE_INITIAL_DELAY_MS, delayMaxMs), maxDelayMs: delayMaxMs };
}
/**
 * A partition waiting for a record's schema: the first wait, and the longest. Shorter than the registry's
 * unknown-id grace period (default 60 s), so a schema that appears is picked up within seconds.
 */
export const SCHEMA_WAIT_BACKOFF: BackoffBounds = { initialDelayMs: 500, maxDelayMs: 10_000 };

/**
 * Whether a task that ended with `error` may succeed as a new incarnation with new clients: anything not
 * ours (a client exception, a bug), a retriable error, or one marked `restartable` (a Kafka client that
 * broke, a Kafka error we do not know). A decision is not: a bad configuration, a record the configuration
 * does not tolerate, a fence by another process, the worker failing the connector — a new incarnation
 * would end the same way, so the task stays FAILED with its trace.
 */
export function restartable(error: unknown): boolean {
  // An unknown commit outcome (a catalog time-out or 5xx while creating or evolving a table, its retries
  // used up) is infrastructure trouble: a new incarnation reloads the table and finds out.
  return !(error instanceof IcefloeError) || error.retriable || error instanceof CommitStateUnknownError || error.context['restartable'] === true;
}

/** How a task failed, as the worker's failure line and summary show it (core/errors.ts `describeFailure`). */
export interface TaskFailure {
  /** The cause on one line, without the record's coordinates. */
  readonly cause: string;
  /** The record whose failure it is, if it is one record's. */
  readonly record?: RecordCoordinates;
  readonly restartable: boolean;
}

export class SinkTask {
  readonly id: number;
  state: TaskState = 'UNASSIGNED';
  trace: string | undefined;
  /** Set with state FAILED: whether a new incarnation may succeed (`restartable`). */
  restartable = false;
  /** Set with state FAILED: the cause and the record's coordinates, for the worker's failure line. */
  failedWith: TaskFailure | undefined;

  private readonly d: SinkTaskDeps;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly writer: SinkWriter;
  private readonly channel: TaskChannel;
  private readonly consumed = { recordsConsumed: 0, bytesConsumed: 0 };
  private readonly backoff: Backoff;
  private readonly backoffBounds: BackoffBounds;
  private readonly holds: PartitionHolds;
  private stopping = false;
  /** What `pause()`/`resume()` asked for, and what the loop has made of it. */
  private pauseWanted = false;
  private paused = false;
  /** Since when the task holds no partition after its assignment was lost; undefined once one comes back. */
  private lostSinceMs: number | undefined;
  /** Topics this task handled a record of since it started or `forgetTopics()` (Connect's active topics). */
  private readonly topicsSeen = new Set<string>();
  /**
   * Consecutive failures (cleared by a committed cycle, or a step that goes through with no partition to
   * commit), for the status's explanation and errors.retry.timeout. `cycles`: cycles committed before the
   * first failure.
   */
  private retrying: { readonly sinceMs: number; count: number; error: string; readonly cycles: number } | undefined;
  /** Set by `fail()`: the worker failed the connector (a table stopped); the loop ends with it. */
  private failure: FatalError | undefined;
  /** The clients as the task uses them: every promise-returning call tracked for the watchdog. */
  private readonly source: KafkaSource;
  private readonly producer: TransactionalProducer;
  private readonly calls: CallTracker;
  private readonly watchdog: Watchdog | undefined;
  /** Set when the watchdog found the task stuck: `run()` rejects with it at once, whatever the loop awaits. */
  private stuck: ((error: FatalError) => void) | undefined;
  /** Whether the task ended stuck (its clients may be what is stuck: nobody should wait for their close). */
  endedStuck = false;

  constructor(deps: SinkTaskDeps) {
    this.d = deps;
    this.id = deps.taskId;
    this.log = deps.log.child({ connector: deps.connector.name, task: deps.taskId });
    this.now = deps.nowMs ?? Date.now;
    const { connector } = deps;
    this.calls = deps.calls ?? new CallTracker();
    this.source = this.calls.wrap('Kafka', deps.source);
    this.producer = this.calls.wrap('Kafka', withStallPoint(deps.producer, deps.crash));
    const catalog = this.calls.wrap('catalog', deps.catalog);
    const store = this.calls.wrap('object store', deps.store);
    this.backoffBounds = cycleBackoff(connector.errors.retryDelayMaxMs);
    this.backoff = new Backoff(this.backoffBounds, deps.random);
    this.writer = new SinkWriter({
      connector,
      taskId: deps.taskId,
      catalog,
      store,
      format: deps.format,
      keyConverter: deps.keyConverter,
      log: this.log,
      ...(deps.memoryBudgetBytes === undefined ? {} : { memoryBudgetBytes: deps.memoryBudgetBytes }),
      deadLetterSource: {
        connector: connector.name,
        taskId: deps.taskId,
        valueConverterClass: deps.valueConverterClass ?? connector.valueConverter?.className ?? '',
        connectorClass: connector.connectorClass,
      },
      now: this.now,
      endCycle: async (why) => {
        this.throwIfFailed();
        await this.endCycle(why);
        return !this.channel.needsRewind;
      },
    });
    this.channel = new TaskChannel({
      connector: connector.name,
      taskId: deps.taskId,
      controlTopic: connector.control.topic,
      triggers: { intervalMs: connector.commit.intervalMs, maxRecords: connector.commit.maxRecords, maxBytes: connector.commit.maxBytes },
      source: this.source,
      producer: this.producer,
      writer: this.writer,
      store,
      crash: deps.crash,
      log: this.log,
      now: this.now,
      ...(deps.maxControlRecordBytes === undefined ? {} : { maxControlRecordBytes: deps.maxControlRecordBytes }),
      ...(deps.onAnnounced === undefined ? {} : { onAnnounced: deps.onAnnounced }),
      stopping: () => this.stopping,
    });
    // errors.retry.delay.max.ms caps these waits too: a registry that is down is infrastructure like any other.
    const cap = connector.errors.retryDelayMaxMs;
    const waitBounds = deps.schemaWaitBackoff ?? { initialDelayMs: Math.min(SCHEMA_WAIT_BACKOFF.initialDelayMs, cap), maxDelayMs: Math.min(SCHEMA_WAIT_BACKOFF.maxDelayMs, cap) };
    this.holds = new PartitionHolds({ source: this.source, log: this.log, now: this.now, backoff: () => new Backoff(waitBounds, deps.random) });
    const bound = deps.stallBound;
    this.watchdog = bound === undefined || bound.ms <= 0 ? undefined : new Watchdog({ bound, calls: this.calls, work: () => this.pendingWork(), onStuck: (m) => this.onStuck(m), log: this.log });
  }

  /**
   * What the watchdog counts as work (watchdog.ts): the cycle is due, or an assigned partition that is
   * neither paused nor held for a schema has records beyond the task's position. A paused task has none.
   */
  pendingWork(): string | undefined {
    if (this.state !== 'RUNNING' && this.state !== 'PAUSED') return undefined;
    if (this.paused) return undefined;
    if (this.channel.due()) return `its cycle was due (${Math.max(0, Math.round((this.now() - this.channel.deadline()) / 1000))} s past its interval, or its record or byte trigger reached)`;
    if (this.pauseWanted) return undefined;
    // Seen after a broker restart (sink-broker-chaos, the issue 24 stall): the session timed out, the
    // assignment was lost, and librdkafka's group handle stayed in "no broker available for coordinator
    // query" for minutes while the broker was back and the task's other clients worked; the group gave the
    // partitions to the other tasks, and this one, idle as far as the records go, never rejoined. A
    // healthy consumer rejoins within a session time-out; one that does not within the bound is stuck, and
    // only new clients end it. (With more tasks than partitions a task may rejoin and get nothing: one
    // restart, then no lost assignment, so no more.)
    if (this.lostSinceMs !== undefined) return `its assignment was lost ${Math.round((this.now() - this.lostSinceMs) / 1000)} s ago (the consumer group session timed out) and no partition came back: its consumer has not rejoined the group`;
    let behind = 0;
    try {
      const assigned = this.source.assignment().filter((tp) => !this.holds.isHeld(tp));
      for (const p of this.source.position(assigned)) {
        const high = this.source.highWatermark(p);
        if (p.offset !== null && high !== null && high > p.offset) behind++;
      }
    } catch {
      return undefined; // a client that cannot say: the cycle's clock still runs
    }
    return behind === 0 ? undefined : `${behind} assigned partition(s) had records beyond its position`;
  }

  /** The watchdog found the task stuck: it fails at once (run() rejects), restartable, naming the call. */
  private onStuck(message: string): void {
    const error = new FatalError(message, { context: { restartable: true, watchdog: true } });
    this.log.error(message);
    this.failure ??= error; // the loop, should its call ever return, ends at its next step
    this.stopping = true;
    this.stuck?.(error);
  }

  /** Ends the cycle through the channel; a cycle that ended (committed, or nothing to commit) is progress. */
  private async endCycle(why: string): Promise<void> {
    await this.channel.endCycle(why);
    this.watchdog?.progress();
  }

  get metrics(): TaskMetrics {
    return { ...this.consumed, ...this.writer.metrics, ...this.channel.metrics, schemaWaits: this.holds.waits };
  }

  /** Asks the loop to finish: the last cycle is committed when the consumer leaves the group. */
  stop(): void {
    this.stopping = true;
  }

  /**
   * Pauses consuming (Connect's PUT /pause) without leaving the group: the open cycle is committed first,
   * so a paused task holds nothing unannounced — nothing waits on it and nothing is lost if it is stopped
   * or its partitions move while paused. Its partitions stay paused across rebalances until `resume()`.
   */
  pause(): void {
    this.pauseWanted = true;
  }

  /** Consumes again from where the paused task stopped (partitions waiting for a schema stay held). */
  resume(): void {
    this.pauseWanted = false;
  }

  /**
   * Why a running task is not making progress, for its status (Connect's `trace` is only a FAILED task's;
   * ours also says this): cycles abandoned in a row, partitions held for a schema. Undefined when all is well.
   */
  get progressNote(): string | undefined {
    const notes: string[] = [];
    const r = this.retrying;
    if (r !== undefined) notes.push(`retrying: ${r.count} failure(s) in a row since ${new Date(r.sinceMs).toISOString()}, no cycle committed since; reading again from the committed offsets: ${r.error}`);
    const held = this.holds.describe();
    if (held !== undefined) notes.push(held);
    return notes.length === 0 ? undefined : notes.join('\n');
  }

  get activeTopics(): readonly string[] {
    return [...this.topicsSeen].sort();
  }

  /** PUT /connectors/{c}/topics/reset: the active topics start empty again. */
  forgetTopics(): void {
    this.topicsSeen.clear();
  }

  /**
   * Fails the task from outside (the worker, when a table of the connector stopped): the loop abandons
   * the open cycle at its next step — nothing more is announced or committed — and the task ends FAILED
   * with `message` in its trace.
   */
  fail(message: string): void {
    this.failure ??= new FatalError(message);
  }

  /** Runs until `stop()` (resolves) or a failure the task cannot retry (state FAILED, rejects). */
  async run(): Promise<void> {
    const { source, producer } = this;
    const stuck = new Promise<never>((_, reject) => (this.stuck = reject));
    stuck.catch(() => undefined); // raced below; unobserved when the task ends otherwise
    this.watchdog?.start();
    try {
      await Promise.race([this.loop(), stuck]);
      this.watchdog?.stop();
      this.throwIfFailed();
      await source.close(); // the final revoke commits the last cycle
      this.state = 'STOPPED';
      this.log.info('task stopped', { ...this.metrics });
    } catch (e) {
      this.watchdog?.stop();
      this.state = 'FAILED';
      this.endedStuck = e instanceof FatalError && e.context['watchdog'] === true;
      this.restartable = this.endedStuck || (this.failure === undefined && (restartable(e) || (this.d.restartFenced === true && isFenced(e))));
      this.trace = e instanceof Error ? (e.stack ?? e.message) : String(e);
      this.failedWith = { ...describeFailure(e), restartable: this.restartable };
      // The worker logs the one failure line a person reads (runtime/worker.ts), with the trace.
      this.log.debug('task ended with an error', { error: errorMessage(e) });
      this.channel.markFailed();
      if (this.endedStuck) {
        // Its clients may be what is stuck: their clean-up is not waited for (a task process ends now;
        // fencing and the transaction time-out make the old transaction harmless, as after a crash).
        void this.channel.abandon(e).catch(() => undefined);
        void source.close().catch(() => undefined);
        void producer.close().catch(() => undefined);
        throw e;
      }
      await this.channel.abandon(e);
      await source.close().catch(() => undefined);
      throw e;
    } finally {
      if (!this.endedStuck) await producer.close().catch(() => undefined);
    }
  }

  /** Registers, subscribes and runs the loop until `stop()` or a failure. */
  private async loop(): Promise<void> {
    const { source, producer } = this;
    const { connector } = this.d;
    await this.register();
    const subscription = connector.topics.kind === 'list' ? { kind: 'list' as const, topics: connector.topics.topics } : { kind: 'regex' as const, pattern: connector.topics.pattern };
    await source.subscribe(subscription, {
      onAssigned: (tps) => {
        if (tps.length > 0) this.lostSinceMs = undefined;
        this.holds.forget(tps);
        this.channel.onAssigned(tps);
      },
      onRevoked: (tps, info) => {
        // A lost assignment (the session timed out) that leaves the task with nothing: its consumer must
        // rejoin the group; until a partition comes back that is work the watchdog judges (pendingWork).
        if (info.lost && this.source.assignment().every((tp) => tps.some((r) => r.topic === tp.topic && r.partition === tp.partition))) this.lostSinceMs = this.now();
        return this.channel.onRevoked(tps, info.lost).then(() => this.watchdog?.progress()).finally(() => this.holds.forget(tps));
      },
    });
    this.state = 'RUNNING';
    this.log.info('task started', { transactionalId: producer.transactionalId, group: source.groupId });
    while (!this.stopping) {
      this.throwIfFailed();
      try {
        if (this.pauseWanted || this.paused) await this.pausedStep();
        else await this.pollOnce();
        this.recovered();
      } catch (e) {
        await this.retryLater(e);
      }
    }
  }

  /**
   * One poll: rewind if a cycle was abandoned, resume held partitions whose wait is over, hand every
   * record to the writer (but those of held partitions), end the cycle when due.
   */
  private async pollOnce(): Promise<void> {
    const { channel, holds } = this;
    if (channel.needsRewind) {
      await channel.rewind();
      holds.afterRewind();
    }
    holds.resumeDue();
    const waitMs = Math.max(1, Math.min(MAX_POLL_WAIT_MS, channel.deadline() - this.now(), holds.msToNextResume()));
    const startedMs = this.now();
    const batch = await this.source.poll({ maxRecords: POLL_MAX_RECORDS, timeoutMs: waitMs });
    if (channel.needsRewind) return; // the batch was read past an abandoned cycle: re-read instead
    channel.polled(batch, startedMs);
    for (const r of batch) {
      if (holds.active && holds.blocks(r)) continue; // read again once the partition resumes
      try {
        const pending = this.handle(r);
        if (pending !== undefined) await pending;
      } catch (e) {
        // Only this record's partition waits for its schema; any other failure is the cycle's.
        if (!isSchemaUnavailable(e)) throw e;
        if (!channel.needsRewind) {
          await holds.hold(r, e);
          this.checkHoldTimeout(e);
        }
      }
      if (channel.needsRewind) return;
    }
    if (channel.due()) {
      this.throwIfFailed(); // a failed connector commits no further cycle
      await this.endCycle('trigger');
    }
  }

  /**
   * A step of a paused (or pausing, or resuming) task. Pausing commits the open cycle, then every assigned
   * partition is paused on each step (newly assigned ones too) and polled so the consumer stays in the
   * group; records fetched before the pause took hold are not handled: their partitions are sought back to
   * the first of them, so they are read after the resume (the cycle's offsets only cover handled records).
   */
  private async pausedStep(): Promise<void> {
    const { channel, holds } = this;
    const source = this.source;
    if (channel.needsRewind) {
      await channel.rewind();
      holds.afterRewind();
    }
    if (!this.pauseWanted) {
      const free = source.assignment().filter((tp) => !holds.isHeld(tp));
      if (free.length > 0) source.resume(free);
      this.paused = false;
      this.state = 'RUNNING';
      this.log.info('task resumed', { partitions: free.length });
      return;
    }
    if (!this.paused) {
      this.throwIfFailed();
      await this.endCycle('pause');
      this.paused = true;
      this.state = 'PAUSED';
      this.log.info('task paused: its open cycle is committed; the partitions stay assigned and paused');
    }
    const assigned = source.assignment();
    if (assigned.length > 0) source.pause(assigned);
    const batch = await source.poll({ maxRecords: POLL_MAX_RECORDS, timeoutMs: MAX_POLL_WAIT_MS });
    const first = new Map<string, RawRecord>();
    for (const r of batch) if (!first.has(partitionKey(r))) first.set(partitionKey(r), r);
    for (const r of first.values()) await source.seek({ topic: r.topic, partition: r.partition, offset: r.offset });
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Handles one record synchronously when it can; returns a promise when the writer needs I/O. */
  private handle(r: RawRecord): Promise<void> | undefined {
    this.consumed.recordsConsumed++;
    this.topicsSeen.add(r.topic);
    this.consumed.bytesConsumed += r.value?.byteLength ?? 0;
    const outcome = this.writer.write(r);
    if (typeof outcome === 'string') {
      this.settle(r, outcome);
      return undefined;
    }
    return outcome.then((o) => this.settle(r, o));
  }

  private settle(r: RawRecord, outcome: WriteOutcome): void {
    if (outcome === 'abandoned') return;
    this.channel.handled(r, outcome === 'written');
    if (this.holds.active) this.holds.handled(r, outcome);
  }

  /**
   * Registers the transactional id (fencing an earlier incarnation), for as long as the broker is away:
   * librdkafka resumes a registration that timed out when it is called again.
   */
  private async register(): Promise<void> {
    for (;;) {
      try {
        await this.producer.initTransactions();
        this.backoff.reset();
        this.retrying = undefined;
        return;
      } catch (e) {
        if (!(e instanceof RetriableError) || this.stopping) throw e;
        this.failedAgain(e);
        const delay = this.backoff.next();
        this.log.warn('could not register the transactional id; retrying', { transactionalId: this.producer.transactionalId, error: errorMessage(e), retryInMs: delay });
        await this.backOff(delay);
      }
    }
  }

  private async retryLater(e: unknown): Promise<void> {
    if (isFenced(e) || !(e instanceof RetriableError) || this.failure !== undefined) throw this.failure ?? e;
    if (!this.channel.needsRewind) await this.channel.abandon(e);
    this.failedAgain(e);
    // A transaction the broker made us abort is a rebalance under way, not trouble: it does not grow the wait.
    const delay = requiresAbort(e) ? this.backoffBounds.initialDelayMs : this.backoff.next();
    this.log.warn('cycle abandoned; reading again from the committed offsets', { error: errorMessage(e), consecutive: this.backoff.count, retryInMs: delay });
    await this.backOff(delay);
  }

  /** A retry's wait, an open call to the watchdog like any other (the bound covers the longest). */
  private backOff(ms: number): Promise<void> {
    return this.calls.track('retry back-off', () => (this.d.sleep ?? sleep)(ms));
  }

  /**
   * One more consecutive failure: recorded for the status; past a positive errors.retry.timeout the task
   * fails, naming the cause — not restartable, since the operator asked to be told rather than retried.
   */
  private failedAgain(e: RetriableError): void {
    const now = this.now();
    const r = (this.retrying ??= { sinceMs: now, count: 0, error: '', cycles: this.channel.metrics.cyclesCommitted });
    r.count++;
    r.error = errorMessage(e);
    const limit = this.d.connector.errors.retryTimeoutMs;
    if (limit !== null && now - r.sinceMs >= limit) {
      throw new FatalError(
        `errors.retry.timeout (${limit} ms) passed: infrastructure failing for ${now - r.sinceMs} ms since ${new Date(r.sinceMs).toISOString()} ` +
          `(${r.count} failure(s) in a row, no cycle committed); last error: ${r.error}. The task stays FAILED: restart it once the cause is fixed ` +
          `(nothing was lost: it reads again from the committed offsets), or set errors.retry.timeout=0 to retry without limit`,
        { cause: e, context: { retryTimeoutMs: limit, failures: r.count } },
      );
    }
  }

  /**
   * errors.retry.timeout applies to a partition waiting for its record's schema as to failed cycles: past it
   * (counted from the hold's first wait) the task fails, naming the registry's answer.
   */
  private checkHoldTimeout(e: RetriableError): void {
    const limit = this.d.connector.errors.retryTimeoutMs;
    const since = this.holds.oldestSinceMs();
    const now = this.now();
    if (limit === null || since === undefined || now - since < limit) return;
    throw new FatalError(
      `errors.retry.timeout (${limit} ms) passed: a partition has waited ${now - since} ms since ${new Date(since).toISOString()} for a record's schema from the registry; ` +
        `last error: ${errorMessage(e)}. The task stays FAILED: restart it once the registry answers (nothing was lost: it reads again from the committed offsets), ` +
        `or set errors.retry.timeout=0 to wait without limit`,
      { cause: e, context: { retryTimeoutMs: limit } },
    );
  }

  /**
   * A step went through: the failures in a row are over once a cycle committed since the first of them, or
   * when the task holds no partition (nothing left to commit). A poll alone proves little: after a rewind the
   * records are read again without trouble, and only the cycle's end reaches the store, catalog and broker.
   */
  private recovered(): void {
    const r = this.retrying;
    if (r === undefined) return;
    if (this.channel.metrics.cyclesCommitted > r.cycles || this.source.assignment().length === 0) {
      this.backoff.reset();
      this.retrying = undefined;
    }
  }
}


/**
 * The producer with the stall point `task.in-kafka-call` (core/crash-points.ts) inside its transaction
 * commit: armed with the action `hang`, that call never returns, as a client whose callback never comes.
 */
function withStallPoint(producer: TransactionalProducer, crash: CrashPoints): TransactionalProducer {
  const reach = crash.reachAsync;
  if (reach === undefined) return producer;
  return new Proxy(producer, {
    get: (t, prop) => {
      if (prop === 'commitTransaction') {
        return async (timeoutMs?: number): Promise<void> => {
          await reach.call(crash, 'task.in-kafka-call');
          return t.commitTransaction(timeoutMs);
        };
      }
      const value: unknown = Reflect.get(t, prop, t);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(t) : value;
    },
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
