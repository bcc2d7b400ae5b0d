/**
 * When a connector's committer runs its rounds: every commit interval, soon after any task of the
 * connector announced (so freshness is one task cycle plus one catalog commit, not two intervals), and
 * right after a round that is still catching up on a control-topic backlog.
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
  round(): Promise<unknown>;
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
}

const WAKE_DELAY_MS = 100;
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
  private wakeHandler: () => void = () => undefined;
  private readonly loop: Promise<void>;
  /** Consecutive failed rounds, for the connector's status (cleared by a round that succeeds). */
  failing: { readonly sinceMs: number; count: number; error: string } | undefined;

  constructor(committer: CommitRounds, options: CommitterLoopOptions) {
    this.committer = committer;
    this.o = options;
    this.backoff = new Backoff(options.retry ?? ROUND_BACKOFF);
    this.loop = this.run();
  }

  /** A task announced: run a round soon. */
  wake(): void {
    this.wakeHandler();
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
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.wokenMeanwhile ? wakeDelay : this.o.intervalMs);
        this.wokenMeanwhile = false;
        this.wakeHandler = () => {
          clearTimeout(timer);
          setTimeout(resolve, this.stopping ? 0 : wakeDelay);
        };
      });
      this.wakeHandler = () => {
        this.wokenMeanwhile = true;
      };
      if (this.stopping) break;
      try {
        await this.committer.round();
        this.backoff.reset();
        this.failing = undefined;
        if (this.committer.behind?.() === true) this.wokenMeanwhile = true;
        this.afterRound();
      } catch (e) {
        this.failing = { sinceMs: this.failing?.sinceMs ?? Date.now(), count: (this.failing?.count ?? 0) + 1, error: errorMessage(e) };
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

  /** Waits out a back-off; `stop()` cuts it short (an announcement does not: it cannot mend a failure). */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeHandler = () => {
        this.wokenMeanwhile = true;
        if (!this.stopping) return;
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

