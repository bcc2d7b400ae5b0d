/**
 * The connector's table keys: destination tables, routing (IcebergSinkConfig's rules, its messages
 * verbatim), per-table settings (`iceberg.table.<table>.*` over `iceberg.tables.default-*`), schema
 * options and Kafka metadata columns, assembled into the `TablesConfig` the router and the task read.
 *
 * Owns: the table and routing rules and their warnings.
 * Must not: look at a table or a schema (partition-by is checked for syntax only; columns and types are
 * checked when a table is created, iceberg/partition-spec.ts).
 */
import { invalidMessage } from './config-def.ts';
import type { ParsedConfig } from './config-def.ts';
import { KAFKA_METADATA_COLUMNS, MESSAGES, TABLE_PROPERTIES } from './connector-def.ts';
import type { KafkaMetadataColumn, TableProperty } from './connector-def.ts';
import { regexProblem, wholeMatch } from './names.ts';
import { acceptedValue, connectorRule, unsupportedMessage } from './unsupported.ts';
import { partitionByProblem } from '../iceberg/partition-by.ts';

export interface TableSettings {
  /** The `partition-by` text (syntax checked), '' for unpartitioned. */
  readonly partitionBy: string;
  /** The key `partitionBy` comes from (`iceberg.table.<table>.partition-by` or the default's), for messages. */
  readonly partitionByKey: string;
  /** Whole-match regex on the route field's value (static fan-out), or null. */
  readonly routeRegex: RegExp | null;
  /**
   * The branch the committer appends this table's files to and reads its control positions from:
   * `iceberg.table.<t>.commit-branch`, else `iceberg.tables.default-commit-branch`, else main. A branch that
   * does not exist yet is created by the first commit, as a fork of main.
   */
  readonly commitBranch: string;
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

type PerTable = Map<string, Partial<Record<TableProperty, string>>>;

/** Table properties that are accepted only at their no-op value (unsupported.ts). */
const NOT_YET: ReadonlySet<string> = new Set(['id-columns']);

/** Why a commit-branch value cannot name a branch, or undefined. */
function branchProblem(value: string): string | undefined {
  return value.trim() === '' ? 'String must be non-empty' : undefined;
}

/** Checks one `iceberg.table.<table>.<prop>` value. */
function checkTableValue(p: ParsedConfig, key: string, prop: TableProperty, raw: string): void {
  const value = raw.trim();
  let problem: string | undefined;
  if (prop === 'partition-by' && value !== '') problem = partitionByProblem(value);
  if (prop === 'route-regex') problem = regexProblem(value);
  if (prop === 'commit-branch') problem = branchProblem(raw);
  if (problem !== undefined) p.addError(key, invalidMessage(key, raw, problem));
  if (NOT_YET.has(prop)) {
    const rule = connectorRule(`iceberg.table.<table>.${prop}`);
    if (!acceptedValue(rule, raw)) p.addError(key, unsupportedMessage(key, rule));
  }
}

/** `iceberg.table.<table>.<property>`: the table name may contain dots, the property does not. */
function perTableSettings(p: ParsedConfig, staticTables: readonly string[], dynamic: boolean): PerTable {
  const out: PerTable = new Map();
  for (const [rest, raw] of Object.entries(p.prefixed('iceberg.table.'))) {
    const key = `iceberg.table.${rest}`;
    const dot = rest.lastIndexOf('.');
    const table = dot > 0 ? rest.slice(0, dot) : '';
    const prop = rest.slice(dot + 1);
    if (table === '' || !(TABLE_PROPERTIES as readonly string[]).includes(prop)) {
      p.addWarning(`${key} is not an Iceberg sink key (per-table keys: iceberg.table.<table>.{${TABLE_PROPERTIES.join(',')}}); it is kept but not used`);
      continue;
    }
    checkTableValue(p, key, prop as TableProperty, raw);
    if (!dynamic && !staticTables.includes(table)) p.addWarning(`${key} is set but ${table} is not in iceberg.tables`);
    const entry = out.get(table) ?? {};
    entry[prop as TableProperty] = raw.trim();
    out.set(table, entry);
  }
  return out;
}

function routingOf(p: ParsedConfig, staticTables: readonly string[], dynamic: boolean, perTable: PerTable, settings: (t: string) => TableSettings): Routing {
  const routeField = p.string('iceberg.tables.route-field');
  if (dynamic) return { kind: 'dynamic', field: routeField ?? '' };
  if (routeField !== null && routeField !== '') {
    const routes = staticTables.flatMap((table) => {
      const regex = settings(table).routeRegex;
      if (regex === null) p.addWarning(`iceberg.tables.route-field is set but iceberg.table.${table}.route-regex is not: table ${table} receives no records`);
      return regex === null ? [] : [{ table, regex }];
    });
    return { kind: 'regex', field: routeField, routes };
  }
  for (const [table, own] of perTable) {
    if (own['route-regex'] !== undefined) p.addWarning(`iceberg.table.${table}.route-regex is ignored: iceberg.tables.route-field is not set`);
  }
  return { kind: 'all', tables: staticTables };
}

/** The tables part of a connector config, adding the table and routing rules' errors and warnings to `p`. */
export function tablesConfig(p: ParsedConfig): TablesConfig {
  const staticTables = p.list('iceberg.tables') ?? [];
  const dynamic = p.boolean('iceberg.tables.dynamic-enabled') ?? false;
  const routeField = p.string('iceberg.tables.route-field');
  const hasStatic = staticTables.length > 0;
  // Java's texts first (searchable), then the value and the fix.
  if (hasStatic && dynamic) {
    p.addError('iceberg.tables', invalidMessage('iceberg.tables', staticTables.join(','), `${MESSAGES.staticAndDynamic}: iceberg.tables.dynamic-enabled=true routes each record to the table its route field names. Remove iceberg.tables for dynamic routing, or set iceberg.tables.dynamic-enabled=false to write to the listed tables`));
  }
  if (dynamic && (routeField === null || routeField === '')) {
    p.addError('iceberg.tables.route-field', `${MESSAGES.noRouteField} (iceberg.tables.dynamic-enabled=true): set iceberg.tables.route-field to the record field whose value names the table (namespace.table), or turn dynamic routing off and list the tables in iceberg.tables`);
  }
  if (!hasStatic && !dynamic) p.addError('iceberg.tables', MESSAGES.noTables);
  const perTable = perTableSettings(p, staticTables, dynamic);
  const defaultPartitionBy = p.string('iceberg.tables.default-partition-by') ?? '';
  const defaultBranch = p.string('iceberg.tables.default-commit-branch');
  const settings = (table: string): TableSettings => {
    const own = perTable.get(table) ?? {};
    const regex = own['route-regex'];
    return Object.freeze({
      partitionBy: own['partition-by'] ?? defaultPartitionBy,
      partitionByKey: own['partition-by'] === undefined ? 'iceberg.tables.default-partition-by' : `iceberg.table.${table}.partition-by`,
      routeRegex: regex === undefined || regexProblem(regex) !== undefined ? null : wholeMatch(regex),
      commitBranch: own['commit-branch'] ?? defaultBranch ?? 'main',
    });
  };
  const metadataColumns = (p.list('icefloe.tables.kafka-metadata-columns') ?? []).filter((c): c is KafkaMetadataColumn => (KAFKA_METADATA_COLUMNS as readonly string[]).includes(c));
  return Object.freeze({
    routing: Object.freeze(routingOf(p, staticTables, dynamic, perTable, settings)),
    autoCreate: p.boolean('iceberg.tables.auto-create-enabled') ?? false,
    evolveSchema: p.boolean('iceberg.tables.evolve-schema-enabled') ?? false,
    forceOptional: p.boolean('iceberg.tables.schema-force-optional') ?? false,
    caseInsensitive: p.boolean('iceberg.tables.schema-case-insensitive') ?? false,
    autoCreateProps: p.prefixed('iceberg.tables.auto-create-props.'),
    writeProps: p.prefixed('iceberg.tables.write-props.'),
    unrouted: p.string('icefloe.tables.unrouted') === 'skip' ? 'skip' : 'fail',
    kafkaMetadata: Object.freeze({ columns: Object.freeze(metadataColumns), prefix: p.string('icefloe.tables.kafka-metadata-prefix') ?? '' }),
    settings,
  });
}
