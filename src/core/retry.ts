/**
 * The one retry policy: exponential back-off with decorrelated jitter, bounded by attempts and total
 * time, over an injectable clock, stoppable by an AbortSignal or a `shouldStop` hook.
 *
 * Three shapes of the same policy:
 * - `retry(fn, options)`: run one operation until it succeeds, fails for good, or a bound or a stop says
 *   give up (S3 requests, REST catalog reads, a table reload).
 * - `RetryBudget`: the bookkeeping `retry` is built on (attempts started, time used, the next wait), for a
 *   loop that does more than "call again" between attempts (commit-retry.ts reloads and rebuilds).
 * - `Backoff`: only the delays (next / reset), for loops that retry a whole cycle for as long as they run
 *   (the sink task's cycle, the committer loop) and decide themselves when to stop.
 *
 * Jitter: decorrelated (each delay is uniform in [initial, 3 × previous), capped at the maximum), not full
 * jitter (uniform in [0, initial × 2^n)). Both spread simultaneous retriers equally well (the AWS
 * Architecture Blog's "Exponential Backoff and Jitter" measured them side by side); decorrelated jitter
 * never waits less than the initial delay, so Iceberg's `commit.retry.min-wait-ms` keeps its meaning and a
 * loop retrying "until stopped" never spins, and its only state is the previous delay, which is what a
 * stateful `Backoff` holds anyway. The price: one delay depends on the one before, so the bound of step n
 * is [initial, min(max, 3 × delay n-1)), not a fixed function of n.
 *
 * What is retriable is the caller's `retriable(e)` predicate, by default `isRetriable` (an IcefloeError
 * whose `retriable` flag is set): decisions come from error classes, never from message text.
 *
 * Owns: the delay formula, the bounds and their validation, the stop rules. Must not: log (callers get
 * `onRetry`), read `Date.now` or `setTimeout` except through `systemClock`, or retry anything the
 * predicate refuses.
 */
import { ConfigError, isRetriable } from './errors.ts';

export interface BackoffBounds {
  /** The shortest wait, and the first wait's lower bound (Iceberg: `commit.retry.min-wait-ms`). 0: no waiting. */
  readonly initialDelayMs: number;
  /** No wait is longer (Iceberg: `commit.retry.max-wait-ms`). */
  readonly maxDelayMs: number;
}

export interface RetryBounds extends BackoffBounds {
  /** Attempts in all, the first one included; `Infinity`: until stopped. */
  readonly maxAttempts: number;
  /** No attempt starts later than this after the first one started; `Infinity`: no limit. */
  readonly totalTimeoutMs: number;
}

