/**
 * Routing end to end: the real worker (`icefloe standalone`, tasks as child processes) fans one topic out
 * to several auto-created tables (REST catalog on S3), checked by Kafka coordinates with PyIceberg:
 * (a) static tables with `iceberg.table.<t>.route-regex` on the `region` field — each table holds exactly
 *     the records whose region matches, nothing in a wrong table;
 * (b) dynamic routing (`iceberg.tables.dynamic-enabled`): a field of each JSON record names its table;
 * (c) the unrouted rule: `icefloe.tables.unrouted=fail` fails the task naming the record's
 *     topic/partition/offset and commits nothing past it; `skip` skips it and the rest lands exactly once;
 * (d) idle partitions do not hold the watermark back: with data in one partition of six, snapshots carry
 *     `icefloe.valid-through-ts`, and it means what it says (see the test);
 * (e) errors.tolerance=all with two static tables, a record that fits only one of them: it is in that
 *     one, and its failed copy for the other is counted per table and logged with the table.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { REGIONS } from '../../tools/generate/orders.ts';
import { parseIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { assertExactlyOnce, coordinateKey, exactlyOnceReport } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { unique } from '../helpers/kafka.ts';
import { readTable } from '../helpers/readers.ts';
import { committedRecords, e2eResources, isoToMs, PROCESS_WORKER, produceJson, produceOrders, registryConverter, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const TIMEOUT = 900_000;

test('(a) static routing by route-regex on region: each table holds exactly the records of its region', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-route');
  const control = unique('e2e-control');
  const ns = uniqueIdent('e2e');
  const tables = Object.fromEntries(REGIONS.map((r) => [r, `${ns}.orders_${r}`])) as Record<(typeof REGIONS)[number], string>;
  res.topics.push(topic, control);
  res.tables.push(...Object.values(tables));
  const count = 12_000;
  const produced = await produceOrders({ topic, format: 'avro', count, seed: 61, partitions: 6, keepEvents: true });

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-route'),
        topics: topic,
        controlTopic: control,
        config: {
          ...registryConverter('avro'),
          'tasks.max': '2',
          'iceberg.tables': Object.values(tables).join(','),
          'iceberg.tables.route-field': 'region',
          ...Object.fromEntries(REGIONS.map((r) => [`iceberg.table.${tables[r]}.route-regex`, r])),
          'iceberg.tables.auto-create-enabled': 'true',
        },
      }),
    ],
  });
  res.workers.push(worker);
  // The expected region of each produced coordinate, from the generated events.
  const expected = Object.fromEntries(REGIONS.map((r) => [r, produced.coords.filter((_, i) => produced.events[i]?.region === r)])) as Record<(typeof REGIONS)[number], Coordinates[]>;
  for (const r of REGIONS) assert.ok(expected[r].length > 1000, `the generator makes ${r} orders`);
  for (const r of REGIONS) await waitCommitted(worker, tables[r], expected[r].length);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);
  assert.equal(worker.logs('table created').length, 3);

  for (const r of REGIONS) {
    // Exactly once and nothing unexpected: no record of another region, none twice.
    await assertExactlyOnce(tables[r], expected[r]);
    const regions = await readTable({ table: tables[r], columns: ['region'] });
    assert.deepEqual([...new Set((regions.rows ?? []).map((row) => row['region']))], [r], `${tables[r]} holds ${r} only`);
  }
  assert.equal(REGIONS.reduce((n, r) => n + expected[r].length, 0), count);
});

test('(b) dynamic routing: a field of each JSON record names its table; the tables are auto-created', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-dyn');
  const control = unique('e2e-control');
  const ns = uniqueIdent('e2e');
  const targets = [`${ns}.dyn_a`, `${ns}.dyn_b`];
  res.topics.push(topic, control);
  res.tables.push(...targets);
  const count = 3_000;
  // Record i goes to table i % 3 === 0 ? b : a; some name it in upper case (dynamic routing lower-cases).
  const values = Array.from({ length: count }, (_, i) => {
    const table = i % 3 === 0 ? (targets[1] as string) : (targets[0] as string);
    return { id: i, target: i % 7 === 0 ? table.toUpperCase() : table, amount: i + 0.25, label: `order ${i}` };
  });
  const coords = await produceJson(topic, 3, values.map((value, i) => ({ partition: i % 3, key: `k${i}`, value })));

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-dyn'),
        topics: topic,
        controlTopic: control,
        config: {
          ...SCHEMALESS_JSON,
          'tasks.max': '2',
          'iceberg.tables.dynamic-enabled': 'true',
          'iceberg.tables.route-field': 'target',
          'iceberg.tables.auto-create-enabled': 'true',
        },
      }),
    ],
  });
  res.workers.push(worker);
  const expected = new Map(targets.map((table) => [table, coords.filter((_, i) => (values[i] as { target: string }).target.toLowerCase() === table)]));
  for (const table of targets) await waitCommitted(worker, table, expected.get(table)?.length ?? 0);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);
  assert.deepEqual(worker.logs('table created').map((l) => l['table']).sort(), targets);

  for (const table of targets) {
    await assertExactlyOnce(table, expected.get(table) ?? []);
    // By value: each row's id and target are those of the record at its coordinates.
    const read = await readTable({ table, columns: ['id', 'target', 'amount', '_kafka_metadata_partition', '_kafka_metadata_offset'] });
    const byCoord = new Map(coords.map((c, i) => [`${c.partition}/${c.offset}`, values[i] as { id: number; target: string; amount: number }]));
    for (const row of read.rows ?? []) {
      const v = byCoord.get(`${String(row['_kafka_metadata_partition'])}/${String(row['_kafka_metadata_offset'])}`);
      assert.deepEqual({ id: row['id'], target: row['target'], amount: row['amount'] }, v && { id: v.id, target: v.target, amount: v.amount });
      assert.equal(String(row['target']).toLowerCase(), table);
    }
  }
});

interface UnroutedRun {
  readonly worker: WorkerProcess;
  readonly tables: Record<'eu' | 'us', string>;
  readonly first: Coordinates[];
  readonly second: Coordinates[];
  readonly regionOf: Map<string, string>;
  readonly bad: Coordinates;
}

/**
 * Tables for eu and us only (route-regex on `region`). First 1,000 routable JSON records over two
 * partitions, committed; then 1,000 more in which one record of partition 1 says region "mars".
 */
