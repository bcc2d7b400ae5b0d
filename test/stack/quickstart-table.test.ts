/**
 * The quickstart's table check (scripts/lib/quickstart-table.sh, step 4 of scripts/quickstart), run as the
 * quickstart runs it, on a table and connector of this test's own:
 *
 * - a whole table is left alone and reported with its snapshots and files;
 * - a table the catalog keeps while its files are gone from S3 (deleted here, as an S3 store emptied under
 *   the catalog would be) is started afresh: the connector's consumer group is deleted (so the worker
 *   re-reads the topic) and the catalog entry dropped (so the worker auto-creates it), each step printed;
 * - the same with a worker of the connector running (a member in its group) changes nothing and says to
 *   stop the worker first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { RdKafka } from '@confluentinc/kafka-javascript';
import type { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { kafkaSettings, produce, unique, withTopics } from '../helpers/kafka.ts';
import { s3Settings, stackEndpoints } from '../helpers/stack.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SCHEMA: Schema = { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'long' } }] };
/** The catalog's entry, loadable or not (a table whose metadata is gone does not "exist" to a load). */
const listed = async (catalog: RestCatalog, ns: string): Promise<string[]> => (await catalog.listTables([ns])).map((i) => i.name);

/** Runs quickstart_table_check TABLE CONNECTOR TOPIC as scripts/quickstart does (common.sh, endpoints.env). */
function check(table: string, connector: string, topic: string): { status: number; output: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, ICEFLOE_RUN: stackEndpoints().run };
  const script = 'source scripts/lib/common.sh && set -a && source "$ICEFLOE_RUN/endpoints.env" && set +a && source scripts/lib/quickstart-table.sh && quickstart_table_check "$0" "$1" "$2"';
  const r = spawnSync('bash', ['-c', script, table, connector, topic], { cwd: root, env, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status ?? 1, output: `${r.stdout}\n${r.stderr}` };
}

async function deletePrefix(s3: S3Client, bucket: string, prefix: string): Promise<number> {
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  const keys = (listed.Contents ?? []).map((o) => ({ Key: o.Key as string }));
  if (keys.length > 0) await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys } }));
  return keys.length;
}

test('the quickstart starts afresh a table whose files are gone, and leaves a whole one alone', { timeout: 240_000 }, async (t) => {
  const h = await harness(t);
  const e = stackEndpoints();
  const catalog = h.rest();
  const ns = h.namespace();
  const id = ident(ns, 'orders');
  const table = `${ns}.orders`;
  const connector = unique('qs-check');
  const group = `connect-${connector}`;
  const topic = unique('qs-check');

  const created = await createTable(h.deps(catalog), id, { schema: SCHEMA });
  const files = await writeRows(h.store, created, Array.from({ length: 10 }, (_, i) => ({ id: BigInt(i) })));
  assert.equal((await appendFiles(h.deps(catalog), id, { commitId: 'qs-check', files })).status, 'committed');
  const admin = await withTopics(t, [{ name: topic, partitions: 1 }]);
  await produce(Array.from({ length: 10 }, (_, i) => ({ topic, partition: 0, value: `v${i}` })));
  await admin.commitGroupOffsets(group, [{ topic, partition: 0, offset: 10n, metadata: null }]);

  // Whole: reported, nothing changed.
  const whole = check(table, connector, topic);
  assert.equal(whole.status, 0, whole.output);
  assert.match(whole.output, new RegExp(`${table}: 1 snapshots, 1 data files, all in S3`));
  assert.equal(await catalog.tableExists(id), true);
  assert.deepEqual((await admin.groupOffsets(group, topic)).map((o) => o.offset), [10n]);

  // The table's files go, as with an S3 store emptied under the catalog.
  const s3 = new S3Client(s3Settings());
  t.after(() => s3.destroy());
  const location = created.metadata.location.replace(`s3://${e.s3Bucket}/`, '');
  assert.ok((await deletePrefix(s3, e.s3Bucket, `${location}/`)) >= 4, 'metadata, manifest list, manifest and data file deleted');

  // A worker of the connector runs (a member of its group): nothing is changed, the output says why.
  const settings = await kafkaSettings();
  const member = new RdKafka.KafkaConsumer({ ...settings, 'group.id': group, 'enable.auto.commit': false }, { 'auto.offset.reset': 'earliest' });
  await new Promise<void>((resolve, reject) => member.connect({}, (err) => (err ? reject(err) : resolve())));
  try {
    member.subscribe([topic]);
    for (let i = 0; i < 60 && (await admin.groupMembers(group).catch(() => [])).length === 0; i++) {
      await new Promise<void>((resolve) => member.consume(1, () => resolve()));
    }
    assert.ok((await admin.groupMembers(group)).length > 0, 'the stand-in worker joined the group');
    const busy = check(table, connector, topic);
    assert.equal(busy.status, 1, busy.output);
    assert.match(busy.output, new RegExp(`${table} is in the catalog but its files are gone from S3`));
    assert.match(busy.output, new RegExp(`the consumer group ${group} has members: a worker of this connector is running .*stop it .* Nothing was changed`));
    assert.deepEqual(await listed(catalog, ns), ['orders'], 'the catalog entry is kept while a worker runs');
  } finally {
    await new Promise<void>((resolve) => member.disconnect(() => resolve()));
  }

  // No worker: started afresh, each step printed.
  const broken = check(table, connector, topic);
  assert.equal(broken.status, 0, broken.output);
  assert.match(broken.output, new RegExp(`${table} is in the catalog but its files are gone from S3 \\(.*${location}.*\\)`));
  assert.match(broken.output, new RegExp(`deleted the consumer group ${group} .*the worker reads the 10 records of topic ${topic} again, from its earliest offsets`));
  assert.match(broken.output, new RegExp(`dropped the catalog entry of ${table}`));
  assert.deepEqual(await listed(catalog, ns), [], 'the broken catalog entry is gone: the worker auto-creates the table');
  const fresh = await ConfluentKafkaAdmin.connect({ settings });
  t.after(() => fresh.close());
  assert.deepEqual(await fresh.groupOffsets(group, topic), [], 'the group has no offsets: the worker starts at the earliest');

  // And a table that does not exist is left to the worker.
  const absent = check(table, connector, topic);
  assert.equal(absent.status, 0, absent.output);
  assert.match(absent.output, new RegExp(`${table} does not exist yet: the worker creates it`));
});
