/**
 * An in-memory HerderApi for the REST module's unit tests (the REST layer is pure mapping: HTTP in,
 * herder calls out). It keeps connectors with their config and target state, refuses with Connect's
 * messages, and records every call so tests can check what the REST layer passed on.
 */
import { RequestRefused } from '../../../src/core/errors.ts';
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
} from '../../../src/runtime/herder-api.ts';

export const SINK_CLASS = 'org.apache.iceberg.connect.IcebergSinkConnector';
const WORKER = 'worker-1:8083';

interface Entry {
  config: Record<string, string>;
  target: TargetState;
  tasks: number;
}

export class FakeHerder implements HerderApi {
  readonly connectors = new Map<string, Entry>();
  readonly calls: [string, ...unknown[]][] = [];
  /** Connectors whose status is not reported yet (404 on status, left out of expand=status). */
  readonly noStatus = new Set<string>();
  healthAnswer: WorkerHealth = { status: 'healthy', message: 'Worker has completed startup and is ready to handle requests.' };
  /** When set, every async call waits for this promise (for the timeout rule). */
  hang: Promise<never> | undefined;
  /** When set, the next call throws it (for foreign errors). */
  throwNext: unknown;
  readonly levels = new Map<string, LoggerLevel>([['root', { level: 'INFO', last_modified: null }]]);

  add(name: string, config: Record<string, string> = {}, target: TargetState = 'STARTED', tasks = 1): void {
    this.connectors.set(name, { config: { 'connector.class': SINK_CLASS, name, ...config }, target, tasks });
  }

