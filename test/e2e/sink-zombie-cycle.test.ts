/**
 * The zombie whose cycle moves no offset (issue 9 point 4, review D1), with real worker processes.
 *
 * One single-partition topic holding the records, then two standalone workers of one connector (distinct
 * task ids through `icefloe.tasks.id-offset`, so only the consumer group can tell the zombie apart).
 * Worker A gets the partition, reads every record and ends its first cycle; the fault proxy holds that
 * cycle's first data-file upload, so A is frozen (SIGSTOP) inside the cycle — nothing announced, and no poll that
 * could tell it that it lost the partition — past its 6 s session timeout. B takes the partition over,
 * reads the same records from the start and commits them: the group's committed offset is now exactly
 * where A's cycle ends. A is thawed: its upload finishes, and its offsets equal the committed ones, so
 * without the generation check on every cycle (sendOffsetsToTransaction with the unmoved offsets) its
 * transaction commits and its announcement lands a second copy of every record. With the check the
 * broker refuses A's transaction (unknown member), A aborts it and deletes its files.
 *
 * Counted by Kafka coordinates with PyIceberg: every record once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker, untilWorkers } from '../helpers/worker.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const SESSION_TIMEOUT_MS = 6000;
const RECORDS = 300;

function committedOnce(ws: readonly WorkerProcess[], table: string): number {
  // Two committers may log the same snapshot (one finds the other's commit): count each snapshot once.
  const bySnapshot = new Map<string, number>();
  for (const w of ws) for (const l of w.logs('table committed')) if (l['table'] === table) bySnapshot.set(String(l['snapshotId']), Number(l['records']));
  return [...bySnapshot.values()].reduce((n, r) => n + r, 0);
}

test('a frozen task whose late cycle moves no offset is fenced by the group generation; every record lands once', { timeout: 240_000 }, async (t) => {
  const res = await e2eResources(t);
  const e = stackEndpoints();
  const proxy = new FaultProxy(e.proxyControlUrl);
  const name = unique('zcycle');
  const topic = unique('zcycle-src');
  const control = unique('zcycle-control');
  const namespace = uniqueIdent('e2e_zcycle');
  const table = `${namespace}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  // The records are there before the workers start: the holder's first cycle is the one with them, and it
  // asks the group for its committed offsets only then (after the thaw, in the zombie's case).
  const produced = await produceJson(topic, 1, Array.from({ length: RECORDS }, (_, i) => ({ partition: 0, key: `k${i}`, value: { id: i, note: `event ${i}` } })));
  // A's first data-file upload is held at the proxy, so A is inside its first cycle (nothing announced, no
  // poll) when it is frozen past its session timeout.
  const hold = await proxy.arm({ target: 's3', match: { method: 'PUT', path: `/${namespace}/.*\\.parquet` }, times: 1, fault: { kind: 'hold' } });
  t.after(() => proxy.remove(hold).catch(() => undefined));

  const worker = (index: number): WorkerProcess => {
    const w = startWorker({
      worker: {
        'icefloe.tasks.mode': 'in-process',
        'icefloe.catalog': 'none',
        'icefloe.tasks.id-offset': String(index),
        'consumer.session.timeout.ms': String(SESSION_TIMEOUT_MS),
        'consumer.heartbeat.interval.ms': '500',
      },
      connectors: [
        sinkConnector({
          name,
          topics: topic,
          controlTopic: control,
          config: {
            ...SCHEMALESS_JSON,
            'iceberg.tables': table,
            'iceberg.tables.auto-create-enabled': 'true',
            'iceberg.control.commit.interval-ms': '2000',
            // Through the fault proxy: the test holds the zombie's first upload to freeze it mid-cycle.
            'iceberg.catalog.s3.endpoint': e.proxyS3Endpoint,
          },
        }),
      ],
    });
    res.workers.push(w);
    t.after(() => w.thaw()); // never leave a process stopped
    return w;
  };
  const holds = (w: WorkerProcess): boolean => {
    let held = false;
    for (const l of w.logs('partitions assigned')) if ((l['partitions'] as string[]).includes(`${topic}[0]`)) held = true;
    for (const l of w.logs('partitions revoked')) if ((l['partitions'] as string[]).includes(`${topic}[0]`)) held = false;
    return held;
  };

  const w0 = worker(0);
  const w1 = worker(1);
  await proxy.waitHeld(hold, 1, 60_000);
  await untilWorkers('a settled group', () => w0.logs('partitions assigned').length > 0 && w1.logs('partitions assigned').length > 0 && holds(w0) !== holds(w1), [w0, w1]);
  const [a, b] = holds(w0) ? [w0, w1] : [w1, w0];
  assert.equal(a.logs('cycle committed').length, 0, 'the held upload is in the first cycle of the partition\'s holder');
  a.freeze();
  await proxy.release(hold); // the reply waits in A's socket until A is thawed

  // B takes the partition over once A's session expired, reads the same records and commits them: the
  // group's committed offset is now exactly where A's cycle ends.
  await untilWorkers('B holding the partition', () => holds(b), [b]);
  await untilWorkers(`${RECORDS} records committed by B`, () => committedOnce([b], table) >= RECORDS, [b]);
  const aLines = a.lines.length;
  a.thaw();
  await untilWorkers(
    'A ending its stale cycle',
    () => a.lines.slice(aLines).some((l) => /"msg":"(cycle committed|cycle abandoned[^"]*|partitions revoked)"/.test(l)),
    [a, b],
    60_000,
  );
  const after = a.lines.slice(aLines).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  const first = after.find((l) => ['cycle committed', 'cycle abandoned; reading again from the committed offsets', 'cycle abandoned at revocation', 'partitions revoked'].includes(String(l['msg'])));
  t.diagnostic(`A after the thaw: ${JSON.stringify(first)}`);
  // Give an announcement of A the time to be applied by a committer, then stop both.
  await sleep(4000);
  await stopWorker(a);
  await stopWorker(b);
  const staleCommit = after.find((l) => l['msg'] === 'cycle committed' && Number(l['records']) > 0);
  const report = await assertExactlyOnce(table, produced);
  assert.equal(staleCommit, undefined, `A's stale cycle committed: ${JSON.stringify(staleCommit)}`);
  assert.equal(first?.['msg'], 'cycle abandoned; reading again from the committed offsets', 'A\'s stale cycle was refused by the broker (not lost at a poll first)');
  t.diagnostic(`${table}: ${report.rows} rows in ${report.snapshots} snapshots`);
});
