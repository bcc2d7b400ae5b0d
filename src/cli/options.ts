/**
 * Command-line options of the `icefloe` subcommands: `--name value`, `--name=value`, repeatable options and
 * flags, checked against what the command accepts, and the Kafka and registry endpoints every Kafka tool
 * takes with the same defaults.
 *
 * Owns: option syntax and its errors (ConfigError: the CLI exits 2 and names the option). Must not: read
 * process.env or argv (src/cli.ts passes them in) or know what a command does with its options.
 */
import { ConfigError } from '../core/errors.ts';

export const DEFAULT_BOOTSTRAP_SERVERS = 'localhost:9092';
export const DEFAULT_REGISTRY_URL = 'http://localhost:8081/apis/ccompat/v7';

export interface OptionSpec {
  /** Options that take a value; a repeated one keeps its last value. */
  readonly values?: readonly string[];
  /** Options that take a value and may be given several times (all kept, in order). */
  readonly repeatable?: readonly string[];
  /** Options without a value. */
  readonly flags?: readonly string[];
}

export class ParsedOptions {
  readonly #values = new Map<string, string[]>();
  readonly #flags = new Set<string>();

  add(name: string, value: string): void {
    const list = this.#values.get(name) ?? [];
    list.push(value);
    this.#values.set(name, list);
  }

  flag(name: string): void {
    this.#flags.add(name);
  }

  /** The last value given (undefined: not given). */
  get(name: string): string | undefined {
    return this.#values.get(name)?.at(-1);
  }

  /** Every value given, in order. */
  all(name: string): readonly string[] {
    return this.#values.get(name) ?? [];
  }

  has(flag: string): boolean {
    return this.#flags.has(flag);
  }
}

/** Parses `args` (no positional arguments allowed); an unknown option is named with the ones that exist. */
export function parseOptions(args: readonly string[], spec: OptionSpec): ParsedOptions {
  const values = [...(spec.values ?? []), ...(spec.repeatable ?? [])];
  const flags = spec.flags ?? [];
  const out = new ParsedOptions();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument '${arg}' (options start with --; --help lists them)`);
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    if (flags.includes(name)) {
      if (eq >= 0) throw new ConfigError(`option --${name} takes no value`);
      out.flag(name);
      continue;
    }
    if (!values.includes(name)) {
      const known = [...values, ...flags].map((n) => `--${n}`).join(', ');
      throw new ConfigError(`unknown option --${name} (options: ${known}; --help explains them)`);
    }
    const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new ConfigError(`option --${name} needs a value`);
    out.add(name, value);
  }
  return out;
}

/** An integer option of at least `min`. */
export function integer(name: string, text: string, min: number): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < min) throw new ConfigError(`--${name} must be an integer of at least ${min}, not '${text}'`);
  return n;
}

/** The environment variables the Kafka tools take their endpoint defaults from (blank counts as unset). */
export interface ToolEnvironment {
  readonly ICEFLOE_BOOTSTRAP_SERVERS?: string | undefined;
  readonly ICEFLOE_REGISTRY_URL?: string | undefined;
}

function present(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v;
}

/** `--bootstrap-servers` / `--registry-url`, else the environment, else the local stack's. */
export function endpoints(o: ParsedOptions, environment: ToolEnvironment): { bootstrapServers: string; registryUrl: string } {
  return {
    bootstrapServers: o.get('bootstrap-servers') ?? present(environment.ICEFLOE_BOOTSTRAP_SERVERS) ?? DEFAULT_BOOTSTRAP_SERVERS,
    registryUrl: o.get('registry-url') ?? present(environment.ICEFLOE_REGISTRY_URL) ?? DEFAULT_REGISTRY_URL,
  };
}
