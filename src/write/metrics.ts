/**
 * Iceberg column metrics computed from the values we buffered (iceberg-writer.md §1.6): value, null and
 * NaN counts and min/max per Iceberg's ordering, accumulated row group by row group as each one is
 * sealed, then serialised as lower/upper bounds (iceberg/bounds.ts) under the column's metrics mode.
 *
 * Why from our buffers and not the Parquet footer: footer statistics may hold NaN, truncate without
 * rounding up, and order -0.0/+0.0 loosely. Why at seal rather than per append: the same values, one
 * tight loop per column over typed arrays, and a record the decoder aborts half-way (abortRecord) never
 * reaches the metrics.
 *
 * Which leaves: primitives at the top level or inside structs get counts and bounds; leaves under a
 * list or map get column sizes only (Java ParquetMetrics). value_count includes nulls and NaNs; a leaf
 * whose parent struct is null counts as null. NaN is never a bound; -0.0 sorts before +0.0. Strings and
 * binary compare as unsigned bytes (UTF-8 byte order = code point order), uuid and fixed likewise.
 */
import { boundBytes } from '../iceberg/bounds.ts';
import type { BoundBytes, MetricsMode } from '../iceberg/bounds.ts';
import { utf8Decode } from '../iceberg/bytes.ts';
import { physicalKind } from '../iceberg/physical.ts';
import type { PrimitiveType, PrimitiveValue } from '../iceberg/types.ts';

/** min/max as the stats hold them: strings stay UTF-8 bytes until the bounds are made. */
type StatValue = boolean | number | bigint | Uint8Array;

function bit(mask: Uint8Array, i: number): number {
  return ((mask[i >>> 3] as number) >>> (i & 7)) & 1;
}

/** Counts and min/max of one leaf; `merge` combines row groups into the file's metrics. */
export abstract class LeafStats {
  valueCount = 0;
  nullCount = 0;
  nanCount = 0;
  /** Whether min/max are tracked (modes truncate and full). */
  readonly bounds: boolean;
  constructor(bounds: boolean) {
    this.bounds = bounds;
  }
  /** Adds another batch's stats of the same column (same class). */
  abstract merge(other: LeafStats): void;
  /** The smallest and largest non-null, non-NaN values, or undefined if there were none. */
  abstract min(): StatValue | undefined;
  abstract max(): StatValue | undefined;
}

/** int, date, float, double: plain numbers. */
export class NumberStats extends LeafStats {
  lo = Infinity;
  hi = -Infinity;
  seen = false;

  scan(values: Int32Array | Float32Array | Float64Array, n: number, mask: Uint8Array | null, floating: boolean): void {
    this.valueCount += n;
    let lo = this.lo;
    let hi = this.hi;
    let nulls = 0;
    let nans = 0;
    let seen = this.seen;
    const bounds = this.bounds;
    for (let i = 0; i < n; i++) {
      if (mask !== null && bit(mask, i) === 0) {
        nulls++;
        continue;
      }
      const v = values[i] as number;
      if (v !== v) {
        nans++;
        continue;
      }
      if (!bounds) continue;
      seen = true;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
      if (floating && v === 0) {
        // -0.0 < +0.0 for bounds: a -0.0 lower bound must survive a later +0.0 and vice versa.
        if (lo === 0 && Object.is(v, -0)) lo = -0;
        if (hi === 0 && !Object.is(v, -0)) hi = 0;
      }
    }
    this.lo = lo;
    this.hi = hi;
    this.seen = seen;
    this.nullCount += nulls;
    this.nanCount += nans;
  }

  merge(other: LeafStats): void {
    const o = other as NumberStats;
    this.valueCount += o.valueCount;
    this.nullCount += o.nullCount;
    this.nanCount += o.nanCount;
    if (!o.seen) return;
    if (!this.seen || o.lo < this.lo || (o.lo === 0 && this.lo === 0 && Object.is(o.lo, -0))) this.lo = o.lo;
    if (!this.seen || o.hi > this.hi || (o.hi === 0 && this.hi === 0 && Object.is(this.hi, -0))) this.hi = o.hi;
    this.seen = true;
  }
  min(): number | undefined {
    return this.seen ? this.lo : undefined;
  }
  max(): number | undefined {
    return this.seen ? this.hi : undefined;
  }
}

/** long-like columns, compared as (signed high word, unsigned low word) so no BigInt is made per value. */
export class LongStats extends LeafStats {
  minHi = 0;
  minLo = 0;
  maxHi = 0;
  maxLo = 0;
  seen = false;

