import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bindPartitionSpec,
  buildPartitionSpec,
  lastAssignedPartitionId,
  partitionFieldsToJson,
  partitionPath,
  partitionSpecFromJson,
  partitionSpecToJson,
  partitionType,
  unpartitionedSpec,
  validatePartitionSpec,
} from '../../../src/iceberg/partition-spec.ts';
import { daysFromCivil } from '../../../src/iceberg/transforms.ts';
import type { Schema } from '../../../src/iceberg/types.ts';

const schema: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'ts', required: false, type: { kind: 'timestamptz' } },
    { id: 3, name: 'region', required: false, type: { kind: 'string' } },
    { id: 4, name: 'd', required: false, type: { kind: 'date' } },
    { id: 5, name: 'score', required: false, type: { kind: 'double' } },
    {
      id: 6,
      name: 'meta',
      required: false,
      type: { kind: 'struct', fields: [{ id: 7, name: 'source', required: false, type: { kind: 'string' } }] },
    },
    { id: 8, name: 'tags', required: false, type: { kind: 'list', elementId: 9, elementRequired: false, element: { kind: 'string' } } },
    { id: 10, name: 'd_year', required: false, type: { kind: 'string' } },
  ],
};

test('buildPartitionSpec follows the Apache sink syntax and Java default names, field ids from 1000', () => {
  const spec = buildPartitionSpec(schema, 'bucket(id, 16), hour(ts), region, truncate(meta.source, 4)');
  assert.deepEqual(partitionSpecToJson(spec), {
    'spec-id': 0,
    fields: [
      { name: 'id_bucket', transform: 'bucket[16]', 'source-id': 1, 'field-id': 1000 },
      { name: 'ts_hour', transform: 'hour', 'source-id': 2, 'field-id': 1001 },
      { name: 'region', transform: 'identity', 'source-id': 3, 'field-id': 1002 },
      { name: 'meta.source_trunc', transform: 'truncate[4]', 'source-id': 7, 'field-id': 1003 },
    ],
  });
  assert.equal(lastAssignedPartitionId(spec), 1003);
  // Java's plural names are accepted too, and Spark's bucket(N, col) order
  assert.deepEqual(buildPartitionSpec(schema, ['months(d)', 'years(ts)', 'bucket(8, region)']).fields.map((f) => f.name), ['d_month', 'ts_year', 'region_bucket']);
  assert.deepEqual(buildPartitionSpec(schema, 'days(ts)').fields[0]?.transform, { kind: 'day' });
  // continuing an existing table's ids
  assert.equal(buildPartitionSpec(schema, 'region', { lastPartitionId: 1004, specId: 3 }).fields[0]?.fieldId, 1005);
  assert.deepEqual(buildPartitionSpec(schema, ''), unpartitionedSpec());
  assert.equal(lastAssignedPartitionId(unpartitionedSpec()), 999);
});

test('an invalid partition-by is a ConfigError naming the term, never an unpartitioned table', () => {
  const bad: [string, RegExp][] = [
    ['bucket(nope, 16)', /column nope is not in the table schema/],
    ['bucket(id)', /takes a column and a positive integer/],
    ['bucket(id, x)', /takes a column and a positive integer/],
    ['bucket(id, 0)', /not a positive integer/],
    ['zorder(id)', /unknown transform zorder/],
    ['hour(d)', /cannot be applied to d of type date/],
    ['bucket(score, 4)', /cannot be applied to score of type double/],
    ['day(ts), hour(ts)', /redundant/],
    ['meta', /is a struct, not a primitive/],
    ['tags.element', /inside a list or map/],
    ['region, region', /used more than once/],
    ['year(d)', /d_year clashes with a schema column/],
    ['region,,id', /empty term/],
    ['day(ts', /unbalanced parentheses/],
  ];
  for (const [text, message] of bad) {
    assert.throws(() => buildPartitionSpec(schema, text), (e: Error) => e.name === 'ConfigError' && message.test(e.message), text);
  }
  // a name that exists as a column is rejected for non-identity transforms (Java checkConflicts)
  assert.throws(() => validatePartitionSpec({ specId: 0, fields: [{ sourceId: 2, fieldId: 1000, name: 'd_year', transform: { kind: 'day' } }] }, schema), /clashes/);
  // compatibility-only validation (what a catalog checks, and what binding a foreign table's spec needs)
  assert.doesNotThrow(() => validatePartitionSpec({ specId: 0, fields: [{ sourceId: 2, fieldId: 1000, name: 'd_year', transform: { kind: 'day' } }] }, schema, { strict: false }));
  assert.doesNotThrow(() => validatePartitionSpec({ specId: 0, fields: [{ sourceId: 99, fieldId: 1000, name: 'gone', transform: { kind: 'void' } }] }, schema));
  assert.equal(bindPartitionSpec({ specId: 0, fields: [{ sourceId: 99, fieldId: 1000, name: 'gone', transform: { kind: 'void' } }] }, schema)[0]?.apply('x'), null);
  // identity may reuse its own column's name
  assert.doesNotThrow(() => validatePartitionSpec({ specId: 0, fields: [{ sourceId: 10, fieldId: 1000, name: 'd_year', transform: { kind: 'identity' } }] }, schema));
});

test('spec JSON round-trips; v1 bare field arrays get sequential ids from 1000', () => {
  const spec = buildPartitionSpec(schema, 'bucket(id, 16), day(ts)', { specId: 2 });
  assert.deepEqual(partitionSpecFromJson(partitionSpecToJson(spec)), spec);
  assert.deepEqual(partitionFieldsToJson(spec), (partitionSpecToJson(spec)['fields'] as unknown[]));
  const v1 = partitionSpecFromJson([
    { name: 'a', transform: 'identity', 'source-id': 3 },
    { name: 'b', transform: 'day', 'source-id': 2 },
  ]);
  assert.deepEqual(v1.fields.map((f) => f.fieldId), [1000, 1001]);
  assert.equal(partitionSpecFromJson({ fields: [] }, 4).specId, 4); // REST create may omit spec-id
  assert.throws(() => partitionSpecFromJson({ 'spec-id': 0, fields: 'x' }), { name: 'FatalError' });
});

test('partition type and bound transforms', () => {
  const spec = buildPartitionSpec(schema, 'bucket(id, 16), day(ts), region');
  assert.deepEqual(partitionType(spec, schema), {
    kind: 'struct',
    fields: [
      { id: 1000, name: 'id_bucket', required: false, type: { kind: 'int' } },
      { id: 1001, name: 'ts_day', required: false, type: { kind: 'date' } },
      { id: 1002, name: 'region', required: false, type: { kind: 'string' } },
    ],
  });
  const bound = bindPartitionSpec(spec, schema);
  assert.equal(bound[1]?.apply(-1n), -1);
  assert.equal(bound[2]?.apply('eu'), 'eu');
});

test('partition paths are Hive-style and URL-escaped like Java partitionToPath', () => {
  const spec = buildPartitionSpec(schema, 'day(ts), region, bucket(id, 16)');
  const day = daysFromCivil(2017, 11, 16);
  assert.equal(partitionPath(spec, schema, [day, 'eu west/1', 3]), 'ts_day=2017-11-16/region=eu+west%2F1/id_bucket=3');
  assert.equal(partitionPath(spec, schema, [null, null, null]), 'ts_day=null/region=null/id_bucket=null');
  assert.equal(partitionPath(unpartitionedSpec(), schema, []), '');
  assert.throws(() => partitionPath(spec, schema, [1]), TypeError);
});
