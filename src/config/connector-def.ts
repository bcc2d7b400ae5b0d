/**
 * The connector's ConfigDef (the source of docs/configuration.md and of Connect's validate response):
 * Kafka Connect's framework keys (reference/connect-rest.md §2.1–2.6), the Apache Iceberg sink's keys
 * with its names and defaults (§2.9), so existing connector JSON carries over unchanged, and Icefloe's
 * own keys under `icefloe.*`; with the names the rules and the runtime share (connector classes, Kafka
 * metadata columns, per-table properties, the Java sink's messages).
 *
 * Owns: each key's type, default, group, doc and single-key validator.
 * Must not: check rules across keys (connector-config.ts and its helpers do), or describe a key as doing
 * what Icefloe does not do: keys it does not act on say so (unsupported.ts, or "no effect" and why).
 */
import { regexProblem, tableNameProblem } from './names.ts';
import { partitionByProblem } from '../iceberg/partition-by.ts';
import { ConfigDef, validators } from './config-def.ts';
import { CONNECTOR_UNSUPPORTED, unsupportedDoc } from './unsupported.ts';

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
export type TableProperty = (typeof TABLE_PROPERTIES)[number];

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
// Connect puts `transforms` and `predicates` in groups of their own (a 4.3.1 worker's validate answer:
// groups Common, Transforms, Predicates, Error Handling), and each alias in `Transforms: <alias>`.
const G_TRANSFORMS = 'Transforms';
const G_PREDICATES = 'Predicates';
const G_ERRORS = 'Error Handling';
const G_TABLES = 'Iceberg Tables';
const G_CONTROL = 'Iceberg Control';
const G_CATALOG = 'Iceberg Catalog';
const G_ICEFLOE = 'Icefloe';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The docs of a key Icefloe refuses until the capability it needs lands (unsupported.ts). */
const notYet = (key: string, meaning: string): string => unsupportedDoc(CONNECTOR_UNSUPPORTED, key, meaning);

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

