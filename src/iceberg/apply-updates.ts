/**
 * Commit semantics on table metadata: requirement checking and `applyUpdates`, which applies the updates
 * of a commit (updates.ts) the way a catalog server does (Java `UpdateRequirement.validate`,
 * `TableMetadata.Builder`). The SQL catalog has no server to do that, so it calls `commitUpdates` and
 * writes the result with a compare-and-swap.
 *
 * Owns: commit semantics on metadata. A failed requirement is a `CommitConflictError` (reload, re-apply);
 * an update that cannot apply (unknown schema id, downgrade, duplicate snapshot, ...) is a `ConfigError`
 * (a REST server would answer 400: retrying the same request cannot help).
 * Must not: do I/O or read the clock (callers pass `nowMs`).
 */
import { CommitConflictError, ConfigError } from '../core/errors.ts';
import { isObject } from './json-util.ts';
import {
  currentSchema,
  DEFAULT_PREVIOUS_VERSIONS_MAX,
  MAIN_BRANCH,
  UNSORTED_ORDER,
  type MetadataLogEntry,
  type Snapshot,
  type SnapshotLogEntry,
  type SnapshotRef,
  type SortOrder,
  type TableMetadata,
} from './metadata.ts';
import {
  lastAssignedPartitionId,
  sameSpecFields,
  unpartitionedSpec,
  UNPARTITIONED_LAST_PARTITION_ID,
  validatePartitionSpec,
  type PartitionSpec,
} from './partition-spec.ts';
import { indexFields, maxFieldId, sameSchema } from './schema.ts';
import { transformToString } from './transforms.ts';
import type { Schema } from './types.ts';
import { LAST_ADDED, type TableRequirement, type TableUpdate } from './updates.ts';

// ---------------------------------------------------------------------------------------------------
// Requirements
// ---------------------------------------------------------------------------------------------------

/**
 * Checks requirements against the base metadata (null = the table does not exist), as a catalog does
 * before applying updates (Java `UpdateRequirement.validate`). Throws CommitConflictError naming the
 * requirement that failed.
 */
