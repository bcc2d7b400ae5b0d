import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildAppendCommit, fastAppend, parentManifestListLocation } from '../../../src/iceberg/append.ts';
import { FileContent, type DataFile } from '../../../src/iceberg/data-file.ts';
import { readManifest } from '../../../src/iceberg/manifest.ts';
import { readManifestList } from '../../../src/iceberg/manifest-list.ts';
import { findInAncestry, newTableMetadata, snapshotIdFromUuid, type TableMetadata } from '../../../src/iceberg/metadata.ts';
import { buildPartitionSpec } from '../../../src/iceberg/partition-spec.ts';
import { computeSnapshotSummary } from '../../../src/iceberg/summary.ts';
import { applyUpdates, checkRequirements } from '../../../src/iceberg/apply-updates.ts';
import type { Schema } from '../../../src/iceberg/types.ts';

const source: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'ts', required: false, type: { kind: 'timestamptz' } },
  ],
};
const table = newTableMetadata({
  schema: source,
  spec: buildPartitionSpec(source, 'day(ts)'),
  location: 's3://bucket/wh/db/events',
  tableUuid: '9c12d441-03fe-4693-9a96-a0705ddf69c1',
  nowMs: 1000,
});

const UUIDS = ['1e0f6c8a-2b3d-4e5f-8a9b-0c1d2e3f4a5b', '2f1a7d9b-3c4e-4f6a-9b0c-1d2e3f4a5b6c', '3a2b8e0c-4d5f-4a7b-8c1d-2e3f4a5b6c7d'];

function dataFile(name: string, day: number, records: bigint, size: bigint): DataFile {
  return {
    content: FileContent.DATA,
    filePath: `s3://bucket/wh/db/events/data/ts_day=${day}/${name}.parquet`,
    fileFormat: 'PARQUET',
    specId: 0,
    partition: [day],
    recordCount: records,
    fileSizeInBytes: size,
  };
}

function commit(base: TableMetadata, updates: Parameters<typeof applyUpdates>[1], nowMs: number): TableMetadata {
  return applyUpdates(base, updates, { nowMs }).metadata;
}

test('first append to an empty table: one manifest, a list without parent, requirements on an absent ref', () => {
  const snapshotId = snapshotIdFromUuid(UUIDS[0] as string);
  assert.equal(parentManifestListLocation(table), undefined);
  const r = fastAppend({
    base: table,
    files: [dataFile('a', 17486, 10n, 1000n), dataFile('b', 17487, 5n, 500n)],
    snapshotId,
    commitUuid: UUIDS[0] as string,
    attempt: 0,
    nowMs: 2000,
    summaryExtra: { 'icefloe.control-offsets.sink': '{"0":12}', 'icefloe.commit-id': 'c-1' },
  });
  assert.equal(r.manifestOutputs.length, 1);
  assert.equal(r.manifestOutputs[0]?.path, `s3://bucket/wh/db/events/metadata/${UUIDS[0]}-m0.avro`);
  assert.equal(r.manifestList.path, `s3://bucket/wh/db/events/metadata/snap-${snapshotId}-0-${UUIDS[0]}.avro`);
  assert.deepEqual(r.requirements, [
    { type: 'assert-table-uuid', uuid: table.tableUuid },
    { type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: null },
  ]);
  assert.deepEqual(r.updates.map((u) => u.action), ['add-snapshot', 'set-snapshot-ref']);
  assert.equal(r.snapshot.sequenceNumber, 1n);
  assert.equal(r.snapshot.parentSnapshotId, undefined);
  assert.equal(r.snapshot.schemaId, 0);
  assert.deepEqual(r.snapshot.summary, {
    operation: 'append',
    'icefloe.control-offsets.sink': '{"0":12}',
    'icefloe.commit-id': 'c-1',
    'manifests-created': '1',
    'manifests-kept': '0',
    'manifests-replaced': '0',
    'added-data-files': '2',
    'added-records': '15',
    'added-files-size': '1500',
    'changed-partition-count': '2',
    'total-records': '15',
    'total-files-size': '1500',
    'total-data-files': '2',
    'total-delete-files': '0',
    'total-position-deletes': '0',
    'total-equality-deletes': '0',
  });
  const list = readManifestList(r.manifestList.bytes);
  assert.equal(list.header.parentSnapshotId, undefined);
  assert.equal(list.manifests.length, 1);
  assert.equal(list.manifests[0]?.sequenceNumber, 1n);
  const entries = readManifest(r.manifestOutputs[0]?.bytes as Uint8Array, { inheritFrom: list.manifests[0] }).entries;
  assert.deepEqual(entries.map((e) => [e.snapshotId, e.sequenceNumber, e.dataFile.partition[0]]), [
    [snapshotId, 1n, 17486],
    [snapshotId, 1n, 17487],
  ]);
  const after = commit(table, r.updates, 2001);
  assert.equal(after.currentSnapshotId, snapshotId);
  assert.equal(findInAncestry(after, 'icefloe.control-offsets.sink').value, '{"0":12}');
});

