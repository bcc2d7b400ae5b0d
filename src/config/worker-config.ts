/**
 * The standalone worker's configuration, `icefloe standalone <worker.properties> <connector.json>...`
 * (the shape of Kafka's connect-standalone): the Java `.properties` syntax, the Connect worker keys that
 * apply to a sink worker (reference/connect-rest.md §3.1), Icefloe's `icefloe.*` worker keys (the
 * embedded default: a local-filesystem warehouse and a SQLite SQL catalog, in-process coordination), and
 * the connector files in either shape Connect accepts.
 *
 * Owns: parsing and typing the worker file, the worker's default catalog in the connector's
 * `iceberg.catalog.*` vocabulary, reading connector files. Worker keys Icefloe does not act on yet
 * (distributed mode's, Java REST extensions) are refused by unsupported.ts's rules; the REST API's keys
 * are parsed by rest-config.ts.
 * Must not: read the file system, the environment or the working directory (callers pass text and a base
 * directory), or print a secret.
 */
import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { LOG_FORMATS } from '../core/log-format.ts';
import type { LogFormatSetting } from '../core/log-format.ts';
import { parseJson } from '../core/json.ts';
import { ConfigDef, didYouMean, problemSummary, safeProps, validators } from './config-def.ts';
import type { ParsedConfig, Secret } from './config-def.ts';
import { JSON_CONVERTER, parseConverter } from './converters.ts';
import type { ConverterConfig } from './converters.ts';
import { buildRestConfig } from './rest-config.ts';
import type { RestConfig } from './rest-config.ts';
import { WORKER_UNSUPPORTED, rejectUnsupported, unsupportedDoc } from './unsupported.ts';
import { parseProperties } from './properties.ts';
import { parseConfigProviders } from './config-providers.ts';
import type { ConfigProviderSpec } from './config-providers.ts';

export type { HeaderRule, RestConfig, RestListener, RestTlsSettings } from './rest-config.ts';
export { parseProperties } from './properties.ts';

// ---------------------------------------------------------------------------------------------------
// Worker keys
// ---------------------------------------------------------------------------------------------------

const G_WORKER = 'Worker';
const G_REST = 'REST';
const G_SECURITY = 'Security';
const G_ICEFLOE = 'Icefloe';
const G_CLUSTER = 'Distributed';
const DISTRIBUTED_ONLY = ' Read by `icefloe distributed` only (the standalone worker warns that it ignores it).';

export const DEFAULT_WAREHOUSE = 'icefloe-data/warehouse';
export const DEFAULT_CATALOG = 'sqlite:icefloe-data/catalog.db';

/** The docs of a key Icefloe refuses until the capability it needs lands (unsupported.ts). */
const notYet = (key: string, meaning: string): string => unsupportedDoc(WORKER_UNSUPPORTED, key, meaning);