async function unroutedRun(t: TestContext, rule: 'fail' | 'skip'): Promise<UnroutedRun> {
  const res = await e2eResources(t);
  const topic = unique(`e2e-unrouted-${rule}`);
  const control = unique('e2e-control');
  const ns = uniqueIdent('e2e');
  const tables = { eu: `${ns}.unrouted_eu`, us: `${ns}.unrouted_us` };
  res.topics.push(topic, control);
  res.tables.push(tables.eu, tables.us);
  const record = (i: number, region: string): { partition: number; value: unknown } => ({ partition: i % 2, value: { id: i, region, amount: i + 0.5 } });
  const regionOf = new Map<string, string>();

  const firstValues = Array.from({ length: 1000 }, (_, i) => record(i, i % 3 === 0 ? 'us' : 'eu'));
  const first = await produceJson(topic, 2, firstValues);
  first.forEach((c, i) => regionOf.set(coordinateKey(c), (firstValues[i]?.value as { region: string }).region));

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique(`e2e-unrouted-${rule}`),
        topics: topic,
        controlTopic: control,
        config: {
          ...SCHEMALESS_JSON,
          'iceberg.tables': `${tables.eu},${tables.us}`,
          'iceberg.tables.route-field': 'region',
          [`iceberg.table.${tables.eu}.route-regex`]: 'eu',
          [`iceberg.table.${tables.us}.route-regex`]: 'us',
          'iceberg.tables.auto-create-enabled': 'true',
          'icefloe.tables.unrouted': rule,
        },
      }),
    ],
  });
  res.workers.push(worker);
  const firstBy = (r: string): number => first.filter((c) => regionOf.get(coordinateKey(c)) === r).length;
  await waitCommitted(worker, tables.eu, firstBy('eu'));
  await waitCommitted(worker, tables.us, firstBy('us'));

  // Record 1501 (k = 501: partition 1, in the middle of the batch) routes nowhere.
  const secondValues = Array.from({ length: 1000 }, (_, k) => record(1000 + k, k === 501 ? 'mars' : k % 3 === 0 ? 'us' : 'eu'));
  const second = await produceJson(topic, 2, secondValues);
  second.forEach((c, k) => regionOf.set(coordinateKey(c), (secondValues[k]?.value as { region: string }).region));
  const bad = second[501] as Coordinates;
  assert.equal(bad.partition, 1);
  return { worker, tables, first, second, regionOf, bad };
}

