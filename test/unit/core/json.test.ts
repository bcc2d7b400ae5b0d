import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, stringifyJson, toBigInt } from '../../../src/core/json.ts';

test('integers beyond 2^53 survive a parse/stringify round trip exactly', () => {
  const text = '{"snapshot-id":8744736658442914487,"small":42,"ratio":0.5,"neg":-9223372036854775808}';
  const v = parseJson(text) as Record<string, unknown>;
  assert.equal(v['snapshot-id'], 8744736658442914487n);
  assert.equal(v['small'], 42);
  assert.equal(v['ratio'], 0.5);
  assert.equal(v['neg'], -9223372036854775808n);
  assert.equal(stringifyJson(v), text);
});

test('toBigInt accepts safe numbers, bigints and digit strings, and rejects the rest', () => {
  assert.equal(toBigInt(7), 7n);
  assert.equal(toBigInt(2n ** 62n), 2n ** 62n);
  assert.equal(toBigInt('-12'), -12n);
  assert.throws(() => toBigInt(1.5, 'offset'), /offset is not an integer/);
  assert.throws(() => toBigInt(null));
});
