/**
 * Connect's JsonConverter, StringConverter and ByteArrayConverter as columnar decoders: JSON text (with
 * the `{"schema": …, "payload": …}` envelope when `schemas.enable=true`, bare otherwise), strings and
 * bytes, appended into a write-stage sink (sink.ts) by the table's field ids.
 *
 * Owns: Connect JSON schemas → Iceberg schemas; schema inference for schemaless JSON; the JSON value →
 * column conversions with Connect's encodings (bytes and Decimal as base64, Decimal also as a number for
 * `decimal.format=NUMERIC`, Date as days, Time and Timestamp as epoch milliseconds, maps with non-string
 * keys as `[[key, value], …]`), resolution by field NAME, and the String/ByteArray single-column tables.
 * Must not: do I/O, or import src/write.
 *
 * Unlike the Avro and Protobuf decoders, JSON needs one JS object per record: `JSON.parse` builds the value
 * tree, which is then walked into the columns by a writer compiled once per table schema. That is
 * acceptable for JSON: it is the slow, schemaless format, and parsing dominates anyway. String and
 * ByteArray decoders copy bytes straight into the column (no string is created for a string column).
 * Integers beyond ±2^53 are read exactly: when the text has a run of 16+ digits, it is parsed again with a
 * reviver that reads the number's source text (ES2025 JSON.parse source access), giving BigInt / exact
 * decimal text.
 *
 * Conversions by table column (what Connect's JsonConverter writes for each Connect type):
 * - boolean ← true/false; int ← integer in int32; long ← integer; float/double ← number;
 *   decimal(P, S) ← base64 big-endian unscaled bytes (Connect Decimal; the envelope's `scale` must be S)
 *   or a number (NUMERIC; more than S fractional digits is a DataError, never a silent rounding);
 * - date ← integer days (Connect Date); time ← integer ms since midnight (Connect Time);
 *   timestamp/timestamptz ← integer epoch ms (Connect Timestamp) or an ISO-8601 string (schemaless JSON);
 * - string ← string; binary/fixed ← base64; uuid ← the 36-character text;
 * - struct ← object (table fields missing from the object are null; object keys the table lacks are ignored);
 *   list ← array; map ← object (string keys) or array of [key, value] pairs.
 * Anything else (a string into an int column, a fraction into a long, a required field that is null) is a
 * DataError naming the field. Invalid JSON or a missing envelope is a DataError with the parser's reason.
 * A null payload (a tombstone) is a DataError with `context.tombstone = true`: never dropped silently; the
 * runtime decides (errors.tolerance) like for any other record that cannot become a row.
 *
 * Schemaless inference (`inferIcebergSchema`, for a table auto-created from the first record): an object
 * → struct (keys in order), an integer → long, any other number → double, a string → string, a boolean →
 * boolean, an array → list of its first non-null element's type (an empty or all-null array → list<string>),
 * null → string. Every field, element and value is optional (nothing in schemaless JSON promises presence).
 */
import { columnFor } from './sink.ts';
import { ConfigError, DataError, IcefloeError } from '../core/errors.ts';
import { assignFreshIds } from '../iceberg/schema.ts';
import type { IcebergType, NestedField, Schema } from '../iceberg/types.ts';
import type { RecordSink } from './sink.ts';

// ---------------------------------------------------------------------------------------------------
// Connect schema → Iceberg
// ---------------------------------------------------------------------------------------------------

export const CONNECT_DECIMAL = 'org.apache.kafka.connect.data.Decimal';
export const CONNECT_DATE = 'org.apache.kafka.connect.data.Date';
export const CONNECT_TIME = 'org.apache.kafka.connect.data.Time';
export const CONNECT_TIMESTAMP = 'org.apache.kafka.connect.data.Timestamp';

/** A Connect schema in JsonConverter's JSON form. */
export interface ConnectSchema {
  readonly type: string;
  readonly optional?: boolean;
  readonly name?: string;
  readonly version?: number;
  readonly parameters?: Readonly<Record<string, string>>;
  readonly field?: string;
  readonly fields?: readonly ConnectSchema[];
  readonly items?: ConnectSchema;
  readonly keys?: ConnectSchema;
  readonly values?: ConnectSchema;
}

