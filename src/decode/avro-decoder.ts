/**
 * Avro binary → columns, with no per-record JS object: a decoder is compiled once per (writer Avro
 * schema, table Iceberg schema) pair into a tree of closures, bound once per sink (a write-stage
 * RecordAppender, seen through sink.ts), and then reads each message's bytes and appends every value
 * straight to its column by the table's field id.
 *
 * Owns: the Avro binary encoding (spec "Binary Encoding": zig-zag varints, length-prefixed bytes and
 * strings, IEEE little-endian floats, array/map blocks including negative counts followed by a byte
 * size, unions by branch index), writer → table resolution by field NAME (case-sensitive unless
 * `caseInsensitive`), value conversions (int → long/float/double, float → double, millis → micros,
 * decimals as big-endian bytes, enum → its symbol's UTF-8), Confluent wire framing, and the decoder
 * cache by schema id. Must not: do I/O (the registry is a port), import src/write, or create strings,
 * BigInts or objects per value on the common path (strings go to `appendUtf8` as raw bytes; longs that
 * are safe integers go through `appendNumber`; only longs beyond ±2^53 become BigInt).
 *
 * Resolution rules (compile time; a mismatch is a ConfigError, since every record would fail):
 * - a writer field the table lacks is read and discarded; a table field the writer lacks is left to the
 *   sink, which makes it null (a required one is then a DataError per record, naming the field);
 * - the union mapping of avro-schema.ts: `["null", T]` → optional T; other unions → struct<tag, field0…>.
 * Per record: bytes that do not decode (truncated, a bad union index or length, trailing bytes) or a
 * value that does not fit its column (null into a required column, a decimal too wide, invalid UTF-8)
 * raise a DataError naming the field, after `abortRecord()` rolled the partial record back.
 */
import { float32At, float64At } from './wire.ts';
import { columnFor } from './sink.ts';
import { ConfigError, DataError, FatalError, IcefloeError } from '../core/errors.ts';
import type { IcebergType, NestedField, Schema, StructType } from '../iceberg/types.ts';
import { resolveAvroSchema, unionShape } from './avro-schema.ts';
import type { AvroLogical, AvroRecord, AvroType, AvroUnion } from './avro-schema.ts';
import type { SchemaResolver } from './registry-port.ts';
import type { RecordSink } from './sink.ts';

// ---------------------------------------------------------------------------------------------------
// Reading primitives
// ---------------------------------------------------------------------------------------------------

const EMPTY = new Uint8Array(0);
const TWO_53 = 9007199254740992;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** The read position over one message. Reads past `end` yield zeros (typed-array holes read as undefined,
 *  and `undefined & x` is 0); the record is then rejected as truncated, so the loops need no per-byte check. */
export class AvroReader {
  buf: Uint8Array = EMPTY;
  pos = 0;
  end = 0;
  /** A long that is not a safe integer, when readLong returned NaN. */
  big = 0n;
}

function truncated(r: AvroReader, path: string): DataError {
  return new DataError(`Avro record truncated at ${path} (byte ${r.pos} of ${r.end})`, { context: { field: path, offset: r.pos } });
}

function badData(path: string, what: string): DataError {
  return new DataError(`field ${path}: ${what}`, { context: { field: path } });
}

/** Avro int: zig-zag varint of at most 5 bytes. */
function readInt(r: AvroReader): number {
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
  if (b & 0x80) throw new DataError(`Avro int longer than 5 bytes at byte ${pos}`, { context: { offset: pos } });
  return (n >>> 1) ^ -(n & 1);
}

/**
 * Avro long: zig-zag varint of at most 10 bytes. Returns the value as a number when it is a safe integer;
 * otherwise returns NaN and leaves the exact value in `r.big` (so the common case never makes a BigInt).
 */
function readLong(r: AvroReader): number {
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
  if (b & 0x80) throw new DataError(`Avro long longer than 10 bytes at byte ${start}`, { context: { offset: start } });
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
  if (u >= 1n << 64n) throw new DataError(`Avro long does not fit 64 bits at byte ${start}`, { context: { offset: start } });
  const v = (u >> 1n) ^ -(u & 1n);
  if (v >= -BigInt(MAX_SAFE) && v <= BigInt(MAX_SAFE)) return Number(v);
  r.big = v;
  return Number.NaN;
}

