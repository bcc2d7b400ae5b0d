/**
 * The base of every column builder (see columns.ts for the append API as a whole): slot count, validity
 * bitmap, growth, truncation for `abortRecord`, byte accounting for row-group sizing and the memory
 * budget, and release after a flush forced by memory pressure.
 *
 * Owns: what all columns share, and the DataErrors a column raises for a value it refuses.
 * Must not: know any value type (the subclasses in column-primitives.ts, column-bytes.ts and
 * column-nested.ts do).
 */
import { endianness } from 'node:os';
import type * as arrow from 'apache-arrow';
import { DataError } from '../core/errors.ts';
import type { NestedKind, PhysicalKind } from '../iceberg/physical.ts';
import type { LayoutNode } from './layout.ts';

if (endianness() !== 'LE') throw new Error('the column builders assume a little-endian platform');

// Small first buffers: a task may hold hundreds of partition writers; doubling catches up within a row group.
const INITIAL_CAPACITY = 256;

export function bitmapBytes(n: number): number {
  return (n + 7) >>> 3;
}

/** Number of zero bits among the first n bits. */
export function countZeroBits(bits: Uint8Array, n: number): number {
  let ones = 0;
  const full = n >>> 3;
  for (let i = 0; i < full; i++) {
    let b = bits[i] as number;
    b = b - ((b >> 1) & 0x55);
    b = (b & 0x33) + ((b >> 2) & 0x33);
    ones += (b + (b >> 4)) & 0x0f;
  }
  for (let i = full << 3; i < n; i++) ones += ((bits[i >>> 3] as number) >> (i & 7)) & 1;
  return n - ones;
}

function requiredNull(node: LayoutNode): DataError {
  return new DataError(`required field ${node.path} (id ${node.fieldId}) is null`, { stage: 'convert',
    context: { fieldId: node.fieldId, field: node.path },
  });
}

export function badValue(node: LayoutNode, what: string): DataError {
  return new DataError(`field ${node.path} (id ${node.fieldId}): ${what}`, { stage: 'convert',
    context: { fieldId: node.fieldId, field: node.path },
  });
}

/** A column's kind is the physical kind of its Iceberg type (iceberg/physical.ts): one builder class per kind. */
export type ColumnKind = PhysicalKind | NestedKind;

export abstract class Column {
  readonly node: LayoutNode;
  readonly fieldId: number;
  abstract readonly kind: ColumnKind;
  /** Slots appended since the last seal (values and nulls). */
  length = 0;
  nullCount = 0;
  /** Validity bitmap (1 = present), only for optional fields. */
  protected validity: Uint8Array | null;
  protected cap = 0;

  constructor(node: LayoutNode) {
    this.node = node;
    this.fieldId = node.fieldId;
    this.validity = node.required ? null : new Uint8Array(0);
  }

  /** Appends a null. A required field refuses it with a DataError. */
  appendNull(): void {
    if (this.validity === null) throw requiredNull(this.node);
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    (this.validity as Uint8Array)[i >>> 3]! &= ~(1 << (i & 7));
    this.nullCount++;
    this.placeEmpty(i);
    this.length = i + 1;
  }

  /**
   * The slot of a field whose parent struct is null: a null when the field is optional, an ignored
   * placeholder when it is required (Parquet writes neither; the parent's definition level covers it).
   */
  fillAbsent(): void {
    if (this.validity !== null) {
      this.appendNull();
      return;
    }
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.placeEmpty(i);
    this.length = i + 1;
  }

  /** Drops slots from n on (abortRecord); nested columns drop the child slots those rows owned. */
  truncate(n: number): void {
    if (n < this.length) {
      this.length = n;
      if (this.validity !== null && this.nullCount > 0) this.nullCount = countZeroBits(this.validity, n);
    }
    // Always: an unfinished nested value (begin() without end()) has child slots past the last offset.
    this.truncateChildren(Math.min(n, this.length));
  }

  /** The validity bitmap when this batch has nulls, else null (all present). */
  nullBitmap(): Uint8Array | null {
    return this.validity !== null && this.nullCount > 0 ? this.validity : null;
  }

  /** Bytes of appended data (what Arrow will carry), for row-group sizing and the memory budget. */
  usedBytes(): number {
    return (this.validity === null ? 0 : bitmapBytes(this.length)) + this.dataBytes();
  }

  /** Bytes held by the buffers (capacity), including what a seal left for reuse. */
  heldBytes(): number {
    return (this.validity === null ? 0 : this.validity.byteLength) + this.capacityBytes();
  }

  /** Arrow data over views of the buffers (zero-copy); valid until the next append or reset. */
  abstract toData(): arrow.Data;

  /** Frees the buffers beyond a small initial capacity (after a flush forced by memory pressure). */
  release(): void {
    if (this.length !== 0) return;
    this.cap = 0;
    if (this.validity !== null) this.validity = new Uint8Array(0);
    this.resize(0);
    this.releaseChildren();
  }

  protected grow(min: number): void {
    const cap = Math.max(INITIAL_CAPACITY, this.cap * 2, min);
    if (this.validity !== null) {
      const v = new Uint8Array(bitmapBytes(cap));
      v.set(this.validity.subarray(0, bitmapBytes(this.length)));
      this.validity = v;
    }
    this.resize(cap);
    this.cap = cap;
  }

  protected setValid(i: number): void {
    (this.validity as Uint8Array)[i >>> 3]! |= 1 << (i & 7);
  }

  protected nullProps(): { nullCount: number; nullBitmap: Uint8Array | null } {
    const bm = this.nullBitmap();
    return { nullCount: bm === null ? 0 : this.nullCount, nullBitmap: bm === null ? null : bm.subarray(0, bitmapBytes(this.length)) };
  }

  /** Reallocates the value buffers to hold `cap` slots, keeping the first `length`. */
  protected abstract resize(cap: number): void;
  /** Writes an empty slot at i (offsets repeat, children get absent slots); i < cap. */
  protected abstract placeEmpty(i: number): void;
  protected abstract dataBytes(): number;
  protected abstract capacityBytes(): number;
  protected truncateChildren(_n: number): void {}
  protected releaseChildren(): void {}
}
