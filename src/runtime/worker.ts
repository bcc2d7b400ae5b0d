/**
 * The worker (Kafka's `connect-standalone` shape): runs each configured connector's tasks and, in the
 * same process, its committer. Tasks run as child processes (N tasks use N cores) or in this process —
 * `app.ts` decides how a task is started; tasks announce on the control topic, the committer reads it.
 * In a cluster (distributed mode) it runs the share of each connector that placement gives this worker
 * (`start` with a share, `reassign`), and the committer only while it holds the connector's lease (a seat
 * that may be held elsewhere for a while, and is lost at once when the lease is).
 *
 * The committer's rounds are scheduled by its CommitterLoop (src/coordinate/). Stopping: the tasks stop
 * first (each commits its last cycle when it leaves the group), then one last committer round.
 *
 * Health (coordinate/connector-health.ts, docs/sink.md "A table stops"): after every committer round the
 * worker checks the tables' statuses against the control topic's retention. A stopped table, or one whose
 * oldest unapplied announcement nears the retention, fails every task of the connector (each abandons its
 * open cycle, so nothing more is acknowledged to Kafka); the committer keeps running for the other tables.
 * The connector stays FAILED until the worker is restarted.
 *
 * Restarts (nobody is needed at 3 a.m.): a task that ended unexpectedly — its process crashed, was killed
 * (OOM), or the task failed with an error a new incarnation may not meet (`restartable` in task.ts: a
 * broken client, an error we do not know) — is started again after a back-off that grows with each
 * consecutive restart (from RESTART_BACKOFF; an incarnation that ran HEALTHY_RUN_MS starts the count
 * afresh). A task that failed by a decision (bad configuration, a record the configuration does not
 * tolerate, fenced by another process, the connector failed) stays FAILED with its trace. The status
 * shows each task's restarts and the last unexpected end.
 *
 * When tasks fail (docs/sink.md "When tasks fail"): each failure is ONE error line a person reads —
 * `task <connector>-<id> failed at <topic>/<partition>@<offset>: <cause>` (the coordinates when the failure
 * is a record's), with the trace in a field — followed by the restart or not. `whenAllFailed()` settles
 * once every task of every connector is FAILED for good (nothing runs, nothing will restart): without a
 * REST API nothing can show that state or serve, so the standalone command then stops the worker and exits
 * non-zero with `failureSummary()` (also when it is stopped while some tasks are FAILED).
 *
 * Stopping is bounded: tasks get `task.shutdown.graceful.timeout.ms` in all to finish their last cycle;
 * one still running then is killed (a task process by SIGKILL: fencing and the transaction time-out make a
 * late end harmless, its cycle is read again by the next incarnation).
 */
import { describeFailure, errorMessage, formatCoordinates, IcefloeError } from '../core/errors.ts';
import type { RecordCoordinates } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { Backoff } from '../core/retry.ts';
import type { BackoffBounds } from '../core/retry.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ConnectorCommitter } from '../coordinate/committer.ts';
import { CommitterLoop } from '../coordinate/committer-loop.ts';
import { connectorHealth } from '../coordinate/connector-health.ts';
import type { CommitterHealthInput, HealthVerdict, TableHealth } from '../coordinate/connector-health.ts';
import { restartable } from './task.ts';
import { isFenced } from '../consume/port.ts';

/** A running task, however it runs. */
export interface TaskHandle {
  readonly taskId: number;
  /** Settles when the task ended; rejects when it failed, with an error `restartable` (task.ts) judges. */
  readonly done: Promise<void>;
  /** Asks the task to finish its cycle and leave the group. */
  stop(): Promise<void>;
  /** Fails the task: it abandons its open cycle (nothing more is committed) and reports FAILED with `message`. */
  fail(message: string): Promise<void>;
  /** Ends the task at once (a task process: SIGKILL); absent where that is impossible (a task in this process). */
  kill?(): void;
  /** Pauses consuming without leaving the group (task.ts `pause`); `resume` undoes it. */
  pause(): void;
  resume(): void;
  /** The topics the task handled records of (Connect's active topics), and forgetting them. */
  topics(): readonly string[];
  forgetTopics(): void;
  /** Sets a task process's log level (PUT /admin/loggers); absent for a task in the worker's process (its loggers are the worker's). */
  setLogLevel?(level: string): void;
  /** `note`: why a task that runs is not progressing (abandoned cycles, partitions waiting for a schema). */
  state(): { readonly state: string; readonly trace?: string; readonly note?: string };
}