/** A length or count in [0, max]; NaN (beyond 2^53) fails the check too. */
function readLength(r: AvroReader, path: string): number {
  const n = readLong(r);
  if (n >= 0 && n <= r.end - r.pos) return n;
  if (n >= 0 || n !== n) throw truncated(r, path);
  throw badData(path, `negative length ${n}`);
}

function readFloat(r: AvroReader): number {
  const v = float32At(r.buf, r.pos);
  r.pos += 4;
  return v;
}

function readDouble(r: AvroReader): number {
  const v = float64At(r.buf, r.pos);
  r.pos += 8;
  return v;
}

// ---------------------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------------------

type Step = (r: AvroReader) => void;
/** A compiled value reader, waiting for the sink whose columns it appends to. */
type Binder = (sink: RecordSink) => Step;

/** Where a writer value goes: a table field (or list element, map key/value) by id. */
interface Target {
  readonly id: number;
  readonly type: IcebergType;
  readonly path: string;
}

export interface AvroDecoderOptions {
  /** `iceberg.tables.schema-case-insensitive`: match writer field names to table fields ignoring case. */
  readonly caseInsensitive?: boolean;
}

function mismatch(path: string, w: AvroType, t: IcebergType, why = ''): ConfigError {
  return new ConfigError(`field ${path}: Avro ${describe(w)} cannot be written to Iceberg ${t.kind}${why === '' ? '' : ` (${why})`}`, {
    context: { field: path },
  });
}

function describe(w: AvroType): string {
  const logical = 'logical' in w && w.logical !== undefined ? `/${w.logical.kind}` : '';
  return `${w.type}${logical}`;
}


/** Time unit of a writer number, in nanoseconds per unit; 0 for "not a time" (a plain int/long). */
type Category = 'date' | 'time' | 'instant' | 'none';
function unitOf(l: AvroLogical | undefined): { cat: Category; ns: number } {
  switch (l?.kind) {
    case 'date':
      return { cat: 'date', ns: 0 };
    case 'time-millis':
      return { cat: 'time', ns: 1e6 };
    case 'time-micros':
      return { cat: 'time', ns: 1e3 };
    case 'timestamp-millis':
    case 'local-timestamp-millis':
      return { cat: 'instant', ns: 1e6 };
    case 'timestamp-micros':
    case 'local-timestamp-micros':
      return { cat: 'instant', ns: 1e3 };
    case 'timestamp-nanos':
    case 'local-timestamp-nanos':
      return { cat: 'instant', ns: 1 };
    default:
      return { cat: 'none', ns: 0 };
  }
}
function targetUnit(t: IcebergType): { cat: Category; ns: number } {
  switch (t.kind) {
    case 'date':
      return { cat: 'date', ns: 0 };
    case 'time':
      return { cat: 'time', ns: 1e3 };
    case 'timestamp':
    case 'timestamptz':
      return { cat: 'instant', ns: 1e3 };
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return { cat: 'instant', ns: 1 };
    default:
      return { cat: 'none', ns: 0 };
  }
}

/**
 * The factor from the writer's unit to the column's: > 1 multiplies, < 1 divides (flooring), 1 copies.
 * A temporal value into a plain long/int column is copied as is; a plain number into a temporal column
 * would be a guess about its unit, so it is refused.
 */
function conversion(w: AvroType, l: AvroLogical | undefined, t: Target): number {
  const from = unitOf(l);
  const to = targetUnit(t.type);
  if (to.cat === 'none') return 1;
  if (from.cat !== to.cat) throw mismatch(t.path, w, t.type, from.cat === 'none' ? 'a plain number has no time unit' : `${from.cat} is not ${to.cat}`);
  return to.cat === 'date' ? 1 : from.ns / to.ns;
}

class Compiler {
  private readonly caseInsensitive: boolean;

  constructor(options: AvroDecoderOptions) {
    this.caseInsensitive = options.caseInsensitive === true;
  }

