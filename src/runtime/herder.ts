/**
 * The herder: the control layer between the REST API and the worker (herder-api.ts). It owns the
 * connectors' stored configs and target states (persisted through a ConnectorStore — a file in standalone
 * mode, the config topic in a cluster — so connectors created through the API survive a worker restart)
 * and makes the worker match them. In a cluster (`ClusterPort`) the worker runs only its share, restarts
 * are requests every worker applies, and status is read from each unit's owner.
 *
 * The rules (Connect's, ../shared/docs/reference/connect-rest.md §1.5):
 * - A write answers once the config or target state is stored; the worker catches up in the background
 *   (status may say UNASSIGNED, or 404 for a new connector, for a moment — as in Connect).
 * - Operations on one connector name run one after another (a chain per name), so a stop, a new config
 *   and a resume requested in a burst are applied in order, and a delete followed by a create of the same
 *   name stops the old connector before the new one starts.
 * - An identical config (PUT with what is stored) restarts nothing.
 * - A connector that cannot start is FAILED with the reason as its trace until it is restarted,
 *   reconfigured or deleted; its config stays stored.
 * - Offsets change only while STOPPED (the chain is waited for: a stop requested just before has finished).
 * - Configs are stored and echoed exactly as submitted (`${env:...}` placeholders too); `parse` resolves
 *   config providers inside the worker only.
 *
 * Owns: stored configs, target states, the reconcile loop, the status a user reads. Must not: speak HTTP
 * (src/rest/) or build adapters (app.ts).
 */
import { ConfigError, errorMessage, RequestRefused } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type {
  ConfigInfos,
  ConfigKeyInfo,
  ConnectorInfo,
  ConnectorOffsets,
  ConnectorStateInfo,
  HerderApi,
  IcebergAdoptReport,
  IcebergReplayReport,
  IcebergTableStatus,
  LoggerLevel,
  PluginInfo,
  RestartOptions,
  ServerInfo,
  TargetState,
  TaskInfo,
  TaskStateInfo,
  WorkerHealth,
} from './herder-api.ts';
import type { ConnectorShare, StandaloneWorker } from './worker.ts';
import type { ClusterPort, RestartRequest } from './cluster/cluster-api.ts';
import { clusterConnectorStatus, localConnectorState, taskClass, taskState, tasksMaxOf } from './connector-status.ts';

export type { ClusterPort, ReportedStatus, RestartRequest } from './cluster/cluster-api.ts';

/** One connector as stored: the config exactly as submitted (with `name`) and the user's target state. */
export interface StoredConnector {
  readonly name: string;
  readonly config: Readonly<Record<string, string>>;
  readonly target: TargetState;
  /**
   * Whether the connector has tasks (Connect's task configs): not until it first runs with target
   * STARTED, and none again after a stop. A connector created PAUSED shows no tasks until resumed, as in
   * Connect. Absent: true.
   */
  readonly tasks?: boolean;
}

/**
 * Where the herder keeps its connectors (standalone: a file in the worker's data directory; distributed:
 * the config topic, runtime/cluster/). `save` resolves once stored (a shared store: once read back, so the
 * next request sees it).
 */
export interface ConnectorStore {
  load(): readonly StoredConnector[];
  save(connectors: readonly StoredConnector[]): void | Promise<void>;
  /** A shared store: changes other workers stored (and echoes of ours, which change nothing). */
  watch?(listener: (name: string, stored: StoredConnector | undefined) => void): void;
}

/** Sink offsets of the connector's consumer group (runtime/connector-offsets.ts behind it). */
export interface OffsetsPort {
  read(connector: ConnectorConfig): Promise<ConnectorOffsets>;
  alter(connector: ConnectorConfig, offsets: ConnectorOffsets): Promise<string>;
  reset(connector: ConnectorConfig): Promise<string>;
}

/**
 * The Iceberg operations on one table of a stopped connector (coordinate/replay.ts, coordinate/positions-tool.ts
 * behind it): what `icefloe replay` and `icefloe positions --adopt` do, for a connector that has no file.
 */
export interface TablesPort {
  replay(connector: ConnectorConfig, table: string, snapshotId: bigint): Promise<IcebergReplayReport>;
  adopt(connector: ConnectorConfig, table: string, options: { readonly holdsGroupOffsets: boolean }): Promise<IcebergAdoptReport>;
}