export interface JsonToIcebergOptions {
  /** `iceberg.tables.schema-force-optional`. */
  readonly forceOptional?: boolean;
  readonly schemaId?: number;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The Iceberg schema of a Connect struct schema (JsonConverter envelope `schema`): int8/int16/int32 → int,
 * int64 → long, float → float, double → double, boolean, string, bytes → binary, array → list, map → map,
 * struct → struct; by `name`: Decimal → decimal(P, scale) (P from `connect.decimal.precision`, else 38),
 * Date → date, Time → time, Timestamp → timestamptz (Connect Timestamps are UTC instants). A field is
 * required unless `optional`; map keys are always required. ConfigError for anything else.
 */
export function connectSchemaToIceberg(schema: unknown, options: JsonToIcebergOptions = {}): Schema {
  if (!isObject(schema) || schema['type'] !== 'struct') throw new ConfigError('a table needs a Connect struct schema at the top level');
  const force = options.forceOptional === true;
  let ph = 0;
  const next = (): number => ++ph;
  const convert = (s: unknown, path: string): IcebergType => {
    if (!isObject(s) || typeof s['type'] !== 'string') throw new ConfigError(`Connect schema at ${path || '<root>'} has no type`);
    const name = s['name'];
    const params = isObject(s['parameters']) ? (s['parameters'] as Record<string, unknown>) : {};
    switch (name) {
      case CONNECT_DECIMAL: {
        const scale = Number(params['scale'] ?? 0);
        const precision = params['connect.decimal.precision'] === undefined ? 38 : Number(params['connect.decimal.precision']);
        if (!Number.isInteger(scale) || !Number.isInteger(precision) || precision < 1 || precision > 38 || scale < 0 || scale > precision) {
          throw new ConfigError(`Connect Decimal at ${path}: precision ${precision} / scale ${scale} do not fit an Iceberg decimal`);
        }
        return { kind: 'decimal', precision, scale };
      }
      case CONNECT_DATE:
        return { kind: 'date' };
      case CONNECT_TIME:
        return { kind: 'time' };
      case CONNECT_TIMESTAMP:
        return { kind: 'timestamptz' };
      default:
        break;
    }
    switch (s['type']) {
      case 'int8':
      case 'int16':
      case 'int32':
        return { kind: 'int' };
      case 'int64':
        return { kind: 'long' };
      case 'float':
        return { kind: 'float' };
      case 'double':
        return { kind: 'double' };
      case 'boolean':
        return { kind: 'boolean' };
      case 'string':
        return { kind: 'string' };
      case 'bytes':
        return { kind: 'binary' };
      case 'array': {
        const items = s['items'];
        return { kind: 'list', elementId: next(), elementRequired: !force && !(isObject(items) && items['optional'] === true), element: convert(items, `${path}.element`) };
      }
      case 'map': {
        const values = s['values'];
        return {
          kind: 'map',
          keyId: next(),
          key: convert(s['keys'], `${path}.key`),
          valueId: next(),
          valueRequired: !force && !(isObject(values) && values['optional'] === true),
          value: convert(values, `${path}.value`),
        };
      }
      case 'struct':
        return { kind: 'struct', fields: fields(s, path) };
      default:
        throw new ConfigError(`Connect schema at ${path || '<root>'}: unknown type ${String(s['type'])}`);
    }
  };
  const fields = (s: Record<string, unknown>, path: string): NestedField[] => {
    const fs = s['fields'];
    if (!Array.isArray(fs)) throw new ConfigError(`Connect struct at ${path || '<root>'} has no fields array`);
    return fs.map((f: unknown) => {
      if (!isObject(f) || typeof f['field'] !== 'string') throw new ConfigError(`Connect struct at ${path || '<root>'} has a field without a name`);
      const name = f['field'];
      const fpath = path === '' ? name : `${path}.${name}`;
      return { id: next(), name, required: !force && f['optional'] !== true, type: convert(f, fpath) };
    });
  };
  const out = fields(schema, '');
  let last = 0;
  return assignFreshIds({ schemaId: options.schemaId ?? 0, fields: out }, () => ++last);
}

/** Schemaless JSON → an Iceberg schema from one record (see the module header for the rules). */
export function inferIcebergSchema(value: unknown, options: { schemaId?: number } = {}): Schema {
  if (!isObject(value)) throw new DataError('schemaless JSON: a table can only be inferred from a JSON object');
  let ph = 0;
  const next = (): number => ++ph;
  const infer = (v: unknown): IcebergType => {
    if (typeof v === 'boolean') return { kind: 'boolean' };
    if (typeof v === 'bigint') return { kind: 'long' };
    if (typeof v === 'number') return Number.isInteger(v) ? { kind: 'long' } : { kind: 'double' };
    if (v instanceof JsonNumberText) return /^-?\d+$/.test(v.text) ? { kind: 'long' } : { kind: 'double' };
    if (Array.isArray(v)) {
      const first = v.find((e) => e !== null);
      return { kind: 'list', elementId: next(), elementRequired: false, element: first === undefined ? { kind: 'string' } : infer(first) };
    }
    if (isObject(v)) return { kind: 'struct', fields: Object.entries(v).map(([k, x]) => ({ id: next(), name: k, required: false, type: infer(x) })) };
    return { kind: 'string' };
  };
  const root = infer(value) as { kind: 'struct'; fields: NestedField[] };
  let last = 0;
  return assignFreshIds({ schemaId: options.schemaId ?? 0, fields: root.fields }, () => ++last);
}

// ---------------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------------

/** A JSON number too long for a double, kept as its source text (decimals). */
export class JsonNumberText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const LONG_DIGITS = /\d{16}/;

type Reviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown;
/** Exact numbers: integers beyond ±2^53 → BigInt, long fractions → their text (JSON.parse source access). */
const exactNumbers: Reviver = (_key, value, context) => {
  if (typeof value !== 'number' || context?.source === undefined) return value;
  const src = context.source;
  if (Number.isSafeInteger(value) || !/\d{16}/.test(src)) return value;
  return /^-?\d+$/.test(src) ? BigInt(src) : new JsonNumberText(src);
};

/** JSON text (UTF-8 bytes) → a JS value; DataError with the parser's reason when it is not JSON. */
export function parseJson(buf: Uint8Array, offset = 0, end = buf.length): unknown {
  let text: string;
  try {
    text = utf8.decode(buf.subarray(offset, end));
  } catch {
    throw new DataError('JSON record is not valid UTF-8');
  }
  try {
    return LONG_DIGITS.test(text) ? (JSON.parse(text, exactNumbers as Parameters<typeof JSON.parse>[1]) as unknown) : (JSON.parse(text) as unknown);
  } catch (e) {
    throw new DataError(`record is not valid JSON: ${(e as Error).message}`, { cause: e });
  }
}

// ---------------------------------------------------------------------------------------------------
// Compiled writers: JSON value → columns
// ---------------------------------------------------------------------------------------------------

/** Writes one JSON value (with its Connect schema node, when the envelope has one) into its column. */
type Write = (v: unknown, s: ConnectSchema | undefined) => void;

interface Target {
  readonly id: number;
  readonly type: IcebergType;
  readonly path: string;
}

function bad(path: string, what: string, v: unknown): DataError {
  const shown = typeof v === 'string' ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v) : Array.isArray(v) ? 'an array' : isObject(v) ? 'an object' : String(v);
  return new DataError(`field ${path}: ${shown} is not ${what}`, { context: { field: path } });
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

class Compiler {
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