export interface WorkerDeps {
  readonly log: Logger;
  /**
   * Creates the control topic if needed (partitions, replication, retention from the connector) and
   * checks its configuration; resolves with its retention.ms (null: unlimited).
   */
  prepareConnector(connector: ConnectorConfig): Promise<{ readonly retentionMs: number | null }>;
  /** Starts task `taskId`; `incarnation` counts its restarts (0: the first start). */
  startTask(connector: ConnectorConfig, taskId: number, onAnnounced: () => void, incarnation: number): TaskHandle;
  /**
   * Opens the connector's committer. Null: another process holds its seat (distributed mode: the Redis
   * lease) — the worker asks again every COMMITTER_SEAT_RETRY_MS while the committer is placed here.
   * `onLost`: the seat was lost (lease expired or taken); the worker closes the committer at once.
   */
  createCommitter(connector: ConnectorConfig): Promise<OpenCommitter | null>;
  /** `task.shutdown.graceful.timeout.ms`: how long stopping tasks may take in all before they are killed. */
  readonly taskShutdownTimeoutMs?: number;
  /** The waits between restarts of a task (default RESTART_BACKOFF). */
  readonly restartBackoff?: BackoffBounds;
  /** Numbers in [0, 1) for the back-off's jitter (tests pin it). */
  readonly random?: () => number;
  /** Distributed mode: a task fenced by another process is restarted (SinkTaskDeps.restartFenced says why). */
  readonly restartFenced?: boolean;
  /** A task of a connector whose committer runs elsewhere announced a cycle (distributed mode: a wake-up job). */
  readonly onAnnounced?: (connector: string) => void;
  /**
   * Distributed mode: the worker holding the connector's committer seat (its Redis lease), or null when
   * none does. Asked by a worker that runs tasks of the connector without its committer: a seat vacant for
   * long fails them like a failing committer (N4). Rejects when it cannot tell (counted as vacant).
   */
  readonly committerHolder?: (connector: string) => Promise<string | null>;
  /** How often the connector's health is checked between committer rounds (default HEALTH_CHECK_MS). */
  readonly healthCheckMs?: number;
}

/** An open committer and what closes it. */
export interface OpenCommitter {
  readonly committer: ConnectorCommitter;
  close(): Promise<void>;
  onLost?(listener: (reason: string) => void): void;
}

/** What of a connector this worker runs: task numbers (0-based, before icefloe.tasks.id-offset) and the committer. */
export interface ConnectorShare {
  readonly taskIds: readonly number[];
  readonly committer: boolean;
}

const HEALTH_CHECK_MS = 5_000;
/** The key of the committer-as-a-whole alarm among a connector's alarmed tables (no table is named so). */
const COMMITTER_ALARM = '\u0000committer';
const COMMITTER_SEAT_RETRY_MS = 1_000;
const DEFAULT_TASK_SHUTDOWN_TIMEOUT_MS = 30_000;
/** From 1 s to 5 min between restarts of one task. */
export const RESTART_BACKOFF: BackoffBounds = { initialDelayMs: 1_000, maxDelayMs: 300_000 };
/** An incarnation that ran this long was healthy: its end starts the back-off afresh. */
const HEALTHY_RUN_MS = 10 * 60_000;

/** One task number of a connector across its incarnations. */
interface TaskSlot {
  /** The task's number within the connector (startTask's argument). */
  readonly n: number;
  readonly taskId: number;
  /** The current (or last) incarnation. */
  handle: TaskHandle;
  /** Set once the current incarnation's `done` settled. */
  ended: boolean;
  startedAtMs: number;
  /** Incarnations started after the first. */
  restarts: number;
  /** The last unexpected end (what the restart recovered from). */
  lastFailure: string | undefined;
  readonly backoff: Backoff;
  /** A restart waiting out its back-off. */
  restartTimer: NodeJS.Timeout | undefined;
  /** Set once the task FAILED for good (no restart): the summary's line. */
  failed: TaskFailureLine | undefined;
  /** Set while a requested restart stops the current incarnation: its end is neither a failure nor restarted. */
  replacing?: boolean;
}

/** A task that FAILED and will not be restarted, as the summary shows it. */
export interface TaskFailureLine {
  readonly connector: string;
  readonly task: number;
  /** The record whose failure it is, if it is one record's. */
  readonly record?: RecordCoordinates;
  readonly cause: string;
}

/** `task <connector>-<id> failed[ at <topic>/<partition>@<offset>]: <cause>`, the failure line's text. */
export function failureLine(f: TaskFailureLine): string {
  return `task ${f.connector}-${f.task} failed${f.record === undefined ? '' : ` at ${formatCoordinates(f.record)}`}: ${f.cause}`;
}

/**
 * What the standalone command prints to stderr when it exits because tasks FAILED: a headline, one line
 * per failed task (connector, task id, the record's coordinates where the failure has one, the cause), and
 * what to do.
 */
