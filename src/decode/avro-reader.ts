/**
 * Reading Avro binary (spec "Binary Encoding"): zig-zag varint ints and longs, length-prefixed bytes and
 * strings, IEEE little-endian floats, array/map blocks (a negative count is followed by the block's byte
 * size), skipping a value of any writer type, and the byte-level conversions the compiled decoder needs
 * (UUID text → 16 bytes, a decimal too wide for Iceberg → its text).
 *
 * Owns: the read position over one message and every per-byte rule. Must not: know about tables or
 * sinks (avro-compiler.ts does), or allocate per value on the common path (only longs beyond ±2^53
 * become BigInt).
 */
import { float32At, float64At } from './wire.ts';
import { DataError } from '../core/errors.ts';
import type { AvroType } from './avro-schema.ts';

export const EMPTY = new Uint8Array(0);
const TWO_53 = 9007199254740992;
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** The read position over one message. Reads past `end` yield zeros (typed-array holes read as undefined,
 *  and `undefined & x` is 0); the record is then rejected as truncated, so the loops need no per-byte check. */
export class AvroReader {
  buf: Uint8Array = EMPTY;
  pos = 0;
  end = 0;
  /** A long that is not a safe integer, when readLong returned NaN. */
  big = 0n;
}

export function truncated(r: AvroReader, path: string): DataError {
  return new DataError(`Avro record truncated at ${path} (byte ${r.pos} of ${r.end})`, { stage: 'deserialize', context: { field: path, offset: r.pos } });
}

export function badData(path: string, what: string): DataError {
  return new DataError(`field ${path}: ${what}`, { stage: 'deserialize', context: { field: path } });
}

/** Avro int: zig-zag varint of at most 5 bytes. */
export function readInt(r: AvroReader): number {
  const buf = r.buf;
  let pos = r.pos;
  let b = buf[pos++] as number;
  let n = b & 0x7f;
  let k = 7;
  while (b & 0x80 && k < 35) {
    b = buf[pos++] as number;
    n |= (b & 0x7f) << k;
    k += 7;
  }
  r.pos = pos;
  if (b & 0x80) throw new DataError(`Avro int longer than 5 bytes at byte ${pos}`, { stage: 'deserialize', context: { offset: pos } });
  return (n >>> 1) ^ -(n & 1);
}

/**
 * Avro long: zig-zag varint of at most 10 bytes. Returns the value as a number when it is a safe integer;
 * otherwise returns NaN and leaves the exact value in `r.big` (so the common case never makes a BigInt).
 */
export function readLong(r: AvroReader): number {
  const buf = r.buf;
  let pos = r.pos;
  let b = buf[pos++] as number;
  if (b < 0x80) {
    r.pos = pos;
    return (b >>> 1) ^ -(b & 1);
  }
  let n = b & 0x7f;
  let k = 7;
  do {
    b = buf[pos++] as number;
    n |= (b & 0x7f) << k;
    k += 7;
  } while (b & 0x80 && k < 28);
  if (!(b & 0x80)) {
    r.pos = pos;
    return (n >>> 1) ^ -(n & 1);
  }
  // Beyond 28 bits: float arithmetic, exact while the unsigned zig-zag value stays below 2^53.
  const start = r.pos;
  let f = n;
  let fk = 268435456; // 2^28
  do {
    b = buf[pos++] as number;
    f += (b & 0x7f) * fk;
    fk *= 128;
  } while (b & 0x80 && fk < 1.2e21); // 2^70: at most 10 bytes
  if (b & 0x80) throw new DataError(`Avro long longer than 10 bytes at byte ${start}`, { stage: 'deserialize', context: { offset: start } });
  r.pos = pos;
  if (f < TWO_53) return f % 2 === 1 ? -(f + 1) / 2 : f / 2;
  return readBigLong(r, start);
}

function readBigLong(r: AvroReader, start: number): number {
  const buf = r.buf;
  let u = 0n;
  let shift = 0n;
  let pos = start;
  let b: number;
  do {
    b = (buf[pos++] as number | undefined) ?? 0;
    u |= BigInt(b & 0x7f) << shift;
    shift += 7n;
  } while (b & 0x80);
  if (u >= 1n << 64n) throw new DataError(`Avro long does not fit 64 bits at byte ${start}`, { stage: 'deserialize', context: { offset: start } });
  const v = (u >> 1n) ^ -(u & 1n);
  if (v >= -BigInt(MAX_SAFE) && v <= BigInt(MAX_SAFE)) return Number(v);
  r.big = v;
  return Number.NaN;
}

/** A length or count in [0, max]; NaN (beyond 2^53) fails the check too. */
export function readLength(r: AvroReader, path: string): number {
  const n = readLong(r);
  if (n >= 0 && n <= r.end - r.pos) return n;
  if (n >= 0 || n !== n) throw truncated(r, path);
  throw badData(path, `negative length ${n}`);
}

