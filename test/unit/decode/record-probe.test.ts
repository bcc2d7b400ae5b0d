import assert from 'node:assert/strict';
import { test } from 'node:test';
import avro from 'avsc';
import { ConfigError, DataError } from '../../../src/core/errors.ts';
import { avroToIceberg } from '../../../src/decode/avro-schema.ts';
import { CaptureSink, fieldPathOf } from '../../../src/decode/probe.ts';
import { RecordProbe } from '../../../src/decode/record-probe.ts';
import type { ProbeField } from '../../../src/decode/record-probe.ts';
import type { RegisteredSchema, SchemaResolver } from '../../../src/decode/registry-port.ts';
import { valueFormat } from '../../../src/decode/value-format.ts';
import type { TableDecoder } from '../../../src/decode/value-format.ts';
import { bindPartitionSpec, buildPartitionSpec } from '../../../src/iceberg/partition-spec.ts';
import type { BoundPartitionField } from '../../../src/iceberg/partition-spec.ts';
import type { IcebergType, NestedField, Schema } from '../../../src/iceberg/types.ts';

const WRITER = {
  type: 'record',
  name: 'Order',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'region', type: 'string' },
    { name: 'n', type: 'int' },
    { name: 'meta', type: ['null', { type: 'record', name: 'Meta', fields: [{ name: 'tenant', type: ['null', 'string'] }] }] },
    { name: 'ts', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
};
const type = avro.Type.forSchema(WRITER as avro.Schema, { logicalTypes: {} });
const SCHEMA_ID = 42;
const resolver: SchemaResolver = {
  byId: (id): Promise<RegisteredSchema> => Promise.resolve({ id, type: 'AVRO', schema: JSON.stringify(WRITER) }),
};
const format = valueFormat({ className: 'io.confluent.connect.avro.AvroConverter', kind: 'avro', schemasEnable: false }, resolver, { caseInsensitive: true, forceOptional: false });

function frame(v: object): Uint8Array {
  const body = type.toBuffer(v);
  const out = new Uint8Array(5 + body.length);
  new DataView(out.buffer).setUint32(1, SCHEMA_ID);
  out.set(body, 5);
  return out;
}

function cents(c: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(c);
  return b;
}

const RECORDS = [
  { id: 'o-1', region: 'eu', n: 7, meta: { tenant: 'acme' }, ts: Date.UTC(2024, 1, 29, 23, 59), price: cents(-12345), note: null },
  { id: 'o-2', region: 'us', n: -3, meta: null, ts: Date.UTC(2023, 0, 1), price: cents(99), note: 'x' },
  { id: 'o-3', region: 'apac', n: 2 ** 31 - 1, meta: { tenant: null }, ts: 0, price: cents(0), note: null },
];

/** The writer's table with some fields retyped (a table that evolved or was created by hand), with its own ids. */
function tableWith(retype: Record<string, IcebergType>): Schema {
  const base = avroToIceberg(WRITER);
  const shift = (fs: readonly NestedField[]): NestedField[] =>
    fs.map((f) => ({ ...f, id: f.id + 100, type: retype[f.name] ?? (f.type.kind === 'struct' ? { kind: 'struct', fields: shift(f.type.fields) } : f.type) }));
  return { ...base, fields: shift(base.fields) };
}

interface Table {
  readonly schema: Schema;
  readonly bound: BoundPartitionField[];
  readonly fields: ProbeField[];
}

/** What the sink's TableSink hands the probe: each partition field's source path and declared type. */
function table(schema: Schema, partitionBy: string): Table {
  const bound = bindPartitionSpec(buildPartitionSpec(schema, partitionBy), schema);
  return { schema, bound, fields: bound.map((b) => ({ path: fieldPathOf(schema, b.field.sourceId) ?? null, type: b.sourceType })) };
}

/** The format's decoders, counting every decode (the probe's cost per record). */
function counting(): { decoderFor: (p: Schema) => TableDecoder; decodes: () => number } {
  let n = 0;
  return {
    decoderFor: (p) => {
      const d = format.decoderFor(p);
      return { prepare: (m) => d.prepare(m), decode: (m, s) => (n++, d.decode(m, s)) };
    },
    decodes: () => n,
  };
}

/** The source values a full decode of `msg` into the table writes to its partition source columns. */
async function fullDecodeValues(t: Table, msg: Uint8Array): Promise<unknown[]> {
  const d = format.decoderFor(t.schema);
  await d.prepare(msg);
  const capture = new CaptureSink();
  d.decode(msg, capture);
  return t.bound.map((b) => capture.value(b.field.sourceId));
}

