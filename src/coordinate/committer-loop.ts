/**
 * When a connector's committer runs its rounds: every commit interval, soon after any task of the
 * connector announced (so freshness is one task cycle plus one catalog commit, not two intervals), and
 * right after a round that is still catching up on a control-topic backlog. "Soon" is a short delay, so
 * that tasks whose cycles end together land in one round; but once every task that announced before the
 * previous round has announced again, there is nothing left to wait for and the round starts at once (with
 * one task, every round: the delay is not part of its commit latency). A task's announcement is readable
 * only once its transaction's commit markers are written, which the broker does after the task's commit
 * returned: a round started at once that commits nothing is tried again after the delay.
 * A failed round is retried after a back-off (growing to 30 s), at once when it is over; a task's
 * announcement during the back-off cuts it short and resets it (see `pause`).
 * `stop()` ends the loop and runs one last round, so the tasks' final cycles (committed when they left
 * the group) become snapshots before the process exits.
 *
 * Owns: the schedule and the retry of failed rounds. Must not: plan or commit (ConnectorCommitter does).
 */
import { errorMessage } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { Backoff } from '../core/retry.ts';
import type { BackoffBounds } from '../core/retry.ts';

/** What the loop drives (ConnectorCommitter). */
export interface CommitRounds {
  /** The commits the round made. */
  round(): Promise<readonly unknown[]>;
  /** The round read a bounded step of a backlog: the next round follows at once, not an interval later. */
  behind?(): boolean;
}

export interface CommitterLoopOptions {
  readonly intervalMs: number;
  readonly log: Logger;
  /** Delay between an announcement and the round it triggers (more tasks' cycles land in one round). */
  readonly wakeDelayMs?: number;
  /** Pauses after failed rounds (core/retry.ts: growing with consecutive failures, with jitter). */
  readonly retry?: BackoffBounds;
  /** Called after every round, committed or failed (the worker checks the connector's health there). */
  readonly afterRound?: () => void;
  /** Numbers in [0, 1) for the back-off's jitter (tests pin it). */
  readonly random?: () => number;
  /** The clock of `failing` (tests pin it; default Date.now). */
  readonly nowMs?: () => number;
}

const WAKE_DELAY_MS = 100;
/** The task id of wakes that name none (task ids are 0 and up). */
const ELSEWHERE = -1;
const ROUND_BACKOFF: BackoffBounds = { initialDelayMs: 2_000, maxDelayMs: 30_000 };

export class CommitterLoop {
  private readonly committer: CommitRounds;
  private readonly o: CommitterLoopOptions;
  private readonly backoff: Backoff;
  private stopping = false;
  /**
   * An announcement came during a round or a back-off, possibly after the round read the control topic:
   * the next round then follows as soon as a wake outside a round would, not a whole interval later.
   */
  private wokenMeanwhile = false;
  /** A failed round's back-off is over: the retry starts at once (the back-off was its wait, not an interval more). */
  private retryNow = false;
  /**
   * The tasks that announced since the current round began, and those that announced before it. A wake
   * without a task id (a task of another worker, through the queue) counts as one task, ELSEWHERE.
   */
  private announcedSince = new Set<number>();
  private announcedBefore: ReadonlySet<number> = new Set();
  private wakeHandler: () => void = () => undefined;
  private readonly loop: Promise<void>;
  /**
   * Consecutive failed rounds, for the connector's status (cleared by a round that succeeds).
   * `unappliedSinceMs`: the start of the last round that got through (or of the loop): announcements made
   * since may all be unapplied, so the worker compares that age with the control topic's retention (N4).
   */
  failing: { readonly sinceMs: number; readonly unappliedSinceMs: number; count: number; error: string } | undefined;
  /** When the last round that got through started (the loop's start until one did). */
  private lastGoodRoundMs: number;
  private readonly now: () => number;

