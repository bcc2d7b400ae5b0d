/**
 * End to end: the real worker (`icefloe standalone`, tasks as child processes) sinks 200,000 Avro order
 * events from a 6-partition topic into an Iceberg table on S3 through the REST catalog, partitioned by
 * `day(created_at), bucket(order_id, 16)`, and readers we did not write check the result:
 * - exactly once by Kafka coordinates (PyIceberg over the `_kafka_metadata_*` columns), no data file added
 *   twice across the snapshot history, and DuckDB counts the same rows;
 * - by value: ~2,000 events spread over every partition, regenerated from the seed (the generator is
 *   deterministic), are read back by PyIceberg and compared field by field (nested struct, list of structs
 *   with decimals, map, decimals, timestamps, optional fields), and a smaller sample by DuckDB;
 * - every snapshot the connector committed carries its summary keys (control offsets, commit id, watermark).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OrderGenerator } from '../../tools/generate/orders.ts';
import type { OrderEvent } from '../../tools/generate/orders.ts';
import { assertExactlyOnce, duckdbCount } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { unique } from '../helpers/kafka.ts';
import { readTable } from '../helpers/readers.ts';
import {
  checkOrderRows,
  e2eResources,
  PROCESS_WORKER,
  produceOrders,
  registryConverter,
  sinkConnector,
  stopWorker,
  uniqueIdent,
  waitCommitted,
} from '../helpers/sink-e2e.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';

const COUNT = 200_000;
const SEED = 20_250_101;
/** Deterministic event times (10 ms apart from here): the regenerated events equal the produced ones. */
const START_MS = Date.UTC(2025, 2, 30, 23, 50);
const PYICEBERG_SAMPLE = 2_000;
const DUCKDB_SAMPLE = 200;

/** `n` event indices spread over the whole run (a stride with a jitter, so every partition is hit). */
function sampleIndices(n: number, count: number, salt: number): number[] {
  const out = new Set<number>();
  for (let k = 0; k < n; k++) out.add(Math.min(count - 1, Math.floor((k * count) / n) + ((k * 7919 + salt) % Math.max(1, Math.floor(count / n)))));
  return [...out].sort((a, b) => a - b);
}

/** Regenerates the run's events and keeps those at `indices` (the run's event objects are not kept). */
function regenerate(indices: readonly number[]): Map<number, OrderEvent> {
  const wanted = new Set(indices);
  const last = Math.max(...indices);
  const gen = new OrderGenerator({ seed: SEED, startTimeMs: START_MS });
  const out = new Map<number, OrderEvent>();
  for (let i = 0; i <= last; i++) {
    const e = gen.next();
    if (wanted.has(i)) out.set(i, e);
  }
  return out;
}

/** Rows as test/helpers/sink-e2e.ts `checkOrderRows` samples them: coordinates and the event there. */
function sampleAt(indices: readonly number[], coords: readonly Coordinates[], events: ReadonlyMap<number, OrderEvent>): { coords: Coordinates; event: OrderEvent }[] {
  return indices.map((i) => ({ coords: coords[i] as Coordinates, event: events.get(i) as OrderEvent }));
}

/** The Kafka record timestamps are the producer's CreateTime: set while the generator ran. */
function assertProducedWithin(rows: readonly Record<string, unknown>[], fromMs: number, toMs: number): void {
  for (const r of rows) {
    const ts = r['_kafka_metadata_timestamp'] as number;
    assert.ok(ts >= fromMs - 1000 && ts <= toMs + 1000, `Kafka timestamp ${ts} outside the production window [${fromMs}, ${toMs}]`);
  }
}

