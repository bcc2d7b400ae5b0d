/**
 * The connector position C and the rules built on it (src/coordinate/connector-position.ts), through the
 * pure planner: an idle table is not stopped falsely, a fresh table whose announcements were deleted is
 * stopped (never skipped silently), a table rolled back behind C stops instead of re-applying, and the two
 * recoveries (re-apply, adopt) are honoured. Each rule's mutation makes one of these fail.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMIT_ID_KEY } from '../../../src/commit/commit-retry.ts';
import type { TableMetadata } from '../../../src/iceberg/metadata.ts';
import { planTableCommit } from '../../../src/coordinate/commit-state.ts';
import type { ControlRecordRead, TableCommitInput, TablePlan } from '../../../src/coordinate/commit-state.ts';
import { readControlPositions } from '../../../src/coordinate/control-positions.ts';
import {
  adoptedKey,
  appliedThroughFor,
  encodePositionMetadata,
  encodeReapplyMark,
  nextAppliedPositions,
  readGroupPositions,
  reapplyKey,
  tableKey,
} from '../../../src/coordinate/connector-position.ts';
import type { ConnectorPositions } from '../../../src/coordinate/connector-position.ts';
import { announcement, CONNECTOR, ControlLog, emptyTable, file, LIVE, OTHER_TABLE, span, TABLE, withSnapshot } from './fixtures.ts';

const NOW = 1_800_000_000_000;

function plan(md: TableMetadata, records: readonly ControlRecordRead[], over: Partial<TableCommitInput> = {}): TablePlan {
  return planTableCommit({ connector: CONNECTOR, table: TABLE, metadata: md, positions: readControlPositions(md, CONNECTOR, LIVE), live: LIVE, records, nowMs: NOW, ...over });
}

function apply(md: TableMetadata, p: TablePlan): TableMetadata {
  assert.ok(p.kind === 'commit', p.kind === 'stopped' ? p.reason.message : p.kind);
  return withSnapshot(md, { ...p.summary, [COMMIT_ID_KEY]: p.commitId });
}

const applied = (entries: [number, bigint][]): ConnectorPositions => new Map(entries.map(([p, o]) => [p, { offset: o, kind: 'applied' as const }]));
const seed = (entries: [number, bigint][]): ConnectorPositions => new Map(entries.map(([p, o]) => [p, { offset: o, kind: 'seed' as const }]));
const code = (p: TablePlan): string => (p.kind === 'stopped' ? p.reason.code : p.kind);
const paths = (p: TablePlan): string[] => (p.kind === 'commit' ? p.files.map((f) => f.filePath) : []);

/** A table that applied one announcement at 0 (position 2), then the log moved on with other tables only. */
function idleTable(): { md: TableMetadata; log: ControlLog } {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 9n)])]);
  const md = apply(emptyTable(), plan(emptyTable(), log.read(new Map())));
  for (let i = 0; i < 5; i++) log.transaction(0, [announcement(0, `o${i}`, [file(`o${i}`)], [span('refunds', 0, BigInt(i), BigInt(i))], { table: OTHER_TABLE })]);
  return { md, log };
}

test('S2: an idle table behind the log start is not stopped when C says every table applied through it', () => {
  const { md, log } = idleTable();
  const logStart = new Map([[0, 8n]]);
  assert.equal(code(plan(md, log.read(logStart), { logStartOffsets: logStart })), 'control-records-lost', 'without C: the false stop of the review');
  const p = plan(md, log.read(logStart), { logStartOffsets: logStart, connectorPositions: applied([[0, 12n]]) });
  assert.equal(code(p), 'nothing');
  assert.equal(p.effectivePositions.get(0), 12n, 'E = C');
  // A seed C is not "applied": it never raises a stored position, so the loss check still sees T.
  assert.equal(code(plan(md, log.read(logStart), { logStartOffsets: logStart, connectorPositions: seed([[0, 12n]]) })), 'control-records-lost');
});

