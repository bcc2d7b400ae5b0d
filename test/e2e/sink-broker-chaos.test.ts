/**
 * No silent stall (issue 24): the broker frozen and restarted, one after the other, ROUNDS times under a
 * 2-task worker, and after every round each task — by its id — commits a cycle with records again, by
 * itself; at the end every record is in the table exactly once by its Kafka coordinates.
 *
 * A round: a batch is produced, the tasks read it into their open cycles, and after a random 0–1 s (so the
 * outage catches a cycle at a different step each time: a poll, the upload, begin, send, send-offsets,
 * commit) the broker is frozen (SIGSTOP, odd rounds: its connections stay open and its requests time out;
 * KRaft fences it on its return and the leader epochs move on) for FREEZE_MS, or stopped and started
 * (`scripts/stack`, even rounds: a controlled shutdown, every connection cut) after DOWN_MS. Then batches
 * are produced, one every 2 s, until each task has committed a cycle holding records since the broker came
 * back: a task stuck after the outage (no poll, so its consumer cannot rejoin and the other task takes every
 * partition) fails the round with its id and its last lines. `producer.override.transaction.timeout.ms` is
 * 6 s (the transactional calls time out after 3 s), shorter than each outage.
 *
 * The broker is shared: this file runs alone (scripts/run-tests.ts), keeps each outage short, and sends
 * SIGCONT and starts Kafka in every exit path. librdkafka's group and transaction lines (`cgrp,eos`) of every
 * client go to files (test/helpers/client-logs.ts); a round that fails shows their tails.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { clientLogs } from '../helpers/client-logs.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { ensureStarted, restoreServiceAfter, stopService } from '../helpers/stack-services.ts';
import { startWorker, taskFailures, untilWorkers } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const ROUNDS = Number(process.env['ICEFLOE_CHAOS_ROUNDS'] ?? 10);
const FREEZE_MS = 8_000;
const DOWN_MS = 3_000;
const PARTITIONS = 4;
const BATCH = 200;
/** How long after the broker's return each task has to commit a cycle with records. */
const ROUND_BOUND_MS = 90_000;

function brokerPid(): number {
  const pid = Number(readFileSync(join(stackEndpoints().run, 'pids', 'kafka-1.pid'), 'utf8').trim());
  if (!Number.isSafeInteger(pid) || pid <= 1) throw new Error(`no Kafka broker pid in ${stackEndpoints().run}/pids/kafka-1.pid`);
  return pid;
}

/** Per task id: cycles committed with records among the worker's lines from `from` on. */
function cyclesWithRecords(w: WorkerProcess, from: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const line of w.lines.slice(from)) {
    if (!line.startsWith('{') || !line.includes('"msg":"cycle committed"')) continue;
    const l = JSON.parse(line) as Record<string, unknown>;
    if (Number(l['records']) > 0) out.set(Number(l['task']), (out.get(Number(l['task'])) ?? 0) + 1);
  }
  return out;
}

/** Records in the tasks' committed cycles (each cycle's records are announced once). */
function cycleRecords(w: WorkerProcess): number {
  return w.logs('cycle committed').reduce((n, l) => n + Number(l['records']), 0);
}