test('second append carries the parent manifests verbatim; a conflict retry rebuilds only the list', () => {
  const id1 = snapshotIdFromUuid(UUIDS[0] as string);
  const first = fastAppend({ base: table, files: [dataFile('a', 1, 10n, 100n)], snapshotId: id1, commitUuid: UUIDS[0] as string, attempt: 0, nowMs: 2000 });
  const md1 = commit(table, first.updates, 2000);
  const parentRows = readManifestList(first.manifestList.bytes).manifests;
  assert.equal(parentManifestListLocation(md1), first.manifestList.path);

  // our commit, built on md1 ...
  const id2 = snapshotIdFromUuid(UUIDS[1] as string);
  const ours = fastAppend({
    base: md1,
    files: [dataFile('b', 2, 5n, 50n)],
    snapshotId: id2,
    commitUuid: UUIDS[1] as string,
    attempt: 0,
    nowMs: 3000,
    parentManifests: parentRows,
    summaryExtra: { 'icefloe.control-offsets.sink': '{"0":20}' },
  });
  assert.deepEqual(ours.requirements[1], { type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: id1 });
  const rows = readManifestList(ours.manifestList.bytes).manifests;
  assert.deepEqual(rows.map((m) => m.manifestPath), [`s3://bucket/wh/db/events/metadata/${UUIDS[1]}-m0.avro`, first.manifestOutputs[0]?.path]);
  assert.deepEqual(rows[1], parentRows[0]); // carried verbatim: sequence numbers, counts, summaries
  assert.equal(rows[0]?.sequenceNumber, 2n);
  assert.equal(ours.snapshot.summary['total-records'], '15');
  assert.equal(ours.snapshot.summary['manifests-kept'], '1');

  // ... but another writer (a compaction without our keys) got there first
  const id3 = snapshotIdFromUuid(UUIDS[2] as string);
  const theirs = fastAppend({ base: md1, files: [dataFile('c', 3, 1n, 10n)], snapshotId: id3, commitUuid: UUIDS[2] as string, attempt: 0, nowMs: 2500, parentManifests: parentRows });
  const md2 = commit(md1, theirs.updates, 2500);
  assert.throws(() => applyUpdates(md2, ours.updates, { nowMs: 3000, requirements: ours.requirements }), { name: 'CommitConflictError' });

  // retry: same manifests (no new upload), new list with the new parent, next sequence number, new totals
  const retry = buildAppendCommit({
    base: md2,
    manifests: ours.appendManifests,
    parentManifests: readManifestList(theirs.manifestList.bytes).manifests,
    attempt: 1,
    nowMs: 3100,
    summaryExtra: { 'icefloe.control-offsets.sink': '{"0":20}' },
  });
  assert.equal(retry.manifestList.path, `s3://bucket/wh/db/events/metadata/snap-${id2}-1-${UUIDS[1]}.avro`);
  assert.equal(retry.snapshot.sequenceNumber, 3n);
  assert.equal(retry.snapshot.parentSnapshotId, id3);
  assert.equal(retry.snapshot.summary['total-records'], '16');
  assert.equal(retry.snapshot.summary['total-data-files'], '3');
  const retryRows = readManifestList(retry.manifestList.bytes).manifests;
  assert.deepEqual(retryRows.map((m) => m.sequenceNumber), [3n, 2n, 1n]);
  const md3 = applyUpdates(md2, retry.updates, { nowMs: 3100, requirements: retry.requirements }).metadata;
  assert.equal(md3.currentSnapshotId, id2);
  assert.equal(md3.lastSequenceNumber, 3n);
  // the positions are found through the ancestry even though the snapshot below lacks them
  assert.equal(findInAncestry(md3, 'icefloe.control-offsets.sink').value, '{"0":20}');
});

