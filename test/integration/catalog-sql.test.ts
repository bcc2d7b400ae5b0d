/**
 * The SQL catalog against real databases and real readers:
 * - PostgreSQL (the stack's `iceberg` database, a unique catalog_name per test) with metadata on S3:
 *   create/load/commit, five committers racing on one table all land exactly once (compare-and-swap +
 *   commit-with-retry), and PyIceberg's SqlCatalog reads what we wrote under our catalog name;
 * - interop with Java: a table the REST fixture's JdbcCatalog created (catalog `icefloe`) is loaded by our
 *   SQL catalog, we commit a snapshot to it, and the fixture (Java parsing our metadata file) serves it;
 * - SQLite on a local file with a file:// warehouse, read by PyIceberg's SqlCatalog on that file.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { COMMIT_ID_KEY, commitWithRetry } from '../../src/commit/commit-retry.ts';
import type { Schema } from '../../src/commit/model.ts';
import type { TableIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { SqlCatalog } from '../../src/commit/sql/catalog.ts';
import { PostgresDriver } from '../../src/commit/sql/postgres.ts';
import { SqliteDriver } from '../../src/commit/sql/sqlite.ts';
import { LocalObjectStore } from '../../src/upload/local/store.ts';
import { S3ObjectStore } from '../../src/upload/s3/store.ts';
import { commitIds, emptyAppend, rowsAppendPlan } from '../helpers/commits.ts';
import { readTable } from '../helpers/readers.ts';
import { requireReachable, stackEndpoints, s3Settings } from '../helpers/stack.ts';

const schema: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'payload', required: false, type: { kind: 'string' } },
    { id: 3, name: 'ts', required: false, type: { kind: 'timestamptz' } },
  ],
};

const closers: (() => Promise<void>)[] = [];
const catalogNames: string[] = [];
const tmp = mkdtempSync(join(tmpdir(), 'icefloe-it-sql-'));

after(async () => {
  // Our rows only (catalog names unique to this run); the REST fixture's rows are dropped through it.
  if (catalogNames.length > 0) {
    const driver = new PostgresDriver({ connectionString: stackEndpoints().postgresUrl });
    for (const name of catalogNames) {
      await driver.execute('DELETE FROM iceberg_tables WHERE catalog_name = ?', [name]);
      await driver.execute('DELETE FROM iceberg_namespace_properties WHERE catalog_name = ?', [name]);
    }
    await driver.close();
  }
  for (const close of closers.reverse()) await close();
  rmSync(tmp, { recursive: true, force: true });
});

let ready: Promise<void> | undefined;
function stack(): Promise<void> {
  ready ??= (async () => {
    const e = stackEndpoints();
    await requireReachable('PostgreSQL', e.postgresUrl.replace(/^postgresql:/, 'tcp:'));
    await requireReachable('S3 (moto)', e.s3Endpoint);
    await requireReachable('Iceberg REST catalog', e.catalogUri);
  })();
  return ready;
}

function s3(): S3ObjectStore {
  const store = new S3ObjectStore(s3Settings());
  closers.push(() => store.close());
  return store;
}

/** A SQL catalog on the stack's PostgreSQL; `name` defaults to a fresh catalog_name (recorded for cleanup). */
function pgCatalog(name?: string): SqlCatalog {
  const e = stackEndpoints();
  const catalogName = name ?? `it_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  if (name === undefined) catalogNames.push(catalogName);
  const catalog = new SqlCatalog({
    name: catalogName,
    driver: new PostgresDriver({ connectionString: e.postgresUrl }),
    store: s3(),
    warehouse: `s3://${e.s3Bucket}/it-sql/${catalogName}`,
  });
  closers.push(() => catalog.close());
  return catalog;
}

test('SQL catalog on PostgreSQL: create, two real appends, and PyIceberg’s SqlCatalog reads every row under our catalog name', async () => {
  await stack();
  const store = s3();
  const catalog = pgCatalog();
  await catalog.createNamespace(['analytics'], { owner: 'icefloe' });
  const id = { namespace: ['analytics'], name: 'clicks' };
  await catalog.createTable(id, { schema, properties: { 'write.format.default': 'parquet' } });
  await commitWithRetry(catalog, id, rowsAppendPlan(store, 'pg-commit-1', [1n, 2n]));
  const out = await commitWithRetry(catalog, id, rowsAppendPlan(store, 'pg-commit-2', [3n]));
  const t2 = out.table;
  assert.match(t2.metadataLocation, /\/analytics\/clicks\/metadata\/00002-[0-9a-f-]{36}\.metadata\.json$/);

  const py = await readTable({ table: 'analytics.clicks', catalog: { kind: 'sql', name: catalog.name }, order_by: ['id'] });
  assert.equal(py['metadata_location'], t2.metadataLocation);
  assert.equal(BigInt(py['current_snapshot_id'] as bigint).toString(), String(t2.metadata.currentSnapshotId));
  assert.deepEqual((py['snapshots'] as { summary: Record<string, string> }[]).map((s) => s.summary[COMMIT_ID_KEY]), ['pg-commit-1', 'pg-commit-2']);
  assert.deepEqual(
    (py['schema'] as { id: number; name: string; type: string }[]).map((f) => [f.id, f.name, f.type]),
    [
      [1, 'id', 'long'],
      [2, 'payload', 'string'],
      [3, 'ts', 'timestamptz'],
    ],
  );
  assert.equal((py['properties'] as Record<string, string>)['write.format.default'], 'parquet');
  assert.deepEqual(py.rows, [
    { id: 1, payload: null, ts: null },
    { id: 2, payload: null, ts: null },
    { id: 3, payload: null, ts: null },
  ]);
});

