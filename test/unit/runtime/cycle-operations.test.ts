/**
 * The task's cycle under operations (issue 9 point 5), on the memory fakes: a commit or abort that timed
 * out is resumed by calling it again (librdkafka's rule, which the memory producer enforces with its
 * conflicts); the files of a cycle whose transaction never began are deleted. (Point 4, the zombie whose
 * cycle moves no offset, needs a task frozen inside its cycle: test/e2e/sink-zombie-cycle.test.ts.) Each test ends with the table holding
 * every record once, by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RetriableError } from '../../../src/core/errors.ts';
import { CONTROL, expected, logged, Rig, sortCoordinates, TOPIC, until } from './rig.ts';

async function commitAll(rig: Rig): Promise<string[]> {
  await rig.committer().round();
  return sortCoordinates(await rig.tableCoordinates());
}

test('a commit that timed out is resumed by committing again, never aborted: the cycle commits once', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 40);
  const task = rig.startTask(0);
  task.producer.timeOutNext('commitTransaction');
  task.producer.timeOutNext('commitTransaction');
  await until('offsets committed', () => rig.committedOffset(0) === 40n);
  const p0b = rig.produce(0, 10);
  await until('the next cycle committed too', () => rig.committedOffset(0) === 50n);
  await task.stop();
  assert.equal(task.producer.pendingCall, undefined, 'no call is left pending');
  assert.equal(task.task.metrics.callsResumed, 2);
  assert.equal(task.task.metrics.cyclesAborted, 0, 'the timed-out commit was not treated as a failure');
  assert.equal(task.task.metrics.recordsConsumed, 50, 'nothing read twice');
  assert.equal(logged(rig, 'transaction call timed out; resuming it').length, 2);
  assert.deepEqual(await commitAll(rig), expected({ 0: [...p0, ...p0b] }));
});

test('an abort that timed out is resumed: the files go once it is known aborted, and the next begin works', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 40);
  const task = rig.startTask(0);
  task.producer.failNext('sendOffsetsToTransaction', new RetriableError('Kafka send-offsets failed: timed out (injected)'));
  task.producer.timeOutNext('abortTransaction');
  await until('offsets committed after the retry', () => rig.committedOffset(0) === 40n);
  await task.stop();
  assert.equal(task.producer.pendingCall, undefined);
  assert.equal(task.task.metrics.cyclesAborted, 1);
  assert.equal(task.task.metrics.callsResumed, 1);
  assert.deepEqual(await commitAll(rig), expected({ 0: p0 }));
  const referenced = new Set(await rig.tableFiles());
  assert.deepEqual((await rig.storedDataFiles()).filter((f) => !referenced.has(f)), [], 'no file of the aborted cycle is left behind');
});

test('a cycle whose transaction never began deletes its files (no leak per retry)', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 20);
  const task = rig.startTask(0);
  for (let i = 0; i < 3; i++) task.producer.failNext('beginTransaction', new RetriableError('Kafka begin-transaction failed (injected)'));
  await until('offsets committed after the retries', () => rig.committedOffset(0) === 20n);
  await task.stop();
  assert.equal(task.task.metrics.cyclesAborted, 3);
  assert.deepEqual(await commitAll(rig), expected({ 0: p0 }));
  const referenced = new Set(await rig.tableFiles());
  assert.deepEqual((await rig.storedDataFiles()).filter((f) => !referenced.has(f)), [], 'the files of the cycles that never began were deleted');
});

test('an idle partition of a transactionally produced topic counts as caught up: no empty transaction every interval', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.control.commit.interval-ms': '30', 'icefloe.commit.max-records': '1000000' } }).init();
  t.after(() => rig.close());
  // A transactional producer writes the source topic: a commit marker follows the records, so the
  // partition's high watermark stays one past the offset after the last record.
  const source = rig.kafka.createProducer('upstream-app');
  await source.initTransactions();
  await source.beginTransaction();
  await source.send(Array.from({ length: 5 }, (_, i) => ({ topic: TOPIC, partition: 0, key: `k${i}`, value: new TextEncoder().encode(JSON.stringify({ n: i })), timestamp: 1_700_000_000_000 + i })));
  await source.commitTransaction();
  const task = rig.startTask(0);
  await until('the records committed', () => rig.committedOffset(0) === 5n);
  const cycles = task.task.metrics.cyclesCommitted;
  await new Promise((resolve) => setTimeout(resolve, 300)); // ten intervals, idle
  const idleCycles = task.task.metrics.cyclesCommitted - cycles;
  await task.stop();
  assert.ok(idleCycles <= 1, `an idle task committed ${idleCycles} cycles in 10 intervals (at most one to report it caught up)`);
  const reports = rig.kafka
    .readPartition(CONTROL, 0)
    .filter((e) => e.kind === 'record' && e.state === 'committed' && e.record?.value != null)
    .map((e) => JSON.parse(new TextDecoder().decode(e.record?.value ?? new Uint8Array())) as { type: string; assignments?: { caughtUp: boolean; nextOffset: number }[] })
    .filter((e) => e.type === 'cycle-complete');
  assert.equal(reports.at(-1)?.assignments?.[0]?.caughtUp, true, 'the last report says the partition was read to its end (past the marker)');
  assert.deepEqual(await commitAll(rig), expected({ 0: [0n, 1n, 2n, 3n, 4n] }));
});

test('M2: a task whose commit keeps timing out leaves the resume loop when stopped; the cycle\'s files stay (the commit may land) and a successor commits every record once', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 30);
  const task = rig.startTask(0);
  task.producer.keepTimingOut('commitTransaction');
  t.after(() => task.producer.stopTimingOut()); // never leave a loop behind, whatever the assertions say
  await until('the commit timed out and was resumed a few times', () => task.task.metrics.callsResumed >= 3);
  const filesBefore = await rig.storedDataFiles();
  assert.ok(filesBefore.length > 0, 'the cycle uploaded its files');
  const outcome = await Promise.race([task.stop().then(() => 'stopped'), new Promise((resolve) => setTimeout(resolve, 2_000, 'still resuming'))]);
  task.producer.stopTimingOut();
  assert.equal(outcome, 'stopped', 'stop() ends a task whose commit keeps timing out');
  assert.equal(task.task.state, 'STOPPED');
  assert.equal(logged(rig, 'transaction call left pending: the task is stopping').length, 1);
  const stored = new Set(await rig.storedDataFiles());
  assert.deepEqual(filesBefore.filter((f) => !stored.has(f)), [], 'no file of the cycle whose commit may land was deleted');
  assert.equal(rig.committedOffset(0), null, 'the pending commit did not land');
  // The successor's registration aborts the pending transaction (fencing the stopped producer) and reads again.
  const next = rig.startTask(0);
  await until('the successor committed', () => rig.committedOffset(0) === 30n);
  await next.stop();
  assert.deepEqual(await commitAll(rig), expected({ 0: p0 }));
});
