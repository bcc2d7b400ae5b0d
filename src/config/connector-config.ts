/**
 * The Icefloe sink connector's configuration: Kafka Connect's framework keys (reference/connect-rest.md
 * §2.1–2.6), the Apache Iceberg sink's keys with its names and defaults (§2.9), so existing connector
 * JSON carries over unchanged, and Icefloe's own keys under `icefloe.*`.
 *
 * Owns: the ConfigDef (the source of docs/configuration.md), the cross-key rules with the Java sink's
 * exact messages, and the immutable `ConnectorConfig` the runtime consumes.
 * Must not: hand the raw map to the runtime (only typed fields and the sub-maps a catalog or client
 * takes as its own properties leave this module), rewrite or add keys (configs echo back exactly as
 * stored), or print a secret (see `isSecretKey`).
 */
import { regexProblem, tableNameProblem, wholeMatch } from './names.ts';
export { regexProblem, wholeMatch } from './names.ts';
import { partitionByProblem } from '../iceberg/partition-by.ts';
import { ConfigError } from '../core/errors.ts';
import { ConfigDef, Secret, invalidMessage, redactUserInfo, safeProps, validators } from './config-def.ts';
import type { ConfigInfos, ParsedConfig } from './config-def.ts';
import { parseConverter } from './converters.ts';
import type { ConverterConfig } from './converters.ts';

// ---------------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------------

export const ICEFLOE_CONNECTOR_CLASS = 'io.icefloe.connect.IcefloeSinkConnector';
export const APACHE_CONNECTOR_CLASS = 'org.apache.iceberg.connect.IcebergSinkConnector';
export const TABULAR_CONNECTOR_CLASS = 'io.tabular.iceberg.connect.IcebergSinkConnector';

/** Every `connector.class` this connector answers to: the FQCNs and Connect's simple-name aliases (§2.1). */
export const CONNECTOR_CLASS_ALIASES: readonly string[] = [
  ICEFLOE_CONNECTOR_CLASS,
  APACHE_CONNECTOR_CLASS,
  TABULAR_CONNECTOR_CLASS,
  'IcefloeSinkConnector',
  'IcefloeSink',
  'IcebergSinkConnector',
  'IcebergSink',
];

export const KAFKA_METADATA_COLUMNS = ['topic', 'partition', 'offset', 'timestamp', 'key', 'headers'] as const;
export type KafkaMetadataColumn = (typeof KAFKA_METADATA_COLUMNS)[number];

/** The per-table keys `iceberg.table.<table>.<property>` (§2.9). */
export const TABLE_PROPERTIES = ['commit-branch', 'id-columns', 'partition-by', 'route-regex'] as const;
type TableProperty = (typeof TABLE_PROPERTIES)[number];

/** The Java sink's connector-level validation messages (IcebergSinkConfig), verbatim. */
export const MESSAGES = {
  noCatalog: 'Must specify Iceberg catalog properties',
  staticAndDynamic: 'Cannot specify both static and dynamic table names',
  noRouteField: 'Must specify a route field if using dynamic table names',
  noTables: 'Must specify table name(s)',
  // Kafka's SinkConnectorConfig.validate texts (§2.1).
  topicsBoth: 'topics and topics.regex are mutually exclusive options, but both are set.',
  topicsNone: 'Must configure one of topics or topics.regex',
} as const;

const G_COMMON = 'Common';
const G_ERRORS = 'Error Handling';
const G_TABLES = 'Iceberg Tables';
const G_CONTROL = 'Iceberg Control';
const G_CATALOG = 'Iceberg Catalog';
const G_ICEFLOE = 'Icefloe';

const DAY_MS = 24 * 60 * 60 * 1000;

// ---------------------------------------------------------------------------------------------------
// The ConfigDef
// ---------------------------------------------------------------------------------------------------

/** Connect's `NonEmptyStringWithoutControlChars` (connector names). */
const nameValidator = validators.custom('non-empty string without ISO control characters', (v) => {
  if (typeof v !== 'string') return undefined;
  if (v === '') return 'String may not be empty';
  // eslint-disable-next-line no-control-regex
  const ctl = [...v].filter((c) => /[\u0000-\u001f\u007f-\u009f]/.test(c));
  return ctl.length === 0 ? undefined : `String may not contain control sequences but had the following ASCII chars: ${ctl.map((c) => c.charCodeAt(0)).join(', ')}`;
});

const regexValidator = validators.custom('a regular expression', (v) => {
  if (typeof v !== 'string' || v === '') return undefined;
  return regexProblem(v);
});

const partitionByValidator = validators.custom('partition-by terms, e.g. `bucket(id, 16), day(ts), region`', (v) => {
  if (typeof v !== 'string' || v === '') return undefined;
  return partitionByProblem(v);
});

const tableNameValidator = validators.custom('table names `namespace.table`', (v) => {
  if (!Array.isArray(v)) return undefined;
  const bad = v.find((t) => tableNameProblem(t) !== undefined);
  return bad === undefined ? undefined : (tableNameProblem(bad) as string);
});

