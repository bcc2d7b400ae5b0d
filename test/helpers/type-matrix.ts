/**
 * The "type matrix": a table schema with every Iceberg type we write, nested at several depths, and rows
 * with nulls at every level and edge values (NaN, ±0.0, min/max longs, the largest and smallest decimal of
 * each Parquet physical type's precision range (1, 9, 10, 18, 19, 38), pre-1970 and
 * far-future timestamps, empty and non-ASCII strings). Plus the comparison of what we wrote with what an
 * independent reader (test/readers/read_table.py: PyIceberg or DuckDB; read_spark.py: Spark) returned.
 *
 * Values are logical values in the convention of src/iceberg/types.ts (PrimitiveValue): long, time and
 * timestamps as bigint (µs), decimals as unscaled bigint, date as days, uuid/fixed/binary as bytes;
 * a struct is an object by field name, a list an array, a map an array of [key, value] pairs.
 * Both sides are reduced to one canonical JSON-able form before comparing, so reader quirks (ISO text for
 * timestamps, base64 for bytes, decimals as text, maps as pair lists) do not leak into the assertions.
 */
import assert from 'node:assert/strict';
import type { IcebergType, NestedField, PrimitiveType, Schema } from '../../src/iceberg/types.ts';

export type Value = null | boolean | number | bigint | string | Uint8Array | Value[] | { [name: string]: Value };
export type Row = Record<string, Value>;

// --- schema -------------------------------------------------------------------------------------------

let nextId = 0;
const id = (): number => ++nextId;
const p = (kind: PrimitiveType['kind']): PrimitiveType => ({ kind }) as PrimitiveType;
const field = (name: string, type: IcebergType, required = false): NestedField => ({ id: id(), name, required, type });

function buildSchema(): Schema {
  nextId = 0;
  // Ids are assigned depth-first here on purpose: catalogs re-assign them breadth-first on create, and the
  // tests must follow the catalog's ids, not ours.
  const fields: NestedField[] = [
    field('id', p('long'), true),
    field('b', p('boolean')),
    field('i', p('int')),
    field('l', p('long')),
    field('f', p('float')),
    field('d', p('double')),
    field('dec_small', { kind: 'decimal', precision: 9, scale: 2 }),
    field('dec_big', { kind: 'decimal', precision: 38, scale: 10 }),
    // Each side of a Parquet physical-type boundary (INT32 to p 9, INT64 to 18, FIXED_LEN_BYTE_ARRAY above).
    field('dec_1', { kind: 'decimal', precision: 1, scale: 0 }),
    field('dec_10', { kind: 'decimal', precision: 10, scale: 0 }),
    field('dec_18', { kind: 'decimal', precision: 18, scale: 6 }),
    field('dec_19', { kind: 'decimal', precision: 19, scale: 0 }),
    field('dt', p('date')),
    field('tm', p('time')),
    field('ts', p('timestamp')),
    field('tstz', p('timestamptz')),
    field('s', p('string')),
    field('u', p('uuid')),
    field('fx', { kind: 'fixed', length: 4 }),
    field('bin', p('binary')),
    field('st', {
      kind: 'struct',
      fields: [
        field('name', p('string')),
        field('inner', { kind: 'struct', fields: [field('depth', p('int')), field('tags', { kind: 'list', elementId: id(), elementRequired: false, element: p('string') })] }),
      ],
    }),
    field('lst', { kind: 'list', elementId: id(), elementRequired: false, element: { kind: 'struct', fields: [field('k', p('string')), field('v', p('double'))] } }),
    field('nested_lst', { kind: 'list', elementId: id(), elementRequired: false, element: { kind: 'list', elementId: id(), elementRequired: true, element: p('long') } }),
    field('mp', { kind: 'map', keyId: id(), key: p('string'), valueId: id(), valueRequired: false, value: { kind: 'struct', fields: [field('qty', p('int')), field('price', { kind: 'decimal', precision: 10, scale: 2 })] } }),
    field('mp_int', { kind: 'map', keyId: id(), key: p('int'), valueId: id(), valueRequired: false, value: { kind: 'list', elementId: id(), elementRequired: false, element: p('string') } }),
  ];
  return { schemaId: 0, fields };
}

