/**
 * The connector's committer on memory fakes, rule by rule (docs/architecture.md, "Exactly-once"):
 * it never skips an announcement, restarts from the positions stored in the table, fails closed on
 * identity, re-plans on conflict and finds its own commit after an unknown outcome. Each test counts the
 * table's rows by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { announce, expected, logged, Rig, sortCoordinates, TABLE } from '../runtime/rig.ts';

test('a missing file stops the table; nothing after it is applied until it is back, then everything lands once', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const first = await announce(rig, [10]);
  const second = await announce(rig, [10]);
  const [lost] = await rig.storedDataFiles();
  assert.ok(lost !== undefined);
  const bytes = await rig.store.get(lost);
  await rig.store.delete(lost);
  const committer = rig.committer();
  await committer.round();
  const status = committer.tableStatus()[0];
  assert.equal(status?.state, 'STOPPED');
  assert.match(status?.reason?.message ?? '', /missing|not found|does not exist/i);
  assert.deepEqual(await rig.tableCoordinates(), [], 'no announcement is skipped: the table took nothing');
  await rig.store.put(lost, bytes);
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }));
});

test('a restarted committer starts from the positions stored in the table: each announcement once', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const first = await announce(rig, [10]);
  await rig.committer().round();
  const second = await announce(rig, [10]);
  const fresh = rig.committer();
  await fresh.round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }));
  assert.equal(fresh.commits.length, 1, 'the second committer committed only the second announcement');
});

test('a crash after the catalog applied a commit: the next committer finds it and commits nothing twice', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const produced = await announce(rig, [10]);
  const crashing = rig.committer({
    reach(point) {
      if (point === 'committer.after-catalog-commit') throw new Error('crash (injected)');
    },
  });
  await assert.rejects(crashing.round(), /crash/);
  const next = rig.committer();
  await next.round();
  assert.equal(next.commits.length, 0, 'nothing left to commit');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected(produced));
});

test('a recreated control topic stops the table instead of guessing (fail closed on identity)', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const produced = await announce(rig, [10]);
  await rig.committer().round();
  rig.kafka.deleteTopic('control-orders');
  rig.kafka.createTopic('control-orders', 1, { 'cleanup.policy': 'delete' });
  await announce(rig, [10]);
  const committer = rig.committer();
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'STOPPED');
  assert.ok(logged(rig, 'table stopped: nothing is committed to it until an operator repairs it').length > 0, 'logged at error level');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected(produced), 'only what was applied before');
});

/** Snapshots of the table that carry a commit id of this connector. */
async function ourSnapshots(rig: Rig): Promise<string[]> {
  const md = (await rig.catalog.loadTable(parseIdentifier(TABLE))).metadata;
  return md.snapshots.map((s) => s.summary['icefloe.commit-id']).filter((id): id is string => id !== undefined);
}

test('another writer committed first: the committer reloads, plans again and lands once', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const first = await announce(rig, [10]);
  await rig.committer().round();
  const second = await announce(rig, [10]);
  rig.memoryCatalog.commitFaults.push('other-writer-first');
  await rig.committer().round();
  assert.equal(rig.memoryCatalog.commitFaults.length, 0, 'the fault fired');
  const md = (await rig.catalog.loadTable(parseIdentifier(TABLE))).metadata;
  assert.equal(md.snapshots.length, 3, "ours, the other writer's, and ours again on top of it");
  assert.equal((await ourSnapshots(rig)).length, 2);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }));
});

test('the commit landed but its answer was lost: the committer finds its commit id and never resends', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const produced = await announce(rig, [10]);
  rig.memoryCatalog.commitFaults.push('apply-then-unknown');
  await rig.committer().round();
  assert.deepEqual(await ourSnapshots(rig), [(await ourSnapshots(rig))[0]], 'one snapshot with our commit id');
  assert.equal(logged(rig, 'table committed')[0]?.['resolvedBy'], 'reload');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected(produced));
});

test('the answer was lost and the commit did not land: it is committed once, after a reload', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const produced = await announce(rig, [10]);
  rig.memoryCatalog.commitFaults.push('unknown');
  await rig.committer().round();
  assert.equal((await ourSnapshots(rig)).length, 1);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected(produced));
});
