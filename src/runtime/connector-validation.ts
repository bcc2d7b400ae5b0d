/**
 * Connector config validation as Kafka Connect does it (`PUT /connector-plugins/{p}/config/validate`,
 * and before every create or update), plus what the Java sink does not check (icefloe-checks.ts, and
 * a catalog that cannot be reached), with the texts and statuses a Kafka Connect 4.3.1 worker answers:
 *
 * - validate: 400 `Included connector type <cls> does not match request type <plugin>` first; then 500
 *   with the wrapped `BadRequestException: ...` text for no or an unknown `connector.class` (the validate
 *   resource does not unwrap it); otherwise 200 with ConfigInfos, errors and all. AKHQ's
 *   `{connector.class, topics: "getPlugins"}` is such a 200 with the definitions.
 * - create/update: 400 `Connector config {<map>} contains no connector type`, 400 with the
 *   `ConnectException: Failed to find any class ...` text, and 400 `Connector configuration is invalid
 *   and contains the following <N> error(s): ...` listing every error.
 *
 * Config provider references (`${env:...}`) are resolved for validation inside the worker only: the
 * answer shows the submitted `${...}` text for those keys, and no message carries a resolved value.
 *
 * Decision: an unreachable catalog is an error for `validate` (a user asking wants to know) but not
 * before a create or update: an outage of the catalog must not block a config change (Strimzi would
 * retry the PUT forever); a task then reports the unreachable catalog in its status. What a catalog
 * that answers says is no outage: the static tables a record would be written to must exist unless
 * auto-create is on (or `icefloe.tables.unrouted=skip` says such records are skipped), so a missing one
 * is an error on `iceberg.tables` for validate, create and update alike. Before a write the probe runs
 * only when there is such a table to look up, and an unanswered probe then passes.
 *
 * Must not: change the map it was given, or put a secret in an answer or a message.
 */
import { ConfigError, RequestRefused, errorMessage } from '../core/errors.ts';
import { HIDDEN, invalidMessage, isSecretKey, missingMessage, redactUserInfo } from '../config/config-def.ts';
import type { ConfigInfos, ConfigKeyInfo } from '../config/config-def.ts';
import type { CatalogConfig, TablesConfig } from '../config/connector-config.ts';
import { CONNECTOR_CONFIG_DEF, parseConnectorConfig, validateConnectorConfig } from '../config/connector-config.ts';
import { NO_PROVIDERS, resolveConfig, resolveConfigDetailed } from '../config/config-providers.ts';
import type { ConfigProviders } from '../config/config-providers.ts';
import type { ConnectorPlugins } from './connector-plugins.ts';
import { icefloeChecks } from './icefloe-checks.ts';

/** The catalog answered, and these of the tables asked about do not exist (as written in iceberg.tables). */
export interface MissingTables {
  readonly missingTables: readonly string[];
}

/**
 * Whether the catalog answers, given the connector's parsed catalog settings, and which of `tables`
 * (`namespace.table`, as in iceberg.tables) it does not hold: undefined when it answers and holds them
 * all, MissingTables when some are missing, else why it cannot be used (no secrets: the text reaches
 * the REST answer). Stop when `signal` aborts.
 */
export type CatalogProbe = (catalog: CatalogConfig, signal: AbortSignal, tables: readonly string[]) => Promise<string | MissingTables | undefined>;

/** How long the catalog probe may take: validate must answer well under the 10 s clients allow. */
export const DEFAULT_PROBE_TIMEOUT_MS = 4_000;

export interface ValidationDeps {
  readonly plugins: ConnectorPlugins;
  /** The worker's config providers; without them a `${...}` reference is an error on its key. */
  readonly providers?: ConfigProviders;
  /** The worker's default catalog properties (worker-config.ts `defaultCatalogProps`). */
  readonly defaultCatalog?: Readonly<Record<string, string>>;
  readonly catalogProbe?: CatalogProbe;
  readonly probeTimeoutMs?: number;
  /** Icefloe's checks beyond Java's (default true). */
  readonly strict?: boolean;
}

const BAD_REQUEST_EXCEPTION = 'org.apache.kafka.connect.runtime.rest.errors.BadRequestException';
const CONNECT_EXCEPTION = 'org.apache.kafka.connect.errors.ConnectException';

/** Java `ConnectorPluginsResource.normalizedPluginName`: a trailing `Connector` dropped. */
function normalizedPluginName(name: string): string {
  return name.endsWith('Connector') ? name.slice(0, -'Connector'.length) : name;
}

