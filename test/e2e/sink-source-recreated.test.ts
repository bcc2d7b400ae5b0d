/**
 * N1 (commit-protocol-2.md) on the real stack: a source topic deleted and recreated while the worker runs.
 * The running task fails on its position beyond the new log's end (O6) and is restarted by the operator;
 * Kafka deleted the group's committed offsets with the topic, so it reads the new topic from its start and
 * announces its records under offsets the table already applied from the old topic. The
 * committer must not pass them as "held already" (the review's silent loss): the live topic's id is not
 * the one the table applied from, so the table stops with `source-log-changed` and nothing is dropped;
 * `icefloe positions --adopt` forgets the old topic's offsets, and the waiting announcement lands: every
 * record of both topics exactly once (told apart by a generation field, since the offsets repeat).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep, unique, withTopics } from '../helpers/kafka.ts';
import { readTable } from '../helpers/readers.ts';
import { committedRecords, e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker } from '../helpers/worker.ts';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;

function records(gen: number, count: number): { partition: number; value: unknown }[] {
  return Array.from({ length: count }, (_, n) => ({ partition: 0, value: { gen, n } }));
}

test('N1: a source topic recreated mid-run: its new records are never dropped as already applied; after --adopt every record lands once', { timeout: 600_000 }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-recreated');
  const control = unique('e2e-control');
  const table = `${uniqueIdent('e2e')}.recreated`;
  res.tables.push(table);
  res.topics.push(topic);
  const admin = await withTopics(t, [{ name: control, partitions: 1 }]);
  await produceJson(topic, 1, records(1, 20));
  const connector = sinkConnector({
    name: unique('e2e-recreated'),
    topics: topic,
    controlTopic: control,
    config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true' },
  });
  // Stays up with a FAILED connector (the REST API's behaviour), so its committer keeps running.
  const w = startWorker({ connectors: [connector], args: [] });
  res.workers.push(w);
  await waitCommitted(w, table, 20);

  // Deleted and recreated under the running worker, then 10 records of the new topic (offsets 0..9 again).
  await admin.deleteTopic(topic);
  for (let i = 0; i < 60 && (await admin.listTopics()).includes(topic); i++) await sleep(500);
  await produceJson(topic, 1, records(2, 10));

  // The running consumer keeps its position (20) on the new log: the task fails naming it (docs/sink.md, a
  // committed offset outside the log), and the operator restarts it. The group's offsets went with the old
  // topic, so the restarted task reads the new one from its start: the review's N1 path.
  const first = await w.waitFor(/is outside the log|"msg":"table stopped/, 120_000);
  if (/is outside the log/.test(first)) {
    const base = await w.restUrl();
    const restart = await fetch(`${base}/connectors/${connector.name}/restart?includeTasks=true&onlyFailed=true`, { method: 'POST' });
    assert.ok(restart.status === 202 || restart.status === 204, `restart: ${restart.status} ${await restart.text()}`);
  }
  const stopped = await w.waitFor(/"code":"[a-z-]+".*"msg":"table stopped/, 120_000);
  assert.match(stopped, /"code":"source-log-changed"/, `the table stops for the changed source log: ${stopped}`);
  assert.match(stopped, /topic id \S+, now \S+/);
  assert.equal(w.logs('announcements whose source records the table holds already are passed without committing their files').length, 0, 'nothing passed as held already');
  assert.equal(committedRecords(w, table), 20, 'nothing applied on a guess either');

  // The operator's recovery, while the worker runs: its committer takes it at its next round.
  const adopt = spawnSync(process.execPath, [CLI, 'positions', join(w.dir, 'worker.properties'), join(w.dir, `${connector.name}.json`), '--table', table, '--adopt'], {
    cwd: w.dir,
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(adopt.status, 0, `--adopt: ${adopt.stderr}`);
  // The connector's task is FAILED (the stop failed it), so waitCommitted's early exit does not apply here.
  for (const deadline = Date.now() + 240_000; committedRecords(w, table) < 30; await sleep(500)) {
    assert.ok(Date.now() < deadline, `the waiting announcement was not applied after --adopt; last lines:\n${w.lines.slice(-10).join('\n')}`);
  }
  assert.equal(committedRecords(w, table), 30);
  await w.stop(120_000);

  const read = await readTable({ table, engine: 'duckdb', columns: ['gen', 'n'], order_by: ['gen', 'n'] });
  const got = (read.rows ?? []).map((r) => `${String(r['gen'])}/${String(r['n'])}`);
  const want = [...Array.from({ length: 20 }, (_, n) => `1/${n}`), ...Array.from({ length: 10 }, (_, n) => `2/${n}`)];
  assert.deepEqual(got, want, 'every record of the old topic and of the new one, exactly once');
});
