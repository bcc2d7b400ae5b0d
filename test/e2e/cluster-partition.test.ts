/**
 * Distributed mode under a network partition (issue 24): one worker of three runs in a network namespace of
 * the test's own (test/helpers/netns.ts: a veth pair and TCP forwarders, so it reaches Kafka, Redis, the
 * catalog and S3 at the same 127.0.0.1 addresses as the others). It holds the connector's committer and a
 * third of the tasks when the test takes its link down for longer than every session time-out (membership
 * 3 s, committer lease 4 s, the task consumers' group session 6 s) while records keep flowing from the host;
 * then heals it.
 *
 * Asserted: while it is cut off, the other two workers show every task RUNNING on themselves, one of them
 * takes the committer seat and the table keeps committing; the cut-off worker commits nothing it wrote
 * while cut off; after healing the three share the tasks again, every record is in the table exactly once by
 * Kafka coordinates (no data file added twice), and the cut-off worker's REST status names the outage while
 * it lasts (asked from inside its namespace) and agrees with the others on where every task runs after it.
 *
 * Alone in the e2e suite (scripts/run-tests.ts): it touches no shared service, but it is timing-sensitive
 * (a 2-core machine busy with another file stretches the heartbeats it measures against the session
 * time-outs).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { clusterNames, connectorStatus, http, nameCommittedBy, runningOn, startClusterWorker, waitStatuses, workerIdOf } from '../helpers/cluster.ts';
import type { StatusBody } from '../helpers/cluster.ts';
import { assertExactlyOnce, exactlyOnceReport } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { partitionableNamespace } from '../helpers/netns.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, uniqueIdent } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const PARTITIONS = 6;
const TASKS = 6;
/** Longer than every session time-out of clusterWorkerProps (3 s, lease 4 s, consumer group 6 s), several times over. */
const CUT_MS = 25_000;

const port = (url: string): number => Number(new URL(url).port);
const tableCommits = (w: WorkerProcess, from = 0, to = w.lines.length): string[] => w.lines.slice(from, to).filter((l) => l.includes('"msg":"table committed"'));
/**
 * The worker's commits that made a snapshot (outcome `committed`). A round that finds its announcements
 * applied by another committer logs `table committed` with outcome `already-applied` and commits nothing:
 * seen once, a round of the cut-off worker stuck in its first step through the cut, ending after the heal.
 */
const snapshotsMade = (w: WorkerProcess, from = 0, to = w.lines.length): string[] => tableCommits(w, from, to).filter((l) => l.includes('"outcome":"committed"'));

