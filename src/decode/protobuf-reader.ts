/**
 * Reading the Protobuf wire format (protobuf.dev "Encoding"): varints split into 32-bit halves, zig-zag
 * sint32/sint64, little-endian fixed32/fixed64/float/double, length prefixes, and skipping a value of
 * any wire type (groups included), plus the table of integer readers by proto scalar type.
 *
 * Owns: the read position over one message and every per-byte rule. Must not: know about tables or
 * sinks (protobuf-values.ts and protobuf-message.ts do), or allocate per value on the common path (only
 * 64-bit values beyond ±2^53 become BigInt).
 */
import { float32At, float64At } from './wire.ts';
import { DataError } from '../core/errors.ts';

export const EMPTY = new Uint8Array(0);
const TWO_32 = 4294967296;
const HI_SAFE = 0x200000; // |hi| < 2^21 ⇒ hi·2^32 + lo is a safe integer

export const WT_VARINT = 0;
export const WT_I64 = 1;
export const WT_LEN = 2;
const WT_SGROUP = 3;
const WT_EGROUP = 4;
export const WT_I32 = 5;

/** The read position over one message. `hi` holds the high word of the last varint; `big` a 64-bit value beyond ±2^53. */
export class PbReader {
  buf: Uint8Array = EMPTY;
  pos = 0;
  end = 0;
  hi = 0;
  big = 0n;
}

export function truncated(r: PbReader, path: string): DataError {
  return new DataError(`Protobuf message truncated at ${path || '<root>'} (byte ${r.pos} of ${r.end})`, { stage: 'deserialize', context: { field: path, offset: r.pos } });
}

export function badData(path: string, what: string): DataError {
  return new DataError(`field ${path || '<root>'}: ${what}`, { stage: 'deserialize', context: { field: path } });
}

/** A varint: returns its low 32 bits (unsigned) and leaves the high 32 bits in `r.hi`. */
export function readVarint(r: PbReader): number {
  const buf = r.buf;
  let pos = r.pos;
  let b = buf[pos++] as number;
  if (b < 0x80) {
    r.pos = pos;
    r.hi = 0;
    return b;
  }
  let lo = b & 0x7f;
  for (let shift = 7; shift < 28; shift += 7) {
    b = buf[pos++] as number;
    lo |= (b & 0x7f) << shift;
    if (b < 0x80) {
      r.pos = pos;
      r.hi = 0;
      return lo >>> 0;
    }
  }
  b = buf[pos++] as number;
  lo |= (b & 0x0f) << 28;
  let hi = (b & 0x7f) >> 4;
  if (b < 0x80) {
    r.pos = pos;
    r.hi = hi;
    return lo >>> 0;
  }
  for (let shift = 3; shift < 32; shift += 7) {
    b = buf[pos++] as number;
    hi |= (b & 0x7f) << shift;
    if (b < 0x80) {
      r.pos = pos;
      r.hi = hi >>> 0;
      return lo >>> 0;
    }
  }
  r.pos = pos;
  if (pos > r.end) throw truncated(r, '');
  throw new DataError(`Protobuf varint longer than 10 bytes at byte ${pos - 10}`, { stage: 'deserialize', context: { offset: pos - 10 } });
}

/** (lo, hi) as a signed 64-bit value: a number when safe, else NaN with the value in r.big. */
export function signed64(r: PbReader, lo: number, hi: number): number {
  const h = hi | 0;
  if (h >= -HI_SAFE && h < HI_SAFE) return h * TWO_32 + lo;
  r.big = BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo));
  return Number.NaN;
}

export function unsigned64(r: PbReader, lo: number, hi: number): number {
  const h = hi >>> 0;
  if (h < HI_SAFE) return h * TWO_32 + lo;
  r.big = (BigInt(h) << 32n) | BigInt(lo);
  return Number.NaN;
}