export const TYPE_MATRIX_SCHEMA: Schema = buildSchema();

// --- rows ---------------------------------------------------------------------------------------------

const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);
const uuid = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text.replaceAll('-', ''), 'hex'));
const MICROS_PER_DAY = 86_400_000_000n;
const tsMicros = (iso: string): bigint => BigInt(Date.parse(iso)) * 1000n;

/** Every column null (except the key), then rows exercising edge values and nulls at each nesting level. */
export function typeMatrixRows(): Row[] {
  const allNull: Row = Object.fromEntries(TYPE_MATRIX_SCHEMA.fields.map((f) => [f.name, null]));
  return [
    { ...allNull, id: 0n },
    {
      id: 1n,
      b: true,
      i: -2147483648,
      l: -9223372036854775808n,
      f: Number.NaN,
      d: -0,
      dec_small: -9999999_99n,
      dec_big: -(10n ** 38n - 1n),
      dec_1: -9n,
      dec_10: -(10n ** 10n - 1n),
      dec_18: -(10n ** 18n - 1n),
      dec_19: -(10n ** 19n - 1n),
      dt: -719162, // 0001-01-01
      tm: 0n,
      ts: tsMicros('1900-01-01T00:00:00.000Z') + 1n,
      tstz: tsMicros('1969-12-31T23:59:59.999Z') + 999n,
      s: '',
      u: uuid('00000000-0000-0000-0000-000000000000'),
      fx: bytes(0, 0, 0, 0),
      bin: bytes(),
      st: { name: null, inner: null },
      lst: [],
      nested_lst: [[], [-1n]],
      mp: [],
      mp_int: [[-1, null]],
    },
    {
      id: 2n,
      b: false,
      i: 2147483647,
      l: 9223372036854775807n,
      f: Number.POSITIVE_INFINITY,
      d: Number.NEGATIVE_INFINITY,
      dec_small: 9999999_99n,
      dec_big: 10n ** 38n - 1n,
      dec_1: 9n,
      dec_10: 10n ** 10n - 1n,
      dec_18: 10n ** 18n - 1n,
      dec_19: 10n ** 19n - 1n,
      dt: 2932896, // 9999-12-31
      tm: MICROS_PER_DAY - 1n,
      ts: tsMicros('9999-12-31T23:59:59.999Z') + 999n,
      tstz: tsMicros('2262-04-11T23:47:16.854Z') + 775n, // beyond int64 nanoseconds, fine in micros
      s: 'Zoë – 東京 – 🧊',
      u: uuid('f79c3e09-677c-4bbd-a479-3f349cb785e7'),
      fx: bytes(0xff, 0xfe, 0x00, 0x01),
      bin: bytes(0, 1, 2, 3, 255),
      st: { name: 'outer', inner: { depth: 2, tags: ['a', null, ''] } },
      lst: [{ k: 'x', v: 0 }, null, { k: null, v: Number.NaN }],
      nested_lst: null,
      mp: [
        ['apple', { qty: 3, price: 125n }],
        ['nothing', null],
        ['', { qty: null, price: null }],
      ],
      mp_int: [
        [0, []],
        [7, ['seven', null]],
      ],
    },
    {
      id: 3n,
      b: null,
      i: 0,
      l: 0n,
      f: -0,
      d: 1e308,
      dec_small: 0n,
      dec_big: 12345678901234567890123456789n,
      dec_1: 0n,
      dec_10: 2n ** 31n, // beyond int32
      dec_18: -1n,
      dec_19: 2n ** 63n, // beyond int64
      dt: 0,
      tm: 45_296_000_001n, // 12:34:56.000001
      ts: 0n,
      tstz: 1_700_000_000_123_456n,
      s: 'a'.repeat(40), // longer than the 16-character truncated bounds
      u: null,
      fx: null,
      bin: Uint8Array.from({ length: 40 }, (_, i) => i),
      st: { name: '', inner: { depth: null, tags: null } },
      lst: null,
      nested_lst: [[1n, 2n, 3n]],
      mp: null,
      mp_int: null,
    },
  ];
}

