/**
 * Config providers as Kafka declares them in the worker properties (reference/connect-rest.md §2.7):
 *
 *   config.providers=file,env,dir
 *   config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
 *   config.providers.file.param.allowed.paths=/opt/connect/secrets
 *   config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
 *   config.providers.env.param.allowlist.pattern=^ICEBERG_.*
 *   config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider
 *
 * and the references in connector values they resolve: `${env:VAR}`, `${file:/path/x.properties:key}`
 * (a key of a Java properties file), `${dir:/mnt/secrets:password}` (the whole content of the file
 * `password` in that directory); several references per value, inside longer text too (Kafka's
 * `ConfigTransformer` pattern).
 *
 * Resolution happens only inside the worker, when a config is validated and when it is handed to the
 * connector and its tasks; the herder stores and echoes the raw `${...}` text.
 *
 * Owns: parsing the worker keys, the three providers' semantics, and the errors, which name the key
 * and the placeholder, never a resolved value.
 * Must not: read the file system or the environment itself (the caller passes `ProviderIO`: app.ts
 * reads files, the entry point passes the environment), or leave a reference unresolved silently:
 * Kafka leaves an unresolvable reference as literal text, which would reach a catalog as a password
 * of `${env:TOKEN}`; Icefloe reports it instead.
 */
import { isAbsolute, join, normalize } from 'node:path';
import { ConfigError, errorMessage } from '../core/errors.ts';
import { parseProperties } from './properties.ts';

export type ProviderKind = 'file' | 'env' | 'directory';

const PACKAGE = 'org.apache.kafka.common.config.provider.';

/** The classes Icefloe implements, by the kind of provider they are. */
export const PROVIDER_CLASSES: Readonly<Record<ProviderKind, string>> = {
  file: `${PACKAGE}FileConfigProvider`,
  env: `${PACKAGE}EnvVarConfigProvider`,
  directory: `${PACKAGE}DirectoryConfigProvider`,
};

/** The `param.*` settings each provider takes (Kafka 3.8+ `allowed.paths`, 3.5+ `allowlist.pattern`). */
const PARAMS: Readonly<Record<ProviderKind, readonly string[]>> = {
  file: ['allowed.paths'],
  env: ['allowlist.pattern'],
  directory: ['allowed.paths'],
};

export interface ConfigProviderSpec {
  /** The alias in `config.providers` and in references: `${<name>:...}`. */
  readonly name: string;
  readonly kind: ProviderKind;
  /** file/directory: the only directories (absolute, normalized) whose files may be read; null: any. */
  readonly allowedPaths: readonly string[] | null;
  /** env: only variables whose whole name matches are visible; null: every variable. */
  readonly allowlistPattern: RegExp | null;
}

export interface ProviderProblem {
  readonly key: string;
  readonly message: string;
}

const PREFIX = 'config.providers.';

function kindOfClass(className: string): ProviderKind | undefined {
  for (const [kind, fqcn] of Object.entries(PROVIDER_CLASSES) as [ProviderKind, string][]) {
    if (className === fqcn || className === fqcn.slice(PACKAGE.length)) return kind;
  }
  return undefined;
}

/**
 * The providers the worker properties declare: every name in `config.providers` needs
 * `config.providers.<name>.class` naming one of `PROVIDER_CLASSES` (or its simple name); its
 * `config.providers.<name>.param.*` must be parameters that provider takes. Problems are per key.
 */
