/**
 * Writers compiled once per table schema that walk a parsed JSON value into the table's columns by field
 * NAME (case-insensitive when asked), with Connect JsonConverter's encodings:
 * - boolean ← true/false; int ← integer in int32; long ← integer; float/double ← number;
 *   decimal(P, S) ← base64 big-endian unscaled bytes (Connect Decimal; the envelope's `scale` must be S)
 *   or a number (NUMERIC; more than S fractional digits is a DataError, never a silent rounding);
 * - date ← integer days (Connect Date); time ← integer ms since midnight (Connect Time);
 *   timestamp/timestamptz ← integer epoch ms (Connect Timestamp) or an ISO-8601 string (schemaless JSON);
 * - string ← string; binary/fixed ← base64; uuid ← the 36-character text;
 * - struct ← object (table fields missing from the object are null; object keys the table lacks are ignored);
 *   list ← array; map ← object (string keys) or array of [key, value] pairs.
 * Anything else (a string into an int column, a fraction into a long, a required field that is null) is a
 * DataError naming the field.
 *
 * Owns: the value → column conversions. Must not: parse bytes or unwrap the envelope (json-decoder.ts).
 */
import { columnFor } from './sink.ts';
import { DataError } from '../core/errors.ts';
import type { IcebergType, MapType, NestedField } from '../iceberg/types.ts';
import type { ConnectSchema } from './connect-schema.ts';
import { isObject, JsonNumberText } from './json-value.ts';
import type { RecordSink } from './sink.ts';

/** Writes one JSON value (with its Connect schema node, when the envelope has one) into its column. */
type Write = (v: unknown, s: ConnectSchema | undefined) => void;
/** A compiled writer, waiting for the sink whose columns it appends to. */
type Binder = (sink: RecordSink) => Write;

interface Target {
  readonly id: number;
  readonly type: IcebergType;
  readonly path: string;
}

function bad(path: string, what: string, v: unknown): DataError {
  const shown = typeof v === 'string' ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v) : Array.isArray(v) ? 'an array' : isObject(v) ? 'an object' : String(v);
  return new DataError(`field ${path}: ${shown} is not ${what}`, { stage: 'convert', context: { field: path } });
}


function integral(v: unknown): bigint | number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) ? v : undefined;
  if (typeof v === 'bigint') return v;
  return undefined;
}

function base64(v: string, path: string): Uint8Array {
  if (!/^[A-Za-z0-9+/\-_]*={0,2}$/.test(v)) throw bad(path, 'base64', v);
  return Buffer.from(v, 'base64');
}

/** A decimal number's text → unscaled bigint at `scale`; undefined when it has more fractional digits. */
function unscaledFromText(text: string, scale: number): bigint | undefined {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null) return undefined;
  let digits = (m[2] ?? '') + (m[3] ?? '');
  const exp = -(m[3]?.length ?? 0) + Number(m[4] ?? 0);
  // value = digits × 10^exp; we need digits × 10^(exp + scale) to be an integer
  const shift = exp + scale;
  if (shift >= 0) digits += '0'.repeat(shift);
  else {
    const cut = digits.slice(shift);
    if (!/^0*$/.test(cut)) return undefined;
    digits = digits.slice(0, shift) || '0';
  }
  const u = BigInt(digits);
  return m[1] === '-' ? -u : u;
}

