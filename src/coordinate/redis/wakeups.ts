/**
 * Commit wake-ups over BullMQ: one queue per connector (`wakeQueueName`), under the cluster's prefix.
 * A task that announced a cycle adds a job; the worker running that connector's committer has a BullMQ
 * Worker on the queue (concurrency 1) and calls its handler for each job, so the committer runs at once
 * instead of at its next commit interval.
 *
 * Coalescing: jobs carry a deduplication id with `keepLastIfActive`. While one wake-up waits, more are
 * absorbed into it; while one is being handled, the next is kept and runs after it. A fixed `jobId` would
 * coalesce too but DROP a wake-up that arrives while the job is active (its id still exists), and that
 * wake-up may be for an announcement the running pass did not see.
 *
 * Owns: queues, workers and their error lines. Must not: be the only trigger of a commit (the committer's
 * interval still runs: a flushed Redis loses waiting wake-ups), or let wake() hang a task's cycle (it
 * gives up after a time-out).
 */
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import type { CommitWakeups } from '../cluster-port.ts';
import { unreachable, wakeQueueName, withTimeout } from './connection.ts';

export interface WakeupDeps {
  /** BullMQ's shared connection (`maxRetriesPerRequest: null`). */
  readonly connection: Redis;
  /** BullMQ's `prefix` (keysUnder(...).bullPrefix). */
  readonly prefix: string;
  /** How long wake() waits for Redis before it gives up. */
  readonly timeoutMs: number;
  readonly log: Logger;
  readonly redisUrl: string;
}

const JOB_OPTIONS = {
  deduplication: { id: 'wake', keepLastIfActive: true },
  removeOnComplete: true,
  removeOnFail: true,
} as const;

/** BullMQ emits a connection error at every reconnect attempt: one warning per this long is enough. */
const ERROR_LOG_INTERVAL_MS = 60_000;

export class BullWakeups implements CommitWakeups {
  readonly #d: WakeupDeps;
  readonly #queues = new Map<string, Queue>();
  readonly #workers = new Set<Worker>();
  #lastErrorLog = -Infinity;
  #closed = false;

  constructor(deps: WakeupDeps) {
    this.#d = deps;
  }

  async wake(connector: string): Promise<void> {
    const queue = this.#queue(connector);
    try {
      await withTimeout(queue.add('wake', null, JOB_OPTIONS), this.#d.timeoutMs, `wake-up for connector ${connector}`, this.#d.redisUrl);
    } catch (e) {
      throw unreachable(`could not wake the committer of connector ${connector}`, this.#d.redisUrl, e);
    }
  }

  async listen(connector: string, handler: () => void): Promise<{ close(): Promise<void> }> {
    if (this.#closed) throw new Error('commit wake-ups are closed');
    const log = this.#d.log.child({ connector });
    const worker = new Worker(
      wakeQueueName(connector),
      async () => {
        try {
          handler();
        } catch (e) {
          // The wake-up is spent either way: a failing handler must not be retried by BullMQ in a loop.
          log.error('a commit wake-up handler failed', { error: errorMessage(e) });
        }
      },
      { connection: this.#d.connection, prefix: this.#d.prefix, concurrency: 1, autorun: true },
    );
    worker.on('error', (e) => this.#logError('commit wake-up listener', e));
    this.#workers.add(worker);
    try {
      await withTimeout(worker.waitUntilReady(), this.#d.timeoutMs, `listening for wake-ups of connector ${connector}`, this.#d.redisUrl);
    } catch (e) {
      this.#workers.delete(worker);
      await worker.close(true);
      throw e;
    }
    let closing: Promise<void> | undefined;
    return {
      close: () => {
        closing ??= closeBounded(worker, this.#d.timeoutMs).finally(() => this.#workers.delete(worker));
        return closing;
      },
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const workers = [...this.#workers].map((w) => closeBounded(w, this.#d.timeoutMs));
    const queues = [...this.#queues.values()].map((q) => Promise.race([q.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, this.#d.timeoutMs).unref())]));
    this.#workers.clear();
    this.#queues.clear();
    await Promise.all([...workers, ...queues]);
  }

  #queue(connector: string): Queue {
    if (this.#closed) throw new Error('commit wake-ups are closed');
    let queue = this.#queues.get(connector);
    if (queue === undefined) {
      queue = new Queue(wakeQueueName(connector), { connection: this.#d.connection, prefix: this.#d.prefix });
      queue.on('error', (e) => this.#logError('commit wake-up queue', e));
      this.#queues.set(connector, queue);
    }
    return queue;
  }

  #logError(what: string, error: unknown): void {
    const now = performance.now();
    if (now - this.#lastErrorLog < ERROR_LOG_INTERVAL_MS) return;
    this.#lastErrorLog = now;
    this.#d.log.warn(`${what}: Redis error (wake-ups wait; committers still run at their commit interval)`, { redis: this.#d.redisUrl, error: errorMessage(error) });
  }
}

/**
 * Closes a BullMQ worker gracefully, or by force after `ms`: a graceful close waits on Redis (its blocking
 * connection, the job in hand), and while Redis is away that wait would hold up whoever closes it — a
 * committer handing over its seat, a worker stopping.
 */
async function closeBounded(worker: Worker, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  const how = await Promise.race([worker.close().then(() => 'closed' as const, () => 'closed' as const), late]);
  clearTimeout(timer);
  if (how === 'late') await Promise.race([worker.close(true).catch(() => undefined), new Promise((resolve) => setTimeout(resolve, ms).unref())]);
}