export function parseConfigProviders(props: Readonly<Record<string, string>>): { providers: readonly ConfigProviderSpec[]; errors: readonly ProviderProblem[]; warnings: readonly string[] } {
  const errors: ProviderProblem[] = [];
  const warnings: string[] = [];
  const names = (props['config.providers'] ?? '').split(',').map((n) => n.trim()).filter((n) => n !== '');
  const providers: ConfigProviderSpec[] = [];
  for (const name of names) {
    if (providers.some((p) => p.name === name)) {
      errors.push({ key: 'config.providers', message: `Invalid value ${props['config.providers']} for configuration config.providers: ${name} is listed twice` });
      continue;
    }
    const classKey = `${PREFIX}${name}.class`;
    const className = props[classKey]?.trim();
    if (className === undefined || className === '') {
      errors.push({ key: classKey, message: `Missing required configuration "${classKey}" which has no default value.` });
      continue;
    }
    const kind = kindOfClass(className);
    if (kind === undefined) {
      errors.push({ key: classKey, message: `Invalid value ${className} for configuration ${classKey}: Icefloe implements ${Object.values(PROVIDER_CLASSES).join(', ')}` });
      continue;
    }
    const param = (p: string): string | undefined => props[`${PREFIX}${name}.param.${p}`];
    for (const key of Object.keys(props)) {
      const m = key.startsWith(`${PREFIX}${name}.param.`) ? key.slice(`${PREFIX}${name}.param.`.length) : undefined;
      if (m !== undefined && !PARAMS[kind].includes(m)) errors.push({ key, message: `Invalid configuration ${key}: ${className} takes ${PARAMS[kind].map((p) => `param.${p}`).join(', ')}` });
    }
    let allowedPaths: string[] | null = null;
    const paths = param('allowed.paths');
    if (paths !== undefined && paths.trim() !== '') {
      allowedPaths = paths.split(',').map((p) => p.trim()).filter((p) => p !== '');
      const relative = allowedPaths.find((p) => !isAbsolute(p));
      if (relative !== undefined) errors.push({ key: `${PREFIX}${name}.param.allowed.paths`, message: `Invalid value ${paths} for configuration ${PREFIX}${name}.param.allowed.paths: Path ${relative} is not absolute` });
      allowedPaths = allowedPaths.map((p) => stripSlash(normalize(p)));
    }
    let allowlistPattern: RegExp | null = null;
    const pattern = param('allowlist.pattern');
    if (pattern !== undefined && pattern !== '') {
      try {
        allowlistPattern = new RegExp(`^(?:${pattern})$`);
      } catch (e) {
        errors.push({ key: `${PREFIX}${name}.param.allowlist.pattern`, message: `Invalid value ${pattern} for configuration ${PREFIX}${name}.param.allowlist.pattern: ${errorMessage(e)}` });
      }
    }
    providers.push(Object.freeze({ name, kind, allowedPaths: allowedPaths === null ? null : Object.freeze(allowedPaths), allowlistPattern }));
  }
  for (const key of Object.keys(props)) {
    if (!key.startsWith(PREFIX)) continue;
    const name = key.slice(PREFIX.length).split('.')[0] ?? '';
    if (!names.includes(name)) warnings.push(`${key} is ignored: ${name} is not listed in config.providers`);
  }
  return { providers: Object.freeze(providers), errors, warnings };
}

