/**
 * An in-memory Catalog for unit tests of everything above the catalog port (commit-retry.ts, table-ops.ts,
 * the committer loop): no database, no server, and the same answers as the REST and SQL adapters.
 *
 * It does what sql/catalog.ts does, with a Map for the pointer table: a commit loads the current metadata,
 * checks the requirements and applies the updates with the pure Iceberg code (commitUpdates: a failed
 * requirement is a CommitConflictError, an update that cannot apply a ConfigError), writes the new
 * `<NNNNN>-<uuid>.metadata.json` to the ObjectStore when one is given (create-only), then swaps the
 * pointer only if nobody swapped it meanwhile (otherwise CommitConflictError, and the file is deleted).
 * Loads answer a fresh parse of the stored JSON, so callers never share objects with the catalog.
 * Errors are the port's classes (NoSuchTable/NoSuchNamespace/...AlreadyExists, ConfigError for an empty
 * namespace); `listTables` on a missing namespace is NoSuchNamespaceError, as the REST spec answers.
 *
 * Fault injection, one queued fault per call (`commitFaults`, `loadFaults`), and hooks that change a table
 * behind the caller's back, as another writer or an operator would: `otherWriterCommit`, `setRef` (roll a
 * branch back), `replaceMetadata`, `recreateTable` (drop + create: a new table UUID).
 *
 * Owns: the fake and its faults. Must not: be used outside tests, import catalog adapters (sql/, rest/), or
 * retry anything itself.
 */
import { randomUUID } from 'node:crypto';
import { CommitConflictError, CommitStateUnknownError, ConfigError, RetriableError } from '../core/errors.ts';
import { buildAppendCommit } from '../iceberg/append.ts';
import { readManifestList } from '../iceberg/manifest-list.ts';
import { refSnapshot, snapshotIdFromUuid } from '../iceberg/metadata.ts';
import type { ObjectStore } from '../upload/port.ts';
import { commitUpdates, metadataFilePath, newTableMetadata, parseMetadataVersion, serializeTableMetadata, tableMetadataFromJson } from './model.ts';
import type { TableMetadata, TableRequirement, TableUpdate } from './model.ts';
import { NamespaceAlreadyExistsError, NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError, formatIdentifier } from './port.ts';
import type { Catalog, CreateTableRequest, LoadedTable, Namespace, TableIdentifier } from './port.ts';

/**
 * What the next commitTable call suffers:
 * - `apply-then-unknown`: the commit lands, its answer is lost (CommitStateUnknownError);
 * - `unknown`: the answer is lost and the commit did not land;
 * - `retriable`: refused before it reached the catalog (RetriableError), nothing landed;
 * - `config`: refused for good (ConfigError), nothing landed;
 * - `other-writer-first`: another writer commits (`otherWriterCommit`) just before ours is applied: a
 *   genuine conflict for a request that asserts the branch's snapshot;
 * - `lands-after-reload`: the answer is lost (CommitStateUnknownError) while the request is still in
 *   flight; it is applied right after the next loadTable took its view (and silently lost if it conflicts).
 */
export type CommitFault = 'apply-then-unknown' | 'unknown' | 'retriable' | 'config' | 'other-writer-first' | 'lands-after-reload';

/** What the next loadTable call suffers: `retriable` (RetriableError, the catalog unreachable). */
export type LoadFault = 'retriable';

export interface MemoryCatalogOptions {
  /** Default `memory`. */
  readonly name?: string;
  /** Where tables go without a location of their own: `<warehouse>/<namespace levels>/<table>`. Default `memory://warehouse`. */
  readonly warehouse?: string;
  /** Receives every metadata file (and the other writer's manifest lists), as the SQL catalog writes them. */
  readonly store?: ObjectStore;
  /** Test seams; default Date.now and crypto.randomUUID. */
  readonly now?: () => number;
  readonly uuid?: () => string;
}

export interface OtherWriterOptions {
  /** Default `main`. */
  readonly ref?: string;
  /** Extra snapshot summary properties (by default the snapshot carries none of Icefloe's keys). */
  readonly summary?: Readonly<Record<string, string>>;
}

