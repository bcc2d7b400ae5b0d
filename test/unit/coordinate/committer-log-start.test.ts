/**
 * The connector position C compared with the control topic's log start (review commit-protocol-2 N3, N5,
 * the L3 residuals), on memory fakes. With dynamic routing a committer learns its tables only from what it
 * reads, so a table whose only announcements retention deleted is unknown to it: the gap between what C
 * vouches for (or what was read) and the log start is found and the connector stops loudly, never clamped
 * silently. With a re-seeded C (its offsets expired or deleted), each table's positions are compared with
 * the log start. Rows are counted by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { runPositionsTool } from '../../../src/coordinate/positions-tool.ts';
import { announce, CONTROL, expected, recordingLogger, Rig, sortCoordinates, TABLE, until } from '../runtime/rig.ts';
import { withSnapshot } from './fixtures.ts';

const DYNAMIC = { 'iceberg.tables': '', 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 't' };
const GROUP = 'cg-control-orders-sink';

let seq = 0;
/** One task cycle of 10 records routed to `table` (source partition 0); returns their offsets. */
async function cycle(rig: Rig, table: string): Promise<bigint[]> {
  const produced = rig.kafka.produce('orders', 0, Array.from({ length: 10 }, () => ({ key: `k${seq}`, value: JSON.stringify({ n: seq++, t: table }), timestamp: 1_700_000_000_000 + seq })));
  const task = rig.startTask(0);
  await until('offsets committed', () => rig.committedOffset(0) === (produced.at(-1) ?? -1n) + 1n);
  await task.stop();
  return produced;
}

function deleteWholeLog(rig: Rig): void {
  rig.kafka.deleteRecordsBefore(CONTROL, 0, rig.kafka.watermarks(CONTROL, 0).high);
}

function show(v: unknown): string {
  return JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? String(x) : x));
}

async function c(rig: Rig): Promise<bigint | undefined> {
  return (await rig.kafka.createAdmin().groupOffsets(GROUP, CONTROL))[0]?.offset;
}

test('N3: dynamic routing, a restarted committer: a table whose only announcements retention deleted is never learned; the gap between C and the log start stops the connector, C stays, and a restart says it again', async (t) => {
  const rig = await new Rig({ partitions: 1, config: DYNAMIC }).init();
  t.after(() => rig.close());
  const a1 = await cycle(rig, 'db.a');
  await cycle(rig, 'db.b');
  await rig.committer().round();
  const applied = await c(rig);
  // The committer is down: b's next cycle is announced, and retention deletes it before anyone applied it.
  await cycle(rig, 'db.b');
  deleteWholeLog(rig);

  const restarted = rig.committer();
  await restarted.round();
  const stop = restarted.tableStatus().find((s) => s.state === 'STOPPED');
  assert.equal(stop?.reason?.code, 'control-records-lost', show(restarted.tableStatus()));
  assert.equal(stop?.reason?.partition, 0);
  assert.equal(stop?.reason?.offset, applied);
  assert.match(stop?.reason?.message ?? '', /cg-control-orders-sink/, 'the recovery is named');
  assert.equal(await c(rig), applied, 'C does not pass the gap');
  await restarted.round();
  assert.equal(await c(rig), applied);

  const again = rig.committer();
  await again.round();
  assert.equal(again.tableStatus().find((s) => s.state === 'STOPPED')?.reason?.code, 'control-records-lost', 'still loud after a restart');

  // The documented acknowledgment: delete the connector position's group; C is seeded at the log start.
  await rig.kafka.createAdmin().deleteGroup(GROUP);
  const acknowledged = rig.committer();
  await acknowledged.round();
  assert.deepEqual(acknowledged.tableStatus().filter((s) => s.state === 'STOPPED'), []);
  assert.equal(await c(rig), rig.kafka.watermarks(CONTROL, 0).high);
  const a2 = await cycle(rig, 'db.a');
  await acknowledged.round();
  assert.deepEqual(acknowledged.tableStatus().filter((s) => s.state === 'STOPPED'), []);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates('db.a')), expected({ 0: [...a1, ...a2] }));
});

