/**
 * What the control layer (the herder, Connect's name for it) offers the REST API: the Kafka Connect
 * REST contract's operations, with Connect's JSON entities as values (snake_case field names exactly as
 * Kafka writes them: docs/rest.md, ../shared/docs/reference/connect-rest.md §1.3). The REST module
 * (src/rest/) is a thin layer that maps HTTP onto these calls and `RequestRefused` onto status codes; the
 * standalone herder (herder.ts) implements it over the worker, and distributed mode will implement it
 * over the cluster.
 *
 * Refusals are `RequestRefused` (core/errors.ts) with a `reason` the REST layer maps to a status (404,
 * 409, 400, 403, 500) and a message kept verbatim where clients match on it.
 */
import type { ConfigInfos, ConfigKeyInfo } from '../config/config-def.ts';

export type { ConfigInfos, ConfigKeyInfo } from '../config/config-def.ts';

/** User intent, persisted with the config (`initial_state` says RUNNING for STARTED). */
export type TargetState = 'STARTED' | 'PAUSED' | 'STOPPED';

/** Runtime states as Connect reports them (kafka-ui's enums: never emit anything else). */
export type ConnectorRunState = 'UNASSIGNED' | 'RUNNING' | 'PAUSED' | 'STOPPED' | 'FAILED' | 'RESTARTING';
export type TaskRunState = Exclude<ConnectorRunState, 'STOPPED'>;

export interface ServerInfo {
  readonly version: string;
  readonly commit: string;
  readonly kafka_cluster_id: string | null;
}

/** KIP-1017: `healthy` 200, `starting` 503, `unhealthy` 500. */
export interface WorkerHealth {
  readonly status: 'healthy' | 'starting' | 'unhealthy';
  readonly message: string;
}

export interface ConnectorTaskId {
  readonly connector: string;
  readonly task: number;
}

export interface ConnectorInfo {
  readonly name: string;
  /** Exactly as stored: the user's keys and values (strings), plus `name`; no defaults, no resolved secrets. */
  readonly config: Readonly<Record<string, string>>;
  /** Empty right after creation and while STOPPED. */
  readonly tasks: readonly ConnectorTaskId[];
  readonly type: 'sink';
}

export interface TaskStateInfo {
  readonly id: number;
  readonly state: TaskRunState;
  readonly worker_id: string;
  /** Present (non-empty) only when there is something to say: a FAILED task's trace, or why it is not progressing. */
  readonly trace?: string;
  readonly version?: string;
  /** Icefloe's: incarnations started after the first (automatic restarts), present once there was one. */
  readonly restarts?: number;
  /** Icefloe's: the unexpected end the last automatic restart recovered from (a crash, a stuck task's trace). */
  readonly last_failure?: string;
}

export interface ConnectorStateInfo {
  readonly name: string;
  readonly connector: { readonly state: ConnectorRunState; readonly worker_id: string; readonly trace?: string; readonly version?: string };
  /** Sorted by id; empty while STOPPED. */
  readonly tasks: readonly TaskStateInfo[];
  readonly type: 'sink';
}

export interface TaskInfo {
  readonly id: ConnectorTaskId;
  readonly config: Readonly<Record<string, string>>;
}

/** `GET /connectors/{c}/offsets` for a sink: the consumer group's committed offsets (next offset to read). */
export interface ConnectorOffsets {
  readonly offsets: readonly {
    readonly partition: { readonly kafka_topic: string; readonly kafka_partition: number };
    readonly offset: { readonly kafka_offset: number } | null;
  }[];
}

export interface PluginInfo {
  readonly class: string;
  readonly type: 'sink' | 'source' | 'converter' | 'header_converter' | 'transformation' | 'predicate';
  readonly version?: string;
}

export interface LoggerLevel {
  readonly level: string;
  /** Null when the level was not changed through the API. */
  readonly last_modified: number | null;
}

export interface RestartOptions {
  readonly includeTasks: boolean;
  readonly onlyFailed: boolean;
}

/** The operations behind the REST API. Every call may throw `RequestRefused`. */
export interface HerderApi {
  serverInfo(): Promise<ServerInfo>;
  health(): Promise<WorkerHealth>;
  /**
   * Resolves once the herder knows the stored connectors (in distributed mode: the worker has joined the
   * cluster and read the config topic). Requests about connectors wait for it, as Connect's herder queues
   * them until it has joined: until then "no such connector" or a config written over a stored one could
   * be the answer.
   */
  ready(): Promise<void>;

