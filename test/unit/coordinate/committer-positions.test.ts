/**
 * The committer with the connector position C on memory fakes: C is seeded and committed every round,
 * a table rolled back under a live committer (or found rolled back by a restarted one) stops instead of
 * re-applying or skipping, and both recoveries of `icefloe positions` lead to every record exactly once.
 * Rows are counted by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { runPositionsTool } from '../../../src/coordinate/positions-tool.ts';
import type { PositionsAction } from '../../../src/coordinate/positions-tool.ts';
import { announce, CONTROL, expected, recordingLogger, Rig, sortCoordinates, TABLE } from '../runtime/rig.ts';

async function snapshotIds(rig: Rig): Promise<bigint[]> {
  return (await rig.catalog.loadTable(parseIdentifier(TABLE))).metadata.snapshots.map((s) => s.snapshotId);
}

function tool(rig: Rig, action: PositionsAction): ReturnType<typeof runPositionsTool> {
  return runPositionsTool({ connector: rig.connector, admin: rig.kafka.createAdmin(), catalog: rig.catalog, store: rig.store, log: recordingLogger(rig.log) }, TABLE, action);
}

test('C is seeded on the first round and committed as applied every round, changed or not', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  await announce(rig, [10]);
  const committer = rig.committer();
  await committer.round();
  const admin = rig.kafka.createAdmin();
  const first = await admin.groupOffsets('cg-control-orders-sink', CONTROL);
  assert.equal(first.length, 1);
  assert.match(first[0]?.metadata ?? '', /^icefloe\/1 applied /);
  assert.ok((first[0]?.offset ?? 0n) > 0n, 'past the applied announcement');
  await committer.round();
  assert.deepEqual(await admin.groupOffsets('cg-control-orders-sink', CONTROL), first);
});

for (const action of ['reapply', 'adopt'] as const) {
  test(`a live committer stops a table rolled back under it; --${action} resumes it, every record once`, async (t) => {
    const rig = await new Rig({ partitions: 1 }).init();
    t.after(() => rig.close());
    const first = await announce(rig, [10]);
    const committer = rig.committer();
    await committer.round();
    const second = await announce(rig, [10]);
    await committer.round();
    const [s1] = await snapshotIds(rig);
    assert.ok(s1 !== undefined);
    await rig.memoryCatalog.setRef(parseIdentifier(TABLE), s1);
    await committer.round();
    const status = committer.tableStatus()[0];
    assert.equal(status?.state, 'STOPPED');
    assert.equal(status?.reason?.code, 'positions-rolled-back');
    assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected(first), 'nothing re-applied, nothing skipped');
    const third = await announce(rig, [10]);
    await committer.round();
    assert.equal(committer.tableStatus()[0]?.state, 'STOPPED', 'still stopped: new announcements wait too');
    const report = await tool(rig, action);
    assert.match(report.result, action === 'reapply' ? /^marked/ : /^adopted/);
    await committer.round();
    await committer.round();
    assert.equal(committer.tableStatus()[0]?.state, 'RUNNING');
    const want = action === 'reapply' ? { 0: [...(first[0] ?? []), ...(second[0] ?? []), ...(third[0] ?? [])] } : { 0: [...(first[0] ?? []), ...(third[0] ?? [])] };
    assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected(want));
    const md = (await rig.catalog.loadTable(parseIdentifier(TABLE))).metadata;
    assert.equal(md.properties['icefloe.reapply.orders-sink'], undefined, 'a spent mark is removed');
  });
}

test('a restarted committer finds the table behind C with an announcement it no longer holds: stopped; --reapply repairs it', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const first = await announce(rig, [10]);
  await rig.committer().round();
  const second = await announce(rig, [10]);
  await rig.committer().round();
  const [s1] = await snapshotIds(rig);
  assert.ok(s1 !== undefined);
  await rig.memoryCatalog.setRef(parseIdentifier(TABLE), s1);
  const restarted = rig.committer();
  await restarted.round();
  assert.equal(restarted.tableStatus()[0]?.reason?.code, 'positions-rolled-back');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected(first));
  await tool(rig, 'reapply');
  await rig.committer().round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }));
});

test('a table dropped and recreated under a live committer starts at C: nothing of the old table re-applied, new records once', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  await announce(rig, [10]);
  const committer = rig.committer();
  await committer.round();
  await rig.memoryCatalog.recreateTable(parseIdentifier(TABLE));
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING', committer.tableStatus()[0]?.reason?.message);
  assert.deepEqual(await rig.tableCoordinates(), [], 'the old table\'s announcements are not applied to the new one');
  const later = await announce(rig, [10]);
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING', committer.tableStatus()[0]?.reason?.message);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: (later[0] ?? []).slice(-10) }));
});

test('a commit the catalog refuses stops only that table (the round completes), and it commits once the catalog accepts', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const produced = await announce(rig, [10]);
  const committer = rig.committer();
  rig.memoryCatalog.commitFaults.push('config');
  await committer.round();
  const status = committer.tableStatus()[0];
  assert.equal(status?.reason?.code, 'commit-failed');
  assert.ok(status?.oldestUnappliedMs !== undefined, 'the age of the oldest unapplied announcement is tracked');
  const c = await rig.kafka.createAdmin().groupOffsets('cg-control-orders-sink', CONTROL);
  assert.equal(c[0]?.offset, 0n, 'C does not pass what the failing table still needs');
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING');
  assert.equal(committer.tableStatus()[0]?.oldestUnappliedMs, undefined, 'nothing unapplied any more');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected(produced));
});
