/**
 * N1 (commit-protocol-2.md): the source-applied guard judged a source span "covered" by offsets alone. A
 * source topic deleted and recreated (Kafka deletes the group's offsets with it, so the task starts the new
 * log at earliest) announced new records under old offsets, and the committer dropped them as "already
 * applied". Now a covered span is dropped only while the live log vouches for the applied offsets (same
 * topic id, the log still reaching them); otherwise the table stops with `source-log-changed`, and
 * `icefloe positions --adopt` forgets the offsets the live log no longer vouches for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runPositionsTool } from '../../../src/coordinate/positions-tool.ts';
import { planTableCommit } from '../../../src/coordinate/commit-state.ts';
import type { ControlRecordRead, TableCommitInput, TablePlan } from '../../../src/coordinate/commit-state.ts';
import { readControlPositions } from '../../../src/coordinate/control-positions.ts';
import { COMMIT_ID_KEY } from '../../../src/commit/commit-retry.ts';
import type { TableMetadata } from '../../../src/iceberg/metadata.ts';
import type { SourceLogs } from '../../../src/coordinate/source-applied.ts';
import { announce, recordingLogger, Rig, TABLE as RIG_TABLE, TOPIC } from '../runtime/rig.ts';
import { announcement, CONNECTOR, ControlLog, emptyTable, file, LIVE, span, TABLE, withSnapshot } from './fixtures.ts';

const NOW = 1_800_000_000_000;

function plan(md: TableMetadata, records: readonly ControlRecordRead[], over: Partial<TableCommitInput> = {}): TablePlan {
  return planTableCommit({ connector: CONNECTOR, table: TABLE, metadata: md, positions: readControlPositions(md, CONNECTOR, LIVE), live: LIVE, records, nowMs: NOW, ...over });
}

function apply(md: TableMetadata, p: TablePlan): TableMetadata {
  assert.ok(p.kind === 'commit', p.kind === 'stopped' ? p.reason.message : p.kind);
  return withSnapshot(md, { ...p.summary, [COMMIT_ID_KEY]: p.commitId });
}

const logs = (id: string, high: bigint): SourceLogs => ({ topicIds: new Map([['orders', id]]), ends: new Map([['orders/0', { low: 0n, high }]]) });
const code = (p: TablePlan): string => (p.kind === 'stopped' ? p.reason.code : p.kind);

test('N1: a recreated source topic\'s new records are never dropped as already applied: the table stops, --adopt lets them land once', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const committer = rig.committer();
  await announce(rig, [20]);
  await committer.round();
  assert.equal((await rig.tableCoordinates()).length, 20);

  // Deleted and recreated (e.g. to change its partitions): the group's offsets go with it, the task starts at earliest.
  rig.kafka.deleteTopic(TOPIC);
  rig.kafka.createTopic(TOPIC, 1);
  await announce(rig, [10]);
  await committer.round();
  assert.equal(committer.droppedAnnouncements, 0, 'the new topic\'s announcement is not dropped as covered');
  const status = committer.tableStatus().find((s) => s.table === RIG_TABLE);
  assert.equal(status?.state, 'STOPPED');
  assert.equal(status?.reason?.code, 'source-log-changed');
  assert.match(status?.reason?.message ?? '', /orders\[0\] offsets 0\.\.9.*topic id .* now .*--adopt/);
  assert.equal((await rig.tableCoordinates()).length, 20, 'nothing applied on a guess either');

  // The operator's recovery: --adopt forgets the old topic's applied offsets; the next round applies the announcement.
  await runPositionsTool({ connector: rig.connector, admin: rig.kafka.createAdmin(), catalog: rig.catalog, store: rig.store, log: recordingLogger([]) }, RIG_TABLE, 'adopt');
  await committer.round();
  assert.equal(committer.tableStatus().find((s) => s.table === RIG_TABLE)?.state, 'RUNNING');
  const rows = await rig.tableCoordinates();
  assert.equal(rows.length, 30, 'the old topic\'s 20 records and the new topic\'s 10, each once');
  assert.equal(rows.filter((r) => r === '0/9').length, 2);
  assert.equal(rows.filter((r) => r === '0/15').length, 1);
});

test('N1: a group reset backwards on the same topic is still passed (the live log vouches); a log that no longer reaches the applied offset stops', () => {
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 19n)])]);
  const md = apply(emptyTable(), plan(emptyTable(), log.read(new Map()), { sources: { logs: logs('id-1', 20n) } }));
  assert.equal(md.snapshots.at(-1)?.summary['icefloe.source-topic-ids.orders-sink'], '{"orders":"id-1"}', 'the topic id is stored with the applied offsets');
  log.transaction(0, [announcement(0, 'c2', [file('again')], [span('orders', 0, 0n, 9n)])]);
  const again = log.read(new Map([[0, 2n]]));
  // Same topic, its log still holds offset 19: the records are the ones the table holds.
  const same = plan(md, again, { sources: { logs: logs('id-1', 25n) } });
  assert.equal(same.kind === 'commit' ? same.dropped.length : -1, 1);
  // Same id, but the log ends at or below 19 (truncated: an unclean leader election, a failover to a mirror with lower offsets).
  const truncated = plan(md, again, { sources: { logs: logs('id-1', 10n) } });
  assert.equal(code(truncated), 'source-log-changed');
  assert.match(truncated.kind === 'stopped' ? truncated.reason.message : '', /ends at 10, below the offset the table applied \(19\)/);
  // Another topic id (recreated), even one whose log has grown past the applied offset again.
  assert.equal(code(plan(md, again, { sources: { logs: logs('id-2', 40n) } })), 'source-log-changed');
  // The topic is gone (deleted, not recreated yet): nothing vouches for the applied offsets; waiting would
  // hold the table forever while it shows RUNNING.
  const gone = plan(md, again, { sources: { logs: { topicIds: new Map(), ends: new Map(), gone: new Set(['orders']) } } });
  assert.equal(code(gone), 'source-log-changed');
  assert.match(gone.kind === 'stopped' ? gone.reason.message : '', /topic orders no longer exists/);
  // The committer could not look at the source this round: neither drop nor stop, decide next round.
  const unknown = plan(md, again, {});
  assert.equal(unknown.kind, 'nothing');
  assert.equal(unknown.kind === 'nothing' ? unknown.waiting : 0, 1);
});

test('N1: applied offsets stored without a topic id (an older Icefloe) are read, never trusted to drop, and stamped once the live log reaches them', () => {
  const legacy = withSnapshot(emptyTable(), {});
  const log = new ControlLog(1);
  log.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 19n)])]);
  const first = plan(emptyTable(), log.read(new Map()), { sources: { logs: logs('id-1', 20n) } });
  assert.ok(first.kind === 'commit');
  // What an older version wrote: the same summary without the ids key.
  const old = Object.fromEntries(Object.entries(first.summary).filter(([k]) => k !== 'icefloe.source-topic-ids.orders-sink'));
  const md = withSnapshot(legacy, { ...old, [COMMIT_ID_KEY]: first.commitId });
  log.transaction(0, [announcement(0, 'c2', [file('dup')], [span('orders', 0, 0n, 9n)])]);
  const covered = plan(md, log.read(new Map([[0, 2n]])), { sources: { logs: logs('id-1', 25n) } });
  assert.equal(code(covered), 'source-log-changed');
  assert.match(covered.kind === 'stopped' ? covered.reason.message : '', /without a topic id/);
  // A span above them is applied, and the commit stamps the live id (the live log reaches every applied offset).
  const next = new ControlLog(1);
  next.transaction(0, [announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 19n)])]);
  next.transaction(0, [announcement(0, 'c3', [file('b')], [span('orders', 0, 20n, 29n)])]);
  const p = plan(md, next.read(new Map([[0, 2n]])), { sources: { logs: logs('id-1', 30n) } });
  assert.ok(p.kind === 'commit', code(p));
  assert.equal(p.summary['icefloe.source-topic-ids.orders-sink'], '{"orders":"id-1"}');
  assert.equal(p.summary['icefloe.source-applied.orders-sink'], '{"orders":{"0":29}}');
});
