/**
 * The catalog port: the one place data becomes visible. Adapters: `rest/` (the Iceberg REST catalog,
 * including AWS Glue and S3 Tables through SigV4) and `sql/` (the JdbcCatalog/PyIceberg SqlCatalog table
 * layout on PostgreSQL or SQLite).
 *
 * Owns: the operations the sink needs, table identifiers, and the error contract every adapter keeps:
 * - `CommitConflictError`: the commit was refused and did NOT happen (REST 409, SQL compare-and-swap
 *   lost, a requirement failed). Reload, rebuild, retry.
 * - `CommitStateUnknownError`: the commit may or may not have happened (5xx, time-out, connection lost
 *   after the request was sent). Never resend blindly and never delete its files: reload and look for the
 *   commit id (commit-retry.ts).
 * - `RetriableError`: a read or a request that provably never reached the catalog failed transiently.
 * - `NoSuchTableError` / `NoSuchNamespaceError` / `...AlreadyExistsError`: below; not retriable.
 * - `ConfigError`: credentials, URIs, a request the catalog rejects as malformed.
 * Must not: log secrets (tokens, keys, the `config` a catalog vends), or retry a commit by itself.
 */
import { ConfigError } from '../core/errors.ts';
import type { ErrorOptions } from '../core/errors.ts';
import type { PartitionSpec, Schema, SortOrder, TableMetadata, TableRequirement, TableUpdate } from './model.ts';

export type Namespace = readonly string[];

export interface TableIdentifier {
  readonly namespace: Namespace;
  readonly name: string;
}

export interface CreateTableRequest {
  readonly schema: Schema;
  /** Default: unpartitioned. */
  readonly partitionSpec?: PartitionSpec;
  /** Default: unsorted. */
  readonly sortOrder?: SortOrder;
  readonly properties?: Readonly<Record<string, string>>;
  /** Default: the catalog's choice (warehouse/namespace/table). */
  readonly location?: string;
}

export interface LoadedTable {
  readonly identifier: TableIdentifier;
  readonly metadataLocation: string;
  readonly metadata: TableMetadata;
  /**
   * Per-table settings the catalog hands out (REST LoadTableResult `config`: endpoints, vended
   * credentials). May hold secrets: never log it.
   */
  readonly config: Readonly<Record<string, string>>;
}

export interface CommitOptions {
  /**
   * REST `Idempotency-Key` for catalogs that advertise `idempotency-key-lifetime`: the same key for a
   * resend of the identical request. Ignored by catalogs without it.
   */
  readonly idempotencyKey?: string;
}

export interface Catalog {
  /** The catalog's name (the SQL catalog's `catalog_name`; the REST catalog's configured name). */
  readonly name: string;
  /** Child namespaces of `parent` (top level when omitted). */
  listNamespaces(parent?: Namespace): Promise<Namespace[]>;
  namespaceExists(namespace: Namespace): Promise<boolean>;
  /** NamespaceAlreadyExistsError when it exists (see ensureNamespace). */
  createNamespace(namespace: Namespace, properties?: Readonly<Record<string, string>>): Promise<void>;
  listTables(namespace: Namespace): Promise<TableIdentifier[]>;
  tableExists(id: TableIdentifier): Promise<boolean>;
  /** TableAlreadyExistsError / NoSuchNamespaceError. The answer carries the ids the catalog assigned. */
  createTable(id: TableIdentifier, request: CreateTableRequest): Promise<LoadedTable>;
  /** NoSuchTableError when absent. */
  loadTable(id: TableIdentifier): Promise<LoadedTable>;
  /**
   * Applies `updates` if every requirement holds, atomically; answers the new metadata. Errors per the
   * contract above. Never retried inside the adapter.
   */
  commitTable(
    id: TableIdentifier,
    requirements: readonly TableRequirement[],
    updates: readonly TableUpdate[],
    options?: CommitOptions,
  ): Promise<LoadedTable>;
  /** Removes the table from the catalog; never deletes its files. NoSuchTableError when absent. */
  dropTable(id: TableIdentifier): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------
// Errors. Proposed for core/errors.ts as NotFoundError (code NOT_FOUND) and AlreadyExistsError
// (code ALREADY_EXISTS); until then ConfigError subclasses, so nothing retries them.
// ---------------------------------------------------------------------------------------------------

export class NoSuchTableError extends ConfigError {
  constructor(id: TableIdentifier, options?: ErrorOptions) {
    super(`table ${formatIdentifier(id)} does not exist`, { ...options, context: { table: formatIdentifier(id), ...options?.context } });
  }
}

export class NoSuchNamespaceError extends ConfigError {
  constructor(namespace: Namespace, options?: ErrorOptions) {
    super(`namespace ${namespace.join('.')} does not exist`, { ...options, context: { namespace: namespace.join('.'), ...options?.context } });
  }
}

export class TableAlreadyExistsError extends ConfigError {
  constructor(id: TableIdentifier, options?: ErrorOptions) {
    super(`table ${formatIdentifier(id)} already exists`, { ...options, context: { table: formatIdentifier(id), ...options?.context } });
  }
}

export class NamespaceAlreadyExistsError extends ConfigError {
  constructor(namespace: Namespace, options?: ErrorOptions) {
    super(`namespace ${namespace.join('.')} already exists`, { ...options, context: { namespace: namespace.join('.'), ...options?.context } });
  }
}

// ---------------------------------------------------------------------------------------------------
// Identifiers
// ---------------------------------------------------------------------------------------------------

/** `a.b.t` for namespace [a, b] and table t (the Connect config and log form). */
export function formatIdentifier(id: TableIdentifier): string {
  return [...id.namespace, id.name].join('.');
}

/** `a.b.t` → namespace [a, b], table t. At least one namespace level is required. */
export function parseIdentifier(text: string): TableIdentifier {
  const parts = text.split('.');
  const name = parts.pop();
  if (name === undefined || name === '' || parts.length === 0 || parts.some((p) => p === '')) {
    throw new ConfigError(`table identifier must be namespace.table, got ${JSON.stringify(text)}`, { context: { table: text } });
  }
  return { namespace: parts, name };
}

/**
 * Creates the namespace unless it exists (tolerating a concurrent creator). A concurrent creator does not
 * always surface as AlreadyExists: Iceberg's JdbcCatalog behind a REST server inserts the namespace's rows
 * without a guard, so the loser of a race gets a 500 (a duplicate-key SQL error). Whatever the failure, a
 * namespace that exists afterwards is what we asked for.
 */
export async function ensureNamespace(catalog: Catalog, namespace: Namespace, properties?: Readonly<Record<string, string>>): Promise<void> {
  if (await catalog.namespaceExists(namespace)) return;
  try {
    await catalog.createNamespace(namespace, properties);
  } catch (e) {
    if (e instanceof NamespaceAlreadyExistsError) return;
    if (await catalog.namespaceExists(namespace).catch(() => false)) return;
    throw e;
  }
}