  #record(method: string, ...args: unknown[]): void {
    this.calls.push([method, ...args]);
    if (this.throwNext !== undefined) {
      const e = this.throwNext;
      this.throwNext = undefined;
      throw e;
    }
  }

  async #wait(): Promise<void> {
    if (this.hang !== undefined) await this.hang;
  }

  #get(name: string, message = `Connector ${name} not found`): Entry {
    const e = this.connectors.get(name);
    if (e === undefined) throw new RequestRefused('not-found', message);
    return e;
  }

  #info(name: string): ConnectorInfo {
    const e = this.#get(name);
    const tasks = e.target === 'STOPPED' ? [] : Array.from({ length: e.tasks }, (_, task) => ({ connector: name, task }));
    return { name, config: { ...e.config }, tasks, type: 'sink' };
  }

  #check(name: string, config: Readonly<Record<string, string>>): void {
    if (config['connector.class'] === undefined) throw new RequestRefused('bad-request', `Connector config ${JSON.stringify(config)} contains no connector type`);
    if (name === '') throw new RequestRefused('bad-request', 'Connector configuration is invalid and contains the following 1 error(s):\nString may not be empty');
  }

  async serverInfo(): Promise<ServerInfo> {
    this.#record('serverInfo');
    await this.#wait();
    return { version: '3.9.0', commit: '0123456789abcdef', kafka_cluster_id: 'cluster-1' };
  }

  /** Replace to hold connector requests (the herder not loaded yet). */
  readyPromise: Promise<void> = Promise.resolve();
  ready(): Promise<void> {
    return this.readyPromise;
  }

  async health(): Promise<WorkerHealth> {
    this.#record('health');
    await this.#wait();
    return this.healthAnswer;
  }

  connectorNames(): readonly string[] {
    this.#record('connectorNames');
    return [...this.connectors.keys()];
  }

  connectorInfo(name: string): ConnectorInfo {
    this.#record('connectorInfo', name);
    return this.#info(name);
  }

  connectorConfig(name: string): Readonly<Record<string, string>> {
    this.#record('connectorConfig', name);
    return { ...this.#get(name).config };
  }

  connectorStatus(name: string): ConnectorStateInfo {
    this.#record('connectorStatus', name);
    const e = this.connectors.get(name);
    if (e === undefined || this.noStatus.has(name)) throw new RequestRefused('not-found', `No status found for connector ${name}`);
    const state = e.target === 'STARTED' ? 'RUNNING' : e.target;
    const tasks: TaskStateInfo[] = e.target === 'STOPPED' ? [] : Array.from({ length: e.tasks }, (_, id) => ({ id, state: state === 'PAUSED' ? 'PAUSED' : 'RUNNING', worker_id: WORKER }));
    return { name, connector: { state, worker_id: WORKER }, tasks, type: 'sink' };
  }

  taskStatus(name: string, task: number): TaskStateInfo {
    this.#record('taskStatus', name, task);
    const status = this.connectorStatus(name);
    const t = status.tasks.find((x) => x.id === task);
    if (t === undefined) throw new RequestRefused('not-found', `No status found for task ${name}-${task}`);
    return t;
  }

  taskConfigs(name: string): readonly TaskInfo[] {
    this.#record('taskConfigs', name);
    return this.#info(name).tasks.map((id) => ({ id, config: { 'task.class': 'org.apache.iceberg.connect.IcebergSinkTask', 'task.id': String(id.task) } }));
  }

  async createConnector(name: string, config: Readonly<Record<string, string>>, initialState: TargetState): Promise<ConnectorInfo> {
    this.#record('createConnector', name, config, initialState);
    await this.#wait();
    this.#check(name, config);
    if (this.connectors.has(name)) throw new RequestRefused('already-exists', `Connector ${name} already exists`);
    this.connectors.set(name, { config: { ...config }, target: initialState, tasks: 1 });
    return { ...this.#info(name), tasks: [] };
  }

  async putConnectorConfig(name: string, config: Readonly<Record<string, string>>): Promise<{ readonly created: boolean; readonly info: ConnectorInfo }> {
    this.#record('putConnectorConfig', name, config);
    await this.#wait();
    this.#check(name, config);
    const existing = this.connectors.get(name);
    if (existing === undefined) {
      this.connectors.set(name, { config: { ...config }, target: 'STARTED', tasks: 1 });
      return { created: true, info: { ...this.#info(name), tasks: [] } };
    }
    existing.config = { ...config };
    return { created: false, info: this.#info(name) };
  }

  async patchConnectorConfig(name: string, patch: Readonly<Record<string, string | null>>): Promise<ConnectorInfo> {
    this.#record('patchConnectorConfig', name, patch);
    await this.#wait();
    const e = this.#get(name);
    const merged: Record<string, string> = { ...e.config };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete merged[k];
      else merged[k] = v;
    }
    this.#check(name, merged);
    e.config = merged;
    return this.#info(name);
  }

  async deleteConnector(name: string): Promise<void> {
    this.#record('deleteConnector', name);
    await this.#wait();
    this.#get(name);
    this.connectors.delete(name);
  }

  async pauseConnector(name: string): Promise<void> {
    this.#record('pauseConnector', name);
    this.#get(name, `Unknown connector ${name}`).target = 'PAUSED';
  }

  async resumeConnector(name: string): Promise<void> {
    this.#record('resumeConnector', name);
    this.#get(name, `Unknown connector ${name}`).target = 'STARTED';
  }

  async stopConnector(name: string): Promise<void> {
    this.#record('stopConnector', name);
    await this.#wait();
    this.#get(name, `Unknown connector ${name}`).target = 'STOPPED';
  }

  async restartConnector(name: string, options: RestartOptions): Promise<ConnectorStateInfo | undefined> {
    this.#record('restartConnector', name, options);
    await this.#wait();
    this.#get(name, `Unknown connector: ${name}`);
    if (!options.includeTasks && !options.onlyFailed) return undefined;
    const status = this.connectorStatus(name);
    return {
      ...status,
      connector: { ...status.connector, state: options.onlyFailed ? status.connector.state : 'RESTARTING' },
      tasks: options.includeTasks && !options.onlyFailed ? status.tasks.map((t) => ({ ...t, state: 'RESTARTING' as const })) : status.tasks,
    };
  }

  async restartTask(name: string, task: number): Promise<void> {
    this.#record('restartTask', name, task);
    await this.#wait();
    const e = this.#get(name, `Unknown connector: ${name}`);
    if (task < 0 || task >= e.tasks) throw new RequestRefused('not-found', `Unknown task: ${name}-${task}`);
  }

  async connectorOffsets(name: string): Promise<ConnectorOffsets> {
    this.#record('connectorOffsets', name);
    await this.#wait();
    this.#get(name);
    return { offsets: [{ partition: { kafka_topic: 'orders', kafka_partition: 0 }, offset: { kafka_offset: 42 } }] };
  }

  #stopped(name: string): void {
    if (this.#get(name).target !== 'STOPPED') {
      throw new RequestRefused(
        'bad-request',
        `Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/${name}/stop' endpoint`,
      );
    }
  }

  async alterConnectorOffsets(name: string, offsets: ConnectorOffsets): Promise<string> {
    this.#record('alterConnectorOffsets', name, offsets);
    await this.#wait();
    this.#stopped(name);
    return 'The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses.';
  }

  async resetConnectorOffsets(name: string): Promise<string> {
    this.#record('resetConnectorOffsets', name);
    await this.#wait();
    this.#stopped(name);
    return 'The Connect framework-managed offsets for this connector have been reset successfully. However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses.';
  }

  icebergTables(name: string): readonly IcebergTableStatus[] {
    this.#record('icebergTables', name);
    const e = this.#get(name);
    if (e.target === 'STOPPED') return [];
    return [{ table: 'db.orders', branch: 'main', state: 'RUNNING', reason: null, last_snapshot_id: '9007199254740993', last_commit_ms: 1700000000000 }];
  }

  async replayTable(name: string, table: string, snapshotId: bigint): Promise<IcebergReplayReport> {
    this.#record('replayTable', name, table, snapshotId);
    await this.#wait();
    this.#stopped(name);
    return {
      table,
      branch: 'main',
      snapshotId: String(snapshotId),
      replaced: '9007199254740993',
      replaySnapshotId: '9007199254740995',
      offsets: [{ topic: 'orders', partition: 0, offset: '20' }],
      result: `rolled back to snapshot ${snapshotId}`,
    };
  }

  async adoptTable(name: string, table: string, options: { readonly holdsGroupOffsets: boolean }): Promise<IcebergAdoptReport> {
    this.#record('adoptTable', name, table, options);
    await this.#wait();
    this.#stopped(name);
    return { table, branch: 'main', action: 'adopt', stored: { '0': '5' }, connectorPosition: null, reapplyMark: null, result: 'adopted' };
  }

  activeTopics(name: string): Readonly<Record<string, { readonly topics: readonly string[] }>> {
    this.#record('activeTopics', name);
    return { [name]: { topics: this.connectors.has(name) ? ['orders'] : [] } };
  }

  resetActiveTopics(name: string): void {
    this.#record('resetActiveTopics', name);
  }

  plugins(connectorsOnly: boolean): readonly PluginInfo[] {
    this.#record('plugins', connectorsOnly);
    const sink: PluginInfo = { class: SINK_CLASS, type: 'sink', version: '1.9.2' };
    return connectorsOnly ? [sink] : [sink, { class: 'org.apache.kafka.connect.json.JsonConverter', type: 'converter' }];
  }

  pluginConfig(plugin: string): readonly ConfigKeyInfo[] {
    this.#record('pluginConfig', plugin);
    if (!SINK_CLASS.endsWith(plugin)) throw new RequestRefused('not-found', `Unknown plugin ${plugin}.`);
    return [KEY_TASKS_MAX];
  }

  async validateConfig(plugin: string, config: Readonly<Record<string, string>>): Promise<ConfigInfos> {
    this.#record('validateConfig', plugin, config);
    await this.#wait();
    const value = config['tasks.max'] ?? null;
    const errors = value !== null && !/^\d+$/.test(value) ? [`Invalid value ${value} for configuration tasks.max: Not a number of type INT`] : [];
    return {
      name: config['connector.class'] ?? plugin,
      error_count: errors.length,
      groups: ['Common'],
      configs: [{ definition: KEY_TASKS_MAX, value: { name: 'tasks.max', value, recommended_values: [], errors, visible: true } }],
    };
  }

  loggers(): Readonly<Record<string, LoggerLevel>> {
    this.#record('loggers');
    return Object.fromEntries(this.levels);
  }

  logger(name: string): LoggerLevel {
    this.#record('logger', name);
    const l = this.levels.get(name);
    if (l === undefined) throw new RequestRefused('not-found', `Logger ${name} not found.`);
    return l;
  }

  setLoggerLevel(name: string, level: string, scope: 'worker' | 'cluster'): readonly string[] {
    this.#record('setLoggerLevel', name, level, scope);
    this.levels.set(name, { level: level.toUpperCase(), last_modified: 1_700_000_000_000 });
    return [name];
  }
}

const KEY_TASKS_MAX: ConfigKeyInfo = {
  name: 'tasks.max',
  type: 'INT',
  required: false,
  default_value: '1',
  importance: 'HIGH',
  documentation: 'Maximum number of tasks to use for this connector.',
  group: 'Common',
  order_in_group: 3,
  width: 'SHORT',
  display_name: 'Tasks max',
  dependents: [],
};
