/**
 * The in-memory catalog (src/commit/memory.ts) answers as the REST and SQL catalogs do: the port's error
 * classes, requirement checks (a stale requirement is a conflict and changes nothing), updates applied by
 * the pure Iceberg code, metadata files in the store, a compare-and-swap between concurrent commits; and its
 * faults and hooks do what they say.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CommitConflictError, CommitStateUnknownError, ConfigError, RetriableError } from '../../../src/core/errors.ts';
import { parseJson } from '../../../src/core/json.ts';
import { readManifestList } from '../../../src/iceberg/manifest-list.ts';
import { COMMIT_ID_KEY } from '../../../src/commit/commit-retry.ts';
import { MemoryCatalog } from '../../../src/commit/memory.ts';
import { parseMetadataVersion, refSnapshotId, tableMetadataFromJson } from '../../../src/commit/model.ts';
import type { Schema } from '../../../src/commit/model.ts';
import { NamespaceAlreadyExistsError, NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError } from '../../../src/commit/port.ts';
import type { LoadedTable, TableIdentifier } from '../../../src/commit/port.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { commitIds, emptyAppend, rowsAppendPlan } from '../../helpers/commits.ts';
import { commitWithRetry } from '../../../src/commit/commit-retry.ts';

const schema: Schema = { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'long' } }] };
const T: TableIdentifier = { namespace: ['db'], name: 'events' };

async function withTable(options: { store?: MemoryObjectStore } = {}): Promise<{ catalog: MemoryCatalog; table: LoadedTable }> {
  const catalog = new MemoryCatalog(options.store === undefined ? {} : { store: options.store });
  await catalog.createNamespace(['db']);
  return { catalog, table: await catalog.createTable(T, { schema }) };
}

/** Commits an empty append carrying `commitId`; answers the committed table. */
async function append(catalog: MemoryCatalog, commitId: string, store?: MemoryObjectStore): Promise<LoadedTable> {
  const req = await emptyAppend(await catalog.loadTable(T), commitId, store);
  return catalog.commitTable(T, req.requirements, req.updates);
}

test('namespaces: create, exists, list children, duplicates and empty ones refused', async () => {
  const catalog = new MemoryCatalog();
  await catalog.createNamespace(['a'], { owner: 'x' });
  await catalog.createNamespace(['a', 'b']);
  await catalog.createNamespace(['c', 'd']);
  assert.equal(await catalog.namespaceExists(['a']), true);
  assert.equal(await catalog.namespaceExists(['z']), false);
  assert.deepEqual(await catalog.listNamespaces(), [['a'], ['c']]);
  assert.deepEqual(await catalog.listNamespaces(['a']), [['a', 'b']]);
  await assert.rejects(catalog.createNamespace(['a']), NamespaceAlreadyExistsError);
  await assert.rejects(catalog.namespaceExists([]), ConfigError);
});

test('tables: create, load, list, exists, drop; the port’s errors for missing and duplicate ones', async () => {
  const { catalog, table } = await withTable();
  assert.deepEqual(table.identifier, T);
  assert.deepEqual(table.config, {});
  assert.equal(table.metadata.location, 'memory://warehouse/db/events');
  assert.equal(table.metadata.snapshots.length, 0);
  const loaded = await catalog.loadTable(T);
  assert.deepEqual(loaded, table, 'a load answers what create answered');
  assert.notEqual(loaded.metadata, table.metadata, 'a fresh copy: callers never share the catalog’s objects');
  await catalog.createTable({ namespace: ['db'], name: 'another' }, { schema, location: 's3://bucket/elsewhere' });
  assert.deepEqual((await catalog.listTables(['db'])).map((t) => t.name), ['another', 'events']);
  assert.equal(await catalog.tableExists(T), true);

  await assert.rejects(catalog.createTable(T, { schema }), TableAlreadyExistsError);
  await assert.rejects(catalog.createTable({ namespace: ['nope'], name: 't' }, { schema }), NoSuchNamespaceError);
  await assert.rejects(catalog.listTables(['nope']), NoSuchNamespaceError);
  await catalog.dropTable(T);
  assert.equal(await catalog.tableExists(T), false);
  await assert.rejects(catalog.loadTable(T), NoSuchTableError);
  await assert.rejects(catalog.dropTable(T), NoSuchTableError);
  await assert.rejects(catalog.commitTable(T, [], [{ action: 'set-properties', updates: { a: 'b' } }]), NoSuchTableError);
});

