/**
 * Table metadata (spec "Table Metadata", v2; v1 read compatibility): the model, its JSON codec through
 * core/json.ts (lossless int64: snapshot ids and sequence numbers are bigint), snapshots with summaries,
 * refs, snapshot-log and metadata-log, plus the helpers the commit path needs: current snapshot, branch
 * ancestry, "newest snapshot in the ancestry carrying summary key K" (how the exactly-once protocol
 * reads applied control positions), Java's snapshot id derivation from a random UUID, and
 * `newTableMetadata` (what a Java/REST catalog builds on create, needed by the SQL catalog).
 *
 * Owns: the document shape and read-only queries over it. Changes go through apply-updates.ts `applyUpdates`.
 * Must not: do I/O, read the clock (callers pass `nowMs`), or generate randomness (callers pass UUIDs).
 *
 * Timestamps (`*-ms`) are numbers (ms since epoch fits 2^53); ids and sequence numbers are bigint.
 * Unknown top-level keys of a parsed document are kept in `extra` and written back unchanged.
 */
import { ConfigError } from '../core/errors.ts';
import { parseJson, stringifyJson } from '../core/json.ts';
import { bigintFromBytes, isUuid, uuidToBytes } from './bytes.ts';
import {
  asArray,
  asObject,
  malformed,
  optInt,
  optLong,
  optString,
  reqInt,
  reqLong,
  reqString,
  stringMap,
  type JsonObject,
} from './json-util.ts';
import {
  freshPartitionSpec,
  lastAssignedPartitionId,
  partitionFieldsToJson,
  partitionSpecFromJson,
  partitionSpecToJson,
  unpartitionedSpec,
  UNPARTITIONED_LAST_PARTITION_ID,
  validatePartitionSpec,
  type PartitionSpec,
} from './partition-spec.ts';
import { assignFreshIds, maxFieldId, schemaFromJson, schemaToJson, SchemaIndex } from './schema.ts';
import { parseTransform, transformToString, type Transform } from './transforms.ts';
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
// JSON: sort orders, snapshots, refs
// ---------------------------------------------------------------------------------------------------

export function sortOrderToJson(o: SortOrder): Record<string, unknown> {
  return {
    'order-id': o.orderId,
    fields: o.fields.map((f) => ({ transform: transformToString(f.transform), 'source-id': f.sourceId, direction: f.direction, 'null-order': f.nullOrder })),
  };
}

export function sortOrderFromJson(json: unknown): SortOrder {
  const o = asObject(json, 'sort order');
  return {
    orderId: reqInt(o, 'order-id', 'sort order'),
    fields: asArray(o['fields'], 'sort order fields').map((fj) => {
      const f = asObject(fj, 'sort field');
      const direction = reqString(f, 'direction', 'sort field').toLowerCase();
      const nullOrder = reqString(f, 'null-order', 'sort field').toLowerCase();
      if (direction !== 'asc' && direction !== 'desc') throw malformed('sort field', `direction ${direction}`);
      if (nullOrder !== 'nulls-first' && nullOrder !== 'nulls-last') throw malformed('sort field', `null-order ${nullOrder}`);
      return { transform: parseTransform(reqString(f, 'transform', 'sort field')), sourceId: reqInt(f, 'source-id', 'sort field'), direction, nullOrder };
    }),
  };
}

/** Java `SnapshotParser` layout (key order included); `operation` first in the summary. */
export function snapshotToJson(s: Snapshot): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  // Java writes sequence-number first, and only when > 0 (v1 snapshots have none).
  if (s.sequenceNumber > INITIAL_SEQUENCE_NUMBER) o['sequence-number'] = s.sequenceNumber;
  o['snapshot-id'] = s.snapshotId;
  if (s.parentSnapshotId !== undefined) o['parent-snapshot-id'] = s.parentSnapshotId;
  o['timestamp-ms'] = s.timestampMs;
  const summary: Record<string, string> = {};
  if (s.summary['operation'] !== undefined) summary['operation'] = s.summary['operation'];
  for (const [k, v] of Object.entries(s.summary)) if (k !== 'operation') summary[k] = v;
  o['summary'] = summary;
  o['manifest-list'] = s.manifestList;
  if (s.schemaId !== undefined) o['schema-id'] = s.schemaId;
  if (s.firstRowId !== undefined) o['first-row-id'] = s.firstRowId;
  if (s.addedRows !== undefined) o['added-rows'] = s.addedRows;
  return o;
}

