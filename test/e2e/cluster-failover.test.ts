/**
 * Distributed mode: the committer and placement under failure (issue 13), on the real stack.
 *
 * 1. The worker holding a connector's committer lease dies at the named crash point
 *    `committer.after-catalog-commit` (the catalog applied a commit the worker never saw answered): another
 *    worker takes the lease once it expires and the table ends with every record exactly once.
 * 2. A committer frozen (SIGSTOP, crash action `stop` at `committer.before-catalog-commit`, just before its
 *    lease check) past its lease, while another worker takes over and commits, then thawed: the stale seat
 *    commits nothing (its lease check fails) — the worker commits again only after seating anew.
 * 3. Scale out from 1 to 3 workers and back to 1 while records flow: tasks rebalance, status follows, every
 *    record exactly once; a cluster-scoped log level set on one worker reaches all three.
 *
 * Which worker holds a committer is decided by placement (rendezvous hashing over the worker ids): the tests
 * pick a connector name that placement gives to the worker they arm.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { clusterNames, http, nameCommittedBy, runningOn, startClusterWorker, waitStatuses, workerIdOf } from '../helpers/cluster.ts';
import type { ClusterNames } from '../helpers/cluster.ts';
import { assertExactlyOnce, exactlyOnceReport } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, uniqueIdent } from '../helpers/sink-e2e.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const PARTITIONS = 4;

interface Setup {
  readonly n: ClusterNames;
  readonly topic: string;
  readonly control: string;
  readonly table: string;
  readonly produced: Coordinates[];
  produce(count: number): Promise<void>;
  connector(name: string, tasks: number): { name: string; config: Record<string, string> };
  track(w: WorkerProcess): WorkerProcess;
}

async function setup(t: TestContext, prefix: string): Promise<Setup> {
  const res = await e2eResources(t);
  const n = clusterNames(prefix);
  const topic = unique(`${prefix}-src`);
  const control = unique(`${prefix}-control`);
  const table = `${uniqueIdent(`e2e_${prefix}`)}.events`;
  res.topics.push(n.configTopic, n.statusTopic, topic, control);
  res.tables.push(table);
  const produced: Coordinates[] = [];
  let next = 0;
  return {
    n,
    topic,
    control,
    table,
    produced,
    async produce(count) {
      const batch = Array.from({ length: count }, (_, i) => ({ partition: (next + i) % PARTITIONS, key: `k${next + i}`, value: { id: next + i } }));
      next += count;
      produced.push(...(await produceJson(topic, PARTITIONS, batch)));
    },
    connector: (name, tasks) =>
      sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'tasks.max': String(tasks), 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1500' } }),
    track(w) {
      res.workers.push(w);
      return w;
    },
  };
}

/** Waits until the table holds `total` rows (an independent reader: PyIceberg). */
async function waitRows(table: string, produced: readonly Coordinates[], timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await exactlyOnceReport(table, produced).catch(() => undefined);
    if (r !== undefined && r.rows >= produced.length) return;
    if (Date.now() > deadline) throw new Error(`${table}: ${r?.rows ?? 'no'} rows of ${produced.length} within ${timeoutMs} ms`);
    await sleep(2_000);
  }
}

/** POST /connectors on `url`; anything but 201 fails with the answer and the workers' last warnings and errors. */
async function create(url: string, connector: { name: string; config: Record<string, string> }, workers: readonly WorkerProcess[]): Promise<void> {
  const r = await http('POST', `${url}/connectors`, connector);
  const troubles = workers.flatMap((w) => w.lines.filter((l) => /"level":(40|50)/.test(l)).slice(-5));
  assert.equal(r.status, 201, `POST /connectors answered ${r.status} ${JSON.stringify(r.json)}; the workers' last warnings and errors:\n${troubles.join('\n')}`);
}

const tableCommits = (w: WorkerProcess, from = 0): string[] => w.lines.slice(from).filter((l) => l.includes('"msg":"table committed"'));

