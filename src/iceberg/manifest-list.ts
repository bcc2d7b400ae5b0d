/**
 * Manifest lists (spec "Manifest Lists"; reference iceberg-writer.md §1.4): the ManifestFile model,
 * writing a v2 list as Java does (record `manifest_file`, header snapshot-id / parent-snapshot-id
 * ("null" when absent) / sequence-number / format-version), assigning the commit's sequence number to
 * manifests written by this commit, and reading lists written by any engine (v1-v3, codecs null, deflate,
 * snappy, zstandard; fields resolved by field id, so Java v1 names such as added_data_files_count work).
 *
 * Owns: list bytes <-> ManifestFile[]. Must not: do I/O, or change a carried-over manifest's values
 * (parents' rows are copied verbatim; only our own new manifests get the commit's sequence number).
 */
import { FatalError } from '../core/errors.ts';
import { copyBytes } from './bytes.ts';
import { decodeAvroContainer, encodeAvroContainer, type AvroCodec } from './avro.ts';
import { malformed } from './json-util.ts';
import { avroFieldsById, manifestFileSchemaV2 } from './manifest-schemas.ts';

/** Java `ManifestWriter.UNASSIGNED_SEQ`: the sequence number of a manifest not yet committed. */
export const UNASSIGNED_SEQUENCE_NUMBER = -1n;

export const ManifestContent = { DATA: 0, DELETES: 1 } as const;
export type ManifestContent = (typeof ManifestContent)[keyof typeof ManifestContent];

/** One partition field's summary over every entry of a manifest (field 508 / record r508). */
export interface FieldSummary {
  readonly containsNull: boolean;
  /** Absent when the writer did not say (older writers). */
  readonly containsNan?: boolean;
  /** Appendix D bytes of the partition field's result type. */
  readonly lowerBound?: Uint8Array;
  readonly upperBound?: Uint8Array;
}

/** One row of a manifest list. Avro longs are bigint, ints number. */
export interface ManifestFile {
  readonly manifestPath: string;
  readonly manifestLength: bigint;
  readonly partitionSpecId: number;
  readonly content: ManifestContent;
  /** UNASSIGNED_SEQUENCE_NUMBER (-1n) until the manifest list of its commit assigns it. */
  readonly sequenceNumber: bigint;
  readonly minSequenceNumber: bigint;
  readonly addedSnapshotId: bigint;
  readonly addedFilesCount: number;
  readonly existingFilesCount: number;
  readonly deletedFilesCount: number;
  readonly addedRowsCount: bigint;
  readonly existingRowsCount: bigint;
  readonly deletedRowsCount: bigint;
  readonly partitions?: readonly FieldSummary[];
  readonly keyMetadata?: Uint8Array;
  /** v3 only (read, never written here). */
  readonly firstRowId?: bigint;
}

export interface ManifestListWriteOptions {
  readonly snapshotId: bigint;
  /** null/undefined for the first snapshot; written as the string "null" like Java. */
  readonly parentSnapshotId?: bigint | null;
  readonly sequenceNumber: bigint;
  /** New manifests of this commit (sequence numbers may be UNASSIGNED) and the parent's rows, verbatim. */
  readonly manifests: readonly ManifestFile[];
  /** Default 'deflate' (Java's default `write.avro.compression-codec` is gzip = Avro deflate). */
  readonly codec?: AvroCodec;
}

export interface WrittenManifestList {
  readonly bytes: Uint8Array;
  /** The rows as written (our new manifests with their sequence numbers assigned). */
  readonly manifests: readonly ManifestFile[];
}

/**
 * Assigns the commit's sequence number to manifests that do not have one yet (Java
 * `V2Metadata.ManifestFileWrapper`): only manifests added by this snapshot may be unassigned; anything
 * else is a broken invariant (FatalError).
 */
export function assignSequenceNumbers(manifests: readonly ManifestFile[], snapshotId: bigint, sequenceNumber: bigint): ManifestFile[] {
  return manifests.map((m) => {
    const seqUnassigned = m.sequenceNumber === UNASSIGNED_SEQUENCE_NUMBER;
    const minUnassigned = m.minSequenceNumber === UNASSIGNED_SEQUENCE_NUMBER;
    if (!seqUnassigned && !minUnassigned) return m;
    if (m.addedSnapshotId !== snapshotId) {
      throw new FatalError(`found unassigned sequence number for manifest ${m.manifestPath} from snapshot ${m.addedSnapshotId}, committing ${snapshotId}`);
    }
    return {
      ...m,
      sequenceNumber: seqUnassigned ? sequenceNumber : m.sequenceNumber,
      minSequenceNumber: minUnassigned ? sequenceNumber : m.minSequenceNumber,
    };
  });
}

const buf = (b: Uint8Array): Buffer => Buffer.from(b);

function toRecord(m: ManifestFile): Record<string, unknown> {
  return {
    manifest_path: m.manifestPath,
    manifest_length: m.manifestLength,
    partition_spec_id: m.partitionSpecId,
    content: m.content,
    sequence_number: m.sequenceNumber,
    min_sequence_number: m.minSequenceNumber,
    added_snapshot_id: m.addedSnapshotId,
    added_files_count: m.addedFilesCount,
    existing_files_count: m.existingFilesCount,
    deleted_files_count: m.deletedFilesCount,
    added_rows_count: m.addedRowsCount,
    existing_rows_count: m.existingRowsCount,
    deleted_rows_count: m.deletedRowsCount,
    partitions:
      m.partitions === undefined
        ? null
        : m.partitions.map((p) => ({
            contains_null: p.containsNull,
            contains_nan: p.containsNan ?? null,
            lower_bound: p.lowerBound === undefined ? null : buf(p.lowerBound),
            upper_bound: p.upperBound === undefined ? null : buf(p.upperBound),
          })),
    key_metadata: m.keyMetadata === undefined ? null : buf(m.keyMetadata),
  };
}

