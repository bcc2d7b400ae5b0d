import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePartitionBy, partitionByProblem, splitPartitionBy } from '../../../src/iceberg/partition-by.ts';
import { buildPartitionSpec } from '../../../src/iceberg/partition-spec.ts';
import { validateConnectorConfig } from '../../../src/config/connector-config.ts';
import type { Schema } from '../../../src/iceberg/types.ts';

test('partition-by terms split on commas outside parentheses, like the Java sink', () => {
  assert.deepEqual(splitPartitionBy('bucket(id, 16), day(ts), region'), ['bucket(id, 16)', 'day(ts)', 'region']);
  assert.deepEqual(splitPartitionBy('bucket(id, 4), days(ts) ,region'), ['bucket(id, 4)', 'days(ts)', 'region']);
  assert.deepEqual(splitPartitionBy(''), []);
  assert.deepEqual(splitPartitionBy('  '), []);
  assert.deepEqual(splitPartitionBy('bucket(id, 4)'), ['bucket(id, 4)']);
});

test('each term reads as a column and a transform: Java singular and plural names, Spark argument order', () => {
  assert.deepEqual(parsePartitionBy('region, identity(a.b), years(ts), month(ts), days(ts), HOUR (ts), bucket(id, 16), truncate(4, name)'), [
    { text: 'region', column: 'region', transform: { kind: 'identity' } },
    { text: 'identity(a.b)', column: 'a.b', transform: { kind: 'identity' } },
    { text: 'years(ts)', column: 'ts', transform: { kind: 'year' } },
    { text: 'month(ts)', column: 'ts', transform: { kind: 'month' } },
    { text: 'days(ts)', column: 'ts', transform: { kind: 'day' } },
    { text: 'HOUR (ts)', column: 'ts', transform: { kind: 'hour' } },
    { text: 'bucket(id, 16)', column: 'id', transform: { kind: 'bucket', n: 16 } },
    { text: 'truncate(4, name)', column: 'name', transform: { kind: 'truncate', width: 4 } },
  ]);
  assert.deepEqual(parsePartitionBy(['bucket(8, region)', ' day(ts) ']).map((t) => t.transform), [{ kind: 'bucket', n: 8 }, { kind: 'day' }]);
  assert.deepEqual(parsePartitionBy(''), []);
});

const BAD: readonly [string, RegExp][] = [
  ['day(ts', /unbalanced parentheses/],
  ['day(ts))', /unbalanced parentheses/],
  [')day(ts(', /unbalanced parentheses/],
  ['bucket(id)', /bucket takes a column and a positive integer/],
  ['bucket(id, x)', /bucket takes a column and a positive integer/],
  ['bucket(16, 4)', /bucket takes a column and a positive integer/],
  ['truncate(id, 4, 5)', /truncate takes a column and a positive integer/],
  ['bucket(id, 0)', /0 is not a positive integer/],
  ['bucket(id, 2147483648)', /2147483648 is not a positive integer up to 2147483647/],
  ['minute(ts)', /unknown transform minute/],
  ['zorder(id)', /unknown transform zorder/],
  ['day(a, b)', /day takes one column/],
  ['a,,b', /has an empty term/],
  ['a,', /has an empty term/],
  ['day()', /"day\(\)" is malformed/],
  ['day(f(x))', /"day\(f\(x\)\)" is malformed/],
  ['a(b)c', /"a\(b\)c" is malformed/],
];

test('every syntax problem is an error naming the term or the text, never a dropped term', () => {
  for (const [text, re] of BAD) {
    assert.throws(() => parsePartitionBy(text), (e: Error) => e.name === 'ConfigError' && re.test(e.message), text);
    assert.match(partitionByProblem(text) ?? '', re, text);
  }
  assert.equal(partitionByProblem('day(order_ts), bucket(customer_id, 16)'), undefined);
});

test('one grammar: connector validation refuses exactly what the spec builder cannot parse, with the same message', () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'id', required: true, type: { kind: 'long' } },
      { id: 2, name: 'ts', required: false, type: { kind: 'timestamptz' } },
      { id: 3, name: 'region', required: false, type: { kind: 'string' } },
    ],
  };
  const base = {
    name: 'c',
    'connector.class': 'IcebergSink',
    topics: 't',
    'iceberg.tables': 'db.t',
    'iceberg.catalog.type': 'rest',
    'iceberg.catalog.uri': 'http://127.0.0.1:8181',
  };
  for (const text of ['bucket(id, 16), day(ts), region', 'bucket(4, id)', 'days(ts)', 'identity(region)', 'hours(ts), truncate(region, 2)']) {
    assert.doesNotThrow(() => buildPartitionSpec(schema, text), text);
    assert.equal(validateConnectorConfig({ ...base, 'iceberg.tables.default-partition-by': text }).errorCount, 0, text);
  }
  for (const [text] of BAD) {
    let builderMessage = '';
    assert.throws(() => buildPartitionSpec(schema, text), (e: Error) => ((builderMessage = e.message), e.name === 'ConfigError'), text);
    const errors = validateConnectorConfig({ ...base, 'iceberg.table.db.t.partition-by': text }).errors.get('iceberg.table.db.t.partition-by') ?? [];
    assert.deepEqual(errors, [`Invalid value ${text} for configuration iceberg.table.db.t.partition-by: ${builderMessage}`], text);
  }
});
