/**
 * `replayTable` (coordinate/replay.ts) on the real stack — Kafka (source topic, control topic, the
 * connector's groups) and the REST catalog on S3 — for what the e2e runbook test does not reach: each
 * refusal changes neither the table nor the offsets, and a replay over two snapshots picks, per partition,
 * the offset after what the snapshot holds, or the first offset the removed snapshots cover for a partition
 * the snapshot holds nothing of.
 */
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { RequestRefused } from '../../src/core/errors.ts';
import { SILENT_LOGGER } from '../../src/core/log.ts';
import { stringifyJson } from '../../src/core/json.ts';
import { parseConnectorConfig } from '../../src/config/connector-config.ts';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import { refSnapshotId } from '../../src/commit/model.ts';
import { appendFiles } from '../../src/commit/table-ops.ts';
import { positionsSummary, sourceOffsetsKey } from '../../src/coordinate/control-positions.ts';
import { controlGroupId } from '../../src/coordinate/connector-position.ts';
import { commitConnectorPositions } from '../../src/coordinate/position-store.ts';
import { replayTable } from '../../src/coordinate/replay.ts';
import { encodeSourceApplied, sourceAppliedKey } from '../../src/coordinate/source-applied.ts';
import { replayedKey } from '../../src/coordinate/source-holdings.ts';
import { sourceKey } from '../../src/coordinate/watermark.ts';
import { kafkaSettings, produce, unique } from '../helpers/kafka.ts';
import { restCatalogKeys, uniqueIdent } from '../helpers/sink-e2e.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import { harness } from '../helpers/tables.ts';

async function setup(t: TestContext) {
  await requireReachable('Kafka', stackEndpoints().kafkaBootstrap);
  const h = await harness(t);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  const topic = unique('replay-it-src');
  const controlTopic = unique('replay-it-control');
  await admin.ensureTopic({ name: topic, partitions: 2, replicationFactor: 1 });
  await admin.ensureTopic({ name: controlTopic, partitions: 1, replicationFactor: 1 });
  await produce(Array.from({ length: 20 }, (_, i) => ({ topic, partition: i % 2, value: `v${i}` })));
  const catalog = h.rest();
  const ns = uniqueIdent('it_replay');
  await catalog.createNamespace([ns]);
  const schema = { schemaId: 0, fields: [{ id: 1, name: 'v', required: false, type: { kind: 'string' as const } }] };
  for (const x of ['a', 'b']) await catalog.createTable({ namespace: [ns], name: x }, { schema });
  const name = uniqueIdent('replay_it');
  const config = {
    name,
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    topics: topic,
    'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'value.converter.schemas.enable': 'false',
    'iceberg.tables': `${ns}.a,${ns}.b`,
    'iceberg.control.topic': controlTopic,
    ...restCatalogKeys(),
  };
  const connector = parseConnectorConfig(config);
  t.after(async () => {
    for (const x of ['a', 'b']) await catalog.dropTable({ namespace: [ns], name: x }).catch(() => undefined);
    for (const x of [topic, controlTopic]) await admin.deleteTopic(x).catch(() => undefined);
    await admin.deleteGroup(connector.groupId).catch(() => undefined);
    await admin.close();
  });
  const live = { clusterId: await admin.clusterId(), controlTopicId: await admin.topicId(controlTopic) };
  // Everything announced is applied: C at the control log's end (empty here).
  await commitConnectorPositions({ admin, groupId: controlGroupId(connector.control.groupIdPrefix, name), topic: controlTopic, controlTopicId: live.controlTopicId, log: SILENT_LOGGER }, new Map([[0, { offset: 0n, kind: 'applied' }]]));
  /** A snapshot of the connector's: it covers `covers` ({partition: [first, last]}) and holds `held`. */
  const commit = async (table: string, n: number, covers: Record<number, [bigint, bigint]>, held: Record<number, bigint>): Promise<bigint> => {
    const applied = new Map(Object.entries(held).map(([p, last]) => [sourceKey(topic, Number(p)), { topic, partition: Number(p), last }]));
    const outcome = await appendFiles(h.deps(catalog), { namespace: [ns], name: table }, {
      commitId: `icefloe:${name}:it-${table}-${n}`,
      files: [],
      summary: {
        ...positionsSummary(name, new Map([[0, 0n]]), live),
        [sourceAppliedKey(name)]: encodeSourceApplied(applied),
        [sourceOffsetsKey(name)]: stringifyJson({ [topic]: Object.fromEntries(Object.entries(covers).map(([p, r]) => [p, r])) }),
      },
    });
    return refSnapshotId(outcome.table.metadata, 'main') as bigint;
  };
  const head = async (table: string): Promise<bigint | undefined> => refSnapshotId((await catalog.loadTable({ namespace: [ns], name: table })).metadata, 'main');
  const offsets = async (): Promise<string[]> => (await admin.groupOffsets(connector.groupId, topic)).map((o) => `${o.partition}=${o.offset}`);
  return {
    admin,
    catalog,
    connector,
    topic,
    ns,
    commit,
    head,
    offsets,
    deps: { connector, admin, catalog, store: h.store, log: SILENT_LOGGER },
    /** The same connector routing to table a only. */
    onlyA: { connector: parseConnectorConfig({ ...config, 'iceberg.tables': `${ns}.a` }), admin, catalog, store: h.store, log: SILENT_LOGGER },
  };
}