export function failureSummary(failures: readonly TaskFailureLine[], total: number, why: 'all-failed' | 'stopped'): string {
  const head = why === 'all-failed'
    ? `every task has FAILED (${failures.length} of ${total}) and none will be restarted: the worker stops`
    : `stopped with ${failures.length} of ${total} tasks FAILED`;
  const lines = failures.map((f) => `  connector ${f.connector} task ${f.task}${f.record === undefined ? '' : ` at ${formatCoordinates(f.record)}`}: ${f.cause}`);
  return `icefloe standalone: ${head}:\n${lines.join('\n')}\nfix the cause and start the worker again (docs/sink.md "When tasks fail")\n`;
}

interface RunningConnector {
  readonly config: ConnectorConfig;
  /** The tasks this worker runs (all of the connector's in standalone mode; its share in a cluster). */
  tasks: TaskSlot[];
  /** Whether this worker should run the connector's committer. */
  wantsCommitter: boolean;
  /** The open committer (replaced when the connector instance is restarted); undefined while not seated here. */
  seat: { readonly committer: ConnectorCommitter; readonly close: () => Promise<void>; readonly loop: CommitterLoop } | undefined;
  /** A cluster's connector (an explicit share): a committer that cannot open is retried, not a failed start. */
  readonly seatRetried: boolean;
  /** A pending retry to take the committer's seat. */
  seatTimer: NodeJS.Timeout | undefined;
  /** The committer being opened or closed (operations on the seat run one after another). */
  seatChain: Promise<void>;
  /** PUT /pause: every incarnation of its tasks is paused until PUT /resume. */
  paused: boolean;
  /** Set while the connector is being stopped on its own (PUT /stop, a new config, DELETE): no restarts. */
  stopping: boolean;
  readonly retentionMs: number | null;
  health: HealthVerdict;
  /** Set once a table failed the connector (until the worker restarts). */
  failure: { readonly table: string; readonly message: string } | undefined;
  readonly alarmed: Set<string>;
  /** Checks the ages between rounds too: one round can take long (a commit retried for minutes). */
  readonly healthTimer: NodeJS.Timeout;
  /** A cluster's connector whose committer runs elsewhere: since when no worker holds its seat (or this one cannot tell). */
  vacantSinceMs?: number | undefined;
  /** What the last seat check saw, for the failure's message. */
  vacantDetail?: string;
  /** A seat check in flight (one at a time). */
  seatProbe?: Promise<void> | undefined;
}

export interface ConnectorStatus {
  readonly name: string;
  readonly state: 'RUNNING' | 'PAUSED' | 'FAILED';
  readonly trace?: string;
  /** `restarts`: incarnations started after the first; `lastFailure`: the unexpected end the last restart recovered from. */
  readonly tasks: { id: number; state: string; trace?: string; note?: string; restarts: number; lastFailure?: string }[];
  /** Committer rounds failing in a row (cleared by one that succeeds). */
  readonly committerFailing?: { readonly sinceMs: number; readonly count: number; readonly error: string };
  readonly tables: (ReturnType<ConnectorCommitter['tableStatus']>[number] & Partial<Pick<TableHealth, 'unappliedAgeMs' | 'retentionAlarm'>>)[];
  /** The committer's view of the control topic (records read, ignored, parked tables). */
  /** Absent where this worker does not run the connector's committer. */
  readonly control?: ReturnType<ConnectorCommitter['controlStatus']>;
  /** Whether this worker runs the connector's committer now. */
  readonly committer: boolean;
}

export class StandaloneWorker {
  private readonly d: WorkerDeps;
  private readonly connectors = new Map<string, RunningConnector>();
  /** Connectors being stopped on their own (stopConnector), until they are. */
  private readonly connectorStops = new Map<string, Promise<void>>();

  private readonly now: () => number;
  private stopping = false;
  /** Set by setTaskLogLevel(): what new task processes start with (undefined: their spec's). */
  taskLogLevel: string | undefined;
  /** Set by whenAllFailed(): settled once every task is FAILED for good. */
  private allFailed: { readonly promise: Promise<void>; readonly resolve: () => void; settled: boolean } | undefined;

  constructor(deps: WorkerDeps & { readonly nowMs?: () => number }) {
    this.d = deps;
    this.now = deps.nowMs ?? Date.now;
  }