interface Entry {
  readonly metadataLocation: string;
  readonly json: string;
}

const key = (id: TableIdentifier): string => JSON.stringify([...id.namespace, id.name]);
const nsKey = (ns: Namespace): string => JSON.stringify(ns);

export class MemoryCatalog implements Catalog {
  readonly name: string;
  /** Faults for the next commitTable calls, one per call, in order. */
  readonly commitFaults: CommitFault[] = [];
  /** Faults for the next loadTable calls, one per call, in order. */
  readonly loadFaults: LoadFault[] = [];
  /** commitTable / loadTable calls so far, faulty ones included. */
  commits = 0;
  loads = 0;
  readonly #warehouse: string;
  readonly #store: ObjectStore | undefined;
  readonly #now: () => number;
  readonly #uuid: () => string;
  readonly #namespaces = new Map<string, { namespace: Namespace; properties: Readonly<Record<string, string>> }>();
  readonly #tables = new Map<string, Entry>();
  /** A commit whose request is "still in flight" (`lands-after-reload`). */
  #inFlight: (() => Promise<unknown>) | undefined;

  constructor(options: MemoryCatalogOptions = {}) {
    this.name = options.name ?? 'memory';
    this.#warehouse = options.warehouse ?? 'memory://warehouse';
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
    this.#uuid = options.uuid ?? randomUUID;
  }

