/**
 * Routing: which tables a record goes to, from the connector's table settings and the record's route
 * value, with the Apache Iceberg sink's semantics (reference/connect-rest.md §2.9; Java:
 * `org.apache.iceberg.connect.data.SinkWriter#routeRecordStatically/#routeRecordDynamically`, Iceberg
 * 1.7–1.10) and one deliberate difference: a record that routes to no table is never dropped silently.
 *
 * Owns: compiling the routing once (regexes re-anchored and cached, Java-only regex syntax refused), the
 * per-value routing decision, the unrouted outcome (fail with a message naming topic/partition/offset
 * and the value, or skip and count), and the skip counters behind the `records-unrouted` metric.
 * Must not: decode records (the decoder extracts the route value at `routeFieldPath()` and hands over a
 * string or null), touch a catalog, or do I/O. It is pure apart from its counters and caches.
 *
 * Modes (`Routing` from src/config/connector-config.ts):
 * - `all` (`iceberg.tables`, no `iceberg.tables.route-field`): every record to every listed table. Java:
 *   `config.tables().forEach(t -> writerForTable(t, ...).write(record))`. The route value is ignored
 *   and need not be decoded (`routeFieldPath()` is null).
 * - `regex` (`iceberg.tables` + route-field): to each listed table whose `iceberg.table.<t>.route-regex`
 *   matches the WHOLE route value — Java: `regex != null && regex.matcher(routeValue).matches()`, with
 *   `Pattern.compile(routeRegexStr)` and no flags (IcebergSinkConfig#tableConfig), so matching is
 *   case-sensitive. `Matcher.matches()` "attempts to match the entire region against the pattern"
 *   (java.util.regex.Matcher javadoc), backtracking into alternatives as needed, so `a|ab` matches "ab".
 *   JS equivalent: `^(?:p)$` without the `m` flag (`$` then matches only at the end of input; Java's
 *   anchoring by matches() does not allow a trailing line terminator either). Several matching tables
 *   = fan-out, in `iceberg.tables` order. A table without route-regex receives nothing (Java:
 *   `regex != null && ...`; config validation warns).
 * - `dynamic` (`iceberg.tables.dynamic-enabled` + route-field): the route value lower-cased is the table
 *   name — Java: `routeValue.toLowerCase(Locale.ROOT)`; JS `toLowerCase()` is the locale-independent
 *   Unicode default case mapping, i.e. the same as Locale.ROOT. Java then parses it with
 *   `TableIdentifier.parse` (split on '.'); we require `namespace.table` (≥ 2 non-empty parts, no
 *   surrounding whitespace or control characters) and treat anything else as unrouted
 *   (`invalid-table-name`) instead of letting a catalog call fail later.
 *
 * Unrouted records. Java drops them silently in three places: a null route value (both modes skip
 * `if (routeValue != null)`), no regex matching, and — dynamic only — a table that does not exist with
 * auto-create off (`IcebergWriterFactory#createWriter` returns a `NoOpWriter` when `ignoreMissingTable`).
 * Here each has an outcome from `icefloe.tables.unrouted`: `fail` (default; the task fails with the
 * reason) or `skip` (counted per cause). The last case is only known after the catalog lookup, so the
 * runtime reports it through `unknownTable()`, which applies the same outcome and counter.
 *
 * Route value: what Java's `RecordUtils.extractFromRecordValue(value, field)` returns, then
 * `toString()`: the field path is the route-field split on every '.' (Guava `Splitter.on('.')`, empty
 * segments kept), a missing field or a null on the way gives null, a tombstone (null record value)
 * gives null, a non-string value is its Java `toString()` (decimal for numbers, `true`/`false`).
 *
 * Differences from Java, on purpose: a table listed twice in `iceberg.tables` receives a record once
 * (Java would look up the same writer twice and write the record twice).
 */
import { javaOnlyRegexSyntax, tableNameProblem } from '../config/names.ts';
export { javaOnlyRegexSyntax, tableNameProblem } from '../config/names.ts';
import { ConfigError, DataError } from '../core/errors.ts';
import type { Routing, TablesConfig } from '../config/connector-config.ts';

/** Why a record routed to no table; one `records-unrouted` counter per cause. */
export const UNROUTED_CAUSES = ['no-match', 'null-route-value', 'invalid-table-name', 'unknown-table'] as const;
export type UnroutedCause = (typeof UNROUTED_CAUSES)[number];

export type RouteResult =
  /** The tables (`namespace.table`) the record goes to, ≥ 1, distinct. A shared frozen array: do not mutate. */
  | { readonly kind: 'tables'; readonly tables: readonly string[] }
  /** `icefloe.tables.unrouted=skip`: the record is consumed but written nowhere; already counted. */
  | { readonly kind: 'skip'; readonly cause: UnroutedCause }
  /** `icefloe.tables.unrouted=fail`: the task must fail with `reason` (also carried by `error`). */
  | { readonly kind: 'fail'; readonly cause: UnroutedCause; readonly reason: string; readonly error: DataError };