export interface PluginsPort {
  plugins(connectorsOnly: boolean): readonly PluginInfo[];
  pluginConfig(plugin: string): readonly ConfigKeyInfo[];
  validate(plugin: string, config: Readonly<Record<string, string>>): Promise<ConfigInfos>;
}

export interface LoggersPort {
  loggers(): Readonly<Record<string, LoggerLevel>>;
  logger(name: string): LoggerLevel;
  setLevel(name: string, level: string, scope: 'worker' | 'cluster'): readonly string[];
}

export interface HerderDeps {
  readonly worker: StandaloneWorker;
  readonly store: ConnectorStore;
  readonly log: Logger;
  /**
   * Before a config is stored (create, PUT, PATCH): refuses one that cannot run with RequestRefused
   * ('bad-request', Connect's "Connector configuration is invalid ..." message).
   */
  checkConfig(config: Readonly<Record<string, string>>): Promise<void>;
  /** Resolves config providers and parses a stored config for running (throws ConfigError). */
  parse(config: Readonly<Record<string, string>>): ConnectorConfig;
  /**
   * A config from the command line (the standalone worker's connector files), before it is stored:
   * throws a ConfigError naming every key at fault, with the same checks and messages as a create
   * (default: `parse`).
   */
  checkStart?(config: Readonly<Record<string, string>>): Promise<void>;
  readonly offsets: OffsetsPort;
  readonly tables: TablesPort;
  readonly plugins: PluginsPort;
  readonly loggers: LoggersPort;
  serverInfo(): Promise<ServerInfo>;
  /** `<advertised host>:<advertised port>` of this worker's REST listener. */
  workerId(): string;
  /** The version of the connector plugin `connectorClass` names (KIP-891: status entries carry it). */
  pluginVersion(connectorClass: string): string | undefined;
  readonly topicTracking: { readonly enabled: boolean; readonly allowReset: boolean };
  /** Distributed mode: the cluster (absent: standalone, every unit runs here). */
  readonly cluster?: ClusterPort;
}

interface Entry {
  config: Readonly<Record<string, string>>;
  target: TargetState;
  /** Why the connector could not start (its status is FAILED with this trace until it starts). */
  startFailure: string | undefined;
  startError?: unknown;
  /** The config the running connector was started with (a different stored one restarts it). */
  runningConfig: string | undefined;
  /** Instances a restart request marked RESTARTING (`connector`, task ids) until done. */
  readonly restarting: Set<'connector' | number>;
  /** Active topics remembered across task incarnations (Connect keeps them until reset). */
  readonly topics: Set<string>;
  /** StoredConnector.tasks. */
  hasTasks: boolean;
}

export const NOT_STOPPED_FOR_OFFSETS = (name: string): string =>
  `Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/${name}/stop' endpoint`;

const key = (config: Readonly<Record<string, string>>): string => JSON.stringify(Object.entries(config).sort(([a], [b]) => (a < b ? -1 : 1)));

export class StandaloneHerder implements HerderApi {
  private readonly d: HerderDeps;
  private readonly entries = new Map<string, Entry>();
  /** The per-name chains of operations (kept across delete: a re-create waits for the old stop). */
  private readonly chains = new Map<string, Promise<void>>();
  private started = false;
  /** Resolved when start() has loaded the stored connectors (`ready()`). */
  private readonly loaded = Promise.withResolvers<void>();
  /** Set by stop(): operations queued after it do not start connectors again. */
  private stopped = false;

  constructor(deps: HerderDeps) {
    this.d = deps;
  }

