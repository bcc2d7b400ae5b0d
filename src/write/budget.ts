/**
 * A memory budget shared by all open writers of one task: when the bytes they hold exceed the limit,
 * the largest holders are made to flush early (their buffered rows become a row group, smaller than
 * planned) or to close their file (under the `roll` policy, or when most of what a writer holds is its
 * upload's). Every forced flush and roll is counted.
 *
 * What it counts (review O2), per writer, reported every 256 records, after every flush and whenever its
 * upload's buffers change:
 * - `buffers`: the JS column buffers (data plus kept capacity);
 * - `upload`: what the object store holds of the writer's open file and has not stored yet (S3: the bytes
 *   waiting for a 5+ MiB part, and the parts in flight; a file under the multipart threshold is held
 *   whole until it closes — so with a high fan-out this is what grows, and only closing files frees it);
 * - `encode`: what encoding its buffered rows as one row group will take in parquet-wasm's memory.
 * The encoder (one wasm instance per process) encodes one row group at a time, and its linear memory
 * grows to the largest one and never shrinks: it counts once, as the larger of its current size
 * (`encoderMemory`) and the largest `encode` of a writer. Relief can shrink only the writers' part; a
 * budget that the encoder alone fills makes every writer flush at every check (small row groups, memory
 * still bounded), and the charge keeps row groups from growing the encoder that far in the first place.
 * Must not: flush a writer that is mid-record (flushes happen only between records, from the writer's
 * own `flushIfNeeded`, which the decoder calls after `endRecord`).
 */
import { wasmMemoryBytes } from './parquet.ts';

export type PressurePolicy = 'flush' | 'roll';

/** What the budget needs from a writer. */
export interface BudgetMember {
  /**
   * Flushes because the budget is over, and closes the file under `roll` or when its upload holds more
   * than its buffers (flushing would only move bytes into the upload). Resolves true when it closed the file.
   */
  forceFlush(policy: PressurePolicy): Promise<boolean>;
}

/** The bytes one writer holds, by kind (see the module header). */
export interface HeldBytes {
  readonly buffers: number;
  readonly upload: number;
  readonly encode: number;
}

export interface BudgetMetrics {
  readonly limitBytes: number;
  /** Everything counted: writers' buffers and uploads, plus the encoder. */
  readonly heldBytes: number;
  readonly bufferBytes: number;
  readonly uploadBytes: number;
  readonly encoderBytes: number;
  readonly members: number;
  /** Flushes (or rolls) the budget forced. */
  readonly forcedFlushes: number;
  readonly forcedRolls: number;
}

const NOTHING: HeldBytes = { buffers: 0, upload: 0, encode: 0 };

export class WriteMemoryBudget {
  readonly limitBytes: number;
  readonly policy: PressurePolicy;
  /** Relief stops once held bytes are at or below this fraction of the limit (hysteresis). */
  readonly lowWater: number;
  forcedFlushes = 0;
  forcedRolls = 0;
  private readonly held = new Map<BudgetMember, HeldBytes>();
  private readonly encoderMemory: () => number;
  private buffers = 0;
  private uploads = 0;
  private relieving: Promise<void> | undefined;

  /** `encoderMemory`: the encoder's current memory (default: parquet-wasm's linear memory). */
  constructor(limitBytes: number, options: { policy?: PressurePolicy; lowWater?: number; encoderMemory?: () => number } = {}) {
    if (!(limitBytes > 0)) throw new RangeError('memory budget must be positive');
    this.limitBytes = limitBytes;
    this.policy = options.policy ?? 'flush';
    this.lowWater = options.lowWater ?? 0.75;
    this.encoderMemory = options.encoderMemory ?? wasmMemoryBytes;
  }

  /** The encoder's share: its memory now, or the largest row group a writer is about to encode. */
  get encoderBytes(): number {
    let most = this.encoderMemory();
    for (const h of this.held.values()) if (h.encode > most) most = h.encode;
    return most;
  }

  get heldBytes(): number {
    return this.buffers + this.uploads + this.encoderBytes;
  }

  get over(): boolean {
    return this.heldBytes > this.limitBytes;
  }

  report(member: BudgetMember, bytes: HeldBytes): void {
    const prev = this.held.get(member) ?? NOTHING;
    this.held.set(member, bytes);
    this.buffers += bytes.buffers - prev.buffers;
    this.uploads += bytes.upload - prev.upload;
  }

  remove(member: BudgetMember): void {
    const prev = this.held.get(member);
    if (prev === undefined) return;
    this.held.delete(member);
    this.buffers -= prev.buffers;
    this.uploads -= prev.upload;
  }

  /** Forces the largest holders to flush until held bytes are back under the low-water mark. */
  relieve(): Promise<void> {
    this.relieving ??= this.doRelieve().finally(() => {
      this.relieving = undefined;
    });
    return this.relieving;
  }

  metrics(): BudgetMetrics {
    return {
      limitBytes: this.limitBytes,
      heldBytes: this.heldBytes,
      bufferBytes: this.buffers,
      uploadBytes: this.uploads,
      encoderBytes: this.encoderBytes,
      members: this.held.size,
      forcedFlushes: this.forcedFlushes,
      forcedRolls: this.forcedRolls,
    };
  }

  private async doRelieve(): Promise<void> {
    const tried = new Set<BudgetMember>();
    while (this.heldBytes > this.limitBytes * this.lowWater) {
      let victim: BudgetMember | undefined;
      let most = 0;
      for (const [m, h] of this.held) {
        const b = h.buffers + h.upload + h.encode;
        if (b > most && !tried.has(m)) {
          most = b;
          victim = m;
        }
      }
      if (victim === undefined) return;
      tried.add(victim);
      this.forcedFlushes++;
      if (await victim.forceFlush(this.policy)) this.forcedRolls++;
    }
  }
}
