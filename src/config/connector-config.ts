/**
 * The Icefloe sink connector's configuration: validation of a connector's string map against the
 * ConfigDef (connector-def.ts), the rules across keys with Kafka's and the Java sink's exact messages,
 * and the immutable `ConnectorConfig` the runtime consumes. Tables and routing (table-settings.ts), the
 * catalog (catalog-settings.ts) and the keys Icefloe does not act on yet (unsupported.ts) have their own
 * modules; this one assembles them and is what the rest of the code imports.
 *
 * Owns: the framework rules (connector class, topics, converters, consumer group), the control-topic
 * rules, unknown-key warnings, and the typed result.
 * Must not: hand the raw map to the runtime (only typed fields and the sub-maps a catalog or client
 * takes as its own properties leave this module), rewrite or add keys (configs echo back exactly as
 * stored), or print a secret (see `isSecretKey`).
 */
import { ConfigError } from '../core/errors.ts';
import { didYouMean, invalidMessage, problemSummary } from './config-def.ts';
import type { ConfigInfos, ParsedConfig } from './config-def.ts';
import { catalogConfig } from './catalog-settings.ts';
import type { CatalogConfig } from './catalog-settings.ts';
import { CONNECTOR_CLASS_ALIASES, CONNECTOR_CONFIG_DEF, MESSAGES } from './connector-def.ts';
import { parseConverter } from './converters.ts';
import type { ConverterConfig } from './converters.ts';
import { regexProblem, wholeMatch } from './names.ts';
import { tablesConfig } from './table-settings.ts';
import type { TablesConfig } from './table-settings.ts';
import { CONNECTOR_UNSUPPORTED, rejectUnsupported, rejectUnsupportedWriteProps } from './unsupported.ts';

// What the rest of the code imports from here, wherever it is defined.
export { regexProblem, wholeMatch } from './names.ts';
export {
  APACHE_CONNECTOR_CLASS,
  CONNECTOR_CLASS_ALIASES,
  CONNECTOR_CONFIG_DEF,
  ICEFLOE_CONNECTOR_CLASS,
  KAFKA_METADATA_COLUMNS,
  MESSAGES,
  TABLE_PROPERTIES,
  TABULAR_CONNECTOR_CLASS,
} from './connector-def.ts';
export type { KafkaMetadataColumn } from './connector-def.ts';
export type { CatalogConfig, S3Settings } from './catalog-settings.ts';
export type { Routing, TableSettings, TablesConfig } from './table-settings.ts';

// ---------------------------------------------------------------------------------------------------
// The typed result
// ---------------------------------------------------------------------------------------------------

export type TopicSelection =
  | { readonly kind: 'list'; readonly topics: readonly string[] }
  /** `regex` matches the whole topic name (Java `Pattern.matcher().matches()`). */
  | { readonly kind: 'regex'; readonly pattern: string; readonly regex: RegExp };

export interface ErrorHandling {
  readonly tolerance: 'none' | 'all';
  readonly logEnable: boolean;
  /**
   * errors.retry.timeout: ms of consecutive infrastructure failure (no cycle committed) after which a task
   * fails; null: retried without limit (0 and -1, Connect's default and "forever").
   */
  readonly retryTimeoutMs: number | null;
  /** errors.retry.delay.max.ms: the longest wait between a task's retries of an infrastructure failure. */
  readonly retryDelayMaxMs: number;
  /** errors.log.include.messages: tolerated-error log lines also carry the record's contents. */
  readonly logIncludeMessages: boolean;
  /** The dead-letter topic (errors.deadletterqueue.*); null: none. */
  readonly deadLetterTopic: DeadLetterTopicConfig | null;
  /** icefloe.errors.deadletterqueue.table.name; null: none. */
  readonly deadLetterTable: string | null;
  /** icefloe.errors.record.max-bytes; 0: no limit. */
  readonly recordMaxBytes: number;
}

export interface DeadLetterTopicConfig {
  readonly topic: string;
  readonly replicationFactor: number;
  /** errors.deadletterqueue.context.headers.enable */
  readonly contextHeaders: boolean;
}

