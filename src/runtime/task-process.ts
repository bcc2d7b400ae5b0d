/**
 * A task as a child process of the worker: both ends of the process boundary. app.ts forks the child
 * (`icefloe task`) and builds the task in it; this module owns what happens around that.
 *
 * The rules (issue 10: a task process never outlives its worker or hangs after a fatal error):
 * - The child ends when its task ends: exit 0 stopped, EXIT_TASK_FAILED for a failure a restart would
 *   repeat (`restartable` in task.ts), EXIT_TASK_CRASHED for anything else — a restartable failure, an
 *   uncaught exception or unhandled rejection anywhere in the process (a client's callback, a bug). A
 *   crash is reported (trace to stderr and to the worker) and the process exits at once: its clients are
 *   not closed, as they may be what is stuck; fencing and the transaction time-out make that harmless.
 *   A task its watchdog found stuck (runtime/watchdog.ts) is reported likewise, then the process ends by
 *   SIGKILL of itself: an exit would run the native clients' clean-up, which waits for what is stuck.
 * - The child notices that its worker is gone — the IPC channel closed, or its parent pid changed (a
 *   `kill -9` of the worker) — stops its task (the last cycle may still commit), and ends within
 *   `orphanStopMs` whether or not the task stopped; it ends by SIGKILL of itself, which nothing can hang
 *   (a native client's clean-up at exit could), and nobody is left to read its exit code.
 * - The worker reads the child's end: exit 0 resolves the handle's `done`; EXIT_TASK_FAILED rejects with
 *   a FatalError (not restartable); any other code or a signal (OOM kill) rejects with a FatalError marked
 *   `restartable`. Either carries the cause and the failed record's coordinates as the child reported them
 *   (for the worker's failure line), and the exit (`context.exit`). A child that closed its IPC channel but did not exit within CHILD_EXIT_GRACE_MS is
 *   killed, and `kill()` (the worker's bounded stop) sends SIGKILL.
 * - SIGTERM/SIGINT to the child (a terminal's Ctrl-C reaches the whole process group) stop its task as
 *   the worker's stop message does.
 *
 * Owns: the child's lifecycle on both sides, the exit codes, the parent watchdog. Must not: build
 * adapters (app.ts does) or decide about restarts (worker.ts does).
 */
