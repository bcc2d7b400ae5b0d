/**
 * Compiling one proto value (a scalar, an enum, a nested message, a map entry, a Timestamp or a wrapper)
 * against its table column into a ValueSpec: its wire type, whether it may arrive packed, and how to bind
 * it to a sink so it reads one value and appends it. protobuf-message.ts builds messages from these.
 *
 * Owns: the value conversions (int → long/double, uint64 → decimal(20, 0), enum → its symbol's UTF-8 or
 * number, Timestamp → µs/ns, a wrapper → its optional scalar), the defaults written for absent proto3
 * scalars, and the ConfigError for a proto type that cannot become its column. Must not: read bytes
 * other than through protobuf-reader.ts, or allocate per value on the common path (only 64-bit values
 * beyond ±2^53 and unknown enum numbers allocate).
 */
import type protobuf from 'protobufjs';
import { columnFor } from './sink.ts';
import { ConfigError } from '../core/errors.ts';
import type { IcebergType, NestedField } from '../iceberg/types.ts';
import { mapParts, valueKind } from './protobuf-schema.ts';
import type { PbField, PbType, ValueKind } from './protobuf-schema.ts';
import type { RecordSink } from './sink.ts';
import { badData, EMPTY, INT32_TYPES, INT_READERS, MAX_LONG, readDouble, readFloat, readLength, readVarint, signed64, skipValue, truncated, UINT64_TYPES, WIRE_OF, WT_LEN, WT_VARINT } from './protobuf-reader.ts';
import type { IntRead, PbReader } from './protobuf-reader.ts';

/** Reads one value at r.pos (advancing past it) and appends it. */
export type Read = (r: PbReader) => void;
/** Decodes the fields of a message occupying [start, end) into their columns. */
export type Body = (r: PbReader, start: number, end: number) => void;

export interface BoundValue {
  readonly read: Read;
  /** The value to write when the field is absent: its default, or null. */
  readonly absent: () => void;
  /** For message-like values: the payload decoder (used to merge repeated occurrences). */
  readonly body?: Body;
  /** For message values: the struct column (merging writes begin/end around body). */
  readonly struct?: { begin(): void; end(): void };
}

export interface ValueSpec {
  /** The wire type of one (unpacked) value. */
  readonly wire: number;
  /** Numeric scalars may also arrive packed (repeated). */
  readonly packable: boolean;
  readonly bind: (sink: RecordSink) => BoundValue;
}

/** Where a proto value goes: a table field (or list element, map key/value) by id. */
export interface Target {
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

export function mismatch(path: string, proto: string, t: IcebergType, why = ''): ConfigError {
  return new ConfigError(`field ${path}: Protobuf ${proto} cannot be written to Iceberg ${t.kind}${why === '' ? '' : ` (${why})`}`, { context: { field: path } });
}

type PbEnum = protobuf.Enum;
const encoder = new TextEncoder();
export const NO_VALUE: BoundValue = { read: () => {}, absent: () => {} };

/**
 * The value half of the Protobuf compiler; `message` (protobuf-message.ts) is the other half, which this
 * one calls for nested messages and which calls `value` and `mapEntry` for its fields.
 */
export abstract class ProtobufValueCompiler {
  protected readonly caseInsensitive: boolean;

  constructor(options: ProtobufDecoderOptions) {
    this.caseInsensitive = options.caseInsensitive === true;
  }

  /** A message's fields against a struct's (or the table's) fields. */
  abstract message(t: PbType, fields: readonly NestedField[], prefix: string): (sink: RecordSink) => Body;

  protected index(fields: readonly NestedField[], prefix: string): (name: string) => NestedField | undefined {
    const byName = new Map<string, NestedField>();
    for (const f of fields) {
      const key = this.caseInsensitive ? f.name.toLowerCase() : f.name;
      if (byName.has(key)) throw new ConfigError(`table fields ${prefix}${f.name} and ${prefix}${byName.get(key)?.name} differ only in case`);
      byName.set(key, f);
    }
    return (name) => byName.get(this.caseInsensitive ? name.toLowerCase() : name);
  }


  /** map<K, V>: one entry message {key = 1, value = 2} at [start, end); an absent key or value → its default (message value → null). */
  protected mapEntry(f: PbField, target: Target): (sink: RecordSink) => Body {
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
