/**
 * The offsets API of a sink connector (runtime/connector-offsets.ts) on the real stack: Kafka (the
 * connector's consumer group `connect-<name>`, a live member, the control topic and the connector position
 * group) and the REST catalog on S3 (a table whose snapshot says which source records it holds).
 *
 * - GET lists the group's committed offsets for the connector's topics (a list, or a regex over the
 *   cluster's topics); PATCH commits offsets (numbers or text), `null` resets a partition to where a task
 *   without offsets starts; DELETE deletes the group, and again is still success (Connect's idempotent reset);
 * - a group with a live member: PATCH and DELETE are refused with Connect's 500 texts, nothing changes;
 * - a partition or topic that does not exist, an offset past the end: 400;
 * - a table that holds records: a move at or below what it holds is refused naming the table, one just past
 *   it (or further) is accepted; DELETE (everything from the log start again) is refused;
 * - announcements the committer has not applied yet: a move back is refused, a move forward accepted;
 *   once the connector position reached the control log's end, the move back is accepted;
 * - a table someone else wrote (positions-unseeded) holds nothing of the connector's: a move back is
 *   accepted; once seeded with `icefloe positions --adopt --holds-group-offsets` (positions-tool.ts), the
 *   table holds what lies below the group's offsets and the same move back is refused.
 */
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { RequestRefused } from '../../src/core/errors.ts';
import { SILENT_LOGGER } from '../../src/core/log.ts';
import { parseConnectorConfig } from '../../src/config/connector-config.ts';
import type { ConnectorConfig } from '../../src/config/connector-config.ts';
import { ConfluentKafkaAdmin, ConfluentKafkaSource } from '../../src/consume/confluent/index.ts';
import type { RebalanceListener } from '../../src/consume/port.ts';
import { appendFiles } from '../../src/commit/table-ops.ts';
import type { Catalog } from '../../src/commit/port.ts';
import { positionsSummary } from '../../src/coordinate/control-positions.ts';
import { controlGroupId } from '../../src/coordinate/connector-position.ts';
import { runPositionsTool } from '../../src/coordinate/positions-tool.ts';
import type { ObjectStore } from '../../src/upload/port.ts';
import { commitConnectorPositions } from '../../src/coordinate/position-store.ts';
import { encodeSourceApplied, sourceAppliedKey } from '../../src/coordinate/source-applied.ts';
import { sourceKey } from '../../src/coordinate/watermark.ts';
import { ALTERED_MESSAGE, alterConnectorOffsets, alterMembersMessage, connectorOffsets, RESET_MESSAGE, resetConnectorOffsets, resetMembersMessage } from '../../src/runtime/connector-offsets.ts';
import type { OffsetsDeps } from '../../src/runtime/connector-offsets.ts';
import { FAST_GROUP, kafkaSettings, pollUntil, produce, unique } from '../helpers/kafka.ts';
import { restCatalogKeys, uniqueIdent } from '../helpers/sink-e2e.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import { harness } from '../helpers/tables.ts';

const NO_LISTENER: RebalanceListener = { onAssigned: () => undefined, onRevoked: () => undefined };

interface Ctx {
  readonly admin: ConfluentKafkaAdmin;
  readonly catalog: Catalog;
  readonly store: ObjectStore;
  readonly deps: OffsetsDeps;
  readonly topic: string;
  readonly controlTopic: string;
  readonly table: string;
  connector(extra?: Record<string, string>): ConnectorConfig;
  commitTable(held: Record<number, bigint>): Promise<void>;
  /** A snapshot another writer commits (no summary key of the connector's). */
  foreignCommit(): Promise<void>;
}

/** A source topic with 2 partitions of 10 records each, a control topic, an empty table; all removed afterwards. */
async function setup(t: TestContext): Promise<Ctx> {
  await requireReachable('Kafka', stackEndpoints().kafkaBootstrap);
  const h = await harness(t);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  const topic = unique('offsets-src');
  const controlTopic = unique('offsets-control');
  await admin.ensureTopic({ name: topic, partitions: 2, replicationFactor: 1 });
  await admin.ensureTopic({ name: controlTopic, partitions: 1, replicationFactor: 1 });
  await produce(Array.from({ length: 20 }, (_, i) => ({ topic, partition: i % 2, value: `v${i}` })));
  const catalog = h.rest();
  const ns = uniqueIdent('it_offsets');
  await catalog.createNamespace([ns]);
  const schema = { schemaId: 0, fields: [{ id: 1, name: 'v', required: false, type: { kind: 'string' as const } }] };
  await catalog.createTable({ namespace: [ns], name: 't' }, { schema });
  const name = uniqueIdent('offsets');
  const base = {
    name,
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    topics: topic,
    'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'value.converter.schemas.enable': 'false',
    'iceberg.tables': `${ns}.t`,
    'iceberg.control.topic': controlTopic,
    ...restCatalogKeys(),
  };
  const connector = (extra: Record<string, string> = {}): ConnectorConfig => parseConnectorConfig({ ...base, ...extra });
  t.after(async () => {
    await catalog.dropTable({ namespace: [ns], name: 't' }).catch(() => undefined);
    for (const x of [topic, controlTopic]) await admin.deleteTopic(x).catch(() => undefined);
    await admin.deleteGroup(`connect-${name}`).catch(() => undefined);
    await admin.close();
  });
  return {
    admin,
    catalog,
    store: h.store,
    deps: { admin, catalog, log: SILENT_LOGGER },
    topic,
    controlTopic,
    table: `${ns}.t`,
    connector,
    // A snapshot of the connector's, as its committer writes one: positions on the live control topic and
    // the highest source offset applied per partition of `topic`.
    async commitTable(held) {
      const live = { clusterId: await admin.clusterId(), controlTopicId: await admin.topicId(controlTopic) };
      const applied = new Map(Object.entries(held).map(([p, last]) => [sourceKey(topic, Number(p)), { topic, partition: Number(p), last }]));
      await appendFiles(h.deps(catalog), { namespace: [ns], name: 't' }, {
        commitId: `icefloe:${name}:test-${Object.values(held).join('-')}`,
        files: [],
        summary: { ...positionsSummary(name, new Map([[0, 0n]]), live), [sourceAppliedKey(name)]: encodeSourceApplied(applied) },
      });
    },
    async foreignCommit() {
      await appendFiles(h.deps(catalog), { namespace: [ns], name: 't' }, { commitId: `spark-${name}`, files: [] });
    },
  };
}