const refused = (pattern: RegExp) => (e: unknown): boolean => e instanceof RequestRefused && pattern.test(e.message);

test('replayTable: refusals change nothing; a replay restarts each removed partition after what the snapshot holds, or where the removed snapshots begin', async (t) => {
  const c = await setup(t);
  await c.admin.commitGroupOffsets(c.connector.groupId, [{ topic: c.topic, partition: 0, offset: 10n, metadata: null }, { topic: c.topic, partition: 1, offset: 10n, metadata: null }]);
  // Table a: S1 holds partition 0 through 3; S2 adds 0:4..9 and 1:0..9. Table b holds partition 1 through 9.
  const s1 = await c.commit('a', 1, { 0: [0n, 3n] }, { 0: 3n });
  const s2 = await c.commit('a', 2, { 0: [4n, 9n], 1: [0n, 9n] }, { 0: 9n, 1: 9n });
  await c.commit('b', 1, { 1: [0n, 9n] }, { 1: 9n });
  const table = `${c.ns}.a`;

  await assert.rejects(replayTable(c.deps, table, 12345n), refused(/^snapshot 12345 is not in the history of .*'s branch main/));
  await assert.rejects(replayTable(c.deps, table, s1), refused(new RegExp(`^table ${c.ns}\\.b holds the records of ${c.topic}\\[1\\] through offset 9: replaying ${c.ns}\\.a from offset 0`)));
  assert.equal(await c.head('a'), s2, 'table unchanged');
  assert.deepEqual(await c.offsets(), ['0=10', '1=10'], 'offsets unchanged');

  // The connector routes to table a only: nothing else holds the records.
  const report = await replayTable(c.onlyA, table, s1);
  assert.equal(report.snapshotId, String(s1));
  assert.equal(report.replaced, String(s2));
  assert.deepEqual(report.offsets.map((o) => `${o.partition}=${o.offset}`).sort(), ['0=4', '1=0'], 'after what S1 holds (0..3); where the removed snapshots begin for partition 1');
  assert.deepEqual(await c.offsets(), ['0=4', '1=0']);
  const after = await c.catalog.loadTable({ namespace: [c.ns], name: 'a' });
  const newHead = after.metadata.snapshots.find((x) => x.snapshotId === refSnapshotId(after.metadata, 'main'));
  assert.equal(newHead?.parentSnapshotId, s1, 'one new snapshot on top of S1');
  assert.equal(String(newHead?.snapshotId), report.replaySnapshotId);
  assert.match(newHead?.summary[replayedKey(c.connector.name)] ?? '', new RegExp(`"snapshot-id":${s1},"replaced":${s2}`));
  assert.equal(newHead?.summary[sourceAppliedKey(c.connector.name)], encodeSourceApplied(new Map([[sourceKey(c.topic, 0), { topic: c.topic, partition: 0, last: 3n }]])), 'holds what S1 holds');
});
