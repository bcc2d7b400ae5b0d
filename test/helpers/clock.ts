/**
 * A RetryClock for tests: `sleep` returns at once and moves `now` forward by the wait, so back-off
 * schedules and total time-outs run in microseconds and every wait is recorded.
 */
import type { RetryClock } from '../../src/core/retry.ts';

export class FakeClock implements RetryClock {
  nowMs: number;
  /** Every wait asked for, in order. */
  readonly sleeps: number[] = [];
  /** Called during each wait (after time moved): a test can abort a signal or flip a stop flag here. */
  onSleep: ((ms: number) => void) | undefined;

  constructor(startMs = 0) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    this.sleeps.push(ms);
    this.nowMs += ms;
    this.onSleep?.(ms);
    signal?.throwIfAborted();
  }
}
