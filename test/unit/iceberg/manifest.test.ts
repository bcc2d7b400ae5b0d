import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { decodeAvroContainer } from '../../../src/iceberg/avro.ts';
import { fromHex, toHex } from '../../../src/iceberg/bytes.ts';
import { EntryStatus, FileContent, makeDataFile, type DataFile } from '../../../src/iceberg/data-file.ts';
import { addedEntries, readManifest, writeManifest } from '../../../src/iceberg/manifest.ts';
import { readManifestList, UNASSIGNED_SEQUENCE_NUMBER, writeManifestList, type ManifestFile } from '../../../src/iceberg/manifest-list.ts';
import { decimalRequiredBytes, manifestEntrySchemaV2, manifestFileSchemaV2 } from '../../../src/iceberg/manifest-schemas.ts';
import { partitionType, unpartitionedSpec } from '../../../src/iceberg/partition-spec.ts';
import { parseJson } from '../../../src/core/json.ts';
import type { PartitionValue } from '../../../src/iceberg/types.ts';
import { entryAsExpected, file, files, listAsExpected, schema, SNAP, spec, uuid } from '../../helpers/manifest-fixtures.ts';
import type { ExpectedEntry, ExpectedList } from '../../helpers/manifest-fixtures.ts';

// Fixtures shared with test/integration/manifest-readers.test.ts (PyIceberg and DuckDB read what we write).
const FIXTURES = new URL('../../fixtures/iceberg/', import.meta.url);

