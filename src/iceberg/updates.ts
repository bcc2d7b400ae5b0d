/**
 * Table updates and requirements (REST catalog OpenAPI `TableUpdate` / `TableRequirement`): the types
 * and their JSON forms (discriminated by `action` / `type`, Java `MetadataUpdateParser` /
 * `UpdateRequirementParser` field names), as a commit request carries them. What they mean when applied
 * to table metadata is apply-updates.ts.
 *
 * Owns: the vocabulary of a commit. A malformed JSON form is a `ConfigError`.
 * Must not: do I/O, or decide whether a requirement holds or an update applies (apply-updates.ts does).
 */
import { ConfigError } from '../core/errors.ts';
import { asArray, asObject, optInt, optLong, reqInt, reqLong, reqString, stringMap, type JsonObject } from './json-util.ts';
import type { Snapshot, SnapshotRef, SortOrder } from './metadata.ts';
import { snapshotFromJson, snapshotToJson, sortOrderFromJson, sortOrderToJson } from './metadata-json.ts';
import { partitionSpecFromJson, partitionSpecToJson, type PartitionSpec } from './partition-spec.ts';
import { schemaFromJson, schemaToJson } from './schema.ts';
import type { Schema } from './types.ts';

// ---------------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------------

export type TableRequirement =
  | { readonly type: 'assert-create' }
  | { readonly type: 'assert-table-uuid'; readonly uuid: string }
  /** `snapshotId: null` = the ref must not exist yet (first append to an empty table). */
  | { readonly type: 'assert-ref-snapshot-id'; readonly ref: string; readonly snapshotId: bigint | null }
  | { readonly type: 'assert-last-assigned-field-id'; readonly lastAssignedFieldId: number }
  | { readonly type: 'assert-current-schema-id'; readonly currentSchemaId: number }
  | { readonly type: 'assert-last-assigned-partition-id'; readonly lastAssignedPartitionId: number }
  | { readonly type: 'assert-default-spec-id'; readonly defaultSpecId: number }
  | { readonly type: 'assert-default-sort-order-id'; readonly defaultSortOrderId: number };

/** `-1` as a schema / spec / sort order id means "the one added last in this commit". */
export const LAST_ADDED = -1;

export type TableUpdate =
  | { readonly action: 'assign-uuid'; readonly uuid: string }
  | { readonly action: 'upgrade-format-version'; readonly formatVersion: number }
  /** `lastColumnId` is deprecated in the REST spec (the server computes it); sent only when set. */
  | { readonly action: 'add-schema'; readonly schema: Schema; readonly lastColumnId?: number }
  | { readonly action: 'set-current-schema'; readonly schemaId: number }
  | { readonly action: 'add-spec'; readonly spec: PartitionSpec }
  | { readonly action: 'set-default-spec'; readonly specId: number }
  | { readonly action: 'add-sort-order'; readonly sortOrder: SortOrder }
  | { readonly action: 'set-default-sort-order'; readonly sortOrderId: number }
  | { readonly action: 'add-snapshot'; readonly snapshot: Snapshot }
  | { readonly action: 'set-snapshot-ref'; readonly refName: string; readonly ref: SnapshotRef }
  | { readonly action: 'remove-snapshots'; readonly snapshotIds: readonly bigint[] }
  | { readonly action: 'remove-snapshot-ref'; readonly refName: string }
  | { readonly action: 'set-properties'; readonly updates: Readonly<Record<string, string>> }
  | { readonly action: 'remove-properties'; readonly removals: readonly string[] }
  | { readonly action: 'set-location'; readonly location: string };

// ---------------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------------