  /**
   * Loads the stored connectors, applies the command line's (created, or updated when stored: their
   * target state kept), and starts every connector whose target is not STOPPED. Resolves once each has
   * started or failed to.
   */
  async start(commandLine: readonly Readonly<Record<string, string>>[]): Promise<void> {
    for (const s of this.d.store.load()) this.entries.set(s.name, { ...this.newEntry(s.config, s.target), hasTasks: s.tasks !== false });
    this.d.store.watch?.((name, stored) => this.external(name, stored));
    this.loaded.resolve();
    const cluster = this.d.cluster;
    if (cluster !== undefined) {
      cluster.onPlacement(() => {
        for (const name of this.entries.keys()) void this.reconcile(name);
      });
      cluster.onRestart((name, request) => void this.restartHere(name, request));
      // A connector failed where its committer runs (a stopped table, retention near its end): this worker's
      // tasks of it fail too, so that nothing more is acknowledged to Kafka anywhere (docs/sink.md).
      cluster.onConnectorState((name, state, trace) => {
        if (state === 'FAILED') this.d.worker.connectorFailedElsewhere(name, trace ?? 'the connector failed on the worker that runs its committer');
        else this.d.worker.connectorRecoveredElsewhere(name);
      });
      this.placeConnectors();
    }
    for (const config of commandLine) {
      const name = config['name'] ?? '';
      // A bad file fails the worker's start (a ConfigError), as connect-standalone does.
      if (this.d.checkStart === undefined) this.d.parse(config);
      else await this.d.checkStart(config);
      const e = this.entries.get(name);
      if (e === undefined) this.entries.set(name, this.newEntry(config, 'STARTED'));
      else e.config = config;
    }
    if (commandLine.length > 0) await this.save();
    await Promise.all([...this.entries.keys()].map((n) => this.reconcile(n)));
    this.started = true;
  }

  /** The connectors that could not start, with the error (the standalone command's --exit-on-failure). */
  startFailures(): readonly { readonly name: string; readonly error: unknown }[] {
    return [...this.entries].filter(([, e]) => e.startFailure !== undefined).map(([name, e]) => ({ name, error: e.startError }));
  }

