/**
 * Infrastructure failures in a task's cycles (issue 14): retried with a back-off that grows up to
 * errors.retry.delay.max.ms, never handed to errors.tolerance, named in the task's status while they last
 * and cleared by the next committed cycle; errors.retry.timeout 0 and -1 retry without limit, a positive
 * one fails the task (not restartable) once failures went on that long without a committed cycle. Also the
 * committer's side: a table whose commits fail is named in the connector's status until a round gets
 * through. On the memory fakes (rig.ts); the real services behind the fault proxy are in
 * test/e2e/sink-infra-faults.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import avro from 'avsc';
import { errorMessage, FatalError, RetriableError } from '../../../src/core/errors.ts';
import type { MemoryOperation } from '../../../src/upload/memory.ts';
import { connectorWhy } from '../../../src/runtime/connector-status.ts';
import type { ConnectorStatus } from '../../../src/runtime/worker.ts';
import { restartable } from '../../../src/runtime/task.ts';
import type { SchemaResolver } from '../../../src/decode/registry-port.ts';
import { expected, logged, Rig, sortCoordinates, TOPIC, until } from './rig.ts';

/** An object store whose data-file uploads fail while `down` (the memory catalog's metadata writes go through). */
function outage(): { down: boolean; failures: number; before: (op: MemoryOperation, location: string) => void } {
  const o = {
    down: true,
    failures: 0,
    before: (op: MemoryOperation, location: string): void => {
      if (o.down && op === 'put' && location.endsWith('.parquet')) {
        o.failures++;
        throw new RetriableError(`S3 PUT ${location} failed: 503 SlowDown (injected store outage)`);
      }
    },
  };
  return o;
}

/** Time as the task sees it: real time plus every back-off it asked for, which it does not really wait. */
function fakeTime(): { now: () => number; sleep: (ms: number) => Promise<void>; delays: number[]; skippedMs: () => number } {
  let skipped = 0;
  const delays: number[] = [];
  return {
    now: () => Date.now() + skipped,
    sleep: (ms) => {
      delays.push(ms);
      skipped += ms;
      return new Promise((resolve) => setTimeout(resolve, 1));
    },
    delays,
    skippedMs: () => skipped,
  };
}

test('a store outage: waits grow up to errors.retry.delay.max.ms, the status names it, nothing is tolerated, every record lands once after it', async (t) => {
  const store = outage();
  // Five records and a 50 ms interval: each attempt's poll goes through (the records are read again) and
  // only the cycle's end fails, a poll later — the failures are in a row all the same.
  const rig = await new Rig({
    beforeStoreOperation: store.before,
    config: { 'errors.tolerance': 'all', 'errors.retry.delay.max.ms': '1000', 'iceberg.control.commit.interval-ms': '50' },
  }).init();
  t.after(() => rig.close());
  const delays: number[] = [];
  const p0 = rig.produce(0, 5);
  // Real time (the waits are only recorded), so that the interval starts again after each rewind.
  const sleep = (ms: number): Promise<void> => (delays.push(ms), new Promise((resolve) => setTimeout(resolve, 1)));
  const task = rig.startTask(0, { sleep, random: () => 0.99 });
  await until('eight retries', () => delays.length >= 8, 20_000);
  const note = task.task.progressNote ?? '';
  assert.match(note, /^retrying: \d+ failure\(s\) in a row since \S+, no cycle committed since; reading again from the committed offsets: S3 PUT \S+ failed: 503 SlowDown \(injected store outage\)$/);
  assert.equal(task.task.state, 'RUNNING');
  const waits = delays.slice(0, 8);
  assert.ok(waits.every((d) => d >= 200 && d <= 1000), `every wait within [200, 1000]: ${waits.join(', ')}`);
  assert.ok(waits.filter((d) => d === 1000).length >= 4, `the waits reach the cap and stay there: ${waits.join(', ')}`);
  assert.ok((waits[0] ?? 0) < 1000, `the first wait is short: ${waits.join(', ')}`);
  store.down = false;
  await until('offsets committed after the outage', () => rig.committedOffset(0) === 5n, 20_000);
  await until('the status no longer names the outage', () => task.task.progressNote === undefined);
  await task.stop();
  assert.equal(task.task.state, 'STOPPED');
  assert.equal(task.task.metrics.errorsSkipped, 0, 'an infrastructure failure never reaches errors.tolerance');
  await rig.committer().round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: p0 }));
});