test('S2: the next commit of the idle table stores C for its idle partitions', () => {
  const { md, log } = idleTable();
  log.transaction(0, [announcement(0, 'c2', [file('b')], [span('orders', 0, 10n, 19n)])]);
  const p = plan(md, log.read(new Map([[0, 12n]])), { connectorPositions: applied([[0, 12n], [1, 40n]]), logStartOffsets: new Map([[0, 8n], [1, 30n]]) });
  assert.deepEqual(paths(p), ['b']);
  assert.equal(p.kind === 'commit' ? p.positions.get(1) : undefined, 40n, 'the partition it never had announcements on is carried at C');
});

test('L3: a fresh table reads from C, and stops when the log no longer starts there (never skips silently)', () => {
  const log = new ControlLog(1);
  for (let i = 0; i < 6; i++) log.transaction(0, [announcement(0, `c${i}`, [file(`f${i}`)], [span('orders', 0, BigInt(i), BigInt(i))])]);
  // Everything below offset 4 was deleted by retention; C (seeded at 0) says the connector applied nothing.
  const logStart = new Map([[0, 4n]]);
  assert.equal(code(plan(emptyTable(), log.read(logStart), { logStartOffsets: logStart })), 'commit', 'without C: the review\'s silent skip');
  const p = plan(emptyTable(), log.read(logStart), { logStartOffsets: logStart, connectorPositions: seed([[0, 0n]]) });
  assert.equal(code(p), 'control-records-lost');
  assert.match(p.kind === 'stopped' ? p.reason.message : '', /deleted by retention/);
  // Seeded at the log start (first start of the connector): the fresh table applies what is there.
  assert.deepEqual(paths(plan(emptyTable(), log.read(logStart), { logStartOffsets: logStart, connectorPositions: seed([[0, 4n]]) })), ['f2', 'f3', 'f4', 'f5']);
});

test('L3: a control partition neither the table nor C knows, whose log does not start at 0, stops the table', () => {
  const { md, log } = idleTable();
  const p = plan(md, log.read(new Map()), { connectorPositions: applied([[0, 2n]]), logStartOffsets: new Map([[0, 0n], [1, 7n]]) });
  assert.equal(code(p), 'control-records-lost');
  assert.equal(p.kind === 'stopped' ? p.reason.partition : undefined, 1);
});

/** Two commits (positions 2 then 4), then a rollback of main to the first; C applied through 4. */
function rolledBack(): { md: TableMetadata; log: ControlLog; first: bigint } {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 9n)])]);
  const one = apply(emptyTable(), plan(emptyTable(), log.read(new Map())));
  log.transaction(0, [announcement(0, 'c2', [file('b')], [span('orders', 0, 10n, 19n)])]);
  const two = apply(one, plan(one, log.read(new Map([[0, 2n]]))));
  const first = one.refs['main']?.snapshotId ?? 0n;
  const md: TableMetadata = { ...two, currentSnapshotId: first, refs: { main: { snapshotId: first, type: 'branch' } } };
  return { md, log, first };
}

test('D2: a restarted committer finds an announcement in [T, C) the table no longer holds: stopped, not re-applied', () => {
  const { md, log } = rolledBack();
  const c = applied([[0, 4n]]);
  assert.deepEqual(paths(plan(md, log.read(new Map([[0, 2n]])))), ['b'], 'without C: re-applied silently (the review\'s D2)');
  const p = plan(md, log.read(new Map([[0, 2n]])), { connectorPositions: c });
  assert.equal(code(p), 'positions-rolled-back');
  assert.match(p.kind === 'stopped' ? p.reason.message : '', /--reapply.*--adopt/);
  assert.equal(p.kind === 'stopped' ? p.reason.offset : undefined, 2n);
  // Another table's announcement in [T, C) is not this table's: no stop for a table that merely idled.
  const other = new ControlLog(1);
  other.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 9n)])]);
  const t = apply(emptyTable(), plan(emptyTable(), other.read(new Map())));
  other.transaction(0, [announcement(0, 'o', [file('o')], [span('refunds', 0, 0n, 0n)], { table: OTHER_TABLE })]);
  assert.equal(code(plan(t, other.read(new Map([[0, 2n]])), { connectorPositions: c })), 'nothing');
});

