/**
 * The REST API drives a real standalone worker, and each operation shows in the data (issue 12): records
 * counted by Kafka coordinates on the stack's Kafka, REST catalog and S3, read back by PyIceberg and DuckDB.
 *
 * create (POST) → records land; pause (202) → nothing is consumed or committed while paused, the group
 * keeps its members and offsets; resume (202) → the paused records land; stop (204) → STOPPED, no tasks,
 * the group empty; resume → what was produced while stopped lands; task restart (204) and connector
 * restart with includeTasks (202 + plan); a worker restart → the connector comes back from the store in
 * its state; DELETE (204) → 404. In the end every produced record is in the table exactly once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import { assertExactlyOnce, duckdbCount } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

interface Status {
  connector: { state: string };
  tasks: { id: number; state: string }[];
}

/** Polls the connector's status until `want` holds (the REST writes answer before the worker catches up). */
async function waitStatus(base: string, name: string, want: (s: Status) => boolean, what: string, w: WorkerProcess): Promise<Status> {
  const deadline = Date.now() + 60_000;
  let last: Answer | undefined;
  while (Date.now() < deadline) {
    last = await call(base, 'GET', `/connectors/${name}/status`);
    if (last.status === 200 && want(last.body as Status)) return last.body as Status;
    await sleep(250);
  }
  throw new Error(`${name}: not ${what} within 60 s; last status ${JSON.stringify(last)}; last lines:\n${w.lines.slice(-10).join('\n')}`);
}

const states = (s: Status): string => `${s.connector.state}:${s.tasks.map((t) => t.state).join(',')}`;

test('pause, resume, stop, restart and a worker restart through the REST API: nothing consumed while paused or stopped, every record once', { timeout: 400_000 }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('rest-ops');
  const topic = unique('rest-ops-src');
  const control = unique('rest-ops-control');
  const table = `${uniqueIdent('e2e_rest')}.orders`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const connector = sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'tasks.max': '2', 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true' } });
  const produced: Coordinates[] = [];
  const batch = async (n: number, tag: string): Promise<void> => {
    const values = Array.from({ length: n }, (_, i) => ({ partition: i % 4, key: `${tag}-${i}`, value: { tag, i } }));
    produced.push(...(await produceJson(topic, 4, values)));
  };
  await batch(400, 'a');
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  t.after(() => admin.close());
  const members = async (): Promise<number> => (await admin.groupMembers(`connect-${name}`)).length;

  let worker = startWorker({ connectors: [], args: [] });
  res.workers.push(worker);
  let base = await worker.restUrl();
  const created = await call(base, 'POST', '/connectors', connector);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.deepEqual((created.body as { config: unknown }).config, { ...connector.config, name }, 'the config as submitted, plus name');
  await waitStatus(base, name, (s) => states(s) === 'RUNNING:RUNNING,RUNNING', 'RUNNING with 2 tasks', worker);
  await waitCommitted(worker, table, 400, 120_000);

  // Pause: the group keeps its members and offsets; nothing is read or committed while paused.
  assert.equal((await call(base, 'PUT', `/connectors/${name}/pause`)).status, 202);
  await waitStatus(base, name, (s) => states(s) === 'PAUSED:PAUSED,PAUSED', 'PAUSED', worker);
  const offsetsPaused = await call(base, 'GET', `/connectors/${name}/offsets`);
  await batch(300, 'b');
  await sleep(8_000); // more than two commit intervals (3 s)
  assert.equal(committedRecords(worker, table), 400, 'nothing committed while paused');
  assert.deepEqual(await call(base, 'GET', `/connectors/${name}/offsets`), offsetsPaused, 'the group offsets did not move while paused');
  assert.ok((await members()) >= 1, 'the paused tasks stay in the consumer group');
  assert.equal((await call(base, 'PUT', `/connectors/${name}/resume`)).status, 202);
  await waitCommitted(worker, table, 700, 120_000);

  // Stop: tasks gone, the group empty; records produced meanwhile land after the resume.
  assert.equal((await call(base, 'PUT', `/connectors/${name}/stop`)).status, 204);
  await waitStatus(base, name, (s) => states(s) === 'STOPPED:', 'STOPPED', worker);
  assert.deepEqual((await call(base, 'GET', `/connectors/${name}`)).body, { name, config: { ...connector.config, name }, tasks: [], type: 'sink' });
  assert.equal(await members(), 0, 'a stopped connector leaves the group');
  await batch(200, 'c');
  await sleep(4_000);
  assert.equal(committedRecords(worker, table), 700, 'nothing committed while stopped');
  assert.equal((await call(base, 'PUT', `/connectors/${name}/resume`)).status, 202);
  await waitCommitted(worker, table, 900, 120_000);

  // Restarts.
  assert.equal((await call(base, 'POST', `/connectors/${name}/tasks/1/restart`)).status, 204);
  const plan = await call(base, 'POST', `/connectors/${name}/restart?includeTasks=true`);
  assert.equal(plan.status, 202);
  assert.equal((plan.body as Status).connector.state, 'RESTARTING');
  await waitStatus(base, name, (s) => states(s) === 'RUNNING:RUNNING,RUNNING', 'RUNNING after the restarts', worker);
  await batch(100, 'd');
  await waitCommitted(worker, table, 1000, 120_000);

  // A worker restart: the connector comes back from the store, paused as it was left.
  assert.equal((await call(base, 'PUT', `/connectors/${name}/pause`)).status, 202);
  await waitStatus(base, name, (s) => states(s) === 'PAUSED:PAUSED,PAUSED', 'PAUSED before the worker restart', worker);
  await stopWorker(worker);
  worker = startWorker({ connectors: [], args: [], dir: worker.dir });
  res.workers.push(worker);
  base = await worker.restUrl();
  assert.deepEqual((await call(base, 'GET', '/connectors')).body, [name]);
  await waitStatus(base, name, (s) => states(s) === 'PAUSED:PAUSED,PAUSED', 'PAUSED after the worker restart', worker);
  await batch(100, 'e');
  assert.equal((await call(base, 'PUT', `/connectors/${name}/resume`)).status, 202);
  await waitCommitted(worker, table, 100, 120_000); // this worker's own log counts from zero

  assert.equal((await call(base, 'DELETE', `/connectors/${name}`)).status, 204);
  assert.equal((await call(base, 'GET', `/connectors/${name}`)).status, 404);
  await stopWorker(worker);
  await assertExactlyOnce(table, produced);
  assert.equal(await duckdbCount(table), produced.length);
});

