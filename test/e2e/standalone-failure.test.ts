/**
 * A standalone worker never pretends to run (issue 11): the real worker (`icefloe standalone`) on the
 * stack's Kafka, schema registry and REST catalog on S3.
 *
 * (a) plain-text records on an Avro topic (errors.tolerance=none), tasks as processes: the task fails, the
 *     worker logs ONE line naming the connector, task, the first bad record's coordinates and the cause,
 *     and — every task FAILED for good — exits 1 by itself with a summary on stderr saying the same;
 * (b) iceberg.tables.default-partition-by naming a column that is not there: exits 1, naming the table, the
 *     column and the key to fix;
 * (c) a table that does not exist, auto-create off (and --exit-on-failure given): exits 1 naming the table
 *     and the record (a table named by the record through dynamic routing: a static one is refused before
 *     the worker starts, test/e2e/config-errors.test.ts);
 * (d) two connectors, one failing for good and one running: the worker stays up; SIGTERM then exits 1
 *     with the failed task in the summary (a supervisor must see it);
 * (e) a task process killed at a crash point (retriable): restarted, the worker does not exit, every
 *     record lands; SIGTERM exits 0;
 * (f) a connector that cannot start (an unsafe control topic) after one that started: the worker stops the
 *     first one cleanly and exits 2, naming the connector that did not start.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import avro from 'avsc';
import { ConfluentKafkaAdmin, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import { ConfluentSchemaResolver } from '../../src/decode/registry/schema-registry.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, produceJson, registryConverter, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const TIMEOUT = 120_000;
/** How long a worker whose tasks all failed may take to exit (start-up, the failure, the clean stop). */
const EXIT_WITHIN_MS = 60_000;

/** Waits for the worker to exit by itself; fails with its last lines if it does not. */
async function exitOnItsOwn(w: WorkerProcess): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const how = await Promise.race([w.exited, new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), EXIT_WITHIN_MS)))]);
  clearTimeout(timer);
  assert.notEqual(how, 'still running', `the worker exits by itself; last lines:\n${w.lines.slice(-10).join('\n')}`);
  return how;
}

/** The summary the worker printed to stderr: its headline and the lines after it. */
function summary(w: WorkerProcess): { head: string; lines: string[] } {
  const at = w.lines.findIndex((l) => l.startsWith('icefloe standalone: '));
  assert.ok(at >= 0, `a summary on stderr; last lines:\n${w.lines.slice(-10).join('\n')}`);
  const lines: string[] = [];
  for (const l of w.lines.slice(at + 1)) {
    if (!l.startsWith('  connector ')) break;
    lines.push(l);
  }
  return { head: w.lines[at] as string, lines };
}