const at = (topic: string, partition: number, offset: number | string | null): Record<string, unknown> => ({
  partition: { kafka_topic: topic, kafka_partition: partition },
  offset: offset === null ? null : { kafka_offset: offset },
});

function refused(reason: string, message: RegExp | string): (e: unknown) => boolean {
  return (e: unknown) => e instanceof RequestRefused && e.refusal === reason && (typeof message === 'string' ? e.message === message : message.test(e.message));
}

test('GET lists the group\'s offsets for the connector\'s topics (list or regex); PATCH commits them, null resets to the log start; DELETE deletes the group, twice', async (t) => {
  const c = await setup(t);
  const connector = c.connector();
  assert.deepEqual(await connectorOffsets(c.admin, connector), { offsets: [] }, 'a group without offsets');

  assert.equal(await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 4), at(c.topic, 1, '7')] }), ALTERED_MESSAGE);
  const expected = { offsets: [{ partition: { kafka_topic: c.topic, kafka_partition: 0 }, offset: { kafka_offset: 4 } }, { partition: { kafka_topic: c.topic, kafka_partition: 1 }, offset: { kafka_offset: 7 } }] };
  assert.deepEqual(await connectorOffsets(c.admin, connector), expected);
  // The same group seen through a topics.regex connector.
  const regex = c.connector({ topics: '', 'topics.regex': `${c.topic.replace(/[.-]/g, '\\$&')}|no-such-topic-\\d+` });
  assert.deepEqual(await connectorOffsets(c.admin, regex), expected);

  assert.equal(await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 1, null)] }), ALTERED_MESSAGE);
  assert.deepEqual((await connectorOffsets(c.admin, connector)).offsets.map((o) => o.offset), [{ kafka_offset: 4 }, { kafka_offset: 0 }], 'null: where a task without offsets starts (the log start)');

  // With auto.offset.reset=latest (app.ts resolves it as the task's consumer does), a task starts at the end.
  assert.equal(await alterConnectorOffsets({ ...c.deps, offsetReset: 'latest' }, connector, { offsets: [at(c.topic, 0, null)] }), ALTERED_MESSAGE);
  assert.deepEqual((await connectorOffsets(c.admin, connector)).offsets.map((o) => o.offset), [{ kafka_offset: 10 }, { kafka_offset: 0 }], 'null under latest: the end');

  assert.equal(await resetConnectorOffsets(c.deps, connector), RESET_MESSAGE);
  assert.deepEqual(await connectorOffsets(c.admin, connector), { offsets: [] }, 'the group is gone');
  assert.equal(await resetConnectorOffsets(c.deps, connector), RESET_MESSAGE, 'a reset of a group that does not exist is success');
});

test('a live member in the group: PATCH and DELETE are refused with Connect\'s texts and change nothing; bad partitions and offsets are 400', async (t) => {
  const c = await setup(t);
  const connector = c.connector();
  await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 2), at(c.topic, 1, 2)] });
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), overrides: FAST_GROUP, groupId: connector.groupId });
  t.after(() => source.close());
  await source.subscribe({ kind: 'list', topics: [c.topic] }, NO_LISTENER);
  await pollUntil(source, (got) => got.length >= 16);

  await assert.rejects(alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 5)] }), refused('failed', alterMembersMessage(connector.name)));
  await assert.rejects(resetConnectorOffsets(c.deps, connector), refused('failed', resetMembersMessage(connector.name)));
  assert.deepEqual((await connectorOffsets(c.admin, connector)).offsets.map((o) => o.offset?.kafka_offset), [2, 2], 'nothing changed');
  await source.close();

  await assert.rejects(alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 2, 0)] }), refused('bad-request', /^Partition 2 of topic .* does not exist/));
  await assert.rejects(alterConnectorOffsets(c.deps, connector, { offsets: [at('no-such-topic-x', 0, 0)] }), refused('bad-request', /^Topic no-such-topic-x does not exist/));
  await assert.rejects(alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 11)] }), refused('bad-request', /is past the partition's end \(10\)/));
  await assert.rejects(alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, -1)] }), refused('bad-request', /is negative/));
  await assert.rejects(alterConnectorOffsets(c.deps, connector, { offsets: [] }), refused('bad-request', 'Partitions / offsets need to be provided for an alter offsets request'));
  assert.equal(await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 10)] }), ALTERED_MESSAGE, 'the end itself is fine');
});

