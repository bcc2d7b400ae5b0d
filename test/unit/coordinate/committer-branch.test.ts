/**
 * Commit branches on memory fakes (iceberg.tables.default-commit-branch, iceberg.table.<t>.commit-branch):
 * the committer appends to the branch and never to main, reads the table's control positions from the
 * branch's ancestry (a restarted committer goes on from there, each record once), creates a branch that
 * does not exist yet as a fork of main's head (as Java's SnapshotProducer.toBranch does) and goes on from
 * main's positions; a table's own key beats the default; `icefloe positions` shows and adopts on the branch.
 * Rows are counted by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { NO_CRASH_POINTS } from '../../../src/core/crash-points.ts';
import { parseConnectorConfig } from '../../../src/config/connector-config.ts';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { controlOffsetsKey } from '../../../src/coordinate/control-positions.ts';
import { runPositionsTool } from '../../../src/coordinate/positions-tool.ts';
import type { TableMetadata } from '../../../src/iceberg/metadata.ts';
import { announce, expected, recordingLogger, Rig, sortCoordinates, TABLE } from '../runtime/rig.ts';

/** A committer of the rig's connector with `keys` on top (another configuration of the same connector). */
function committerWith(rig: Rig, keys: Readonly<Record<string, string>>): ConnectorCommitter {
  return new ConnectorCommitter({
    connector: parseConnectorConfig({ ...rig.connector.stored(), ...keys }),
    reader: rig.kafka.createControlReader({ name: `committer-${randomUUID().slice(0, 4)}` }),
    admin: rig.kafka.createAdmin(),
    catalog: rig.catalog,
    store: rig.store,
    crash: NO_CRASH_POINTS,
    log: recordingLogger(rig.log),
  });
}

async function metadata(rig: Rig): Promise<TableMetadata> {
  return (await rig.catalog.loadTable(parseIdentifier(TABLE))).metadata;
}

const STAGE = { 'iceberg.tables.default-commit-branch': 'stage' };

test('with a default commit branch every commit goes to the branch, main gets none, and a restarted committer reads its positions from the branch', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const first = await announce(rig, [10]);
  await committerWith(rig, STAGE).round();
  let md = await metadata(rig);
  assert.equal(md.refs['main'], undefined, 'main is never created');
  assert.equal(md.currentSnapshotId, null);
  assert.ok(md.refs['stage'] !== undefined, 'the first commit created the branch');
  const second = await announce(rig, [10]);
  const restarted = committerWith(rig, STAGE);
  await restarted.round();
  assert.equal(restarted.commits.length, 1, 'the restarted committer committed only the second announcement');
  assert.equal(restarted.tableStatus()[0]?.branch, 'stage');
  md = await metadata(rig);
  assert.equal(md.refs['main'], undefined);
  assert.equal(md.snapshots.length, 2);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(TABLE, 'stage')), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? [])] }));
  assert.ok(rig.log.some((l) => l.msg === 'table committed' && l.fields['branch'] === 'stage'));
});

test('a branch that does not exist yet forks from main: it keeps main\'s rows, goes on from main\'s positions, and main stays where it was', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const onMain = await announce(rig, [10]);
  await rig.committer().round();
  const mainHead = (await metadata(rig)).currentSnapshotId;
  assert.ok(mainHead !== null);
  const second = await announce(rig, [10]);
  await committerWith(rig, STAGE).round();
  let md = await metadata(rig);
  const stageHead = md.snapshots.find((s) => s.snapshotId === md.refs['stage']?.snapshotId);
  assert.equal(stageHead?.parentSnapshotId, mainHead, 'forked from main\'s head');
  // Positions on the branch from here: a third batch, committed by another (restarted) committer, lands once.
  const third = await announce(rig, [10]);
  await committerWith(rig, STAGE).round();
  md = await metadata(rig);
  assert.equal(md.currentSnapshotId, mainHead, 'main did not move');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(TABLE, 'stage')), expected({ 0: [...(onMain[0] ?? []), ...(second[0] ?? []), ...(third[0] ?? [])] }));
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(TABLE)), expected(onMain));
});