// --- canonical form ------------------------------------------------------------------------------------

type Canonical = null | boolean | number | string | Canonical[] | { [k: string]: Canonical };

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function canonicalFloat(v: number): Canonical {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
  if (Object.is(v, -0)) return '-0';
  return v;
}

function decimalText(unscaled: bigint, scale: number): string {
  const neg = unscaled < 0n;
  const digits = (neg ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  const body = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return neg ? `-${body}` : body;
}

/** Our logical value → canonical. */
export function canonical(type: IcebergType, v: Value): Canonical {
  if (v === null) return null;
  switch (type.kind) {
    case 'struct': {
      const o = v as Record<string, Value>;
      return Object.fromEntries(type.fields.map((f) => [f.name, canonical(f.type, o[f.name] ?? null)]));
    }
    case 'list':
      return (v as Value[]).map((e) => canonical(type.element, e));
    case 'map':
      return (v as [Value, Value][]).map(([k, val]) => [canonical(type.key, k), canonical(type.value, val)]);
    case 'float':
      return canonicalFloat(Math.fround(v as number));
    case 'double':
      return canonicalFloat(v as number);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return String(v);
    case 'decimal':
      return decimalText(v as bigint, type.scale);
    case 'uuid':
    case 'fixed':
    case 'binary':
      return hex(v as Uint8Array);
    default:
      return v as boolean | number | string;
  }
}

/** Micros since midnight from `HH:MM:SS[.ffffff]`. */
function timeMicros(text: string): bigint {
  const m = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(text);
  if (m === null) throw new Error(`not a time: ${text}`);
  const [, h, mi, s, frac] = m;
  return ((BigInt(h ?? 0) * 60n + BigInt(mi ?? 0)) * 60n + BigInt(s ?? 0)) * 1_000_000n + BigInt((frac ?? '').padEnd(6, '0'));
}

/** Micros since the epoch from Python's isoformat (`YYYY-MM-DD[T ]HH:MM:SS[.ffffff][+00:00]`), any year. */
function timestampMicros(text: string): bigint {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)(Z|[+-]00:00)?$/.exec(text);
  if (m === null) throw new Error(`not a UTC timestamp: ${text}`);
  const [, y, mo, d, time] = m;
  const days = BigInt(daysFromIso(`${y}-${mo}-${d}`));
  return days * MICROS_PER_DAY + timeMicros(time ?? '');
}

function daysFromIso(text: string): number {
  return Math.round(Date.parse(`${text}T00:00:00Z`) / 86_400_000);
}

/** Decimal text (possibly `1.2E+5` or `0E-10`) → canonical text at the type's scale. */
function decimalFromText(text: string, scale: number): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:E([+-]?\d+))?$/i.exec(text);
  if (m === null) throw new Error(`not a decimal: ${text}`);
  const [, sign, int, frac = '', exp = '0'] = m;
  const shift = scale - frac.length + Number(exp); // unscaled = digits * 10^shift
  let unscaled = BigInt(`${int}${frac}`);
  unscaled = shift >= 0 ? unscaled * 10n ** BigInt(shift) : unscaled / 10n ** BigInt(-shift);
  return decimalText(sign === '-' ? -unscaled : unscaled, scale);
}

function bytesFromReader(v: unknown): string {
  if (typeof v !== 'string') throw new Error(`bytes expected as base64 or uuid text, got ${String(v)}`);
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v)) return v.replaceAll('-', '').toLowerCase();
  return Buffer.from(v, 'base64').toString('hex');
}

function floatFromReader(v: unknown): Canonical {
  if (typeof v === 'string') return v === 'inf' ? 'Infinity' : v === '-inf' ? '-Infinity' : v;
  return canonicalFloat(Number(v));
}

