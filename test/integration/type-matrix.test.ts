/**
 * The type matrix (every Iceberg type, nested several levels deep, nulls at every level, edge values)
 * written by our columnar writer and committed by our fast append, through the REST catalog and through
 * our SQL catalog on PostgreSQL, read back value by value by PyIceberg and DuckDB. Decimals also by their
 * storage: the Parquet physical type per precision as pyarrow reads it from the footers (INT32 up to
 * precision 9, INT64 up to 18, the minimal FIXED_LEN_BYTE_ARRAY above: the Parquet spec's and Java
 * Iceberg's choice), and the manifest bounds as PyIceberg reads them (Appendix D: the unscaled value as
 * minimal big-endian two's complement).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { readFooters, readTable } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import type { CatalogKind } from '../helpers/tables.ts';
import { assertSameRows, TYPE_MATRIX_SCHEMA, typeMatrixRows } from '../helpers/type-matrix.ts';
import type { Row } from '../helpers/type-matrix.ts';

/** Parquet path → physical type (and fixed length) Java Iceberg writes for the matrix's decimal columns. */
const DECIMAL_STORAGE: Record<string, [string, number, number, number]> = {
  dec_1: ['INT32', 0, 1, 0],
  dec_small: ['INT32', 0, 9, 2],
  dec_10: ['INT64', 0, 10, 0],
  'mp.key_value.value.price': ['INT64', 0, 10, 2],
  dec_18: ['INT64', 0, 18, 6],
  dec_19: ['FIXED_LEN_BYTE_ARRAY', 9, 19, 0],
  dec_big: ['FIXED_LEN_BYTE_ARRAY', 16, 38, 10],
};

/** Appendix D for a decimal, written out independently: smallest n with -2^(8n-1) <= v < 2^(8n-1). */
function decimalBoundHex(v: bigint): string {
  let n = 1;
  while (v >= 2n ** BigInt(8 * n - 1) || v < -(2n ** BigInt(8 * n - 1))) n++;
  return (v < 0n ? 2n ** BigInt(8 * n) + v : v).toString(16).padStart(2 * n, '0');
}

interface LiveFile {
  readonly lower_bounds: Record<string, string>;
  readonly upper_bounds: Record<string, string>;
}

/** Each top-level decimal column's [lower, upper] bounds per file (sorted), from the rows of each file. */
function expectedDecimalBounds(schema: Schema, files: readonly Row[][]): Record<string, string[][]> {
  const out: Record<string, string[][]> = {};
  for (const f of schema.fields) {
    if (f.type.kind !== 'decimal') continue;
    out[f.name] = files
      .map((rows) => rows.map((r) => r[f.name]).filter((v): v is bigint => typeof v === 'bigint'))
      .filter((vs) => vs.length > 0)
      .map((vs) => [decimalBoundHex(vs.reduce((a, b) => (b < a ? b : a))), decimalBoundHex(vs.reduce((a, b) => (b > a ? b : a)))])
      .sort();
  }
  return out;
}

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
    const py = await readTable({ table: `${ns}.types`, catalog: readerCatalog, files: true });
    assertSameRows(schema, rows, py.rows ?? [], 'PyIceberg');
    // Decimal bounds in the manifests: minimal big-endian two's complement of the unscaled min and max.
    assert.equal(decimalBoundHex(-9n), 'f7');
    assert.equal(decimalBoundHex(2n ** 63n), '008000000000000000');
    const live = py['live_files'] as LiveFile[];
    const byName = (f: LiveFile, which: 'lower_bounds' | 'upper_bounds', name: string): string | undefined =>
      f[which][String(schema.fields.find((x) => x.name === name)?.id)];
    const got = Object.fromEntries(
      Object.keys(expectedDecimalBounds(schema, [])).map((name) => [
        name,
        live.filter((f) => byName(f, 'lower_bounds', name) !== undefined).map((f) => [byName(f, 'lower_bounds', name), byName(f, 'upper_bounds', name)]).sort(),
      ]),
    );
    assert.deepEqual(got, expectedDecimalBounds(schema, [rows.slice(0, 2), rows.slice(2)]));
    if (kind === 'rest') {
      // How each decimal is stored, per precision, as pyarrow reads every data file's footer.
      const footers = await readFooters({ table: `${ns}.types` });
      assert.equal(footers.files.length, 2);
      for (const file of footers.files) {
        for (const [path, [physical, length, precision, scale]] of Object.entries(DECIMAL_STORAGE)) {
          const c = file.columns[path];
          assert.deepEqual([c?.physical_type, c?.length, c?.logical_type], [physical, length, { Type: 'Decimal', precision, scale }], `${file.file_path}: ${path}`);
        }
      }
    }
    // DuckDB reads through the REST catalog, or straight from the metadata file our SQL catalog wrote.
    const duck = await readTable(
      kind === 'rest' ? { table: `${ns}.types`, engine: 'duckdb' } : { table: `${ns}.types`, engine: 'duckdb', metadata_location: outcome.table.metadataLocation },
    );
    assertSameRows(schema, rows, duck.rows ?? [], 'DuckDB');
  });
}
