/**
 * A Kafka Connect–style ConfigDef (Java `org.apache.kafka.common.config.ConfigDef`): each key has a type,
 * a default (or none: required), importance, group, order, width, display name, documentation and an
 * optional validator. `parse()` turns a flat `Record<string, string>` (Connect configs are strings) into
 * typed values, collecting every error per key instead of stopping at the first, and `toConfigInfos()`
 * renders the result as Connect's `ConfigInfos` (`PUT /connector-plugins/{p}/config/validate`,
 * reference/connect-rest.md §1.3) with PASSWORD values masked as "[hidden]".
 *
 * Owns: parsing and type errors with Connect's message texts (§2.8), prefix sub-maps (`iceberg.catalog.*`,
 * `consumer.override.*`, ...), the list of secret keys and redaction.
 * Must not: reject unknown keys (Connect passes them through, §2.8), change the map it was given, or let
 * a secret reach a message, a log line or a status.
 */

export const CONFIG_TYPES = ['BOOLEAN', 'STRING', 'INT', 'SHORT', 'LONG', 'DOUBLE', 'LIST', 'CLASS', 'PASSWORD'] as const;
export type ConfigType = (typeof CONFIG_TYPES)[number];
export type Importance = 'HIGH' | 'MEDIUM' | 'LOW';
export type Width = 'NONE' | 'SHORT' | 'MEDIUM' | 'LONG';

/** Connect's mask for PASSWORD values (`Password.HIDDEN`). */
export const HIDDEN = '[hidden]';

const INSPECT = Symbol.for('nodejs.util.inspect.custom');

/**
 * A secret value: prints as "[hidden]" everywhere (String(), JSON, util.inspect); `reveal()` is the one
 * way to read it, for the adapter that actually authenticates.
 */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toString(): string {
    return HIDDEN;
  }
  toJSON(): string {
    return HIDDEN;
  }
  [INSPECT](): string {
    return HIDDEN;
  }
}

/** The parsed value of each type. LONG values are JS numbers restricted to the safe-integer range
 *  (they are milliseconds, bytes and counts here; a larger value is a type error, never rounded). */
export type ParsedValue = boolean | string | number | readonly string[] | Secret;

/** A validator says what is wrong with a parsed, non-null value (Connect `ConfigDef.Validator`). */
export interface Validator {
  /** The problem, as the text after "Invalid value X for configuration K: ", or undefined when valid. */
  check(value: ParsedValue, key: string): string | undefined;
  /** "Valid values" for generated docs, e.g. `[1,...]` or `[none, all]`. */
  readonly describe: string;
  /** Offered as `recommended_values` in validation results (enum validators). */
  readonly recommended?: readonly string[];
}