/** Java's `Map.toString()` of a config, secrets shown as "[hidden]" (Kafka prints them; we do not). */
function mapText(config: Readonly<Record<string, string>>): string {
  return `{${Object.entries(config)
    .map(([k, v]) => `${k}=${isSecretKey(k, CONNECTOR_CONFIG_DEF) ? HIDDEN : redactUserInfo(v)}`)
    .join(', ')}}`;
}

/** The connector-type problem of a config (no or an unknown `connector.class`), as Connect words it. */
function connectorTypeProblem(config: Readonly<Record<string, string>>, plugins: ConnectorPlugins): { kind: 'none' | 'unknown'; message: string } | undefined {
  const cls = config['connector.class'];
  if (cls === undefined || cls.trim() === '') return { kind: 'none', message: `Connector config ${mapText(config)} contains no connector type` };
  if (plugins.connector(cls.trim()) !== undefined) return undefined;
  return { kind: 'unknown', message: `Failed to find any class that implements Connector and which name matches ${cls}, available connectors are: ${plugins.availableConnectors()}` };
}

/**
 * Refuses a config a create or update cannot take because of its connector type (400, Connect's texts);
 * returns normally when `connector.class` names this worker's connector.
 */
export function checkConnectorType(config: Readonly<Record<string, string>>, plugins: ConnectorPlugins): void {
  const problem = connectorTypeProblem(config, plugins);
  if (problem === undefined) return;
  throw new RequestRefused('bad-request', problem.kind === 'none' ? problem.message : `${CONNECT_EXCEPTION}: ${problem.message}`);
}

/** Connect's 400 text for a create or update whose config has errors, from the validation answer. */
export function invalidConfigMessage(infos: ConfigInfos): string {
  const errors = infos.configs.flatMap((c) => c.value.errors);
  return [
    `Connector configuration is invalid and contains the following ${errors.length} error(s):`,
    ...errors,
    'You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`',
  ].join('\n');
}

/** Adds an error on `key`: to its entry, or as a value without definition (Connect's shape for those). */
function addError(infos: ConfigInfos, key: string, message: string, raw: string | null): void {
  const entry = infos.configs.find((c) => c.value.name === key);
  const shown = raw === null ? null : isSecretKey(key, CONNECTOR_CONFIG_DEF) ? HIDDEN : redactUserInfo(raw);
  if (entry === undefined) infos.configs.push({ definition: null, value: { name: key, value: shown, recommended_values: [], errors: [message], visible: true } });
  else if (!entry.value.errors.includes(message)) entry.value.errors.push(message);
}

function aliasDefinition(key: string, group: string, doc: string, displayName: string): ConfigKeyInfo {
  return { name: key, type: 'CLASS', required: true, default_value: null, importance: 'HIGH', documentation: doc, group, order_in_group: 0, width: 'LONG', display_name: displayName, dependents: [] };
}

/**
 * Connect's per-alias entries: group `Transforms: <alias>` with `transforms.<alias>.type`, and
 * `Predicates: <alias>` with `predicates.<alias>.type`; a missing type is Connect's missing-key error,
 * a duplicate alias an error on the list key. Errors already reported on a type key move to its entry.
 */
function addAliasGroups(infos: ConfigInfos, config: Readonly<Record<string, string>>): void {
  for (const [listKey, groupPrefix, what] of [
    ['transforms', 'Transforms', 'transformation'],
    ['predicates', 'Predicates', 'predicate'],
  ] as const) {
    const aliases = (config[listKey] ?? '').split(',').map((a) => a.trim()).filter((a) => a !== '');
    const seen = new Set<string>();
    for (const alias of aliases) {
      if (seen.has(alias)) {
        addError(infos, listKey, 'Duplicate alias provided.', config[listKey] ?? null);
        continue;
      }
      seen.add(alias);
      const key = `${listKey}.${alias}.type`;
      const group = `${groupPrefix}: ${alias}`;
      const existing = infos.configs.findIndex((c) => c.value.name === key && c.definition === null);
      const errors = existing === -1 ? [] : (infos.configs.splice(existing, 1)[0]?.value.errors ?? []);
      const raw = config[key];
      if (raw === undefined || raw.trim() === '') errors.unshift(missingMessage(key));
      infos.groups.push(group);
      const display = `${what === 'transformation' ? 'Transformation' : 'Predicate'} type for ${alias}`;
      infos.configs.push({
        definition: aliasDefinition(key, group, `Class for the '${alias}' ${what}.`, display),
        value: { name: key, value: raw ?? null, recommended_values: [], errors, visible: true },
      });
    }
  }
}

