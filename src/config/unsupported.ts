/**
 * Keys Icefloe knows by name but does not act on yet. Kafka Connect, the Apache Iceberg sink and Icefloe's
 * own plans define them; accepting one and ignoring it would drop the user's intent without a word (a
 * dead-letter topic that never receives a record). So each is refused
 * at validation, with a per-key error that starts "not supported yet: ", says what Icefloe does instead,
 * what the user can do, and which capability brings the key.
 *
 * A key set to its default (or to a value that asks for exactly what Icefloe does) stays accepted, so
 * configs that spell out defaults still load. Keys whose purpose Icefloe's design already meets (the Java
 * sink's thread-pool and consumer-group tuning, connect-standalone's offset file) are not listed here:
 * their ConfigDef docs say they have no effect and why.
 *
 * Owns: the list of such keys, their messages (used for both the validation error and the generated
 * docs), and the check.
 * Must not: reject a key Icefloe acts on, or show a key's value in a message (it may hold a secret).
 */
import { parseType } from './config-def.ts';
import type { ConfigType, ParsedConfig } from './config-def.ts';

export interface UnsupportedKey {
  /** A key, or a key family: a prefix ending in a dot (`transforms.`) or a pattern (`iceberg.table.<table>.id-columns`). */
  readonly key: string;
  /** The capability the key needs: "the dead-letter queue". */
  readonly needs: string;
  /** What Icefloe does today, and what the user can do instead. */
  readonly instead: string;
  /** Values accepted besides the key's default because they ask for what Icefloe does anyway. */
  readonly alsoAccepted?: readonly string[];
}

const SIMPLE_HEADER_CONVERTER = 'org.apache.kafka.connect.storage.SimpleHeaderConverter';
const BYTE_ARRAY_CONVERTER = 'org.apache.kafka.connect.converters.ByteArrayConverter';

const SMTS = 'single message transforms (SMTs)';
const DISTRIBUTED = 'distributed mode';

const TRANSFORMS: Omit<UnsupportedKey, 'key'> = {
  needs: SMTS,
  instead: 'Records would reach the tables untransformed. Remove transforms and every transforms.* key, or transform the records before they reach the topic.',
};
const PREDICATES: Omit<UnsupportedKey, 'key'> = { needs: SMTS, instead: 'Predicates only select records for transforms. Remove predicates and every predicates.* key.' };
const HEADER_CONVERTER: Omit<UnsupportedKey, 'key'> = {
  needs: 'header converters, which matter only once single message transforms (SMTs) read header values',
  instead: 'Icefloe converts no header values: headers reach a table only as raw bytes, in the `headers` Kafka metadata column. Remove it, or name SimpleHeaderConverter (the default) or ByteArrayConverter.',
  alsoAccepted: [SIMPLE_HEADER_CONVERTER, BYTE_ARRAY_CONVERTER],
};
const ID_COLUMNS: Omit<UnsupportedKey, 'key'> = {
  needs: 'identifier (primary-key) columns on auto-created tables, which are not scheduled yet',
  instead: 'Tables are created without identifier fields and Icefloe only appends. Remove it; readers that need identifier fields can have them set on the table by another engine (Spark: ALTER TABLE … SET IDENTIFIER FIELDS).',
};

/** Connector keys (connector-def.ts documents them with `unsupportedDoc`). */
export const CONNECTOR_UNSUPPORTED: readonly UnsupportedKey[] = [
  { key: 'transforms', ...TRANSFORMS },
  { key: 'transforms.', ...TRANSFORMS },
  { key: 'predicates', ...PREDICATES },
  { key: 'predicates.', ...PREDICATES },
  { key: 'header.converter', ...HEADER_CONVERTER },
  { key: 'header.converter.', ...HEADER_CONVERTER, instead: 'Icefloe converts no header values: headers reach a table only as raw bytes, in the `headers` Kafka metadata column. Remove it.' },
  { key: 'iceberg.tables.default-id-columns', ...ID_COLUMNS },
  { key: 'iceberg.table.<table>.id-columns', ...ID_COLUMNS },
  {
    key: 'iceberg.control.commit.threads',
    needs: `concurrent table commits, which come with ${DISTRIBUTED} (commit jobs shared by the workers)`,
    instead: 'The committer commits one table at a time. Remove it (or set 1).',
    alsoAccepted: ['1'],
  },
  {
    key: 'iceberg.control.commit.max-consecutive-failures',
    needs: 'a limit on failed commits, which comes with the committer\'s failure handling',
    instead: 'A failed table commit is retried every committer round while the failure is retriable, and one that retrying cannot fix stops that table with the reason; nothing counts failures. Remove it (or set 1).',
  },
];

/**
 * Table properties the Parquet writer reads but cannot apply (src/write/config.ts, `ignored`). A table may
 * carry them from another engine, and the writer then goes on without them; set through the connector's
 * `iceberg.tables.write-props.*` they are the user's own request, and would do nothing.
 */