test('N3: dynamic routing, a live committer catching up in bounded steps: retention deletes records it had not read yet; the gap stops the connector instead of a silent jump of the cursor', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { ...DYNAMIC, 'icefloe.control.read.max-bytes': '1024', 'icefloe.control.buffer.max-bytes': '1048576' } }).init();
  t.after(() => rig.close());
  // A shared control topic: records that are not this connector's come first, then b's cycle.
  for (let i = 0; i < 5; i++) rig.kafka.produce(CONTROL, 0, [{ key: null, value: 'x'.repeat(1500) }]);
  await cycle(rig, 'db.b');
  const committer = rig.committer();
  await committer.round();
  assert.equal(committer.behind(), true, 'the committer reads in steps');
  const readTo = await c(rig);
  deleteWholeLog(rig);
  const logStart = rig.kafka.watermarks(CONTROL, 0).low;
  await committer.round();
  const stop = committer.tableStatus().find((s) => s.state === 'STOPPED');
  assert.equal(stop?.reason?.code, 'control-records-lost', show(committer.tableStatus()));
  assert.equal(stop?.reason?.offset, readTo);
  assert.ok(((await c(rig)) ?? 0n) < logStart, 'C does not pass the gap');
});

test('N3: dynamic routing, a restarted committer, C held back by a stopped table and R past the log start: the stopped table\'s deleted announcements are a gap until it is learned; the others go on', async (t) => {
  const rig = await new Rig({ partitions: 1, config: DYNAMIC }).init();
  t.after(() => rig.close());
  await cycle(rig, 'db.x');
  const y1 = await cycle(rig, 'db.y');
  const live = rig.committer();
  await live.round();
  // x's next cycle loses its file: x stops and holds C back; y goes on, so R passes C.
  const before = new Set(await rig.storedDataFiles());
  await cycle(rig, 'db.x');
  for (const path of (await rig.storedDataFiles()).filter((p) => !before.has(p))) await rig.store.delete(path);
  const y2 = await cycle(rig, 'db.y');
  await live.round();
  assert.equal(live.tableStatus().find((s) => s.table === 'db.x')?.reason?.code, 'file-missing');
  deleteWholeLog(rig);

  const restarted = rig.committer();
  await restarted.round();
  const gap = restarted.tableStatus().find((s) => s.table.startsWith('(unknown tables'));
  assert.equal(gap?.reason?.code, 'control-records-lost', show(restarted.tableStatus()));
  const y3 = await cycle(rig, 'db.y');
  await restarted.round();
  assert.equal(restarted.tableStatus().find((s) => s.table === 'db.y')?.state, 'RUNNING', 'y is covered by R');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates('db.y')), expected({ 0: [...y1, ...y2, ...y3] }));
  assert.ok(restarted.tableStatus().some((s) => s.table.startsWith('(unknown tables')), 'x is still unknown');

  // Once x announces again it is known: it checks its own position (below the log start) and the gap closes.
  await cycle(rig, 'db.x');
  await restarted.round();
  assert.equal(restarted.tableStatus().find((s) => s.table === 'db.x')?.reason?.code, 'control-records-lost');
  assert.equal(restarted.tableStatus().find((s) => s.table.startsWith('(unknown tables')), undefined, show(restarted.tableStatus()));
});

/** One task cycle of 10 records of the static rig (source partition 0). */
async function staticCycle(rig: Rig): Promise<bigint[]> {
  return (await announce(rig, [10]))[0] ?? [];
}