import type { ChildProcess } from 'node:child_process';
import { describeFailure, errorMessage, FatalError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { restartable } from './task.ts';
import type { TaskFailure, TaskState } from './task.ts';
import type { TaskHandle } from './worker.ts';

/** The task failed by a decision (configuration, data, fenced, connector failed): no restart. */
export const EXIT_TASK_FAILED = 3;
/** The task process crashed or its task failed in a way a new incarnation may not meet: restart. */
export const EXIT_TASK_CRASHED = 70;

/** A child that closed its IPC channel must have exited within this, or it is killed. */
const CHILD_EXIT_GRACE_MS = 5_000;
/** How often a child checks that its parent is still the worker. */
const PARENT_CHECK_MS = 1_000;
/** The upper bound of an orphaned child's attempt to stop its task cleanly. */
export const MAX_ORPHAN_STOP_MS = 10_000;

/** How often a child says it is alive (its event loop runs), from the moment it has its spec. */
const ALIVE_MS = 1_000;
/** A worker's own check that comes this much later than due: the worker did not run (frozen); that time does not count. */
const FROZEN_SLACK_MS = 2_000;

/** What the child tells the worker. */
export type ChildMessage =
  | { readonly type: 'alive' }
  | { readonly type: 'announced' }
  | { readonly type: 'state'; readonly state: TaskState; readonly trace?: string; readonly failure?: TaskFailure; readonly topics?: readonly string[]; readonly note?: string };

/** What the worker tells the child. */
export type ParentMessage<Spec> =
  | { readonly type: 'start'; readonly spec: Spec }
  | { readonly type: 'stop' }
  | { readonly type: 'fail'; readonly message: string }
  | { readonly type: 'pause' }
  | { readonly type: 'resume' }
  | { readonly type: 'forget-topics' }
  | { readonly type: 'log-level'; readonly level: string };

// ---------------------------------------------------------------------------------------------------
// The worker's side
// ---------------------------------------------------------------------------------------------------

/**
 * The handle of a forked task process (the spec already sent). `silentBoundMs` (the task's watchdog bound,
 * runtime/watchdog.ts; 0: none): a child whose event loop is blocked cannot run its own watchdog, but it
 * stops saying it is alive — once it said so, a child silent for longer than that is killed (restartable).
 */
export function taskProcessHandle(taskId: number, child: ChildProcess, log: Logger, onAnnounced: () => void, silentBoundMs = 0): TaskHandle {
  let state: { state: string; trace?: string; note?: string } = { state: 'UNASSIGNED' };
  let failedWith: string | undefined;
  let topics: readonly string[] = [];
  /** How the task failed, as the child reported it (cause, record coordinates). */
  let failure: TaskFailure | undefined;
  let exited = false;
  /** When the child last said anything (performance.now()); undefined until it first did. */
  let heardAt: number | undefined;
  child.on('message', (m: ChildMessage) => {
    heardAt = performance.now();
    if (m.type === 'announced') onAnnounced();
    else if (m.type === 'state') {
      state = { state: m.state, ...(m.trace === undefined ? {} : { trace: m.trace }), ...(m.note === undefined ? {} : { note: m.note }) };
      failure = m.failure ?? failure;
      topics = m.topics ?? topics;
    }
  });
  const kill = (): void => {
    if (!exited) child.kill('SIGKILL');
  };
  const tell = (m: ParentMessage<never>): void => {
    if (child.connected) child.send(m);
  };
  // A child that let go of the worker but does not exit is stuck in its exit (a native clean-up): end it.
  child.on('disconnect', () => {
    const timer = setTimeout(() => {
      if (exited) return;
      log.warn('task process closed its channel but did not exit; killing it', { task: taskId, pid: child.pid, graceMs: CHILD_EXIT_GRACE_MS });
      kill();
    }, CHILD_EXIT_GRACE_MS);
    timer.unref();
  });
  log.info('task process started', { task: taskId, pid: child.pid });
  if (silentBoundMs > 0) {
    let lastCheck = performance.now();
    const silence = setInterval(() => {
      const now = performance.now();
      const late = now - lastCheck - ALIVE_MS;
      lastCheck = now;
      if (heardAt === undefined || exited) return;
      if (late > FROZEN_SLACK_MS) heardAt += late; // this worker did not run either: the child could not be heard
      const silentMs = now - heardAt;
      if (silentMs <= silentBoundMs) return;
      clearInterval(silence);
      const cause = `task process stuck: its event loop said nothing for ${(silentMs / 1000).toFixed(1)} s (bound ${(silentBoundMs / 1000).toFixed(1)} s, the task's watchdog bound); killed`;
      log.warn(cause, { task: taskId, pid: child.pid });
      failure = { cause, restartable: true };
      kill();
    }, ALIVE_MS);
    silence.unref();
    child.once('exit', () => clearInterval(silence));
  }
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', (e) => log.warn('task process error', { task: taskId, error: errorMessage(e) }));
    child.on('exit', (code, signal) => {
      exited = true;
      if (code === 0) {
        resolve();
        return;
      }
      const how = signal ?? `code ${code}`;
      // The cause as the child reported it (with the record's coordinates), else what the exit says.
      const why = failedWith ?? failure?.cause ?? state.trace?.split('\n')[0];
      state = { state: 'FAILED', trace: state.trace ?? failedWith ?? `task process exited with ${how}` };
      const message = why === undefined ? `task ${taskId} process exited with ${how}` : why;
      const options = { context: { task: taskId, exit: how }, ...(failedWith === undefined && failure?.record !== undefined ? { record: failure.record } : {}) };
      // Only the child's own verdict (or the worker failing the connector) is a decision; a signal or any
      // other code is a crash a new incarnation may not meet.
      if (code === EXIT_TASK_FAILED || failedWith !== undefined) reject(new FatalError(message, options));
      else {
        const text = failure === undefined ? `task ${taskId} process exited with ${how}${why === undefined ? '' : `: ${why}`}` : message;
        reject(new FatalError(text, { ...options, context: { ...options.context, restartable: true } }));
      }
    });
  });
  return {
    taskId,
    done,
    state: () => state,
    stop: async () => {
      if (child.connected) child.send({ type: 'stop' } satisfies ParentMessage<never>);
      else log.warn('task process already gone', { task: taskId });
    },
    fail: async (message) => {
      failedWith = message;
      if (child.connected) child.send({ type: 'fail', message } satisfies ParentMessage<never>);
    },
    setLogLevel: (level) => tell({ type: 'log-level', level }),
    pause: () => tell({ type: 'pause' }),
    resume: () => tell({ type: 'resume' }),
    topics: () => topics,
    forgetTopics: () => {
      topics = [];
      tell({ type: 'forget-topics' });
    },
    kill,
  };
}

