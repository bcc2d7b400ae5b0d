/**
 * The standalone worker (Kafka's `connect-standalone` shape): runs each configured connector's tasks
 * and, in the same process, its committer. Tasks run as child processes (N tasks use N cores) or in
 * this process — `app.ts` decides how a task is started; the protocol between them is the same one
 * distributed mode uses: tasks announce on the control topic, the committer reads it.
 *
 * The committer's rounds are scheduled by its CommitterLoop (src/coordinate/). Stopping: the tasks stop
 * first (each commits its last cycle when it leaves the group), then one last committer round.
 *
 * Health (coordinate/connector-health.ts, docs/sink.md "A table stops"): after every committer round the
 * worker checks the tables' statuses against the control topic's retention. A stopped table, or one whose
 * oldest unapplied announcement nears the retention, fails every task of the connector (each abandons its
 * open cycle, so nothing more is acknowledged to Kafka); the committer keeps running for the other tables.
 * The connector stays FAILED until the worker is restarted.
 */
import { errorMessage } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ConnectorCommitter } from '../coordinate/committer.ts';
import { CommitterLoop } from '../coordinate/committer-loop.ts';
import { connectorHealth } from '../coordinate/connector-health.ts';
import type { HealthVerdict, TableHealth } from '../coordinate/connector-health.ts';

/** A running task, however it runs. */
export interface TaskHandle {
  readonly taskId: number;
  /** Settles when the task ended (rejects when it failed). */
  readonly done: Promise<void>;
  /** Asks the task to finish its cycle and leave the group. */
  stop(): Promise<void>;
  /** Fails the task: it abandons its open cycle (nothing more is committed) and reports FAILED with `message`. */
  fail(message: string): Promise<void>;
  state(): { readonly state: string; readonly trace?: string };
}

export interface WorkerDeps {
  readonly log: Logger;
  /**
   * Creates the control topic if needed (partitions, replication, retention from the connector) and
   * checks its configuration; resolves with its retention.ms (null: unlimited).
   */
  prepareConnector(connector: ConnectorConfig): Promise<{ readonly retentionMs: number | null }>;
  startTask(connector: ConnectorConfig, taskId: number, onAnnounced: () => void): TaskHandle;
  createCommitter(connector: ConnectorConfig): Promise<{ readonly committer: ConnectorCommitter; close(): Promise<void> }>;
}

const HEALTH_CHECK_MS = 5_000;

interface RunningConnector {
  readonly config: ConnectorConfig;
  readonly tasks: TaskHandle[];
  readonly committer: ConnectorCommitter;
  readonly closeCommitter: () => Promise<void>;
  readonly loop: CommitterLoop;
  readonly retentionMs: number | null;
  health: HealthVerdict;
  /** Set once a table failed the connector (until the worker restarts). */
  failure: { readonly table: string; readonly message: string } | undefined;
  readonly alarmed: Set<string>;
  /** Checks the ages between rounds too: one round can take long (a commit retried for minutes). */
  readonly healthTimer: NodeJS.Timeout;
}

export interface ConnectorStatus {
  readonly name: string;
  readonly state: 'RUNNING' | 'FAILED';
  readonly trace?: string;
  readonly tasks: { id: number; state: string; trace?: string }[];
  readonly tables: (ReturnType<ConnectorCommitter['tableStatus']>[number] & Partial<Pick<TableHealth, 'unappliedAgeMs' | 'retentionAlarm'>>)[];
  /** The committer's view of the control topic (records read, ignored, parked tables). */
  readonly control: ReturnType<ConnectorCommitter['controlStatus']>;
}

export class StandaloneWorker {
  private readonly d: WorkerDeps;
  private readonly connectors = new Map<string, RunningConnector>();

  private readonly now: () => number;

  constructor(deps: WorkerDeps & { readonly nowMs?: () => number }) {
    this.d = deps;
    this.now = deps.nowMs ?? Date.now;
  }

  async start(connector: ConnectorConfig): Promise<void> {
    const log = this.d.log.child({ connector: connector.name });
    const { retentionMs } = await this.d.prepareConnector(connector);
    const { committer, close } = await this.d.createCommitter(connector);
    // The loop's first round comes an interval or a wake later, after `running` below is set.
    const self: { running?: RunningConnector } = {};
    const loop = new CommitterLoop(committer, {
      intervalMs: connector.control.commitIntervalMs,
      log,
      afterRound: () => {
        if (self.running !== undefined) this.checkHealth(self.running, log);
      },
    });
    const running: RunningConnector = (self.running = { config: connector, tasks: [], committer, closeCommitter: close, loop, retentionMs, health: { tables: [] }, failure: undefined, alarmed: new Set(),
      healthTimer: setInterval(() => this.checkHealth(running, log), HEALTH_CHECK_MS).unref() });
    this.connectors.set(connector.name, running);
    for (let t = 0; t < connector.tasksMax; t++) {
      const handle = this.d.startTask(connector, t, () => loop.wake());
      handle.done.catch((e: unknown) => log.error('task failed; the worker keeps running (restart it to retry)', { task: handle.taskId, error: errorMessage(e) }));
      running.tasks.push(handle);
    }
    log.info('connector started', { tasks: connector.tasksMax, config: connector.redacted() });
  }

  status(): ConnectorStatus[] {
    return [...this.connectors.values()].map((c) => ({
      name: c.config.name,
      state: c.failure === undefined ? 'RUNNING' : 'FAILED',
      ...(c.failure === undefined ? {} : { trace: c.failure.message }),
      tasks: c.tasks.map((t) => ({ id: t.taskId, ...t.state() })),
      tables: c.committer.tableStatus().map((t) => {
        const h = c.health.tables.find((x) => x.table === t.table);
        return { ...t, ...(h === undefined ? {} : { retentionAlarm: h.retentionAlarm, ...(h.unappliedAgeMs === undefined ? {} : { unappliedAgeMs: h.unappliedAgeMs }) }) };
      }),
      control: c.committer.controlStatus(),
    }));
  }

  /**
   * After a committer round: raise or clear retention alarms, and fail the connector's tasks when a
   * table stopped or its oldest unapplied announcement nears the control topic's retention.
   */
  private checkHealth(c: RunningConnector, log: Logger): void {
    const health = connectorHealth(c.config.name, c.config.control, c.retentionMs, c.committer.tableStatus(), this.now());
    c.health = health;
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
    c.failure = health.failure;
    log.error('connector failed: its tasks are stopped so that nothing more is acknowledged to Kafka', { table: health.failure.table, reason: health.failure.message });
    for (const t of c.tasks) t.fail(health.failure.message).catch((e: unknown) => log.warn('could not fail task', { task: t.taskId, error: errorMessage(e) }));
  }

  committer(name: string): ConnectorCommitter | undefined {
    return this.connectors.get(name)?.committer;
  }

  /** Stops every task (their last cycles are announced), runs a last committer round, releases clients. */
  async stop(): Promise<void> {
    for (const c of this.connectors.values()) {
      await Promise.all(c.tasks.map((t) => t.stop().catch(() => undefined)));
      await Promise.allSettled(c.tasks.map((t) => t.done));
      clearInterval(c.healthTimer);
      await c.loop.stop();
      await c.closeCommitter();
    }
    this.connectors.clear();
  }
}
