import assert from 'node:assert/strict';
import { test } from 'node:test';
import avro from 'avsc';
import { compileAvroDecoder } from '../../../src/decode/avro-decoder.ts';
import { avroToIceberg } from '../../../src/decode/avro-schema.ts';
import { bindPartitionSpec, buildPartitionSpec } from '../../../src/iceberg/partition-spec.ts';
import { CaptureSink, fieldAtPath, fieldPathOf, projectSchema } from '../../../src/decode/probe.ts';
import type { Schema } from '../../../src/iceberg/types.ts';

const fieldIdAtPath = (schema: Schema, path: string[], caseInsensitive: boolean): number | undefined => fieldAtPath(schema, path, caseInsensitive)?.id;

const SCHEMA = {
  type: 'record',
  name: 'Order',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'meta', type: ['null', { type: 'record', name: 'Meta', fields: [{ name: 'tenant', type: ['null', 'string'] }, { name: 'n', type: 'long' }] }] },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'ts', type: { type: 'long', logicalType: 'timestamp-millis' } },
  ],
};
const type = avro.Type.forSchema(SCHEMA as avro.Schema, { logicalTypes: {} });
const table = avroToIceberg(SCHEMA);

function probe(ids: number[]): { capture: CaptureSink; decode: (v: object) => void } {
  const projection = projectSchema(table, new Set(ids));
  assert.ok(projection !== undefined);
  const program = compileAvroDecoder(SCHEMA, projection);
  const capture = new CaptureSink();
  return {
    capture,
    decode: (v) => {
      capture.reset();
      program.decode(capture, type.toBuffer(v));
    },
  };
}

const price = (cents: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(cents);
  return b;
};

test('the probe reads only the projected fields, in the transforms\' representation', () => {
  const tenant = fieldIdAtPath(table, ['meta', 'tenant'], false) as number;
  const ts = fieldIdAtPath(table, ['ts'], false) as number;
  const priceId = fieldIdAtPath(table, ['price'], false) as number;
  const p = probe([tenant, ts, priceId]);
  p.decode({ id: 'a', meta: { tenant: 'acme', n: 5 }, tags: ['x'], price: price(-12345), ts: 1_700_000_000_123 });
  assert.equal(p.capture.value(tenant), 'acme');
  assert.equal(p.capture.value(ts), 1_700_000_000_123_000n); // µs, a bigint
  assert.equal(p.capture.value(priceId), -12345n); // the unscaled decimal, sign from two's complement
});

test('a value left out (a null struct) reads null, not the previous record\'s', () => {
  const tenant = fieldIdAtPath(table, ['meta', 'tenant'], false) as number;
  const p = probe([tenant]);
  p.decode({ id: 'a', meta: { tenant: 'acme', n: 1 }, tags: [], price: price(1), ts: 0 });
  assert.equal(p.capture.value(tenant), 'acme');
  p.decode({ id: 'b', meta: null, tags: [], price: price(1), ts: 0 });
  assert.equal(p.capture.value(tenant), null);
});

test('partition values from the probe match the transforms applied to the values', () => {
  const spec = buildPartitionSpec(table, 'day(ts), bucket(id, 16)');
  const bound = bindPartitionSpec(spec, table);
  const p = probe(bound.map((b) => b.field.sourceId));
  p.decode({ id: 'order-1', meta: null, tags: [], price: price(1), ts: Date.UTC(2024, 1, 29, 23, 59) });
  const values = bound.map((b) => b.apply(p.capture.value(b.field.sourceId)));
  assert.equal(values[0], 19782); // days from 1970-01-01 to 2024-02-29
  assert.equal(typeof values[1], 'number');
  assert.ok((values[1] as number) >= 0 && (values[1] as number) < 16);
});

test('projectSchema keeps the structs on the way and nothing else; fieldAtPath honours case; fieldPathOf inverts it', () => {
  const n = fieldIdAtPath(table, ['meta', 'n'], false) as number;
  const projection = projectSchema(table, new Set([n]));
  assert.deepEqual(projection?.fields.map((f) => f.name), ['meta']);
  const meta = projection?.fields[0]?.type;
  assert.ok(meta?.kind === 'struct');
  assert.deepEqual(meta.fields.map((f) => f.name), ['n']);
  assert.equal(projectSchema(table, new Set([9999])), undefined);
  assert.equal(fieldIdAtPath(table, ['META', 'N'], false), undefined);
  assert.equal(fieldIdAtPath(table, ['META', 'N'], true), n);
  assert.equal(fieldIdAtPath(table, ['tags', 'element'], false), undefined); // lists are not entered
  assert.deepEqual(fieldPathOf(table, n), ['meta', 'n']);
  assert.equal(fieldPathOf(table, 9999), undefined);
  // A retyped projection: the kept field takes the given type, the rest of the schema is untouched.
  const widened = projectSchema(table, new Set([n]), new Map([[n, { kind: 'string' } as const]]));
  const inner = widened?.fields[0]?.type;
  assert.ok(inner?.kind === 'struct');
  assert.equal(inner.fields[0]?.type.kind, 'string');
  assert.equal(fieldAtPath(table, ['meta', 'n'], false)?.type.kind, 'long');
});