  /** The steps of a record's fields against a struct's (or the table's) fields. */
  fields(w: AvroRecord, fields: readonly NestedField[], prefix: string): Binder[] {
    const byName = new Map<string, NestedField>();
    for (const f of fields) {
      const key = this.caseInsensitive ? f.name.toLowerCase() : f.name;
      if (byName.has(key)) throw new ConfigError(`table fields ${prefix}${f.name} and ${prefix}${byName.get(key)?.name} differ only in case`);
      byName.set(key, f);
    }
    const used = new Set<number>();
    const out: Binder[] = [];
    for (const wf of w.fields) {
      const tf = byName.get(this.caseInsensitive ? wf.name.toLowerCase() : wf.name);
      if (tf === undefined) {
        const skip = compileSkip(wf.type, `${prefix}${wf.name}`);
        out.push(() => skip);
        continue;
      }
      if (used.has(tf.id)) throw new ConfigError(`Avro fields of ${w.name} map to table field ${prefix}${tf.name} twice (case-insensitive match)`);
      used.add(tf.id);
      out.push(this.value(wf.type, { id: tf.id, type: tf.type, path: `${prefix}${tf.name}` }));
    }
    return out;
  }

  value(w: AvroType, t: Target): Binder {
    const tt = t.type;
    switch (w.type) {
      case 'union':
        return this.union(w, t);
      case 'null':
        return (sink) => {
          const col = columnFor(sink, t);
          return () => col.appendNull();
        };
      case 'boolean':
        if (tt.kind !== 'boolean') throw mismatch(t.path, w, tt);
        return (sink) => {
          const col = sink.boolean(t.id);
          return (r) => col.append(r.buf[r.pos++] !== 0);
        };
      case 'int': {
        if (tt.kind === 'int' || tt.kind === 'date') {
          conversion(w, w.logical, t);
          return (sink) => {
            const col = sink.int(t.id);
            return (r) => col.append(readInt(r));
          };
        }
        if (tt.kind === 'float' || tt.kind === 'double') {
          if (w.logical !== undefined) throw mismatch(t.path, w, tt);
          return (sink) => {
            const col = tt.kind === 'float' ? sink.float(t.id) : sink.double(t.id);
            return (r) => col.append(readInt(r));
          };
        }
        if (targetUnit(tt).cat !== 'none' || tt.kind === 'long') {
          const f = conversion(w, w.logical, t);
          if (f < 1) throw mismatch(t.path, w, tt);
          return (sink) => {
            const col = sink.long(t.id);
            if (f === 1) return (r) => col.appendNumber(readInt(r));
            return (r) => col.appendNumber(readInt(r) * f);
          };
        }
        throw mismatch(t.path, w, tt);
      }
      case 'long': {
        if (tt.kind === 'float' || tt.kind === 'double') {
          if (w.logical !== undefined) throw mismatch(t.path, w, tt);
          return (sink) => {
            const col = tt.kind === 'float' ? sink.float(t.id) : sink.double(t.id);
            return (r) => {
              const v = readLong(r);
              col.append(v === v ? v : Number(r.big));
            };
          };
        }
        if (tt.kind !== 'long' && targetUnit(tt).cat === 'none') throw mismatch(t.path, w, tt);
        if (tt.kind === 'date') throw mismatch(t.path, w, tt);
        return this.long(t, conversion(w, w.logical, t));
      }
      case 'float':
        if (tt.kind !== 'float' && tt.kind !== 'double') throw mismatch(t.path, w, tt);
        return (sink) => {
          const col = tt.kind === 'float' ? sink.float(t.id) : sink.double(t.id);
          return (r) => col.append(readFloat(r));
        };
      case 'double':
        if (tt.kind !== 'double') throw mismatch(t.path, w, tt);
        return (sink) => {
          const col = sink.double(t.id);
          return (r) => col.append(readDouble(r));
        };
      case 'string':
        if (tt.kind === 'string') {
          return (sink) => {
            const col = sink.string(t.id);
            const path = t.path;
            return (r) => {
              const n = readLength(r, path);
              const p = r.pos;
              r.pos = p + n;
              col.appendUtf8(r.buf, p, p + n);
            };
          };
        }
        if (tt.kind === 'uuid') {
          return (sink) => {
            const col = sink.fixed(t.id);
            const path = t.path;
            const out = new Uint8Array(16);
            return (r) => {
              const n = readLength(r, path);
              const p = r.pos;
              r.pos = p + n;
              if (!parseUuid(r.buf, p, n, out)) throw badData(path, `not a UUID: ${JSON.stringify(Buffer.from(r.buf.subarray(p, p + n)).toString('utf8'))}`);
              col.append(out, 0, 16);
            };
          };
        }
        throw mismatch(t.path, w, tt);
      case 'bytes':
        return this.bytesLike(w, w.logical, t, -1);
      case 'fixed':
        return this.bytesLike(w, w.logical, t, w.size);
      case 'enum': {
        if (tt.kind !== 'string') throw mismatch(t.path, w, tt);
        const symbols = w.symbols.map((s) => new Uint8Array(Buffer.from(s, 'utf8')));
        return (sink) => {
          const col = sink.string(t.id);
          const path = t.path;
          return (r) => {
            const i = readLong(r);
            const s = symbols[i];
            if (s === undefined) throw badData(path, `enum index ${i} out of range (${symbols.length} symbols)`);
            col.appendUtf8(s, 0, s.length);
          };
        };
      }
      case 'record': {
        if (tt.kind !== 'struct') throw mismatch(t.path, w, tt);
        const children = this.fields(w, tt.fields, `${t.path}.`);
        return (sink) => {
          const col = sink.struct(t.id);
          const steps = children.map((b) => b(sink));
          const n = steps.length;
          return (r) => {
            col.begin();
            for (let i = 0; i < n; i++) (steps[i] as Step)(r);
            col.end();
          };
        };
      }
      case 'array': {
        if (tt.kind !== 'list') throw mismatch(t.path, w, tt);
        const item = this.value(w.items, { id: tt.elementId, type: tt.element, path: `${t.path}.element` });
        const min = minSize(w.items);
        return (sink) => {
          const col = sink.list(t.id);
          const step = item(sink);
          const path = t.path;
          return (r) => {
            col.begin();
            for (let n = readBlockCount(r, min, path); n !== 0; n = readBlockCount(r, min, path)) {
              for (let i = 0; i < n; i++) step(r);
            }
            col.end();
          };
        };
      }
      case 'map': {
        if (tt.kind !== 'map') throw mismatch(t.path, w, tt);
        if (tt.key.kind !== 'string') throw mismatch(`${t.path}.key`, { type: 'string' }, tt.key);
        const value = this.value(w.values, { id: tt.valueId, type: tt.value, path: `${t.path}.value` });
        const min = 1 + minSize(w.values);
        return (sink) => {
          const col = sink.map(t.id);
          const key = sink.string(tt.keyId);
          const step = value(sink);
          const path = t.path;
          const keyPath = `${t.path}.key`;
          return (r) => {
            col.begin();
            for (let n = readBlockCount(r, min, path); n !== 0; n = readBlockCount(r, min, path)) {
              for (let i = 0; i < n; i++) {
                const len = readLength(r, keyPath);
                const p = r.pos;
                r.pos = p + len;
                key.appendUtf8(r.buf, p, p + len);
                step(r);
              }
            }
            col.end();
          };
        };
      }
    }
  }

