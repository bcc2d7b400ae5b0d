/**
 * Why a Kafka client cannot reach its cluster. librdkafka's own errors for that ("Local: Timed out",
 * ERR__TIMED_OUT, after the request's whole time-out) name neither a host nor a cause; what it reports
 * while it tries does: a `FAIL` log line per failed connection attempt ("127.0.0.1:1/bootstrap: Connect
 * to ipv4#127.0.0.1:1 failed: Connection refused", "Failed to resolve 'nohost:9092'", "SSL handshake
 * failed", "SASL ... failed") and error events ("host resolution failure", "authentication failure").
 * A `Reachability` keeps the latest failure per broker and turns a client error into one that names the
 * bootstrap addresses and the cause, with what fixes it.
 *
 * Causes that a retry cannot change (a name that does not resolve, a TLS or SASL handshake the listener
 * refuses) are configuration errors, as Kafka's Java client refuses unresolvable bootstrap.servers with
 * a ConfigException; a refused or timed-out connection is infrastructure (the broker may be starting).
 *
 * Owns: classifying librdkafka's failure reports, the latest one per broker, the messages.
 * Must not: import the client (unit tests feed it librdkafka's lines), or keep a line that is not about a
 * connection (they carry host names only, never credentials).
 */
import { ConfigError, RetriableError } from '../../core/errors.ts';
import { attachDebugLog } from './debug-log.ts';
import type { IcefloeError } from '../../core/errors.ts';

export type FailureKind = 'dns' | 'refused' | 'tls' | 'sasl' | 'timeout' | 'other';

export interface BrokerFailure {
  /** `host:port` as librdkafka names the broker. */
  readonly broker: string;
  readonly kind: FailureKind;
  /** librdkafka's text, without its "(after N ms in state ...)" tail. */
  readonly detail: string;
  /** Failed attempts seen (librdkafka retries with reconnect.backoff.ms). */
  readonly count: number;
  /** When the latest attempt failed (ms since the epoch). */
  readonly atMs: number;
}

/**
 * How old a failure may be and still explain an error: a little more than the longest request time-out
 * of the adapter (15 s), so a refusal during a broker restart an hour ago never explains today's slow call.
 */
export const RECENT_MS = 30_000;

/** Causes a retry cannot change: reported as configuration errors, and the check stops waiting for them. */
const DEFINITE = new Set<FailureKind>(['dns', 'tls', 'sasl']);

/** A log line about one broker: "[thrd:...]: <proto>://<host:port>/<bootstrap|id>: <text>". */
const BROKER_LINE = /^\[thrd:[^\]]*\]:\s*(?:[A-Za-z_]+:\/\/)?(\S+?)\/(?:bootstrap|-?\d+):\s*(.*)$/s;
const TAIL = /\s*\(after \d+ms in state [^)]*\)\s*$/;

/** What librdkafka's text says went wrong (the broker prefix already removed). */
export function classifyFailure(text: string): FailureKind {
  if (/failed to resolve|host resolution failure|name or service not known|nodename nor servname/i.test(text)) return 'dns';
  if (/connection refused|ECONNREFUSED/i.test(text)) return 'refused';
  if (/\bSASL\b|authentication fail/i.test(text)) return 'sasl';
  if (/\bSSL\b|\bTLS\b|certificate|handshake/i.test(text)) return 'tls';
  if (/timed out/i.test(text)) return 'timeout';
  return 'other';
}