test('the worker holding the committer lease dies at committer.after-catalog-commit: another takes over, every record once', { timeout: 600_000 }, async (t) => {
  const s = await setup(t, 'clfo');
  const a = s.track(startClusterWorker(s.n, { env: { ICEFLOE_CRASH_POINT: 'committer.after-catalog-commit', ICEFLOE_CRASH_AFTER: '2' } }));
  const b = s.track(startClusterWorker(s.n));
  const [urlA, urlB] = await Promise.all([a.restUrl(), b.restUrl()]);
  await Promise.all([a.waitFor(/"msg":"joined the cluster"/), b.waitFor(/"msg":"joined the cluster"/)]);
  const ids = [workerIdOf(urlA), workerIdOf(urlB)];
  const name = nameCommittedBy('clfo', ids[0] as string, ids, 2);
  await s.produce(400);
  await create(urlB, s.connector(name, 2), [a, b]);
  await a.waitFor(/"msg":"committer seated/, 60_000);
  await waitRows(s.table, s.produced);
  await s.produce(400);
  // A's second catalog commit is applied; A dies before it sees the answer.
  await a.waitFor(/crash point committer\.after-catalog-commit reached/, 120_000);
  assert.equal(await a.exited, 'SIGKILL');
  const diedAt = Date.now();
  await b.waitFor(/"msg":"committer seated/, 60_000);
  t.diagnostic(`B seated the committer ${Date.now() - diedAt} ms after A died (session time-out 3 s + lease TTL 4 s)`);
  await s.produce(400);
  await waitStatuses([urlB], name, 'both tasks RUNNING on B', runningOn([ids[1] as string], 2));
  await waitRows(s.table, s.produced);
  const report = await assertExactlyOnce(s.table, s.produced);
  t.diagnostic(`${report.rows} rows in ${report.snapshots} snapshots; B committed ${tableCommits(b).length} time(s)`);
  assert.ok(tableCommits(b).length > 0, 'B committed after taking over');
  assert.equal(await b.stop(120_000), '0');
});

test('a committer frozen past its lease commits nothing when thawed; the worker that took over commits every record once', { timeout: 600_000 }, async (t) => {
  const s = await setup(t, 'clfz');
  const a = s.track(startClusterWorker(s.n, { env: { ICEFLOE_CRASH_POINT: 'committer.before-catalog-commit', ICEFLOE_CRASH_AFTER: '2', ICEFLOE_CRASH_ACTION: 'stop' } }));
  const b = s.track(startClusterWorker(s.n));
  const [urlA, urlB] = await Promise.all([a.restUrl(), b.restUrl()]);
  await Promise.all([a.waitFor(/"msg":"joined the cluster"/), b.waitFor(/"msg":"joined the cluster"/)]);
  const ids = [workerIdOf(urlA), workerIdOf(urlB)];
  const name = nameCommittedBy('clfz', ids[0] as string, ids, 2);
  await s.produce(300);
  await create(urlA, s.connector(name, 2), [a, b]);
  await waitRows(s.table, s.produced);
  await s.produce(300);
  // A freezes itself just before its second catalog commit (before the lease check).
  await a.waitFor(/crash point committer\.before-catalog-commit reached .*SIGSTOP/, 120_000);
  const frozenAt = Date.now();
  await b.waitFor(/"msg":"committer seated/, 60_000);
  t.diagnostic(`B seated the committer ${Date.now() - frozenAt} ms after A froze`);
  await s.produce(300);
  await waitRows(s.table, s.produced);
  const thawedFrom = a.lines.length;
  a.thaw();
  await sleep(6_000);
  // The stale seat's commit is refused by its lease check; A commits again only once seated anew.
  const after = a.lines.slice(thawedFrom);
  const reseated = after.findIndex((l) => l.includes('"msg":"committer seated'));
  const stale = tableCommits(a, thawedFrom).filter((l) => reseated < 0 || after.indexOf(l) < reseated);
  assert.deepEqual(stale, [], 'the thawed committer committed with a lease it had lost');
  // Its commit was refused by the lease check itself (not only by the catalog's snapshot requirement, which
  // would refuse it too once B has committed): the round ends with the lease error.
  assert.ok(after.some((l) => l.includes('committer round failed') && /lease committer:\S+ \(token [^)]*\) is no longer held/.test(l)), `A's round after the thaw ends on its lost lease; its lines after the thaw:\n${after.slice(0, 20).join('\n')}`);
  await s.produce(300);
  await waitRows(s.table, s.produced);
  const report = await assertExactlyOnce(s.table, s.produced);
  t.diagnostic(`${report.rows} rows in ${report.snapshots} snapshots`);
  for (const w of [a, b]) {
    const how = await w.stop(90_000);
    assert.equal(how, '0', `a worker did not stop cleanly (${how}); its last lines:\n${w.lines.slice(-30).join('\n')}`);
  }
});

test('scale out from 1 to 3 workers and back to 1 while records flow: tasks rebalance, status follows, every record once', { timeout: 600_000 }, async (t) => {
  const s = await setup(t, 'clsc');
  const workers = [s.track(startClusterWorker(s.n))];
  const name = unique('clsc');
  await s.produce(200);
  // Created as soon as the REST port answers, before the worker has joined: the request waits for the join
  // and the config topic (docs/rest.md), as Connect's herder queues it.
  const urls = [await (workers[0] as WorkerProcess).restUrl()];
  await create(urls[0] as string, s.connector(name, 4), workers);
  await waitStatuses(urls, name, '4 tasks RUNNING on the one worker', runningOn(urls.map(workerIdOf), 4));
  let flowing = true;
  const flow = (async () => {
    while (flowing) {
      await s.produce(100);
      await sleep(300);
    }
  })();
  try {
    for (let i = 0; i < 2; i++) {
      const w = s.track(startClusterWorker(s.n));
      workers.push(w);
      urls.push(await w.restUrl());
      await w.waitFor(/"msg":"joined the cluster"/);
      await waitStatuses(urls, name, `4 tasks over ${urls.length} workers`, runningOn(urls.map(workerIdOf), 4));
      t.diagnostic(`scaled out to ${urls.length} workers`);
    }
    // A cluster-scoped log level set on one worker reaches every worker (a config-topic record).
    const logger = 'io.icefloe.runtime.SinkTask';
    const set = await http('PUT', `${urls[0]}/admin/loggers/${logger}?scope=cluster`, { level: 'DEBUG' });
    assert.equal(set.status, 204, JSON.stringify(set.json));
    const levelAt = async (url: string): Promise<string | undefined> => ((await http('GET', `${url}/admin/loggers/${logger}`)).json as { level?: string } | null)?.level;
    for (const url of urls) {
      const deadline = Date.now() + 15_000;
      while ((await levelAt(url)) !== 'DEBUG') {
        assert.ok(Date.now() < deadline, `${url} did not take the cluster-scoped level`);
        await sleep(250);
      }
    }
    for (let i = 0; i < 2; i++) {
      const w = workers.pop() as WorkerProcess;
      urls.pop();
      assert.equal(await w.stop(120_000), '0');
      await waitStatuses(urls, name, `4 tasks over ${urls.length} workers`, runningOn(urls.map(workerIdOf), 4));
      t.diagnostic(`scaled in to ${urls.length} workers`);
    }
  } finally {
    flowing = false;
    await flow;
  }
  await waitRows(s.table, s.produced);
  const report = await assertExactlyOnce(s.table, s.produced);
  t.diagnostic(`${report.rows} rows in ${report.snapshots} snapshots`);
  assert.equal(await (workers[0] as WorkerProcess).stop(120_000), '0');
});
