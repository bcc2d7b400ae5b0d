/**
 * Protobuf binary → columns, with no per-record JS object: a decoder is compiled once per (writer message,
 * table Iceberg schema) pair, bound once per sink (a write-stage RecordAppender, seen through sink.ts),
 * and then reads each message's bytes and appends every value straight to its column.
 *
 * Owns: the Protobuf wire format (protobuf.dev "Encoding": varints, zig-zag sint32/sint64, little-endian
 * fixed32/fixed64/float/double, length-delimited strings, bytes, messages and packed repeated scalars;
 * unknown fields — groups included — skipped; fields in any order; for a singular field the LAST
 * occurrence wins, and several occurrences of a singular message field are MERGED, as the spec says),
 * map entries, the proto → table resolution by field NAME (the field number only finds the slot a value
 * belongs to), value conversions (int → long/double, uint64 → decimal(20, 0), enum → its symbol's UTF-8,
 * Timestamp → µs/ns), the Confluent wire framing with its message-index list, and the decoder cache by
 * schema id. Must not: do I/O (the registry is a port), import src/write, or create strings, BigInts or
 * objects per value on the common path (only 64-bit values beyond ±2^53, unknown enum numbers and merged
 * repeated occurrences of a singular message allocate).
 *
 * How a message is decoded: a SCAN pass over its bytes records, per known field, how often it occurs,
 * where its last value starts and the span of its occurrences; an EMIT pass then writes every table field
 * once: singular fields from their last value (or their default / null when absent), repeated fields and
 * maps by re-reading the span of their occurrences (packed and unpacked alike), oneofs from whichever
 * member came last. Scan state lives in the compiled node (Int32Arrays), reused record after record;
 * a node is never re-entered while active because recursive messages are rejected at compile time.
 *
 * Presence (see protobuf-schema.ts): a proto3 scalar without presence that is absent is written as its
 * default (0, "", false, empty bytes, the enum's first value), because the wire cannot tell it from an
 * explicit default; a field with presence, an absent message, wrapper or Timestamp → null; an absent
 * proto2 `required` field → DataError. Lists and maps absent → empty.
 *
 * Per record: bytes that do not decode (truncated, a varint over 10 bytes, a wire type that does not
 * match the field's type, an end-group without its start) or a value that does not fit its column raise a
 * DataError naming the field, after `abortRecord()` rolled the partial record back. A proto type that
 * cannot be written to its table column is a ConfigError at compile time.
 */
import { float32At, float64At } from './wire.ts';
import { columnFor } from './sink.ts';
import protobuf from 'protobufjs';
import { ConfigError, DataError, FatalError, IcefloeError } from '../core/errors.ts';
import { CONFLUENT_HEADER_BYTES, confluentSchemaId } from './avro-decoder.ts';
import type { IcebergType, NestedField, Schema } from '../iceberg/types.ts';
import { mapParts, parseProtobufSchema, ProtobufSchema, realOneof, valueKind } from './protobuf-schema.ts';
import type { PbField, PbType, ProtobufSource, ValueKind } from './protobuf-schema.ts';
import type { SchemaResolver } from './registry-port.ts';
import type { RecordSink } from './sink.ts';

// ---------------------------------------------------------------------------------------------------
// Reading primitives (protobuf.dev/programming-guides/encoding)
// ---------------------------------------------------------------------------------------------------

const EMPTY = new Uint8Array(0);
const TWO_32 = 4294967296;
const HI_SAFE = 0x200000; // |hi| < 2^21 ⇒ hi·2^32 + lo is a safe integer

const WT_VARINT = 0;
const WT_I64 = 1;
const WT_LEN = 2;
const WT_SGROUP = 3;
const WT_EGROUP = 4;
const WT_I32 = 5;

/** The read position over one message. `hi` holds the high word of the last varint; `big` a 64-bit value beyond ±2^53. */
export class PbReader {
  buf: Uint8Array = EMPTY;
  pos = 0;
  end = 0;
  hi = 0;
  big = 0n;
}

function truncated(r: PbReader, path: string): DataError {
  return new DataError(`Protobuf message truncated at ${path || '<root>'} (byte ${r.pos} of ${r.end})`, { context: { field: path, offset: r.pos } });
}

function badData(path: string, what: string): DataError {
  return new DataError(`field ${path || '<root>'}: ${what}`, { context: { field: path } });
}

/** A varint: returns its low 32 bits (unsigned) and leaves the high 32 bits in `r.hi`. */
function readVarint(r: PbReader): number {
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
  throw new DataError(`Protobuf varint longer than 10 bytes at byte ${pos - 10}`, { context: { offset: pos - 10 } });
}

/** (lo, hi) as a signed 64-bit value: a number when safe, else NaN with the value in r.big. */
function signed64(r: PbReader, lo: number, hi: number): number {
  const h = hi | 0;
  if (h >= -HI_SAFE && h < HI_SAFE) return h * TWO_32 + lo;
  r.big = BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo));
  return Number.NaN;
}

function unsigned64(r: PbReader, lo: number, hi: number): number {
  const h = hi >>> 0;
  if (h < HI_SAFE) return h * TWO_32 + lo;
  r.big = (BigInt(h) << 32n) | BigInt(lo);
  return Number.NaN;
}