export interface ControlConfig {
  readonly topic: string;
  readonly commitIntervalMs: number;
  readonly transactionalPrefix: string;
  readonly topicPartitions: number;
  readonly topicReplicationFactor: number;
  readonly topicRetentionMs: number;
  readonly autoCreateTopic: boolean;
  /** `iceberg.control.group-id-prefix`: the connector position C is the group `<prefix><connector>` (coordinate/connector-position.ts). */
  readonly groupIdPrefix: string;
  /** Key and value bytes the committer reads from the control topic per round (catch-up is incremental). */
  readonly readMaxBytes: number;
  /** This connector's control records the committer holds in memory at most; reading pauses at the cap. */
  readonly bufferMaxBytes: number;
  /** The shortest control-topic `retention.ms` the worker starts with (icefloe.control.topic.min-retention-ms). */
  readonly minRetentionMs: number;
  /** Read and check the control topic's configuration at start (icefloe.control.topic.check-config). */
  readonly checkTopicConfig: boolean;
  /** Shares of the control topic's retention at which a table's oldest unapplied announcement alarms / stops the connector. */
  readonly retentionAlarmRatio: number;
  readonly retentionStopRatio: number;
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
  readonly errors: ErrorHandling;
  readonly consumerOverrides: Readonly<Record<string, string>>;
  readonly producerOverrides: Readonly<Record<string, string>>;
  readonly adminOverrides: Readonly<Record<string, string>>;
  readonly tables: TablesConfig;
  readonly control: ControlConfig;
  readonly commit: { readonly intervalMs: number; readonly maxBytes: number | null; readonly maxRecords: number | null };
  /** icefloe.task.memory-budget-bytes: what one task's writers may hold (write/budget.ts). */
  readonly memoryBudgetBytes: number;
  /** icefloe.task.stall-timeout-ms: the progress watchdog's bound; null: derived (runtime/watchdog.ts); 0: off. */
  readonly stallTimeoutMs: number | null;
  readonly catalog: CatalogConfig;
  /** Keys of the stored map that hold secrets (redacted in logs and status). */
  readonly secretKeys: readonly string[];
  /** Notes that are not errors: ignored keys, likely typos. */
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
  /**
   * Rules of the caller's beyond this module's (the REST validation's checks that Java does not make,
   * runtime/icefloe-checks.ts), run on the parse after the built-in ones: errors they add count like
   * any other.
   */
  readonly extraChecks?: (p: ParsedConfig, config: ConnectorConfig) => void;
}

/** The outcome of validation: every error per key, warnings, Connect's ConfigInfos, and the config when valid. */
export interface ConnectorValidation {
  readonly config: ConnectorConfig | null;
  readonly errors: ReadonlyMap<string, readonly string[]>;
  readonly errorCount: number;
  readonly warnings: readonly string[];
  /** The catalog part as parsed, also when other keys are invalid (for a reachability probe). */
  readonly catalog: CatalogConfig;
  /** The tables part as parsed, also when other keys are invalid (for the probe of the static tables). */
  readonly tables: TablesConfig;
  /** Secret keys of the submitted map. */
  readonly secretKeys: readonly string[];
  /** `PUT /connector-plugins/{p}/config/validate`: `name` is connector.class as submitted. */
  configInfos(): ConfigInfos;
  /** The errors as one text for the user: each problem once, with the unknown key that looks like its key. */
  summary(): { count: number; text: string };
  redacted(): Record<string, string>;
}

/** Validates a connector config, collecting every problem; never throws for bad input. */
export function validateConnectorConfig(raw: Readonly<Record<string, string>>, options: ConnectorParseOptions = {}): ConnectorValidation {
  const parsed = CONNECTOR_CONFIG_DEF.parse(raw);
  const config = build(parsed, options);
  options.extraChecks?.(parsed, config);
  const errorCount = parsed.errorCount;
  return Object.freeze({
    config: errorCount === 0 ? config : null,
    errors: parsed.errors(),
    errorCount,
    warnings: parsed.warnings,
    catalog: config.catalog,
    tables: config.tables,
    secretKeys: parsed.secretKeys(),
    configInfos: () => parsed.toConfigInfos(raw['connector.class'] ?? ''),
    summary: () => problemSummary(parsed),
    redacted: () => parsed.redacted(),
  });
}

/** Parses a connector config or throws one ConfigError listing every problem (by key). */
export function parseConnectorConfig(raw: Readonly<Record<string, string>>, options: ConnectorParseOptions = {}): ConnectorConfig {
  const v = validateConnectorConfig(raw, options);
  if (v.config !== null) return v.config;
  const name = raw.name ?? '(unnamed)';
  const summary = v.summary();
  throw new ConfigError(`connector ${name}: ${summary.count} configuration error(s): ${summary.text}`, {
    context: { connector: name, errors: Object.fromEntries(v.errors) },
  });
}

