import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConverterConfig } from '../../../src/config/converters.ts';
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
