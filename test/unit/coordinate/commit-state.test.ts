/**
 * The per-table committer state machine (docs/architecture.md, "Idempotent commits"): every test
 * plans from positions read out of a table's snapshot summaries, "commits" by appending a snapshot with
 * the plan's summary and commit id, and re-reads — the same loop a committer runs, restarts included.
 */
import { test } from 'node:test';
import { prng } from '../../../src/core/prng.ts';
import assert from 'node:assert/strict';
import { COMMIT_ID_KEY, findCommit } from '../../../src/commit/commit-retry.ts';
import type { TableMetadata } from '../../../src/iceberg/metadata.ts';
import { commitIdFor, isPlanCurrent, planTableCommit, readControlRecord } from '../../../src/coordinate/commit-state.ts';
import type { ControlRecordRead, TableCommitInput, TablePlan } from '../../../src/coordinate/commit-state.ts';
import {
  controlOffsetsKey,
  readControlPositions,
  sourceOffsetsKey,
  VALID_THROUGH_TS_KEY,
} from '../../../src/coordinate/control-positions.ts';
import type { ControlIdentity } from '../../../src/coordinate/control-positions.ts';
import { encodeAnnouncement, encodeControlEvent } from '../../../src/coordinate/events.ts';
import type { Announcement, CycleComplete, PartitionAssignment } from '../../../src/coordinate/events.ts';
import {
  announcement,
  CONNECTOR,
  ControlLog,
  cycleComplete,
  emptyTable,
  expire,
  file,
  LIVE,
  OTHER_TABLE,
  span,
  TABLE,
  withSnapshot,
} from './fixtures.ts';

const NOW = 1_800_000_000_000;

function plan(md: TableMetadata, records: readonly ControlRecordRead[], over: Partial<TableCommitInput> = {}): TablePlan {
  const live: ControlIdentity = over.live ?? LIVE;
  return planTableCommit({
    connector: CONNECTOR,
    table: TABLE,
    metadata: md,
    positions: readControlPositions(md, CONNECTOR, live),
    live,
    records,
    nowMs: NOW,
    ...over,
  });
}

/** Reads from the table's stored positions (what a restarted committer does). */
function round(md: TableMetadata, log: ControlLog, over: Partial<TableCommitInput> = {}, until?: ReadonlyMap<number, bigint>): TablePlan {
  const read = readControlPositions(md, CONNECTOR, over.live ?? LIVE);
  const from = read.kind === 'positions' ? read.positions : new Map<number, bigint>();
  return plan(md, log.read(from, until), over);
}

function apply(md: TableMetadata, p: TablePlan): TableMetadata {
  assert.equal(p.kind, 'commit', p.kind === 'stopped' ? p.reason.message : p.kind);
  assert.ok(p.kind === 'commit');
  return withSnapshot(md, { ...p.summary, [COMMIT_ID_KEY]: p.commitId });
}

const paths = (p: TablePlan): string[] => (p.kind === 'commit' ? p.files.map((f) => f.filePath) : []);
const idle = (topic: string, partition: number, nextOffset: bigint, maxTimestampMs?: number): PartitionAssignment => ({
  topic,
  partition,
  nextOffset,
  caughtUp: true,
  ...(maxTimestampMs === undefined ? {} : { maxTimestampMs }),
});
const busy = (topic: string, partition: number, nextOffset: bigint, maxTimestampMs: number): PartitionAssignment => ({ topic, partition, nextOffset, caughtUp: false, maxTimestampMs });

test('fresh table: every announcement from the beginning, positions after the last one, summary for operators', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 9n, 1000)])], cycleComplete(0, 'c1', [busy('orders', 0, 10n, 1000)]));
  log.transaction(0, [announcement(0, 'c2', [file('b'), file('c')], [span('orders', 0, 10n, 19n, 2000)])], cycleComplete(0, 'c2', [busy('orders', 0, 20n, 2000)]));
  const p = round(emptyTable(), log);
  assert.equal(p.kind, 'commit');
  assert.ok(p.kind === 'commit');
  assert.deepEqual(paths(p), ['a', 'b', 'c']);
  // records: 0 ann, 1 cc, 2 marker, 3 ann, 4 cc, 5 marker: the position is after the last announcement
  assert.deepEqual(p.positions, new Map([[0, 4n]]));
  assert.equal(p.summary[controlOffsetsKey(CONNECTOR)], '{"0":4}');
  assert.equal(p.summary[`icefloe.control-topic-id.${CONNECTOR}`], LIVE.controlTopicId);
  assert.equal(p.summary[`icefloe.kafka-cluster-id.${CONNECTOR}`], LIVE.clusterId);
  assert.equal(p.summary[sourceOffsetsKey(CONNECTOR)], '{"orders":{"0":[0,19]}}');
  assert.equal(p.summary[VALID_THROUGH_TS_KEY], '2000');
  assert.match(p.commitId, /^icefloe:orders-sink:[0-9a-f]{32}$/);
});