test(`the broker frozen and restarted in turn ${ROUNDS} times under a 2-task worker: each task commits again after every round, every record once`, { timeout: 420_000 }, async (t) => {
  restoreServiceAfter(t, 'kafka'); // first: the cleanup below (topics) needs the broker
  const res = await e2eResources(t);
  const name = unique('bchaos');
  const topic = unique('bchaos-src');
  const control = unique('bchaos-control');
  const table = `${uniqueIdent('e2e_bchaos')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  let next = 0;
  const batch = (n: number): { partition: number; key: string; value: unknown }[] =>
    Array.from({ length: n }, () => {
      const id = next++;
      return { partition: id % PARTITIONS, key: `k${id}`, value: { id } };
    });
  const produced: Coordinates[] = await produceJson(topic, PARTITIONS, batch(BATCH));

  // librdkafka's group and transaction lines of every client go to files: a round that fails shows what
  // the stuck task's consumer and producer were doing (the stall of issue 24 was never seen with them on).
  const logs = clientLogs();
  const w = startWorker({
    env: logs.env,
    worker: {
      'icefloe.tasks.mode': 'process',
      // A member whose broker went away is dropped 6 s after the coordinator is back, and the clients
      // reconnect within a second: what the rounds wait for is the tasks' own recovery.
      'consumer.session.timeout.ms': '6000',
      'consumer.heartbeat.interval.ms': '500',
      'consumer.reconnect.backoff.max.ms': '1000',
      'producer.reconnect.backoff.max.ms': '1000',
      'admin.reconnect.backoff.max.ms': '1000',
      ...logs.props,
    },
    connectors: [
      sinkConnector({
        name,
        topics: topic,
        controlTopic: control,
        config: {
          'tasks.max': '2',
          ...SCHEMALESS_JSON,
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.control.commit.interval-ms': '2000',
          'producer.override.transaction.timeout.ms': '6000',
        },
      }),
    ],
  });
  res.workers.push(w);
  await waitCommitted(w, table, produced.length, 120_000);

  let frozen: number | undefined;
  t.after(() => {
    // Never leave the shared broker stopped.
    if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
  });
  const rounds: { round: number; outage: string; backMs: number; batches: number }[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const outage = round % 2 === 1 ? 'freeze' : 'restart';
    produced.push(...(await produceJson(topic, PARTITIONS, batch(BATCH))));
    await sleep(Math.floor(Math.random() * 1_000));
    if (outage === 'freeze') {
      frozen = brokerPid();
      process.kill(frozen, 'SIGSTOP');
      try {
        await sleep(FREEZE_MS);
      } finally {
        process.kill(frozen, 'SIGCONT');
        frozen = undefined;
      }
    } else {
      try {
        stopService('kafka');
        await sleep(DOWN_MS);
      } finally {
        ensureStarted('kafka');
      }
    }
    const back = Date.now();
    const from = w.lines.length;
    // Every task commits a cycle with records after the round: batches over every partition until each has.
    let batches = 0;
    const deadline = back + ROUND_BOUND_MS;
    while (cyclesWithRecords(w, from).size < 2) {
      const failed = taskFailures(w);
      assert.deepEqual(failed, [], `round ${round} (${outage}): no task fails`);
      if (Date.now() > deadline) {
        const done = cyclesWithRecords(w, from);
        const idle = [0, 1].filter((id) => !done.has(id));
        throw new Error(`round ${round} (${outage}): task(s) ${idle.join(', ')} committed no cycle within ${ROUND_BOUND_MS} ms of the broker's return (${batches} batches produced meanwhile; cycles per task: ${JSON.stringify([...done])})\nlast lines:\n${w.lines.slice(-30).join('\n')}\n${logs.tails()}`);
      }
      produced.push(...(await produceJson(topic, PARTITIONS, batch(40))));
      batches++;
      await sleep(2_000);
    }
    await untilWorkers(`round ${round}: every record in a committed cycle`, () => cycleRecords(w) >= produced.length, [w], ROUND_BOUND_MS);
    rounds.push({ round, outage, backMs: Date.now() - back, batches });
  }
  t.diagnostic(`rounds (ms from the broker's return until each task committed a cycle with records, and every record was in a cycle): ${JSON.stringify(rounds)}`);
  const abandoned = w.logs('cycle abandoned; reading again from the committed offsets');
  t.diagnostic(`producers re-created: ${w.logs('transactional producer re-created').length}; calls resumed: ${w.logs('transaction call timed out; resuming it').length}; cycles abandoned: ${abandoned.length}`);
  t.diagnostic(`abandoned because: ${JSON.stringify([...new Set(abandoned.map((l) => String(l['error']).replace(/\d+/g, 'N')))].slice(0, 10))}`);
  assert.deepEqual(taskFailures(w), [], 'no task failed');
  assert.deepEqual(w.logs('task restarted'), [], 'the worker restarted no task: the tasks rode the outages out');
  assert.deepEqual(w.logs('task process crashed'), [], 'no task process crashed');

  await stopWorker(w);
  assert.equal(committedRecords(w, table), produced.length);
  const report = await assertExactlyOnce(table, produced);
  t.diagnostic(`${table}: ${report.rows} rows in ${report.snapshots} snapshots`);
});
