/**
 * Table operations: create, fast append, schema evolution, property updates — each one logical change
 * made exactly once through `commitWithRetry` (conflict → reload and rebuild; unknown outcome → reload and
 * look for it; never a blind resend).
 *
 * Owns: turning a request ("append these uploaded data files", "make the table hold this source schema")
 * into catalog commits, and writing the manifests and manifest lists an append needs to the object store.
 * Must not: write data files (the write stage did, before), delete anything (a commit whose outcome is
 * unknown may still land, so its files must stay), or import catalog or store adapters.
 */
import { randomUUID } from 'node:crypto';
import { buildAppendCommit, parentManifestListLocation, writeAppendManifests } from '../iceberg/append.ts';
import type { AppendManifests } from '../iceberg/append.ts';
import type { DataFile } from '../iceberg/data-file.ts';
import { evolveTableSchema } from '../iceberg/evolution.ts';
import { readManifestList } from '../iceberg/manifest-list.ts';
import { snapshotIdFromUuid } from '../iceberg/metadata.ts';
import { buildPartitionSpec } from '../iceberg/partition-spec.ts';
import type { PartitionSpec } from '../iceberg/partition-spec.ts';
import type { Schema } from '../iceberg/types.ts';
import type { ObjectStore } from '../upload/port.ts';
import { COMMIT_ID_KEY, commitWithRetry } from './commit-retry.ts';
import type { CommitOutcome, CommitRetryOptions } from './commit-retry.ts';
import { ensureNamespace } from './port.ts';
import type { Catalog, LoadedTable, TableIdentifier } from './port.ts';

export interface TableOpsDeps {
  readonly catalog: Catalog;
  /** Where manifests and manifest lists go (the table's location scheme). */
  readonly store: ObjectStore;
  readonly committer?: CommitRetryOptions;
  /** Injectable for tests; defaults to the system clock and crypto.randomUUID. */
  readonly nowMs?: () => number;
  readonly newUuid?: () => string;
}

/** Table properties Icefloe sets on the tables it creates, unless the caller sets them. */
export const DEFAULT_TABLE_PROPERTIES: Readonly<Record<string, string>> = {
  'format-version': '2',
  'write.format.default': 'parquet',
  'write.parquet.compression-codec': 'zstd',
};

export interface CreateTableOptions {
  readonly schema: Schema;
  /** A spec, or the Kafka Connect sink's `partition-by` text (`"bucket(id, 16), day(ts)"`); default unpartitioned. */
  readonly partitionBy?: PartitionSpec | string;
  readonly properties?: Readonly<Record<string, string>>;
  readonly location?: string;
}

/**
 * Creates the namespace if needed and the table. The answer carries the ids the catalog assigned — a REST
 * catalog renumbers fields on create — and files must be written with those, never with `schema`'s.
 */
export async function createTable(deps: TableOpsDeps, id: TableIdentifier, options: CreateTableOptions): Promise<LoadedTable> {
  await ensureNamespace(deps.catalog, id.namespace);
  const spec =
    options.partitionBy === undefined || options.partitionBy === ''
      ? undefined
      : typeof options.partitionBy === 'string'
        ? buildPartitionSpec(options.schema, options.partitionBy)
        : options.partitionBy;
  return deps.catalog.createTable(id, {
    schema: options.schema,
    ...(spec === undefined ? {} : { partitionSpec: spec }),
    properties: { ...DEFAULT_TABLE_PROPERTIES, ...options.properties },
    ...(options.location === undefined ? {} : { location: options.location }),
  });
}

export interface AppendFilesOptions {
  /** Stable for every retry of this logical commit, including after a restart; recorded in the summary. */
  readonly commitId: string;
  /** Data files already uploaded, written with the table's current field ids and partition spec. */
  readonly files: readonly DataFile[];
  /** Extra snapshot summary properties (control-topic positions, watermark, ...). */
  readonly summary?: Readonly<Record<string, string>>;
  readonly branch?: string;
  /**
   * Checked against every table state an attempt builds on: false means the commit's inputs are stale
   * (another commit advanced what they were derived from), so nothing is committed and the outcome is
   * `nothing-to-commit`; the caller plans again from the reloaded table.
   */
  readonly isCurrent?: (table: LoadedTable) => boolean;
}

/**
 * Fast-appends `files` in one snapshot. Manifests are written once; each attempt writes its own manifest
 * list on top of the branch head it was built from.
 */
