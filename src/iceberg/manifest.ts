/**
 * Manifests (spec "Manifests"; reference iceberg-writer.md §1.5): writing v2 manifests as Java does
 * (Avro record `manifest_entry` / `r2` / `r102`, header keys schema, schema-id, partition-spec (the fields
 * array only, apache/iceberg#13895), partition-spec-id, format-version, content), computing the
 * manifest's ManifestFile row (counts, min sequence number, partition field summaries), and reading
 * manifests written by any engine, with sequence-number / snapshot-id inheritance.
 *
 * Inheritance (spec "Sequence Number Inheritance"): entries ADDED by the committing snapshot carry null
 * `sequence_number` and `file_sequence_number`; they inherit the manifest list's value, so a manifest can
 * be reused unchanged when a conflicting commit forces a new sequence number. Their `snapshot_id` is
 * written explicitly (as Java does) unless the caller passes null.
 *
 * Owns: manifest bytes <-> entries. Must not: do I/O, or truncate partition summary bounds (Java
 * writes exact min/max of the partition values; NaN never becomes a bound).
 */
import { parseJson, stringifyJson } from '../core/json.ts';
import { bigintFromBytes, bigintToFixedBytes, copyBytes } from './bytes.ts';
import { decodeAvroContainer, encodeAvroContainer, type AvroCodec } from './avro.ts';
import { toBoundBytes } from './bounds.ts';
import { EntryStatus, FileContent, type DataFile, type ManifestEntry } from './data-file.ts';
import { malformed } from './json-util.ts';
import { ManifestContent, UNASSIGNED_SEQUENCE_NUMBER, type FieldSummary, type ManifestFile } from './manifest-list.ts';
import { avroFieldsById, decimalRequiredBytes, isValidAvroName, manifestEntrySchemaV2, sanitizeAvroName } from './manifest-schemas.ts';
import { partitionFieldsToJson, partitionResultTypes, partitionSpecFromJson, partitionType, type PartitionSpec } from './partition-spec.ts';
import { schemaFromJson, schemaToJson } from './schema.ts';
import { compareValues } from './transforms.ts';
import type { PartitionValue, PrimitiveType, PrimitiveValue, Schema } from './types.ts';

export interface ManifestWriteOptions {
  /** Where the manifest will be stored (`<table>/metadata/<uuid>-m0.avro`); echoed in the ManifestFile. */
  readonly path: string;
  /** The table schema the files were written with (header `schema`, `schema-id`). */
  readonly schema: Schema;
  readonly spec: PartitionSpec;
  /** The snapshot that writes this manifest (its `added_snapshot_id`). */
  readonly snapshotId: bigint;
  readonly entries: readonly ManifestEntry[];
  /** DATA (default) or DELETES; a manifest never mixes data and delete files. */
  readonly content?: ManifestContent;
  /** Default 'deflate', Java's default. */
  readonly codec?: AvroCodec;
}

export interface WrittenManifest {
  readonly bytes: Uint8Array;
  /** The manifest-list row for it; sequence numbers UNASSIGNED until the list writer assigns them. */
  readonly manifest: ManifestFile;
}

/** ADDED entries for new files: snapshot id explicit (null to inherit), sequence numbers inherited. */
export function addedEntries(files: readonly DataFile[], snapshotId: bigint | null): ManifestEntry[] {
  return files.map((dataFile) => ({ status: EntryStatus.ADDED, snapshotId, sequenceNumber: null, fileSequenceNumber: null, dataFile }));
}

/** Partition value (transforms.ts representation) -> the Avro value of its result type. */
function toAvroPartitionValue(type: PrimitiveType, v: PartitionValue, name: string): unknown {
  if (v === null) return null;
  const wrong = (): TypeError => new TypeError(`partition field ${name}: value ${String(v)} does not fit ${type.kind}`);
  switch (type.kind) {
    case 'decimal':
      if (typeof v !== 'bigint') throw wrong();
      return Buffer.from(bigintToFixedBytes(v, decimalRequiredBytes(type.precision)));
    case 'uuid':
    case 'fixed':
    case 'binary':
      if (!(v instanceof Uint8Array)) throw wrong();
      return Buffer.from(v);
    case 'int':
    case 'date':
      if (typeof v !== 'number' || !Number.isInteger(v)) throw wrong();
      return v;
    default:
      return v;
  }
}

function intMapRecords(m: ReadonlyMap<number, bigint> | undefined): unknown {
  return m === undefined ? null : [...m].map(([key, value]) => ({ key, value }));
}

function bytesMapRecords(m: ReadonlyMap<number, Uint8Array> | undefined): unknown {
  return m === undefined ? null : [...m].map(([key, value]) => ({ key, value: Buffer.from(value) }));
}

