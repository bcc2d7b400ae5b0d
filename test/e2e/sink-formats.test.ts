/**
 * The worker end to end for each value format it reads, and for a schema that changes mid-stream. Each
 * test runs the real worker (`icefloe standalone`, tasks as child processes) on its own topic, control
 * topic and auto-created table (REST catalog on S3), waits for the committed total, stops the worker, and
 * checks with PyIceberg and DuckDB: exactly once by Kafka coordinates, no file added twice, values equal
 * to the events produced.
 *
 * - Protobuf: ConfluentProtobuf frames (schema id + message-index list) read by ProtobufConverter; decimals
 *   are int64 cents there (the generator's Protobuf schema has no decimal type).
 * - JSON with schemas (JsonConverter, schemas.enable=true): Connect Decimal and Timestamp, typed columns.
 * - Plain JSON (schemas.enable=false): the table's schema is inferred from the first record (numbers with
 *   a fraction → double, integers → long, objects → structs), so the topic has one partition and the seed is
 *   chosen so that record 0 has fractional prices (an integral first price would type the column long and
 *   fail the task on the next fractional one — the documented hazard of schemaless inference).
 * - Mid-stream evolution: Avro v1 events, committed; then v2 (a new version of the subject: optional
 *   `channel`, items.quantity int → long) while the worker runs, with evolve-schema on.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { orderPlainJson } from '../../tools/generate/order-encodings.ts';
import { OrderGenerator } from '../../tools/generate/orders.ts';
import type { OrderEvent, SchemaVersion } from '../../tools/generate/orders.ts';
import { assertExactlyOnce, duckdbCount } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { unique } from '../helpers/kafka.ts';
import { readTable } from '../helpers/readers.ts';
import type { ReaderResult } from '../helpers/readers.ts';
import { checkOrderRows, committedRecords, e2eResources, normalizeOrderRow, PROCESS_WORKER, produceOrders, registryConverter, SCHEMALESS_JSON, sinkConnector, stopWorker, strided, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import type { Produced } from '../helpers/sink-e2e.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';

const TIMEOUT = 900_000;
const START_MS = Date.UTC(2025, 5, 1);

interface Schema {
  readonly name: string;
  readonly type: string;
  readonly required: boolean;
}

/** The table's current schema and snapshots as PyIceberg sees them (reads no rows). */
async function describeTable(table: string): Promise<ReaderResult & { schema: Schema[] }> {
  return (await readTable({ table, columns: ['_kafka_metadata_offset'], filter: '_kafka_metadata_offset < 0' })) as ReaderResult & { schema: Schema[] };
}

function sampleOf(p: Produced, indices: readonly number[], version?: SchemaVersion): { coords: Coordinates; event: OrderEvent; version?: SchemaVersion }[] {
  return indices.map((i) => ({ coords: p.coords[i] as Coordinates, event: p.events[i] as OrderEvent, ...(version === undefined ? {} : { version }) }));
}

test('Protobuf: ConfluentProtobuf frames through ProtobufConverter land exactly once, values as produced', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-proto');
  const control = unique('e2e-control');
  const table = `${uniqueIdent('e2e')}.orders_proto`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const count = 20_000;
  const produced = await produceOrders({ topic, format: 'protobuf', count, seed: 31, partitions: 3, startTimeMs: START_MS, keepEvents: true });

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-proto'),
        topics: topic,
        controlTopic: control,
        config: { ...registryConverter('protobuf'), 'tasks.max': '2', 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.tables.default-partition-by': 'day(created_at)' },
      }),
    ],
  });
  res.workers.push(worker);
  await waitCommitted(worker, table, count);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);

  await assertExactlyOnce(table, produced.coords);
  assert.equal(await duckdbCount(table), count);
  const schema = new Map((await describeTable(table)).schema.map((f) => [f.name, f]));
  assert.equal(schema.get('total')?.type, 'long', 'Protobuf cents are int64');
  assert.equal(schema.get('created_at')?.type, 'timestamptz', 'google.protobuf.Timestamp');
  assert.equal(schema.get('status')?.type, 'string', 'enum → its symbol');
  assert.equal(schema.get('note')?.required, false, 'proto3 optional');
  await checkOrderRows(table, topic, sampleOf(produced, strided(count, 500, 3)), 'cents');
  await checkOrderRows(table, topic, sampleOf(produced, strided(count, 100, 11)), 'cents', { engine: 'duckdb' });
});