  /**
   * Stops every connector (their last cycles commit); the stored state stays as it is. Operations under
   * way (a DELETE's stop, a restart) finish first, so no connector is closed twice at once.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled(this.chains.values());
    await this.d.worker.stop();
  }

  // ---- reads ---------------------------------------------------------------------------------------

  serverInfo(): Promise<ServerInfo> {
    return this.d.serverInfo();
  }

  ready(): Promise<void> {
    return this.loaded.promise;
  }

  health(): Promise<WorkerHealth> {
    return Promise.resolve(this.started ? { status: 'healthy', message: 'Worker has completed startup and is ready to handle requests.' } : { status: 'starting', message: 'Worker is still starting up.' });
  }

  connectorNames(): readonly string[] {
    return [...this.entries.keys()].sort();
  }

  connectorInfo(name: string): ConnectorInfo {
    const e = this.known(name, `Connector ${name} not found`);
    return { name, config: e.config, tasks: this.taskIds(name, e).map((task) => ({ connector: name, task })), type: 'sink' };
  }

  connectorConfig(name: string): Readonly<Record<string, string>> {
    return this.known(name, `Connector ${name} not found`).config;
  }

  connectorStatus(name: string): ConnectorStateInfo {
    const e = this.entries.get(name);
    if (e === undefined) throw new RequestRefused('not-found', `No status found for connector ${name}`);
    if (this.d.cluster !== undefined) return this.clusterStatus(name, e, this.d.cluster);
    const worker_id = this.d.workerId();
    const v = this.d.pluginVersion(e.config['connector.class'] ?? '');
    const version = v === undefined ? {} : { version: v };
    const status = this.d.worker.status().find((s) => s.name === name);
    return {
      name,
      connector: { ...localConnectorState(e, status), worker_id, ...version },
      tasks: (status?.tasks ?? []).map((t) => ({ ...taskState(t, worker_id, e.restarting.has(t.id)), ...version })).sort((a, b) => a.id - b.id),
      type: 'sink',
    };
  }

  taskStatus(name: string, task: number): TaskStateInfo {
    const found = this.entries.has(name) ? this.connectorStatus(name).tasks.find((t) => t.id === task) : undefined;
    if (found === undefined) throw new RequestRefused('not-found', `No status found for task ${name}-${task}`);
    return found;
  }

  taskConfigs(name: string): readonly TaskInfo[] {
    const e = this.known(name, `Connector ${name} not found`);
    const cls = taskClass(e.config['connector.class'] ?? '');
    return this.taskIds(name, e).map((task) => ({ id: { connector: name, task }, config: { ...e.config, 'task.class': cls, 'task.id': String(task) } }));
  }

  // ---- writes --------------------------------------------------------------------------------------

  async createConnector(name: string, config: Readonly<Record<string, string>>, initialState: TargetState): Promise<ConnectorInfo> {
    if (this.entries.has(name)) throw new RequestRefused('already-exists', `Connector ${name} already exists`);
    const stored = { ...config, name };
    await this.d.checkConfig(stored);
    if (this.entries.has(name)) throw new RequestRefused('already-exists', `Connector ${name} already exists`);
    this.entries.set(name, this.newEntry(stored, initialState));
    await this.save();
    void this.reconcile(name);
    return { name, config: stored, tasks: [], type: 'sink' };
  }

  async putConnectorConfig(name: string, config: Readonly<Record<string, string>>): Promise<{ readonly created: boolean; readonly info: ConnectorInfo }> {
    const e = this.entries.get(name);
    if (e === undefined) return { created: true, info: await this.createConnector(name, config, 'STARTED') };
    const stored = { ...config, name };
    if (key(stored) !== key(e.config)) {
      await this.d.checkConfig(stored);
      e.config = stored;
      e.startFailure = undefined; // a new config is tried afresh
      await this.save();
      void this.reconcile(name);
    }
    return { created: false, info: this.connectorInfo(name) };
  }

  async patchConnectorConfig(name: string, patch: Readonly<Record<string, string | null>>): Promise<ConnectorInfo> {
    const e = this.known(name, `Connector ${name} not found`);
    if (patch['name'] !== undefined && patch['name'] !== name) throw new RequestRefused('bad-request', `Connector name configuration (${String(patch['name'])}) doesn't match connector name in the URL (${name})`);
    const merged: Record<string, string> = { ...e.config };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete merged[k];
      else merged[k] = v;
    }
    merged['name'] = name;
    return (await this.putConnectorConfig(name, merged)).info;
  }

  async deleteConnector(name: string): Promise<void> {
    this.known(name, `Connector ${name} not found`);
    this.entries.delete(name);
    await this.save();
    void this.reconcile(name);
  }

  pauseConnector(name: string): Promise<void> {
    return this.setTarget(name, 'PAUSED');
  }

  resumeConnector(name: string): Promise<void> {
    return this.setTarget(name, 'STARTED');
  }

  stopConnector(name: string): Promise<void> {
    return this.setTarget(name, 'STOPPED');
  }

  async restartConnector(name: string, options: RestartOptions): Promise<ConnectorStateInfo | undefined> {
    const e = this.known(name, `Unknown connector: ${name}`);
    const worker = this.d.worker;
    const runs = worker.running().includes(name);
    const connectorToo = !options.onlyFailed || e.startFailure !== undefined || (runs && worker.connectorFailed(name));
    const tasks = runs && options.includeTasks ? this.taskIds(name, e).filter((t) => !options.onlyFailed || worker.taskFailed(name, t)) : [];
    if (connectorToo) e.restarting.add('connector');
    for (const t of tasks) e.restarting.add(t);
    const plan = options.includeTasks || options.onlyFailed ? this.connectorStatus(name) : undefined;
    if (this.d.cluster !== undefined) {
      // Every worker restarts what it runs of the connector (restartHere), this one included.
      e.restarting.clear();
      await this.d.cluster.requestRestart(name, { kind: 'connector', options });
      return plan;
    }
    void this.restartUnits(name, e, connectorToo, tasks);
    return plan;
  }

  async restartTask(name: string, task: number): Promise<void> {
    const e = this.known(name, `Unknown connector: ${name}`);
    if (!this.taskIds(name, e).includes(task)) throw new RequestRefused('not-found', `Unknown task: ${name}-${task}`);
    if (this.d.cluster !== undefined) {
      if (this.d.cluster.owner(name, task) === undefined) throw new RequestRefused('conflict', 'Cannot complete request because of a conflicting operation (e.g. worker rebalance)');
      await this.d.cluster.requestRestart(name, { kind: 'task', task });
      return;
    }
    e.restarting.add(task);
    void this.chain(name, async () => {
      try {
        await this.d.worker.restartTask(name, task);
      } finally {
        e.restarting.delete(task);
      }
    });
  }

  // ---- the cluster (distributed mode) ------------------------------------------------------------

  private clusterStatus(name: string, e: Entry, cluster: ClusterPort): ConnectorStateInfo {
    const v = this.d.pluginVersion(e.config['connector.class'] ?? '');
    const local = this.d.worker.status().find((s) => s.name === name);
    return clusterConnectorStatus({ name, entry: e, taskIds: this.taskIds(name, e), cluster, me: this.d.workerId(), local, ...(v === undefined ? {} : { version: v }) });
  }

  /**
   * What this worker reports to the cluster's status topic: the connector instance where it is the owner,
   * and the tasks it runs.
   */
  localReports(): { readonly name: string; readonly connector?: { readonly state: string; readonly trace?: string }; readonly tasks: readonly { readonly id: number; readonly state: string; readonly trace?: string }[] }[] {
    const cluster = this.d.cluster;
    const me = this.d.workerId();
    const statuses = this.d.worker.status();
    return [...this.entries].map(([name, e]) => {
      const local = statuses.find((s) => s.name === name);
      const ownsConnector = cluster === undefined || cluster.owner(name, 'connector') === me;
      const connector = ownsConnector && e.target !== 'STOPPED' ? localConnectorState(e, local) : undefined;
      const tasks = (local?.tasks ?? []).map((t) => {
        const s = taskState(t, me, e.restarting.has(t.id));
        return { id: s.id, state: s.state, ...(s.trace === undefined ? {} : { trace: s.trace }) };
      });
      return { name, ...(connector === undefined ? {} : { connector }), tasks };
    });
  }

