/**
 * The type matrix (every Iceberg type, nested several levels deep, nulls at every level, edge values)
 * written by our columnar writer and committed by our fast append, through the REST catalog and through
 * our SQL catalog on PostgreSQL, read back value by value by PyIceberg and DuckDB.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import { readTable } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import type { CatalogKind } from '../helpers/tables.ts';
import { assertSameRows, TYPE_MATRIX_SCHEMA, typeMatrixRows } from '../helpers/type-matrix.ts';

for (const kind of ['rest', 'sql'] as CatalogKind[]) {
  test(`type matrix through the ${kind === 'rest' ? 'REST' : 'SQL (PostgreSQL)'} catalog reads back exactly in PyIceberg and DuckDB`, async (t) => {
    const h = await harness(t);
    const catalog = h.catalog(kind);
    const ns = h.namespace();
    const id = ident(ns, 'types');
    const table = await createTable(h.deps(catalog), id, { schema: TYPE_MATRIX_SCHEMA });
    const rows = typeMatrixRows();
    // Two files: the rows split so that both files carry nulls and values.
    const files = await writeRows(h.store, table, rows, { rowsPerFile: 2 });
    assert.equal(files.length, 2);
    const outcome = await appendFiles(h.deps(catalog), id, { commitId: `types-${kind}`, files });
    assert.equal(outcome.status, 'committed');
    const schema = currentSchema(outcome.table.metadata);

    const readerCatalog = h.readerCatalog(catalog);
    const py = await readTable({ table: `${ns}.types`, catalog: readerCatalog });
    assertSameRows(schema, rows, py.rows ?? [], 'PyIceberg');
    // DuckDB reads through the REST catalog, or straight from the metadata file our SQL catalog wrote.
    const duck = await readTable(
      kind === 'rest' ? { table: `${ns}.types`, engine: 'duckdb' } : { table: `${ns}.types`, engine: 'duckdb', metadata_location: outcome.table.metadataLocation },
    );
    assertSameRows(schema, rows, duck.rows ?? [], 'DuckDB');
  });
}