/** Time as retries see it: `now` for elapsed time, `sleep` for the waits (rejects with the signal's reason). */
export interface RetryClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Monotonic time (performance.now: elapsed time must not jump with the wall clock) and real timers. */
export const systemClock: RetryClock = {
  now: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** How a retrying caller is driven and stopped. */
export interface RetryControl {
  /** Default `systemClock`. */
  readonly clock?: RetryClock;
  /** Numbers in [0, 1) for the jitter; default Math.random. */
  readonly random?: () => number;
  /** Aborting stops at once, also in the middle of a wait: the promise rejects with `signal.reason`. */
  readonly signal?: AbortSignal | undefined;
  /** Asked before and after every wait; true gives up with the last failure. */
  readonly shouldStop?: (() => boolean) | undefined;
}

function invalid(what: string, bounds: Partial<RetryBounds>): never {
  throw new ConfigError(`retry bounds: ${what}`, { context: { ...bounds } });
}

/** The bounds, checked: a bound that cannot work is a ConfigError here, not a surprise in a loop. */
export function checkBounds<B extends BackoffBounds & Partial<RetryBounds>>(bounds: B): B {
  const { initialDelayMs: initial, maxDelayMs: max, maxAttempts, totalTimeoutMs } = bounds;
  if (!Number.isFinite(initial) || initial < 0) invalid(`initial delay must be a finite number >= 0, got ${initial}`, bounds);
  if (!Number.isFinite(max) || max < initial) invalid(`max delay must be finite and >= the initial delay (${initial}), got ${max}`, bounds);
  if (maxAttempts !== undefined && !(maxAttempts === Infinity || (Number.isInteger(maxAttempts) && maxAttempts >= 1))) {
    invalid(`max attempts must be an integer >= 1 or Infinity, got ${maxAttempts}`, bounds);
  }
  if (totalTimeoutMs !== undefined && (Number.isNaN(totalTimeoutMs) || totalTimeoutMs < 0)) {
    invalid(`total time-out must be >= 0 or Infinity, got ${totalTimeoutMs}`, bounds);
  }
  return bounds;
}

/**
 * The delays between consecutive failures of a loop: `next()` after each failure, `reset()` after a
 * success. Delay k (from 1) is uniform in [initial, min(max, 3 × delay k-1)), delay 0 being `initial`.
 */
export class Backoff {
  readonly #initial: number;
  readonly #max: number;
  readonly #random: () => number;
  #previous: number;
  #count = 0;

  constructor(bounds: BackoffBounds, random: () => number = Math.random) {
    checkBounds(bounds);
    this.#initial = bounds.initialDelayMs;
    this.#max = bounds.maxDelayMs;
    this.#random = random;
    this.#previous = this.#initial;
  }

  /** The wait before the next retry, in whole ms; each call is one more consecutive failure. */
  next(): number {
    const ceiling = this.#previous * 3;
    const delay = Math.min(this.#max, Math.floor(this.#initial + this.#random() * (ceiling - this.#initial)));
    this.#previous = delay;
    this.#count++;
    return delay;
  }

  /** After a success: the next failure waits from the initial delay again. */
  reset(): void {
    this.#previous = this.#initial;
    this.#count = 0;
  }

  /** Delays handed out since the last reset (consecutive failures, for logs and status). */
  get count(): number {
    return this.#count;
  }
}

/**
 * Attempts started and time used by one retried operation, and the wait before its next attempt. The
 * clock starts with the first attempt.
 */
export class RetryBudget {
  readonly #bounds: RetryBounds;
  readonly #clock: RetryClock;
  readonly #backoff: Backoff;
  readonly #signal: AbortSignal | undefined;
  readonly #shouldStop: () => boolean;
  #startedAt: number | undefined;
  #attempts = 0;

  constructor(bounds: RetryBounds, control: RetryControl = {}) {
    this.#bounds = checkBounds(bounds);
    this.#clock = control.clock ?? systemClock;
    this.#backoff = new Backoff(bounds, control.random);
    this.#signal = control.signal;
    this.#shouldStop = control.shouldStop ?? (() => false);
  }

  /** Counts an attempt that is about to start and answers its number (1, 2, ...). Aborted: rejects. */
  start(): number {
    this.#signal?.throwIfAborted();
    this.#startedAt ??= this.#clock.now();
    return ++this.#attempts;
  }

  get attempts(): number {
    return this.#attempts;
  }

  /** Time left before no attempt may start (Infinity without a total time-out). */
  remainingMs(): number {
    return this.#startedAt === undefined ? this.#bounds.totalTimeoutMs : this.#bounds.totalTimeoutMs - (this.#clock.now() - this.#startedAt);
  }

  /**
   * After a failed attempt: the wait before the next one, or undefined when the next one may not happen
   * (attempts used up, it would start after the total time-out, or `shouldStop`).
   */
  nextDelay(): number | undefined {
    if (this.#attempts >= this.#bounds.maxAttempts || this.#shouldStop()) return undefined;
    const delay = this.#backoff.next();
    return delay > this.remainingMs() ? undefined : delay;
  }

  /** Waits `ms`; false when `shouldStop` said stop meanwhile. An abort rejects with the signal's reason. */
  async wait(ms: number): Promise<boolean> {
    await this.#clock.sleep(ms, this.#signal);
    return !this.#shouldStop();
  }
}

export interface RetryEvent {
  /** The attempt that failed (1, 2, ...). */
  readonly attempt: number;
  readonly error: unknown;
  /** The wait before the next attempt. */
  readonly delayMs: number;
}

export interface RetryOptions extends RetryControl {
  readonly bounds: RetryBounds;
  /** Whether a failure may be retried; default `isRetriable` (IcefloeError with `retriable` set). */
  readonly retriable?: (error: unknown) => boolean;
  /** Before each wait (logs, metrics). */
  readonly onRetry?: (event: RetryEvent) => void;
}

/**
 * Runs `fn` until it succeeds. Gives up with the failure itself when it is not retriable, when the
 * attempts or the total time are used up, or when `shouldStop` says so; an aborted signal rejects with
 * its reason instead (before the first attempt, during a wait, or after an attempt that failed meanwhile).
 */
export async function retry<T>(fn: (attempt: number) => T | Promise<T>, options: RetryOptions): Promise<T> {
  const budget = new RetryBudget(options.bounds, options);
  const retriable = options.retriable ?? isRetriable;
  for (;;) {
    const attempt = budget.start();
    try {
      return await fn(attempt);
    } catch (e) {
      // A failure while aborting is most likely the abort's doing: the caller asked to stop, say so.
      if (options.signal?.aborted === true) throw options.signal.reason;
      if (!retriable(e)) throw e;
      const delayMs = budget.nextDelay();
      if (delayMs === undefined) throw e;
      options.onRetry?.({ attempt, error: e, delayMs });
      if (!(await budget.wait(delayMs))) throw e;
    }
  }
}