  #checkNamespace(namespace: Namespace): void {
    if (namespace.length === 0 || namespace.some((l) => l === '')) throw new ConfigError(`invalid namespace ${JSON.stringify(namespace)}`);
  }

  async listNamespaces(parent: Namespace = []): Promise<Namespace[]> {
    const children = new Map<string, Namespace>();
    for (const { namespace } of this.#namespaces.values()) {
      if (namespace.length <= parent.length || parent.some((l, i) => namespace[i] !== l)) continue;
      const child = namespace.slice(0, parent.length + 1);
      children.set(nsKey(child), child);
    }
    return [...children.values()].sort((a, b) => (a.join('.') < b.join('.') ? -1 : 1));
  }

  async namespaceExists(namespace: Namespace): Promise<boolean> {
    this.#checkNamespace(namespace);
    return this.#namespaces.has(nsKey(namespace));
  }

  async createNamespace(namespace: Namespace, properties: Readonly<Record<string, string>> = {}): Promise<void> {
    if (await this.namespaceExists(namespace)) throw new NamespaceAlreadyExistsError(namespace);
    this.#namespaces.set(nsKey(namespace), { namespace: [...namespace], properties: { ...properties } });
  }

  async listTables(namespace: Namespace): Promise<TableIdentifier[]> {
    if (!(await this.namespaceExists(namespace))) throw new NoSuchNamespaceError(namespace);
    const prefix = nsKey(namespace).slice(0, -1);
    return [...this.#tables.keys()]
      .map((k) => JSON.parse(k) as string[])
      .filter((parts) => parts.length === namespace.length + 1 && JSON.stringify(parts).startsWith(`${prefix},`))
      .map((parts) => ({ namespace: [...namespace], name: parts[parts.length - 1] as string }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async tableExists(id: TableIdentifier): Promise<boolean> {
    this.#checkNamespace(id.namespace);
    return this.#tables.has(key(id));
  }

  async createTable(id: TableIdentifier, request: CreateTableRequest): Promise<LoadedTable> {
    if (!(await this.namespaceExists(id.namespace))) throw new NoSuchNamespaceError(id.namespace);
    if (this.#tables.has(key(id))) throw new TableAlreadyExistsError(id);
    const metadata = newTableMetadata({
      schema: request.schema,
      ...(request.partitionSpec === undefined ? {} : { spec: request.partitionSpec }),
      ...(request.sortOrder === undefined ? {} : { sortOrder: request.sortOrder }),
      location: request.location ?? [this.#warehouse.replace(/\/+$/, ''), ...id.namespace, id.name].join('/'),
      properties: request.properties ?? {},
      tableUuid: this.#uuid(),
      nowMs: this.#now(),
    });
    const entry = await this.#write(metadata, 0);
    if (this.#tables.has(key(id))) throw new TableAlreadyExistsError(id); // created while we wrote the file
    this.#tables.set(key(id), entry);
    return this.#loaded(id, entry);
  }

  async loadTable(id: TableIdentifier): Promise<LoadedTable> {
    this.loads++;
    if (this.loadFaults.shift() === 'retriable') throw new RetriableError(`memory catalog ${this.name}: load of ${formatIdentifier(id)} failed (injected)`);
    const table = this.#loaded(id, this.#entry(id));
    const inFlight = this.#inFlight;
    this.#inFlight = undefined;
    // Lands after the caller's view was taken; if it conflicts, the caller never hears of it either.
    if (inFlight !== undefined) await inFlight().catch(() => undefined);
    return table;
  }

  async commitTable(id: TableIdentifier, requirements: readonly TableRequirement[], updates: readonly TableUpdate[]): Promise<LoadedTable> {
    this.commits++;
    const fault = this.commitFaults.shift();
    const table = formatIdentifier(id);
    switch (fault) {
      case undefined:
        return this.#apply(id, requirements, updates);
      case 'apply-then-unknown':
        await this.#apply(id, requirements, updates);
        throw new CommitStateUnknownError(`commit to ${table}: answer lost (injected)`);
      case 'unknown':
        throw new CommitStateUnknownError(`commit to ${table}: answer lost before applying (injected)`);
      case 'retriable':
        throw new RetriableError(`commit to ${table}: connection refused (injected)`);
      case 'config':
        throw new ConfigError(`commit to ${table}: bad request (injected)`);
      case 'other-writer-first':
        await this.otherWriterCommit(id);
        return this.#apply(id, requirements, updates);
      case 'lands-after-reload':
        this.#entry(id);
        this.#inFlight = () => this.#apply(id, requirements, updates);
        throw new CommitStateUnknownError(`commit to ${table}: time-out (injected); the request is still in flight`);
    }
  }

  async dropTable(id: TableIdentifier): Promise<void> {
    this.#entry(id);
    this.#tables.delete(key(id));
  }

  async close(): Promise<void> {}

  // -------------------------------------------------------------------------------------------------
  // Test hooks: changes made behind the caller's back.
  // -------------------------------------------------------------------------------------------------

  /**
   * Another writer's append on `ref` (Spark, compaction, a second sink): a new snapshot adding no files,
   * keeping the parent's manifests. With a store, its manifest list is written (listing the parent's
   * manifests, read from the store), so appends built on top of it can read their parent's list.
   */
  async otherWriterCommit(id: TableIdentifier, options: OtherWriterOptions = {}): Promise<LoadedTable> {
    const ref = options.ref ?? 'main';
    const base = this.#loaded(id, this.#entry(id)).metadata;
    const head = refSnapshot(base, ref);
    const parentManifests = head === undefined || this.#store === undefined ? [] : readManifestList(await this.#store.get(head.manifestList)).manifests;
    const snapshotId = snapshotIdFromUuid(this.#uuid());
    const commit = buildAppendCommit({
      base,
      manifests: { outputs: [], manifests: [], files: [], snapshotId, commitUuid: this.#uuid() },
      parentManifests,
      attempt: 0,
      nowMs: Math.max(this.#now(), base.lastUpdatedMs + 1),
      branch: ref,
      ...(options.summary === undefined ? {} : { summaryExtra: options.summary }),
    });
    await this.#store?.put(commit.manifestList.path, commit.manifestList.bytes);
    return this.#apply(id, commit.requirements, commit.updates);
  }

  /** Points `ref` at `snapshotId` (an older one: a rollback), as `set-snapshot-ref` without requirements. */
  async setRef(id: TableIdentifier, snapshotId: bigint, ref = 'main'): Promise<LoadedTable> {
    const existing = this.#loaded(id, this.#entry(id)).metadata.refs[ref];
    return this.#apply(id, [], [{ action: 'set-snapshot-ref', refName: ref, ref: { ...existing, snapshotId, type: existing?.type ?? 'branch' } }]);
  }

  /** Swaps the table's metadata for `metadata` as it is (no requirement, no validation): an operator's repair. */
  async replaceMetadata(id: TableIdentifier, metadata: TableMetadata): Promise<LoadedTable> {
    const current = this.#entry(id);
    const entry = await this.#write(metadata, Math.max(parseMetadataVersion(current.metadataLocation), -1) + 1);
    this.#tables.set(key(id), entry);
    return this.#loaded(id, entry);
  }

  /**
   * Drops the table and creates it again under the same name: a new table UUID, no snapshots. Without a
   * request, the new table copies the old one's current schema, default spec, sort order, properties and
   * location (what `CREATE OR REPLACE` without data does).
   */
  async recreateTable(id: TableIdentifier, request?: CreateTableRequest): Promise<LoadedTable> {
    const old = this.#loaded(id, this.#entry(id)).metadata;
    await this.dropTable(id);
    return this.createTable(id, request ?? createRequestOf(old));
  }

  // -------------------------------------------------------------------------------------------------

  #entry(id: TableIdentifier): Entry {
    this.#checkNamespace(id.namespace);
    const entry = this.#tables.get(key(id));
    if (entry === undefined) throw new NoSuchTableError(id);
    return entry;
  }

  #loaded(id: TableIdentifier, entry: Entry): LoadedTable {
    return { identifier: { namespace: [...id.namespace], name: id.name }, metadataLocation: entry.metadataLocation, metadata: tableMetadataFromJson(entry.json), config: {} };
  }

  /** Serializes `metadata` and writes it as metadata file `version` (create-only) when there is a store. */
  async #write(metadata: TableMetadata, version: number): Promise<Entry> {
    const metadataLocation = metadataFilePath(metadata, version, this.#uuid());
    const json = serializeTableMetadata(metadata);
    await this.#store?.put(metadataLocation, new TextEncoder().encode(json), { ifAbsent: true, contentType: 'application/json' });
    return { metadataLocation, json };
  }

  /** The catalog's half of a commit, as sql/catalog.ts does it, with a compare-and-swap on the Map. */
  async #apply(id: TableIdentifier, requirements: readonly TableRequirement[], updates: readonly TableUpdate[]): Promise<LoadedTable> {
    const current = this.#entry(id);
    const base = tableMetadataFromJson(current.json);
    const { metadata, changed } = commitUpdates(base, { requirements, updates }, { nowMs: this.#now(), metadataLocation: current.metadataLocation });
    if (!changed) return this.#loaded(id, current);
    const entry = await this.#write(metadata, Math.max(parseMetadataVersion(current.metadataLocation), -1) + 1);
    if (this.#tables.get(key(id)) !== current) {
      await this.#store?.delete(entry.metadataLocation).catch(() => undefined); // the swap lost: referenced by nothing
      throw new CommitConflictError(`commit to ${formatIdentifier(id)} conflicted: its metadata changed since ${current.metadataLocation}`, {
        context: { catalog: this.name, table: formatIdentifier(id) },
      });
    }
    this.#tables.set(key(id), entry);
    return this.#loaded(id, entry);
  }
}

/** A create request that rebuilds `md`'s current shape (schema, default spec, sort order, properties, location). */
function createRequestOf(md: TableMetadata): CreateTableRequest {
  const schema = md.schemas.find((s) => s.schemaId === md.currentSchemaId);
  const spec = md.partitionSpecs.find((s) => s.specId === md.defaultSpecId);
  const sortOrder = md.sortOrders.find((o) => o.orderId === md.defaultSortOrderId);
  if (schema === undefined) throw new ConfigError(`table at ${md.location} has no current schema ${md.currentSchemaId}`);
  return {
    schema,
    ...(spec === undefined ? {} : { partitionSpec: spec }),
    ...(sortOrder === undefined ? {} : { sortOrder }),
    properties: { ...md.properties, 'format-version': String(md.formatVersion) },
    location: md.location,
  };
}