  connectorNames(): readonly string[];
  connectorInfo(name: string): ConnectorInfo;
  connectorConfig(name: string): Readonly<Record<string, string>>;
  /** Throws `not-found` "No status found for connector <name>" when nothing reported yet. */
  connectorStatus(name: string): ConnectorStateInfo;
  taskStatus(name: string, task: number): TaskStateInfo;
  taskConfigs(name: string): readonly TaskInfo[];

  /** `config` as submitted (strings); `name` injected when absent. Answers once the config is stored. */
  createConnector(name: string, config: Readonly<Record<string, string>>, initialState: TargetState): Promise<ConnectorInfo>;
  /** Create-or-update; an identical config restarts nothing. */
  putConnectorConfig(name: string, config: Readonly<Record<string, string>>): Promise<{ readonly created: boolean; readonly info: ConnectorInfo }>;
  /** Merge: a key with a value sets it, a key with null removes it; then validated like a PUT. */
  patchConnectorConfig(name: string, patch: Readonly<Record<string, string | null>>): Promise<ConnectorInfo>;
  deleteConnector(name: string): Promise<void>;

  pauseConnector(name: string): Promise<void>;
  resumeConnector(name: string): Promise<void>;
  stopConnector(name: string): Promise<void>;
  /** Both options false: restarts the connector instance only (undefined → 204); otherwise the plan (202). */
  restartConnector(name: string, options: RestartOptions): Promise<ConnectorStateInfo | undefined>;
  restartTask(name: string, task: number): Promise<void>;

  connectorOffsets(name: string): Promise<ConnectorOffsets>;
  /** Only while STOPPED (`bad-request` otherwise). Resolves with the success message. */
  alterConnectorOffsets(name: string, offsets: ConnectorOffsets): Promise<string>;
  resetConnectorOffsets(name: string): Promise<string>;

  /** `{<name>: {topics: [...]}}`; an unknown connector has no topics (not 404, as Connect). */
  activeTopics(name: string): Readonly<Record<string, { readonly topics: readonly string[] }>>;
  resetActiveTopics(name: string): void;

  plugins(connectorsOnly: boolean): readonly PluginInfo[];
  pluginConfig(plugin: string): readonly ConfigKeyInfo[];
  /** Always an answer (error_count may be > 0); `bad-request` when `connector.class` names another plugin. */
  validateConfig(plugin: string, config: Readonly<Record<string, string>>): Promise<ConfigInfos>;

  loggers(): Readonly<Record<string, LoggerLevel>>;
  logger(name: string): LoggerLevel;
  /** Returns the names of the loggers whose level changed. */
  setLoggerLevel(name: string, level: string, scope: 'worker' | 'cluster'): readonly string[];

  // Icefloe extensions, `/connectors/{name}/iceberg/...` (not Kafka Connect's: docs/rest.md "Iceberg tables").
  /** A running connector's tables; empty while it is not running (no committer to ask). */
  icebergTables(name: string): readonly IcebergTableStatus[];
  /** Only while STOPPED (`bad-request` with the offsets' STOPPED message otherwise). */
  replayTable(name: string, table: string, snapshotId: bigint): Promise<IcebergReplayReport>;
  /** Only while STOPPED. */
  adoptTable(name: string, table: string, options: { readonly holdsGroupOffsets: boolean }): Promise<IcebergAdoptReport>;
}

// ---- Icefloe extensions (not Kafka Connect's: docs/rest.md "Iceberg tables") ------------------------

/** One table as the connector's committer sees it (`GET /connectors/{c}/iceberg/tables`). */
export interface IcebergTableStatus {
  readonly table: string;
  /** The branch its commits go to. */
  readonly branch: string;
  readonly state: 'RUNNING' | 'STOPPED';
  /** Why a STOPPED table stopped (`code: message`); null while RUNNING. */
  readonly reason: string | null;
  /** The last snapshot the committer committed, as a string (a 64-bit id loses digits as a JSON number); null before the first. */
  readonly last_snapshot_id: string | null;
  readonly last_commit_ms: number | null;
}

/** What a replay did (coordinate/replay.ts: the same report `icefloe replay` prints; ids and offsets as strings). */
export interface IcebergReplayReport {
  readonly table: string;
  readonly branch: string;
  readonly snapshotId: string;
  readonly replaced: string;
  readonly replaySnapshotId: string;
  readonly offsets: readonly { readonly topic: string; readonly partition: number; readonly offset: string }[];
  readonly result: string;
}

/** What an adopt did (coordinate/positions-tool.ts: the same report `icefloe positions --adopt` prints). */
export interface IcebergAdoptReport {
  readonly table: string;
  readonly branch: string;
  readonly action: string;
  readonly stored: Readonly<Record<string, string>> | string;
  readonly connectorPosition: Readonly<Record<string, string>> | null;
  readonly reapplyMark: string | null;
  readonly result: string;
}