export function snapshotFromJson(json: unknown): Snapshot {
  const o = asObject(json, 'snapshot');
  const manifestList = optString(o, 'manifest-list', 'snapshot');
  if (manifestList === undefined) {
    // v1 snapshots may embed a `manifests` array instead; we never write those and cannot append to them.
    throw malformed('snapshot', 'snapshots without a manifest-list (v1 embedded manifests) are not supported');
  }
  const s: { -readonly [K in keyof Snapshot]: Snapshot[K] } = {
    snapshotId: reqLong(o, 'snapshot-id', 'snapshot'),
    sequenceNumber: optLong(o, 'sequence-number', 'snapshot') ?? INITIAL_SEQUENCE_NUMBER,
    timestampMs: Number(reqLong(o, 'timestamp-ms', 'snapshot')),
    manifestList,
    summary: stringMap(o['summary'], 'snapshot summary'),
  };
  const parent = optLong(o, 'parent-snapshot-id', 'snapshot');
  if (parent !== undefined) s.parentSnapshotId = parent;
  const schemaId = optInt(o, 'schema-id', 'snapshot');
  if (schemaId !== undefined) s.schemaId = schemaId;
  const firstRowId = optLong(o, 'first-row-id', 'snapshot');
  if (firstRowId !== undefined) s.firstRowId = firstRowId;
  const addedRows = optLong(o, 'added-rows', 'snapshot');
  if (addedRows !== undefined) s.addedRows = addedRows;
  return s;
}

export function snapshotRefToJson(r: SnapshotRef): Record<string, unknown> {
  const o: Record<string, unknown> = { 'snapshot-id': r.snapshotId, type: r.type };
  if (r.minSnapshotsToKeep !== undefined) o['min-snapshots-to-keep'] = r.minSnapshotsToKeep;
  if (r.maxSnapshotAgeMs !== undefined) o['max-snapshot-age-ms'] = r.maxSnapshotAgeMs;
  if (r.maxRefAgeMs !== undefined) o['max-ref-age-ms'] = r.maxRefAgeMs;
  return o;
}

export function snapshotRefFromJson(json: unknown): SnapshotRef {
  const o = asObject(json, 'snapshot ref');
  const type = reqString(o, 'type', 'snapshot ref').toLowerCase();
  if (type !== 'branch' && type !== 'tag') throw malformed('snapshot ref', `type ${type}`);
  const r: { -readonly [K in keyof SnapshotRef]: SnapshotRef[K] } = { snapshotId: reqLong(o, 'snapshot-id', 'snapshot ref'), type };
  const a = optLong(o, 'min-snapshots-to-keep', 'snapshot ref');
  if (a !== undefined) r.minSnapshotsToKeep = Number(a);
  const b = optLong(o, 'max-snapshot-age-ms', 'snapshot ref');
  if (b !== undefined) r.maxSnapshotAgeMs = Number(b);
  const c = optLong(o, 'max-ref-age-ms', 'snapshot ref');
  if (c !== undefined) r.maxRefAgeMs = Number(c);
  return r;
}

// ---------------------------------------------------------------------------------------------------
// JSON: table metadata
// ---------------------------------------------------------------------------------------------------

const KNOWN_KEYS = new Set([
  'format-version',
  'table-uuid',
  'location',
  'last-sequence-number',
  'last-updated-ms',
  'last-column-id',
  'current-schema-id',
  'schemas',
  'schema',
  'default-spec-id',
  'partition-specs',
  'partition-spec',
  'last-partition-id',
  'default-sort-order-id',
  'sort-orders',
  'properties',
  'current-snapshot-id',
  'refs',
  'snapshots',
  'statistics',
  'partition-statistics',
  'snapshot-log',
  'metadata-log',
  'next-row-id',
]);

