/**
 * The committer's findings of the second commit-protocol review (docs/reviews/commit-protocol-2.md, issue
 * 24) on memory fakes: N2 (a table missing for one round keeps its pending announcements), N8/N8b (C
 * advances for every table that applied while another table's commit throws), N9 (a retriably failing
 * table is parked like a stopped one at the buffer cap, so the others keep committing, and is read again
 * once it recovers) and N6 (`--reapply` works for the live committer while another table holds C back).
 * Rows are counted by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { NO_CRASH_POINTS } from '../../../src/core/crash-points.ts';
import { ConfigError, RetriableError } from '../../../src/core/errors.ts';
import { formatIdentifier, NoSuchTableError, parseIdentifier } from '../../../src/commit/port.ts';
import type { Catalog, TableIdentifier } from '../../../src/commit/port.ts';
import { updateProperties } from '../../../src/commit/table-ops.ts';
import { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { runPositionsTool } from '../../../src/coordinate/positions-tool.ts';
import { announce, CONTROL, expected, logged, recordingLogger, Rig, sortCoordinates } from '../runtime/rig.ts';

const ORDERS = 'db.orders';
const REFUNDS = 'db.refunds';

/** What the catalog does to one table while set: answer "no such table" to loads, or refuse commits. */
interface Faults {
  missing: boolean;
  commit: 'retriable' | 'config' | 'missing' | undefined;
}

/** The catalog as the committer sees it, with `faults` applied to `table` only (the tasks see the real one). */
function withFaults(catalog: Catalog, table: string, faults: Faults): Catalog {
  const hit = (id: TableIdentifier): boolean => formatIdentifier(id) === table;
  return {
    name: catalog.name,
    listNamespaces: (parent) => catalog.listNamespaces(parent),
    namespaceExists: (ns) => catalog.namespaceExists(ns),
    createNamespace: (ns, props) => catalog.createNamespace(ns, props),
    listTables: (ns) => catalog.listTables(ns),
    tableExists: (id) => catalog.tableExists(id),
    createTable: (id, req) => catalog.createTable(id, req),
    loadTable: (id) => (hit(id) && faults.missing ? Promise.reject(new NoSuchTableError(id)) : catalog.loadTable(id)),
    commitTable: (id, requirements, updates, options) => {
      if (hit(id) && faults.commit === 'retriable') return Promise.reject(new RetriableError(`commit to ${table}: throttled (injected)`));
      if (hit(id) && faults.commit === 'config') return Promise.reject(new ConfigError(`commit to ${table}: bad request (injected)`));
      if (hit(id) && faults.commit === 'missing') return Promise.reject(new NoSuchTableError(id)); // dropped between its load and its commit
      return catalog.commitTable(id, requirements, updates, options);
    },
    dropTable: (id) => catalog.dropTable(id),
    close: () => catalog.close(),
  };
}

/** A committer over `catalog` with a clock the test moves. */
function committer(rig: Rig, catalog: Catalog, clock: { ms: number } = { ms: Date.now() }): ConnectorCommitter {
  return new ConnectorCommitter({
    connector: rig.connector,
    reader: rig.kafka.createControlReader({ name: `committer-${randomUUID().slice(0, 4)}` }),
    admin: rig.kafka.createAdmin(),
    catalog,
    store: rig.store,
    crash: NO_CRASH_POINTS,
    log: recordingLogger(rig.log),
    nowMs: () => clock.ms,
  });
}

function status(c: ConnectorCommitter, table: string): ReturnType<ConnectorCommitter['tableStatus']>[number] | undefined {
  return c.tableStatus().find((s) => s.table === table);
}

async function controlPosition(rig: Rig): Promise<{ offset: bigint; metadata: string }> {
  const [c] = await rig.kafka.createAdmin().groupOffsets('cg-control-orders-sink', CONTROL);
  assert.ok(c !== undefined, 'C is committed');
  return { offset: c.offset, metadata: c.metadata ?? '' };
}

/** One commit attempt per round for `table` (no in-round retries): a retriable failure costs a round, not seconds. */
async function oneAttempt(rig: Rig, table: string): Promise<void> {
  await updateProperties({ catalog: rig.catalog, store: rig.store }, parseIdentifier(table), { 'commit.retry.num-retries': '0' });
}

async function firstSnapshot(rig: Rig, table: string): Promise<bigint> {
  const [s1] = (await rig.catalog.loadTable(parseIdentifier(table))).metadata.snapshots;
  assert.ok(s1 !== undefined);
  return s1.snapshotId;
}