/** Each record names its table (`target`), auto-create off: a missing table fails the task when a record comes. */
const DYNAMIC = { 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 'target' } as const;

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('(a) plain text on an Avro topic: one failure line with the coordinates, then the worker exits 1 with a summary', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('sa-avro');
  const topic = unique('sa-avro-src');
  const control = unique('sa-control');
  const table = `${uniqueIdent('e2e_sa')}.orders`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const subject = `${topic}-value`;
  t.after(async () => {
    const base = stackEndpoints().registryUrl;
    await fetch(`${base}/subjects/${encodeURIComponent(subject)}`, { method: 'DELETE' }).catch(() => undefined);
    await fetch(`${base}/subjects/${encodeURIComponent(subject)}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
  });
  const schema = { type: 'record', name: uniqueIdent('Order'), fields: [{ name: 'seq', type: 'long' }] };
  const id = await new ConfluentSchemaResolver({ urls: [stackEndpoints().registryUrl] }).register(subject, { type: 'AVRO', schema: JSON.stringify(schema) });
  const type = avro.Type.forSchema(schema as avro.Schema);
  const framed = (seq: number): Buffer => Buffer.concat([Buffer.from([0, (id >>> 24) & 255, (id >>> 16) & 255, (id >>> 8) & 255, id & 255]), type.toBuffer({ seq })]);
  await produceJson(topic, 1, []); // the topic, one partition
  const producer = await ConfluentRecordProducer.connect({ settings: await kafkaSettings(), clientId: 'icefloe-e2e-standalone' });
  const values = [framed(0), framed(1), framed(2), Buffer.from('{"seq": 3}'), Buffer.from('{"seq": 4}')];
  const delivered = await producer.send(values.map((value) => ({ topic, partition: 0, key: null, value }))).finally(() => producer.close());
  const firstBad = delivered[3]?.offset;

  const w = startWorker({
    connectors: [sinkConnector({ name, topics: topic, controlTopic: control, config: { ...registryConverter('avro'), 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'errors.tolerance': 'none' } })],
  });
  res.workers.push(w);
  const started = Date.now();
  const how = await exitOnItsOwn(w);
  t.diagnostic(`exited ${how} after ${Date.now() - started} ms`);
  assert.equal(how, '1', 'every task FAILED: exit code 1');

  const coords = `${topic}/0@${firstBad}`;
  const failures = taskFailures(w);
  assert.equal(failures.length, 1, `one failure line; got ${JSON.stringify(failures)}`);
  const line = failures[0] as Record<string, unknown>;
  assert.match(String(line['msg']), new RegExp(`^task ${escape(name)}-0 failed at ${escape(coords)}: not a Confluent-framed message: the first byte is 0x7b, not the magic byte 0x00 \\(it looks like JSON`));
  assert.deepEqual([line['connector'], line['task'], line['topic'], line['partition'], line['offset'], line['restarting']], [name, 0, topic, 0, String(firstBad), false]);
  assert.match(String(line['trace']), /DataError/, 'the trace is in a field');

  const s = summary(w);
  assert.match(s.head, /^icefloe standalone: every task has FAILED \(1 of 1\) and none will be restarted/);
  assert.deepEqual(s.lines, [`  connector ${name} task 0 at ${coords}: ${String(line['msg']).slice(`task ${name}-0 failed at ${coords}: `.length)}`], 'the summary says what the line says');
});

test('(b) a partition column that does not exist: the worker exits 1 naming the table, the column and the key', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('sa-part');
  const topic = unique('sa-part-src');
  const control = unique('sa-control');
  const table = `${uniqueIdent('e2e_sa')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  await produceJson(topic, 1, [{ partition: 0, value: { id: 1, region: 'eu' } }]);
  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'in-process' },
    connectors: [sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.tables.default-partition-by': 'bucket(customer, 8)' } })],
  });
  res.workers.push(w);
  assert.equal(await exitOnItsOwn(w), '1');
  const s = summary(w);
  assert.equal(s.lines.length, 1, `one failed task: ${s.lines.join('\n')}`);
  assert.match(s.lines[0] as string, new RegExp(`^  connector ${escape(name)} task 0: cannot create table ${escape(table)}: iceberg\\.tables\\.default-partition-by=bucket\\(customer, 8\\): .*column customer is not in the table schema \\(its columns: id, region, `));
  assert.equal(taskFailures(w, name, 'for-good').length, 1);
});

test('(c) a table that does not exist with auto-create off: the worker exits 1 naming the table and the record', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('sa-missing');
  const topic = unique('sa-missing-src');
  const control = unique('sa-control');
  const table = `${uniqueIdent('e2e_sa')}.absent`;
  res.topics.push(topic, control);
  const [first] = await produceJson(topic, 1, [{ partition: 0, value: { id: 1, target: table } }, { partition: 0, value: { id: 2, target: table } }]);
  const w = startWorker({
    args: ['--exit-on-failure'], // the default today, said explicitly
    worker: { 'icefloe.tasks.mode': 'in-process' },
    connectors: [sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, ...DYNAMIC } })],
  });
  res.workers.push(w);
  assert.equal(await exitOnItsOwn(w), '1');
  const s = summary(w);
  assert.equal(s.lines.length, 1, `one failed task: ${s.lines.join('\n')}`);
  assert.match(s.lines[0] as string, new RegExp(`^  connector ${escape(name)} task 0 at ${escape(topic)}/0@${first?.offset}: .*${escape(table)}.* does not exist`));
});