test('SQL catalog on PostgreSQL: five committers race on one table; each commit lands exactly once', async () => {
  await stack();
  const store = s3();
  const first = pgCatalog();
  await first.createNamespace(['race']);
  const id = { namespace: ['race'], name: 't' };
  await first.createTable(id, { schema });
  // Five independent catalog instances (own pools) on the same rows: only compare-and-swap arbitrates.
  const committers = [first, ...Array.from({ length: 4 }, () => pgCatalog(first.name))];
  const events: string[] = [];
  const results = await Promise.all(
    committers.map((catalog, i) =>
      commitWithRetry(catalog, id, { commitId: `racer-${i}`, build: (t) => emptyAppend(t, `racer-${i}`, store) }, {
        retry: { maxAttempts: 20, initialDelayMs: 10, maxDelayMs: 200 },
        onEvent: (ev) => events.push(ev.kind),
      }),
    ),
  );
  assert.ok(results.every((r) => r.status === 'committed'));
  const ids = commitIds(await first.loadTable(id));
  assert.deepEqual([...ids].sort(), ['racer-0', 'racer-1', 'racer-2', 'racer-3', 'racer-4']);
  assert.ok(events.includes('conflict'), 'the race produced conflicts that were rebuilt and retried');
});

test('interop with Java: our SQL catalog commits to a table the REST fixture created; the fixture serves it', async () => {
  await stack();
  const e = stackEndpoints();
  const store = s3();
  const rest = new RestCatalog({ uri: e.catalogUri, warehouse: e.catalogWarehouse });
  const n = `it_sqlrest_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const id: TableIdentifier = { namespace: [n], name: 'shared' };
  await rest.createNamespace([n]);
  const created = await rest.createTable(id, { schema });
  try {
    // The fixture's own catalog_name: we read and write its rows as JdbcCatalog would.
    const sql = pgCatalog(e.catalogName);
    assert.equal(await sql.namespaceExists([n]), true);
    const viaSql = await sql.loadTable(id);
    assert.equal(viaSql.metadataLocation, created.metadataLocation);
    assert.equal(viaSql.metadata.tableUuid, created.metadata.tableUuid);
    const append = await emptyAppend(viaSql, 'written-by-sql-catalog', store);
    const committed = await sql.commitTable(id, append.requirements, append.updates);
    const viaRest = await rest.loadTable(id);
    assert.equal(viaRest.metadataLocation, committed.metadataLocation, 'Java follows the pointer we swapped');
    assert.deepEqual(commitIds(viaRest), ['written-by-sql-catalog'], 'and parses the metadata file we wrote');
    const py = await readTable({ table: `${n}.shared` });
    assert.equal(BigInt(py['current_snapshot_id'] as bigint).toString(), String(committed.metadata.currentSnapshotId));
  } finally {
    await rest.dropTable(id).catch(() => undefined);
  }
});

test('SQL catalog on SQLite with a file:// warehouse: PyIceberg’s SqlCatalog reads the same file', async () => {
  await stack();
  const dbPath = join(tmp, 'catalog.db');
  const warehouse = join(tmp, 'warehouse');
  const store = new LocalObjectStore({ root: tmp });
  const catalog = new SqlCatalog({ name: 'local', driver: new SqliteDriver({ path: dbPath }), store, warehouse: `file://${warehouse}` });
  closers.push(() => catalog.close());
  await catalog.createNamespace(['lake']);
  const id = { namespace: ['lake'], name: 'events' };
  const t0 = await catalog.createTable(id, { schema });
  const a = await emptyAppend(t0, 'sqlite-commit', store);
  const t1 = await catalog.commitTable(id, a.requirements, a.updates);
  assert.ok(t1.metadataLocation.startsWith(`file://${warehouse}/lake/events/metadata/00001-`));
  const py = await readTable({ table: 'lake.events', catalog: { kind: 'sql', name: 'local', uri: `sqlite:///${dbPath}`, warehouse: `file://${warehouse}` } });
  assert.equal(py['metadata_location'], t1.metadataLocation);
  assert.deepEqual((py['snapshots'] as { summary: Record<string, string> }[]).map((s) => s.summary[COMMIT_ID_KEY]), ['sqlite-commit']);
});