const HEX = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export class JsonColumnCompiler {
  private readonly caseInsensitive: boolean;
  constructor(caseInsensitive: boolean) {
    this.caseInsensitive = caseInsensitive;
  }

  fields(fields: readonly NestedField[], prefix: string): (sink: RecordSink) => (obj: Record<string, unknown>, s: ConnectSchema | undefined) => void {
    const parts = fields.map((f) => ({ name: f.name, lower: f.name.toLowerCase(), write: this.value({ id: f.id, type: f.type, path: `${prefix}${f.name}` }) }));
    const ci = this.caseInsensitive;
    return (sink) => {
      const bound = parts.map((p) => ({ name: p.name, lower: p.lower, write: p.write(sink) }));
      return (obj, s) => {
        let lowered: Map<string, string> | undefined;
        for (const p of bound) {
          let key = p.name;
          if (!(key in obj) && ci) {
            lowered ??= new Map(Object.keys(obj).map((k) => [k.toLowerCase(), k]));
            key = lowered.get(p.lower) ?? key;
          }
          const fs = s?.fields?.find((x) => x.field === key);
          p.write(obj[key], fs);
        }
      };
    };
  }

  value(t: Target): Binder {
    const tt = t.type;
    switch (tt.kind) {
      case 'boolean':
      case 'int':
      case 'date':
      case 'long':
        return withNull(t, integralWriter(t, tt.kind));
      case 'time':
      case 'timestamp':
      case 'timestamptz':
      case 'timestamp_ns':
      case 'timestamptz_ns':
        return withNull(t, temporalWriter(t, tt.kind));
      case 'float':
      case 'double':
        return withNull(t, floatWriter(t, tt.kind));
      case 'decimal':
        return withNull(t, decimalWriter(t, tt.scale));
      case 'string':
      case 'binary':
      case 'fixed':
      case 'uuid':
        return withNull(t, textWriter(t, tt.kind));
      case 'struct': {
        const inner = this.fields(tt.fields, `${t.path}.`);
        return withNull(t, (sink) => {
          const col = sink.struct(t.id);
          const w = inner(sink);
          return (v, s) => {
            if (!isObject(v)) throw bad(t.path, 'an object', v);
            col.begin();
            w(v, s);
            col.end();
          };
        });
      }
      case 'list': {
        const el = this.value({ id: tt.elementId, type: tt.element, path: `${t.path}.element` });
        return withNull(t, (sink) => {
          const col = sink.list(t.id);
          const w = el(sink);
          return (v, s) => {
            if (!Array.isArray(v)) throw bad(t.path, 'an array', v);
            col.begin();
            for (const e of v) w(e, s?.items);
            col.end();
          };
        });
      }
      case 'map':
        return withNull(t, this.map(t, tt));
    }
  }

  /** A map from an object (string keys, converted for numeric and boolean key columns) or JsonConverter's [[key, value], …]. */
  private map(t: Target, tt: MapType): Binder {
    const key = this.value({ id: tt.keyId, type: tt.key, path: `${t.path}.key` });
    const val = this.value({ id: tt.valueId, type: tt.value, path: `${t.path}.value` });
    const keyOf = objectKeyReader(tt.key.kind);
    const path = t.path;
    return (sink) => {
      const col = sink.map(t.id);
      const kw = key(sink);
      const vw = val(sink);
      return (v, s) => {
        col.begin();
        if (Array.isArray(v)) {
          // JsonConverter writes maps with non-string keys as [[key, value], …].
          for (const e of v) {
            if (!Array.isArray(e) || e.length !== 2) throw bad(path, 'a [key, value] pair', e);
            kw(e[0], s?.keys);
            vw(e[1], s?.values);
          }
        } else if (isObject(v)) {
          for (const k in v) {
            kw(keyOf(k), s?.keys);
            vw(v[k], s?.values);
          }
        } else throw bad(path, 'an object or an array of [key, value] pairs', v);
        col.end();
      };
    };
  }
}

/** `make` writes non-null values; null and undefined go to the column's null (a DataError for a required column). */
function withNull(t: Target, make: Binder): Binder {
  return (sink) => {
    const col = columnFor(sink, t);
    const w = make(sink);
    return (v, s) => {
      if (v === null || v === undefined) col.appendNull();
      else w(v, s);
    };
  };
}

function integralWriter(t: Target, kind: 'boolean' | 'int' | 'date' | 'long'): Binder {
  const path = t.path;
  switch (kind) {
    case 'boolean':
      return (sink) => {
        const col = sink.boolean(t.id);
        return (v) => {
          if (typeof v !== 'boolean') throw bad(path, 'a boolean', v);
          col.append(v);
        };
      };
    case 'int':
      return (sink) => {
        const col = sink.int(t.id);
        return (v) => {
          if (typeof v !== 'number' || !Number.isInteger(v) || v < -2147483648 || v > 2147483647) throw bad(path, 'an int', v);
          col.append(v);
        };
      };
    case 'date':
      return (sink) => {
        const col = sink.int(t.id);
        return (v) => {
          if (typeof v === 'number' && Number.isInteger(v)) col.append(v);
          else if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v))) col.append(Date.parse(v) / 86_400_000);
          else throw bad(path, 'a date (days since 1970-01-01)', v);
        };
      };
    case 'long':
      return (sink) => {
        const col = sink.long(t.id);
        return (v) => {
          const n = integral(v);
          if (n === undefined) throw bad(path, 'a long', v);
          if (typeof n === 'number') col.appendNumber(n);
          else col.append(n);
        };
      };
  }
}