  value(t: Target): (sink: RecordSink) => Write {
    const tt = t.type;
    const path = t.path;
    const withNull = (make: (sink: RecordSink) => Write): ((sink: RecordSink) => Write) => (sink) => {
      const col = columnFor(sink, t);
      const w = make(sink);
      return (v, s) => {
        if (v === null || v === undefined) col.appendNull();
        else w(v, s);
      };
    };
    switch (tt.kind) {
      case 'boolean':
        return withNull((sink) => {
          const col = sink.boolean(t.id);
          return (v) => {
            if (typeof v !== 'boolean') throw bad(path, 'a boolean', v);
            col.append(v);
          };
        });
      case 'int':
        return withNull((sink) => {
          const col = sink.int(t.id);
          return (v) => {
            if (typeof v !== 'number' || !Number.isInteger(v) || v < -2147483648 || v > 2147483647) throw bad(path, 'an int', v);
            col.append(v);
          };
        });
      case 'date':
        return withNull((sink) => {
          const col = sink.int(t.id);
          return (v) => {
            if (typeof v === 'number' && Number.isInteger(v)) col.append(v);
            else if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v))) col.append(Date.parse(v) / 86_400_000);
            else throw bad(path, 'a date (days since 1970-01-01)', v);
          };
        });
      case 'long':
        return withNull((sink) => {
          const col = sink.long(t.id);
          return (v) => {
            const n = integral(v);
            if (n === undefined) throw bad(path, 'a long', v);
            if (typeof n === 'number') col.appendNumber(n);
            else col.append(n);
          };
        });
      case 'time':
      case 'timestamp':
      case 'timestamptz':
      case 'timestamp_ns':
      case 'timestamptz_ns': {
        // Connect Time/Timestamp are milliseconds; our columns hold µs (ns for the _ns types).
        const perMs = tt.kind === 'timestamp_ns' || tt.kind === 'timestamptz_ns' ? 1_000_000 : 1000;
        const isTime = tt.kind === 'time';
        return withNull((sink) => {
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
        });
      }
      case 'float':
      case 'double':
        return withNull((sink) => {
          const col = tt.kind === 'float' ? sink.float(t.id) : sink.double(t.id);
          return (v) => {
            if (typeof v === 'number') col.append(v);
            else if (typeof v === 'bigint') col.append(Number(v));
            else if (v instanceof JsonNumberText) col.append(Number(v.text));
            else throw bad(path, 'a number', v);
          };
        });
      case 'decimal': {
        const scale = tt.scale;
        return withNull((sink) => {
          const col = sink.decimal(t.id);
          return (v, s) => {
            if (typeof v === 'string') {
              // Connect Decimal: base64 of the big-endian unscaled value, at the schema's scale.
              const ss = s?.parameters?.['scale'];
              if (ss !== undefined && Number(ss) !== scale) throw new DataError(`field ${path}: Decimal scale ${ss} is not the column's scale ${scale}`, { context: { field: path } });
              const bytes = base64(v, path);
              col.appendBigEndian(bytes, 0, bytes.length);
              return;
            }
            const text = typeof v === 'number' ? String(v) : typeof v === 'bigint' ? v.toString() : v instanceof JsonNumberText ? v.text : undefined;
            const u = text === undefined ? undefined : unscaledFromText(text, scale);
            if (u === undefined) throw bad(path, `a decimal with at most ${scale} fractional digits`, v);
            col.appendUnscaled(u);
          };
        });
      }
      case 'string':
        return withNull((sink) => {
          const col = sink.string(t.id);
          return (v) => {
            if (typeof v !== 'string') throw bad(path, 'a string', v);
            col.append(v);
          };
        });
      case 'binary':
      case 'fixed':
        return withNull((sink) => {
          const col = tt.kind === 'binary' ? sink.binary(t.id) : sink.fixed(t.id);
          return (v) => {
            if (typeof v !== 'string') throw bad(path, 'base64 bytes', v);
            const b = base64(v, path);
            col.append(b, 0, b.length);
          };
        });
      case 'uuid':
        return withNull((sink) => {
          const col = sink.fixed(t.id);
          return (v) => {
            if (typeof v !== 'string' || !HEX.test(v)) throw bad(path, 'a UUID', v);
            const b = Buffer.from(v.replace(/-/g, ''), 'hex');
            col.append(b, 0, 16);
          };
        });
      case 'struct': {
        const inner = this.fields(tt.fields, `${path}.`);
        return withNull((sink) => {
          const col = sink.struct(t.id);
          const w = inner(sink);
          return (v, s) => {
            if (!isObject(v)) throw bad(path, 'an object', v);
            col.begin();
            w(v, s);
            col.end();
          };
        });
      }
      case 'list': {
        const el = this.value({ id: tt.elementId, type: tt.element, path: `${path}.element` });
        return withNull((sink) => {
          const col = sink.list(t.id);
          const w = el(sink);
          return (v, s) => {
            if (!Array.isArray(v)) throw bad(path, 'an array', v);
            col.begin();
            for (const e of v) w(e, s?.items);
            col.end();
          };
        });
      }
      case 'map': {
        const key = this.value({ id: tt.keyId, type: tt.key, path: `${path}.key` });
        const val = this.value({ id: tt.valueId, type: tt.value, path: `${path}.value` });
        const keyKind = tt.key.kind;
        return withNull((sink) => {
          const col = sink.map(t.id);
          const kw = key(sink);
          const vw = val(sink);
          // An object's keys are strings: convert them for int/long/boolean key columns.
          const keyOf = (k: string): unknown => {
            if (keyKind === 'int' || keyKind === 'long' || keyKind === 'float' || keyKind === 'double') {
              const n = Number(k);
              return Number.isNaN(n) || k.trim() === '' ? k : keyKind === 'long' && !Number.isSafeInteger(n) && /^-?\d+$/.test(k) ? BigInt(k) : n;
            }
            if (keyKind === 'boolean') return k === 'true' ? true : k === 'false' ? false : k;
            return k;
          };
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
        });
      }
    }
  }
}