test('N5: C re-seeded (its offsets expired or deleted) after a table\'s unapplied announcement was deleted: the table stops, and the seed never vouches for it, even after a restart; --adopt acknowledges', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const first = await staticCycle(rig);
  await rig.committer().round();
  // The worker is down for longer than offsets.retention.minutes and the control topic's retention: the
  // cycle announced before it stopped is deleted, and so are C's offsets.
  await staticCycle(rig);
  deleteWholeLog(rig);
  await rig.kafka.createAdmin().deleteGroup(GROUP);

  const reseeded = rig.committer();
  await reseeded.round();
  assert.equal(reseeded.tableStatus()[0]?.reason?.code, 'control-records-lost', show(reseeded.tableStatus()));
  const restarted = rig.committer();
  await restarted.round();
  assert.equal(restarted.tableStatus()[0]?.reason?.code, 'control-records-lost', 'a restart does not take the seed for proof that the table applied everything below it');
  assert.match((await rig.kafka.createAdmin().groupOffsets(GROUP, CONTROL))[0]?.metadata ?? '', / seed /, 'C stays a seed while a table is below it');

  await runPositionsTool({ connector: rig.connector, admin: rig.kafka.createAdmin(), catalog: rig.catalog, store: rig.store, log: recordingLogger(rig.log) }, TABLE, 'adopt');
  const third = await staticCycle(rig);
  await restarted.round();
  assert.equal(restarted.tableStatus()[0]?.state, 'RUNNING', show(restarted.tableStatus()));
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...first, ...third] }));
});

test('N5: C re-seeded after the connector ran, and a table that never committed (fresh) known to the committer: its announcements may have been deleted below the seed, so it stops instead of starting at the seed', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': `${TABLE},db.fresh` } }).init();
  t.after(() => rig.close());
  await staticCycle(rig);
  await rig.committer().round();
  // db.fresh is created (empty) by an operator; a cycle announced for both tables is deleted with C's offsets.
  await rig.memoryCatalog.recreateTable(parseIdentifier('db.fresh'));
  await staticCycle(rig);
  deleteWholeLog(rig);
  await rig.kafka.createAdmin().deleteGroup(GROUP);
  const reseeded = rig.committer();
  await reseeded.round();
  const fresh = reseeded.tableStatus().find((s) => s.table === 'db.fresh');
  assert.equal(fresh?.reason?.code, 'control-records-lost', show(reseeded.tableStatus()));
  await reseeded.round();
  const again = rig.committer();
  await again.round();
  assert.equal(again.tableStatus().find((s) => s.table === 'db.fresh')?.reason?.code, 'control-records-lost', 'still after a restart');
});

test('N5: the first start of a connector on a shared control topic whose log no longer starts at 0: nothing of this connector can have been deleted, its fresh tables start at the seed', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  for (let i = 0; i < 3; i++) rig.kafka.produce(CONTROL, 0, [{ key: null, value: 'another product' }]);
  deleteWholeLog(rig);
  const produced = await staticCycle(rig);
  const committer = rig.committer();
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING', show(committer.tableStatus()));
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: produced }));
});

test('N5: on a first start (no table committed by the connector before) a table stopped without positions does not keep C a seed: C turns applied, with R, as before', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': `${TABLE},db.other` } }).init();
  t.after(() => rig.close());
  for (let i = 0; i < 3; i++) rig.kafka.produce(CONTROL, 0, [{ key: null, value: 'another product' }]);
  deleteWholeLog(rig);
  const produced = await staticCycle(rig);
  // db.other was written by another engine first: it stops (positions-unseeded) until an operator seeds it.
  const other = parseIdentifier('db.other');
  await rig.memoryCatalog.replaceMetadata(other, withSnapshot((await rig.catalog.loadTable(other)).metadata, {}));
  const committer = rig.committer();
  await committer.round();
  assert.equal(committer.tableStatus().find((s) => s.table === 'db.other')?.reason?.code, 'positions-unseeded');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: produced }));
  assert.match((await rig.kafka.createAdmin().groupOffsets(GROUP, CONTROL))[0]?.metadata ?? '', / applied .* rest=/);
});
