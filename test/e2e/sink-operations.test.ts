/**
 * Operations end to end (issue 9, points 1 and 3's task half; docs/sink.md "Failures"): the real worker
 * (`icefloe standalone`) on the stack's Kafka, REST catalog and S3, counted by Kafka coordinates.
 * (a) A pre-created compacted control topic is refused at start, naming the setting and the topic; a
 *     connector without `iceberg.control.topic` gets its own `icefloe-control-<name>`, created with safe
 *     settings.
 * (b) A table that stops fails the connector's tasks: nothing read after the stop is acknowledged to
 *     Kafka (the group's committed offsets stay where the table's rows end); every task FAILED, the
 *     worker exits 1 by itself with a summary naming the stopped table (issue 11).
 * (c) Retention: a table that cannot commit (the catalog, behind the fault proxy, throttles its commits)
 *     raises the alarm past a share of the control topic's retention and fails the tasks past a larger one (the
 *     worker, its only task FAILED, exits 1); once the catalog is back a restart lands everything exactly once.
 * (d) A table dropped and recreated while the worker runs: records produced after the recreate land in
 *     the new table exactly once, without a restart.
 * (f) A table dropped while announcements wait for it, then registered again from its metadata file
 *     (`register_table`, the same UUID): the pending announcements are kept, not skipped; after the repair
 *     every record is in the table exactly once (review N2).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { ConfluentKafkaAdmin, ConfluentKafkaSource } from '../../src/consume/confluent/index.ts';
import { controlOffsetsKey } from '../../src/coordinate/control-positions.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import { S3ObjectStore } from '../../src/upload/s3/store.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { e2eResources, PROCESS_WORKER, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { requireReachable, s3Settings, stackEndpoints } from '../helpers/stack.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const TIMEOUT = 300_000;
const SCHEMALESS_JSON_AUTO = { ...SCHEMALESS_JSON, 'iceberg.tables.auto-create-enabled': 'true' };

/** `count` JSON records spread over `partitions`, ids from `from`. */
function records(from: number, count: number, partitions: number): { partition: number; value: unknown }[] {
  return Array.from({ length: count }, (_, i) => ({ partition: (from + i) % partitions, value: { id: from + i, note: `r${from + i}` } }));
}

/** The consumer group's committed offsets of `topic`'s partitions (null: none). */
async function committedOffsets(groupId: string, topic: string, partitions: number): Promise<(bigint | null)[]> {
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), groupId, clientId: 'icefloe-e2e-offsets' });
  try {
    const got = await source.committed(Array.from({ length: partitions }, (_, partition) => ({ topic, partition })));
    return got.sort((a, b) => a.partition - b.partition).map((c) => c.offset);
  } finally {
    await source.close();
  }
}

/** Per partition, the offset after the last of `coords` (what a group that consumed exactly them has committed). */
function endOffsets(coords: readonly Coordinates[], partitions: number): (bigint | null)[] {
  const out: (bigint | null)[] = Array.from({ length: partitions }, () => null);
  for (const c of coords) if (out[c.partition] === null || (out[c.partition] as bigint) <= c.offset) out[c.partition] = c.offset + 1n;
  return out;
}

function restCatalog(): RestCatalog {
  const e = stackEndpoints();
  return new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse });
}

function alive(w: WorkerProcess): boolean {
  return w.child.exitCode === null && w.child.signalCode === null;
}

