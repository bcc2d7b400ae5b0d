/**
 * The records of distributed mode's two state topics, exactly as Kafka Connect keeps them
 * (../shared/docs/reference/connect-rest.md §3.2; Connect's KafkaConfigBackingStore and
 * KafkaStatusBackingStore): string keys, values in JsonConverter's schemaless JSON, tombstones for
 * deletions. Encoders build the records; `ConfigSnapshot` and `StatusSnapshot` fold a topic's records, in
 * offset order, into what they mean, with Connect's rules for the corner cases (commit-gated task configs,
 * target-state defaults, what a tombstone removes), so a worker rebuilds the same state from the topic
 * after any restart and can read a Java Connect cluster's topics.
 *
 * Plain `JSON.parse` is enough here: no value of these records holds an integer past 2^53 (task counts,
 * generations and ms timestamps).
 *
 * Owns: keys, value shapes, and the fold. Must not: do I/O, read a clock, log, or throw on a bad record
 * (a bad record is skipped and described in the returned warning, as Connect logs and skips it).
 */
import type { ConnectorRunState, TargetState } from '../herder-api.ts';

export type { TargetState } from '../herder-api.ts';

/** A JSON value as the codecs write it. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

/** One record to append: a null value is a tombstone. */
export interface StateEntry {
  readonly key: string;
  readonly value: JsonObject | null;
}

export type Properties = Readonly<Record<string, string>>;

// ---------------------------------------------------------------------------------------------------
// Keys (Connect's prefixes, checked in Connect's order when reading)
// ---------------------------------------------------------------------------------------------------

const TARGET_STATE = 'target-state-';
const CONNECTOR = 'connector-';
const TASK = 'task-';
const COMMIT = 'commit-';
const RESTART_CONNECTOR = 'restart-connector-';
const LOGGER_CLUSTER = 'logger-cluster-';
/**
 * Our one extension of the config topic: a single task's restart. Connect never stores one (its leader
 * forwards `POST /connectors/{c}/tasks/{n}/restart` over HTTP to the worker that runs the task); our
 * workers learn about every request from the config topic instead, so the owner of the task picks it up
 * wherever the request arrived. A Java worker reading the topic discards the key as unknown ("Discarding
 * config update record with invalid key"), which harms nothing. `requested-ms` makes every request a new
 * value, so a repeated request is a new record, not a duplicate of a compacted one.
 */
const RESTART_TASK = 'restart-task-';

export const configKeys = {
  connector: (name: string): string => CONNECTOR + name,
  task: (name: string, task: number): string => `${TASK}${name}-${task}`,
  commit: (name: string): string => COMMIT + name,
  targetState: (name: string): string => TARGET_STATE + name,
  restartConnector: (name: string): string => RESTART_CONNECTOR + name,
  restartTask: (name: string, task: number): string => `${RESTART_TASK}${name}-${task}`,
  loggerCluster: (namespace: string): string => LOGGER_CLUSTER + namespace,
};

/** `<name>-<n>` → name and task number, as Connect's parseTaskId: the last `-` separates them. */
export function parseTaskSuffix(rest: string): { connector: string; task: number } | undefined {
  const dash = rest.lastIndexOf('-');
  if (dash <= 0) return undefined;
  const digits = rest.slice(dash + 1);
  if (!/^\d{1,10}$/.test(digits)) return undefined;
  const task = Number(digits);
  return task <= 0x7fffffff ? { connector: rest.slice(0, dash), task } : undefined;
}

// ---------------------------------------------------------------------------------------------------
// Config topic encoders
// ---------------------------------------------------------------------------------------------------

export function encodeConnectorConfig(name: string, config: Properties): StateEntry {
  return { key: configKeys.connector(name), value: { properties: { ...config } } };
}

/** Deleting a connector: its config and its target state, tombstoned in that order (as Connect's removeConnectorConfig). */
export function encodeConnectorRemoval(name: string): StateEntry[] {
  return [
    { key: configKeys.connector(name), value: null },
    { key: configKeys.targetState(name), value: null },
  ];
}

export function encodeTaskConfig(name: string, task: number, config: Properties): StateEntry {
  return { key: configKeys.task(name, task), value: { properties: { ...config } } };
}

