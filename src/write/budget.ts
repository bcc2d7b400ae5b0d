/**
 * A memory budget shared by all open writers of one task: when the bytes they hold exceed the limit,
 * the largest holders are made to flush early (their buffered rows become a row group, smaller than
 * planned) or, under the `roll` policy, also to close their file. Every forced flush is counted.
 *
 * What it counts: the JS buffers each writer holds (column data plus kept capacity), reported every 256
 * records and after every flush. Not counted: parquet-wasm's linear memory (one per process; it grows
 * to about the largest row group batch and never shrinks, so the per-writer buffer cap bounds it) and
 * the upload layer's part buffers.
 * Must not: flush a writer that is mid-record (flushes happen only between records, from the writer's
 * own `flushIfNeeded`, which the decoder calls after `endRecord`).
 */

export type PressurePolicy = 'flush' | 'roll';

/** What the budget needs from a writer. */
export interface BudgetMember {
  /** Flushes (and under `roll` closes the file) because the budget is over. */
  forceFlush(policy: PressurePolicy): Promise<void>;
}

export interface BudgetMetrics {
  readonly limitBytes: number;
  readonly heldBytes: number;
  readonly members: number;
  /** Flushes (or rolls) the budget forced. */
  readonly forcedFlushes: number;
  readonly forcedRolls: number;
}

export class WriteMemoryBudget {
  readonly limitBytes: number;
  readonly policy: PressurePolicy;
  /** Relief stops once held bytes are at or below this fraction of the limit (hysteresis). */
  readonly lowWater: number;
  forcedFlushes = 0;
  forcedRolls = 0;
  private readonly held = new Map<BudgetMember, number>();
  private total = 0;
  private relieving: Promise<void> | undefined;

  constructor(limitBytes: number, options: { policy?: PressurePolicy; lowWater?: number } = {}) {
    if (!(limitBytes > 0)) throw new RangeError('memory budget must be positive');
    this.limitBytes = limitBytes;
    this.policy = options.policy ?? 'flush';
    this.lowWater = options.lowWater ?? 0.75;
  }

  get heldBytes(): number {
    return this.total;
  }

  get over(): boolean {
    return this.total > this.limitBytes;
  }

  report(member: BudgetMember, bytes: number): void {
    const prev = this.held.get(member) ?? 0;
    this.held.set(member, bytes);
    this.total += bytes - prev;
  }

  remove(member: BudgetMember): void {
    const prev = this.held.get(member);
    if (prev === undefined) return;
    this.held.delete(member);
    this.total -= prev;
  }

  /** Forces the largest holders to flush until held bytes are back under the low-water mark. */
  relieve(): Promise<void> {
    this.relieving ??= this.doRelieve().finally(() => {
      this.relieving = undefined;
    });
    return this.relieving;
  }

  metrics(): BudgetMetrics {
    return { limitBytes: this.limitBytes, heldBytes: this.total, members: this.held.size, forcedFlushes: this.forcedFlushes, forcedRolls: this.forcedRolls };
  }

  private async doRelieve(): Promise<void> {
    const tried = new Set<BudgetMember>();
    while (this.total > this.limitBytes * this.lowWater) {
      let victim: BudgetMember | undefined;
      let most = 0;
      for (const [m, b] of this.held) {
        if (b > most && !tried.has(m)) {
          most = b;
          victim = m;
        }
      }
      if (victim === undefined) return;
      tried.add(victim);
      this.forcedFlushes++;
      if (this.policy === 'roll') this.forcedRolls++;
      await victim.forceFlush(this.policy);
    }
  }
}
