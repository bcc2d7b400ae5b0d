import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, DataError, RetriableError } from '../../../src/core/errors.ts';
import { compileAvroDecoder, ConfluentAvroDecoder } from '../../../src/decode/avro-decoder.ts';
import { confluentSchemaId } from '../../../src/decode/confluent-frame.ts';
import { avroToIceberg } from '../../../src/decode/avro-schema.ts';
import type { RegisteredSchema, SchemaResolver } from '../../../src/decode/registry-port.ts';
import type { Schema } from '../../../src/iceberg/types.ts';
import { harness, readAll } from '../write/helpers.ts';
import { avscType, roundTrip, str, zigzag } from './helpers.ts';

const dec = (precision: number, scale: number, base: 'bytes' | 'fixed' = 'bytes', size = 16): Record<string, unknown> =>
  base === 'bytes' ? { type: 'bytes', logicalType: 'decimal', precision, scale } : { type: 'fixed', name: `D${precision}_${scale}`, size, logicalType: 'decimal', precision, scale };

/** Big-endian two's complement bytes of an unscaled value (what avsc takes for decimal fields). */
function be(u: bigint, size?: number): Buffer {
  let n = size ?? 1;
  if (size === undefined) while (u >= 1n << BigInt(8 * n - 1) || u < -(1n << BigInt(8 * n - 1))) n++;
  const out = Buffer.alloc(n);
  let x = u < 0n ? (1n << BigInt(8 * n)) + u : u;
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}

const PRIMITIVES = {
  type: 'record',
  name: 'Prim',
  namespace: 'test',
  fields: [
    { name: 'b', type: 'boolean' },
    { name: 'i', type: 'int' },
    { name: 'l', type: 'long' },
    { name: 'f', type: 'float' },
    { name: 'd', type: 'double' },
    { name: 's', type: 'string' },
    { name: 'by', type: 'bytes' },
    { name: 'fx', type: { type: 'fixed', name: 'Four', size: 4 } },
    { name: 'e', type: { type: 'enum', name: 'Color', symbols: ['RED', 'GREEN', 'BLUE'] } },
    { name: 'dec_b', type: dec(10, 2) },
    { name: 'dec_f', type: dec(20, 4, 'fixed', 9) },
    { name: 'dec_wide', type: dec(40, 3) },
    { name: 'u', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'uf', type: { type: 'fixed', name: 'U16', size: 16, logicalType: 'uuid' } },
    { name: 'dt', type: { type: 'int', logicalType: 'date' } },
    { name: 'tm', type: { type: 'int', logicalType: 'time-millis' } },
    { name: 'tmu', type: { type: 'long', logicalType: 'time-micros' } },
    { name: 'tsm', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'tsu', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'ltm', type: { type: 'long', logicalType: 'local-timestamp-millis' } },
    { name: 'ltu', type: { type: 'long', logicalType: 'local-timestamp-micros' } },
  ],
};

function prim(k: number): Record<string, unknown> {
  const neg = k % 2 === 1 ? -1 : 1;
  return {
    b: k % 2 === 0,
    i: [0, -1, 2147483647, -2147483648, 42][k % 5],
    l: [0, -1, 2 ** 40 + 7, -(2 ** 53) + 2, 2 ** 53 - 2][k % 5], // avsc's number longs stop short of ±(2^53 - 1)
    f: [0, -1.5, 3.25, 1e30, -0][k % 5],
    d: [0, -1.5, Math.PI, 1e300, Number.MIN_VALUE][k % 5],
    s: ['', 'ascii', 'Zürich ✓', 'x'.repeat(100), '日本'][k % 5],
    by: Buffer.from([k, 0, 255].slice(0, k % 4)),
    fx: Buffer.from([k, 1, 2, 255]),
    e: ['RED', 'GREEN', 'BLUE'][k % 3],
    dec_b: be(BigInt(neg * (12345 + k))),
    dec_f: be(BigInt(neg) * (10n ** 19n - 1n - BigInt(k)), 9),
    dec_wide: be(BigInt(neg) * 10n ** 39n + BigInt(k)),
    u: `f79c3e09-677c-4bbd-a479-3f349cb785e${k % 10}`,
    uf: Buffer.from(Array.from({ length: 16 }, (_, j) => (j * 17 + k) & 0xff)),
    dt: [0, -1, 19000, -719162, 2932896][k % 5],
    tm: [0, 86_399_999, 12_345][k % 3],
    tmu: [0, 86_399_999_999, 1][k % 3],
    tsm: [0, -1, 1_700_000_000_123, -62_135_596_800_000][k % 4],
    tsu: [0, -1, 1_700_000_000_123_456, -2_208_988_800_000_000][k % 4],
    ltm: [0, 1_700_000_000_123][k % 2],
    ltu: [0, -1_700_000_000_123_456][k % 2],
  };
}