test('a table\'s own commit-branch beats the default', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const produced = await announce(rig, [10]);
  const committer = committerWith(rig, { ...STAGE, [`iceberg.table.${TABLE}.commit-branch`]: 'audit' });
  await committer.round();
  const md = await metadata(rig);
  assert.deepEqual(Object.keys(md.refs), ['audit']);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(TABLE, 'audit')), expected(produced));
});

test('a commit branch that names a tag stops the table with the reason; nothing is committed', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  await announce(rig, [10]);
  await rig.committer().round();
  const head = (await metadata(rig)).currentSnapshotId as bigint;
  await rig.catalog.commitTable(parseIdentifier(TABLE), [], [{ action: 'set-snapshot-ref', refName: 'v1', ref: { snapshotId: head, type: 'tag' } }]);
  await announce(rig, [10]);
  const committer = committerWith(rig, { 'iceberg.tables.default-commit-branch': 'v1' });
  await committer.round();
  const status = committer.tableStatus()[0];
  assert.equal(status?.state, 'STOPPED');
  assert.equal(status?.reason?.code, 'commit-failed');
  assert.match(status?.reason?.message ?? '', /v1 is a tag, not a branch/);
  assert.equal((await metadata(rig)).snapshots.length, 1);
});

test('icefloe positions shows and adopts on the commit branch, never on main', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  await announce(rig, [10]);
  await rig.committer().round(); // main holds positions of an earlier configuration
  await announce(rig, [10]);
  await committerWith(rig, STAGE).round();
  const connector = parseConnectorConfig({ ...rig.connector.stored(), ...STAGE });
  const deps = { connector, admin: rig.kafka.createAdmin(), catalog: rig.catalog, store: rig.store, log: recordingLogger(rig.log) };
  const md = await metadata(rig);
  const stageHead = md.snapshots.find((s) => s.snapshotId === md.refs['stage']?.snapshotId);
  const shown = await runPositionsTool(deps, TABLE, 'show');
  assert.equal(shown.branch, 'stage');
  const onStage = JSON.parse(stageHead?.summary[controlOffsetsKey(connector.name)] ?? '{}') as Record<string, number>;
  const onMain = JSON.parse(md.snapshots.find((s) => s.snapshotId === md.currentSnapshotId)?.summary[controlOffsetsKey(connector.name)] ?? '{}') as Record<string, number>;
  assert.notDeepEqual(onStage, onMain);
  assert.deepEqual(shown.stored, Object.fromEntries(Object.entries(onStage).map(([p, o]) => [p, String(o)])), 'the branch\'s positions, not main\'s');
  const mainHead = md.currentSnapshotId;
  const adopted = await runPositionsTool(deps, TABLE, 'adopt');
  assert.match(adopted.result, /^adopted/);
  const after = await metadata(rig);
  assert.equal(after.currentSnapshotId, mainHead, 'main did not move');
  assert.equal(after.snapshots.find((s) => s.snapshotId === after.refs['stage']?.snapshotId)?.parentSnapshotId, stageHead?.snapshotId, 'the adopt snapshot is on the branch');
});

test('a table moved to another commit branch stops instead of guessing: the new branch forks from main, which lacks the connector\'s positions', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const produced = await announce(rig, [10]);
  await committerWith(rig, STAGE).round();
  await announce(rig, [10]);
  const moved = committerWith(rig, { 'iceberg.tables.default-commit-branch': 'audit' });
  await moved.round();
  const status = moved.tableStatus()[0];
  assert.equal(status?.state, 'STOPPED');
  assert.equal(status?.reason?.code, 'positions-expired');
  const md = await metadata(rig);
  assert.equal(md.refs['audit'], undefined, 'nothing committed to the new branch');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(TABLE, 'stage')), expected(produced));
});