export const validators = {
  /** Connect `Range.between/atLeast`: numbers within [min, max]. */
  range(min?: number, max?: number): Validator {
    return {
      describe: `[${min ?? '...'},${max ?? '...'}]`,
      check(value) {
        if (typeof value !== 'number') return undefined;
        if (min !== undefined && value < min) return `Value must be at least ${min}`;
        if (max !== undefined && value > max) return `Value must be no more than ${max}`;
        return undefined;
      },
    };
  },
  /** Connect `ValidString.in` (optionally case-insensitive, like `CaseInsensitiveValidString`). */
  oneOf(values: readonly string[], options: { caseInsensitive?: boolean } = {}): Validator {
    const norm = (s: string): string => (options.caseInsensitive === true ? s.toLowerCase() : s);
    const allowed = new Set(values.map(norm));
    return {
      describe: `[${values.join(', ')}]`,
      recommended: values,
      check(value) {
        if (typeof value !== 'string') return undefined;
        return allowed.has(norm(value)) ? undefined : `String must be one of: ${values.join(', ')}`;
      },
    };
  },
  /** Every element of a LIST is one of `values`, none twice. */
  listOf(values: readonly string[]): Validator {
    const allowed = new Set(values);
    return {
      describe: `any of [${values.join(', ')}]`,
      recommended: values,
      check(value) {
        if (!Array.isArray(value)) return undefined;
        const bad = value.filter((v) => !allowed.has(v));
        if (bad.length > 0) return `Unknown value(s) ${bad.join(', ')}; allowed: ${values.join(', ')}`;
        const dup = value.find((v, i) => value.indexOf(v) !== i);
        return dup === undefined ? undefined : `${dup} is listed twice`;
      },
    };
  },
  /** A string (or each list element) matching `pattern`. */
  matches(pattern: RegExp, description: string): Validator {
    return {
      describe: description,
      check(value) {
        const items = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
        const bad = items.find((v) => !pattern.test(v));
        return bad === undefined ? undefined : `${JSON.stringify(bad)} is not ${description}`;
      },
    };
  },
  /** Connect `NonEmptyString`. */
  nonEmpty(): Validator {
    return {
      describe: 'non-empty string',
      check(value) {
        return typeof value === 'string' && value.trim() === '' ? 'String must be non-empty' : undefined;
      },
    };
  },
  custom(describe: string, check: (value: ParsedValue, key: string) => string | undefined): Validator {
    return { describe, check };
  },
  /** All of several validators; the first problem wins. */
  all(...list: Validator[]): Validator {
    const recommended = list.find((v) => v.recommended !== undefined)?.recommended;
    return {
      describe: list.map((v) => v.describe).join(', '),
      ...(recommended === undefined ? {} : { recommended }),
      check(value, key) {
        for (const v of list) {
          const problem = v.check(value, key);
          if (problem !== undefined) return problem;
        }
        return undefined;
      },
    };
  },
};

/** What `define()` takes. Leave `default` out for a required key; `null` means optional with no value. */
export interface KeySpec {
  readonly name: string;
  readonly type: ConfigType;
  /** Connect's string form of the default (`"300000"`, `"true"`, `""`), parsed like a user value. */
  readonly default?: string | null;
  readonly importance: Importance;
  readonly doc: string;
  readonly group?: string;
  readonly order?: number;
  readonly width?: Width;
  readonly displayName?: string;
  readonly validator?: Validator;
  readonly dependents?: readonly string[];
  /** Shown in the generated docs instead of the raw default (e.g. "connect-<name>"). */
  readonly defaultDoc?: string;
}

export interface ConfigKey {
  readonly name: string;
  readonly type: ConfigType;
  readonly required: boolean;
  readonly default: string | null;
  readonly importance: Importance;
  readonly doc: string;
  readonly group: string | null;
  readonly order: number;
  readonly width: Width;
  readonly displayName: string;
  readonly validator: Validator | null;
  readonly dependents: readonly string[];
  readonly defaultDoc: string | null;
}

/** A family of keys gathered into a sub-map by prefix (`iceberg.catalog.` → `{type, uri, ...}`). */
export interface PrefixSpec {
  /** Ends with a dot: `iceberg.catalog.`. */
  readonly prefix: string;
  readonly doc: string;
  readonly group?: string;
  /** Shown in docs as the key pattern, e.g. `iceberg.table.<table>.partition-by`. */
  readonly pattern?: string;
}

/** Kafka's message for a missing required key (§2.8). */
export function missingMessage(name: string): string {
  return `Missing required configuration "${name}" which has no default value.`;
}

/** Kafka's `ConfigException(name, value, message)` text. */
export function invalidMessage(name: string, shown: string, problem: string): string {
  return `Invalid value ${shown} for configuration ${name}: ${problem}`;
}

const SAFE_MIN = Number.MIN_SAFE_INTEGER;
const SAFE_MAX = Number.MAX_SAFE_INTEGER;