  private long(t: Target, f: number): Binder {
    return (sink) => {
      const col = sink.long(t.id);
      if (f === 1) {
        return (r) => {
          const v = readLong(r);
          if (v === v) col.appendNumber(v);
          else col.append(r.big);
        };
      }
      if (f > 1) {
        const fb = BigInt(f);
        return (r) => {
          const v = readLong(r);
          const x = v * f;
          if (x <= MAX_SAFE && x >= -MAX_SAFE) col.appendNumber(x);
          else col.append((v === v ? BigInt(v) : r.big) * fb);
        };
      }
      const d = Math.round(1 / f);
      const db = BigInt(d);
      return (r) => {
        const v = readLong(r);
        if (v === v) col.appendNumber(Math.floor(v / d));
        else {
          const q = r.big / db; // truncates toward zero: floor for negatives
          col.append(r.big < 0n && q * db !== r.big ? q - 1n : q);
        }
      };
    };
  }

  /** bytes (size -1) and fixed(size): binary, fixed, uuid, decimal, or a decimal too wide for Iceberg as string. */
  private bytesLike(w: AvroType, logical: AvroLogical | undefined, t: Target, size: number): Binder {
    const tt = t.type;
    const path = t.path;
    const span = size < 0 ? (r: AvroReader): number => readLength(r, path) : (r: AvroReader): number => {
      if (r.pos + size > r.end) throw truncated(r, path);
      return size;
    };
    if (logical?.kind === 'decimal') {
      if (tt.kind === 'decimal') {
        if (tt.scale !== logical.scale) throw mismatch(path, w, tt, `scale ${logical.scale} is not ${tt.scale}`);
        return (sink) => {
          const col = sink.decimal(t.id);
          return (r) => {
            const n = span(r);
            const p = r.pos;
            r.pos = p + n;
            col.appendBigEndian(r.buf, p, p + n);
          };
        };
      }
      if (tt.kind === 'string') {
        const scale = logical.scale;
        return (sink) => {
          const col = sink.string(t.id);
          return (r) => {
            const n = span(r);
            const p = r.pos;
            r.pos = p + n;
            col.append(formatDecimal(r.buf, p, p + n, scale));
          };
        };
      }
      throw mismatch(path, w, tt);
    }
    if (tt.kind === 'binary') {
      return (sink) => {
        const col = sink.binary(t.id);
        return (r) => {
          const n = span(r);
          const p = r.pos;
          r.pos = p + n;
          col.append(r.buf, p, p + n);
        };
      };
    }
    if (tt.kind === 'fixed' || tt.kind === 'uuid') {
      const width = tt.kind === 'uuid' ? 16 : tt.length;
      if (size >= 0 && size !== width) throw mismatch(path, w, tt, `size ${size} is not ${width}`);
      return (sink) => {
        const col = sink.fixed(t.id);
        return (r) => {
          const n = span(r);
          const p = r.pos;
          r.pos = p + n;
          col.append(r.buf, p, p + n); // the column checks the width of a variable-length bytes value
        };
      };
    }
    throw mismatch(path, w, tt);
  }