test('D2 recoveries: --reapply applies the lost announcement once; --adopt keeps the table as it is', () => {
  const { md, log, first } = rolledBack();
  const c = applied([[0, 4n]]);
  const marked: TableMetadata = { ...md, properties: { ...md.properties, [reapplyKey(CONNECTOR)]: encodeReapplyMark({ snapshotId: first, through: new Map([[0, 4n]]) }) } };
  const again = plan(marked, log.read(new Map([[0, 2n]])), { connectorPositions: c });
  assert.deepEqual(paths(again), ['b']);
  const after = apply(marked, again);
  assert.equal(code(plan(after, log.read(new Map([[0, 4n]])), { connectorPositions: c })), 'nothing', 'spent: nothing applied twice');
  // A mark for a snapshot the table's positions do not come from acknowledges nothing.
  const stale: TableMetadata = { ...md, properties: { [reapplyKey(CONNECTOR)]: encodeReapplyMark({ snapshotId: 999n, through: new Map([[0, 4n]])}) } };
  assert.equal(code(plan(stale, log.read(new Map([[0, 2n]])), { connectorPositions: c })), 'positions-rolled-back');
  // Adopt: a snapshot without files at positions >= everything applied.
  const adopted = withSnapshot(md, { 'icefloe.control-offsets.orders-sink': '{"0":4}', 'icefloe.control-topic-id.orders-sink': LIVE.controlTopicId, 'icefloe.kafka-cluster-id.orders-sink': LIVE.clusterId, [adoptedKey(CONNECTOR)]: '{"0":4}' });
  assert.equal(code(plan(adopted, log.read(new Map([[0, 4n]])), { connectorPositions: c, appliedBefore: { tableUuid: md.tableUuid, positions: new Map([[0, 4n]]) } })), 'nothing');
});

test('L2 live: positions behind what this committer saw applied stop the table (a replacement too); a recreated fresh table does not', () => {
  const { md, log } = rolledBack();
  const before = { tableUuid: md.tableUuid, positions: new Map([[0, 4n]]) };
  const p = plan(md, log.read(new Map([[0, 4n]])), { appliedBefore: before });
  assert.equal(code(p), 'positions-rolled-back');
  assert.match(p.kind === 'stopped' ? p.reason.message : '', /went back from 4 .* to 1 .*--reapply/);
  // Dropped and recreated (fresh): a new table, planned from C; a replacement carrying positions behind is a rollback.
  const recreated = plan(emptyTable(), [], { appliedBefore: { tableUuid: 'another-uuid', positions: new Map([[0, 4n]]) } });
  assert.notEqual(code(recreated), 'positions-rolled-back');
  const restored = plan(md, log.read(new Map([[0, 4n]])), { appliedBefore: { tableUuid: 'another-uuid', positions: new Map([[0, 4n]]) } });
  assert.equal(code(restored), 'positions-rolled-back');
});

test('C: decoded only from our metadata for the live topic; it only grows', () => {
  const topicId = '00000000-0000-0000-0000-000000000001';
  assert.deepEqual(readGroupPositions([], topicId), { kind: 'none' });
  const ours = readGroupPositions([{ partition: 0, offset: 5n, metadata: encodePositionMetadata('applied', topicId) }], topicId);
  assert.deepEqual(ours, { kind: 'positions', positions: new Map([[0, { offset: 5n, kind: 'applied' }]]) });
  assert.equal(readGroupPositions([{ partition: 0, offset: 5n, metadata: encodePositionMetadata('seed', '00000000-0000-0000-0000-000000000002') }], topicId).kind, 'other-topic');
  assert.equal(readGroupPositions([{ partition: 0, offset: 5n, metadata: 'someone else' }], topicId).kind, 'foreign');
  const next = nextAppliedPositions(new Map([[0, { offset: 9n, kind: 'applied' }], [1, { offset: 3n, kind: 'seed' }]]), new Map([[0, 4n], [1, 6n]]));
  assert.deepEqual(next, new Map([[0, { offset: 9n, kind: 'applied' }], [1, { offset: 6n, kind: 'applied' }]]));
});

