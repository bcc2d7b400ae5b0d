/**
 * Logger levels for `/admin/loggers` (reference/connect-rest.md §1.2–1.4, as a Kafka Connect 4.3.1
 * worker answers): the names users address, their levels, and the hook that applies them to the
 * worker's pino loggers and its task processes.
 *
 * Icefloe's loggers are pino loggers told apart by their bindings, not Java classes; each belongs to one
 * category, and each category answers to Icefloe's own name and to the Java names operators already
 * use for the same work (a Strimzi or runbook `PUT /admin/loggers/org.apache.kafka.connect.runtime.WorkerSinkTask`):
 *
 * | category  | pino bindings                 | names                                                                                          |
 * |-----------|-------------------------------|------------------------------------------------------------------------------------------------|
 * | worker    | none                          | io.icefloe.runtime.Worker, org.apache.kafka.connect.runtime.Worker                            |
 * | connector | `connector`                   | io.icefloe.runtime.WorkerConnector, org.apache.kafka.connect.runtime.WorkerConnector, org.apache.iceberg.connect.IcebergSinkConnector |
 * | task      | `task` (with or w/o connector) | io.icefloe.runtime.SinkTask, org.apache.kafka.connect.runtime.WorkerSinkTask, org.apache.iceberg.connect.IcebergSinkTask, org.apache.iceberg.connect.channel.Worker |
 * | committer | `role: committer`             | io.icefloe.coordinate.Committer, org.apache.iceberg.connect.channel.Coordinator, org.apache.iceberg.connect.channel.CommitterImpl |
 *
 * Semantics are a Kafka Connect 4.3.1 worker's (docs/design/rest-conformance.md, item 20): GET lists
 * every known logger with its effective level (all of them, not only the ones set); a name is known once
 * it is in the table above or was set through PUT; PUT on a name sets it and every known name below it
 * (`io.icefloe`, `org.apache.kafka.connect`, `root` for all) whose level differs, stamps their
 * `last_modified`, and returns their names sorted (`[]` when nothing changed); an unknown GET is 404
 * `Logger <name> not found.`, a bad level 404 `invalid log level '<lvl>'.`. The names of one category
 * are one logger: setting any of them sets them all. A name never set inherits from its nearest set
 * ancestor, else root. `scope=cluster` acts like `worker`: a standalone worker is the whole cluster.
 *
 * Must not: import pino (the composition root owns it; `LogLevelTracker` sets `level` on anything that
 * has one).
 */
import { ConfigError, RequestRefused } from '../core/errors.ts';
import type { LoggerLevel } from './herder-api.ts';

export type LoggerCategory = 'worker' | 'connector' | 'task' | 'committer';

/** pino's level names (`silent` is Java's OFF). */
export type PinoLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

export const LOGGER_NAMES: Readonly<Record<LoggerCategory, readonly string[]>> = {
  worker: ['io.icefloe.runtime.Worker', 'org.apache.kafka.connect.runtime.Worker'],
  connector: ['io.icefloe.runtime.WorkerConnector', 'org.apache.kafka.connect.runtime.WorkerConnector', 'org.apache.iceberg.connect.IcebergSinkConnector'],
  task: ['io.icefloe.runtime.SinkTask', 'org.apache.kafka.connect.runtime.WorkerSinkTask', 'org.apache.iceberg.connect.IcebergSinkTask', 'org.apache.iceberg.connect.channel.Worker'],
  committer: ['io.icefloe.coordinate.Committer', 'org.apache.iceberg.connect.channel.Coordinator', 'org.apache.iceberg.connect.channel.CommitterImpl'],
};

export const CATEGORIES = Object.keys(LOGGER_NAMES) as LoggerCategory[];

export const ROOT_LOGGER = 'root';

/** Java's level names (log4j2's, as Connect accepts them) and the pino level each becomes. */
const LEVELS: Readonly<Record<string, PinoLevel>> = {
  OFF: 'silent',
  FATAL: 'fatal',
  ERROR: 'error',
  WARN: 'warn',
  INFO: 'info',
  DEBUG: 'debug',
  TRACE: 'trace',
  ALL: 'trace',
};

