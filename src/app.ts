/**
 * The composition root (docs/architecture.md, "Layout"): the one module that builds technology adapters —
 * Kafka over @confluentinc/kafka-javascript (consume/confluent/), the Schema Registry over
 * @kafkajs/confluent-schema-registry (decode/registry/), the REST and SQL catalogs (commit/rest|sql/),
 * S3 and local object stores (upload/s3|local/), pino behind the Logger port — from configuration or plain
 * options, hands them as ports to the code that uses them (the standalone worker, its task processes and
 * committers), and closes them afterwards. Entry points (cli.ts, main.ts) reach src/ through here. The
 * test-data generator is not wired here: it is a tool with its own composition (tools/generate/index.ts).
 *
 * Owns: adapter construction and lifetimes. Must not: read process.env or argv (the entry points do and
 * pass plain options in), or hold logic a stage could own.
 */
import { ConfluentControlTopicReader, ConfluentKafkaAdmin, ConfluentKafkaSource, ConfluentTransactionalProducer } from './consume/confluent/index.ts';
import type { ClientSettings } from './consume/confluent/index.ts';
import { sourceOffsetReset } from './consume/confluent/index.ts';
import { ConfluentSchemaResolver, registryOptionsFromConverterProps } from './decode/registry/schema-registry.ts';
import { fork } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { ConfigError, errorMessage, FatalError, IcefloeError, RetriableError } from './core/errors.ts';
import type { Logger } from './core/log.ts';
import { JSON_LOGS, PLAIN_ENVIRONMENT, prettyFromJson, resolveLogOutput } from './core/log-format.ts';
import type { LogEnvironment, LogOutput } from './core/log-format.ts';
import { parseConnectorConfig } from './config/connector-config.ts';
import type { CatalogConfig, ConnectorConfig } from './config/connector-config.ts';
import { effectiveConverter } from './config/converters.ts';
import { parseConnectorFile, parseWorkerProperties, standaloneIgnoredKeys, validateWorkerConfig } from './config/worker-config.ts';
import { runPositionsTool } from './coordinate/positions-tool.ts';
import type { PositionsAction, PositionsReport } from './coordinate/positions-tool.ts';
import { replayTable } from './coordinate/replay.ts';
import type { ReplayReport } from './coordinate/replay.ts';
import type { WorkerConfig } from './config/worker-config.ts';
import type { Catalog } from './commit/port.ts';
import { RestCatalog } from './commit/rest/catalog.ts';
import type { RestAuthConfig } from './commit/rest/auth.ts';
import { SqlCatalog } from './commit/sql/catalog.ts';
import { PostgresDriver } from './commit/sql/postgres.ts';
import { SqliteDriver } from './commit/sql/sqlite.ts';
import { LocalObjectStore } from './upload/local/store.ts';
import type { ObjectStore } from './upload/port.ts';
import { SchemeRouterStore } from './upload/scheme-router.ts';
import { ConnectorCommitter } from './coordinate/committer.ts';
import { prepareControlTopic, prepareDeadLetterTopic } from './app/topics.ts';
import { replayDeadLetters, replayGroup } from './runtime/dead-letter-replay.ts';
import type { DeadLetterReplayReport } from './runtime/dead-letter-replay.ts';
import { armCrashPoints } from './core/crash-points.ts';
export { parseCrashSpec } from './core/crash-points.ts';
import type { CrashPoints, CrashSpec } from './core/crash-points.ts';
import { valueFormat } from './decode/value-format.ts';
import { SinkTask } from './runtime/task.ts';
import { runTaskChild as runTaskProcess, taskProcessHandle } from './runtime/task-process.ts';
import type { ParentMessage } from './runtime/task-process.ts';
import { CallTracker, taskStallBound } from './runtime/watchdog.ts';
import { DEFAULT_SESSION_TIMEOUT_MS, checkTaskIdsFree, lingerMs, taskClientId } from './runtime/task-ids.ts';
import { StandaloneWorker } from './runtime/worker.ts';
import { StandaloneHerder } from './runtime/herder.ts';
import type { OffsetsPort, TablesPort } from './runtime/herder.ts';
import { ConnectorPlugins } from './runtime/connector-plugins.ts';
import { alterConnectorOffsets, connectorOffsets, resetConnectorOffsets } from './runtime/connector-offsets.ts';
import type { OffsetsDeps } from './runtime/connector-offsets.ts';
import { checkStartConfig, validateConfig, validateForWrite } from './runtime/connector-validation.ts';
import type { ValidationDeps } from './runtime/connector-validation.ts';
import { catalogProbe } from './runtime/catalog-probe.ts';
import { LoggerLevels, LogLevelTracker } from './runtime/loggers.ts';
import type { PinoLevel } from './runtime/loggers.ts';
import { providerIO } from './runtime/provider-io.ts';
import { configProviders, resolveConfig } from './config/config-providers.ts';
import type { ServerInfo } from './runtime/herder-api.ts';
import { FileConnectorStore } from './runtime/connector-store.ts';
import { buildServer } from './rest/server.ts';
import { basicAuthFromProperties } from './rest/auth.ts';
import { startRestListeners } from './rest/listeners.ts';
import type { RestListeners } from './rest/listeners.ts';
import { hostname } from 'node:os';
export { failureSummary } from './runtime/worker.ts';
import type { OpenCommitter, TaskHandle } from './runtime/worker.ts';
import type { ClusterParts } from './app/cluster.ts';
import { taskForkOptions } from './app/task-fork.ts';

