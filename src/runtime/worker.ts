/**
 * The standalone worker (Kafka's `connect-standalone` shape): runs each configured connector's tasks
 * and, in the same process, its committer. Tasks run as child processes (N tasks use N cores) or in
 * this process — `app.ts` decides how a task is started; the protocol between them is the same one
 * distributed mode uses: tasks announce on the control topic, the committer reads it.
 *
 * The committer runs a round every commit interval, and soon after any task of the connector announced
 * (so freshness is one task cycle plus one catalog commit, not two intervals). Stopping: the tasks stop
 * first (each commits its last cycle when it leaves the group), then one last committer round.
 */
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ConnectorCommitter } from '../coordinate/committer.ts';

/** A running task, however it runs. */
export interface TaskHandle {
  readonly taskId: number;
  /** Settles when the task ended (rejects when it failed). */
  readonly done: Promise<void>;
  /** Asks the task to finish its cycle and leave the group. */
  stop(): Promise<void>;
  state(): { readonly state: string; readonly trace?: string };
}

export interface WorkerDeps {
  readonly log: Logger;
  /** Creates the control topic if needed (partitions, replication, retention from the connector). */
  prepareConnector(connector: ConnectorConfig): Promise<void>;
  startTask(connector: ConnectorConfig, taskId: number, onAnnounced: () => void): TaskHandle;
  createCommitter(connector: ConnectorConfig): Promise<{ readonly committer: ConnectorCommitter; close(): Promise<void> }>;
}

/** Delay between an announcement and the committer round it triggers (more tasks' cycles land in one). */
const WAKE_DELAY_MS = 250;
const RETRY_DELAY_MS = 2_000;

interface RunningConnector {
  readonly config: ConnectorConfig;
  readonly tasks: TaskHandle[];
  readonly committer: ConnectorCommitter;
  readonly closeCommitter: () => Promise<void>;
  wake: () => void;
  loop: Promise<void>;
  stopping: boolean;
}

export class StandaloneWorker {
  private readonly d: WorkerDeps;
  private readonly connectors = new Map<string, RunningConnector>();

  constructor(deps: WorkerDeps) {
    this.d = deps;
  }

  async start(connector: ConnectorConfig): Promise<void> {
    const log = this.d.log.child({ connector: connector.name });
    await this.d.prepareConnector(connector);
    const { committer, close } = await this.d.createCommitter(connector);
    const running: RunningConnector = {
      config: connector,
      tasks: [],
      committer,
      closeCommitter: close,
      wake: () => undefined,
      loop: Promise.resolve(),
      stopping: false,
    };
    this.connectors.set(connector.name, running);
    running.loop = this.committerLoop(running, log);
    for (let t = 0; t < connector.tasksMax; t++) {
      const handle = this.d.startTask(connector, t, () => running.wake());
      handle.done.catch((e: unknown) => log.error('task failed; the worker keeps running (restart it to retry)', { task: handle.taskId, error: e instanceof Error ? e.message : String(e) }));
      running.tasks.push(handle);
    }
    log.info('connector started', { tasks: connector.tasksMax, config: connector.redacted() });
  }

  status(): { name: string; tasks: { id: number; state: string; trace?: string }[]; tables: ReturnType<ConnectorCommitter['tableStatus']> }[] {
    return [...this.connectors.values()].map((c) => ({
      name: c.config.name,
      tasks: c.tasks.map((t) => ({ id: t.taskId, ...t.state() })),
      tables: c.committer.tableStatus(),
    }));
  }

  committer(name: string): ConnectorCommitter | undefined {
    return this.connectors.get(name)?.committer;
  }

  /** Stops every task (their last cycles are announced), runs a last committer round, releases clients. */
  async stop(): Promise<void> {
    for (const c of this.connectors.values()) {
      await Promise.all(c.tasks.map((t) => t.stop().catch(() => undefined)));
      await Promise.allSettled(c.tasks.map((t) => t.done));
      c.stopping = true;
      c.wake();
      await c.loop;
      try {
        await c.committer.round();
      } catch (e) {
        this.d.log.warn('last committer round failed; the next start applies the announcements', { connector: c.config.name, error: e instanceof Error ? e.message : String(e) });
      }
      await c.closeCommitter();
    }
    this.connectors.clear();
  }

  private async committerLoop(c: RunningConnector, log: Logger): Promise<void> {
    const interval = c.config.control.commitIntervalMs;
    // An announcement during a round may have landed after the round read the control topic: the next
    // round then follows it as soon as a wake outside a round would, not a whole interval later.
    let wokenDuringRound = false;
    while (!c.stopping) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wokenDuringRound ? WAKE_DELAY_MS : interval);
        wokenDuringRound = false;
        c.wake = () => {
          clearTimeout(timer);
          setTimeout(resolve, c.stopping ? 0 : WAKE_DELAY_MS);
        };
      });
      c.wake = () => {
        wokenDuringRound = true;
      };
      if (c.stopping) break;
      try {
        await c.committer.round();
      } catch (e) {
        log.warn('committer round failed; retrying', { error: e instanceof Error ? e.message : String(e) });
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
      }
    }
  }
}