export const CONNECTOR_CONFIG_DEF: ConfigDef = new ConfigDef()
  // --- Connect framework keys (§2.1) --------------------------------------------------------------
  .define({ name: 'name', type: 'STRING', importance: 'HIGH', group: G_COMMON, width: 'MEDIUM', displayName: 'Connector name', validator: nameValidator,
    doc: 'Globally unique name to use for this connector.' })
  .define({ name: 'connector.class', type: 'STRING', importance: 'HIGH', group: G_COMMON, width: 'LONG', displayName: 'Connector class',
    doc: `Name or alias of the class for this connector. Icefloe answers to ${CONNECTOR_CLASS_ALIASES.join(', ')}; the Apache and Tabular names are accepted so existing connector JSON carries over.` })
  .define({ name: 'tasks.max', type: 'INT', default: '1', importance: 'HIGH', group: G_COMMON, width: 'SHORT', displayName: 'Tasks max', validator: validators.range(1),
    doc: 'Maximum number of tasks to use for this connector.' })
  .define({ name: 'tasks.max.enforce', type: 'BOOLEAN', default: 'true', importance: 'LOW', group: G_COMMON, width: 'SHORT', displayName: 'Enforce tasks max',
    doc: '(Deprecated in Kafka 3.8.) Accepted for compatibility; Icefloe never creates more than tasks.max tasks.' })
  .define({ name: 'key.converter', type: 'CLASS', default: null, importance: 'LOW', group: G_COMMON, width: 'SHORT', displayName: 'Key converter class',
    doc: 'Converter class for record keys; its settings use the class key as prefix (`key.converter.schemas.enable`). Unset: the worker\'s key converter and its settings.' })
  .define({ name: 'value.converter', type: 'CLASS', default: null, importance: 'LOW', group: G_COMMON, width: 'SHORT', displayName: 'Value converter class',
    doc: 'Converter class for record values (JsonConverter, StringConverter, ByteArrayConverter, Confluent AvroConverter or ProtobufConverter); settings as `value.converter.schema.registry.url`, `value.converter.schemas.enable`. Unset: the worker\'s.' })
  .define({ name: 'header.converter', type: 'CLASS', default: null, importance: 'LOW', group: G_COMMON, width: 'SHORT', displayName: 'Header converter class',
    doc: 'Converter class for header values. Unset: the worker\'s (SimpleHeaderConverter).' })
  .define({ name: 'transforms', type: 'LIST', default: '', importance: 'LOW', group: G_COMMON, width: 'LONG', displayName: 'Transforms',
    doc: 'Aliases of the transformations (SMTs) to apply to records, in order; each is configured under `transforms.<alias>.*`.' })
  .define({ name: 'predicates', type: 'LIST', default: '', importance: 'LOW', group: G_COMMON, width: 'LONG', displayName: 'Predicates',
    doc: 'Aliases of the predicates used by transformations; each is configured under `predicates.<alias>.*`.' })
  .define({ name: 'config.action.reload', type: 'STRING', default: 'restart', importance: 'LOW', group: G_COMMON, width: 'MEDIUM', displayName: 'Reload action',
    validator: validators.oneOf(['none', 'restart'], { caseInsensitive: true }),
    doc: 'What to do when a config provider reports a changed value: none, or restart the connector.' })
  .define({ name: 'topics', type: 'LIST', default: '', importance: 'HIGH', group: G_COMMON, width: 'LONG', displayName: 'Topics',
    doc: 'Comma-separated topics to consume. Exactly one of topics and topics.regex must be set.' })
  .define({ name: 'topics.regex', type: 'STRING', default: '', importance: 'HIGH', group: G_COMMON, width: 'LONG', displayName: 'Topics regex', validator: regexValidator,
    doc: 'Regular expression of the topics to consume (matched against the whole name); topics created later join on the next metadata refresh. Exactly one of topics and topics.regex must be set.' })
  // --- Error handling (§2.5) -----------------------------------------------------------------------
  .define({ name: 'errors.retry.timeout', type: 'LONG', default: '0', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Retry Timeout for Errors', validator: validators.range(-1),
    doc: 'Total time in ms a failed conversion or transformation is retried; -1 retries forever, 0 not at all.' })
  .define({ name: 'errors.retry.delay.max.ms', type: 'LONG', default: '60000', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Maximum Delay Between Retries for Errors', validator: validators.range(1),
    doc: 'Cap of the backoff between retries, in ms (jitter is added).' })
  .define({ name: 'errors.tolerance', type: 'STRING', default: 'none', importance: 'MEDIUM', group: G_ERRORS, width: 'SHORT', displayName: 'Error Tolerance',
    validator: validators.oneOf(['none', 'all'], { caseInsensitive: true }),
    doc: 'none: a record that cannot be converted or transformed fails the task; all: it is skipped (logged, and sent to the dead-letter queue when one is configured). Infrastructure errors are retried, never tolerated.' })
  .define({ name: 'errors.log.enable', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_ERRORS, width: 'SHORT', displayName: 'Log Errors',
    doc: 'Log each tolerated error with its topic, partition and offset.' })
  .define({ name: 'errors.log.include.messages', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_ERRORS, width: 'SHORT', displayName: 'Log Error Details',
    doc: 'Also log the record\'s key, value and headers (may be sensitive).' })
  .define({ name: 'errors.deadletterqueue.topic.name', type: 'STRING', default: '', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Dead Letter Queue Topic Name',
    doc: 'Topic that receives the raw bytes of records that failed conversion or transformation (with errors.tolerance=all). Empty: no dead-letter queue. It may not be one of the consumed topics.' })
  .define({ name: 'errors.deadletterqueue.topic.replication.factor', type: 'SHORT', default: '3', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Dead Letter Queue Topic Replication Factor',
    validator: validators.custom('-1 or at least 1', (v) => (v === 0 || (typeof v === 'number' && v < -1) ? 'Value must be -1 (broker default) or at least 1' : undefined)),
    doc: 'Replication factor used when the dead-letter queue topic is created (1 partition); -1 takes the broker default.' })
  .define({ name: 'errors.deadletterqueue.context.headers.enable', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Enable Error Context Headers',
    doc: 'Add the `__connect.errors.*` headers (topic, partition, offset, stage, exception) to dead-letter records.' })
  // --- Apache Iceberg sink: tables and routing (§2.9) -----------------------------------------------
  .define({ name: 'iceberg.tables', type: 'LIST', default: null, importance: 'HIGH', group: G_TABLES, validator: tableNameValidator,
    doc: 'Comma-separated destination tables (`namespace.table`). Required unless iceberg.tables.dynamic-enabled is true; cannot be combined with it. Without a route field every record goes to every table listed.' })
  .define({ name: 'iceberg.tables.dynamic-enabled', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_TABLES,
    doc: 'Route each record to the table named by the value of iceberg.tables.route-field.' })
  .define({ name: 'iceberg.tables.route-field', type: 'STRING', default: null, importance: 'MEDIUM', group: G_TABLES,
    doc: 'Record field used for routing (dotted for nested fields). Required with dynamic routing; with static tables it is matched against each table\'s iceberg.table.<table>.route-regex.' })
  .define({ name: 'iceberg.tables.default-commit-branch', type: 'STRING', default: null, importance: 'MEDIUM', group: G_TABLES, defaultDoc: 'null (main)',
    doc: 'Branch commits go to, unless a table sets iceberg.table.<table>.commit-branch.' })
  .define({ name: 'iceberg.tables.default-id-columns', type: 'STRING', default: null, importance: 'MEDIUM', group: G_TABLES,
    doc: 'Comma-separated identifier (primary key) columns of auto-created tables, unless a table sets iceberg.table.<table>.id-columns.' })
  .define({ name: 'iceberg.tables.default-partition-by', type: 'STRING', default: null, importance: 'MEDIUM', group: G_TABLES, validator: partitionByValidator,
    doc: 'Partition spec of auto-created tables, e.g. `bucket(id, 16), day(ts)` (commas inside parentheses do not split), unless a table sets iceberg.table.<table>.partition-by. Terms: `col`, `identity(col)`, `year|month|day|hour(col)` (plural forms too), `bucket(col, N)`, `truncate(col, W)`. An invalid spec is an error, never an unpartitioned table.' })
  .define({ name: 'iceberg.tables.auto-create-enabled', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_TABLES,
    doc: 'Create a missing destination table from the record\'s schema (Avro/Protobuf/JSON schema → Iceberg types).' })
  .define({ name: 'iceberg.tables.evolve-schema-enabled', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_TABLES,
    doc: 'Add missing columns and widen types (int→long, float→double, decimal precision) when records carry a newer schema.' })
  .define({ name: 'iceberg.tables.schema-force-optional', type: 'BOOLEAN', default: 'false', importance: 'LOW', group: G_TABLES,
    doc: 'Make every column optional when a table is created or evolved.' })
  .define({ name: 'iceberg.tables.schema-case-insensitive', type: 'BOOLEAN', default: 'false', importance: 'LOW', group: G_TABLES,
    doc: 'Match record fields to table columns case-insensitively.' })
  .definePrefix({ prefix: 'iceberg.tables.auto-create-props.', group: G_TABLES,
    doc: 'Table properties set on auto-created tables, e.g. `iceberg.tables.auto-create-props.format-version=2`.' })
  .definePrefix({ prefix: 'iceberg.tables.write-props.', group: G_TABLES,
    doc: 'Writer properties (`write.target-file-size-bytes`, `write.parquet.compression-codec`, ...); they take precedence over the table\'s own properties.' })
  .definePrefix({ prefix: 'iceberg.table.', group: G_TABLES, pattern: 'iceberg.table.<table>.{commit-branch,id-columns,partition-by,route-regex}',
    doc: 'Per-table settings, the table named as in iceberg.tables (`iceberg.table.db.orders.partition-by`): commit-branch, id-columns and partition-by override the iceberg.tables.default-* keys; route-regex sends a record to this table when the route field\'s value matches the whole regex (static fan-out).' })
  // --- Apache Iceberg sink: control topic and commits (§2.9) ----------------------------------------
  .define({ name: 'iceberg.control.topic', type: 'STRING', default: 'control-iceberg', importance: 'MEDIUM', group: G_CONTROL, validator: validators.nonEmpty(),
    doc: 'Topic that carries the file announcements of every commit cycle (created if missing, see icefloe.control.topic.*). Give each connector its own, or share one: announcements carry the connector\'s group id.' })
  .define({ name: 'iceberg.control.group-id-prefix', type: 'STRING', default: 'cg-control-', importance: 'LOW', group: G_CONTROL,
    doc: 'Prefix of the Java sink\'s transient control-topic consumer groups. Accepted for compatibility; Icefloe\'s committer reads the control topic by assignment and keeps its positions in the table snapshots, so it creates no such groups.' })
  .define({ name: 'iceberg.connect.group-id', type: 'STRING', default: null, importance: 'LOW', group: G_CONTROL, defaultDoc: 'null (connect-<name>)',
    doc: 'The Connect consumer group whose offsets the tasks commit: connect-<name>, or consumer.override.group.id when set. Should not be set under normal conditions; if set it must equal that group.' })
  .define({ name: 'iceberg.control.commit.interval-ms', type: 'INT', default: '300000', importance: 'MEDIUM', group: G_CONTROL, validator: validators.range(1),
    doc: 'Commit cycle interval in ms: at most this long after a cycle starts, tasks announce their files and the committer commits them (see also icefloe.commit.max-bytes and icefloe.commit.max-records).' })
  .define({ name: 'iceberg.control.commit.timeout-ms', type: 'INT', default: '30000', importance: 'MEDIUM', group: G_CONTROL, validator: validators.range(1),
    doc: 'How long a cycle waits for every task\'s announcement before the committer commits what has arrived; the rest follows in the next commit, never lost.' })
  .define({ name: 'iceberg.control.commit.threads', type: 'INT', default: null, importance: 'LOW', group: G_CONTROL, validator: validators.range(1), defaultDoc: 'null (cores × 2)',
    doc: 'How many tables one committer commits concurrently.' })
  .define({ name: 'iceberg.control.commit.max-consecutive-failures', type: 'INT', default: '1', importance: 'LOW', group: G_CONTROL, validator: validators.range(1),
    doc: 'Accepted for compatibility; not used by the standalone worker, which retries a failed table commit every round and a failed task cycle with back-off (up to 10 s), for as long as the failure is retriable, logging each attempt. A failure that cannot succeed by retrying (an announcement that cannot be applied) stops the table instead.' })
  .define({ name: 'iceberg.coordinator-executor-keep-alive-timeout-ms', type: 'LONG', default: '120000', importance: 'LOW', group: G_CONTROL, validator: validators.range(0),
    doc: 'Keep-alive of the Java coordinator\'s commit threads. Accepted for compatibility; Icefloe has no thread pool to keep alive.' })
  .define({ name: 'iceberg.coordinator.transactional.prefix', type: 'STRING', default: '', importance: 'LOW', group: G_CONTROL,
    doc: 'Prefix of the tasks\' Kafka `transactional.id`s (`<prefix><connector>-<task>`), for brokers whose ACLs constrain transactional ids.' })
  // --- Apache Iceberg sink: catalog and clients (§2.9) ----------------------------------------------
  .define({ name: 'iceberg.catalog', type: 'STRING', default: 'iceberg', importance: 'HIGH', group: G_CATALOG, validator: validators.nonEmpty(),
    doc: 'Catalog name (for logs and the SQL catalog\'s catalog_name column).' })
  .definePrefix({ prefix: 'iceberg.catalog.', group: G_CATALOG,
    doc: 'Catalog properties, at least one required ("Must specify Iceberg catalog properties") unless the worker provides a default catalog: `type` (rest, or sql/jdbc for a JDBC catalog on SQLite or PostgreSQL), `uri`, `warehouse`, `credential`/`token` (secrets), `s3.endpoint`, `s3.path-style-access`, `s3.access-key-id`, `s3.secret-access-key`, `client.region`, `header.*`, `jdbc.user`/`jdbc.password`. Keys containing secret, password, token or credential are redacted in logs and status.' })
  .define({ name: 'iceberg.hadoop-conf-dir', type: 'STRING', default: null, importance: 'LOW', group: G_CATALOG,
    doc: 'Directory of Hadoop XML files. Accepted for compatibility and ignored: Icefloe has no Hadoop FileIO.' })
  .definePrefix({ prefix: 'iceberg.hadoop.', group: G_CATALOG, doc: 'Hadoop configuration overrides. Accepted for compatibility and ignored.' })
  .definePrefix({ prefix: 'iceberg.kafka.', group: G_CONTROL,
    doc: 'Kafka client settings for the control-topic producer, consumer and admin, layered over the worker\'s client settings (e.g. `iceberg.kafka.security.protocol`).' })
  // --- Connect client overrides (§2.6) and converter / SMT settings (§2.3–2.4) ----------------------
  .definePrefix({ prefix: 'consumer.override.', group: G_COMMON,
    doc: 'Settings for the task consumer (e.g. `max.poll.records`, `auto.offset.reset`, `group.id`, `sasl.jaas.config`). `enable.auto.commit` cannot be turned on: offsets are committed in the commit cycle\'s transaction.' })
  .definePrefix({ prefix: 'producer.override.', group: G_COMMON, doc: 'Settings for the task\'s transactional producer (control topic and dead-letter queue).' })
  .definePrefix({ prefix: 'admin.override.', group: G_COMMON, doc: 'Settings for the admin client (control and dead-letter topic creation, offsets).' })
  .definePrefix({ prefix: 'key.converter.', group: G_COMMON, doc: 'Settings of the connector\'s key converter (only when key.converter is set here).' })
  .definePrefix({ prefix: 'value.converter.', group: G_COMMON,
    doc: 'Settings of the connector\'s value converter (only when value.converter is set here): `schema.registry.url`, `basic.auth.credentials.source`, `basic.auth.user.info`, `schemas.enable`, `decimal.format`.' })
  .definePrefix({ prefix: 'header.converter.', group: G_COMMON, doc: 'Settings of the connector\'s header converter.' })
  .definePrefix({ prefix: 'transforms.', group: G_COMMON, pattern: 'transforms.<alias>.*', doc: 'Each transformation: `type` (class), `predicate`, `negate` and the SMT\'s own settings.' })
  .definePrefix({ prefix: 'predicates.', group: G_COMMON, pattern: 'predicates.<alias>.*', doc: 'Each predicate: `type` (class) and its settings.' })
  // --- Icefloe's own keys ----------------------------------------------------------------------------
  .define({ name: 'icefloe.commit.max-bytes', type: 'LONG', default: null, importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.range(1), defaultDoc: 'null (no byte trigger)',
    doc: 'Start a commit cycle early once a task has consumed this many bytes of record keys and values since the last one. Cycles still start at least every iceberg.control.commit.interval-ms.' })
  .define({ name: 'icefloe.commit.max-records', type: 'LONG', default: null, importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.range(1), defaultDoc: 'null (no record trigger)',
    doc: 'Start a commit cycle early once a task has consumed this many records since the last one.' })
  .define({ name: 'icefloe.tables.unrouted', type: 'STRING', default: 'fail', importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.oneOf(['fail', 'skip']),
    doc: 'What happens to a record that routes to no table (no route-regex matches, a null route field, an unknown table with auto-create off): fail the task with the reason, or skip it and count it in the `records-unrouted` metric. Never dropped silently. (Sending it to the dead-letter queue comes later.)' })
  .define({ name: 'icefloe.tables.kafka-metadata-columns', type: 'LIST', default: '', importance: 'LOW', group: G_ICEFLOE, validator: validators.listOf(KAFKA_METADATA_COLUMNS),
    doc: 'Kafka metadata to write as extra columns of every table: any of topic (string), partition (int), offset (long), timestamp (timestamptz), key (binary), headers (map<string, binary>). Empty: none.' })
  .define({ name: 'icefloe.tables.kafka-metadata-prefix', type: 'STRING', default: '_kafka_metadata_', importance: 'LOW', group: G_ICEFLOE,
    validator: validators.matches(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a column name prefix (letters, digits, underscore)'),
    doc: 'Prefix of the metadata column names (`_kafka_metadata_offset`); the default matches the flat names of Iceberg\'s KafkaMetadataTransform.' })
  .define({ name: 'icefloe.control.topic.partitions', type: 'INT', default: '1', importance: 'LOW', group: G_ICEFLOE, validator: validators.range(1),
    doc: 'Partitions of the control topic when Icefloe creates it.' })
  .define({ name: 'icefloe.control.topic.replication.factor', type: 'SHORT', default: '-1', importance: 'LOW', group: G_ICEFLOE,
    validator: validators.custom('-1 or at least 1', (v) => (v === 0 || (typeof v === 'number' && v < -1) ? 'Value must be -1 (broker default) or at least 1' : undefined)),
    doc: 'Replication factor of the control topic when Icefloe creates it; -1 takes the broker default.' })
  .define({ name: 'icefloe.control.topic.retention-ms', type: 'LONG', default: String(7 * DAY_MS), importance: 'MEDIUM', group: G_ICEFLOE,
    validator: validators.custom('-1 or at least 3600000', (v) => (typeof v === 'number' && v !== -1 && v < 3_600_000 ? 'Value must be -1 (unlimited) or at least 3600000 (1 hour)' : undefined)),
    doc: 'Retention of the control topic when Icefloe creates it (default 7 days). Announcements not yet committed must outlive any committer outage, so keep it long; Icefloe warns when the oldest unapplied announcement nears it.' })
  .define({ name: 'icefloe.control.topic.auto-create', type: 'BOOLEAN', default: 'true', importance: 'LOW', group: G_ICEFLOE,
    doc: 'Create the control topic (compaction off, the partitions, replication and retention above) when it does not exist. Off: a missing control topic fails the connector.' });

// ---------------------------------------------------------------------------------------------------
// The typed result
// ---------------------------------------------------------------------------------------------------

export type TopicSelection =
  | { readonly kind: 'list'; readonly topics: readonly string[] }
  /** `regex` matches the whole topic name (Java `Pattern.matcher().matches()`). */
  | { readonly kind: 'regex'; readonly pattern: string; readonly regex: RegExp };

export interface TableSettings {
  readonly commitBranch: string;
  readonly idColumns: readonly string[];
  /** The `partition-by` text (syntax checked), '' for unpartitioned. */
  readonly partitionBy: string;
  /** Whole-match regex on the route field's value (static fan-out), or null. */
  readonly routeRegex: RegExp | null;
}

/**
 * How records find their tables:
 * - `all`: no route field; every record goes to every table listed.
 * - `regex`: static tables, each receiving the records whose route field matches its route-regex.
 * - `dynamic`: the route field's value names the table.
 */
export type Routing =
  | { readonly kind: 'all'; readonly tables: readonly string[] }
  | { readonly kind: 'regex'; readonly field: string; readonly routes: readonly { readonly table: string; readonly regex: RegExp }[] }
  | { readonly kind: 'dynamic'; readonly field: string };

export interface TablesConfig {
  readonly routing: Routing;
  readonly autoCreate: boolean;
  readonly evolveSchema: boolean;
  readonly forceOptional: boolean;
  readonly caseInsensitive: boolean;
  readonly autoCreateProps: Readonly<Record<string, string>>;
  readonly writeProps: Readonly<Record<string, string>>;
  readonly unrouted: 'fail' | 'skip';
  readonly kafkaMetadata: { readonly columns: readonly KafkaMetadataColumn[]; readonly prefix: string };
  /** The settings of one table: its `iceberg.table.<t>.*` keys over the iceberg.tables.default-* keys. */
  settings(table: string): TableSettings;
}

export interface S3Settings {
  readonly endpoint: string | null;
  readonly region: string | null;
  readonly pathStyleAccess: boolean;
  readonly accessKeyId: string | null;
  readonly secretAccessKey: Secret | null;
  readonly sessionToken: Secret | null;
}

export interface CatalogConfig {
  readonly name: string;
  /** `sql` covers Java's `jdbc` type (the same two tables, PyIceberg calls it sql). */
  readonly type: 'rest' | 'sql';
  readonly uri: string;
  readonly warehouse: string | null;
  readonly credential: Secret | null;
  readonly token: Secret | null;
  readonly s3: S3Settings;
  /** Every catalog property as given (prefix stripped), for the catalog adapter; JSON/inspect show secrets as "[hidden]". */
  readonly props: Readonly<Record<string, string>>;
  /** True when the props came from the worker's default catalog. */
  readonly fromWorker: boolean;
}

export interface TransformConfig {
  readonly alias: string;
  readonly type: string;
  readonly predicate: string | null;
  readonly negate: boolean;
  /** The SMT's own settings (prefix `transforms.<alias>.` stripped, without type/predicate/negate). */
  readonly props: Readonly<Record<string, string>>;
}

export interface PredicateConfig {
  readonly alias: string;
  readonly type: string;
  readonly props: Readonly<Record<string, string>>;
}

export interface ErrorHandling {
  readonly tolerance: 'none' | 'all';
  readonly retryTimeoutMs: number;
  readonly retryDelayMaxMs: number;
  readonly logEnable: boolean;
  readonly logIncludeMessages: boolean;
  readonly dlq: { readonly topic: string; readonly replicationFactor: number; readonly contextHeaders: boolean } | null;
}

export interface ControlConfig {
  readonly topic: string;
  readonly commitIntervalMs: number;
  readonly commitTimeoutMs: number;
  readonly commitThreads: number | null;
  readonly maxConsecutiveFailures: number;
  readonly transactionalPrefix: string;
  readonly topicPartitions: number;
  readonly topicReplicationFactor: number;
  readonly topicRetentionMs: number;
  readonly autoCreateTopic: boolean;
  /** `iceberg.kafka.*`, layered over the worker's client settings. */
  readonly kafkaProps: Readonly<Record<string, string>>;
}

/** What the runtime consumes: typed, frozen, with the stored map kept only for echo and redaction. */
export interface ConnectorConfig {
  readonly name: string;
  readonly connectorClass: string;
  readonly tasksMax: number;
  readonly topics: TopicSelection;
  /** The consumer group whose offsets the tasks commit (connect-<name> or consumer.override.group.id). */
  readonly groupId: string;
  /** Null: the worker's converter (and its settings) applies. */
  readonly keyConverter: ConverterConfig | null;
  readonly valueConverter: ConverterConfig | null;
  readonly headerConverter: string | null;
  readonly transforms: readonly TransformConfig[];
  readonly predicates: readonly PredicateConfig[];
  readonly errors: ErrorHandling;
  readonly consumerOverrides: Readonly<Record<string, string>>;
  readonly producerOverrides: Readonly<Record<string, string>>;
  readonly adminOverrides: Readonly<Record<string, string>>;
  readonly tables: TablesConfig;
  readonly control: ControlConfig;
  readonly commit: { readonly intervalMs: number; readonly maxBytes: number | null; readonly maxRecords: number | null };
  readonly catalog: CatalogConfig;
  /** Keys of the stored map that hold secrets (redacted in logs and status). */
  readonly secretKeys: readonly string[];
  /** Notes that are not errors: ignored keys, likely typos, legacy names. */
  readonly warnings: readonly string[];
  /** The map exactly as stored, a fresh copy (REST `GET /connectors/{c}/config`). */
  stored(): Record<string, string>;
  /** The stored map with secrets replaced by "[hidden]": the only form that may be logged. */
  redacted(): Record<string, string>;
}

export interface ConnectorParseOptions {
  /**
   * Catalog properties (the `iceberg.catalog.*` vocabulary, prefix stripped) the worker offers when the
   * connector names none: the embedded standalone default (worker-config.ts `defaultCatalogProps`).
   */
  readonly defaultCatalog?: Readonly<Record<string, string>>;
}

/** The outcome of validation: every error per key, warnings, Connect's ConfigInfos, and the config when valid. */
export interface ConnectorValidation {
  readonly config: ConnectorConfig | null;
  readonly errors: ReadonlyMap<string, readonly string[]>;
  readonly errorCount: number;
  readonly warnings: readonly string[];
  /** Secret keys of the submitted map. */
  readonly secretKeys: readonly string[];
  /** `PUT /connector-plugins/{p}/config/validate`: `name` is connector.class as submitted. */
  configInfos(): ConfigInfos;
  redacted(): Record<string, string>;
}

/** Validates a connector config, collecting every problem; never throws for bad input. */
export function validateConnectorConfig(raw: Readonly<Record<string, string>>, options: ConnectorParseOptions = {}): ConnectorValidation {
  const parsed = CONNECTOR_CONFIG_DEF.parse(raw);
  const config = build(parsed, options);
  const errorCount = parsed.errorCount;
  return Object.freeze({
    config: errorCount === 0 ? config : null,
    errors: parsed.errors(),
    errorCount,
    warnings: parsed.warnings,
    secretKeys: parsed.secretKeys(),
    configInfos: () => parsed.toConfigInfos(raw['connector.class'] ?? ''),
    redacted: () => parsed.redacted(),
  });
}

/** Parses a connector config or throws one ConfigError listing every problem (by key). */
export function parseConnectorConfig(raw: Readonly<Record<string, string>>, options: ConnectorParseOptions = {}): ConnectorConfig {
  const v = validateConnectorConfig(raw, options);
  if (v.config !== null) return v.config;
  const lines = [...v.errors].flatMap(([, errs]) => errs);
  const name = raw.name ?? '(unnamed)';
  throw new ConfigError(`connector ${name}: ${v.errorCount} configuration error(s): ${lines.join('; ')}`, {
    context: { connector: name, errors: Object.fromEntries(v.errors) },
  });
}

// ---------------------------------------------------------------------------------------------------
// Cross-key rules and assembly
// ---------------------------------------------------------------------------------------------------

const LEGACY_TABULAR_KEYS: Readonly<Record<string, string>> = {
  'iceberg.tables.routeField': 'iceberg.tables.route-field',
  'iceberg.tables.dynamicEnabled': 'iceberg.tables.dynamic-enabled',
  'iceberg.tables.autoCreateEnabled': 'iceberg.tables.auto-create-enabled',
  'iceberg.tables.evolveSchemaEnabled': 'iceberg.tables.evolve-schema-enabled',
  'iceberg.tables.defaultIdColumns': 'iceberg.tables.default-id-columns',
  'iceberg.tables.defaultPartitionBy': 'iceberg.tables.default-partition-by',
  'iceberg.tables.schemaForceOptional': 'iceberg.tables.schema-force-optional',
  'iceberg.tables.defaultCommitBranch': 'iceberg.tables.default-commit-branch',
  'iceberg.control.commitIntervalMs': 'iceberg.control.commit.interval-ms',
  'iceberg.control.commitTimeoutMs': 'iceberg.control.commit.timeout-ms',
  'iceberg.control.commitThreads': 'iceberg.control.commit.threads',
};

/** Tabular keys that change what lands in the table; appending instead would be silent data change. */
const UNSUPPORTED_SEMANTIC_KEYS = ['iceberg.tables.cdc-field', 'iceberg.tables.cdcField', 'iceberg.tables.upsert-mode-enabled', 'iceberg.tables.upsertModeEnabled'];

const s = (p: ParsedConfig, k: string): string | null => p.string(k);
const n = (p: ParsedConfig, k: string): number => p.number(k) ?? 0;
const b = (p: ParsedConfig, k: string): boolean => p.boolean(k) ?? false;
const l = (p: ParsedConfig, k: string): readonly string[] => p.list(k) ?? [];
const csv = (text: string | null | undefined): readonly string[] =>
  text === null || text === undefined || text.trim() === '' ? [] : text.split(',').map((c) => c.trim()).filter((c) => c !== '');

function build(p: ParsedConfig, options: ConnectorParseOptions): ConnectorConfig {
  const name = s(p, 'name') ?? '';

  // connector.class
  const cls = s(p, 'connector.class');
  if (cls !== null && !CONNECTOR_CLASS_ALIASES.includes(cls)) {
    p.addError('connector.class', `Failed to find any class that implements Connector and which name matches ${cls}, available connectors are: ${CONNECTOR_CLASS_ALIASES.join(', ')}`);
  }

  // topics / topics.regex (Kafka SinkConnectorConfig.validate), reported on both keys.
  const topicsList = l(p, 'topics');
  const topicsRegex = s(p, 'topics.regex') ?? '';
  let topics: TopicSelection = { kind: 'list', topics: topicsList };
  if (topicsList.length > 0 && topicsRegex !== '') {
    p.addError('topics', MESSAGES.topicsBoth);
    p.addError('topics.regex', MESSAGES.topicsBoth);
  } else if (topicsList.length === 0 && topicsRegex === '') {
    p.addError('topics', MESSAGES.topicsNone);
    p.addError('topics.regex', MESSAGES.topicsNone);
  } else if (topicsRegex !== '' && regexProblem(topicsRegex) === undefined) {
    topics = { kind: 'regex', pattern: topicsRegex, regex: wholeMatch(topicsRegex) };
  }
  const dupTopic = topicsList.find((t, i) => topicsList.indexOf(t) !== i);
  if (dupTopic !== undefined) p.addError('topics', invalidMessage('topics', topicsList.join(','), `The topic ${dupTopic} is listed twice`));

  // Dead-letter queue may not be a consumed topic (Kafka's texts).
  const dlqTopic = s(p, 'errors.deadletterqueue.topic.name') ?? '';
  if (dlqTopic !== '') {
    if (topicsList.includes(dlqTopic)) {
      p.addError('errors.deadletterqueue.topic.name', `The DLQ topic '${dlqTopic}' may not be included in the list of topics ('topics=[${topicsList.join(', ')}]') consumed by the connector`);
    }
    if (topics.kind === 'regex' && topics.regex.test(dlqTopic)) {
      p.addError('errors.deadletterqueue.topic.name', `The DLQ topic '${dlqTopic}' may not be included in the regex matching topic names ('topics.regex=${topicsRegex}') consumed by the connector`);
    }
  }
  const tolerance = (s(p, 'errors.tolerance') ?? 'none').toLowerCase() === 'all' ? 'all' : 'none';

  // Converters (§2.3): a connector-level class is configured by the connector's own sub-settings only.
  const converter = (key: 'key.converter' | 'value.converter'): ConverterConfig | null => {
    const className = s(p, key);
    if (className === null || className === '') return null;
    const r = parseConverter(key, className, p.prefixed(`${key}.`));
    for (const e of r.errors) p.addError(e.key, e.message);
    return r.converter;
  };
  const keyConverter = converter('key.converter');
  const valueConverter = converter('value.converter');
  for (const kind of ['key', 'value'] as const) {
    const sub = Object.keys(p.prefixed(`${kind}.converter.`));
    if (s(p, `${kind}.converter`) === null && sub.length > 0) {
      p.addWarning(`${kind}.converter.* settings (${sub.join(', ')}) are ignored: ${kind}.converter is not set here, so the worker's converter and the worker's settings apply`);
    }
  }

  // Transforms and predicates (§2.4): each alias needs a type; aliases are unique.
  const transforms = aliases(p, 'transforms').map((alias): TransformConfig => {
    const own = pickPrefix(p.prefixed('transforms.'), `${alias}.`);
    const type = own.type ?? '';
    const negateRaw = own.negate ?? 'false';
    if (!/^(true|false)$/i.test(negateRaw.trim())) p.addError(`transforms.${alias}.negate`, invalidMessage(`transforms.${alias}.negate`, negateRaw, 'Expected value to be either true or false'));
    const predicate = own.predicate?.trim() ?? null;
    if (predicate !== null && predicate !== '' && !l(p, 'predicates').includes(predicate)) {
      p.addError(`transforms.${alias}.predicate`, invalidMessage(`transforms.${alias}.predicate`, predicate, `The predicate ${predicate} is not listed in predicates`));
    }
    delete own.type;
    delete own.predicate;
    delete own.negate;
    return Object.freeze({ alias, type, predicate: predicate === '' ? null : predicate, negate: negateRaw.trim().toLowerCase() === 'true', props: Object.freeze(own) });
  });
  const predicates = aliases(p, 'predicates').map((alias): PredicateConfig => {
    const own = pickPrefix(p.prefixed('predicates.'), `${alias}.`);
    const type = own.type ?? '';
    delete own.type;
    return Object.freeze({ alias, type, props: Object.freeze(own) });
  });

  // Consumer group (§2.6): iceberg.connect.group-id, when set, must name the group the tasks really use.
  const consumerOverrides = p.prefixed('consumer.override.');
  const groupId = consumerOverrides['group.id'] ?? `connect-${name}`;
  const icebergGroup = s(p, 'iceberg.connect.group-id');
  if (icebergGroup !== null && icebergGroup !== groupId) {
    p.addError('iceberg.connect.group-id', invalidMessage('iceberg.connect.group-id', icebergGroup, `Must equal the connector's consumer group ${groupId} (consumer.override.group.id, or connect-<name>)`));
  }
  const autoCommit = consumerOverrides['enable.auto.commit'];
  if (autoCommit !== undefined && autoCommit.trim().toLowerCase() !== 'false') {
    p.addError('consumer.override.enable.auto.commit', invalidMessage('consumer.override.enable.auto.commit', autoCommit, 'Offsets are committed with the files they cover, in the commit cycle\'s transaction; auto-commit cannot be enabled'));
  }

  // Tables and routing (IcebergSinkConfig's rules, its messages verbatim).
  const staticTables = p.list('iceberg.tables');
  const dynamic = b(p, 'iceberg.tables.dynamic-enabled');
  const routeField = s(p, 'iceberg.tables.route-field');
  const hasStatic = staticTables !== null && staticTables.length > 0;
  if (hasStatic && dynamic) p.addError('iceberg.tables', MESSAGES.staticAndDynamic);
  if (dynamic && (routeField === null || routeField === '')) p.addError('iceberg.tables.route-field', MESSAGES.noRouteField);
  if (!hasStatic && !dynamic) p.addError('iceberg.tables', MESSAGES.noTables);
  const perTable = perTableSettings(p, hasStatic ? staticTables : [], dynamic);
  const defaults = {
    commitBranch: s(p, 'iceberg.tables.default-commit-branch') ?? 'main',
    idColumns: csv(s(p, 'iceberg.tables.default-id-columns')),
    partitionBy: s(p, 'iceberg.tables.default-partition-by') ?? '',
  };
  const settings = (table: string): TableSettings => {
    const own = perTable.get(table) ?? {};
    return Object.freeze({
      commitBranch: own['commit-branch'] ?? defaults.commitBranch,
      idColumns: own['id-columns'] === undefined ? defaults.idColumns : csv(own['id-columns']),
      partitionBy: own['partition-by'] ?? defaults.partitionBy,
      routeRegex: own['route-regex'] === undefined || regexProblem(own['route-regex']) !== undefined ? null : wholeMatch(own['route-regex']),
    });
  };
  let routing: Routing;
  if (dynamic) routing = { kind: 'dynamic', field: routeField ?? '' };
  else if (routeField !== null && routeField !== '') {
    const routes = (staticTables ?? []).flatMap((table) => {
      const regex = settings(table).routeRegex;
      if (regex === null) p.addWarning(`iceberg.tables.route-field is set but iceberg.table.${table}.route-regex is not: table ${table} receives no records`);
      return regex === null ? [] : [{ table, regex }];
    });
    routing = { kind: 'regex', field: routeField, routes };
  } else {
    routing = { kind: 'all', tables: staticTables ?? [] };
    for (const [table, own] of perTable) {
      if (own['route-regex'] !== undefined) p.addWarning(`iceberg.table.${table}.route-regex is ignored: iceberg.tables.route-field is not set`);
    }
  }

  // Catalog: at least one iceberg.catalog.* property, or the worker's default.
  const catalog = catalogConfig(p, options);

  // Control topic retention must outlive several commit cycles.
  const intervalMs = n(p, 'iceberg.control.commit.interval-ms');
  const retention = n(p, 'icefloe.control.topic.retention-ms');
  if (retention !== -1 && retention > 0 && intervalMs > 0 && retention < 10 * intervalMs) {
    p.addError('icefloe.control.topic.retention-ms', invalidMessage('icefloe.control.topic.retention-ms', String(retention), `Must be at least 10 × iceberg.control.commit.interval-ms (${10 * intervalMs}): unapplied announcements must outlive a committer outage`));
  }

  warnUnknown(p);

  const metadataColumns = l(p, 'icefloe.tables.kafka-metadata-columns').filter((c): c is KafkaMetadataColumn => (KAFKA_METADATA_COLUMNS as readonly string[]).includes(c));
  const dlq = dlqTopic === '' ? null : Object.freeze({ topic: dlqTopic, replicationFactor: n(p, 'errors.deadletterqueue.topic.replication.factor'), contextHeaders: b(p, 'errors.deadletterqueue.context.headers.enable') });
  const secretKeys = p.secretKeys();
  const warnings = p.warnings;
  const redacted = (): Record<string, string> => p.redacted();
  const stored = (): Record<string, string> => ({ ...p.original });

  return Object.freeze({
    name,
    connectorClass: cls ?? '',
    tasksMax: n(p, 'tasks.max'),
    topics: Object.freeze(topics),
    groupId,
    keyConverter,
    valueConverter,
    headerConverter: s(p, 'header.converter'),
    transforms: Object.freeze(transforms),
    predicates: Object.freeze(predicates),
    errors: Object.freeze({
      tolerance,
      retryTimeoutMs: n(p, 'errors.retry.timeout'),
      retryDelayMaxMs: n(p, 'errors.retry.delay.max.ms'),
      logEnable: b(p, 'errors.log.enable'),
      logIncludeMessages: b(p, 'errors.log.include.messages'),
      dlq,
    }),
    consumerOverrides,
    producerOverrides: p.prefixed('producer.override.'),
    adminOverrides: p.prefixed('admin.override.'),
    tables: Object.freeze({
      routing: Object.freeze(routing),
      autoCreate: b(p, 'iceberg.tables.auto-create-enabled'),
      evolveSchema: b(p, 'iceberg.tables.evolve-schema-enabled'),
      forceOptional: b(p, 'iceberg.tables.schema-force-optional'),
      caseInsensitive: b(p, 'iceberg.tables.schema-case-insensitive'),
      autoCreateProps: p.prefixed('iceberg.tables.auto-create-props.'),
      writeProps: p.prefixed('iceberg.tables.write-props.'),
      unrouted: s(p, 'icefloe.tables.unrouted') === 'skip' ? 'skip' : 'fail',
      kafkaMetadata: Object.freeze({ columns: Object.freeze(metadataColumns), prefix: s(p, 'icefloe.tables.kafka-metadata-prefix') ?? '' }),
      settings,
    }),
    control: Object.freeze({
      topic: s(p, 'iceberg.control.topic') ?? '',
      commitIntervalMs: intervalMs,
      commitTimeoutMs: n(p, 'iceberg.control.commit.timeout-ms'),
      commitThreads: p.number('iceberg.control.commit.threads'),
      maxConsecutiveFailures: n(p, 'iceberg.control.commit.max-consecutive-failures'),
      transactionalPrefix: s(p, 'iceberg.coordinator.transactional.prefix') ?? '',
      topicPartitions: n(p, 'icefloe.control.topic.partitions'),
      topicReplicationFactor: n(p, 'icefloe.control.topic.replication.factor'),
      topicRetentionMs: retention,
      autoCreateTopic: b(p, 'icefloe.control.topic.auto-create'),
      kafkaProps: p.prefixed('iceberg.kafka.'),
    }),
    commit: Object.freeze({ intervalMs, maxBytes: p.number('icefloe.commit.max-bytes'), maxRecords: p.number('icefloe.commit.max-records') }),
    catalog,
    secretKeys,
    warnings,
    stored,
    redacted,
  });
}

function pickPrefix(map: Readonly<Record<string, string>>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map)) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = v;
  return out;
}