test('resume from stored positions: announcements below the position are ignored, each applied exactly once', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 9n)])]);
  let md = apply(emptyTable(), round(emptyTable(), log));
  // nothing new: replaying the whole log (including what is below the position) commits nothing
  const again = plan(md, log.read(new Map()));
  assert.equal(again.kind, 'nothing');
  log.transaction(0, [announcement(0, 'c2', [file('b')], [span('orders', 0, 10n, 19n)])]);
  const next = plan(md, log.read(new Map())); // even handed everything from offset 0
  assert.deepEqual(paths(next), ['b']);
  md = apply(md, next);
  assert.equal(round(md, log).kind, 'nothing');
  assert.deepEqual(readControlPositions(md, CONNECTOR, LIVE).kind === 'positions' ? readControlPositions(md, CONNECTOR, LIVE) : undefined, {
    kind: 'positions',
    positions: new Map([[0, 3n]]),
    identity: LIVE,
    snapshotId: 2n,
    sourceApplied: '{"orders":{"0":19}}',
  });
});

test('two control partitions: positions per partition; the stored position of an untouched partition is carried forward', () => {
  const log = new ControlLog(2);
  log.transaction(0, [announcement(0, 'c1', [file('p0-a')], [span('orders', 0, 0n, 9n)])]);
  log.transaction(1, [announcement(1, 'c1', [file('p1-a')], [span('orders', 1, 0n, 9n)])]);
  log.transaction(1, [announcement(1, 'c2', [file('p1-b')], [span('orders', 1, 10n, 19n)])]);
  let md = apply(emptyTable(), round(emptyTable(), log));
  assert.deepEqual(readControlPositions(md, CONNECTOR, LIVE).kind === 'positions' ? (readControlPositions(md, CONNECTOR, LIVE) as { positions: unknown }).positions : undefined, new Map([
    [0, 1n],
    [1, 3n],
  ]));
  log.transaction(1, [announcement(1, 'c3', [file('p1-c')], [span('orders', 1, 20n, 29n)])]);
  const p = round(md, log);
  assert.deepEqual(paths(p), ['p1-c']);
  assert.ok(p.kind === 'commit');
  assert.deepEqual(p.positions, new Map([
    [0, 1n],
    [1, 5n],
  ]));
  md = apply(md, p);
  assert.equal(round(md, log).kind, 'nothing');
});

test('announcements for other tables and other connectors are ignored and do not move positions', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('other')], [], { table: OTHER_TABLE })]);
  log.transaction(0, [announcement(0, 'c1', [file('x')], [], { connector: 'another-connector' })]);
  assert.equal(round(emptyTable(), log).kind, 'nothing');
  log.transaction(0, [announcement(0, 'c2', [file('mine')], [])]);
  log.transaction(0, [announcement(0, 'c3', [file('other-2')], [], { table: OTHER_TABLE })]);
  const p = round(emptyTable(), log);
  assert.deepEqual(paths(p), ['mine']);
  assert.ok(p.kind === 'commit');
  assert.deepEqual(p.positions, new Map([[0, 5n]])); // after "mine" at 4, not after other-2 at 6
});

test('a schema id the table does not have stops the table without advancing: nothing committed, reason names the record', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('good')], [])]);
  log.transaction(0, [announcement(0, 'c2', [file('bad')], [], { schemaId: 7 })]);
  log.transaction(0, [announcement(0, 'c3', [file('later')], [])]);
  const md = apply(emptyTable(), plan(emptyTable(), log.read(new Map(), new Map([[0, 1n]]))));
  const p = round(md, log);
  assert.equal(p.kind, 'stopped');
  assert.ok(p.kind === 'stopped');
  assert.equal(p.reason.code, 'unknown-schema');
  assert.equal(p.reason.partition, 0);
  assert.equal(p.reason.offset, 2n);
  assert.match(p.reason.message, /schema id 7/);
  assert.deepEqual(p.positions, new Map([[0, 1n]]));
  // and it stays stopped on every retry: the bad announcement is never skipped
  assert.equal(round(md, log).kind, 'stopped');
});