test('(d) one connector failed, another running: the worker stays up; SIGTERM exits 1 with the failed task in the summary', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const good = unique('sa-good');
  const bad = unique('sa-bad');
  const goodTopic = unique('sa-good-src');
  const badTopic = unique('sa-bad-src');
  const controls = [unique('sa-control'), unique('sa-control')];
  const goodTable = `${uniqueIdent('e2e_sa')}.good`;
  const badTable = `${uniqueIdent('e2e_sa')}.absent`;
  res.topics.push(goodTopic, badTopic, ...controls);
  res.tables.push(goodTable);
  const produced = await produceJson(goodTopic, 1, [{ partition: 0, value: { id: 1 } }, { partition: 0, value: { id: 2 } }]);
  const [badFirst] = await produceJson(badTopic, 1, [{ partition: 0, value: { id: 1, target: badTable } }]);
  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'in-process' },
    connectors: [
      sinkConnector({ name: good, topics: goodTopic, controlTopic: controls[0] as string, config: { ...SCHEMALESS_JSON, 'iceberg.tables': goodTable, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1000' } }),
      sinkConnector({ name: bad, topics: badTopic, controlTopic: controls[1] as string, config: { ...SCHEMALESS_JSON, ...DYNAMIC } }),
    ],
  });
  res.workers.push(w);
  for (const end = Date.now() + 60_000; committedRecords(w, goodTable) < produced.length; await sleep(200)) assert.ok(Date.now() < end && w.child.exitCode === null, `the good connector commits; last lines:\n${w.lines.slice(-10).join('\n')}`);
  for (const end = Date.now() + 30_000; taskFailures(w, bad).length === 0; await sleep(200)) assert.ok(Date.now() < end, 'the bad connector\'s task failed');
  await sleep(2_000); // the worker would have begun to stop by now
  assert.ok(w.child.exitCode === null && w.child.signalCode === null, 'one task still runs: the worker stays up');
  assert.equal(await w.stop(60_000), '1', 'stopped with a FAILED task: exit 1');
  const s = summary(w);
  assert.match(s.head, /^icefloe standalone: stopped with 1 of 2 tasks FAILED/);
  assert.equal(s.lines.length, 1);
  assert.match(s.lines[0] as string, new RegExp(`^  connector ${escape(bad)} task 0 at ${escape(badTopic)}/0@${badFirst?.offset}: .*${escape(badTable)}`));
});

test('(e) a task process killed at a crash point is restarted; the worker does not exit and every record lands', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('sa-crash');
  const topic = unique('sa-crash-src');
  const control = unique('sa-control');
  const table = `${uniqueIdent('e2e_sa')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const produced = await produceJson(topic, 1, Array.from({ length: 20 }, (_, i) => ({ partition: 0, value: { id: i } })));
  const w = startWorker({
    // A short session: the restarted task gets the partition the killed one held without waiting 45 s.
    worker: { 'icefloe.tasks.mode': 'process', 'consumer.session.timeout.ms': '6000', 'consumer.heartbeat.interval.ms': '500' },
    connectors: [sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1000' } })],
    env: { ICEFLOE_CRASH_POINT: 'task.after-upload' },
  });
  res.workers.push(w);
  await waitCommitted(w, table, produced.length, 90_000);
  const failures = taskFailures(w);
  assert.equal(failures.length, 1, `one failure, retriable: ${JSON.stringify(failures)}`);
  assert.match(String(failures[0]?.['msg']), new RegExp(`^task ${escape(name)}-0 failed: task 0 process exited with SIGKILL.*; restarting it in \\d+\\.\\d s$`));
  assert.equal(failures[0]?.['restarting'], true);
  assert.equal(w.logs('task restarted').length, 1);
  assert.ok(w.child.exitCode === null && w.child.signalCode === null, 'the worker runs on');
  await stopWorker(w); // exit 0: nothing FAILED
  assert.ok(!w.lines.some((l) => l.startsWith('icefloe standalone: ')), 'no failure summary');
});

test('(f) a connector that cannot start ends the worker, naming it; the connector started before it is stopped cleanly', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const good = unique('sa-first');
  const bad = unique('sa-refused');
  const topic = unique('sa-first-src');
  const control = unique('sa-control');
  const compacted = unique('sa-compacted');
  const table = `${uniqueIdent('e2e_sa')}.events`;
  res.topics.push(topic, control, compacted);
  res.tables.push(table);
  await produceJson(topic, 1, [{ partition: 0, value: { id: 1 } }]);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  await admin.ensureTopic({ name: compacted, partitions: 1, replicationFactor: -1, configs: { 'cleanup.policy': 'compact' } }).finally(() => admin.close());
  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'process' },
    connectors: [
      sinkConnector({ name: good, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true' } }),
      sinkConnector({ name: bad, topics: topic, controlTopic: compacted, config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true' } }),
    ],
  });
  res.workers.push(w);
  const how = await exitOnItsOwn(w);
  const linesAtExit = [...w.lines];
  assert.equal(how, '2', 'a configuration error at start: exit 2');
  const refusal = linesAtExit.find((l) => l.startsWith('icefloe standalone: ')) ?? '';
  assert.match(refusal, new RegExp(`^icefloe standalone: connector ${escape(bad)} did not start: .*control topic ${escape(compacted)}.*cleanup\\.policy=compact`));
  assert.ok(w.logs('task stopped').some((l) => l['connector'] === good), `the first connector's task was stopped before the worker exited; last lines:\n${linesAtExit.slice(-8).join('\n')}`);
});