  scan(words: Int32Array, n: number, mask: Uint8Array | null): void {
    this.valueCount += n;
    let nulls = 0;
    if (!this.bounds) {
      if (mask !== null) for (let i = 0; i < n; i++) nulls += 1 - bit(mask, i);
      this.nullCount += nulls;
      return;
    }
    let { minHi, minLo, maxHi, maxLo, seen } = this;
    for (let i = 0; i < n; i++) {
      if (mask !== null && bit(mask, i) === 0) {
        nulls++;
        continue;
      }
      const lo = (words[2 * i] as number) >>> 0;
      const hi = words[2 * i + 1] as number;
      if (!seen) {
        minHi = maxHi = hi;
        minLo = maxLo = lo;
        seen = true;
        continue;
      }
      if (hi < minHi || (hi === minHi && lo < minLo)) {
        minHi = hi;
        minLo = lo;
      }
      if (hi > maxHi || (hi === maxHi && lo > maxLo)) {
        maxHi = hi;
        maxLo = lo;
      }
    }
    Object.assign(this, { minHi, minLo, maxHi, maxLo, seen });
    this.nullCount += nulls;
  }

  merge(other: LeafStats): void {
    const o = other as LongStats;
    this.valueCount += o.valueCount;
    this.nullCount += o.nullCount;
    if (!o.seen) return;
    if (!this.seen || o.minHi < this.minHi || (o.minHi === this.minHi && o.minLo < this.minLo)) {
      this.minHi = o.minHi;
      this.minLo = o.minLo;
    }
    if (!this.seen || o.maxHi > this.maxHi || (o.maxHi === this.maxHi && o.maxLo > this.maxLo)) {
      this.maxHi = o.maxHi;
      this.maxLo = o.maxLo;
    }
    this.seen = true;
  }
  min(): bigint | undefined {
    return this.seen ? (BigInt(this.minHi) << 32n) + BigInt(this.minLo) : undefined;
  }
  max(): bigint | undefined {
    return this.seen ? (BigInt(this.maxHi) << 32n) + BigInt(this.maxLo) : undefined;
  }
}

export class BooleanStats extends LeafStats {
  sawFalse = false;
  sawTrue = false;

  scan(bits: Uint8Array, n: number, mask: Uint8Array | null): void {
    this.valueCount += n;
    let nulls = 0;
    for (let i = 0; i < n; i++) {
      if (mask !== null && bit(mask, i) === 0) {
        nulls++;
        continue;
      }
      if (bit(bits, i) === 1) this.sawTrue = true;
      else this.sawFalse = true;
    }
    this.nullCount += nulls;
  }
  merge(other: LeafStats): void {
    const o = other as BooleanStats;
    this.valueCount += o.valueCount;
    this.nullCount += o.nullCount;
    this.sawFalse ||= o.sawFalse;
    this.sawTrue ||= o.sawTrue;
  }
  min(): boolean | undefined {
    return this.bounds && (this.sawFalse || this.sawTrue) ? !this.sawFalse : undefined;
  }
  max(): boolean | undefined {
    return this.bounds && (this.sawFalse || this.sawTrue) ? this.sawTrue : undefined;
  }
}