  /**
   * Starts a connector: its committer, then its tasks (paused from the start when `paused`). `share`: the
   * tasks and whether the committer run here (default: all of them, standalone).
   */
  async start(connector: ConnectorConfig, options: { readonly paused?: boolean; readonly share?: ConnectorShare } = {}): Promise<void> {
    if (this.connectors.has(connector.name)) throw new Error(`connector ${connector.name} runs already`);
    const log = this.d.log.child({ connector: connector.name });
    const share = options.share ?? { taskIds: Array.from({ length: connector.tasksMax }, (_, n) => n), committer: true };
    const { retentionMs } = await this.d.prepareConnector(connector);
    const running: RunningConnector = { config: connector, tasks: [], wantsCommitter: share.committer, seatRetried: options.share !== undefined, seat: undefined, seatTimer: undefined, seatChain: Promise.resolve(),
      paused: options.paused === true, stopping: false, retentionMs, health: { tables: [] }, failure: undefined, alarmed: new Set(),
      healthTimer: setInterval(() => this.checkHealth(running, log), this.d.healthCheckMs ?? HEALTH_CHECK_MS).unref() };
    // Standalone: a committer that cannot open fails the start (the connector is FAILED with the reason). In
    // a cluster (an explicit share) its seat is retried: the lease may be held elsewhere for a while.
    if (share.committer) await this.openSeat(running, log, !running.seatRetried);
    this.connectors.set(connector.name, running);
    for (const n of share.taskIds) this.addTask(running, n, log);
    log.info('connector started', { tasks: share.taskIds.length, committer: share.committer, paused: running.paused, config: connector.redacted() });
  }

  /**
   * Changes what of a running connector this worker runs (distributed mode, after the placement moved):
   * tasks no longer placed here stop as on a worker stop (their last cycle commits), new ones start; the
   * committer is opened or closed.
   */
  async reassign(name: string, share: ConnectorShare): Promise<void> {
    const c = this.connector(name);
    const log = this.d.log.child({ connector: name });
    const wanted = new Set(share.taskIds);
    const leaving = c.tasks.filter((t) => !wanted.has(t.n));
    if (leaving.length > 0) {
      for (const t of leaving) t.replacing = true; // their end is neither a failure nor restarted
      await this.stopSlots(leaving);
      c.tasks = c.tasks.filter((t) => wanted.has(t.n));
    }
    const have = new Set(c.tasks.map((t) => t.n));
    const joining = share.taskIds.filter((n) => !have.has(n));
    for (const n of joining) this.addTask(c, n, log);
    c.wantsCommitter = share.committer;
    if (share.committer && c.seat === undefined) await this.openSeat(c, log, false);
    if (!share.committer) await this.closeSeat(c);
    if (leaving.length > 0 || joining.length > 0) log.info('connector share changed', { stopped: leaving.map((t) => t.n), started: joining, committer: share.committer });
  }

  /** What of the connector this worker runs now. */
  share(name: string): ConnectorShare | undefined {
    const c = this.connectors.get(name);
    return c === undefined ? undefined : { taskIds: c.tasks.map((t) => t.n).sort((a, b) => a - b), committer: c.wantsCommitter };
  }

  private addTask(c: RunningConnector, n: number, log: Logger): void {
    const handle = this.startIncarnation(c, n, 0);
    const slot: TaskSlot = { n, taskId: handle.taskId, handle, ended: false, startedAtMs: this.now(), restarts: 0, lastFailure: undefined,
      backoff: new Backoff(this.d.restartBackoff ?? RESTART_BACKOFF, this.d.random), restartTimer: undefined, failed: undefined };
    c.tasks.push(slot);
    c.tasks.sort((a, b) => a.n - b.n);
    this.watch(c, slot, n, log);
  }

  /**
   * Opens the committer and its loop. `mustOpen` (a connector's start): an error fails the start. Otherwise
   * errors and a seat held elsewhere are retried every COMMITTER_SEAT_RETRY_MS while the committer is wanted.
   */
  private openSeat(c: RunningConnector, log: Logger, mustOpen: boolean): Promise<void> {
    const open = async (): Promise<void> => {
      clearTimeout(c.seatTimer);
      c.seatTimer = undefined;
      if (c.seat !== undefined || !c.wantsCommitter || c.stopping || this.stopping) return;
      let opened: OpenCommitter | null;
      try {
        opened = await this.d.createCommitter(c.config);
      } catch (e) {
        if (mustOpen) throw e;
        log.warn('could not open the committer; trying again', { error: errorMessage(e), retryInMs: COMMITTER_SEAT_RETRY_MS });
        opened = null;
      }
      if (opened === null) {
        c.seatTimer = setTimeout(() => void this.openSeat(c, log, false), COMMITTER_SEAT_RETRY_MS).unref();
        return;
      }
      if (!c.wantsCommitter || c.stopping || this.stopping) {
        await opened.close();
        return;
      }
      const { committer, close } = opened;
      const loop = new CommitterLoop(committer, { intervalMs: c.config.control.commitIntervalMs, log, afterRound: () => this.checkHealth(c, log), nowMs: this.now });
      c.seat = { committer, close, loop };
      opened.onLost?.((reason) => {
        log.warn('committer seat lost: its rounds stop at once; another worker commits', { reason });
        void this.closeSeat(c).then(() => {
          if (c.wantsCommitter) return this.openSeat(c, log, false);
          return undefined;
        });
      });
    };
    const next = c.seatChain.then(open);
    c.seatChain = next.catch(() => undefined);
    return next;
  }