export function requirementToJson(r: TableRequirement): Record<string, unknown> {
  switch (r.type) {
    case 'assert-create':
      return { type: r.type };
    case 'assert-table-uuid':
      return { type: r.type, uuid: r.uuid };
    case 'assert-ref-snapshot-id':
      return { type: r.type, ref: r.ref, 'snapshot-id': r.snapshotId };
    case 'assert-last-assigned-field-id':
      return { type: r.type, 'last-assigned-field-id': r.lastAssignedFieldId };
    case 'assert-current-schema-id':
      return { type: r.type, 'current-schema-id': r.currentSchemaId };
    case 'assert-last-assigned-partition-id':
      return { type: r.type, 'last-assigned-partition-id': r.lastAssignedPartitionId };
    case 'assert-default-spec-id':
      return { type: r.type, 'default-spec-id': r.defaultSpecId };
    case 'assert-default-sort-order-id':
      return { type: r.type, 'default-sort-order-id': r.defaultSortOrderId };
  }
}

export function requirementFromJson(json: unknown): TableRequirement {
  const o = asObject(json, 'table requirement');
  const w = 'table requirement';
  const type = reqString(o, 'type', w);
  switch (type) {
    case 'assert-create':
      return { type };
    case 'assert-table-uuid':
      return { type, uuid: reqString(o, 'uuid', w) };
    case 'assert-ref-snapshot-id':
      return { type, ref: reqString(o, 'ref', w), snapshotId: optLong(o, 'snapshot-id', w) ?? null };
    case 'assert-last-assigned-field-id':
      return { type, lastAssignedFieldId: reqInt(o, 'last-assigned-field-id', w) };
    case 'assert-current-schema-id':
      return { type, currentSchemaId: reqInt(o, 'current-schema-id', w) };
    case 'assert-last-assigned-partition-id':
      return { type, lastAssignedPartitionId: reqInt(o, 'last-assigned-partition-id', w) };
    case 'assert-default-spec-id':
      return { type, defaultSpecId: reqInt(o, 'default-spec-id', w) };
    case 'assert-default-sort-order-id':
      return { type, defaultSortOrderId: reqInt(o, 'default-sort-order-id', w) };
    default:
      throw new ConfigError(`unknown table requirement type ${type}`);
  }
}

export function updateToJson(u: TableUpdate): Record<string, unknown> {
  switch (u.action) {
    case 'assign-uuid':
      return { action: u.action, uuid: u.uuid };
    case 'upgrade-format-version':
      return { action: u.action, 'format-version': u.formatVersion };
    case 'add-schema':
      return u.lastColumnId === undefined
        ? { action: u.action, schema: schemaToJson(u.schema) }
        : { action: u.action, schema: schemaToJson(u.schema), 'last-column-id': u.lastColumnId };
    case 'set-current-schema':
      return { action: u.action, 'schema-id': u.schemaId };
    case 'add-spec':
      return { action: u.action, spec: partitionSpecToJson(u.spec) };
    case 'set-default-spec':
      return { action: u.action, 'spec-id': u.specId };
    case 'add-sort-order':
      return { action: u.action, 'sort-order': sortOrderToJson(u.sortOrder) };
    case 'set-default-sort-order':
      return { action: u.action, 'sort-order-id': u.sortOrderId };
    case 'add-snapshot':
      return { action: u.action, snapshot: snapshotToJson(u.snapshot) };
    case 'set-snapshot-ref': {
      // The REST form flattens the ref into the update: {action, ref-name, type, snapshot-id, ...}.
      const o: Record<string, unknown> = { action: u.action, 'ref-name': u.refName, type: u.ref.type, 'snapshot-id': u.ref.snapshotId };
      if (u.ref.maxRefAgeMs !== undefined) o['max-ref-age-ms'] = u.ref.maxRefAgeMs;
      if (u.ref.maxSnapshotAgeMs !== undefined) o['max-snapshot-age-ms'] = u.ref.maxSnapshotAgeMs;
      if (u.ref.minSnapshotsToKeep !== undefined) o['min-snapshots-to-keep'] = u.ref.minSnapshotsToKeep;
      return o;
    }
    case 'remove-snapshots':
      return { action: u.action, 'snapshot-ids': [...u.snapshotIds] };
    case 'remove-snapshot-ref':
      return { action: u.action, 'ref-name': u.refName };
    case 'set-properties':
      return { action: u.action, updates: { ...u.updates } };
    case 'remove-properties':
      return { action: u.action, removals: [...u.removals] };
    case 'set-location':
      return { action: u.action, location: u.location };
  }
}