export async function appendFiles(deps: TableOpsDeps, id: TableIdentifier, options: AppendFilesOptions): Promise<CommitOutcome> {
  const now = deps.nowMs ?? Date.now;
  const uuid = deps.newUuid ?? randomUUID;
  const branch = options.branch ?? 'main';
  let manifests: Promise<AppendManifests> | undefined;
  const writeManifestsOnce = (table: LoadedTable): Promise<AppendManifests> => {
    manifests ??= (async () => {
      const m = writeAppendManifests({
        base: table.metadata,
        files: options.files,
        snapshotId: snapshotIdFromUuid(uuid()),
        commitUuid: uuid(),
      });
      for (const out of m.outputs) await deps.store.put(out.path, out.bytes);
      return m;
    })();
    return manifests;
  };
  return commitWithRetry(
    deps.catalog,
    id,
    {
      commitId: options.commitId,
      ref: branch,
      async build(table, attempt) {
        if (options.isCurrent?.(table) === false) return undefined;
        const m = await writeManifestsOnce(table);
        const parentList = parentManifestListLocation(table.metadata, branch);
        const parentManifests = parentList === undefined ? [] : readManifestList(await deps.store.get(parentList)).manifests;
        const commit = buildAppendCommit({
          base: table.metadata,
          manifests: m,
          parentManifests,
          attempt: attempt - 1,
          // Snapshot timestamps must not go backwards within a table (the spec's snapshot-log ordering).
          nowMs: Math.max(now(), table.metadata.lastUpdatedMs + 1),
          branch,
          summaryExtra: { ...options.summary, [COMMIT_ID_KEY]: options.commitId },
        });
        await deps.store.put(commit.manifestList.path, commit.manifestList.bytes);
        return { requirements: commit.requirements, updates: commit.updates };
      },
    },
    deps.committer,
  );
}

export interface EvolveSchemaOptions {
  readonly caseSensitive?: boolean;
  /** Keep `schema.name-mapping.default` in step with the schema (for readers of files without ids). */
  readonly updateNameMapping?: boolean;
  /** `source` is inferred (schemaless JSON): only add the fields the table lacks (see `unionByName`). */
  readonly addColumnsOnly?: boolean;
}

/**
 * Makes the table able to hold everything in `source` (matched by name: new optional columns at any
 * depth, widening, required → optional), asserting the schema and last column id it was computed from.
 * A conflict recomputes against the reloaded table. Returns the table as committed; files must then be
 * written with its ids.
 */
export async function evolveSchema(deps: TableOpsDeps, id: TableIdentifier, source: Schema, options: EvolveSchemaOptions = {}): Promise<LoadedTable> {
  const evolve = (table: LoadedTable) =>
    evolveTableSchema(table.metadata, source, {
      ...(options.caseSensitive === undefined ? {} : { caseSensitive: options.caseSensitive }),
      ...(options.updateNameMapping === undefined ? {} : { updateNameMapping: options.updateNameMapping }),
      ...(options.addColumnsOnly === undefined ? {} : { addColumnsOnly: options.addColumnsOnly }),
    });
  const outcome = await commitWithRetry(
    deps.catalog,
    id,
    {
      commitId: `schema-${(deps.newUuid ?? randomUUID)()}`,
      guardedByOwnRequirements: true,
      isApplied: (table) => !evolve(table).changed,
      build(table) {
        const ev = evolve(table);
        return ev.changed ? { requirements: ev.requirements, updates: ev.updates } : undefined;
      },
    },
    deps.committer,
  );
  return outcome.table;
}

/** Sets and removes table properties; a no-op when the table already has them. */
export async function updateProperties(
  deps: TableOpsDeps,
  id: TableIdentifier,
  set: Readonly<Record<string, string>>,
  remove: readonly string[] = [],
): Promise<LoadedTable> {
  const pending = (table: LoadedTable) => {
    const props = table.metadata.properties;
    const toSet = Object.fromEntries(Object.entries(set).filter(([k, v]) => props[k] !== v));
    const toRemove = remove.filter((k) => k in props);
    return { toSet, toRemove, empty: Object.keys(toSet).length === 0 && toRemove.length === 0 };
  };
  const outcome = await commitWithRetry(
    deps.catalog,
    id,
    {
      commitId: `properties-${(deps.newUuid ?? randomUUID)()}`,
      guardedByOwnRequirements: true,
      isApplied: (table) => pending(table).empty,
      build(table) {
        const p = pending(table);
        if (p.empty) return undefined;
        return {
          // Properties carry no snapshot: assert the table so a replaced table is never modified.
          requirements: [{ type: 'assert-table-uuid', uuid: table.metadata.tableUuid }],
          updates: [
            ...(Object.keys(p.toSet).length > 0 ? [{ action: 'set-properties' as const, updates: p.toSet }] : []),
            ...(p.toRemove.length > 0 ? [{ action: 'remove-properties' as const, removals: p.toRemove }] : []),
          ],
        };
      },
    },
    deps.committer,
  );
  return outcome.table;
}
