/**
 * The committer on a shared, long control topic (issue 9 points 7 and 8), on memory fakes: catch-up in
 * bounded steps that commit as they go, a buffer that holds only this connector's records and is capped,
 * records that are not ours ignored and counted, and a future-version record of ours stopping our table.
 * Each test counts the table's rows by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { controlRecordKey, encodeAnnouncement } from '../../../src/coordinate/events.ts';
import { apacheSinkLikeEvent, futureVersionRecord, garbageRecord } from '../../helpers/foreign-control.ts';
import { CONTROL, expected, logged, Rig, sortCoordinates, until } from '../runtime/rig.ts';
import { announcement, file, span } from './fixtures.ts';

/** Runs one task over `count` records of partition 0 (cycles of 10), then stops it. */
async function announce(rig: Rig, count: number): Promise<bigint[]> {
  const produced = rig.produce(0, count);
  const task = rig.startTask(0);
  await until('offsets committed', () => rig.committedOffset(0) === (produced.at(-1) ?? -1n) + 1n);
  await task.stop();
  return produced;
}

/** Other connectors' announcements and foreign bytes: `n` records of about 2 KB each. */
function foreignTraffic(rig: Rig, n: number): void {
  const other = announcement(0, 'x', Array.from({ length: 6 }, (_, i) => file(`s3://other/f${i}.parquet`)), [span('refunds', 0, 0n, 9n)], { connector: 'refunds-sink' });
  const otherBytes = encodeAnnouncement(other, 1_000_000)[0] as Uint8Array;
  for (let i = 0; i < n; i++) {
    const r = i % 3 === 0 ? apacheSinkLikeEvent(i) : i % 3 === 1 ? garbageRecord(i, 2_000) : { key: controlRecordKey('refunds-sink', 0), value: otherBytes };
    rig.kafka.produce(CONTROL, 0, [r]);
  }
}

test('a committer behind a long control topic catches up in bounded steps, committing as it goes, each record once', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'icefloe.control.read.max-bytes': '8192', 'icefloe.control.buffer.max-bytes': '65536' } }).init();
  t.after(() => rig.close());
  const produced: bigint[] = [];
  for (let i = 0; i < 4; i++) {
    foreignTraffic(rig, 20);
    produced.push(...(await announce(rig, 20)));
  }
  const committer = rig.committer();
  const snapshotsSeen: number[] = [];
  let rounds = 0;
  do {
    await committer.round();
    rounds++;
    snapshotsSeen.push((await rig.tableCoordinates()).length);
    assert.ok(committer.controlStatus().bufferedBytes <= 65_536, 'the buffer stays under its cap');
  } while (committer.behind() && rounds < 100);
  assert.equal(committer.behind(), false);
  assert.ok(rounds >= 5, `read in steps (${rounds} rounds)`);
  const partial = snapshotsSeen.filter((n) => n > 0 && n < produced.length);
  assert.ok(partial.length > 0, `commits land before the end of the backlog (rows after each round: ${snapshotsSeen.join(', ')})`);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: produced }));
  const progress = logged(rig, 'control topic catch-up');
  assert.ok(progress.length >= rounds - 1);
  const first = progress[0] as { partitions: { partition: number; offset: string; endOffset: string }[]; records: number; bytes: number };
  assert.equal(first.partitions[0]?.partition, 0);
  assert.ok(BigInt(first.partitions[0]?.offset ?? '0') < BigInt(first.partitions[0]?.endOffset ?? '0'));
  assert.ok(first.bytes >= 8192 && first.records > 0);
  assert.equal(logged(rig, 'control topic caught up').length, 1);
  const s = committer.controlStatus();
  assert.equal(s.ignoredForeign + s.ignoredOtherConnector, 80);
  assert.ok(s.ignoredOtherConnector > 20 && s.ignoredForeign > 40);
});

test('records that are not ours (another connector, the Apache sink, garbage, a future version of another connector) are ignored and counted', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const first = await announce(rig, 10);
  foreignTraffic(rig, 9);
  const future = futureVersionRecord('refunds-sink');
  rig.kafka.produce(CONTROL, 0, [future]);
  const second = await announce(rig, 10);
  const committer = rig.committer();
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...first, ...second] }));
  const s = committer.controlStatus();
  assert.deepEqual({ other: s.ignoredOtherConnector, foreign: s.ignoredForeign }, { other: 4, foreign: 6 });
  const line = logged(rig, 'control records of others ignored').at(-1) ?? {};
  assert.deepEqual([line['otherConnector'], line['foreign'], line['totalOtherConnector'], line['totalForeign']], [4, 6, 4, 6]);
});

