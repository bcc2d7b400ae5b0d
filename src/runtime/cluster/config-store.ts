/**
 * The herder's connector store in a cluster: the config topic (docs/design/cluster.md, "Writes"). Every
 * worker folds the topic into the same snapshot (state-records.ts); a save appends what changed, in
 * Connect's order and format, and resolves once this worker read it back, so the next request to it sees
 * the change. Changes any worker stored reach the herder through `watch`, coalesced per read (a create's
 * target state, config, task configs and commit arrive as one change, not four).
 *
 * Restart requests and cluster-scoped logger levels are records too; only those appended after this
 * worker's initial read are acted on (an old request is not replayed by a worker that starts later).
 *
 * Owns: the mapping between stored connectors and config records. Must not: decide what runs (the herder
 * and placement do).
 */
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import type { ConnectorStore, StoredConnector } from '../herder.ts';
import type { RestartRequest } from './cluster-api.ts';
import { tasksMaxOf } from '../connector-status.ts';
import type { KafkaStateLog, StateLogRecord } from './state-log.ts';
import {
  ConfigSnapshot,
  encodeConnectorConfig,
  encodeConnectorRemoval,
  encodeConnectorRestart,
  encodeLoggerLevel,
  encodeTargetState,
  encodeTaskCommit,
  encodeTaskConfig,
  encodeTaskRestart,
} from './state-records.ts';
import type { ConnectorEntry, StateEntry } from './state-records.ts';

type Listener = (name: string, stored: StoredConnector | undefined) => void;

/** What the store needs of its log (KafkaStateLog; unit tests give a fake). */
export type ConfigLog = Pick<KafkaStateLog, 'topic' | 'start' | 'appendAll'>;

const key = (config: Readonly<Record<string, string>>): string => JSON.stringify(Object.entries(config).sort(([a], [b]) => (a < b ? -1 : 1)));

export class ConfigTopicStore implements ConnectorStore {
  readonly #log: ConfigLog;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #snapshot = new ConfigSnapshot();
  readonly #listeners: Listener[] = [];
  readonly #restartListeners: ((name: string, request: RestartRequest) => void)[] = [];
  readonly #levelListeners: ((namespace: string, level: string) => void)[] = [];
  /** Connectors changed by the records of the current read, notified once it is folded in. */
  readonly #changed = new Set<string>();
  #flushing = false;
  #loaded = false;

  constructor(log: ConfigLog, logger: Logger, now: () => number = Date.now) {
    this.#log = log;
    this.#logger = logger;
    this.#now = now;
  }

  /** Reads the topic to its end (creating it if needed); then keeps following it. */
  async start(): Promise<void> {
    const loaded = await this.#log.start((r) => this.#fold(r));
    this.#loaded = true;
    this.#logger.info('config topic read', { topic: this.#log.topic, records: loaded.records, connectors: this.#snapshot.connectorNames().length, ms: Math.round(loaded.elapsedMs) });
  }

  /** Whether the initial read is done (before it, the worker answers 409 to requests that need it). */
  get loaded(): boolean {
    return this.#loaded;
  }

  load(): readonly StoredConnector[] {
    return this.#snapshot.connectors().map(stored);
  }

  async save(connectors: readonly StoredConnector[]): Promise<void> {
    const entries: StateEntry[] = [];
    const wanted = new Set(connectors.map((c) => c.name));
    for (const c of connectors) entries.push(...this.#diff(c, this.#snapshot.connector(c.name)));
    for (const name of this.#snapshot.connectorNames()) if (!wanted.has(name)) entries.push(...encodeConnectorRemoval(name));
    if (entries.length > 0) await this.#log.appendAll(entries);
  }

  watch(listener: Listener): void {
    this.#listeners.push(listener);
  }

  /** Appends a restart request; every worker (this one too) gets it through `onRestart`. */
  async requestRestart(name: string, request: RestartRequest): Promise<void> {
    const entry = request.kind === 'task' ? encodeTaskRestart(name, request.task, this.#now()) : encodeConnectorRestart(name, request.options);
    await this.#log.appendAll([entry]);
  }

  onRestart(listener: (name: string, request: RestartRequest) => void): void {
    this.#restartListeners.push(listener);
  }

  /** PUT /admin/loggers/{l}?scope=cluster: every worker sets the level (`onLoggerLevel`). */
  async setClusterLevel(namespace: string, level: string): Promise<void> {
    await this.#log.appendAll([encodeLoggerLevel(namespace, level)]);
  }

  onLoggerLevel(listener: (namespace: string, level: string) => void): void {
    this.#levelListeners.push(listener);
  }

  /**
   * The records that make the topic say `c`: the target state before the config (a connector created
   * PAUSED or STOPPED must never be seen STARTED), then its task configs and their commit (Connect's way of
   * making a task count visible at once; a count of 0 while STOPPED or not yet started).
   */
  #diff(c: StoredConnector, cur: ConnectorEntry | undefined): StateEntry[] {
    const out: StateEntry[] = [];
    const configChanged = cur === undefined || key(cur.config) !== key(c.config);
    if (cur === undefined || cur.target !== c.target) out.push(encodeTargetState(c.name, c.target));
    if (configChanged) out.push(encodeConnectorConfig(c.name, c.config));
    const tasks = c.tasks === false ? 0 : tasksMaxOf(c.config);
    if (configChanged || cur.taskCount !== tasks || cur.inconsistent) {
      for (let n = 0; n < tasks; n++) out.push(encodeTaskConfig(c.name, n, { ...c.config, 'task.id': String(n) }));
      out.push(encodeTaskCommit(c.name, tasks));
    }
    return out;
  }

  #fold(r: StateLogRecord): void {
    const { change, warning } = this.#snapshot.apply(r.key, r.value, r.offset);
    if (warning !== undefined) this.#logger.warn(`config topic: ${warning}`, { topic: this.#log.topic, offset: r.offset.toString() });
    if (change === null) return;
    switch (change.kind) {
      case 'connector-config':
      case 'target-state':
      case 'tasks-committed':
        this.#changed.add(change.connector);
        if (!this.#flushing) {
          this.#flushing = true;
          setImmediate(() => this.#notify());
        }
        return;
      case 'restart': {
        if (r.initial) return;
        const q = change.request;
        const request: RestartRequest = q.kind === 'task' ? { kind: 'task', task: q.task } : { kind: 'connector', options: { includeTasks: q.includeTasks, onlyFailed: q.onlyFailed } };
        for (const l of this.#restartListeners) l(q.connector, request);
        return;
      }
      case 'logger-level':
        if (!r.initial) for (const l of this.#levelListeners) l(change.entry.namespace, change.entry.level);
        return;
      default:
        return;
    }
  }

  #notify(): void {
    this.#flushing = false;
    const names = [...this.#changed];
    this.#changed.clear();
    for (const name of names) {
      const entry = this.#snapshot.connector(name);
      for (const l of this.#listeners) {
        try {
          l(name, entry === undefined ? undefined : stored(entry));
        } catch (e) {
          this.#logger.error('a config change could not be applied', { connector: name, error: errorMessage(e) });
        }
      }
    }
  }
}

/** A connector of the config topic as the herder stores it: no task count means no tasks (STOPPED, not started). */
function stored(e: ConnectorEntry): StoredConnector {
  return { name: e.name, config: e.config, target: e.target, ...(e.taskCount > 0 ? {} : { tasks: false }) };
}