// ---------------------------------------------------------------------------------------------------
// Cross-key rules and assembly
// ---------------------------------------------------------------------------------------------------

/** Tabular's camelCase names of keys the Apache sink renamed: read by neither, so refused with the new name. */
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

const n = (p: ParsedConfig, k: string): number => p.number(k) ?? 0;
const b = (p: ParsedConfig, k: string): boolean => p.boolean(k) ?? false;

/** connector.class must be one of ours (Connect's message). */
function checkConnectorClass(p: ParsedConfig): string {
  const cls = p.string('connector.class');
  if (cls !== null && !CONNECTOR_CLASS_ALIASES.includes(cls)) {
    p.addError('connector.class', `Failed to find any class that implements Connector and which name matches ${cls}, available connectors are: ${CONNECTOR_CLASS_ALIASES.join(', ')}`);
  }
  return cls ?? '';
}

/** topics / topics.regex (Kafka SinkConnectorConfig.validate), reported on both keys. */
function topicSelection(p: ParsedConfig): TopicSelection {
  const topicsList = p.list('topics') ?? [];
  const topicsRegex = p.string('topics.regex') ?? '';
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
  return Object.freeze(topics);
}

/** Converters (§2.3): a connector-level class is configured by the connector's own sub-settings only. */
function converters(p: ParsedConfig): { keyConverter: ConverterConfig | null; valueConverter: ConverterConfig | null } {
  const converter = (key: 'key.converter' | 'value.converter'): ConverterConfig | null => {
    const className = p.string(key);
    if (className === null || className === '') return null;
    const r = parseConverter(key, className, p.prefixed(`${key}.`));
    for (const e of r.errors) p.addError(e.key, e.message);
    return r.converter;
  };
  for (const kind of ['key', 'value'] as const) {
    const sub = Object.keys(p.prefixed(`${kind}.converter.`));
    if (p.string(`${kind}.converter`) === null && sub.length > 0) {
      p.addWarning(`${kind}.converter.* settings (${sub.join(', ')}) are ignored: ${kind}.converter is not set here, so the worker's converter and the worker's settings apply`);
    }
  }
  return { keyConverter: converter('key.converter'), valueConverter: converter('value.converter') };
}

/** Consumer group (§2.6): iceberg.connect.group-id, when set, must name the group the tasks really use. */
function consumerGroup(p: ParsedConfig, name: string): string {
  const consumerOverrides = p.prefixed('consumer.override.');
  const groupId = consumerOverrides['group.id'] ?? `connect-${name}`;
  const icebergGroup = p.string('iceberg.connect.group-id');
  if (icebergGroup !== null && icebergGroup !== groupId) {
    p.addError('iceberg.connect.group-id', invalidMessage('iceberg.connect.group-id', icebergGroup, `Must equal the connector's consumer group ${groupId} (consumer.override.group.id, or connect-<name>)`));
  }
  const autoCommit = consumerOverrides['enable.auto.commit'];
  if (autoCommit !== undefined && autoCommit.trim().toLowerCase() !== 'false') {
    p.addError('consumer.override.enable.auto.commit', invalidMessage('consumer.override.enable.auto.commit', autoCommit, 'Offsets are committed with the files they cover, in the commit cycle\'s transaction; auto-commit cannot be enabled'));
  }
  return groupId;
}