test('every metadata version is written to the store, numbered, and holds what the catalog answers', async () => {
  const store = new MemoryObjectStore();
  const { catalog, table } = await withTable({ store });
  assert.equal(parseMetadataVersion(table.metadataLocation), 0);
  const committed = await append(catalog, 'c1');
  assert.equal(parseMetadataVersion(committed.metadataLocation), 1);
  const onDisk = tableMetadataFromJson(parseJson(new TextDecoder().decode(await store.get(committed.metadataLocation))));
  assert.deepEqual(onDisk, committed.metadata);
  assert.deepEqual(
    committed.metadata.metadataLog.map((e) => e.metadataFile),
    [table.metadataLocation],
    'the replaced file joins metadata-log',
  );
  assert.equal(store.locations().filter((l) => l.endsWith('.metadata.json')).length, 2);
});

test('requirements: a stale assert-ref-snapshot-id is a CommitConflictError and changes nothing', async () => {
  const { catalog } = await withTable();
  const stale = await emptyAppend(await catalog.loadTable(T), 'late'); // built on the empty table
  const first = await append(catalog, 'first');
  await assert.rejects(catalog.commitTable(T, stale.requirements, stale.updates), CommitConflictError);
  const after = await catalog.loadTable(T);
  assert.equal(after.metadataLocation, first.metadataLocation, 'no new metadata version');
  assert.deepEqual(commitIds(after), ['first']);
});

test('requirements: assert-table-uuid of another table (dropped and recreated) is a CommitConflictError', async () => {
  const { catalog, table } = await withTable();
  const recreated = await catalog.recreateTable(T);
  assert.notEqual(recreated.metadata.tableUuid, table.metadata.tableUuid);
  assert.deepEqual(recreated.metadata.schemas[0]?.fields, table.metadata.schemas[0]?.fields, 'same shape, new identity');
  assert.equal(recreated.metadata.location, table.metadata.location);
  await assert.rejects(
    catalog.commitTable(T, [{ type: 'assert-table-uuid', uuid: table.metadata.tableUuid }], [{ action: 'set-properties', updates: { a: 'b' } }]),
    CommitConflictError,
  );
  assert.equal((await catalog.loadTable(T)).metadata.properties['a'], undefined);
});

test('updates are applied as a catalog server applies them; one that cannot apply is a ConfigError', async () => {
  const { catalog, table } = await withTable();
  const uuid = { type: 'assert-table-uuid' as const, uuid: table.metadata.tableUuid };
  const withProps = await catalog.commitTable(T, [uuid], [{ action: 'set-properties', updates: { 'commit.retry.num-retries': '2' } }]);
  assert.equal(withProps.metadata.properties['commit.retry.num-retries'], '2');
  const appended = await append(catalog, 'c1');
  assert.equal(appended.metadata.lastSequenceNumber, 1n);
  assert.equal(refSnapshotId(appended.metadata, 'main'), appended.metadata.currentSnapshotId);
  assert.equal(appended.metadata.snapshots[0]?.summary[COMMIT_ID_KEY], 'c1');
  const same = await catalog.commitTable(T, [uuid], []);
  assert.equal(same.metadataLocation, appended.metadataLocation, 'a commit that changes nothing writes no new version');
  await assert.rejects(catalog.commitTable(T, [], [{ action: 'set-current-schema', schemaId: 99 }]), ConfigError);
});

test('two commits built on the same state, racing: exactly one lands (compare-and-swap)', async () => {
  const store = new MemoryObjectStore();
  const { catalog, table } = await withTable({ store });
  const a = await emptyAppend(table, 'a');
  const b = await emptyAppend(table, 'b');
  const results = await Promise.allSettled([catalog.commitTable(T, a.requirements, a.updates), catalog.commitTable(T, b.requirements, b.updates)]);
  assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
  const lost = results.find((r) => r.status === 'rejected');
  assert.ok(lost?.status === 'rejected' && lost.reason instanceof CommitConflictError);
  assert.equal(commitIds(await catalog.loadTable(T)).length, 1);
  assert.equal(store.locations().filter((l) => l.endsWith('.metadata.json')).length, 2, 'the loser’s metadata file was deleted');
});