// ---------------------------------------------------------------------------------------------------
// Logging
// ---------------------------------------------------------------------------------------------------

/**
 * The Logger port over pino, writing synchronously to fd 2 (a worker's last lines are out before it exits).
 * JSON lines as pino writes them, or each line turned into a pretty one (core/log-format.ts) on its way to
 * the same synchronous destination; pretty lines leave out the process id (task=… tells the processes apart).
 */
export function createLogger(level: string = 'info', bindings: Record<string, unknown> = {}, output: LogOutput = JSON_LOGS, tracker?: LogLevelTracker): Logger {
  const fd2 = pino.destination({ fd: 2, sync: true });
  const base =
    output.format === 'json'
      ? pino({ level, base: { pid: process.pid, ...bindings } }, fd2)
      : pino({ level, base: { ...bindings } }, { write: (line: string) => fd2.write(`${prettyFromJson(line, { colour: output.colour })}\n`) });
  // Each pino logger is tracked with its accumulated bindings: PUT /admin/loggers sets its category's level.
  const wrap = (p: pino.Logger, bound: Record<string, unknown>): Logger => {
    tracker?.track(p, bound);
    return {
      debug: (m, f) => p.debug(f ?? {}, m),
      info: (m, f) => p.info(f ?? {}, m),
      warn: (m, f) => p.warn(f ?? {}, m),
      error: (m, f) => p.error(f ?? {}, m),
      child: (f) => wrap(p.child(f), { ...bound, ...f }),
    };
  };
  return wrap(base, bindings);
}

/**
 * Crash points die by SIGKILL after writing their line synchronously (nothing may run after them). With
 * the `throw` action the point raises an exception from the event loop, where nothing catches it; the
 * code at the point meanwhile gets a retriable error (it must not go on as if nothing happened).
 */
function crashPoints(spec: CrashSpec | undefined): CrashPoints {
  return armCrashPoints(spec, (line) => {
    if (spec?.action === 'throw') {
      const text = line.replace('killing the process', 'throwing an uncaught exception');
      process.stderr.write(`${text}\n`);
      setImmediate(() => {
        throw new Error(text);
      });
      throw new RetriableError(text);
    }
    if (spec?.action === 'stop') {
      // Frozen here, as a GC pause or a stalled VM would freeze it, until the test sends SIGCONT.
      process.stderr.write(`${line.replace('killing the process', 'stopping the process (SIGSTOP)')}\n`);
      process.kill(process.pid, 'SIGSTOP');
      return;
    }
    process.stderr.write(`${line}\n`);
    process.kill(process.pid, 'SIGKILL');
    throw new Error('unreachable: SIGKILL did not stop the process');
  }, (line) => process.stderr.write(`${line}\n`)); // a stall point: the line, then the call hangs
}

// ---------------------------------------------------------------------------------------------------
// Adapters from configuration
// ---------------------------------------------------------------------------------------------------

function workerKafkaSettings(worker: WorkerConfig, extra: Readonly<Record<string, string>>): ClientSettings {
  return { 'bootstrap.servers': worker.bootstrapServers.join(','), ...worker.clientSecurity, ...extra };
}

/** The object store for a catalog's locations: S3 (with the catalog's s3.* settings) and local files. */
function objectStore(catalog: CatalogConfig): ObjectStore {
  const s3 = catalog.s3;
  const keys = s3.accessKeyId !== null && s3.secretAccessKey !== null;
  return new SchemeRouterStore({
    // Loaded on the first s3:// location: the AWS SDK costs ~0.2 CPU-s of every process's start otherwise.
    s3: async () => new (await import('./upload/s3/store.ts')).S3ObjectStore({
      region: s3.region ?? 'us-east-1',
      ...(s3.endpoint === null ? {} : { endpoint: s3.endpoint }),
      forcePathStyle: s3.pathStyleAccess, ...(s3.requestTimeoutMs === null ? {} : { requestTimeoutMs: s3.requestTimeoutMs }),
      ...(keys
        ? {
            credentials: {
              accessKeyId: s3.accessKeyId ?? '',
              secretAccessKey: s3.secretAccessKey?.reveal() ?? '',
              ...(s3.sessionToken === null ? {} : { sessionToken: s3.sessionToken.reveal() }),
            },
          }
        : {}),
    }),
    file: new LocalObjectStore(),
  });
}

function restAuth(c: CatalogConfig): RestAuthConfig {
  if (c.token !== null) return { type: 'bearer', token: c.token.reveal() };
  if (c.credential !== null) {
    const text = c.credential.reveal();
    const colon = text.indexOf(':');
    return {
      type: 'oauth2',
      clientId: colon < 0 ? '' : text.slice(0, colon),
      clientSecret: colon < 0 ? text : text.slice(colon + 1),
      ...(c.props['oauth2-server-uri'] === undefined ? {} : { tokenEndpoint: c.props['oauth2-server-uri'] }),
      ...(c.props['scope'] === undefined ? {} : { scope: c.props['scope'] }),
    };
  }
  return { type: 'none' };
}