test("(c) unrouted=fail: a record that routes to no table fails the task, naming it, and nothing past it is committed", { timeout: TIMEOUT }, async (t) => {
  const run = await unroutedRun(t, 'fail');
  const { worker, bad } = run;
  const line = await worker.waitFor(/"msg":"task \S+ failed at /, 300_000);
  const failed = JSON.parse(line) as { msg: string };
  assert.ok(failed.msg.includes(` failed at ${bad.topic}/${bad.partition}@${bad.offset}: `), `the failure line names topic/partition@offset: ${failed.msg}`);
  assert.match(failed.msg, /routes to no table/);
  assert.match(failed.msg, /"mars"/);
  assert.match(failed.msg, /icefloe\.tables\.unrouted=skip/);
  // Its only task FAILED for good: the worker stops by itself — a last committer round applies anything
  // announced before the failure — and exits 1.
  assert.equal(await worker.exited, '1');

  for (const region of ['eu', 'us'] as const) {
    const table = run.tables[region];
    const routable = [...run.first, ...run.second].filter((c) => run.regionOf.get(coordinateKey(c)) === region);
    const report = await exactlyOnceReport(table, routable);
    assert.deepEqual({ duplicates: report.duplicates, unexpected: report.unexpected, filesAddedTwice: report.filesAddedTwice }, { duplicates: [], unexpected: [], filesAddedTwice: [] }, table);
    // Everything of the first batch is there; whatever is missing comes from the second.
    const firstKeys = new Set(run.first.map(coordinateKey));
    assert.ok(report.missing.every((k) => !firstKeys.has(k)), `${table}: first batch complete`);
    const rows = await readTable({ table, columns: ['_kafka_metadata_partition', '_kafka_metadata_offset'] });
    const pastBad = (rows.rows ?? []).filter((r) => Number(r['_kafka_metadata_partition']) === bad.partition && BigInt(String(r['_kafka_metadata_offset'])) >= bad.offset);
    assert.deepEqual(pastBad, [], `${table}: nothing at or past ${bad.topic}-${bad.partition}@${bad.offset} committed`);
    t.diagnostic(`${table}: ${report.rows} rows, ${report.missing.length} records of the second batch not committed`);
  }
});

test('(c) unrouted=skip: the record that routes to no table is skipped and counted; the rest lands exactly once', { timeout: TIMEOUT }, async (t) => {
  const run = await unroutedRun(t, 'skip');
  const { worker } = run;
  const all = [...run.first, ...run.second];
  const expected = (region: string): Coordinates[] => all.filter((c) => run.regionOf.get(coordinateKey(c)) === region);
  await waitCommitted(worker, run.tables.eu, expected('eu').length);
  await waitCommitted(worker, run.tables.us, expected('us').length);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);
  for (const region of ['eu', 'us'] as const) await assertExactlyOnce(run.tables[region], expected(region));
  assert.equal(expected('eu').length + expected('us').length, all.length - 1);
  assert.equal(committedRecords(worker, run.tables.eu) + committedRecords(worker, run.tables.us), all.length - 1);
  const skipped = worker.logs('task stopped').reduce((n, l) => n + Number(l['unroutedSkipped'] ?? 0), 0);
  assert.equal(skipped, 1, 'the task counted one unrouted record');
});