  /** A restart request of the cluster: this worker restarts what it runs of the connector. */
  private restartHere(name: string, request: RestartRequest): Promise<void> {
    const e = this.entries.get(name);
    const worker = this.d.worker;
    if (e === undefined) return Promise.resolve();
    const share = worker.share(name);
    if (request.kind === 'task') {
      if (share?.taskIds.includes(request.task) !== true) return Promise.resolve();
      e.restarting.add(request.task);
      return this.chain(name, async () => {
        try {
          await worker.restartTask(name, request.task);
        } finally {
          e.restarting.delete(request.task);
        }
      });
    }
    const { includeTasks, onlyFailed } = request.options;
    const runs = share !== undefined;
    const owns = this.d.cluster?.owner(name, 'connector') === this.d.workerId();
    const connectorToo = owns && (!onlyFailed || e.startFailure !== undefined || (runs && worker.connectorFailed(name)));
    const tasks = runs && includeTasks ? share.taskIds.filter((t) => !onlyFailed || worker.taskFailed(name, t)) : [];
    if (connectorToo) e.restarting.add('connector');
    for (const t of tasks) e.restarting.add(t);
    return this.restartUnits(name, e, connectorToo, tasks);
  }

  /** Restarts the connector instance (when `connectorToo`) and the tasks, in the name's chain; RESTARTING until done. */
  private restartUnits(name: string, e: Entry, connectorToo: boolean, tasks: readonly number[]): Promise<void> {
    const worker = this.d.worker;
    return this.chain(name, async () => {
      try {
        if (connectorToo) {
          if (!worker.running().includes(name)) {
            e.startFailure = undefined;
            await this.apply(name);
          } else await worker.restartConnector(name);
        }
        for (const t of tasks) await worker.restartTask(name, t);
      } finally {
        e.restarting.clear();
      }
    });
  }

  // ---- offsets and topics --------------------------------------------------------------------------

  async connectorOffsets(name: string): Promise<ConnectorOffsets> {
    const e = this.known(name, `Connector ${name} not found`);
    return this.d.offsets.read(this.d.parse(e.config));
  }

  async alterConnectorOffsets(name: string, offsets: ConnectorOffsets): Promise<string> {
    const config = await this.stoppedConfig(name);
    return this.d.offsets.alter(config, offsets);
  }

  async resetConnectorOffsets(name: string): Promise<string> {
    const config = await this.stoppedConfig(name);
    return this.d.offsets.reset(config);
  }

  activeTopics(name: string): Readonly<Record<string, { readonly topics: readonly string[] }>> {
    if (!this.d.topicTracking.enabled) throw new RequestRefused('forbidden', 'Topic tracking is disabled.');
    const e = this.entries.get(name);
    if (e === undefined) return { [name]: { topics: [] } };
    for (const t of this.d.worker.topics(name)) e.topics.add(t);
    return { [name]: { topics: [...e.topics].sort() } };
  }

  resetActiveTopics(name: string): void {
    if (!this.d.topicTracking.enabled || !this.d.topicTracking.allowReset) throw new RequestRefused('forbidden', 'Topic tracking reset is disabled.');
    const e = this.entries.get(name);
    if (e === undefined) return;
    e.topics.clear();
    this.d.worker.forgetTopics(name);
  }

