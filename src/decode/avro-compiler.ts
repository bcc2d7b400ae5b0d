/**
 * Compiling an Avro writer schema against a table's Iceberg schema into a tree of closures (Binders) that,
 * once bound to a sink, read a record's values and append each straight to its column by field id.
 *
 * Owns: writer → table resolution by field NAME (case-sensitive unless `caseInsensitive`; a writer field
 * the table lacks is read and discarded, a table field the writer lacks is left to the sink, which makes
 * it null), the union mapping of avro-schema.ts (`["null", T]` → optional T, other unions →
 * struct<tag, field0…>), and the value conversions (int → long/float/double, float → double, time units
 * → the column's, decimals as big-endian bytes, enum → its symbol's UTF-8, UUID text → 16 bytes). A writer
 * type that cannot become its column is a ConfigError here, since every record would fail.
 * Must not: read bytes other than through avro-reader.ts, or create strings, BigInts or objects per value
 * on the common path (strings go to `appendUtf8` as raw bytes; safe longs go through `appendNumber`).
 */
import { columnFor } from './sink.ts';
import { ConfigError } from '../core/errors.ts';
import type { IcebergType, NestedField, StructType } from '../iceberg/types.ts';
import { unionShape } from './avro-schema.ts';
import type { AvroArray, AvroEnum, AvroLogical, AvroMap, AvroPrimitive, AvroRecord, AvroType, AvroUnion } from './avro-schema.ts';
import type { RecordSink } from './sink.ts';
import { badData, compileSkip, formatDecimal, MAX_SAFE, minSize, parseUuid, readBlockCount, readDouble, readFloat, readInt, readLength, readLong, truncated } from './avro-reader.ts';
import type { AvroReader, Step } from './avro-reader.ts';

/** A compiled value reader, waiting for the sink whose columns it appends to. */
export type Binder = (sink: RecordSink) => Step;

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

export class AvroCompiler {
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
      case 'int':
        return this.int(w, t);
      case 'long':
        return this.longFrom(w, t);
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
        return this.string(w, t);
      case 'bytes':
        return this.bytesLike(w, w.logical, t, -1);
      case 'fixed':
        return this.bytesLike(w, w.logical, t, w.size);
      case 'enum':
        return this.enumSymbol(w, t);
      case 'record':
        return this.record(w, t);
      case 'array':
        return this.array(w, t);
      case 'map':
        return this.map(w, t);
    }
  }

  /** An Avro int (with its logical type) into int/date, float/double, or long/time/timestamp (widened, scaled up). */
  private int(w: AvroPrimitive, t: Target): Binder {
    const tt = t.type;
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

  /** An Avro long (with its logical type) into float/double, or long/time/timestamp in the column's unit. */
  private longFrom(w: AvroPrimitive, t: Target): Binder {
    const tt = t.type;
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

  /** An Avro string into a string column (raw UTF-8) or a uuid column (RFC 4122 text → 16 bytes). */
  private string(w: AvroType, t: Target): Binder {
    const tt = t.type;
    const path = t.path;
    if (tt.kind === 'string') {
      return (sink) => {
        const col = sink.string(t.id);
        return (r) => {
          const n = readLength(r, path);
          const p = r.pos;
          r.pos = p + n;
          col.appendUtf8(r.buf, p, p + n);
        };
      };
    }
    if (tt.kind !== 'uuid') throw mismatch(path, w, tt);
    return (sink) => {
      const col = sink.fixed(t.id);
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

  /** An enum into a string column: its symbol's UTF-8, encoded once at compile time. */
  private enumSymbol(w: AvroEnum, t: Target): Binder {
    if (t.type.kind !== 'string') throw mismatch(t.path, w, t.type);
    const symbols = w.symbols.map((s) => new Uint8Array(Buffer.from(s, 'utf8')));
    const path = t.path;
    return (sink) => {
      const col = sink.string(t.id);
      return (r) => {
        const i = readLong(r);
        const s = symbols[i];
        if (s === undefined) throw badData(path, `enum index ${i} out of range (${symbols.length} symbols)`);
        col.appendUtf8(s, 0, s.length);
      };
    };
  }

  private record(w: AvroRecord, t: Target): Binder {
    const tt = t.type;
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

  private array(w: AvroArray, t: Target): Binder {
    const tt = t.type;
    if (tt.kind !== 'list') throw mismatch(t.path, w, tt);
    const item = this.value(w.items, { id: tt.elementId, type: tt.element, path: `${t.path}.element` });
    const min = minSize(w.items);
    const path = t.path;
    return (sink) => {
      const col = sink.list(t.id);
      const step = item(sink);
      return (r) => {
        col.begin();
        for (let n = readBlockCount(r, min, path); n !== 0; n = readBlockCount(r, min, path)) {
          for (let i = 0; i < n; i++) step(r);
        }
        col.end();
      };
    };
  }

  private map(w: AvroMap, t: Target): Binder {
    const tt = t.type;
    if (tt.kind !== 'map') throw mismatch(t.path, w, tt);
    if (tt.key.kind !== 'string') throw mismatch(`${t.path}.key`, { type: 'string' }, tt.key);
    const value = this.value(w.values, { id: tt.valueId, type: tt.value, path: `${t.path}.value` });
    const min = 1 + minSize(w.values);
    const path = t.path;
    const keyPath = `${t.path}.key`;
    return (sink) => {
      const col = sink.map(t.id);
      const key = sink.string(tt.keyId);
      const step = value(sink);
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