/** `host:port` for each bootstrap.servers entry (scheme removed, librdkafka's default port 9092 added). */
export function bootstrapAddresses(config: Readonly<Record<string, string>>): string[] {
  const list = config['bootstrap.servers'] ?? config['metadata.broker.list'] ?? '';
  return list
    .split(',')
    .map((s) => s.trim().replace(/^[A-Za-z_]+:\/\//, ''))
    .filter((s) => s !== '')
    .map((s) => (/:\d+$/.test(s) ? s : `${s}:9092`));
}

function hostOf(address: string): string {
  return address.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
}

export class Reachability {
  readonly #bootstrap: readonly string[];
  readonly #protocol: string;
  readonly #failures = new Map<string, BrokerFailure>();
  /** An error event's kind when no log line named a broker (kept as the fallback cause). */
  #lastEvent: { kind: FailureKind; detail: string; atMs: number } | undefined;
  #waiter: (() => void) | undefined;
  readonly #now: () => number;

  constructor(config: Readonly<Record<string, string>>, now: () => number = Date.now) {
    this.#now = now;
    this.#bootstrap = bootstrapAddresses(config);
    this.#protocol = (config['security.protocol'] ?? 'plaintext').toUpperCase();
  }

  get bootstrap(): readonly string[] {
    return this.#bootstrap;
  }

  /** A librdkafka `event.log` entry; lines that are not a broker's connection failure are ignored. */
  onLog(line: { readonly severity?: unknown; readonly fac?: unknown; readonly message?: unknown }): void {
    if (typeof line.message !== 'string') return;
    const severity = typeof line.severity === 'number' ? line.severity : 7;
    if (line.fac !== 'FAIL' && severity > 4) return;
    const m = BROKER_LINE.exec(line.message);
    if (m === null) return;
    const broker = m[1] as string;
    const detail = (m[2] as string).replace(/,?\s*\d+ identical error\(s\) suppressed/, '').replace(TAIL, '');
    const kind = classifyFailure(detail);
    if (kind === 'other' && line.fac !== 'FAIL') return;
    const count = (this.#failures.get(broker)?.count ?? 0) + 1 + suppressed(line.message);
    this.#failures.set(broker, { broker, kind, detail, count, atMs: this.#now() });
    this.#wake();
  }

  /** A librdkafka `event.error`: kept only when it names a cause ("host resolution failure"). */
  onError(error: { readonly message?: unknown }): void {
    const text = typeof error.message === 'string' ? error.message : '';
    const kind = classifyFailure(text);
    if (kind !== 'other') this.#lastEvent = { kind, detail: text, atMs: this.#now() };
  }

  /** Attaches to a client's events (any librdkafka client of the binding). */
  watch(client: { on(event: 'event.log' | 'event.error', listener: (e: never) => void): unknown }): this {
    client.on('event.log', (e: { severity?: unknown; fac?: unknown; message?: unknown }) => this.onLog(e));
    attachDebugLog(client);
    client.on('event.error', (e: { message?: unknown }) => this.onError(e));
    return this;
  }

  /** The latest failure of each bootstrap address that has one (every broker's when none is a bootstrap one), within RECENT_MS. */
  failures(): BrokerFailure[] {
    const since = this.#now() - RECENT_MS;
    const recent = (f: BrokerFailure | undefined): f is BrokerFailure => f !== undefined && f.atMs >= since;
    const own = this.#bootstrap.map((a) => this.#failures.get(a)).filter(recent);
    return own.length > 0 ? own : [...this.#failures.values()].filter(recent);
  }

  /**
   * True once every bootstrap address failed at least twice with a cause a retry cannot change: waiting
   * longer only delays the same answer. A refused or timed-out connection never makes it hopeless.
   */
  hopeless(): boolean {
    if (this.#bootstrap.length === 0) return false;
    return this.#bootstrap.every((a) => {
      const f = this.#failures.get(a);
      return f !== undefined && f.count >= 2 && DEFINITE.has(f.kind);
    });
  }

  /** Resolves when hopeless() becomes true (checked on every new failure). */
  whenHopeless(): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.hopeless()) resolve();
        else this.#waiter = check;
      };
      check();
    });
  }

  #wake(): void {
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.();
  }

  /** What is known about why the cluster cannot be reached, or undefined when nothing failed. */
  describe(): { kind: FailureKind; text: string } | undefined {
    const failures = this.failures();
    if (failures.length === 0) {
      if (this.#lastEvent === undefined || this.#lastEvent.atMs < this.#now() - RECENT_MS) return undefined;
      return { kind: this.#lastEvent.kind, text: `${hint(this.#lastEvent.kind, this.#bootstrap[0] ?? '', this.#protocol)} (librdkafka: ${this.#lastEvent.detail})` };
    }
    // One address: the message already names it; several: each cause says whose it is.
    const parts = failures.map((f) => `${failures.length > 1 ? `${f.broker}: ` : ''}${hint(f.kind, f.broker, this.#protocol)} (librdkafka: ${f.detail})`);
    // The kind decides the error's class: definite only when every bootstrap address failed definitely.
    const kind = failures.every((f) => DEFINITE.has(f.kind)) ? (failures[0] as BrokerFailure).kind : failures.find((f) => !DEFINITE.has(f.kind))?.kind ?? 'other';
    return { kind, text: parts.join('; ') };
  }

  /**
   * The error for a cluster that did not answer within `waitedMs`: names the bootstrap addresses and the
   * cause; a ConfigError when no retry can help, a RetriableError otherwise.
   */
  unreachable(waitedMs: number, cause?: unknown): IcefloeError {
    const known = this.describe();
    const where = `Kafka at bootstrap.servers=${this.#bootstrap.join(',')}`;
    const context = { bootstrapServers: this.#bootstrap.join(','), kafkaFailure: known?.kind ?? 'no-answer' };
    const options = { ...(cause === undefined ? {} : { cause }), context };
    if (known === undefined) {
      return new RetriableError(`${where} did not answer within ${Math.round(waitedMs / 1000)} s (no connection attempt failed: the broker accepted connections but sent no metadata; check that the host and port are a Kafka listener and that security.protocol=${this.#protocol} matches it)`, options);
    }
    const message = `cannot reach ${where}: ${known.text}`;
    return DEFINITE.has(known.kind) ? new ConfigError(message, options) : new RetriableError(`${message}; no metadata within ${Math.round(waitedMs / 1000)} s`, options);
  }

  /**
   * A client error that may come from an unreachable cluster (a time-out, a transport failure) with the
   * bootstrap addresses and the latest cause appended; the class is kept (a running task retries as before).
   */
  explain(error: unknown): unknown {
    if (!(error instanceof RetriableError)) return error;
    const known = this.describe();
    if (known === undefined) return error;
    return new RetriableError(`${error.message}: cannot reach Kafka at bootstrap.servers=${this.#bootstrap.join(',')}: ${known.text}`, {
      cause: error,
      context: { ...error.context, bootstrapServers: this.#bootstrap.join(','), kafkaFailure: known.kind },
    });
  }
}

function suppressed(message: string): number {
  const m = /(\d+) identical error\(s\) suppressed/.exec(message);
  return m === null ? 0 : Number(m[1]);
}

/** The cause in words, with what fixes it. */
function hint(kind: FailureKind, broker: string, protocol: string): string {
  switch (kind) {
    case 'dns':
      return `the host name ${hostOf(broker)} does not resolve (unknown host): check the name in bootstrap.servers`;
    case 'refused':
      return `connection refused: nothing listens on ${broker}; is Kafka running there, and is the port right?`;
    case 'tls':
      return `the TLS handshake failed with security.protocol=${protocol}: the listener must speak TLS (a PLAINTEXT listener closes the connection) and trust the configured certificates; check security.protocol and the ssl.* settings`;
    case 'sasl':
      return `SASL authentication failed with security.protocol=${protocol}: check sasl.mechanism, the credentials (sasl.username/sasl.password or sasl.jaas.config) and that the listener is a SASL one`;
    case 'timeout':
      return `connecting to ${broker} timed out: a firewall drops the connection, or the host is wrong`;
    case 'other':
      return `the connection to ${broker} failed`;
  }
}
