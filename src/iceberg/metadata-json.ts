/**
 * The JSON codec of table metadata (spec "Table Metadata", Appendix C field names; v1 read compatibility)
 * through core/json.ts, so snapshot ids and sequence numbers stay exact bigints: sort orders, snapshots,
 * refs and whole metadata documents, whose unknown top-level keys are kept in `extra` and written back.
 *
 * Owns: the document's text form. Anything malformed is a FatalError (json-util.ts `malformed`).
 * Must not: do I/O, or interpret the document (metadata.ts holds the model and its queries).
 */
import { parseJson, stringifyJson } from '../core/json.ts';
import { asArray, asObject, malformed, optInt, optLong, optString, reqInt, reqLong, reqString, stringMap, type JsonObject } from './json-util.ts';
import {
  currentSchema,
  defaultSpec,
  INITIAL_SEQUENCE_NUMBER,
  MAIN_BRANCH,
  UNSORTED_ORDER,
  type Snapshot,
  type SnapshotRef,
  type SortOrder,
  type TableMetadata,
} from './metadata.ts';
import {
  lastAssignedPartitionId,
  partitionFieldsToJson,
  partitionSpecFromJson,
  partitionSpecToJson,
  UNPARTITIONED_LAST_PARTITION_ID,
  type PartitionSpec,
} from './partition-spec.ts';
import { schemaFromJson, schemaToJson } from './schema.ts';
import { parseTransform, transformToString } from './transforms.ts';
import type { Schema } from './types.ts';

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
