/**
 * Task processes never outlive their worker or hang, and the worker heals them (issue 10 points 2 and 3),
 * with real worker and task processes on the real stack.
 *
 * 1. An uncaught exception in both task processes (the crash point task.after-upload with
 *    ICEFLOE_CRASH_ACTION=throw: thrown from the event loop, as a client's callback would): each process
 *    reports it and exits non-zero; the worker reports the task ended unexpectedly and starts it again
 *    after its back-off (the crash point is armed in a task's first incarnation only); the restarted tasks
 *    commit every record, exactly once by Kafka coordinates; the worker's stop is clean.
 * 2. A task that fails by a decision — a value that is not JSON under errors.tolerance=none — stays FAILED
 *    with its trace: its process exits with the decision's code and the worker does not restart it; its
 *    only task FAILED, the worker exits 1 by itself (issue 11).
 * 3. kill -9 of the worker while the broker is away and records are in the tasks' open cycles: each task
 *    process notices its worker is gone and stops its task, whose last cycle then cannot commit (its
 *    transaction's calls time out, and a timed-out abort is resumed for as long as the broker is away) —
 *    yet every task process is gone within ORPHAN_GONE_MS (it ends within its bound whatever the task is
 *    doing). The broker is started again in every exit path.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { ensureStarted, restoreServiceAfter, stopService } from '../helpers/stack-services.ts';
import { startWorker, taskFailures, untilWorkers } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';
import { ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';

const PARTITIONS = 4;
/** A task process whose worker was killed must be gone within this (its bound is 10 s at most). */
const ORPHAN_GONE_MS = 15_000;

const GROUP_SETTINGS = { 'consumer.session.timeout.ms': '6000', 'consumer.heartbeat.interval.ms': '500' };

function jsonConnector(name: string, topic: string, control: string, table: string, extra: Record<string, string> = {}): { name: string; config: Record<string, string> } {
  return sinkConnector({
    name,
    topics: topic,
    controlTopic: control,
    config: {
      'tasks.max': '2',
      ...SCHEMALESS_JSON,
      'iceberg.tables': table,
      'iceberg.tables.auto-create-enabled': 'true',
      'iceberg.control.commit.interval-ms': '1000',
      ...extra,
    },
  });
}

const batch = (from: number, n: number): { partition: number; key: string; value: unknown }[] =>
  Array.from({ length: n }, (_, i) => ({ partition: (from + i) % PARTITIONS, key: `k${from + i}`, value: { id: from + i } }));

/** The task processes the worker started (it logs each one's pid). */
function taskPids(w: WorkerProcess): number[] {
  return w.logs('task process started').map((l) => Number(l['pid']));
}

/** Alive and not a zombie (an exited child of a reaper-less init stays a zombie until reaped). */
function running(pid: number): boolean {
  try {
    const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return state !== undefined && state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

test('an uncaught exception ends the task process, which reports it; the worker restarts the task and every record lands once', { timeout: 240_000 }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('tcrash');
  const topic = unique('tcrash-src');
  const control = unique('tcrash-control');
  const table = `${uniqueIdent('e2e_tcrash')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const produced = await produceJson(topic, PARTITIONS, batch(0, 400));
  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'process', ...GROUP_SETTINGS },
    connectors: [jsonConnector(name, topic, control, table)],
    env: { ICEFLOE_CRASH_POINT: 'task.after-upload', ICEFLOE_CRASH_ACTION: 'throw' },
  });
  res.workers.push(w);
  await untilWorkers('both tasks restarted', () => w.logs('task restarted').length >= 2, [w], 120_000);
  produced.push(...(await produceJson(topic, PARTITIONS, batch(400, 400))));
  await waitCommitted(w, table, produced.length, 120_000);

  const crashed = w.logs('task process crashed');
  const ended = taskFailures(w).filter((l) => l['restarting'] === true);
  t.diagnostic(`crashes: ${JSON.stringify(crashed.map((l) => ({ task: l['task'], kind: l['kind'] })))}; restarts: ${JSON.stringify(ended.map((l) => ({ task: l['task'], retryInMs: l['retryInMs'], error: l['error'] })))}`);
  const reached = w.lines.filter((l) => l.startsWith('icefloe: crash point task.after-upload reached'));
  assert.equal(reached.length, 2, 'each first incarnation reached the crash point once, the restarted ones ran without it');
  assert.deepEqual(crashed.map((l) => l['kind']), ['uncaught exception', 'uncaught exception'], 'each process reported its uncaught exception');
  assert.deepEqual(ended.map((l) => l['task']).sort(), [0, 1], 'the worker restarted each task once');
  for (const l of ended) {
    assert.match(String(l['error']), /process exited with code 70/, 'a non-zero exit, reported');
    assert.equal(l['restarts'], 1);
  }
  await stopWorker(w);
  assert.equal(committedRecords(w, table), produced.length);
  await assertExactlyOnce(table, produced);
});

test('a task failed by a decision (a record that is not JSON, errors.tolerance=none) stays FAILED: no restart, the worker exits 1', { timeout: 180_000 }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('tfail');
  const topic = unique('tfail-src');
  const control = unique('tfail-control');
  const table = `${uniqueIdent('e2e_tfail')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const good = await produceJson(topic, 1, batch(0, 10).map((r) => ({ ...r, partition: 0 })));
  const producer = await ConfluentRecordProducer.connect({ settings: await kafkaSettings(), clientId: 'icefloe-e2e-bad' });
  await producer.send([{ topic, partition: 0, key: 'bad', value: Buffer.from('this is not json', 'utf8') }]).finally(() => producer.close());
  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'process', ...GROUP_SETTINGS },
    connectors: [jsonConnector(name, topic, control, table, { 'tasks.max': '1', 'errors.tolerance': 'none' })],
  });
  res.workers.push(w);
  let timer: NodeJS.Timeout | undefined;
  const how = await Promise.race([w.exited, new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), 90_000)))]);
  clearTimeout(timer);
  assert.equal(how, '1', `its only task FAILED for good: the worker exits 1 by itself; last lines:\n${w.lines.slice(-8).join('\n')}`);
  const failed = taskFailures(w);
  t.diagnostic(JSON.stringify(failed[0]?.['msg']));
  assert.equal(failed.length, 1, 'one failure line');
  assert.match(String(failed[0]?.['msg']), new RegExp(`^task ${name}-0 failed at ${topic}/0@${good.length}: `), 'naming the task and the record');
  assert.equal(failed[0]?.['exit'], 'code 3', 'the decision\'s exit code');
  assert.equal(failed[0]?.['restarting'], false, 'not restarted');
  assert.deepEqual(w.logs('task restarted'), []);
  assert.equal(taskPids(w).length, 1, 'one task process in all');
});

