/**
 * Two workers with overlapping task ids are detected and explained (issue 10 point 3, review O4), with
 * real worker processes.
 *
 * Worker A runs tasks 0 and 1 of a connector (icefloe.tasks.id-offset=0, tasks.max=2) and commits. Worker
 * B is started for the same connector with icefloe.tasks.id-offset=1, so its tasks would be 1 and 2: task
 * 1 is A's. Before the check, B's task 1 registered transactional.id <connector>-1 and fenced A's task 1,
 * which then stayed FAILED. Now B sees A's member with client.id <connector>-1 in the connector's group,
 * waits a session time-out and a half for it to leave (a dead predecessor would), and refuses to start,
 * naming icefloe.tasks.id-offset, the overlapping id and its transactional.id. A keeps running: records
 * produced after B's attempt are committed by A, every record exactly once by Kafka coordinates, and no
 * task of A failed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import { unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';

const PARTITIONS = 4;

test('a second worker whose icefloe.tasks.id-offset overlaps the first\'s refuses to start, naming the setting and the ids; the first keeps its tasks', { timeout: 180_000 }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('tids');
  const topic = unique('tids-src');
  const control = unique('tids-control');
  const table = `${uniqueIdent('e2e_tids')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const batch = (from: number, n: number): { partition: number; key: string; value: unknown }[] =>
    Array.from({ length: n }, (_, i) => ({ partition: (from + i) % PARTITIONS, key: `k${from + i}`, value: { id: from + i } }));
  const produced = await produceJson(topic, PARTITIONS, batch(0, 400));
  const connector = sinkConnector({
    name,
    topics: topic,
    controlTopic: control,
    config: {
      'tasks.max': '2',
      ...SCHEMALESS_JSON,
      'iceberg.tables': table,
      'iceberg.tables.auto-create-enabled': 'true',
      'iceberg.control.commit.interval-ms': '1000',
      // A session time-out of 6 s: B waits 11 s (1.5 times it, and 2 s) for A's member to leave.
      'consumer.override.session.timeout.ms': '6000',
      'consumer.override.heartbeat.interval.ms': '500',
    },
  });
  const a = startWorker({ worker: { 'icefloe.tasks.mode': 'process', 'icefloe.tasks.id-offset': '0' }, connectors: [connector] });
  res.workers.push(a);
  await waitCommitted(a, table, produced.length, 120_000);

  const b = startWorker({ worker: { 'icefloe.tasks.mode': 'process', 'icefloe.tasks.id-offset': '1' }, connectors: [connector] });
  res.workers.push(b);
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([b.exited, new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), 60_000)))]);
  clearTimeout(timer);
  const refusal = b.lines.find((l) => l.startsWith('icefloe standalone:')) ?? '';
  t.diagnostic(refusal);
  for (const l of taskFailures(a)) t.diagnostic(`A: ${JSON.stringify(l['error'])}`);
  assert.ok(exit !== '0' && exit !== 'still running', `B refused to start (${exit})`);
  assert.match(refusal, /icefloe\.tasks\.id-offset=1: task id 1 of connector \S+ is in use by another live process/);
  assert.match(refusal, new RegExp(`transactional\\.id \\(${name}-1\\)`), 'names the transactional id the two would share');
  assert.match(refusal, /this worker's is 1\.\.2/);
  assert.deepEqual(b.logs('task process started'), [], 'B started no task: nothing was fenced');

  // A goes on with both tasks.
  produced.push(...(await produceJson(topic, PARTITIONS, batch(400, 400))));
  await waitCommitted(a, table, produced.length, 120_000);
  assert.deepEqual(taskFailures(a), [], 'no task of A failed (none was fenced)');
  await stopWorker(a);
  assert.equal(committedRecords(a, table), produced.length);
  await assertExactlyOnce(table, produced);
});
