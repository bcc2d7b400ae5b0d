/**
 * The DataFile shape (spec "Manifests", field ids 100-145 of `data_file`/`r2`): what the Parquet writer
 * produces for each closed file and the manifest writer consumes, plus manifest entries around it.
 *
 * Owns: the in-memory contract between write/ and the manifest codec. Must not: do I/O or compute
 * metrics (write/ computes them; bounds.ts encodes them).
 *
 * All Avro `long`s are bigint (record counts, sizes, offsets, sequence numbers, snapshot ids), so a
 * manifest written by another engine round-trips exactly. Maps are keyed by field id.
 */
import type { PartitionValue } from './types.ts';

/** `content` of a data file (field 134). */
export const FileContent = { DATA: 0, POSITION_DELETES: 1, EQUALITY_DELETES: 2 } as const;
export type FileContent = (typeof FileContent)[keyof typeof FileContent];

/** `status` of a manifest entry (field 0). */
export const EntryStatus = { EXISTING: 0, ADDED: 1, DELETED: 2 } as const;
export type EntryStatus = (typeof EntryStatus)[keyof typeof EntryStatus];

export interface DataFile {
  /** 0 data, 1 position deletes, 2 equality deletes. */
  readonly content: FileContent;
  /** Fully qualified URI (`s3://bucket/warehouse/db/t/data/...parquet`). */
  readonly filePath: string;
  /** Upper case as Java writes it: `PARQUET`, `AVRO`, `ORC`, `PUFFIN`. */
  readonly fileFormat: string;
  /** The partition spec the `partition` tuple belongs to (not stored in v2 manifests: one spec per manifest). */
  readonly specId: number;
  /** Partition tuple in spec field order (transform results; see types.ts PrimitiveValue). [] if unpartitioned. */
  readonly partition: readonly PartitionValue[];
  readonly recordCount: bigint;
  readonly fileSizeInBytes: bigint;
  /** Field id -> bytes on disk of that column (sum of its column chunks' compressed sizes). */
  readonly columnSizes?: ReadonlyMap<number, bigint>;
  /** Field id -> values including nulls and NaNs. */
  readonly valueCounts?: ReadonlyMap<number, bigint>;
  readonly nullValueCounts?: ReadonlyMap<number, bigint>;
  /** Float/double columns only. */
  readonly nanValueCounts?: ReadonlyMap<number, bigint>;
  /** Field id -> Appendix D bytes (bounds.ts). */
  readonly lowerBounds?: ReadonlyMap<number, Uint8Array>;
  readonly upperBounds?: ReadonlyMap<number, Uint8Array>;
  readonly keyMetadata?: Uint8Array;
  /** Row group start offsets, ascending. */
  readonly splitOffsets?: readonly bigint[];
  /** Equality delete files only. */
  readonly equalityIds?: readonly number[];
  /** Data files: the sort order they were written with (0 = unsorted). */
  readonly sortOrderId?: number;
  /** v2 position delete files that reference a single data file. */
  readonly referencedDataFile?: string;
}

export interface ManifestEntry {
  readonly status: EntryStatus;
  /** null = inherit the manifest's added_snapshot_id (only for ADDED). */
  readonly snapshotId: bigint | null;
  /** Data sequence number; null = inherit the manifest's sequence_number (only for ADDED). */
  readonly sequenceNumber: bigint | null;
  /** null = inherit (only for ADDED). */
  readonly fileSequenceNumber: bigint | null;
  readonly dataFile: DataFile;
}

type Int64Like = bigint | number;

/** DataFile input that accepts JS numbers for counts and sizes (the writer keeps them as numbers). */
export interface DataFileInput extends Omit<DataFile, 'recordCount' | 'fileSizeInBytes' | 'columnSizes' | 'valueCounts' | 'nullValueCounts' | 'nanValueCounts' | 'splitOffsets'> {
  readonly recordCount: Int64Like;
  readonly fileSizeInBytes: Int64Like;
  readonly columnSizes?: ReadonlyMap<number, Int64Like>;
  readonly valueCounts?: ReadonlyMap<number, Int64Like>;
  readonly nullValueCounts?: ReadonlyMap<number, Int64Like>;
  readonly nanValueCounts?: ReadonlyMap<number, Int64Like>;
  readonly splitOffsets?: readonly Int64Like[];
}

function big(v: Int64Like, what: string): bigint {
  if (typeof v === 'bigint') return v;
  if (!Number.isSafeInteger(v)) throw new TypeError(`${what} is not a safe integer: ${v}`);
  return BigInt(v);
}

function bigMap(m: ReadonlyMap<number, Int64Like>, what: string): Map<number, bigint> {
  return new Map([...m].map(([k, v]) => [k, big(v, `${what}[${k}]`)]));
}

/** Builds a DataFile, converting number counts to bigint (throws TypeError on non-integers). Empty maps
 *  are kept (Java writes empty maps when a mode collects nothing for any column). */
export function makeDataFile(input: DataFileInput): DataFile {
  const { recordCount, fileSizeInBytes, columnSizes, valueCounts, nullValueCounts, nanValueCounts, splitOffsets, ...rest } = input;
  return {
    ...rest,
    recordCount: big(recordCount, 'recordCount'),
    fileSizeInBytes: big(fileSizeInBytes, 'fileSizeInBytes'),
    ...(columnSizes === undefined ? {} : { columnSizes: bigMap(columnSizes, 'columnSizes') }),
    ...(valueCounts === undefined ? {} : { valueCounts: bigMap(valueCounts, 'valueCounts') }),
    ...(nullValueCounts === undefined ? {} : { nullValueCounts: bigMap(nullValueCounts, 'nullValueCounts') }),
    ...(nanValueCounts === undefined ? {} : { nanValueCounts: bigMap(nanValueCounts, 'nanValueCounts') }),
    ...(splitOffsets === undefined ? {} : { splitOffsets: splitOffsets.map((v, i) => big(v, `splitOffsets[${i}]`)) }),
  };
}