test('R (issue 10, O8): a table idle behind the C a stopped table holds back is not stopped when retention passes C; an excepted table is', () => {
  const { md, log } = idleTable();
  const logStart = new Map([[0, 8n]]);
  const otherKey = tableKey(OTHER_TABLE);
  // C is held at 3 by a stopped table; R says every table but that one applied through 12.
  const held = (except: string[]): ConnectorPositions => new Map([[0, { offset: 3n, kind: 'applied' as const, rest: { offset: 12n, except } }]]);
  assert.equal(code(plan(md, log.read(logStart), { logStartOffsets: logStart, connectorPositions: applied([[0, 3n]]) })), 'control-records-lost', 'C alone: the false stop');
  const p = plan(md, log.read(logStart), { logStartOffsets: logStart, connectorPositions: held([otherKey]) });
  assert.equal(code(p), 'nothing');
  assert.equal(p.effectivePositions.get(0), 12n, 'E = R');
  // The table R excepts (it was the stopped one) is raised by C only: it lost announcements, it stops.
  const excepted = plan(md, log.read(logStart), { logStartOffsets: logStart, connectorPositions: held([tableKey(TABLE)]) });
  assert.equal(code(excepted), 'control-records-lost');
  assert.deepEqual(appliedThroughFor(held([otherKey]), TABLE), new Map([[0, 12n]]));
  assert.deepEqual(appliedThroughFor(held([tableKey(TABLE)]), TABLE), new Map([[0, 3n]]));
  // A rollback behind R is found like one behind C: an announcement of the table in [T, R) it no longer holds.
  const { md: back, log: rlog } = rolledBack();
  const r = new Map([[0, { offset: 1n, kind: 'applied' as const, rest: { offset: 4n, except: [otherKey] } }]]);
  assert.equal(code(plan(back, rlog.read(new Map([[0, 2n]])), { connectorPositions: r })), 'positions-rolled-back');
});

test('R: carried in C\'s commit metadata, recomputed every round, never below C, left out when too long', () => {
  const topicId = '00000000-0000-0000-0000-000000000001';
  const keys = [tableKey(TABLE), tableKey(OTHER_TABLE)];
  const text = encodePositionMetadata('applied', topicId, { offset: 20n, except: keys });
  assert.match(text, /^icefloe\/1 applied 0{8}-0{4}-0{4}-0{4}-0{11}1 rest=20 except=[0-9a-f]{12},[0-9a-f]{12}$/);
  assert.deepEqual(readGroupPositions([{ partition: 0, offset: 5n, metadata: text }], topicId), {
    kind: 'positions',
    positions: new Map([[0, { offset: 5n, kind: 'applied', rest: { offset: 20n, except: [...keys].sort() } }]]),
  });
  const none = encodePositionMetadata('applied', topicId, { offset: 20n, except: [] });
  assert.deepEqual(readGroupPositions([{ partition: 0, offset: 5n, metadata: none }], topicId), { kind: 'positions', positions: new Map([[0, { offset: 5n, kind: 'applied', rest: { offset: 20n, except: [] } }]]) });
  assert.equal(encodePositionMetadata('seed', topicId, { offset: 20n, except: [] }), `icefloe/1 seed ${topicId}`, 'a seed says nothing of tables');
  const many = Array.from({ length: 400 }, (_, i) => tableKey({ namespace: ['db'], name: `t${i}` }));
  assert.equal(encodePositionMetadata('applied', topicId, { offset: 20n, except: many }), `icefloe/1 applied ${topicId}`, 'over the metadata limit: C alone (always true)');
  const next = nextAppliedPositions(new Map([[0, { offset: 9n, kind: 'applied', rest: { offset: 30n, except: [] } }]]), new Map([[0, 10n]]), { through: new Map([[0, 25n]]), except: keys });
  assert.deepEqual(next.get(0), { offset: 10n, kind: 'applied', rest: { offset: 25n, except: keys } }, 'R is this round\'s, not grown from before');
  assert.deepEqual(nextAppliedPositions(new Map([[0, { offset: 9n, kind: 'applied' }]]), new Map(), { through: new Map([[0, 4n]]), except: [] }).get(0)?.rest, { offset: 9n, except: [] }, 'never below C');
});