export interface JsonDecoderOptions {
  /** JsonConverter `schemas.enable` (default true: each record is a `{"schema", "payload"}` envelope). */
  readonly schemasEnable?: boolean;
  /** `iceberg.tables.schema-case-insensitive`. */
  readonly caseInsensitive?: boolean;
}

/** The JSON value of a record and its Connect schema (from the envelope), or DataError. */
export function unwrapEnvelope(value: unknown, schemasEnable: boolean): { payload: unknown; schema: ConnectSchema | undefined } {
  if (!schemasEnable) return { payload: value, schema: undefined };
  if (!isObject(value) || !('schema' in value) || !('payload' in value) || Object.keys(value).length !== 2) {
    throw new DataError('JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields; if you are trying to deserialize plain JSON data, set schemas.enable=false');
  }
  const schema = value['schema'];
  return { payload: value['payload'], schema: isObject(schema) ? (schema as unknown as ConnectSchema) : undefined };
}

/**
 * Connect JsonConverter records → columns of one table schema. `decode` parses, unwraps the envelope,
 * writes the payload and closes the record; on a DataError the partial record is rolled back.
 */
export class JsonConverterDecoder {
  readonly table: Schema;
  private readonly schemasEnable: boolean;
  private readonly binder: (sink: RecordSink) => (obj: Record<string, unknown>, s: ConnectSchema | undefined) => void;
  private readonly bound = new WeakMap<RecordSink, (obj: Record<string, unknown>, s: ConnectSchema | undefined) => void>();

