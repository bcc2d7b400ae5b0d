/**
 * The standalone worker (Kafka's `connect-standalone` shape): runs each configured connector's tasks
 * and, in the same process, its committer. Tasks run as child processes (N tasks use N cores) or in
 * this process — `app.ts` decides how a task is started; the protocol between them is the same one
 * distributed mode uses: tasks announce on the control topic, the committer reads it.
 *
 * The committer's rounds are scheduled by its CommitterLoop (src/coordinate/). Stopping: the tasks stop
 * first (each commits its last cycle when it leaves the group), then one last committer round.
 */
import { errorMessage } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ConnectorCommitter } from '../coordinate/committer.ts';
import { CommitterLoop } from '../coordinate/committer-loop.ts';

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

interface RunningConnector {
  readonly config: ConnectorConfig;
  readonly tasks: TaskHandle[];
  readonly committer: ConnectorCommitter;
  readonly closeCommitter: () => Promise<void>;
  readonly loop: CommitterLoop;
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
    const loop = new CommitterLoop(committer, { intervalMs: connector.control.commitIntervalMs, log });
    const running: RunningConnector = { config: connector, tasks: [], committer, closeCommitter: close, loop };
    this.connectors.set(connector.name, running);
    for (let t = 0; t < connector.tasksMax; t++) {
      const handle = this.d.startTask(connector, t, () => loop.wake());
      handle.done.catch((e: unknown) => log.error('task failed; the worker keeps running (restart it to retry)', { task: handle.taskId, error: errorMessage(e) }));
      running.tasks.push(handle);
    }
    log.info('connector started', { tasks: connector.tasksMax, config: connector.redacted() });
  }

  status(): { name: string; tasks: { id: number; state: string; trace?: string }[]; tables: ReturnType<ConnectorCommitter['tableStatus']>; control: ReturnType<ConnectorCommitter['controlStatus']> }[] {
    return [...this.connectors.values()].map((c) => ({
      name: c.config.name,
      tasks: c.tasks.map((t) => ({ id: t.taskId, ...t.state() })),
      tables: c.committer.tableStatus(),
      control: c.committer.controlStatus(),
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
      await c.loop.stop();
      await c.closeCommitter();
    }
    this.connectors.clear();
  }
}