test('End to end: 200,000 Avro orders over 6 partitions, two task processes, land exactly once and read back value for value', { timeout: 1_800_000 }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-orders');
  const control = unique('e2e-control');
  const connector = unique('e2e-sink');
  const table = `${uniqueIdent('e2e')}.orders`;
  res.topics.push(topic, control);
  res.tables.push(table);

  const producedFrom = Date.now();
  const { coords } = await produceOrders({ topic, format: 'avro', count: COUNT, seed: SEED, partitions: 6, startTimeMs: START_MS });
  const producedTo = Date.now();
  assert.deepEqual(new Set(coords.map((c) => c.partition)), new Set([0, 1, 2, 3, 4, 5]), 'the keys spread the orders over all 6 partitions');

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: connector,
        topics: topic,
        controlTopic: control,
        config: {
          ...registryConverter('avro'),
          'tasks.max': '2',
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.tables.evolve-schema-enabled': 'true',
          [`iceberg.table.${table}.partition-by`]: 'day(created_at), bucket(order_id, 16)',
          'iceberg.tables.auto-create-props.format-version': '2',
          'iceberg.tables.write-props.write.parquet.compression-codec': 'zstd',
          'iceberg.control.commit.interval-ms': '3000',
        },
      }),
    ],
  });
  res.workers.push(worker);
  await waitCommitted(worker, table, COUNT);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0, 'no task failed');
  assert.equal(worker.logs('table created').length, 1, 'the table was auto-created once');

  // Exactly once by coordinates, no file added twice; DuckDB agrees on the total.
  const report = await assertExactlyOnce(table, coords);
  t.diagnostic(`${report.rows} rows in ${report.snapshots} snapshots`);
  assert.equal(await duckdbCount(table), COUNT, 'DuckDB row count');

  // The table as created: the event's fields plus the metadata columns, partitioned as configured.
  const head = await readTable({ table, columns: ['_kafka_metadata_offset'], filter: '_kafka_metadata_offset < 0' });
  const schema = new Map((head['schema'] as { name: string; type: string }[]).map((f) => [f.name, f.type]));
  assert.equal(schema.get('created_at'), 'timestamptz');
  assert.equal(schema.get('total'), 'decimal(12, 2)');
  assert.match(schema.get('items') ?? '', /decimal\(10, 2\)/);
  assert.equal(schema.get('_kafka_metadata_timestamp'), 'timestamptz');
  assert.deepEqual(
    (head['partition_spec'] as { transform: string }[]).map((f) => f.transform),
    ['day', 'bucket[16]'],
  );

  // Summary keys on every snapshot the connector committed.
  const snapshots = head['snapshots'] as { summary: Record<string, string> }[];
  assert.ok(snapshots.length >= 1, 'the connector committed');
  for (const s of snapshots) {
    const offsets = s.summary[`icefloe.control-offsets.${connector}`];
    assert.ok(offsets !== undefined, `snapshot summary lacks icefloe.control-offsets.${connector}: ${JSON.stringify(s.summary)}`);
    assert.match(offsets, /^\{"\d+":\d+(,"\d+":\d+)*\}$/);
    assert.ok((s.summary['icefloe.commit-id'] ?? '').startsWith(`icefloe:${connector}:`), `commit id ${s.summary['icefloe.commit-id']}`);
  }
  const watermarks = snapshots.map((s) => s.summary['icefloe.valid-through-ts']).filter((w): w is string => w !== undefined);
  assert.ok(watermarks.length > 0, 'a snapshot carries icefloe.valid-through-ts');
  for (const w of watermarks) {
    // A watermark is a Kafka record timestamp (CreateTime of this run), in epoch ms.
    assert.match(w, /^\d+$/);
    assert.ok(Number(w) >= producedFrom - 1000 && Number(w) <= producedTo + 1000, `watermark ${w} is not a timestamp of the run [${producedFrom}, ${producedTo}]`);
  }

  // By value, PyIceberg: ~2,000 events spread over every partition.
  const sample = sampleIndices(PYICEBERG_SAMPLE, COUNT, 1);
  const small = sampleIndices(DUCKDB_SAMPLE, COUNT, 3);
  const events = regenerate([...sample, ...small]);
  assert.equal(new Set(sample.map((i) => (coords[i] as Coordinates).partition)).size, 6, 'the sample covers every partition');
  assertProducedWithin(await checkOrderRows(table, topic, sampleAt(sample, coords, events), 'decimal'), producedFrom, producedTo);
  // The sample holds every shape the generator makes: optional fields both ways, 1–3 items, 0–3 attributes.
  const sampled = sample.map((i) => events.get(i) as OrderEvent);
  assert.ok(sampled.some((e) => e.note === null) && sampled.some((e) => e.note !== null), 'notes null and set');
  assert.ok(sampled.some((e) => e.customer.email === null) && sampled.some((e) => e.customer.email !== null), 'e-mails null and set');
  assert.ok(sampled.some((e) => Object.keys(e.attributes).length === 0) && sampled.some((e) => Object.keys(e.attributes).length === 3), 'empty and full maps');
  assert.ok(sampled.some((e) => e.items.length === 3), 'three-item orders');

  // By value, DuckDB (its own Iceberg and Parquet readers), a smaller sample.
  assertProducedWithin(await checkOrderRows(table, topic, sampleAt(small, coords, events), 'decimal', { engine: 'duckdb' }), producedFrom, producedTo);
});