test('table UUID differs, a file reported missing, a file announced twice, an undecodable record: each stops the table', () => {
  const uuid = new ControlLog(1);
  uuid.transaction(0, [announcement(0, 'c1', [file('a')], [], { tableUuid: '00000000-0000-4000-8000-000000000000' })]);
  const u = round(emptyTable(), uuid);
  assert.equal(u.kind === 'stopped' ? u.reason.code : u.kind, 'table-uuid-mismatch');

  const missing = new ControlLog(1);
  missing.transaction(0, [announcement(0, 'c1', [file('a'), file('gone')], [])]);
  const m = round(emptyTable(), missing, { isFileMissing: (p) => p === 'gone' });
  assert.equal(m.kind === 'stopped' ? m.reason.code : m.kind, 'file-missing');

  const dup = new ControlLog(1);
  dup.transaction(0, [announcement(0, 'c1', [file('a')], [])]);
  dup.transaction(0, [announcement(1, 'c1', [file('a')], [])]);
  const d = round(emptyTable(), dup);
  assert.equal(d.kind === 'stopped' ? d.reason.code : d.kind, 'duplicate-file');

  const junk = [readControlRecord(0, 0n, new TextEncoder().encode('{"format":"icefloe-control","version":"1.0","type":"announcement"}'))];
  const j = plan(emptyTable(), junk);
  assert.equal(j.kind === 'stopped' ? j.reason.code : j.kind, 'undecodable-event');

  // A record of this connector from a newer major version: stops with the reason that names the fix.
  const future = [readControlRecord(0, 0n, new TextEncoder().encode('{"format":"icefloe-control","version":"2.0"}'))];
  const f = plan(emptyTable(), future);
  assert.equal(f.kind === 'stopped' ? f.reason.code : f.kind, 'unsupported-control-version');
  assert.match(f.kind === 'stopped' ? f.reason.message : '', /newer Icefloe.*upgrade this worker/);

  const spec = new ControlLog(1);
  spec.transaction(0, [announcement(0, 'c1', [file('a')], [], { specId: 4 })]);
  const s = round(emptyTable(), spec);
  assert.equal(s.kind === 'stopped' ? s.reason.code : s.kind, 'unknown-partition-spec');
});

test('identity mismatch fails closed: the table stops, positions stay put', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [])]);
  const md = apply(emptyTable(), round(emptyTable(), log));
  log.transaction(0, [announcement(0, 'c2', [file('b')], [])]);
  const p = round(md, log, { live: { ...LIVE, controlTopicId: 'recreated-topic' } });
  assert.equal(p.kind, 'stopped');
  assert.ok(p.kind === 'stopped');
  assert.equal(p.reason.code, 'positions-identity-mismatch');
  assert.match(p.reason.message, /recreated-topic/);
  // The stored positions are the old log's: they are in the reason, never the table's needs on the live log (N10).
  assert.deepEqual(p.positions, new Map());
  assert.deepEqual(p.reason.context['storedPositions'], { 0: '1' });
});

test('expired ancestry fails closed, and so does a table written only by others', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [])]);
  let md = apply(emptyTable(), round(emptyTable(), log));
  md = withSnapshot(md, { 'engine-name': 'spark' });
  md = withSnapshot(md, { 'engine-name': 'spark' });
  const p = round(expire(md, [1n, 2n]), log);
  assert.equal(p.kind === 'stopped' ? p.reason.code : p.kind, 'positions-expired');
  const foreign = withSnapshot(emptyTable(), { 'engine-name': 'spark' });
  const f = round(foreign, log);
  assert.equal(f.kind === 'stopped' ? f.reason.code : f.kind, 'positions-unseeded');
});

test('control records deleted by retention before they were applied stop the table', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [])]);
  const md = apply(emptyTable(), round(emptyTable(), log));
  const p = round(md, log, { logStartOffsets: new Map([[0, 5n]]) });
  assert.equal(p.kind === 'stopped' ? p.reason.code : p.kind, 'control-records-lost');
});

