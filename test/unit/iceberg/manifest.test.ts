import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeAvroContainer } from '../../../src/iceberg/avro.ts';
import { toBoundBytes } from '../../../src/iceberg/bounds.ts';
import { fromHex, toHex, uuidToBytes } from '../../../src/iceberg/bytes.ts';
import { EntryStatus, FileContent, makeDataFile, type DataFile } from '../../../src/iceberg/data-file.ts';
import { addedEntries, readManifest, writeManifest } from '../../../src/iceberg/manifest.ts';
import { readManifestList, UNASSIGNED_SEQUENCE_NUMBER, writeManifestList, type ManifestFile } from '../../../src/iceberg/manifest-list.ts';
import { decimalRequiredBytes, manifestEntrySchemaV2, manifestFileSchemaV2 } from '../../../src/iceberg/manifest-schemas.ts';
import { buildPartitionSpec, partitionType, unpartitionedSpec } from '../../../src/iceberg/partition-spec.ts';
import { parseJson } from '../../../src/core/json.ts';
import type { PartitionValue, Schema } from '../../../src/iceberg/types.ts';

const FIXTURES = new URL('../../fixtures/iceberg/', import.meta.url);
const SNAP = 8744736658442914487n;

const schema: Schema = {
  schemaId: 3,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'region', required: false, type: { kind: 'string' } },
    { id: 3, name: 'ts', required: false, type: { kind: 'timestamptz' } },
    { id: 4, name: 'amount', required: false, type: { kind: 'decimal', precision: 10, scale: 2 } },
    { id: 5, name: 'name', required: false, type: { kind: 'string' } },
    { id: 6, name: 'score', required: false, type: { kind: 'double' } },
    { id: 7, name: 'event_id', required: false, type: { kind: 'uuid' } },
    { id: 8, name: 'meta', required: false, type: { kind: 'struct', fields: [{ id: 9, name: 'source', required: false, type: { kind: 'string' } }] } },
    { id: 10, name: 'at', required: false, type: { kind: 'timestamp' } },
  ],
};
const spec = buildPartitionSpec(schema, 'region, day(ts), bucket(id, 16), amount, truncate(name, 4), event_id, meta.source, at', { specId: 2 });

function file(path: string, partition: PartitionValue[], records: bigint, extra: Partial<DataFile> = {}): DataFile {
  return {
    content: FileContent.DATA,
    filePath: path,
    fileFormat: 'PARQUET',
    specId: 2,
    partition,
    recordCount: records,
    fileSizeInBytes: records * 40n,
    columnSizes: new Map([[1, 800n], [2, 300n]]),
    valueCounts: new Map([[1, records]]),
    nullValueCounts: new Map([[1, 0n]]),
    nanValueCounts: new Map([[6, 1n]]),
    lowerBounds: new Map([[1, toBoundBytes({ kind: 'long' }, -5n)]]),
    upperBounds: new Map([[1, toBoundBytes({ kind: 'long' }, SNAP)]]),
    splitOffsets: [4n, 2n ** 40n],
    sortOrderId: 0,
    ...extra,
  };
}
const uuid = uuidToBytes('f79c3e09-677c-4bbd-a479-3f349cb785e7');
const files = [
  file('s3://b/t/data/a.parquet', ['eu', 17486, 3, 1420n, 'icef', uuid, 'web', 1510871468000000n], 100n),
  withoutNanAndSort(file('s3://b/t/data/b.parquet', [null, -1, 15, -50n, null, null, 'app', -1n], 7n)),
];

function withoutNanAndSort(f: DataFile): DataFile {
  return Object.fromEntries(Object.entries(f).filter(([k]) => k !== 'nanValueCounts' && k !== 'sortOrderId')) as unknown as DataFile;
}

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

interface ExpectedEntry {
  status: number;
  snapshot_id: string | null;
  sequence_number: string | null;
  file_sequence_number: string | null;
  content: number;
  file_path: string;
  file_format: string;
  partition: (string | null | { decimal: string })[];
  record_count: string;
  file_size_in_bytes: string;
  column_sizes: Record<string, string> | null;
  value_counts: Record<string, string> | null;
  null_value_counts: Record<string, string> | null;
  nan_value_counts: Record<string, string> | null;
  lower_bounds: Record<string, { hex: string }> | null;
  upper_bounds: Record<string, { hex: string }> | null;
  split_offsets: string[] | null;
  sort_order_id: number | null;
}
interface ExpectedList {
  manifest_path: string;
  manifest_length: string;
  partition_spec_id: number;
  content: number;
  sequence_number: string;
  min_sequence_number: string;
  added_snapshot_id: string;
  added_files_count: number;
  existing_files_count: number;
  deleted_files_count: number;
  added_rows_count: string;
  existing_rows_count: string;
  deleted_rows_count: string;
  partitions: { contains_null: boolean; contains_nan: boolean | null; lower_bound: string | null; upper_bound: string | null }[] | null;
}

