/**
 * Fixed-width primitive columns: boolean (bit-packed), int and date (Int32), long, time and timestamps
 * (Int64 as two 32-bit words), float (Float32), double (Float64), decimal (little-endian Decimal128 words).
 *
 * Owns: the value checks these columns can make cheaply (int32 range, int64 range, decimal precision).
 * Must not: compute metrics (metrics.ts scans the sealed buffers).
 *
 * NOTE: the fixed-width columns (int, long, float, double) repeat the same few lines on purpose: one class
 * per typed array keeps each hot `append` monomorphic, where a shared generic base would make its store
 * into `values` polymorphic across Int32/Float32/Float64 arrays.
 */
import * as arrow from 'apache-arrow';
import { badValue, bitmapBytes, Column } from './column-base.ts';
import type { LayoutNode } from './layout.ts';

const TWO_32 = 4294967296;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

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

/** The unit a 64-bit temporal column counts in, so an out-of-range value is named as what it is. */
const TEMPORAL_UNITS: Readonly<Partial<Record<string, string>>> = {
  time: 'µs since midnight',
  timestamp: 'µs since 1970-01-01',
  timestamptz: 'µs since 1970-01-01',
  timestamp_ns: 'ns since 1970-01-01',
  timestamptz_ns: 'ns since 1970-01-01',
};

function beyondInt64(node: LayoutNode, v: bigint): string {
  const unit = TEMPORAL_UNITS[node.type.kind];
  return unit === undefined ? `${v} does not fit in 64 bits` : `${node.type.kind} out of range: ${v} ${unit} does not fit in 64 bits`;
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
    if (v < INT64_MIN || v > INT64_MAX) throw badValue(this.node, beyondInt64(this.node, v));
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
