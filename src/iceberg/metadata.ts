/**
 * Table metadata (spec "Table Metadata", v2; v1 read compatibility): the model (its JSON codec, lossless
 * for int64 snapshot ids and sequence numbers, is metadata-json.ts), snapshots with summaries, refs,
 * snapshot-log and metadata-log, plus the helpers the commit path needs: current snapshot, branch
 * ancestry, "newest snapshot in the ancestry carrying summary key K" (how the exactly-once protocol
 * reads applied control positions), Java's snapshot id derivation from a random UUID, and
 * `newTableMetadata` (what a Java/REST catalog builds on create, needed by the SQL catalog).
 *
 * Owns: the document shape and read-only queries over it. Changes go through apply-updates.ts `applyUpdates`.
 * Must not: do I/O, read the clock (callers pass `nowMs`), or generate randomness (callers pass UUIDs).
 *
 * Timestamps (`*-ms`) are numbers (ms since epoch fits 2^53); ids and sequence numbers are bigint.
 * Unknown top-level keys of a parsed document are kept in `extra` (metadata-json.ts writes them back).
 */
import { ConfigError } from '../core/errors.ts';
import { bigintFromBytes, isUuid, uuidToBytes } from './bytes.ts';
import { malformed } from './json-util.ts';
import { freshPartitionSpec, lastAssignedPartitionId, unpartitionedSpec, validatePartitionSpec, type PartitionSpec } from './partition-spec.ts';
import { assignFreshIds, maxFieldId, SchemaIndex } from './schema.ts';
import type { Transform } from './transforms.ts';
import type { Schema } from './types.ts';

// ---------------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------------

export interface SortField {
  readonly transform: Transform;
  readonly sourceId: number;
  readonly direction: 'asc' | 'desc';
  readonly nullOrder: 'nulls-first' | 'nulls-last';
}

export interface SortOrder {
  readonly orderId: number;
  readonly fields: readonly SortField[];
}

export const UNSORTED_ORDER: SortOrder = { orderId: 0, fields: [] };

/** Snapshot summary: string values; `operation` is one of append, replace, overwrite, delete. */
export type SnapshotSummary = Readonly<Record<string, string>>;

export interface Snapshot {
  readonly snapshotId: bigint;
  readonly parentSnapshotId?: bigint;
  readonly sequenceNumber: bigint;
  readonly timestampMs: number;
  readonly manifestList: string;
  /** Includes `operation`. */
  readonly summary: SnapshotSummary;
  readonly schemaId?: number;
  /** v3 row lineage. */
  readonly firstRowId?: bigint;
  readonly addedRows?: bigint;
}

export interface SnapshotRef {
  readonly snapshotId: bigint;
  readonly type: 'branch' | 'tag';
  readonly minSnapshotsToKeep?: number;
  readonly maxSnapshotAgeMs?: number;
  readonly maxRefAgeMs?: number;
}

export interface SnapshotLogEntry {
  readonly timestampMs: number;
  readonly snapshotId: bigint;
}

export interface MetadataLogEntry {
  readonly timestampMs: number;
  readonly metadataFile: string;
}

export interface TableMetadata {
  readonly formatVersion: 1 | 2 | 3;
  readonly tableUuid: string;
  readonly location: string;
  readonly lastSequenceNumber: bigint;
  readonly lastUpdatedMs: number;
  readonly lastColumnId: number;
  readonly schemas: readonly Schema[];
  readonly currentSchemaId: number;
  readonly partitionSpecs: readonly PartitionSpec[];
  readonly defaultSpecId: number;
  readonly lastPartitionId: number;
  readonly properties: Readonly<Record<string, string>>;
  /** null when the table has no current snapshot (written as -1 in v1/v2 and null in v3, as Java does). */
  readonly currentSnapshotId: bigint | null;
  readonly snapshots: readonly Snapshot[];
  readonly snapshotLog: readonly SnapshotLogEntry[];
  readonly metadataLog: readonly MetadataLogEntry[];
  readonly sortOrders: readonly SortOrder[];
  readonly defaultSortOrderId: number;
  readonly refs: Readonly<Record<string, SnapshotRef>>;
  /** Kept verbatim (lossless JSON values). */
  readonly statistics: readonly unknown[];
  readonly partitionStatistics: readonly unknown[];
  /** v3 row lineage. */
  readonly nextRowId?: bigint;
  /** Unknown top-level keys, written back as they came. */
  readonly extra: Readonly<Record<string, unknown>>;
}

export const MAIN_BRANCH = 'main';
export const INITIAL_SEQUENCE_NUMBER = 0n;
/** `write.metadata.previous-versions-max` default: metadata-log length cap. */
export const DEFAULT_PREVIOUS_VERSIONS_MAX = 100;

// ---------------------------------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------------------------------

export function schemaById(md: TableMetadata, id: number): Schema | undefined {
  return md.schemas.find((s) => s.schemaId === id);
}