test('watermark: idle and caught-up partitions do not hold it back; a lagging one does; it never regresses', () => {
  const cycle = (log: ControlLog, c: string, ts0: number, ts1: number, others: PartitionAssignment[], caughtUpAtMs: number | null = 9000): void => {
    log.transaction(
      0,
      [announcement(0, c, [file(`${c}-f`)], [span('orders', 0, 0n, 9n, ts0), span('orders', 1, 0n, 9n, ts1)])],
      { ...cycleComplete(0, c, [busy('orders', 0, 10n, ts0), busy('orders', 1, 10n, ts1), ...others]), ...(caughtUpAtMs === null ? {} : { caughtUpAtMs }) },
    );
  };
  // four idle partitions (one never had a record) and one busy only with another table: W = min(5000, 7000)
  const idleLog = new ControlLog(1);
  cycle(idleLog, 'c1', 5000, 7000, [idle('orders', 2, 0n), idle('orders', 3, 50n, 10), idle('orders', 4, 60n, 20), idle('orders', 5, 70n, 30)]);
  // The live source log vouches for what the table applied, so c2's records (the same offsets) are passed as covered (N1).
  const vouched = { sources: { logs: { topicIds: new Map([['orders', 'orders-id']]), ends: new Map([['orders/0', { low: 0n, high: 10n }], ['orders/1', { low: 0n, high: 10n }]]) } } };
  const a = round(emptyTable(), idleLog, vouched);
  assert.ok(a.kind === 'commit');
  assert.equal(a.validThroughTs, 5000);

  // a partition still lagging (not caught up) with no data for this table holds it at what it consumed so far
  const lagLog = new ControlLog(1);
  cycle(lagLog, 'c1', 5000, 7000, [busy('orders', 2, 40n, 3000)]);
  const b = round(emptyTable(), lagLog);
  assert.ok(b.kind === 'commit');
  assert.equal(b.validThroughTs, 3000);

  // no cycle-complete for the applied cycle: W is not advanced (none stored yet: absent)
  const noCc = new ControlLog(1);
  noCc.transaction(0, [announcement(0, 'c1', [file('x')], [span('orders', 0, 0n, 9n, 5000)])]);
  const c = round(emptyTable(), noCc);
  assert.ok(c.kind === 'commit');
  assert.equal(c.validThroughTs, undefined);
  assert.equal(c.summary[VALID_THROUGH_TS_KEY], undefined);

  // never regresses: a later commit whose data is older keeps the stored W
  const md = apply(emptyTable(), a);
  cycle(idleLog, 'c2', 100, 200, []);
  const d = round(md, idleLog, vouched);
  assert.ok(d.kind === 'commit');
  assert.equal(d.validThroughTs, 5000);

  // catching up in bounded reads (control partitions read to different depths): the commit lands, W stays put
  const lagE = round(emptyTable(), idleLog, { readToEnd: false });
  assert.ok(lagE.kind === 'commit');
  assert.equal(lagE.validThroughTs, undefined);
  const lagF = round(md, idleLog, { readToEnd: false, ...vouched });
  assert.equal(lagF.kind === 'commit' ? lagF.validThroughTs : lagF.kind, 5000);

  // a caught-up report vouches only for the time it was taken: idle partitions seen caught up at 4000 hold W there
  const early = new ControlLog(1);
  cycle(early, 'c1', 5000, 7000, [idle('orders', 2, 0n), idle('orders', 3, 50n, 10)], 4000);
  const e = round(emptyTable(), early);
  assert.ok(e.kind === 'commit');
  assert.equal(e.validThroughTs, 4000);

  // a caught-up report without a time (an older task) vouches only for the records it consumed
  const untimed = new ControlLog(1);
  cycle(untimed, 'c1', 5000, 7000, [idle('orders', 3, 50n, 10)], null);
  const f = round(emptyTable(), untimed);
  assert.ok(f.kind === 'commit');
  assert.equal(f.validThroughTs, 10);

  // a source partition the committer knows of that no report in the buffer covers (another task's, idle
  // since before the table's position) holds W where it was; its remembered report vouches up to its time
  const g = round(emptyTable(), idleLog, { sources: { partitions: new Set(['orders/0', 'orders/1', 'orders/9']) } });
  assert.ok(g.kind === 'commit');
  assert.equal(g.validThroughTs, undefined);
  const remembered = { assignment: idle('orders', 9, 3n, 2), caughtUpAtMs: 4500 };
  const h = round(emptyTable(), idleLog, { sources: { partitions: new Set(['orders/9']), reports: new Map([['orders/9', remembered]]) } });
  assert.ok(h.kind === 'commit');
  assert.equal(h.validThroughTs, 4500);
});