async function probeFor(tables: Record<string, Table>, decoderFor: (p: Schema) => TableDecoder): Promise<RecordProbe> {
  const source = await format.sourceSchema(frame(RECORDS[0] as object));
  const probe = new RecordProbe({ source, routePath: ['META', 'Tenant'], tables: new Map(Object.entries(tables).map(([k, t]) => [k, t.fields])), caseInsensitive: true }, decoderFor);
  await probe.prepare(frame(RECORDS[0] as object));
  return probe;
}

test('one decode per record gives the route value and every table\'s partition sources, as a full decode would', async () => {
  const tables = {
    // `n` widened int → long by evolution: the probe promotes the writer's int.
    a: table(tableWith({ n: { kind: 'long' } }), 'region, bucket(n, 8)'),
    b: table(tableWith({}), 'day(ts), truncate(price, 100), bucket(id, 4)'),
  };
  const c = counting();
  const probe = await probeFor(tables, c.decoderFor);
  for (const v of RECORDS) {
    const msg = frame(v);
    const before = c.decodes();
    assert.equal(probe.prepare(msg), undefined);
    probe.read(msg);
    assert.equal(c.decodes() - before, 1, 'one probe decode per record');
    assert.equal(probe.routeValue(), v.meta?.tenant ?? null);
    for (const [name, t] of Object.entries(tables)) {
      const view = probe.viewOf(name);
      assert.ok(view !== undefined);
      const probed = t.bound.map((_, i) => view.value(i));
      assert.deepStrictEqual(probed, await fullDecodeValues(t, msg), `table ${name}, record ${v.id}`);
    }
  }
  assert.equal(typeof probe.viewOf('a')?.value(1), 'bigint'); // the promoted long, as the full decode writes it
});

test('a table typed beyond a promotion is read by a further projection; its failure stays its own', async () => {
  const tables = {
    a: table(tableWith({}), 'region'),
    // Avro int into a double column: the decoder converts, no Iceberg promotion does → a second projection.
    c: table(tableWith({ n: { kind: 'double' } }), 'n'),
    // Avro string into an int column cannot compile: only table d's values fail.
    d: table(tableWith({ region: { kind: 'int' } }), 'region'),
  };
  const c = counting();
  const probe = await probeFor(tables, c.decoderFor);
  const msg = frame(RECORDS[1] as object);
  const before = c.decodes();
  probe.read(msg);
  assert.equal(c.decodes() - before, 2); // the main projection and table c's (table d's could not be built)
  assert.equal(probe.viewOf('a')?.value(0), 'us');
  assert.deepStrictEqual([probe.viewOf('c')?.value(0)], await fullDecodeValues(tables.c, msg));
  assert.equal(typeof probe.viewOf('c')?.value(0), 'number');
  // The schema id is this record's problem, not the configuration's (registry-cache.ts): a DataError.
  assert.throws(() => probe.viewOf('d')?.value(0), (e: unknown) => e instanceof DataError && e.stage === 'convert' && /^schema id 42 does not fit the table: field region: Avro string cannot be written to Iceberg int/.test(e.message));
  assert.equal(probe.viewOf('nope'), undefined);
});

test('bad bytes are a DataError from read; a field the writer lacks reads null', async () => {
  const t = table(tableWith({}), 'region');
  const lacking: ProbeField = { path: ['no_such_field'], type: { kind: 'string' } };
  const probe = await probeFor({ a: t, x: { ...t, fields: [lacking] } }, format.decoderFor.bind(format));
  assert.throws(() => probe.read(Uint8Array.from([0, 0, 0, 0, SCHEMA_ID, 0xff])), DataError);
  probe.read(frame(RECORDS[0] as object));
  assert.equal(probe.viewOf('x')?.value(0), null);
  assert.equal(probe.viewOf('a')?.value(0), 'eu');
});

test('a further projection whose decoder cannot even be built fails only its own table', async () => {
  const tables = { a: table(tableWith({}), 'region'), c: table(tableWith({ n: { kind: 'double' } }), 'n') };
  const refusing = (p: Schema): TableDecoder => {
    if (p.fields.some((f) => f.type.kind === 'double')) throw new ConfigError('this format cannot write that projection');
    return format.decoderFor(p);
  };
  const probe = await probeFor(tables, refusing);
  probe.read(frame(RECORDS[0] as object));
  assert.equal(probe.viewOf('a')?.value(0), 'eu');
  assert.throws(() => probe.viewOf('c')?.value(0), /cannot write that projection/);
});
