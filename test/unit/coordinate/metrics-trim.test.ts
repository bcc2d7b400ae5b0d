/**
 * A data file whose metrics alone exceed one control record is announced with fewer metrics, never
 * dropped and never fatal (issue 10, point 3): bounds go first, the widest columns first, then whole count
 * maps; every part fits the record limit, the committer's planner reassembles the file with its data fields
 * intact, and a manifest written with it reads back (no bounds = no pruning, still a valid file entry).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FatalError } from '../../../src/core/errors.ts';
import { decodeControlEvent, encodeAnnouncement, reassembleAnnouncement } from '../../../src/coordinate/events.ts';
import type { Announcement, AnnouncementPart } from '../../../src/coordinate/events.ts';
import { TRIMMED_MESSAGE, trimFileMetrics, trimmedFields } from '../../../src/coordinate/metrics-trim.ts';
import type { MetricsTrim } from '../../../src/coordinate/metrics-trim.ts';
import { FileContent } from '../../../src/iceberg/data-file.ts';
import type { DataFile } from '../../../src/iceberg/data-file.ts';
import { addedEntries, readManifest, writeManifest } from '../../../src/iceberg/manifest.ts';
import { unpartitionedSpec } from '../../../src/iceberg/partition-spec.ts';
import type { Schema } from '../../../src/iceberg/types.ts';

const COLUMNS = 40;

/** A file of `COLUMNS` string columns; column i's bounds are (i + 1) * `width` bytes each. */
function wideFile(path: string, width: number): DataFile {
  const ids = Array.from({ length: COLUMNS }, (_, i) => i + 1);
  const bound = (id: number, fill: number): Uint8Array => new Uint8Array(id * width).fill(fill);
  return {
    content: FileContent.DATA,
    filePath: path,
    fileFormat: 'PARQUET',
    specId: 0,
    partition: [],
    recordCount: 1234n,
    fileSizeInBytes: 987654n,
    columnSizes: new Map(ids.map((id) => [id, 1000n + BigInt(id)])),
    valueCounts: new Map(ids.map((id) => [id, 1234n])),
    nullValueCounts: new Map(ids.map((id) => [id, 0n])),
    lowerBounds: new Map(ids.map((id) => [id, bound(id, 0x61)])),
    upperBounds: new Map(ids.map((id) => [id, bound(id, 0x7a)])),
    splitOffsets: [4n, 500_000n],
    sortOrderId: 0,
  };
}

function announcementOf(files: readonly DataFile[]): Announcement {
  return {
    connector: 'orders-sink',
    taskId: 0,
    cycleId: 'c1',
    table: { namespace: ['db'], name: 'wide' },
    tableUuid: '9c12d441-03fe-4693-9a96-a0705ddf69c1',
    schemaId: 0,
    specId: 0,
    sourceSpans: [{ topic: 'orders', partition: 0, firstOffset: 0n, lastOffset: 1233n }],
    files,
  };
}

function decodeAll(values: readonly Uint8Array[]): Announcement {
  const re = reassembleAnnouncement(values.map((v) => decodeControlEvent(v) as AnnouncementPart));
  assert.equal(re.kind, 'complete');
  return (re as { announcement: Announcement }).announcement;
}

const dataFields = (f: DataFile): unknown => ({ path: f.filePath, format: f.fileFormat, spec: f.specId, partition: f.partition, records: f.recordCount, size: f.fileSizeInBytes, splits: f.splitOffsets, sort: f.sortOrderId, content: f.content });

test('a file whose bounds alone exceed the record limit keeps its data fields and loses bounds, widest columns first; every record fits', () => {
  const limit = 8_000;
  const wide = wideFile('s3://b/wh/db/wide/data/wide-1.parquet', 40); // bounds: 2 × 40 × (1 + … + 40) bytes ≈ 66 KB
  const small = wideFile('s3://b/wh/db/wide/data/small-1.parquet', 1);
  const trims: MetricsTrim[] = [];
  const values = encodeAnnouncement(announcementOf([small, wide]), limit, (t) => trims.push(t));
  for (const v of values) assert.ok(v.byteLength <= limit, `a record of ${v.byteLength} bytes`);
  const back = decodeAll(values);
  assert.equal(back.files.length, 2, 'no file is dropped');
  assert.deepEqual(back.files.map(dataFields), [small, wide].map(dataFields));
  assert.deepEqual(back.files[0], small, 'a file that fits keeps every metric');
  const trimmed = back.files[1] as DataFile;
  assert.equal(trims.length, 1);
  assert.equal(trims[0]?.filePath, wide.filePath);
  assert.ok((trims[0]?.boundsDropped ?? 0) > 0 && (trims[0]?.boundsKept ?? 0) > 0, 'only as many bounds as needed are dropped');
  const kept = [...(trimmed.lowerBounds?.keys() ?? [])];
  assert.deepEqual([...(trimmed.upperBounds?.keys() ?? [])], kept, 'a column keeps both bounds or neither');
  // the narrowest columns keep theirs: the kept ids are 1..k
  assert.deepEqual(kept, Array.from({ length: kept.length }, (_, i) => i + 1));
  for (const id of kept) assert.deepEqual(trimmed.lowerBounds?.get(id), wide.lowerBounds?.get(id));
  assert.deepEqual(trimmed.nullValueCounts, wide.nullValueCounts, 'counts are kept while dropping bounds suffices');
  assert.deepEqual(trims[0]?.mapsDropped, []);
});