function listAsExpected(m: ManifestFile): ExpectedList {
  return {
    manifest_path: m.manifestPath,
    manifest_length: String(m.manifestLength),
    partition_spec_id: m.partitionSpecId,
    content: m.content,
    sequence_number: String(m.sequenceNumber),
    min_sequence_number: String(m.minSequenceNumber),
    added_snapshot_id: String(m.addedSnapshotId),
    added_files_count: m.addedFilesCount,
    existing_files_count: m.existingFilesCount,
    deleted_files_count: m.deletedFilesCount,
    added_rows_count: String(m.addedRowsCount),
    existing_rows_count: String(m.existingRowsCount),
    deleted_rows_count: String(m.deletedRowsCount),
    partitions:
      m.partitions?.map((p) => ({
        contains_null: p.containsNull,
        contains_nan: p.containsNan ?? null,
        lower_bound: p.lowerBound === undefined ? null : toHex(p.lowerBound),
        upper_bound: p.upperBound === undefined ? null : toHex(p.upperBound),
      })) ?? null,
  };
}

const counts = (m: ReadonlyMap<number, bigint> | undefined): Record<string, string> | null =>
  m === undefined ? null : Object.fromEntries([...m].map(([k, v]) => [String(k), String(v)]));
const hexes = (m: ReadonlyMap<number, Uint8Array> | undefined): Record<string, { hex: string }> | null =>
  m === undefined ? null : Object.fromEntries([...m].map(([k, v]) => [String(k), { hex: toHex(v) }]));

function entryAsExpected(e: ReturnType<typeof readManifest>['entries'][number], decimalScales: Map<number, number>): ExpectedEntry {
  const d = e.dataFile;
  return {
    status: e.status,
    snapshot_id: e.snapshotId === null ? null : String(e.snapshotId),
    sequence_number: e.sequenceNumber === null ? null : String(e.sequenceNumber),
    file_sequence_number: e.fileSequenceNumber === null ? null : String(e.fileSequenceNumber),
    content: d.content,
    file_path: d.filePath,
    file_format: d.fileFormat,
    partition: d.partition.map((v, i) => {
      if (v === null) return null;
      const scale = decimalScales.get(i);
      if (scale !== undefined && typeof v === 'bigint') {
        const neg = v < 0n;
        const digits = (neg ? -v : v).toString().padStart(scale + 1, '0');
        return { decimal: `${neg ? '-' : ''}${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}` };
      }
      return String(v);
    }),
    record_count: String(d.recordCount),
    file_size_in_bytes: String(d.fileSizeInBytes),
    column_sizes: counts(d.columnSizes),
    value_counts: counts(d.valueCounts),
    null_value_counts: counts(d.nullValueCounts),
    nan_value_counts: counts(d.nanValueCounts),
    lower_bounds: hexes(d.lowerBounds),
    upper_bounds: hexes(d.upperBounds),
    split_offsets: d.splitOffsets?.map(String) ?? null,
    sort_order_id: d.sortOrderId ?? null,
  };
}

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

// Cross-check with an independent reader when the Python venv is available (ICEFLOE_PYTHON); unit runs
// without it do not register the test (the runner counts skips as failures), the fixtures above still
// cover the reading direction.
const python = process.env['ICEFLOE_PYTHON'];
if (python !== undefined) test('PyIceberg reads the manifest list and manifests we write (ICEFLOE_PYTHON)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-manifest-'));
  try {
    const mpath = join(dir, 'ours-m0.avro');
    const upath = join(dir, 'ours-m1.avro');
    const written = writeManifest({ path: mpath, schema, spec, snapshotId: SNAP, entries: addedEntries(files, SNAP) });
    writeFileSync(mpath, written.bytes);
    const unpartFile = { ...file('s3://b/t/data/u.parquet', [], 3n), specId: 0 };
    const unpart = writeManifest({ path: upath, schema, spec: unpartitionedSpec(0), snapshotId: SNAP, entries: addedEntries([unpartFile], SNAP), codec: 'zstandard' });
    writeFileSync(upath, unpart.bytes);
    const list = writeManifestList({ snapshotId: SNAP, parentSnapshotId: null, sequenceNumber: 1n, manifests: [written.manifest, unpart.manifest], codec: 'snappy' });
    const lpath = join(dir, 'snap.avro');
    writeFileSync(lpath, list.bytes);
    const script = new URL('../../readers/iceberg_avro.py', import.meta.url).pathname;
    const out = JSON.parse(execFileSync(python as string, [script, 'check', lpath], { encoding: 'utf8' })) as {
      manifest_list: ExpectedList[];
      entries: Record<string, ExpectedEntry[]>;
      duckdb: Record<string, number | string>;
    };
    assert.deepEqual(out.manifest_list, list.manifests.map(listAsExpected));
    const ours = readManifest(written.bytes, { inheritFrom: list.manifests[0] as ManifestFile });
    const theirs = (out.entries[mpath] ?? []).map((e) => ({ ...e, partition: e.partition.slice(0, 5) }));
    const mine = ours.entries.map((e) => entryAsExpected(e, new Map([[3, 2]]))).map((e) => ({ ...e, partition: e.partition.slice(0, 5) }));
    assert.deepEqual(theirs, mine);
    assert.equal(out.entries[upath]?.[0]?.record_count, '3');
    // DuckDB's Avro reader too (it lacks zstandard, so the zstd manifest is only checked by PyIceberg)
    assert.equal(out.duckdb[lpath], 2);
    assert.equal(out.duckdb[mpath], 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

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