export function currentSchema(md: TableMetadata): Schema {
  const s = schemaById(md, md.currentSchemaId);
  if (s === undefined) throw malformed('table metadata', `current schema ${md.currentSchemaId} is missing`);
  return s;
}

export function specById(md: TableMetadata, id: number): PartitionSpec | undefined {
  return md.partitionSpecs.find((s) => s.specId === id);
}

export function defaultSpec(md: TableMetadata): PartitionSpec {
  const s = specById(md, md.defaultSpecId);
  if (s === undefined) throw malformed('table metadata', `default spec ${md.defaultSpecId} is missing`);
  return s;
}

export function sortOrderById(md: TableMetadata, id: number): SortOrder | undefined {
  return md.sortOrders.find((s) => s.orderId === id);
}

export function snapshotById(md: TableMetadata, id: bigint): Snapshot | undefined {
  return md.snapshots.find((s) => s.snapshotId === id);
}

/** The snapshot a branch or tag points at, if the ref exists and its snapshot is present. */
export function refSnapshot(md: TableMetadata, ref: string = MAIN_BRANCH): Snapshot | undefined {
  const r = md.refs[ref];
  return r === undefined ? undefined : snapshotById(md, r.snapshotId);
}

/**
 * The id of the snapshot a commit to `branch` builds on: the branch's head; for a branch that does not
 * exist yet, main's head, so that the first commit creates the branch as a fork of main (Java
 * `SnapshotUtil.latestSnapshot`, which `SnapshotProducer` uses for `toBranch`). Undefined when there is
 * nothing to build on (an empty table, or neither the branch nor main exists).
 */
export function commitBaseId(md: TableMetadata, branch: string = MAIN_BRANCH): bigint | undefined {
  // Refs only: parsing adds main's ref for metadata that has a current snapshot but no refs (v1).
  return (md.refs[branch] ?? md.refs[MAIN_BRANCH])?.snapshotId;
}

/** The current snapshot (the head of main), or undefined for an empty table. */
export function currentSnapshot(md: TableMetadata): Snapshot | undefined {
  const main = md.refs[MAIN_BRANCH];
  const id = main?.snapshotId ?? md.currentSnapshotId;
  return id === null ? undefined : snapshotById(md, id);
}

/** The snapshot and its ancestors, newest first, while each parent is still in the metadata. */
export function* ancestors(md: TableMetadata, startId: bigint | undefined): Generator<Snapshot> {
  const byId = new Map(md.snapshots.map((s) => [s.snapshotId, s] as const));
  let id = startId;
  const seen = new Set<bigint>();
  while (id !== undefined && !seen.has(id)) {
    seen.add(id);
    const s = byId.get(id);
    if (s === undefined) return;
    yield s;
    id = s.parentSnapshotId;
  }
}

/** Ancestry of a branch head (newest first). Empty when the branch does not exist. */
export function branchAncestry(md: TableMetadata, branch: string = MAIN_BRANCH): Snapshot[] {
  return [...ancestors(md, md.refs[branch]?.snapshotId)];
}

export interface AncestrySearch {
  /** The newest snapshot of the branch's ancestry whose summary has the key. */
  readonly snapshot?: Snapshot;
  readonly value?: string;
  /** Snapshots examined. */
  readonly scanned: number;
  /** True when the walk ended at a parent id that is no longer in the metadata (expired), so an absent
   *  key does not prove the table never had it: fail closed. */
  readonly truncated: boolean;
}

/**
 * Finds the newest snapshot in a branch's ancestry whose summary carries `key` (architecture: "reads the
 * positions from the newest snapshot in the branch's ancestry that carries them"; other writers may have
 * committed snapshots without them). Reports whether the ancestry was cut short by expiry. A branch that
 * does not exist yet is searched from where its first commit will fork (`commitBaseId`: main's head).
 */
export function findInAncestry(md: TableMetadata, key: string, branch: string = MAIN_BRANCH): AncestrySearch {
  let scanned = 0;
  let last: Snapshot | undefined;
  const head = commitBaseId(md, branch);
  for (const s of ancestors(md, head)) {
    scanned++;
    last = s;
    const value = s.summary[key];
    if (value !== undefined) return { snapshot: s, value, scanned, truncated: false };
  }
  const truncated = head !== undefined && (last === undefined || (last.parentSnapshotId !== undefined && snapshotById(md, last.parentSnapshotId) === undefined));
  return { scanned, truncated };
}

/** The snapshot summary's operation (`append`, `overwrite`, ...), if present. */
export function snapshotOperation(s: Snapshot): string | undefined {
  return s.summary['operation'];
}

/**
 * Java `SnapshotIdGeneratorUtil.generateSnapshotID`: a type-4 UUID's two 64-bit halves XORed, sign bit
 * masked off, so ids are positive and random. The caller supplies the UUID (this module has no randomness).
 */
export function snapshotIdFromUuid(uuid: string | Uint8Array): bigint {
  const b = typeof uuid === 'string' ? uuidToBytes(uuid) : uuid;
  if (b.length !== 16) throw new TypeError('a UUID has 16 bytes');
  const msb = bigintFromBytes(b.subarray(0, 8));
  const lsb = bigintFromBytes(b.subarray(8, 16));
  return (msb ^ lsb) & 0x7fffffffffffffffn;
}

