/**
 * A broker restart is ridden out by the task itself (issue 10 point 1), on the real broker.
 *
 * A 2-task worker (task processes) consumes a 4-partition topic with a 4 s commit interval. Five times: a
 * batch is produced, the task processes read it into their open cycles, and 1 s later the broker is
 * stopped (`scripts/stack stop kafka`: a controlled shutdown, its data kept) for DOWN_MS and started
 * again, so most cycles end — begin, send, send-offsets, commit — against a broker that is away. Whatever each stop hits —
 * a transaction in flight, an offset commit, a poll — the tasks must come back by themselves: after each
 * restart their committed cycles hold every record produced so far; no task fails, the worker restarts
 * none (that would be the worker healing a task, not the task riding the restart out), each task commits
 * cycles after the last restart, and at the end every produced record is in the table exactly once by its
 * Kafka coordinates (the committer rides the restarts out too).
 *
 * Before the fix the tasks met the broker's answers to a transaction cut by the outage —
 * INVALID_TXN_STATE after send-offsets failed on the transport, then the abort and the next begin failed
 * (librdkafka's fatal state), or a transaction the coordinator timed out (a fence) — as fatal, and died.
 * Now the channel re-creates the producer (same transactional.id) and re-reads from the committed
 * offsets. `producer.override.transaction.timeout.ms` is 10 s (so the transactional calls time out after
 * 5 s), shorter than the outage: every stop that catches an open transaction also lets the coordinator
 * time it out, the case that read as a fence.
 *
 * Restarting the broker is allowed here only because this file runs alone (the e2e suite's `alone` list in
 * scripts/run-tests.ts), or on a helper's second stack (ICEFLOE_RUN); the broker is started again in every
 * exit path.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { clientLogs } from '../helpers/client-logs.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { ensureStarted, restoreServiceAfter, stopService } from '../helpers/stack-services.ts';
import { startWorker, taskFailures, untilWorkers } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

/** Records in the tasks' committed cycles (each cycle's records are announced once). */
function cycleRecords(w: WorkerProcess): number {
  return w.logs('cycle committed').reduce((n, l) => n + Number(l['records']), 0);
}

const RESTARTS = 5;
/** A batch waits up to this long in its task's open cycle: the broker is stopped 1 s after producing it. */
const COMMIT_INTERVAL_MS = 4_000;
const STOP_AFTER_MS = 1_000;
const DOWN_MS = 10_000;
const PARTITIONS = 4;
const BATCH = 400;

