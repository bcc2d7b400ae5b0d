/**
 * The progress watchdog of a sink task (issue 24): the backstop against a silent stall. Every call a task
 * makes to Kafka, the object store, the catalog or the registry has a deadline of its own; this is for
 * what those cannot catch — a client whose callback never comes (a promise that never settles), a call
 * that times out and is retried forever in a state only a new client leaves, a loop that no longer reads.
 *
 * The rule: a task that HAS WORK — an assigned partition (not paused, not held for a schema) has records
 * beyond its position, or its cycle is due — and that has made no PROGRESS — no poll returned records and
 * no cycle ended — for longer than the bound, or that is inside one call longer than the bound while it
 * has work, is stuck. A task with nothing to read and no cycle due is idle, never stuck, however long a
 * poll waits. A paused task commits nothing by design, so only its pausing cycle counts.
 *
 * The bound (`stallBound`) is derived from the task's settings: the longest a healthy task may go without
 * progress while it has work is its longest single wait — a transactional call (half of
 * `transaction.timeout.ms`, producer.ts), a rejoin after a rebalance (`session.timeout.ms`), a retry
 * back-off (`errors.retry.delay.max.ms`) — plus a margin for a loaded machine:
 *   bound = max(transaction.timeout.ms / 2, session.timeout.ms, errors.retry.delay.max.ms) + 30 s,
 * 90 s with the defaults. The commit interval is not part of it: the "cycle due" clock starts when the
 * cycle becomes due, not when it starts. `icefloe.task.stall-timeout-ms` sets it instead (0: off).
 *
 * Who watches: a timer in the task's own process (this module), which still runs when the task's event
 * loop is fine but a promise never settles — and it knows which call is open. A blocked event loop (a
 * native call that never returns on the main thread) stops that timer too; the worker notices it by the
 * task process's heartbeat over IPC stopping (task-process.ts) and kills the process after the same bound.
 *
 * Time the process did not run (SIGSTOP, a frozen VM) does not count: a tick that comes much later than
 * due shifts every clock by the lateness. A frozen task is fenced by the protocol; judging it stuck on
 * waking would only add a restart to the recovery under test.
 *
 * Owns: the open calls (cheap: one map entry per call, none per record), the stuck rule, the trace.
 * Must not: decide what happens to a stuck task (task.ts fails it; the process ends; the worker restarts).
 */
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { WorkerConfig } from '../config/worker-config.ts';
import { DEFAULT_SESSION_TIMEOUT_MS } from './task-ids.ts';

/** A margin over the longest legitimate wait: a loaded machine, a slow GC, a rebalance's own round trips. */
export const STALL_MARGIN_MS = 30_000;
/** How often the watchdog looks. */
export const WATCHDOG_PERIOD_MS = 1_000;
/** A tick this much later than due means the process did not run meanwhile (frozen): that time does not count. */
const FROZEN_SLACK_MS = 2_000;

/** What the bound is derived from; each value as the task's clients apply it. */
export interface StallBoundInputs {
  /** The producer's transaction.timeout.ms (the transactional calls time out after half of it). */
  readonly transactionTimeoutMs: number;
  /** The consumer's session.timeout.ms. */
  readonly sessionTimeoutMs: number;
  /** errors.retry.delay.max.ms: the longest back-off between retries. */
  readonly retryDelayMaxMs: number;
  /** icefloe.task.stall-timeout-ms: null derives the bound; 0 turns the watchdog off. */
  readonly configuredMs: number | null;
}

export interface StallBound {
  /** 0: the watchdog is off. */
  readonly ms: number;
  /** How the bound came about, for the trace. */
  readonly derivation: string;
}

/** The bound of a task's watchdog (see the module header). */
export function stallBound(i: StallBoundInputs): StallBound {
  if (i.configuredMs !== null) {
    return { ms: i.configuredMs, derivation: i.configuredMs === 0 ? 'icefloe.task.stall-timeout-ms=0: off' : `icefloe.task.stall-timeout-ms=${i.configuredMs}` };
  }
  const call = Math.floor(i.transactionTimeoutMs / 2);
  const longest = Math.max(call, i.sessionTimeoutMs, i.retryDelayMaxMs);
  return {
    ms: longest + STALL_MARGIN_MS,
    derivation: `max(transaction.timeout.ms/2 = ${call} ms, session.timeout.ms = ${i.sessionTimeoutMs} ms, errors.retry.delay.max.ms = ${i.retryDelayMaxMs} ms) + ${STALL_MARGIN_MS} ms`,
  };
}