  // ---- Iceberg tables (Icefloe extensions) ---------------------------------------------------------

  icebergTables(name: string): readonly IcebergTableStatus[] {
    this.known(name, `Connector ${name} not found`);
    const status = this.d.worker.status().find((s) => s.name === name);
    return (status?.tables ?? []).map((t) => ({
      table: t.table,
      branch: t.branch ?? 'main',
      state: t.state,
      reason: t.reason === undefined ? null : `${t.reason.code}: ${t.reason.message}`,
      last_snapshot_id: t.lastSnapshotId === undefined ? null : String(t.lastSnapshotId),
      last_commit_ms: t.lastCommitMs ?? null,
    }));
  }

  async replayTable(name: string, table: string, snapshotId: bigint): Promise<IcebergReplayReport> {
    const config = await this.stoppedConfig(name);
    return this.tableOperation(() => this.d.tables.replay(config, table, snapshotId));
  }

  async adoptTable(name: string, table: string, options: { readonly holdsGroupOffsets: boolean }): Promise<IcebergAdoptReport> {
    const config = await this.stoppedConfig(name);
    return this.tableOperation(() => this.d.tables.adopt(config, table, options));
  }

  /** The tools' refusals of the operator's request (ConfigError: which table, what to do) are the caller's to fix: 400, not 500. */
  private async tableOperation<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (e) {
      if (e instanceof ConfigError) throw new RequestRefused('bad-request', e.message, { cause: e });
      throw e;
    }
  }

  // ---- plugins and loggers -------------------------------------------------------------------------

  plugins(connectorsOnly: boolean): readonly PluginInfo[] {
    return this.d.plugins.plugins(connectorsOnly);
  }

  pluginConfig(plugin: string): readonly ConfigKeyInfo[] {
    return this.d.plugins.pluginConfig(plugin);
  }

  validateConfig(plugin: string, config: Readonly<Record<string, string>>): Promise<ConfigInfos> {
    return this.d.plugins.validate(plugin, config);
  }

  loggers(): Readonly<Record<string, LoggerLevel>> {
    return this.d.loggers.loggers();
  }

  logger(name: string): LoggerLevel {
    return this.d.loggers.logger(name);
  }

  setLoggerLevel(name: string, level: string, scope: 'worker' | 'cluster'): readonly string[] {
    return this.d.loggers.setLevel(name, level, scope);
  }

  // ---- the reconcile loop --------------------------------------------------------------------------

  private newEntry(config: Readonly<Record<string, string>>, target: TargetState): Entry {
    return { config, target, startFailure: undefined, runningConfig: undefined, restarting: new Set(), topics: new Set(), hasTasks: target === 'STARTED' };
  }

  private known(name: string, notFound: string): Entry {
    const e = this.entries.get(name);
    if (e === undefined) throw new RequestRefused('not-found', notFound);
    return e;
  }

  /** The task ids the connector has now: none while STOPPED, failed to start, or not started yet. */
  private taskIds(name: string, e: Entry): number[] {
    if (e.target === 'STOPPED' || !e.hasTasks) return [];
    if (this.d.cluster !== undefined) return Array.from({ length: tasksMaxOf(e.config) }, (_, n) => n);
    return this.d.worker.status().find((s) => s.name === name)?.tasks.map((t) => t.id) ?? [];
  }

  private async setTarget(name: string, target: TargetState): Promise<void> {
    const e = this.known(name, `Unknown connector ${name}`);
    if (e.target === target) return;
    e.target = target;
    e.startFailure = undefined; // a new target is tried afresh
    // Connect writes empty task configs on a stop and new ones when the connector starts again.
    if (target === 'STOPPED') e.hasTasks = false;
    if (target === 'STARTED') e.hasTasks = true;
    await this.save();
    void this.reconcile(name);
  }

  private async stoppedConfig(name: string): Promise<ConnectorConfig> {
    const e = this.known(name, `Connector ${name} not found`);
    if (e.target !== 'STOPPED') throw new RequestRefused('bad-request', NOT_STOPPED_FOR_OFFSETS(name));
    await this.chains.get(name); // a stop requested just before has finished: the group has no members of ours
    return this.d.parse(e.config);
  }

  /**
   * Stores every entry. A shared store that fails (Kafka unreachable) leaves this worker's entries as the
   * store has them, so nothing runs here that the cluster does not know.
   */
  private async save(): Promise<void> {
    this.placeConnectors();
    try {
      await this.d.store.save([...this.entries].map(([name, e]) => ({ name, config: e.config, target: e.target, ...(e.hasTasks ? {} : { tasks: false }) })));
    } catch (err) {
      if (this.d.store.watch !== undefined) {
        const stored = new Map(this.d.store.load().map((c) => [c.name, c]));
        for (const name of new Set([...this.entries.keys(), ...stored.keys()])) this.external(name, stored.get(name));
      }
      throw err;
    }
  }

  /** Tells the cluster's placement the connectors as they stand. */
  private placeConnectors(): void {
    this.d.cluster?.setConnectors([...this.entries].map(([name, e]) => ({ name, tasks: e.target === 'STOPPED' || !e.hasTasks ? 0 : tasksMaxOf(e.config), committer: e.target !== 'STOPPED' && e.hasTasks })));
  }

  /** A change another worker stored (or the echo of ours): the entry follows the store, then the worker. */
  private external(name: string, stored: StoredConnector | undefined): void {
    const e = this.entries.get(name);
    if (stored === undefined) {
      if (e === undefined) return;
      this.entries.delete(name);
    } else if (e === undefined) {
      this.entries.set(name, { ...this.newEntry(stored.config, stored.target), hasTasks: stored.tasks !== false });
    } else {
      const hasTasks = stored.tasks !== false;
      if (key(e.config) === key(stored.config) && e.target === stored.target && e.hasTasks === hasTasks) return;
      if (key(e.config) !== key(stored.config) || e.target !== stored.target) e.startFailure = undefined;
      e.config = stored.config;
      e.target = stored.target;
      e.hasTasks = hasTasks;
    }
    this.placeConnectors();
    void this.reconcile(name);
  }

  private chain(name: string, op: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(name) ?? Promise.resolve()).then(op).catch((err: unknown) => {
      this.d.log.error('connector operation failed', { connector: name, error: errorMessage(err) });
    });
    this.chains.set(name, next);
    return next;
  }

  private reconcile(name: string): Promise<void> {
    return this.chain(name, () => (this.stopped ? Promise.resolve() : this.apply(name)));
  }

  /** Makes the worker match the stored config and target state of `name`. */
  private async apply(name: string): Promise<void> {
    const worker = this.d.worker;
    const e = this.entries.get(name);
    const runs = worker.running().includes(name);
    const share = this.d.cluster?.share(name);
    const nothingHere = share !== undefined && share.taskIds.length === 0 && !share.committer;
    if (e === undefined || e.target === 'STOPPED' || (e.target === 'PAUSED' && !e.hasTasks) || nothingHere) {
      if (runs) await this.stopRunning(name, e);
      if (e !== undefined) e.runningConfig = undefined;
      return;
    }
    if (runs && e.runningConfig !== key(e.config)) {
      await this.stopRunning(name, e, { restarting: true });
      await this.startConnector(name, e, share);
      return;
    }
    if (!runs) {
      if (e.startFailure === undefined) await this.startConnector(name, e, share);
      return;
    }
    if (share !== undefined) await worker.reassign(name, share);
    if (e.target === 'PAUSED') worker.pause(name);
    else worker.resume(name);
  }

  /** Stops the running connector, keeping its active topics (Connect keeps them until a reset). */
  private async stopRunning(name: string, e: Entry | undefined, options: { readonly restarting?: boolean } = {}): Promise<void> {
    for (const t of this.d.worker.topics(name)) e?.topics.add(t);
    await this.d.worker.stopConnector(name, options);
  }

  private async startConnector(name: string, e: Entry, share: ConnectorShare | undefined): Promise<void> {
    const log = this.d.log.child({ connector: name });
    try {
      await this.d.worker.start(this.d.parse(e.config), { paused: e.target === 'PAUSED', ...(share === undefined ? {} : { share }) });
      e.startFailure = undefined;
      e.runningConfig = key(e.config);
    } catch (err) {
      e.startFailure = err instanceof Error ? (err.stack ?? err.message) : String(err);
      e.startError = err;
      log.error(`connector ${name} failed to start: ${errorMessage(err)}`, { fix: 'fix the cause, then POST /connectors/' + name + '/restart or PUT a new config' });
    }
  }
}

