/**
 * Distributed mode under chaos (issue 13): three `icefloe distributed` workers share one connector
 * (tasks.max=6 over 12 partitions, every record routed to 2 tables) while records flow, and the cluster
 * goes through, in turn: a worker killed with kill -9 (its tasks must run elsewhere within seconds), that
 * worker's replacement joining (tasks rebalance), a Redis FLUSHALL (nobody's view may change), a Redis
 * restart, and a rolling restart (SIGTERM one worker, start a new one). At the end each table holds every
 * produced record exactly once, counted by Kafka coordinates, and every worker's REST status shows the
 * connector and its 6 tasks RUNNING on live workers.
 *
 * Sized for CI: 8 rounds of ICEFLOE_CLUSTER_CHAOS_RECORDS records (default 2,400) and one kill -9;
 * ICEFLOE_CLUSTER_CHAOS_KILLS adds kill rounds (a random worker each, 2 rounds of records per kill). The long
 * version (24 rounds of 42,000: 1M records, 9 kills): scripts/chaos-cluster.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterNames, flushRedis, http, runningOn, startClusterWorker, waitCommittedAcross, waitStatuses, workerIdOf } from '../helpers/cluster.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, uniqueIdent } from '../helpers/sink-e2e.ts';
import { ensureStarted, restoreServiceAfter, stopService } from '../helpers/stack-services.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const PER_ROUND = Number(process.env['ICEFLOE_CLUSTER_CHAOS_RECORDS'] ?? '2400');
const EXTRA_KILLS = Number(process.env['ICEFLOE_CLUSTER_CHAOS_KILLS'] ?? '0');
const PARTITIONS = 12;
const TASKS = 6;

test('three workers share a connector through kill -9, a Redis flush and restart, and a rolling restart: every record once in both tables, every task RUNNING', { timeout: 1_800_000 }, async (t) => {
  const res = await e2eResources(t);
  restoreServiceAfter(t, 'redis');
  const n = clusterNames('clchaos');
  const topic = unique('clchaos-src');
  const control = unique('clchaos-control');
  const ns = uniqueIdent('e2e_clchaos');
  const tables = [`${ns}.a`, `${ns}.b`];
  res.topics.push(n.configTopic, n.statusTopic, topic, control);
  res.tables.push(...tables);

  const everyProcess: WorkerProcess[] = [];
  let live: { w: WorkerProcess; url: string }[] = [];
  const start = async (): Promise<{ w: WorkerProcess; url: string }> => {
    const w = startClusterWorker(n);
    everyProcess.push(w);
    res.workers.push(w);
    const url = await w.restUrl();
    await w.waitFor(/"msg":"joined the cluster"/, 120_000);
    const entry = { w, url };
    live.push(entry);
    return entry;
  };
  const ids = (): string[] => live.map((l) => workerIdOf(l.url));
  const balanced = (what: string, timeoutMs = 120_000): Promise<unknown> => waitStatuses(live.map((l) => l.url), name, what, runningOn(ids(), TASKS), timeoutMs);

  const produced: Coordinates[] = [];
  let next = 0;
  const round = async (): Promise<void> => {
    const batch = Array.from({ length: PER_ROUND }, (_, i) => ({ partition: (next + i) % PARTITIONS, key: `k${next + i}`, value: { id: next + i } }));
    next += PER_ROUND;
    produced.push(...(await produceJson(topic, PARTITIONS, batch)));
  };

  for (let i = 0; i < 3; i++) await start();
  const name = unique('clchaos');
  const config = sinkConnector({
    name,
    topics: topic,
    controlTopic: control,
    config: { ...SCHEMALESS_JSON, 'tasks.max': String(TASKS), 'iceberg.tables': tables.join(','), 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '2000' },
  }).config;
  await round(); // the topic exists (12 partitions) before the connector subscribes
  const created = await http('POST', `${(live[0] as { url: string }).url}/connectors`, { name, config });
  assert.equal(created.status, 201, `${JSON.stringify(created.json)}; last warnings and errors:\n${live.flatMap((l) => l.w.lines.filter((x) => /"level":(40|50)/.test(x)).slice(-5)).join('\n')}`);
  await balanced('6 tasks RUNNING, 2 on each of the 3 workers');
  await round();

  // kill -9: the dead worker's tasks run on the other two within seconds.
  for (let k = 0; k <= EXTRA_KILLS; k++) {
    const victim = live[Math.floor(Math.random() * live.length)] as { w: WorkerProcess; url: string };
    const killedAt = Date.now();
    await victim.w.kill();
    live = live.filter((l) => l !== victim);
    await round();
    await balanced('the killed worker\'s tasks RUNNING on the others');
    const movedMs = Date.now() - killedAt;
    t.diagnostic(`kill -9 #${k + 1} (${workerIdOf(victim.url)}): every task RUNNING on the ${live.length} other workers ${movedMs} ms after the kill`);
    // Its replacement joins and takes its share without stopping the others.
    const joinedAt = Date.now();
    await start();
    await balanced('3 workers again, 2 tasks each');
    t.diagnostic(`a new worker took its share in ${Date.now() - joinedAt} ms`);
    await round();
  }

  // A Redis FLUSHALL changes nobody's view: everyone re-registers within a heartbeat.
  const linesBefore = live.map((l) => l.w.lines.length);
  await flushRedis();
  await round();
  await sleep(4_000); // longer than the session time-out: a view that dropped a member would show by now
  const changed = live.flatMap((l, i) => l.w.lines.slice(linesBefore[i]).filter((line) => line.includes('"msg":"cluster members changed"')));
  assert.deepEqual(changed, [], 'a Redis flush made a worker change its view of the cluster');
  await balanced('every task RUNNING after the flush');

  // A Redis restart: commits wait for it at most; nothing moves for good.
  stopService('redis');
  await round();
  await sleep(2_000);
  ensureStarted('redis');
  await balanced('every task RUNNING after the Redis restart');
  await round();

  // A rolling restart: SIGTERM one worker (it commits its cycles, releases its leases, leaves), start a new one.
  const leaving = live[0] as { w: WorkerProcess; url: string };
  const how = await leaving.w.stop(120_000);
  assert.equal(how, '0', `the SIGTERMed worker exited ${how}; last lines:\n${leaving.w.lines.slice(-10).join('\n')}`);
  live = live.filter((l) => l !== leaving);
  await round();
  await start();
  await balanced('3 workers after the rolling restart');
  await round();

  await waitCommittedAcross(() => everyProcess, tables, produced.length, 300_000);
  const statuses = await balanced('the end: connector and 6 tasks RUNNING, as every worker reports it');
  t.diagnostic(`final placement: ${JSON.stringify((statuses as { tasks: { id: number; worker_id: string }[] }[])[0]?.tasks.map((x) => `${x.id}@${x.worker_id}`))}`);
  for (const table of tables) {
    const report = await assertExactlyOnce(table, produced);
    t.diagnostic(`${table}: ${report.rows} rows (${produced.length} produced) in ${report.snapshots} snapshots`);
  }
  for (const l of live) assert.equal(await l.w.stop(120_000), '0');
});