describe('Avro decoder: golden round trips through the real writer', () => {
  test('every primitive and logical type decodes to what avsc decodes', async () => {
    const inputs = Array.from({ length: 20 }, (_, k) => prim(k));
    const rt = await roundTrip(PRIMITIVES, inputs);
    assert.deepEqual(rt.errors, inputs.map(() => undefined));
    assert.equal(rt.rows.length, 20);
    assert.deepStrictEqual(rt.rows, rt.expected);
    // spot checks of the conversions, independent of the expectation helper
    const r1 = rt.rows[1] as Record<string, unknown>;
    assert.equal(r1['tsm'], -1000n);
    assert.equal(r1['tm'], 86_399_999_000n);
    assert.equal(r1['e'], 'GREEN');
    assert.equal(r1['dec_b'], -12346n);
    assert.equal(r1['dec_wide'], '-999999999999999999999999999999999999.999');
    assert.deepEqual(r1['u'], Uint8Array.from(Buffer.from('f79c3e09677c4bbda4793f349cb785e1', 'hex')));
  });

  const NESTED = {
    type: 'record',
    name: 'Order',
    fields: [
      { name: 'id', type: 'long' },
      {
        name: 'address',
        type: ['null', { type: 'record', name: 'Address', fields: [{ name: 'city', type: ['null', 'string'] }, { name: 'zip', type: 'string' }, { name: 'geo', type: ['null', { type: 'record', name: 'Geo', fields: [{ name: 'lat', type: 'double' }, { name: 'lon', type: 'double' }] }] }] }],
      },
      { name: 'tags', type: ['null', { type: 'array', items: ['null', 'string'] }] },
      { name: 'lines', type: { type: 'array', items: { type: 'record', name: 'Line', fields: [{ name: 'sku', type: 'string' }, { name: 'qty', type: 'int' }, { name: 'price', type: dec(9, 2) }] } } },
      { name: 'attrs', type: { type: 'map', values: ['null', { type: 'array', items: 'long' }] } },
      { name: 'extra', type: ['null', { type: 'map', values: 'Address' }] },
      { name: 'matrix', type: { type: 'array', items: { type: 'array', items: 'int' } } },
      { name: 'choice', type: ['null', 'int', 'string', 'Geo'] },
      { name: 'either', type: ['long', 'string'] },
    ],
  };

  test('nested records, arrays, maps and unions, with nulls at every level', async () => {
    const addr = (k: number): unknown =>
      k % 4 === 0 ? null : { Address: { city: k % 3 === 0 ? null : { string: `city-${k}` }, zip: `${10000 + k}`, geo: k % 2 === 0 ? null : { Geo: { lat: k / 3, lon: -k } } } };
    const inputs = Array.from({ length: 24 }, (_, k) => ({
      id: k,
      address: addr(k),
      tags: k % 5 === 0 ? null : { array: Array.from({ length: k % 4 }, (_, j) => (j === 1 ? null : { string: `t${j}` })) },
      lines: Array.from({ length: k % 3 }, (_, j) => ({ sku: `SKU-${j}`, qty: j + k, price: be(BigInt(j * 100 - k)) })),
      attrs: Object.fromEntries(Array.from({ length: k % 3 }, (_, j) => [`k${j}`, j === 1 ? null : { array: [j, -j, 2 ** 40] }])),
      extra: k % 2 === 0 ? null : { map: { a: (addr(k + 1) as { Address: unknown } | null)?.Address ?? { city: null, zip: '0', geo: null } } },
      matrix: k % 3 === 0 ? [] : [[1, 2], [], [k]],
      choice: [null, { int: k }, { string: `s${k}` }, { Geo: { lat: 1, lon: 2 } }][k % 4],
      either: k % 2 === 0 ? { long: k * 1000 } : { string: 'x' },
    }));
    const rt = await roundTrip(NESTED, inputs);
    assert.deepEqual(rt.errors, inputs.map(() => undefined));
    assert.deepStrictEqual(rt.rows, rt.expected);
    const r2 = rt.rows[2] as Record<string, unknown>;
    assert.deepStrictEqual(r2['choice'], { tag: 1, field0: null, field1: 's2', field2: null });
    assert.equal((rt.rows[0] as Record<string, unknown>)['choice'], null);
    assert.deepStrictEqual(r2['either'], { tag: 0, field0: 2000n, field1: null });
  });

  test('schema evolution: writer-only fields are skipped, table-only fields are null, int → long, float → double', async () => {
    const writer = {
      type: 'record',
      name: 'V2',
      fields: [
        { name: 'skip_arr', type: { type: 'array', items: { type: 'record', name: 'S', fields: [{ name: 'a', type: 'string' }, { name: 'b', type: ['null', 'double'] }] } } },
        { name: 'ID', type: 'int' },
        { name: 'skip_map', type: { type: 'map', values: ['null', 'string', 'S'] } },
        { name: 'amount', type: 'float' },
        { name: 'skip_fixed', type: { type: 'fixed', name: 'F3', size: 3 } },
        { name: 'nested', type: { type: 'record', name: 'N', fields: [{ name: 'x', type: 'int' }, { name: 'gone', type: 'bytes' }] } },
        { name: 'skip_union', type: ['null', 'boolean', 'S'] },
      ],
    };
    const table: Schema = {
      schemaId: 3,
      fields: [
        { id: 1, name: 'id', required: true, type: { kind: 'long' } },
        { id: 2, name: 'amount', required: false, type: { kind: 'double' } },
        { id: 3, name: 'added', required: false, type: { kind: 'string' } },
        { id: 4, name: 'nested', required: false, type: { kind: 'struct', fields: [{ id: 5, name: 'x', required: true, type: { kind: 'long' } }, { id: 6, name: 'new_child', required: false, type: { kind: 'int' } }] } },
      ],
    };
    const inputs = Array.from({ length: 10 }, (_, k) => ({
      skip_arr: Array.from({ length: k % 3 }, (_, j) => ({ a: `a${j}`, b: j % 2 ? null : { double: j } })),
      ID: k - 5,
      skip_map: { m: k % 2 ? null : { string: 'v' }, n: { S: { a: 'x', b: null } } },
      amount: k / 4,
      skip_fixed: Buffer.from([1, 2, 3]),
      nested: { x: 2147483647 - k, gone: Buffer.from('zz') },
      skip_union: [null, { boolean: true }, { S: { a: 'q', b: { double: 1 } } }][k % 3],
    }));
    // the case-sensitive match would miss `ID` → `id`, and the required `id` would then be missing
    await assert.rejects(
      (async () => {
        const rt = await roundTrip(writer, inputs.slice(0, 1), { table });
        throw rt.errors[0];
      })(),
      (e: unknown) => e instanceof DataError && /required field id .*missing/.test(e.message),
    );
    const rt = await roundTrip(writer, inputs, { table, decoder: { caseInsensitive: true } });
    assert.deepEqual(rt.errors, inputs.map(() => undefined));
    assert.deepStrictEqual(rt.rows, rt.expected);
    assert.deepStrictEqual(rt.rows[0], { id: -5n, amount: 0, added: null, nested: { x: 2147483647n, new_child: null } });
  });

  test('longs beyond 2^53 go through BigInt exactly; millis × 1000 beyond 2^53 too', async () => {
    const schema = {
      type: 'record',
      name: 'Big',
      fields: [
        { name: 'l', type: 'long' },
        { name: 'ol', type: ['null', 'long'] },
        { name: 'ts', type: { type: 'long', logicalType: 'timestamp-millis' } },
        { name: 'ls', type: { type: 'array', items: 'long' } },
      ],
    };
    const values = [0n, 1n, -1n, 2n ** 52n + 3n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 62n + 12345n, 2n ** 63n - 1n, -(2n ** 63n)];
    const inputs = values.map((v, k) => ({
      l: v,
      ol: k % 2 ? null : { long: v === -(2n ** 63n) ? 2n ** 63n - 1n : -v },
      ts: [2 ** 50, -(2 ** 50), 9_007_199_254_741, 1_700_000_000_000][k % 4] as number, // avsc's {type: long, logicalType} stays a plain (number) long
      ls: [v, 2n ** 60n, -5n],
    }));
    const rt = await roundTrip(schema, inputs, { bigints: true });
    assert.deepEqual(rt.errors, inputs.map(() => undefined));
    assert.deepStrictEqual(rt.rows, rt.expected);
    assert.deepStrictEqual(
      rt.rows.map((r) => r['l']),
      values,
    );
    assert.equal(rt.rows[0]?.['ts'], 2n ** 50n * 1000n);
  });

  test('negative block counts (with byte sizes) in arrays and maps, read and skipped', async () => {
    const writer = {
      type: 'record',
      name: 'Blocks',
      fields: [
        { name: 'xs', type: { type: 'array', items: 'long' } },
        { name: 'skipped', type: { type: 'array', items: 'string' } },
        { name: 'm', type: { type: 'map', values: 'int' } },
        { name: 'skipped_map', type: { type: 'map', values: 'string' } },
      ],
    };
    const table: Schema = {
      schemaId: 0,
      fields: [
        { id: 1, name: 'xs', required: true, type: { kind: 'list', elementId: 3, elementRequired: true, element: { kind: 'long' } } },
        { id: 2, name: 'm', required: true, type: { kind: 'map', keyId: 4, key: { kind: 'string' }, valueId: 5, valueRequired: true, value: { kind: 'int' } } },
      ],
    };
    const block = (items: number[][]): number[] => {
      const body = items.flat();
      return [...zigzag(-items.length), ...zigzag(body.length), ...body];
    };
    const bytes = Uint8Array.from([
      // xs: a negative block of 2, a positive block of 1, end
      ...block([zigzag(7), zigzag(-(2 ** 40))]),
      ...zigzag(1),
      ...zigzag(99),
      0,
      // skipped: a negative block (skipped by its byte size), then a positive block
      ...block([str('abc'), str('')]),
      ...zigzag(1),
      ...str('zz'),
      0,
      // m: a negative block of 2 entries, end
      ...block([[...str('a'), ...zigzag(1)], [...str('b'), ...zigzag(-2)]]),
      0,
      // skipped_map: positive block
      ...zigzag(1),
      ...str('k'),
      ...str('v'),
      0,
    ]);
    // avsc agrees with the hand encoding
    assert.deepStrictEqual({ ...(avscType(writer).fromBuffer(Buffer.from(bytes)) as object) }, { xs: [7, -(2 ** 40), 99], skipped: ['abc', '', 'zz'], m: { a: 1, b: -2 }, skipped_map: { k: 'v' } });
    const rt = await roundTrip(writer, [bytes], { table });
    assert.deepEqual(rt.errors, [undefined]);
    assert.deepStrictEqual(rt.rows, [{ xs: [7n, -(2n ** 40n), 99n], m: [['a', 1], ['b', -2]] }]);
  });
});

