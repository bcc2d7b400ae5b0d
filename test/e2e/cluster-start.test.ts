/**
 * Distributed mode, issue 24 part 3 ("the status tells the truth"), on the real stack: three workers
 * started at the same moment, a connector with 4 tasks created as soon as the first one answers. Before
 * the join grace, each worker started tasks on a view that had not converged (one, alone in its view,
 * started all 4), and 3 of 4 tasks were fenced and restarted while every status said RUNNING.
 *
 * Checked: no worker logs a fenced task; each task starts exactly once (on its final owner); the status of
 * every worker, sampled every 250 ms, never shows a task RUNNING on a worker before that worker's log says
 * the task started there; every record lands exactly once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterNames, connectorStatus, http, runningOn, startClusterWorker, waitStatuses, workerIdOf } from '../helpers/cluster.ts';
import type { StatusBody } from '../helpers/cluster.ts';
import { assertExactlyOnce, exactlyOnceReport } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, uniqueIdent } from '../helpers/sink-e2e.ts';

const PARTITIONS = 4;
const TASKS = 4;

test('three workers started at the same moment, a connector created at once: no task fenced, each started once, no status shows RUNNING before the task runs', { timeout: 600_000 }, async (t) => {
  const res = await e2eResources(t);
  const n = clusterNames('clst');
  const topic = unique('clst-src');
  const control = unique('clst-control');
  const table = `${uniqueIdent('e2e_clst')}.events`;
  res.topics.push(n.configTopic, n.statusTopic, topic, control);
  res.tables.push(table);
  const produced: Coordinates[] = await produceJson(topic, PARTITIONS, Array.from({ length: 400 }, (_, i) => ({ partition: i % PARTITIONS, key: `k${i}`, value: { id: i } })));
  const name = unique('clst');
  const connector = sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'tasks.max': String(TASKS), 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1500' } });

  const workers = [0, 1, 2].map(() => startClusterWorker(n));
  res.workers.push(...workers);
  // Created as soon as the first REST port answers (the request waits for that worker's join), while the
  // others may still be joining.
  const created = await http('POST', `${await (workers[0] as (typeof workers)[number]).restUrl()}/connectors`, connector);
  assert.equal(created.status, 201, JSON.stringify(created.json));
  const urls = await Promise.all(workers.map((w) => w.restUrl()));
  const ids = urls.map(workerIdOf);

  /** Every worker's status every 250 ms, with the time its answer arrived. */
  const samples: { readonly url: string; readonly atMs: number; readonly status: StatusBody }[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await Promise.all(urls.map(async (url) => {
        const status = await connectorStatus(url, name);
        if (status !== undefined) samples.push({ url, atMs: Date.now(), status });
      }));
      await sleep(250);
    }
  })();
  try {
    await waitStatuses(urls, name, `${TASKS} tasks RUNNING over 3 workers`, runningOn(ids, TASKS), 120_000);
    const deadline = Date.now() + 180_000;
    for (;;) {
      const r = await exactlyOnceReport(table, produced).catch(() => undefined);
      if (r !== undefined && r.rows >= produced.length) break;
      assert.ok(Date.now() < deadline, `${table}: ${r?.rows ?? 'no'} rows of ${produced.length}`);
      await sleep(2_000);
    }
    await sleep(3_000); // a few more samples with everything settled
  } finally {
    sampling = false;
    await sampler;
  }

  const fenced = workers.flatMap((w, i) => w.lines.filter((l) => /fenced/i.test(l)).map((l) => `${ids[i]}: ${l}`));
  assert.deepEqual(fenced, [], 'no task fenced at start');
  /** Each worker's 'task started' lines of the connector: task → time. */
  const starts = workers.map((w) => w.logs('task started').filter((l) => l['connector'] === name).map((l) => ({ task: Number(l['task']), atMs: Number(l['time']) })));
  const perTask = Array.from({ length: TASKS }, (_, task) => starts.flatMap((s, i) => s.filter((x) => x.task === task).map(() => ids[i])));
  assert.deepEqual(perTask.map((w) => w.length), Array(TASKS).fill(1), `each task started once: ${JSON.stringify(perTask)}`);
  const failures = workers.flatMap((w) => w.lines.filter((l) => l.includes(`task ${name}-`) && l.includes(' failed')));
  assert.deepEqual(failures, [], 'no task failed');
  // No sample shows a task RUNNING on a worker that had not started it by the time the answer came.
  const lies: string[] = [];
  for (const s of samples) {
    for (const task of s.status.tasks) {
      if (task.state !== 'RUNNING') continue;
      const w = ids.indexOf(task.worker_id);
      const started = w < 0 ? undefined : starts[w]?.find((x) => x.task === task.id);
      if (started === undefined || started.atMs > s.atMs) lies.push(`${s.url} at ${s.atMs}: task ${task.id} RUNNING on ${task.worker_id}, started there ${started === undefined ? 'never' : `at ${started.atMs}`}`);
    }
  }
  assert.deepEqual(lies, [], 'a status never shows RUNNING for a task that is not running');
  const firstStart = Math.min(...starts.flat().map((x) => x.atMs));
  t.diagnostic(`${samples.length} status samples; tasks started ${firstStart - Number(workers[0]?.logs('joined the cluster')[0]?.['time'] ?? firstStart)} ms after the first worker joined (the join grace)`);
  const report = await assertExactlyOnce(table, produced);
  t.diagnostic(`${report.rows} rows in ${report.snapshots} snapshots`);
  for (const w of workers) assert.equal(await w.stop(120_000), '0');
});
