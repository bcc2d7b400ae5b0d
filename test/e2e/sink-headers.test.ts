/**
 * Kafka header values end to end: records produced by Kafka's own Java producer (the only client on the
 * stack that writes a null header value) with a null, an empty and a non-empty header value, through the
 * real worker into the `_kafka_metadata_headers` map column (map<string, binary>), read back by PyIceberg
 * and DuckDB and matched by Kafka coordinates: a null value lands null (the client's native layer as
 * patched by scripts/patch-kafka-binding.ts), an empty value empty and bytes as produced.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import { unique, withTopics } from '../helpers/kafka.ts';
import { javaProduce } from '../helpers/kafka-java.ts';
import { readTable } from '../helpers/readers.ts';
import { e2eResources, PROCESS_WORKER, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';

const HEADERS = '_kafka_metadata_headers';

/** A reader's map value as [key, value-or-null] pairs (bytes as text); PyIceberg and DuckDB give base64. */
function pairs(v: unknown): [string, string | null][] {
  const list = Array.isArray(v) ? (v as [string, unknown][]) : Object.entries((v ?? {}) as Record<string, unknown>);
  return list.map(([k, x]) => [k, x === null ? null : Buffer.from(String(x), 'base64').toString('utf8')]);
}

test('header values through the sink: null stays null, empty stays empty, bytes as produced', { timeout: 300_000 }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-headers');
  const control = unique('e2e-control');
  const table = `${uniqueIdent('e2e')}.headers`;
  res.tables.push(table);
  await withTopics(t, [{ name: topic, partitions: 1 }, { name: control, partitions: 1 }]);
  await javaProduce(topic, [
    { headers: [['null', null], ['empty', ''], ['bytes', 'abc']], key: 'k0', value: '{"id":0}' },
    { headers: [['empty', '']], key: 'k1', value: '{"id":1}' },
    { headers: [['bytes', 'xyz']], key: null, value: '{"id":2}' },
  ]);
  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-headers'),
        topics: topic,
        controlTopic: control,
        config: {
          ...SCHEMALESS_JSON,
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'icefloe.tables.kafka-metadata-columns': 'topic,partition,offset,headers',
        },
      }),
    ],
  });
  res.workers.push(worker);
  await waitCommitted(worker, table, 3);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);
  await assertExactlyOnce(table, [0n, 1n, 2n].map((offset) => ({ topic, partition: 0, offset })));

  const byOffset = new Map<string, [string, string | null][]>();
  for (const engine of ['pyiceberg', 'duckdb'] as const) {
    const read = await readTable({ table, engine, columns: ['_kafka_metadata_offset', HEADERS], order_by: ['_kafka_metadata_offset'] });
    const rows = (read.rows ?? []).map((r) => [String(r['_kafka_metadata_offset']), pairs(r[HEADERS])] as const);
    assert.deepEqual(rows.map(([o]) => o), ['0', '1', '2'], engine);
    assert.deepEqual(rows[0]?.[1].slice(1), [['empty', ''], ['bytes', 'abc']], `${engine}: offset 0`);
    assert.deepEqual(rows[1]?.[1], [['empty', '']], `${engine}: offset 1`);
    assert.deepEqual(rows[2]?.[1], [['bytes', 'xyz']], `${engine}: offset 2`);
    byOffset.set(engine, rows[0]?.[1] ?? []);
  }
  for (const [engine, headers] of byOffset) assert.deepEqual(headers[0], ['null', null], `${engine}: a null header value lands as null`);
});