test('commit id: the same inputs give the same id; a restarted committer finds a commit that landed', () => {
  const log = new ControlLog(2);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [])]);
  log.transaction(1, [announcement(1, 'c1', [file('b')], [])]);
  const md = emptyTable();
  const first = round(md, log);
  const second = round(md, log);
  assert.ok(first.kind === 'commit' && second.kind === 'commit');
  assert.equal(first.commitId, second.commitId);
  assert.deepEqual(first, second);
  // the answer to the commit is lost; the restarted committer plans from the same table and records
  const landed = apply(md, first);
  const restarted = round(md, log);
  assert.ok(restarted.kind === 'commit');
  assert.ok(findCommit(landed, restarted.commitId) !== undefined);
  // and from the reloaded table there is nothing left, and the old plan is no longer current
  assert.equal(round(landed, log).kind, 'nothing');
  assert.equal(isPlanCurrent(first, readControlPositions(landed, CONNECTOR, LIVE)), false);
  assert.equal(isPlanCurrent(first, readControlPositions(md, CONNECTOR, LIVE)), true);
  // different ranges, different ids
  assert.notEqual(commitIdFor(CONNECTOR, TABLE, new Map([[0, { first: 0n, last: 0n }]]), LIVE.controlTopicId), commitIdFor(CONNECTOR, TABLE, new Map([[0, { first: 0n, last: 1n }]]), LIVE.controlTopicId));
  // The same offsets of another control topic (recreated: it starts again at 0) are other announcements.
  assert.notEqual(commitIdFor(CONNECTOR, TABLE, new Map([[0, { first: 0n, last: 0n }]]), LIVE.controlTopicId), commitIdFor(CONNECTOR, TABLE, new Map([[0, { first: 0n, last: 0n }]]), 'recreated-topic'));
});

test('split announcement: its tail not read yet → the prefix commits and it waits; read whole → it applies once', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('small')], [])]);
  const big = announcement(1, 'c1', Array.from({ length: 12 }, (_, i) => file(`big-${String(i).padStart(2, '0')}-${'p'.repeat(200)}`)), [span('orders', 1, 0n, 99n)]);
  const offsets = log.transaction(0, [big], undefined, 1200);
  assert.ok(offsets.length >= 3);
  // the poll ended after the first two parts
  const cutAt = (offsets[2] ?? 0n);
  const p = round(emptyTable(), log, {}, new Map([[0, cutAt]]));
  assert.deepEqual(paths(p), ['small']);
  assert.ok(p.kind === 'commit');
  assert.equal(p.waiting, 1);
  assert.deepEqual(p.positions, new Map([[0, 1n]]));
  const md = apply(emptyTable(), p);
  const q = round(md, log);
  assert.deepEqual(paths(q), big.files.map((f) => f.filePath));
  assert.ok(q.kind === 'commit');
  assert.deepEqual(q.positions, new Map([[0, (offsets[offsets.length - 1] ?? 0n) + 1n]]));
  assert.equal(round(apply(md, q), log).kind, 'nothing');
});

test('split announcement with a part missing while later records of its task exist: the table stops', () => {
  const big = announcement(1, 'c1', Array.from({ length: 12 }, (_, i) => file(`big-${i}-${'p'.repeat(200)}`)), []);
  const values = encodeAnnouncement(big, 1200);
  assert.ok(values.length >= 3);
  const records = [
    ...values.map((v, i) => readControlRecord(0, BigInt(i), v)).filter((_, i) => i !== values.length - 1),
    readControlRecord(0, BigInt(values.length), encodeControlEvent(cycleComplete(1, 'c1', []))),
  ];
  const p = plan(emptyTable(), records);
  assert.equal(p.kind, 'stopped');
  assert.ok(p.kind === 'stopped');
  assert.equal(p.reason.code, 'part-missing');
  assert.equal(p.reason.offset, 0n);
  // a missing middle part is missing whatever follows
  const middle = values.map((v, i) => readControlRecord(0, BigInt(i), v)).filter((_, i) => i !== 1);
  const m = plan(emptyTable(), middle);
  assert.equal(m.kind === 'stopped' ? m.reason.code : m.kind, 'part-missing');
  // and a first part below the stored position (seen only its tail) is missing too
  const tail = values.map((v, i) => readControlRecord(0, BigInt(i), v)).slice(1);
  const t = plan(emptyTable(), tail);
  assert.equal(t.kind === 'stopped' ? t.reason.code : t.kind, 'part-missing');
});

