/**
 * Column builders: the columnar append API a decoder writes into, one object per Iceberg field, obtained
 * once and reused for every record, row group and file. Values land in growable typed arrays (Arrow's
 * physical layout), so a sealed row group becomes Arrow data with `makeData` over views of these arrays,
 * without a per-record JS object anywhere.
 *
 * Owns: physical layout (typed arrays, UTF-8 bytes + Int32 offsets, fixed-width bytes, little-endian
 * Decimal128 words, validity bitmaps, list/map offsets), value checks a column can make cheaply (int32
 * range, int64 range, decimal precision, fixed width, UTF-8), truncation for `abortRecord`.
 * Must not: compute metrics (metrics.ts scans the sealed buffers) or know about files.
 *
 * Nulls: `appendNull()` on a required field is a DataError. When a struct is null, each child gets a
 * slot too (null if optional, an ignored placeholder if required) so every struct child stays row
 * aligned; a null or empty list/map adds no child slots. Nested values follow begin()/end():
 *   struct.begin(); child.append(...); ...; struct.end();   // end() nulls optional children left out
 *   list.begin(); list.element.append(...) x n; list.end();
 *   map.begin(); map.key.append(k); map.value.append(v) x n; map.end();
 *
 * NOTE: the fixed-width columns (int, long, float, double) repeat the same few lines on purpose: one class
 * per typed array keeps each hot `append` monomorphic, where a shared generic base would make its store
 * into `values` polymorphic across Int32/Float32/Float64 arrays.
 */
import { isUtf8 } from 'node:buffer';
import { endianness } from 'node:os';
import * as arrow from 'apache-arrow';
import { DataError, FatalError } from '../core/errors.ts';
import type { LayoutNode } from './layout.ts';

if (endianness() !== 'LE') throw new Error('the column builders assume a little-endian platform');

// Small first buffers: a task may hold hundreds of partition writers; doubling catches up within a row group.
const INITIAL_CAPACITY = 256;
const MAX_BYTES = 0x7fff_ffff; // Arrow Utf8/Binary offsets are int32

const TWO_32 = 4294967296;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

function bitmapBytes(n: number): number {
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
  return new DataError(`required field ${node.path} (id ${node.fieldId}) is null`, {
    context: { fieldId: node.fieldId, field: node.path },
  });
}

function badValue(node: LayoutNode, what: string): DataError {
  return new DataError(`field ${node.path} (id ${node.fieldId}): ${what}`, {
    context: { fieldId: node.fieldId, field: node.path },
  });
}

export type ColumnKind =
  | 'boolean'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'decimal'
  | 'string'
  | 'binary'
  | 'fixed'
  | 'struct'
  | 'list'
  | 'map';

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

// ---------------------------------------------------------------------------------------------------
// Fixed-width primitives
// ---------------------------------------------------------------------------------------------------

/** boolean */
export class BooleanColumn extends Column {
  readonly kind = 'boolean';
  bits = new Uint8Array(0);

  append(v: boolean): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    if (v) this.bits[i >>> 3]! |= 1 << (i & 7);
    else this.bits[i >>> 3]! &= ~(1 << (i & 7));
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const b = new Uint8Array(bitmapBytes(cap));
    b.set(this.bits.subarray(0, Math.min(bitmapBytes(this.length), b.length)));
    this.bits = b;
  }
  protected placeEmpty(): void {}
  protected dataBytes(): number {
    return bitmapBytes(this.length);
  }
  protected capacityBytes(): number {
    return this.bits.byteLength;
  }
  toData(): arrow.Data {
    const n = this.length;
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Bool, length: n, ...this.nullProps(), data: this.bits.subarray(0, bitmapBytes(n)) });
  }
}

/** int and date (days since 1970-01-01). */
export class IntColumn extends Column {
  readonly kind = 'int';
  values = new Int32Array(0);

  append(v: number): void {
    if ((v | 0) !== v) throw badValue(this.node, `${v} is not a 32-bit integer`);
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.values[i] = v;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const a = new Int32Array(cap);
    a.set(this.values.subarray(0, Math.min(this.length, cap)));
    this.values = a;
  }
  protected placeEmpty(): void {}
  protected dataBytes(): number {
    return this.length * 4;
  }
  protected capacityBytes(): number {
    return this.values.byteLength;
  }
  toData(): arrow.Data {
    const n = this.length;
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Int32, length: n, ...this.nullProps(), data: this.values.subarray(0, n) });
  }
}