test('JSON with schemas (JsonConverter, schemas.enable=true): Connect Decimal and Timestamp columns, exactly once, values as produced', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-jsonschema');
  const control = unique('e2e-control');
  const table = `${uniqueIdent('e2e')}.orders_json_schema`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const count = 10_000;
  const produced = await produceOrders({ topic, format: 'json-schema', count, seed: 41, partitions: 3, startTimeMs: START_MS, keepEvents: true });

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-jsonschema'),
        topics: topic,
        controlTopic: control,
        config: {
          'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
          'value.converter.schemas.enable': 'true',
          'tasks.max': '2',
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
        },
      }),
    ],
  });
  res.workers.push(worker);
  await waitCommitted(worker, table, count);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);

  await assertExactlyOnce(table, produced.coords);
  assert.equal(await duckdbCount(table), count);
  const schema = new Map((await describeTable(table)).schema.map((f) => [f.name, f]));
  assert.equal(schema.get('total')?.type, 'decimal(12, 2)', 'Connect Decimal');
  assert.equal(schema.get('created_at')?.type, 'timestamptz', 'Connect Timestamp');
  await checkOrderRows(table, topic, sampleOf(produced, strided(count, 500, 5)), 'decimal');
  await checkOrderRows(table, topic, sampleOf(produced, strided(count, 100, 17)), 'decimal', { engine: 'duckdb' });
});

test('Plain JSON (JsonConverter, schemas.enable=false): the table inferred from the first record, exactly once, values as produced', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-json');
  const control = unique('e2e-control');
  const table = `${uniqueIdent('e2e')}.orders_json`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const count = 10_000;
  const seed = 7;
  // The precondition of inference documented above: record 0's prices and total have a fraction.
  const first = orderPlainJson(new OrderGenerator({ seed, startTimeMs: START_MS }).next(), 1) as { total: number; items: { unit_price: number }[] };
  assert.ok(!Number.isInteger(first.total) && !Number.isInteger(first.items[0]?.unit_price), 'seed: record 0 types the price columns double');
  const produced = await produceOrders({ topic, format: 'json', count, seed, partitions: 1, startTimeMs: START_MS, keepEvents: true });

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-json'),
        topics: topic,
        controlTopic: control,
        config: {
          ...SCHEMALESS_JSON,
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.tables.evolve-schema-enabled': 'true',
        },
      }),
    ],
  });
  res.workers.push(worker);
  await waitCommitted(worker, table, count);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);

  await assertExactlyOnce(table, produced.coords);
  assert.equal(await duckdbCount(table), count);
  const schema = new Map((await describeTable(table)).schema.map((f) => [f.name, f]));
  assert.equal(schema.get('total')?.type, 'double');
  assert.equal(schema.get('created_at')?.type, 'long', 'epoch ms in schemaless JSON is a number');
  const attributes = schema.get('attributes')?.type ?? '';
  const attributeKeys = [...attributes.matchAll(/\d+: (\w+): optional string/g)].map((m) => m[1] as string);
  assert.ok(attributeKeys.length > 0, `attributes is a struct of strings: ${attributes}`);
  // With evolve-schema on, a key that first appears in a later record is added to the struct: no
  // attribute value of any record is dropped.
  const seen = new Set(produced.events.flatMap((e) => Object.keys(e.attributes)));
  assert.deepEqual(new Set(attributeKeys), seen, 'every attribute key of the data is a field of the attributes struct');
  await checkOrderRows(table, topic, sampleOf(produced, strided(count, 500, 1)), 'inferred', { attributeKeys });
  await checkOrderRows(table, topic, sampleOf(produced, strided(count, 100, 13)), 'inferred', { attributeKeys, engine: 'duckdb' });
});

