/**
 * Manifest fixtures shared by the unit tests of src/iceberg/manifest*.ts and the integration test that has
 * PyIceberg and DuckDB read the manifests we write (test/integration/manifest-readers.test.ts): a table
 * schema and a partition spec using every transform, two data files with full metrics, and the canonical
 * JSON shape (longs as strings, bytes as hex) in which test/readers/iceberg_avro.py reports what it read,
 * with converters from our model to that shape.
 *
 * Pure: no I/O, no services.
 */
import { toBoundBytes } from '../../src/iceberg/bounds.ts';
import { toHex, uuidToBytes } from '../../src/iceberg/bytes.ts';
import { FileContent, type DataFile, type ManifestEntry } from '../../src/iceberg/data-file.ts';
import type { ManifestFile } from '../../src/iceberg/manifest-list.ts';
import { buildPartitionSpec } from '../../src/iceberg/partition-spec.ts';
import type { PartitionValue, Schema } from '../../src/iceberg/types.ts';

/** The snapshot id the fixture entries are added by. */
export const SNAP = 8744736658442914487n;

export const schema: Schema = {
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
export const spec = buildPartitionSpec(schema, 'region, day(ts), bucket(id, 16), amount, truncate(name, 4), event_id, meta.source, at', { specId: 2 });

/** A data file of `spec` with metrics on a few columns, NaN counts and a sort order; `extra` overrides. */
export function file(path: string, partition: PartitionValue[], records: bigint, extra: Partial<DataFile> = {}): DataFile {
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
export const uuid = uuidToBytes('f79c3e09-677c-4bbd-a479-3f349cb785e7');
/** Two files: one with every partition value set, one with nulls and without NaN counts or sort order. */
export const files = [
  file('s3://b/t/data/a.parquet', ['eu', 17486, 3, 1420n, 'icef', uuid, 'web', 1510871468000000n], 100n),
  withoutNanAndSort(file('s3://b/t/data/b.parquet', [null, -1, 15, -50n, null, null, 'app', -1n], 7n)),
];

export function withoutNanAndSort(f: DataFile): DataFile {
  return Object.fromEntries(Object.entries(f).filter(([k]) => k !== 'nanValueCounts' && k !== 'sortOrderId')) as unknown as DataFile;
}

/** A manifest entry as test/readers/iceberg_avro.py (and pyiceberg-expected.json) report it. */
export interface ExpectedEntry {
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
/** A manifest list row as test/readers/iceberg_avro.py (and pyiceberg-expected.json) report it. */
export interface ExpectedList {
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

export function listAsExpected(m: ManifestFile): ExpectedList {
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

/** An entry as read back by our reader (sequence numbers inherited or not), in the readers' shape. */
export function entryAsExpected(e: ManifestEntry, decimalScales: Map<number, number>): ExpectedEntry {
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