/**
 * long, time (µs since midnight), timestamp/timestamptz (µs since epoch), timestamp_ns/timestamptz_ns.
 * `appendNumber` takes a safe integer and writes the two 32-bit words without creating a BigInt.
 */
export class LongColumn extends Column {
  readonly kind = 'long';
  values = new BigInt64Array(0);
  /** The same buffer as two int32 words per value, little-endian: [lo, hi]. */
  words = new Int32Array(0);

  append(v: bigint): void {
    if (v < INT64_MIN || v > INT64_MAX) throw badValue(this.node, `${v} does not fit in 64 bits`);
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.values[i] = v;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  appendNumber(v: number): void {
    if (!Number.isSafeInteger(v)) throw badValue(this.node, `${v} is not a safe integer (use append with a bigint)`);
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    const hi = Math.floor(v / TWO_32);
    this.words[2 * i] = v - hi * TWO_32; // ToInt32 keeps the low 32 bits
    this.words[2 * i + 1] = hi;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const a = new BigInt64Array(cap);
    a.set(this.values.subarray(0, Math.min(this.length, cap)));
    this.values = a;
    this.words = new Int32Array(a.buffer);
  }
  protected placeEmpty(): void {}
  protected dataBytes(): number {
    return this.length * 8;
  }
  protected capacityBytes(): number {
    return this.values.byteLength;
  }
  toData(): arrow.Data {
    const n = this.length;
    const type = this.node.arrowField.type as arrow.Int64;
    return arrow.makeData({ type, length: n, ...this.nullProps(), data: this.values.subarray(0, n) });
  }
}

/** float (stored as float32: the bounds and the file carry the rounded value). */
export class FloatColumn extends Column {
  readonly kind = 'float';
  values = new Float32Array(0);

  append(v: number): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.values[i] = v;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const a = new Float32Array(cap);
    a.set(this.values.subarray(0, Math.min(this.length, cap)));
    this.values = a;
  }
  protected placeEmpty(): void {}
  protected dataBytes(): number {
    return this.length * 4;
  }
  protected capacityBytes(): number {
    return this.values.byteLength;
  }
  toData(): arrow.Data {
    const n = this.length;
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Float32, length: n, ...this.nullProps(), data: this.values.subarray(0, n) });
  }
}

/** double */
export class DoubleColumn extends Column {
  readonly kind = 'double';
  values = new Float64Array(0);

  append(v: number): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.values[i] = v;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const a = new Float64Array(cap);
    a.set(this.values.subarray(0, Math.min(this.length, cap)));
    this.values = a;
  }
  protected placeEmpty(): void {}
  protected dataBytes(): number {
    return this.length * 8;
  }
  protected capacityBytes(): number {
    return this.values.byteLength;
  }
  toData(): arrow.Data {
    const n = this.length;
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Float64, length: n, ...this.nullProps(), data: this.values.subarray(0, n) });
  }
}

const POW10 = Array.from({ length: 39 }, (_, i) => 10n ** BigInt(i));

/**
 * decimal(P, S) as Arrow Decimal128: the unscaled value as 128-bit two's complement, little-endian, in
 * four int32 words. Values must fit the precision (|unscaled| < 10^P), as Iceberg requires.
 */
export class DecimalColumn extends Column {
  readonly kind = 'decimal';
  readonly precision: number;
  readonly scale: number;
  words = new Int32Array(0);
  private readonly numberLimit: number;
  private readonly bigLimit: bigint;

  constructor(node: LayoutNode, precision: number, scale: number) {
    super(node);
    this.precision = precision;
    this.scale = scale;
    this.numberLimit = precision >= 16 ? Number.MAX_SAFE_INTEGER + 1 : 10 ** precision;
    this.bigLimit = POW10[precision] as bigint;
  }

