/**
 * The sink task loop on memory fakes, rule by rule (docs/architecture.md, "Exactly-once"): every test
 * ends with the committer applying what was announced and the table holding each produced record
 * exactly once, counted by Kafka coordinates, plus the specific evidence of its rule.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RetriableError } from '../../../src/core/errors.ts';
import { appliedButFailed } from '../../../src/consume/memory/index.ts';
import { isFenced } from '../../../src/consume/port.ts';
import { expected, logged, Rig, sortCoordinates, TABLE, TOPIC, until } from './rig.ts';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { createTable } from '../../../src/commit/table-ops.ts';
import { currentSchema } from '../../../src/iceberg/metadata.ts';


async function commitAll(rig: Rig): Promise<string[]> {
  await rig.committer().round();
  return sortCoordinates(await rig.tableCoordinates());
}

test('a cycle commits, in one transaction, the offsets of exactly the records in its files', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 120);
  const p1 = rig.produce(1, 30);
  const task = rig.startTask(0);
  await until('offsets committed', () => rig.committedOffset(0) === 120n && rig.committedOffset(1) === 30n);
  assert.equal(rig.committedAnnouncements(), 1, 'one announcement for the cycle, committed with the offsets');
  await task.stop();
  assert.equal(task.task.state, 'STOPPED');
  assert.deepEqual(await commitAll(rig), expected({ 0: p0, 1: p1 }));
});

test('an aborted cycle deletes its files and rewinds: the records are read again and land once', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 40);
  const task = rig.startTask(0, {});
  task.producer.failNext('commitTransaction', new RetriableError('broker away (injected)'));
  await until('offsets committed after the retry', () => rig.committedOffset(0) === 40n);
  await task.stop();
  assert.equal(task.task.metrics.cyclesAborted, 1);
  assert.equal(task.task.metrics.recordsConsumed, 80, 'the aborted cycle was read a second time');
  assert.deepEqual(await commitAll(rig), expected({ 0: p0 }));
  const referenced = new Set(await rig.tableFiles());
  assert.deepEqual((await rig.storedDataFiles()).filter((f) => !referenced.has(f)), [], 'no file of the aborted cycle is left behind');
});

test('a commit whose answer was lost keeps its files: they may be announced, and are', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 40);
  const task = rig.startTask(0);
  task.producer.failNext('commitTransaction', appliedButFailed());
  await until('the cycle failed once', () => task.task.metrics.cyclesAborted === 1);
  await task.stop();
  assert.equal(rig.committedOffset(0), 40n, 'the transaction did commit');
  assert.equal(task.task.metrics.recordsConsumed, 40, 'the rewind found the committed offsets: nothing read twice');
  assert.deepEqual(await commitAll(rig), expected({ 0: p0 }), 'the announced files exist, so the committer applies them');
});

test('a fenced task stops for good instead of retrying', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  rig.produce(0, 10);
  const task = rig.startTask(0);
  await until('the first cycle', () => rig.committedOffset(0) === 10n);
  // A new incarnation with the same transactional.id fences this one.
  await rig.kafka.createProducer(`${rig.connector.name}-0`).initTransactions();
  rig.produce(0, 10);
  await until('the task failed', () => task.task.state === 'FAILED');
  const error = await task.ended;
  assert.ok(isFenced(error), `fenced, got ${String(error)}`);
  assert.equal(task.task.state, 'FAILED');
  assert.equal(rig.committedOffset(0), 10n, 'nothing of the fenced cycle is committed');
});

test('a revocation commits the cycle first: the new owner starts where it ended, nothing is read twice', async (t) => {
  const rig = await new Rig({ config: { 'icefloe.commit.max-records': '1000000' } }).init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 30);
  const p1 = rig.produce(1, 30);
  const a = rig.startTask(0);
  await until('task 0 read both partitions', () => a.task.metrics.recordsConsumed === 60);
  const b = rig.startTask(1);
  await until('task 1 got a partition', () => b.source.assignment().length === 1);
  const revoked = logged(rig, 'cycle committed').filter((f) => f['why'] === 'revoke' && f['task'] === 0);
  assert.equal(revoked.length, 1, 'task 0 committed its cycle at the revocation');
  const moved = b.source.assignment()[0]?.partition as number;
  assert.equal(rig.committedOffset(moved), 30n, 'the revoked partition was committed before it moved');
  await Promise.all([a.stop(), b.stop()]);
  assert.equal(b.task.metrics.recordsConsumed, 0, 'the new owner had nothing to read again');
  assert.deepEqual(await commitAll(rig), expected({ 0: p0, 1: p1 }));
});

test('lost partitions abandon the cycle: no transaction for them, the new owner reads them once', async (t) => {
  const rig = await new Rig({ config: { 'icefloe.commit.max-records': '1000000' } }).init();
  t.after(() => rig.close());
  const first = { 0: rig.produce(0, 25), 1: rig.produce(1, 25) };
  const a = rig.startTask(0);
  await until('task 0 read both partitions', () => a.task.metrics.recordsConsumed === 50);
  const b = rig.startTask(1);
  await until('task 1 got a partition', () => b.source.assignment().length === 1);
  const kept = a.source.assignment()[0]?.partition as 0 | 1;
  const more = rig.produce(kept, 20);
  await until('task 0 read its partition on', () => a.task.metrics.recordsConsumed === 70);
  const txnId = `${rig.connector.name}-0`;
  const before = rig.kafka.readPartition('control-orders', 0).filter((e) => e.transactionalId === txnId).length;
  rig.kafka.expireMember(a.source); // task 0 froze past its session timeout
  await until('task 0 learnt it lost its partitions', () => logged(rig, 'partitions revoked').some((f) => f['task'] === 0 && f['lost'] === true));
  const after = rig.kafka.readPartition('control-orders', 0).filter((e) => e.transactionalId === txnId).length;
  assert.equal(after, before, 'task 0 opened no transaction for the lost partitions');
  await until('task 1 owns both partitions and read the lost records', () => b.source.assignment().length === 2 && b.task.metrics.recordsConsumed >= 20);
  await a.stop();
  await until('task 1 polled past the rebalance', () => b.source.assignment().length === 2 && rig.kafka.group(`connect-${rig.connector.name}`).members.length === 1);
  await new Promise((resolve) => setTimeout(resolve, 20));
  await b.stop();
  assert.equal(rig.committedOffset(kept), 45n, 'task 1 committed the lost records');
  assert.deepEqual(await commitAll(rig), sortCoordinates([...expected(first), ...expected({ [kept]: more })]));
});

test('a schema change ends the cycle first: each announcement holds one schema', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables.evolve-schema-enabled': 'true', 'icefloe.commit.max-records': '1000000' } }).init();
  t.after(() => rig.close());
  const before = rig.produce(0, 10);
  const after = rig.kafka.produce(TOPIC, 0, Array.from({ length: 10 }, (_, i) => ({ key: `x${i}`, value: JSON.stringify({ n: 100 + i, extra: 'new' }) })));
  const task = rig.startTask(0);
  await until('the schema-change cycle', () => logged(rig, 'cycle committed').some((f) => f['why'] === 'schema-change'));
  await until('the rest', () => task.task.metrics.recordsWritten === 20);
  await task.stop();
  const cycles = logged(rig, 'cycle committed');
  assert.equal(cycles[0]?.['why'], 'schema-change');
  assert.equal(cycles[0]?.['records'], 10, 'the cycle ended before the first record of the new schema');
  assert.deepEqual(await commitAll(rig), expected({ 0: [...before, ...after] }));
});

test('a task failed by the worker abandons its open cycle: nothing more is committed, its trace names why', async (t) => {
  const rig = await new Rig({ config: { 'icefloe.commit.max-records': '1000000' } }).init();
  t.after(() => rig.close());
  rig.produce(0, 25);
  const task = rig.startTask(0);
  await until('records read into the open cycle', () => task.task.metrics.recordsConsumed === 25);
  task.task.fail('table db.orders stopped (positions-malformed: bad key)');
  const error = await task.ended;
  assert.equal(task.task.state, 'FAILED');
  assert.match(task.task.trace ?? '', /table db\.orders stopped \(positions-malformed: bad key\)/);
  assert.match(String(error), /table db\.orders stopped/);
  assert.equal(rig.committedOffset(0), null, 'no offset was committed for the abandoned cycle');
  assert.equal(rig.committedAnnouncements(), 0, 'nothing was announced');
});

test('a table dropped and recreated while the task runs: the open cycle is abandoned and written again to the new table, no restart', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const committer = rig.committer();
  const first = rig.produce(0, 10); // max-records 10: one cycle, into the table as first created
  const task = rig.startTask(0);
  await until('the first cycle committed', () => rig.committedOffset(0) === 10n);
  await committer.round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: first }));
  const id = parseIdentifier(TABLE);
  const old = await rig.catalog.loadTable(id);
  const before = rig.produce(0, 5); // into the open cycle, for the old table
  await until('read into the open cycle', () => task.task.metrics.recordsConsumed === 15);
  await rig.catalog.dropTable(id);
  const recreated = await createTable({ catalog: rig.catalog, store: rig.store }, id, { schema: currentSchema(old.metadata) });
  assert.notEqual(recreated.metadata.tableUuid, old.metadata.tableUuid);
  const after = rig.produce(0, 5);
  await until('the cycle committed after the rewind', () => rig.committedOffset(0) === 20n);
  await task.stop();
  assert.equal(task.task.state, 'STOPPED');
  assert.equal(task.task.metrics.cyclesAborted, 1, 'the cycle written for the old table was abandoned once');
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...before, ...after] }), 'the new table holds what came after its predecessor\'s last commit, once');
});

test('static tables [a, b], b missing, auto-create off, unrouted=skip: every record still lands in a once; b\'s copies are counted', async (t) => {
  const rig = await new Rig({
    partitions: 1,
    config: { 'iceberg.tables': `${TABLE},db.missing`, 'iceberg.tables.auto-create-enabled': 'false', 'icefloe.tables.unrouted': 'skip' },
  }).init();
  t.after(() => rig.close());
  const optional = (id: number, name: string, kind: 'int' | 'long') => ({ id, name, required: false, type: { kind } }) as const;
  await createTable({ catalog: rig.catalog, store: rig.store }, parseIdentifier(TABLE), {
    schema: { schemaId: 0, fields: [optional(1, 'n', 'long'), optional(2, '_kafka_metadata_partition', 'int'), optional(3, '_kafka_metadata_offset', 'long')] },
  });
  const produced = rig.produce(0, 30);
  const task = rig.startTask(0);
  await until('offsets committed', () => rig.committedOffset(0) === 30n);
  await task.stop();
  assert.equal(task.task.metrics.tableCopiesSkipped, 30, 'one skipped copy per record for the missing table');
  assert.equal(task.task.metrics.unroutedSkipped, 0, 'no record was skipped as a whole');
  const warned = logged(rig, 'table does not exist: records routed to it are skipped for it and written to their other tables (icefloe.tables.unrouted=skip); looked up again next cycle').length;
  assert.ok(warned >= 1 && warned <= task.task.metrics.cyclesCommitted, `warned at most once per cycle (${warned} for ${task.task.metrics.cyclesCommitted} cycles)`);
  assert.deepEqual(await commitAll(rig), expected({ 0: produced }));
});
