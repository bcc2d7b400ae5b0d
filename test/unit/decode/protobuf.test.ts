/**
 * Protobuf → Iceberg schema (iceberg-writer.md §2.3) and the columnar Protobuf decoder: messages are
 * encoded with protobufjs (an independent encoder), decoded by our compiled decoder into a real
 * DataFileWriter, and read back with hyparquet.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type protobuf from 'protobufjs';
import { ConfigError, DataError, RetriableError } from '../../../src/core/errors.ts';
import { confluentMessageIndexes } from '../../../src/decode/confluent-frame.ts';
import { compileProtobufDecoder, ConfluentProtobufDecoder } from '../../../src/decode/protobuf-decoder.ts';
import type { CompileProtobufOptions } from '../../../src/decode/protobuf-decoder.ts';
import { parseProtobufSchema, protobufToIceberg } from '../../../src/decode/protobuf-schema.ts';
import type { RegisteredSchema, SchemaResolver } from '../../../src/decode/registry-port.ts';
import { typeToJson } from '../../../src/iceberg/schema.ts';
import type { Schema } from '../../../src/iceberg/types.ts';
import { harness, readAll } from '../write/helpers.ts';
import type { Row } from '../write/helpers.ts';

const PROTO = `syntax = "proto3";
package test.pb;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

enum Status { UNKNOWN = 0; ACTIVE = 1; CLOSED = 2; }

message Prim {
  double d = 1;
  float f = 2;
  int32 i32 = 3;
  int64 i64 = 4;
  uint32 u32 = 5;
  uint64 u64 = 6;
  sint32 s32 = 7;
  sint64 s64 = 8;
  fixed32 f32 = 9;
  fixed64 f64 = 10;
  sfixed32 sf32 = 11;
  sfixed64 sf64 = 12;
  bool b = 13;
  string s = 14;
  bytes by = 15;
  Status st = 16;
  optional int32 opt = 17;
  google.protobuf.Timestamp ts = 18;
  google.protobuf.Int64Value wl = 19;
  google.protobuf.StringValue ws = 20;
}

message Order {
  message Line {
    string sku = 1;
    int32 qty = 2;
  }
  int64 id = 1;
  Line first = 2;
  repeated Line lines = 3;
  repeated int64 packed_ids = 4;
  repeated string tags = 5;
  map<string, int64> counts = 6;
  map<int32, Line> by_no = 7;
  oneof payment {
    string card = 8;
    int64 voucher = 9;
  }
  repeated Status statuses = 10;
}
`;

const schema = parseProtobufSchema(PROTO);
const Prim = schema.byName('test.pb.Prim');
const Order = schema.byName('test.pb.Order');

function encode(t: protobuf.Type, value: Record<string, unknown>): Uint8Array {
  return t.encode(t.fromObject(value)).finish();
}

async function roundTrip(
  message: string,
  inputs: readonly Uint8Array[],
  opts: { table?: Schema; decoder?: CompileProtobufOptions } = {},
): Promise<{ table: Schema; rows: Row[]; errors: (DataError | undefined)[] }> {
  const table = opts.table ?? protobufToIceberg(schema, { message });
  const program = compileProtobufDecoder(schema, table, { message, ...opts.decoder });
  const h = harness(table);
  const errors: (DataError | undefined)[] = [];
  for (const bytes of inputs) {
    try {
      program.decode(h.writer.appender, bytes);
      errors.push(undefined);
    } catch (e) {
      if (!(e instanceof DataError)) throw e;
      errors.push(e);
    }
  }
  const files = await h.writer.close();
  return { table, rows: files.length === 0 ? [] : await readAll(h.store, files, table), errors };
}

const kinds = (s: Schema): Record<string, unknown> => Object.fromEntries(s.fields.map((f) => [f.name, [typeToJson(f.type), f.required]]));

describe('Protobuf → Iceberg schema (iceberg-writer.md §2.3)', () => {
  test('scalars, enums, presence, well-known types', () => {
    assert.deepStrictEqual(kinds(protobufToIceberg(schema, { message: 'test.pb.Prim' })), {
      d: ['double', true], f: ['float', true], i32: ['int', true], i64: ['long', true], u32: ['long', true], u64: ['decimal(20, 0)', true],
      s32: ['int', true], s64: ['long', true], f32: ['long', true], f64: ['decimal(20, 0)', true], sf32: ['int', true], sf64: ['long', true],
      b: ['boolean', true], s: ['string', true], by: ['binary', true], st: ['string', true], opt: ['int', false], ts: ['timestamptz', false],
      wl: ['long', false], ws: ['string', false],
    });
  });

  test('nested messages, repeated, maps, oneof; ids like Java; message index paths', () => {
    const s = protobufToIceberg(PROTO, { message: [1] });
    assert.deepStrictEqual(s.fields.map((f) => f.name), ['id', 'first', 'lines', 'packed_ids', 'tags', 'counts', 'by_no', 'payment', 'statuses']);
    const json = typeToJson({ kind: 'struct', fields: s.fields }) as { fields: { name: string; type: unknown; required: boolean }[] };
    const by = Object.fromEntries(json.fields.map((f) => [f.name, f]));
    assert.equal(by['first']?.required, false);
    assert.deepStrictEqual((by['lines']?.type as { 'element-required': boolean })['element-required'], true);
    assert.equal(by['lines']?.required, true);
    assert.deepStrictEqual(by['payment']?.type, {
      type: 'struct',
      fields: [
        { id: 23, name: 'card', required: false, type: 'string' },
        { id: 24, name: 'voucher', required: false, type: 'long' },
      ],
    });
    const m = by['by_no']?.type as Record<string, unknown>;
    assert.equal(m['key'], 'int');
    assert.equal(m['value-required'], false, 'a message map value may be absent');
    assert.equal((by['counts']?.type as Record<string, unknown>)['value-required'], true);
    assert.deepStrictEqual(s.fields.map((f) => f.id), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // [1, 0] is Order's first nested message (Line)
    assert.deepStrictEqual(protobufToIceberg(PROTO, { message: [1, 0] }).fields.map((f) => f.name), ['sku', 'qty']);
    // The path comes from a record's frame: one the schema lacks is that record's bad bytes.
    assert.throws(() => protobufToIceberg(PROTO, { message: [5] }), DataError);
  });

  test('proto2: optional → optional (null when absent), required → required; forceOptional', () => {
    const p2 = 'syntax = "proto2"; message A { required int64 id = 1; optional string note = 2; repeated int32 xs = 3; }';
    assert.deepStrictEqual(kinds(protobufToIceberg(p2)), { id: ['long', true], note: ['string', false], xs: [{ type: 'list', 'element-id': 4, element: 'int', 'element-required': true }, true] });
    const forced = protobufToIceberg(p2, { forceOptional: true });
    assert.ok(forced.fields.every((f) => !f.required));
  });

  test('recursive messages and unparsable text are ConfigErrors', () => {
    assert.throws(() => protobufToIceberg('syntax = "proto3"; message Node { int32 v = 1; Node next = 2; }'), (e: unknown) => e instanceof ConfigError && /recursive/.test(e.message));
    assert.throws(() => protobufToIceberg('syntax = "proto3"; message M { int32 v = 1; google.protobuf.Struct s = 2; }'), ConfigError);
    assert.throws(() => protobufToIceberg('syntax = "proto3"; message { oops'), ConfigError);
  });

  test('references: a registry answer with an imported file resolves', () => {
    const s = protobufToIceberg({
      schema: 'syntax = "proto3"; package a; import "common/money.proto"; message Order { c.Money total = 1; }',
      references: [{ name: 'common/money.proto', schema: 'syntax = "proto3"; package c; message Money { string currency = 1; int64 units = 2; }' }],
    });
    assert.deepStrictEqual(typeToJson(s.fields[0]!.type), {
      type: 'struct',
      fields: [
        { id: 2, name: 'currency', required: true, type: 'string' },
        { id: 3, name: 'units', required: true, type: 'long' },
      ],
    });
  });
});

describe('Protobuf decoder: round trips through the real writer', () => {
  test('every scalar, enum, presence and well-known type', async () => {
    const full = {
      d: Math.PI, f: 1.5, i32: -5, i64: '-9007199254740993', u32: 4294967295, u64: '18446744073709551615', s32: -2147483648, s64: '-9223372036854775808',
      f32: 4000000000, f64: '12345678901234567890', sf32: -7, sf64: '9223372036854775807', b: true, s: 'Zürich ✓', by: Buffer.from([0, 1, 255]), st: 'CLOSED',
      opt: 0, ts: { seconds: 1_700_000_000, nanos: 123_456_789 }, wl: { value: '42' }, ws: { value: '' },
    };
    const rt = await roundTrip('test.pb.Prim', [encode(Prim, full), encode(Prim, {}), encode(Prim, { i64: 7, st: 'ACTIVE', ts: { seconds: -1, nanos: 999_999_999 } })]);
    assert.deepEqual(rt.errors, [undefined, undefined, undefined]);
    assert.deepStrictEqual(rt.rows[0], {
      d: Math.PI, f: 1.5, i32: -5, i64: -9007199254740993n, u32: 4294967295n, u64: 18446744073709551615n, s32: -2147483648, s64: -9223372036854775808n,
      f32: 4000000000n, f64: 12345678901234567890n, sf32: -7, sf64: 9223372036854775807n, b: true, s: 'Zürich ✓', by: Uint8Array.from([0, 1, 255]), st: 'CLOSED',
      opt: 0, ts: 1_700_000_000_123_456n, wl: 42n, ws: '',
    });
    // proto3 implicit scalars absent → defaults; presence fields absent → null
    assert.deepStrictEqual(rt.rows[1], {
      d: 0, f: 0, i32: 0, i64: 0n, u32: 0n, u64: 0n, s32: 0, s64: 0n, f32: 0n, f64: 0n, sf32: 0, sf64: 0n, b: false, s: '', by: new Uint8Array(0), st: 'UNKNOWN',
      opt: null, ts: null, wl: null, ws: null,
    });
    assert.equal(rt.rows[2]?.['ts'], -1n, '-1 s + 999999999 ns = -1 µs (floored)');
    assert.equal(rt.rows[2]?.['st'], 'ACTIVE');
  });

  test('nested messages, repeated (packed and not), maps, oneof', async () => {
    const inputs = [
      {
        id: 1, first: { sku: 'a', qty: 2 }, lines: [{ sku: 'x', qty: 1 }, { sku: 'y', qty: -3 }], packed_ids: [1, '-2', '9007199254740993'], tags: ['t1', ''],
        counts: { a: 1, b: '-5' }, by_no: { 7: { sku: 'seven', qty: 7 } }, card: '4111', statuses: ['ACTIVE', 'UNKNOWN'],
      },
      { id: 2, voucher: 99 },
      {},
    ];
    const rt = await roundTrip('test.pb.Order', inputs.map((v) => encode(Order, v)));
    assert.deepEqual(rt.errors, [undefined, undefined, undefined]);
    assert.deepStrictEqual(rt.rows, [
      {
        id: 1n, first: { sku: 'a', qty: 2 }, lines: [{ sku: 'x', qty: 1 }, { sku: 'y', qty: -3 }], packed_ids: [1n, -2n, 9007199254740993n], tags: ['t1', ''],
        counts: [['a', 1n], ['b', -5n]], by_no: [[7, { sku: 'seven', qty: 7 }]], payment: { card: '4111', voucher: null }, statuses: ['ACTIVE', 'UNKNOWN'],
      },
      { id: 2n, first: null, lines: [], packed_ids: [], tags: [], counts: [], by_no: [], payment: { card: null, voucher: 99n }, statuses: [] },
      { id: 0n, first: null, lines: [], packed_ids: [], tags: [], counts: [], by_no: [], payment: null, statuses: [] },
    ]);
  });

  test('wire-format rules: any field order, last one wins, unpacked repeated, merged messages, unknown fields skipped', async () => {
    const tag = (no: number, wt: number): number[] => varint((no << 3) | wt);
    const str = (s: string): number[] => [...varint(Buffer.byteLength(s)), ...Buffer.from(s)];
    const line = (sku: string, qty?: number): number[] => [...tag(1, 2), ...str(sku), ...(qty === undefined ? [] : [...tag(2, 0), ...varint(qty)])];
    const bytes = Uint8Array.from([
      ...tag(5, 2), ...str('t1'), // tags before id
      ...tag(99, 2), ...str('unknown'), // unknown length-delimited
      ...tag(1, 0), ...varint(1), // id = 1 …
      ...tag(100, 0), ...varint(300), // unknown varint
      ...tag(101, 1), 1, 2, 3, 4, 5, 6, 7, 8, // unknown fixed64
      ...tag(102, 5), 1, 2, 3, 4, // unknown fixed32
      ...tag(103, 3), ...tag(1, 0), 5, ...tag(103, 4), // unknown group
      ...tag(4, 0), ...varint(10), // packed_ids sent unpacked
      ...tag(2, 2), ...varint(line('a').length), ...line('a'), // first = {sku: a}
      ...tag(1, 0), ...varint(42), // … then id = 42: last wins
      ...tag(5, 2), ...str('t2'), // tags continue after other fields
      ...tag(4, 2), ...varint(2), ...varint(11), ...varint(12), // then packed
      ...tag(2, 2), ...varint(line('b', 5).length - 3), ...tag(2, 0), ...varint(5), // first again: merged → {sku: a, qty: 5}
      ...tag(8, 2), ...str('card'), ...tag(9, 0), ...varint(3), // oneof: voucher set last wins
    ]);
    const rt = await roundTrip('test.pb.Order', [bytes]);
    assert.deepEqual(rt.errors, [undefined]);
    const row = rt.rows[0] as Record<string, unknown>;
    assert.equal(row['id'], 42n);
    assert.deepStrictEqual(row['tags'], ['t1', 't2']);
    assert.deepStrictEqual(row['packed_ids'], [10n, 11n, 12n]);
    assert.deepStrictEqual(row['first'], { sku: 'a', qty: 5 });
    assert.deepStrictEqual(row['payment'], { card: null, voucher: 3n });
  });

  test('bad bytes are DataErrors, rolled back; the next record decodes', async () => {
    const good = encode(Order, { id: 5, tags: ['ok'] });
    const rt = await roundTrip('test.pb.Order', [
      good.subarray(0, good.length - 1), // truncated string
      Uint8Array.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), // 11-byte varint
      Uint8Array.from([0x0a, 0x01, 0x41]), // id (field 1) sent length-delimited: wrong wire type
      Uint8Array.from([0x0c]), // end-group without start
      good,
    ]);
    assert.ok(rt.errors.slice(0, 4).every((e) => e instanceof DataError), String(rt.errors));
    assert.match(rt.errors[2]!.message, /wire type 2 does not match/);
    assert.equal(rt.errors[4], undefined);
    assert.equal(rt.rows.length, 1);
    assert.equal(rt.rows[0]?.['id'], 5n);
  });

  test('resolution by name: fields the table lacks are skipped, table fields the message lacks are null, widening', async () => {
    const table: Schema = {
      schemaId: 0,
      fields: [
        { id: 1, name: 'ID', required: true, type: { kind: 'long' } },
        { id: 2, name: 'qty_total', required: false, type: { kind: 'double' } },
        { id: 3, name: 'extra', required: false, type: { kind: 'string' } },
      ],
    };
    const p = 'syntax = "proto3"; message M { int64 id = 1; int32 qty_total = 2; string dropped = 3; }';
    const s = parseProtobufSchema(p);
    const M = s.message([0]);
    const program = compileProtobufDecoder(s, table, { caseInsensitive: true });
    const h = harness(table);
    program.decode(h.writer.appender, encode(M, { id: 3, qty_total: 7, dropped: 'x' }));
    const rows = await readAll(h.store, await h.writer.close(), table);
    assert.deepStrictEqual(rows, [{ ID: 3n, qty_total: 7, extra: null }]);
    assert.throws(() => compileProtobufDecoder(s, { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'int' } }] }), ConfigError);
  });
});

describe('Confluent Protobuf framing', () => {
  test('message-index lists: a single 0 is [0]; explicit paths are zig-zag varints', () => {
    assert.deepStrictEqual(confluentMessageIndexes(Uint8Array.from([0, 0, 0, 0, 1, 0, 0x08])), { indexes: null, start: 6 });
    assert.deepStrictEqual(confluentMessageIndexes(Uint8Array.from([0, 0, 0, 0, 1, 4, 2, 0, 0x08])), { indexes: [1, 0], start: 8 });
    assert.throws(() => confluentMessageIndexes(Uint8Array.from([0, 0, 0, 0, 1])), DataError);
  });

  test('decodes by id and index path through a resolver; non-Protobuf ids and retriable failures', async () => {
    let calls = 0;
    const resolver: SchemaResolver = {
      byId(id: number): Promise<RegisteredSchema> {
        calls++;
        if (id === 7) return Promise.resolve({ id, type: 'PROTOBUF', schema: PROTO });
        if (id === 8) return Promise.resolve({ id, type: 'AVRO', schema: '"long"' });
        return Promise.reject(new RetriableError('registry down'));
      },
    };
    const table = protobufToIceberg(PROTO, { message: [1] });
    const decoder = new ConfluentProtobufDecoder(resolver, table);
    const h = harness(table);
    const frame = (indexes: number[], body: Uint8Array): Uint8Array => Uint8Array.from([0, 0, 0, 0, 7, ...indexes, ...body]);
    await decoder.decodeAsync(frame([2, 2], encode(Order, { id: 1 })), h.writer.appender); // [1] = Order
    await decoder.decodeAsync(frame([2, 2], encode(Order, { id: 2 })), h.writer.appender);
    assert.equal(calls, 1);
    // [0] = Prim: does not fit the Order table (its fields are different types) → ConfigError, cached
    assert.throws(() => decoder.decode(frame([0], encode(Prim, { i64: 1 })), h.writer.appender), (e: unknown) => e instanceof ConfigError || e instanceof DataError);
    await assert.rejects(decoder.decodeAsync(Uint8Array.from([0, 0, 0, 0, 8, 0, 8, 1]), h.writer.appender), DataError);
    await assert.rejects(decoder.decodeAsync(Uint8Array.from([0, 0, 0, 0, 9, 0, 8, 1]), h.writer.appender), RetriableError);
    // without the index list (@kafkajs/confluent-schema-registry's frames)
    const noIndex = new ConfluentProtobufDecoder(resolver, protobufToIceberg(PROTO), { messageIndexes: false });
    const h2 = harness(noIndex.table);
    await noIndex.decodeAsync(Uint8Array.from([0, 0, 0, 0, 7, ...encode(Prim, { i32: 3 })]), h2.writer.appender);
    const rows = await readAll(h.store, await h.writer.close(), table);
    assert.deepStrictEqual(rows.map((r) => r['id']), [1n, 2n]);
    const rows2 = await readAll(h2.store, await h2.writer.close(), noIndex.table);
    assert.equal(rows2[0]?.['i32'], 3);
  });
});

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}