function aliases(p: ParsedConfig, key: 'transforms' | 'predicates'): readonly string[] {
  const list = l(p, key);
  const dup = list.find((a, i) => list.indexOf(a) !== i);
  if (dup !== undefined) p.addError(key, invalidMessage(key, list.join(','), 'Duplicate alias provided.'));
  const sub = p.prefixed(`${key}.`);
  for (const alias of list) {
    if ((sub[`${alias}.type`] ?? '').trim() === '') p.addError(`${key}.${alias}.type`, `Missing required configuration "${key}.${alias}.type" which has no default value.`);
  }
  return [...new Set(list)];
}

/** `iceberg.table.<table>.<property>`: the table name may contain dots, the property does not. */
function perTableSettings(p: ParsedConfig, staticTables: readonly string[], dynamic: boolean): Map<string, Partial<Record<TableProperty, string>>> {
  const out = new Map<string, Partial<Record<TableProperty, string>>>();
  for (const [rest, raw] of Object.entries(p.prefixed('iceberg.table.'))) {
    const key = `iceberg.table.${rest}`;
    const dot = rest.lastIndexOf('.');
    const table = dot > 0 ? rest.slice(0, dot) : '';
    const prop = rest.slice(dot + 1);
    if (table === '' || !(TABLE_PROPERTIES as readonly string[]).includes(prop)) {
      p.addWarning(`${key} is not an Iceberg sink key (per-table keys: iceberg.table.<table>.{${TABLE_PROPERTIES.join(',')}}); it is kept but not used`);
      continue;
    }
    const value = raw.trim();
    if (prop === 'partition-by' && value !== '') {
      const problem = partitionByProblem(value);
      if (problem !== undefined) p.addError(key, invalidMessage(key, raw, problem));
    }
    if (prop === 'route-regex') {
      const problem = regexProblem(value);
      if (problem !== undefined) p.addError(key, invalidMessage(key, raw, problem));
    }
    if (!dynamic && !staticTables.includes(table)) p.addWarning(`${key} is set but ${table} is not in iceberg.tables`);
    const entry = out.get(table) ?? {};
    entry[prop as TableProperty] = value;
    out.set(table, entry);
  }
  return out;
}