/** A reader's JSON value → canonical. */
export function canonicalRead(type: IcebergType, v: unknown): Canonical {
  if (v === null || v === undefined) return null;
  switch (type.kind) {
    case 'struct': {
      const o = v as Record<string, unknown>;
      return Object.fromEntries(type.fields.map((f) => [f.name, canonicalRead(f.type, o[f.name])]));
    }
    case 'list':
      return (v as unknown[]).map((e) => canonicalRead(type.element, e));
    case 'map': {
      // pyarrow gives a list of [key, value] pairs; a dict form is accepted too.
      const pairs = Array.isArray(v) ? (v as unknown[][]) : Object.entries(v as Record<string, unknown>);
      return pairs.map(([k, val]) => [canonicalRead(type.key, k), canonicalRead(type.value, val)]);
    }
    case 'float':
    case 'double':
      return floatFromReader(v);
    case 'long':
      return String(v);
    case 'time':
      return String(timeMicros(String(v)));
    case 'timestamp':
    case 'timestamptz':
      return String(timestampMicros(String(v)));
    case 'date':
      return daysFromIso(String(v));
    case 'decimal':
      return decimalFromText(String(v), type.scale);
    case 'uuid':
    case 'fixed':
    case 'binary':
      return bytesFromReader(v);
    case 'int':
      return Number(v);
    default:
      return v as boolean | string;
  }
}

/**
 * PyIceberg (0.12) rebuilds lists and maps of structs when projecting, and a null one comes back as an
 * empty list: apache/iceberg-python#3833 (open; its own test asserts the wrong value). The Parquet file
 * holds the null — DuckDB and hyparquet read it — so for PyIceberg only, a written null of those types is
 * expected as []. Every other value, and every value DuckDB returns, must match exactly.
 */
function asPyIcebergReads(type: IcebergType, v: Canonical): Canonical {
  const rebuilt = (type.kind === 'list' && type.element.kind === 'struct') || (type.kind === 'map' && type.value.kind === 'struct');
  if (v === null) return rebuilt ? [] : null;
  switch (type.kind) {
    case 'struct': {
      const o = v as Record<string, Canonical>;
      return Object.fromEntries(type.fields.map((f) => [f.name, asPyIcebergReads(f.type, o[f.name] ?? null)]));
    }
    case 'list':
      return (v as Canonical[]).map((e) => asPyIcebergReads(type.element, e));
    case 'map':
      return (v as Canonical[][]).map(([k, val]) => [k ?? null, asPyIcebergReads(type.value, val ?? null)]);
    default:
      return v;
  }
}

/*
 * Spark (4.1.1 with Iceberg 1.11's runtime) needs no allowance here: test/readers/read_spark.py gives its
 * values in the same JSON forms (uuid as text, fixed/binary as base64, timestamps as naive UTC ISO text,
 * decimals as text, maps as [key, value] pairs in Spark's order via map_entries), and every value must
 * match exactly. Its one limit is a whole type: it cannot load a table with a `time` column at all
 * ("Spark does not support time fields", Iceberg's TypeToSparkType: apache/iceberg#16663, open, in Spark
 * 4.1 which has a TIME type; #9006 before it), so type-matrix-spark.test.ts reads the matrix without `tm`.
 */

/** Asserts a reader returned exactly the rows we wrote (matched by `id`, compared column by column). */
export function assertSameRows(schema: Schema, written: Row[], read: Record<string, unknown>[], engine: 'PyIceberg' | 'DuckDB' | 'Spark'): void {
  const struct: IcebergType = { kind: 'struct', fields: schema.fields };
  const want = written
    .map((r) => canonical(struct, r))
    .map((c) => (engine === 'PyIceberg' ? asPyIcebergReads(struct, c) : c) as Record<string, Canonical>)
    .sort((a, b) => Number(a['id']) - Number(b['id']));
  const got = read.map((r) => canonicalRead(struct, r) as Record<string, Canonical>).sort((a, b) => Number(a['id']) - Number(b['id']));
  assert.equal(got.length, want.length, `${engine}: row count`);
  for (const [i, w] of want.entries()) {
    for (const f of schema.fields) {
      assert.deepEqual(got[i]?.[f.name], w[f.name], `${engine}: row id=${String(w['id'])}, column ${f.name}`);
    }
  }
}