const FROM_PINO: Readonly<Record<string, string>> = { silent: 'OFF', fatal: 'FATAL', error: 'ERROR', warn: 'WARN', info: 'INFO', debug: 'DEBUG', trace: 'TRACE' };

/** The category of a pino logger from its accumulated bindings. */
export function categoryOf(bindings: Readonly<Record<string, unknown>>): LoggerCategory {
  if (bindings.role === 'committer') return 'committer';
  if (bindings.task !== undefined) return 'task';
  if (bindings.connector !== undefined) return 'connector';
  return 'worker';
}

interface Entry {
  /** Null: inherits from the nearest set ancestor, else root. */
  level: string | null;
  lastModified: number | null;
}

/** Every name of the category table, to its category. */
const CATEGORY_OF_NAME: ReadonlyMap<string, LoggerCategory> = new Map(CATEGORIES.flatMap((c) => LOGGER_NAMES[c].map((n) => [n, c] as const)));

export class LoggerLevels {
  /** Names outside the category table that were set through PUT, and root. */
  readonly #named = new Map<string, Entry>();
  /** One entry per category: its names are one logger, so they share a level and a last_modified. */
  readonly #categories = new Map<LoggerCategory, Entry>(CATEGORIES.map((c) => [c, { level: null, lastModified: null }]));
  readonly #listeners = new Set<(levels: Readonly<Record<LoggerCategory, PinoLevel>>) => void>();
  readonly #now: () => number;

  /** `initialLevel`: the worker's level at start, a pino name (`info`, ICEFLOE_LOG_LEVEL) or a Java one. */
  constructor(options: { readonly initialLevel?: string; readonly now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
    const initial = options.initialLevel ?? 'info';
    const java = FROM_PINO[initial.toLowerCase()] ?? (LEVELS[initial.toUpperCase()] === undefined ? undefined : initial.toUpperCase());
    if (java === undefined) throw new ConfigError(`invalid log level '${initial}'`);
    this.#named.set(ROOT_LOGGER, { level: java, lastModified: null });
  }

  #entry(name: string): Entry | undefined {
    const category = CATEGORY_OF_NAME.get(name);
    return category === undefined ? this.#named.get(name) : this.#categories.get(category);
  }

  /** The level of a set ancestor (dotted prefix) of any of `names`, the nearest one, else root's. */
  #inherited(names: readonly string[]): string {
    let best: { depth: number; level: string } | undefined;
    for (const name of names) {
      for (let n = name; n.includes('.'); ) {
        n = n.slice(0, n.lastIndexOf('.'));
        const level = this.#named.get(n)?.level;
        if (level !== undefined && level !== null && (best === undefined || n.length > best.depth)) best = { depth: n.length, level };
      }
    }
    return best?.level ?? (this.#named.get(ROOT_LOGGER)?.level as string);
  }