export function zigzag64(r: PbReader, lo: number, hi: number): number {
  let nlo = ((lo >>> 1) | (hi << 31)) >>> 0;
  let nhi = hi >>> 1;
  if (lo & 1) {
    nlo = ~nlo >>> 0;
    nhi = ~nhi >>> 0;
  }
  return signed64(r, nlo, nhi);
}

export function readU32LE(r: PbReader): number {
  const b = r.buf;
  const p = r.pos;
  r.pos = p + 4;
  return ((b[p] as number) | ((b[p + 1] as number) << 8) | ((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 24)) >>> 0;
}

export function readFloat(r: PbReader): number {
  const v = float32At(r.buf, r.pos);
  r.pos += 4;
  return v;
}

export function readDouble(r: PbReader): number {
  const v = float64At(r.buf, r.pos);
  r.pos += 8;
  return v;
}

/** A length prefix that the enclosing message (ending at `end`) can hold. */
export function readLength(r: PbReader, end: number, path: string): number {
  const n = readVarint(r);
  if (r.hi !== 0 || n > end - r.pos) throw truncated(r, path);
  return n;
}

/** Skips one value of wire type wt (field number no, for groups). */
export function skipValue(r: PbReader, wt: number, no: number, end: number, path: string): void {
  switch (wt) {
    case WT_VARINT:
      readVarint(r);
      return;
    case WT_I64:
      r.pos += 8;
      return;
    case WT_LEN: {
      const n = readLength(r, end, path);
      r.pos += n;
      return;
    }
    case WT_I32:
      r.pos += 4;
      return;
    case WT_SGROUP:
      for (;;) {
        if (r.pos >= end) throw truncated(r, path);
        const tag = readVarint(r);
        const w = tag & 7;
        if (w === WT_EGROUP) {
          if (tag >>> 3 !== no) throw badData(path, `end-group ${tag >>> 3} does not close group ${no}`);
          return;
        }
        skipValue(r, w, tag >>> 3, end, path);
      }
    case WT_EGROUP:
      throw badData(path, `unexpected end-group for field ${no}`);
    default:
      throw badData(path, `invalid wire type ${wt} for field ${no}`);
  }
}

export const WIRE_OF: Readonly<Record<string, number>> = {
  double: WT_I64,
  float: WT_I32,
  int32: WT_VARINT,
  int64: WT_VARINT,
  uint32: WT_VARINT,
  uint64: WT_VARINT,
  sint32: WT_VARINT,
  sint64: WT_VARINT,
  fixed32: WT_I32,
  fixed64: WT_I64,
  sfixed32: WT_I32,
  sfixed64: WT_I64,
  bool: WT_VARINT,
  string: WT_LEN,
  bytes: WT_LEN,
};

/** An integer reader: the value as a number, or NaN with the exact value in r.big. */
export type IntRead = (r: PbReader) => number;

export const INT_READERS: Readonly<Record<string, IntRead>> = {
  int32: (r) => readVarint(r) | 0,
  sint32: (r) => {
    const n = readVarint(r);
    return (n >>> 1) ^ -(n & 1);
  },
  sfixed32: (r) => readU32LE(r) | 0,
  uint32: (r) => readVarint(r),
  fixed32: (r) => readU32LE(r),
  int64: (r) => {
    const lo = readVarint(r);
    return signed64(r, lo, r.hi);
  },
  sint64: (r) => {
    const lo = readVarint(r);
    return zigzag64(r, lo, r.hi);
  },
  sfixed64: (r) => {
    const lo = readU32LE(r);
    return signed64(r, lo, readU32LE(r));
  },
  uint64: (r) => {
    const lo = readVarint(r);
    return unsigned64(r, lo, r.hi);
  },
  fixed64: (r) => {
    const lo = readU32LE(r);
    return unsigned64(r, lo, readU32LE(r));
  },
};
export const INT32_TYPES = new Set(['int32', 'sint32', 'sfixed32']);
export const UINT64_TYPES = new Set(['uint64', 'fixed64']);
export const MAX_LONG = (1n << 63n) - 1n;