/** Runs the probe, time-boxed; the problem text, the missing tables, or undefined when all is well. */
async function probeCatalog(probe: CatalogProbe, catalog: CatalogConfig, tables: readonly string[], timeoutMs: number): Promise<string | MissingTables | undefined> {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve(`no answer within ${timeoutMs} ms`);
    }, timeoutMs);
  });
  try {
    return await Promise.race([probe(catalog, abort.signal, tables).catch((e: unknown) => errorMessage(e)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Replaces every resolved provider value in the answer by the submitted text: resolved secrets stay inside. */
function hideResolved(infos: ConfigInfos, raw: Readonly<Record<string, string>>, referencedKeys: readonly string[], resolvedValues: readonly string[]): void {
  // Short values ("1", "true") would mangle unrelated text and are no secret worth the risk of that.
  const pieces = [...resolvedValues].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length);
  const scrub = (text: string): string => pieces.reduce((t, piece) => t.split(piece).join(HIDDEN), text);
  for (const c of infos.configs) {
    const key = c.value.name;
    if (referencedKeys.includes(key)) {
      const rawValue = raw[key] ?? null;
      if (c.value.value !== HIDDEN) c.value.value = rawValue;
      const resolvedShown = c.value.errors.map((e) => e.replace(/^Invalid value (.*?) for configuration /s, `Invalid value ${rawValue ?? 'null'} for configuration `));
      c.value.errors = resolvedShown;
    }
    c.value.errors = c.value.errors.map(scrub);
    if (c.value.value !== null && !referencedKeys.includes(key)) c.value.value = scrub(c.value.value);
  }
}

export interface ValidateOptions {
  /**
   * Report a catalog that cannot be used as an error (default: true for validate, false for
   * create/update, see the module header). Missing static tables are reported either way.
   */
  readonly probeCatalog?: boolean;
}

/**
 * The static tables that must exist before a record is written: those records are routed to (every
 * listed table, or with route-regexes the tables that have one), when auto-create is off and an
 * unknown table fails the task (`icefloe.tables.unrouted=fail`). None when a table key is already at
 * fault: its own error says more than a lookup would.
 */
function tablesThatMustExist(t: TablesConfig, errorKeys: Iterable<string>): string[] {
  if (t.autoCreate || t.unrouted === 'skip') return [];
  if ([...errorKeys].some((k) => k.startsWith('iceberg.tables') || k.startsWith('iceberg.table.'))) return [];
  const routing = t.routing;
  const tables = routing.kind === 'all' ? routing.tables : routing.kind === 'regex' ? routing.routes.map((r) => r.table) : [];
  return [...new Set(tables)];
}

/** The error on iceberg.tables for tables the catalog does not hold: the key, its value, the tables, and the fixes. */
export function missingTablesMessage(raw: string, missing: readonly string[], catalogUri: string): string {
  const which = missing.length === 1 ? `the table ${missing[0] ?? ''} does not` : `the tables ${missing.join(', ')} do not`;
  return invalidMessage('iceberg.tables', raw, `${which} exist in the catalog at ${redactUserInfo(catalogUri)}, and iceberg.tables.auto-create-enabled is false. ` +
    `Create ${missing.length === 1 ? 'it' : 'them'} in the catalog, or set iceberg.tables.auto-create-enabled=true (the connector then creates ${missing.length === 1 ? 'it' : 'them'} from the records' schema), or correct the name; ` +
    'only if records for a missing table should be dropped, set icefloe.tables.unrouted=skip');
}

/** The ConfigInfos of a config whose connector type is already known to be ours. */
async function infosFor(config: Readonly<Record<string, string>>, deps: ValidationDeps, probe: boolean): Promise<ConfigInfos> {
  const resolution = resolveConfigDetailed(config, deps.providers ?? NO_PROVIDERS);
  const v = validateConnectorConfig(resolution.config, {
    ...(deps.defaultCatalog === undefined ? {} : { defaultCatalog: deps.defaultCatalog }),
    ...(deps.strict === false ? {} : { extraChecks: icefloeChecks }),
  });
  const infos = v.configInfos();
  infos.name = config['connector.class'] ?? '';
  // A key whose reference failed keeps its raw text; its other errors are consequences of that.
  const failed = new Set(resolution.problems.map((p) => p.key));
  for (const c of infos.configs) if (failed.has(c.value.name)) c.value.errors = [];
  for (const problem of resolution.problems) addError(infos, problem.key, problem.message, config[problem.key] ?? null);
  addAliasGroups(infos, resolution.config);
  const catalogErrors = [...v.errors.keys(), ...failed].some((k) => k.startsWith('iceberg.catalog'));
  const tables = tablesThatMustExist(v.tables, [...v.errors.keys(), ...failed]);
  if ((probe || tables.length > 0) && deps.catalogProbe !== undefined && !catalogErrors) {
    const answer = await probeCatalog(deps.catalogProbe, v.catalog, tables, deps.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS);
    if (typeof answer === 'string' && probe) {
      const key = v.catalog.fromWorker ? 'iceberg.catalog' : 'iceberg.catalog.uri';
      const fix = v.catalog.fromWorker
        ? 'check the worker\'s catalog settings (or set iceberg.catalog.* here) and that the catalog is running'
        : 'check iceberg.catalog.uri, the catalog\'s credentials, and that the catalog is running';
      addError(infos, key, `The catalog at ${redactUserInfo(v.catalog.uri)} cannot be used: ${redactUserInfo(answer)}; ${fix}`, config[key] ?? null);
    } else if (typeof answer === 'object' && answer.missingTables.length > 0) {
      addError(infos, 'iceberg.tables', missingTablesMessage(resolution.config['iceberg.tables'] ?? '', answer.missingTables, v.catalog.uri), config['iceberg.tables'] ?? null);
    }
  }
  hideResolved(infos, config, resolution.referencedKeys, resolution.resolvedValues());
  infos.error_count = infos.configs.reduce((n, c) => n + c.value.errors.length, 0);
  return infos;
}

/**
 * `PUT /connector-plugins/{plugin}/config/validate`: ConfigInfos, errors and all (always an answer);
 * `bad-request` when `connector.class` names another plugin than the path, `failed` (500, Connect's
 * wrapped text) when it is missing or names no connector of this worker.
 */
export async function validateConfig(plugin: string, config: Readonly<Record<string, string>>, deps: ValidationDeps, options: ValidateOptions = {}): Promise<ConfigInfos> {
  const cls = config['connector.class'];
  if (cls !== undefined && !normalizedPluginName(cls).endsWith(normalizedPluginName(plugin))) {
    throw new RequestRefused('bad-request', `Included connector type ${cls} does not match request type ${plugin}`);
  }
  const problem = connectorTypeProblem(config, deps.plugins);
  if (problem !== undefined) throw new RequestRefused('failed', `${BAD_REQUEST_EXCEPTION}: ${problem.message}`);
  return infosFor(config, deps, options.probeCatalog ?? true);
}

/**
 * Before a create or update: refuses (400, Connect's texts) a config without our connector type or with
 * any error, else returns its ConfigInfos. No catalog probe unless asked (see the module header).
 */
export async function validateForWrite(config: Readonly<Record<string, string>>, deps: ValidationDeps, options: ValidateOptions = {}): Promise<ConfigInfos> {
  checkConnectorType(config, deps.plugins);
  const infos = await infosFor(config, deps, options.probeCatalog ?? false);
  if (infos.error_count > 0) throw new RequestRefused('bad-request', invalidConfigMessage(infos));
  return infos;
}

/**
 * A config given on the command line (`icefloe standalone`'s connector files), before the worker starts
 * it: the checks of a create (Java's, Icefloe's, the static tables when the catalog answers), refused
 * with one ConfigError in the command's one-line form (`connector <name>: N configuration error(s): ...`).
 * An unanswered probe passes: that is an outage, which the task rides out and names in its status.
 */
export async function checkStartConfig(raw: Readonly<Record<string, string>>, deps: ValidationDeps): Promise<void> {
  const config = parseConnectorConfig(resolveConfig(raw, deps.providers ?? NO_PROVIDERS), {
    ...(deps.defaultCatalog === undefined ? {} : { defaultCatalog: deps.defaultCatalog }),
    ...(deps.strict === false ? {} : { extraChecks: icefloeChecks }),
  });
  const tables = tablesThatMustExist(config.tables, []);
  if (tables.length === 0 || deps.catalogProbe === undefined) return;
  const answer = await probeCatalog(deps.catalogProbe, config.catalog, tables, deps.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS);
  if (typeof answer !== 'object' || answer.missingTables.length === 0) return;
  // The value as given, never one a config provider resolved.
  const message = missingTablesMessage(raw['iceberg.tables'] ?? '', answer.missingTables, config.catalog.uri);
  throw new ConfigError(`connector ${config.name}: 1 configuration error(s): ${message}`, { context: { connector: config.name, errors: { 'iceberg.tables': [message] } } });
}