function catalogConfig(p: ParsedConfig, options: ConnectorParseOptions): CatalogConfig {
  const own = p.prefixed('iceberg.catalog.');
  const fromWorker = Object.keys(own).length === 0 && options.defaultCatalog !== undefined && Object.keys(options.defaultCatalog).length > 0;
  const props: Readonly<Record<string, string>> = fromWorker ? safeProps(options.defaultCatalog ?? {}, 'iceberg.catalog.') : own;
  const name = s(p, 'iceberg.catalog') ?? 'iceberg';
  // Errors on catalog properties name the connector key; with the worker's default they name the worker's.
  const keyOf = (k: string): string => (fromWorker ? `iceberg.catalog` : `iceberg.catalog.${k}`);
  const empty: CatalogConfig = Object.freeze({ name, type: 'rest', uri: '', warehouse: null, credential: null, token: null, s3: emptyS3(), props, fromWorker });
  if (Object.keys(props).length === 0) {
    p.addError('iceberg.catalog', MESSAGES.noCatalog);
    return empty;
  }
  let type: 'rest' | 'sql' | null = null;
  const rawType = props.type?.trim().toLowerCase();
  const impl = props['catalog-impl']?.trim();
  if (rawType === 'rest') type = 'rest';
  else if (rawType === 'sql' || rawType === 'jdbc') type = 'sql';
  else if (rawType !== undefined) {
    p.addError(keyOf('type'), invalidMessage(keyOf('type'), props.type ?? '', 'Icefloe supports the catalog types rest, sql and jdbc'));
  } else if (impl === 'org.apache.iceberg.rest.RESTCatalog') type = 'rest';
  else if (impl === 'org.apache.iceberg.jdbc.JdbcCatalog') type = 'sql';
  else if (impl !== undefined) {
    p.addError(keyOf('catalog-impl'), invalidMessage(keyOf('catalog-impl'), impl, 'Icefloe supports org.apache.iceberg.rest.RESTCatalog and org.apache.iceberg.jdbc.JdbcCatalog (or type=rest|sql|jdbc)'));
  } else {
    // Java would default to a Hive catalog here; Icefloe has none, and guessing from the uri could write elsewhere.
    p.addError(keyOf('type'), `Missing required configuration "${keyOf('type')}" which has no default value. (rest, sql or jdbc)`);
  }
  const uri = props.uri?.trim() ?? '';
  const shownUri = redactUserInfo(uri);
  if (uri === '') p.addError(keyOf('uri'), `Missing required configuration "${keyOf('uri')}" which has no default value.`);
  else if (type === 'rest' && !/^https?:\/\/[^\s/]+/.test(uri)) p.addError(keyOf('uri'), invalidMessage(keyOf('uri'), shownUri, 'A rest catalog uri is an http(s) URL'));
  else if (type === 'sql' && !/^jdbc:(sqlite|postgresql):/.test(uri)) {
    p.addError(keyOf('uri'), invalidMessage(keyOf('uri'), shownUri, 'A sql/jdbc catalog uri is jdbc:sqlite:<file> or jdbc:postgresql://<host>/<db>'));
  }
  const warehouse = props.warehouse?.trim() || null;
  if (type === 'sql' && warehouse === null) p.addError(keyOf('warehouse'), `Missing required configuration "${keyOf('warehouse')}" which has no default value. (a sql/jdbc catalog needs a warehouse location)`);
  const secret = (k: string): Secret | null => (props[k] === undefined || props[k] === '' ? null : new Secret(props[k]));
  const pathStyle = (props['s3.path-style-access'] ?? 'false').trim().toLowerCase();
  if (pathStyle !== 'true' && pathStyle !== 'false') p.addError(keyOf('s3.path-style-access'), invalidMessage(keyOf('s3.path-style-access'), props['s3.path-style-access'] ?? '', 'Expected value to be either true or false'));
  return Object.freeze({
    name,
    type: type ?? 'rest',
    uri,
    warehouse,
    credential: secret('credential'),
    token: secret('token'),
    s3: Object.freeze({
      endpoint: props['s3.endpoint']?.trim() || null,
      region: props['client.region']?.trim() || props['s3.region']?.trim() || null,
      pathStyleAccess: pathStyle === 'true',
      accessKeyId: props['s3.access-key-id']?.trim() || null,
      secretAccessKey: secret('s3.secret-access-key'),
      sessionToken: secret('s3.session-token'),
    }),
    props,
    fromWorker,
  });
}