test('(d) idle partitions: data in one partition of six; snapshots carry icefloe.valid-through-ts, which no idle partition holds back', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-idle');
  const control = unique('e2e-control');
  const table = `${uniqueIdent('e2e')}.orders_idle`;
  res.topics.push(topic, control);
  res.tables.push(table);

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-idle'),
        topics: topic,
        controlTopic: control,
        config: { ...registryConverter('avro'), 'tasks.max': '2', 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true' },
      }),
    ],
  });
  res.workers.push(worker);
  // Three waves into partition 0 only (the topic has 6), each committed before the next: several snapshots.
  const coords: Coordinates[] = [];
  for (let wave = 0; wave < 3; wave++) {
    const p = await produceOrders({ topic, format: 'avro', count: 1000, seed: 70 + wave, partitions: 6, onlyPartitions: [0] });
    coords.push(...p.coords);
    await waitCommitted(worker, table, coords.length);
  }
  // Not timed: the watermark lands with a commit once the cycles are whole, however long that takes.
  const deadline = Date.now() + 300_000;
  while (!worker.logs('table committed').some((l) => l['table'] === table && l['validThroughTs'] !== undefined)) {
    assert.ok(Date.now() < deadline, 'a commit with a watermark');
    await new Promise((r) => setTimeout(r, 500));
  }
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);
  assert.ok(coords.every((c) => c.partition === 0));
  await assertExactlyOnce(table, coords);

  // Every record's Kafka timestamp, from the table (all of them are in it).
  const all = await readTable({ table, columns: ['_kafka_metadata_offset', '_kafka_metadata_timestamp'] });
  const tsByOffset = new Map((all.rows ?? []).map((r) => [String(r['_kafka_metadata_offset']), isoToMs(String(r['_kafka_metadata_timestamp']))]));
  const maxTs = Math.max(...tsByOffset.values());
  const snapshots = all['snapshots'] as { snapshot_id: number | bigint; summary: Record<string, string> }[];
  const marked = snapshots.filter((s) => s.summary['icefloe.valid-through-ts'] !== undefined);
  assert.ok(marked.length > 0, 'a snapshot carries icefloe.valid-through-ts');

  // What we assert about the watermark W (ms) of snapshot S, a claim "every record with timestamp <= W is
  // in S" (src/coordinate/commit-state.ts):
  // - it is sound: every record whose Kafka timestamp is <= W is in S, and W is no later than the newest
  //   record S holds (it never claims data not committed);
  // - it never goes back from one snapshot to the next;
  // - idle partitions do not hold it back: after the last commit, W equals the newest record's timestamp
  //   (partitions 1–5 never had data; only partition 0's progress bounds it).
  let previous = -Infinity;
  for (const s of snapshots) {
    const w = s.summary['icefloe.valid-through-ts'];
    if (w === undefined) continue;
    const wm = Number(w);
    assert.ok(wm >= previous, `watermark regressed: ${wm} after ${previous}`);
    previous = wm;
    const at = await readTable({ table, columns: ['_kafka_metadata_offset'], snapshot_id: BigInt(s.snapshot_id) });
    const inSnapshot = new Set((at.rows ?? []).map((r) => String(r['_kafka_metadata_offset'])));
    const newest = Math.max(...[...inSnapshot].map((o) => tsByOffset.get(o) ?? -Infinity));
    assert.ok(wm <= newest, `snapshot ${s.snapshot_id}: watermark ${wm} is later than its newest record ${newest}`);
    const late = [...tsByOffset].filter(([o, ts]) => ts <= wm && !inSnapshot.has(o));
    assert.deepEqual(late, [], `snapshot ${s.snapshot_id}: records at or before the watermark ${wm} are missing`);
  }
  const last = snapshots.at(-1)?.summary['icefloe.valid-through-ts'];
  t.diagnostic(`${marked.length} of ${snapshots.length} snapshots carry a watermark; the last is ${last}, the newest record ${maxTs}`);
  assert.equal(Number(last), maxTs, 'the last watermark is the newest record timestamp: idle partitions hold nothing back');
});