  /** The unscaled value as a safe integer (e.g. cents for decimal(10, 2)). */
  appendUnscaledNumber(v: number): void {
    if (!Number.isSafeInteger(v)) throw badValue(this.node, `${v} is not a safe integer (use appendUnscaled with a bigint)`);
    if (v >= this.numberLimit || v <= -this.numberLimit) throw badValue(this.node, `unscaled ${v} exceeds decimal(${this.precision}, ${this.scale})`);
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    const w = this.words;
    const hi = Math.floor(v / TWO_32);
    const k = 4 * i;
    w[k] = v - hi * TWO_32;
    w[k + 1] = hi;
    const sign = v < 0 ? -1 : 0;
    w[k + 2] = sign;
    w[k + 3] = sign;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  /** The unscaled value as a bigint. */
  appendUnscaled(v: bigint): void {
    if (v >= -9007199254740991n && v <= 9007199254740991n) {
      this.appendUnscaledNumber(Number(v));
      return;
    }
    if (v >= this.bigLimit || v <= -this.bigLimit) throw badValue(this.node, `unscaled ${v} exceeds decimal(${this.precision}, ${this.scale})`);
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    const u = BigInt.asUintN(128, v);
    const k = 4 * i;
    const w = this.words;
    w[k] = Number(u & 0xffffffffn);
    w[k + 1] = Number((u >> 32n) & 0xffffffffn);
    w[k + 2] = Number((u >> 64n) & 0xffffffffn);
    w[k + 3] = Number(u >> 96n);
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  /** Big-endian two's complement bytes (Avro `decimal` on bytes or fixed), any length. */
  appendBigEndian(bytes: Uint8Array, start = 0, end = bytes.length): void {
    const n = end - start;
    if (n === 0) {
      this.appendUnscaledNumber(0);
      return;
    }
    if (n <= 6) {
      let v = (bytes[start] as number) & 0x80 ? -1 : 0;
      // Starting from -1 sign-extends a negative value: -1 * 256^n + unsigned bytes = the signed value.
      for (let j = start; j < end; j++) v = v * 256 + (bytes[j] as number);
      this.appendUnscaledNumber(v);
      return;
    }
    let u = 0n;
    for (let j = start; j < end; j++) u = (u << 8n) | BigInt(bytes[j] as number);
    if ((bytes[start] as number) & 0x80) u -= 1n << BigInt(8 * n);
    this.appendUnscaled(u);
  }

  protected resize(cap: number): void {
    const a = new Int32Array(cap * 4);
    a.set(this.words.subarray(0, Math.min(this.length, cap) * 4));
    this.words = a;
  }
  protected placeEmpty(): void {}
  protected dataBytes(): number {
    return this.length * 16;
  }
  protected capacityBytes(): number {
    return this.words.byteLength;
  }
  toData(): arrow.Data {
    const n = this.length;
    const data = new Uint32Array(this.words.buffer, 0, n * 4);
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Decimal, length: n, ...this.nullProps(), data });
  }
}

// ---------------------------------------------------------------------------------------------------
// Variable-width and fixed-width bytes
// ---------------------------------------------------------------------------------------------------

/** UTF-8 (string) or raw (binary) values: bytes in one buffer, Int32 offsets (Arrow Utf8/Binary). */
abstract class BytesColumn extends Column {
  offsets = new Int32Array(1);
  data: Buffer = Buffer.allocUnsafeSlow(0);

  protected ensureData(need: number): void {
    if (need <= this.data.length) return;
    if (need > MAX_BYTES) {
      throw new FatalError(`column ${this.node.path}: more than 2 GiB of bytes in one row group`, { context: { fieldId: this.fieldId } });
    }
    const size = Math.min(MAX_BYTES, Math.max(need, this.data.length * 2, 4 * 1024));
    const d = Buffer.allocUnsafeSlow(size);
    this.data.copy(d, 0, 0, this.offsets[this.length] as number);
    this.data = d;
  }