/** Makes the task configs written before it visible at once (and sets the connector's task count). */
export function encodeTaskCommit(name: string, tasks: number): StateEntry {
  return { key: configKeys.commit(name), value: { tasks } };
}

/** `state` says PAUSED for STOPPED: workers older than Connect 3.5 know only STARTED and PAUSED. */
export function encodeTargetState(name: string, target: TargetState): StateEntry {
  return { key: configKeys.targetState(name), value: { state: target === 'STOPPED' ? 'PAUSED' : target, 'state.v2': target } };
}

export function encodeConnectorRestart(name: string, request: { readonly includeTasks: boolean; readonly onlyFailed: boolean }): StateEntry {
  return { key: configKeys.restartConnector(name), value: { 'include-tasks': request.includeTasks, 'only-failed': request.onlyFailed } };
}

export function encodeTaskRestart(name: string, task: number, requestedMs: number): StateEntry {
  return { key: configKeys.restartTask(name, task), value: { 'requested-ms': requestedMs } };
}

export function encodeLoggerLevel(namespace: string, level: string): StateEntry {
  return { key: configKeys.loggerCluster(namespace), value: { level } };
}

// ---------------------------------------------------------------------------------------------------
// Decoding helpers
// ---------------------------------------------------------------------------------------------------

type Parsed = { ok: true; value: unknown } | { ok: false; warning: string };

/** The JSON of a non-null value; a value that is not JSON is described, never thrown. */
export function parseJson(key: string, value: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(value) as unknown };
  } catch (e) {
    return { ok: false, warning: `record ${key}: the value is not JSON (${e instanceof Error ? e.message : String(e)}); skipped` };
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function kindOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/** The warning for a value that should be a JSON object. */
function notObject(key: string, v: unknown): string {
  return v === null ? `record ${key}: unexpected tombstone; skipped` : `record ${key}: the value is a JSON ${kindOf(v)}, not an object; skipped`;
}

/**
 * `{"properties": {...}}` → the properties. Connect's schema allows null values in the map; a null value
 * cannot be told from an absent key by our config types, so such keys are dropped (and named in a note).
 */
function readProperties(key: string, v: unknown): { properties: Properties; note?: string } | { warning: string } {
  if (!isObject(v)) return { warning: notObject(key, v) };
  const p = v['properties'];
  if (!isObject(p)) return { warning: `record ${key}: "properties" is a JSON ${kindOf(p)}, not an object; skipped` };
  const kept: [string, string][] = [];
  const dropped: string[] = [];
  for (const [k, value] of Object.entries(p)) {
    if (typeof value === 'string') kept.push([k, value]);
    else if (value === null) dropped.push(k);
    else return { warning: `record ${key}: property ${JSON.stringify(k)} is a JSON ${kindOf(value)}, not a string; skipped` };
  }
  // fromEntries defines own properties, so a key such as "__proto__" stays a key like any other.
  const properties = Object.fromEntries(kept);
  return dropped.length === 0 ? { properties } : { properties, note: `record ${key}: properties with null values dropped: ${dropped.join(', ')}` };
}

/** A non-negative int32 (Connect's INT32 fields). */
function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0x7fffffff;
}

// ---------------------------------------------------------------------------------------------------
// The config snapshot
// ---------------------------------------------------------------------------------------------------

export interface ConnectorEntry {
  readonly name: string;
  /** Exactly as stored (strings). */
  readonly config: Properties;
  /** STARTED unless a target-state record says otherwise (as Connect: a config without one starts). */
  readonly target: TargetState;
  /** From the latest `commit-<name>`; 0 before any. Task configs become visible only through a commit. */
  readonly taskCount: number;
  /** The committed task configs, index = task id (length taskCount); empty while `inconsistent`. */
  readonly taskConfigs: readonly Properties[];
  /**
   * The latest commit did not find every task config it counts (compaction removed some, or a writer died
   * between its task records and its commit): the connector's tasks must be regenerated (Connect's
   * "inconsistent" connectors).
   */
  readonly inconsistent: boolean;
  /** Offset of the last record that changed this connector's config, target state or committed tasks. */
  readonly lastOffset: bigint;
}