  /** Stops the committer loop (its round under way finishes) and closes the committer. */
  private closeSeat(c: RunningConnector): Promise<void> {
    const close = async (): Promise<void> => {
      clearTimeout(c.seatTimer);
      c.seatTimer = undefined;
      const seat = c.seat;
      if (seat === undefined) return;
      c.seat = undefined;
      await seat.loop.stop();
      await seat.close();
    };
    const next = c.seatChain.then(close);
    c.seatChain = next.catch(() => undefined);
    return next;
  }

  /** Wakes the connector's committer where it runs here (a task of this worker or, through a queue, of another announced). */
  wakeCommitter(name: string): void {
    this.connectors.get(name)?.seat?.loop.wake();
  }

  private startIncarnation(c: RunningConnector, n: number, incarnation: number): TaskHandle {
    const handle = this.d.startTask(c.config, n, () => this.announced(c, n), incarnation);
    if (c.paused) handle.pause();
    return handle;
  }

  /** A task of this worker announced a cycle: wake the committer, here or (d.onAnnounced) wherever it runs. */
  private announced(c: RunningConnector, taskId: number): void {
    c.seat?.loop.wake(taskId);
    if (c.seat === undefined) this.d.onAnnounced?.(c.config.name);
  }

  /** The names of the connectors this worker runs. */
  running(): readonly string[] {
    return [...this.connectors.keys()];
  }

  /** PUT /pause: the tasks stop consuming (each commits its open cycle first) and stay in the group. */
  pause(name: string): void {
    const c = this.connector(name);
    c.paused = true;
    for (const t of c.tasks) if (!t.ended) t.handle.pause();
  }

  resume(name: string): void {
    const c = this.connector(name);
    c.paused = false;
    for (const t of c.tasks) if (!t.ended) t.handle.resume();
  }

  /** The level task loggers log at from now on (running task processes are told; new ones start with it). */
  setTaskLogLevel(level: string): void {
    this.taskLogLevel = level;
    for (const c of this.connectors.values()) for (const t of c.tasks) if (!t.ended) t.handle.setLogLevel?.(level);
  }

  /** The topics the connector's tasks handled records of (Connect's active topics). */
  topics(name: string): readonly string[] {
    const c = this.connectors.get(name);
    return c === undefined ? [] : [...new Set(c.tasks.flatMap((t) => t.handle.topics()))].sort();
  }

  forgetTopics(name: string): void {
    for (const t of this.connectors.get(name)?.tasks ?? []) t.handle.forgetTopics();
  }

  /**
   * Restarts task `n` of the connector (POST /connectors/{c}/tasks/{n}/restart): the running incarnation
   * stops as on a worker stop (its last cycle commits; bounded, then killed), a new one starts; a FAILED
   * task starts afresh, its restart back-off reset.
   */
  async restartTask(name: string, n: number): Promise<void> {
    const c = this.connector(name);
    const slot = c.tasks.find((t) => t.n === n);
    if (slot === undefined) throw new Error(`connector ${name} has no task ${n} on this worker`);
    clearTimeout(slot.restartTimer);
    slot.restartTimer = undefined;
    const old = slot.handle;
    slot.replacing = true;
    try {
      if (!slot.ended) await this.stopSlots([slot]);
    } finally {
      slot.replacing = false;
    }
    if (c.stopping || this.stopping || slot.handle !== old) return;
    slot.backoff.reset();
    slot.failed = undefined;
    slot.handle = this.startIncarnation(c, n, slot.restarts + 1);
    slot.ended = false;
    slot.startedAtMs = this.now();
    const log = this.d.log.child({ connector: name });
    log.info('task restarted on request', { task: slot.handle.taskId });
    this.watch(c, slot, n, log);
  }

  /**
   * Restarts the connector instance (POST /connectors/{c}/restart): a new committer, which reads the
   * tables and the control topic afresh; a connector failed by a table starts healthy again (its tables
   * are checked anew after the first round).
   */
  async restartConnector(name: string): Promise<void> {
    const c = this.connector(name);
    const log = this.d.log.child({ connector: name });
    await this.closeSeat(c);
    c.failure = undefined;
    c.alarmed.clear();
    c.health = { tables: [] };
    if (c.wantsCommitter) await this.openSeat(c, log, !c.seatRetried);
    log.info('connector restarted on request');
  }