  private union(w: AvroUnion, t: Target): Binder {
    const { nonNull, nullIndex } = unionShape(w);
    const tt = t.type;
    const path = t.path;
    const branches = w.branches.length;
    if (nonNull.length <= 1 || !isUnionStruct(tt)) {
      if (nonNull.length > 1) throw mismatch(path, w, tt, 'a union of several types needs a struct<tag, field0, …> column');
      const only = nonNull[0];
      const inner = only === undefined ? undefined : this.value(only, t);
      const valueIndex = only === undefined ? -1 : w.branches.indexOf(only);
      return (sink) => {
        const col = columnFor(sink, t);
        const step = inner === undefined ? undefined : inner(sink);
        return (r) => {
          const i = readLong(r);
          if (i === nullIndex) col.appendNull();
          else if (i === valueIndex && step !== undefined) step(r);
          else throw badData(path, `union index ${i} out of range (${branches} branches)`);
        };
      };
    }
    // struct<tag: int, field0: T0?, field1: T1?, …>: tag = index among the non-null branches.
    const fields = tt.fields;
    const find = (name: string): NestedField | undefined =>
      fields.find((f) => (this.caseInsensitive ? f.name.toLowerCase() === name : f.name === name));
    const tag = find('tag') as NestedField;
    const tags = new Int32Array(branches).fill(-1);
    const members: (Binder | string)[] = [];
    let k = 0;
    w.branches.forEach((b, i) => {
      if (b.type === 'null') {
        members.push('null');
        return;
      }
      tags[i] = k;
      const f = find(`field${k}`);
      members.push(f === undefined ? `union branch ${k} (${describe(b)}) has no column ${path}.field${k} in the table` : this.value(b, { id: f.id, type: f.type, path: `${path}.${f.name}` }));
      k++;
    });
    return (sink) => {
      const col = sink.struct(t.id);
      const tagCol = sink.int(tag.id);
      const steps = members.map((m) => (typeof m === 'string' ? m : m(sink)));
      return (r) => {
        const i = readLong(r);
        const s = steps[i];
        if (s === undefined) throw badData(path, `union index ${i} out of range (${branches} branches)`);
        if (typeof s === 'string') {
          if (s === 'null') col.appendNull();
          else throw badData(path, s);
          return;
        }
        col.begin();
        tagCol.append(tags[i] as number);
        s(r);
        col.end();
      };
    };
  }
}

