/**
 * Notices when this process did not run (SIGSTOP, a frozen VM, a host suspended): a timer due every
 * PERIOD_MS that fires much later. The producer asks whether its process was frozen while its transaction
 * was open (producer.ts: a zombie's old transaction is not the coordinator's time-out).
 *
 * Owns: the timer and the recent stalls. Must not: keep the process alive (the timer is unref'd).
 */

/** A timer this much later than due is a stall, not jitter (GC pauses and a busy loop stay far below). */
const STALL_MS = 1_000;
const KEPT = 16;

export class StallWatch {
  static readonly PERIOD_MS = 500;
  readonly #stalls: { endedAt: number; ms: number }[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor() {
    let due = performance.now() + StallWatch.PERIOD_MS;
    this.#timer = setInterval(() => {
      const now = performance.now();
      const late = now - due;
      if (late >= STALL_MS) {
        this.#stalls.push({ endedAt: now, ms: late });
        if (this.#stalls.length > KEPT) this.#stalls.shift();
      }
      due = now + StallWatch.PERIOD_MS;
    }, StallWatch.PERIOD_MS);
    this.#timer.unref();
  }

  /** The longest stall that ended after `t` (a performance.now() time), 0 when none. A stall still going on cannot be seen: nothing runs. */
  longestSince(t: number): number {
    return this.#stalls.filter((s) => s.endedAt > t).reduce((m, s) => Math.max(m, s.ms), 0);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
