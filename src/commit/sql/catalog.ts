/**
 * Catalog adapter in the exact layout of Java's JdbcCatalog and PyIceberg's SqlCatalog (schema "V1",
 * iceberg-writer.md §4.2), on PostgreSQL or SQLite (driver.ts), so Spark, Trino, PyIceberg and the REST
 * fixture's own JdbcCatalog read and write the same tables:
 *
 *   iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
 *                  previous_metadata_location, iceberg_type)              PK (catalog, namespace, name)
 *   iceberg_namespace_properties(catalog_name, namespace, property_key, property_value)
 *
 * Namespaces are their levels joined with `.`; a namespace exists when a table or a property row names it
 * (Java writes the property `exists=true`). A table row's iceberg_type is 'TABLE' (NULL from writers
 * older than V1 is read as a table; 'VIEW' rows are not tables).
 *
 * Owns: the catalog's half of a commit, which a REST server would do: load the current metadata, check
 * the requirements and apply the updates (iceberg/apply-updates.ts commitUpdates, which also records the
 * replaced file in metadata-log), write `<metadata dir>/<NNNNN>-<uuid>.metadata.json` through the ObjectStore (create-only), then swap the
 * pointer with compare-and-swap:
 *   UPDATE iceberg_tables SET metadata_location = new, previous_metadata_location = old
 *    WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = old
 * 1 row: committed. 0 rows: CommitConflictError (someone else swapped first). The connection lost while
 * the UPDATE was out: re-read the row — our location there means committed, otherwise
 * CommitStateUnknownError (a PostgreSQL backend may still finish the statement).
 * Must not: delete a metadata file unless the swap definitively failed (conflict), or log the database URL.
 */
import { randomUUID } from 'node:crypto';
import {
  CommitConflictError,
  CommitStateUnknownError,
  ConfigError,
  FatalError,
  IcefloeError,
  RetriableError,
} from '../../core/errors.ts';
import { parseJson } from '../../core/json.ts';
import { joinLocation } from '../../upload/location.ts';
import type { ObjectStore } from '../../upload/port.ts';
import {
  commitUpdates,
  metadataFilePath,
  newTableMetadata,
  parseMetadataVersion,
  serializeTableMetadata,
  tableMetadataFromJson,
} from '../model.ts';
import type { TableMetadata, TableRequirement, TableUpdate } from '../model.ts';
import {
  NamespaceAlreadyExistsError,
  NoSuchNamespaceError,
  NoSuchTableError,
  TableAlreadyExistsError,
  formatIdentifier,
} from '../port.ts';
import type { Catalog, CreateTableRequest, LoadedTable, Namespace, TableIdentifier } from '../port.ts';
import { SqlDriverError } from './driver.ts';
import type { SqlDriver, SqlValue } from './driver.ts';

export interface SqlCatalogConfig {
  /** The `catalog_name` column: several catalogs can share the two tables. */
  readonly name: string;
  readonly driver: SqlDriver;
  /** Where metadata files are written and read (s3://, file://). */
  readonly store: ObjectStore;
  /** Root for new tables: `<warehouse>/<ns levels...>/<table>` (Java JdbcCatalog's default location). */
  readonly warehouse: string;
  /** Create the two tables if absent (default true). */
  readonly initTables?: boolean;
  /** Test seams. */
  readonly now?: () => number;
  readonly uuid?: () => string;
}

// Java JdbcUtil's DDL (V1 schema); PyIceberg declares the same names and sizes.
const CREATE_TABLES = `CREATE TABLE IF NOT EXISTS iceberg_tables (
  catalog_name VARCHAR(255) NOT NULL,
  table_namespace VARCHAR(255) NOT NULL,
  table_name VARCHAR(255) NOT NULL,
  metadata_location VARCHAR(1000),
  previous_metadata_location VARCHAR(1000),
  iceberg_type VARCHAR(5),
  PRIMARY KEY (catalog_name, table_namespace, table_name)
)`;
const CREATE_NAMESPACE_PROPERTIES = `CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
  catalog_name VARCHAR(255) NOT NULL,
  namespace VARCHAR(255) NOT NULL,
  property_key VARCHAR(255),
  property_value VARCHAR(1000),
  PRIMARY KEY (catalog_name, namespace, property_key)
)`;

const TABLE_TYPE = 'TABLE';
const NAMESPACE_EXISTS_PROPERTY = 'exists';

/** LIKE pattern for "this namespace's children": `a.b.%`, with `!` escaping LIKE's wildcards. */
function childPattern(ns: string): string {
  return `${ns.replace(/[!%_]/g, (c) => `!${c}`)}.%`;
}