test('offsets never move behind what a table holds: refused naming the table; just past it accepted; DELETE refused', async (t) => {
  const c = await setup(t);
  const connector = c.connector();
  await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 10), at(c.topic, 1, 10)] });
  // The committer applied offsets 0..6 of partition 0 and 0..9 of partition 1, and C covers the control log.
  await c.commitTable({ 0: 6n, 1: 9n });
  const live = { controlTopicId: await c.admin.topicId(c.controlTopic) };
  await commitConnectorPositions({ admin: c.admin, groupId: controlGroupId(connector.control.groupIdPrefix, connector.name), topic: c.controlTopic, controlTopicId: live.controlTopicId, log: SILENT_LOGGER }, new Map([[0, { offset: 0n, kind: 'applied' }]]));

  await assert.rejects(
    alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 3)] }),
    refused('bad-request', new RegExp(`^Moving ${c.topic}\\[0\\] to offset 3 would deliver records 3\\.\\.6 again, and table ${c.table.replace('.', '\\.')} already holds them .*Use offset 7 or later`)),
  );
  await assert.rejects(alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 6)] }), refused('bad-request', /to offset 6 would deliver records 6\.\.6 again/), 'the last record it holds');
  await assert.rejects(alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 1, null)] }), refused('bad-request', /to offset 0 would deliver records 0\.\.9 again/), 'null = the log start, which the table holds');
  await assert.rejects(resetConnectorOffsets(c.deps, connector), refused('bad-request', /would deliver records 0\.\.\d again/));
  assert.deepEqual((await connectorOffsets(c.admin, connector)).offsets.map((o) => o.offset?.kafka_offset), [10, 10], 'nothing changed');

  assert.equal(await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 7)] }), ALTERED_MESSAGE, 'just past what the table holds: records 7..9 come again, the table has none of them');
  assert.deepEqual((await connectorOffsets(c.admin, connector)).offsets.map((o) => o.offset?.kafka_offset), [7, 10]);
});

test('while announcements wait for the committer a move back is refused and a move forward accepted; once applied, the move back is accepted', async (t) => {
  const c = await setup(t);
  const connector = c.connector();
  await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 8)] });
  // A task's announcement on the control topic that no committer has applied (C: none).
  await produce([{ topic: c.controlTopic, partition: 0, value: '{}' }]);

  await assert.rejects(
    alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 5)] }),
    refused('bad-request', new RegExp(`^the committer of connector ${connector.name} has not applied every announcement .*control partition 0: applied through nothing, log end 1`)),
  );
  assert.equal(await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 9)] }), ALTERED_MESSAGE, 'forward: nothing is delivered again');

  const controlTopicId = await c.admin.topicId(c.controlTopic);
  await commitConnectorPositions({ admin: c.admin, groupId: controlGroupId(connector.control.groupIdPrefix, connector.name), topic: c.controlTopic, controlTopicId, log: SILENT_LOGGER }, new Map([[0, { offset: 1n, kind: 'applied' }]]));
  assert.equal(await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 5)] }), ALTERED_MESSAGE, 'applied, and the table holds nothing of partition 0');
  assert.deepEqual((await connectorOffsets(c.admin, connector)).offsets.map((o) => o.offset?.kafka_offset), [5]);
});

test('a table written by someone else holds nothing of the connector\'s until seeded with --adopt --holds-group-offsets; then a move back into it is refused', async (t) => {
  const c = await setup(t);
  const connector = c.connector();
  await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 10), at(c.topic, 1, 10)] });
  await c.foreignCommit();
  assert.equal(await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 3)] }), ALTERED_MESSAGE, 'unseeded: nothing of the connector\'s in it');
  await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 10)] });

  const report = await runPositionsTool({ connector, admin: c.admin, catalog: c.catalog, store: c.store, log: SILENT_LOGGER }, c.table, 'adopt', { holdsGroupOffsets: true });
  assert.match(report.result, /^adopted/);
  await assert.rejects(
    alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 0, 3)] }),
    refused('bad-request', new RegExp(`to offset 3 would deliver records 3\\.\\.9 again, and table ${c.table.replace('.', '\\.')} already holds them`)),
  );
  await assert.rejects(resetConnectorOffsets(c.deps, connector), refused('bad-request', /would deliver records 0\.\.9 again/));
  assert.equal(await alterConnectorOffsets(c.deps, connector, { offsets: [at(c.topic, 1, 10)] }), ALTERED_MESSAGE);
});