export const WORKER_CONFIG_DEF: ConfigDef = new ConfigDef()
  .define({ name: 'bootstrap.servers', type: 'LIST', default: 'localhost:9092', importance: 'HIGH', group: G_WORKER,
    validator: validators.matches(/^[^\s,]+:\d+$/, 'host:port'),
    doc: 'Kafka brokers (host:port, comma-separated) for every client of the worker and its connectors.' })
  .define({ name: 'key.converter', type: 'CLASS', default: JSON_CONVERTER, importance: 'HIGH', group: G_WORKER,
    doc: 'Default converter for record keys, used by connectors that do not set key.converter; settings under `key.converter.*`.' })
  .define({ name: 'value.converter', type: 'CLASS', default: JSON_CONVERTER, importance: 'HIGH', group: G_WORKER,
    doc: 'Default converter for record values, used by connectors that do not set value.converter; settings under `value.converter.*` (e.g. `value.converter.schema.registry.url`).' })
  .define({ name: 'header.converter', type: 'CLASS', default: 'org.apache.kafka.connect.storage.SimpleHeaderConverter', importance: 'LOW', group: G_WORKER,
    doc: notYet('header.converter', 'Default converter for header values.') })
  .definePrefix({ prefix: 'key.converter.', group: G_WORKER, doc: 'Settings of the worker\'s key converter.' })
  .definePrefix({ prefix: 'value.converter.', group: G_WORKER, doc: 'Settings of the worker\'s value converter.' })
  .define({ name: 'task.shutdown.graceful.timeout.ms', type: 'LONG', default: '30000', importance: 'LOW', group: G_WORKER, validator: validators.range(0),
    doc: 'How long the stopping tasks may take in all to finish their last commit cycle (upload and transaction) before the worker kills them: a task process by SIGKILL (fencing makes a late end harmless; its cycle is read again by the next incarnation), a task in the worker process is left behind as the worker exits. Connect\'s default is 5000; Icefloe\'s is longer because a stopping task commits its last cycle. A task process whose worker is gone stops within the smaller of this and 10 s.' })
  .define({ name: 'connector.client.config.override.policy', type: 'STRING', default: 'All', importance: 'MEDIUM', group: G_WORKER,
    doc: notYet('connector.client.config.override.policy', 'Which `consumer.override.*`/`producer.override.*`/`admin.override.*` keys connectors may set: All, None, or Principal (only SASL/security keys).') })
  .define({ name: 'offset.flush.interval.ms', type: 'LONG', default: '60000', importance: 'LOW', group: G_WORKER, validator: validators.range(0),
    doc: 'Ignored: Icefloe commits sink offsets in each commit cycle\'s transaction (iceberg.control.commit.interval-ms), as the Apache Iceberg sink does. Accepted so connect-standalone files load.' })
  .define({ name: 'offset.storage.file.filename', type: 'STRING', default: null, importance: 'LOW', group: G_WORKER,
    doc: 'Ignored: standalone sink offsets live in the consumer group connect-<name>, not in a file. Accepted so connect-standalone files load.' })
  .define({ name: 'plugin.path', type: 'LIST', default: null, importance: 'LOW', group: G_WORKER,
    doc: 'Ignored: Icefloe\'s connector, converters and transforms are built in.' })
  .define({ name: 'config.providers', type: 'LIST', default: '', importance: 'LOW', group: G_WORKER,
    doc: 'Names of the config providers whose references connector values may hold (`${env:ICEBERG_TOKEN}`, `${file:/secrets/catalog.properties:token}`, `${dir:/mnt/secrets:password}`); each is configured under `config.providers.<name>.*`. References are resolved inside the worker only, when a config is validated and when it is handed to the connector; the REST API stores and echoes the raw `${...}` text. A reference that cannot be resolved is an error naming the key and the reference (Kafka would pass the text on as the value).' })
  .definePrefix({ prefix: 'config.providers.', group: G_WORKER, pattern: 'config.providers.<name>.{class,param.*}',
    doc: '`class`: org.apache.kafka.common.config.provider.FileConfigProvider (`${<name>:/path/file.properties:key}`, a key of a Java properties file), EnvVarConfigProvider (`${<name>:VARIABLE}`) or DirectoryConfigProvider (`${<name>:/dir:file}`, the whole content of that file), full or simple class name. `param.allowed.paths` (file, directory): comma-separated absolute directories, the only ones whose files may be read. `param.allowlist.pattern` (env): a regex the whole variable name must match to be visible.' })
  .define({ name: 'listeners', type: 'LIST', default: 'http://:8083', importance: 'LOW', group: G_REST,
    doc: 'Where the REST API listens: comma-separated `http://host:port` or `https://host:port` (empty host: every interface; port 0: any free port). An https listener takes its key from `listeners.https.ssl.*`, else from `ssl.*` (docs/rest.md, TLS).' })
  .define({ name: 'rest.advertised.host.name', type: 'STRING', default: null, importance: 'LOW', group: G_REST,
    doc: 'The host in this worker\'s `worker_id` (statuses) and its advertised URL; default: the listener\'s host, else the machine\'s host name. In Kubernetes, the pod IP or DNS name.' })
  .define({ name: 'rest.advertised.port', type: 'INT', default: null, importance: 'LOW', group: G_REST, validator: validators.range(0, 65535),
    doc: 'The port in this worker\'s `worker_id` and advertised URL; default: the advertised listener\'s bound port.' })
  .define({ name: 'rest.advertised.listener', type: 'STRING', default: null, importance: 'LOW', group: G_REST,
    validator: validators.oneOf(['http', 'https'], { caseInsensitive: true }),
    doc: 'Which listener (http or https) is advertised; default: http when an http listener exists, else https.' })
  .define({ name: 'access.control.allow.origin', type: 'STRING', default: '', importance: 'LOW', group: G_REST,
    doc: 'CORS: origins allowed to call the REST API from a browser (comma-separated, `*` for any, `*` inside one as a wildcard); matching requests get Access-Control-Allow-Origin. Empty: CORS off.' })
  .define({ name: 'access.control.allow.methods', type: 'STRING', default: '', importance: 'LOW', group: G_REST,
    doc: 'CORS: methods allowed in preflight answers (Access-Control-Allow-Methods); empty: GET,POST,HEAD (Jetty\'s default, as Connect).' })
  .define({ name: 'response.http.headers.config', type: 'STRING', default: '', importance: 'LOW', group: G_REST,
    doc: 'Headers added to every REST answer: comma-separated rules `[action] [name]:[value]`, action set, add, setDate or addDate (value: milliseconds from now), a rule in double quotes when it holds a comma. Example: `set X-Frame-Options: DENY`.' })
  .define({ name: 'admin.listeners', type: 'LIST', default: null, importance: 'LOW', group: G_REST,
    doc: notYet('admin.listeners', 'Listeners for the /admin endpoints; empty: not served at all.') })
  .define({ name: 'rest.extension.classes', type: 'LIST', default: '', importance: 'LOW', group: G_REST,
    doc: notYet('rest.extension.classes', 'Java REST extensions (ConnectRestExtension), such as BasicAuthSecurityRestExtension with a JAAS file.') })
  .define({ name: 'topic.tracking.enable', type: 'BOOLEAN', default: 'true', importance: 'LOW', group: G_REST,
    doc: 'Whether `GET /connectors/{name}/topics` answers (false: 403 `Topic tracking is disabled.`).' })
  .define({ name: 'topic.tracking.allow.reset', type: 'BOOLEAN', default: 'true', importance: 'LOW', group: G_REST,
    doc: 'Whether `PUT /connectors/{name}/topics/reset` is allowed (false: 403 `Topic tracking reset is disabled.`).' })
  .definePrefix({ prefix: 'listeners.https.', group: G_REST,
    doc: 'Key material of the https listeners (`listeners.https.ssl.keystore.location`, ...); when any is set, the plain `ssl.*` keys are not used for them (as Connect). PKCS12 (`ssl.keystore.type=PKCS12`, `ssl.keystore.location`, `ssl.keystore.password`) or PEM (`ssl.keystore.type=PEM` with `ssl.keystore.key` + `ssl.keystore.certificate.chain`, or `ssl.keystore.location` naming a PEM file); JKS is refused (convert it to PKCS12); `ssl.enabled.protocols` limits TLS versions; `ssl.client.auth` must be none.' })
  .define({ name: 'icefloe.rest.basic-auth.file', type: 'STRING', default: null, importance: 'MEDIUM', group: G_REST,
    doc: 'HTTP basic authentication for every REST route: a file of `user: password` lines (Java properties, the format of Connect\'s PropertyFileLoginModule), relative to the worker\'s working directory. Unset: no authentication. Replaces Connect\'s `rest.extension.classes=...BasicAuthSecurityRestExtension` with a JAAS file, which needs a JVM. An empty file is refused (Connect would let everyone in).' })
  .define({ name: 'security.protocol', type: 'STRING', default: 'PLAINTEXT', importance: 'MEDIUM', group: G_SECURITY,
    validator: validators.oneOf(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'], { caseInsensitive: true }),
    doc: 'Protocol of the worker\'s Kafka clients; passed, with `sasl.*` and `ssl.*`, to every Kafka client of the worker and its connectors.' })
  .definePrefix({ prefix: 'sasl.', group: G_SECURITY, doc: 'SASL settings of the Kafka clients (`sasl.mechanism`, `sasl.jaas.config` — a secret, `sasl.username`, `sasl.password`).' })
  .definePrefix({ prefix: 'ssl.', group: G_SECURITY, doc: 'TLS settings of the Kafka clients (`ssl.ca.location`, `ssl.truststore.location`, `ssl.key.password` — a secret, ...).' })
  .definePrefix({ prefix: 'consumer.', group: G_SECURITY, doc: 'Worker-wide defaults for connector consumers (applied before consumer.override.*).' })
  .definePrefix({ prefix: 'producer.', group: G_SECURITY, doc: 'Worker-wide defaults for connector producers.' })
  .definePrefix({ prefix: 'admin.', group: G_SECURITY, doc: 'Worker-wide defaults for admin clients.' })
  .define({ name: 'icefloe.warehouse', type: 'STRING', default: DEFAULT_WAREHOUSE, importance: 'HIGH', group: G_ICEFLOE, validator: validators.nonEmpty(),
    doc: 'Warehouse of the worker\'s default catalog: a local directory (relative to the worker\'s working directory) or an `s3://bucket/prefix` location. Used by connectors that set no iceberg.catalog.* properties.' })
  .define({ name: 'icefloe.catalog', type: 'STRING', default: DEFAULT_CATALOG, importance: 'HIGH', group: G_ICEFLOE,
    validator: validators.custom('sqlite:<file>, jdbc:sqlite:<file>, jdbc:postgresql://..., http(s)://... or none', (v) => (typeof v === 'string' ? workerCatalogProblem(v) : undefined)),
    doc: 'The worker\'s default catalog, used by connectors that set no iceberg.catalog.* properties: `sqlite:<file>` (embedded SQL catalog in a SQLite file), `jdbc:postgresql://host/db` (SQL catalog on PostgreSQL), `http(s)://...` (REST catalog), or `none` (every connector names its catalog).' })
  .definePrefix({ prefix: 'icefloe.catalog.', group: G_ICEFLOE,
    doc: 'Extra properties of the worker\'s default catalog, in the iceberg.catalog.* vocabulary (`s3.endpoint`, `s3.access-key-id`, `s3.secret-access-key`, `client.region`, `token`, `jdbc.user`, `jdbc.password`).' })
  .define({ name: 'icefloe.tasks.mode', type: 'STRING', default: 'process', importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.oneOf(['process', 'in-process']),
    doc: 'Run each task as a child process (N tasks use N cores; the native Kafka client does not load in worker threads) or all tasks in the worker process (one core; simplest to debug).' })
  .define({ name: 'icefloe.connectors.file', type: 'STRING', default: 'icefloe-data/connectors.json', importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.nonEmpty(),
    doc: 'Where the standalone worker keeps the connectors created, reconfigured, paused or stopped through the REST API (relative to the working directory), so that they survive a restart; configs are kept as submitted (`${...}` placeholders unresolved), the file readable by its owner only. Connectors given on the command line are added to it (or updated, keeping their stored state).' })
  .define({ name: 'icefloe.tasks.id-offset', type: 'INT', default: '0', importance: 'LOW', group: G_ICEFLOE, validator: validators.range(0),
    doc: 'Added to the task numbers of every connector this worker runs (task ids `<offset>..<offset>+tasks.max-1`, so transactional ids `<prefix><connector>-<id>`): several standalone workers sharing one connector give each a different offset so their tasks stay distinct members rather than fencing each other by transactional.id.' })
  .define({ name: 'icefloe.shutdown.timeout.ms', type: 'LONG', default: '60000', importance: 'LOW', group: G_ICEFLOE, validator: validators.range(1000),
    doc: 'How long a stop (SIGTERM, Ctrl-C) may take in all — tasks finishing their cycles within task.shutdown.graceful.timeout.ms, the committers\' last rounds, leases released, the cluster left — before the process exits anyway (code 1, saying so). Keep it below the pod\'s terminationGracePeriodSeconds. Cutting a stop short is safe: fencing and the transaction time-out make a late end harmless, and the next owner reads open cycles again.' })
  .define({ name: 'icefloe.log.format', type: 'STRING', default: 'auto', importance: 'LOW', group: G_ICEFLOE, validator: validators.oneOf(LOG_FORMATS),
    doc: 'How the worker and its task processes write their log lines to stderr: `json` (one JSON object per line, pino\'s, for files and log collectors), `pretty` (`HH:MM:SS.mmm LEVEL message  connector=… task=… key=value`, errors and traces on the following indented lines, levels coloured on a terminal unless NO_COLOR is set), or `auto`: pretty when stderr is a terminal, JSON otherwise. The environment variable ICEFLOE_LOG_FORMAT (same values) overrides it.' })
  .define({ name: 'group.id', type: 'STRING', default: null, importance: 'HIGH', group: G_CLUSTER,
    doc: 'The cluster: workers with the same group.id share connectors and tasks (docs/design/cluster.md). Must not collide with a consumer group.' + DISTRIBUTED_ONLY })
  .define({ name: 'config.storage.topic', type: 'STRING', default: null, importance: 'HIGH', group: G_CLUSTER,
    doc: 'Compacted topic (1 partition) holding connector configs, target states and restart requests in Kafka Connect\'s record format; created if missing, refused if it is not compacted.' + DISTRIBUTED_ONLY })
  .define({ name: 'config.storage.replication.factor', type: 'SHORT', default: '3', importance: 'LOW', group: G_CLUSTER, validator: validators.custom('-1 or at least 1', (v) => (typeof v === 'number' && (v === -1 || v >= 1) ? undefined : 'must be -1 (the broker default) or at least 1')),
    doc: 'Replication factor of config.storage.topic when the worker creates it (-1: the broker default).' + DISTRIBUTED_ONLY })
  .define({ name: 'status.storage.topic', type: 'STRING', default: null, importance: 'HIGH', group: G_CLUSTER,
    doc: 'Compacted topic holding connector and task statuses (`state`, `trace`, `worker_id`) as each worker reports them; created if missing.' + DISTRIBUTED_ONLY })
  .define({ name: 'status.storage.partitions', type: 'INT', default: '5', importance: 'LOW', group: G_CLUSTER, validator: validators.range(1),
    doc: 'Partitions of status.storage.topic when the worker creates it.' + DISTRIBUTED_ONLY })
  .define({ name: 'status.storage.replication.factor', type: 'SHORT', default: '3', importance: 'LOW', group: G_CLUSTER, validator: validators.custom('-1 or at least 1', (v) => (typeof v === 'number' && (v === -1 || v >= 1) ? undefined : 'must be -1 (the broker default) or at least 1')),
    doc: 'Replication factor of status.storage.topic when the worker creates it (-1: the broker default).' + DISTRIBUTED_ONLY })
  .define({ name: 'offset.storage.topic', type: 'STRING', default: null, importance: 'LOW', group: G_CLUSTER,
    doc: 'Accepted so that Connect worker files load; not created or used: a sink has no source offsets (sink offsets are the consumer group connect-<name>\'s).' })
  .define({ name: 'offset.storage.partitions', type: 'INT', default: '25', importance: 'LOW', group: G_CLUSTER, doc: 'Accepted with offset.storage.topic; no effect.' })
  .define({ name: 'offset.storage.replication.factor', type: 'SHORT', default: '3', importance: 'LOW', group: G_CLUSTER, doc: 'Accepted with offset.storage.topic; no effect.' })
  .define({ name: 'heartbeat.interval.ms', type: 'INT', default: '3000', importance: 'LOW', group: G_CLUSTER, validator: validators.range(50),
    doc: 'How often a worker tells the cluster it is alive (a Redis heartbeat) and reads who else is.' + DISTRIBUTED_ONLY })
  .define({ name: 'session.timeout.ms', type: 'INT', default: '10000', importance: 'LOW', group: G_CLUSTER, validator: validators.range(200),
    doc: 'A worker not heard from for this long (by each other worker\'s own clock) is gone: its tasks and committers move. Must exceed heartbeat.interval.ms; a Redis flush or restart shorter than it moves nothing.' + DISTRIBUTED_ONLY })
  .define({ name: 'icefloe.redis.url', type: 'PASSWORD', default: null, importance: 'HIGH', group: G_CLUSTER,
    doc: 'Redis (`redis://[user:password@]host:6379/0`, `rediss://` for TLS) for the cluster\'s heartbeats, committer leases and commit wake-up queues. Only what can be rebuilt lives there: flushing or restarting it costs time, never data.' + DISTRIBUTED_ONLY })
  .define({ name: 'icefloe.cluster.lease.ttl.ms', type: 'INT', default: '15000', importance: 'LOW', group: G_CLUSTER, validator: validators.range(1000),
    doc: 'Time-to-live of a committer lease: a committer that cannot renew it for this long stops committing; a dead holder\'s connector gets a new committer at most this long after its death.' + DISTRIBUTED_ONLY });

/** Why a worker `icefloe.catalog` value is unusable, or undefined. */
function workerCatalogProblem(v: string): string | undefined {
  if (v === 'none' || /^(jdbc:)?sqlite:.+/.test(v) || /^(jdbc:)?postgresql:\/\/.+/.test(v) || /^https?:\/\/[^\s/]+/.test(v)) return undefined;
  return 'Expected sqlite:<file>, jdbc:postgresql://host/db, an http(s) REST catalog URL, or none';
}

export type WorkerCatalog =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgresql'; readonly uri: string }
  | { readonly kind: 'rest'; readonly uri: string }
  | { readonly kind: 'none' };

export interface WorkerConfig {
  readonly bootstrapServers: readonly string[];
  readonly keyConverter: ConverterConfig;
  readonly valueConverter: ConverterConfig;
  /** `security.protocol`, `sasl.*`, `ssl.*` (full key names), for every Kafka client; JSON/inspect redact secrets. */
  readonly clientSecurity: Readonly<Record<string, string>>;
  readonly consumerProps: Readonly<Record<string, string>>;
  readonly producerProps: Readonly<Record<string, string>>;
  readonly adminProps: Readonly<Record<string, string>>;
  /** Absolute directory, or an s3:// location. */
  readonly warehouse: string;
  readonly catalog: WorkerCatalog;
  /** The default catalog in the connector's iceberg.catalog.* vocabulary; undefined with icefloe.catalog=none. */
  readonly defaultCatalogProps: Readonly<Record<string, string>> | undefined;
  readonly tasksMode: 'process' | 'in-process';
  /** Added to each connector's task numbers (several standalone workers on one connector use distinct ids). */
  readonly taskIdOffset: number;
  /** icefloe.connectors.file, absolute: the standalone herder's connector store. */
  readonly connectorsFile: string;
  /** task.shutdown.graceful.timeout.ms: how long stopping tasks may take in all before they are killed. */
  readonly taskShutdownTimeoutMs: number;
  /** icefloe.shutdown.timeout.ms: how long a stop (SIGTERM) may take in all before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
  /** icefloe.log.format (app.ts resolves `auto` and ICEFLOE_LOG_FORMAT: core/log-format.ts). */
  readonly logFormat: LogFormatSetting;
  /** The REST API's listeners, advertised address, CORS, headers, TLS and authentication. */
  readonly rest: RestConfig;
  /** Distributed mode's settings; null where a required key is missing (`icefloe distributed` says which). */
  readonly cluster: ClusterSettings | null;
  /** The distributed-mode keys that are missing (for `icefloe distributed`'s error). */
  readonly clusterMissing: readonly string[];
  /** config.providers: resolve connector values with `resolveConfig` (config-providers.ts) inside the worker only. */
  readonly configProviders: readonly ConfigProviderSpec[];
  readonly secretKeys: readonly string[];
  readonly warnings: readonly string[];
  stored(): Record<string, string>;
  redacted(): Record<string, string>;
}

export interface ClusterSettings {
  readonly groupId: string;
  readonly configTopic: { readonly name: string; readonly replicationFactor: number };
  readonly statusTopic: { readonly name: string; readonly partitions: number; readonly replicationFactor: number };
  readonly heartbeatMs: number;
  readonly sessionTimeoutMs: number;
  /** A secret: the URL may carry a password (prints as [hidden]). */
  readonly redisUrl: Secret;
  readonly leaseTtlMs: number;
}

export interface WorkerParseOptions {
  /** Directory relative paths (warehouse, SQLite file) are resolved against: the worker's working directory. */
  readonly baseDir: string;
}

export interface WorkerValidation {
  readonly config: WorkerConfig | null;
  readonly errors: ReadonlyMap<string, readonly string[]>;
  readonly errorCount: number;
  readonly warnings: readonly string[];
  redacted(): Record<string, string>;
  /** The errors as one text for the user: each problem once, with the unknown key that looks like its key. */
  summary(): { count: number; text: string };
}

/** Validates worker properties (already a map), collecting every problem. */
export function validateWorkerConfig(props: Readonly<Record<string, string>>, options: WorkerParseOptions): WorkerValidation {
  const parsed = WORKER_CONFIG_DEF.parse(props);
  const config = buildWorker(parsed, options);
  return Object.freeze({
    config: parsed.errorCount === 0 ? config : null,
    errors: parsed.errors(),
    errorCount: parsed.errorCount,
    warnings: parsed.warnings,
    redacted: () => parsed.redacted(),
    summary: () => problemSummary(parsed),
  });
}

/** The cluster's keys that `icefloe standalone` ignores (it says so rather than leaving the user to wonder). */
export function standaloneIgnoredKeys(worker: WorkerConfig): string[] {
  return ['group.id', 'config.storage.topic', 'status.storage.topic', 'icefloe.redis.url'].filter((k) => worker.stored()[k] !== undefined);
}

/** Parses a worker `.properties` text or throws one ConfigError listing every problem. */
export function parseWorkerProperties(text: string, options: WorkerParseOptions): WorkerConfig {
  const v = validateWorkerConfig(parseProperties(text), options);
  if (v.config !== null) return v.config;
  const summary = v.summary();
  throw new ConfigError(`worker config: ${summary.count} configuration error(s): ${summary.text}`, { context: { errors: Object.fromEntries(v.errors) } });
}

function buildWorker(p: ParsedConfig, options: WorkerParseOptions): WorkerConfig {
  const converter = (key: 'key.converter' | 'value.converter'): ConverterConfig => {
    const className = p.string(key) ?? JSON_CONVERTER;
    const r = parseConverter(key, className, p.prefixed(`${key}.`));
    for (const e of r.errors) p.addError(key, e.message); // worker errors are reported per worker key
    return r.converter ?? (parseConverter(key, JSON_CONVERTER, {}).converter as ConverterConfig);
  };
  const keyConverter = converter('key.converter');
  const valueConverter = converter('value.converter');

  for (const [key, note] of [
    ['offset.flush.interval.ms', 'sink offsets are committed in each commit cycle\'s transaction'],
    ['offset.storage.file.filename', 'standalone sink offsets live in the consumer group connect-<name>'],
    ['plugin.path', 'the connector, converters and transforms are built in'],
  ] as const) {
    if (p.has(key)) p.addWarning(`${key} is ignored: ${note}`);
  }

  const clientSecurity: Record<string, string> = { 'security.protocol': (p.string('security.protocol') ?? 'PLAINTEXT').toUpperCase() };
  for (const prefix of ['sasl.', 'ssl.']) for (const [k, v] of Object.entries(p.prefixed(prefix))) clientSecurity[prefix + k] = v;

  const rawWarehouse = p.string('icefloe.warehouse') ?? DEFAULT_WAREHOUSE;
  const warehouse = /^s3a?:\/\//.test(rawWarehouse) ? rawWarehouse : rawWarehouse.startsWith('file:') ? rawWarehouse : resolvePath(options.baseDir, rawWarehouse);
  const rawCatalog = p.string('icefloe.catalog') ?? DEFAULT_CATALOG;
  let catalog: WorkerCatalog = { kind: 'none' };
  const sqlite = /^(?:jdbc:)?sqlite:(.+)$/.exec(rawCatalog);
  if (sqlite !== null) catalog = { kind: 'sqlite', path: resolvePath(options.baseDir, sqlite[1] as string) };
  else if (/^(jdbc:)?postgresql:\/\//.test(rawCatalog)) catalog = { kind: 'postgresql', uri: rawCatalog.startsWith('jdbc:') ? rawCatalog : `jdbc:${rawCatalog}` };
  else if (/^https?:\/\//.test(rawCatalog)) catalog = { kind: 'rest', uri: rawCatalog };
  const extra = p.prefixed('icefloe.catalog.');
  const location = warehouse.startsWith('/') ? `file://${warehouse}` : warehouse;
  let defaultCatalogProps: Record<string, string> | undefined;
  switch (catalog.kind) {
    case 'sqlite':
      defaultCatalogProps = { type: 'sql', uri: `jdbc:sqlite:${catalog.path}`, warehouse: location, ...extra };
      break;
    case 'postgresql':
      defaultCatalogProps = { type: 'sql', uri: catalog.uri, warehouse: location, ...extra };
      break;
    case 'rest':
      // A REST catalog's warehouse is the server's identifier, not our directory: only icefloe.catalog.warehouse sets it.
      defaultCatalogProps = { type: 'rest', uri: catalog.uri, ...extra };
      break;
    case 'none':
      defaultCatalogProps = undefined;
  }

  const rest = buildRestConfig(p, (path) => resolvePath(options.baseDir, path));
  const { cluster, missing: clusterMissing } = buildCluster(p);
  const providers = parseConfigProviders(p.original);
  for (const e of providers.errors) p.addError(e.key, e.message);
  for (const w of providers.warnings) p.addWarning(w);

  rejectUnsupported(p, WORKER_UNSUPPORTED);
  for (const key of Object.keys(p.unknown)) {
    // Other unknown keys pass through as in Connect; one that looks like a known key is most likely a typo.
    if (key.startsWith('icefloe.') || p.def.suggest(key) !== undefined) p.addWarning(`${key} is not a known worker key; it is kept but not used${didYouMean(p.def, key)}`);
  }

  const stored = (): Record<string, string> => ({ ...p.original });
  return Object.freeze({
    bootstrapServers: p.list('bootstrap.servers') ?? [],
    keyConverter,
    valueConverter,
    clientSecurity: safeProps(clientSecurity),
    consumerProps: p.prefixed('consumer.'),
    producerProps: p.prefixed('producer.'),
    adminProps: p.prefixed('admin.'),
    warehouse,
    catalog: Object.freeze(catalog),
    defaultCatalogProps: defaultCatalogProps === undefined ? undefined : safeProps(defaultCatalogProps, 'iceberg.catalog.'),
    tasksMode: p.string('icefloe.tasks.mode') === 'in-process' ? 'in-process' : 'process',
    taskIdOffset: p.number('icefloe.tasks.id-offset') ?? 0,
    connectorsFile: resolvePath(options.baseDir, p.string('icefloe.connectors.file') ?? 'icefloe-data/connectors.json'),
    taskShutdownTimeoutMs: p.number('task.shutdown.graceful.timeout.ms') ?? 30_000,
    shutdownTimeoutMs: p.number('icefloe.shutdown.timeout.ms') ?? 60_000,
    logFormat: LOG_FORMATS.find((f) => f === p.string('icefloe.log.format')) ?? 'auto',
    rest,
    cluster,
    clusterMissing,
    configProviders: providers.providers,
    secretKeys: p.secretKeys(),
    warnings: p.warnings,
    stored,
    redacted: () => p.redacted(),
  });
}

/** Distributed mode's settings, or the required keys that are missing. */
function buildCluster(p: ParsedConfig): { cluster: ClusterSettings | null; missing: string[] } {
  const required = ['group.id', 'config.storage.topic', 'status.storage.topic', 'icefloe.redis.url'] as const;
  const missing = required.filter((k) => (k === 'icefloe.redis.url' ? (p.secret(k)?.reveal() ?? '') : (p.string(k) ?? '')) === '');
  const heartbeatMs = p.number('heartbeat.interval.ms') ?? 3000;
  const sessionTimeoutMs = p.number('session.timeout.ms') ?? 10_000;
  if (sessionTimeoutMs <= heartbeatMs) p.addError('session.timeout.ms', `session.timeout.ms (${sessionTimeoutMs}) must exceed heartbeat.interval.ms (${heartbeatMs})`);
  if (missing.length > 0) return { cluster: null, missing };
  return {
    missing,
    cluster: Object.freeze({
      groupId: p.string('group.id') as string,
      configTopic: { name: p.string('config.storage.topic') as string, replicationFactor: p.number('config.storage.replication.factor') ?? 3 },
      statusTopic: { name: p.string('status.storage.topic') as string, partitions: p.number('status.storage.partitions') ?? 5, replicationFactor: p.number('status.storage.replication.factor') ?? 3 },
      heartbeatMs,
      sessionTimeoutMs,
      redisUrl: p.secret('icefloe.redis.url') as Secret,
      leaseTtlMs: p.number('icefloe.cluster.lease.ttl.ms') ?? 15_000,
    }),
  };
}

function resolvePath(baseDir: string, path: string): string {
  const plain = path.startsWith('file://') ? path.slice('file://'.length) : path;
  return isAbsolute(plain) ? plain : resolve(baseDir, plain);
}

// ---------------------------------------------------------------------------------------------------
// Connector files
// ---------------------------------------------------------------------------------------------------

export interface ConnectorFile {
  readonly name: string;
  /** The config as Connect stores it: the file's values as strings, with `name` included. */
  readonly config: Readonly<Record<string, string>>;
  readonly initialState: 'RUNNING' | 'PAUSED' | 'STOPPED';
}

/**
 * Reads a connector file in either shape Connect accepts: `{"name": …, "config": {…}, "initial_state"?}`
 * (the REST create request) or a flat map with `name` (connect-standalone); a `.properties` file is
 * the flat map in properties syntax. Scalars are kept as strings the way Connect's JSON reader coerces
 * them (`"tasks.max": 2` → "2"); objects, arrays and nulls are errors.
 */
export function parseConnectorFile(text: string, fileName: string): ConnectorFile {
  if (fileName.endsWith('.properties')) return fromFlat(parseProperties(text), fileName);
  let doc: unknown;
  try {
    doc = parseJson(text);
  } catch (e) {
    throw new ConfigError(`${fileName}: not valid JSON (${(e as Error).message})`, { cause: e });
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new ConfigError(`${fileName}: expected a JSON object`);
  const obj = doc as Record<string, unknown>;
  if ('config' in obj) {
    const config = obj.config;
    if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new ConfigError(`${fileName}: "config" must be an object of strings`);
    const extra = Object.keys(obj).filter((k) => k !== 'name' && k !== 'config' && k !== 'initial_state');
    if (extra.length > 0) throw new ConfigError(`${fileName}: unexpected field(s) ${extra.join(', ')} beside "name" and "config"`);
    const strings = toStrings(config as Record<string, unknown>, fileName);
    const name = typeof obj.name === 'string' ? obj.name.trim() : undefined;
    if (name === undefined || name === '') {
      if (strings.name === undefined) throw new ConfigError(`${fileName}: the connector has no "name"`);
    } else if (strings.name !== undefined && strings.name !== name) {
      // Kafka's ConnectorsResource text.
      throw new ConfigError(`${fileName}: Connector name configuration (${strings.name}) doesn't match connector name in the URL (${name})`);
    }
    const config2 = strings.name === undefined && name !== undefined ? { ...strings, name } : strings;
    return Object.freeze({ name: config2.name as string, config: Object.freeze(config2), initialState: initialState(obj.initial_state, fileName) });
  }
  return fromFlat(toStrings(obj, fileName), fileName);
}

function fromFlat(map: Record<string, string>, fileName: string): ConnectorFile {
  const name = map.name?.trim();
  if (name === undefined || name === '') throw new ConfigError(`${fileName}: the connector has no "name"`);
  return Object.freeze({ name, config: Object.freeze(map), initialState: 'RUNNING' });
}

function toStrings(obj: Record<string, unknown>, fileName: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') out[k] = String(v);
    else throw new ConfigError(`${fileName}: the value of ${k} must be a string (Connect configs are strings), got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
  }
  return out;
}

function initialState(v: unknown, fileName: string): 'RUNNING' | 'PAUSED' | 'STOPPED' {
  if (v === undefined || v === null) return 'RUNNING';
  const s = typeof v === 'string' ? v.trim().toUpperCase() : '';
  if (s === 'RUNNING' || s === 'PAUSED' || s === 'STOPPED') return s;
  throw new ConfigError(`${fileName}: initial_state must be RUNNING, PAUSED or STOPPED, got ${JSON.stringify(v)}`);
}