describe('Avro decoder: errors roll the record back', () => {
  const schema = {
    type: 'record',
    name: 'E',
    fields: [
      { name: 'id', type: 'long' },
      { name: 'name', type: ['null', 'string'] },
      { name: 'inner', type: { type: 'record', name: 'I', fields: [{ name: 'v', type: ['null', 'int'] }, { name: 'tags', type: { type: 'array', items: 'string' } }] } },
      { name: 'price', type: dec(10, 2) },
    ],
  };
  const table: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'id', required: true, type: { kind: 'long' } },
      { id: 2, name: 'name', required: true, type: { kind: 'string' } },
      {
        id: 3,
        name: 'inner',
        required: true,
        type: { kind: 'struct', fields: [{ id: 5, name: 'v', required: true, type: { kind: 'int' } }, { id: 6, name: 'tags', required: true, type: { kind: 'list', elementId: 7, elementRequired: true, element: { kind: 'string' } } }] },
      },
      { id: 4, name: 'price', required: true, type: { kind: 'decimal', precision: 4, scale: 2 } },
    ],
  };
  const good = (k: number): unknown => ({ id: k, name: { string: `n${k}` }, inner: { v: { int: k }, tags: ['a', 'b'] }, price: be(BigInt(k)) });

  test('truncated bytes, null into required (top and nested), a decimal too wide, bad union index, trailing bytes, invalid UTF-8', async () => {
    const type = avscType(schema);
    const full = type.toBuffer(good(7));
    const badUnion = Buffer.from(full);
    badUnion[1] = 0x08; // name's union index 4
    const badUtf8 = Buffer.from(type.toBuffer({ ...(good(8) as object), name: { string: 'ab' } }));
    badUtf8[3] = 0xff; // second byte of "ab"
    const inputs: unknown[] = [
      good(1),
      full.subarray(0, full.length - 1), // truncated inside the decimal
      full.subarray(0, 3), // truncated inside the string
      good(2),
      { ...(good(3) as object), name: null }, // null into required name
      { ...(good(4) as object), inner: { v: null, tags: ['x', 'y', 'z'] } }, // null into required inner.v, after tags were not yet written
      { ...(good(5) as object), price: be(12345n) }, // 123.45 does not fit decimal(4, 2)
      badUnion,
      Buffer.concat([full, Buffer.from([0])]), // a byte too many
      badUtf8,
      good(6),
    ];
    const rt = await roundTrip(schema, inputs, { table });
    const messages = rt.errors.map((e) => e?.message);
    assert.deepEqual(
      rt.errors.map((e) => e === undefined),
      [true, false, false, true, false, false, false, false, false, false, true],
    );
    for (const e of rt.errors) if (e !== undefined) assert.ok(e instanceof DataError && e.code === 'DATA_INVALID' && !e.retriable);
    assert.match(messages[1] as string, /truncated/);
    assert.match(messages[2] as string, /truncated at name/);
    assert.match(messages[4] as string, /required field name .*null/);
    assert.match(messages[5] as string, /required field inner\.v .*null/);
    assert.match(messages[6] as string, /price.*exceeds decimal\(4, 2\)/);
    assert.match(messages[7] as string, /name: union index 4 out of range/);
    assert.match(messages[8] as string, /1 bytes left/);
    assert.match(messages[9] as string, /name.*UTF-8/);
    // the appender is intact: exactly the good records came through, every column row-aligned
    assert.deepStrictEqual(rt.rows, rt.expected);
    assert.deepStrictEqual(
      rt.rows.map((r) => r['id']),
      [1n, 2n, 6n],
    );
    assert.deepStrictEqual(rt.rows[2], { id: 6n, name: 'n6', inner: { v: 6, tags: ['a', 'b'] }, price: 6n });
  });

  test('a writer schema that cannot fit the table is a ConfigError at compile time', () => {
    const t: Schema = { schemaId: 0, fields: [{ id: 1, name: 'a', required: false, type: { kind: 'int' } }] };
    const w = (type: unknown): unknown => ({ type: 'record', name: 'R', fields: [{ name: 'a', type }] });
    assert.throws(() => compileAvroDecoder(w('string'), t), ConfigError);
    assert.throws(() => compileAvroDecoder(w('long'), t), ConfigError); // narrowing
    assert.throws(() => compileAvroDecoder(w(['int', 'string']), t), /struct<tag/);
    const ts: Schema = { schemaId: 0, fields: [{ id: 1, name: 'a', required: false, type: { kind: 'timestamptz' } }] };
    assert.throws(() => compileAvroDecoder(w('long'), ts), /no time unit/);
    const d: Schema = { schemaId: 0, fields: [{ id: 1, name: 'a', required: false, type: { kind: 'decimal', precision: 10, scale: 3 } }] };
    assert.throws(() => compileAvroDecoder(w(dec(10, 2)), d), /scale 2 is not 3/);
    assert.throws(() => compileAvroDecoder(w('int'), t, { caseInsensitive: true }) && compileAvroDecoder({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }, { name: 'A', type: 'int' }] }, t, { caseInsensitive: true }), /twice/);
  });
});

