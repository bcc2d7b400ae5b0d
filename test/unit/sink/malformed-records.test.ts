/**
 * However a record's bytes are broken, the data path reports a DataError naming the record's coordinates
 * (errors.tolerance=none) or skips it (all) — never another error (a RangeError from a read past the
 * end, a TypeError) that would fail the task whatever the configuration. Valid Avro, Protobuf and JSON
 * records are cut at every length and have random bytes changed (seeded), and each is written through the
 * real SinkWriter, with and without the probe (a route field and a partitioned table).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import avro from 'avsc';
import protobuf from 'protobufjs';
import { DataError } from '../../../src/core/errors.ts';
import type { RawRecord } from '../../../src/consume/port.ts';
import { SqlCatalog } from '../../../src/commit/sql/catalog.ts';
import { SqliteDriver } from '../../../src/commit/sql/sqlite.ts';
import { parseConnectorConfig } from '../../../src/config/connector-config.ts';
import type { ConnectorConfig } from '../../../src/config/connector-config.ts';
import type { RegisteredSchema, SchemaResolver } from '../../../src/decode/registry-port.ts';
import { valueFormat } from '../../../src/decode/value-format.ts';
import { SinkWriter } from '../../../src/sink/sink-writer.ts';
import type { WriteOutcome } from '../../../src/sink/sink-writer.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { prng } from '../../helpers/prng.ts';
import { recordingLogger } from '../runtime/rig.ts';

const AVRO_SCHEMA = {
  type: 'record',
  name: 'Order',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'region', type: 'string' },
    { name: 'note', type: ['null', 'string'] },
    { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'ratio', type: 'double' },
    { name: 'tags', type: { type: 'array', items: 'int' } },
    { name: 'attrs', type: { type: 'map', values: 'string' } },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID'] } },
    { name: 'hash', type: { type: 'fixed', name: 'Hash', size: 4 } },
    { name: 'customer', type: { type: 'record', name: 'Customer', fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }] } },
  ],
};

const PROTO = `syntax = "proto3";
package t;
message Order {
  int64 id = 1;
  string region = 2;
  repeated int32 tags = 3;
  map<string, string> attrs = 4;
  double ratio = 5;
  bytes blob = 6;
  Customer customer = 7;
  enum Status { NEW = 0; PAID = 1; }
  Status status = 8;
}
message Customer { string name = 1; sint32 age = 2; }
`;

const registry: SchemaResolver = {
  byId(id: number): Promise<RegisteredSchema> {
    if (id === 1) return Promise.resolve({ id, type: 'AVRO', schema: JSON.stringify(AVRO_SCHEMA) });
    if (id === 2) return Promise.resolve({ id, type: 'PROTOBUF', schema: PROTO });
    return Promise.reject(new DataError(`schema id ${id} is unknown (test)`));
  },
};

function frame(id: number, body: Uint8Array, protobufIndex = false): Uint8Array {
  const head = protobufIndex ? 6 : 5;
  const out = new Uint8Array(head + body.length);
  new DataView(out.buffer).setUint32(1, id);
  out.set(body, head); // the Protobuf message-index list [0] is the single byte 0
  return out;
}

function avroValue(): Uint8Array {
  const type = avro.Type.forSchema(AVRO_SCHEMA as unknown as avro.Schema);
  const body = type.toBuffer({
    id: 123456789,
    region: 'eu',
    note: 'hello',
    price: Buffer.from([0x01, 0x02, 0x03]),
    ratio: 0.25,
    tags: [1, 2, 300000],
    attrs: { a: 'x', bb: 'yy' },
    status: 'PAID',
    hash: Buffer.from([1, 2, 3, 4]),
    customer: { name: 'Ada', age: 36 },
  });
  return frame(1, body);
}

function protobufValue(): Uint8Array {
  const root = protobuf.parse(PROTO, { keepCase: true }).root;
  const t = root.lookupType('t.Order');
  const body = t.encode(t.fromObject({ id: 987654321, region: 'us', tags: [1, -2, 3], attrs: { k: 'v' }, ratio: 1.5, blob: Buffer.from([9, 9]), customer: { name: 'Bo', age: -3 }, status: 1 })).finish();
  return frame(2, body, true);
}

const jsonValue = (): Uint8Array => new TextEncoder().encode(JSON.stringify({ id: 5, region: 'apac', tags: [1, 2], customer: { name: 'Cy', age: 7 }, ratio: 0.5 }));

type Kind = 'avro' | 'protobuf' | 'json';

const CONVERTERS: Record<Kind, Record<string, string>> = {
  avro: { 'value.converter': 'io.confluent.connect.avro.AvroConverter', 'value.converter.schema.registry.url': 'http://registry.invalid' },
  protobuf: { 'value.converter': 'io.confluent.connect.protobuf.ProtobufConverter', 'value.converter.schema.registry.url': 'http://registry.invalid' },
  json: { 'value.converter': 'org.apache.kafka.connect.json.JsonConverter', 'value.converter.schemas.enable': 'false' },
};

async function writer(kind: Kind, probing: boolean, tolerance: 'none' | 'all'): Promise<SinkWriter> {
  const store = new MemoryObjectStore();
  const catalog = new SqlCatalog({ name: 'unit', driver: new SqliteDriver({ path: ':memory:' }), store, warehouse: 'memory://warehouse' });
  await catalog.createNamespace(['db']);
  const connector = parseConnectorConfig({
    name: 'orders-sink',
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    topics: 'orders',
    ...CONVERTERS[kind],
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'iceberg.tables': 'db.orders',
    'iceberg.tables.auto-create-enabled': 'true',
    'iceberg.control.topic': 'control-orders',
    'iceberg.catalog.type': 'sql',
    'iceberg.catalog.uri': 'jdbc:sqlite::memory:',
    'iceberg.catalog.warehouse': 'memory://warehouse',
    'icefloe.tables.kafka-metadata-columns': 'partition,offset,key,headers',
    'errors.tolerance': tolerance,
    ...(probing ? { 'iceberg.tables.route-field': 'region', 'iceberg.table.db.orders.route-regex': '.*', 'iceberg.table.db.orders.partition-by': 'region' } : {}),
  });
  const format = valueFormat(connector.valueConverter as NonNullable<ConnectorConfig['valueConverter']>, registry, { caseInsensitive: false, forceOptional: true });
  return new SinkWriter({ connector, taskId: 0, catalog, store, format, keyConverter: 'string', log: recordingLogger([]), endCycle: () => Promise.resolve(true) });
}

/** Every cut of the value, and `mutations` copies with 1–3 random bytes changed. */
function broken(valid: Uint8Array, seed: number, mutations: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let n = 0; n < valid.length; n++) out.push(valid.slice(0, n));
  const rnd = prng(seed);
  for (let i = 0; i < mutations; i++) {
    const m = valid.slice();
    const changes = 1 + Math.floor(rnd() * 3);
    // Mostly the body: a changed frame header is a different (unknown) schema id, tested once is enough.
    for (let c = 0; c < changes; c++) m[5 + Math.floor(rnd() * (m.length - 5))] = Math.floor(rnd() * 256);
    out.push(m);
  }
  return out;
}