function zigzag64(r: PbReader, lo: number, hi: number): number {
  let nlo = ((lo >>> 1) | (hi << 31)) >>> 0;
  let nhi = hi >>> 1;
  if (lo & 1) {
    nlo = ~nlo >>> 0;
    nhi = ~nhi >>> 0;
  }
  return signed64(r, nlo, nhi);
}

function readU32LE(r: PbReader): number {
  const b = r.buf;
  const p = r.pos;
  r.pos = p + 4;
  return ((b[p] as number) | ((b[p + 1] as number) << 8) | ((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 24)) >>> 0;
}

function readFloat(r: PbReader): number {
  const v = float32At(r.buf, r.pos);
  r.pos += 4;
  return v;
}

function readDouble(r: PbReader): number {
  const v = float64At(r.buf, r.pos);
  r.pos += 8;
  return v;
}

/** A length prefix that the enclosing message (ending at `end`) can hold. */
function readLength(r: PbReader, end: number, path: string): number {
  const n = readVarint(r);
  if (r.hi !== 0 || n > end - r.pos) throw truncated(r, path);
  return n;
}

/** Skips one value of wire type wt (field number no, for groups). */
function skipValue(r: PbReader, wt: number, no: number, end: number, path: string): void {
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

// ---------------------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------------------

/** Reads one value at r.pos (advancing past it) and appends it. */
type Read = (r: PbReader) => void;
/** Decodes the fields of a message occupying [start, end) into their columns. */
type Body = (r: PbReader, start: number, end: number) => void;

interface BoundValue {
  readonly read: Read;
  /** The value to write when the field is absent: its default, or null. */
  readonly absent: () => void;
  /** For message-like values: the payload decoder (used to merge repeated occurrences). */
  readonly body?: Body;
  /** For message values: the struct column (merging writes begin/end around body). */
  readonly struct?: { begin(): void; end(): void };
}

interface ValueSpec {
  /** The wire type of one (unpacked) value. */
  readonly wire: number;
  /** Numeric scalars may also arrive packed (repeated). */
  readonly packable: boolean;
  readonly bind: (sink: RecordSink) => BoundValue;
}

/** Where a proto value goes: a table field (or list element, map key/value) by id. */
interface Target {
  readonly id: number;
  readonly type: IcebergType;
  readonly path: string;
  /** The column may hold null (optional field, element or value). */
  readonly optional: boolean;
}

export interface ProtobufDecoderOptions {
  /** `iceberg.tables.schema-case-insensitive`: match proto field names to table fields ignoring case. */
  readonly caseInsensitive?: boolean;
}

function mismatch(path: string, proto: string, t: IcebergType, why = ''): ConfigError {
  return new ConfigError(`field ${path}: Protobuf ${proto} cannot be written to Iceberg ${t.kind}${why === '' ? '' : ` (${why})`}`, { context: { field: path } });
}


const WIRE_OF: Readonly<Record<string, number>> = {
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
type IntRead = (r: PbReader) => number;

const INT_READERS: Readonly<Record<string, IntRead>> = {
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
const INT32_TYPES = new Set(['int32', 'sint32', 'sfixed32']);
const UINT64_TYPES = new Set(['uint64', 'fixed64']);
const MAX_LONG = (1n << 63n) - 1n;

type PbEnum = protobuf.Enum;
const encoder = new TextEncoder();
const NO_VALUE: BoundValue = { read: () => {}, absent: () => {} };

class Compiler {
  private readonly caseInsensitive: boolean;

  constructor(options: ProtobufDecoderOptions) {
    this.caseInsensitive = options.caseInsensitive === true;
  }

  private index(fields: readonly NestedField[], prefix: string): (name: string) => NestedField | undefined {
    const byName = new Map<string, NestedField>();
    for (const f of fields) {
      const key = this.caseInsensitive ? f.name.toLowerCase() : f.name;
      if (byName.has(key)) throw new ConfigError(`table fields ${prefix}${f.name} and ${prefix}${byName.get(key)?.name} differ only in case`);
      byName.set(key, f);
    }
    return (name) => byName.get(this.caseInsensitive ? name.toLowerCase() : name);
  }

  /** A message's fields against a struct's (or the table's) fields. */
  message(t: PbType, fields: readonly NestedField[], prefix: string): (sink: RecordSink) => Body {
    const find = this.index(fields, prefix);
    const used = new Set<number>();
    const claim = (tf: NestedField, what: string): void => {
      if (used.has(tf.id)) throw new ConfigError(`Protobuf fields of ${t.name} map to table field ${prefix}${tf.name} twice (${what})`);
      used.add(tf.id);
    };

    // Slots: one per proto field that has a column.
    const slotFields: PbField[] = [];
    const slotSpecs: ValueSpec[] = [];
    const emitters: ((sink: RecordSink) => (r: PbReader) => void)[] = [];
    const slotOfField = new Map<PbField, number>();
    const slotPacked: boolean[] = [];
    /** A slot for a proto field; only a repeated scalar also accepts the packed (length-delimited) form. */
    const addSlot = (f: PbField, spec: ValueSpec, repeated = false): number => {
      const s = slotFields.length;
      slotFields.push(f);
      slotSpecs.push(spec);
      slotPacked.push(repeated && spec.packable);
      slotOfField.set(f, s);
      return s;
    };

    const maxNo = t.fieldsArray.reduce((m, f) => Math.max(m, f.id), 0);
    const dense = maxNo <= 4096;
    const state = {
      count: new Int32Array(0),
      vstart: new Int32Array(0),
      first: new Int32Array(0),
      last: new Int32Array(0),
    };

    const oneofsDone = new Set<unknown>();
    for (const f of t.fieldsArray) {
      const oneof = realOneof(f);
      if (oneof !== null) {
        if (oneofsDone.has(oneof)) continue;
        oneofsDone.add(oneof);
        const tf = find(oneof.name);
        if (tf === undefined) continue; // not in the table: its members are skipped as unknown fields
        const opath = `${prefix}${tf.name}`;
        if (tf.type.kind !== 'struct') throw mismatch(opath, `oneof ${oneof.name}`, tf.type, 'a oneof needs a struct of its members');
        claim(tf, 'oneof');
        const mfind = this.index(tf.type.fields, `${opath}.`);
        const members: { slot: number; spec: ValueSpec }[] = [];
        for (const m of oneof.fieldsArray) {
          const mf = mfind(m.name);
          if (mf === undefined) continue;
          const spec = this.value(valueKind(m.type, m.resolvedType, `${opath}.${m.name}`), { id: mf.id, type: mf.type, path: `${opath}.${mf.name}`, optional: true });
          members.push({ slot: addSlot(m, spec), spec });
        }
        const target: Target = { id: tf.id, type: tf.type, path: opath, optional: !tf.required };
        emitters.push((sink) => {
          const col = sink.struct(target.id);
          const bound = members.map((m) => ({ slot: m.slot, v: m.spec.bind(sink) }));
          return (r) => {
            // The member set last wins (a oneof holds one value).
            let win = -1;
            let at = -1;
            for (let i = 0; i < bound.length; i++) {
              const s = (bound[i] as { slot: number }).slot;
              if ((state.count[s] as number) > 0 && (state.last[s] as number) > at) {
                at = state.last[s] as number;
                win = i;
              }
            }
            if (win < 0) {
              col.appendNull();
              return;
            }
            const b = bound[win] as { slot: number; v: BoundValue };
            col.begin();
            emitSingular(r, b.slot, b.v);
            col.end();
          };
        });
        continue;
      }
      const tf = find(f.name);
      if (tf === undefined) continue; // not in the table: skipped as an unknown field
      claim(tf, f.name);
      const target: Target = { id: tf.id, type: tf.type, path: `${prefix}${tf.name}`, optional: !tf.required };
      if (f.map) {
        const entry = this.mapEntry(f, target);
        const s = addSlot(f, { wire: WT_LEN, packable: false, bind: () => NO_VALUE });
        const no = f.id;
        emitters.push((sink) => {
          const col = sink.map(target.id);
          const e = entry(sink);
          const path = target.path;
          return (r) => {
            col.begin();
            if ((state.count[s] as number) > 0) {
              const end = state.last[s] as number;
              r.pos = state.first[s] as number;
              while (r.pos < end) {
                const tag = readVarint(r);
                if (tag >>> 3 !== no) {
                  skipValue(r, tag & 7, tag >>> 3, end, path);
                  continue;
                }
                const n = readLength(r, end, path);
                const ps = r.pos;
                e(r, ps, ps + n);
              }
            }
            col.end();
          };
        });
        continue;
      }
      const vk = valueKind(f.type, f.resolvedType, target.path);
      if (f.repeated) {
        if (tf.type.kind !== 'list') throw mismatch(target.path, `repeated ${f.type}`, tf.type, 'a repeated field needs a list');
        const el = tf.type;
        const spec = this.value(vk, { id: el.elementId, type: el.element, path: `${target.path}.element`, optional: !el.elementRequired });
        const s = addSlot(f, spec, true);
        emitters.push((sink) => {
          const col = sink.list(target.id);
          const v = spec.bind(sink);
          const path = target.path;
          const packable = spec.packable;
          const wire = spec.wire;
          const no = f.id;
          return (r) => {
            col.begin();
            if ((state.count[s] as number) > 0) {
              const end = state.last[s] as number;
              r.pos = state.first[s] as number;
              while (r.pos < end) {
                const tag = readVarint(r);
                const wt = tag & 7;
                if (tag >>> 3 !== no) {
                  skipValue(r, wt, tag >>> 3, end, path);
                  continue;
                }
                if (wt === WT_LEN && packable) {
                  const n = readLength(r, end, path);
                  const pe = r.pos + n;
                  while (r.pos < pe) v.read(r);
                  if (r.pos !== pe) throw badData(path, 'packed values overrun their length');
                } else {
                  if (wt !== wire) throw badData(path, `wire type ${wt} is not ${wire}`);
                  v.read(r);
                }
              }
            }
            col.end();
          };
        });
        continue;
      }
      const spec = this.value(vk, target);
      const presence = f.hasPresence;
      const required = f.required;
      const s = addSlot(f, spec);
      emitters.push((sink) => {
        const v = spec.bind(sink);
        const col = columnFor(sink, target);
        const path = target.path;
        // Absent: a field with presence is null (required: a DataError); a proto3 implicit scalar is its default.
        const absent = required
          ? (): void => {
              throw badData(path, 'required field is missing');
            }
          : presence || vk.kind === 'message' || vk.kind === 'timestamp' || vk.kind === 'wrapper'
            ? (): void => col.appendNull()
            : v.absent;
        const bv: BoundValue = { ...v, absent };
        return (r) => emitSingular(r, s, bv);
      });
    }

    const n = slotFields.length;
    state.count = new Int32Array(n);
    state.vstart = new Int32Array(n);
    state.first = new Int32Array(n);
    state.last = new Int32Array(n);
    const wires = Int8Array.from(slotSpecs.map((s) => s.wire));
    const packable = Uint8Array.from(slotPacked.map((p) => (p ? 1 : 0)));
    const numbers = slotFields.map((f) => f.id);
    let slotOf: Int32Array | Map<number, number>;
    if (dense) {
      const a = new Int32Array(maxNo + 1).fill(-1);
      numbers.forEach((no, s) => (a[no] = s));
      slotOf = a;
    } else slotOf = new Map(numbers.map((no, s) => [no, s]));
    const path = prefix === '' ? '' : prefix.slice(0, -1);

    /** The singular value of slot s: the last occurrence, several message occurrences merged, or absent. */
    const emitSingular = (r: PbReader, s: number, v: BoundValue): void => {
      const c = state.count[s] as number;
      if (c === 0) {
        v.absent();
        return;
      }
      if (c > 1 && v.body !== undefined) {
        mergeOccurrences(r, s, v);
        return;
      }
      r.pos = state.vstart[s] as number;
      v.read(r);
    };

    /** Spec: "a message field that appears more than once is merged" — parse the concatenation of the payloads. */
    const mergeOccurrences = (r: PbReader, s: number, v: BoundValue): void => {
      const no = numbers[s] as number;
      const end = state.last[s] as number;
      const parts: Uint8Array[] = [];
      r.pos = state.first[s] as number;
      while (r.pos < end) {
        const tag = readVarint(r);
        if (tag >>> 3 !== no) {
          skipValue(r, tag & 7, tag >>> 3, end, path);
          continue;
        }
        const len = readLength(r, end, path);
        parts.push(r.buf.subarray(r.pos, r.pos + len));
        r.pos += len;
      }
      const total = parts.reduce((a, p) => a + p.length, 0);
      const merged = new Uint8Array(total);
      let o = 0;
      for (const p of parts) {
        merged.set(p, o);
        o += p.length;
      }
      const saved = { buf: r.buf, end: r.end };
      r.buf = merged;
      r.end = total;
      try {
        v.struct?.begin();
        (v.body as Body)(r, 0, total);
        v.struct?.end();
      } finally {
        r.buf = saved.buf;
        r.end = saved.end;
      }
    };

    const scan = (r: PbReader, start: number, end: number): void => {
      const { count, vstart, first, last } = state;
      count.fill(0);
      r.pos = start;
      while (r.pos < end) {
        const tagPos = r.pos;
        const tag = readVarint(r);
        const no = tag >>> 3;
        const wt = tag & 7;
        if (no === 0 || r.hi !== 0) throw badData(path, `invalid field number at byte ${tagPos}`);
        const s = dense ? ((slotOf as Int32Array)[no] ?? -1) : ((slotOf as Map<number, number>).get(no) ?? -1);
        if (s < 0) {
          skipValue(r, wt, no, end, path);
          continue;
        }
        if (wt !== wires[s] && !(wt === WT_LEN && packable[s] === 1)) {
          throw badData(`${prefix}${(slotFields[s] as PbField).name}`, `wire type ${wt} does not match the field's type ${(slotFields[s] as PbField).type}`);
        }
        if ((count[s] as number) === 0) first[s] = tagPos;
        count[s] = (count[s] as number) + 1;
        vstart[s] = r.pos;
        skipValue(r, wt, no, end, path);
        last[s] = r.pos;
      }
      if (r.pos !== end) throw truncated(r, path);
    };

    return (sink) => {
      const steps = emitters.map((e) => e(sink));
      return (r, start, end) => {
        scan(r, start, end);
        for (let i = 0; i < steps.length; i++) (steps[i] as (r: PbReader) => void)(r);
        r.pos = end;
      };
    };
  }

  /** map<K, V>: one entry message {key = 1, value = 2} at [start, end); an absent key or value → its default (message value → null). */
  private mapEntry(f: PbField, target: Target): (sink: RecordSink) => Body {
    const tt = target.type;
    const { keyType, valueType, resolved } = mapParts(f);
    if (tt.kind !== 'map') throw mismatch(target.path, `map<${keyType}, ${valueType}>`, tt, 'a map field needs a map');
    const keySpec = this.value({ kind: 'scalar', type: keyType }, { id: tt.keyId, type: tt.key, path: `${target.path}.key`, optional: false });
    const vk = valueKind(valueType, resolved, `${target.path}.value`);
    const valTarget: Target = { id: tt.valueId, type: tt.value, path: `${target.path}.value`, optional: !tt.valueRequired };
    const valSpec = this.value(vk, valTarget);
    const path = target.path;
    const messageValue = vk.kind === 'message' || vk.kind === 'timestamp' || vk.kind === 'wrapper';
    const keyWire = keySpec.wire;
    const valWire = valSpec.wire;
    return (sink) => {
      const key = keySpec.bind(sink);
      const val = valSpec.bind(sink);
      const valCol = columnFor(sink, valTarget);
      const valAbsent = messageValue ? (): void => valCol.appendNull() : val.absent;
      return (r, start, end) => {
        let kp = -1;
        let vp = -1;
        r.pos = start;
        while (r.pos < end) {
          const tag = readVarint(r);
          const no = tag >>> 3;
          const wt = tag & 7;
          if (no === 1 || no === 2) {
            const want = no === 1 ? keyWire : valWire;
            if (wt !== want) throw badData(`${path}.${no === 1 ? 'key' : 'value'}`, `wire type ${wt} is not ${want}`);
            if (no === 1) kp = r.pos;
            else vp = r.pos;
          }
          skipValue(r, wt, no, end, path);
        }
        if (r.pos !== end) throw truncated(r, path);
        if (kp < 0) key.absent();
        else {
          r.pos = kp;
          key.read(r);
        }
        if (vp < 0) valAbsent();
        else {
          r.pos = vp;
          val.read(r);
        }
        r.pos = end;
      };
    };
  }

  /** A singular value of a proto type into a target column. */
  value(k: ValueKind, t: Target): ValueSpec {
    switch (k.kind) {
      case 'scalar':
        return this.scalar(k.type, t);
      case 'enum':
        return this.enumValue(k.type, t);
      case 'timestamp':
        return this.timestamp(t);
      case 'wrapper':
        return this.wrapper(k.type, t);
      case 'message': {
        if (t.type.kind !== 'struct') throw mismatch(t.path, `message ${k.type.name}`, t.type);
        const body = this.message(k.type, t.type.fields, `${t.path}.`);
        const path = t.path;
        return {
          wire: WT_LEN,
          packable: false,
          bind: (sink) => {
            const col = sink.struct(t.id);
            const b = body(sink);
            return {
              read: (r) => {
                const n = readLength(r, r.end, path);
                const ps = r.pos;
                col.begin();
                b(r, ps, ps + n);
                col.end();
                r.pos = ps + n;
              },
              absent: () => col.appendNull(),
              body: b,
              struct: col,
            };
          },
        };
      }
    }
  }

  private scalar(type: string, t: Target): ValueSpec {
    const wire = WIRE_OF[type];
    if (wire === undefined) throw new ConfigError(`field ${t.path}: unknown Protobuf scalar ${type}`);
    const tt = t.type;
    const path = t.path;
    const packable = wire !== WT_LEN;
    switch (type) {
      case 'bool':
        if (tt.kind !== 'boolean') throw mismatch(path, type, tt);
        return {
          wire,
          packable,
          bind: (sink) => {
            const col = sink.boolean(t.id);
            return { read: (r) => col.append((readVarint(r) | r.hi) !== 0), absent: () => col.append(false) };
          },
        };
      case 'float':
      case 'double': {
        if (!(tt.kind === 'double' || (tt.kind === 'float' && type === 'float'))) throw mismatch(path, type, tt);
        const rd = type === 'float' ? readFloat : readDouble;
        return {
          wire,
          packable,
          bind: (sink) => {
            const col = tt.kind === 'float' ? sink.float(t.id) : sink.double(t.id);
            return { read: (r) => col.append(rd(r)), absent: () => col.append(0) };
          },
        };
      }
      case 'string':
        if (tt.kind !== 'string') throw mismatch(path, type, tt);
        return {
          wire,
          packable,
          bind: (sink) => {
            const col = sink.string(t.id);
            return {
              read: (r) => {
                const n = readLength(r, r.end, path);
                const p = r.pos;
                r.pos = p + n;
                col.appendUtf8(r.buf, p, p + n);
              },
              absent: () => col.appendUtf8(EMPTY, 0, 0),
            };
          },
        };
      case 'bytes':
        if (tt.kind !== 'binary' && tt.kind !== 'fixed' && tt.kind !== 'uuid') throw mismatch(path, type, tt);
        return {
          wire,
          packable,
          bind: (sink) => {
            const col = tt.kind === 'binary' ? sink.binary(t.id) : sink.fixed(t.id);
            return {
              read: (r) => {
                const n = readLength(r, r.end, path);
                const p = r.pos;
                r.pos = p + n;
                col.append(r.buf, p, p + n); // a fixed column checks the width
              },
              absent: () => col.append(EMPTY, 0, 0),
            };
          },
        };
      default:
        return this.integer(type, wire, t);
    }
  }

  private integer(type: string, wire: number, t: Target): ValueSpec {
    const rd = INT_READERS[type] as IntRead;
    const tt = t.type;
    const path = t.path;
    const unsigned64 = UINT64_TYPES.has(type);
    switch (tt.kind) {
      case 'int':
        if (!INT32_TYPES.has(type)) throw mismatch(path, type, tt, 'it may not fit 32 bits');
        return { wire, packable: true, bind: (sink) => { const col = sink.int(t.id); return { read: (r) => col.append(rd(r)), absent: () => col.append(0) }; } };
      case 'long':
        return {
          wire,
          packable: true,
          bind: (sink) => {
            const col = sink.long(t.id);
            return {
              read: (r) => {
                const v = rd(r);
                if (v === v) col.appendNumber(v);
                else if (unsigned64 && r.big > MAX_LONG) throw badData(path, `${r.big} does not fit a long`);
                else col.append(r.big);
              },
              absent: () => col.appendNumber(0),
            };
          },
        };
      case 'decimal':
        if (tt.scale !== 0) throw mismatch(path, type, tt, 'an integer needs scale 0');
        return {
          wire,
          packable: true,
          bind: (sink) => {
            const col = sink.decimal(t.id);
            return {
              read: (r) => {
                const v = rd(r);
                if (v === v) col.appendUnscaledNumber(v);
                else col.appendUnscaled(r.big);
              },
              absent: () => col.appendUnscaledNumber(0),
            };
          },
        };
      case 'float':
      case 'double':
        return {
          wire,
          packable: true,
          bind: (sink) => {
            const col = tt.kind === 'float' ? sink.float(t.id) : sink.double(t.id);
            return {
              read: (r) => {
                const v = rd(r);
                col.append(v === v ? v : Number(r.big));
              },
              absent: () => col.append(0),
            };
          },
        };
      default:
        throw mismatch(path, type, tt);
    }
  }

  private enumValue(e: PbEnum, t: Target): ValueSpec {
    const tt = t.type;
    const path = t.path;
    const entries = Object.entries(e.values);
    const dflt = entries[0]?.[1] ?? 0;
    if (tt.kind === 'int' || tt.kind === 'long') {
      return {
        wire: WT_VARINT,
        packable: true,
        bind: (sink) => {
          if (tt.kind === 'int') {
            const col = sink.int(t.id);
            return { read: (r) => col.append(readVarint(r) | 0), absent: () => col.append(dflt) };
          }
          const col = sink.long(t.id);
          return { read: (r) => col.appendNumber(readVarint(r) | 0), absent: () => col.appendNumber(dflt) };
        },
      };
    }
    if (tt.kind !== 'string') throw mismatch(path, `enum ${e.name}`, tt);
    // The symbol's UTF-8, precomputed (the first name wins for aliases); an unknown number → its decimal text.
    const names = new Map<number, Uint8Array>();
    for (const [name, n] of entries) if (!names.has(n)) names.set(n, encoder.encode(name));
    const dense: Uint8Array[] = [];
    for (const [n, b] of names) if (n >= 0 && n < 1024) dense[n] = b;
    const dfltBytes = names.get(dflt) ?? encoder.encode(String(dflt));
    return {
      wire: WT_VARINT,
      packable: true,
      bind: (sink) => {
        const col = sink.string(t.id);
        return {
          read: (r) => {
            const n = readVarint(r) | 0;
            const b = (n >= 0 && n < 1024 ? dense[n] : names.get(n)) ?? encoder.encode(String(n));
            col.appendUtf8(b, 0, b.length);
          },
          absent: () => col.appendUtf8(dfltBytes, 0, dfltBytes.length),
        };
      },
    };
  }

  /** google.protobuf.Timestamp {int64 seconds = 1; int32 nanos = 2} → µs (timestamp, timestamptz) or ns (the _ns types). */
  private timestamp(t: Target): ValueSpec {
    const tt = t.type;
    const path = t.path;
    let nanosPerUnit: number;
    if (tt.kind === 'timestamp' || tt.kind === 'timestamptz') nanosPerUnit = 1000;
    else if (tt.kind === 'timestamp_ns' || tt.kind === 'timestamptz_ns') nanosPerUnit = 1;
    else throw mismatch(path, 'google.protobuf.Timestamp', tt);
    const unitsPerSecond = 1e9 / nanosPerUnit;
    const safeSeconds = Math.floor(Number.MAX_SAFE_INTEGER / unitsPerSecond) - 1;
    return {
      wire: WT_LEN,
      packable: false,
      bind: (sink) => {
        const col = sink.long(t.id);
        const body: Body = (r, start, end) => {
          let secLo = 0;
          let secHi = 0;
          let nanos = 0;
          r.pos = start;
          while (r.pos < end) {
            const tag = readVarint(r);
            const no = tag >>> 3;
            const wt = tag & 7;
            if ((no === 1 || no === 2) && wt === WT_VARINT) {
              const lo = readVarint(r);
              if (no === 1) {
                secLo = lo;
                secHi = r.hi;
              } else nanos = lo | 0;
            } else skipValue(r, wt, no, end, path);
          }
          if (r.pos !== end) throw truncated(r, path);
          if (nanos < 0 || nanos > 999_999_999) throw badData(path, `Timestamp nanos ${nanos} out of range`);
          const sec = signed64(r, secLo, secHi);
          const sub = Math.floor(nanos / nanosPerUnit);
          if (sec === sec && sec >= -safeSeconds && sec <= safeSeconds) col.appendNumber(sec * unitsPerSecond + sub);
          else col.append((sec === sec ? BigInt(sec) : r.big) * BigInt(unitsPerSecond) + BigInt(sub));
        };
        return {
          read: (r) => {
            const n = readLength(r, r.end, path);
            const ps = r.pos;
            body(r, ps, ps + n);
            r.pos = ps + n;
          },
          absent: () => col.appendNull(),
          body,
        };
      },
    };
  }

  /** google.protobuf.*Value {T value = 1} → the optional scalar (a present wrapper without value → the default). */
  private wrapper(type: string, t: Target): ValueSpec {
    const inner = this.scalar(type, t);
    const path = t.path;
    const want = inner.wire;
    return {
      wire: WT_LEN,
      packable: false,
      bind: (sink) => {
        const iv = inner.bind(sink);
        const col = columnFor(sink, t);
        const body: Body = (r, start, end) => {
          let vp = -1;
          r.pos = start;
          while (r.pos < end) {
            const tag = readVarint(r);
            const no = tag >>> 3;
            const wt = tag & 7;
            if (no === 1) {
              if (wt !== want) throw badData(path, `wire type ${wt} is not ${want}`);
              vp = r.pos;
            }
            skipValue(r, wt, no, end, path);
          }
          if (r.pos !== end) throw truncated(r, path);
          if (vp < 0) iv.absent();
          else {
            r.pos = vp;
            iv.read(r);
          }
          r.pos = end;
        };
        return {
          read: (r) => {
            const n = readLength(r, r.end, path);
            const ps = r.pos;
            body(r, ps, ps + n);
          },
          absent: () => col.appendNull(),
          body,
        };
      },
    };
  }
}

// ---------------------------------------------------------------------------------------------------
// Programs and bound decoders
// ---------------------------------------------------------------------------------------------------

/** A decoder bound to one sink: `decode` appends one record and returns endRecord()'s flush hint. */
export class BoundProtobufDecoder {
  readonly sink: RecordSink;
  private readonly body: Body;
  private readonly reader = new PbReader();

  constructor(sink: RecordSink, body: Body) {
    this.sink = sink;
    this.body = body;
  }

  /**
   * Decodes one Protobuf message from `buf[offset, end)` into the sink. On a DataError the partial record
   * is rolled back with abortRecord() before the error is rethrown; the sink stays usable.
   */
  decode(buf: Uint8Array, offset = 0, end = buf.length): boolean {
    const r = this.reader;
    r.buf = buf;
    r.pos = offset;
    r.end = end;
    try {
      this.body(r, offset, end);
      return this.sink.endRecord();
    } catch (e) {
      this.sink.abortRecord();
      if (e instanceof IcefloeError) throw e;
      throw new DataError(`Protobuf message could not be decoded: ${(e as Error).message}`, { cause: e });
    } finally {
      r.buf = EMPTY;
    }
  }
}

/** A decoder compiled for one (writer message, table schema) pair; `bind(sink)` looks the columns up once per sink. */
export class ProtobufProgram {
  readonly message: PbType;
  readonly table: Schema;
  private readonly binder: (sink: RecordSink) => Body;
  private readonly bound = new WeakMap<RecordSink, BoundProtobufDecoder>();

  constructor(message: PbType, table: Schema, binder: (sink: RecordSink) => Body) {
    this.message = message;
    this.table = table;
    this.binder = binder;
  }

  bind(sink: RecordSink): BoundProtobufDecoder {
    let d = this.bound.get(sink);
    if (d === undefined) {
      d = new BoundProtobufDecoder(sink, this.binder(sink));
      this.bound.set(sink, d);
    }
    return d;
  }

  decode(sink: RecordSink, buf: Uint8Array, offset = 0, end = buf.length): boolean {
    return this.bind(sink).decode(buf, offset, end);
  }
}

export interface CompileProtobufOptions extends ProtobufDecoderOptions {
  /** Which message of the schema: a full name or a Confluent message-index path (default [0]). */
  readonly message?: string | readonly number[];
}

/**
 * Compiles a decoder from a writer message (a .proto text / registry answer / parsed schema, plus which
 * message) to a table schema. ConfigError when the message does not fit the table.
 */
export function compileProtobufDecoder(writer: string | ProtobufSource | ProtobufSchema | PbType, table: Schema, options: CompileProtobufOptions = {}): ProtobufProgram {
  let t: PbType;
  if (writer instanceof protobuf.Type) t = writer;
  else {
    const schema = writer instanceof ProtobufSchema ? writer : parseProtobufSchema(writer);
    t = typeof options.message === 'string' ? schema.byName(options.message) : schema.message(options.message ?? [0]);
  }
  const binder = new Compiler(options).message(t, table.fields, '');
  return new ProtobufProgram(t, table, binder);
}

// ---------------------------------------------------------------------------------------------------
// Confluent wire format
// ---------------------------------------------------------------------------------------------------

/**
 * Confluent Protobuf framing: magic 0, the schema id (big-endian int32), then the message-index list —
 * zig-zag varints: the count, then that many indexes (the path to the message: top-level index, then
 * nested) — with the single byte 0 meaning [0] (the file's first message) — then the message.
 * Returns the path (null for [0], so the common case allocates nothing) and where the message starts.
 */
export function confluentMessageIndexes(msg: Uint8Array, offset = CONFLUENT_HEADER_BYTES): { indexes: number[] | null; start: number } {
  const r = new PbReader();
  r.buf = msg;
  r.pos = offset;
  r.end = msg.length;
  const zz = (): number => {
    if (r.pos >= msg.length) throw new DataError('Confluent Protobuf frame truncated in its message-index list');
    const n = readVarint(r);
    return (n >>> 1) ^ -(n & 1);
  };
  const count = zz();
  if (count === 0) return { indexes: null, start: r.pos };
  if (count < 0 || count > 100) throw new DataError(`Confluent Protobuf frame has a message-index count of ${count}`);
  const indexes: number[] = [];
  for (let i = 0; i < count; i++) {
    const k = zz();
    if (k < 0) throw new DataError(`Confluent Protobuf frame has a negative message index ${k}`);
    indexes.push(k);
  }
  return { indexes, start: r.pos };
}

interface Entry {
  readonly schema: ProtobufSchema;
  first?: ProtobufProgram | IcefloeError;
  readonly byPath: Map<string, ProtobufProgram | IcefloeError>;
}

export interface ConfluentProtobufOptions extends ProtobufDecoderOptions {
  /**
   * True (default): frames carry Confluent's message-index list. False: they do not — what
   * @kafkajs/confluent-schema-registry 4.1 writes (docs/stack.md); the message is then the file's first.
   */
  readonly messageIndexes?: boolean;
}

/**
 * Decodes Confluent-framed Protobuf values for one table schema, with parsed schemas cached by id and
 * compiled programs by (id, message-index path). Call `prepare(id)` (async: it may ask the registry) for
 * the ids of a batch, then `decode` synchronously per message; `decodeAsync` does both. A schema that is
 * not Protobuf or does not parse, and a message that does not fit the table, are cached as deterministic
 * failures; a resolver failure (RetriableError) is not. When the table schema changes, make a new decoder.
 */
export class ConfluentProtobufDecoder {
  readonly table: Schema;
  private readonly resolver: SchemaResolver;
  private readonly options: ConfluentProtobufOptions;
  private readonly entries = new Map<number, Entry | IcefloeError>();
  private readonly pending = new Map<number, Promise<ProtobufSchema>>();

  constructor(resolver: SchemaResolver, table: Schema, options: ConfluentProtobufOptions = {}) {
    this.resolver = resolver;
    this.table = table;
    this.options = options;
  }

  /** The parsed schema for an id, fetching it on first use. */
  async prepare(id: number): Promise<ProtobufSchema> {
    const cached = this.entries.get(id);
    if (cached instanceof IcefloeError) throw cached;
    if (cached !== undefined) return cached.schema;
    let p = this.pending.get(id);
    if (p === undefined) {
      p = this.load(id);
      this.pending.set(id, p);
      const clear = (): void => {
        this.pending.delete(id);
      };
      p.then(clear, clear);
    }
    return p;
  }

  private async load(id: number): Promise<ProtobufSchema> {
    const registered = await this.resolver.byId(id); // retriable failures are the adapter's, not cached
    try {
      if (registered.type !== 'PROTOBUF') throw new DataError(`schema id ${id} is ${registered.type}, not PROTOBUF`, { context: { schemaId: id } });
      const schema = parseProtobufSchema(registered);
      this.entries.set(id, { schema, byPath: new Map() });
      return schema;
    } catch (e) {
      if (e instanceof IcefloeError && !e.retriable) this.entries.set(id, e);
      throw e;
    }
  }

  /** The program for an id (prepared) and message path, compiled on first use. */
  program(id: number, indexes: readonly number[] | null = null): ProtobufProgram {
    const e = this.entries.get(id);
    if (e instanceof IcefloeError) throw e;
    if (e === undefined) throw new FatalError(`schema id ${id} was not prepared: await prepare(${id}) before decode`);
    let p: ProtobufProgram | IcefloeError | undefined;
    const isFirst = indexes === null || (indexes.length === 1 && indexes[0] === 0);
    const key = isFirst ? '' : (indexes as readonly number[]).join('.');
    p = isFirst ? e.first : e.byPath.get(key);
    if (p === undefined) {
      try {
        p = compileProtobufDecoder(e.schema, this.table, { ...this.options, message: indexes ?? [0] });
      } catch (err) {
        if (!(err instanceof IcefloeError) || err.retriable) throw err;
        p = err;
      }
      if (isFirst) e.first = p;
      else e.byPath.set(key, p);
    }
    if (p instanceof IcefloeError) throw p;
    return p;
  }

  /** Decodes one framed message into the sink (its schema id must have been prepared). */
  decode(msg: Uint8Array, sink: RecordSink): boolean {
    const id = confluentSchemaId(msg);
    if (this.options.messageIndexes === false) return this.program(id).bind(sink).decode(msg, CONFLUENT_HEADER_BYTES, msg.length);
    const { indexes, start } = confluentMessageIndexes(msg);
    return this.program(id, indexes).bind(sink).decode(msg, start, msg.length);
  }

  async decodeAsync(msg: Uint8Array, sink: RecordSink): Promise<boolean> {
    const id = confluentSchemaId(msg);
    if (!this.entries.has(id)) await this.prepare(id);
    return this.decode(msg, sink);
  }
}