test('fast append refuses what would corrupt the table', () => {
  const id1 = snapshotIdFromUuid(UUIDS[0] as string);
  const first = fastAppend({ base: table, files: [dataFile('a', 1, 10n, 100n)], snapshotId: id1, commitUuid: UUIDS[0] as string, attempt: 0, nowMs: 2000 });
  const md1 = commit(table, first.updates, 2000);
  const id2 = snapshotIdFromUuid(UUIDS[1] as string);
  // the parent's manifest list rows are required, or the new snapshot would silently drop data
  assert.throws(() => fastAppend({ base: md1, files: [], snapshotId: id2, commitUuid: UUIDS[1] as string, attempt: 0, nowMs: 1 }), /pass the rows of its manifest list/);
  assert.throws(
    () => fastAppend({ base: table, files: [dataFile('a', 1, 1n, 1n), dataFile('a', 1, 1n, 1n)], snapshotId: id2, commitUuid: UUIDS[1] as string, attempt: 0, nowMs: 1 }),
    { name: 'FatalError', message: /twice/ },
  );
  assert.throws(
    () => fastAppend({ base: table, files: [{ ...dataFile('a', 1, 1n, 1n), specId: 7 }], snapshotId: id2, commitUuid: UUIDS[1] as string, attempt: 0, nowMs: 1 }),
    { name: 'FatalError', message: /spec 7/ },
  );
  assert.throws(() => fastAppend({ base: md1, files: [], snapshotId: id1, commitUuid: UUIDS[1] as string, attempt: 0, nowMs: 1, parentManifests: [] }), /already exists/);
  assert.throws(() => fastAppend({ base: table, files: [], snapshotId: id2, commitUuid: 'x', attempt: 0, nowMs: 1 }), TypeError);
});

test('summary totals follow Java: start at 0 without a parent, omitted when the parent lacks them', () => {
  const added = [dataFile('a', 1, 10n, 100n)];
  const del = { ...dataFile('d', 1, 3n, 30n), content: FileContent.POSITION_DELETES } as DataFile;
  const eq = { ...dataFile('e', 2, 4n, 40n), content: FileContent.EQUALITY_DELETES } as DataFile;
  const s = computeSnapshotSummary({ operation: 'overwrite', parentSummary: { 'total-records': '100', 'total-data-files': '5', 'total-files-size': 'x' }, addedFiles: [...added, del, eq], removedFiles: [dataFile('old', 1, 20n, 200n)] });
  assert.equal(s['operation'], 'overwrite');
  assert.equal(s['added-data-files'], '1');
  assert.equal(s['deleted-data-files'], '1');
  assert.equal(s['added-delete-files'], '2');
  assert.equal(s['added-position-delete-files'], '1');
  assert.equal(s['added-equality-delete-files'], '1');
  assert.equal(s['added-position-deletes'], '3');
  assert.equal(s['added-equality-deletes'], '4');
  assert.equal(s['deleted-records'], '20');
  assert.equal(s['added-files-size'], '170');
  assert.equal(s['removed-files-size'], '200');
  assert.equal(s['changed-partition-count'], '2');
  assert.equal(s['total-records'], '90');
  assert.equal(s['total-data-files'], '5');
  assert.equal(s['total-files-size'], undefined); // not a number in the parent: omitted, not guessed
  assert.equal(s['total-delete-files'], undefined); // absent in the parent
  const first = computeSnapshotSummary({ operation: 'append', parentSummary: undefined, addedFiles: [] });
  assert.equal(first['total-records'], '0');
  assert.equal(first['changed-partition-count'], '0');
  assert.throws(() => computeSnapshotSummary({ operation: 'append', parentSummary: {}, extra: { 'total-records': '1' } }), { name: 'ConfigError' });
});