/** Parses one value as Connect's `ConfigDef.parseType` does; returns the value or the problem text. */
export function parseType(type: ConfigType, raw: string): { value: ParsedValue } | { problem: string } {
  const trimmed = raw.trim();
  const integer = (min: number, max: number, label: string): { value: number } | { problem: string } => {
    if (!/^[+-]?\d+$/.test(trimmed)) return { problem: `Not a number of type ${label}` };
    const n = Number(trimmed);
    if (n < min || n > max) return { problem: `Not a number of type ${label}` };
    return { value: n };
  };
  switch (type) {
    case 'BOOLEAN': {
      const lower = trimmed.toLowerCase();
      if (lower === 'true') return { value: true };
      if (lower === 'false') return { value: false };
      return { problem: 'Expected value to be either true or false' };
    }
    case 'STRING':
    case 'CLASS':
      return { value: trimmed };
    case 'PASSWORD':
      return { value: new Secret(raw) };
    case 'SHORT':
      return integer(-32768, 32767, 'SHORT');
    case 'INT':
      return integer(-2147483648, 2147483647, 'INT');
    case 'LONG':
      // Java's LONG goes to 2^63; we keep numbers exact and refuse what a JS number would round.
      return integer(SAFE_MIN, SAFE_MAX, 'LONG');
    case 'DOUBLE': {
      const n = Number(trimmed);
      if (trimmed === '' || !Number.isFinite(n)) return { problem: 'Not a number of type DOUBLE' };
      return { value: n };
    }
    case 'LIST':
      // Connect: split on commas (surrounding whitespace removed); an empty string is the empty list.
      return { value: trimmed === '' ? [] : trimmed.split(/\s*,\s*/) };
  }
}

/** Connect's `convertToString` of a parsed value, for `value.value` in validation results. */
function valueToString(value: ParsedValue | null): string | null {
  if (value === null) return null;
  if (value instanceof Secret) return HIDDEN;
  if (Array.isArray(value)) return value.join(',');
  return String(value);
}

/** One key's outcome. `raw` is the string used (the user's, or the default), null when neither. */
export interface ConfigValueState {
  readonly key: ConfigKey;
  readonly raw: string | null;
  readonly value: ParsedValue | null;
  readonly errors: readonly string[];
  readonly provided: boolean;
}

/**
 * Connect's `ConfigKeyInfo`. The ordering field is `order_in_group`: that is what a running Kafka Connect
 * 4.3.1 worker sends (older Connect sources serialized it as `order`), and the conformance suite compares
 * field names with that worker.
 */
export interface ConfigKeyInfo {
  name: string;
  type: ConfigType;
  required: boolean;
  default_value: string | null;
  importance: Importance;
  documentation: string;
  group: string | null;
  order_in_group: number;
  width: Width;
  display_name: string;
  dependents: string[];
}

/** Connect's `ConfigValueInfo`. */
export interface ConfigValueInfo {
  name: string;
  value: string | null;
  recommended_values: string[];
  errors: string[];
  visible: boolean;
}

/** Connect's `ConfigInfos`, the body of `PUT /connector-plugins/{p}/config/validate`. */
export interface ConfigInfos {
  name: string;
  error_count: number;
  groups: string[];
  /** `definition` is null for a value reported on a key the def does not define (§1.3). */
  configs: { definition: ConfigKeyInfo | null; value: ConfigValueInfo }[];
}

const SECRET_NAME = /secret|password|token|credential/i;
// `ssl.keystore.key` is PEM private key text (Kafka's PASSWORD type), under `ssl.` or `listeners.https.ssl.`.
const SECRET_SUFFIXES = ['sasl.jaas.config', 'basic.auth.user.info', 'ssl.keystore.key'];

/**
 * Whether a key holds a secret: a PASSWORD key of the def, or any key whose name says so
 * (secret|password|token|credential — `iceberg.catalog.token`, `iceberg.catalog.s3.secret-access-key`,
 * `ssl.key.password`), or a JAAS config / registry user info (which embed passwords), under any prefix.
 * Over-matching costs a "[hidden]" in a log line; under-matching leaks a secret.
 */
export function isSecretKey(name: string, def?: ConfigDef): boolean {
  if (def?.key(name)?.type === 'PASSWORD') return true;
  if (SECRET_SUFFIXES.some((s) => name === s || name.endsWith(`.${s}`))) return true;
  return SECRET_NAME.test(name);
}

