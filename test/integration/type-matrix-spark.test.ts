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
 *
 * In the same session, a filter on a uuid column: Java Iceberg compares uuids as two signed longs
 * (apache/iceberg#14216), so bounds that straddle 80000000-… (in the spec's unsigned order: lower
 * 00000000-…, upper ffffffff-…) make it prune a file or row group that holds the row. Our tables carry no
 * uuid bounds (manifest or Parquet statistics) by default, and Spark finds every row; with
 * icefloe.write.metadata.metrics.uuid-bounds=true the bounds are there (read back by PyIceberg).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { resolveWriteConfig } from '../../src/write/index.ts';
import { readTable } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import { assertSameRows, TYPE_MATRIX_SCHEMA, typeMatrixRows } from '../helpers/type-matrix.ts';

const SCHEMA: Schema = { ...TYPE_MATRIX_SCHEMA, fields: TYPE_MATRIX_SCHEMA.fields.filter((f) => f.type.kind !== 'time') };

interface SparkRead {
  columnar: boolean;
  rows: Record<string, unknown>[];
}

const UUID_SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'u', required: false, type: { kind: 'uuid' } },
  ],
};
/** Both sides of 80000000-…, where signed and unsigned order disagree; all in one file and row group. */
const UUIDS = ['00000000-0000-0000-0000-000000000001', '7fffffff-ffff-ffff-ffff-ffffffffffff', '80000000-0000-0000-0000-000000000001', 'ffffffff-ffff-ffff-ffff-fffffffffffe'];
const uuidBytes = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text.replaceAll('-', ''), 'hex'));

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

  // The uuid tables: one by default, one with uuid bounds on (a table property, as the sink resolves it).
  const uuidRows = [...UUIDS.map((u, i) => ({ id: BigInt(i), u: uuidBytes(u) })), { id: 4n, u: null }];
  let uuidFieldId = -1;
  for (const [name, properties] of [['uuids', {}], ['uuids_bounds', { 'icefloe.write.metadata.metrics.uuid-bounds': 'true' }]] as const) {
    const t = await createTable(h.deps(catalog), ident(ns, name), { schema: UUID_SCHEMA, properties });
    uuidFieldId = currentSchema(t.metadata).fields.find((f) => f.name === 'u')?.id ?? -1;
    const uuidFiles = await writeRows(h.store, t, uuidRows, { config: resolveWriteConfig(t.metadata.properties).config });
    assert.equal((await appendFiles(h.deps(catalog), ident(ns, name), { commitId: name, files: uuidFiles })).status, 'committed');
  }
  // Two reads (each costs Spark a few seconds): every value at once, and one above the sign boundary.
  const filters = [`u IN (${UUIDS.map((u) => `'${u}'`).join(', ')})`, `u = '${UUIDS[2]}'`];
  const queries = filters.map((filter) => ({ table: `${ns}.uuids`, filter, columns: ['id'], order_by: ['id'] }));

  const spark = await readTable({ table: `${ns}.types`, engine: 'spark', projections: [primitive.fields.map((f) => f.name)], queries });
  assert.equal(spark['columnar'], false, 'nested columns: row-based reader');
  assertSameRows(schema, rows, spark.rows ?? [], 'Spark');
  const [vectorized] = spark['projections'] as SparkRead[];
  assert.equal(vectorized?.columnar, true, 'primitive columns only: vectorized reader');
  assertSameRows(primitive, rows, vectorized.rows, 'Spark');
  // Every uuid filter finds its rows (with straddling bounds Spark found none: it pruned the file).
  const found = (spark['queries'] as SparkRead[]).map((q) => q.rows.map((r) => Number(r['id'])));
  assert.deepEqual(found, [[0, 1, 2, 3], [2]], filters.join(' | '));
  const bounds = await readTable({ table: `${ns}.uuids_bounds`, files: true, columns: ['id'] });
  const [live] = bounds['live_files'] as { lower_bounds: Record<string, string>; upper_bounds: Record<string, string> }[];
  const u = String(uuidFieldId);
  assert.deepEqual([live?.lower_bounds[u], live?.upper_bounds[u]], ['00000000000000000000000000000001', 'fffffffffffffffffffffffffffffffe'], 'uuid bounds with the property on');
  const plain = await readTable({ table: `${ns}.uuids`, files: true, columns: ['id'] });
  const [none] = plain['live_files'] as { lower_bounds: Record<string, string> }[];
  assert.equal(none?.lower_bounds[u], undefined, 'no uuid bounds by default');
  // Spark sees our one snapshot as the table's state.
  const snapshots = spark['snapshots'] as { snapshot_id: bigint | number; operation: string }[];
  assert.deepEqual(
    snapshots.map((s) => [BigInt(s.snapshot_id), s.operation]),
    [[outcome.table.metadata.currentSnapshotId, 'append']],
  );
});
