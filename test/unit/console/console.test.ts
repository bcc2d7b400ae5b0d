/**
 * The console tool's pure parts (tools/console/): what `icefloe produce` accepts and how it encodes, and
 * the JSON line `icefloe consume` prints for each kind of value. The real-stack round trip is in
 * test/e2e/cli-console.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { avroType, confluentFrame, confluentProtobufFrame, encodeAvro, encodeProtobuf, keyFromField, parseDocument, protobufTarget } from '../../../tools/console/encode.ts';
import type { InputRecord } from '../../../tools/console/encode.ts';
import { RecordPrinter } from '../../../tools/console/decode.ts';
import type { RawRecord } from '../../../src/consume/port.ts';
import type { RegisteredSchema, SchemaResolver } from '../../../src/decode/registry-port.ts';

const AVRO_SCHEMA = JSON.stringify({
  type: 'record',
  name: 'Demo',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'name', type: ['null', 'string'], default: null },
    { name: 'tag', type: ['null', 'string', 'int'], default: null },
    { name: 'raw', type: 'bytes', default: '' },
  ],
});
const PROTO = `syntax = "proto3";
package demo;
message First { string x = 1; }
message Demo {
  int64 id = 1;
  uint32 small = 2;
  Kind kind = 3;
  repeated Inner items = 4;
  map<string, int32> counts = 5;
  bytes data = 6;
  enum Kind { A = 0; B = 1; }
  message Inner { string name = 1; }
}
`;

const rec = (text: string, origin = 'stdin line 1'): InputRecord => ({ origin, text });
const avroOf = (text: string): Uint8Array => encodeAvro(avroType(AVRO_SCHEMA), rec(text), parseDocument(rec(text)));

test('produce, Avro: plain JSON values (unions unwrapped or wrapped, defaults filled, bytes as code points) encode to what avsc reads back', () => {
  const type = avro.Type.forSchema(JSON.parse(AVRO_SCHEMA) as avro.Schema, { wrapUnions: false });
  const read = (text: string): unknown => ({ ...(type.fromBuffer(Buffer.from(avroOf(text))) as object) });
  assert.deepEqual(read('{"id": 1, "name": "a", "tag": 7, "raw": "\\u00ff\\u0001"}'), { id: 1, name: 'a', tag: 7, raw: Buffer.from([0xff, 1]) });
  assert.deepEqual(read('{"id": 2, "tag": {"string": "t"}}'), { id: 2, name: null, tag: 't', raw: Buffer.alloc(0) });
});

test('produce, Avro: a document that does not fit names its origin and the field', () => {
  const bad: readonly [string, RegExp][] = [
    ['{"name": "a"}', /^stdin line 1 does not fit the Avro schema: field id: missing, and the schema gives it no default$/],
    ['{"id": 1, "nmae": "a"}', /field nmae: not in record Demo \(its fields: id, name, tag, raw\)/],
    ['{"id": "one"}', /field id: expected long, got "one"/],
    ['{"id": 1, "tag": true}', /field tag: true matches no branch of the union \[null, string, int\]/],
    ['{"id": 12345678901234567890}', /field id: 12345678901234567890 does not fit a JavaScript number exactly/],
    ['{"id": 1, "raw": "\\u0100"}', /field raw: bytes are a string of code points 0-255/],
  ];
  for (const [text, message] of bad) assert.throws(() => avroOf(text), { message }, text);
  assert.throws(() => avroType('{"type": "record"'), /the Avro schema is not JSON/);
  assert.throws(() => avroType('{"type": "record", "name": "R"}'), /the Avro schema is not valid/);
});

test('produce, Protobuf: the message by name and its Confluent index path; values checked before protobufjs coerces them', () => {
  assert.deepEqual(protobufTarget(PROTO, undefined).indexes, [0]);
  const demo = protobufTarget(PROTO, 'demo.Demo');
  assert.deepEqual(demo.indexes, [1]);
  assert.deepEqual(protobufTarget(PROTO, 'demo.Demo.Inner').indexes, [1, 0]);
  const doc = '{"id": "9223372036854775807", "small": 4294967295, "kind": "B", "items": [{"name": "n"}], "counts": {"a": 1}, "data": "AQI="}';
  const body = encodeProtobuf(demo, rec(doc), parseDocument(rec(doc)));
  const decoded = demo.type.toObject(demo.type.decode(body), { longs: String, enums: String, bytes: String });
  assert.deepEqual(decoded, { id: '9223372036854775807', small: 4294967295, kind: 'B', items: [{ name: 'n' }], counts: { a: 1 }, data: 'AQI=' });
  const bad: readonly [string, RegExp][] = [
    ['{"idd": 1}', /^--value #2 does not fit Protobuf message Demo: field idd: not a field of message Demo \(its fields: id, small, kind, items, counts, data\)$/],
    ['{"id": "9223372036854775808"}', /field id: expected int64, got "9223372036854775808"/],
    ['{"small": -1}', /field small: expected uint32, got -1/],
    ['{"kind": "C"}', /field kind: expected a symbol of enum Kind \(A, B\), got "C"/],
    ['{"items": [{"name": 3}]}', /field items\[0\]\.name: expected string, got 3/],
    ['{"counts": {"a": "x"}}', /field counts\.a: expected int32, got "x"/],
  ];
  for (const [text, message] of bad) assert.throws(() => encodeProtobuf(demo, rec(text, '--value #2'), parseDocument(rec(text))), { message }, text);
  assert.throws(() => protobufTarget(PROTO, 'demo.Nope'), /has no message demo\.Nope/);
});

test('produce: JSON input errors and --key-field keys', () => {
  assert.throws(() => parseDocument(rec('{"id": 1', '--value #3')), { message: /^--value #3 is not a JSON document: / });
  const doc = parseDocument(rec('{"id": 12345678901234567890, "s": "k", "o": {"a": 1}}'));
  assert.equal(keyFromField(rec(''), doc, 'id'), '12345678901234567890'); // every digit, not a rounded double
  assert.equal(keyFromField(rec(''), doc, 's'), 'k');
  assert.equal(keyFromField(rec(''), doc, 'o'), '{"a":1}');
  assert.throws(() => keyFromField(rec('', 'stdin line 4'), doc, 'nope'), { message: /^stdin line 4 has no field 'nope' for --key-field \(its fields: id, s, o\)$/ });
});

/** A registry that knows the given schemas (the pure printer's port; the real one is tested on the stack). */
class Schemas implements SchemaResolver {
  readonly byIdMap: Map<number, RegisteredSchema>;
  constructor(entries: readonly RegisteredSchema[]) {
    this.byIdMap = new Map(entries.map((e) => [e.id, e]));
  }
  byId(id: number): Promise<RegisteredSchema> {
    const s = this.byIdMap.get(id);
    return s === undefined ? Promise.reject(new Error(`schema ${id} not found`)) : Promise.resolve(s);
  }
}