function emptyS3(): S3Settings {
  return Object.freeze({ endpoint: null, region: null, pathStyleAccess: false, accessKeyId: null, secretAccessKey: null, sessionToken: null });
}

/** Warnings for keys that look like ours or the Iceberg sink's but are not (kept, passed through). */
function warnUnknown(p: ParsedConfig): void {
  for (const key of Object.keys(p.unknown)) {
    if (UNSUPPORTED_SEMANTIC_KEYS.includes(key)) {
      const v = (p.unknown[key] ?? '').trim().toLowerCase();
      if (v !== '' && v !== 'false') {
        p.addError(key, invalidMessage(key, p.unknown[key] ?? '', 'This Tabular sink key (CDC / upsert) is not supported: Icefloe, like the Apache Iceberg sink, only appends. Remove it'));
      }
      continue;
    }
    const legacy = LEGACY_TABULAR_KEYS[key];
    if (legacy !== undefined) {
      p.addWarning(`${key} is a legacy Tabular key and is not read; use ${legacy}`);
    } else if (key === 'iceberg.coordinator.transactional.suffix') {
      p.addWarning(`${key} is set per task by the connector; a value in the connector config is ignored`);
    } else if (key.startsWith('iceberg.') || key.startsWith('icefloe.')) {
      p.addWarning(`${key} is not a known key; it is kept but not used`);
    }
  }
}