/** Connect Time/Timestamp are milliseconds (a timestamp may also be ISO-8601 text); our columns hold µs (ns for the _ns types). */
function temporalWriter(t: Target, kind: 'time' | 'timestamp' | 'timestamptz' | 'timestamp_ns' | 'timestamptz_ns'): Binder {
  const perMs = kind === 'timestamp_ns' || kind === 'timestamptz_ns' ? 1_000_000 : 1000;
  const isTime = kind === 'time';
  const path = t.path;
  return (sink) => {
    const col = sink.long(t.id);
    return (v) => {
      let ms: number | bigint | undefined = integral(v);
      if (ms === undefined && typeof v === 'string' && !isTime) {
        const parsed = Date.parse(v);
        if (!Number.isNaN(parsed)) ms = parsed;
      }
      if (ms === undefined) throw bad(path, isTime ? 'a time (ms since midnight)' : 'a timestamp (epoch ms or ISO-8601)', v);
      if (typeof ms === 'number' && Number.isSafeInteger(ms * perMs)) col.appendNumber(ms * perMs);
      else col.append(BigInt(ms) * BigInt(perMs));
    };
  };
}

function floatWriter(t: Target, kind: 'float' | 'double'): Binder {
  const path = t.path;
  return (sink) => {
    const col = kind === 'float' ? sink.float(t.id) : sink.double(t.id);
    return (v) => {
      if (typeof v === 'number') col.append(v);
      else if (typeof v === 'bigint') col.append(Number(v));
      else if (v instanceof JsonNumberText) col.append(Number(v.text));
      else throw bad(path, 'a number', v);
    };
  };
}

function decimalWriter(t: Target, scale: number): Binder {
  const path = t.path;
  return (sink) => {
    const col = sink.decimal(t.id);
    return (v, s) => {
      if (typeof v === 'string') {
        // Connect Decimal: base64 of the big-endian unscaled value, at the schema's scale.
        const ss = s?.parameters?.['scale'];
        if (ss !== undefined && Number(ss) !== scale) throw new DataError(`field ${path}: Decimal scale ${ss} is not the column's scale ${scale}`, { stage: 'convert', context: { field: path } });
        const bytes = base64(v, path);
        col.appendBigEndian(bytes, 0, bytes.length);
        return;
      }
      const text = typeof v === 'number' ? String(v) : typeof v === 'bigint' ? v.toString() : v instanceof JsonNumberText ? v.text : undefined;
      const u = text === undefined ? undefined : unscaledFromText(text, scale);
      if (u === undefined) throw bad(path, `a decimal with at most ${scale} fractional digits`, v);
      col.appendUnscaled(u);
    };
  };
}

/** Strings as they are; binary and fixed from base64; a uuid from its 36-character text. */
function textWriter(t: Target, kind: 'string' | 'binary' | 'fixed' | 'uuid'): Binder {
  const path = t.path;
  switch (kind) {
    case 'string':
      return (sink) => {
        const col = sink.string(t.id);
        return (v) => {
          if (typeof v !== 'string') throw bad(path, 'a string', v);
          col.append(v);
        };
      };
    case 'binary':
    case 'fixed':
      return (sink) => {
        const col = kind === 'binary' ? sink.binary(t.id) : sink.fixed(t.id);
        return (v) => {
          if (typeof v !== 'string') throw bad(path, 'base64 bytes', v);
          const b = base64(v, path);
          col.append(b, 0, b.length);
        };
      };
    case 'uuid':
      return (sink) => {
        const col = sink.fixed(t.id);
        return (v) => {
          if (typeof v !== 'string' || !HEX.test(v)) throw bad(path, 'a UUID', v);
          const b = Buffer.from(v.replace(/-/g, ''), 'hex');
          col.append(b, 0, 16);
        };
      };
  }
}

/** An object's keys are strings: converted for int/long/float/double/boolean key columns (left as text when they do not parse). */
function objectKeyReader(keyKind: IcebergType['kind']): (k: string) => unknown {
  if (keyKind === 'int' || keyKind === 'long' || keyKind === 'float' || keyKind === 'double') {
    return (k) => {
      const n = Number(k);
      return Number.isNaN(n) || k.trim() === '' ? k : keyKind === 'long' && !Number.isSafeInteger(n) && /^-?\d+$/.test(k) ? BigInt(k) : n;
    };
  }
  if (keyKind === 'boolean') return (k) => (k === 'true' ? true : k === 'false' ? false : k);
  return (k) => k;
}