// ---------------------------------------------------------------------------------------------------
// The child's side
// ---------------------------------------------------------------------------------------------------

/** A started task as the child sees it. */
export interface ChildTask {
  readonly state: TaskState;
  readonly trace: string | undefined;
  readonly restartable: boolean;
  /** Set once the task failed: its cause and record, for the worker. */
  readonly failedWith: TaskFailure | undefined;
  readonly activeTopics: readonly string[];
  /** Why it is not progressing, if so (task.ts `progressNote`). */
  readonly progressNote: string | undefined;
  /** Set when its watchdog found it stuck (runtime/watchdog.ts): its clients may hang the process's exit. */
  readonly endedStuck?: boolean;
  stop(): void;
  fail(message: string): void;
  pause(): void;
  resume(): void;
  forgetTopics(): void;
}

export interface ChildOptions<Spec> {
  /** Builds and runs the task (app.ts); `done` settles when it ends. */
  start(spec: Spec, log: Logger, onAnnounced: () => void): Promise<{ task: ChildTask; done: Promise<void> }>;
  logger(spec: Spec): Logger;
  /** PUT /admin/loggers reached the task category: the child's loggers log at `level` from now on. */
  setLogLevel?(level: string): void;
  /** How long an orphaned child may try to stop its task (capped at MAX_ORPHAN_STOP_MS). */
  orphanStopMs(spec: Spec): number;
}