function catalogFor(c: CatalogConfig, store: ObjectStore, probe = false): Catalog {
  if (c.type === 'rest') {
    // A validation probe asks once, inside its time box: retries would hide the real cause behind a time-out.
    const quick = probe ? { readRetry: { maxAttempts: 1 }, requestTimeoutMs: 3_000 } : {};
    return new RestCatalog({ uri: c.uri, name: c.name, ...(c.warehouse === null ? {} : { warehouse: c.warehouse }), auth: restAuth(c), properties: c.props, ...quick });
  }
  const warehouse = c.warehouse;
  if (warehouse === null) throw new ConfigError('iceberg.catalog.warehouse is required for a SQL catalog');
  const sqlite = /^(?:jdbc:)?sqlite:(.+)$/.exec(c.uri);
  if (sqlite !== null) {
    const path = sqlite[1] as string;
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true }); // the embedded default needs nothing set up
    return new SqlCatalog({ name: c.name, driver: new SqliteDriver({ path }), store, warehouse });
  }
  const pg = /^(?:jdbc:)?(postgresql:\/\/.+)$/.exec(c.uri);
  if (pg === null) throw new ConfigError(`iceberg.catalog.uri ${c.uri} is neither jdbc:sqlite:<file> nor jdbc:postgresql://...`);
  const url = new URL(pg[1] as string);
  const user = c.props['jdbc.user'];
  const password = c.props['jdbc.password'];
  if (user !== undefined) url.username = encodeURIComponent(user);
  if (password !== undefined) url.password = encodeURIComponent(password);
  return new SqlCatalog({ name: c.name, driver: new PostgresDriver({ connectionString: url.toString() }), store, warehouse });
}

// ---------------------------------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------------------------------

export interface TaskSpec {
  readonly workerProps: Record<string, string>;
  readonly baseDir: string;
  readonly connector: Record<string, string>;
  readonly taskId: number;
  readonly crash: CrashSpec | undefined;
  readonly logLevel: string;
  /** Decided once by the worker: the task process writes to the worker's stderr, which it inherits. */
  readonly logOutput: LogOutput;
  /** task.shutdown.graceful.timeout.ms (an orphaned task process stops within it, at most 10 s). */
  readonly shutdownTimeoutMs: number;
  /** Distributed mode: a fenced task may be restarted (SinkTaskDeps.restartFenced). */
  readonly restartFenced?: boolean;
}

function loadConnector(spec: Pick<TaskSpec, 'workerProps' | 'baseDir' | 'connector'>): { worker: WorkerConfig; connector: ConnectorConfig } {
  const worker = parseWorkerPropertiesMap(spec.workerProps, spec.baseDir);
  const connector = parseConnectorConfig(spec.connector, worker.defaultCatalogProps === undefined ? {} : { defaultCatalog: worker.defaultCatalogProps });
  return { worker, connector };
}

function parseWorkerPropertiesMap(props: Record<string, string>, baseDir: string): WorkerConfig {
  const v = validateWorkerConfig(props, { baseDir });
  if (v.config === null) throw new ConfigError(`worker properties are invalid: ${[...v.errors.values()].flat().join('; ')}`);
  return v.config;
}

/** Runs one task in this process until `stop()`; every client it opens is closed when it ends. */
export async function startTaskInProcess(spec: TaskSpec, log: Logger, onAnnounced: () => void): Promise<{ task: SinkTask; done: Promise<void> }> {
  const { worker, connector } = loadConnector(spec);
  const crash = crashPoints(spec.crash);
  const settings = workerKafkaSettings(worker, {});
  const store = objectStore(connector.catalog);
  const catalog = catalogFor(connector.catalog, store);
  const valueConverter = effectiveConverter(connector.valueConverter, worker.valueConverter);
  const keyConverter = effectiveConverter(connector.keyConverter, worker.keyConverter);
  // The task's calls, for its watchdog: the registry's here, Kafka's, the store's and the catalog's in the task.
  const calls = new CallTracker();
  const resolver = valueConverter.schemaRegistryUrls.length === 0 ? undefined : calls.wrap('registry', new ConfluentSchemaResolver(registryOptionsFromConverterProps(valueConverter.props)));
  const source = await ConfluentKafkaSource.connect({
    settings: { ...settings, ...worker.consumerProps },
    overrides: connector.consumerOverrides,
    groupId: connector.groupId,
    clientId: taskClientId(connector.name, spec.taskId),
    log,
  });
  const producer = await ConfluentTransactionalProducer.connect({
    settings: { ...settings, ...worker.producerProps, ...connector.control.kafkaProps },
    overrides: connector.producerOverrides,
    transactionalId: `${connector.control.transactionalPrefix}${connector.name}-${spec.taskId}`,
    clientId: `${connector.name}-${spec.taskId}-tx`,
  });
  const task = new SinkTask({
    ...(spec.restartFenced === true ? { restartFenced: true } : {}),
    connector,
    taskId: spec.taskId,
    source,
    producer,
    catalog,
    store,
    format: valueFormat(valueConverter, resolver, { caseInsensitive: connector.tables.caseInsensitive, forceOptional: connector.tables.forceOptional, evolveSchema: connector.tables.evolveSchema }),
    keyConverter: keyConverter.kind,
    valueConverterClass: valueConverter.className,
    crash,
    log,
    onAnnounced,
    calls, stallBound: taskStallBound(worker, connector),
  });
  const close = (): Promise<unknown> => Promise.all([catalog.close().catch(() => undefined), store.close().catch(() => undefined)]);
  // A stuck task's clients may be what is stuck: their close is not waited for (watchdog.ts).
  const done = task.run().finally(() => (task.endedStuck ? void close() : close()));
  return { task, done };
}