test('interleaved transactions on one partition: an announcement straddling a waiting one is not applied past it', () => {
  // offsets: 0 = A part 0/2, 1 = B (complete), 2 = A part 1/2; read cut after 1 → A waits, B must wait too
  const a = announcement(1, 'a', Array.from({ length: 3 }, (_, i) => file(`a-${i}-${'p'.repeat(200)}`)), []);
  const [a0, a1, ...rest] = encodeAnnouncement(a, 1000);
  assert.ok(a0 !== undefined && a1 !== undefined && rest.length === 0);
  const [b] = encodeAnnouncement(announcement(2, 'b', [file('b')], []), 1000);
  assert.ok(b !== undefined);
  const recs = [readControlRecord(0, 0n, a0), readControlRecord(0, 1n, b), readControlRecord(0, 2n, a1)];
  const cut = plan(emptyTable(), recs.slice(0, 2));
  assert.equal(cut.kind, 'nothing');
  const whole = plan(emptyTable(), recs);
  assert.ok(whole.kind === 'commit');
  assert.equal(whole.files.length, 4);
  assert.deepEqual(whole.positions, new Map([[0, 3n]]));
});

// ---------------------------------------------------------------------------------------------------
// Property: random interleavings, aborts, partial reads, crashes and foreign snapshots never apply an
// announcement twice nor skip one.
// ---------------------------------------------------------------------------------------------------

interface Txn {
  readonly task: number;
  readonly partition: number;
  readonly values: Uint8Array[];
  readonly announcements: Announcement[];
  readonly abort: boolean;
  sent: number;
  offsets: bigint[];
}

/** A control topic with interleaved, possibly aborted transactions and read_committed visibility. */
class TxnLog {
  readonly records: { partition: number; offset: bigint; value: Uint8Array; txn: Txn }[] = [];
  readonly next: bigint[];
  readonly open = new Set<Txn>();
  readonly done: Txn[] = [];
  constructor(partitions: number) {
    this.next = Array.from({ length: partitions }, () => 0n);
  }
  send(t: Txn): void {
    const v = t.values[t.sent++];
    if (v === undefined) throw new Error('nothing left to send');
    const offset = this.next[t.partition] ?? 0n;
    this.next[t.partition] = offset + 1n;
    this.records.push({ partition: t.partition, offset, value: v, txn: t });
    t.offsets.push(offset);
    this.open.add(t);
  }
  end(t: Txn): void {
    this.next[t.partition] = (this.next[t.partition] ?? 0n) + 1n; // commit or abort marker
    this.open.delete(t);
    this.done.push(t);
  }
  /** The last stable offset: the first offset of the earliest open transaction on the partition. */
  lso(p: number): bigint {
    let lso = this.next[p] ?? 0n;
    for (const t of this.open) if (t.partition === p && t.offsets[0] !== undefined && t.offsets[0] < lso) lso = t.offsets[0];
    return lso;
  }
  /** read_committed, from `from`, below the LSO and below `until`. */
  read(from: ReadonlyMap<number, bigint>, until: ReadonlyMap<number, bigint>): ControlRecordRead[] {
    return this.records
      .filter((r) => !r.txn.abort && !this.open.has(r.txn) && r.offset >= (from.get(r.partition) ?? 0n) && r.offset < this.lso(r.partition) && r.offset < (until.get(r.partition) ?? this.lso(r.partition)))
      .map((r) => readControlRecord(r.partition, r.offset, r.value));
  }
}