test('Mid-stream evolution: Avro v1 then v2 on one topic; the table gains channel and widens items.quantity to long; old rows read null', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-evolve');
  const control = unique('e2e-control');
  const table = `${uniqueIdent('e2e')}.orders_evolving`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const n = 5_000;
  const m = 5_000;
  const v1 = await produceOrders({ topic, format: 'avro', count: n, seed: 51, partitions: 3, startTimeMs: START_MS, keepEvents: true });

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-evolve'),
        topics: topic,
        controlTopic: control,
        config: {
          ...registryConverter('avro'),
          'tasks.max': '2',
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.tables.evolve-schema-enabled': 'true',
          'iceberg.tables.default-partition-by': 'bucket(order_id, 4)',
        },
      }),
    ],
  });
  res.workers.push(worker);
  await waitCommitted(worker, table, n);
  const before = await describeTable(table);
  assert.equal(before.schema.some((f) => f.name === 'channel'), false, 'v1: no channel yet');
  assert.match(before.schema.find((f) => f.name === 'items')?.type ?? '', /quantity: required int\b/);

  // v2 registered as a new version of <topic>-value, produced while the worker runs (another seed: new order ids).
  const v2 = await produceOrders({ topic, format: 'avro', count: m, seed: 52, partitions: 3, schemaVersion: 2, startTimeMs: START_MS + n * 10, keepEvents: true });
  await waitCommitted(worker, table, n + m);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);
  assert.ok(worker.logs('table schema evolved').length >= 1, "the log shows 'table schema evolved'");
  assert.equal(committedRecords(worker, table), n + m);

  await assertExactlyOnce(table, [...v1.coords, ...v2.coords]);
  assert.equal(await duckdbCount(table), n + m);
  const after = await describeTable(table);
  const channel = after.schema.find((f) => f.name === 'channel');
  assert.deepEqual(channel && { type: channel.type, required: channel.required }, { type: 'string', required: false }, 'channel added, optional');
  assert.match(after.schema.find((f) => f.name === 'items')?.type ?? '', /quantity: required long\b/, 'items.quantity widened to long');

  // PyIceberg, every row: v1 rows read channel null, v2 rows their value; every other field as produced.
  const all = [...sampleOf(v1, [...Array(n).keys()], 2), ...sampleOf(v2, [...Array(m).keys()], 2)];
  const rows = await checkOrderRows(table, topic, all, 'decimal');
  assert.ok(rows.slice(0, n).every((r) => r['channel'] === null), 'old rows: channel null');
  assert.ok(rows.slice(n).some((r) => typeof r['channel'] === 'string'), 'new rows carry channel values');

  // DuckDB: channel and quantity for every row, by coordinates.
  const duck = await readTable({ table, engine: 'duckdb', catalog: { kind: 'rest' }, columns: ['_kafka_metadata_partition', '_kafka_metadata_offset', 'channel', 'items'] });
  const byCoord = new Map((duck.rows ?? []).map((r) => [`${String(r['_kafka_metadata_partition'])}/${String(r['_kafka_metadata_offset'])}`, normalizeOrderRow(r, 'decimal')]));
  assert.equal(byCoord.size, n + m);
  for (const [i, e] of [...v1.events.map((e, i) => [i, e, v1] as const), ...v2.events.map((e, i) => [i, e, v2] as const)].map(([i, e, p]) => [p.coords[i] as Coordinates, e] as const)) {
    const row = byCoord.get(`${i.partition}/${i.offset}`);
    assert.ok(row !== undefined, `DuckDB: no row at ${i.partition}/${i.offset}`);
    assert.equal(row['channel'], e.channel ?? null, `DuckDB: channel of ${e.order_id}`);
    assert.deepEqual((row['items'] as { quantity: number }[]).map((it) => it.quantity), e.items.map((it) => it.quantity), `DuckDB: quantities of ${e.order_id}`);
  }
});