export function updateFromJson(json: unknown): TableUpdate {
  const o = asObject(json, 'table update');
  const w = 'table update';
  const action = reqString(o, 'action', w);
  switch (action) {
    case 'assign-uuid':
      return { action, uuid: reqString(o, 'uuid', w) };
    case 'upgrade-format-version':
      return { action, formatVersion: reqInt(o, 'format-version', w) };
    case 'add-schema': {
      const lastColumnId = optInt(o, 'last-column-id', w);
      const schema = schemaFromJson(o['schema']);
      return lastColumnId === undefined ? { action, schema } : { action, schema, lastColumnId };
    }
    case 'set-current-schema':
      return { action, schemaId: reqInt(o, 'schema-id', w) };
    case 'add-spec':
      return { action, spec: partitionSpecFromJson(o['spec']) };
    case 'set-default-spec':
      return { action, specId: reqInt(o, 'spec-id', w) };
    case 'add-sort-order':
      return { action, sortOrder: sortOrderFromJson(o['sort-order']) };
    case 'set-default-sort-order':
      return { action, sortOrderId: reqInt(o, 'sort-order-id', w) };
    case 'add-snapshot':
      return { action, snapshot: snapshotFromJson(o['snapshot']) };
    case 'set-snapshot-ref': {
      const type = reqString(o, 'type', w).toLowerCase();
      if (type !== 'branch' && type !== 'tag') throw new ConfigError(`set-snapshot-ref: unknown ref type ${type}`);
      const ref: { -readonly [K in keyof SnapshotRef]: SnapshotRef[K] } = { snapshotId: reqLong(o, 'snapshot-id', w), type };
      const a = optLong(o, 'max-ref-age-ms', w);
      if (a !== undefined) ref.maxRefAgeMs = Number(a);
      const b = optLong(o, 'max-snapshot-age-ms', w);
      if (b !== undefined) ref.maxSnapshotAgeMs = Number(b);
      const c = optLong(o, 'min-snapshots-to-keep', w);
      if (c !== undefined) ref.minSnapshotsToKeep = Number(c);
      return { action, refName: reqString(o, 'ref-name', w), ref };
    }
    case 'remove-snapshots':
      return { action, snapshotIds: asArray(o['snapshot-ids'], 'snapshot-ids').map((x, i) => reqLong({ x } as JsonObject, 'x', `snapshot-ids[${i}]`)) };
    case 'remove-snapshot-ref':
      return { action, refName: reqString(o, 'ref-name', w) };
    case 'set-properties':
      return { action, updates: stringMap(o['updates'], 'set-properties updates') };
    case 'remove-properties':
      return {
        action,
        removals: asArray(o['removals'], 'removals').map((x) => {
          if (typeof x !== 'string') throw new ConfigError('remove-properties: removals must be strings');
          return x;
        }),
      };
    case 'set-location':
      return { action, location: reqString(o, 'location', w) };
    default:
      throw new ConfigError(`unknown table update action ${action}`);
  }
}

/** The body of a REST commit (`POST .../tables/{t}`), ready for `stringifyJson`. */
export function commitRequestToJson(requirements: readonly TableRequirement[], updates: readonly TableUpdate[]): Record<string, unknown> {
  return { requirements: requirements.map(requirementToJson), updates: updates.map(updateToJson) };
}

export function commitRequestFromJson(json: unknown): { requirements: TableRequirement[]; updates: TableUpdate[] } {
  const o = asObject(json, 'commit request');
  return {
    requirements: asArray(o['requirements'] ?? [], 'requirements').map(requirementFromJson),
    updates: asArray(o['updates'] ?? [], 'updates').map(updateFromJson),
  };
}