type RoutedTo = Extract<RouteResult, { kind: 'tables' }>;

/** What the router reads from the connector config: `ConnectorConfig.tables` fits. */
export type RouterConfig = Pick<TablesConfig, 'routing' | 'unrouted'>;

/** Distinct route values whose decisions are cached; beyond this the cache is cleared and refilled. */
const CACHE_LIMIT = 4096;
/** Route values longer than this are cut in failure messages (they may be large or sensitive). */
const MESSAGE_VALUE_LIMIT = 200;

export class Router {
  readonly mode: Routing['kind'];
  /** `iceberg.tables.route-field` as configured, or null when routing needs no value (`all`). */
  readonly routeField: string | null;
  readonly onUnrouted: 'fail' | 'skip';
  readonly #path: readonly string[] | null;
  /** `all`: the listed tables; `regex`: the tables that have a route-regex; `dynamic`: null. */
  readonly #tables: readonly string[] | null;
  readonly #routes: readonly { readonly table: string; readonly regex: RegExp }[];
  readonly #all: RoutedTo | null;
  readonly #cache = new Map<string, RoutedTo | UnroutedCause>();
  readonly #skipped: Record<UnroutedCause, number> = { 'no-match': 0, 'null-route-value': 0, 'invalid-table-name': 0, 'unknown-table': 0 };
  readonly #skipResults: Readonly<Record<UnroutedCause, RouteResult>>;

  /** Compiles the routing once. A route-regex that cannot be compiled, or uses Java-only syntax, is a ConfigError. */
  constructor(config: RouterConfig) {
    const routing = config.routing;
    this.mode = routing.kind;
    this.onUnrouted = config.unrouted;
    this.#skipResults = Object.freeze(Object.fromEntries(UNROUTED_CAUSES.map((c) => [c, Object.freeze({ kind: 'skip', cause: c })])) as Record<UnroutedCause, RouteResult>);
    if (routing.kind === 'all') {
      if (routing.tables.length === 0) throw new ConfigError('iceberg.tables lists no table: Must specify table name(s)');
      this.routeField = null;
      this.#path = null;
      this.#tables = Object.freeze(distinct(routing.tables));
      this.#routes = [];
      this.#all = routedTo(this.#tables);
    } else {
      if (routing.field === '') throw new ConfigError(routing.kind === 'dynamic' ? 'Must specify a route field if using dynamic table names' : 'iceberg.tables.route-field is empty');
      this.routeField = routing.field;
      this.#path = Object.freeze(routing.field.split('.'));
      this.#all = null;
      if (routing.kind === 'regex') {
        const seen = new Set<string>();
        this.#routes = Object.freeze(
          routing.routes.filter((r) => !seen.has(r.table) && seen.add(r.table)).map((r) => Object.freeze({ table: r.table, regex: compileWholeMatch(r.table, r.regex) })),
        );
        if (this.#routes.length === 0) {
          throw new ConfigError(`iceberg.tables.route-field is set but no table in iceberg.tables has an iceberg.table.<table>.route-regex: no record could be routed (unset the route field to send every record to every table)`);
        }
        this.#tables = Object.freeze(this.#routes.map((r) => r.table));
      } else {
        this.#routes = [];
        this.#tables = null;
      }
    }
  }

  /**
   * The route field's path for the decoder (`meta.tenant` → `['meta', 'tenant']`), or null when the
   * routing ignores values (`all`): then the runtime decodes nothing for routing and may pass null.
   */
  routeFieldPath(): readonly string[] | null {
    return this.#path;
  }

  /** The statically known destination tables (to open writers up front), or null with dynamic routing. */
  tables(): readonly string[] | null {
    return this.#tables;
  }

  /**
   * Routes one record by its route value (the decoder's string form, or null when the field is missing
   * or null). The coordinates only name the record in a failure. Cached per distinct value: a hit
   * allocates nothing.
   */
  route(value: string | null, topic: string, partition: number, offset: bigint): RouteResult {
    if (this.#all !== null) return this.#all;
    if (value === null) return this.#unrouted('null-route-value', value, null, topic, partition, offset);
    let decision = this.#cache.get(value);
    if (decision === undefined) {
      decision = this.#decide(value);
      if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
      this.#cache.set(value, decision);
    }
    return typeof decision === 'string' ? this.#unrouted(decision, value, null, topic, partition, offset) : decision;
  }

  /**
   * Dynamic routing named a table that does not exist and auto-create is off (Java writes to a NoOpWriter,
   * i.e. drops the record): the configured unrouted outcome, counted as `unknown-table` when skipped.
   */
  unknownTable(table: string, value: string | null, topic: string, partition: number, offset: bigint, missingNamespace?: string): RouteResult {
    return this.#unrouted('unknown-table', value, table, topic, partition, offset, missingNamespace);
  }

  /** Records skipped so far, per cause (the `records-unrouted` metric, tagged by cause). */
  skippedCounts(): Readonly<Record<UnroutedCause, number>> {
    return { ...this.#skipped };
  }

  /** Total records skipped so far. */
  skippedTotal(): number {
    return UNROUTED_CAUSES.reduce((sum, c) => sum + this.#skipped[c], 0);
  }

  #decide(value: string): RoutedTo | UnroutedCause {
    if (this.mode === 'dynamic') {
      const table = value.toLowerCase();
      return tableNameProblem(table) === undefined ? routedTo([table]) : 'invalid-table-name';
    }
    const hits: string[] = [];
    for (const r of this.#routes) if (r.regex.test(value)) hits.push(r.table);
    return hits.length === 0 ? 'no-match' : routedTo(hits);
  }

  #unrouted(cause: UnroutedCause, value: string | null, table: string | null, topic: string, partition: number, offset: bigint, missingNamespace?: string): RouteResult {
    if (this.onUnrouted === 'skip') {
      this.#skipped[cause]++;
      return this.#skipResults[cause];
    }
    // A missing table is fixed by creating it (auto-create, or by hand): skipping is the last resort, not the advice.
    const why = cause === 'unknown-table'
      ? `cannot be written: ${this.#missingTable(table, value, missingNamespace)}`
      : `routes to no table: ${this.#explain(cause, value, table)}. Set icefloe.tables.unrouted=skip to skip and count such records instead.`;
    // The record's coordinates are part of the error (core/errors.ts): its message starts with them.
    const error = new DataError(why, { stage: 'route', record: { topic, partition, offset }, context: { routeField: this.routeField, routeValue: value === null ? null : cut(value), cause } });
    return Object.freeze({ kind: 'fail', cause, reason: error.message, error });
  }

  /** The unknown-table reason, with the keys that fix it first and skipping last. */
  #missingTable(table: string | null, value: string | null, missingNamespace: string | undefined): string {
    const from = this.mode === 'dynamic' && value !== null ? ` (from route field ${JSON.stringify(this.routeField)} (iceberg.tables.route-field) value ${value === null ? 'null' : JSON.stringify(cut(value))})` : '';
    const ns = missingNamespace === undefined ? '' : `; its namespace ${missingNamespace} does not exist either`;
    return `table ${JSON.stringify(table)}${from} does not exist${ns}, and iceberg.tables.auto-create-enabled is false. ` +
      `Fix: set iceberg.tables.auto-create-enabled=true (the connector then creates ${missingNamespace === undefined ? 'the table' : 'the namespace and the table'} from the records' schema), ` +
      `or create the table in the catalog; only if such records should be dropped, set icefloe.tables.unrouted=skip to skip and count them.`;
  }

  #explain(cause: UnroutedCause, value: string | null, table: string | null): string {
    const field = `route field ${JSON.stringify(this.routeField)} (iceberg.tables.route-field)`;
    const shown = value === null ? 'null' : JSON.stringify(cut(value));
    switch (cause) {
      case 'null-route-value':
        return `${field} is null or missing`;
      case 'no-match':
        return `${field} value ${shown} matches no iceberg.table.<table>.route-regex (whole-value, case-sensitive match; tables with a route-regex: ${(this.#tables ?? []).join(', ')})`;
      case 'invalid-table-name':
        return `${field} value ${shown} does not name a table: ${tableNameProblem((value ?? '').toLowerCase()) ?? 'not namespace.table'}`;
      case 'unknown-table':
        return this.#missingTable(table, value, undefined);
    }
  }
}