  protected pushBytes(src: Uint8Array, start: number, end: number): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    const pos = this.offsets[i] as number;
    const n = end - start;
    if (pos + n > this.data.length) this.ensureData(pos + n);
    const d = this.data;
    if (n <= 32) for (let j = 0; j < n; j++) d[pos + j] = src[start + j] as number;
    else d.set(src.subarray(start, end), pos);
    this.offsets[i + 1] = pos + n;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const o = new Int32Array(cap + 1);
    o.set(this.offsets.subarray(0, Math.min(this.length, cap) + 1));
    this.offsets = o;
    if (cap === 0) this.data = Buffer.allocUnsafeSlow(0);
  }
  protected placeEmpty(i: number): void {
    this.offsets[i + 1] = this.offsets[i] as number;
  }
  protected dataBytes(): number {
    return (this.offsets[this.length] as number) + 4 * (this.length + 1);
  }
  protected capacityBytes(): number {
    return this.offsets.byteLength + this.data.byteLength;
  }
  protected bytesData(): { length: number; valueOffsets: Int32Array; data: Uint8Array } {
    const n = this.length;
    const end = this.offsets[n] as number;
    return { length: n, valueOffsets: this.offsets.subarray(0, n + 1), data: new Uint8Array(this.data.buffer, this.data.byteOffset, end) };
  }
}

/** string: UTF-8. `append` encodes a JS string (ASCII fast path); `appendUtf8` copies validated UTF-8 bytes. */
export class StringColumn extends BytesColumn {
  readonly kind = 'string';

  append(s: string): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    let pos = this.offsets[i] as number;
    const n = s.length;
    if (pos + 3 * n > this.data.length) this.ensureData(pos + 3 * n);
    const d = this.data;
    let j = 0;
    if (n <= 64) {
      for (; j < n; j++) {
        const c = s.charCodeAt(j);
        if (c >= 0x80) break;
        d[pos + j] = c;
      }
    }
    // Lone surrogates become U+FFFD: the column stays valid UTF-8.
    pos += j === n ? n : d.write(s, pos);
    this.offsets[i + 1] = pos;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  /** UTF-8 bytes (e.g. straight from an Avro or Protobuf payload); invalid UTF-8 is a DataError. */
  appendUtf8(src: Uint8Array, start = 0, end = src.length): void {
    let ascii = true;
    for (let j = start; j < end; j++) {
      if ((src[j] as number) >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (!ascii && !isUtf8(src.subarray(start, end))) throw badValue(this.node, 'string is not valid UTF-8');
    this.pushBytes(src, start, end);
  }

  toData(): arrow.Data {
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Utf8, ...this.nullProps(), ...this.bytesData() });
  }
}

/** binary */
export class BinaryColumn extends BytesColumn {
  readonly kind = 'binary';

  append(src: Uint8Array, start = 0, end = src.length): void {
    this.pushBytes(src, start, end);
  }

  toData(): arrow.Data {
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Binary, ...this.nullProps(), ...this.bytesData() });
  }
}

const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX[65 + c] = 10 + c;
  HEX[97 + c] = 10 + c;
}

/** fixed(L) and uuid (16 bytes, RFC 4122 / big-endian order): FixedSizeBinary. */
export class FixedColumn extends Column {
  readonly kind = 'fixed';
  readonly width: number;
  bytes = new Uint8Array(0);

  constructor(node: LayoutNode, width: number) {
    super(node);
    this.width = width;
  }

  append(src: Uint8Array, start = 0, end = src.length): void {
    const w = this.width;
    if (end - start !== w) throw badValue(this.node, `expected ${w} bytes, got ${end - start}`);
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    const d = this.bytes;
    const at = i * w;
    if (w <= 32) for (let j = 0; j < w; j++) d[at + j] = src[start + j] as number;
    else d.set(src.subarray(start, end), at);
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  /** A UUID in its text form (`f79c3e09-677c-4bbd-a479-3f349cb785e7`); only for uuid columns. */
  appendUuid(text: string): void {
    if (this.width !== 16 || text.length !== 36) throw badValue(this.node, `not a UUID: ${JSON.stringify(text)}`);
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    const d = this.bytes;
    let at = i * 16;
    let ok = 0;
    for (let j = 0; j < 36; ) {
      if (j === 8 || j === 13 || j === 18 || j === 23) {
        if (text.charCodeAt(j) !== 45) ok = -1;
        j++;
        continue;
      }
      const a = text.charCodeAt(j);
      const b = text.charCodeAt(j + 1);
      const h = a < 128 ? (HEX[a] as number) : -1;
      const l = b < 128 ? (HEX[b] as number) : -1;
      ok |= h | l;
      d[at++] = (h << 4) | l;
      j += 2;
    }
    if (ok < 0) throw badValue(this.node, `not a UUID: ${JSON.stringify(text)}`);
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const a = new Uint8Array(cap * this.width);
    a.set(this.bytes.subarray(0, Math.min(this.length, cap) * this.width));
    this.bytes = a;
  }
  protected placeEmpty(): void {}
  protected dataBytes(): number {
    return this.length * this.width;
  }
  protected capacityBytes(): number {
    return this.bytes.byteLength;
  }
  toData(): arrow.Data {
    const n = this.length;
    return arrow.makeData({ type: this.node.arrowField.type as arrow.FixedSizeBinary, length: n, ...this.nullProps(), data: this.bytes.subarray(0, n * this.width) });
  }
}

// ---------------------------------------------------------------------------------------------------
// Nested
// ---------------------------------------------------------------------------------------------------

export class StructColumn extends Column {
  readonly kind = 'struct';
  readonly children: readonly AnyColumn[];