function runScenario(seed: number): void {
  const random = prng(seed);
  const pick = (n: number): number => Math.floor(random() * n);
  const CONTROL_PARTITIONS = 1 + pick(3);
  const TASKS = 1 + pick(4);
  const SOURCE_PARTITIONS = 6;
  const log = new TxnLog(CONTROL_PARTITIONS);
  // each task owns source partitions s with s % TASKS === task; committed source offsets per partition
  const committedSource = Array.from({ length: SOURCE_PARTITIONS }, () => 0n);
  const taskCycle = Array.from({ length: TASKS }, () => 0);
  const busyTask = new Set<number>();
  let fileSeq = 0;

  const newTxn = (task: number): Txn => {
    const cycleId = `t${task}-c${taskCycle[task]}`;
    taskCycle[task] = (taskCycle[task] ?? 0) + 1;
    const owned = Array.from({ length: SOURCE_PARTITIONS }, (_, s) => s).filter((s) => s % TASKS === task);
    const announcements: Announcement[] = [];
    const assignments: PartitionAssignment[] = [];
    const abort = random() < 0.15;
    const spansFor: { s: number; first: bigint; last: bigint; ts: number }[] = [];
    for (const s of owned) {
      const n = BigInt(pick(4)); // 0 = idle partition this cycle
      const first = committedSource[s] ?? 0n;
      if (n > 0n) spansFor.push({ s, first, last: first + n * 10n - 1n, ts: Number(first + n * 10n) });
      assignments.push({ topic: 'orders', partition: s, nextOffset: first + n * 10n, caughtUp: n === 0n, maxTimestampMs: Number(first + n * 10n) });
      if (!abort) committedSource[s] = first + n * 10n; // the source offsets commit with the transaction
    }
    if (spansFor.length > 0) {
      const fileCount = 1 + pick(8);
      const files = Array.from({ length: fileCount }, () => file(`s3://wh/data/${String(fileSeq++).padStart(6, '0')}-${'z'.repeat(pick(300))}.parquet`));
      announcements.push(announcement(task, cycleId, files, spansFor.map((x) => span('orders', x.s, x.first, x.last, x.ts))));
      if (random() < 0.5) announcements.push(announcement(task, cycleId, [file(`s3://wh/other/${fileSeq++}.parquet`)], [], { table: OTHER_TABLE }));
    }
    const limit = random() < 0.5 ? 900 : 1_000_000;
    const values = announcements.flatMap((a) => encodeAnnouncement(a, limit));
    const cc: CycleComplete = cycleComplete(task, cycleId, assignments);
    values.push(encodeControlEvent(cc));
    return { task, partition: task % CONTROL_PARTITIONS, values, announcements, abort, sent: 0, offsets: [] };
  };

  let md = emptyTable();
  const appliedRecords = new Map<string, number>(); // "p@offset" of our announcement parts applied
  const appliedFiles = new Map<string, number>();
  const appliedSourceOffsets = new Map<number, [bigint, bigint][]>();
  let lastW: number | undefined;

  const committerRound = (): TablePlan => {
    const read = readControlPositions(md, CONNECTOR, LIVE);
    const from = read.kind === 'positions' ? read.positions : new Map<number, bigint>();
    // a poll returns a random prefix of what is visible
    const until = new Map<number, bigint>();
    for (let p = 0; p < CONTROL_PARTITIONS; p++) {
      const lo = from.get(p) ?? 0n;
      const hi = log.lso(p);
      if (random() < 0.4 && hi > lo) until.set(p, lo + BigInt(pick(Number(hi - lo) + 1)));
    }
    // sometimes the consumer hands back records from before the stored positions too (a re-delivery)
    const readFrom = random() < 0.2 ? new Map<number, bigint>() : from;
    const p = planTableCommit({ connector: CONNECTOR, table: TABLE, metadata: md, positions: read, live: LIVE, records: log.read(readFrom, until), nowMs: NOW });
    assert.notEqual(p.kind, 'stopped', p.kind === 'stopped' ? `seed ${seed}: ${p.reason.message}` : '');
    if (p.kind !== 'commit') return p;
    const fate = random();
    if (fate < 0.15) return p; // crashed before the catalog saw it
    // determinism: the same inputs replanned (as after a restart) give the same commit id
    const landed = withSnapshot(md, { ...p.summary, [COMMIT_ID_KEY]: p.commitId });
    if (fate < 0.3) {
      // unknown outcome: it landed; the restarted committer recomputes the id and finds it
      assert.ok(findCommit(landed, p.commitId) !== undefined);
    }
    md = landed;
    for (const a of p.applied) for (const o of a.offsets) appliedRecords.set(`${a.partition}@${o}`, (appliedRecords.get(`${a.partition}@${o}`) ?? 0) + 1);
    for (const f of p.files) appliedFiles.set(f.filePath, (appliedFiles.get(f.filePath) ?? 0) + 1);
    for (const a of p.applied) for (const s of a.announcement.sourceSpans) {
      const list = appliedSourceOffsets.get(s.partition) ?? [];
      list.push([s.firstOffset, s.lastOffset]);
      appliedSourceOffsets.set(s.partition, list);
    }
    if (lastW !== undefined && p.validThroughTs !== undefined) assert.ok(p.validThroughTs >= lastW, `seed ${seed}: watermark regressed`);
    if (p.validThroughTs !== undefined) lastW = p.validThroughTs;
    if (random() < 0.1) md = withSnapshot(md, { 'engine-name': 'spark', operation: 'replace' }); // foreign compaction
    return p;
  };

  const steps = 40 + pick(80);
  const inFlight: Txn[] = [];
  for (let i = 0; i < steps; i++) {
    const r = random();
    if (r < 0.35) {
      const free = Array.from({ length: TASKS }, (_, t) => t).filter((t) => !busyTask.has(t));
      const task = free[pick(free.length)];
      if (task !== undefined) {
        busyTask.add(task);
        inFlight.push(newTxn(task));
      }
    } else if (r < 0.75 && inFlight.length > 0) {
      const t = inFlight[pick(inFlight.length)];
      if (t === undefined) continue;
      if (t.sent < t.values.length) log.send(t);
      else {
        log.end(t);
        inFlight.splice(inFlight.indexOf(t), 1);
        busyTask.delete(t.task);
      }
    } else {
      committerRound();
    }
  }
  // drain: finish every transaction, then commit until nothing is left (every round is a restart)
  for (const t of inFlight) {
    while (t.sent < t.values.length) log.send(t);
    log.end(t);
  }
  for (let guard = 0; guard < 200; guard++) {
    const before = md.snapshots.length;
    const p = committerRound();
    if (p.kind === 'nothing' && p.waiting === 0 && md.snapshots.length === before) {
      // a final full read must agree there is nothing left
      const read = readControlPositions(md, CONNECTOR, LIVE);
      const from = read.kind === 'positions' ? read.positions : new Map<number, bigint>();
      const full = planTableCommit({ connector: CONNECTOR, table: TABLE, metadata: md, positions: read, live: LIVE, records: log.read(from, new Map()), nowMs: NOW });
      if (full.kind === 'nothing') break;
    }
  }

  // Expected: every announcement part for TABLE in a committed transaction, exactly once.
  const expectedRecords = new Set<string>();
  const expectedFiles = new Set<string>();
  const expectedSource = new Map<number, bigint>(); // source offsets announced to TABLE per partition
  for (const t of log.done) {
    if (t.abort) continue;
    for (const r of log.records) {
      if (r.txn !== t) continue;
      const e = readControlRecord(r.partition, r.offset, r.value);
      if ('event' in e && e.event.type === 'announcement' && e.event.table.name === TABLE.name) expectedRecords.add(`${r.partition}@${r.offset}`);
    }
    for (const a of t.announcements) {
      if (a.table.name !== TABLE.name) continue;
      for (const f of a.files) expectedFiles.add(f.filePath);
      for (const s of a.sourceSpans) expectedSource.set(s.partition, (expectedSource.get(s.partition) ?? 0n) + s.lastOffset - s.firstOffset + 1n);
    }
  }
  assert.deepEqual(new Set(appliedRecords.keys()), expectedRecords, `seed ${seed}: applied control records`);
  for (const [k, n] of appliedRecords) assert.equal(n, 1, `seed ${seed}: control record ${k} applied ${n} times`);
  assert.deepEqual(new Set(appliedFiles.keys()), expectedFiles, `seed ${seed}: files`);
  for (const [k, n] of appliedFiles) assert.equal(n, 1, `seed ${seed}: file ${k} committed ${n} times`);
  // source offsets: applied spans are disjoint and cover exactly what was announced (0..committed-1)
  for (let s = 0; s < SOURCE_PARTITIONS; s++) {
    const spans = [...(appliedSourceOffsets.get(s) ?? [])].sort((x, y) => (x[0] < y[0] ? -1 : 1));
    let next = 0n;
    for (const [first, last] of spans) {
      assert.equal(first, next, `seed ${seed}: source partition ${s} gap or overlap at ${first} (expected ${next})`);
      next = last + 1n;
    }
    assert.equal(next, expectedSource.get(s) ?? 0n, `seed ${seed}: source partition ${s}`);
    assert.equal(next, committedSource[s], `seed ${seed}: source partition ${s} vs committed source offset`);
  }
}

test('property: random interleavings, aborts, partial polls, crashes and restarts never apply an announcement twice nor skip one', () => {
  for (let seed = 1; seed <= 300; seed++) runScenario(seed);
});
