/**
 * Distributed mode under a long broker outage (issue 24 part 3), on the real broker: two workers, a
 * connector with 2 tasks, the broker stopped for 70 s and started again.
 *
 * - During the outage every worker's status names it: statuses travel through the status topic, so before
 *   the fix every worker kept showing the connector and its tasks RUNNING with no trace at all.
 * - After it, the committer commits within 2 commit intervals of the tasks' first announcements: before the
 *   fix its round back-off had grown to 30 s over the outage and the first table commit came 40 s after
 *   the broker was back, 30 s after both tasks had announced.
 * - Every record lands exactly once.
 *
 * Stopping the broker is allowed here only because this file runs alone (scripts/run-tests.ts `alone`);
 * the broker is started again in every exit path.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterNames, connectorStatus, http, runningOn, startClusterWorker, waitStatuses, workerIdOf } from '../helpers/cluster.ts';
import type { StatusBody } from '../helpers/cluster.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, uniqueIdent } from '../helpers/sink-e2e.ts';
import { ensureStarted, restoreServiceAfter, stopService } from '../helpers/stack-services.ts';
import { untilWorkers } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const PARTITIONS = 4;
const BATCH = 400;
const COMMIT_INTERVAL_MS = 4_000;
const DOWN_MS = 70_000;

/** Each worker's log lines with `msg`, with their time, after line `from` of that worker. */
function times(workers: readonly WorkerProcess[], msg: string, from: readonly number[]): { readonly atMs: number; readonly line: Record<string, unknown> }[] {
  return workers.flatMap((w, i) => {
    const out: { atMs: number; line: Record<string, unknown> }[] = [];
    for (const l of w.lines.slice(from[i] ?? 0)) {
      if (!l.startsWith('{')) continue;
      const line = JSON.parse(l) as Record<string, unknown>;
      if (line['msg'] === msg) out.push({ atMs: Number(line['time']), line });
    }
    return out;
  }).sort((a, b) => a.atMs - b.atMs);
}

test('a 70 s broker outage under two workers: every worker\'s status names it; after it the committer commits within 2 commit intervals of the tasks; every record once', { timeout: 600_000 }, async (t) => {
  restoreServiceAfter(t, 'kafka'); // first: the cleanup below (topics) needs the broker
  const res = await e2eResources(t);
  const n = clusterNames('clout');
  const topic = unique('clout-src');
  const control = unique('clout-control');
  const table = `${uniqueIdent('e2e_clout')}.events`;
  res.topics.push(n.configTopic, n.statusTopic, topic, control);
  res.tables.push(table);
  const batch = (from: number): { partition: number; key: string; value: unknown }[] =>
    Array.from({ length: BATCH }, (_, i) => ({ partition: (from + i) % PARTITIONS, key: `k${from + i}`, value: { id: from + i } }));
  const produced: Coordinates[] = await produceJson(topic, PARTITIONS, batch(0));
  const clients = {
    // Clients reconnect within a second of the broker's return (not librdkafka's 10 s back-off): the
    // recovery measured is the committer's, not a reconnect timer's.
    'consumer.reconnect.backoff.max.ms': '1000',
    'producer.reconnect.backoff.max.ms': '1000',
    'admin.reconnect.backoff.max.ms': '1000',
  };
  const workers = [0, 1].map(() => startClusterWorker(n, { worker: clients }));
  res.workers.push(...workers);
  const urls = await Promise.all(workers.map((w) => w.restUrl()));
  await Promise.all(workers.map((w) => w.waitFor(/"msg":"joined the cluster"/)));
  const ids = urls.map(workerIdOf);
  const name = unique('clout');
  const created = await http('POST', `${urls[0]}/connectors`, sinkConnector({
    name,
    topics: topic,
    controlTopic: control,
    config: { ...SCHEMALESS_JSON, 'tasks.max': '2', 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': String(COMMIT_INTERVAL_MS), 'producer.override.transaction.timeout.ms': '10000' },
  }));
  assert.equal(created.status, 201, JSON.stringify(created.json));
  await waitStatuses(urls, name, '2 tasks RUNNING, one on each worker', runningOn(ids, 2), 120_000);
  const committedRows = (): number => times(workers, 'table committed', [0, 0]).reduce((s, x) => s + Number(x.line['records'] ?? 0), 0);
  await untilWorkers('the first batch committed', () => committedRows() >= produced.length, workers, 120_000);

  // The outage. Every worker's status must name it while it lasts.
  const named = (s: StatusBody | undefined, id: string): boolean =>
    s !== undefined && [s.connector, ...s.tasks].every((u) => (u.trace ?? '').includes(`Kafka unreachable from worker ${id}`));
  const namedAt: (number | undefined)[] = [undefined, undefined];
  let stoppedAt = 0;
  let backAt: number;
  const from: number[] = [];
  try {
    stoppedAt = Date.now();
    stopService('kafka'); // returns once the broker is down (a controlled shutdown: seconds)
    while (Date.now() - stoppedAt < DOWN_MS) {
      await Promise.all(urls.map(async (url, i) => {
        if (namedAt[i] === undefined && named(await connectorStatus(url, name), ids[i] as string)) namedAt[i] = Date.now() - stoppedAt;
      }));
      await sleep(1_000);
    }
  } finally {
    ensureStarted('kafka');
    backAt = Date.now();
    from.push(...workers.map((w) => w.lines.length));
  }
  const last = await Promise.all(urls.map((url) => connectorStatus(url, name)));
  t.diagnostic(`status named the outage ${JSON.stringify(namedAt)} ms after the broker stopped`);
  assert.ok(namedAt.every((x) => x !== undefined), `every worker's status names the outage while it lasts; after it: ${JSON.stringify(last)}`);

  // After it: the tasks announce again, and the committer follows within 2 commit intervals.
  produced.push(...(await produceJson(topic, PARTITIONS, batch(BATCH))));
  await untilWorkers('every record committed after the outage', () => committedRows() >= produced.length, workers, 180_000);
  const announced = times(workers, 'cycle committed', from).filter((x) => Number(x.line['records'] ?? 0) > 0);
  const commits = times(workers, 'table committed', from);
  const firstAnnounced = announced[0]?.atMs ?? Number.NaN;
  const firstCommit = commits.find((c) => c.atMs >= firstAnnounced)?.atMs ?? Number.NaN;
  t.diagnostic(`after the broker's return: first announcement +${firstAnnounced - backAt} ms, first table commit after it +${firstCommit - backAt} ms`);
  assert.ok(firstCommit - firstAnnounced <= 2 * COMMIT_INTERVAL_MS, `the first table commit came ${firstCommit - firstAnnounced} ms after the tasks' first announcement (at most ${2 * COMMIT_INTERVAL_MS})`);
  await waitStatuses(urls, name, 'no trace of the outage any more', (s) => [s.connector, ...s.tasks].every((u) => !(u.trace ?? '').includes('Kafka unreachable')), 60_000);
  const report = await assertExactlyOnce(table, produced);
  t.diagnostic(`${report.rows} rows in ${report.snapshots} snapshots`);
  for (const w of workers) assert.equal(await w.stop(120_000), '0');
});