  constructor(node: LayoutNode, children: readonly AnyColumn[]) {
    super(node);
    this.children = children;
  }

  /** Starts a present struct value; append each child, then call end(). */
  begin(): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  /** Ends the value: optional children left out become null; a required one left out is a DataError. */
  end(): void {
    completeChildren(this.node, this.children, this.length);
  }

  protected resize(): void {}
  protected placeEmpty(): void {
    for (const c of this.children) c.fillAbsent();
  }
  protected dataBytes(): number {
    let n = 0;
    for (const c of this.children) n += c.usedBytes();
    return n;
  }
  protected capacityBytes(): number {
    let n = 0;
    for (const c of this.children) n += c.heldBytes();
    return n;
  }
  protected override truncateChildren(n: number): void {
    for (const c of this.children) c.truncate(n);
  }
  protected override releaseChildren(): void {
    for (const c of this.children) c.release();
  }
  toData(): arrow.Data {
    const n = this.length;
    for (const c of this.children) checkChildLength(this.node, c, n);
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Struct, length: n, ...this.nullProps(), children: this.children.map((c) => c.toData()) });
  }
}

/** Brings every child to `rows` slots: missing optional → null, missing required → DataError, extra → FatalError. */
export function completeChildren(owner: LayoutNode | undefined, children: readonly AnyColumn[], rows: number): void {
  for (const c of children) {
    const len = c.length;
    if (len === rows) continue;
    if (len === rows - 1) {
      if (c.node.required) {
        throw new DataError(`required field ${c.node.path} (id ${c.fieldId}) is missing`, { context: { fieldId: c.fieldId, field: c.node.path } });
      }
      c.appendNull();
      continue;
    }
    const where = owner === undefined ? 'record' : owner.path;
    throw new FatalError(`column ${c.node.path} has ${len} values for ${rows} rows of ${where}: appends out of step`, {
      context: { fieldId: c.fieldId, field: c.node.path },
    });
  }
}

/** list: offsets into the element column. */
export class ListColumn extends Column {
  readonly kind = 'list';
  readonly element: AnyColumn;
  offsets = new Int32Array(1);

  constructor(node: LayoutNode, element: AnyColumn) {
    super(node);
    this.element = element;
  }

  /** Starts a list value (no-op, for symmetry); append to `element`, then call end(). */
  begin(): void {}

  /** Ends the list value: its elements are those appended to `element` since the previous end. */
  end(): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.offsets[i + 1] = this.element.length;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const o = new Int32Array(cap + 1);
    o.set(this.offsets.subarray(0, Math.min(this.length, cap) + 1));
    this.offsets = o;
  }
  protected placeEmpty(i: number): void {
    const at = this.offsets[i] as number;
    // Elements appended after begin() of a list that then became null would be orphaned: drop them.
    this.element.truncate(at);
    this.offsets[i + 1] = at;
  }
  protected dataBytes(): number {
    return 4 * (this.length + 1) + this.element.usedBytes();
  }
  protected capacityBytes(): number {
    return this.offsets.byteLength + this.element.heldBytes();
  }
  protected override truncateChildren(n: number): void {
    this.element.truncate(this.offsets[n] as number);
  }
  protected override releaseChildren(): void {
    this.element.release();
  }
  toData(): arrow.Data {
    const n = this.length;
    checkChildLength(this.node, this.element, this.offsets[n] as number);
    return arrow.makeData({
      type: this.node.arrowField.type as arrow.List,
      length: n,
      ...this.nullProps(),
      valueOffsets: this.offsets.subarray(0, n + 1),
      child: this.element.toData(),
    });
  }
}

