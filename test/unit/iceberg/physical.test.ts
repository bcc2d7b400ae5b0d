/**
 * The one Iceberg type → physical kind mapping (src/iceberg/physical.ts), checked against spec "Parquet"
 * (the physical type each Iceberg type is stored as), and its consumers: the column builder and bound bytes
 * of every primitive agree with it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toBoundBytes } from '../../../src/iceberg/bounds.ts';
import { physicalKind, physicalType } from '../../../src/iceberg/physical.ts';
import type { PhysicalKind } from '../../../src/iceberg/physical.ts';
import type { PrimitiveType, PrimitiveValue, Schema } from '../../../src/iceberg/types.ts';
import { buildLayout, RecordAppender } from '../../../src/write/index.ts';

// Spec "Parquet": boolean BOOLEAN; int, date INT32; long, time, timestamp(tz)(_ns) INT64; float FLOAT;
// double DOUBLE; decimal (by precision); string, binary BINARY; uuid, fixed(L) FIXED_LEN_BYTE_ARRAY.
const CASES: readonly (readonly [PrimitiveType, PhysicalKind, PrimitiveValue, number | undefined])[] = [
  [{ kind: 'boolean' }, 'boolean', true, 1],
  [{ kind: 'int' }, 'int', 7, 4],
  [{ kind: 'date' }, 'int', 19_000, 4],
  [{ kind: 'long' }, 'long', 7n, 8],
  [{ kind: 'time' }, 'long', 7n, 8],
  [{ kind: 'timestamp' }, 'long', 7n, 8],
  [{ kind: 'timestamptz' }, 'long', 7n, 8],
  [{ kind: 'timestamp_ns' }, 'long', 7n, 8],
  [{ kind: 'timestamptz_ns' }, 'long', 7n, 8],
  [{ kind: 'float' }, 'float', 1.5, 4],
  [{ kind: 'double' }, 'double', 1.5, 8],
  [{ kind: 'decimal', precision: 9, scale: 2 }, 'decimal', 1234n, undefined],
  [{ kind: 'string' }, 'string', 'abc', 3],
  [{ kind: 'binary' }, 'binary', Uint8Array.of(1, 2), 2],
  [{ kind: 'uuid' }, 'fixed', new Uint8Array(16), 16],
  [{ kind: 'fixed', length: 3 }, 'fixed', Uint8Array.of(1, 2, 3), 3],
];

test('every primitive kind maps to the physical kind spec "Parquet" stores it as', () => {
  for (const [type, kind] of CASES) assert.equal(physicalKind(type), kind, type.kind);
  assert.equal(physicalKind({ kind: 'struct', fields: [] }), 'struct');
  assert.equal(physicalKind({ kind: 'list', elementId: 2, elementRequired: true, element: { kind: 'int' } }), 'list');
  assert.equal(physicalKind({ kind: 'map', keyId: 2, key: { kind: 'string' }, valueId: 3, valueRequired: false, value: { kind: 'int' } }), 'map');
});

test('physicalType carries decimal precision and scale and the fixed width (uuid: 16)', () => {
  assert.deepEqual(physicalType({ kind: 'decimal', precision: 9, scale: 2 }), { kind: 'decimal', precision: 9, scale: 2 });
  assert.deepEqual(physicalType({ kind: 'uuid' }), { kind: 'fixed', width: 16 });
  assert.deepEqual(physicalType({ kind: 'fixed', length: 3 }), { kind: 'fixed', width: 3 });
  assert.deepEqual(physicalType({ kind: 'timestamptz_ns' }), { kind: 'long' });
  for (const [type, kind] of CASES) assert.equal(physicalType(type).kind, kind, type.kind);
});

test('the column builder of every primitive is the one of its physical kind, and its bound has that width', () => {
  const schema: Schema = { schemaId: 0, fields: CASES.map(([type], i) => ({ id: i + 1, name: `c${i}`, required: true, type })) };
  const appender = new RecordAppender(buildLayout(schema), () => ({ kind: 'full' }));
  CASES.forEach(([type, kind, value, width], i) => {
    assert.equal(appender.column(i + 1).kind, kind, type.kind);
    if (width !== undefined) assert.equal(toBoundBytes(type, value).length, width, type.kind);
  });
});
