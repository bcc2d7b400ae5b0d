/**
 * A data file whose metrics exceed one control record (issue 10, point 3) on the real stack: a wide JSON
 * table with long string values under `write.metadata.metrics.default=full` (every bound is a whole
 * 12,000-byte value, so one file's bounds come to about 1.5 MB of announcement text, over the 900 KiB
 * record limit). The task trims that file's metrics (bounds first, the widest columns first) and says so
 * once per announcement; the committer commits it; every record lands exactly once by its Kafka
 * coordinates (PyIceberg, DuckDB), the file keeps bounds for some columns and none for others, and a
 * filter on either kind of column still finds its row (no bounds = no pruning, never a wrong answer).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TRIMMED_MESSAGE } from '../../src/coordinate/metrics-trim.ts';
import { assertExactlyOnce, duckdbCount } from '../helpers/exactly-once.ts';
import { unique } from '../helpers/kafka.ts';
import { readTable } from '../helpers/readers.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker } from '../helpers/worker.ts';

const COLUMNS = 48;
const VALUE_BYTES = 12_000;
const RECORDS = 12;

/** Column c of record r: a long value that differs per record and column, so bounds differ too. */
function value(r: number, c: number): string {
  const head = `r${String(r).padStart(3, '0')}c${String(c).padStart(2, '0')}-`;
  return head + String.fromCharCode(97 + ((r + c) % 26)).repeat(VALUE_BYTES - head.length);
}

test('a data file whose metrics exceed a control record is announced with trimmed metrics: every record once, filters still right', { timeout: 300_000 }, async (t) => {
  const started = Date.now();
  const r = await e2eResources(t);
  const topic = unique('wide-src');
  const control = unique('wide-control');
  const table = `${uniqueIdent('wide')}.events`;
  r.topics.push(topic, control);
  r.tables.push(table);
  const records = Array.from({ length: RECORDS }, (_, i) => ({
    partition: 0,
    key: `k${i}`,
    value: Object.fromEntries(Array.from({ length: COLUMNS }, (_, c) => [`f${String(c).padStart(2, '0')}`, value(i, c)])),
  }));
  const produced = await produceJson(topic, 1, records);
  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'in-process' },
    connectors: [
      sinkConnector({
        name: `wide-${table}`,
        topics: topic,
        controlTopic: control,
        config: {
          ...SCHEMALESS_JSON,
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.tables.write-props.write.metadata.metrics.default': 'full',
        },
      }),
    ],
  });
  r.workers.push(w);
  await waitCommitted(w, table, RECORDS, 120_000);
  await stopWorker(w);

  const trimmed = w.logs(TRIMMED_MESSAGE);
  assert.equal(trimmed.length, 1, 'one warning for the one announcement whose file was trimmed');
  const [info] = trimmed[0]?.['trimmed'] as { bytesBefore: number; bytesAfter: number; boundsDropped: number; boundsKept: number }[];
  assert.ok(info !== undefined && info.bytesBefore > 900 * 1024 && info.bytesAfter <= 900 * 1024, JSON.stringify(info));
  assert.ok(info.boundsDropped > 0 && info.boundsKept > 0, 'only as many bounds as needed were dropped');

  await assertExactlyOnce(table, produced, { catalog: { kind: 'rest' } });
  assert.equal(await duckdbCount(table), RECORDS);

  // The committed file: bounds for some columns, none for the others, and both kinds still filter right.
  const read = await readTable({ table, columns: ['_kafka_metadata_offset'], files: true, catalog: { kind: 'rest' } });
  const files = read['live_files'] as { lower_bounds: Record<string, string>; upper_bounds: Record<string, string> }[];
  const schema = read['schema'] as { id: number; name: string }[];
  const valueColumns = schema.filter((f) => /^f\d\d$/.test(f.name));
  assert.equal(valueColumns.length, COLUMNS);
  const withBounds = valueColumns.filter((f) => files.every((x) => x.lower_bounds[String(f.id)] !== undefined && x.upper_bounds[String(f.id)] !== undefined));
  const without = valueColumns.filter((f) => files.every((x) => x.lower_bounds[String(f.id)] === undefined));
  assert.ok(withBounds.length > 0 && without.length > 0, `kept ${withBounds.length}, dropped ${without.length}`);
  for (const column of [withBounds[0], without[0]]) {
    assert.ok(column !== undefined);
    const c = Number(column.name.slice(1));
    const hit = await readTable({ table, columns: ['_kafka_metadata_offset'], filter: `${column.name} == '${value(5, c)}'`, catalog: { kind: 'rest' } });
    assert.deepEqual(hit.rows?.map((row) => Number(row['_kafka_metadata_offset'])), [Number(produced[5]?.offset)], `filter on ${column.name}`);
  }
  t.diagnostic(`${RECORDS} records of ${COLUMNS} × ${VALUE_BYTES} bytes; metrics ${info.bytesBefore} → ${info.bytesAfter} bytes (${info.boundsKept} columns kept bounds); duration ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