export class SqlCatalog implements Catalog {
  readonly name: string;
  readonly #driver: SqlDriver;
  readonly #store: ObjectStore;
  readonly #warehouse: string;
  readonly #initTables: boolean;
  readonly #now: () => number;
  readonly #uuid: () => string;
  /** V1 (iceberg_type column present) or V0. */
  #ready: Promise<{ v1: boolean }> | undefined;

  constructor(config: SqlCatalogConfig) {
    if (config.name === '') throw new ConfigError('the SQL catalog needs a name (its catalog_name)');
    this.name = config.name;
    this.#driver = config.driver;
    this.#store = config.store;
    this.#warehouse = config.warehouse;
    this.#initTables = config.initTables ?? true;
    this.#now = config.now ?? Date.now;
    this.#uuid = config.uuid ?? randomUUID;
  }

  /** Translates a driver failure of a read or a plain write (not the commit's swap) once. */
  #fail(e: unknown, what: string): IcefloeError {
    if (e instanceof IcefloeError) return e;
    const context = { catalog: this.name, op: what, ...(e instanceof SqlDriverError && e.code !== undefined ? { sqlCode: e.code } : {}) };
    if (e instanceof SqlDriverError) {
      switch (e.kind) {
        case 'not-sent':
        case 'transient':
        case 'connection-lost':
          return new RetriableError(`SQL catalog ${this.name}: ${what} failed (${e.kind})`, { cause: e.cause, context });
        case 'undefined-object':
          return new ConfigError(`SQL catalog ${this.name}: the catalog tables are missing or outdated (${what})`, { cause: e.cause, context });
        default:
          return new ConfigError(`SQL catalog ${this.name}: ${what} failed (${e.code ?? 'SQL error'})`, { cause: e.cause, context });
      }
    }
    return new FatalError(`SQL catalog ${this.name}: ${what} failed`, { cause: e, context });
  }

  async #query(sql: string, params: readonly SqlValue[], what: string): Promise<Record<string, unknown>[]> {
    try {
      return await this.#driver.query(sql, params);
    } catch (e) {
      throw this.#fail(e, what);
    }
  }

  /** Creates the tables if asked to, and detects the schema version (as PyIceberg does). */
  #init(): Promise<{ v1: boolean }> {
    this.#ready ??= (async () => {
      if (this.#initTables) {
        for (const ddl of [CREATE_TABLES, CREATE_NAMESPACE_PROPERTIES]) {
          try {
            await this.#driver.execute(ddl);
          } catch (e) {
            // Two processes creating the tables at once: PostgreSQL reports the loser as a unique violation.
            if (!(e instanceof SqlDriverError && e.kind === 'unique-violation')) throw this.#fail(e, 'create catalog tables');
          }
        }
      }
      try {
        await this.#driver.query('SELECT iceberg_type FROM iceberg_tables WHERE 1 = 0');
        return { v1: true };
      } catch (e) {
        if (e instanceof SqlDriverError && (e.kind === 'undefined-object' || e.kind === 'other')) {
          // Probe the table itself: missing entirely is a configuration problem, not a V0 schema.
          await this.#query('SELECT 1 FROM iceberg_tables WHERE 1 = 0', [], 'probe catalog tables');
          return { v1: false };
        }
        throw this.#fail(e, 'probe catalog tables');
      }
    })().catch((e: unknown) => {
      this.#ready = undefined;
      throw e;
    });
    return this.#ready;
  }

  async #typeFilter(): Promise<string> {
    return (await this.#init()).v1 ? ` AND (iceberg_type = '${TABLE_TYPE}' OR iceberg_type IS NULL)` : '';
  }

  #ns(namespace: Namespace): string {
    if (namespace.length === 0 || namespace.some((l) => l === '' || l.includes('.'))) {
      throw new ConfigError(`invalid namespace ${JSON.stringify(namespace)} for a SQL catalog (levels are joined with '.')`);
    }
    return namespace.join('.');
  }

  async listNamespaces(parent: Namespace = []): Promise<Namespace[]> {
    await this.#init();
    const params: SqlValue[] = [this.name, this.name];
    let tableWhere = '';
    let propWhere = '';
    if (parent.length > 0) {
      const p = childPattern(this.#ns(parent));
      tableWhere = " AND table_namespace LIKE ? ESCAPE '!'";
      propWhere = " AND namespace LIKE ? ESCAPE '!'";
      params.splice(1, 0, p);
      params.push(p);
    }
    const rows = await this.#query(
      `SELECT table_namespace AS ns FROM iceberg_tables WHERE catalog_name = ?${tableWhere}
       UNION SELECT namespace AS ns FROM iceberg_namespace_properties WHERE catalog_name = ?${propWhere}`,
      params,
      'list namespaces',
    );
    const seen = new Map<string, Namespace>();
    for (const row of rows) {
      const levels = String(row['ns']).split('.');
      if (levels.length <= parent.length || parent.some((l, i) => levels[i] !== l)) continue;
      const child = levels.slice(0, parent.length + 1);
      seen.set(child.join('.'), child);
    }
    return [...seen.values()].sort((a, b) => (a.join('.') < b.join('.') ? -1 : 1));
  }

  async namespaceExists(namespace: Namespace): Promise<boolean> {
    await this.#init();
    const ns = this.#ns(namespace);
    const like = childPattern(ns);
    const rows = await this.#query(
      `SELECT 1 AS hit FROM iceberg_tables WHERE catalog_name = ? AND (table_namespace = ? OR table_namespace LIKE ? ESCAPE '!')
       UNION ALL
       SELECT 1 AS hit FROM iceberg_namespace_properties WHERE catalog_name = ? AND (namespace = ? OR namespace LIKE ? ESCAPE '!')`,
      [this.name, ns, like, this.name, ns, like],
      'check namespace',
    );
    return rows.length > 0;
  }

  async createNamespace(namespace: Namespace, properties: Readonly<Record<string, string>> = {}): Promise<void> {
    await this.#init();
    const ns = this.#ns(namespace);
    if (await this.namespaceExists(namespace)) throw new NamespaceAlreadyExistsError(namespace);
    const props = { ...properties, [NAMESPACE_EXISTS_PROPERTY]: 'true' };
    try {
      await this.#driver.transaction(
        Object.entries(props).map(([k, v]) => ({
          sql: 'INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value) VALUES (?, ?, ?, ?)',
          params: [this.name, ns, k, v],
        })),
      );
    } catch (e) {
      if (e instanceof SqlDriverError && e.kind === 'unique-violation') throw new NamespaceAlreadyExistsError(namespace, { cause: e.cause });
      throw this.#fail(e, 'create namespace');
    }
  }

  async listTables(namespace: Namespace): Promise<TableIdentifier[]> {
    const filter = await this.#typeFilter();
    const rows = await this.#query(
      `SELECT table_name FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?${filter} ORDER BY table_name`,
      [this.name, this.#ns(namespace)],
      'list tables',
    );
    return rows.map((r) => ({ namespace: [...namespace], name: String(r['table_name']) }));
  }

  async #row(id: TableIdentifier): Promise<{ metadataLocation: string } | undefined> {
    const filter = await this.#typeFilter();
    const rows = await this.#query(
      `SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?${filter}`,
      [this.name, this.#ns(id.namespace), id.name],
      'read table pointer',
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    const location = row['metadata_location'];
    if (typeof location !== 'string' || location === '') {
      throw new FatalError(`SQL catalog ${this.name}: table ${formatIdentifier(id)} has no metadata_location`, { context: { table: formatIdentifier(id) } });
    }
    return { metadataLocation: location };
  }

  async tableExists(id: TableIdentifier): Promise<boolean> {
    return (await this.#row(id)) !== undefined;
  }

  async #readMetadata(location: string): Promise<TableMetadata> {
    const bytes = await this.#store.get(location);
    return tableMetadataFromJson(parseJson(new TextDecoder().decode(bytes)));
  }

  /** Writes a new metadata file (create-only: the name is unique, an existing file means a bug). */
  async #writeMetadata(md: TableMetadata, version: number): Promise<string> {
    const location = metadataFilePath(md, version, this.#uuid());
    await this.#store.put(location, new TextEncoder().encode(serializeTableMetadata(md)), {
      ifAbsent: true,
      contentType: 'application/json',
    });
    return location;
  }

  async loadTable(id: TableIdentifier): Promise<LoadedTable> {
    const row = await this.#row(id);
    if (row === undefined) throw new NoSuchTableError(id);
    return { identifier: id, metadataLocation: row.metadataLocation, metadata: await this.#readMetadata(row.metadataLocation), config: {} };
  }

  async createTable(id: TableIdentifier, request: CreateTableRequest): Promise<LoadedTable> {
    const filter = await this.#typeFilter();
    const ns = this.#ns(id.namespace);
    if (!(await this.namespaceExists(id.namespace))) throw new NoSuchNamespaceError(id.namespace);
    if ((await this.#row(id)) !== undefined) throw new TableAlreadyExistsError(id);
    const md = newTableMetadata({
      schema: request.schema,
      ...(request.partitionSpec === undefined ? {} : { spec: request.partitionSpec }),
      ...(request.sortOrder === undefined ? {} : { sortOrder: request.sortOrder }),
      location: request.location ?? joinLocation(this.#warehouse, ...id.namespace, id.name),
      properties: request.properties ?? {},
      tableUuid: this.#uuid(),
      nowMs: this.#now(),
    });
    const location = await this.#writeMetadata(md, 0);
    try {
      const columns = filter === '' ? '' : ', iceberg_type';
      const values = filter === '' ? '' : ', ?';
      await this.#driver.execute(
        `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location${columns})
         VALUES (?, ?, ?, ?, NULL${values})`,
        filter === '' ? [this.name, ns, id.name, location] : [this.name, ns, id.name, location, TABLE_TYPE],
      );
    } catch (e) {
      if (e instanceof SqlDriverError && e.kind === 'unique-violation') {
        await this.#store.delete(location).catch(() => undefined); // never referenced: ours to remove
        throw new TableAlreadyExistsError(id, { cause: e.cause });
      }
      throw this.#fail(e, 'create table');
    }
    return { identifier: id, metadataLocation: location, metadata: md, config: {} };
  }

  async commitTable(id: TableIdentifier, requirements: readonly TableRequirement[], updates: readonly TableUpdate[]): Promise<LoadedTable> {
    const filter = await this.#typeFilter();
    const table = formatIdentifier(id);
    const context = { catalog: this.name, table };
    const row = await this.#row(id);
    if (row === undefined) throw new NoSuchTableError(id);
    const base = await this.#readMetadata(row.metadataLocation);
    // Requirements (CommitConflictError), updates (ConfigError when one cannot apply) and metadata-log,
    // as a REST server's TableMetadata.Builder does them.
    const { metadata: next, changed: anything } = commitUpdates(base, { requirements, updates }, { nowMs: this.#now(), metadataLocation: row.metadataLocation });
    if (!anything) return { identifier: id, metadataLocation: row.metadataLocation, metadata: base, config: {} };
    const version = Math.max(parseMetadataVersion(row.metadataLocation), -1) + 1;
    const location = await this.#writeMetadata(next, version);

    let changed: number;
    try {
      changed = await this.#driver.execute(
        `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?
          WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?${filter}`,
        [location, row.metadataLocation, this.name, this.#ns(id.namespace), id.name, row.metadataLocation],
      );
    } catch (e) {
      const kind = e instanceof SqlDriverError ? e.kind : 'connection-lost';
      const ctx = { ...context, ...(e instanceof SqlDriverError && e.code !== undefined ? { sqlCode: e.code } : {}) };
      if (kind === 'not-sent' || kind === 'transient') {
        // The UPDATE did not run: nothing changed, a rebuild-and-retry is safe.
        throw new RetriableError(`SQL catalog ${this.name}: commit to ${table} did not run (${kind})`, { cause: e, context: ctx });
      }
      if (kind === 'connection-lost') {
        // Did it land? Only our own location in the row says yes for certain.
        const now = await this.#row(id).catch(() => undefined);
        if (now?.metadataLocation === location) return { identifier: id, metadataLocation: location, metadata: next, config: {} };
        throw new CommitStateUnknownError(`SQL catalog ${this.name}: connection lost while committing to ${table}: outcome unknown`, {
          cause: e,
          context: ctx,
        });
      }
      throw new ConfigError(`SQL catalog ${this.name}: commit to ${table} failed`, { cause: e, context: ctx });
    }
    if (changed === 0) {
      await this.#store.delete(location).catch(() => undefined); // the swap lost: this file is referenced by nothing
      throw new CommitConflictError(`commit to ${table} conflicted: its metadata changed since ${row.metadataLocation}`, { context });
    }
    return { identifier: id, metadataLocation: location, metadata: next, config: {} };
  }

  async dropTable(id: TableIdentifier): Promise<void> {
    const filter = await this.#typeFilter();
    let changed: number;
    try {
      changed = await this.#driver.execute(
        `DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?${filter}`,
        [this.name, this.#ns(id.namespace), id.name],
      );
    } catch (e) {
      throw this.#fail(e, 'drop table');
    }
    if (changed === 0) throw new NoSuchTableError(id);
  }

  async close(): Promise<void> {
    await this.#driver.close();
  }
}