const VALUES: Record<Kind, () => Uint8Array> = { avro: avroValue, protobuf: protobufValue, json: jsonValue };

for (const kind of ['avro', 'protobuf', 'json'] as const) {
  for (const probing of [false, true]) {
    test(`${kind}${probing ? ' with the probe' : ''}: a record cut anywhere or with bytes changed is written or a DataError with its coordinates, nothing else`, async () => {
      const strict = await writer(kind, probing, 'none');
      const tolerant = await writer(kind, probing, 'all');
      let offset = 0n;
      const record = (value: Uint8Array): RawRecord => ({ topic: 'orders', partition: 3, offset: offset++, timestamp: 1_700_000_000_000, key: new Uint8Array([0xff, 0x00]), value, headers: [{ key: 'h', value: null }, { key: 'h2', value: new Uint8Array([1]) }] });
      const first = record(VALUES[kind]());
      assert.equal(await strict.write(first), 'written', 'the valid record');
      assert.equal(await tolerant.write(first), 'written');
      let failures = 0;
      for (const value of broken(VALUES[kind](), kind.length * 7 + (probing ? 1 : 0), 400)) {
        const r = record(value);
        let outcome: WriteOutcome;
        try {
          outcome = await strict.write(r);
        } catch (e) {
          assert.ok(e instanceof DataError, `${kind} at ${r.offset} (${Buffer.from(value).toString('hex')}): ${e instanceof Error ? e.stack : String(e)}`);
          // The writer's coordinates (`record`), named once: the router's own errors carry theirs the same way.
          assert.match(e.message, new RegExp(`^record orders/3@${r.offset}: `));
          assert.equal(e.message.split(`3@${r.offset}`).length, 2, `coordinates named once: ${e.message}`);
          failures++;
          outcome = 'skipped';
        }
        const lenient = await tolerant.write(r);
        assert.ok(lenient === 'written' || lenient === 'skipped');
        assert.equal(lenient, outcome, `tolerance=all skips exactly what tolerance=none fails (${r.offset})`);
      }
      assert.ok(failures > 20, `most broken records are refused (${failures})`);
      assert.equal(tolerant.metrics.errorsSkipped, failures);
    });
  }
}

test('JsonConverter with schemas: a record whose own Connect schema cannot be used is a DataError with its coordinates, not a configuration error', async () => {
  const store = new MemoryObjectStore();
  const catalog = new SqlCatalog({ name: 'unit', driver: new SqliteDriver({ path: ':memory:' }), store, warehouse: 'memory://warehouse' });
  await catalog.createNamespace(['db']);
  const base = {
    name: 'orders-sink',
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    topics: 'orders',
    'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'value.converter.schemas.enable': 'true',
    'iceberg.tables': 'db.orders',
    'iceberg.tables.auto-create-enabled': 'true',
    'iceberg.control.topic': 'control-orders',
    'iceberg.catalog.type': 'sql',
    'iceberg.catalog.uri': 'jdbc:sqlite::memory:',
    'iceberg.catalog.warehouse': 'memory://warehouse',
  };
  const bad = new TextEncoder().encode(JSON.stringify({ schema: { type: 'struct', fields: [{ field: 'a', type: 'no-such-type' }] }, payload: { a: 1 } }));
  const record: RawRecord = { topic: 'orders', partition: 0, offset: 7n, timestamp: null, key: null, value: bad, headers: [] };
  for (const tolerance of ['none', 'all'] as const) {
    const connector = parseConnectorConfig({ ...base, 'errors.tolerance': tolerance });
    const format = valueFormat(connector.valueConverter as NonNullable<ConnectorConfig['valueConverter']>, undefined, { caseInsensitive: false, forceOptional: true });
    const w = new SinkWriter({ connector, taskId: 0, catalog, store, format, keyConverter: 'string', log: recordingLogger([]), endCycle: () => Promise.resolve(true) });
    if (tolerance === 'none') await assert.rejects(Promise.resolve(w.write(record)), (e: unknown) => e instanceof DataError && /^record orders\/0@7: the record's Connect schema cannot be used: .*unknown type no-such-type/.test(e.message));
    else assert.equal(await w.write(record), 'skipped');
  }
});