class SummaryBuilder {
  private containsNull = false;
  private containsNan = false;
  private min: PrimitiveValue | undefined;
  private max: PrimitiveValue | undefined;
  private readonly type: PrimitiveType;
  constructor(type: PrimitiveType) {
    this.type = type;
  }
  update(v: PartitionValue): void {
    if (v === null) this.containsNull = true;
    else if (typeof v === 'number' && Number.isNaN(v)) this.containsNan = true;
    else {
      if (this.min === undefined || compareValues(this.type, v, this.min) < 0) this.min = v;
      if (this.max === undefined || compareValues(this.type, this.max, v) < 0) this.max = v;
    }
  }
  build(): FieldSummary {
    return {
      containsNull: this.containsNull,
      containsNan: this.containsNan,
      ...(this.min === undefined ? {} : { lowerBound: toBoundBytes(this.type, this.min) }),
      ...(this.max === undefined ? {} : { upperBound: toBoundBytes(this.type, this.max) }),
    };
  }
}

/** Writes one v2 manifest. Throws TypeError when an entry does not fit the spec or the content kind. */
export function writeManifest(opts: ManifestWriteOptions): WrittenManifest {
  const content = opts.content ?? ManifestContent.DATA;
  const pType = partitionType(opts.spec, opts.schema);
  const resultTypes = partitionResultTypes(opts.spec, opts.schema);
  const summaries = resultTypes.map((t) => new SummaryBuilder(t));
  let added = 0;
  let existing = 0;
  let deleted = 0;
  let addedRows = 0n;
  let existingRows = 0n;
  let deletedRows = 0n;
  let minSeq: bigint | undefined;

  const records = opts.entries.map((e) => {
    const f = e.dataFile;
    const isDelete = f.content !== FileContent.DATA;
    if (isDelete !== (content === ManifestContent.DELETES)) {
      throw new TypeError(`${f.filePath}: a ${content === ManifestContent.DATA ? 'data' : 'delete'} manifest cannot hold content ${f.content}`);
    }
    if (f.specId !== opts.spec.specId) throw new TypeError(`${f.filePath}: written for spec ${f.specId}, manifest spec is ${opts.spec.specId}`);
    if (f.partition.length !== opts.spec.fields.length) {
      throw new TypeError(`${f.filePath}: partition tuple has ${f.partition.length} values, spec ${opts.spec.specId} has ${opts.spec.fields.length} fields`);
    }
    if (e.status !== EntryStatus.ADDED && (e.snapshotId === null || e.sequenceNumber === null || e.fileSequenceNumber === null)) {
      // Spec: only ADDED entries may inherit; EXISTING/DELETED carry their original values explicitly.
      throw new TypeError(`${f.filePath}: an EXISTING or DELETED entry needs explicit snapshot id and sequence numbers`);
    }
    if (e.status === EntryStatus.ADDED) {
      added++;
      addedRows += f.recordCount;
    } else if (e.status === EntryStatus.EXISTING) {
      existing++;
      existingRows += f.recordCount;
    } else {
      deleted++;
      deletedRows += f.recordCount;
    }
    if (e.status !== EntryStatus.DELETED && e.sequenceNumber !== null && (minSeq === undefined || e.sequenceNumber < minSeq)) minSeq = e.sequenceNumber;
    const partition: Record<string, unknown> = {};
    opts.spec.fields.forEach((pf, i) => {
      const v = f.partition[i] as PartitionValue;
      summaries[i]?.update(v);
      const avroName = (pType.fields[i] as { name: string }).name;
      partition[isValidAvroName(avroName) ? avroName : sanitizeAvroName(avroName)] = toAvroPartitionValue(resultTypes[i] as PrimitiveType, v, pf.name);
    });
    return {
      status: e.status,
      snapshot_id: e.snapshotId,
      sequence_number: e.sequenceNumber,
      file_sequence_number: e.fileSequenceNumber,
      data_file: {
        content: f.content,
        file_path: f.filePath,
        file_format: f.fileFormat,
        partition,
        record_count: f.recordCount,
        file_size_in_bytes: f.fileSizeInBytes,
        column_sizes: intMapRecords(f.columnSizes),
        value_counts: intMapRecords(f.valueCounts),
        null_value_counts: intMapRecords(f.nullValueCounts),
        nan_value_counts: intMapRecords(f.nanValueCounts),
        lower_bounds: bytesMapRecords(f.lowerBounds),
        upper_bounds: bytesMapRecords(f.upperBounds),
        key_metadata: f.keyMetadata === undefined ? null : Buffer.from(f.keyMetadata),
        split_offsets: f.splitOffsets === undefined ? null : [...f.splitOffsets],
        equality_ids: f.equalityIds === undefined ? null : [...f.equalityIds],
        sort_order_id: f.sortOrderId ?? null,
        referenced_data_file: f.referencedDataFile ?? null,
      },
    };
  });

  const bytes = encodeAvroContainer({
    schema: manifestEntrySchemaV2(pType),
    metadata: {
      schema: stringifyJson(schemaToJson(opts.schema)),
      'schema-id': String(opts.schema.schemaId),
      'partition-spec': stringifyJson(partitionFieldsToJson(opts.spec)),
      'partition-spec-id': String(opts.spec.specId),
      'format-version': '2',
      content: content === ManifestContent.DATA ? 'data' : 'deletes',
    },
    records,
    codec: opts.codec ?? 'deflate',
  });

  const manifest: ManifestFile = {
    manifestPath: opts.path,
    manifestLength: BigInt(bytes.length),
    partitionSpecId: opts.spec.specId,
    content,
    sequenceNumber: UNASSIGNED_SEQUENCE_NUMBER,
    minSequenceNumber: minSeq ?? UNASSIGNED_SEQUENCE_NUMBER,
    addedSnapshotId: opts.snapshotId,
    addedFilesCount: added,
    existingFilesCount: existing,
    deletedFilesCount: deleted,
    addedRowsCount: addedRows,
    existingRowsCount: existingRows,
    deletedRowsCount: deletedRows,
    partitions: summaries.map((s) => s.build()),
  };
  return { bytes, manifest };
}