test('a worker cut off from Kafka, Redis and the catalog past its session time-outs, then healed: its units run elsewhere meanwhile, nothing committed twice, every record once, its status says so', { timeout: 240_000 }, async (t) => {
  const e = stackEndpoints();
  const res = await e2eResources(t);
  const ns = await partitionableNamespace(t, [port(`tcp://${e.kafkaBootstrap}`), port(e.redisUrl), port(e.catalogUri), port(e.s3Endpoint)]);
  const n = clusterNames('clpart');
  const topic = unique('clpart-src');
  const control = unique('clpart-control');
  const table = `${uniqueIdent('e2e_clpart')}.events`;
  res.topics.push(n.configTopic, n.statusTopic, topic, control);
  res.tables.push(table);

  const track = (w: WorkerProcess): WorkerProcess => (res.workers.push(w), w);
  const a = track(startClusterWorker(n));
  const b = track(startClusterWorker(n));
  // C's REST API listens on its end of the veth: the test reaches it while the link is up.
  const c = track(startClusterWorker(n, { wrap: ns.wrap, worker: { listeners: `http://${ns.nsAddress}:0` } }));
  const [urlA, urlB, urlC] = (await Promise.all([a.restUrl(), b.restUrl(), c.restUrl()])) as [string, string, string];
  await Promise.all([a, b, c].map((w) => w.waitFor(/"msg":"joined the cluster"/, 60_000)));
  const ids = [urlA, urlB, urlC].map(workerIdOf);
  const idC = ids[2] as string;
  const hostIds = ids.slice(0, 2);

  const produced: Coordinates[] = [];
  let next = 0;
  const produce = async (count: number): Promise<void> => {
    const batch = Array.from({ length: count }, (_, i) => ({ partition: (next + i) % PARTITIONS, key: `k${next + i}`, value: { id: next + i } }));
    next += count;
    produced.push(...(await produceJson(topic, PARTITIONS, batch)));
  };
  await produce(300); // the topic exists with its partitions before the connector subscribes

  // The committer is placed on C: the cut takes the seat away as well as tasks.
  const name = nameCommittedBy('clpart', idC, ids, TASKS);
  const connector = sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'tasks.max': String(TASKS), 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1500' } });
  const created = await http('POST', `${urlA}/connectors`, connector);
  assert.equal(created.status, 201, JSON.stringify(created.json));
  await waitStatuses([urlA, urlB, urlC], name, `${TASKS} tasks over the 3 workers`, runningOn(ids, TASKS), 120_000);
  await c.waitFor(/"msg":"committer seated/, 60_000);
  await c.waitFor(/"msg":"table committed"/, 90_000);

  const samplesC: StatusBody[] = [];
  const samplesCut: StatusBody[] = [];
  let sampling: Promise<void> | undefined;
  let sampleOn = true;
  let cutSampling = true;
  let flowing = true;
  const flow = (async () => {
    while (flowing) {
      await produce(60);
      await sleep(250);
    }
  })();
  try {
    await sleep(2_000);
    const cutLines = { a: a.lines.length, b: b.lines.length, c: c.lines.length };
    const cutAt = Date.now();
    ns.cut();
    t.diagnostic(`cut ${ns.name} (C = ${idC}) at ${new Date(cutAt).toISOString()}`);
    // While cut off, C's REST API is still reachable from inside its own namespace (its address is local
    // there): what it answers is what an operator on that side of the partition sees.
    const sampledCut = (async () => {
      while (cutSampling) {
        const st = await statusFromInside(ns.name, urlC, name);
        if (st !== undefined && JSON.stringify(st) !== JSON.stringify(samplesCut.at(-1))) samplesCut.push(st);
        await sleep(250);
      }
    })();

    // Its units run elsewhere meanwhile: both host workers show every task on themselves, and take the seat.
    const during = await waitStatuses([urlA, urlB], name, 'every task RUNNING on A and B', runningOn(hostIds, TASKS), CUT_MS + 30_000);
    t.diagnostic(`every task RUNNING on A and B ${Date.now() - cutAt} ms after the cut: ${JSON.stringify(during[0]?.tasks.map((x) => `${x.id}@${x.worker_id}`))}`);
    // Seated after the cut (a seat line from before it, while the views converged at start, does not count).
    const seatedSince = (w: WorkerProcess, from: number): boolean => w.lines.slice(from).some((l) => l.includes('"msg":"committer seated'));
    const seatDeadline = Date.now() + CUT_MS + 30_000;
    while (!seatedSince(a, cutLines.a) && !seatedSince(b, cutLines.b)) {
      assert.ok(Date.now() < seatDeadline, 'neither A nor B took the committer seat while C was cut off');
      await sleep(250);
    }
    const seated = seatedSince(a, cutLines.a) ? a : b;
    const seatLine = seated === a ? cutLines.a : cutLines.b;
    // ... and the table keeps committing (a commit by the new seat of records produced during the cut).
    const deadline = cutAt + CUT_MS + 60_000;
    while (tableCommits(seated, seatLine).length === 0) {
      assert.ok(Date.now() < deadline, `no table commit by ${seated === a ? 'A' : 'B'} after taking the seat; its last lines:\n${seated.lines.slice(-15).join('\n')}`);
      await sleep(500);
    }
    t.diagnostic(`${seated === a ? 'A' : 'B'} seated and committed ${Date.now() - cutAt} ms after the cut`);
    const remaining = cutAt + CUT_MS - Date.now();
    if (remaining > 0) await sleep(remaining);

    cutSampling = false;
    await sampledCut;
    const healLine = c.lines.length;
    const healedAt = Date.now();
    ns.heal();
    // What C's REST API answers from the heal on, every 250 ms (distinct answers kept): its status is asked to
    // say what happened to it, if only until its units run again.
    sampling = (async () => {
      while (sampleOn) {
        const st = await connectorStatus(urlC, name);
        if (st !== undefined && JSON.stringify(st) !== JSON.stringify(samplesC.at(-1))) samplesC.push(st);
        await sleep(250);
      }
    })();
    t.diagnostic(`healed after ${healedAt - cutAt} ms`);
    // Nothing C wrote while cut off reached the table through C: it committed nothing from the cut until the heal.
    assert.deepEqual(snapshotsMade(c, cutLines.c, healLine), [], 'the cut-off worker committed a table while cut off');
    const cutOffLines = c.lines.slice(cutLines.c, healLine).filter((l) => /"level":(40|50)/.test(l));
    t.diagnostic(`C's warnings and errors while cut off (${cutOffLines.length}):\n${cutOffLines.slice(0, 12).join('\n')}`);

    // Healed: the three share the tasks again, as each of them reports it.
    await waitStatuses([urlA, urlB, urlC], name, `${TASKS} tasks over the 3 workers after the heal`, runningOn(ids, TASKS), 120_000);
    t.diagnostic(`3 workers balanced again ${Date.now() - healedAt} ms after the heal`);
    const afterHeal = c.lines.slice(healLine);
    const reseated = afterHeal.findIndex((l) => l.includes('"msg":"committer seated'));
    // Any commit C makes after the heal comes from a seat taken anew, never from the one it held before the cut.
    const stale = afterHeal.filter((l, i) => l.includes('"msg":"table committed"') && l.includes('"outcome":"committed"') && (reseated < 0 || i < reseated));
    assert.deepEqual(stale, [], 'the healed worker committed with the seat it held before the cut');
  } catch (e) {
    // A failed assertion must not leave the samplers running (the file would never end: seen once).
    cutSampling = false;
    sampleOn = false;
    throw e;
  } finally {
    flowing = false;
    await flow;
  }
  await sleep(3_000); // C's status a moment after the balance, too
  sampleOn = false;
  await sampling;

  // Every record exactly once, by Kafka coordinates; no data file added twice.
  const waitDeadline = Date.now() + 120_000;
  for (;;) {
    const r = await exactlyOnceReport(table, produced).catch(() => undefined);
    if (r !== undefined && r.rows >= produced.length) break;
    if (Date.now() > waitDeadline) break; // assertExactlyOnce names what is missing
    await sleep(2_000);
  }
  const report = await assertExactlyOnce(table, produced);
  t.diagnostic(`${report.rows} rows (${produced.length} produced) in ${report.snapshots} snapshots`);

  // C's status says what happened to it. While cut off, the status it answers names the outage (it cannot read
  // the status topic, nor reach Redis); from the heal on it agrees with A and B on where every task runs (the
  // waitStatuses above), so the outage shows while it lasts and the truth after it.
  t.diagnostic(`C's statuses while cut off (${samplesCut.length} distinct):\n${samplesCut.map((x) => JSON.stringify(x).slice(0, 600)).join('\n')}`);
  t.diagnostic(`C's statuses from the heal on (${samplesC.length} distinct):\n${samplesC.map((x) => JSON.stringify(x).slice(0, 600)).join('\n')}`);
  const cLog = c.lines.filter((l) => /"level":(40|50)/.test(l) || /cluster members changed|committer seat/.test(l));
  t.diagnostic(`C's log (${cLog.length} warnings, errors and membership lines):\n${cLog.slice(0, 30).map((l) => l.slice(0, 400)).join('\n')}`);
  const cutTraces = samplesCut.flatMap((x) => [x.connector.trace, ...x.tasks.map((k) => k.trace)]).filter((x): x is string => x !== undefined);
  assert.ok(samplesCut.length > 0, 'C answered no status from inside its namespace while cut off');
  assert.ok(cutTraces.some((x) => /unreachable/i.test(x)), `no status C answered while cut off names the outage (${samplesCut.length} distinct answers); the last: ${JSON.stringify(samplesCut.at(-1))}`);
  t.diagnostic(`traces in C's statuses while cut off: ${[...new Set(cutTraces.map((x) => x.split('\n')[0]))].join(' | ')}`);

  for (const w of [a, b, c]) {
    const how = await w.stop(90_000);
    assert.equal(how, '0', `a worker did not stop cleanly (${how}); its last lines:\n${w.lines.slice(-20).join('\n')}`);
  }
});

const execFileP = promisify(execFile);

/** The connector's status as the worker at `url` answers it, asked from inside the network namespace `ns`. */
async function statusFromInside(ns: string, url: string, name: string): Promise<StatusBody | undefined> {
  const r = await execFileP('ip', ['netns', 'exec', ns, 'curl', '-s', '-m', '2', '-w', '\\n%{http_code}', `${url}/connectors/${name}/status`]).catch(() => undefined);
  if (r === undefined) return undefined;
  const cut = r.stdout.lastIndexOf('\n');
  if (r.stdout.slice(cut + 1).trim() !== '200') return undefined;
  return JSON.parse(r.stdout.slice(0, cut)) as StatusBody;
}