test('a task FAILED by a bad record stays FAILED in the REST status with its trace while the worker serves; a fixed config brings it back', { timeout: 300_000 }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('rest-failed');
  const topic = unique('rest-failed-src');
  const control = unique('rest-failed-control');
  const table = `${uniqueIdent('e2e_restf')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const good = await produceJson(topic, 1, Array.from({ length: 20 }, (_, i) => ({ partition: 0, value: { i } })));
  const bad = await produceJson(topic, 1, [{ partition: 0, value: 'not an object' }]);
  const later = await produceJson(topic, 1, Array.from({ length: 10 }, (_, i) => ({ partition: 0, value: { i: 100 + i } })));
  const connector = sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true' } });
  const worker = startWorker({ connectors: [], args: [] }); // no --exit-on-failure: FAILED shows in the API
  res.workers.push(worker);
  const base = await worker.restUrl();
  assert.equal((await call(base, 'POST', '/connectors', connector)).status, 201);
  const failed = await waitStatus(base, name, (s) => s.tasks[0]?.state === 'FAILED', 'FAILED', worker);
  const trace = (failed.tasks[0] as { trace?: string }).trace ?? '';
  assert.match(trace, new RegExp(`${topic}-0@${String(bad[0]?.offset)}|${topic}/0@${String(bad[0]?.offset)}`), `the trace names the bad record: ${trace.slice(0, 300)}`);
  await sleep(2_000);
  assert.equal(worker.child.exitCode, null, 'the worker keeps serving with a FAILED task');
  assert.equal((await call(base, 'GET', '/')).status, 200);
  // The fix: tolerate bad records; the new config restarts the connector and its tasks.
  const fixed = await call(base, 'PUT', `/connectors/${name}/config`, { ...connector.config, 'errors.tolerance': 'all' });
  assert.equal(fixed.status, 200, JSON.stringify(fixed.body));
  await waitStatus(base, name, (s) => states(s) === 'RUNNING:RUNNING', 'RUNNING after the fix', worker);
  // (waitCommitted would stop at the failure logged before the fix)
  const deadline = Date.now() + 120_000;
  while (committedRecords(worker, table) < good.length + later.length && Date.now() < deadline) await sleep(500);
  assert.equal(committedRecords(worker, table), good.length + later.length, 'the good records landed after the fix');
  await stopWorker(worker); // exit 0: the FAILED task was replaced by the fixed connector's
  await assertExactlyOnce(table, [...good, ...later]);
});