function isUnionStruct(t: IcebergType): t is StructType {
  return t.kind === 'struct' && t.fields.some((f) => f.name.toLowerCase() === 'tag' && f.type.kind === 'int');
}

const MAX_EMPTY_ITEMS = 1 << 24;

/** The next array/map block's item count (0 ends the value); a negative count is followed by the block's byte size. */
function readBlockCount(r: AvroReader, minItemSize: number, path: string): number {
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
function minSize(w: AvroType): number {
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
function compileSkip(w: AvroType, path: string): Step {
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
function parseUuid(buf: Uint8Array, start: number, n: number, out: Uint8Array): boolean {
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
function formatDecimal(buf: Uint8Array, start: number, end: number, scale: number): string {
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

// ---------------------------------------------------------------------------------------------------
// Programs and bound decoders
// ---------------------------------------------------------------------------------------------------

/** A decoder bound to one sink: `decode` appends one record and returns endRecord()'s flush hint. */
export class BoundAvroDecoder {
  readonly sink: RecordSink;
  private readonly steps: Step[];
  private readonly reader = new AvroReader();

  constructor(sink: RecordSink, steps: Step[]) {
    this.sink = sink;
    this.steps = steps;
  }

  /**
   * Decodes one Avro-encoded record from `buf[offset, end)` into the sink. On a DataError (bad bytes, a
   * value that does not fit) the partial record is rolled back with abortRecord() before the error is
   * rethrown; the sink stays usable for the next record.
   */
  decode(buf: Uint8Array, offset = 0, end = buf.length): boolean {
    const r = this.reader;
    r.buf = buf;
    r.pos = offset;
    r.end = end;
    const steps = this.steps;
    try {
      for (let i = 0; i < steps.length; i++) (steps[i] as Step)(r);
      if (r.pos !== end) {
        if (r.pos > end) throw new DataError(`Avro record truncated: needs more than its ${end - offset} bytes`, { context: { offset: r.pos } });
        throw new DataError(`${end - r.pos} bytes left after the Avro record: the bytes do not match the writer schema`, { context: { offset: r.pos } });
      }
      return this.sink.endRecord();
    } catch (e) {
      this.sink.abortRecord();
      if (e instanceof IcefloeError) throw e;
      // A foreign error while reading bytes (e.g. a RangeError) is bad data too; keep it as the cause.
      throw new DataError(`Avro record could not be decoded: ${(e as Error).message}`, { cause: e });
    } finally {
      r.buf = EMPTY;
    }
  }
}

/**
 * A decoder compiled for one (writer Avro schema, table Iceberg schema) pair. `bind(sink)` looks the
 * columns up once per sink (cached), so one program serves every partition writer of the table.
 */
export class AvroProgram {
  readonly writerSchema: AvroType;
  readonly table: Schema;
  private readonly binders: Binder[];
  private readonly bound = new WeakMap<RecordSink, BoundAvroDecoder>();

  constructor(writerSchema: AvroType, table: Schema, binders: Binder[]) {
    this.writerSchema = writerSchema;
    this.table = table;
    this.binders = binders;
  }

  bind(sink: RecordSink): BoundAvroDecoder {
    let d = this.bound.get(sink);
    if (d === undefined) {
      d = new BoundAvroDecoder(
        sink,
        this.binders.map((b) => b(sink)),
      );
      this.bound.set(sink, d);
    }
    return d;
  }

  /** Shorthand for bind(sink).decode(...). */
  decode(sink: RecordSink, buf: Uint8Array, offset = 0, end = buf.length): boolean {
    return this.bind(sink).decode(buf, offset, end);
  }
}

/**
 * Compiles a decoder from a writer Avro schema (JSON, text, or a resolveAvroSchema result) to a table
 * schema. ConfigError when the writer schema does not fit the table (a type that cannot be converted).
 */
export function compileAvroDecoder(writer: unknown, table: Schema, options: AvroDecoderOptions = {}): AvroProgram {
  const w = resolveAvroSchema(writer);
  if (w.type !== 'record') throw new ConfigError(`the writer schema must be an Avro record, not ${w.type}`);
  const binders = new Compiler(options).fields(w, table.fields, '');
  return new AvroProgram(w, table, binders);
}

// ---------------------------------------------------------------------------------------------------
// Confluent wire format
// ---------------------------------------------------------------------------------------------------

/** Confluent framing: magic byte 0, then the schema id as a big-endian int32, then the Avro body. */
export const CONFLUENT_HEADER_BYTES = 5;

/** The schema id of a Confluent-framed message; DataError when the framing is missing. */
export function confluentSchemaId(msg: Uint8Array): number {
  if (msg.length < CONFLUENT_HEADER_BYTES) throw new DataError(`message of ${msg.length} bytes is too short for the Confluent wire format`);
  if (msg[0] !== 0) throw new DataError(`unknown magic byte ${msg[0]} (expected 0: Confluent wire format)`);
  return (((msg[1] as number) << 24) | ((msg[2] as number) << 16) | ((msg[3] as number) << 8) | (msg[4] as number)) >>> 0;
}

/**
 * Decodes Confluent-framed Avro values for one table schema, with compiled programs cached by schema id.
 * Call `prepare(id)` (async: it may ask the registry) for the ids of a batch, then `decode` synchronously
 * per message; `decodeAsync` does both. A failed compile (a schema that does not fit the table, a schema
 * that is not Avro) is cached as deterministic; a resolver failure (RetriableError) is not. When the table
 * schema changes, make a new ConfluentAvroDecoder for it.
 */
export class ConfluentAvroDecoder {
  readonly table: Schema;
  private readonly resolver: SchemaResolver;
  private readonly options: AvroDecoderOptions;
  private readonly programs = new Map<number, AvroProgram | IcefloeError>();
  private readonly pending = new Map<number, Promise<AvroProgram>>();

  constructor(resolver: SchemaResolver, table: Schema, options: AvroDecoderOptions = {}) {
    this.resolver = resolver;
    this.table = table;
    this.options = options;
  }

  /** The program for a schema id, compiling it on first use. */
  async prepare(id: number): Promise<AvroProgram> {
    const cached = this.programs.get(id);
    if (cached instanceof AvroProgram) return cached;
    if (cached !== undefined) throw cached;
    let p = this.pending.get(id);
    if (p === undefined) {
      p = this.load(id);
      this.pending.set(id, p);
      p.then(
        () => this.pending.delete(id),
        () => this.pending.delete(id),
      );
    }
    return p;
  }

  private async load(id: number): Promise<AvroProgram> {
    const registered = await this.resolver.byId(id); // failures here are the adapter's (retriable) and not cached
    try {
      if (registered.type !== 'AVRO') throw new DataError(`schema id ${id} is ${registered.type}, not AVRO`, { context: { schemaId: id } });
      const program = compileAvroDecoder(registered.schema, this.table, this.options);
      this.programs.set(id, program);
      return program;
    } catch (e) {
      if (e instanceof IcefloeError && !e.retriable) this.programs.set(id, e);
      throw e;
    }
  }

  /** The compiled program for an id, if prepared. */
  program(id: number): AvroProgram | undefined {
    const p = this.programs.get(id);
    return p instanceof AvroProgram ? p : undefined;
  }

  /** Decodes one framed message into the sink (its schema id must have been prepared). */
  decode(msg: Uint8Array, sink: RecordSink): boolean {
    const id = confluentSchemaId(msg);
    const p = this.programs.get(id);
    if (p instanceof AvroProgram) return p.bind(sink).decode(msg, CONFLUENT_HEADER_BYTES, msg.length);
    if (p !== undefined) throw p;
    throw new FatalError(`schema id ${id} was not prepared: await prepare(${id}) before decode`);
  }

  async decodeAsync(msg: Uint8Array, sink: RecordSink): Promise<boolean> {
    const id = confluentSchemaId(msg);
    if (!(this.programs.get(id) instanceof AvroProgram)) await this.prepare(id);
    return this.decode(msg, sink);
  }
}