/** Builds the router for a connector's table settings (`ConnectorConfig.tables`). */
export function compileRouter(config: RouterConfig): Router {
  return new Router(config);
}


/**
 * Re-anchors a route regex for whole-value matching with only the flags Java's `Pattern.compile(p)`
 * implies (none): `g`/`y` would make `test()` stateful, `m` would let `^`/`$` match at line breaks,
 * `i` would make it case-insensitive. Anchoring an already anchored `^(?:p)$` again changes nothing.
 */
function compileWholeMatch(table: string, regex: RegExp): RegExp {
  const key = `iceberg.table.${table}.route-regex`;
  const javaOnly = javaOnlyRegexSyntax(regex.source);
  if (javaOnly !== undefined) {
    throw new ConfigError(`Invalid value ${regex.source} for configuration ${key}: ${javaOnly}`, { context: { key } });
  }
  try {
    return new RegExp(`^(?:${regex.source})$`, regex.flags.replace(/[gymi]/g, ''));
  } catch (e) {
    throw new ConfigError(`Invalid value ${regex.source} for configuration ${key}: Not a valid regular expression (${(e as Error).message})`, { cause: e, context: { key } });
  }
}

function routedTo(tables: readonly string[]): RoutedTo {
  return Object.freeze({ kind: 'tables', tables: Object.freeze([...tables]) });
}

function distinct(tables: readonly string[]): string[] {
  return [...new Set(tables)];
}

function cut(value: string): string {
  return value.length <= MESSAGE_VALUE_LIMIT ? value : `${value.slice(0, MESSAGE_VALUE_LIMIT)}…(${value.length} chars)`;
}