test('manifest_entry / manifest_file Avro schemas have Java’s record names, field ids and shapes', () => {
  const entry = manifestEntrySchemaV2(partitionType(spec, schema));
  const text = JSON.stringify(entry);
  assert.match(text, /^\{"type":"record","name":"manifest_entry","fields":\[\{"name":"status","type":"int","field-id":0\},\{"name":"snapshot_id","type":\["null","long"\],"default":null,"field-id":1\}/);
  assert.match(text, /\{"name":"data_file","type":\{"type":"record","name":"r2","fields":\[\{"name":"content","type":"int","doc":"Contents of the file: 0=data, 1=position deletes, 2=equality deletes","field-id":134\}/);
  assert.match(
    text,
    /\{"name":"column_sizes","type":\["null",\{"type":"array","items":\{"type":"record","name":"k117_v118","fields":\[\{"name":"key","type":"int","field-id":117\},\{"name":"value","type":"long","field-id":118\}\]\},"logicalType":"map"\}\],"doc":"Map of column id to total size on disk","default":null,"field-id":108\}/,
  );
  assert.match(text, /"split_offsets","type":\["null",\{"type":"array","items":"long","element-id":133\}\]/);
  assert.match(text, /"equality_ids","type":\["null",\{"type":"array","items":"int","element-id":136\}\]/);
  for (const name of ['k119_v120', 'k121_v122', 'k138_v139', 'k126_v127', 'k129_v130', '"r102"']) assert.ok(text.includes(name), name);
  // partition fields: optional unions with null first, field-id = partition field id, Java's Avro types
  assert.match(text, /\{"name":"ts_day","type":\["null",\{"type":"int","logicalType":"date"\}\],"default":null,"field-id":1001\}/);
  assert.match(text, /\{"name":"amount","type":\["null",\{"type":"fixed","name":"decimal_10_2","size":5,"logicalType":"decimal","precision":10,"scale":2\}\]/);
  assert.match(text, /\{"name":"event_id","type":\["null",\{"type":"fixed","name":"uuid_fixed","size":16,"logicalType":"uuid"\}\]/);
  assert.match(text, /"at","type":\["null",\{"type":"long","logicalType":"timestamp-micros","adjust-to-utc":false\}\]/);
  // an invalid Avro name is sanitised the way Java does, with the original kept
  assert.match(text, /\{"name":"meta_x2Esource","type":\["null","string"\],"default":null,"iceberg-field-name":"meta.source","field-id":1006\}/);
  // the partition record is never wrapped in a union (apache/paimon#5384), even when empty
  assert.match(JSON.stringify(manifestEntrySchemaV2({ kind: 'struct', fields: [] })), /"type":\{"type":"record","name":"r102","fields":\[\]\},"doc":"Partition data tuple, schema based on the partition spec","field-id":102/);

  const list = JSON.stringify(manifestFileSchemaV2());
  assert.match(list, /^\{"type":"record","name":"manifest_file","fields":\[\{"name":"manifest_path","type":"string","doc":"Location URI with FS scheme","field-id":500\}/);
  assert.match(list, /\{"name":"partitions","type":\["null",\{"type":"array","items":\{"type":"record","name":"r508","fields":\[\{"name":"contains_null","type":"boolean","doc":"True if any file has a null partition value","field-id":509\}/);
  assert.match(list, /"element-id":508\}\],"doc":"Summary for each partition","default":null,"field-id":507\}/);
  const ids = (manifestFileSchemaV2()['fields'] as { 'field-id': number }[]).map((f) => f['field-id']);
  assert.deepEqual(ids, [500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513, 514, 507, 519]);
  assert.deepEqual([1, 9, 10, 18, 19, 38].map(decimalRequiredBytes), [1, 4, 5, 8, 9, 16]);
});

test('write a manifest and read it back: entries, header, counts, partition summaries', () => {
  const { bytes, manifest } = writeManifest({ path: 's3://b/t/metadata/x-m0.avro', schema, spec, snapshotId: SNAP, entries: addedEntries(files, SNAP) });
  const header = decodeAvroContainer(bytes).metadata;
  assert.equal(header.get('format-version'), '2');
  assert.equal(header.get('content'), 'data');
  assert.equal(header.get('partition-spec-id'), '2');
  assert.equal(header.get('schema-id'), '3');
  assert.equal(header.get('avro.codec'), 'deflate');
  // `partition-spec` is the fields array only (apache/iceberg#13895); `schema` is the table schema
  assert.ok(Array.isArray(parseJson(header.get('partition-spec') ?? '')));
  assert.equal((parseJson(header.get('schema') ?? '') as { type: string }).type, 'struct');

  assert.equal(manifest.manifestLength, BigInt(bytes.length));
  assert.equal(manifest.sequenceNumber, UNASSIGNED_SEQUENCE_NUMBER);
  assert.equal(manifest.minSequenceNumber, UNASSIGNED_SEQUENCE_NUMBER);
  assert.equal(manifest.addedSnapshotId, SNAP);
  assert.equal(manifest.addedFilesCount, 2);
  assert.equal(manifest.addedRowsCount, 107n);
  const p = manifest.partitions ?? [];
  assert.equal(p.length, 8);
  assert.deepEqual(p[0], { containsNull: true, containsNan: false, lowerBound: fromHex('6575'), upperBound: fromHex('6575') });
  assert.deepEqual(p[1], { containsNull: false, containsNan: false, lowerBound: fromHex('ffffffff'), upperBound: fromHex('4e440000') });
  assert.equal(toHex(p[3]?.lowerBound ?? new Uint8Array()), 'ce'); // -0.50 as minimal two's complement
  assert.equal(toHex(p[3]?.upperBound ?? new Uint8Array()), '058c'); // 14.20
  assert.equal(toHex(p[5]?.lowerBound ?? new Uint8Array()), toHex(uuid));

  const read = readManifest(bytes);
  assert.equal(read.header.specId, 2);
  assert.deepEqual(read.header.spec, spec);
  assert.deepEqual(read.header.schema, schema);
  assert.equal(read.entries.length, 2);
  const [a, b] = read.entries;
  assert.equal(a?.status, EntryStatus.ADDED);
  assert.equal(a?.snapshotId, SNAP);
  assert.equal(a?.sequenceNumber, null); // inherited
  assert.deepEqual(a?.dataFile, files[0]);
  assert.deepEqual(b?.dataFile, files[1]);
  // with the list row, null sequence numbers inherit its sequence number
  const inherited = readManifest(bytes, { inheritFrom: { ...manifest, sequenceNumber: 9n, minSequenceNumber: 9n } });
  assert.equal(inherited.entries[0]?.sequenceNumber, 9n);
  assert.equal(inherited.entries[0]?.fileSequenceNumber, 9n);
});

test('unpartitioned manifests carry an empty r102 record and read back', () => {
  const unpart = unpartitionedSpec(0);
  const f = { ...file('s3://b/t/data/u.parquet', [], 3n), specId: 0 };
  const { bytes, manifest } = writeManifest({ path: 'p', schema, spec: unpart, snapshotId: SNAP, entries: addedEntries([f], SNAP), codec: 'null' });
  assert.deepEqual(manifest.partitions, []);
  assert.deepEqual(readManifest(bytes).entries[0]?.dataFile, f);
});

test('the manifest writer refuses entries that do not fit', () => {
  const w = (entries: Parameters<typeof writeManifest>[0]['entries']): unknown => writeManifest({ path: 'p', schema, spec, snapshotId: SNAP, entries });
  assert.throws(() => w(addedEntries([{ ...files[0], specId: 1 } as DataFile], SNAP)), /spec 1/);
  assert.throws(() => w(addedEntries([{ ...files[0], partition: ['eu'] } as DataFile], SNAP)), /1 values/);
  assert.throws(() => w(addedEntries([{ ...files[0], content: FileContent.EQUALITY_DELETES } as DataFile], SNAP)), /data manifest/);
  assert.throws(() => w([{ status: EntryStatus.EXISTING, snapshotId: null, sequenceNumber: 1n, fileSequenceNumber: 1n, dataFile: files[0] as DataFile }]), /explicit/);
  const wrong = ['eu', '17486', 3, 1420n, 'icef', uuid, 'web', 1n] as PartitionValue[];
  assert.throws(() => w(addedEntries([{ ...files[0], partition: wrong } as DataFile], SNAP)), TypeError);
});

test('manifest list: our new manifests get the commit sequence number, carried rows stay verbatim', () => {
  const { manifest } = writeManifest({ path: 's3://b/t/metadata/x-m0.avro', schema, spec, snapshotId: SNAP, entries: addedEntries(files, SNAP) });
  const carried: ManifestFile = {
    manifestPath: 's3://b/t/metadata/old-m0.avro',
    manifestLength: 5120n,
    partitionSpecId: 0,
    content: 1,
    sequenceNumber: 3n,
    minSequenceNumber: 2n,
    addedSnapshotId: 6699417712345678901n,
    addedFilesCount: 4,
    existingFilesCount: 1,
    deletedFilesCount: 0,
    addedRowsCount: 400n,
    existingRowsCount: 10n,
    deletedRowsCount: 0n,
    partitions: [],
    keyMetadata: Uint8Array.of(1, 2),
  };
  const { bytes, manifests } = writeManifestList({ snapshotId: SNAP, parentSnapshotId: 3051729675574597004n, sequenceNumber: 5n, manifests: [manifest, carried] });
  assert.equal(manifests[0]?.sequenceNumber, 5n);
  assert.equal(manifests[0]?.minSequenceNumber, 5n);
  const read = readManifestList(bytes);
  assert.deepEqual(read.header, { codec: 'deflate', snapshotId: SNAP, parentSnapshotId: 3051729675574597004n, sequenceNumber: 5n, formatVersion: 2 });
  assert.deepEqual(read.manifests, manifests);
  assert.deepEqual(read.manifests[1], carried);
  // first snapshot: parent-snapshot-id is the string "null", like Java
  const first = writeManifestList({ snapshotId: SNAP, sequenceNumber: 1n, manifests: [] });
  assert.equal(decodeAvroContainer(first.bytes).metadata.get('parent-snapshot-id'), 'null');
  assert.equal(readManifestList(first.bytes).header.parentSnapshotId, undefined);
  // an unassigned manifest from another snapshot is a broken invariant
  assert.throws(() => writeManifestList({ snapshotId: 1n, sequenceNumber: 1n, manifests: [manifest] }), { name: 'FatalError' });
});

const expected = JSON.parse(readFileSync(new URL('pyiceberg-expected.json', FIXTURES), 'utf8')) as {
  codecs: Record<string, { manifest_list: ExpectedList[]; entries: ExpectedEntry[] }>;
};

for (const codec of ['null', 'deflate', 'zstandard', 'snappy']) {
  test(`reads a manifest list and manifest written by PyIceberg with codec ${codec}`, () => {
    const exp = expected.codecs[codec];
    assert.ok(exp);
    const list = readManifestList(readFileSync(new URL(`pyiceberg-manifest-list-${codec}.avro`, FIXTURES)));
    assert.equal(list.header.codec, codec);
    assert.equal(list.header.snapshotId, SNAP);
    assert.equal(list.header.parentSnapshotId, 3051729675574597004n);
    assert.equal(list.header.sequenceNumber, 5n);
    assert.deepEqual(list.manifests.map(listAsExpected), exp.manifest_list);
    const row = list.manifests[0] as ManifestFile;
    const m = readManifest(readFileSync(new URL(`pyiceberg-manifest-${codec}.avro`, FIXTURES)), { inheritFrom: row });
    assert.equal(m.header.specId, 2);
    assert.equal(m.header.schema?.schemaId, 3);
    assert.deepEqual(
      m.header.spec?.fields.map((f) => f.name),
      ['region', 'ts_day', 'id_bucket', 'amount', 'name_trunc'],
    );
    assert.deepEqual(m.entries.map((e) => entryAsExpected(e, new Map([[3, 2]]))), exp.entries);
    assert.equal(m.entries[0]?.dataFile.partition[3], 1420n);
  });
}

test('makeDataFile converts the writer’s number counts to bigint', () => {
  const f = makeDataFile({
    content: FileContent.DATA,
    filePath: 's3://b/t/data/x.parquet',
    fileFormat: 'PARQUET',
    specId: 0,
    partition: [],
    recordCount: 3,
    fileSizeInBytes: 100n,
    columnSizes: new Map([[1, 10]]),
    splitOffsets: [4],
  });
  assert.equal(f.recordCount, 3n);
  assert.deepEqual(f.columnSizes, new Map([[1, 10n]]));
  assert.deepEqual(f.splitOffsets, [4n]);
  assert.equal('valueCounts' in f, false);
  assert.throws(() => makeDataFile({ ...f, recordCount: 1.5 }), TypeError);
});