  constructor(table: Schema, options: JsonDecoderOptions = {}) {
    this.table = table;
    this.schemasEnable = options.schemasEnable !== false;
    this.binder = new Compiler(options.caseInsensitive === true).fields(table.fields, '');
  }

  /** Parses one record's bytes and unwraps the envelope (for auto-create: `connectSchemaToIceberg(schema)` / `inferIcebergSchema(payload)`). */
  parse(buf: Uint8Array, offset = 0, end = buf.length): { payload: unknown; schema: ConnectSchema | undefined } {
    return unwrapEnvelope(parseJson(buf, offset, end), this.schemasEnable);
  }

  decode(buf: Uint8Array, sink: RecordSink, offset = 0, end = buf.length): boolean {
    const { payload, schema } = this.parse(buf, offset, end);
    return this.write(payload, schema, sink);
  }

  /** Writes an already parsed payload as one record. */
  write(payload: unknown, schema: ConnectSchema | undefined, sink: RecordSink): boolean {
    if (payload === null || payload === undefined) throw new DataError('null JSON value (a tombstone) cannot become a row', { context: { tombstone: true } });
    if (!isObject(payload)) throw new DataError(`the JSON value is ${Array.isArray(payload) ? 'an array' : typeof payload}, not an object: a table row needs an object`);
    let w = this.bound.get(sink);
    if (w === undefined) {
      w = this.binder(sink);
      this.bound.set(sink, w);
    }
    try {
      w(payload, schema);
      return sink.endRecord();
    } catch (e) {
      sink.abortRecord();
      if (e instanceof IcefloeError) throw e;
      throw new DataError(`JSON record could not be written: ${(e as Error).message}`, { cause: e });
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// StringConverter and ByteArrayConverter
// ---------------------------------------------------------------------------------------------------

/** The table of a StringConverter (`string`) or ByteArrayConverter (`binary`) value: one optional column. */
export function singleColumnSchema(kind: 'string' | 'binary', name = 'value'): Schema {
  return { schemaId: 0, fields: [{ id: 1, name, required: false, type: { kind } }] };
}

/**
 * StringConverter / ByteArrayConverter: the record's bytes into one column (string: validated UTF-8,
 * copied without making a JS string; binary: copied as is). `append` writes the column only (to combine
 * with other columns, such as a key column, in one record); `decode` also closes the record.
 */
export class RawColumnDecoder {
  readonly kind: 'string' | 'binary';
  readonly fieldId: number;

  constructor(table: Schema, kind: 'string' | 'binary', fieldName = 'value') {
    const f = table.fields.find((x) => x.name === fieldName);
    if (f === undefined) throw new ConfigError(`the table has no column ${fieldName} for the ${kind === 'string' ? 'StringConverter' : 'ByteArrayConverter'}`);
    if (f.type.kind !== kind) throw new ConfigError(`column ${fieldName} is ${f.type.kind}, not ${kind}`);
    this.kind = kind;
    this.fieldId = f.id;
  }

  /** Appends the bytes (null: a Kafka null) to the column. */
  append(buf: Uint8Array | null, sink: RecordSink, offset = 0, end = buf?.length ?? 0): void {
    const col = this.kind === 'string' ? sink.string(this.fieldId) : sink.binary(this.fieldId);
    if (buf === null) col.appendNull();
    else if (this.kind === 'string') (col as ReturnType<RecordSink['string']>).appendUtf8(buf, offset, end);
    else (col as ReturnType<RecordSink['binary']>).append(buf, offset, end);
  }

  decode(buf: Uint8Array | null, sink: RecordSink, offset = 0, end = buf?.length ?? 0): boolean {
    try {
      this.append(buf, sink, offset, end);
      return sink.endRecord();
    } catch (e) {
      sink.abortRecord();
      throw e;
    }
  }
}