  #effective(name: string): string {
    const entry = this.#entry(name);
    if (entry?.level !== null && entry !== undefined) return entry.level;
    const category = CATEGORY_OF_NAME.get(name);
    return this.#inherited(category === undefined ? [name] : LOGGER_NAMES[category]);
  }

  #names(): string[] {
    return [...CATEGORY_OF_NAME.keys(), ...this.#named.keys()].sort();
  }

  /** `GET /admin/loggers`: every known logger with its effective level, root included, sorted by name. */
  loggers(): Readonly<Record<string, LoggerLevel>> {
    const out: Record<string, LoggerLevel> = {};
    for (const name of this.#names()) out[name] = this.logger(name);
    return out;
  }

  /** `GET /admin/loggers/{name}`: its effective level; 404 when no such logger is known. */
  logger(name: string): LoggerLevel {
    const e = this.#entry(name);
    if (e === undefined) throw new RequestRefused('not-found', `Logger ${name} not found.`);
    return { level: this.#effective(name), last_modified: e.lastModified };
  }

  /**
   * `PUT /admin/loggers/{name}`: sets `name` and every known logger below it (all of them for root) whose
   * level differs, case-insensitive level; returns the names whose level changed, sorted (`[]` when none
   * did, as a 4.3.1 worker answers). `scope` is accepted and acts as `worker` (see the module header).
   */
  /** Refuses a level that is not log4j's, with Connect's 404 text. */
  static checkLevel(level: string): void {
    if (LEVELS[level.trim().toUpperCase()] === undefined) throw new RequestRefused('not-found', `invalid log level '${level}'.`);
  }

  setLevel(name: string, level: string, _scope: 'worker' | 'cluster' = 'worker'): readonly string[] {
    const upper = level.trim().toUpperCase();
    LoggerLevels.checkLevel(level);
    if (this.#entry(name) === undefined) this.#named.set(name, { level: null, lastModified: null });
    // Java matches `startsWith(name)`, so its Worker would also set WorkerSinkTask; a dotted boundary
    // keeps `io.icefloe.runtime.Worker` to the worker's own lines.
    const below = (n: string): boolean => name === ROOT_LOGGER || n === name || n.startsWith(`${name}.`);
    const changing = this.#names().filter((n) => below(n) && this.#effective(n) !== upper);
    const now = this.#now();
    const changed = new Set<string>();
    for (const n of changing) {
      const category = CATEGORY_OF_NAME.get(n);
      for (const alias of category === undefined ? [n] : LOGGER_NAMES[category]) changed.add(alias);
    }
    const entries = new Set([...changed].map((n) => this.#entry(n) as Entry));
    for (const e of entries) {
      e.level = upper;
      e.lastModified = now;
    }
    if (changed.size > 0) {
      const levels = this.categoryLevels();
      for (const listener of this.#listeners) listener(levels);
    }
    return [...changed].sort();
  }

  /** The pino level each category logs at now. */
  categoryLevels(): Readonly<Record<LoggerCategory, PinoLevel>> {
    const out = {} as Record<LoggerCategory, PinoLevel>;
    for (const category of CATEGORIES) out[category] = LEVELS[this.#effective(LOGGER_NAMES[category][0] as string)] ?? 'info';
    return Object.freeze(out);
  }

  /**
   * Calls `listener` with the category levels after every change: the app applies them to the worker's
   * loggers (`LogLevelTracker.apply`) and sends them to each task process. Returns an unsubscribe.
   */
  onChange(listener: (levels: Readonly<Record<LoggerCategory, PinoLevel>>) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/** Anything with a settable pino level (a pino logger). */
export interface LevelTarget {
  level: string;
}

/**
 * Applies category levels to live loggers: the worker tracks each pino logger it creates (with its
 * accumulated bindings), a task process does the same with the levels the worker sends it. Loggers are
 * held weakly, so tracking never keeps a finished task's logger alive.
 */
export class LogLevelTracker {
  #levels: Record<LoggerCategory, PinoLevel>;
  readonly #targets = new Set<{ readonly ref: WeakRef<LevelTarget>; readonly category: LoggerCategory }>();

  constructor(levels: Readonly<Record<LoggerCategory, PinoLevel>> | PinoLevel) {
    this.#levels = typeof levels === 'string' ? { worker: levels, connector: levels, task: levels, committer: levels } : { ...levels };
  }

  /** Sets the target's level now and on every later `apply`. */
  track(target: LevelTarget, bindings: Readonly<Record<string, unknown>>): void {
    const category = categoryOf(bindings);
    target.level = this.#levels[category];
    this.#targets.add({ ref: new WeakRef(target), category });
  }

  apply(levels: Readonly<Record<LoggerCategory, PinoLevel>>): void {
    this.#levels = { ...levels };
    for (const t of this.#targets) {
      const target = t.ref.deref();
      if (target === undefined) this.#targets.delete(t);
      else target.level = this.#levels[t.category];
    }
  }

  /** How many loggers are tracked and still alive (for tests and diagnostics). */
  get size(): number {
    let n = 0;
    for (const t of this.#targets) if (t.ref.deref() !== undefined) n++;
    return n;
  }
}