/** Masks passwords inside a value: `scheme://user:password@host` and `?password=` / `&password=` (JDBC URIs). */
export function redactUserInfo(value: string): string {
  return value.replace(/(\/\/[^/:@\s]*):[^@/\s]+@/g, `$1:${HIDDEN}@`).replace(/([?&;]password=)[^&;]*/gi, `$1${HIDDEN}`);
}

/**
 * A frozen copy of a property sub-map that is safe to log: iterating it gives the real values (adapters
 * need them), while `JSON.stringify` and `util.inspect` show secret keys as "[hidden]" (`prefix` + key is
 * what `isSecretKey` judges). The hooks are non-enumerable, so `Object.entries` and spreads do not see
 * them — a spread copy is raw again.
 */
export function safeProps(map: Readonly<Record<string, string>>, prefix = ''): Readonly<Record<string, string>> {
  const copy: Record<string, string> = { ...map };
  const redacted = (): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(copy)) out[k] = isSecretKey(prefix + k) ? HIDDEN : redactUserInfo(v);
    return out;
  };
  Object.defineProperty(copy, 'toJSON', { value: redacted, enumerable: false });
  Object.defineProperty(copy, INSPECT, { value: redacted, enumerable: false });
  return Object.freeze(copy);
}

/** The parse result: typed values, errors per key, prefix sub-maps and the untouched original. */
export class ParsedConfig {
  readonly def: ConfigDef;
  /** The map exactly as given (frozen copy): what REST echoes back. */
  readonly original: Readonly<Record<string, string>>;
  readonly #values: Map<string, { state: ConfigValueState; errors: string[] }>;
  /** Keys neither defined nor under a declared prefix, kept as given (Connect passes them through). */
  readonly unknown: Readonly<Record<string, string>>;
  readonly #prefixes: Map<string, Readonly<Record<string, string>>>;
  readonly #warnings: string[] = [];
  /** Errors on keys without a definition, in the order they were added. */
  readonly #extra = new Map<string, string[]>();

  constructor(def: ConfigDef, original: Readonly<Record<string, string>>) {
    this.def = def;
    this.original = Object.freeze({ ...original });
    this.#values = new Map();
    const unknown: Record<string, string> = {};
    const prefixes = new Map<string, Record<string, string>>(def.prefixes().map((p) => [p.prefix, {}]));
    for (const [name, raw] of Object.entries(this.original)) {
      if (def.key(name) !== undefined) continue;
      // A key may sit under several declared prefixes (`iceberg.table.` and `iceberg.tables.write-props.`
      // do not overlap, but `value.converter.` and `value.converter.schema.registry.` could); it goes to every one.
      let gathered = false;
      for (const [prefix, map] of prefixes) {
        if (name.startsWith(prefix) && name.length > prefix.length) {
          map[name.slice(prefix.length)] = raw;
          gathered = true;
        }
      }
      if (!gathered) unknown[name] = raw;
    }
    this.unknown = Object.freeze(unknown);
    this.#prefixes = new Map([...prefixes].map(([p, m]) => [p, safeProps(m, p)]));
    for (const key of def.keys()) this.#values.set(key.name, parseKey(key, this.original));
  }

  /** The outcome for a defined key; throws for an undefined one (a programming error). */
  state(name: string): ConfigValueState {
    const entry = this.#values.get(name);
    if (entry === undefined) throw new Error(`config key ${name} is not defined`);
    return { ...entry.state, errors: [...entry.errors] };
  }