test('when dropping every bound is not enough, whole count maps go next: column sizes first, null counts last', () => {
  const file = wideFile('s3://b/wh/db/wide/data/counts.parquet', 40);
  const sizeOf = (f: Partial<DataFile>): number => new TextEncoder().encode(JSON.stringify(f, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v instanceof Map ? [...v] : v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v))).byteLength;
  const withoutBounds = Object.fromEntries(Object.entries(file).filter(([k]) => k !== 'lowerBounds' && k !== 'upperBounds')) as Partial<DataFile>;
  const noBounds = trimFileMetrics(file, sizeOf(withoutBounds) - 10, sizeOf);
  assert.ok(noBounds.fits);
  assert.equal(noBounds.boundsKept, 0);
  assert.deepEqual(noBounds.mapsDropped, ['columnSizes']);
  assert.equal(noBounds.file.columnSizes, undefined);
  assert.deepEqual(noBounds.file.valueCounts, file.valueCounts);
  const bare = trimFileMetrics(file, 300, sizeOf);
  assert.deepEqual(bare.mapsDropped, ['columnSizes', 'valueCounts', 'nullValueCounts']);
  assert.deepEqual(dataFields(bare.file), dataFields(file));
  assert.equal(bare.fits, bare.bytesAfter <= 300);
  // a file that fits is left alone
  const same = trimFileMetrics(file, sizeOf(file), sizeOf);
  assert.equal(same.file, file);
  assert.deepEqual({ dropped: same.boundsDropped, maps: same.mapsDropped }, { dropped: 0, maps: [] });
});

test('a file that does not fit even without metrics is still a FatalError naming the file', () => {
  const file = { ...wideFile(`s3://b/wh/db/wide/data/${'x'.repeat(3000)}.parquet`, 1) };
  assert.throws(() => encodeAnnouncement(announcementOf([file]), 2_000), (e: unknown) => e instanceof FatalError && /alone exceeds the control record limit/.test(e.message));
});

test('the trimmed file is a valid manifest entry: it reads back with its data fields and the metrics it kept', () => {
  const wide = wideFile('s3://b/wh/db/wide/data/wide-2.parquet', 40);
  const [trimmed] = decodeAll(encodeAnnouncement(announcementOf([wide]), 8_000)).files;
  assert.ok(trimmed !== undefined);
  const schema: Schema = { schemaId: 0, fields: Array.from({ length: COLUMNS }, (_, i) => ({ id: i + 1, name: `c${i + 1}`, required: false, type: { kind: 'string' as const } })) };
  const written = writeManifest({ path: 's3://b/wh/db/wide/metadata/m0.avro', schema, spec: unpartitionedSpec(0), snapshotId: 7n, entries: addedEntries([trimmed], 7n) });
  const entry = readManifest(written.bytes).entries[0];
  assert.deepEqual(dataFields(entry?.dataFile as DataFile), dataFields(wide));
  assert.deepEqual([...(entry?.dataFile.lowerBounds?.keys() ?? [])], [...(trimmed.lowerBounds?.keys() ?? [])]);
  assert.deepEqual(entry?.dataFile.valueCounts, wide.valueCounts);
});

test('the warning names the table and each trimmed file with what it lost', () => {
  const trims: MetricsTrim[] = [];
  encodeAnnouncement(announcementOf([wideFile('s3://b/wh/db/wide/data/w.parquet', 40)]), 8_000, (t) => trims.push(t));
  const fields = trimmedFields({ namespace: ['db'], name: 'wide' }, trims);
  assert.match(TRIMMED_MESSAGE, /trimmed to fit one control record/);
  assert.equal(fields['table'], 'db.wide');
  assert.equal(fields['files'], 1);
  const [first] = fields['trimmed'] as { path: string; bytesBefore: number; bytesAfter: number; boundsDropped: number }[];
  assert.equal(first?.path, 's3://b/wh/db/wide/data/w.parquet');
  assert.ok((first?.bytesAfter ?? Infinity) < (first?.bytesBefore ?? 0));
});