test('D1 defence: an announcement wholly covered by applied source offsets is passed; a partial overlap stops the table', () => {
  // The live source log vouches for what was applied (same topic id, the log reaches it: source-applied.ts, N1).
  const sourceLogs = { topicIds: new Map([['orders', 'orders-id']]), ends: new Map([['orders/0', { low: 0n, high: 200n }]]) };
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 99n)])]);
  const md = apply(emptyTable(), plan(emptyTable(), log.read(new Map()), { sources: { logs: sourceLogs } }));
  // A zombie's late announcement of the same records, then the live task's next cycle.
  log.transaction(0, [announcement(1, 'z1', [file('zombie')], [span('orders', 0, 0n, 99n)])]);
  log.transaction(0, [announcement(0, 'c2', [file('b')], [span('orders', 0, 100n, 149n)])]);
  const p = plan(md, log.read(new Map([[0, 2n]])), { sources: { logs: sourceLogs } });
  assert.deepEqual(paths(p), ['b'], 'the covered announcement\'s file is not committed');
  assert.equal(p.kind === 'commit' ? p.dropped.length : -1, 1);
  assert.equal(p.kind === 'commit' ? p.positions.get(0) : undefined, 5n, 'its position is passed');
  assert.equal(p.kind === 'commit' ? p.summary['icefloe.source-applied.orders-sink'] : undefined, '{"orders":{"0":149}}');
  assert.equal(p.kind === 'commit' ? p.summary['icefloe.source-topic-ids.orders-sink'] : undefined, '{"orders":"orders-id"}');
  // With two control partitions the order across them is not guaranteed: a covered one stops instead of being dropped.
  const two = plan(md, log.read(new Map([[0, 2n]])), { logStartOffsets: new Map([[0, 0n], [1, 0n]]), sources: { logs: sourceLogs } });
  assert.equal(code(two), 'source-overlap');
  assert.match(two.kind === 'stopped' ? two.reason.message : '', /2 control partitions/);
  // Partial: 50..120 overlaps 0..99 applied and brings 100..120 new.
  const partial = new ControlLog(1);
  partial.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 99n)])]);
  const t = apply(emptyTable(), plan(emptyTable(), partial.read(new Map()), { sources: { logs: sourceLogs } }));
  partial.transaction(0, [announcement(1, 'z', [file('z')], [span('orders', 0, 50n, 120n)])]);
  const q = plan(t, partial.read(new Map([[0, 2n]])), { sources: { logs: sourceLogs } });
  assert.equal(code(q), 'source-overlap');
  assert.match(q.kind === 'stopped' ? q.reason.message : '', /50\.\.120.*through 99/);
  // Within one round, two announcements of the same records: the second is passed.
  const same = new ControlLog(1);
  same.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 9n)])]);
  same.transaction(0, [announcement(1, 'z', [file('z')], [span('orders', 0, 0n, 9n)])]);
  assert.deepEqual(paths(plan(emptyTable(), same.read(new Map()))), ['a']);
});