/** Parses a metadata document (text, or the value `parseJson` returned). Malformed -> FatalError. */
export function tableMetadataFromJson(input: string | unknown): TableMetadata {
  const json = typeof input === 'string' ? parseJsonOrFail(input) : input;
  const o = asObject(json, 'table metadata');
  const what = 'table metadata';
  const formatVersion = reqInt(o, 'format-version', what);
  if (formatVersion !== 1 && formatVersion !== 2 && formatVersion !== 3) throw malformed(what, `unsupported format-version ${formatVersion}`);

  let schemas: Schema[];
  let currentSchemaId: number;
  if (o['schemas'] !== undefined) {
    schemas = asArray(o['schemas'], 'schemas').map((s) => schemaFromJson(s));
    currentSchemaId = reqInt(o, 'current-schema-id', what);
  } else {
    // v1: a single `schema`.
    const s = schemaFromJson(o['schema']);
    schemas = [s];
    currentSchemaId = s.schemaId;
  }
  if (!schemas.some((s) => s.schemaId === currentSchemaId)) throw malformed(what, `current-schema-id ${currentSchemaId} is not among the schemas`);

  let partitionSpecs: PartitionSpec[];
  let defaultSpecId: number;
  if (o['partition-specs'] !== undefined) {
    partitionSpecs = asArray(o['partition-specs'], 'partition-specs').map((s) => partitionSpecFromJson(s));
    defaultSpecId = reqInt(o, 'default-spec-id', what);
  } else {
    // v1: a bare `partition-spec` fields array is spec 0.
    partitionSpecs = [partitionSpecFromJson(o['partition-spec'] ?? [], 0)];
    defaultSpecId = 0;
  }
  if (!partitionSpecs.some((s) => s.specId === defaultSpecId)) throw malformed(what, `default-spec-id ${defaultSpecId} is not among the partition specs`);

  const sortOrders = o['sort-orders'] === undefined ? [UNSORTED_ORDER] : asArray(o['sort-orders'], 'sort-orders').map(sortOrderFromJson);
  const defaultSortOrderId = optInt(o, 'default-sort-order-id', what) ?? 0;

  const snapshots = o['snapshots'] === undefined || o['snapshots'] === null ? [] : asArray(o['snapshots'], 'snapshots').map(snapshotFromJson);
  let currentSnapshotId = optLong(o, 'current-snapshot-id', what) ?? null;
  if (currentSnapshotId === -1n) currentSnapshotId = null;

  const refs: Record<string, SnapshotRef> = {};
  if (o['refs'] !== undefined && o['refs'] !== null) {
    for (const [name, r] of Object.entries(asObject(o['refs'], 'refs'))) refs[name] = snapshotRefFromJson(r);
  }
  // Java: a document without a main ref but with a current snapshot gets an implicit main branch.
  if (refs[MAIN_BRANCH] === undefined && currentSnapshotId !== null) refs[MAIN_BRANCH] = { snapshotId: currentSnapshotId, type: 'branch' };

  const lastPartitionId = optInt(o, 'last-partition-id', what) ?? Math.max(UNPARTITIONED_LAST_PARTITION_ID, ...partitionSpecs.map(lastAssignedPartitionId));

  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (!KNOWN_KEYS.has(k)) extra[k] = v;

  const md: { -readonly [K in keyof TableMetadata]: TableMetadata[K] } = {
    formatVersion,
    tableUuid: optString(o, 'table-uuid', what) ?? '',
    location: reqString(o, 'location', what),
    lastSequenceNumber: optLong(o, 'last-sequence-number', what) ?? INITIAL_SEQUENCE_NUMBER,
    lastUpdatedMs: Number(reqLong(o, 'last-updated-ms', what)),
    lastColumnId: reqInt(o, 'last-column-id', what),
    schemas,
    currentSchemaId,
    partitionSpecs,
    defaultSpecId,
    lastPartitionId,
    properties: stringMap(o['properties'], 'properties'),
    currentSnapshotId,
    snapshots,
    snapshotLog: logArray(o['snapshot-log'], 'snapshot-log').map((e) => ({
      timestampMs: Number(reqLong(e, 'timestamp-ms', 'snapshot-log')),
      snapshotId: reqLong(e, 'snapshot-id', 'snapshot-log'),
    })),
    metadataLog: logArray(o['metadata-log'], 'metadata-log').map((e) => ({
      timestampMs: Number(reqLong(e, 'timestamp-ms', 'metadata-log')),
      metadataFile: reqString(e, 'metadata-file', 'metadata-log'),
    })),
    sortOrders,
    defaultSortOrderId,
    refs,
    statistics: o['statistics'] === undefined || o['statistics'] === null ? [] : asArray(o['statistics'], 'statistics'),
    partitionStatistics: o['partition-statistics'] === undefined || o['partition-statistics'] === null ? [] : asArray(o['partition-statistics'], 'partition-statistics'),
    extra,
  };
  const nextRowId = optLong(o, 'next-row-id', what);
  if (nextRowId !== undefined) md.nextRowId = nextRowId;
  return md;
}