/** The task's watchdog bound from the settings its clients apply (`stallBound`). */
export function taskStallBound(worker: Pick<WorkerConfig, 'producerProps' | 'consumerProps'>, connector: ConnectorConfig): StallBound {
  const num = (v: string | undefined, d: number): number => {
    const n = v === undefined ? Number.NaN : Number(v);
    return Number.isFinite(n) && n > 0 ? n : d;
  };
  const tx = connector.producerOverrides['transaction.timeout.ms'] ?? connector.control.kafkaProps['transaction.timeout.ms'] ?? worker.producerProps['transaction.timeout.ms'];
  const session = connector.consumerOverrides['session.timeout.ms'] ?? worker.consumerProps['session.timeout.ms'];
  return stallBound({
    transactionTimeoutMs: num(tx, DEFAULT_TRANSACTION_TIMEOUT_MS),
    sessionTimeoutMs: num(session, DEFAULT_SESSION_TIMEOUT_MS),
    retryDelayMaxMs: connector.errors.retryDelayMaxMs,
    configuredMs: connector.stallTimeoutMs,
  });
}
/** librdkafka's default transaction.timeout.ms. */
const DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000;

interface OpenCall {
  readonly name: string;
  sinceMs: number;
}

/**
 * The calls a task is inside, with their start. `wrap` returns the same object whose promise-returning
 * methods are tracked as `<kind> <method>`; synchronous methods and async iterators pass through.
 */
export class CallTracker {
  private readonly open = new Map<number, OpenCall>();
  private nextId = 0;
  /** The last call that ended, and when (for a trace when none is open). */
  lastEnded: { readonly name: string; readonly atMs: number } | undefined;
  /** Called when a poll returned records (progress). */
  onPolled: (() => void) | undefined;

  readonly now: () => number;

  /** `now`: a monotonic clock in ms (default performance.now). */
  constructor(now: () => number = () => performance.now()) {
    this.now = now;
  }

  /** Runs `call` as the open call `name` until it settles. */
  track<T>(name: string, call: () => Promise<T>): Promise<T> {
    const id = this.nextId++;
    this.open.set(id, { name, sinceMs: this.now() });
    let p: Promise<T>;
    try {
      p = call();
    } catch (e) {
      this.end(id, name);
      throw e;
    }
    return p.finally(() => this.end(id, name));
  }

  private end(id: number, name: string): void {
    this.open.delete(id);
    this.lastEnded = { name, atMs: this.now() };
  }

  /** The open calls, the oldest first (a rebalance's cycle end runs inside the poll that called it back). */
  opened(): readonly { readonly name: string; readonly sinceMs: number }[] {
    return [...this.open.values()].sort((x, y) => x.sinceMs - y.sinceMs);
  }

  /** The process did not run for `ms`: the open calls did not wait that long. */
  shift(ms: number): void {
    for (const c of this.open.values()) c.sinceMs += ms;
  }

  /**
   * `target` with its promise-returning methods tracked (named `<kind> <method>`). A poll that returns
   * records reports progress. The methods run with the target as `this` (private fields work).
   */
  wrap<T extends object>(kind: string, target: T): T {
    const names = new Map<PropertyKey, string>();
    return new Proxy(target, {
      get: (t, prop) => {
        const value: unknown = Reflect.get(t, prop, t);
        if (typeof value !== 'function') return value;
        const fn = value as (...args: unknown[]) => unknown;
        return (...args: unknown[]): unknown => {
          const result = fn.apply(t, args);
          if (!(result instanceof Promise)) return result;
          let name = names.get(prop);
          if (name === undefined) names.set(prop, (name = `${kind} ${String(prop)}`));
          const tracked = this.track(name, () => result);
          if (prop !== 'poll') return tracked;
          return tracked.then((batch: unknown) => {
            if (Array.isArray(batch) && batch.length > 0) this.onPolled?.();
            return batch;
          });
        };
      },
    });
  }
}

/** What the watchdog asks the task: whether it has work now, and which (for the trace); undefined: idle. */
export type WorkProbe = () => string | undefined;

