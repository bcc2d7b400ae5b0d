/**
 * The replay runbook end to end (docs/operations.md, "Replay a table from a snapshot"; coordinate/replay.ts): the
 * real worker (`icefloe standalone`) on the stack's Kafka, REST catalog and S3 commits three batches of
 * records over several snapshots; with the worker running, `icefloe replay` refuses and changes nothing;
 * once it is stopped, `icefloe replay` (the CLI, as an operator runs it) rolls the table back to the snapshot
 * that held the first batch only and moves the connector's offsets to just after that batch; the table then
 * holds exactly the first batch (PyIceberg); the worker started again — with a fourth batch produced
 * meanwhile — ends with every record in the table exactly once by Kafka coordinates (PyIceberg, DuckDB).
 *
 * The same runbook through the REST API on one running worker: offsets cannot change while RUNNING (400,
 * Connect's text); STOP (204); GET offsets is the group's; PATCH or DELETE back into what the table holds
 * is refused (400, naming the table); the replay endpoint (`POST .../iceberg/tables/{t}/replay`, an Icefloe
 * extension) refused while RUNNING, then run while the worker runs the STOPPED connector; resume (202): every
 * record exactly once; GET .../iceberg/tables shows the table's last snapshot; an adopt on the stopped
 * connector commits a snapshot and changes no rows.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { refSnapshotId } from '../../src/commit/model.ts';
import { assertExactlyOnce, duckdbCount } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker } from '../helpers/worker.ts';

const TIMEOUT = 600_000;
const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;
const PARTITIONS = 2;

function records(from: number, count: number): { partition: number; value: unknown }[] {
  return Array.from({ length: count }, (_, i) => ({ partition: (from + i) % PARTITIONS, value: { id: from + i, note: `r${from + i}` } }));
}

/** Per partition, the offset after the last of `coords`. */
function endOffsets(coords: readonly Coordinates[]): Map<number, bigint> {
  const out = new Map<number, bigint>();
  for (const c of coords) if (c.offset + 1n > (out.get(c.partition) ?? 0n)) out.set(c.partition, c.offset + 1n);
  return out;
}

async function mainHead(table: string): Promise<bigint> {
  const e = stackEndpoints();
  const catalog = new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse });
  try {
    const id = refSnapshotId((await catalog.loadTable(parseIdentifier(table))).metadata, 'main');
    assert.ok(id !== undefined, `${table} has a snapshot`);
    return id;
  } finally {
    await catalog.close();
  }
}

