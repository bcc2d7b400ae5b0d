/**
 * Checks the REST validation makes that the Java sink does not (it checks its rules only when a task
 * starts, and some never: a bad partition spec or an inconsistent routing becomes a FAILED task, or
 * records that land nowhere). Each problem is an error on the key at fault, in Connect's
 * `Invalid value <v> for configuration <key>: <problem>` form, so `validate` shows it, create/update
 * refuse the config, and `icefloe standalone` refuses to start with it (app.ts `checkStart`)
 * (reference/connect-rest.md §1.4 "Validate vs create", §6 decision 2: strict).
 *
 * What is knowable without a table: the partition-by terms against each other (Iceberg refuses two
 * terms that are redundant or would get the same partition field name) and against the Kafka metadata
 * columns the config itself adds (their types are fixed, and the writer cannot partition by them yet);
 * routing against the tables listed.
 *
 * Must not: do I/O (the catalog probe is connector-validation.ts's), or repeat an error the config
 * module already reports (syntax errors of partition-by are its own).
 */
import { invalidMessage } from '../config/config-def.ts';
import type { ParsedConfig } from '../config/config-def.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import { metadataFields } from '../config/kafka-metadata.ts';
import { parsePartitionBy, partitionByProblem } from '../iceberg/partition-by.ts';
import { canTransform, transformDedupName } from '../iceberg/transforms.ts';
import type { PrimitiveType } from '../iceberg/types.ts';
import { NAME_SUFFIX } from '../iceberg/partition-spec.ts';


/** The problems of one partition-by value, beyond its syntax. */
function partitionProblems(text: string, config: ConnectorConfig): string[] {
  if (text.trim() === '' || partitionByProblem(text) !== undefined) return [];
  const terms = parsePartitionBy(text);
  const fold = (s: string): string => (config.tables.caseInsensitive ? s.toLowerCase() : s);
  const problems: string[] = [];
  const byKind = new Map<string, string>();
  const byName = new Map<string, string>();
  const metadata = new Map(metadataFields(config.tables, config.keyConverter?.kind ?? 'bytes').map((f) => [fold(f.name), f]));
  for (const term of terms) {
    const kind = `${fold(term.column)}:${transformDedupName(term.transform)}`;
    const sameKind = byKind.get(kind);
    if (sameKind !== undefined) problems.push(`the terms ${sameKind} and ${term.text} are redundant (the same column, the same kind of transform); Iceberg refuses such a spec`);
    else byKind.set(kind, term.text);
    const name = fold(term.column + NAME_SUFFIX[term.transform.kind]);
    const sameName = byName.get(name);
    if (sameName !== undefined && sameKind === undefined) problems.push(`the terms ${sameName} and ${term.text} would both be the partition field ${name}; Iceberg refuses such a spec`);
    else if (sameName === undefined) byName.set(name, term.text);
    const column = metadata.get(fold(term.column));
    if (column !== undefined) {
      const fits = column.type.kind !== 'map' && canTransform(term.transform, column.type as PrimitiveType);
      if (!fits) problems.push(`the term ${term.text} cannot apply to the Kafka metadata column ${column.name} of type ${column.type.kind === 'map' ? 'map<string, binary>' : column.type.kind}`);
      // The partition probe reads the record's value, where metadata columns are not (docs/sink.md, "Limits today").
      else problems.push(`the term ${term.text} partitions by the Kafka metadata column ${column.name}, which Icefloe cannot do yet: every row would get a null partition value`);
    }
  }
  return problems;
}

/** Partition-by values (the default and each table's) checked beyond their syntax. */
function checkPartitionSpecs(p: ParsedConfig, config: ConnectorConfig): void {
  const keys = Object.keys(p.original).filter((k) => k === 'iceberg.tables.default-partition-by' || (k.startsWith('iceberg.table.') && k.endsWith('.partition-by')));
  for (const key of keys) {
    const raw = p.original[key] ?? '';
    for (const problem of partitionProblems(raw, config)) p.addError(key, invalidMessage(key, raw, problem));
  }
}

/** Per-table keys: `iceberg.table.<table>.<property>` with the table part and the property split off. */
function perTableKeys(p: ParsedConfig): { key: string; table: string; prop: string; raw: string }[] {
  return Object.entries(p.prefixed('iceberg.table.')).flatMap(([rest, raw]) => {
    const dot = rest.lastIndexOf('.');
    return dot > 0 ? [{ key: `iceberg.table.${rest}`, table: rest.slice(0, dot), prop: rest.slice(dot + 1), raw }] : [];
  });
}

/** Routing against the tables: every route-regex routes, a route field reaches a table, per-table keys name listed tables. */
function checkRouting(p: ParsedConfig, config: ConnectorConfig): void {
  const routing = config.tables.routing;
  const staticTables = p.list('iceberg.tables') ?? [];
  const perTable = perTableKeys(p);
  for (const { key, table, prop, raw } of perTable) {
    if (prop === 'route-regex' && routing.kind === 'dynamic') {
      p.addError(key, invalidMessage(key, raw, 'With iceberg.tables.dynamic-enabled=true the route field\'s value names the table; a route-regex would route nothing. Remove it, or list the tables in iceberg.tables without dynamic routing'));
    } else if (prop === 'route-regex' && routing.kind === 'all') {
      p.addError(key, invalidMessage(key, raw, 'iceberg.tables.route-field is not set, so this regex routes nothing and every record goes to every table. Set the route field, or remove the regex'));
    }
    if (routing.kind !== 'dynamic' && staticTables.length > 0 && !staticTables.includes(table)) {
      p.addError(key, invalidMessage(key, raw, `${table} is not in iceberg.tables (${staticTables.join(',')}), so this setting applies to no table`));
    }
  }
  if (routing.kind === 'regex' && routing.routes.length === 0 && staticTables.length > 0) {
    const field = p.string('iceberg.tables.route-field') ?? '';
    p.addError('iceberg.tables.route-field', invalidMessage('iceberg.tables.route-field', field, 'No table in iceberg.tables has an iceberg.table.<table>.route-regex, so no record would reach a table. Set a route-regex per table, or remove the route field to send every record to every table'));
  }
}

/** The checks, in the shape `validateConnectorConfig`'s `extraChecks` takes. */
export function icefloeChecks(p: ParsedConfig, config: ConnectorConfig): void {
  checkPartitionSpecs(p, config);
  checkRouting(p, config);
}
