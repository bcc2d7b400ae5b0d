/**
 * The control topic's identity under the committer (review commit-protocol-2 N10, N10b, M1), on memory
 * fakes: the control topic deleted and recreated while tasks announce on it (a new topic id, a new log
 * from offset 0), and a failover to another cluster. Whatever committer sees it — live or restarted — the
 * tables whose positions refer to the old log stop with positions-identity-mismatch, nothing of the old
 * log is carried to the new one (C, the read cursor, a stopped table's needs), and the documented
 * recovery (`icefloe positions --adopt`) applies everything the tasks announced on the new topic: every
 * record once, by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { NO_CRASH_POINTS } from '../../../src/core/crash-points.ts';
import { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { runPositionsTool } from '../../../src/coordinate/positions-tool.ts';
import type { PositionsAction } from '../../../src/coordinate/positions-tool.ts';
import type { GroupAdmin, KafkaAdmin } from '../../../src/consume/port.ts';
import { announce, CONTROL, expected, recordingLogger, Rig, sortCoordinates, TABLE } from '../runtime/rig.ts';

function tool(rig: Rig, action: PositionsAction): ReturnType<typeof runPositionsTool> {
  return runPositionsTool({ connector: rig.connector, admin: rig.kafka.createAdmin(), catalog: rig.catalog, store: rig.store, log: recordingLogger(rig.log) }, TABLE, action);
}

function recreateControlTopic(rig: Rig): void {
  rig.kafka.deleteTopic(CONTROL);
  rig.kafka.createTopic(CONTROL, 1, { 'cleanup.policy': 'delete' });
}

/** `cycles` task cycles of 10 records each; the offsets produced on source partition 0. */
async function cycles(rig: Rig, count: number): Promise<bigint[]> {
  const out: bigint[] = [];
  for (let i = 0; i < count; i++) out.push(...((await announce(rig, [10]))[0] ?? []));
  return out;
}

async function connectorPosition(rig: Rig): Promise<{ offset: bigint; metadata: string | null }[]> {
  return (await rig.kafka.createAdmin().groupOffsets('cg-control-orders-sink', CONTROL)).map((o) => ({ offset: o.offset, metadata: o.metadata }));
}

async function summary(rig: Rig): Promise<Record<string, string>> {
  const md = (await rig.catalog.loadTable(parseIdentifier(TABLE))).metadata;
  return md.snapshots.find((s) => s.snapshotId === md.currentSnapshotId)?.summary ?? {};
}

test('N10b: the control topic recreated under a LIVE committer: the table stops, C and the cursor start over on the new log, and --adopt applies every record the tasks announced on it', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const before = await cycles(rig, 5);
  const committer = rig.committer();
  await committer.round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: before }));

  recreateControlTopic(rig);
  const newTopicId = await rig.kafka.createAdmin().topicId(CONTROL);
  // As many cycles as before: the new log ends where the old cursor is, so a cursor carried over reads nothing.
  const after = await cycles(rig, 5);
  await committer.round();
  const status = committer.tableStatus()[0];
  assert.equal(status?.state, 'STOPPED');
  assert.equal(status?.reason?.code, 'positions-identity-mismatch');
  const c = await connectorPosition(rig);
  assert.equal(c.length, 1);
  assert.ok(c[0]?.metadata?.includes(newTopicId), 'C is committed for the new topic');
  assert.equal(c[0]?.offset, 0n, 'C on the new topic stays at its start: the stopped table has applied nothing of it');

  const report = await tool(rig, 'adopt');
  assert.match(report.result, /^adopted/);
  await committer.round();
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING', committer.tableStatus()[0]?.reason?.message);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...before, ...after] }), 'every record once: the old log\'s and the new log\'s');
  assert.equal((await summary(rig))['icefloe.control-topic-id.orders-sink'], newTopicId);
});

test('N10: the control topic recreated, then a RESTARTED committer: the table stopped for identity-mismatch does not move C past the new announcements, and --adopt applies them', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const before = await cycles(rig, 1);
  await rig.committer().round();
  recreateControlTopic(rig);
  const after = await cycles(rig, 1);

  const restarted = rig.committer();
  await restarted.round();
  assert.equal(restarted.tableStatus()[0]?.reason?.code, 'positions-identity-mismatch');
  assert.equal((await connectorPosition(rig))[0]?.offset, 0n, 'the old log\'s positions are not the table\'s needs on the new one');
  await tool(rig, 'adopt');
  await restarted.round();
  assert.equal(restarted.tableStatus()[0]?.state, 'RUNNING', restarted.tableStatus()[0]?.reason?.message);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...before, ...after] }));
  // And a committer started after the recovery agrees.
  const third = await cycles(rig, 1);
  await rig.committer().round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...before, ...after, ...third] }));
});