test('replay runbook: roll the table back to a snapshot, offsets to what it holds, resume: every record exactly once', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('replay-src');
  const controlTopic = unique('replay-control');
  const table = `${uniqueIdent('replay')}.events`;
  res.topics.push(topic, controlTopic);
  res.tables.push(table);
  const connector = sinkConnector({
    name: unique('replay'),
    topics: topic,
    controlTopic,
    config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1500' },
  });

  const first = await produceJson(topic, PARTITIONS, records(0, 40));
  const w1 = startWorker({ connectors: [connector] });
  res.workers.push(w1);
  await waitCommitted(w1, table, 40);
  const afterFirst = await mainHead(table);
  const second = await produceJson(topic, PARTITIONS, records(40, 40));
  await waitCommitted(w1, table, 80);
  const third = await produceJson(topic, PARTITIONS, records(80, 40));
  await waitCommitted(w1, table, 120);
  const beforeReplay = await mainHead(table);
  assert.notEqual(beforeReplay, afterFirst, 'the later batches are in later snapshots');

  const replay = (): ReturnType<typeof spawnSync> =>
    spawnSync(process.execPath, [CLI, 'replay', join(w1.dir, 'worker.properties'), join(w1.dir, `${connector.name}.json`), '--table', table, '--snapshot', String(afterFirst)], {
      cwd: w1.dir,
      encoding: 'utf8',
      timeout: 120_000,
    });
  // While the worker consumes, the runbook refuses and changes nothing.
  const early = replay();
  assert.equal(early.status, 1, `refused while running: ${String(early.stderr)}`);
  assert.match(String(early.stderr), /has \d+ live member\(s\): stop the connector/);
  assert.equal(await mainHead(table), beforeReplay, 'the table is as it was');

  await stopWorker(w1);
  const run = replay();
  assert.equal(run.status, 0, `icefloe replay: ${String(run.stderr)}`);
  const report = JSON.parse(String(run.stdout)) as { snapshotId: string; replaced: string; offsets: { topic: string; partition: number; offset: string }[] };
  assert.equal(report.snapshotId, String(afterFirst));
  assert.equal(report.replaced, String(beforeReplay));
  const expected = endOffsets(first);
  assert.deepEqual(
    report.offsets.map((o) => [o.topic, o.partition, o.offset]).sort(),
    [...expected].map(([p, o]) => [topic, p, String(o)]).sort(),
    'each partition restarts just after the first batch',
  );
  // Rolled back: the table holds the first batch, once, and nothing else.
  await assertExactlyOnce(table, first);
  // Run again (an operator unsure whether it went through): it finds its own mark and changes nothing more.
  const again = replay();
  assert.equal(again.status, 0, `a second run: ${String(again.stderr)}`);
  assert.equal((JSON.parse(String(again.stdout)) as { replaySnapshotId: string }).replaySnapshotId, String(await mainHead(table)));

  const fourth = await produceJson(topic, PARTITIONS, records(120, 20));
  const w2 = startWorker({ connectors: [connector], dir: w1.dir });
  res.workers.push(w2);
  await waitCommitted(w2, table, 100, 180_000);
  await stopWorker(w2);
  const all = [...first, ...second, ...third, ...fourth];
  await assertExactlyOnce(table, all);
  assert.equal(await duckdbCount(table), all.length, 'DuckDB counts the same rows');
});

async function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

async function waitState(base: string, name: string, want: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last: unknown;
  while (Date.now() < deadline) {
    const r = await call(base, 'GET', `/connectors/${name}/status`);
    last = r.body;
    const s = r.body as { connector?: { state: string }; tasks?: { state: string }[] } | undefined;
    if (r.status === 200 && `${s?.connector?.state}:${(s?.tasks ?? []).map((x) => x.state).join(',')}` === want) return;
    await sleep(250);
  }
  throw new Error(`${name}: not ${want} within 60 s; last status ${JSON.stringify(last)}`);
}