function parseJsonOrFail(text: string): unknown {
  try {
    return parseJson(text);
  } catch (e) {
    throw malformed('table metadata', 'not JSON', e);
  }
}

function logArray(v: unknown, what: string): JsonObject[] {
  if (v === undefined || v === null) return [];
  return asArray(v, what).map((e) => asObject(e, what));
}

/** Metadata -> JSON value in Java `TableMetadataParser` key order; stringify with core/json.ts. */
export function tableMetadataToJson(md: TableMetadata): Record<string, unknown> {
  const o: Record<string, unknown> = {
    'format-version': md.formatVersion,
    'table-uuid': md.tableUuid,
    location: md.location,
  };
  if (md.formatVersion > 1) o['last-sequence-number'] = md.lastSequenceNumber;
  o['last-updated-ms'] = md.lastUpdatedMs;
  o['last-column-id'] = md.lastColumnId;
  if (md.formatVersion === 1) o['schema'] = schemaToJson(currentSchema(md));
  o['current-schema-id'] = md.currentSchemaId;
  o['schemas'] = md.schemas.map(schemaToJson);
  if (md.formatVersion === 1) o['partition-spec'] = partitionFieldsToJson(defaultSpec(md));
  o['default-spec-id'] = md.defaultSpecId;
  o['partition-specs'] = md.partitionSpecs.map(partitionSpecToJson);
  o['last-partition-id'] = md.lastPartitionId;
  o['default-sort-order-id'] = md.defaultSortOrderId;
  o['sort-orders'] = md.sortOrders.map(sortOrderToJson);
  o['properties'] = { ...md.properties };
  // v1/v2: -1 means "no current snapshot" (older Trino fails when the key is missing, iceberg-python#134).
  // v3 writes null instead (Java MIN_NULL_CURRENT_SNAPSHOT_VERSION).
  o['current-snapshot-id'] = md.currentSnapshotId ?? (md.formatVersion < 3 ? -1 : null);
  if (md.nextRowId !== undefined) o['next-row-id'] = md.nextRowId;
  const refs: Record<string, unknown> = {};
  for (const [k, r] of Object.entries(md.refs)) refs[k] = snapshotRefToJson(r);
  o['refs'] = refs;
  o['snapshots'] = md.snapshots.map(snapshotToJson);
  o['statistics'] = [...md.statistics];
  o['partition-statistics'] = [...md.partitionStatistics];
  o['snapshot-log'] = md.snapshotLog.map((e) => ({ 'timestamp-ms': e.timestampMs, 'snapshot-id': e.snapshotId }));
  o['metadata-log'] = md.metadataLog.map((e) => ({ 'timestamp-ms': e.timestampMs, 'metadata-file': e.metadataFile }));
  for (const [k, v] of Object.entries(md.extra)) if (!(k in o)) o[k] = v;
  return o;
}

/** The metadata file's text (lossless int64). */
export function serializeTableMetadata(md: TableMetadata, space?: number): string {
  return stringifyJson(tableMetadataToJson(md), space);
}

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
 * committed snapshots without them). Reports whether the ancestry was cut short by expiry.
 */
export function findInAncestry(md: TableMetadata, key: string, branch: string = MAIN_BRANCH): AncestrySearch {
  let scanned = 0;
  let last: Snapshot | undefined;
  for (const s of ancestors(md, md.refs[branch]?.snapshotId)) {
    scanned++;
    last = s;
    const value = s.summary[key];
    if (value !== undefined) return { snapshot: s, value, scanned, truncated: false };
  }
  const head = md.refs[branch]?.snapshotId;
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