test('(a) a compacted control topic is refused at start, naming the setting and the topic; the default control topic is the connector\'s own, created safe', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('ops-src');
  const compacted = unique('ops-compacted');
  const name = unique('ops-a');
  res.topics.push(topic, compacted, `icefloe-control-${name}`);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  t.after(() => admin.close());
  await admin.ensureTopic({ name: topic, partitions: 1, replicationFactor: -1 });
  await admin.ensureTopic({ name: compacted, partitions: 1, replicationFactor: -1, configs: { 'cleanup.policy': 'compact' } });
  const table = `${uniqueIdent('ops')}.events`;

  const refused = startWorker({ connectors: [sinkConnector({ name, topics: topic, controlTopic: compacted, config: { ...SCHEMALESS_JSON_AUTO, 'iceberg.tables': table } })] });
  res.workers.push(refused);
  const how = await Promise.race([refused.exited, sleep(60_000).then(() => 'still running after 60 s')]);
  assert.equal(how, '2', `a configuration error: exit code 2; last lines:\n${refused.lines.slice(-5).join('\n')}`);
  const message = refused.lines.find((l) => l.includes('cleanup.policy=compact'));
  assert.ok(message !== undefined && message.includes(`control topic ${compacted}`), `the refusal names the setting and the topic; last lines:\n${refused.lines.slice(-5).join('\n')}`);

  // Without iceberg.control.topic: the connector's own topic, created with delete, unlimited bytes, the retention set.
  const own = sinkConnector({ name, topics: topic, controlTopic: '', config: { ...SCHEMALESS_JSON_AUTO, 'iceberg.tables': table } });
  delete own.config['iceberg.control.topic'];
  const worker = startWorker({ connectors: [own] });
  res.workers.push(worker);
  await worker.waitFor(/"msg":"control topic checked"/, 60_000);
  const configs = await admin.topicConfigs(`icefloe-control-${name}`);
  assert.deepEqual([configs['cleanup.policy'], configs['retention.bytes'], configs['retention.ms']], ['delete', '-1', String(7 * 24 * 3600 * 1000)]);
  await stopWorker(worker);
});