test('commit faults: each does what it says, one per call', async () => {
  const { catalog } = await withTable();
  catalog.commitFaults.push('apply-then-unknown', 'unknown', 'retriable', 'config');
  await assert.rejects(append(catalog, 'landed'), CommitStateUnknownError);
  assert.deepEqual(commitIds(await catalog.loadTable(T)), ['landed']);
  await assert.rejects(append(catalog, 'lost'), CommitStateUnknownError);
  await assert.rejects(append(catalog, 'refused'), RetriableError);
  await assert.rejects(append(catalog, 'bad'), ConfigError);
  assert.deepEqual(commitIds(await catalog.loadTable(T)), ['landed'], 'none of the other three landed');
  await append(catalog, 'fine');
  assert.equal(catalog.commits, 5);
});

test('commit fault other-writer-first: a genuine conflict for a request asserting the branch', async () => {
  const { catalog } = await withTable();
  catalog.commitFaults.push('other-writer-first');
  await assert.rejects(append(catalog, 'ours'), CommitConflictError);
  assert.deepEqual(commitIds(await catalog.loadTable(T)), [undefined], 'only the other writer’s snapshot, without our keys');
});

test('commit fault lands-after-reload: unknown now, applied right after the next load took its view', async () => {
  const { catalog } = await withTable();
  catalog.commitFaults.push('lands-after-reload');
  await assert.rejects(append(catalog, 'in-flight'), CommitStateUnknownError);
  const view = await catalog.loadTable(T);
  assert.deepEqual(commitIds(view), [], 'the view was taken before it landed');
  assert.deepEqual(commitIds(await catalog.loadTable(T)), ['in-flight']);
});

test('load faults: a queued RetriableError per load', async () => {
  const { catalog } = await withTable();
  catalog.loadFaults.push('retriable');
  await assert.rejects(catalog.loadTable(T), RetriableError);
  await catalog.loadTable(T);
  assert.equal(catalog.loads, 2);
});

test('setRef rolls main back to an older snapshot; the newer one stays in the metadata, out of the ancestry', async () => {
  const { catalog } = await withTable();
  const first = await append(catalog, 'c1');
  await append(catalog, 'c2');
  const rolled = await catalog.setRef(T, first.metadata.currentSnapshotId as bigint);
  assert.deepEqual(commitIds(rolled), ['c1']);
  assert.equal(rolled.metadata.currentSnapshotId, first.metadata.currentSnapshotId);
  assert.equal(rolled.metadata.snapshots.length, 2);
});

test('replaceMetadata swaps the table’s metadata as given, as a new version', async () => {
  const { catalog } = await withTable();
  const before = await append(catalog, 'c1');
  const replaced = await catalog.replaceMetadata(T, { ...before.metadata, properties: { ...before.metadata.properties, repaired: 'yes' } });
  assert.equal(replaced.metadata.properties['repaired'], 'yes');
  assert.equal(parseMetadataVersion(replaced.metadataLocation), 2);
  assert.deepEqual(await catalog.loadTable(T), replaced);
});

test('otherWriterCommit with a store: a manifest list that carries the parent’s manifests, so appends on top still read it', async () => {
  const store = new MemoryObjectStore();
  const { catalog } = await withTable({ store });
  await commitWithRetry(catalog, T, rowsAppendPlan(store, 'rows', [1n, 2n]));
  const parent = (await catalog.loadTable(T)).metadata;
  const parentList = readManifestList(await store.get(parent.snapshots[0]?.manifestList ?? '')).manifests;
  const other = await catalog.otherWriterCommit(T, { summary: { writer: 'spark' } });
  const head = other.metadata.snapshots.find((s) => s.snapshotId === other.metadata.currentSnapshotId);
  assert.equal(head?.summary['writer'], 'spark');
  assert.equal(head?.summary['total-records'], '2', 'no rows added or lost');
  assert.deepEqual(
    readManifestList(await store.get(head?.manifestList ?? '')).manifests.map((m) => m.manifestPath),
    parentList.map((m) => m.manifestPath),
  );
  const out = await commitWithRetry(catalog, T, rowsAppendPlan(store, 'more', [3n]));
  assert.equal(out.status, 'committed');
  assert.deepEqual(commitIds(out.table), ['rows', undefined, 'more']);
});