/** The control topic and commit cycle; its retention must outlive several commit cycles. */
function controlConfig(p: ParsedConfig, connectorName: string): ControlConfig {
  const intervalMs = n(p, 'iceberg.control.commit.interval-ms');
  const alarm = n(p, 'icefloe.control.retention-alarm-ratio');
  const stop = n(p, 'icefloe.control.retention-stop-ratio');
  if (alarm >= stop) {
    p.addError('icefloe.control.retention-stop-ratio', invalidMessage('icefloe.control.retention-stop-ratio', String(stop), `Must be above icefloe.control.retention-alarm-ratio (${alarm}): the alarm comes before the stop`));
  }
  const retention = n(p, 'icefloe.control.topic.retention-ms');
  if (retention !== -1 && retention > 0 && intervalMs > 0 && retention < 10 * intervalMs) {
    p.addError('icefloe.control.topic.retention-ms', invalidMessage('icefloe.control.topic.retention-ms', String(retention), `Must be at least 10 × iceberg.control.commit.interval-ms (${10 * intervalMs}): unapplied announcements must outlive a committer outage`));
  }
  const readMaxBytes = n(p, 'icefloe.control.read.max-bytes');
  const bufferMaxBytes = n(p, 'icefloe.control.buffer.max-bytes');
  if (bufferMaxBytes < readMaxBytes) {
    p.addError('icefloe.control.buffer.max-bytes', invalidMessage('icefloe.control.buffer.max-bytes', String(bufferMaxBytes), `Must be at least icefloe.control.read.max-bytes (${readMaxBytes}): one round's read must fit the buffer`));
  }
  const minRetention = n(p, 'icefloe.control.topic.min-retention-ms');
  if (retention !== -1 && retention < minRetention) {
    p.addError('icefloe.control.topic.retention-ms', invalidMessage('icefloe.control.topic.retention-ms', String(retention), `Must be -1 or at least icefloe.control.topic.min-retention-ms (${minRetention}): the worker refuses a control topic with a shorter retention`));
  }
  return Object.freeze({
    topic: p.string('iceberg.control.topic') ?? defaultControlTopic(connectorName),
    commitIntervalMs: intervalMs,
    transactionalPrefix: p.string('iceberg.coordinator.transactional.prefix') ?? '',
    topicPartitions: n(p, 'icefloe.control.topic.partitions'),
    topicReplicationFactor: n(p, 'icefloe.control.topic.replication.factor'),
    topicRetentionMs: retention,
    autoCreateTopic: b(p, 'icefloe.control.topic.auto-create'),
    groupIdPrefix: p.string('iceberg.control.group-id-prefix') ?? 'cg-control-',
    readMaxBytes,
    bufferMaxBytes,
    minRetentionMs: minRetention,
    checkTopicConfig: b(p, 'icefloe.control.topic.check-config'),
    retentionAlarmRatio: alarm,
    retentionStopRatio: stop,
    kafkaProps: p.prefixed('iceberg.kafka.'),
  });
}

/**
 * The control topic of a connector that names none: its own (`icefloe-control-<name>`), so two connectors
 * never share one by accident and none shares the Apache sink's `control-iceberg`. A topic name holds
 * [A-Za-z0-9._-] and at most 249 characters; anything else in the connector name becomes `_`.
 */
export function defaultControlTopic(connectorName: string): string {
  return `icefloe-control-${connectorName.replace(/[^A-Za-z0-9._-]/g, '_')}`.slice(0, 249);
}

/** Keys that are neither defined nor under a declared prefix: Tabular's, refused; ours or the sink's, a warning (kept, passed through). */
function checkUnknown(p: ParsedConfig): void {
  for (const key of Object.keys(p.unknown)) {
    const legacy = LEGACY_TABULAR_KEYS[key];
    if (UNSUPPORTED_SEMANTIC_KEYS.includes(key)) {
      const v = (p.unknown[key] ?? '').trim().toLowerCase();
      if (v !== '' && v !== 'false') {
        p.addError(key, invalidMessage(key, p.unknown[key] ?? '', 'This Tabular sink key (CDC / upsert) is not supported: Icefloe, like the Apache Iceberg sink, only appends. Remove it'));
      }
    } else if (legacy !== undefined) {
      p.addError(key, `${key} is a legacy Tabular key that neither Icefloe nor the Apache Iceberg sink reads; rename it to ${legacy}`);
    } else if (key === 'iceberg.coordinator.transactional.suffix') {
      p.addWarning(`${key} is set per task by the connector; a value in the connector config is ignored`);
    } else if (key.startsWith('iceberg.') || key.startsWith('icefloe.') || p.def.suggest(key) !== undefined) {
      // Other unknown keys pass through as in Connect; one that looks like a known key is most likely a typo.
      p.addWarning(`${key} is not a known key; it is kept but not used${didYouMean(p.def, key)}`);
    }
  }
}

/**
 * Error handling (Connect's errors.* keys and ours). A dead-letter destination only receives records with
 * errors.tolerance=all (with none the first bad record fails the task), so naming one with none is refused
 * rather than accepted to do nothing. The dead-letter topic may not be consumed by the connector (Connect's
 * check and wording), and the dead-letter table may not be one the records route to.
 */