const raw = (value: Uint8Array | null, key: Uint8Array | null = null): RawRecord => ({ topic: 't', partition: 2, offset: 41n, timestamp: Date.UTC(2026, 0, 2, 3, 4, 5), key, value, headers: [] });

test('consume: each kind of value becomes one JSON line with partition, offset, timestamp, key, value and format', async () => {
  const printer = new RecordPrinter(new Schemas([
    { id: 7, type: 'AVRO', schema: AVRO_SCHEMA },
    { id: 8, type: 'PROTOBUF', schema: PROTO },
  ]));
  const line = async (value: Uint8Array | null, key: Uint8Array | null = null): Promise<unknown> => JSON.parse(await printer.line(raw(value, key))) as unknown;
  const head = { partition: 2, offset: 41, timestamp: '2026-01-02T03:04:05.000Z' };
  assert.deepEqual(await line(confluentFrame(7, avroOf('{"id": 5, "name": "x", "raw": "\\u00ff"}')), Buffer.from('k')), {
    ...head, key: 'k', value: { id: 5, name: 'x', tag: null, raw: '\u00ff' }, format: 'avro', schemaId: 7,
  });
  const demo = protobufTarget(PROTO, 'demo.Demo');
  const pbDoc = '{"id": 3, "kind": "B"}';
  assert.deepEqual(await line(confluentProtobufFrame(8, demo.indexes, encodeProtobuf(demo, rec(pbDoc), parseDocument(rec(pbDoc))))), {
    ...head, key: null, value: { id: '3', small: 0, kind: 'B', items: [], counts: {}, data: '' }, format: 'protobuf', schemaId: 8,
  });
  // JSON keeps its own text: a number past 2^53 keeps every digit.
  assert.match(await printer.line(raw(Buffer.from('{"n": 12345678901234567890}'))), /"value":\{"n": 12345678901234567890\},"format":"json"/);
  assert.deepEqual(await line(Buffer.from('plain text')), { ...head, key: null, value: 'plain text', format: 'string' });
  assert.deepEqual(await line(Uint8Array.of(0xff, 0xfe)), { ...head, key: null, value: 'fffe', format: 'hex' });
  assert.deepEqual(await line(null), { ...head, key: null, value: null, format: 'null' });
  assert.deepEqual(await line(Uint8Array.of(0, 0, 0, 0, 99, 1)), {
    ...head, key: null, value: '000000006301', format: 'hex', schemaId: 99, error: 'schema id 99: schema 99 not found',
  });
  // A key that is framed or not UTF-8 says how it was read.
  assert.deepEqual(await line(null, Uint8Array.of(0xff)), { ...head, key: 'ff', value: null, format: 'null', keyFormat: 'hex' });
});
