/**
 * Byte columns: string and binary (one data buffer plus Int32 offsets, Arrow Utf8/Binary) and fixed(L) /
 * uuid (FixedSizeBinary).
 *
 * Owns: UTF-8 validation of copied bytes, the fixed width, UUID text parsing, and the 2 GiB limit of
 * Int32 offsets. Must not: compute metrics (metrics.ts scans the sealed buffers).
 */
import { isUtf8 } from 'node:buffer';
import * as arrow from 'apache-arrow';
import { FatalError } from '../core/errors.ts';
import { badValue, Column } from './column-base.ts';
import type { LayoutNode } from './layout.ts';

const MAX_BYTES = 0x7fff_ffff; // Arrow Utf8/Binary offsets are int32

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