// ---------------------------------------------------------------------------------------------------
// File names
// ---------------------------------------------------------------------------------------------------

/** Joins a table location and a relative path with exactly one `/` (a `//` broke S3 Tables, proton#1221). */
export function joinLocation(base: string, rel: string): string {
  return `${base.replace(/\/+$/, '')}/${rel.replace(/^\/+/, '')}`;
}

/** The metadata directory (`write.metadata.path` if set, else `<location>/metadata`). */
export function metadataDir(md: Pick<TableMetadata, 'location' | 'properties'>): string {
  return (md.properties['write.metadata.path'] ?? joinLocation(md.location, 'metadata')).replace(/\/+$/, '');
}

/** `<metadata dir>/<NNNNN>-<uuid>.metadata.json`, Java's name for metastore-style catalogs. */
export function metadataFilePath(md: Pick<TableMetadata, 'location' | 'properties'>, version: number, uuid: string): string {
  if (!isUuid(uuid)) throw new TypeError(`not a UUID: ${uuid}`);
  return joinLocation(metadataDir(md), `${String(version).padStart(5, '0')}-${uuid}.metadata.json`);
}

/** Version number of a metadata file name (`00042-<uuid>.metadata.json` or `v42.metadata.json`), or -1. */
export function parseMetadataVersion(path: string): number {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const m = /^(\d+)-.*\.metadata\.json$/.exec(name) ?? /^v(\d+)(?:\.gz)?\.metadata\.json$/.exec(name);
  return m ? Number(m[1]) : -1;
}

// ---------------------------------------------------------------------------------------------------
// Creating a table
// ---------------------------------------------------------------------------------------------------

export interface NewTableOptions {
  readonly schema: Schema;
  readonly spec?: PartitionSpec;
  readonly sortOrder?: SortOrder;
  readonly location: string;
  readonly properties?: Readonly<Record<string, string>>;
  readonly tableUuid: string;
  readonly nowMs: number;
  readonly formatVersion?: 1 | 2 | 3;
}

/**
 * What a Java/REST catalog builds on create (`TableMetadata.newTableMetadata`): the schema renumbered with
 * fresh ids from 1 (top-level fields first, then nested), schema id 0, the spec rebuilt by column name
 * with field ids from 1000 and spec id 0, the sort order remapped (order id 1 when sorted, 0 unsorted),
 * no snapshots. The reserved `format-version` property selects the version and is not stored.
 */
export function newTableMetadata(opts: NewTableOptions): TableMetadata {
  const props = { ...(opts.properties ?? {}) };
  let formatVersion = opts.formatVersion ?? 2;
  const fv = props['format-version'];
  if (fv !== undefined) {
    const n = Number(fv);
    if (n !== 1 && n !== 2 && n !== 3) throw new ConfigError(`unsupported format-version property ${fv}`);
    formatVersion = n;
    delete props['format-version'];
  }
  let last = 0;
  const freshSchema = assignFreshIds(opts.schema, () => ++last, 0);
  const spec = opts.spec === undefined ? unpartitionedSpec(0) : freshPartitionSpec(opts.spec, opts.schema, freshSchema, 0);
  validatePartitionSpec(spec, freshSchema);
  let sortOrder = UNSORTED_ORDER;
  if (opts.sortOrder !== undefined && opts.sortOrder.fields.length > 0) {
    const oldIndex = new SchemaIndex(opts.schema);
    const newIndex = new SchemaIndex(freshSchema);
    sortOrder = {
      orderId: 1,
      fields: opts.sortOrder.fields.map((f) => {
        const name = oldIndex.columnName(f.sourceId);
        const nf = name === undefined ? undefined : newIndex.findByName(name);
        if (nf === undefined) throw new ConfigError(`sort field source id ${f.sourceId} is not in the schema`);
        return { ...f, sourceId: nf.id };
      }),
    };
  }
  return {
    formatVersion,
    tableUuid: opts.tableUuid,
    location: opts.location.replace(/\/+$/, ''),
    lastSequenceNumber: INITIAL_SEQUENCE_NUMBER,
    lastUpdatedMs: opts.nowMs,
    lastColumnId: Math.max(last, maxFieldId(freshSchema)),
    schemas: [freshSchema],
    currentSchemaId: 0,
    partitionSpecs: [spec],
    defaultSpecId: 0,
    lastPartitionId: lastAssignedPartitionId(spec),
    properties: props,
    currentSnapshotId: null,
    snapshots: [],
    snapshotLog: [],
    metadataLog: [],
    sortOrders: [sortOrder],
    defaultSortOrderId: sortOrder.orderId,
    refs: {},
    statistics: [],
    partitionStatistics: [],
    ...(formatVersion >= 3 ? { nextRowId: 0n } : {}),
    extra: {},
  };
}