const CLI_PATH = resolvePath(dirname(fileURLToPath(import.meta.url)), 'cli.ts');

/** A task as a child process (`icefloe task`), spec over IPC (never argv: the config may hold secrets). */
function startTaskProcess(spec: TaskSpec, log: Logger, onAnnounced: () => void, stallBoundMs: number): TaskHandle {
  const child = fork(CLI_PATH, ['task'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced', ...taskForkOptions() });
  child.send({ type: 'start', spec } satisfies ParentMessage<TaskSpec>);
  return taskProcessHandle(spec.taskId, child, log, onAnnounced, stallBoundMs);
}

/** `icefloe task`: the child side of startTaskProcess (runtime/task-process.ts: when and how it exits). */
export function runTaskChild(): Promise<number> {
  const tracker: { current?: LogLevelTracker } = {};
  return runTaskProcess<TaskSpec>({
    logger: (spec) => createLogger(spec.logLevel, { task: spec.taskId }, spec.logOutput, (tracker.current = new LogLevelTracker(spec.logLevel as PinoLevel))),
    setLogLevel: (level) => tracker.current?.apply({ worker: level as PinoLevel, connector: level as PinoLevel, task: level as PinoLevel, committer: level as PinoLevel }),
    start: (spec, log, onAnnounced) => startTaskInProcess(spec, log, onAnnounced),
    orphanStopMs: (spec) => spec.shutdownTimeoutMs,
  });
}

// ---------------------------------------------------------------------------------------------------
// The standalone worker
// ---------------------------------------------------------------------------------------------------

export interface PositionsCommandOptions {
  readonly workerPropertiesPath: string;
  readonly connectorPath: string;
  readonly cwd: string;
  readonly table: string;
  readonly action: PositionsAction;
  /** --adopt: the table holds the source records below the connector's group offsets (positions-tool.ts). */
  readonly holdsGroupOffsets?: boolean;
  /** ICEFLOE_LOG_FORMAT, NO_COLOR and whether stderr is a terminal (core/log-format.ts); default: none, not a terminal. */
  readonly logEnvironment?: LogEnvironment;
}

/** `icefloe positions`: show, re-apply or adopt one table's control positions (coordinate/positions-tool.ts). */
export function runPositions(options: PositionsCommandOptions): Promise<PositionsReport> {
  return withConnectorTools(options, (deps) => runPositionsTool(deps, options.table, options.action, { holdsGroupOffsets: options.holdsGroupOffsets === true }));
}

/**
 * What the table tools (`positions`, `replay`) run with: the connector of a worker properties file and a
 * connector file, its admin client, catalog and store, closed afterwards.
 */
async function withConnectorTools<T>(
  options: { readonly workerPropertiesPath: string; readonly connectorPath: string; readonly cwd: string; readonly logEnvironment?: LogEnvironment },
  run: (deps: { connector: ConnectorConfig; admin: ConfluentKafkaAdmin; catalog: Catalog; store: ObjectStore; log: Logger }) => Promise<T>,
): Promise<T> {
  const { worker, log, connector } = loadToolFiles(options);
  return withConnectorClients(workerKafkaSettings(worker, worker.adminProps), connector, (c) => run({ connector, ...c, log }));
}

/** A tool's worker properties and connector file, and a logger for warnings. */
function loadToolFiles(options: { readonly workerPropertiesPath: string; readonly connectorPath: string; readonly cwd: string; readonly logEnvironment?: LogEnvironment }): { worker: WorkerConfig; log: Logger; connector: ConnectorConfig } {
  const worker = parseWorkerProperties(readFileSync(resolvePath(options.cwd, options.workerPropertiesPath), 'utf8'), { baseDir: options.cwd });
  const log = createLogger('warn', {}, resolveLogOutput(worker.logFormat, options.logEnvironment ?? PLAIN_ENVIRONMENT));
  const file = parseConnectorFile(readFileSync(resolvePath(options.cwd, options.connectorPath), 'utf8'), options.connectorPath);
  return { worker, log, connector: parseConnectorConfig(file.config, worker.defaultCatalogProps === undefined ? {} : { defaultCatalog: worker.defaultCatalogProps }) };
}

/** The clients a table or offsets operation on one connector needs: its admin client, catalog and store, closed afterwards. */
async function withConnectorClients<T>(settings: ClientSettings, connector: ConnectorConfig, run: (clients: { admin: ConfluentKafkaAdmin; catalog: Catalog; store: ObjectStore }) => Promise<T>): Promise<T> {
  const admin = await ConfluentKafkaAdmin.connect({ settings, overrides: connector.adminOverrides });
  const store = objectStore(connector.catalog);
  const catalog = catalogFor(connector.catalog, store);
  try {
    return await run({ admin, catalog, store });
  } finally {
    await admin.close().catch(() => undefined);
    await catalog.close().catch(() => undefined);
    await store.close().catch(() => undefined);
  }
}

export interface ReplayCommandOptions {
  readonly workerPropertiesPath: string;
  readonly connectorPath: string;
  readonly cwd: string;
  readonly table: string;
  readonly snapshotId: bigint;
  /** ICEFLOE_LOG_FORMAT, NO_COLOR and whether stderr is a terminal (core/log-format.ts); default: none, not a terminal. */
  readonly logEnvironment?: LogEnvironment;
}

/** `icefloe replay`: roll a table back to a snapshot and the connector's offsets with it (coordinate/replay.ts). */
export function runReplay(options: ReplayCommandOptions): Promise<ReplayReport> {
  return withConnectorTools(options, (deps) => replayTable(deps, options.table, options.snapshotId));
}

export interface DeadLetterReplayOptions {
  readonly workerPropertiesPath: string;
  readonly connectorPath: string;
  readonly cwd: string;
  readonly toTopic?: string;
  readonly dryRun: boolean;
  /** ICEFLOE_LOG_FORMAT, NO_COLOR and whether stderr is a terminal (core/log-format.ts); default: none, not a terminal. */
  readonly logEnvironment?: LogEnvironment;
}

/** `icefloe dead-letters replay`: the dead-letter topic's records back to their topics, exactly once (runtime/dead-letter-replay.ts). */
export async function runDeadLetterReplay(options: DeadLetterReplayOptions): Promise<DeadLetterReplayReport> {
  const { worker, log, connector } = loadToolFiles(options);
  const settings = workerKafkaSettings(worker, {});
  const group = replayGroup(connector.name);
  const admin = await ConfluentKafkaAdmin.connect({ settings: { ...settings, ...worker.adminProps }, overrides: connector.adminOverrides });
  const consumer = { ...settings, ...worker.consumerProps, 'isolation.level': 'read_committed', 'auto.offset.reset': 'earliest' };
  const source = await ConfluentKafkaSource.connect({ settings: consumer, overrides: {}, groupId: group, clientId: group, log });
  const producer = await ConfluentTransactionalProducer.connect({ settings: { ...settings, ...worker.producerProps }, overrides: connector.producerOverrides, transactionalId: group, clientId: group });
  try {
    return await replayDeadLetters({ connector, admin, source, producer, ...(options.toTopic === undefined ? {} : { toTopic: options.toTopic }), dryRun: options.dryRun, log });
  } finally {
    await source.close().catch(() => undefined);
    await producer.close().catch(() => undefined);
    await admin.close().catch(() => undefined);
  }
}

export interface StandaloneOptions {
  readonly workerPropertiesPath: string;
  readonly connectorPaths: readonly string[];
  readonly cwd: string;
  readonly crash: CrashSpec | undefined;
  readonly logLevel?: string;
  /** ICEFLOE_LOG_FORMAT, NO_COLOR and whether stderr is a terminal (core/log-format.ts); default: none, not a terminal. */
  readonly logEnvironment?: LogEnvironment;
  /** --exit-on-failure: a connector that cannot start ends the worker (otherwise its status says FAILED). */
  readonly exitOnFailure?: boolean;
  /** The environment `${env:...}` config references read (the entry point passes process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}


/**
 * Refuses to start a connector's tasks while another live process runs one of their ids (runtime/task-ids.ts):
 * a dead predecessor's members are waited out for up to a session time-out and a half.
 */
async function checkTaskIds(admin: ConfluentKafkaAdmin, worker: WorkerConfig, c: ConnectorConfig, log: Logger): Promise<void> {
  const session = Number(c.consumerOverrides['session.timeout.ms'] ?? worker.consumerProps['session.timeout.ms'] ?? DEFAULT_SESSION_TIMEOUT_MS);
  await checkTaskIdsFree({
    inspector: admin,
    connector: c.name,
    groupId: c.groupId,
    taskIds: Array.from({ length: c.tasksMax }, (_, n) => n + worker.taskIdOffset),
    idOffset: worker.taskIdOffset,
    transactionalIdOf: (id) => `${c.control.transactionalPrefix}${c.name}-${id}`,
    waitMs: lingerMs(Number.isFinite(session) && session > 0 ? session : DEFAULT_SESSION_TIMEOUT_MS),
    log,
  });
}

/** A running standalone worker: the herder the REST API drives, over the worker that runs the tasks. */
export interface Standalone {
  readonly worker: StandaloneWorker;
  readonly herder: StandaloneHerder;
  readonly rest: RestListeners;
  /** Stops serving and every connector (their last cycles commit). */
  stop(): Promise<void>;
  /** icefloe.shutdown.timeout.ms: how long `stop` may take before the process gives up on it. */
  readonly shutdownTimeoutMs: number;
}

// ---------------------------------------------------------------------------------------------------
// The herder's ports
// ---------------------------------------------------------------------------------------------------

/** The Connect REST API level Icefloe answers as (kcctl and others gate features on it: connect-rest.md §0.6). */
const CONNECT_API_VERSION = '3.9.0';

/**
 * The offsets API of a sink (runtime/connector-offsets.ts): the consumer group's offsets, changed only
 * where every table of the connector stays consistent with them.
 */
function herderOffsets(worker: WorkerConfig, settings: ClientSettings, log: Logger): OffsetsPort {
  const withDeps = <T>(c: ConnectorConfig, f: (deps: OffsetsDeps) => Promise<T>): Promise<T> => {
    const offsetReset = sourceOffsetReset(worker.consumerProps, c.consumerOverrides);
    return withConnectorClients(settings, c, ({ admin, catalog }) => f({ admin, catalog, log: log.child({ connector: c.name }), ...(offsetReset === undefined ? {} : { offsetReset }) }));
  };
  return {
    read: (c) => withDeps(c, (d) => connectorOffsets(d.admin, c)),
    alter: (c, offsets) => withDeps(c, (d) => alterConnectorOffsets(d, c, offsets)),
    reset: (c) => withDeps(c, (d) => resetConnectorOffsets(d, c)),
  };
}

/**
 * The Iceberg operations on a stopped connector's table (`POST /connectors/{c}/iceberg/tables/{t}/replay`
 * and `/adopt`): `icefloe replay` and `icefloe positions --adopt` over the connector's stored config, with
 * their own clients, closed after each request.
 */
function herderTables(settings: ClientSettings, log: Logger): TablesPort {
  type ToolDeps = { connector: ConnectorConfig; admin: ConfluentKafkaAdmin; catalog: Catalog; store: ObjectStore; log: Logger };
  const withDeps = <T>(c: ConnectorConfig, f: (d: ToolDeps) => Promise<T>): Promise<T> =>
    withConnectorClients(settings, c, (clients) => f({ connector: c, ...clients, log: log.child({ connector: c.name }) }));
  return {
    replay: (c, table, snapshotId) => withDeps(c, (d) => replayTable(d, table, snapshotId)),
    adopt: (c, table, options) => withDeps(c, (d) => runPositionsTool(d, table, 'adopt', { holdsGroupOffsets: options.holdsGroupOffsets })),
  };
}

/** The package version (the Icefloe plugin's version in GET /connector-plugins). */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(resolvePath(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** GET /: the API level, this build's commit, and the id of the Kafka cluster the worker consumes from. */
async function serverInfo(settings: ClientSettings): Promise<ServerInfo> {
  const admin = await ConfluentKafkaAdmin.connect({ settings });
  let clusterId: string;
  try {
    clusterId = await admin.clusterId();
  } finally {
    await admin.close().catch(() => undefined);
  }
  return { version: CONNECT_API_VERSION, commit: buildCommit(), kafka_cluster_id: clusterId };
}

/** The git commit this code was checked out at (16 hex, as Kafka shows its own), or `unknown` outside a checkout. */
function buildCommit(): string {
  try {
    const root = resolvePath(dirname(fileURLToPath(import.meta.url)), '..');
    let gitDir = resolvePath(root, '.git');
    // A worktree's .git is a file naming its git directory; its branches live in the common directory.
    if (statSync(gitDir).isFile()) gitDir = resolvePath(root, readFileSync(gitDir, 'utf8').replace(/^gitdir:\s*/, '').trim());
    const common = existsSync(resolvePath(gitDir, 'commondir')) ? resolvePath(gitDir, readFileSync(resolvePath(gitDir, 'commondir'), 'utf8').trim()) : gitDir;
    const head = readFileSync(resolvePath(gitDir, 'HEAD'), 'utf8').trim();
    let sha = head;
    if (head.startsWith('ref: ')) {
      const ref = head.slice(5);
      const loose = [resolvePath(gitDir, ref), resolvePath(common, ref)].find((f) => existsSync(f));
      sha = loose !== undefined ? readFileSync(loose, 'utf8').trim() : (readFileSync(resolvePath(common, 'packed-refs'), 'utf8').split('\n').find((l) => l.endsWith(` ${ref}`))?.split(' ')[0] ?? '');
    }
    return /^[0-9a-f]{40}$/.test(sha) ? sha.slice(0, 16) : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The Kafka Connect REST API on the worker's `listeners` (rest/): bound, logged, ready to serve. */
async function serveRest(herder: StandaloneHerder, worker: WorkerConfig, log: Logger): Promise<RestListeners> {
  const r = worker.rest;
  const auth = r.basicAuthFile === null ? undefined : basicAuthFromProperties(readFileSync(r.basicAuthFile, 'utf8'), r.basicAuthFile);
  const server = buildServer(herder, {
    topicTracking: r.topicTracking,
    adminEndpoints: r.adminEndpoints,
    auth,
    cors: r.cors,
    responseHeaders: r.responseHeaders,
    log: log.child({ component: 'rest' }),
  });
  const listeners = await startRestListeners(r, server.handler);
  log.info('REST API listening', { urls: listeners.urls, workerId: listeners.workerId, basicAuth: auth !== undefined });
  return listeners;
}

/** What validation's catalog probe opens: the catalog with one quick try, closed with its store. */
function probeTarget(c: CatalogConfig): Pick<Catalog, 'listNamespaces' | 'tableExists' | 'close'> {
  const store = objectStore(c);
  const catalog = catalogFor(c, store, true);
  return {
    listNamespaces: () => catalog.listNamespaces(),
    tableExists: (id) => catalog.tableExists(id),
    close: () => catalog.close().catch(() => undefined).then(() => store.close()).catch(() => undefined),
  };
}

/** Why the standalone command ends when a connector could not start (--exit-on-failure). */
function startFailure(first: { readonly name: string; readonly error: unknown }): unknown {
  const e = first.error;
  // Kafka that cannot be reached (the error names bootstrap.servers) is the worker's trouble, not this
  // connector's: its message stands as it is.
  if (!(e instanceof IcefloeError) || e.context['bootstrapServers'] !== undefined) return e;
  // Its handling class kept (a configuration error exits 2), now naming the connector.
  const Kind = e instanceof ConfigError ? ConfigError : e.retriable ? RetriableError : FatalError;
  return new Kind(`connector ${first.name} did not start: ${e.message}`, { cause: e, context: { ...e.context, connector: first.name } });
}

/** A task in the worker process (icefloe.tasks.mode=in-process): it cannot be killed, only stopped. */
function inProcessTaskHandle(spec: TaskSpec, log: Logger, onAnnounced: () => void): TaskHandle {
  const taskId = spec.taskId;
  let task: SinkTask | undefined;
  let pauseWanted = false;
  const started = startTaskInProcess(spec, log, onAnnounced);
  const done = started.then((s) => {
    task = s.task;
    if (pauseWanted) task.pause();
    return s.done;
  });
  return {
    taskId,
    done,
    state: () => {
      if (task === undefined) return { state: 'UNASSIGNED' };
      const note = task.progressNote;
      return { state: task.state, ...(task.trace === undefined ? {} : { trace: task.trace }), ...(note === undefined ? {} : { note }) };
    },
    stop: async () => {
      (await started).task.stop();
    },
    fail: async (message) => {
      (await started).task.fail(message);
    },
    pause: () => {
      pauseWanted = true;
      task?.pause();
    },
    resume: () => {
      pauseWanted = false;
      task?.resume();
    },
    topics: () => task?.activeTopics ?? [],
    forgetTopics: () => task?.forgetTopics(),
  };
}

export function runStandalone(options: StandaloneOptions): Promise<Standalone> {
  return runWorker(options, 'standalone');
}

/**
 * `icefloe distributed`: a worker of the cluster its `group.id` names (docs/design/cluster.md). Connectors
 * come from the config topic (created through the REST API of any worker), not from the command line.
 */
export function runDistributed(options: Omit<StandaloneOptions, 'connectorPaths' | 'exitOnFailure'>): Promise<Standalone> {
  return runWorker({ ...options, connectorPaths: [] }, 'distributed');
}

async function runWorker(options: StandaloneOptions, mode: 'standalone' | 'distributed'): Promise<Standalone> {
  const logLevel = options.logLevel ?? 'info';
  const workerText = readFileSync(resolvePath(options.cwd, options.workerPropertiesPath), 'utf8');
  const worker = parseWorkerProperties(workerText, { baseDir: options.cwd });
  if (mode === 'distributed' && worker.cluster === null) throw new ConfigError(`icefloe distributed needs ${worker.clusterMissing.join(', ')} in ${options.workerPropertiesPath} (docs/design/cluster.md)`);
  // Decided here, once, for the worker and its task processes (a task's spec carries it).
  const logOutput = resolveLogOutput(worker.logFormat, options.logEnvironment ?? PLAIN_ENVIRONMENT);
  const levels = new LoggerLevels({ initialLevel: logLevel });
  const tracker = new LogLevelTracker(levels.categoryLevels());
  const log = createLogger(logLevel, {}, logOutput, tracker);
  for (const w of worker.warnings) log.warn(w);
  const ignored = mode === 'standalone' ? standaloneIgnoredKeys(worker) : [];
  if (ignored.length > 0) log.warn(`${ignored.join(', ')} ${ignored.length === 1 ? 'is' : 'are'} ignored by icefloe standalone (read by icefloe distributed)`);
  const connectors = options.connectorPaths.map((p) => parseConnectorFile(readFileSync(resolvePath(options.cwd, p), 'utf8'), p));
  const settings = workerKafkaSettings(worker, worker.adminProps);
  // Loaded only here: the cluster brings Redis and BullMQ, which standalone workers and task processes never use.
  const clusterApp = mode === 'distributed' ? await import('./app/cluster.ts') : undefined;
  const cluster = await clusterApp?.clusterParts(worker, { admin: settings, producer: workerKafkaSettings(worker, worker.producerProps), reader: workerKafkaSettings(worker, worker.consumerProps) }, log);
  const sw = buildWorker(options, worker, settings, log, logLevel, logOutput, cluster);
  const plugins = new ConnectorPlugins({ icefloeVersion: packageVersion() });
  const providers = configProviders(worker.configProviders, providerIO(options.env ?? {}));
  const parseOptions = worker.defaultCatalogProps === undefined ? {} : { defaultCatalog: worker.defaultCatalogProps };
  const validation: ValidationDeps = { plugins, providers, ...parseOptions, catalogProbe: catalogProbe(probeTarget) };
  levels.onChange((l) => {
    tracker.apply(l);
    sw.setTaskLogLevel(l.task);
  });
  const self: { rest?: RestListeners } = {};
  const parse = (raw: Readonly<Record<string, string>>): ConnectorConfig => parseConnectorConfig(resolveConfig(raw, providers), parseOptions);
  const herder = new StandaloneHerder({
    worker: sw,
    store: cluster?.configs ?? new FileConnectorStore(worker.connectorsFile),
    log,
    checkConfig: async (raw) => {
      await validateForWrite(raw, validation);
      if (clusterApp !== undefined) clusterApp.sharedCatalogOnly(parse(raw));
    },
    parse,
    // Once per start, not a client's request: the catalog gets longer to answer than validate's time box
    // (a worker starting among others on a busy machine), and one that does not answer still starts it.
    checkStart: (raw) => checkStartConfig(raw, { ...validation, probeTimeoutMs: START_PROBE_TIMEOUT_MS }),
    offsets: herderOffsets(worker, settings, log),
    tables: herderTables(settings, log),
    plugins: { plugins: (only) => plugins.plugins(only), pluginConfig: (p) => plugins.pluginConfig(p), validate: (p, c) => validateConfig(p, c, validation) },
    loggers: cluster === undefined || clusterApp === undefined ? levels : clusterApp.clusterLoggers(levels, cluster, log),
    serverInfo: () => serverInfo(settings),
    workerId: () => self.rest?.workerId ?? `${hostname()}:${worker.rest.listeners[0]?.port ?? 8083}`,
    topicTracking: worker.rest.topicTracking,
    pluginVersion: (cls) => plugins.connector(cls)?.version,
    ...(cluster === undefined ? {} : { cluster: cluster.view }),
  });
  // Served before the connectors start: /health says `starting` until they have.
  self.rest = await serveRest(herder, worker, log);
  const rest = self.rest;
  try {
    if (cluster !== undefined) await cluster.join(rest, herder, sw);
    await herder.start(connectors.map((f) => f.config));
  } catch (e) {
    await sw.stop().catch(() => undefined);
    await cluster?.close().catch(() => undefined);
    await rest.close().catch(() => undefined);
    throw e;
  }
  const failed = herder.startFailures();
  if (options.exitOnFailure === true && failed.length > 0) {
    // --exit-on-failure: a connector that cannot start ends the worker (as connect-standalone does); the
    // connectors started before it are stopped cleanly, not left to their task processes' orphan watch.
    await sw.stop().catch(() => undefined);
    await rest.close().catch(() => undefined);
    throw startFailure(failed[0] as { name: string; error: unknown });
  }
  return {
    worker: sw,
    herder,
    rest,
    shutdownTimeoutMs: worker.shutdownTimeoutMs,
    async stop() {
      await rest.close().catch(() => undefined);
      // Tasks finish their cycles and leave their groups, committers run a last round and release their
      // leases; only then does this worker leave the cluster, so nobody starts its units while they run.
      await herder.stop();
      await cluster?.close().catch((e: unknown) => log.warn('leaving the cluster failed', { error: errorMessage(e) }));
    },
  };
}

/** How long a connector's start waits for the catalog to say whether its tables exist. */
const START_PROBE_TIMEOUT_MS = 15_000;

/** The worker that runs tasks and committers (in a cluster: its share, committers under a lease). */
function buildWorker(options: StandaloneOptions, worker: WorkerConfig, settings: ClientSettings, log: Logger, logLevel: string, logOutput: LogOutput, cluster: ClusterParts | undefined): StandaloneWorker {
  const workerProps = worker.stored();
  // One count per process: a committer opened again (a restart, a lease taken anew) does not re-arm the point.
  const committerCrash = crashPoints(options.crash);
  const sw: StandaloneWorker = new StandaloneWorker({
    log,
    taskShutdownTimeoutMs: worker.taskShutdownTimeoutMs,
    ...(cluster === undefined ? {} : { restartFenced: true, onAnnounced: (name: string) => cluster.wake(name), committerHolder: (name: string) => cluster.committerHolder(name) }),
    async prepareConnector(c) {
      const admin = await ConfluentKafkaAdmin.connect({ settings, overrides: c.adminOverrides });
      try {
        await admin.checkReachable();
        const retentionMs = await prepareControlTopic(admin, c, log.child({ connector: c.name }));
        await prepareDeadLetterTopic(admin, c, log.child({ connector: c.name }));
        // A cluster places task ids itself; two workers running one for a moment fence each other, harmlessly.
        if (cluster === undefined) await checkTaskIds(admin, worker, c, log.child({ connector: c.name }));
        return { retentionMs };
      } finally {
        await admin.close();
      }
    },
    startTask(c, n, onAnnounced, incarnation) {
      // Task n of this worker; icefloe.tasks.id-offset keeps several workers' tasks of one connector distinct.
      const taskId = n + worker.taskIdOffset;
      // A crash point is armed in a task's first incarnation only: the restarted task is the recovery under test.
      const crash = incarnation === 0 ? options.crash : undefined;
      const spec: TaskSpec = { workerProps, baseDir: options.cwd, connector: c.stored(), taskId, crash, logLevel: sw.taskLogLevel ?? logLevel, logOutput, shutdownTimeoutMs: worker.taskShutdownTimeoutMs, ...(cluster === undefined ? {} : { restartFenced: true }) };
      if (worker.tasksMode === 'process') return startTaskProcess(spec, log, onAnnounced, taskStallBound(worker, c).ms);
      return inProcessTaskHandle(spec, log, onAnnounced);
    },
    async createCommitter(c) {
      if (cluster !== undefined) return cluster.seatCommitter(c, (beforeCommit) => openCommitter(c, beforeCommit));
      return openCommitter(c, undefined);
    },
  });
  async function openCommitter(c: ConnectorConfig, beforeCommit: (() => Promise<void>) | undefined): Promise<OpenCommitter> {
    const store = objectStore(c.catalog);
    const catalog = catalogFor(c.catalog, store);
    const admin = await ConfluentKafkaAdmin.connect({ settings, overrides: c.adminOverrides });
    const reader = await ConfluentControlTopicReader.connect({ settings: workerKafkaSettings(worker, { ...worker.consumerProps, ...c.control.kafkaProps }) });
    const committer = new ConnectorCommitter({ connector: c, reader, admin, catalog, store, crash: committerCrash, log, ...(beforeCommit === undefined ? {} : { beforeCommit }) });
    return {
      committer,
      async close() {
        await reader.close().catch(() => undefined);
        await admin.close().catch(() => undefined);
        await catalog.close().catch(() => undefined);
        await store.close().catch(() => undefined);
      },
    };
  }
  return sw;
}