export interface ConnectorRestartRequest {
  readonly kind: 'connector';
  readonly connector: string;
  readonly includeTasks: boolean;
  readonly onlyFailed: boolean;
  /** Where the request is in the config topic: a worker executes only requests past its initial read. */
  readonly offset: bigint;
}

export interface TaskRestartRequest {
  readonly kind: 'task';
  readonly connector: string;
  readonly task: number;
  readonly requestedMs: number;
  readonly offset: bigint;
}

export type RestartRequest = ConnectorRestartRequest | TaskRestartRequest;

export interface LoggerLevelEntry {
  readonly namespace: string;
  readonly level: string;
  /** Connect applies only levels written after the worker's initial read: the offset tells. */
  readonly offset: bigint;
}

/** What one record changed (null: nothing, e.g. a task config waiting for its commit or a skipped record). */
export type ConfigChange =
  | { readonly kind: 'connector-config'; readonly connector: string; readonly removed: boolean }
  | { readonly kind: 'target-state'; readonly connector: string; readonly target: TargetState; readonly removed: boolean }
  | { readonly kind: 'task-config-pending'; readonly connector: string; readonly task: number }
  | { readonly kind: 'tasks-committed'; readonly connector: string; readonly taskCount: number; readonly inconsistent: boolean }
  | { readonly kind: 'restart'; readonly request: RestartRequest }
  | { readonly kind: 'logger-level'; readonly entry: LoggerLevelEntry }
  | { readonly kind: 'ignored'; readonly key: string };

export interface ApplyResult<C> {
  readonly change: C | null;
  /** Why the record was skipped, or what of it was not taken (for the caller's log). */
  readonly warning?: string;
}

const TARGETS: ReadonlySet<string> = new Set<TargetState>(['STARTED', 'PAUSED', 'STOPPED']);

/**
 * The config topic folded in offset order (one partition: the whole topic is one ordered log). Mirrors
 * Connect's KafkaConfigBackingStore: task configs wait for their connector's commit record and become
 * visible all at once (a commit that lacks one of tasks 0..n-1 marks the connector inconsistent); a
 * connector tombstone drops its config and committed tasks; a target-state tombstone falls back to
 * STARTED; task and commit records may outlive their connector (Connect never tombstones them), so a
 * re-created connector sees its old committed tasks until new ones are committed, as in Connect.
 */
export class ConfigSnapshot {
  readonly #configs = new Map<string, Properties>();
  readonly #targets = new Map<string, TargetState>();
  readonly #taskCounts = new Map<string, number>();
  readonly #taskConfigs = new Map<string, Map<number, Properties>>();
  readonly #deferred = new Map<string, Map<number, Properties>>();
  readonly #inconsistent = new Set<string>();
  readonly #lastOffsets = new Map<string, bigint>();
  readonly #restarts = new Map<string, RestartRequest>();
  readonly #loggers = new Map<string, LoggerLevelEntry>();
  #offset = -1n;
  #ignored = 0;
  #malformed = 0;

  /** Folds one record in; never throws. `value` is the record's value as text, null for a tombstone. */
  apply(key: string, value: string | null, offset: bigint): ApplyResult<ConfigChange> {
    if (offset > this.#offset) this.#offset = offset;
    let parsed: unknown = null;
    if (value !== null) {
      const p = parseJson(key, value);
      if (!p.ok) return this.#skip(p.warning);
      parsed = p.value;
    }
    if (key.startsWith(TARGET_STATE)) return this.#targetState(key, key.slice(TARGET_STATE.length), parsed, offset);
    if (key.startsWith(CONNECTOR)) return this.#connectorConfig(key, key.slice(CONNECTOR.length), parsed, offset);
    if (key.startsWith(TASK)) return this.#taskConfig(key, parsed);
    if (key.startsWith(COMMIT)) return this.#commit(key, key.slice(COMMIT.length), parsed, offset);
    if (key.startsWith(RESTART_CONNECTOR)) return this.#restartConnector(key, key.slice(RESTART_CONNECTOR.length), parsed, offset);
    if (key.startsWith(RESTART_TASK)) return this.#restartTask(key, parsed, offset);
    if (key.startsWith(LOGGER_CLUSTER)) return this.#loggerLevel(key, key.slice(LOGGER_CLUSTER.length), parsed, offset);
    // session-key, tasks-fencing-<name> (exactly-once sources) and whatever a newer Connect adds.
    this.#ignored++;
    return { change: { kind: 'ignored', key } };
  }

  #skip(warning: string): ApplyResult<ConfigChange> {
    this.#malformed++;
    return { change: null, warning };
  }