  /** Whether task `n` of the connector is FAILED (for good, or waiting for its automatic restart). */
  taskFailed(name: string, n: number): boolean {
    const slot = this.connector(name).tasks.find((t) => t.n === n);
    return slot !== undefined && (slot.failed !== undefined || slot.restartTimer !== undefined);
  }

  /** Whether the connector instance is FAILED (a table failed it). */
  connectorFailed(name: string): boolean {
    return this.connector(name).failure !== undefined;
  }

  private connector(name: string): RunningConnector {
    const c = this.connectors.get(name);
    if (c === undefined) throw new Error(`connector ${name} does not run on this worker`);
    return c;
  }

  /** Follows one incarnation of task number `n` to its end, and restarts it when that end was unexpected. */
  private watch(c: RunningConnector, slot: TaskSlot, n: number, log: Logger): void {
    const handle = slot.handle;
    handle.done.then(
      () => {
        if (slot.handle === handle) slot.ended = true;
      },
      (e: unknown) => {
        if (slot.handle !== handle || slot.replacing === true) return; // an incarnation a requested restart replaces
        slot.ended = true;
        const { record, cause } = describeFailure(e);
        const line: TaskFailureLine = { connector: c.config.name, task: handle.taskId, ...(record === undefined ? {} : { record }), cause };
        const trace = handle.state().trace ?? (e instanceof Error ? e.stack : undefined);
        const fields = {
          task: handle.taskId,
          ...(record === undefined ? {} : { topic: record.topic, partition: record.partition, offset: record.offset.toString() }),
          ...(e instanceof IcefloeError && e.context['exit'] !== undefined ? { exit: e.context['exit'] } : {}),
          error: errorMessage(e),
          trace,
        };
        if (this.stopping || c.stopping) {
          log.warn(`${failureLine(line)} (while the ${this.stopping ? 'worker' : 'connector'} stops)`, fields);
          return;
        }
        if (c.failure !== undefined || !(restartable(e) || (this.d.restartFenced === true && isFenced(e)))) {
          slot.failed = line;
          log.error(failureLine(line), { ...fields, restarting: false, fix: `not retried: a restart would fail the same way; fix the cause, then POST /connectors/${c.config.name}/restart?includeTasks=true&onlyFailed=true (or start the worker again)` });
          this.checkAllFailed();
          return;
        }
        if (this.now() - slot.startedAtMs >= HEALTHY_RUN_MS) slot.backoff.reset();
        const delay = slot.backoff.next();
        slot.lastFailure = errorMessage(e);
        log.error(`${failureLine(line)}; restarting it in ${(delay / 1000).toFixed(1)} s`, { ...fields, restarting: true, restarts: slot.restarts + 1, retryInMs: delay });
        slot.restartTimer = setTimeout(() => {
          slot.restartTimer = undefined;
          if (this.stopping || c.stopping || c.failure !== undefined) return;
          slot.restarts++;
          slot.handle = this.startIncarnation(c, n, slot.restarts);
          slot.ended = false;
          slot.startedAtMs = this.now();
          log.info('task restarted', { task: slot.handle.taskId, restarts: slot.restarts });
          this.watch(c, slot, n, log);
        }, delay);
      },
    );
  }

