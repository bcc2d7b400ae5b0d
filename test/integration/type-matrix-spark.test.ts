/**
 * Apache Spark as a third independent reader: the type matrix, written and committed as in
 * type-matrix.test.ts (our columnar writer, our fast append, through the REST catalog), read back by
 * Spark 4.1 with Iceberg's own Spark runtime (test/readers/read_spark.py) and compared value by value —
 * once with every column (Iceberg's row-based Parquet reader, as nested columns require) and once with
 * the primitive columns only (its vectorized Arrow reader), in one Spark session.
 *
 * Spark cannot load a table with an Iceberg `time` column at all, whatever the query selects
 * (apache/iceberg#16663, open): so this table is the type matrix without its one time column, `tm`, which
 * PyIceberg and DuckDB check in type-matrix.test.ts. A Spark session takes ~5-10 s to start on 2 cores,
 * so this is one test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { readTable } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import { assertSameRows, TYPE_MATRIX_SCHEMA, typeMatrixRows } from '../helpers/type-matrix.ts';

const SCHEMA: Schema = { ...TYPE_MATRIX_SCHEMA, fields: TYPE_MATRIX_SCHEMA.fields.filter((f) => f.type.kind !== 'time') };

interface SparkRead {
  columnar: boolean;
  rows: Record<string, unknown>[];
}

test('type matrix (but time) through the REST catalog reads back exactly in Spark, row-based and vectorized', async (t) => {
  assert.deepEqual(
    TYPE_MATRIX_SCHEMA.fields.filter((f) => !SCHEMA.fields.includes(f)).map((f) => f.name),
    ['tm'],
  );
  const h = await harness(t);
  const catalog = h.rest();
  const ns = h.namespace();
  const id = ident(ns, 'types');
  const table = await createTable(h.deps(catalog), id, { schema: SCHEMA });
  const rows = typeMatrixRows().map(({ tm: _time, ...row }) => row);
  // Two files: the rows split so that both files carry nulls and values.
  const files = await writeRows(h.store, table, rows, { rowsPerFile: 2 });
  assert.equal(files.length, 2);
  const outcome = await appendFiles(h.deps(catalog), id, { commitId: 'types-spark', files });
  assert.equal(outcome.status, 'committed');
  const schema = currentSchema(outcome.table.metadata);
  const primitive: Schema = { ...schema, fields: schema.fields.filter((f) => !['struct', 'list', 'map'].includes(f.type.kind)) };

  const spark = await readTable({ table: `${ns}.types`, engine: 'spark', projections: [primitive.fields.map((f) => f.name)] });
  assert.equal(spark['columnar'], false, 'nested columns: row-based reader');
  assertSameRows(schema, rows, spark.rows ?? [], 'Spark');
  const [vectorized] = spark['projections'] as SparkRead[];
  assert.equal(vectorized?.columnar, true, 'primitive columns only: vectorized reader');
  assertSameRows(primitive, rows, vectorized.rows, 'Spark');
  // Spark sees our one snapshot as the table's state.
  const snapshots = spark['snapshots'] as { snapshot_id: bigint | number; operation: string }[];
  assert.deepEqual(
    snapshots.map((s) => [BigInt(s.snapshot_id), s.operation]),
    [[outcome.table.metadata.currentSnapshotId, 'append']],
  );
});