/** Compares the Decimal128 values at word offsets a and b (signed 128-bit). */
function cmp128(w: Int32Array, a: number, b: number): number {
  const ha = w[a + 3] as number;
  const hb = w[b + 3] as number;
  if (ha !== hb) return ha < hb ? -1 : 1;
  for (let k = 2; k >= 0; k--) {
    const x = (w[a + k] as number) >>> 0;
    const y = (w[b + k] as number) >>> 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

function words128ToBigInt(w: Int32Array, at: number): bigint {
  return (
    (BigInt(w[at + 3] as number) << 96n) |
    (BigInt((w[at + 2] as number) >>> 0) << 64n) |
    (BigInt((w[at + 1] as number) >>> 0) << 32n) |
    BigInt((w[at] as number) >>> 0)
  );
}

export class DecimalStats extends LeafStats {
  lo: bigint | undefined;
  hi: bigint | undefined;

  scan(words: Int32Array, n: number, mask: Uint8Array | null): void {
    this.valueCount += n;
    let nulls = 0;
    let minAt = -1;
    let maxAt = -1;
    for (let i = 0; i < n; i++) {
      if (mask !== null && bit(mask, i) === 0) {
        nulls++;
        continue;
      }
      if (!this.bounds) continue;
      const at = 4 * i;
      if (minAt < 0) {
        minAt = maxAt = at;
        continue;
      }
      if (cmp128(words, at, minAt) < 0) minAt = at;
      if (cmp128(words, at, maxAt) > 0) maxAt = at;
    }
    this.nullCount += nulls;
    if (minAt >= 0) {
      const lo = words128ToBigInt(words, minAt);
      const hi = words128ToBigInt(words, maxAt);
      if (this.lo === undefined || lo < this.lo) this.lo = lo;
      if (this.hi === undefined || hi > this.hi) this.hi = hi;
    }
  }
  merge(other: LeafStats): void {
    const o = other as DecimalStats;
    this.valueCount += o.valueCount;
    this.nullCount += o.nullCount;
    if (o.lo !== undefined && (this.lo === undefined || o.lo < this.lo)) this.lo = o.lo;
    if (o.hi !== undefined && (this.hi === undefined || o.hi > this.hi)) this.hi = o.hi;
  }
  min(): bigint | undefined {
    return this.lo;
  }
  max(): bigint | undefined {
    return this.hi;
  }
}

/** Unsigned lexicographic comparison of data[a0, a1) and data[b0, b1). */
function cmpRange(d: Uint8Array, a0: number, a1: number, b0: number, b1: number): number {
  const n = Math.min(a1 - a0, b1 - b0);
  for (let k = 0; k < n; k++) {
    const x = d[a0 + k] as number;
    const y = d[b0 + k] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a1 - a0 - (b1 - b0);
}

function cmpBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let k = 0; k < n; k++) {
    const x = a[k] as number;
    const y = b[k] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** string, binary (offsets) and fixed, uuid (fixed width): min/max kept as exact copies. */
export class BytesStats extends LeafStats {
  lo: Uint8Array | undefined;
  hi: Uint8Array | undefined;

  /** `offsets` for variable width, else `width` per value. */
  scan(data: Uint8Array, offsets: Int32Array | null, width: number, n: number, mask: Uint8Array | null): void {
    this.valueCount += n;
    let nulls = 0;
    let lo0 = -1;
    let lo1 = -1;
    let hi0 = -1;
    let hi1 = -1;
    for (let i = 0; i < n; i++) {
      if (mask !== null && bit(mask, i) === 0) {
        nulls++;
        continue;
      }
      if (!this.bounds) continue;
      const s = offsets === null ? i * width : (offsets[i] as number);
      const e = offsets === null ? s + width : (offsets[i + 1] as number);
      if (lo0 < 0) {
        lo0 = hi0 = s;
        lo1 = hi1 = e;
        continue;
      }
      if (cmpRange(data, s, e, lo0, lo1) < 0) {
        lo0 = s;
        lo1 = e;
      } else if (cmpRange(data, s, e, hi0, hi1) > 0) {
        hi0 = s;
        hi1 = e;
      }
    }
    this.nullCount += nulls;
    if (lo0 >= 0) {
      // Copies (Buffer#slice would be a view into a buffer the next row group overwrites).
      const lo = Uint8Array.prototype.slice.call(data, lo0, lo1);
      const hi = Uint8Array.prototype.slice.call(data, hi0, hi1);
      if (this.lo === undefined || cmpBytes(lo, this.lo) < 0) this.lo = lo;
      if (this.hi === undefined || cmpBytes(hi, this.hi) > 0) this.hi = hi;
    }
  }
  merge(other: LeafStats): void {
    const o = other as BytesStats;
    this.valueCount += o.valueCount;
    this.nullCount += o.nullCount;
    if (o.lo !== undefined && (this.lo === undefined || cmpBytes(o.lo, this.lo) < 0)) this.lo = o.lo;
    if (o.hi !== undefined && (this.hi === undefined || cmpBytes(o.hi, this.hi) > 0)) this.hi = o.hi;
  }
  min(): Uint8Array | undefined {
    return this.lo;
  }
  max(): Uint8Array | undefined {
    return this.hi;
  }
}

export type AnyStats = NumberStats | LongStats | BooleanStats | DecimalStats | BytesStats;

/** Fresh stats for a leaf of type t (undefined under mode none). */
export function newStats(t: PrimitiveType, mode: MetricsMode): AnyStats | undefined {
  if (mode.kind === 'none') return undefined;
  const bounds = mode.kind === 'truncate' || mode.kind === 'full';
  switch (physicalKind(t)) {
    case 'boolean':
      return new BooleanStats(bounds);
    case 'int':
    case 'float':
    case 'double':
      return new NumberStats(bounds);
    case 'long':
      return new LongStats(bounds);
    case 'decimal':
      return new DecimalStats(bounds);
    case 'string':
    case 'binary':
    case 'fixed':
      return new BytesStats(bounds);
  }
}

/**
 * Lower and upper bound bytes under `mode` (Appendix D and truncate(N) by iceberg/bounds.ts); either may
 * be missing (no non-null non-NaN values, or no upper bound that can be rounded up).
 */
export function boundsOf(t: PrimitiveType, stats: AnyStats, mode: MetricsMode): BoundBytes {
  if (mode.kind !== 'truncate' && mode.kind !== 'full') return {};
  return boundBytes(t, toValue(t, stats.min()), toValue(t, stats.max()), mode);
}

function toValue(t: PrimitiveType, v: StatValue | undefined): PrimitiveValue | undefined {
  if (v === undefined) return undefined;
  // The column only ever holds valid UTF-8 (StringColumn checks appendUtf8; append encodes).
  return t.kind === 'string' ? utf8Decode(v as Uint8Array) : v;
}