  /**
   * Settles once every task of every started connector is FAILED for good: none runs, none waits for a
   * restart (checked now, and after each task that fails for good).
   */
  whenAllFailed(): Promise<void> {
    if (this.allFailed === undefined) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((r) => (resolve = r));
      this.allFailed = { promise, resolve, settled: false };
      this.checkAllFailed();
    }
    return this.allFailed.promise;
  }

  /** The tasks FAILED for good so far (the summary's lines), and how many tasks there are. */
  failures(): { readonly failed: readonly TaskFailureLine[]; readonly total: number } {
    const slots = [...this.connectors.values()].flatMap((c) => c.tasks);
    return { failed: slots.flatMap((t) => (t.failed === undefined ? [] : [t.failed])), total: slots.length };
  }

  private checkAllFailed(): void {
    const a = this.allFailed;
    if (a === undefined || a.settled || this.stopping) return;
    const { failed, total } = this.failures();
    if (total === 0 || failed.length < total) return;
    a.settled = true;
    a.resolve();
  }

  status(): ConnectorStatus[] {
    return [...this.connectors.values()].map((c) => ({
      name: c.config.name,
      state: c.failure !== undefined ? 'FAILED' : c.paused ? 'PAUSED' : 'RUNNING',
      ...(c.failure === undefined ? {} : { trace: c.failure.message }),
      tasks: c.tasks.map((t) => ({
        id: t.taskId,
        ...(t.restartTimer === undefined ? t.handle.state() : { state: 'RESTARTING', ...(t.lastFailure === undefined ? {} : { trace: t.lastFailure }) }),
        restarts: t.restarts,
        ...(t.lastFailure === undefined ? {} : { lastFailure: t.lastFailure }),
      })),
      tables: (c.seat?.committer.tableStatus() ?? []).map((t) => {
        const h = c.health.tables.find((x) => x.table === t.table);
        return { ...t, ...(h === undefined ? {} : { retentionAlarm: h.retentionAlarm, ...(h.unappliedAgeMs === undefined ? {} : { unappliedAgeMs: h.unappliedAgeMs }) }) };
      }),
      ...(c.seat === undefined ? {} : { control: c.seat.committer.controlStatus() }),
      committer: c.seat !== undefined,
      ...(c.seat?.loop.failing === undefined ? {} : { committerFailing: { ...c.seat.loop.failing } }),
    }));
  }

  /**
   * After a committer round: raise or clear retention alarms, and fail the connector's tasks when a
   * table stopped or its oldest unapplied announcement nears the control topic's retention.
   */
  private checkHealth(c: RunningConnector, log: Logger): void {
    const whole = this.committerAsAWhole(c, log);
    // The committer runs elsewhere: its worker judges the tables; here only whether the seat is held.
    if (c.seat === undefined && whole === undefined) return;
    const health = connectorHealth(c.config.name, c.config.control, c.retentionMs, c.seat?.committer.tableStatus() ?? [], this.now(), whole);
    c.health = health;
    if (health.committer?.retentionAlarm === true && !c.alarmed.has(COMMITTER_ALARM)) {
      c.alarmed.add(COMMITTER_ALARM);
      log.error(`retention alarm: ${health.committer.kind === 'failing' ? 'the committer has not got through a round' : 'no worker holds the committer seat'} for long for the control topic's retention; fix it before the connector stops`, {
        sinceMs: whole?.sinceMs,
        detail: whole?.detail,
        retentionMs: c.retentionMs,
        alarmRatio: c.config.control.retentionAlarmRatio,
        stopRatio: c.config.control.retentionStopRatio,
      });
    } else if (health.committer?.retentionAlarm !== true && c.alarmed.delete(COMMITTER_ALARM)) {
      log.info('retention alarm cleared', { committer: true });
    }
    for (const t of health.tables) {
      if (t.retentionAlarm && !c.alarmed.has(t.table)) {
        c.alarmed.add(t.table);
        log.error('retention alarm: a table\'s oldest unapplied announcement is old for the control topic\'s retention; fix what keeps it from committing before the connector stops', {
          table: t.table,
          unappliedAgeMs: t.unappliedAgeMs,
          retentionMs: c.retentionMs,
          alarmRatio: c.config.control.retentionAlarmRatio,
          stopRatio: c.config.control.retentionStopRatio,
        });
      } else if (!t.retentionAlarm && c.alarmed.delete(t.table)) {
        log.info('retention alarm cleared', { table: t.table });
      }
    }
    if (health.failure === undefined || c.failure !== undefined) return;
    this.failConnector(c, health.failure, log);
  }

  /**
   * The committer as a whole when it does not get through (N4): its rounds failing here, or, where it runs
   * elsewhere (a cluster), its seat vacant. Every worker running tasks of the connector checks the seat
   * itself: the worker that should hold it may be the one that is gone or cut off, and each worker's tasks
   * acknowledge records on their own. The check runs in the background (one at a time); its answer counts
   * from the next health check. A check that cannot tell counts as vacant: the ratios leave days.
   */
  private committerAsAWhole(c: RunningConnector, log: Logger): CommitterHealthInput | undefined {
    if (c.seat !== undefined) {
      c.vacantSinceMs = undefined;
      const f = c.seat.loop.failing;
      return f === undefined ? undefined : { kind: 'failing', sinceMs: f.unappliedSinceMs, detail: f.error };
    }
    const holder = this.d.committerHolder;
    if (holder === undefined || c.tasks.length === 0 || c.stopping) return undefined;
    c.seatProbe ??= holder(c.config.name).then(
      (h) => {
        if (h !== null) c.vacantSinceMs = undefined;
        else if (c.vacantSinceMs === undefined) {
          c.vacantSinceMs = this.now();
          c.vacantDetail = 'no worker holds its lease';
          log.warn('no worker holds the connector\'s committer seat; this worker\'s tasks fail if it stays vacant for long', { retentionMs: c.retentionMs, stopRatio: c.config.control.retentionStopRatio });
        }
      },
      (e: unknown) => {
        c.vacantSinceMs ??= this.now();
        c.vacantDetail = `the lease cannot be read: ${errorMessage(e)}`;
      },
    ).finally(() => (c.seatProbe = undefined));
    return c.vacantSinceMs === undefined ? undefined : { kind: 'vacant', sinceMs: c.vacantSinceMs, detail: c.vacantDetail ?? 'vacant' };
  }

  /**
   * A cluster's connector failed on the worker that runs its committer (its status says FAILED): this
   * worker's tasks of it fail too, so that nothing more is acknowledged to Kafka here either.
   */
  connectorFailedElsewhere(name: string, message: string): void {
    const c = this.connectors.get(name);
    if (c === undefined || c.failure !== undefined || c.seat !== undefined) return;
    this.failConnector(c, { table: '', message }, this.d.log.child({ connector: name }));
  }

  /** The connector runs again where its committer runs (restarted there): this worker's tasks may restart again. */
  connectorRecoveredElsewhere(name: string): void {
    const c = this.connectors.get(name);
    if (c !== undefined && c.seat === undefined) c.failure = undefined;
  }

  private failConnector(c: RunningConnector, failure: { readonly table: string; readonly message: string }, log: Logger): void {
    c.failure = failure;
    log.error('connector failed: its tasks are stopped so that nothing more is acknowledged to Kafka', { table: failure.table, reason: failure.message });
    for (const t of c.tasks) {
      if (t.restartTimer !== undefined) {
        // Its last incarnation ended already: the restart it waited for will not come.
        clearTimeout(t.restartTimer);
        t.restartTimer = undefined;
        t.failed = { connector: c.config.name, task: t.taskId, cause: failure.message };
        continue;
      }
      t.handle.fail(failure.message).catch((e: unknown) => log.warn('could not fail task', { task: t.taskId, error: errorMessage(e) }));
    }
    this.checkAllFailed();
  }

  committer(name: string): ConnectorCommitter | undefined {
    return this.connectors.get(name)?.seat?.committer;
  }

  /**
   * Stops every task (their last cycles are announced), runs a last committer round, releases clients.
   * The tasks get `task.shutdown.graceful.timeout.ms` in all; one still running then is killed.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    // A connector already being stopped on its own (DELETE, PUT /stop just before) finishes that stop:
    // closing it twice would close its clients under its last committer round.
    await Promise.allSettled(this.connectorStops.values());
    await this.stopSlots([...this.connectors.values()].flatMap((c) => c.tasks));
    for (const c of this.connectors.values()) await this.closeConnector(c);
    this.connectors.clear();
  }

  /**
   * Stops one connector (PUT /stop, a new config, DELETE): its tasks as on a worker stop, a last committer
   * round, its clients closed; the worker and its other connectors run on. `restarting`: it is started
   * again at once (a new config), so its tasks are not gone for the all-failed check (--exit-on-failure
   * must not end the worker in between because another connector's tasks all failed).
   */
  stopConnector(name: string, options: { readonly restarting?: boolean } = {}): Promise<void> {
    const running = this.connectorStops.get(name);
    if (running !== undefined) return running;
    const c = this.connectors.get(name);
    if (c === undefined || this.stopping) return Promise.resolve();
    c.stopping = true;
    const stop = (async () => {
      try {
        await this.stopSlots(c.tasks);
        await this.closeConnector(c);
      } finally {
        this.connectors.delete(name);
        this.connectorStops.delete(name);
      }
      this.d.log.info('connector stopped', { connector: name });
      if (options.restarting !== true) this.checkAllFailed();
    })();
    this.connectorStops.set(name, stop);
    return stop;
  }

  private async closeConnector(c: RunningConnector): Promise<void> {
    clearInterval(c.healthTimer);
    c.wantsCommitter = false;
    await this.closeSeat(c);
  }

  /** Stops tasks within `task.shutdown.graceful.timeout.ms` in all; one still running then is killed. */
  private async stopSlots(slots: readonly TaskSlot[]): Promise<void> {
    for (const t of slots) clearTimeout(t.restartTimer);
    await Promise.all(slots.filter((t) => !t.ended).map((t) => t.handle.stop().catch(() => undefined))); // a FAILED task has ended already
    const limitMs = this.d.taskShutdownTimeoutMs ?? DEFAULT_TASK_SHUTDOWN_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), limitMs)));
    const ended = await Promise.race([Promise.allSettled(slots.map((t) => t.handle.done)).then(() => 'ended' as const), late]);
    clearTimeout(timer);
    if (ended === 'late') {
      for (const t of slots.filter((x) => !x.ended)) {
        this.d.log.warn('task did not stop within task.shutdown.graceful.timeout.ms; killing it (its open cycle is read again by the next incarnation)', { task: t.taskId, timeoutMs: limitMs, killable: t.handle.kill !== undefined });
        t.handle.kill?.();
      }
      // A killed task process ends at once; a task in this process cannot be killed and is left behind.
      await Promise.allSettled(slots.filter((x) => x.handle.kill !== undefined).map((x) => x.handle.done));
    }
  }
}