test('N2: a table the catalog answers "no such table" for one round (register_table undo, rename and back, a lagging replica) keeps its pending announcements: each record once when it is back', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const faults: Faults = { missing: false, commit: undefined };
  const live = committer(rig, withFaults(rig.catalog, ORDERS, faults));
  const first = await announce(rig, [10]);
  await live.round();
  const second = await announce(rig, [10]);
  const heldAt = (await controlPosition(rig)).offset;
  faults.missing = true;
  await live.round();
  // Failing, not stopped: a lagging replica or a rename and back must not fail the connector's tasks for good.
  assert.equal(status(live, ORDERS)?.state, 'RUNNING', 'a table the catalog does not find for a round is failing, not stopped');
  assert.match(status(live, ORDERS)?.failing?.error ?? '', /announced files wait for a table the catalog does not find/);
  assert.equal((await controlPosition(rig)).offset, heldAt, 'C does not pass the missing table\'s pending announcements');
  faults.missing = false; // the same table (same UUID) is back
  await live.round();
  assert.equal(status(live, ORDERS)?.state, 'RUNNING', status(live, ORDERS)?.reason?.message);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }), 'nothing skipped');
  // A restarted committer agrees: nothing to re-apply, nothing rolled back.
  const restarted = committer(rig, rig.catalog);
  await restarted.round();
  assert.equal(status(restarted, ORDERS)?.state, 'RUNNING', status(restarted, ORDERS)?.reason?.message);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }));
});

test('N2: a table dropped between its load and its commit (the catalog answers the commit "no such table") is failing like a missing one, not stopped: applied once it is back', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const faults: Faults = { missing: false, commit: undefined };
  const live = committer(rig, withFaults(rig.catalog, ORDERS, faults));
  const first = await announce(rig, [10]);
  await live.round();
  const second = await announce(rig, [10]);
  const heldAt = (await controlPosition(rig)).offset;
  faults.commit = 'missing';
  await live.round();
  assert.equal(status(live, ORDERS)?.state, 'RUNNING', status(live, ORDERS)?.reason?.message);
  assert.match(status(live, ORDERS)?.failing?.error ?? '', /does not exist/);
  assert.equal((await controlPosition(rig)).offset, heldAt, 'C does not pass the announcements waiting for it');
  faults.commit = undefined;
  await live.round();
  assert.equal(status(live, ORDERS)?.failing, undefined);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }), 'nothing skipped');
});

test('N2: a table missing with pending announcements and recreated (new UUID) is planned from its own fresh state: the old table\'s announcements stop it, nothing applied to the new one', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const faults: Faults = { missing: false, commit: undefined };
  const live = committer(rig, withFaults(rig.catalog, ORDERS, faults));
  await announce(rig, [10]);
  await live.round();
  await announce(rig, [10]);
  faults.missing = true;
  await live.round();
  faults.missing = false;
  await rig.memoryCatalog.recreateTable(parseIdentifier(ORDERS));
  await live.round();
  assert.equal(status(live, ORDERS)?.reason?.code, 'table-uuid-mismatch', 'an announcement for the old table is never applied to the new one, nor skipped silently');
  assert.deepEqual(await rig.tableCoordinates(ORDERS), []);
});

test('N2: a dropped table with nothing waiting does not stop, also after a restart that reads its applied announcements again (another table holds C back)', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': `${ORDERS},${REFUNDS}` } }).init();
  t.after(() => rig.close());
  await announce(rig, [10]);
  const lost = (await rig.storedDataFiles()).find((f) => f.includes('/refunds/'));
  assert.ok(lost !== undefined);
  await rig.store.delete(lost);
  const live = committer(rig, rig.catalog);
  await live.round();
  assert.equal(status(live, REFUNDS)?.reason?.code, 'file-missing');
  await rig.memoryCatalog.dropTable(parseIdentifier(ORDERS));
  await live.round();
  assert.equal(status(live, ORDERS)?.state, 'RUNNING', status(live, ORDERS)?.reason?.message);
  // Restarted: reading starts where refunds needs it, below orders' applied announcement.
  const restarted = committer(rig, rig.catalog);
  await restarted.round();
  assert.equal(status(restarted, ORDERS)?.state, 'RUNNING', status(restarted, ORDERS)?.reason?.message);
});

for (const fault of ['retriable', 'config'] as const) {
  test(`N8: while another table's commit throws (${fault}) in every round, C advances as applied; a restarted committer stops a rolled-back table instead of re-applying it`, async (t) => {
    const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': `${ORDERS},${REFUNDS}` } }).init();
    t.after(() => rig.close());
    const faults: Faults = { missing: false, commit: fault };
    const catalog = withFaults(rig.catalog, REFUNDS, faults);
    const live = committer(rig, catalog);
    const first = await announce(rig, [10]);
    await oneAttempt(rig, REFUNDS);
    await live.round();
    await announce(rig, [10]);
    await live.round();
    assert.match((await controlPosition(rig)).metadata, /^icefloe\/1 applied /, 'C says what the tables that applied did');
    await rig.memoryCatalog.setRef(parseIdentifier(ORDERS), await firstSnapshot(rig, ORDERS));
    const restarted = committer(rig, catalog);
    await restarted.round();
    assert.equal(status(restarted, ORDERS)?.reason?.code, 'positions-rolled-back', status(restarted, ORDERS)?.reason?.message);
    assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected(first), 'the rolled-back announcement is not applied again silently');
  });
}