test('(e) errors.tolerance=all, two tables, a record too wide for one: it lands in the other, the failed copy is counted and logged with its table', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const e = stackEndpoints();
  const topic = unique('e2e-copies');
  const control = unique('e2e-control');
  const ns = uniqueIdent('e2e');
  const wide = `${ns}.wide`;
  const narrow = `${ns}.narrow`;
  res.topics.push(topic, control);
  res.tables.push(wide, narrow);
  // The same columns but n: long in one table, int in the other (auto-create off: the tables are given).
  const schema = (kind: 'int' | 'long'): Schema => ({
    schemaId: 0,
    fields: [
      { id: 1, name: 'n', required: false, type: { kind } },
      { id: 2, name: '_kafka_metadata_topic', required: false, type: { kind: 'string' } },
      { id: 3, name: '_kafka_metadata_partition', required: false, type: { kind: 'int' } },
      { id: 4, name: '_kafka_metadata_offset', required: false, type: { kind: 'long' } },
    ],
  });
  const catalog = new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse });
  try {
    await catalog.createNamespace([ns]);
    await catalog.createTable(parseIdentifier(wide), { schema: schema('long') });
    await catalog.createTable(parseIdentifier(narrow), { schema: schema('int') });
  } finally {
    await catalog.close();
  }
  const values = Array.from({ length: 300 }, (_, i) => ({ n: i % 10 === 3 ? 2 ** 40 + i : i }));
  const coords = await produceJson(topic, 2, values.map((value, i) => ({ partition: i % 2, value })));
  const fits = coords.filter((_, i) => (values[i] as { n: number }).n < 2 ** 31);
  const tooWide = coords.filter((_, i) => (values[i] as { n: number }).n >= 2 ** 31);

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: unique('e2e-copies'),
        topics: topic,
        controlTopic: control,
        config: {
          ...SCHEMALESS_JSON,
          'iceberg.tables': `${wide},${narrow}`,
          'iceberg.tables.auto-create-enabled': 'false',
          'icefloe.tables.kafka-metadata-columns': 'topic,partition,offset',
          'errors.tolerance': 'all',
          'errors.log.enable': 'true',
        },
      }),
    ],
  });
  res.workers.push(worker);
  await waitCommitted(worker, wide, coords.length);
  await waitCommitted(worker, narrow, fits.length);
  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0);
  await assertExactlyOnce(wide, coords);
  await assertExactlyOnce(narrow, fits);
  const stopped = worker.logs('task stopped');
  assert.equal(stopped.reduce((n, l) => n + Number(l['tableCopiesFailed']), 0), tooWide.length, 'one failed copy per record too wide for the int table');
  assert.equal(stopped.reduce((n, l) => n + Number(l['errorsSkipped']), 0), 0, 'no record was skipped as a whole');
  const logged = worker.logs('record not written to one of its tables (errors.tolerance=all); its other tables have it');
  assert.deepEqual(logged.map((l) => `${String(l['table'])} ${String(l['topic'])}/${String(l['partition'])}/${String(l['offset'])}`).sort(), tooWide.map((c) => `${narrow} ${coordinateKey(c)}`).sort());
  assert.ok(logged.every((l) => /field n: .* is not an int/.test(String(l['error']))), String(logged[0]?.['error']));
});