export const WRITE_PROPS_UNSUPPORTED: readonly UnsupportedKey[] = [
  {
    key: 'iceberg.tables.write-props.write.parquet.compression-level',
    needs: 'a compression level setting in the Parquet encoder (parquet-wasm has none)',
    instead: 'Files are compressed at the codec\'s default level (ZSTD: level 1). Remove it; write.parquet.compression-codec is applied.',
  },
  {
    key: 'iceberg.tables.write-props.write.parquet.page-row-limit',
    needs: 'a row limit per Parquet page in the encoder',
    instead: 'Pages are cut by size, as the encoder decides. Remove it.',
  },
  {
    key: 'iceberg.tables.write-props.write.format.default',
    needs: 'data files in a format other than Parquet',
    instead: 'Icefloe writes Parquet files only. Remove it (or set parquet).',
    alsoAccepted: ['parquet'],
  },
];

/** Adds the "not supported yet" error to every write-props key of `p` that `WRITE_PROPS_UNSUPPORTED` lists. */
export function rejectUnsupportedWriteProps(p: ParsedConfig): void {
  for (const rule of WRITE_PROPS_UNSUPPORTED) {
    const raw = p.original[rule.key];
    if (raw !== undefined && !acceptedValue(rule, raw.toLowerCase())) p.addError(rule.key, unsupportedMessage(rule.key, rule));
  }
}

/** Worker keys (worker-config.ts documents them with `unsupportedDoc`). */
export const WORKER_UNSUPPORTED: readonly UnsupportedKey[] = [
  { key: 'header.converter', ...HEADER_CONVERTER },
  {
    key: 'connector.client.config.override.policy',
    needs: 'client override policies, which are not scheduled yet',
    instead: 'Every consumer.override.*, producer.override.* and admin.override.* setting of a connector is applied (the All policy). Remove it (or set All) and review connector overrides yourself.',
  },
  {
    key: 'admin.listeners',
    needs: 'a separate listener for the /admin endpoints, which is not scheduled yet',
    instead: 'The /admin endpoints are served on the main listeners (unset), or not at all (set to empty). Remove it, or set it empty.',
  },
  {
    key: 'rest.extension.classes',
    needs: 'Java REST extensions, which need a JVM',
    instead: 'For HTTP basic authentication (BasicAuthSecurityRestExtension) set icefloe.rest.basic-auth.file to a file of `user: password` lines (docs/rest.md). Remove it.',
  },
];

function ruleFor(rules: readonly UnsupportedKey[], key: string): UnsupportedKey {
  const rule = rules.find((r) => r.key === key);
  if (rule === undefined) throw new Error(`no unsupported-key rule for ${key}`);
  return rule;
}

/** The validation error for `key` (the full key name, `transforms.route.type`) under `rule`. */
export function unsupportedMessage(key: string, rule: UnsupportedKey): string {
  return `not supported yet: ${key} needs ${rule.needs}. ${rule.instead}`;
}

/** The generated-docs text of a listed key: what the key means elsewhere, then why it is refused here. */
export function unsupportedDoc(rules: readonly UnsupportedKey[], key: string, meaning: string): string {
  const rule = ruleFor(rules, key);
  const accepted = ['the default', ...(rule.alsoAccepted ?? []).map((v) => v.slice(v.lastIndexOf('.') + 1))].join(' or ');
  const when = key.endsWith('.') ? 'Any such key fails validation' : `Any value but ${accepted} fails validation`;
  return `**Not supported yet** (needs ${rule.needs}): ${meaning} ${when}. ${rule.instead}`;
}

/** A comparable form of a value of `type`, or undefined when it does not parse. */
function canonical(type: ConfigType, raw: string): string | undefined {
  const parsed = parseType(type, raw);
  if ('problem' in parsed) return undefined;
  const v = parsed.value;
  return Array.isArray(v) ? v.join(',') : String(v);
}

/** Whether `raw` asks for nothing Icefloe lacks: blank, the default, or one of the rule's accepted values. */
export function acceptedValue(rule: UnsupportedKey, raw: string, type: ConfigType = 'STRING', defaultValue: string | null = null): boolean {
  if (raw.trim() === '') return true;
  const value = canonical(type, raw);
  const ok = [defaultValue, ...(rule.alsoAccepted ?? [])].filter((v): v is string => v !== null).map((v) => canonical(type, v));
  return value !== undefined && ok.includes(value);
}

/**
 * Adds the "not supported yet" error to every listed key of `p` that is set to anything but an accepted
 * value, and to every key of a listed family. Pattern keys (`<table>`) are checked by their owners.
 */
export function rejectUnsupported(p: ParsedConfig, rules: readonly UnsupportedKey[]): void {
  for (const rule of rules) {
    if (rule.key.includes('<')) continue;
    if (rule.key.endsWith('.')) {
      for (const key of Object.keys(p.original)) if (key.startsWith(rule.key) && key.length > rule.key.length) p.addError(key, unsupportedMessage(key, rule));
      continue;
    }
    const spec = p.def.key(rule.key);
    if (spec === undefined) throw new Error(`unsupported key ${rule.key} is not defined`);
    const raw = p.original[rule.key];
    if (raw !== undefined && !acceptedValue(rule, raw, spec.type, spec.default)) p.addError(rule.key, unsupportedMessage(rule.key, rule));
  }
}

/** The rule of a pattern key (`iceberg.table.<table>.id-columns`), for the module that parses such keys. */
export function connectorRule(key: string): UnsupportedKey {
  return ruleFor(CONNECTOR_UNSUPPORTED, key);
}
