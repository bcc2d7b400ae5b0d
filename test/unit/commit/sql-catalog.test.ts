/**
 * The SQL catalog on SQLite (node:sqlite, a temp file or :memory:) with the in-memory object store: the
 * JdbcCatalog table layout, namespaces, create/load/commit/drop, metadata file naming and metadata-log,
 * requirement failures, the compare-and-swap losing to a concurrent writer, and a connection lost around
 * the swap. PostgreSQL and independent readers are covered in test/integration/catalog-sql.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { CommitConflictError, CommitStateUnknownError, ConfigError, RetriableError } from '../../../src/core/errors.ts';
import { parseJson } from '../../../src/core/json.ts';
import {
  NamespaceAlreadyExistsError,
  NoSuchNamespaceError,
  NoSuchTableError,
  TableAlreadyExistsError,
} from '../../../src/commit/port.ts';
import type { TableIdentifier } from '../../../src/commit/port.ts';
import { SqlCatalog } from '../../../src/commit/sql/catalog.ts';
import { SqlDriverError } from '../../../src/commit/sql/driver.ts';
import type { SqlDriver, SqlValue } from '../../../src/commit/sql/driver.ts';
import { SqliteDriver } from '../../../src/commit/sql/sqlite.ts';
import type { Schema } from '../../../src/commit/model.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { commitIds, emptyAppend } from '../../helpers/commits.ts';

const dir = mkdtempSync(join(tmpdir(), 'icefloe-sql-catalog-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const schema: Schema = {
  schemaId: 7,
  fields: [
    { id: 10, name: 'id', required: true, type: { kind: 'long' } },
    { id: 20, name: 'tags', required: false, type: { kind: 'list', elementId: 30, elementRequired: false, element: { kind: 'string' } } },
  ],
};

/** Passes statements through; `beforeUpdate` runs just before the commit's compare-and-swap UPDATE. */
class HookedDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  readonly inner: SqlDriver;
  beforeUpdate: (() => Promise<void>) | undefined;
  afterUpdate: (() => never) | undefined;
  constructor(inner: SqlDriver) {
    this.inner = inner;
  }
  query(sql: string, params?: readonly SqlValue[]): Promise<Record<string, unknown>[]> {
    return this.inner.query(sql, params);
  }
  async execute(sql: string, params?: readonly SqlValue[]): Promise<number> {
    if (sql.trimStart().startsWith('UPDATE iceberg_tables')) {
      const before = this.beforeUpdate;
      this.beforeUpdate = undefined;
      if (before !== undefined) await before();
      const n = await this.inner.execute(sql, params);
      const after = this.afterUpdate;
      this.afterUpdate = undefined;
      if (after !== undefined) after();
      return n;
    }
    return this.inner.execute(sql, params);
  }
  transaction(statements: readonly { sql: string; params?: readonly SqlValue[] }[]): Promise<void> {
    return this.inner.transaction(statements);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

function open(path = join(dir, `${randomUUID()}.db`), store = new MemoryObjectStore(), name = 'unit'): { catalog: SqlCatalog; driver: HookedDriver; store: MemoryObjectStore; path: string } {
  const driver = new HookedDriver(new SqliteDriver({ path }));
  return { catalog: new SqlCatalog({ name, driver, store, warehouse: 's3://warehouse/wh/' }), driver, store, path };
}

const T: TableIdentifier = { namespace: ['db'], name: 'events' };

test('creates the two tables with JdbcCatalog’s V1 columns and primary keys', async () => {
  const { catalog, driver } = open();
  await catalog.listNamespaces();
  const columns = async (table: string): Promise<string[]> =>
    (await driver.query(`SELECT name, type, pk FROM pragma_table_info('${table}') ORDER BY cid`)).map((r) => `${r['name']} ${r['type']}${Number(r['pk']) > 0 ? ' pk' : ''}`);
  assert.deepEqual(await columns('iceberg_tables'), [
    'catalog_name VARCHAR(255) pk',
    'table_namespace VARCHAR(255) pk',
    'table_name VARCHAR(255) pk',
    'metadata_location VARCHAR(1000)',
    'previous_metadata_location VARCHAR(1000)',
    'iceberg_type VARCHAR(5)',
  ]);
  assert.deepEqual(await columns('iceberg_namespace_properties'), [
    'catalog_name VARCHAR(255) pk',
    'namespace VARCHAR(255) pk',
    'property_key VARCHAR(255) pk',
    'property_value VARCHAR(1000)',
  ]);
});

test('namespaces: create writes exists=true, nested levels list per parent, LIKE wildcards are literal', async () => {
  const { catalog, driver } = open();
  await catalog.createNamespace(['a'], { owner: 'me' });
  await catalog.createNamespace(['a', 'b']);
  await catalog.createNamespace(['a_c']);
  await catalog.createNamespace(['axc']);
  await assert.rejects(catalog.createNamespace(['a']), NamespaceAlreadyExistsError);
  const rows = await driver.query("SELECT property_key, property_value FROM iceberg_namespace_properties WHERE namespace = 'a' ORDER BY property_key");
  assert.deepEqual(rows.map((r) => [r['property_key'], r['property_value']]), [['exists', 'true'], ['owner', 'me']]);
  assert.deepEqual(await catalog.listNamespaces(), [['a'], ['a_c'], ['axc']]);
  assert.deepEqual(await catalog.listNamespaces(['a']), [['a', 'b']]);
  assert.equal(await catalog.namespaceExists(['a', 'b']), true);
  assert.equal(await catalog.namespaceExists(['a_']), false, "'_' is not a wildcard");
  assert.equal(await catalog.namespaceExists(['zzz']), false);
  // Another catalog name in the same tables sees none of it.
  const other = new SqlCatalog({ name: 'other', driver, store: new MemoryObjectStore(), warehouse: 's3://w/' });
  assert.deepEqual(await other.listNamespaces(), []);
});

test('createTable: fresh ids, Java’s default location, 00000-<uuid>.metadata.json, a TABLE row without previous', async () => {
  const { catalog, driver, store } = open();
  await assert.rejects(catalog.createTable(T, { schema }), NoSuchNamespaceError);
  await catalog.createNamespace(['db']);
  const created = await catalog.createTable(T, { schema, properties: { 'format-version': '2', owner: 'icefloe' } });
  assert.match(created.metadataLocation, /^s3:\/\/warehouse\/wh\/db\/events\/metadata\/00000-[0-9a-f-]{36}\.metadata\.json$/);
  const md = created.metadata;
  assert.equal(md.location, 's3://warehouse/wh/db/events');
  assert.equal(md.formatVersion, 2);
  assert.deepEqual(md.properties, { owner: 'icefloe' });
  assert.deepEqual(md.schemas[0]?.fields.map((f) => f.id), [1, 2], 'fresh ids from 1, as Java assigns them');
  assert.equal(md.lastColumnId, 3);
  const row = { ...(await driver.query('SELECT * FROM iceberg_tables'))[0] }; // node:sqlite rows have no prototype
  assert.deepEqual(row, {
    catalog_name: 'unit',
    table_namespace: 'db',
    table_name: 'events',
    metadata_location: created.metadataLocation,
    previous_metadata_location: null,
    iceberg_type: 'TABLE',
  });
  const doc = parseJson(new TextDecoder().decode(await store.get(created.metadataLocation))) as Record<string, unknown>;
  assert.equal(doc['table-uuid'], md.tableUuid);
  assert.equal(doc['current-snapshot-id'], -1, 'written as Java does for a table without snapshots');
  await assert.rejects(catalog.createTable(T, { schema }), TableAlreadyExistsError);
  assert.deepEqual(await catalog.listTables(['db']), [T]);
  assert.equal(await catalog.tableExists(T), true);
});

test('commit: requirements checked, next version file, previous pointer and metadata-log; a no-op writes nothing', async () => {
  const { catalog, driver, store } = open();
  await catalog.createNamespace(['db']);
  const created = await catalog.createTable(T, { schema });
  const afterProps = await catalog.commitTable(T, [{ type: 'assert-table-uuid', uuid: created.metadata.tableUuid }], [{ action: 'set-properties', updates: { k: 'v' } }]);
  assert.match(afterProps.metadataLocation, /\/metadata\/00001-[0-9a-f-]{36}\.metadata\.json$/);
  assert.deepEqual(afterProps.metadata.metadataLog.map((e) => e.metadataFile), [created.metadataLocation]);
  const row = { ...(await driver.query('SELECT metadata_location, previous_metadata_location FROM iceberg_tables'))[0] };
  assert.deepEqual(row, { metadata_location: afterProps.metadataLocation, previous_metadata_location: created.metadataLocation });

  const append = await emptyAppend(afterProps, 'c1');
  const afterAppend = await catalog.commitTable(T, append.requirements, append.updates);
  assert.match(afterAppend.metadataLocation, /\/00002-/);
  const loaded = await catalog.loadTable(T);
  assert.equal(loaded.metadataLocation, afterAppend.metadataLocation);
  assert.deepEqual(commitIds(loaded), ['c1']);
  assert.equal(loaded.metadata.lastSequenceNumber, 1n);
  assert.ok(loaded.metadata.currentSnapshotId !== null && loaded.metadata.currentSnapshotId > 0n);

  const files = store.locations().length;
  const same = await catalog.commitTable(T, [], [{ action: 'remove-properties', removals: [] }]);
  assert.equal(same.metadataLocation, afterAppend.metadataLocation, 'a no-op commit keeps the pointer');
  assert.equal(store.locations().length, files, 'and writes no file');
});

test('a failed requirement is a CommitConflictError and changes nothing', async () => {
  const { catalog, store } = open();
  await catalog.createNamespace(['db']);
  const created = await catalog.createTable(T, { schema });
  const stale = await emptyAppend(created, 'first');
  await catalog.commitTable(T, stale.requirements, stale.updates);
  const files = store.locations();
  const again = await emptyAppend(created, 'second'); // built on the old state: asserts main is absent
  await assert.rejects(catalog.commitTable(T, again.requirements, again.updates), CommitConflictError);
  await assert.rejects(catalog.commitTable(T, [{ type: 'assert-table-uuid', uuid: randomUUID() }], []), CommitConflictError);
  assert.deepEqual(store.locations(), files);
  assert.deepEqual(commitIds(await catalog.loadTable(T)), ['first']);
});

test('the compare-and-swap loses to a writer that swapped in between: conflict, our file removed, theirs kept', async () => {
  const path = join(dir, `${randomUUID()}.db`);
  const store = new MemoryObjectStore();
  const a = open(path, store);
  const b = open(path, store);
  await a.catalog.createNamespace(['db']);
  const created = await a.catalog.createTable(T, { schema });
  a.driver.beforeUpdate = async () => {
    const theirs = await emptyAppend(await b.catalog.loadTable(T), 'theirs');
    await b.catalog.commitTable(T, theirs.requirements, theirs.updates);
  };
  const ours = await emptyAppend(created, 'ours');
  const before = new Set(store.locations());
  await assert.rejects(a.catalog.commitTable(T, ours.requirements, ours.updates), CommitConflictError);
  const loaded = await a.catalog.loadTable(T);
  assert.deepEqual(commitIds(loaded), ['theirs']);
  const added = store.locations().filter((l) => !before.has(l));
  assert.deepEqual(added, [loaded.metadataLocation], 'only the winner’s metadata file remains');
});

test('connection lost around the swap: landed → success from a re-read; not landed → CommitStateUnknownError', async () => {
  const { catalog, driver } = open();
  await catalog.createNamespace(['db']);
  const created = await catalog.createTable(T, { schema });
  const lost = (): never => {
    throw new SqlDriverError('connection-lost', 'ECONNRESET', new Error('socket closed'));
  };
  driver.afterUpdate = lost; // the UPDATE ran, its answer was lost
  const landed = await emptyAppend(created, 'landed');
  const out = await catalog.commitTable(T, landed.requirements, landed.updates);
  assert.equal((await catalog.loadTable(T)).metadataLocation, out.metadataLocation);

  driver.beforeUpdate = async () => lost(); // lost before the UPDATE ran
  const next = await emptyAppend(await catalog.loadTable(T), 'not-landed');
  await assert.rejects(catalog.commitTable(T, next.requirements, next.updates), CommitStateUnknownError);
  driver.beforeUpdate = async () => {
    throw new SqlDriverError('not-sent', 'ECONNREFUSED', new Error('refused'));
  };
  await assert.rejects(catalog.commitTable(T, next.requirements, next.updates), RetriableError);
  assert.deepEqual(commitIds(await catalog.loadTable(T)), ['landed']);
});

test('a V0 schema (no iceberg_type column) works; VIEW rows are never tables', async () => {
  const path = join(dir, `${randomUUID()}.db`);
  const raw = new SqliteDriver({ path });
  await raw.execute(
    'CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), PRIMARY KEY (catalog_name, table_namespace, table_name))',
  );
  const v0 = open(path);
  await v0.catalog.createNamespace(['db']);
  await v0.catalog.createTable(T, { schema });
  assert.equal((await v0.catalog.loadTable(T)).identifier.name, 'events');

  const v1 = open();
  await v1.catalog.createNamespace(['db']);
  await v1.driver.execute("INSERT INTO iceberg_tables VALUES ('unit', 'db', 'a_view', 's3://w/v.json', NULL, 'VIEW')");
  await assert.rejects(v1.catalog.loadTable({ namespace: ['db'], name: 'a_view' }), NoSuchTableError);
  assert.deepEqual(await v1.catalog.listTables(['db']), []);
});

test('dropTable removes the row only; loading then fails with NoSuchTableError', async () => {
  const { catalog, store } = open();
  await catalog.createNamespace(['db']);
  const created = await catalog.createTable(T, { schema });
  await catalog.dropTable(T);
  await assert.rejects(catalog.loadTable(T), NoSuchTableError);
  await assert.rejects(catalog.dropTable(T), NoSuchTableError);
  assert.equal(await store.exists(created.metadataLocation), true, 'files are never deleted by a drop');
});

test('a namespace level containing a dot is refused (the layout joins levels with dots)', async () => {
  const { catalog } = open();
  await assert.rejects(catalog.createNamespace(['a.b']), ConfigError);
});