/** map: offsets into parallel key and value columns (Arrow Map of `key_value` structs). */
export class MapColumn extends Column {
  readonly kind = 'map';
  readonly key: AnyColumn;
  readonly value: AnyColumn;
  offsets = new Int32Array(1);

  constructor(node: LayoutNode, key: AnyColumn, value: AnyColumn) {
    super(node);
    this.key = key;
    this.value = value;
  }

  /** Starts a map value (no-op, for symmetry); append key and value per entry, then call end(). */
  begin(): void {}

  end(): void {
    const k = this.key.length;
    if (this.value.length !== k) {
      throw new FatalError(`map ${this.node.path}: ${k} keys but ${this.value.length} values`, { context: { fieldId: this.fieldId } });
    }
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.offsets[i + 1] = k;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const o = new Int32Array(cap + 1);
    o.set(this.offsets.subarray(0, Math.min(this.length, cap) + 1));
    this.offsets = o;
  }
  protected placeEmpty(i: number): void {
    const at = this.offsets[i] as number;
    this.key.truncate(at);
    this.value.truncate(at);
    this.offsets[i + 1] = at;
  }
  protected dataBytes(): number {
    return 4 * (this.length + 1) + this.key.usedBytes() + this.value.usedBytes();
  }
  protected capacityBytes(): number {
    return this.offsets.byteLength + this.key.heldBytes() + this.value.heldBytes();
  }
  protected override truncateChildren(n: number): void {
    const at = this.offsets[n] as number;
    this.key.truncate(at);
    this.value.truncate(at);
  }
  protected override releaseChildren(): void {
    this.key.release();
    this.value.release();
  }
  toData(): arrow.Data {
    const n = this.length;
    const entries = this.offsets[n] as number;
    checkChildLength(this.node, this.key, entries);
    checkChildLength(this.node, this.value, entries);
    const type = this.node.arrowField.type as arrow.Map_;
    const entriesType = type.children[0]?.type as arrow.Struct;
    const child = arrow.makeData({ type: entriesType, length: entries, nullCount: 0, children: [this.key.toData(), this.value.toData()] });
    return arrow.makeData({ type, length: n, ...this.nullProps(), valueOffsets: this.offsets.subarray(0, n + 1), child });
  }
}

function checkChildLength(owner: LayoutNode, child: Column, expected: number): void {
  if (child.length !== expected) {
    throw new FatalError(`column ${child.node.path} has ${child.length} values but ${owner.path} ends at ${expected}: a begin() without end()?`, {
      context: { fieldId: child.fieldId },
    });
  }
}

export type AnyColumn =
  | BooleanColumn
  | IntColumn
  | LongColumn
  | FloatColumn
  | DoubleColumn
  | DecimalColumn
  | StringColumn
  | BinaryColumn
  | FixedColumn
  | StructColumn
  | ListColumn
  | MapColumn;

/** Builds the column tree for one layout node. */
export function createColumn(node: LayoutNode): AnyColumn {
  const t = node.type;
  switch (t.kind) {
    case 'boolean':
      return new BooleanColumn(node);
    case 'int':
    case 'date':
      return new IntColumn(node);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return new LongColumn(node);
    case 'float':
      return new FloatColumn(node);
    case 'double':
      return new DoubleColumn(node);
    case 'decimal':
      return new DecimalColumn(node, t.precision, t.scale);
    case 'string':
      return new StringColumn(node);
    case 'binary':
      return new BinaryColumn(node);
    case 'uuid':
      return new FixedColumn(node, 16);
    case 'fixed':
      return new FixedColumn(node, t.length);
    case 'struct':
      return new StructColumn(node, node.children.map(createColumn));
    case 'list': {
      const [el] = node.children;
      if (el === undefined) throw new Error(`list ${node.path} has no element`);
      return new ListColumn(node, createColumn(el));
    }
    case 'map': {
      const [k, v] = node.children;
      if (k === undefined || v === undefined) throw new Error(`map ${node.path} has no key or value`);
      return new MapColumn(node, createColumn(k), createColumn(v));
    }
  }
}
