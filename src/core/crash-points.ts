/**
 * Named crash points: places in the commit protocol where a crash is most likely to lose or duplicate
 * data, so the crash tests can put a worker down exactly there and prove that a restart repairs it.
 * Production code calls `reach(point)`; only a test configures one (the environment variables
 * ICEFLOE_CRASH_POINT / ICEFLOE_CRASH_AFTER, read by cli.ts and passed in through app.ts). When the
 * configured point is reached for the N-th time, a line naming it goes to stderr (synchronously, so the
 * test can assert the point was hit) and the process dies by SIGKILL: no finally blocks, no flushes.
 * With ICEFLOE_CRASH_ACTION=throw the point instead raises an exception nothing catches (from the event
 * loop, as a client's callback would), so a test can watch how the process handles an uncaught exception.
 *
 * Stall points (`reachAsync`, awaited inside a call to a client): with ICEFLOE_CRASH_ACTION=hang the call
 * never settles — as a Kafka client whose callback never comes — after the line naming the point, so a
 * test can watch the task's watchdog (runtime/watchdog.ts) find it stuck there, fail it and have it restarted.
 */
import { ConfigError } from '../core/errors.ts';

export const CRASH_POINTS = [
  /** The task closed and uploaded its data files; nothing is announced yet. */
  'task.after-upload',
  /** Inside the cycle's Kafka transaction: announcements and offsets sent, commit not yet called. */
  'task.in-transaction',
  /** The transaction committed: files announced, offsets committed; the committer has not run yet. */
  'task.after-announce',
  /** The committer is about to send a table commit to the catalog; in a cluster it checks its lease next. */
  'committer.before-catalog-commit',
  /** The catalog applied a table commit; the committer has not seen the reply. */
  'committer.after-catalog-commit',
  /** One table of a committer round is committed, the next one is not. */
  'committer.between-tables',
  /** A stall point: the task's call to commit the cycle's Kafka transaction (announcements and offsets sent). */
  'task.in-kafka-call',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export interface CrashPoints {
  reach(point: CrashPoint): void;
  /**
   * A point inside a call to a client: as `reach`, but with the action `hang` the returned promise never
   * settles (the call hangs there). Resolves at once when the point is not the configured one.
   */
  reachAsync?(point: CrashPoint): Promise<void>;
}

export const NO_CRASH_POINTS: CrashPoints = { reach: () => undefined };

export const CRASH_ACTIONS = ['kill', 'throw', 'stop', 'hang'] as const;
export type CrashAction = (typeof CRASH_ACTIONS)[number];

export interface CrashSpec {
  readonly point: CrashPoint;
  /** Crash when the point is reached for this time (1 = the first time). */
  readonly after: number;
  /**
   * kill (default): SIGKILL; throw: an uncaught exception; stop: SIGSTOP to itself (frozen until a SIGCONT,
   * then it goes on); hang: the call at the point never returns (`reachAsync`; at a `reach` point, as kill).
   */
  readonly action?: CrashAction;
}

/** Parses ICEFLOE_CRASH_POINT / ICEFLOE_CRASH_AFTER / ICEFLOE_CRASH_ACTION values; undefined when no point is set. */
export function parseCrashSpec(point: string | undefined, after: string | undefined, action?: string): CrashSpec | undefined {
  if (point === undefined || point === '') return undefined;
  if (!(CRASH_POINTS as readonly string[]).includes(point)) {
    throw new ConfigError(`unknown crash point ${JSON.stringify(point)}; known: ${CRASH_POINTS.join(', ')}`);
  }
  const n = after === undefined || after === '' ? 1 : Number(after);
  if (!Number.isSafeInteger(n) || n < 1) throw new ConfigError(`ICEFLOE_CRASH_AFTER must be a positive integer, got ${JSON.stringify(after)}`);
  if (action !== undefined && action !== '' && !(CRASH_ACTIONS as readonly string[]).includes(action)) {
    throw new ConfigError(`unknown crash action ${JSON.stringify(action)}; known: ${CRASH_ACTIONS.join(', ')}`);
  }
  return { point: point as CrashPoint, after: n, ...(action === 'throw' || action === 'stop' || action === 'hang' ? { action } : {}) };
}

/**
 * Crash points armed for `spec`; `die` kills the process (or, action `stop`, freezes it and returns once
 * thawed). Action `hang` at a `reachAsync` point writes its line with `hang` and never settles.
 */
export function armCrashPoints(spec: CrashSpec | undefined, die: (line: string) => void, hang: (line: string) => void = () => undefined): CrashPoints {
  if (spec === undefined) return NO_CRASH_POINTS;
  let hits = 0;
  const hit = (point: CrashPoint): boolean => point === spec.point && ++hits === spec.after;
  return {
    reach(point) {
      if (hit(point)) die(`icefloe: crash point ${point} reached (hit ${hits}); killing the process`);
    },
    reachAsync(point) {
      if (!hit(point)) return Promise.resolve();
      if (spec.action !== 'hang') {
        die(`icefloe: crash point ${point} reached (hit ${hits}); killing the process`);
        return Promise.resolve();
      }
      hang(`icefloe: stall point ${point} reached (hit ${hits}); the call hangs (never returns)`);
      return new Promise<void>(() => undefined);
    },
  };
}