export function checkRequirements(base: TableMetadata | null, requirements: readonly TableRequirement[]): void {
  for (const r of requirements) {
    const fail = (msg: string): never => {
      throw new CommitConflictError(`Requirement failed: ${msg}`, { context: { requirement: r.type } });
    };
    if (r.type === 'assert-create') {
      if (base !== null) fail('table already exists');
      continue;
    }
    if (base === null) fail(`${r.type}: table does not exist`);
    const md = base as TableMetadata;
    switch (r.type) {
      case 'assert-table-uuid':
        if (md.tableUuid.toLowerCase() !== r.uuid.toLowerCase()) fail(`UUID does not match: expected ${md.tableUuid} != ${r.uuid}`);
        break;
      case 'assert-ref-snapshot-id': {
        const ref = md.refs[r.ref];
        if (ref === undefined) {
          if (r.snapshotId !== null) fail(`${r.ref} is missing, expected ${r.snapshotId}`);
        } else if (r.snapshotId === null) {
          fail(`${ref.type} ${r.ref} was created concurrently`);
        } else if (ref.snapshotId !== r.snapshotId) {
          fail(`${ref.type} ${r.ref} has changed: expected id ${r.snapshotId} != ${ref.snapshotId}`);
        }
        break;
      }
      case 'assert-last-assigned-field-id':
        if (md.lastColumnId !== r.lastAssignedFieldId) fail(`last assigned field id changed: expected id ${r.lastAssignedFieldId} != ${md.lastColumnId}`);
        break;
      case 'assert-current-schema-id':
        if (md.currentSchemaId !== r.currentSchemaId) fail(`current schema changed: expected id ${r.currentSchemaId} != ${md.currentSchemaId}`);
        break;
      case 'assert-last-assigned-partition-id':
        if (md.lastPartitionId !== r.lastAssignedPartitionId) {
          fail(`last assigned partition id changed: expected id ${r.lastAssignedPartitionId} != ${md.lastPartitionId}`);
        }
        break;
      case 'assert-default-spec-id':
        if (md.defaultSpecId !== r.defaultSpecId) fail(`default partition spec changed: expected id ${r.defaultSpecId} != ${md.defaultSpecId}`);
        break;
      case 'assert-default-sort-order-id':
        if (md.defaultSortOrderId !== r.defaultSortOrderId) fail(`default sort order changed: expected id ${r.defaultSortOrderId} != ${md.defaultSortOrderId}`);
        break;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Applying updates
// ---------------------------------------------------------------------------------------------------

export interface ApplyOptions {
  /** The commit time: `last-updated-ms` when no added snapshot sets it, and the snapshot-log time of a
   *  ref moved to an existing snapshot. */
  readonly nowMs: number;
  /** Location of the base's metadata file; when given (and something changed) it joins `metadata-log`. */
  readonly metadataLocation?: string;
  /** Checked against the base first. */
  readonly requirements?: readonly TableRequirement[];
}

export interface ApplyResult {
  readonly metadata: TableMetadata;
  /** False when every update was a no-op (the base is returned unchanged, no new metadata file needed). */
  readonly changed: boolean;
}

const SUPPORTED_FORMAT_VERSION = 3;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function bad(message: string): ConfigError {
  return new ConfigError(`cannot apply table update: ${message}`);
}

/**
 * Applies updates to `base` (null to create a table from updates alone, as a REST create-transaction
 * does) the way a catalog's `TableMetadata.Builder` does: schema/spec/sort-order ids are reused when an
 * equal one exists and otherwise max+1; `last-column-id` / `last-partition-id` only grow; `add-snapshot`
 * sets `last-sequence-number` and `last-updated-ms`; moving `main` sets `current-snapshot-id` and appends
 * to `snapshot-log`; the base's file joins `metadata-log` (capped by write.metadata.previous-versions-max).
 * Requirements in `options` are checked first (CommitConflictError); invalid updates are ConfigError.
 */
export function applyUpdates(base: TableMetadata | null, updates: readonly TableUpdate[], options: ApplyOptions): ApplyResult {
  if (options.requirements !== undefined) checkRequirements(base, options.requirements);
  const b = new MetadataBuilder(base, options.nowMs);
  for (const u of updates) b.apply(u);
  if (!b.changed) {
    if (base === null) throw bad('a new table needs updates');
    return { metadata: base, changed: false };
  }
  return { metadata: b.build(options), changed: true };
}

/** `applyUpdates` with the requirements of a commit request: what the SQL catalog runs per commit. */
export function commitUpdates(
  base: TableMetadata | null,
  request: { readonly requirements: readonly TableRequirement[]; readonly updates: readonly TableUpdate[] },
  options: Omit<ApplyOptions, 'requirements'>,
): ApplyResult {
  return applyUpdates(base, request.updates, { ...options, requirements: request.requirements });
}

class MetadataBuilder {
  private readonly base: TableMetadata | null;
  private readonly md: Mutable<TableMetadata>;
  private lastAddedSchemaId: number | undefined;
  private lastAddedSpecId: number | undefined;
  private lastAddedOrderId: number | undefined;
  private readonly addedSnapshotIds = new Set<bigint>();
  private lastUpdatedMs: number | undefined;
  private readonly nowMs: number;
  changed = false;

  constructor(base: TableMetadata | null, nowMs: number) {
    this.base = base;
    this.nowMs = nowMs;
    this.md =
      base === null
        ? {
            formatVersion: 2,
            tableUuid: '',
            location: '',
            lastSequenceNumber: 0n,
            lastUpdatedMs: 0,
            lastColumnId: 0,
            schemas: [],
            currentSchemaId: -1,
            partitionSpecs: [],
            defaultSpecId: -1,
            lastPartitionId: UNPARTITIONED_LAST_PARTITION_ID,
            properties: {},
            currentSnapshotId: null,
            snapshots: [],
            snapshotLog: [],
            metadataLog: [],
            sortOrders: [],
            defaultSortOrderId: -1,
            refs: {},
            statistics: [],
            partitionStatistics: [],
            extra: {},
          }
        : { ...base };
  }

  apply(u: TableUpdate): void {
    const md = this.md;
    switch (u.action) {
      case 'assign-uuid':
        if (md.tableUuid !== u.uuid) {
          if (this.base !== null && this.base.tableUuid !== '' && this.base.tableUuid !== u.uuid) {
            throw bad(`cannot reassign the table uuid ${this.base.tableUuid} to ${u.uuid}`);
          }
          md.tableUuid = u.uuid;
          this.changed = true;
        }
        return;
      case 'upgrade-format-version': {
        const v = u.formatVersion;
        if (!Number.isInteger(v) || v > SUPPORTED_FORMAT_VERSION || v < 1) throw bad(`unsupported format version v${v}`);
        if (v < md.formatVersion) throw bad(`cannot downgrade v${md.formatVersion} table to v${v}`);
        if (v === md.formatVersion) return;
        md.formatVersion = v as 1 | 2 | 3;
        if (v >= 3 && md.nextRowId === undefined) md.nextRowId = 0n;
        this.changed = true;
        return;
      }
      case 'add-schema':
        this.addSchema(u.schema, u.lastColumnId);
        return;
      case 'set-current-schema': {
        const id = u.schemaId === LAST_ADDED ? this.lastAddedSchemaId : u.schemaId;
        if (id === undefined) throw bad('set-current-schema -1: no schema has been added');
        if (md.currentSchemaId === id) return;
        if (!md.schemas.some((s) => s.schemaId === id)) throw bad(`cannot set current schema to unknown schema ${id}`);
        md.currentSchemaId = id;
        this.changed = true;
        return;
      }
      case 'add-spec':
        this.addSpec(u.spec);
        return;
      case 'set-default-spec': {
        const id = u.specId === LAST_ADDED ? this.lastAddedSpecId : u.specId;
        if (id === undefined) throw bad('set-default-spec -1: no spec has been added');
        if (md.defaultSpecId === id) return;
        if (!md.partitionSpecs.some((s) => s.specId === id)) throw bad(`cannot set default spec to unknown spec ${id}`);
        md.defaultSpecId = id;
        this.changed = true;
        return;
      }
      case 'add-sort-order':
        this.addSortOrder(u.sortOrder);
        return;
      case 'set-default-sort-order': {
        const id = u.sortOrderId === LAST_ADDED ? this.lastAddedOrderId : u.sortOrderId;
        if (id === undefined) throw bad('set-default-sort-order -1: no sort order has been added');
        if (md.defaultSortOrderId === id) return;
        if (!md.sortOrders.some((s) => s.orderId === id)) throw bad(`cannot set default sort order to unknown order ${id}`);
        md.defaultSortOrderId = id;
        this.changed = true;
        return;
      }
      case 'add-snapshot':
        this.addSnapshot(u.snapshot);
        return;
      case 'set-snapshot-ref':
        this.setRef(u.refName, u.ref);
        return;
      case 'remove-snapshot-ref':
        this.removeRef(u.refName);
        return;
      case 'remove-snapshots':
        this.removeSnapshots(new Set(u.snapshotIds));
        return;
      case 'set-properties': {
        const entries = Object.entries(u.updates);
        if (entries.length === 0) return;
        md.properties = { ...md.properties, ...u.updates };
        this.changed = true;
        return;
      }
      case 'remove-properties': {
        if (u.removals.length === 0) return;
        const props = { ...md.properties };
        for (const k of u.removals) delete props[k];
        md.properties = props;
        this.changed = true;
        return;
      }
      case 'set-location': {
        const loc = u.location.replace(/\/+$/, '');
        if (md.location === loc) return;
        md.location = loc;
        this.changed = true;
        return;
      }
    }
  }

  private addSchema(schema: Schema, requestedLastColumnId: number | undefined): void {
    const md = this.md;
    checkSchemaForVersion(schema, md.formatVersion);
    const newLastColumnId = Math.max(md.lastColumnId, requestedLastColumnId ?? 0, maxFieldId(schema));
    // Java reuseOrCreateNewSchemaId: an equal schema keeps its id, otherwise highest + 1.
    let newId = Math.max(md.currentSchemaId, 0);
    for (const s of md.schemas) {
      if (sameSchema(s, schema)) {
        newId = s.schemaId;
        break;
      }
      if (s.schemaId >= newId) newId = s.schemaId + 1;
    }
    const found = md.schemas.some((s) => s.schemaId === newId);
    if (found && newLastColumnId === md.lastColumnId) {
      // Already there; it still counts as "last added" for -1 only if this commit added it.
      if (this.lastAddedSchemaId !== newId) this.lastAddedSchemaId = newId;
      return;
    }
    md.lastColumnId = newLastColumnId;
    if (!found) md.schemas = [...md.schemas, { ...schema, schemaId: newId }];
    this.lastAddedSchemaId = newId;
    this.changed = true;
  }

  private addSpec(spec: PartitionSpec): void {
    const md = this.md;
    let newId = 0;
    for (const s of md.partitionSpecs) {
      if (sameSpecFields(s, spec)) {
        this.lastAddedSpecId = s.specId;
        return;
      }
      if (newId <= s.specId) newId = s.specId + 1;
    }
    const schema = md.schemas.find((s) => s.schemaId === md.currentSchemaId);
    if (schema === undefined) throw bad('add-spec before any schema');
    // Java `addPartitionSpecInternal` checks compatibility only, not the builder's naming rules.
    validatePartitionSpec(spec, schema, { strict: false });
    const newSpec: PartitionSpec = { specId: newId, fields: spec.fields };
    md.partitionSpecs = [...md.partitionSpecs, newSpec];
    md.lastPartitionId = Math.max(md.lastPartitionId, lastAssignedPartitionId(newSpec));
    this.lastAddedSpecId = newId;
    this.changed = true;
  }

  private addSortOrder(order: SortOrder): void {
    const md = this.md;
    const sameOrder = (a: SortOrder, b: SortOrder): boolean =>
      a.fields.length === b.fields.length &&
      a.fields.every((f, i) => {
        const g = b.fields[i];
        return g !== undefined && f.sourceId === g.sourceId && f.direction === g.direction && f.nullOrder === g.nullOrder && transformToString(f.transform) === transformToString(g.transform);
      });
    let newId: number;
    if (order.fields.length === 0) newId = 0;
    else {
      newId = 1;
      for (const o of md.sortOrders) {
        if (sameOrder(o, order)) {
          newId = o.orderId;
          break;
        }
        if (newId <= o.orderId) newId = o.orderId + 1;
      }
    }
    if (md.sortOrders.some((o) => o.orderId === newId)) {
      this.lastAddedOrderId = newId;
      return;
    }
    md.sortOrders = [...md.sortOrders, order.fields.length === 0 ? UNSORTED_ORDER : { orderId: newId, fields: order.fields }];
    this.lastAddedOrderId = newId;
    this.changed = true;
  }

  private addSnapshot(s: Snapshot): void {
    const md = this.md;
    if (md.schemas.length === 0) throw bad('add-snapshot before a schema is added');
    if (md.snapshots.some((x) => x.snapshotId === s.snapshotId)) throw bad(`snapshot already exists for id ${s.snapshotId}`);
    if (md.formatVersion > 1 && !(s.sequenceNumber > md.lastSequenceNumber || s.parentSnapshotId === undefined)) {
      // A stale sequence number means our base is old: retry from a reload (Java RetryableValidationException).
      throw new CommitConflictError(`cannot add snapshot with sequence number ${s.sequenceNumber} older than last sequence number ${md.lastSequenceNumber}`);
    }
    if (s.summary['operation'] === undefined && md.formatVersion > 1) throw bad(`snapshot ${s.snapshotId} has no summary operation`);
    if (md.formatVersion >= 3) {
      if (s.firstRowId === undefined) throw bad('add-snapshot on a v3 table needs first-row-id');
      const next = md.nextRowId ?? 0n;
      if (s.firstRowId < next) throw new CommitConflictError(`first-row-id ${s.firstRowId} is behind the table's next-row-id ${next}`);
      md.nextRowId = next + (s.addedRows ?? 0n);
    }
    md.lastSequenceNumber = s.sequenceNumber;
    md.snapshots = [...md.snapshots, s];
    this.addedSnapshotIds.add(s.snapshotId);
    this.lastUpdatedMs = s.timestampMs;
    this.changed = true;
  }

  private setRef(name: string, ref: SnapshotRef): void {
    const md = this.md;
    const existing = md.refs[name];
    if (
      existing !== undefined &&
      existing.snapshotId === ref.snapshotId &&
      existing.type === ref.type &&
      existing.maxRefAgeMs === ref.maxRefAgeMs &&
      existing.maxSnapshotAgeMs === ref.maxSnapshotAgeMs &&
      existing.minSnapshotsToKeep === ref.minSnapshotsToKeep
    ) {
      return;
    }
    const snapshot = md.snapshots.find((s) => s.snapshotId === ref.snapshotId);
    if (snapshot === undefined) throw bad(`cannot set ${name} to unknown snapshot ${ref.snapshotId}`);
    if (name === MAIN_BRANCH && ref.type !== 'branch') throw bad('cannot set main to a tag, it must be a branch');
    if (name === MAIN_BRANCH) {
      md.currentSnapshotId = ref.snapshotId;
      // Rolling back to an existing snapshot logs the commit time; an added snapshot logs its own time.
      this.lastUpdatedMs ??= this.nowMs;
      const time = this.addedSnapshotIds.has(ref.snapshotId) ? snapshot.timestampMs : this.lastUpdatedMs;
      md.snapshotLog = [...md.snapshotLog, { timestampMs: time, snapshotId: ref.snapshotId }];
    }
    md.refs = { ...md.refs, [name]: ref };
    this.changed = true;
  }

  private removeRef(name: string): void {
    const md = this.md;
    if (md.refs[name] === undefined) return;
    const refs = { ...md.refs };
    delete refs[name];
    md.refs = refs;
    if (name === MAIN_BRANCH) md.currentSnapshotId = null;
    this.changed = true;
  }

  private removeSnapshots(ids: ReadonlySet<bigint>): void {
    const md = this.md;
    const kept = md.snapshots.filter((s) => !ids.has(s.snapshotId));
    if (kept.length === md.snapshots.length) return;
    md.snapshots = kept;
    const present = new Set(kept.map((s) => s.snapshotId));
    const snapshotIdOf = (e: unknown): bigint | undefined => {
      if (!isObject(e)) return undefined;
      const v = e['snapshot-id'];
      return typeof v === 'bigint' ? v : typeof v === 'number' ? BigInt(v) : undefined;
    };
    md.statistics = md.statistics.filter((e) => {
      const id = snapshotIdOf(e);
      return id === undefined || present.has(id);
    });
    md.partitionStatistics = md.partitionStatistics.filter((e) => {
      const id = snapshotIdOf(e);
      return id === undefined || present.has(id);
    });
    // Refs left pointing at removed snapshots are removed too (Java `removeSnapshots`).
    for (const [name, ref] of Object.entries(md.refs)) if (!present.has(ref.snapshotId)) this.removeRef(name);
    this.changed = true;
  }

  build(options: ApplyOptions): TableMetadata {
    const md = this.md;
    const base = this.base;
    md.lastUpdatedMs = this.lastUpdatedMs ?? this.nowMs;
    if (base === null) {
      if (md.tableUuid === '') throw bad('a new table needs assign-uuid');
      if (md.location === '') throw bad('a new table needs set-location');
      if (md.schemas.length === 0 || md.currentSchemaId < 0) throw bad('a new table needs add-schema and set-current-schema');
      if (md.partitionSpecs.length === 0) md.partitionSpecs = [unpartitionedSpec(0)];
      if (md.defaultSpecId < 0) md.defaultSpecId = (md.partitionSpecs[0] as PartitionSpec).specId;
      if (md.sortOrders.length === 0) md.sortOrders = [UNSORTED_ORDER];
      if (md.defaultSortOrderId < 0) md.defaultSortOrderId = (md.sortOrders[0] as SortOrder).orderId;
    }
    // The default spec must still bind to the current schema (Java checks compatibility in build()).
    const spec = md.partitionSpecs.find((s) => s.specId === md.defaultSpecId);
    if (spec === undefined) throw bad(`default spec ${md.defaultSpecId} is missing`);
    validatePartitionSpec(spec, currentSchema(md), { strict: false });

    md.snapshotLog = cleanSnapshotLog(md.snapshotLog, new Set(md.snapshots.map((s) => s.snapshotId)));
    if (base !== null && options.metadataLocation !== undefined) {
      md.metadataLog = addPreviousFile(md.metadataLog, options.metadataLocation, base.lastUpdatedMs, md.properties);
    }
    return { ...md };
  }
}

/** Java `Schema.checkCompatibility(schema, formatVersion)`: nanosecond timestamps need v3. */
function checkSchemaForVersion(schema: Schema, formatVersion: number): void {
  if (formatVersion >= 3) return;
  for (const info of indexFields(schema)) {
    const k = info.field.type.kind;
    if (k === 'timestamp_ns' || k === 'timestamptz_ns') throw bad(`field ${info.path}: type ${k} needs format version 3`);
  }
}

/** Any entry for a snapshot that no longer exists drops the history before it (Java `updateSnapshotLog`). */
function cleanSnapshotLog(log: readonly SnapshotLogEntry[], present: ReadonlySet<bigint>): SnapshotLogEntry[] {
  let out: SnapshotLogEntry[] = [];
  for (const e of log) {
    if (present.has(e.snapshotId)) out.push(e);
    else out = [];
  }
  return out;
}

function addPreviousFile(log: readonly MetadataLogEntry[], file: string, timestampMs: number, props: Readonly<Record<string, string>>): MetadataLogEntry[] {
  const configured = Number.parseInt(props['write.metadata.previous-versions-max'] ?? '', 10);
  const maxSize = Math.max(1, Number.isNaN(configured) ? DEFAULT_PREVIOUS_VERSIONS_MAX : configured);
  const kept = log.length >= maxSize ? log.slice(log.length - maxSize + 1) : [...log];
  kept.push({ timestampMs, metadataFile: file });
  return kept;
}

