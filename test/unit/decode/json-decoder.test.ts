/**
 * Connect JsonConverter (with and without the schema envelope), StringConverter and ByteArrayConverter:
 * records decoded into a real DataFileWriter and read back with hyparquet.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, DataError } from '../../../src/core/errors.ts';
import { connectSchemaToIceberg, inferIcebergSchema } from '../../../src/decode/connect-schema.ts';
import { JsonConverterDecoder, RawColumnDecoder, singleColumnSchema } from '../../../src/decode/json-decoder.ts';
import { parseJsonBytes } from '../../../src/decode/json-value.ts';
import { typeToJson } from '../../../src/iceberg/schema.ts';
import type { Schema } from '../../../src/iceberg/types.ts';
import { harness, readAll } from '../write/helpers.ts';
import type { Row } from '../write/helpers.ts';

const enc = (v: unknown): Uint8Array => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));

async function run(table: Schema, decode: (bytes: Uint8Array, sink: Parameters<JsonConverterDecoder['decode']>[1]) => unknown, inputs: readonly Uint8Array[]): Promise<{ rows: Row[]; errors: (Error | undefined)[] }> {
  const h = harness(table);
  const errors: (Error | undefined)[] = [];
  for (const b of inputs) {
    try {
      decode(b, h.writer.appender);
      errors.push(undefined);
    } catch (e) {
      errors.push(e as Error);
    }
  }
  const files = await h.writer.close();
  return { rows: files.length === 0 ? [] : await readAll(h.store, files, table), errors };
}

/** Big-endian two's complement bytes of an unscaled value, base64 (Connect Decimal in JSON). */
function decimalB64(u: bigint): string {
  let hex = (u < 0n ? (1n << 128n) + u : u).toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let b = Buffer.from(hex, 'hex');
  if (u >= 0n && (b[0] ?? 0) & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  if (u < 0n) while (b.length > 1 && b[0] === 0xff && ((b[1] ?? 0) & 0x80)) b = b.subarray(1);
  return b.toString('base64');
}

const CONNECT_SCHEMA = {
  type: 'struct',
  name: 'Order',
  optional: false,
  fields: [
    { field: 'id', type: 'int64', optional: false },
    { field: 'qty', type: 'int16', optional: false },
    { field: 'price', type: 'bytes', optional: false, name: 'org.apache.kafka.connect.data.Decimal', version: 1, parameters: { scale: '2', 'connect.decimal.precision': '10' } },
    { field: 'at', type: 'int64', optional: true, name: 'org.apache.kafka.connect.data.Timestamp', version: 1 },
    { field: 'day', type: 'int32', optional: true, name: 'org.apache.kafka.connect.data.Date', version: 1 },
    { field: 'tod', type: 'int32', optional: true, name: 'org.apache.kafka.connect.data.Time', version: 1 },
    { field: 'ratio', type: 'float', optional: true },
    { field: 'score', type: 'double', optional: true },
    { field: 'ok', type: 'boolean', optional: true },
    { field: 'raw', type: 'bytes', optional: true },
    { field: 'tags', type: 'array', optional: true, items: { type: 'string', optional: false } },
    { field: 'attrs', type: 'map', optional: true, keys: { type: 'string', optional: false }, values: { type: 'int32', optional: true } },
    { field: 'by_no', type: 'map', optional: true, keys: { type: 'int32', optional: false }, values: { type: 'string', optional: false } },
    { field: 'addr', type: 'struct', optional: true, fields: [{ field: 'city', type: 'string', optional: true }, { field: 'zip', type: 'string', optional: false }] },
  ],
};

describe('Connect schema → Iceberg', () => {
  test('types, logical types by name, optional flags', () => {
    const s = connectSchemaToIceberg(CONNECT_SCHEMA);
    const kinds = Object.fromEntries(s.fields.map((f) => [f.name, [typeToJson(f.type), f.required]]));
    assert.deepStrictEqual(kinds['id'], ['long', true]);
    assert.deepStrictEqual(kinds['qty'], ['int', true]);
    assert.deepStrictEqual(kinds['price'], ['decimal(10, 2)', true]);
    assert.deepStrictEqual(kinds['at'], ['timestamptz', false]);
    assert.deepStrictEqual(kinds['day'], ['date', false]);
    assert.deepStrictEqual(kinds['tod'], ['time', false]);
    assert.deepStrictEqual(kinds['ratio'], ['float', false]);
    assert.deepStrictEqual(kinds['raw'], ['binary', false]);
    assert.equal((typeToJson(s.fields.find((f) => f.name === 'attrs')!.type) as Record<string, unknown>)['value-required'], false);
    assert.equal(s.fields.length, 14);
    assert.throws(() => connectSchemaToIceberg({ type: 'string' }), ConfigError);
    assert.throws(() => connectSchemaToIceberg({ type: 'struct', fields: [{ field: 'x', type: 'uint8' }] }), ConfigError);
  });

  test('schemaless inference: integers → long, other numbers → double, objects → struct, arrays → list of the first element', () => {
    const s = inferIcebergSchema({ a: 1, b: 1.5, c: 'x', d: true, e: { f: [1, 2] }, g: [], h: null, i: [{ j: 'k' }] });
    assert.deepStrictEqual(typeToJson({ kind: 'struct', fields: s.fields }), {
      type: 'struct',
      fields: [
        { id: 1, name: 'a', required: false, type: 'long' },
        { id: 2, name: 'b', required: false, type: 'double' },
        { id: 3, name: 'c', required: false, type: 'string' },
        { id: 4, name: 'd', required: false, type: 'boolean' },
        { id: 5, name: 'e', required: false, type: { type: 'struct', fields: [{ id: 9, name: 'f', required: false, type: { type: 'list', 'element-id': 10, element: 'long', 'element-required': false } }] } },
        { id: 6, name: 'g', required: false, type: { type: 'list', 'element-id': 11, element: 'string', 'element-required': false } },
        { id: 7, name: 'h', required: false, type: 'string' },
        { id: 8, name: 'i', required: false, type: { type: 'list', 'element-id': 12, element: { type: 'struct', fields: [{ id: 13, name: 'j', required: false, type: 'string' }] }, 'element-required': false } },
      ],
    });
    assert.throws(() => inferIcebergSchema([1]), DataError);
  });

  test('schemaless inference: an empty object, or one holding only empty objects, leaves its field out (Parquet stores no empty struct)', () => {
    const s = inferIcebergSchema({ a: 1, b: {}, c: { d: {} }, e: [{}], f: { g: 'x', h: {} }, i: [{ j: {}, k: true }] });
    assert.deepStrictEqual(typeToJson({ kind: 'struct', fields: s.fields }), {
      type: 'struct',
      fields: [
        { id: 1, name: 'a', required: false, type: 'long' },
        { id: 2, name: 'f', required: false, type: { type: 'struct', fields: [{ id: 4, name: 'g', required: false, type: 'string' }] } },
        { id: 3, name: 'i', required: false, type: { type: 'list', 'element-id': 5, element: { type: 'struct', fields: [{ id: 6, name: 'k', required: false, type: 'boolean' }] }, 'element-required': false } },
      ],
    });
  });
});

describe('JsonConverter decoding', () => {
  test('schemas.enable=true: the envelope with decimals (base64 and numeric), timestamps, dates, maps and structs', async () => {
    const table = connectSchemaToIceberg(CONNECT_SCHEMA);
    const d = new JsonConverterDecoder(table);
    const payload = {
      id: 9007199254740993n, qty: 3, price: decimalB64(-12345n), at: 1_700_000_000_123, day: 19_000, tod: 3_600_000, ratio: 0.5, score: 1e300, ok: true,
      raw: Buffer.from([0, 255]).toString('base64'), tags: ['a', 'b'], attrs: { x: 1, y: null }, by_no: [[7, 'seven']], addr: { zip: '8000' },
    };
    const text = JSON.stringify({ schema: CONNECT_SCHEMA, payload }, (_k, v: unknown) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(/"@@(-?\d+)@@"/g, '$1');
    const numeric = JSON.stringify({ schema: CONNECT_SCHEMA, payload: { id: 2, qty: 1, price: 12.3 } });
    const { rows, errors } = await run(table, (b, s) => d.decode(b, s), [enc(text), enc(numeric)]);
    assert.deepEqual(errors, [undefined, undefined]);
    assert.deepStrictEqual(rows[0], {
      id: 9007199254740993n, qty: 3, price: -12345n, at: 1_700_000_000_123_000n, day: 19_000, tod: 3_600_000_000n, ratio: 0.5, score: 1e300, ok: true,
      raw: Uint8Array.from([0, 255]), tags: ['a', 'b'], attrs: [['x', 1], ['y', null]], by_no: [[7, 'seven']], addr: { city: null, zip: '8000' },
    });
    assert.equal(rows[1]?.['price'], 1230n);
    assert.equal(rows[1]?.['tags'], null);
  });

  test('schemas.enable=false: a table inferred from a record with an empty object takes that record and later ones', async () => {
    // The first record a task sees decides an auto-created table (an order without attributes, 1 in 10).
    const first = { id: 1, attributes: {} };
    const table = inferIcebergSchema(first);
    const d = new JsonConverterDecoder(table, { schemasEnable: false });
    const { rows, errors } = await run(table, (b, s) => d.decode(b, s), [enc(first), enc({ id: 2, attributes: { gift: 'yes' } })]);
    assert.deepEqual(errors, [undefined, undefined]);
    assert.deepStrictEqual(rows, [{ id: 1n }, { id: 2n }]);
  });

  test('schemas.enable=false: plain JSON into an inferred table; ISO timestamps; case-insensitive names', async () => {
    const first = { id: 1, name: 'a', nested: { v: 2.5 }, xs: [1, 2] };
    const table = inferIcebergSchema(first);
    const d = new JsonConverterDecoder(table, { schemasEnable: false, caseInsensitive: true });
    const { rows, errors } = await run(table, (b, s) => d.decode(b, s), [enc(first), enc({ ID: 2, nested: null, extra: 'ignored' })]);
    assert.deepEqual(errors, [undefined, undefined]);
    assert.deepStrictEqual(rows, [
      { id: 1n, name: 'a', nested: { v: 2.5 }, xs: [1n, 2n] },
      { id: 2n, name: null, nested: null, xs: null },
    ]);
    const tsTable: Schema = { schemaId: 0, fields: [{ id: 1, name: 'at', required: true, type: { kind: 'timestamptz' } }] };
    const ts = await run(tsTable, (b, s) => new JsonConverterDecoder(tsTable, { schemasEnable: false }).decode(b, s), [enc({ at: '2024-01-02T03:04:05.678Z' })]);
    assert.equal(ts.rows[0]?.['at'], BigInt(Date.parse('2024-01-02T03:04:05.678Z')) * 1000n);
  });

  test('bad records are DataErrors with clear messages, rolled back', async () => {
    const table = connectSchemaToIceberg(CONNECT_SCHEMA);
    const d = new JsonConverterDecoder(table);
    const env = (payload: unknown): Uint8Array => enc({ schema: CONNECT_SCHEMA, payload });
    const { rows, errors } = await run(table, (b, s) => d.decode(b, s), [
      enc('{"schema": {'), // not JSON
      enc({ id: 1 }), // no envelope
      env(null), // tombstone
      env({ id: 'one', qty: 1, price: 'AA==' }), // string into long
      env({ id: 1, qty: 1, price: 1.234 }), // too many fractional digits
      env({ id: 1, qty: 1, price: 'AA==', addr: { city: 'x' } }), // required nested field missing
      env({ id: 1, qty: 1 }), // required field missing
      env({ id: 7, qty: 1, price: 'AA==' }),
      Uint8Array.from([0xff, 0xfe]), // not UTF-8
    ]);
    assert.ok(errors.slice(0, 7).every((e) => e instanceof DataError), errors.map(String).join('\n'));
    assert.match(errors[0]!.message, /not valid JSON/);
    assert.match(errors[1]!.message, /requires "schema" and "payload"/);
    assert.equal((errors[2] as DataError).context['tombstone'], true);
    assert.match(errors[3]!.message, /field id: "one" is not a long/);
    assert.match(errors[4]!.message, /field price: 1.234 is not a decimal with at most 2 fractional digits/);
    assert.match(errors[5]!.message, /addr.zip/);
    assert.match(errors[6]!.message, /price/);
    assert.equal(errors[7], undefined);
    assert.ok(errors[8] instanceof DataError);
    assert.deepStrictEqual(rows.map((r) => r['id']), [7n]);
  });

  test('parseJsonBytes keeps integers beyond 2^53 exact', () => {
    assert.deepStrictEqual(parseJsonBytes(enc('{"a": 9223372036854775807, "b": 1, "c": -9007199254740993}')), { a: 9223372036854775807n, b: 1, c: -9007199254740993n });
  });
});

describe('StringConverter and ByteArrayConverter', () => {
  test('a string value into one string column, bytes into one binary column, Kafka nulls as null', async () => {
    const st = singleColumnSchema('string');
    const sd = new RawColumnDecoder(st, 'string');
    const s = await run(st, (b, sink) => sd.decode(b.length === 0 ? null : b, sink), [enc('héllo'), new Uint8Array(0), Uint8Array.from([0xc3, 0x28])]);
    assert.deepStrictEqual(s.rows, [{ value: 'héllo' }, { value: null }]);
    assert.ok(s.errors[2] instanceof DataError, 'invalid UTF-8 is a DataError from the column');
    const bt = singleColumnSchema('binary');
    const bd = new RawColumnDecoder(bt, 'binary');
    const b = await run(bt, (x, sink) => bd.decode(x, sink), [Uint8Array.from([0, 1, 2])]);
    assert.deepStrictEqual(b.rows, [{ value: Uint8Array.from([0, 1, 2]) }]);
    assert.throws(() => new RawColumnDecoder(bt, 'string'), ConfigError);
  });
});