function stripSlash(p: string): string {
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

/** What resolution reads: files (whole text) and the environment. Supplied by app.ts / the entry point. */
export interface ProviderIO {
  /** The file's text; throws (an fs error) when it cannot be read. */
  readFile(path: string): string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The worker's providers bound to the I/O they read through. */
export interface ConfigProviders {
  readonly specs: readonly ConfigProviderSpec[];
  readonly io: ProviderIO;
}

/** No providers: every reference is an error ("no config provider named ..."). */
export const NO_PROVIDERS: ConfigProviders = Object.freeze({
  specs: [],
  io: Object.freeze({
    readFile: (path: string): string => {
      throw new Error(`no config providers: ${path} is not read`);
    },
    env: {},
  }),
});

export function configProviders(specs: readonly ConfigProviderSpec[], io: ProviderIO): ConfigProviders {
  return Object.freeze({ specs, io });
}

/** Kafka's `ConfigTransformer.DEFAULT_PATTERN`: `${provider:[path:]key}`. */
const REFERENCE = /\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}/g;

/** Whether a value holds at least one `${provider:[path:]key}` reference. */
export function hasReference(value: string): boolean {
  REFERENCE.lastIndex = 0;
  const found = REFERENCE.test(value);
  REFERENCE.lastIndex = 0;
  return found;
}

export interface ResolvedConfig {
  /** The config with every reference replaced (keys that failed keep their raw text). */
  readonly config: Readonly<Record<string, string>>;
  /** Keys whose value held a reference (their resolved values must never be shown). */
  readonly referencedKeys: readonly string[];
  readonly problems: readonly ProviderProblem[];
  /** Every value a reference resolved to, for callers that must keep them out of an answer (a function: JSON never shows it). */
  resolvedValues(): readonly string[];
}

/** Why a path may not be read by `spec`, or undefined. */
function pathProblem(spec: ConfigProviderSpec, path: string): string | undefined {
  if (spec.allowedPaths === null) return undefined;
  if (!isAbsolute(path)) return `path ${path} is not absolute (config.providers.${spec.name}.param.allowed.paths is set)`;
  const n = normalize(path);
  const ok = spec.allowedPaths.some((a) => n === a || n.startsWith(a === '/' ? '/' : `${a}/`));
  return ok ? undefined : `path ${path} is outside config.providers.${spec.name}.param.allowed.paths (${spec.allowedPaths.join(', ')})`;
}

function ioProblem(e: unknown, path: string): string {
  const code = typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
  return `cannot read ${path}${code === undefined ? '' : ` (${code})`}`;
}

/** One reference's value, or the problem (never naming a resolved value). */
function lookup(spec: ConfigProviderSpec, path: string | undefined, key: string, io: ProviderIO, files: Map<string, Record<string, string>>): { value: string } | { problem: string } {
  switch (spec.kind) {
    case 'env': {
      if (path !== undefined && path !== '') return { problem: `the ${spec.name} provider (EnvVarConfigProvider) takes no path: write \${${spec.name}:VARIABLE}` };
      if (spec.allowlistPattern !== null && !spec.allowlistPattern.test(key)) return { problem: `environment variable ${key} is not allowed by config.providers.${spec.name}.param.allowlist.pattern` };
      const value = io.env[key];
      return value === undefined ? { problem: `environment variable ${key} is not set` } : { value };
    }
    case 'file': {
      if (path === undefined || path === '') return { problem: `the ${spec.name} provider (FileConfigProvider) needs a file: write \${${spec.name}:/path/file.properties:key}` };
      const bad = pathProblem(spec, path);
      if (bad !== undefined) return { problem: bad };
      let props = files.get(path);
      if (props === undefined) {
        try {
          props = parseProperties(io.readFile(path));
        } catch (e) {
          return { problem: e instanceof ConfigError ? `${path} is not a valid properties file` : ioProblem(e, path) };
        }
        files.set(path, props);
      }
      const value = props[key];
      return value === undefined ? { problem: `${path} has no key ${key}` } : { value };
    }
    case 'directory': {
      if (path === undefined || path === '') return { problem: `the ${spec.name} provider (DirectoryConfigProvider) needs a directory: write \${${spec.name}:/path/dir:file}` };
      const bad = pathProblem(spec, path);
      if (bad !== undefined) return { problem: bad };
      // Kafka reads only regular files directly in the directory: a key is a file name, never a path.
      if (key === '' || key.includes('/') || key === '.' || key === '..') return { problem: `${key} is not a file name in ${path}` };
      const file = join(path, key);
      try {
        return { value: io.readFile(file) };
      } catch (e) {
        return { problem: ioProblem(e, file) };
      }
    }
  }
}

/**
 * Replaces every `${provider:[path:]key}` reference in `raw`'s values, collecting a problem per
 * reference that cannot be resolved (unknown provider, missing variable, file or key, a path outside
 * `allowed.paths`). A file is read once per call, however many references name it.
 */
export function resolveConfigDetailed(raw: Readonly<Record<string, string>>, providers: ConfigProviders): ResolvedConfig {
  const out: Record<string, string> = {};
  const referencedKeys: string[] = [];
  const problems: ProviderProblem[] = [];
  const files = new Map<string, Record<string, string>>();
  const values: string[] = [];
  for (const [configKey, value] of Object.entries(raw)) {
    if (!hasReference(value)) {
      out[configKey] = value;
      continue;
    }
    referencedKeys.push(configKey);
    let failed = false;
    const resolved = value.replace(REFERENCE, (placeholder: string, name: string, path: string | undefined, key: string) => {
      const spec = providers.specs.find((s) => s.name === name);
      const result =
        spec === undefined
          ? { problem: `no config provider named ${name} (the worker's config.providers: ${providers.specs.map((s) => s.name).join(', ') || 'none'})` }
          : lookup(spec, path, key, providers.io, files);
      if ('value' in result) {
        values.push(result.value);
        return result.value;
      }
      failed = true;
      problems.push({ key: configKey, message: `${configKey}: cannot resolve ${placeholder}: ${result.problem}` });
      return placeholder;
    });
    out[configKey] = failed ? value : resolved;
  }
  return Object.freeze({ config: Object.freeze(out), referencedKeys: Object.freeze(referencedKeys), problems: Object.freeze(problems), resolvedValues: () => [...values] });
}

/** The config with every reference resolved, or a ConfigError naming each key and placeholder that failed. */
export function resolveConfig(raw: Readonly<Record<string, string>>, providers: ConfigProviders): Readonly<Record<string, string>> {
  const r = resolveConfigDetailed(raw, providers);
  if (r.problems.length === 0) return r.config;
  throw new ConfigError(`${r.problems.length} config provider reference(s) cannot be resolved: ${r.problems.map((p) => p.message).join('; ')}`, {
    context: { keys: [...new Set(r.problems.map((p) => p.key))] },
  });
}