/** Writes a v2 manifest list (Avro bytes) after assigning this commit's sequence number. */
export function writeManifestList(opts: ManifestListWriteOptions): WrittenManifestList {
  const manifests = assignSequenceNumbers(opts.manifests, opts.snapshotId, opts.sequenceNumber);
  const parent = opts.parentSnapshotId ?? null;
  const bytes = encodeAvroContainer({
    schema: manifestFileSchemaV2(),
    metadata: {
      'snapshot-id': opts.snapshotId.toString(),
      'parent-snapshot-id': parent === null ? 'null' : parent.toString(),
      'sequence-number': opts.sequenceNumber.toString(),
      'format-version': '2',
    },
    records: manifests.map(toRecord),
    codec: opts.codec ?? 'deflate',
  });
  return { bytes, manifests };
}

export interface ManifestListHeader {
  readonly snapshotId?: bigint;
  readonly parentSnapshotId?: bigint;
  readonly sequenceNumber?: bigint;
  readonly formatVersion?: number;
  readonly codec: string;
}

function parseLongMeta(v: string | undefined): bigint | undefined {
  return v !== undefined && /^-?\d+$/.test(v) ? BigInt(v) : undefined;
}

type Rec = Record<string, unknown>;

function getter(rec: Rec, ids: Map<number, { name: string }>): (id: number, fallback: string) => unknown {
  return (id, fallback) => {
    const f = ids.get(id);
    const v = rec[f?.name ?? fallback];
    return v === undefined ? null : v;
  };
}

function bigOr(v: unknown, dflt: bigint): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return BigInt(v);
  return dflt;
}

function numOr(v: unknown, dflt: number): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  return dflt;
}

/** Reads a manifest list written by any engine. Missing v1 fields default as Java reads them
 *  (content data, sequence numbers 0); missing counts read as 0. */
export function readManifestList(bytes: Uint8Array): { header: ManifestListHeader; manifests: ManifestFile[] } {
  const c = decodeAvroContainer(bytes);
  const ids = avroFieldsById(c.schema);
  const fv = c.metadata.get('format-version');
  const sid = parseLongMeta(c.metadata.get('snapshot-id'));
  const psid = parseLongMeta(c.metadata.get('parent-snapshot-id'));
  const seq = parseLongMeta(c.metadata.get('sequence-number'));
  const header: ManifestListHeader = {
    codec: c.codec,
    ...(sid === undefined ? {} : { snapshotId: sid }),
    ...(psid === undefined ? {} : { parentSnapshotId: psid }),
    ...(seq === undefined ? {} : { sequenceNumber: seq }),
    ...(fv === undefined ? {} : { formatVersion: Number(fv) }),
  };
  const partitionsField = ids.get(507);
  const summaryIds = partitionsField === undefined ? new Map<number, { name: string }>() : avroFieldsById(elementRecord(partitionsField.type));
  const manifests = c.records.map((r) => {
    const rec = r as Rec;
    const get = getter(rec, ids);
    const path = get(500, 'manifest_path');
    if (typeof path !== 'string') throw malformed('manifest list', 'manifest_path missing');
    const m: { -readonly [K in keyof ManifestFile]: ManifestFile[K] } = {
      manifestPath: path,
      manifestLength: bigOr(get(501, 'manifest_length'), 0n),
      partitionSpecId: numOr(get(502, 'partition_spec_id'), 0),
      content: numOr(get(517, 'content'), 0) === 1 ? 1 : 0,
      sequenceNumber: bigOr(get(515, 'sequence_number'), 0n),
      minSequenceNumber: bigOr(get(516, 'min_sequence_number'), 0n),
      addedSnapshotId: bigOr(get(503, 'added_snapshot_id'), 0n),
      addedFilesCount: numOr(get(504, 'added_files_count'), 0),
      existingFilesCount: numOr(get(505, 'existing_files_count'), 0),
      deletedFilesCount: numOr(get(506, 'deleted_files_count'), 0),
      addedRowsCount: bigOr(get(512, 'added_rows_count'), 0n),
      existingRowsCount: bigOr(get(513, 'existing_rows_count'), 0n),
      deletedRowsCount: bigOr(get(514, 'deleted_rows_count'), 0n),
    };
    const parts = get(507, 'partitions');
    if (Array.isArray(parts)) {
      m.partitions = (parts as Rec[]).map((p) => {
        const g = getter(p, summaryIds);
        const nan = g(518, 'contains_nan');
        const lower = g(510, 'lower_bound');
        const upper = g(511, 'upper_bound');
        return {
          containsNull: g(509, 'contains_null') === true,
          ...(typeof nan === 'boolean' ? { containsNan: nan } : {}),
          ...(lower instanceof Uint8Array ? { lowerBound: copyBytes(lower) } : {}),
          ...(upper instanceof Uint8Array ? { upperBound: copyBytes(upper) } : {}),
        };
      });
    }
    const key = get(519, 'key_metadata');
    if (key instanceof Uint8Array) m.keyMetadata = copyBytes(key);
    const firstRowId = get(520, 'first_row_id');
    if (typeof firstRowId === 'bigint') m.firstRowId = firstRowId;
    return m;
  });
  return { header, manifests };
}

/** The record schema inside `["null", {type: array, items: record}]`. */
function elementRecord(t: unknown): unknown {
  const branches = Array.isArray(t) ? (t as unknown[]) : [t];
  for (const b of branches) {
    if (typeof b === 'object' && b !== null && (b as { type?: unknown }).type === 'array') return (b as { items?: unknown }).items;
  }
  return undefined;
}