test('errors.retry.timeout > 0: the task fails, naming the cause and the key, once failures went on that long; the worker does not restart it', async (t) => {
  const store = outage();
  const rig = await new Rig({ beforeStoreOperation: store.before, config: { 'errors.retry.timeout': '5000', 'errors.retry.delay.max.ms': '1000' } }).init();
  t.after(() => rig.close());
  const time = fakeTime();
  rig.produce(0, 25);
  const task = rig.startTask(0, { nowMs: time.now, sleep: time.sleep, random: () => 0.5 });
  await until('retrying', () => task.task.progressNote !== undefined, 10_000);
  const error = await Promise.race([task.ended, new Promise((resolve) => setTimeout(() => resolve('still running after 10 s'), 10_000))]);
  assert.ok(error instanceof FatalError, `FatalError, got ${String(error)}`);
  assert.match(
    errorMessage(error),
    /^errors\.retry\.timeout \(5000 ms\) passed: infrastructure failing for \d+ ms since \S+ \(\d+ failure\(s\) in a row, no cycle committed\); last error: S3 PUT \S+ failed: 503 SlowDown \(injected store outage\)\. The task stays FAILED/,
  );
  assert.ok(time.skippedMs() >= 4000 && time.skippedMs() < 7000, `failed soon after 5 s of failures, not before: ${time.skippedMs()} ms waited`);
  assert.equal(task.task.state, 'FAILED');
  assert.match(task.task.trace ?? '', /errors\.retry\.timeout \(5000 ms\) passed/);
  assert.equal(task.task.restartable, false);
  assert.equal(restartable(error), false);
  assert.equal(rig.committedOffset(0), null, 'nothing was committed');
});

for (const timeout of ['0', '-1']) {
  test(`errors.retry.timeout=${timeout}: an outage of over an hour is retried without limit and ridden out`, async (t) => {
    const store = outage();
    const rig = await new Rig({ beforeStoreOperation: store.before, config: { 'errors.retry.timeout': timeout, 'errors.retry.delay.max.ms': '600000' } }).init();
    t.after(() => rig.close());
    const time = fakeTime();
    const p0 = rig.produce(0, 25);
    const task = rig.startTask(0, { nowMs: time.now, sleep: time.sleep, random: () => 0.99 });
    await until('an hour of failures', () => time.skippedMs() > 3_600_000, 20_000);
    assert.ok(time.delays.every((d) => d <= 600_000), 'capped');
    assert.equal(task.task.state, 'RUNNING');
    store.down = false;
    await until('offsets committed', () => rig.committedOffset(0) === 25n, 20_000);
    await task.stop();
    assert.equal(task.task.state, 'STOPPED');
    await rig.committer().round();
    assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: p0 }));
  });
}

test('errors.retry.timeout counts failures in a row: a committed cycle between two shorter outages starts the count again', async (t) => {
  const time = fakeTime();
  // Down for 4 s (fake), up until a cycle commits, down for 4 s again, then up: 8 s of failures, never 5 in a row.
  let phase: 'down1' | 'up1' | 'down2' | 'up2' = 'down1';
  let phaseStart = time.now();
  const rig = await new Rig({
    beforeStoreOperation: (op, location) => {
      if (op !== 'put' || !location.endsWith('.parquet')) return;
      if ((phase === 'down1' || phase === 'down2') && time.now() - phaseStart < 4000) throw new RetriableError('S3 unreachable (injected)');
    },
    config: { 'errors.retry.timeout': '5000', 'errors.retry.delay.max.ms': '1000' },
  }).init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 10);
  const task = rig.startTask(0, { nowMs: time.now, sleep: time.sleep, random: () => 0.5 });
  await until('the first outage is ridden out', () => rig.committedOffset(0) === 10n, 20_000);
  phase = 'up1';
  assert.ok(task.task.metrics.cyclesCommitted > 0);
  phase = 'down2';
  phaseStart = time.now();
  const p0b = rig.produce(0, 10);
  await until('the second outage is ridden out', () => rig.committedOffset(0) === 20n, 20_000);
  phase = 'up2';
  await task.stop();
  assert.equal(task.task.state, 'STOPPED', 'never failed');
  assert.ok(time.skippedMs() >= 7000, `over 7 s of back-off in all: ${time.skippedMs()}`);
  await rig.committer().round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...p0, ...p0b] }));
});

