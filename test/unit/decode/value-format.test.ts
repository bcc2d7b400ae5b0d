import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConverterConfig } from '../../../src/config/converters.ts';
import { DataError } from '../../../src/core/errors.ts';
import { CaptureSink } from '../../../src/decode/probe.ts';
import type { SchemaResolver } from '../../../src/decode/registry-port.ts';
import { valueFormat } from '../../../src/decode/value-format.ts';

const json = (schemasEnable: boolean): ConverterConfig => ({
  className: 'org.apache.kafka.connect.json.JsonConverter',
  kind: 'json',
  schemasEnable,
  decimalFormat: 'BASE64',
  schemaRegistryUrls: [],
  props: {},
});
const utf8 = new TextEncoder();
const msg = (v: unknown): Uint8Array => utf8.encode(JSON.stringify(v));

test('schemaless JSON with evolution on: the schema key tells records apart by their field names at every depth', () => {
  const f = valueFormat(json(false), undefined, { caseInsensitive: false, forceOptional: false, evolveSchema: true });
  assert.equal(f.inferredSchemas, true);
  const key = (v: unknown): string => f.schemaKey(msg(v));
  const base = { id: 1, attributes: { device: 'ios' }, items: [{ sku: 'a' }] };
  // Values and key order do not matter; names do, nested ones included (objects inside arrays too).
  assert.equal(key(base), key({ items: [{ sku: 'b' }], attributes: { device: 'web' }, id: 2 }));
  assert.notEqual(key(base), key({ ...base, attributes: { device: 'ios', gift_wrap: 'true' } }));
  assert.notEqual(key(base), key({ ...base, items: [{ sku: 'a' }, { sku: 'b', qty: 2 }] }));
  assert.notEqual(key(base), key({ ...base, note: null }));
  // A name cannot pose as a path: {"a.b": 1} and {"a": {"b": 1}} differ.
  assert.notEqual(key({ 'a.b': 1 }), key({ a: { b: 1 } }));
});

test('schemaless JSON with evolution off keeps the top-level key; typed formats are not inferred', () => {
  const f = valueFormat(json(false), undefined, { caseInsensitive: false, forceOptional: false });
  assert.equal(f.schemaKey(msg({ id: 1, attributes: { device: 'ios' } })), f.schemaKey(msg({ attributes: { gift_wrap: 'true' }, id: 2 })));
  assert.notEqual(f.schemaKey(msg({ id: 1 })), f.schemaKey(msg({ id: 1, note: 'x' })));
  assert.notEqual(valueFormat(json(true), undefined, { caseInsensitive: false, forceOptional: false, evolveSchema: true }).inferredSchemas, true);
});

/** Counts JSON.parse calls made while `body` runs (the format's only way to parse a record). */
async function countingParses(body: () => Promise<void> | void): Promise<number> {
  const parse = JSON.parse;
  let n = 0;
  JSON.parse = ((...args: Parameters<typeof JSON.parse>) => (n++, parse(...args))) as typeof JSON.parse;
  try {
    await body();
  } finally {
    JSON.parse = parse;
  }
  return n;
}

test('a JSON record is parsed once however often its key, schema and tables ask for it', async () => {
  for (const schemasEnable of [false, true]) {
    const f = valueFormat(json(schemasEnable), undefined, { caseInsensitive: false, forceOptional: false, evolveSchema: true });
    const value = { id: 7, name: 'a' };
    const schema = { type: 'struct', fields: [{ field: 'id', type: 'int64' }, { field: 'name', type: 'string', optional: true }] };
    const bytes = (): Uint8Array => msg(schemasEnable ? { schema, payload: value } : value);
    const table = await f.sourceSchema(bytes());
    const decoders = [f.decoderFor(table), f.decoderFor(table), f.decoderFor(table)];
    const sink = new CaptureSink();
    const id = table.fields[0]?.id as number;
    const m = bytes();
    const parses = await countingParses(async () => {
      const key = f.schemaKey(m);
      await f.sourceSchema(m);
      for (const d of decoders) {
        assert.equal(d.prepare(m), undefined);
        sink.reset();
        d.decode(m, sink);
        assert.equal(sink.value(id), 7n);
      }
      assert.equal(f.schemaKey(m), key);
    });
    assert.equal(parses, 1, `schemas.enable=${schemasEnable}`);
    // Another record with the same bytes is another record: parsed again (identity, not content).
    assert.equal(await countingParses(() => void f.schemaKey(bytes())), 1);
  }
});

test('a JSON record that does not parse fails every table the same way, parsed once', async () => {
  const f = valueFormat(json(false), undefined, { caseInsensitive: false, forceOptional: false });
  const table = await f.sourceSchema(msg({ id: 1 }));
  const d = f.decoderFor(table);
  const bad = utf8.encode('{"id": 1,');
  const parses = await countingParses(async () => {
    assert.throws(() => f.schemaKey(bad), DataError);
    await assert.rejects(f.sourceSchema(bad), DataError);
    assert.throws(() => d.decode(bad, new CaptureSink()), /not valid JSON/);
  });
  assert.equal(parses, 1);
});

test('Avro and Protobuf schema keys come from the frame: the id, and the message path when it is not [0]', () => {
  const resolver: SchemaResolver = { byId: () => Promise.reject(new Error('not called')) };
  const avro = valueFormat({ className: 'io.confluent.connect.avro.AvroConverter', kind: 'avro', schemasEnable: false }, resolver, { caseInsensitive: false, forceOptional: false });
  assert.equal(avro.schemaKey(Uint8Array.from([0, 0, 0, 1, 2, 9])), '258');
  assert.equal(avro.schemaKey(Uint8Array.from([0, 0, 0, 1, 2, 7])), '258');
  assert.throws(() => avro.schemaKey(Uint8Array.from([0x7b, 0x7d])), /not the magic byte/);
  const pb = valueFormat({ className: 'io.confluent.connect.protobuf.ProtobufConverter', kind: 'protobuf', schemasEnable: false }, resolver, { caseInsensitive: false, forceOptional: false });
  assert.equal(pb.schemaKey(Uint8Array.from([0, 0, 0, 0, 5, 0, 8, 1])), '5');
  assert.equal(pb.schemaKey(Uint8Array.from([0, 0, 0, 0, 5, 4, 2, 0, 8, 1])), '5:1.0');
  assert.notEqual(pb.schemaKey(Uint8Array.from([0, 0, 0, 0, 5, 2, 2, 8, 1])), pb.schemaKey(Uint8Array.from([0, 0, 0, 0, 5, 2, 4, 8, 1])));
});