test('(b) a stopped table fails the tasks: nothing read after the stop is acknowledged to Kafka; the table holds each record once', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('ops-stop');
  const control = unique('ops-control');
  const name = unique('ops-b');
  const table = `${uniqueIdent('ops')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const before = await produceJson(topic, 2, records(0, 200, 2));
  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON_AUTO, 'tasks.max': '2', 'iceberg.tables': table } })],
  });
  res.workers.push(worker);
  await waitCommitted(worker, table, before.length, 120_000);

  // An operator (or another tool) leaves a snapshot whose control positions cannot be read: the table stops.
  const catalog = restCatalog();
  const store = new S3ObjectStore(s3Settings());
  t.after(async () => {
    await catalog.close();
    await store.close();
  });
  await appendFiles({ catalog, store }, parseIdentifier(table), { commitId: `test:${name}:corrupt`, files: [], summary: { [controlOffsetsKey(name)]: 'not json' } });
  const failed = await worker.waitFor(/"msg":"connector failed/, 60_000);
  assert.match(failed, new RegExp(`table ${table.replace('.', '\\.')} stopped \\(positions-malformed`));
  const after = await produceJson(topic, 2, records(200, 100, 2));
  await sleep(8_000); // more than two commit intervals: a running task would have committed them
  assert.deepEqual(await committedOffsets(`connect-${name}`, topic, 2), endOffsets(before, 2), 'the group has acknowledged exactly what the table holds');
  const failures = taskFailures(worker, name, 'for-good');
  assert.equal(failures.length, 2, 'both task processes failed');
  for (const f of failures) assert.match(String(f['msg']), new RegExp(`^task ${name}-[01] failed: .*stopped \\(positions-malformed`));
  assert.equal(after.length, 100);
  assert.ok(worker.logs('table stopped: nothing is committed to it until an operator repairs it').some((l) => l['code'] === 'positions-malformed'));
  // Every task FAILED for good: nothing runs, nothing will restart, and no API could show it — the worker exits.
  assert.equal(await worker.exited, '1', 'the worker exits 1 by itself');
  const summary = worker.lines.slice(worker.lines.findIndex((l) => l.startsWith('icefloe standalone: every task has FAILED (2 of 2)')));
  assert.equal(summary.filter((l) => new RegExp(`^  connector ${name} task [01]: .*${table.replace('.', '\\.')} stopped \\(positions-malformed`).test(l)).length, 2, `the summary names each task and why; got:\n${summary.join('\n')}`);
  await assertExactlyOnce(table, before);
});

test('(c) retention: a table that cannot commit raises the alarm, then fails the tasks before retention; after the repair everything lands once', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const e = stackEndpoints();
  await requireReachable('Fault-injection proxy (catalog route)', e.proxyCatalogUri);
  const proxy = new FaultProxy(e.proxyControlUrl);
  const topic = unique('ops-ret');
  const control = unique('ops-control');
  const name = unique('ops-c');
  const ns = uniqueIdent('ops');
  const table = `${ns}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  t.after(() => admin.close());
  // A 30 s retention (the minimum lowered for the test), alarm at 0.3 of it (9 s), stop at 0.5 (15 s): the
  // worker checks every few seconds, so the stop lands between 15 s and the retention.
  await admin.ensureTopic({ name: control, partitions: 1, replicationFactor: -1, configs: { 'retention.ms': '30000', 'retention.bytes': '-1', 'cleanup.policy': 'delete' } });
  const rule = await proxy.arm({ target: 'catalog', match: { method: 'POST', path: `^/v1/namespaces/${ns}/tables/events$` }, times: 0, fault: { kind: 'status', code: 429 } });
  t.after(() => proxy.remove(rule).catch(() => undefined));
  const spec = sinkConnector({
    name,
    topics: topic,
    controlTopic: control,
    config: { ...SCHEMALESS_JSON_AUTO, 'iceberg.tables': table, 'iceberg.catalog.uri': e.proxyCatalogUri, 'icefloe.control.topic.min-retention-ms': '10000', 'icefloe.control.retention-alarm-ratio': '0.3', 'icefloe.control.retention-stop-ratio': '0.5' },
  });
  const before = await produceJson(topic, 2, records(0, 200, 2));
  const worker = startWorker({ worker: { 'icefloe.tasks.mode': 'in-process' }, connectors: [spec] });
  res.workers.push(worker);
  const alarm = await worker.waitFor(/"msg":"retention alarm/, 90_000);
  const failed = await worker.waitFor(/"msg":"connector failed/, 60_000);
  assert.ok(worker.lines.indexOf(alarm) < worker.lines.indexOf(failed), 'the alarm comes first');
  const ageAtStop = Number(/its oldest unapplied announcement is (\d+) s old/.exec(failed)?.[1]);
  assert.ok(ageAtStop >= 15 && ageAtStop < 30, `stopped at ${ageAtStop} s: past 0.5 of the 30 s retention, before it`);
  assert.match(failed, /icefloe\.source-offsets\./, 'the message says how to recover if announcements were deleted');
  const after = await produceJson(topic, 2, records(200, 100, 2));
  await sleep(8_000);
  assert.deepEqual(await committedOffsets(`connect-${name}`, topic, 2), endOffsets(before, 2), 'nothing read after the stop is acknowledged');
  assert.equal(await worker.exited, '1', 'its only task FAILED: the worker exits 1 by itself');

  // Repair: the catalog answers again; a restart applies the announced records and reads on, exactly once.
  await proxy.remove(rule);
  const restarted = startWorker({ worker: { 'icefloe.tasks.mode': 'in-process' }, connectors: [spec], dir: worker.dir });
  res.workers.push(restarted);
  const total = (): number => [worker, restarted].reduce((n, w) => n + w.logs('table committed').filter((l) => l['table'] === table).reduce((m, l) => m + Number(l['records']), 0), 0);
  for (const end = Date.now() + 120_000; total() < before.length + after.length; await sleep(500)) {
    assert.ok(Date.now() < end && alive(restarted), `all records committed after the repair (${total()}); last lines:\n${restarted.lines.slice(-10).join('\n')}`);
  }
  await stopWorker(restarted);
  await assertExactlyOnce(table, [...before, ...after]);
});

test('(d) a table dropped and recreated while the worker runs: later records land in the new table exactly once, no restart', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('ops-recreate');
  const control = unique('ops-control');
  const name = unique('ops-d');
  const table = `${uniqueIdent('ops')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const first = await produceJson(topic, 2, records(0, 200, 2));
  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON_AUTO, 'tasks.max': '2', 'iceberg.tables': table } })],
  });
  res.workers.push(worker);
  await waitCommitted(worker, table, first.length, 120_000);

  const catalog = restCatalog();
  const store = new S3ObjectStore(s3Settings());
  t.after(async () => {
    await catalog.close();
    await store.close();
  });
  const id = parseIdentifier(table);
  const old = await catalog.loadTable(id);
  await catalog.dropTable(id);
  const recreated = await createTable({ catalog, store }, id, { schema: currentSchema(old.metadata) });
  assert.notEqual(recreated.metadata.tableUuid, old.metadata.tableUuid);
  const second = await produceJson(topic, 2, records(200, 200, 2));
  await waitCommitted(worker, table, first.length + second.length, 90_000);
  assert.ok(worker.logs('table replaced while its cycle was open: the cycle is abandoned and its records are read again').length > 0, 'the tasks noticed the new table');
  assert.equal(worker.logs('table stopped: nothing is committed to it until an operator repairs it').length, 0, 'the table never stopped');
  await stopWorker(worker);
  await assertExactlyOnce(table, second);
});

test('(e) static tables [a, b], b missing, auto-create off, unrouted=skip: every record lands in a exactly once, b\'s copies counted', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('ops-missing');
  const control = unique('ops-control');
  const name = unique('ops-e');
  const ns = uniqueIdent('ops');
  const a = `${ns}.a`;
  res.topics.push(topic, control);
  res.tables.push(a);
  const catalog = restCatalog();
  const store = new S3ObjectStore(s3Settings());
  t.after(async () => {
    await catalog.close();
    await store.close();
  });
  const optional = (id: number, field: string, kind: 'int' | 'long' | 'string' | 'timestamptz') => ({ id, name: field, required: false, type: { kind } }) as const;
  await createTable({ catalog, store }, parseIdentifier(a), {
    schema: {
      schemaId: 0,
      fields: [
        optional(1, 'id', 'long'),
        optional(2, 'note', 'string'),
        optional(3, '_kafka_metadata_topic', 'string'),
        optional(4, '_kafka_metadata_partition', 'int'),
        optional(5, '_kafka_metadata_offset', 'long'),
        optional(6, '_kafka_metadata_timestamp', 'timestamptz'),
      ],
    },
  });
  const produced = await produceJson(topic, 2, records(0, 300, 2));
  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name,
        topics: topic,
        controlTopic: control,
        config: { ...SCHEMALESS_JSON_AUTO, 'iceberg.tables.auto-create-enabled': 'false', 'icefloe.tables.unrouted': 'skip', 'iceberg.tables': `${a},${ns}.b` },
      }),
    ],
  });
  res.workers.push(worker);
  await waitCommitted(worker, a, produced.length, 120_000);
  await stopWorker(worker);
  const stopped = worker.logs('task stopped');
  assert.equal(stopped.reduce((n, l) => n + Number(l['tableCopiesSkipped'] ?? 0), 0), produced.length, 'one skipped copy per record, for b');
  assert.equal(stopped.reduce((n, l) => n + Number(l['unroutedSkipped'] ?? 0), 0), 0, 'no record skipped as a whole');
  assert.ok(worker.logs('table does not exist: records routed to it are skipped for it and written to their other tables (icefloe.tables.unrouted=skip); looked up again next cycle').some((l) => l['table'] === `${ns}.b`));
  await assertExactlyOnce(a, produced);
});

test('(f) a table dropped while announcements wait for it, then registered again (register_table, same UUID): nothing skipped, every record exactly once (review N2)', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const e = stackEndpoints();
  await requireReachable('Fault-injection proxy (catalog route)', e.proxyCatalogUri);
  const proxy = new FaultProxy(e.proxyControlUrl);
  const topic = unique('ops-register');
  const control = unique('ops-control');
  const name = unique('ops-f');
  const ns = uniqueIdent('ops');
  const table = `${ns}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const spec = sinkConnector({
    name,
    topics: topic,
    controlTopic: control,
    config: { ...SCHEMALESS_JSON_AUTO, 'tasks.max': '2', 'iceberg.tables': table, 'iceberg.catalog.uri': e.proxyCatalogUri },
  });
  const first = await produceJson(topic, 2, records(0, 200, 2));
  const worker = startWorker({ worker: { 'icefloe.tasks.mode': 'in-process' }, connectors: [spec] });
  res.workers.push(worker);
  await waitCommitted(worker, table, first.length, 120_000);

  // The catalog throttles the table's commits, so what the tasks announce next waits in the committer.
  const rule = await proxy.arm({ target: 'catalog', match: { method: 'POST', path: `^/v1/namespaces/${ns}/tables/events$` }, times: 0, fault: { kind: 'status', code: 429 } });
  t.after(() => proxy.remove(rule).catch(() => undefined));
  const second = await produceJson(topic, 2, records(200, 200, 2));
  const want = endOffsets([...first, ...second], 2);
  const announced = async (): Promise<boolean> => (await committedOffsets(`connect-${name}`, topic, 2)).every((o, p) => o === want[p]);
  for (const end = Date.now() + 90_000; !(await announced()); await sleep(500)) {
    assert.ok(Date.now() < end && alive(worker), 'the tasks announce the second batch (their source offsets are committed)');
  }
  for (const end = Date.now() + 60_000; !worker.logs('table commit failed; retrying next round').some((l) => l['table'] === table); await sleep(250)) {
    assert.ok(Date.now() < end, 'the committer meets the throttled commit');
  }

  // Dropped (not purged) while those announcements wait: the committer finds no table with announcements waiting.
  const catalog = restCatalog();
  t.after(() => catalog.close());
  const id = parseIdentifier(table);
  const old = await catalog.loadTable(id);
  await catalog.dropTable(id);
  const missing = (): boolean => worker.logs('table commit failed; retrying next round').some((l) => l['table'] === table && /wait for a table the catalog does not find|does not exist/.test(String(l['error'])));
  for (const end = Date.now() + 60_000; !missing(); await sleep(250)) assert.ok(Date.now() < end, 'the committer finds the table missing with announcements waiting');
  // Failing, not stopped: the connector's tasks keep running (a lagging replica must not fail them for good).
  await sleep(3_000);
  assert.ok(alive(worker), `the worker runs on; its last lines:\n${worker.lines.slice(-25).join('\n')}`);
  assert.equal(worker.logs('table stopped: nothing is committed to it until an operator repairs it').length, 0, 'the missing table is failing, not stopped');

  // The operator undoes the drop with register_table from the last metadata file (the same table UUID),
  // and the catalog accepts commits again: the running committer applies the kept announcements.
  const registered = await fetch(`${e.catalogUri}/v1/namespaces/${encodeURIComponent(ns)}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'events', 'metadata-location': old.metadataLocation }),
  });
  assert.equal(registered.status, 200, await registered.text());
  assert.equal((await catalog.loadTable(id)).metadata.tableUuid, old.metadata.tableUuid);
  await proxy.remove(rule);
  await waitCommitted(worker, table, first.length + second.length, 120_000);
  assert.equal(worker.logs('table stopped: nothing is committed to it until an operator repairs it').length, 0, 'the kept announcements are applied; nothing rolled back');
  await stopWorker(worker);
  // A restarted committer agrees: nothing to re-apply, nothing rolled back.
  const restarted = startWorker({ worker: { 'icefloe.tasks.mode': 'in-process' }, connectors: [spec], dir: worker.dir });
  res.workers.push(restarted);
  await sleep(8_000);
  assert.equal(restarted.logs('table stopped: nothing is committed to it until an operator repairs it').length, 0, 'the restarted committer finds nothing rolled back');
  await stopWorker(restarted);
  await assertExactlyOnce(table, [...first, ...second]);
});