const oneTableNameValidator = validators.custom('a table name `namespace.table`', (v) => (typeof v === 'string' && v !== '' ? tableNameProblem(v) : undefined));

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
    doc: notYet('header.converter', 'Converter class for header values (unset: the worker\'s).') })
  .define({ name: 'transforms', type: 'LIST', default: '', importance: 'LOW', group: G_TRANSFORMS, width: 'LONG', displayName: 'Transforms',
    doc: notYet('transforms', 'Aliases of the transformations (SMTs) to apply to records, in order; each is configured under `transforms.<alias>.*`.') })
  .define({ name: 'predicates', type: 'LIST', default: '', importance: 'LOW', group: G_PREDICATES, width: 'LONG', displayName: 'Predicates',
    doc: notYet('predicates', 'Aliases of the predicates used by transformations; each is configured under `predicates.<alias>.*`.') })
  .define({ name: 'config.action.reload', type: 'STRING', default: 'restart', importance: 'LOW', group: G_COMMON, width: 'MEDIUM', displayName: 'Reload action',
    validator: validators.oneOf(['none', 'restart'], { caseInsensitive: true }),
    doc: 'What to do when a config provider reports a changed value: none, or restart the connector. Accepted for compatibility; no effect: Icefloe\'s providers (file, env, directory) have no expiry, and a value is read again whenever the connector is (re)started.' })
  .define({ name: 'topics', type: 'LIST', default: '', importance: 'HIGH', group: G_COMMON, width: 'LONG', displayName: 'Topics',
    doc: 'Comma-separated topics to consume. Exactly one of topics and topics.regex must be set.' })
  .define({ name: 'topics.regex', type: 'STRING', default: '', importance: 'HIGH', group: G_COMMON, width: 'LONG', displayName: 'Topics regex', validator: regexValidator,
    doc: 'Regular expression of the topics to consume (matched against the whole name); topics created later join on the next metadata refresh. Exactly one of topics and topics.regex must be set.' })
  // --- Error handling (§2.5) -----------------------------------------------------------------------
  .define({ name: 'errors.retry.timeout', type: 'LONG', default: '0', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Retry Timeout for Errors',
    validator: validators.range(-1),
    doc: 'How long a task retries an infrastructure failure (schema registry, catalog, object store or Kafka broker unreachable) before it fails, in ms of consecutive failure without a committed cycle (or of a partition waiting for a record\'s schema from the registry). 0 (the default) and -1: retried without limit, the status naming the cause meanwhile; N > 0: after N ms the task FAILS with a trace naming the cause and errors.retry.timeout, and stays FAILED until restarted (for operators who want an outage to raise an alert). Differs from Connect on purpose: Connect\'s key bounds only converter and transform retries (and its sink task retries put() without limit); Icefloe never retries a bad record (retrying cannot change its bytes) and never sends an infrastructure failure to errors.tolerance or a dead-letter queue (docs/errors.md).' })
  .define({ name: 'errors.retry.delay.max.ms', type: 'LONG', default: '60000', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Maximum Delay Between Retries for Errors',
    validator: validators.range(1),
    doc: 'The longest wait between two retries of an infrastructure failure by a task, in ms. Waits start at 200 ms (or this, if smaller) and grow up to three-fold per consecutive failure, with jitter (decorrelated: each is random between 200 ms and three times the previous), until a cycle commits. A partition waiting for a record\'s schema from the registry waits 0.5 s to 10 s, or at most this.' })
  .define({ name: 'errors.tolerance', type: 'STRING', default: 'none', importance: 'MEDIUM', group: G_ERRORS, width: 'SHORT', displayName: 'Error Tolerance',
    validator: validators.oneOf(['none', 'all'], { caseInsensitive: true }),
    doc: 'What a deterministic data error does — a record whose bytes cannot be read, that routes to no table (icefloe.tables.unrouted=fail), whose value does not fit its table, or that is over icefloe.errors.record.max-bytes. none: the task fails, its status naming the record\'s topic, partition, offset and the reason, and nothing past it is committed. all: the record goes to the dead-letter queue (errors.deadletterqueue.topic.name and/or icefloe.errors.deadletterqueue.table.name) or, with neither, is skipped and counted; the rest of its batch lands. Infrastructure errors (registry, catalog, object store or broker unreachable) are retried and never tolerated (docs/errors.md).' })
  .define({ name: 'errors.log.enable', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_ERRORS, width: 'SHORT', displayName: 'Log Errors',
    doc: 'Log each tolerated error (a WARN line) with its topic, partition, offset, stage and error.' })
  .define({ name: 'errors.log.include.messages', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_ERRORS, width: 'SHORT', displayName: 'Log Error Details',
    doc: 'With errors.log.enable: also log the record\'s timestamp, key, value and headers (bytes as base64, each cut at 4 KiB). Record contents may be sensitive.' })
  .define({ name: 'errors.deadletterqueue.topic.name', type: 'STRING', default: '', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Dead Letter Queue Topic Name',
    doc: 'With errors.tolerance=all: the topic that receives each record that failed with a data error, its key, value, headers and timestamp as read, produced in the same Kafka transaction that commits the cycle\'s offsets (exactly once). Created with 1 partition when missing. May not be one of the connector\'s topics. Empty: no dead-letter topic.' })
  .define({ name: 'errors.deadletterqueue.topic.replication.factor', type: 'SHORT', default: '3', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Dead Letter Queue Topic Replication Factor',
    doc: 'Replication factor of the dead-letter topic when Icefloe creates it (1 partition); -1 takes the broker default.' })
  .define({ name: 'errors.deadletterqueue.context.headers.enable', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_ERRORS, width: 'MEDIUM', displayName: 'Enable Error Context Headers',
    doc: 'Add Connect\'s `__connect.errors.*` headers to each dead-letter record (original topic, partition, offset, connector, task, stage, class, exception class, message, stack trace), plus `__icefloe.errors.stage` (deserialize, route, convert, write) and `__icefloe.errors.table` (the table a failed copy was for).' })
  // --- Apache Iceberg sink: tables and routing (§2.9) -----------------------------------------------
  .define({ name: 'iceberg.tables', type: 'LIST', default: null, importance: 'HIGH', group: G_TABLES, validator: tableNameValidator,
    doc: 'Comma-separated destination tables (`namespace.table`). Required unless iceberg.tables.dynamic-enabled is true; cannot be combined with it. Without a route field every record goes to every table listed.' })
  .define({ name: 'iceberg.tables.dynamic-enabled', type: 'BOOLEAN', default: 'false', importance: 'MEDIUM', group: G_TABLES,
    doc: 'Route each record to the table named by the value of iceberg.tables.route-field.' })
  .define({ name: 'iceberg.tables.route-field', type: 'STRING', default: null, importance: 'MEDIUM', group: G_TABLES,
    doc: 'Record field used for routing (dotted for nested fields). Required with dynamic routing; with static tables it is matched against each table\'s iceberg.table.<table>.route-regex.' })
  .define({ name: 'iceberg.tables.default-commit-branch', type: 'STRING', default: null, importance: 'MEDIUM', group: G_TABLES, defaultDoc: 'null (main)', validator: validators.nonEmpty(),
    doc: 'Branch the committer appends every table\'s files to, unless a table sets iceberg.table.<table>.commit-branch. The table\'s control positions (what is applied, for exactly-once) are stored in and read from that branch\'s snapshots, so main gets no snapshot from the connector. A branch that does not exist yet is created by the first commit as a fork of main\'s current snapshot (as Iceberg\'s own writers do), so it starts with main\'s data. Readers see the branch with `VERSION AS OF \'<branch>\'` (Spark) or by its snapshot id; a branch is merged into main by another engine (e.g. Spark\'s fast_forward procedure).' })
  .define({ name: 'iceberg.tables.default-id-columns', type: 'STRING', default: null, importance: 'MEDIUM', group: G_TABLES,
    doc: notYet('iceberg.tables.default-id-columns', 'Comma-separated identifier (primary key) columns of auto-created tables, unless a table sets iceberg.table.<table>.id-columns.') })
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
    doc: 'Writer properties (`write.target-file-size-bytes`, `write.parquet.compression-codec`, `write.metadata.metrics.*`, ...); they take precedence over the table\'s own properties. Icefloe\'s own: `icefloe.write.metadata.metrics.uuid-bounds` (default false: uuid columns get value and null counts but no bounds or Parquet statistics, because Java Iceberg compares uuids signed and Spark would skip files that hold matching rows, apache/iceberg#14216; true writes spec bounds), `icefloe.write.row-group-buffer-bytes`. Not supported yet (validation fails): `write.parquet.compression-level` (the Parquet encoder has no level setting), `write.parquet.page-row-limit`, and `write.format.default` other than parquet.' })
  .definePrefix({ prefix: 'iceberg.table.', group: G_TABLES, pattern: 'iceberg.table.<table>.{commit-branch,id-columns,partition-by,route-regex}',
    doc: 'Per-table settings, the table named as in iceberg.tables (`iceberg.table.db.orders.partition-by`): partition-by overrides iceberg.tables.default-partition-by; commit-branch overrides iceberg.tables.default-commit-branch (files and control positions on that branch); route-regex sends a record to this table when the route field\'s value matches the whole regex (static fan-out). id-columns is not supported yet, like iceberg.tables.default-id-columns: any value but empty fails validation.' })
  // --- Apache Iceberg sink: control topic and commits (§2.9) ----------------------------------------
  .define({ name: 'iceberg.control.topic', type: 'STRING', default: null, importance: 'MEDIUM', group: G_CONTROL, validator: validators.nonEmpty(),
    defaultDoc: 'icefloe-control-<connector name>',
    doc: 'Topic that carries the file announcements of every commit cycle (created if missing, see icefloe.control.topic.*). The default is the connector\'s own topic, `icefloe-control-` and its name (characters a topic name cannot hold become `_`), unlike the Apache sink\'s shared `control-iceberg`. Connectors may share one topic by naming it: announcements carry the connector\'s name.' })
  .define({ name: 'iceberg.control.group-id-prefix', type: 'STRING', default: 'cg-control-', importance: 'LOW', group: G_CONTROL,
    doc: 'Icefloe\'s committer keeps the connector\'s control position — every table has applied the control topic up to here — as the committed offsets of the consumer group <prefix><connector name> on the control topic (nobody joins it; its commit metadata says seed or applied). It is committed every commit round so it does not expire (offsets.retention.minutes); a worker down longer than that seeds it again. Nothing else may commit to that group.' })
  .define({ name: 'iceberg.connect.group-id', type: 'STRING', default: null, importance: 'LOW', group: G_CONTROL, defaultDoc: 'null (connect-<name>)',
    doc: 'The Connect consumer group whose offsets the tasks commit: connect-<name>, or consumer.override.group.id when set. Should not be set under normal conditions; if set it must equal that group.' })
  .define({ name: 'iceberg.control.commit.interval-ms', type: 'INT', default: '300000', importance: 'MEDIUM', group: G_CONTROL, validator: validators.range(1),
    doc: 'Commit cycle interval in ms: at most this long after a cycle starts, tasks announce their files and the committer commits them (see also icefloe.commit.max-bytes and icefloe.commit.max-records).' })
  .define({ name: 'iceberg.control.commit.timeout-ms', type: 'INT', default: '30000', importance: 'MEDIUM', group: G_CONTROL, validator: validators.range(1),
    doc: 'How long the Java sink\'s coordinator waits for every task\'s files before committing what has arrived. Accepted for compatibility; no effect: Icefloe\'s committer never waits for all tasks, it commits each announcement once it is read, and a task that announces later is in the next commit, never lost.' })
  .define({ name: 'iceberg.control.commit.threads', type: 'INT', default: null, importance: 'LOW', group: G_CONTROL, defaultDoc: 'null (one table at a time)',
    doc: notYet('iceberg.control.commit.threads', 'How many tables one committer commits concurrently.') })
  .define({ name: 'iceberg.control.commit.max-consecutive-failures', type: 'INT', default: '1', importance: 'LOW', group: G_CONTROL,
    doc: notYet('iceberg.control.commit.max-consecutive-failures', 'The Java sink\'s coordinator stops after this many consecutive failed commits.') })
  .define({ name: 'iceberg.coordinator-executor-keep-alive-timeout-ms', type: 'LONG', default: '120000', importance: 'LOW', group: G_CONTROL, validator: validators.range(0),
    doc: 'Keep-alive of the Java coordinator\'s commit threads. Accepted for compatibility; Icefloe has no thread pool to keep alive.' })
  .define({ name: 'iceberg.coordinator.transactional.prefix', type: 'STRING', default: '', importance: 'LOW', group: G_CONTROL,
    doc: 'Prefix of the tasks\' Kafka `transactional.id`s (`<prefix><connector>-<task>`), for brokers whose ACLs constrain transactional ids.' })
  // --- Apache Iceberg sink: catalog and clients (§2.9) ----------------------------------------------
  .define({ name: 'iceberg.catalog', type: 'STRING', default: 'iceberg', importance: 'HIGH', group: G_CATALOG, validator: validators.nonEmpty(),
    doc: 'Catalog name (for logs and the SQL catalog\'s catalog_name column).' })
  .definePrefix({ prefix: 'iceberg.catalog.', group: G_CATALOG,
    doc: 'Catalog properties, at least one required ("Must specify Iceberg catalog properties") unless the worker provides a default catalog: `type` (rest, or sql/jdbc for a JDBC catalog on SQLite or PostgreSQL), `uri`, `warehouse`, `credential`/`token` (secrets), `s3.endpoint`, `s3.path-style-access`, `s3.access-key-id`, `s3.secret-access-key`, `s3.request-timeout-ms` (Icefloe\'s: one S3 request\'s time-out, default 60000; a request that times out is retried like any S3 failure), `client.region`, `header.*`, `jdbc.user`/`jdbc.password`. Keys containing secret, password, token or credential are redacted in logs and status.' })
  .define({ name: 'iceberg.hadoop-conf-dir', type: 'STRING', default: null, importance: 'LOW', group: G_CATALOG,
    doc: 'Directory of Hadoop XML files. Accepted for compatibility and ignored: Icefloe has no Hadoop FileIO.' })
  .definePrefix({ prefix: 'iceberg.hadoop.', group: G_CATALOG, doc: 'Hadoop configuration overrides. Accepted for compatibility and ignored.' })
  .definePrefix({ prefix: 'iceberg.kafka.', group: G_CONTROL,
    doc: 'Kafka client settings for the control-topic producer, consumer and admin, layered over the worker\'s client settings (e.g. `iceberg.kafka.security.protocol`).' })
  // --- Connect client overrides (§2.6) and converter / SMT settings (§2.3–2.4) ----------------------
  .definePrefix({ prefix: 'consumer.override.', group: G_COMMON,
    doc: 'Settings for the task consumer (e.g. `max.poll.records`, `auto.offset.reset`, `group.id`, `sasl.jaas.config`). `enable.auto.commit` cannot be turned on: offsets are committed in the commit cycle\'s transaction.' })
  .definePrefix({ prefix: 'producer.override.', group: G_COMMON, doc: 'Settings for the task\'s transactional producer (control topic).' })
  .definePrefix({ prefix: 'admin.override.', group: G_COMMON, doc: 'Settings for the admin client (control topic creation, offsets).' })
  .definePrefix({ prefix: 'key.converter.', group: G_COMMON, doc: 'Settings of the connector\'s key converter (only when key.converter is set here).' })
  .definePrefix({ prefix: 'value.converter.', group: G_COMMON,
    doc: 'Settings of the connector\'s value converter (only when value.converter is set here): `schema.registry.url`, `basic.auth.credentials.source`, `basic.auth.user.info`, `schemas.enable`, `decimal.format`.' })
  .definePrefix({ prefix: 'header.converter.', group: G_COMMON, doc: notYet('header.converter.', 'Settings of the connector\'s header converter.') })
  .definePrefix({ prefix: 'transforms.', group: G_COMMON, pattern: 'transforms.<alias>.*', doc: notYet('transforms.', 'Each transformation: `type` (class), `predicate`, `negate` and the SMT\'s own settings.') })
  .definePrefix({ prefix: 'predicates.', group: G_COMMON, pattern: 'predicates.<alias>.*', doc: notYet('predicates.', 'Each predicate: `type` (class) and its settings.') })
  // --- Icefloe's own keys ----------------------------------------------------------------------------
  .define({ name: 'icefloe.commit.max-bytes', type: 'LONG', default: null, importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.range(1), defaultDoc: 'null (no byte trigger)',
    doc: 'Start a commit cycle early once a task has consumed this many bytes of record keys and values since the last one. Cycles still start at least every iceberg.control.commit.interval-ms.' })
  .define({ name: 'icefloe.commit.max-records', type: 'LONG', default: null, importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.range(1), defaultDoc: 'null (no record trigger)',
    doc: 'Start a commit cycle early once a task has consumed this many records since the last one.' })
  .define({ name: 'icefloe.tables.unrouted', type: 'STRING', default: 'fail', importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.oneOf(['fail', 'skip']),
    doc: 'What happens to a record that routes to no table (no route-regex matches, a null route field, an unknown table with auto-create off): fail the task with the reason, or skip it and count it in the `records-unrouted` metric. A record whose tables exist only in part goes to those that exist; each missing table\'s copy is skipped and counted (`tableCopiesSkipped`). Never dropped silently. fail makes it a data error, so with errors.tolerance=all it goes to the dead-letter queue (stage route).' })
  .define({ name: 'icefloe.errors.deadletterqueue.table.name', type: 'STRING', default: '', importance: 'MEDIUM', group: G_ICEFLOE, validator: oneTableNameValidator,
    doc: 'With errors.tolerance=all: an Iceberg table (namespace.table) that receives one row per record that failed with a data error — its topic, partition, offset, timestamp, raw key, value and headers, the stage, the table a failed copy was for, the error class and message, the connector, task and time — committed exactly once by the committer like any other table, so failures can be queried beside the data and replayed (docs/errors.md). Created when missing (iceberg.table.<name>.partition-by applies). May not be a table the records route to. Empty: no dead-letter table.' })
  .define({ name: 'icefloe.task.memory-budget-bytes', type: 'LONG', default: String(192 * 1024 * 1024), importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.range(16 * 1024 * 1024),
    doc: 'What the open data files of one task may hold in memory together: their column buffers, the Parquet encoder\'s memory (which grows to the largest row group and does not shrink) and the bytes waiting to be uploaded. Over it, the largest holders write their buffered rows as an early, smaller row group, or close their file (counted in the task\'s metrics). The task\'s process needs about 250–300 MiB besides (Node.js and its modules, the Kafka client\'s prefetch, one row group\'s transient copies): with the default a task peaked at 440–485 MiB in the benchmarks (docs/benchmarks.md). Raise it with icefloe.write.row-group-buffer-bytes for larger row groups or many open partitions.' })
  .define({ name: 'icefloe.task.stall-timeout-ms', type: 'LONG', default: null, importance: 'LOW', group: G_ICEFLOE, validator: validators.range(0),
    defaultDoc: 'null (derived: max(transaction.timeout.ms / 2, session.timeout.ms, errors.retry.delay.max.ms) + 30 s; 90 s with the defaults)',
    doc: 'The progress watchdog\'s bound, in ms: a task that has work (an assigned partition with records beyond its position, or its cycle due) but neither received records from a poll nor ended a cycle for this long, or that is inside one call (Kafka, object store, catalog, registry) this long, is failed with a trace naming the call and restarted with back-off (docs/sink.md, "When tasks fail"). A task with nothing to read is never stuck. 0 turns the watchdog off.' })
  .define({ name: 'icefloe.errors.record.max-bytes', type: 'LONG', default: '0', importance: 'LOW', group: G_ICEFLOE, validator: validators.range(0),
    doc: 'The largest record (key, value and header bytes) the connector writes to a table; a larger one is a data error (stage deserialize) that follows errors.tolerance. 0: no limit.' })
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
    doc: 'Retention of the control topic when Icefloe creates it (default 7 days). Announcements not yet committed must outlive any committer outage, so keep it long: at least icefloe.control.topic.min-retention-ms, or -1. The retention alarms are measured against the topic\'s actual `retention.ms`.' })
  .define({ name: 'icefloe.control.topic.auto-create', type: 'BOOLEAN', default: 'true', importance: 'LOW', group: G_ICEFLOE,
    doc: 'Create the control topic (compaction off, the partitions, replication and retention above) when it does not exist. Off: a missing control topic fails the connector.' })
  .define({ name: 'icefloe.control.read.max-bytes', type: 'LONG', default: String(16 * 1024 * 1024), importance: 'LOW', group: G_ICEFLOE, validator: validators.range(1024),
    doc: 'Bytes (record keys and values, every record of the control topic counted, other connectors\' too) the committer reads per round (also at most 10,000 records and 10 s per round). A committer behind a backlog reads it in such steps, commits what it has after each, logs its progress (`control topic catch-up`) and starts the next round right away until it has caught up.' })
  .define({ name: 'icefloe.control.buffer.max-bytes', type: 'LONG', default: String(64 * 1024 * 1024), importance: 'LOW', group: G_ICEFLOE, validator: validators.range(1024),
    doc: 'Bytes of this connector\'s control records the committer keeps in memory (records other connectors or products wrote to a shared control topic are never kept). Records only a stopped table needs are dropped first when the cap is reached (that table resumes after a restart, which reads them again); if tables that are not stopped still need everything held, reading pauses with an error in the log until they commit. At least icefloe.control.read.max-bytes.' })
  .define({ name: 'icefloe.control.topic.min-retention-ms', type: 'LONG', default: String(DAY_MS), importance: 'LOW', group: G_ICEFLOE, validator: validators.range(1),
    doc: 'The shortest `retention.ms` of the control topic the worker starts with (default 24 hours). At start the worker reads the topic\'s configuration and refuses a `cleanup.policy` other than `delete`, a finite `retention.bytes`, or a `retention.ms` below this: each would let unapplied announcements disappear before a stopped table is repaired.' })
  .define({ name: 'icefloe.control.topic.check-config', type: 'BOOLEAN', default: 'true', importance: 'LOW', group: G_ICEFLOE,
    doc: 'Read the control topic\'s configuration at start (DescribeConfigs over PLAINTEXT or SSL) and refuse an unsafe one (see icefloe.control.topic.min-retention-ms). Turn it off only where the worker cannot read topic configs (SASL listeners): the worker then warns, trusts the topic as configured, and measures the retention alarms against icefloe.control.topic.retention-ms.' })
  .define({ name: 'icefloe.control.retention-alarm-ratio', type: 'DOUBLE', default: '0.5', importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.range(0.01, 1),
    doc: 'Share of the control topic\'s `retention.ms`: when a table\'s oldest unapplied announcement is older than this, the worker logs an error and marks the table `retentionAlarm` in its status.' })
  .define({ name: 'icefloe.control.retention-stop-ratio', type: 'DOUBLE', default: '0.8', importance: 'MEDIUM', group: G_ICEFLOE, validator: validators.range(0.01, 1),
    doc: 'Share of the control topic\'s `retention.ms`: when a table\'s oldest unapplied announcement is older than this, the worker fails the connector\'s tasks (nothing more is acknowledged to Kafka) before retention can delete an announcement. Must be above icefloe.control.retention-alarm-ratio.' });