/** `icefloe task`: runs the task the worker sends and returns the exit code (module header). */
export async function runTaskChild<Spec>(o: ChildOptions<Spec>): Promise<number> {
  const spec = await new Promise<Spec>((resolve) => process.once('message', (m: ParentMessage<Spec>) => m.type === 'start' && resolve(m.spec)));
  const log = o.logger(spec);
  const send = (m: ChildMessage, then?: () => void): void => {
    if (process.connected && process.send !== undefined) process.send(m, undefined, {}, () => then?.());
    else then?.();
  };
  // The worker's check that this event loop runs (taskProcessHandle): from now on, whatever the task does.
  setInterval(() => send({ type: 'alive' }), ALIVE_MS).unref();
  /** The task once started (messages and signals may come before). */
  const current: { task?: ChildTask } = {};
  let stopRequested = false;
  /** A pause asked for before the task existed (a connector created PAUSED). */
  let pauseRequested = false;
  const stop = (): void => {
    stopRequested = true;
    current.task?.stop();
  };

  const crash = (kind: string) => (e: unknown): void => {
    const trace = e instanceof Error ? (e.stack ?? e.message) : String(e);
    process.stderr.write(`icefloe task: ${kind}; the task process exits: ${trace}\n`);
    log.error('task process crashed', { kind, error: errorMessage(e) });
    // Report, then go; a worker that does not take the message within a second gets the exit code only.
    const exit = (): never => process.exit(EXIT_TASK_CRASHED);
    setTimeout(exit, 1_000).unref();
    send({ type: 'state', state: 'FAILED', trace }, exit);
  };
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled rejection'));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('message', (m: ParentMessage<Spec>) => {
    if (m.type === 'stop') stop();
    else if (m.type === 'fail') current.task?.fail(m.message);
    else if (m.type === 'pause') {
      pauseRequested = true;
      current.task?.pause();
    } else if (m.type === 'resume') {
      pauseRequested = false;
      current.task?.resume();
    } else if (m.type === 'forget-topics') current.task?.forgetTopics();
    else if (m.type === 'log-level') o.setLogLevel?.(m.level);
  });

  const orphan = watchParent(log, Math.min(MAX_ORPHAN_STOP_MS, Math.max(0, o.orphanStopMs(spec))), stop);
  let started: { task: ChildTask; done: Promise<void> };
  try {
    started = await o.start(spec, log, () => send({ type: 'announced' }));
  } catch (e) {
    const trace = e instanceof Error ? (e.stack ?? e.message) : String(e);
    log.debug('task could not start', { error: errorMessage(e) }); // the worker logs the failure line
    const failure: TaskFailure = { ...describeFailure(e), restartable: restartable(e) };
    await new Promise<void>((resolve) => send({ type: 'state', state: 'FAILED', trace, failure }, resolve));
    return orphan.exitCode(restartable(e) ? EXIT_TASK_CRASHED : EXIT_TASK_FAILED);
  }
  current.task = started.task;
  if (pauseRequested) started.task.pause();
  if (stopRequested || orphan.orphaned) started.task.stop();
  const reportState = (): void => {
    const t = started.task;
    const note = t.progressNote;
    send({ type: 'state', state: t.state, topics: t.activeTopics, ...(t.trace === undefined ? {} : { trace: t.trace }), ...(note === undefined ? {} : { note }) });
  };
  // Every second, and soon after a change a user waits for (a pause, a resume, the start).
  let last = '';
  const report = setInterval(() => {
    const now = `${started.task.state} ${started.task.activeTopics.length}`;
    if (now !== last) reportState();
    last = now;
  }, 100);
  const heartbeat = setInterval(reportState, 1000);
  try {
    await started.done;
    return orphan.exitCode(0);
  } catch {
    const t = started.task;
    await new Promise<void>((resolve) => send({ type: 'state', state: 'FAILED', ...(t.trace === undefined ? {} : { trace: t.trace }), ...(t.failedWith === undefined ? {} : { failure: t.failedWith }) }, resolve));
    // A stuck task's clients are what is stuck: a native client's clean-up at exit would wait for them
    // (seen: a consumer left inside a rebalance callback). It ends by SIGKILL of itself, which nothing can
    // hang; the worker has its report and restarts it (a signal is a restartable end).
    if (t.endedStuck === true) process.kill(process.pid, 'SIGKILL');
    return orphan.exitCode(t.restartable ? EXIT_TASK_CRASHED : EXIT_TASK_FAILED);
  } finally {
    clearInterval(report);
    clearInterval(heartbeat);
  }
}

/**
 * Watches for the worker going away (IPC closed, or the parent pid changed: a kill -9 of the worker):
 * then stops the task and, `stopMs` later, ends the process whatever the task is doing.
 */
function watchParent(log: Logger, stopMs: number, stop: () => void): { readonly orphaned: boolean; exitCode(code: number): number } {
  const parent = process.ppid;
  let orphaned = false;
  const die = (): never => process.kill(process.pid, 'SIGKILL') as never;
  const gone = (why: string): void => {
    if (orphaned) return;
    orphaned = true;
    log.warn('the worker is gone: stopping the task; the process ends within the bound whether or not it stopped', { why, boundMs: stopMs });
    stop();
    setTimeout(() => {
      log.error('the task did not stop in time after its worker was gone; the process ends now', { boundMs: stopMs });
      die();
    }, stopMs).unref();
  };
  process.on('disconnect', () => gone('the IPC channel to the worker closed'));
  setInterval(() => {
    if (process.ppid !== parent) gone(`the worker (pid ${parent}) exited`);
  }, PARENT_CHECK_MS).unref();
  return {
    get orphaned() {
      return orphaned;
    },
    // An orphan's exit code has no reader, and an exit can hang in a native clean-up: it ends by SIGKILL.
    exitCode(code: number): number {
      if (orphaned) die();
      return code;
    },
  };
}