test('a broker stopped and started five times under a 2-task worker: the tasks ride it out themselves, every record once', { timeout: 600_000 }, async (t) => {
  restoreServiceAfter(t, 'kafka'); // first: the cleanup below (topics) needs the broker
  const res = await e2eResources(t);
  const name = unique('brestart');
  const topic = unique('brestart-src');
  const control = unique('brestart-control');
  const table = `${uniqueIdent('e2e_brestart')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const batch = (from: number): { partition: number; key: string; value: unknown }[] =>
    Array.from({ length: BATCH }, (_, i) => ({ partition: (from + i) % PARTITIONS, key: `k${from + i}`, value: { id: from + i } }));
  const produced: Coordinates[] = await produceJson(topic, PARTITIONS, batch(0));

  const logs = clientLogs(); // librdkafka's group and transaction lines, shown if a task stays idle
  const w = startWorker({
    env: logs.env,
    worker: {
      ...logs.props,
      'icefloe.tasks.mode': 'process',
      // A member whose broker went away is dropped 6 s after the coordinator is back (not librdkafka's
      // 45 s), and the clients reconnect within a second (not its 10 s back-off): the recovery the test
      // waits for is the tasks', not the group's or a reconnect timer's.
      'consumer.session.timeout.ms': '6000',
      'consumer.heartbeat.interval.ms': '500',
      'consumer.reconnect.backoff.max.ms': '1000',
      'producer.reconnect.backoff.max.ms': '1000',
      'admin.reconnect.backoff.max.ms': '1000',
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
          'iceberg.control.commit.interval-ms': String(COMMIT_INTERVAL_MS),
          'producer.override.transaction.timeout.ms': '10000',
        },
      }),
    ],
  });
  res.workers.push(w);
  await waitCommitted(w, table, produced.length, 120_000);

  const rounds: { round: number; recoveredMs: number }[] = [];
  let lastRestartLine = 0;
  for (let round = 1; round <= RESTARTS; round++) {
    produced.push(...(await produceJson(topic, PARTITIONS, batch(round * BATCH))));
    // The tasks have read the batch (fetches take well under a second) into their open cycles, which end
    // at a random point of their 4 s interval: most likely while the broker is down.
    await sleep(STOP_AFTER_MS);
    let startedAt: number;
    try {
      stopService('kafka');
      await sleep(DOWN_MS);
    } finally {
      ensureStarted('kafka');
      startedAt = Date.now();
    }
    lastRestartLine = w.lines.length;
    // The tasks' side is what the restart tests: their cycles hold every record again (the committer,
    // which retries on its own schedule, catches up meanwhile; the table is checked at the end).
    await untilWorkers(`round ${round}: every record in a committed cycle`, () => cycleRecords(w) >= produced.length, [w], 180_000);
    rounds.push({ round, recoveredMs: Date.now() - startedAt });
  }
  // Both tasks work after the last restart, and nobody had to restart them: batches over every partition
  // until each task has committed a cycle. More than one batch may be needed: a member the coordinator
  // dropped while the broker was away rejoins on its own, and until it has, the other task holds every
  // partition and reads the whole batch (correct, but it proves nothing about the rejoining task).
  const cyclesByTask = new Map<unknown, number>();
  let batchesAfter = 0;
  for (let extra = 1; extra <= 6 && cyclesByTask.size < 2; extra++) {
    batchesAfter = extra;
    produced.push(...(await produceJson(topic, PARTITIONS, batch((RESTARTS + extra) * BATCH))));
    await waitCommitted(w, table, produced.length, 120_000);
    cyclesByTask.clear();
    for (const line of w.lines.slice(lastRestartLine)) {
      if (!line.startsWith('{')) continue;
      const l = JSON.parse(line) as Record<string, unknown>;
      if (l['msg'] === 'cycle committed') cyclesByTask.set(l['task'], (cyclesByTask.get(l['task']) ?? 0) + 1);
    }
    if (cyclesByTask.size < 2) await sleep(3_000);
  }

  const resets = w.logs('transactional producer re-created');
  const abortsFailed = w.logs('abort failed; the producer is re-created before the next cycle');
  const abandoned = w.logs('cycle abandoned; reading again from the committed offsets');
  t.diagnostic(`tasks' recovery after each restart (ms from the broker's start to every record in a committed cycle): ${JSON.stringify(rounds)}`);
  t.diagnostic(`batches produced after the last restart until both tasks had committed a cycle: ${batchesAfter}`);
  t.diagnostic(`producers re-created: ${resets.length} (${JSON.stringify(resets.map((l) => l['task']))}); aborts failed: ${abortsFailed.length}; cycles abandoned: ${abandoned.length}`);
  t.diagnostic(`abandoned because: ${JSON.stringify([...new Set(abandoned.map((l) => String(l['error']).replace(/\d+/g, 'N')))].slice(0, 8))}`);
  const cut = abandoned.length + abortsFailed.length + w.logs('transaction call timed out; resuming it').length;
  assert.ok(cut > 0, 'the stops caught cycles in their transaction (the scenario under test happened)');
  assert.deepEqual(taskFailures(w), [], 'no task failed');
  assert.deepEqual(w.logs('task restarted'), [], 'the worker restarted no task: the tasks rode the restarts out');
  assert.deepEqual(w.logs('task process crashed'), [], 'no task process crashed');
  assert.deepEqual([...cyclesByTask.keys()].sort(), [0, 1], `both tasks commit after the last restart: ${JSON.stringify([...cyclesByTask])}\n${cyclesByTask.size < 2 ? logs.tails(40) : ''}`);

  await stopWorker(w);
  assert.equal(committedRecords(w, table), produced.length);
  const report = await assertExactlyOnce(table, produced);
  t.diagnostic(`${table}: ${report.rows} rows in ${report.snapshots} snapshots`);
});