test('an append to a branch that does not exist yet forks it from main (Java SnapshotProducer.toBranch); main stays', () => {
  const id1 = snapshotIdFromUuid(UUIDS[0] as string);
  const first = fastAppend({ base: table, files: [dataFile('a', 1, 10n, 100n)], snapshotId: id1, commitUuid: UUIDS[0] as string, attempt: 0, nowMs: 2000 });
  const md1 = commit(table, first.updates, 2000);
  // the new branch's parent is main's head, whose manifest list the caller reads
  assert.equal(parentManifestListLocation(md1, 'stage'), first.manifestList.path);
  const id2 = snapshotIdFromUuid(UUIDS[1] as string);
  const onStage = fastAppend({
    base: md1,
    files: [dataFile('b', 2, 5n, 50n)],
    parentManifests: readManifestList(first.manifestList.bytes).manifests,
    snapshotId: id2,
    commitUuid: UUIDS[1] as string,
    attempt: 0,
    nowMs: 3000,
    branch: 'stage',
  });
  assert.equal(onStage.snapshot.parentSnapshotId, id1);
  assert.equal(onStage.snapshot.summary['total-records'], '15', 'main\'s rows are in the fork');
  assert.deepEqual(onStage.requirements[1], { type: 'assert-ref-snapshot-id', ref: 'stage', snapshotId: null }, 'the branch must still not exist');
  assert.deepEqual(onStage.updates[1], { action: 'set-snapshot-ref', refName: 'stage', ref: { snapshotId: id2, type: 'branch' } });
  assert.equal(readManifestList(onStage.manifestList.bytes).manifests.length, 2);
  const md2 = commit(md1, onStage.updates, 3000);
  assert.equal(md2.currentSnapshotId, id1, 'main did not move');
  assert.equal(md2.refs['stage']?.snapshotId, id2);
  // once it exists, the branch builds on its own head and asserts it
  assert.equal(parentManifestListLocation(md2, 'stage'), onStage.manifestList.path);
  const id3 = snapshotIdFromUuid(UUIDS[2] as string);
  const next = fastAppend({ base: md2, files: [dataFile('c', 3, 1n, 10n)], parentManifests: readManifestList(onStage.manifestList.bytes).manifests, snapshotId: id3, commitUuid: UUIDS[2] as string, attempt: 0, nowMs: 4000, branch: 'stage' });
  assert.equal(next.snapshot.parentSnapshotId, id2);
  assert.deepEqual(next.requirements[1], { type: 'assert-ref-snapshot-id', ref: 'stage', snapshotId: id2 });
  // a second first commit to the branch (built on md1) can no longer land
  assert.throws(() => checkRequirements(md2, onStage.requirements), /stage was created concurrently/);
  // the branch of an empty table starts without a parent
  const fresh = fastAppend({ base: table, files: [dataFile('d', 4, 1n, 10n)], snapshotId: id3, commitUuid: UUIDS[2] as string, attempt: 0, nowMs: 2000, branch: 'stage' });
  assert.equal(fresh.snapshot.parentSnapshotId, undefined);
});
