/**
 * A transactional call that times out (issue 9 point 5, review S1/O7), on the real broker.
 *
 * One worker, one task, a 1 s commit interval and `producer.override.transaction.timeout.ms=6000`, so
 * the task's transactional calls time out after 3 s (half the transaction time-out; librdkafka caps
 * sendOffsetsToTransaction at the transaction's remaining time). The Kafka broker is
 * frozen (SIGSTOP) right after a second batch reached the task, for longer than two such calls: the
 * cycle's sendOffsetsToTransaction times out, and so does the abort that follows. librdkafka keeps the
 * timed-out abort pending until it is called again; before the fix the task never called it again, so
 * every later beginTransaction failed with ERR__CONFLICT and the task stalled for good (while RUNNING).
 * With the fix the task resumes the abort, deletes the cycle's files, re-reads the batch and commits by
 * itself within a minute of the broker's return. Counted by Kafka coordinates: every record once.
 *
 * A round whose cycle committed in the 300 ms before the freeze proves nothing; the test then runs another
 * round (at most 3) and asserts that one of them hit the time-out.
 *
 * The broker is shared: the freeze is kept short (14 s) and SIGCONT is sent in every exit path.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import { clientLogs } from '../helpers/client-logs.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker } from '../helpers/worker.ts';

const FREEZE_MS = 14_000;

function brokerPid(): number {
  const pid = Number(readFileSync(join(stackEndpoints().run, 'pids', 'kafka-1.pid'), 'utf8').trim());
  if (!Number.isSafeInteger(pid) || pid <= 1) throw new Error(`no Kafka broker pid in ${stackEndpoints().run}/pids/kafka-1.pid`);
  return pid;
}

test('a broker frozen past the transactional call time-out: the task resumes the call and commits again by itself, once', { timeout: 360_000 }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('bfreeze');
  const topic = unique('bfreeze-src');
  const control = unique('bfreeze-control');
  const table = `${uniqueIdent('e2e_bfreeze')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const batch = (from: number, n: number): { partition: number; key: string; value: unknown }[] =>
    Array.from({ length: n }, (_, i) => ({ partition: 0, key: `k${from + i}`, value: { id: from + i } }));
  const first = await produceJson(topic, 1, batch(0, 200));

  const logs = clientLogs(); // librdkafka's group and transaction lines, shown if a round fails
  const w = startWorker({
    env: logs.env,
    worker: { 'icefloe.tasks.mode': 'in-process', ...logs.props },
    connectors: [
      sinkConnector({
        name,
        topics: topic,
        controlTopic: control,
        config: {
          ...SCHEMALESS_JSON,
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.control.commit.interval-ms': '1000',
          'producer.override.transaction.timeout.ms': '6000',
        },
      }),
    ],
  });
  res.workers.push(w);
  await waitCommitted(w, table, first.length, 120_000);

  const pid = brokerPid();
  const thaw = (): void => {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // gone
    }
  };
  t.after(thaw); // never leave the shared broker stopped
  // A round: a batch reaches the task, then the broker freezes before the cycle that carries it can commit.
  // If the cycle's tick falls in the 300 ms between fetch and freeze, the cycle commits before the freeze and
  // no call times out: that round proves nothing, so another batch and another freeze follow (at most 3).
  const produced = [...first];
  const timedOut: Record<string, unknown>[] = [];
  let conflicts = 0;
  for (let round = 1; round <= 3 && timedOut.length === 0; round++) {
    const more = await produceJson(topic, 1, batch(produced.length, 100));
    produced.push(...more);
    await sleep(300); // the task's fetch returns the batch; its next cycle (<= 1 s) runs into the frozen broker
    const lines = w.lines.length;
    let resumedAt: number;
    process.kill(pid, 'SIGSTOP');
    try {
      await sleep(FREEZE_MS);
    } finally {
      thaw();
      resumedAt = Date.now();
    }
    try {
      await waitCommitted(w, table, produced.length, 60_000);
    } catch (e) {
      throw new Error(`round ${round}: the task did not commit again within 60 s of the broker's return: ${(e as Error).message}\nlast lines:\n${w.lines.slice(-25).join('\n')}\n${logs.tails(40)}`, { cause: e });
    }
    const recoveredMs = Date.now() - resumedAt;
    const during = w.lines.slice(lines).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    timedOut.push(...during.filter((l) => l['msg'] === 'transaction call timed out; resuming it'));
    conflicts += during.filter((l) => /ERR__CONFLICT|Conflicting/.test(String(l['error']))).length;
    t.diagnostic(`round ${round}: timed-out calls resumed: ${JSON.stringify(timedOut.map((l) => ({ call: l['call'], attempt: l['attempt'] })))}; committed again ${recoveredMs} ms after the broker resumed`);
  }
  assert.ok(timedOut.length > 0, 'a transactional call timed out while the broker was frozen, in one of 3 rounds (the scenario happened)');
  assert.equal(conflicts, 0, 'no call ran into a pending one');
  await stopWorker(w);
  assert.equal(committedRecords(w, table), produced.length);
  const report = await assertExactlyOnce(table, produced);
  t.diagnostic(`${table}: ${report.rows} rows in ${report.snapshots} snapshots`);
});