export function readFloat(r: AvroReader): number {
  const v = float32At(r.buf, r.pos);
  r.pos += 4;
  return v;
}

export function readDouble(r: AvroReader): number {
  const v = float64At(r.buf, r.pos);
  r.pos += 8;
  return v;
}

/** Reads (and appends, or skips) one value at the reader's position. */
export type Step = (r: AvroReader) => void;

const MAX_EMPTY_ITEMS = 1 << 24;

/** The next array/map block's item count (0 ends the value); a negative count is followed by the block's byte size. */
export function readBlockCount(r: AvroReader, minItemSize: number, path: string): number {
  let n = readLong(r);
  if (n < 0) {
    n = -n;
    readLong(r);
  }
  // Each item takes at least minItemSize bytes, so a count the rest of the message cannot hold is corrupt.
  if (minItemSize > 0 ? n * minItemSize <= r.end - r.pos : n <= MAX_EMPTY_ITEMS) return n;
  throw n === n ? truncated(r, path) : badData(path, 'block count out of range');
}

/** The fewest bytes a value of this type takes (for block-count sanity checks). */
export function minSize(w: AvroType): number {
  switch (w.type) {
    case 'null':
      return 0;
    case 'float':
      return 4;
    case 'double':
      return 8;
    case 'fixed':
      return w.size;
    case 'record':
      return w.fields.reduce((n, f) => n + minSize(f.type), 0);
    default:
      return 1;
  }
}

/** A step that reads a value of the writer type and discards it. */
export function compileSkip(w: AvroType, path: string): Step {
  switch (w.type) {
    case 'null':
      return () => {};
    case 'boolean':
      return (r) => {
        r.pos++;
      };
    case 'int':
    case 'long':
    case 'enum':
      return (r) => {
        readLong(r);
      };
    case 'float':
      return (r) => {
        r.pos += 4;
      };
    case 'double':
      return (r) => {
        r.pos += 8;
      };
    case 'bytes':
    case 'string':
      return (r) => {
        const n = readLength(r, path);
        r.pos += n;
      };
    case 'fixed': {
      const size = w.size;
      return (r) => {
        r.pos += size;
      };
    }
    case 'record': {
      const steps = w.fields.map((f) => compileSkip(f.type, `${path}.${f.name}`));
      return (r) => {
        for (const s of steps) s(r);
      };
    }
    case 'array':
    case 'map': {
      const isMap = w.type === 'map';
      const item = compileSkip(w.type === 'map' ? w.values : w.items, path);
      const min = w.type === 'map' ? 1 + minSize(w.values) : minSize(w.items);
      return (r) => {
        for (;;) {
          let n = readLong(r);
          if (n === 0) return;
          if (n < 0) {
            // A negative count is followed by the block's size in bytes: skip it whole.
            const size = readLength(r, path);
            r.pos += size;
            continue;
          }
          if (!(min > 0 ? n * min <= r.end - r.pos : n <= MAX_EMPTY_ITEMS)) throw truncated(r, path);
          for (; n > 0; n--) {
            if (isMap) {
              const k = readLength(r, path);
              r.pos += k;
            }
            item(r);
          }
        }
      };
    }
    case 'union': {
      const steps = w.branches.map((b, i) => compileSkip(b, `${path}[${i}]`));
      return (r) => {
        const i = readLong(r);
        const s = steps[i];
        if (s === undefined) throw badData(path, `union index ${i} out of range (${steps.length} branches)`);
        s(r);
      };
    }
  }
}

const HEX = new Int8Array(256).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX[65 + c] = 10 + c;
  HEX[97 + c] = 10 + c;
}

/** RFC 4122 text (8-4-4-4-12 hex digits) in UTF-8 bytes → 16 bytes; false when it is not one. */
export function parseUuid(buf: Uint8Array, start: number, n: number, out: Uint8Array): boolean {
  if (n !== 36) return false;
  let bad = 0;
  let o = 0;
  for (let j = 0; j < 36; ) {
    if (j === 8 || j === 13 || j === 18 || j === 23) {
      if (buf[start + j] !== 45) return false;
      j++;
      continue;
    }
    const h = HEX[buf[start + j] as number] as number;
    const l = HEX[buf[start + j + 1] as number] as number;
    bad |= h | l;
    out[o++] = (h << 4) | l;
    j += 2;
  }
  return bad >= 0;
}

/** Big-endian two's complement unscaled bytes → the decimal's text (for decimals wider than Iceberg's 38 digits). */
export function formatDecimal(buf: Uint8Array, start: number, end: number, scale: number): string {
  let u = 0n;
  for (let j = start; j < end; j++) u = (u << 8n) | BigInt(buf[j] as number);
  if (end > start && (buf[start] as number) & 0x80) u -= 1n << BigInt(8 * (end - start));
  const neg = u < 0n;
  let digits = (neg ? -u : u).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  }
  return neg ? `-${digits}` : digits;
}
