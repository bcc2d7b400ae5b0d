/**
 * The REST catalog client against the real Apache Iceberg REST catalog fixture (JdbcCatalog on
 * PostgreSQL, S3FileIO on moto):
 * - /v1/config is honoured (the fixture overrides the namespace separator), namespaces (one and two
 *   levels), create answers the ids the server assigned, load, list, HEAD-based exists, drop;
 * - a snapshot-less property commit, then append commits whose snapshots carry icefloe.commit-id;
 * - a stale assert-ref-snapshot-id and a wrong assert-table-uuid answer 409 → CommitConflictError and
 *   change nothing;
 * - PyIceberg and DuckDB read the table and agree on its snapshots and commit ids (63-bit ids intact).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { CommitConflictError } from '../../src/core/errors.ts';
import { COMMIT_ID_KEY } from '../../src/commit/commit-retry.ts';
import type { Schema } from '../../src/commit/model.ts';
import { NoSuchTableError, TableAlreadyExistsError } from '../../src/commit/port.ts';
import type { TableIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { S3ObjectStore } from '../../src/upload/s3/store.ts';
import { commitIds, emptyAppend } from '../helpers/commits.ts';
import { readTable } from '../helpers/readers.ts';
import { requireReachable, stackEndpoints, s3Settings } from '../helpers/stack.ts';

const schema: Schema = {
  schemaId: 3,
  fields: [
    { id: 100, name: 'id', required: true, type: { kind: 'long' } },
    { id: 200, name: 'customer', required: false, type: { kind: 'string' } },
    { id: 300, name: 'amount', required: false, type: { kind: 'decimal', precision: 10, scale: 2 } },
  ],
};

let ctx: Promise<{ catalog: RestCatalog; store: S3ObjectStore }> | undefined;
function env(): Promise<{ catalog: RestCatalog; store: S3ObjectStore }> {
  ctx ??= (async () => {
    const e = stackEndpoints();
    await requireReachable('Iceberg REST catalog', e.catalogUri);
    await requireReachable('S3 (moto)', e.s3Endpoint);
    const store = new S3ObjectStore(s3Settings());
    return { catalog: new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse, requestTimeoutMs: 20_000 }), store };
  })();
  return ctx;
}

const created: TableIdentifier[] = [];
after(async () => {
  if (ctx === undefined) return;
  const { catalog, store } = await ctx;
  for (const id of created) await catalog.dropTable(id).catch(() => undefined);
  await store.close();
});

const ns = (): string => `it_rest_${randomUUID().replaceAll('-', '').slice(0, 12)}`;

test('REST fixture: config, namespaces, create with server-assigned ids, load, list, exists, drop', async () => {
  const { catalog } = await env();
  const props = await catalog.properties();
  assert.equal(props['namespace-separator'], '%2E', 'the fixture overrides the separator; our paths follow it');
  const n = ns();
  await catalog.createNamespace([n], { owner: 'icefloe-it' });
  await catalog.createNamespace([n, 'sub']);
  assert.equal(await catalog.namespaceExists([n, 'sub']), true);
  assert.deepEqual(await catalog.listNamespaces([n]), [[n, 'sub']]);
  const id = { namespace: [n, 'sub'], name: 'orders' };
  const table = await catalog.createTable(id, { schema, properties: { 'format-version': '2', 'write.format.default': 'parquet' } });
  created.push(id);
  assert.deepEqual(table.metadata.schemas[0]?.fields.map((f) => [f.id, f.name]), [[1, 'id'], [2, 'customer'], [3, 'amount']], 'the server renumbers field ids');
  assert.equal(table.metadata.currentSnapshotId, null);
  assert.match(table.metadataLocation, /^s3:\/\/warehouse\/.*\.metadata\.json$/);
  await assert.rejects(catalog.createTable(id, { schema }), TableAlreadyExistsError);
  const loaded = await catalog.loadTable(id);
  assert.equal(loaded.metadata.tableUuid, table.metadata.tableUuid);
  assert.deepEqual(await catalog.listTables([n, 'sub']), [id]);
  assert.equal(await catalog.tableExists(id), true);
  await catalog.dropTable(id);
  assert.equal(await catalog.tableExists(id), false);
  await assert.rejects(catalog.loadTable(id), NoSuchTableError);
});

test('REST fixture: a property commit, two append commits, and two stale commits refused with 409', async () => {
  const { catalog, store } = await env();
  const n = ns();
  await catalog.createNamespace([n]);
  const id = { namespace: [n], name: 'events' };
  const t0 = await catalog.createTable(id, { schema });
  created.push(id);

  const t1 = await catalog.commitTable(
    id,
    [{ type: 'assert-table-uuid', uuid: t0.metadata.tableUuid }, { type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: null }],
    [{ action: 'set-properties', updates: { 'icefloe.connector': 'it' } }],
  );
  assert.equal(t1.metadata.properties['icefloe.connector'], 'it');
  assert.notEqual(t1.metadataLocation, t0.metadataLocation);

  const first = await emptyAppend(t1, 'commit-a', store);
  const t2 = await catalog.commitTable(id, first.requirements, first.updates);
  const second = await emptyAppend(t2, 'commit-b', store);
  const t3 = await catalog.commitTable(id, second.requirements, second.updates);
  assert.deepEqual(commitIds(t3), ['commit-a', 'commit-b']);

  // Built on t1: asserts main is absent, but main moved twice since.
  const stale = await emptyAppend(t1, 'commit-stale', store);
  await assert.rejects(catalog.commitTable(id, stale.requirements, stale.updates), CommitConflictError);
  await assert.rejects(
    catalog.commitTable(id, [{ type: 'assert-table-uuid', uuid: randomUUID() }], [{ action: 'set-properties', updates: { x: 'y' } }]),
    CommitConflictError,
  );
  const now = await catalog.loadTable(id);
  assert.equal(now.metadataLocation, t3.metadataLocation, 'the refused commits changed nothing');
  assert.deepEqual(commitIds(now), ['commit-a', 'commit-b']);

  // Independent readers see the same snapshots, ids and commit ids.
  const py = await readTable({ table: `${n}.events` });
  const pySnaps = py['snapshots'] as { snapshot_id: bigint | number; summary: Record<string, string> }[];
  assert.deepEqual(pySnaps.map((s) => s.summary[COMMIT_ID_KEY]), ['commit-a', 'commit-b']);
  assert.equal(BigInt(py['current_snapshot_id'] as bigint).toString(), String(t3.metadata.currentSnapshotId));
  assert.deepEqual(py.rows, []);
  assert.equal((py['properties'] as Record<string, string>)['icefloe.connector'], 'it');
  const duck = await readTable({ table: `${n}.events`, engine: 'duckdb' });
  assert.deepEqual(
    (duck['snapshots'] as { snapshot_id: bigint | number }[]).map((s) => BigInt(s.snapshot_id).toString()),
    t3.metadata.snapshots.map((s) => s.snapshotId.toString()),
  );
});
