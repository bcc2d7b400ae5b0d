/**
 * A transactional producer the broker left in a state it cannot leave (issue 10 point 1), on the memory
 * fakes: the failures a broker restart produced on the real stack (send-offsets cut on the transport,
 * then the abort refused with INVALID_TXN_STATE, librdkafka's fatal state) are injected, and the task
 * must re-create its producer (same transactional.id) and go on by itself — never fail, never lose or
 * duplicate a record (by Kafka coordinates), and delete only the files no commit call can have announced.
 * The real broker restarts are in test/e2e/sink-broker-restart.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorMessage, RetriableError } from '../../../src/core/errors.ts';
import { appliedButFailed } from '../../../src/consume/memory/index.ts';
import { fencedError, isFenced, ProducerResetRequiredError } from '../../../src/consume/port.ts';
import { expected, logged, Rig, sortCoordinates, until } from './rig.ts';

async function commitAll(rig: Rig): Promise<string[]> {
  await rig.committer().round();
  return sortCoordinates(await rig.tableCoordinates());
}

const invalidTxnState = (op: string): ProducerResetRequiredError =>
  new ProducerResetRequiredError(`Kafka ${op} failed: Broker: Producer attempted a transactional operation in an invalid state (ERR_INVALID_TXN_STATE) (injected)`);

async function unreferencedFiles(rig: Rig): Promise<string[]> {
  const referenced = new Set(await rig.tableFiles());
  return (await rig.storedDataFiles()).filter((f) => !referenced.has(f));
}

test('send-offsets cut on the transport, then the abort refused (invalid state): the producer is re-created and the cycle lands once', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 40);
  const task = rig.startTask(0);
  task.producer.failNext('sendOffsetsToTransaction', new RetriableError('Kafka send-offsets failed: Local: Broker transport failure (ERR__TRANSPORT) (injected)'));
  task.producer.failNext('abortTransaction', invalidTxnState('abort-transaction'));
  await until('offsets committed after the re-creation', () => rig.committedOffset(0) === 40n);
  const p0b = rig.produce(0, 10);
  await until('the next cycle commits with the new producer', () => rig.committedOffset(0) === 50n);
  await task.stop();
  assert.equal(task.task.state, 'STOPPED', 'the task never failed');
  assert.equal(task.task.metrics.producerResets, 1);
  assert.equal(task.task.metrics.cyclesAborted, 1);
  assert.equal(logged(rig, 'abort failed; the producer is re-created before the next cycle').length, 1);
  assert.equal(logged(rig, 'transactional producer re-created').length, 1);
  assert.deepEqual(await commitAll(rig), expected({ 0: [...p0, ...p0b] }));
  assert.deepEqual(await unreferencedFiles(rig), [], 'the cycle never reached its commit call: its files were deleted though the abort failed');
});

test('a producer in librdkafka\'s fatal state at begin is re-created; a re-creation the broker is not back for is retried', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 30);
  const task = rig.startTask(0);
  task.producer.failNext('beginTransaction', new ProducerResetRequiredError('Kafka begin-transaction failed: Local: Fatal error (ERR__FATAL) (injected)'));
  for (let i = 0; i < 2; i++) task.producer.failNext('reinitialize', new RetriableError('Kafka init-transactions failed: Local: Timed out (ERR__TIMED_OUT) (injected)'));
  await until('offsets committed', () => rig.committedOffset(0) === 30n);
  await task.stop();
  assert.equal(task.task.state, 'STOPPED');
  assert.equal(task.task.metrics.producerResets, 1, 'one re-creation, after two attempts the broker was away for');
  assert.equal(logged(rig, 'cycle abandoned; reading again from the committed offsets').length, 3);
  assert.deepEqual(await commitAll(rig), expected({ 0: p0 }));
});

test('a commit that went through but left the producer dead: files kept (announced), producer re-created, nothing read twice', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 40);
  const task = rig.startTask(0);
  task.producer.failNext('commitTransaction', appliedButFailed(new ProducerResetRequiredError('Kafka commit-transaction failed: Local: Fatal error (ERR__FATAL) (injected)')));
  await until('the cycle failed once', () => task.task.metrics.cyclesAborted === 1);
  const p0b = rig.produce(0, 10);
  await until('the next cycle', () => rig.committedOffset(0) === 50n);
  await task.stop();
  assert.equal(task.task.metrics.producerResets, 1);
  assert.equal(task.task.metrics.recordsConsumed, 50, 'the rewind found the committed offsets');
  assert.deepEqual(await commitAll(rig), expected({ 0: [...p0, ...p0b] }), 'the announced files exist, so the committer applies them');
});

test('a fence by another process is not reset away: the task stops, naming the transactional.id and the setting to check', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  rig.produce(0, 10);
  const task = rig.startTask(0);
  await until('the first cycle', () => rig.committedOffset(0) === 10n);
  await rig.kafka.createProducer(`${rig.connector.name}-0`).initTransactions(); // a second worker's task 0
  rig.produce(0, 10);
  const error = await task.ended;
  assert.ok(isFenced(error), `fenced, got ${String(error)}`);
  assert.match(errorMessage(error), /another process uses transactional\.id orders-sink-0 \(a successor of this task, or two workers with overlapping icefloe\.tasks\.id-offset\?\)/);
  assert.equal(task.task.restartable, false, 'the worker does not restart it: the other process would be fenced in turn');
  assert.equal(task.task.metrics.producerResets, 0);
  assert.equal(rig.committedOffset(0), 10n);
});

test('fenced while aborting (a successor registered the id meanwhile): the task stops, the producer is not re-created', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  rig.produce(0, 10);
  const task = rig.startTask(0);
  task.producer.failNext('sendOffsetsToTransaction', new RetriableError('Kafka send-offsets failed: Local: Timed out (ERR__TIMED_OUT) (injected)'));
  task.producer.failNext('abortTransaction', fencedError('Kafka abort-transaction failed: Producer fenced (ERR__FENCED): another process uses transactional.id orders-sink-0 (injected)'));
  const error = await task.ended;
  assert.ok(isFenced(error), `the fence ends the task, not the send-offsets failure before it: ${String(error)}`);
  assert.equal(task.task.metrics.producerResets, 0, 'a new producer would fence the successor in turn');
  assert.equal(logged(rig, 'abort failed; the producer is re-created before the next cycle').length, 0);
});