  #touch(name: string, offset: bigint): void {
    this.#lastOffsets.set(name, offset);
  }

  #targetState(key: string, name: string, v: unknown, offset: bigint): ApplyResult<ConfigChange> {
    if (v === null) {
      // Written with the connector's tombstone; a connector that still has a config is STARTED again.
      this.#targets.delete(name);
      this.#touch(name, offset);
      return { change: { kind: 'target-state', connector: name, target: 'STARTED', removed: true } };
    }
    if (!isObject(v)) return this.#skip(notObject(key, v));
    // state.v2 first (it can say STOPPED); a record of an older worker has only `state`.
    const v2 = v['state.v2'];
    const state = typeof v2 === 'string' ? v2 : v['state'];
    if (typeof state !== 'string' || !TARGETS.has(state)) return this.#skip(`record ${key}: no valid target state (state.v2=${JSON.stringify(v2)}, state=${JSON.stringify(v['state'])}); skipped`);
    const target = state as TargetState;
    this.#targets.set(name, target);
    this.#touch(name, offset);
    return { change: { kind: 'target-state', connector: name, target, removed: false } };
  }

  #connectorConfig(key: string, name: string, v: unknown, offset: bigint): ApplyResult<ConfigChange> {
    if (v === null) {
      this.#configs.delete(name);
      this.#taskCounts.delete(name);
      this.#taskConfigs.delete(name);
      this.#deferred.delete(name);
      // Connect keeps the flag; with the committed tasks gone it describes nothing, and a re-created
      // connector must not start out "inconsistent" because of its predecessor.
      this.#inconsistent.delete(name);
      this.#touch(name, offset);
      return { change: { kind: 'connector-config', connector: name, removed: true } };
    }
    const read = readProperties(key, v);
    if ('warning' in read) return this.#skip(read.warning);
    this.#configs.set(name, read.properties);
    this.#touch(name, offset);
    const change: ConfigChange = { kind: 'connector-config', connector: name, removed: false };
    return read.note === undefined ? { change } : { change, warning: read.note };
  }

  #taskConfig(key: string, v: unknown): ApplyResult<ConfigChange> {
    const id = parseTaskSuffix(key.slice(TASK.length));
    if (id === undefined) return this.#skip(`record ${key}: not a task key (task-<connector>-<n>); skipped`);
    if (v === null) return this.#skip(`record ${key}: a task config tombstone is not a Connect record; skipped`);
    const read = readProperties(key, v);
    if ('warning' in read) return this.#skip(read.warning);
    let deferred = this.#deferred.get(id.connector);
    if (deferred === undefined) this.#deferred.set(id.connector, (deferred = new Map()));
    deferred.set(id.task, read.properties);
    const change: ConfigChange = { kind: 'task-config-pending', connector: id.connector, task: id.task };
    return read.note === undefined ? { change } : { change, warning: read.note };
  }

  #commit(key: string, name: string, v: unknown, offset: bigint): ApplyResult<ConfigChange> {
    if (!isObject(v)) return this.#skip(notObject(key, v));
    const tasks = v['tasks'];
    if (!isCount(tasks)) return this.#skip(`record ${key}: "tasks" is ${JSON.stringify(tasks)}, not a task count; skipped`);
    const deferred = this.#deferred.get(name);
    // Only the tasks the commit counts must be there: compaction may leave configs of tasks past the count
    // (a connector that shrank), which is not an inconsistency (Connect's completeTaskIdSet).
    let complete = true;
    for (let n = 0; n < tasks && complete; n++) complete = deferred?.has(n) === true;
    if (complete) {
      if (deferred !== undefined) {
        let committed = this.#taskConfigs.get(name);
        if (committed === undefined) this.#taskConfigs.set(name, (committed = new Map()));
        for (const [n, config] of deferred) committed.set(n, config);
      }
      this.#inconsistent.delete(name);
    } else {
      this.#inconsistent.add(name);
    }
    // Applied or not, the pending configs are spent: the next commit needs a fresh, complete set.
    this.#deferred.delete(name);
    this.#taskCounts.set(name, tasks);
    this.#touch(name, offset);
    return { change: { kind: 'tasks-committed', connector: name, taskCount: tasks, inconsistent: !complete } };
  }

  #restartConnector(key: string, name: string, v: unknown, offset: bigint): ApplyResult<ConfigChange> {
    if (!isObject(v)) return this.#skip(notObject(key, v));
    // As Connect: a missing or non-boolean flag defaults to false, and the request still counts.
    const flag = (field: string): boolean | undefined => (typeof v[field] === 'boolean' ? (v[field] as boolean) : undefined);
    const includeTasks = flag('include-tasks');
    const onlyFailed = flag('only-failed');
    const request: ConnectorRestartRequest = { kind: 'connector', connector: name, includeTasks: includeTasks ?? false, onlyFailed: onlyFailed ?? false, offset };
    this.#restarts.set(key, request);
    const change: ConfigChange = { kind: 'restart', request };
    if (includeTasks !== undefined && onlyFailed !== undefined) return { change };
    return { change, warning: `record ${key}: "include-tasks" or "only-failed" is not a boolean; taken as false` };
  }

  #restartTask(key: string, v: unknown, offset: bigint): ApplyResult<ConfigChange> {
    const id = parseTaskSuffix(key.slice(RESTART_TASK.length));
    if (id === undefined) return this.#skip(`record ${key}: not a task restart key (restart-task-<connector>-<n>); skipped`);
    if (!isObject(v)) return this.#skip(notObject(key, v));
    const requestedMs = v['requested-ms'];
    if (typeof requestedMs !== 'number' || !Number.isSafeInteger(requestedMs) || requestedMs < 0) {
      return this.#skip(`record ${key}: "requested-ms" is ${JSON.stringify(requestedMs)}, not a timestamp; skipped`);
    }
    const request: TaskRestartRequest = { kind: 'task', connector: id.connector, task: id.task, requestedMs, offset };
    this.#restarts.set(key, request);
    return { change: { kind: 'restart', request } };
  }

  #loggerLevel(key: string, namespace: string, v: unknown, offset: bigint): ApplyResult<ConfigChange> {
    if (!isObject(v)) return this.#skip(notObject(key, v));
    const level = v['level'];
    if (typeof level !== 'string') return this.#skip(`record ${key}: "level" is a JSON ${kindOf(level)}, not a string; skipped`);
    const entry: LoggerLevelEntry = { namespace, level, offset };
    this.#loggers.set(namespace, entry);
    return { change: { kind: 'logger-level', entry } };
  }

  /** The connector as the topic defines it; undefined when it has no config (never created, or deleted). */
  connector(name: string): ConnectorEntry | undefined {
    const config = this.#configs.get(name);
    if (config === undefined) return undefined;
    const taskCount = this.#taskCounts.get(name) ?? 0;
    const inconsistent = this.#inconsistent.has(name);
    const committed = this.#taskConfigs.get(name);
    const taskConfigs: Properties[] = [];
    if (!inconsistent) {
      for (let n = 0; n < taskCount; n++) {
        const c = committed?.get(n);
        // Cannot be missing after a complete commit; kept total so a reader never sees holes.
        if (c === undefined) break;
        taskConfigs.push(c);
      }
    }
    return { name, config, target: this.#targets.get(name) ?? 'STARTED', taskCount, taskConfigs, inconsistent, lastOffset: this.#lastOffsets.get(name) ?? -1n };
  }

  /** Every connector with a config, by name. */
  connectorNames(): string[] {
    return [...this.#configs.keys()].sort();
  }

  connectors(): ConnectorEntry[] {
    return this.connectorNames().map((n) => this.connector(n) as ConnectorEntry);
  }

  /** The latest restart request per key, in offset order; `after`: only those at or past that offset. */
  restartRequests(after = -1n): RestartRequest[] {
    return [...this.#restarts.values()].filter((r) => r.offset >= after).sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
  }

  /** Cluster-scoped logger levels (`PUT /admin/loggers/{l}?scope=cluster`), the latest per namespace. */
  loggerLevels(): LoggerLevelEntry[] {
    return [...this.#loggers.values()].sort((a, b) => (a.offset < b.offset ? -1 : 1));
  }

  /** The highest offset folded in so far (-1 before any). */
  get offset(): bigint {
    return this.#offset;
  }

  /** Records with keys this snapshot does not use (another Connect feature's, e.g. session-key). */
  get ignoredRecords(): number {
    return this.#ignored;
  }

  /** Records skipped because their value could not be read. */
  get malformedRecords(): number {
    return this.#malformed;
  }
}

// ---------------------------------------------------------------------------------------------------
// The status topic
// ---------------------------------------------------------------------------------------------------

const STATUS_CONNECTOR = 'status-connector-';
const STATUS_TASK = 'status-task-';

export const statusKeys = {
  connector: (name: string): string => STATUS_CONNECTOR + name,
  task: (name: string, task: number): string => `${STATUS_TASK}${name}-${task}`,
};

/** A connector's or task's status as a worker reported it. */
export interface Status {
  readonly state: ConnectorRunState;
  /** The failure's trace; null when there is none. */
  readonly trace: string | null;
  /** `<rest.advertised.host.name>:<rest.advertised.port>` of the worker that wrote it. */
  readonly workerId: string;
  /** The writer's group generation: a stale worker's write must not replace a newer owner's (see `canWriteSafely`). */
  readonly generation: number;
  /** KIP-891 [4.1+]: the plugin version, when the writer reports one. */
  readonly version?: string;
}

export interface StatusEntry extends Status {
  readonly partition: number;
  readonly offset: bigint;
}

/**
 * `{"state", "trace", "worker_id", "generation"}` in Connect's field order; trace is null when there is none
 * (JsonConverter writes a null optional field as null).
 */
function statusValue(status: Status): JsonObject {
  const value: Record<string, JsonValue> = { state: status.state, trace: status.trace, worker_id: status.workerId, generation: status.generation };
  if (status.version !== undefined) value['version'] = status.version;
  return value;
}

export function encodeConnectorStatus(name: string, status: Status): StateEntry {
  return { key: statusKeys.connector(name), value: statusValue(status) };
}

export function encodeTaskStatus(name: string, task: number, status: Status): StateEntry {
  return { key: statusKeys.task(name, task), value: statusValue(status) };
}

/** A deleted connector's status (Connect writes a tombstone for DESTROYED); readers drop its task statuses with it. */
export function encodeConnectorStatusRemoval(name: string): StateEntry {
  return { key: statusKeys.connector(name), value: null };
}

export function encodeTaskStatusRemoval(name: string, task: number): StateEntry {
  return { key: statusKeys.task(name, task), value: null };
}

/**
 * Connect's rule for a status write (KafkaStatusBackingStore.CacheEntry.canWriteSafely): allowed when nothing
 * is known, when the same worker wrote the current one, or when the writer's generation is not older.
 */
export function canWriteSafely(current: Status | undefined, next: Pick<Status, 'workerId' | 'generation'>): boolean {
  return current === undefined || current.workerId === next.workerId || current.generation <= next.generation;
}

const RUN_STATES: ReadonlySet<string> = new Set<ConnectorRunState>(['UNASSIGNED', 'RUNNING', 'PAUSED', 'STOPPED', 'FAILED', 'RESTARTING']);

export type StatusChange =
  | { readonly kind: 'connector-status'; readonly connector: string; readonly status: StatusEntry | null }
  | { readonly kind: 'task-status'; readonly connector: string; readonly task: number; readonly status: StatusEntry | null }
  | { readonly kind: 'ignored'; readonly key: string };

function readStatus(key: string, v: unknown, partition: number, offset: bigint): StatusEntry | string {
  if (!isObject(v)) return notObject(key, v);
  const { state, trace, worker_id: workerId, generation, version } = v;
  if (typeof state !== 'string' || !RUN_STATES.has(state)) return `record ${key}: "state" is ${JSON.stringify(state)}, not a status state; skipped`;
  if (trace !== undefined && trace !== null && typeof trace !== 'string') return `record ${key}: "trace" is a JSON ${kindOf(trace)}, not a string; skipped`;
  if (typeof workerId !== 'string') return `record ${key}: "worker_id" is a JSON ${kindOf(workerId)}, not a string; skipped`;
  if (typeof generation !== 'number' || !Number.isInteger(generation) || Math.abs(generation) > 0x7fffffff) {
    return `record ${key}: "generation" is ${JSON.stringify(generation)}, not an int32; skipped`;
  }
  const entry = { state: state as ConnectorRunState, trace: trace ?? null, workerId, generation, partition, offset };
  return typeof version === 'string' ? { ...entry, version } : entry;
}

/**
 * The status topic folded: the latest status per key, a tombstone deletes it, and a connector's tombstone
 * deletes its task statuses too (as Connect's KafkaStatusBackingStore). The topic has several partitions,
 * so the order holds per key, not across keys. `status-topic-*` records (active-topic tracking) are ignored
 * and counted.
 */
export class StatusSnapshot {
  readonly #connectors = new Map<string, StatusEntry>();
  readonly #tasks = new Map<string, Map<number, StatusEntry>>();
  #ignored = 0;
  #malformed = 0;

  apply(key: string, value: string | null, partition: number, offset: bigint): ApplyResult<StatusChange> {
    let parsed: unknown = null;
    if (value !== null) {
      const p = parseJson(key, value);
      if (!p.ok) return this.#skip(p.warning);
      parsed = p.value;
    }
    if (key.startsWith(STATUS_CONNECTOR)) {
      const name = key.slice(STATUS_CONNECTOR.length);
      if (name === '') return this.#skip(`record ${key}: no connector name; skipped`);
      if (parsed === null) {
        this.#connectors.delete(name);
        this.#tasks.delete(name);
        return { change: { kind: 'connector-status', connector: name, status: null } };
      }
      const status = readStatus(key, parsed, partition, offset);
      if (typeof status === 'string') return this.#skip(status);
      this.#connectors.set(name, status);
      return { change: { kind: 'connector-status', connector: name, status } };
    }
    if (key.startsWith(STATUS_TASK)) {
      const id = parseTaskSuffix(key.slice(STATUS_TASK.length));
      if (id === undefined) return this.#skip(`record ${key}: not a task status key (status-task-<connector>-<n>); skipped`);
      if (parsed === null) {
        this.#tasks.get(id.connector)?.delete(id.task);
        return { change: { kind: 'task-status', connector: id.connector, task: id.task, status: null } };
      }
      const status = readStatus(key, parsed, partition, offset);
      if (typeof status === 'string') return this.#skip(status);
      let tasks = this.#tasks.get(id.connector);
      if (tasks === undefined) this.#tasks.set(id.connector, (tasks = new Map()));
      tasks.set(id.task, status);
      return { change: { kind: 'task-status', connector: id.connector, task: id.task, status } };
    }
    this.#ignored++;
    return { change: { kind: 'ignored', key } };
  }

  #skip(warning: string): ApplyResult<StatusChange> {
    this.#malformed++;
    return { change: null, warning };
  }

  connector(name: string): StatusEntry | undefined {
    return this.#connectors.get(name);
  }

  task(name: string, task: number): StatusEntry | undefined {
    return this.#tasks.get(name)?.get(task);
  }

  /** The connector's task statuses, by task id. */
  tasks(name: string): { readonly task: number; readonly status: StatusEntry }[] {
    return [...(this.#tasks.get(name) ?? new Map<number, StatusEntry>())].map(([task, status]) => ({ task, status })).sort((a, b) => a.task - b.task);
  }

  /** Connectors with a connector status or a task status. */
  connectorNames(): string[] {
    const names = new Set([...this.#connectors.keys(), ...[...this.#tasks].filter(([, t]) => t.size > 0).map(([n]) => n)]);
    return [...names].sort();
  }

  get ignoredRecords(): number {
    return this.#ignored;
  }

  get malformedRecords(): number {
    return this.#malformed;
  }
}