export interface WatchdogDeps {
  readonly bound: StallBound;
  readonly calls: CallTracker;
  readonly work: WorkProbe;
  /** The task is stuck: `message` names the call, how long, the bound and why it had work. */
  readonly onStuck: (message: string) => void;
  readonly log?: Logger;
  /** How often it looks; default WATCHDOG_PERIOD_MS, or a quarter of a bound below 4 s. */
  readonly periodMs?: number;
}

export class Watchdog {
  private readonly d: WatchdogDeps;
  private readonly now: () => number;
  private lastProgressMs: number;
  /** Since when the task has had work without a break (undefined: idle at the last look). */
  private workSinceMs: number | undefined;
  private lastTickMs: number;
  private timer: NodeJS.Timeout | undefined;
  private fired = false;
  private readonly periodMs: number;

  constructor(deps: WatchdogDeps) {
    this.d = deps;
    this.periodMs = deps.periodMs ?? Math.min(WATCHDOG_PERIOD_MS, Math.max(10, Math.floor(deps.bound.ms / 4)));
    this.now = deps.calls.now;
    this.lastProgressMs = this.now();
    this.lastTickMs = this.lastProgressMs;
    deps.calls.onPolled = () => this.progress();
  }

  get boundMs(): number {
    return this.d.bound.ms;
  }

  /** Starts looking every period (the timer does not keep the process alive); a bound of 0 never starts. */
  start(): void {
    if (this.d.bound.ms <= 0 || this.timer !== undefined) return;
    this.lastTickMs = this.now();
    this.lastProgressMs = this.lastTickMs;
    this.timer = setInterval(() => this.tick(), this.periodMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** A poll returned records, or a cycle ended (committed, or nothing to commit). */
  progress(): void {
    this.lastProgressMs = this.now();
  }

  /** One look: accounts for a freeze, then `check()`; a stuck task is reported once. */
  tick(): void {
    const now = this.now();
    const late = now - this.lastTickMs - this.periodMs;
    this.lastTickMs = now;
    if (late > FROZEN_SLACK_MS) {
      // The process did not run: none of the clocks ran either.
      this.lastProgressMs += late;
      if (this.workSinceMs !== undefined) this.workSinceMs += late;
      this.d.calls.shift(late);
      this.d.log?.info('the task process did not run for a while (frozen?); the watchdog does not count that time', { ms: Math.round(late) });
    }
    if (this.fired) return;
    const message = this.check();
    if (message === undefined) return;
    this.fired = true;
    this.stop();
    this.d.onStuck(message);
  }

  /** The stuck rule (module header): the trace when stuck, else undefined. */
  check(): string | undefined {
    const bound = this.d.bound.ms;
    if (bound <= 0) return undefined;
    const work = this.d.work();
    const now = this.now();
    if (work === undefined) {
      this.workSinceMs = undefined;
      return undefined;
    }
    this.workSinceMs ??= now;
    const quietMs = now - Math.max(this.workSinceMs, this.lastProgressMs);
    const open = this.d.calls.opened();
    const oldest = open[0];
    const inCallMs = oldest === undefined ? 0 : now - Math.max(oldest.sinceMs, this.workSinceMs);
    if (quietMs <= bound && inCallMs <= bound) return undefined;
    const s = (ms: number): string => (ms / 1000).toFixed(1);
    // The innermost call (the newest) is where it waits; the ones around it say how it got there.
    const inner = open.at(-1);
    const around = open.slice(0, -1).reverse().map((c) => `${c.name} for ${s(now - c.sinceMs)} s`);
    const where = inner === undefined ? this.betweenCalls(now) : `${inner.name} for ${s(now - inner.sinceMs)} s${around.length === 0 ? '' : ` (inside ${around.join(', inside ')})`}`;
    return `task stuck in ${where} (bound ${s(bound)} s, derived from ${this.d.bound.derivation}): no poll returned records and no cycle ended for ${s(quietMs)} s while ${work}`;
  }

  private betweenCalls(now: number): string {
    const last = this.d.calls.lastEnded;
    const quiet = (now - Math.max(this.workSinceMs ?? now, this.lastProgressMs)) / 1000;
    return `the task loop (no call open; the last, ${last === undefined ? 'none' : `${last.name}, ended ${((now - last.atMs) / 1000).toFixed(1)} s ago`}) for ${quiet.toFixed(1)} s`;
  }
}