describe('Confluent wire format and the decoder cache', () => {
  const v1 = { type: 'record', name: 'Ev', fields: [{ name: 'id', type: 'int' }, { name: 'name', type: 'string' }] };
  const v2 = { type: 'record', name: 'Ev', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }, { name: 'note', type: ['null', 'string'], default: null }] };
  const frame = (id: number, body: Buffer): Uint8Array => {
    const h = Buffer.alloc(5);
    h.writeUInt32BE(id, 1);
    return Uint8Array.from(Buffer.concat([h, body]));
  };

  test('frames are decoded by schema id, compiled once per id, into one table', async () => {
    const calls: number[] = [];
    const schemas: Record<number, RegisteredSchema> = {
      11: { id: 11, type: 'AVRO', schema: JSON.stringify(v1) },
      12: { id: 12, type: 'AVRO', schema: JSON.stringify(v2) },
      13: { id: 13, type: 'PROTOBUF', schema: 'syntax = "proto3";' },
    };
    let unavailable = true;
    const resolver: SchemaResolver = {
      byId(id) {
        calls.push(id);
        if (id === 99 && unavailable) return Promise.reject(new RetriableError('registry down'));
        const s = schemas[id] ?? (id === 99 ? schemas[11] : undefined);
        return s === undefined ? Promise.reject(new RetriableError(`unknown id ${id}`)) : Promise.resolve(s);
      },
    };
    const table = avroToIceberg(v2);
    const h = harness(table);
    const d = new ConfluentAvroDecoder(resolver, table);
    const t1 = avscType(v1);
    const t2 = avscType(v2);
    const msgs = [frame(11, t1.toBuffer({ id: 1, name: 'a' })), frame(12, t2.toBuffer({ id: 2, name: 'b', note: { string: 'n' } })), frame(11, t1.toBuffer({ id: 3, name: 'c' }))];
    assert.equal(confluentSchemaId(msgs[1] as Uint8Array), 12);
    await Promise.all([d.prepare(11), d.prepare(11), d.prepare(12)]);
    for (const m of msgs) d.decode(m, h.writer.appender);
    await d.decodeAsync(frame(12, t2.toBuffer({ id: 2 ** 40, name: 'd', note: null })), h.writer.appender);
    assert.deepEqual(calls, [11, 12]);
    // framing errors and non-Avro schemas are DataErrors; the registry being down is retriable and not cached
    assert.throws(() => d.decode(Uint8Array.from([1, 0, 0, 0, 11, 0]), h.writer.appender), /first byte is 0x01, not the magic byte 0x00/);
    assert.throws(() => d.decode(Uint8Array.from([0, 0]), h.writer.appender), DataError);
    await assert.rejects(d.decodeAsync(frame(13, Buffer.from([0])), h.writer.appender), /PROTOBUF, not AVRO/);
    await assert.rejects(d.prepare(13), DataError);
    await assert.rejects(d.prepare(99), RetriableError);
    unavailable = false;
    await d.prepare(99);
    assert.deepEqual(calls, [11, 12, 13, 99, 99]);
    const files = await h.writer.close();
    const rows = await readAll(h.store, files, table);
    assert.deepStrictEqual(rows, [
      { id: 1n, name: 'a', note: null },
      { id: 2n, name: 'b', note: 'n' },
      { id: 3n, name: 'c', note: null },
      { id: 2n ** 40n, name: 'd', note: null },
    ]);
  });
});