test('a future-version record of this connector stops its table with the reason; nothing after it is applied', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const first = await announce(rig, 10);
  const committer = rig.committer();
  await committer.round();
  rig.kafka.produce(CONTROL, 0, [futureVersionRecord(rig.connector.name)]);
  await announce(rig, 10);
  await committer.round();
  const status = committer.tableStatus()[0];
  assert.equal(status?.state, 'STOPPED');
  assert.equal(status?.reason?.code, 'unsupported-control-version');
  assert.match(status?.reason?.message ?? '', /newer Icefloe/);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: first }), 'everything before the record, nothing after it');
});

test('at the buffer cap a stopped table\'s records are dropped and the table parked; a restart reads them again, each once', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'icefloe.control.read.max-bytes': '4096', 'icefloe.control.buffer.max-bytes': '16384' } }).init();
  t.after(() => rig.close());
  const first = await announce(rig, 10);
  const [lost] = await rig.storedDataFiles();
  assert.ok(lost !== undefined);
  const bytes = await rig.store.get(lost);
  await rig.store.delete(lost);
  const later: bigint[] = [];
  for (let i = 0; i < 30; i++) later.push(...(await announce(rig, 10)));
  const committer = rig.committer();
  for (let i = 0; i < 50 && committer.controlStatus().parkedTables.length === 0; i++) await committer.round();
  assert.deepEqual(committer.controlStatus().parkedTables, ['db.orders']);
  assert.equal(committer.tableStatus()[0]?.state, 'STOPPED');
  assert.equal(logged(rig, 'control buffer full: dropped the records only stopped or failing tables need; each is read again from its stored positions (a stopped table after a restart, a failing one when it is tried again)').length, 1);
  for (let i = 0; i < 20; i++) await committer.round();
  assert.ok(committer.controlStatus().bufferedBytes < 16_384, `bounded: ${committer.controlStatus().bufferedBytes}`);
  assert.deepEqual(await rig.tableCoordinates(), [], 'never skipped: the stopped table took nothing');
  // The operator repairs the file and restarts the connector: a fresh committer reads from the table's positions.
  await rig.store.put(lost, bytes);
  const restarted = rig.committer();
  for (let i = 0; i < 100; i++) {
    await restarted.round();
    if (!restarted.behind()) break;
  }
  assert.equal(restarted.tableStatus()[0]?.state, 'RUNNING');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...first, ...later] }));
});

test('a split announcement longer than the buffer keeps its table waiting for the trailing parts, so reading pauses at the cap with an error; nothing is parked or skipped', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'icefloe.control.read.max-bytes': '4096', 'icefloe.control.buffer.max-bytes': '8192' } }).init();
  t.after(() => rig.close());
  const produced = await announce(rig, 10);
  const committer = rig.committer();
  await committer.round();
  const md = (await rig.catalog.loadTable(parseIdentifier('db.orders'))).metadata;
  const files = Array.from({ length: 150 }, (_, i) => file(`memory://warehouse/db/orders/data/split-${i}.parquet`));
  const parts = encodeAnnouncement(announcement(0, 'split', files, [span('orders', 0, 10n, 19n)], { tableUuid: md.tableUuid, schemaId: md.currentSchemaId }), 1024);
  assert.ok(parts.length > 20, `split in ${parts.length} parts`);
  // Every part but the last: the table waits for it (a task's transaction written so far).
  for (const value of parts.slice(0, -1)) rig.kafka.produce(CONTROL, 0, [{ key: controlRecordKey(rig.connector.name, 0), value }]);
  for (let i = 0; i < 10; i++) await committer.round();
  const paused = committer.controlStatus();
  assert.equal(logged(rig, 'control buffer full: reading the control topic pauses until tables commit (raise icefloe.control.buffer.max-bytes if this persists)').length, 1, 'logged once');
  for (let i = 0; i < 5; i++) await committer.round();
  assert.equal(committer.controlStatus().readRecords, paused.readRecords, 'no further reading while full');
  assert.ok(paused.bufferedBytes >= 8192 && paused.bufferedBytes < 8192 + 4096, `bounded: ${paused.bufferedBytes}`);
  assert.deepEqual(committer.controlStatus().parkedTables, [], 'a waiting table is not held back: never parked');
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: produced }), 'nothing of the incomplete announcement applied');
});

test('while the committer is behind, the loop runs the next round at once, not a commit interval later', async () => {
  const { CommitterLoop } = await import('../../../src/coordinate/committer-loop.ts');
  const { SILENT_LOGGER } = await import('../../../src/core/log.ts');
  let rounds = 0;
  const loop = new CommitterLoop({ round: () => Promise.resolve([++rounds]), behind: () => rounds < 5 }, { intervalMs: 60_000, wakeDelayMs: 1, log: SILENT_LOGGER });
  loop.wake(); // the first round; the next four follow because it is behind, the sixth waits for the interval
  await until('five rounds', () => rounds >= 5, 2_000);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(rounds, 5, 'caught up: the next round waits for the interval');
  await loop.stop();
});