test('N8b: a table idle while another table\'s commit throws in every round survives retention deleting the whole log (live and after a restart)', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': `${ORDERS},${REFUNDS}` } }).init();
  t.after(() => rig.close());
  const catalog = withFaults(rig.catalog, REFUNDS, { missing: false, commit: 'retriable' });
  const live = committer(rig, catalog);
  const first = await announce(rig, [10]);
  await oneAttempt(rig, REFUNDS);
  await live.round();
  await live.round();
  const [marks] = await rig.kafka.createAdmin().watermarks(CONTROL);
  assert.ok(marks !== undefined);
  rig.kafka.deleteRecordsBefore(CONTROL, 0, marks.high);
  await live.round();
  assert.equal(status(live, ORDERS)?.state, 'RUNNING', status(live, ORDERS)?.reason?.message);
  assert.equal(status(live, REFUNDS)?.reason?.code, 'control-records-lost', 'the failing table lost its announcement: it says so');
  const restarted = committer(rig, catalog);
  await restarted.round();
  assert.equal(status(restarted, ORDERS)?.state, 'RUNNING', status(restarted, ORDERS)?.reason?.message);
  const later = await announce(rig, [10]);
  await restarted.round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected({ 0: [...(first[0] ?? []), ...(later[0] ?? [])] }));
});

test('N9: a table failing retriably round after round is parked at the buffer cap; the other table keeps committing, and the parked one gets every record once after it recovers (no restart)', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': `${ORDERS},${REFUNDS}`, 'icefloe.control.read.max-bytes': '4096', 'icefloe.control.buffer.max-bytes': '16384' } }).init();
  t.after(() => rig.close());
  const faults: Faults = { missing: false, commit: undefined };
  const clock = { ms: 1_800_000_000_000 };
  const live = committer(rig, withFaults(rig.catalog, REFUNDS, faults), clock);
  const produced = await announce(rig, [10]).then((p) => p[0] ?? []);
  await oneAttempt(rig, REFUNDS);
  await live.round();
  faults.commit = 'retriable';
  for (let i = 0; i < 30; i++) produced.push(...((await announce(rig, [10]))[0] ?? []));
  for (let i = 0; i < 100; i++) {
    await live.round();
    clock.ms += 1_000;
    assert.ok(live.controlStatus().bufferedBytes < 16_384 + 4_096, 'bounded');
    if (!live.behind()) break;
  }
  assert.equal(live.behind(), false);
  assert.equal(logged(rig, 'control buffer full: reading the control topic pauses until tables commit (raise icefloe.control.buffer.max-bytes if this persists)').length, 0, 'reading never paused for the whole connector');
  assert.deepEqual(live.controlStatus().parkedTables, [REFUNDS], 'the failing table is parked');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected({ 0: produced }), 'the other table has everything');
  assert.equal(status(live, REFUNDS)?.failing?.error.includes('throttled'), true, 'the status still says why it fails');
  faults.commit = undefined; // the catalog accepts the table's commits again
  for (let i = 0; i < 200; i++) {
    clock.ms += 60_000;
    await live.round();
    if (!live.behind() && live.controlStatus().parkedTables.length === 0 && (await rig.tableCoordinates(REFUNDS)).length === produced.length) break;
  }
  assert.deepEqual(live.controlStatus().parkedTables, []);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(REFUNDS)), expected({ 0: produced }), 're-read from its stored positions: nothing skipped, nothing twice');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected({ 0: produced }), 'and the other table nothing twice');
});

/**
 * Two tables, two announcements each, committed by a live committer; refunds lost the file of its first
 * announcement, so it stops there (file-missing) and holds C below what orders applied.
 */
async function refundsHoldingC(t: TestContext): Promise<{ rig: Rig; live: ConnectorCommitter; first: Awaited<ReturnType<typeof announce>>; second: Awaited<ReturnType<typeof announce>> }> {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': `${ORDERS},${REFUNDS}` } }).init();
  t.after(() => rig.close());
  const first = await announce(rig, [10]);
  const lost = (await rig.storedDataFiles()).find((f) => f.includes('/refunds/'));
  assert.ok(lost !== undefined);
  await rig.store.delete(lost);
  const live = committer(rig, rig.catalog);
  await live.round();
  const second = await announce(rig, [10]);
  await live.round();
  return { rig, live, first, second };
}