test('a table whose commits fail is named in the connector\'s status while they fail, and no longer once a round gets through', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const committer = rig.committer();
  const status = (): ConnectorStatus => ({ name: 'orders-sink', state: 'RUNNING', tasks: [], tables: committer.tableStatus(), committer: true }) as unknown as ConnectorStatus;
  const announceMore = async (to: bigint): Promise<void> => {
    const task = rig.startTask(0);
    await until('announced', () => rig.committedOffset(0) === to);
    await task.stop();
  };
  rig.produce(0, 10);
  await announceMore(10n);
  await committer.round(); // reads where the table is, applies the first ten
  rig.produce(0, 10);
  await announceMore(20n);
  rig.memoryCatalog.loadFaults.push('retriable', 'retriable'); // the catalog unreachable for two rounds
  await committer.round();
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.failing?.count, 2);
  assert.match(connectorWhy(status()) ?? '', /^table db\.orders: commits failing since \S+ \(2 round\(s\) in a row\), retried every round: memory catalog memory: load of db\.orders failed \(injected\)$/);
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.failing, undefined);
  assert.equal(connectorWhy(status()), undefined);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: Array.from({ length: 20 }, (_, i) => BigInt(i)) }));
});

test('the registry down: the partition waits, the status names why, and past a positive errors.retry.timeout the task fails naming it', async (t) => {
  const ORDER = { type: 'record', name: 'Order', fields: [{ name: 'n', type: 'long' }] };
  const registry: SchemaResolver = { byId: () => Promise.reject(new RetriableError('schema registry at http://registry.invalid:8081 is not reachable (ECONNREFUSED) (test)')) };
  const rig = await new Rig({
    resolver: registry,
    config: {
      'value.converter': 'io.confluent.connect.avro.AvroConverter',
      'value.converter.schema.registry.url': 'http://registry.invalid:8081',
      'errors.retry.timeout': '1500',
      'errors.retry.delay.max.ms': '200',
    },
  }).init();
  t.after(() => rig.close());
  const body = avro.Type.forSchema(ORDER as avro.Schema).toBuffer({ n: 1 });
  const value = new Uint8Array(5 + body.length);
  new DataView(value.buffer).setUint32(1, 7);
  value.set(body, 5);
  rig.kafka.produce(TOPIC, 0, [{ value }]);
  const task = rig.startTask(0, { random: () => 0.99 });
  await until('the partition waits', () => task.task.progressNote !== undefined);
  assert.match(task.task.progressNote ?? '', /^partitions orders\[0\] wait for a record's schema from the registry \(since \S+\): schema registry at http:\/\/registry\.invalid:8081 is not reachable \(ECONNREFUSED\) \(test\)$/);
  const error = await Promise.race([task.ended, new Promise((resolve) => setTimeout(() => resolve('still running after 10 s'), 10_000))]);
  assert.ok(error instanceof FatalError, `FatalError, got ${String(error)}`);
  assert.match(errorMessage(error), /^errors\.retry\.timeout \(1500 ms\) passed: a partition has waited \d+ ms since \S+ for a record's schema from the registry; last error: schema registry at \S+ is not reachable \(ECONNREFUSED\) \(test\)\. The task stays FAILED/);
  assert.equal(task.task.restartable, false);
  const waits = logged(rig, "partition paused: a record's schema cannot be fetched yet; the task's other partitions go on").map((f) => Number(f['retryInMs']));
  assert.ok(waits.length >= 3 && waits.every((w) => w <= 200), `the waits are capped by errors.retry.delay.max.ms: ${waits.join(', ')}`);
});