  constructor(committer: CommitRounds, options: CommitterLoopOptions) {
    this.committer = committer;
    this.o = options;
    this.backoff = new Backoff(options.retry ?? ROUND_BACKOFF, options.random);
    this.now = options.nowMs ?? Date.now;
    this.lastGoodRoundMs = this.now();
    this.loop = this.run();
  }

  /** A task announced (its id, when known): run a round soon. */
  wake(taskId?: number): void {
    this.announcedSince.add(taskId ?? ELSEWHERE);
    this.wakeHandler();
  }

  /** Every task that announced before the last round has announced again: no other cycle is expected. */
  private allAnnounced(): boolean {
    if (this.announcedBefore.size === 0) return false;
    for (const id of this.announcedBefore) if (!this.announcedSince.has(id)) return false;
    return true;
  }

  /** Ends the loop after the round under way, then runs a last round (its failure is logged, not thrown). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeHandler();
    await this.loop;
    try {
      await this.committer.round();
    } catch (e) {
      this.o.log.warn('last committer round failed; the next start applies the announcements', { error: errorMessage(e) });
    }
  }

  private async run(): Promise<void> {
    const wakeDelay = this.o.wakeDelayMs ?? WAKE_DELAY_MS;
    while (!this.stopping) {
      /** The round starts without the wake delay: every task expected announced. */
      let atOnce = false;
      await new Promise<void>((resolve) => {
        const start = (ms: number): void => {
          atOnce = ms === 0 && !this.stopping;
          setTimeout(resolve, ms);
        };
        const first = this.retryNow ? 0 : this.wokenMeanwhile ? (this.allAnnounced() ? 0 : wakeDelay) : this.o.intervalMs;
        atOnce = this.wokenMeanwhile && first === 0;
        this.wokenMeanwhile = false;
        this.retryNow = false;
        const timer = setTimeout(resolve, first);
        this.wakeHandler = () => {
          clearTimeout(timer);
          start(this.stopping || this.allAnnounced() ? 0 : wakeDelay);
        };
      });
      if (this.announcedSince.size > 0) {
        this.announcedBefore = this.announcedSince;
        this.announcedSince = new Set();
      }
      this.wakeHandler = () => {
        this.wokenMeanwhile = true;
      };
      if (this.stopping) break;
      const roundStartMs = this.now();
      try {
        const made = await this.committer.round();
        this.backoff.reset();
        this.failing = undefined;
        this.lastGoodRoundMs = roundStartMs;
        if (this.committer.behind?.() === true || (atOnce && made.length === 0)) this.wokenMeanwhile = true;
        this.afterRound();
      } catch (e) {
        this.failing = { sinceMs: this.failing?.sinceMs ?? this.now(), unappliedSinceMs: this.lastGoodRoundMs, count: (this.failing?.count ?? 0) + 1, error: errorMessage(e) };
        this.afterRound();
        const delay = this.backoff.next();
        this.o.log.warn('committer round failed; retrying', { error: errorMessage(e), consecutive: this.backoff.count, retryInMs: delay });
        await this.pause(delay);
      }
    }
  }

  private afterRound(): void {
    try {
      this.o.afterRound?.();
    } catch (e) {
      this.o.log.error('after-round check failed', { error: errorMessage(e) });
    }
  }

  /**
   * Waits out a back-off, then the retry follows at once. `stop()` cuts it short, and so does an
   * announcement: a task's transaction committed after the round failed, so Kafka answers again (a broker
   * restart is the usual cause of failed rounds) — waiting out a back-off grown over a long outage (up to
   * its maximum, 30 s) would hold the first commit after it back that long. The back-off then starts
   * afresh, and the round follows as any announcement's does (after the wake delay). A failure that
   * persists (the catalog still away) fails once per announcement at most, no more often than rounds run.
   */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.retryNow = true;
        resolve();
      }, ms);
      this.wakeHandler = () => {
        this.wokenMeanwhile = true;
        if (!this.stopping) this.backoff.reset();
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
