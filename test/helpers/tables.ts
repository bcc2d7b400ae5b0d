/**
 * Integration harness for Iceberg tables on the real stack: catalogs (the REST fixture, directly or through
 * the fault proxy; our SQL catalog on PostgreSQL with a unique catalog_name), the S3 store, unique
 * namespaces, and `writeRows` — logical rows through the real columnar writer into data files on S3,
 * partitioned by the table's spec — so tests exercise the same code the sink runs.
 *
 * Every resource a test creates is registered for cleanup with `harness(t)`'s `after`.
 */
import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import type { DataFile } from '../../src/iceberg/data-file.ts';
import { currentSchema, defaultSpec } from '../../src/iceberg/metadata.ts';
import { bindPartitionSpec, partitionPath } from '../../src/iceberg/partition-spec.ts';
import type { PartitionValue, PrimitiveValue, Schema } from '../../src/iceberg/types.ts';
import type { Catalog, LoadedTable, TableIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { SqlCatalog } from '../../src/commit/sql/catalog.ts';
import { PostgresDriver } from '../../src/commit/sql/postgres.ts';
import type { TableOpsDeps } from '../../src/commit/table-ops.ts';
import { S3ObjectStore } from '../../src/upload/s3/store.ts';
import { buildLayout, DataFileWriter, DEFAULT_WRITE_CONFIG } from '../../src/write/index.ts';
import type { WriteConfig } from '../../src/write/index.ts';
import { appendRow } from './rows.ts';
import { requireReachable, stackEndpoints, s3Settings } from './stack.ts';
import type { Row } from './type-matrix.ts';

export type CatalogKind = 'rest' | 'sql';

export interface Harness {
  readonly store: S3ObjectStore;
  /** The REST fixture; `viaProxy` routes it through the fault-injection proxy. */
  rest(options?: { viaProxy?: boolean }): RestCatalog;
  /** Our SQL catalog on the stack's PostgreSQL, under a fresh catalog_name. */
  sql(): SqlCatalog;
  catalog(kind: CatalogKind): Catalog;
  deps(catalog: Catalog): TableOpsDeps;
  /** A fresh single-level namespace name. */
  namespace(): string;
  /** What test/helpers/readers.ts needs to read a table of `catalog` (kind, and the SQL catalog's name). */
  readerCatalog(catalog: Catalog): { kind: 'rest' } | { kind: 'sql'; name: string };
}

/** Checks the services tables need and returns a harness whose resources close after the test. */
export async function harness(t: TestContext): Promise<Harness> {
  const e = stackEndpoints();
  await requireReachable('S3 (moto)', e.s3Endpoint);
  await requireReachable('Iceberg REST catalog', e.catalogUri);
  await requireReachable('PostgreSQL', e.postgresUrl.replace(/^postgresql:\/\/[^@]*@/, 'tcp://'));
  const closers: (() => Promise<void>)[] = [];
  const sqlNames: string[] = [];
  const store = new S3ObjectStore(s3Settings());
  closers.push(() => store.close());
  t.after(async () => {
    if (sqlNames.length > 0) {
      const driver = new PostgresDriver({ connectionString: e.postgresUrl });
      for (const name of sqlNames) {
        await driver.execute('DELETE FROM iceberg_tables WHERE catalog_name = ?', [name]);
        await driver.execute('DELETE FROM iceberg_namespace_properties WHERE catalog_name = ?', [name]);
      }
      await driver.close();
    }
    for (const close of closers.reverse()) await close();
  });
  const sqlCatalogs = new WeakMap<Catalog, string>();
  const h: Harness = {
    store,
    rest(options = {}) {
      const uri = options.viaProxy === true ? e.proxyCatalogUri : e.catalogUri;
      const catalog = new RestCatalog({ uri, name: e.catalogName, warehouse: e.catalogWarehouse, requestTimeoutMs: 20_000 });
      closers.push(() => catalog.close());
      return catalog;
    },
    sql() {
      const name = `it_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
      sqlNames.push(name);
      const catalog = new SqlCatalog({
        name,
        driver: new PostgresDriver({ connectionString: e.postgresUrl }),
        store,
        warehouse: `s3://${e.s3Bucket}/it-sql/${name}`,
      });
      sqlCatalogs.set(catalog, name);
      closers.push(() => catalog.close());
      return catalog;
    },
    catalog(kind) {
      return kind === 'rest' ? h.rest() : h.sql();
    },
    deps(catalog) {
      // Fast retries: tests force conflicts on purpose.
      return { catalog, store, committer: { retry: { initialDelayMs: 20, maxDelayMs: 500 } } };
    },
    namespace() {
      return `it_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    },
    readerCatalog(catalog) {
      const name = sqlCatalogs.get(catalog);
      return name === undefined ? { kind: 'rest' } : { kind: 'sql', name };
    },
  };
  return h;
}

export interface WriteRowsOptions {
  /** Writer settings (small targets force several files). */
  readonly config?: Partial<WriteConfig>;
  /** One data file per call by default; with `rowsPerFile`, rows are split into several files. */
  readonly rowsPerFile?: number;
}

/**
 * Writes `rows` (logical values, type-matrix convention) into data files of `table`, with the table's
 * current schema ids and default partition spec: rows are grouped by their partition tuple and each
 * group gets its own writer, as the sink's partitioner will. Returns the uploaded files, not yet committed.
 */
export async function writeRows(store: S3ObjectStore, table: LoadedTable, rows: readonly Row[], options: WriteRowsOptions = {}): Promise<DataFile[]> {
  const md = table.metadata;
  const schema: Schema = currentSchema(md);
  const spec = defaultSpec(md);
  const bound = bindPartitionSpec(spec, schema);
  const layout = buildLayout(schema);
  // Partition sources are top-level columns in these tests: map source id → column name.
  const nameOf = new Map(schema.fields.map((f) => [f.id, f.name]));
  const groups = new Map<string, { partition: PartitionValue[]; rows: Row[] }>();
  for (const row of rows) {
    const partition = bound.map((b) => {
      const v = row[nameOf.get(b.field.sourceId) ?? ''] ?? null;
      return v === null ? null : b.apply(v as PrimitiveValue);
    });
    const key = JSON.stringify(partition, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v));
    const g = groups.get(key) ?? { partition, rows: [] };
    g.rows.push(row);
    groups.set(key, g);
  }
  const files: DataFile[] = [];
  for (const g of groups.values()) {
    const chunk = options.rowsPerFile ?? g.rows.length;
    for (let i = 0; i < g.rows.length; i += chunk) {
      const writer = new DataFileWriter({
        layout,
        store,
        newLocation: () => `${md.location}/data/${spec.fields.length === 0 ? '' : `${partitionPath(spec, schema, g.partition)}/`}${randomUUID()}.parquet`,
        partition: g.partition,
        specId: spec.specId,
        ...(options.config === undefined ? {} : { config: { ...DEFAULT_WRITE_CONFIG, ...options.config } }),
      });
      for (const row of g.rows.slice(i, i + chunk)) {
        if (appendRow(writer.appender, schema.fields, row)) await writer.flushIfNeeded();
      }
      files.push(...(await writer.complete()));
      await writer.close();
    }
  }
  return files;
}

export function ident(namespace: string, name: string): TableIdentifier {
  return { namespace: [namespace], name };
}