test('kill -9 of the worker while the broker is away: its task processes, unable to stop cleanly, are gone within seconds', { timeout: 240_000 }, async (t) => {
  restoreServiceAfter(t, 'kafka'); // first: the cleanup below (topics) needs the broker
  const res = await e2eResources(t);
  const name = unique('torphan');
  const topic = unique('torphan-src');
  const control = unique('torphan-control');
  const table = `${uniqueIdent('e2e_torphan')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  await produceJson(topic, PARTITIONS, []); // the topic, empty
  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'process', ...GROUP_SETTINGS },
    // Cycles end at 100 records, not by time: after the first batch each task has committed a cycle (so
    // its last cycle goes straight to its transaction), and the second batch stays in the open cycles.
    connectors: [jsonConnector(name, topic, control, table, { 'iceberg.control.commit.interval-ms': '600000', 'icefloe.commit.max-records': '100' })],
  });
  res.workers.push(w);
  // Both tasks hold partitions before the first batch, so each reads 200 records of it.
  const assigned = (task: number): boolean => w.logs('partitions assigned').some((l) => l['task'] === task && Array.isArray(l['partitions']) && l['partitions'].length > 0);
  await untilWorkers('partitions in each task', () => assigned(0) && assigned(1), [w], 90_000);
  await sleep(1_000);
  await produceJson(topic, PARTITIONS, batch(0, 400));
  const committedBy = (task: number): boolean => w.logs('cycle committed').some((l) => l['task'] === task);
  await untilWorkers('a committed cycle in each task', () => committedBy(0) && committedBy(1), [w], 90_000);
  await produceJson(topic, PARTITIONS, batch(400, 40));
  await sleep(2_000); // the second batch is in the open cycles
  const pids = taskPids(w);
  assert.equal(pids.length, 2);
  let goneAfterMs: number | undefined;
  try {
    stopService('kafka');
    const killedAt = Date.now();
    process.kill(w.child.pid as number, 'SIGKILL'); // the worker only, not its process group
    await w.exited;
    while (pids.some(running) && Date.now() - killedAt < ORPHAN_GONE_MS + 30_000) await sleep(200);
    goneAfterMs = pids.some(running) ? undefined : Date.now() - killedAt;
  } finally {
    for (const pid of pids.filter(running)) process.kill(pid, 'SIGKILL'); // never leave one behind
    ensureStarted('kafka');
  }
  t.diagnostic(`task processes gone ${goneAfterMs ?? 'never'} ms after the worker was killed`);
  assert.ok(goneAfterMs !== undefined && goneAfterMs <= ORPHAN_GONE_MS, `every task process was gone within ${ORPHAN_GONE_MS} ms (took ${goneAfterMs ?? 'longer than 45 s'})`);
  const orphaned = w.logs('the worker is gone: stopping the task; the process ends within the bound whether or not it stopped');
  assert.equal(orphaned.length, 2, 'each task process noticed its worker was gone');
});