test('an announcement starts a round after the wake delay, at once when every task of the last round has announced again', async (t) => {
  const { CommitterLoop } = await import('../../../src/coordinate/committer-loop.ts');
  const { SILENT_LOGGER } = await import('../../../src/core/log.ts');
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let rounds = 0;
  /** What the next rounds find: a commit, or nothing (the announcement not readable yet). */
  let finds = true;
  const loop = new CommitterLoop({
    round: () => {
      rounds++;
      return Promise.resolve(finds ? [rounds] : []);
    },
  }, { intervalMs: 60_000, wakeDelayMs: 100, log: SILENT_LOGGER });
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  const tick = async (ms: number): Promise<void> => {
    await settle();
    t.mock.timers.tick(ms);
    await settle();
    t.mock.timers.tick(0); // a zero delay scheduled by the tick above
    await settle();
  };
  // Tasks 0 and 1 announce: nothing known about the tasks yet, so the round waits for the delay.
  loop.wake(0);
  loop.wake(1);
  await tick(99);
  assert.equal(rounds, 0, 'before the wake delay, no round');
  await tick(1);
  assert.equal(rounds, 1);
  // Task 0 announces again: task 1 may be about to, so the round waits...
  loop.wake(0);
  await tick(50);
  assert.equal(rounds, 1, 'one of the two tasks announced: the round waits for the other');
  // ...until task 1 announces too: then at once.
  loop.wake(1);
  await tick(0);
  assert.equal(rounds, 2, 'both tasks announced: the round starts without waiting out the delay');
  // Both announce, the round starts at once but finds nothing yet (the transaction's markers not written):
  // it is tried again after the delay, not a commit interval later.
  finds = false;
  loop.wake(0);
  loop.wake(1);
  await tick(0);
  assert.equal(rounds, 3);
  finds = true;
  await tick(99);
  assert.equal(rounds, 3);
  await tick(1);
  assert.equal(rounds, 4, 'a round started at once that found nothing is tried again after the wake delay');
  await tick(100);
  assert.equal(rounds, 4, 'once');
  // Announcements without a task id (tasks of other workers, through the queue) count as one more task:
  // with them in the last round, the local tasks' announcements wait for theirs (or the delay).
  loop.wake(0);
  loop.wake();
  await tick(99);
  assert.equal(rounds, 4, 'a task of the last round has not announced: the delay applies');
  await tick(1);
  assert.equal(rounds, 5);
  loop.wake(0);
  await tick(50);
  assert.equal(rounds, 5, 'the other worker\'s tasks have not announced yet');
  loop.wake();
  await tick(0);
  assert.equal(rounds, 6, 'they have: at once');
  const stopped = loop.stop();
  await tick(0);
  await stopped;
});

test('a stopped table does not hold the buffer for the others: at the cap only it is parked, the other table commits on, each record once', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': 'db.orders,db.refunds', 'icefloe.control.read.max-bytes': '4096', 'icefloe.control.buffer.max-bytes': '16384' } }).init();
  t.after(() => rig.close());
  const first = await announce(rig, 10);
  const lost = (await rig.storedDataFiles()).find((f) => f.includes('/refunds/'));
  assert.ok(lost !== undefined);
  const bytes = await rig.store.get(lost);
  await rig.store.delete(lost);
  const later: bigint[] = [];
  for (let i = 0; i < 30; i++) later.push(...(await announce(rig, 10)));
  const committer = rig.committer();
  for (let i = 0; i < 100; i++) {
    await committer.round();
    assert.ok(committer.controlStatus().bufferedBytes < 16_384 + 4_096, 'bounded');
    if (!committer.behind() && committer.controlStatus().parkedTables.length > 0) break;
  }
  assert.deepEqual(committer.controlStatus().parkedTables, ['db.refunds'], 'only the stopped table is parked');
  assert.deepEqual(
    committer.tableStatus().map((s) => [s.table, s.state]),
    [['db.orders', 'RUNNING'], ['db.refunds', 'STOPPED']],
  );
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates('db.orders')), expected({ 0: [...first, ...later] }), 'the running table has everything');
  assert.deepEqual(await rig.tableCoordinates('db.refunds'), []);
  await rig.store.put(lost, bytes);
  const restarted = rig.committer();
  for (let i = 0; i < 100; i++) {
    await restarted.round();
    if (!restarted.behind()) break;
  }
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates('db.refunds')), expected({ 0: [...first, ...later] }), 'after a restart the parked table gets every record once');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates('db.orders')), expected({ 0: [...first, ...later] }), 'and the other table nothing twice');
});