// ---------------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------------

export interface ManifestHeader {
  /** The table schema the manifest was written with, when the header has it. */
  readonly schema?: Schema;
  readonly schemaId?: number;
  /** The partition spec (from `partition-spec` + `partition-spec-id`), when the header has it. */
  readonly spec?: PartitionSpec;
  readonly specId: number;
  readonly formatVersion: number;
  readonly content: ManifestContent;
  readonly codec: string;
}

export interface ReadManifestOptions {
  /** The manifest-list row this manifest came from: fills null snapshot ids and sequence numbers
   *  (spec inheritance). Without it, nulls stay null. */
  readonly inheritFrom?: ManifestFile;
}

type Rec = Record<string, unknown>;

function nonNullBranch(t: unknown): unknown {
  if (Array.isArray(t)) return (t as unknown[]).find((b) => b !== 'null');
  return t;
}

function fromAvroPartitionValue(avroType: unknown, v: unknown): PartitionValue {
  if (v === null || v === undefined) return null;
  const t = nonNullBranch(avroType);
  const logical = typeof t === 'object' && t !== null ? (t as { logicalType?: unknown }).logicalType : undefined;
  if (v instanceof Uint8Array) return logical === 'decimal' ? bigintFromBytes(v) : copyBytes(v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'string' || typeof v === 'boolean') return v;
  throw malformed('manifest', 'unsupported partition value');
}

function readIntMap(v: unknown): Map<number, bigint> | undefined {
  if (v === null || v === undefined) return undefined;
  const out = new Map<number, bigint>();
  if (Array.isArray(v)) for (const kv of v as Rec[]) out.set(Number(kv['key']), BigInt(kv['value'] as bigint | number));
  else for (const [k, x] of Object.entries(v as Rec)) out.set(Number(k), BigInt(x as bigint | number));
  return out;
}

function readBytesMap(v: unknown): Map<number, Uint8Array> | undefined {
  if (v === null || v === undefined) return undefined;
  const out = new Map<number, Uint8Array>();
  if (Array.isArray(v)) for (const kv of v as Rec[]) out.set(Number(kv['key']), copyBytes(kv['value'] as Uint8Array));
  else for (const [k, x] of Object.entries(v as Rec)) out.set(Number(k), copyBytes(x as Uint8Array));
  return out;
}