test('replay runbook through the REST API: offsets refused while RUNNING and behind the table; stop, replay, resume: every record exactly once', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('replay-rest-src');
  const controlTopic = unique('replay-rest-control');
  const table = `${uniqueIdent('replay_rest')}.events`;
  res.topics.push(topic, controlTopic);
  res.tables.push(table);
  const connector = sinkConnector({
    name: unique('replay-rest'),
    topics: topic,
    controlTopic,
    config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1500' },
  });
  const name = connector.name;
  const w = startWorker({ connectors: [], args: [] });
  res.workers.push(w);
  const base = await w.restUrl();
  assert.equal((await call(base, 'POST', '/connectors', connector)).status, 201);
  const first = await produceJson(topic, PARTITIONS, records(0, 40));
  await waitCommitted(w, table, 40);
  const afterFirst = await mainHead(table);
  const second = await produceJson(topic, PARTITIONS, records(40, 40));
  await waitCommitted(w, table, 80);

  const patch = (offsets: unknown): Promise<{ status: number; body: unknown }> => call(base, 'PATCH', `/connectors/${name}/offsets`, { offsets });
  const back = [0, 1].map((p) => ({ partition: { kafka_topic: topic, kafka_partition: p }, offset: { kafka_offset: 0 } }));
  const running = await patch(back);
  assert.equal(running.status, 400);
  assert.match((running.body as { message: string }).message, /^Connectors must be in the STOPPED state before their offsets can be modified/);
  // The replay endpoint too is refused while the connector runs, and changes nothing.
  const replayUrl = `/connectors/${name}/iceberg/tables/${encodeURIComponent(table)}/replay`;
  const headBefore = await mainHead(table);
  const early = await call(base, 'POST', replayUrl, { snapshot_id: String(afterFirst) });
  assert.equal(early.status, 400, JSON.stringify(early.body));
  assert.match((early.body as { message: string }).message, /^Connectors must be in the STOPPED state before their offsets can be modified/);
  assert.equal(await mainHead(table), headBefore, 'the table is as it was');

  assert.equal((await call(base, 'PUT', `/connectors/${name}/stop`)).status, 204);
  await waitState(base, name, 'STOPPED:');
  const got = (await call(base, 'GET', `/connectors/${name}/offsets`)).body as { offsets: { partition: { kafka_partition: number }; offset: { kafka_offset: number } }[] };
  assert.deepEqual(got.offsets.map((o) => [o.partition.kafka_partition, o.offset.kafka_offset]).sort(), [[0, 40], [1, 40]], 'the group is past both batches');
  const behind = await patch(back);
  assert.equal(behind.status, 400, JSON.stringify(behind.body));
  assert.match((behind.body as { message: string }).message, new RegExp(`already holds them .*table ${table.replace('.', '\\.')}|table ${table.replace('.', '\\.')} already holds them`));
  const reset = await call(base, 'DELETE', `/connectors/${name}/offsets`);
  assert.equal(reset.status, 400, JSON.stringify(reset.body));

  // The runbook through the API (the connector has no file): STOPPED (the worker runs on), the replay
  // endpoint rolls the table back and moves the offsets. The id as a JSON number (a snapshot id is
  // usually past 2^53): the endpoint keeps its digits.
  const headAtReplay = await mainHead(table);
  const run = await fetch(`${base}${replayUrl}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"snapshot_id": ${afterFirst}}` });
  const report = (await run.json()) as { snapshotId: string; replaced: string; offsets: { topic: string; partition: number; offset: string }[] };
  assert.equal(run.status, 200, JSON.stringify(report));
  assert.equal(report.snapshotId, String(afterFirst));
  assert.equal(report.replaced, String(headAtReplay));
  assert.deepEqual(report.offsets.map((o) => [o.topic, o.partition, o.offset]).sort(), [...endOffsets(first)].map(([p, o]) => [topic, p, String(o)]).sort());
  const after = (await call(base, 'GET', `/connectors/${name}/offsets`)).body as typeof got;
  assert.deepEqual(after.offsets.map((o) => [o.partition.kafka_partition, o.offset.kafka_offset]).sort(), [[0, 20], [1, 20]], 'just after the first batch');
  await assertExactlyOnce(table, first);

  assert.equal((await call(base, 'PUT', `/connectors/${name}/resume`)).status, 202);
  await waitCommitted(w, table, 120, 180_000); // 80 before, then the second batch again
  // The committer's view of the table, the last snapshot id as a string (no digits lost).
  const tables = (await call(base, 'GET', `/connectors/${name}/iceberg/tables`)).body as { table: string; state: string; last_snapshot_id: string | null }[];
  assert.deepEqual(tables.map((x) => [x.table, x.state, x.last_snapshot_id]), [[table, 'RUNNING', String(await mainHead(table))]]);
  // Adopt (seeding's endpoint) on the stopped connector: one snapshot without files, the rows unchanged.
  assert.equal((await call(base, 'PUT', `/connectors/${name}/stop`)).status, 204);
  await waitState(base, name, 'STOPPED:');
  const adopted = await call(base, 'POST', `/connectors/${name}/iceberg/tables/${encodeURIComponent(table)}/adopt`, { holds_group_offsets: true });
  assert.equal(adopted.status, 200, JSON.stringify(adopted.body));
  assert.match((adopted.body as { table: string; result: string }).result, /^adopted: the table keeps what it holds/);
  assert.notEqual(await mainHead(table), BigInt(tables[0]?.last_snapshot_id ?? '0'), 'the adopt committed a snapshot');
  await stopWorker(w);
  await assertExactlyOnce(table, [...first, ...second]);
  assert.equal(await duckdbCount(table), first.length + second.length, 'DuckDB counts the same rows');
});