function errorHandling(p: ParsedConfig, topics: TopicSelection, tables: TablesConfig): ErrorHandling {
  const tolerance = (p.string('errors.tolerance') ?? 'none').toLowerCase() === 'all' ? 'all' : 'none';
  const dlqTopic = (p.string('errors.deadletterqueue.topic.name') ?? '').trim();
  const dlqTable = (p.string('icefloe.errors.deadletterqueue.table.name') ?? '').trim();
  const needsAll = (key: string, value: string): void => {
    if (tolerance !== 'all') p.addError(key, invalidMessage(key, value, 'A dead-letter destination only receives records with errors.tolerance=all (with none, the first bad record fails the task). Set errors.tolerance=all, or remove it'));
  };
  if (dlqTopic !== '') {
    needsAll('errors.deadletterqueue.topic.name', dlqTopic);
    if (topics.kind === 'list' && topics.topics.includes(dlqTopic)) {
      p.addError('topics', `The DLQ topic '${dlqTopic}' may not be included in the list of topics ('topics=[${topics.topics.join(', ')}]') consumed by the connector`);
    }
    if (topics.kind === 'regex' && topics.regex.test(dlqTopic)) {
      p.addError('topics.regex', `The DLQ topic '${dlqTopic}' may not be matched by the regex for the topics ('topics.regex=${topics.pattern}') consumed by the connector`);
    }
  }
  if (dlqTable !== '') {
    needsAll('icefloe.errors.deadletterqueue.table.name', dlqTable);
    const routing = tables.routing;
    const routed = routing.kind === 'all' ? routing.tables : routing.kind === 'regex' ? routing.routes.map((r) => r.table) : [];
    if (routed.includes(dlqTable)) {
      p.addError('icefloe.errors.deadletterqueue.table.name', invalidMessage('icefloe.errors.deadletterqueue.table.name', dlqTable, 'The dead-letter table may not be a table the records route to (iceberg.tables); name a table of its own'));
    }
  }
  return Object.freeze({
    tolerance,
    logEnable: b(p, 'errors.log.enable'),
    retryTimeoutMs: n(p, 'errors.retry.timeout') > 0 ? n(p, 'errors.retry.timeout') : null,
    retryDelayMaxMs: n(p, 'errors.retry.delay.max.ms'),
    logIncludeMessages: b(p, 'errors.log.include.messages'),
    deadLetterTopic: dlqTopic === '' ? null : Object.freeze({
      topic: dlqTopic,
      replicationFactor: p.number('errors.deadletterqueue.topic.replication.factor') ?? 3,
      contextHeaders: b(p, 'errors.deadletterqueue.context.headers.enable'),
    }),
    deadLetterTable: dlqTable === '' ? null : dlqTable,
    recordMaxBytes: n(p, 'icefloe.errors.record.max-bytes'),
  });
}

function build(p: ParsedConfig, options: ConnectorParseOptions): ConnectorConfig {
  const name = p.string('name') ?? '';
  const connectorClass = checkConnectorClass(p);
  const topics = topicSelection(p);
  const { keyConverter, valueConverter } = converters(p);
  const groupId = consumerGroup(p, name);
  const tables = tablesConfig(p);
  const catalog = catalogConfig(p, options.defaultCatalog);
  const control = controlConfig(p, name);
  rejectUnsupported(p, CONNECTOR_UNSUPPORTED);
  rejectUnsupportedWriteProps(p);
  checkUnknown(p);
  return Object.freeze({
    name,
    connectorClass,
    tasksMax: n(p, 'tasks.max'),
    topics,
    groupId,
    keyConverter,
    valueConverter,
    errors: errorHandling(p, topics, tables),
    consumerOverrides: p.prefixed('consumer.override.'),
    producerOverrides: p.prefixed('producer.override.'),
    adminOverrides: p.prefixed('admin.override.'),
    tables,
    control,
    commit: Object.freeze({ intervalMs: control.commitIntervalMs, maxBytes: p.number('icefloe.commit.max-bytes'), maxRecords: p.number('icefloe.commit.max-records') }),
    memoryBudgetBytes: n(p, 'icefloe.task.memory-budget-bytes'),
    stallTimeoutMs: p.number('icefloe.task.stall-timeout-ms'),
    catalog,
    secretKeys: p.secretKeys(),
    warnings: p.warnings,
    stored: (): Record<string, string> => ({ ...p.original }),
    redacted: (): Record<string, string> => p.redacted(),
  });
}