test('N6: --reapply works for the live committer while another stopped table holds C below the rolled-back table\'s positions', async (t) => {
  const { rig, live, first, second } = await refundsHoldingC(t);
  assert.equal(status(live, REFUNDS)?.reason?.code, 'file-missing');
  await rig.memoryCatalog.setRef(parseIdentifier(ORDERS), await firstSnapshot(rig, ORDERS));
  await live.round();
  assert.equal(status(live, ORDERS)?.reason?.code, 'positions-rolled-back');
  const report = await runPositionsTool({ connector: rig.connector, admin: rig.kafka.createAdmin(), catalog: rig.catalog, store: rig.store, log: recordingLogger(rig.log) }, ORDERS, 'reapply');
  assert.match(report.result, /^marked/);
  await live.round();
  await live.round();
  assert.equal(status(live, ORDERS)?.state, 'RUNNING', status(live, ORDERS)?.reason?.message);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }), 're-applied once');
  const md = (await rig.catalog.loadTable(parseIdentifier(ORDERS))).metadata;
  assert.equal(md.properties['icefloe.reapply.orders-sink'], undefined, 'a spent mark is removed');
});

test('N9: the only table, its catalog unreachable round after round, is parked at the cap instead of pausing reading; tried again after the back-off, it gets every record once (the old "reading pauses" test inverted)', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'icefloe.control.read.max-bytes': '4096', 'icefloe.control.buffer.max-bytes': '8192' } }).init();
  t.after(() => rig.close());
  const clock = { ms: 1_800_000_000_000 };
  const live = committer(rig, rig.catalog, clock);
  const produced = (await announce(rig, [10]))[0] ?? [];
  await live.round();
  const before = (await controlPosition(rig)).offset;
  for (let i = 0; i < 30; i++) produced.push(...((await announce(rig, [10]))[0] ?? []));
  rig.memoryCatalog.loadFaults.push(...Array.from({ length: 40 }, () => 'retriable' as const));
  for (let i = 0; i < 40; i++) {
    await live.round();
    clock.ms += 1_000;
    if (!live.behind() && live.controlStatus().parkedTables.length > 0) break;
  }
  assert.deepEqual(live.controlStatus().parkedTables, ['db.orders']);
  assert.equal(logged(rig, 'control buffer full: reading the control topic pauses until tables commit (raise icefloe.control.buffer.max-bytes if this persists)').length, 0);
  assert.ok(live.controlStatus().bufferedBytes < 8192, `the buffer does not hold what the parked table needs: ${live.controlStatus().bufferedBytes}`);
  assert.equal(live.tableStatus()[0]?.failing !== undefined, true, 'still shown as failing');
  assert.equal((await controlPosition(rig)).offset, before, 'C stays below what the parked table needs');
  rig.memoryCatalog.loadFaults.length = 0;
  const retries = (): number => logged(rig, 'parked tables are tried again; reading the control topic again from their positions').length;
  for (let i = 0; i < 10; i++) await live.round();
  assert.equal(retries(), 0, 'not before the back-off');
  assert.equal((await rig.tableCoordinates()).length, 10);
  for (let i = 0; i < 200; i++) {
    clock.ms += 60_000;
    await live.round();
    if (!live.behind() && live.controlStatus().parkedTables.length === 0 && (await rig.tableCoordinates()).length === produced.length) break;
  }
  assert.equal(retries(), 1);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: produced }));
});

test('N6: --reapply refuses, saying what to do, when nothing tells what to re-apply (C held at the table\'s positions, the rolled-back snapshots expired); a restart re-applies', async (t) => {
  const { rig, live, first, second } = await refundsHoldingC(t);
  const id = parseIdentifier(ORDERS);
  const s1 = await firstSnapshot(rig, ORDERS);
  const rolled = (await rig.memoryCatalog.setRef(id, s1)).metadata;
  await rig.memoryCatalog.replaceMetadata(id, { ...rolled, snapshots: rolled.snapshots.filter((s) => s.snapshotId === s1) });
  await live.round();
  assert.equal(status(live, ORDERS)?.reason?.code, 'positions-rolled-back');
  await assert.rejects(
    runPositionsTool({ connector: rig.connector, admin: rig.kafka.createAdmin(), catalog: rig.catalog, store: rig.store, log: recordingLogger(rig.log) }, ORDERS, 'reapply'),
    /nothing to re-apply that can be told.*Restart the connector/,
  );
  const md = (await rig.catalog.loadTable(id)).metadata;
  assert.equal(md.properties['icefloe.reapply.orders-sink'], undefined, 'no mark that would hold nothing');
  const restarted = committer(rig, rig.catalog);
  await restarted.round();
  assert.equal(status(restarted, ORDERS)?.state, 'RUNNING', status(restarted, ORDERS)?.reason?.message);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }), 'the restart re-applies, each record once');
});