/** Reads a manifest written by any engine (v1-v3; codecs null, deflate, snappy, zstandard). */
export function readManifest(bytes: Uint8Array, options: ReadManifestOptions = {}): { header: ManifestHeader; entries: ManifestEntry[] } {
  const c = decodeAvroContainer(bytes);
  const meta = c.metadata;
  const specIdText = meta.get('partition-spec-id');
  const specId = specIdText !== undefined && /^\d+$/.test(specIdText) ? Number(specIdText) : (options.inheritFrom?.partitionSpecId ?? 0);
  let schema: Schema | undefined;
  const schemaText = meta.get('schema');
  if (schemaText !== undefined) schema = schemaFromJson(parseJson(schemaText));
  let spec: PartitionSpec | undefined;
  const specText = meta.get('partition-spec');
  if (specText !== undefined) spec = partitionSpecFromJson(parseJson(specText), specId);
  const contentText = meta.get('content');
  const schemaIdText = meta.get('schema-id');
  const header: ManifestHeader = {
    specId,
    formatVersion: Number(meta.get('format-version') ?? '1'),
    content: contentText === 'deletes' ? ManifestContent.DELETES : ManifestContent.DATA,
    codec: c.codec,
    ...(schema === undefined ? {} : { schema }),
    ...(schemaIdText !== undefined && /^\d+$/.test(schemaIdText) ? { schemaId: Number(schemaIdText) } : {}),
    ...(spec === undefined ? {} : { spec }),
  };

  const entryIds = avroFieldsById(c.schema);
  const dataFileField = entryIds.get(2);
  if (dataFileField === undefined) throw malformed('manifest', 'no data_file (field 2) in the Avro schema');
  const fileIds = avroFieldsById(nonNullBranch(dataFileField.type));
  const partField = fileIds.get(102);
  const partRecord = partField === undefined ? undefined : nonNullBranch(partField.type);
  const partIds = avroFieldsById(partRecord);
  // Order partition values as the spec lists its fields (falls back to the Avro record's order).
  const partOrder: { name: string; type: unknown }[] =
    spec !== undefined && spec.fields.every((f) => partIds.has(f.fieldId))
      ? spec.fields.map((f) => partIds.get(f.fieldId) as { name: string; type: unknown })
      : [...partIds.values()];
  const name = (ids: Map<number, { name: string }>, id: number, fallback: string): string => ids.get(id)?.name ?? fallback;
  const inherit = options.inheritFrom;

  const entries = c.records.map((r) => {
    const rec = r as Rec;
    const df = rec[dataFileField.name] as Rec;
    const status = Number(rec[name(entryIds, 0, 'status')]) as EntryStatus;
    let snapshotId = (rec[name(entryIds, 1, 'snapshot_id')] ?? null) as bigint | null;
    let sequenceNumber = (rec[name(entryIds, 3, 'sequence_number')] ?? null) as bigint | null;
    let fileSequenceNumber = (rec[name(entryIds, 4, 'file_sequence_number')] ?? null) as bigint | null;
    if (inherit !== undefined) {
      snapshotId ??= inherit.addedSnapshotId;
      // Spec: null sequence numbers inherit only for ADDED entries, or in manifests of v1 (seq 0).
      if (status === EntryStatus.ADDED || inherit.sequenceNumber === 0n) {
        sequenceNumber ??= inherit.sequenceNumber;
        fileSequenceNumber ??= inherit.sequenceNumber;
      }
    }
    const partRec = (df[partField?.name ?? 'partition'] ?? {}) as Rec;
    const g = (id: number, fallback: string): unknown => df[name(fileIds, id, fallback)] ?? null;
    const filePath = g(100, 'file_path');
    if (typeof filePath !== 'string') throw malformed('manifest', 'file_path missing');
    const contentV = g(134, 'content');
    const dataFile: { -readonly [K in keyof DataFile]: DataFile[K] } = {
      content: (typeof contentV === 'number' ? contentV : 0) as FileContent,
      filePath,
      fileFormat: String(g(101, 'file_format')),
      specId,
      partition: partOrder.map((p) => fromAvroPartitionValue(p.type, partRec[p.name])),
      recordCount: BigInt(g(103, 'record_count') as bigint),
      fileSizeInBytes: BigInt(g(104, 'file_size_in_bytes') as bigint),
    };
    const cs = readIntMap(g(108, 'column_sizes'));
    if (cs) dataFile.columnSizes = cs;
    const vc = readIntMap(g(109, 'value_counts'));
    if (vc) dataFile.valueCounts = vc;
    const nc = readIntMap(g(110, 'null_value_counts'));
    if (nc) dataFile.nullValueCounts = nc;
    const nan = readIntMap(g(137, 'nan_value_counts'));
    if (nan) dataFile.nanValueCounts = nan;
    const lb = readBytesMap(g(125, 'lower_bounds'));
    if (lb) dataFile.lowerBounds = lb;
    const ub = readBytesMap(g(128, 'upper_bounds'));
    if (ub) dataFile.upperBounds = ub;
    const km = g(131, 'key_metadata');
    if (km instanceof Uint8Array) dataFile.keyMetadata = copyBytes(km);
    const so = g(132, 'split_offsets');
    if (Array.isArray(so)) dataFile.splitOffsets = (so as (bigint | number)[]).map((x) => BigInt(x));
    const eq = g(135, 'equality_ids');
    if (Array.isArray(eq)) dataFile.equalityIds = (eq as number[]).map(Number);
    const sort = g(140, 'sort_order_id');
    if (typeof sort === 'number') dataFile.sortOrderId = sort;
    const ref = g(143, 'referenced_data_file');
    if (typeof ref === 'string') dataFile.referencedDataFile = ref;
    return { status, snapshotId, sequenceNumber, fileSequenceNumber, dataFile };
  });
  return { header, entries };
}