test('N10b: the control topic recreated between a round\'s identity check and its read: nothing of the new log is applied under the old identity', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const before = await cycles(rig, 1);
  let recreateAt: (() => Promise<void>) | undefined;
  const admin = rig.kafka.createAdmin();
  // An admin whose watermarks call first lets the topic be recreated and the tasks announce more on it
  // (the round read the old id a moment before).
  const racing: KafkaAdmin & GroupAdmin = {
    ensureTopic: (spec) => admin.ensureTopic(spec),
    deleteTopic: (name) => admin.deleteTopic(name),
    clusterId: () => admin.clusterId(),
    topicId: (topic) => admin.topicId(topic),
    partitionCount: (topic) => admin.partitionCount(topic),
    watermarks: async (topic) => {
      const go = recreateAt;
      recreateAt = undefined;
      if (go !== undefined && topic === CONTROL) await go();
      return admin.watermarks(topic);
    },
    groupOffsets: (group, topic) => admin.groupOffsets(group, topic),
    commitGroupOffsets: (group, offsets) => admin.commitGroupOffsets(group, offsets),
    topicConfigs: (topic) => admin.topicConfigs(topic),
    listTopics: () => admin.listTopics(),
    deleteGroup: (group) => admin.deleteGroup(group),
    close: () => admin.close(),
  };
  const committer = new ConnectorCommitter({ connector: rig.connector, reader: rig.kafka.createControlReader(), admin: racing, catalog: rig.catalog, store: rig.store, crash: NO_CRASH_POINTS, log: recordingLogger(rig.log) });
  await committer.round();
  let after: bigint[] = [];
  recreateAt = async () => {
    recreateControlTopic(rig);
    after = await cycles(rig, 2); // the new log now reaches past the old cursor
  };
  await committer.round().catch(() => undefined);
  assert.equal(recreateAt, undefined, 'the race was staged');
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.reason?.code, 'positions-identity-mismatch');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: before }), 'nothing of the new log applied as if it were the old one');
  await tool(rig, 'adopt');
  await committer.round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...before, ...after] }), 'every record once');
});

test('M1: a failover to another cluster under a live committer (new cluster id, control topic recreated): the committer uses the new cluster id, so --adopt resumes the table', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const before = await cycles(rig, 1);
  const committer = rig.committer();
  await committer.round();
  rig.kafka.changeClusterId('cluster-B');
  recreateControlTopic(rig);
  const after = await cycles(rig, 1);
  await committer.round();
  const reason = committer.tableStatus()[0]?.reason;
  assert.equal(reason?.code, 'positions-identity-mismatch');
  assert.match(reason?.message ?? '', /cluster-B/, 'the live identity names the cluster the committer reads now');
  await tool(rig, 'adopt');
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.state, 'RUNNING', committer.tableStatus()[0]?.reason?.message);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...before, ...after] }));
  assert.equal((await summary(rig))['icefloe.kafka-cluster-id.orders-sink'], 'cluster-B');
});

test('M1: a cluster id that changes while the topic id stays is seen after a failed round (a reconnect), not cached forever', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  await cycles(rig, 1);
  const admin = rig.kafka.createAdmin();
  const committer = new ConnectorCommitter({ connector: rig.connector, reader: rig.kafka.createControlReader(), admin, catalog: rig.catalog, store: rig.store, crash: NO_CRASH_POINTS, log: recordingLogger(rig.log) });
  await committer.round();
  rig.kafka.changeClusterId('cluster-B');
  admin.failNext('watermarks', new Error('broker unreachable (injected)'));
  await assert.rejects(committer.round());
  await cycles(rig, 1);
  await committer.round();
  const reason = committer.tableStatus()[0]?.reason;
  assert.equal(reason?.code, 'positions-identity-mismatch', 'positions stored on another cluster are not applied to');
  assert.match(reason?.message ?? '', /cluster-B/);
});