  /**
   * Adds a problem to a key (Connect reports rule violations on the key they concern). A key the def
   * does not define (`iceberg.catalog.type`, `value.converter.schema.registry.url`) is reported as
   * Connect reports values without a definition: `definition: null`.
   */
  addError(name: string, message: string): void {
    const entry = this.#values.get(name);
    const errors = entry?.errors ?? this.#extra.get(name) ?? [];
    if (entry === undefined && !this.#extra.has(name)) this.#extra.set(name, errors);
    if (!errors.includes(message)) errors.push(message);
  }

  /** A note for the operator that is not an error (an ignored key, a likely typo). */
  addWarning(message: string): void {
    if (!this.#warnings.includes(message)) this.#warnings.push(message);
  }

  get warnings(): readonly string[] {
    return [...this.#warnings];
  }

  /** Every error, per key, in definition order (keys without errors left out). */
  errors(): ReadonlyMap<string, readonly string[]> {
    const out = new Map<string, readonly string[]>();
    for (const [name, entry] of this.#values) if (entry.errors.length > 0) out.set(name, [...entry.errors]);
    for (const [name, errors] of this.#extra) out.set(name, [...errors]);
    return out;
  }

  get errorCount(): number {
    let n = 0;
    for (const entry of this.#values.values()) n += entry.errors.length;
    for (const errors of this.#extra.values()) n += errors.length;
    return n;
  }

  /** The sub-map of keys under a declared prefix, prefix stripped. */
  prefixed(prefix: string): Readonly<Record<string, string>> {
    const map = this.#prefixes.get(prefix);
    if (map === undefined) throw new Error(`config prefix ${prefix} is not declared`);
    return map;
  }

  /** Whether the key was set by the user (as opposed to defaulted). */
  has(name: string): boolean {
    return this.state(name).provided;
  }

  #typed(name: string, type: ConfigType | readonly ConfigType[]): ParsedValue | null {
    const entry = this.#values.get(name);
    if (entry === undefined) throw new Error(`config key ${name} is not defined`);
    const types: readonly ConfigType[] = typeof type === 'string' ? [type] : type;
    if (!types.includes(entry.state.key.type)) throw new Error(`config key ${name} is ${entry.state.key.type}, not ${types.join('/')}`);
    return entry.state.value;
  }
  string(name: string): string | null {
    return this.#typed(name, ['STRING', 'CLASS']) as string | null;
  }
  number(name: string): number | null {
    return this.#typed(name, ['INT', 'SHORT', 'LONG', 'DOUBLE']) as number | null;
  }
  boolean(name: string): boolean | null {
    return this.#typed(name, 'BOOLEAN') as boolean | null;
  }
  list(name: string): readonly string[] | null {
    return this.#typed(name, 'LIST') as readonly string[] | null;
  }
  secret(name: string): Secret | null {
    return this.#typed(name, 'PASSWORD') as Secret | null;
  }

  /** Keys of the original map that hold secrets (see `isSecretKey`), sorted. */
  secretKeys(): readonly string[] {
    return Object.keys(this.original)
      .filter((k) => isSecretKey(k, this.def))
      .sort();
  }

  /** The original map with every secret value replaced by "[hidden]" and URI passwords masked: for logs. */
  redacted(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.original)) out[k] = isSecretKey(k, this.def) ? HIDDEN : redactUserInfo(v);
    return out;
  }

  /** Connect's `ConfigInfos` for this result; `name` is the connector class as submitted. */
  toConfigInfos(name: string): ConfigInfos {
    const configs: ConfigInfos['configs'] = this.def.keys().map((key) => {
      const entry = this.#values.get(key.name) as { state: ConfigValueState; errors: string[] };
      return {
        definition: keyInfo(key),
        value: {
          name: key.name,
          value: key.type === 'PASSWORD' && entry.state.value !== null ? HIDDEN : valueToString(entry.state.value),
          recommended_values: [...(key.validator?.recommended ?? [])],
          errors: [...entry.errors],
          visible: true,
        },
      };
    });
    for (const [key, errors] of this.#extra) {
      const raw = this.original[key];
      const value = raw === undefined ? null : isSecretKey(key, this.def) ? HIDDEN : redactUserInfo(raw);
      configs.push({ definition: null, value: { name: key, value, recommended_values: [], errors: [...errors], visible: true } });
    }
    return { name, error_count: this.errorCount, groups: this.def.groups(), configs };
  }
}

function keyInfo(key: ConfigKey): ConfigKeyInfo {
  return {
    name: key.name,
    type: key.type,
    required: key.required,
    default_value: key.required ? null : key.type === 'PASSWORD' && key.default !== null ? HIDDEN : key.default,
    importance: key.importance,
    documentation: key.doc,
    group: key.group,
    order_in_group: key.order,
    width: key.width,
    display_name: key.displayName,
    dependents: [...key.dependents],
  };
}

function parseKey(key: ConfigKey, props: Readonly<Record<string, string>>): { state: ConfigValueState; errors: string[] } {
  const errors: string[] = [];
  const provided = Object.hasOwn(props, key.name);
  const raw = provided ? (props[key.name] as string) : key.default;
  let value: ParsedValue | null = null;
  if (raw === null) {
    if (key.required) errors.push(missingMessage(key.name));
  } else {
    const parsed = parseType(key.type, raw);
    const shown = key.type === 'PASSWORD' ? HIDDEN : raw;
    if ('problem' in parsed) errors.push(invalidMessage(key.name, shown, parsed.problem));
    else {
      value = parsed.value;
      const problem = key.validator?.check(value, key.name);
      if (problem !== undefined) errors.push(invalidMessage(key.name, shown, problem));
    }
  }
  return { state: { key, raw, value, errors: [], provided }, errors };
}

/** The definition: keys in order, prefix families, and `parse()`. */
export class ConfigDef {
  readonly #keys = new Map<string, ConfigKey>();
  readonly #prefixes: PrefixSpec[] = [];
  readonly #groupOrder = new Map<string, number>();

  define(spec: KeySpec): this {
    if (this.#keys.has(spec.name)) throw new Error(`config key ${spec.name} is defined twice`);
    const required = !('default' in spec) || spec.default === undefined;
    const group = spec.group ?? null;
    let order = spec.order ?? -1;
    if (group !== null && spec.order === undefined) {
      order = (this.#groupOrder.get(group) ?? 0) + 1;
      this.#groupOrder.set(group, order);
    }
    const key: ConfigKey = {
      name: spec.name,
      type: spec.type,
      required,
      default: required ? null : (spec.default ?? null),
      importance: spec.importance,
      doc: spec.doc,
      group,
      order,
      width: spec.width ?? 'NONE',
      displayName: spec.displayName ?? spec.name,
      validator: spec.validator ?? null,
      dependents: spec.dependents ?? [],
      defaultDoc: spec.defaultDoc ?? null,
    };
    if (key.default !== null) {
      const parsed = parseType(key.type, key.default);
      if ('problem' in parsed) throw new Error(`default of ${key.name} is invalid: ${parsed.problem}`);
      const problem = key.validator?.check(parsed.value, key.name);
      if (problem !== undefined) throw new Error(`default of ${key.name} is invalid: ${problem}`);
    }
    this.#keys.set(key.name, Object.freeze(key));
    return this;
  }

  definePrefix(spec: PrefixSpec): this {
    if (!spec.prefix.endsWith('.')) throw new Error(`config prefix ${spec.prefix} must end with a dot`);
    this.#prefixes.push(Object.freeze({ ...spec }));
    return this;
  }

  key(name: string): ConfigKey | undefined {
    return this.#keys.get(name);
  }

  keys(): readonly ConfigKey[] {
    return [...this.#keys.values()];
  }

  prefixes(): readonly PrefixSpec[] {
    return [...this.#prefixes];
  }

  /** Group names in first-definition order (Connect lists them this way in `groups`). */
  groups(): string[] {
    const out: string[] = [];
    for (const k of this.#keys.values()) if (k.group !== null && !out.includes(k.group)) out.push(k.group);
    return out;
  }

  /** Parses a flat string map; never throws for bad input, every problem lands on its key. */
  parse(props: Readonly<Record<string, string>>): ParsedConfig {
    return new ParsedConfig(this, props);
  }

  /**
   * The key an unknown one most likely meant, or undefined: a defined key or a key of a declared prefix
   * family within a small edit distance (`topic` → `topics`, `iceberg.table` → `iceberg.tables`,
   * `iceberg.catalogs.uri` → `iceberg.catalog.uri`), else a defined key it is the start of
   * (`iceberg.tables.auto-create` → `iceberg.tables.auto-create-enabled`). Keys under a declared prefix
   * are not unknown and never reach this.
   */
  suggest(name: string): string | undefined {
    // A short key tolerates one edit, a longer one more: `topic` → `topics`, never `tasks` → `topics`.
    const limit = name.length <= 5 ? 1 : name.length <= 12 ? 2 : 3;
    const closest = (candidates: readonly string[]): string | undefined => {
      let best: { key: string; d: number } | undefined;
      for (const c of candidates) {
        if (c === name) continue;
        const d = editDistance(name.toLowerCase(), c.toLowerCase());
        if (d <= limit && (best === undefined || d < best.d || (d === best.d && c < best.key))) best = { key: c, d };
      }
      return best?.key;
    };
    const defined = [...this.#keys.keys()];
    // Defined keys first: `iceberg.tables.auto-create-enable` meant the defined key, not a table named
    // `auto-create-enable` under `iceberg.table.`.
    const near = closest(defined);
    if (near !== undefined) return near;
    const longer = defined.filter((k) => k.startsWith(name) && /^[-.]/.test(k.slice(name.length)));
    if (longer.length === 1) return longer[0];
    const segments = name.split('.');
    const family: string[] = [];
    for (const { prefix } of this.#prefixes) {
      const depth = prefix.split('.').length - 1;
      family.push(prefix.slice(0, -1));
      // The same key with its first `depth` segments replaced by the prefix's: a typo inside the prefix.
      if (segments.length > depth) family.push(prefix + segments.slice(depth).join('.'));
    }
    return closest(family);
  }
}

/** Edit distance with transpositions (optimal string alignment): `toipcs` is one edit from `topics`. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number): number => (rows[i] as number[])[j] as number;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, at(i - 2, j - 2) + 1);
      (rows[i] as number[])[j] = d;
    }
  }
  return at(a.length, b.length);
}

/** " (did you mean K?)" for an unknown key with a suggestion, else "". */
export function didYouMean(def: ConfigDef, name: string): string {
  const s = def.suggest(name);
  return s === undefined ? '' : ` (did you mean ${s}?)`;
}

/**
 * One ConfigError text for a parse that has errors: each distinct problem once (a rule reported on two
 * keys, such as topics/topics.regex, is one problem), named by its key when its text does not name it,
 * and followed by the unknown key that looks like the key at fault ("the config has 'topic': did you
 * mean topics?"); unknown keys with a suggestion that no error concerns are listed after the errors.
 */
export function problemSummary(p: ParsedConfig): { count: number; text: string } {
  const suggestions = new Map<string, string>();
  for (const key of Object.keys(p.unknown)) {
    const s = p.def.suggest(key);
    if (s !== undefined) suggestions.set(key, s);
  }
  const lines = new Map<string, Set<string>>();
  const used = new Set<string>();
  for (const [key, errors] of p.errors()) {
    for (const message of errors) {
      const line = message.includes(key) ? message : `${key}: ${message}`;
      const notes = lines.get(line) ?? new Set<string>();
      lines.set(line, notes);
      for (const [unknown, meant] of suggestions) {
        if (meant !== key) continue;
        notes.add(`the config has '${unknown}': did you mean ${meant}?`);
        used.add(unknown);
      }
    }
  }
  const parts = [...lines].map(([line, notes]) => (notes.size === 0 ? line : `${line} — ${[...notes].join(', ')}`));
  const rest = [...suggestions].filter(([unknown]) => !used.has(unknown)).map(([unknown, meant]) => `'${unknown}' is not a known key (did you mean ${meant}?)`);
  return { count: lines.size, text: [...parts, ...rest].join('; ') };
}
