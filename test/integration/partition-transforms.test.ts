/**
 * Partition transforms end to end: one table per transform (identity, bucket[N] on a long and on a string,
 * truncate[W] on a long and on a string, year/month/day/hour on a timestamptz, day on a date), each written by
 * our columnar writer into one data file per partition (≥ 3 partitions), committed by our fast append through
 * the REST catalog, then checked by independent readers:
 *
 * - the partition tuple of every data file, as PyIceberg reads it from our manifests (the raw transform result:
 *   day ordinal, bucket number, truncated value), equals the value this test states for it from the spec's
 *   definition (bucket: our transforms.ts, pinned to the spec's Appendix B vectors), and the record counts match;
 * - data file paths are Hive-style (`<location>/data/ts_day=2026-01-02/<uuid>.parquet`, Java's URL encoding);
 * - a filter on the SOURCE column returns exactly the matching rows in PyIceberg and DuckDB, and PyIceberg plans
 *   exactly the files whose partition can match. The source column is written with metrics mode `counts` (table
 *   property `write.metadata.metrics.column.<col>`), so its files carry no bounds for it and any pruning PyIceberg
 *   does comes from the partition values alone. Every filter is chosen so that each partition whose range meets
 *   it holds at least one matching row: "files whose partition can match" = "files with matching rows".
 * - DuckDB's own pruning evidence (the files its ICEBERG_SCAN read, from EXPLAIN ANALYZE): every file with matching
 *   rows and, beyond those, at most the partition an exclusive upper bound falls in. DuckDB 1.5.5 prunes on every
 *   transform here, but projects `col < X` onto the partition as `part <= transform(X)` (PyIceberg and Java use
 *   `transform(X - 1)`), so it also reads the partition that starts at X: correct, only less tight. Pinned per
 *   filter as `duckMayAlsoRead`, as a ceiling, so a tighter DuckDB still passes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import { applyTransform, bucketHash } from '../../src/iceberg/transforms.ts';
import type { PartitionValue, Schema } from '../../src/iceberg/types.ts';
import { resolveWriteConfig } from '../../src/write/index.ts';
import { readTable } from '../helpers/readers.ts';
import type { ReaderResult } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import { assertSameRows } from '../helpers/type-matrix.ts';
import type { Row } from '../helpers/type-matrix.ts';

const SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'category', required: false, type: { kind: 'string' } },
    { id: 3, name: 'name', required: false, type: { kind: 'string' } },
    { id: 4, name: 'ts', required: false, type: { kind: 'timestamptz' } },
    { id: 5, name: 'd', required: false, type: { kind: 'date' } },
  ],
};

// --- values, by the spec's definitions (not through src/iceberg/transforms.ts) ------------------------

const MS_PER_DAY = 86_400_000;
/** Timestamp micros of an ISO instant (`Z`), plus extra micros below the millisecond. */
const ts = (iso: string, micros = 0n): bigint => BigInt(Date.parse(iso)) * 1000n + micros;
/** Days since 1970-01-01 of `YYYY-MM-DD` (the date value, and the day transform's ordinal). */
const days = (isoDate: string): number => Date.parse(`${isoDate}T00:00:00Z`) / MS_PER_DAY;
/** Spec: year, month and hour transforms count whole years, months and hours from 1970-01-01T00:00Z. */
const yearOrd = (year: number): number => year - 1970;
const monthOrd = (year: number, month: number): number => (year - 1970) * 12 + (month - 1);
const hourOrd = (isoHour: string): number => Date.parse(`${isoHour}:00:00Z`) / 3_600_000;
/** Spec truncate[W] of an int/long: v - (((v % W) + W) % W). */
const truncLong = (v: bigint, w: bigint): bigint => v - (((v % w) + w) % w);
/** Spec truncate[L] of a string: its first L code points. */
const truncString = (s: string, l: number): string => Array.from(s).slice(0, l).join('');

// Appendix B hash vectors: bucket(long 34) hashes to 2017239379, bucket(string "iceberg") to 1210000089.
const LONG_34_HASH = 2017239379;
const ICEBERG_HASH = 1210000089;
const bucketLong16 = (v: bigint): number => applyTransform({ kind: 'bucket', n: 16 }, { kind: 'long' }, v) as number;
const bucketString8 = (v: string): number => applyTransform({ kind: 'bucket', n: 8 }, { kind: 'string' }, v) as number;

let nextId = 0n;
/** A row: a fresh id, other columns fixed unless given. */
function row(values: Row = {}): Row {
  nextId += 1n;
  return { id: nextId, category: 'c', name: 'n', ts: ts('2026-06-01T12:00:00Z'), d: days('2026-06-01'), ...values };
}

// --- cases ---------------------------------------------------------------------------------------------

interface Partition {
  /** The raw partition value (what the manifest stores): number for int/date results, string, bigint, null. */
  readonly value: PartitionValue;
  /** The Hive-style path segment (`name=human value`, URL-encoded as Java's URLEncoder does). */
  readonly path: string;
  readonly rows: readonly Row[];
}

interface Filter {
  /** PyIceberg row filter on the source column. */
  readonly py: string;
  /** The same predicate in DuckDB SQL. */
  readonly duck: string;
  readonly match: (r: Row) => boolean;
  /** Partitions without matching rows that DuckDB may still read (its inclusive projection of `<`, see above). */
  readonly duckMayAlsoRead?: readonly PartitionValue[];
}

interface Case {
  readonly table: string;
  readonly partitionBy: string;
  /** The spec field we expect the catalog to hold: name and transform string. */
  readonly field: { readonly name: string; readonly transform: string };
  readonly source: string;
  readonly partitions: readonly Partition[];
  readonly filters: readonly Filter[];
}

const CASES: Case[] = [
  {
    table: 'identity_string',
    partitionBy: 'category',
    field: { name: 'category', transform: 'identity' },
    source: 'category',
    partitions: [
      { value: 'alpha', path: 'category=alpha', rows: [row({ category: 'alpha' }), row({ category: 'alpha' })] },
      // Java's URLEncoder: '/' → %2F, 'δ' → %CE%B4, ' ' → '+'.
      { value: 'beta/δ x', path: 'category=beta%2F%CE%B4+x', rows: [row({ category: 'beta/δ x' }), row({ category: 'beta/δ x' })] },
      { value: 'gamma', path: 'category=gamma', rows: [row({ category: 'gamma' })] },
      { value: null, path: 'category=null', rows: [row({ category: null })] },
    ],
    filters: [{ py: "category == 'beta/δ x'", duck: "category = 'beta/δ x'", match: (r) => r['category'] === 'beta/δ x' }],
  },
  {
    table: 'bucket_long',
    partitionBy: 'bucket(id, 16)',
    field: { name: 'id_bucket', transform: 'bucket[16]' },
    source: 'id',
    // Ids grouped by their bucket (ours, pinned below to the spec vector for 34); PyIceberg's own murmur3 must
    // plan exactly the file holding the id a filter asks for.
    partitions: [
      [3n, 7n, 34n],
      [5n, 9n],
      [1n, 2n],
      [0n, 10n, 1000n],
      [-3n],
      [100n],
    ].map((ids) => {
      const b = bucketLong16(ids[0] as bigint);
      for (const id of ids) assert.equal(bucketLong16(id), b, `test setup: ${id} is in bucket ${b}`);
      return { value: b, path: `id_bucket=${b}`, rows: ids.map((id) => row({ id })) };
    }),
    filters: [
      { py: 'id == 34', duck: 'id = 34', match: (r) => r['id'] === 34n },
      { py: 'id == 5', duck: 'id = 5', match: (r) => r['id'] === 5n },
    ],
  },
  {
    table: 'bucket_string',
    partitionBy: 'bucket(category, 8)',
    field: { name: 'category_bucket', transform: 'bucket[8]' },
    source: 'category',
    partitions: [['iceberg'], ['kafka'], ['parquet', 'arrow'], ['avro']].map((cats) => {
      const b = bucketString8(cats[0] as string);
      for (const c of cats) assert.equal(bucketString8(c), b, `test setup: ${c} is in bucket ${b}`);
      return { value: b, path: `category_bucket=${b}`, rows: cats.map((category) => row({ category })) };
    }),
    filters: [{ py: "category == 'iceberg'", duck: "category = 'iceberg'", match: (r) => r['category'] === 'iceberg' }],
  },
  {
    table: 'truncate_long',
    partitionBy: 'truncate(id, 10)',
    field: { name: 'id_trunc', transform: 'truncate[10]' },
    source: 'id',
    partitions: [[-15n], [-5n, -1n], [0n, 3n, 9n], [10n, 12n, 19n], [20n, 24n], [31n]].map((ids) => {
      const v = truncLong(ids[0] as bigint, 10n);
      return { value: v, path: `id_trunc=${v}`, rows: ids.map((id) => row({ id })) };
    }),
    // Partitions 10 (12, 19 match; 10 does not) and 20 (20, 24).
    filters: [{ py: 'id >= 12 and id < 25', duck: 'id >= 12 AND id < 25', match: (r) => (r['id'] as bigint) >= 12n && (r['id'] as bigint) < 25n }],
  },
  {
    table: 'truncate_string',
    partitionBy: 'truncate(name, 3)',
    field: { name: 'name_trunc', transform: 'truncate[3]' },
    source: 'name',
    partitions: [
      { path: 'name_trunc=app', names: ['apple', 'app'] },
      { path: 'name_trunc=apr', names: ['apricot'] },
      { path: 'name_trunc=ban', names: ['banana', 'bandana'] },
      { path: 'name_trunc=blu', names: ['blueberry'] },
      { path: 'name_trunc=che', names: ['cherry'] },
      // Code points, not bytes or UTF-16 units: 'übe' (4 bytes), three 4-byte emoji.
      { path: 'name_trunc=%C3%BCbe', names: ['über-cool', 'übel'] },
      { path: 'name_trunc=%F0%9F%A7%8A%F0%9F%A7%8A%F0%9F%A7%8A', names: ['🧊🧊🧊🧊 ice', '🧊🧊🧊'] },
    ].map(({ path, names }) => {
      const v = truncString(names[0] as string, 3);
      for (const n of names) assert.equal(truncString(n, 3), v);
      return { value: v, path, rows: names.map((name) => row({ name })) };
    }),
    // Partitions 'ban' and 'blu'; 'apr' < 'ba' and 'che' > 'bz' cannot match.
    filters: [{ py: "name >= 'ba' and name < 'bz'", duck: "name >= 'ba' AND name < 'bz'", match: (r) => (r['name'] as string) >= 'ba' && (r['name'] as string) < 'bz' }],
  },
  {
    table: 'year_ts',
    partitionBy: 'year(ts)',
    field: { name: 'ts_year', transform: 'year' },
    source: 'ts',
    partitions: [
      { value: yearOrd(1969), path: 'ts_year=1969', rows: [row({ ts: ts('1969-07-20T20:17:40Z') }), row({ ts: ts('1969-12-31T23:59:59.999Z', 999n) })] },
      { value: yearOrd(2024), path: 'ts_year=2024', rows: [row({ ts: ts('2024-03-01T00:00:00Z') }), row({ ts: ts('2024-12-31T23:59:59.999Z', 999n) })] },
      { value: yearOrd(2025), path: 'ts_year=2025', rows: [row({ ts: ts('2025-01-01T00:00:00Z') }), row({ ts: ts('2025-06-15T08:00:00Z') })] },
      { value: yearOrd(2026), path: 'ts_year=2026', rows: [row({ ts: ts('2026-02-01T00:00:00Z') })] },
    ],
    filters: [
      {
        py: "ts >= '2025-01-01T00:00:00+00:00' and ts < '2026-01-01T00:00:00+00:00'",
        duck: "ts >= TIMESTAMPTZ '2025-01-01 00:00:00+00' AND ts < TIMESTAMPTZ '2026-01-01 00:00:00+00'",
        match: (r) => (r['ts'] as bigint) >= ts('2025-01-01T00:00:00Z') && (r['ts'] as bigint) < ts('2026-01-01T00:00:00Z'),
        duckMayAlsoRead: [yearOrd(2026)],
      },
    ],
  },
  {
    table: 'month_ts',
    partitionBy: 'month(ts)',
    field: { name: 'ts_month', transform: 'month' },
    source: 'ts',
    partitions: [
      { value: monthOrd(1969, 12), path: 'ts_month=1969-12', rows: [row({ ts: ts('1969-12-31T23:59:59Z') })] },
      { value: monthOrd(2025, 11), path: 'ts_month=2025-11', rows: [row({ ts: ts('2025-11-30T23:59:59.999Z', 999n) })] },
      { value: monthOrd(2025, 12), path: 'ts_month=2025-12', rows: [row({ ts: ts('2025-12-01T00:00:00Z') }), row({ ts: ts('2025-12-31T10:00:00Z') })] },
      { value: monthOrd(2026, 1), path: 'ts_month=2026-01', rows: [row({ ts: ts('2026-01-15T00:00:00Z') })] },
      { value: monthOrd(2026, 2), path: 'ts_month=2026-02', rows: [row({ ts: ts('2026-02-01T00:00:00Z') })] },
    ],
    filters: [
      {
        py: "ts >= '2025-12-01T00:00:00+00:00' and ts < '2026-02-01T00:00:00+00:00'",
        duck: "ts >= TIMESTAMPTZ '2025-12-01 00:00:00+00' AND ts < TIMESTAMPTZ '2026-02-01 00:00:00+00'",
        match: (r) => (r['ts'] as bigint) >= ts('2025-12-01T00:00:00Z') && (r['ts'] as bigint) < ts('2026-02-01T00:00:00Z'),
        duckMayAlsoRead: [monthOrd(2026, 2)],
      },
    ],
  },
  {
    table: 'day_ts',
    partitionBy: 'day(ts)',
    field: { name: 'ts_day', transform: 'day' },
    source: 'ts',
    partitions: [
      // One microsecond before the epoch is day -1 (floor, not truncation towards zero).
      { value: days('1969-12-31'), path: 'ts_day=1969-12-31', rows: [row({ ts: ts('1969-12-31T23:59:59.999Z', 999n) }), row({ ts: ts('1969-12-31T00:00:00Z') })] },
      { value: days('1970-01-01'), path: 'ts_day=1970-01-01', rows: [row({ ts: 0n })] },
      { value: days('2026-01-01'), path: 'ts_day=2026-01-01', rows: [row({ ts: ts('2026-01-01T00:00:00Z') }), row({ ts: ts('2026-01-01T23:59:59.999Z', 999n) })] },
      { value: days('2026-01-02'), path: 'ts_day=2026-01-02', rows: [row({ ts: ts('2026-01-02T12:00:00Z') }), row({ ts: ts('2026-01-02T00:00:00Z') })] },
      { value: days('2026-01-03'), path: 'ts_day=2026-01-03', rows: [row({ ts: ts('2026-01-03T00:00:00Z') })] },
    ],
    filters: [
      {
        py: "ts >= '2026-01-02T00:00:00+00:00' and ts < '2026-01-03T00:00:00+00:00'",
        duck: "ts >= TIMESTAMPTZ '2026-01-02 00:00:00+00' AND ts < TIMESTAMPTZ '2026-01-03 00:00:00+00'",
        match: (r) => (r['ts'] as bigint) >= ts('2026-01-02T00:00:00Z') && (r['ts'] as bigint) < ts('2026-01-03T00:00:00Z'),
        duckMayAlsoRead: [days('2026-01-03')],
      },
      {
        py: "ts < '1970-01-01T00:00:00+00:00'",
        duck: "ts < TIMESTAMPTZ '1970-01-01 00:00:00+00'",
        match: (r) => (r['ts'] as bigint) < 0n,
        duckMayAlsoRead: [days('1970-01-01')],
      },
    ],
  },
  {
    table: 'hour_ts',
    partitionBy: 'hour(ts)',
    field: { name: 'ts_hour', transform: 'hour' },
    source: 'ts',
    partitions: [
      { value: hourOrd('2026-01-02T10'), path: 'ts_hour=2026-01-02-10', rows: [row({ ts: ts('2026-01-02T10:15:00Z') }), row({ ts: ts('2026-01-02T10:59:59.999Z', 999n) })] },
      { value: hourOrd('2026-01-02T11'), path: 'ts_hour=2026-01-02-11', rows: [row({ ts: ts('2026-01-02T11:00:00Z') }), row({ ts: ts('2026-01-02T11:45:00Z') })] },
      { value: hourOrd('2026-01-02T12'), path: 'ts_hour=2026-01-02-12', rows: [row({ ts: ts('2026-01-02T12:00:00Z') }), row({ ts: ts('2026-01-02T12:20:00Z') })] },
      { value: hourOrd('2026-01-02T13'), path: 'ts_hour=2026-01-02-13', rows: [row({ ts: ts('2026-01-02T13:05:00Z') })] },
      { value: hourOrd('1969-12-31T23'), path: 'ts_hour=1969-12-31-23', rows: [row({ ts: -1n })] },
    ],
    // Hours 11 (11:45 matches, 11:00 does not) and 12.
    filters: [
      {
        py: "ts >= '2026-01-02T11:30:00+00:00' and ts < '2026-01-02T12:30:00+00:00'",
        duck: "ts >= TIMESTAMPTZ '2026-01-02 11:30:00+00' AND ts < TIMESTAMPTZ '2026-01-02 12:30:00+00'",
        match: (r) => (r['ts'] as bigint) >= ts('2026-01-02T11:30:00Z') && (r['ts'] as bigint) < ts('2026-01-02T12:30:00Z'),
      },
    ],
  },
  {
    table: 'day_date',
    partitionBy: 'day(d)',
    field: { name: 'd_day', transform: 'day' },
    source: 'd',
    partitions: [
      { value: days('1969-12-31'), path: 'd_day=1969-12-31', rows: [row({ d: -1 })] },
      { value: days('2026-01-01'), path: 'd_day=2026-01-01', rows: [row({ d: days('2026-01-01') })] },
      { value: days('2026-01-02'), path: 'd_day=2026-01-02', rows: [row({ d: days('2026-01-02') }), row({ d: days('2026-01-02') })] },
      { value: days('2026-01-03'), path: 'd_day=2026-01-03', rows: [row({ d: days('2026-01-03') })] },
    ],
    filters: [{ py: "d == '2026-01-02'", duck: "d = DATE '2026-01-02'", match: (r) => r['d'] === days('2026-01-02') }],
  },
];

// --- helpers ------------------------------------------------------------------------------------------

/** One comparable text for a partition value from our DataFile or from PyIceberg's JSON. */
function key(v: unknown): string {
  return v === null || v === undefined ? 'null' : `${typeof v === 'string' ? 's' : 'n'}:${String(v)}`;
}

interface LiveFile {
  readonly file_path: string;
  readonly spec_id: number;
  readonly partition: unknown[];
  readonly record_count: number;
  readonly lower_bounds: Record<string, string>;
  readonly upper_bounds: Record<string, string>;
}

const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

test('the spec vectors pin our bucket hash (Appendix B)', () => {
  assert.equal(bucketHash({ kind: 'long' }, 34n), LONG_34_HASH);
  assert.equal(bucketLong16(34n), LONG_34_HASH % 16);
  assert.equal(bucketHash({ kind: 'string' }, 'iceberg'), ICEBERG_HASH);
  assert.equal(bucketString8('iceberg'), ICEBERG_HASH % 8);
});

for (const c of CASES) {
  test(`${c.field.transform} on ${c.source}: partition values, Hive paths and pruning seen by PyIceberg and DuckDB`, async (t) => {
    const h = await harness(t);
    const catalog = h.rest();
    const ns = h.namespace();
    const id = ident(ns, c.table);
    const table = await createTable(h.deps(catalog), id, {
      schema: SCHEMA,
      partitionBy: c.partitionBy,
      // No bounds for the source column: pruning on it can only come from the partition values.
      properties: { [`write.metadata.metrics.column.${c.source}`]: 'counts' },
    });
    const schema = currentSchema(table.metadata);

    const rows = c.partitions.flatMap((p) => p.rows);
    assert.ok(c.partitions.length >= 3, 'test setup: at least three partitions');
    const { config } = resolveWriteConfig(table.metadata.properties);
    const files = await writeRows(h.store, table, rows, { config });

    // Our writer: one file per partition, the expected tuple, a Hive-style path under the table's data/.
    assert.equal(files.length, c.partitions.length, 'one data file per partition');
    const pathOf = new Map<string, string>(); // partition key → file path
    for (const p of c.partitions) {
      const f = files.find((df) => df.partition.length === 1 && key(df.partition[0]) === key(p.value));
      assert.ok(f !== undefined, `a data file for partition ${p.path}; got ${files.map((df) => df.filePath).join(', ')}`);
      assert.equal(f.recordCount, BigInt(p.rows.length), `${p.path}: record count`);
      const prefix = `${table.metadata.location}/data/${p.path}/`;
      assert.ok(f.filePath.startsWith(prefix) && /^[0-9a-f-]{36}\.parquet$/.test(f.filePath.slice(prefix.length)), `${f.filePath} is ${prefix}<uuid>.parquet`);
      pathOf.set(key(p.value), f.filePath);
    }
    const outcome = await appendFiles(h.deps(catalog), id, { commitId: `transforms-${c.table}`, files });
    assert.equal(outcome.status, 'committed');

    const name = `${ns}.${c.table}`;
    for (const [i, filter] of c.filters.entries()) {
      const want = rows.filter(filter.match);
      assert.ok(want.length > 0, 'test setup: the filter matches rows');
      const wantFiles = sorted(c.partitions.filter((p) => p.rows.some(filter.match)).map((p) => pathOf.get(key(p.value)) as string));
      assert.ok(wantFiles.length < files.length, 'test setup: the filter leaves files out');

      const py = await readTable({ table: name, filter: filter.py, files: true });
      if (i === 0) assertManifests(c, py, schema, pathOf);
      assertSameRows(schema, want, py.rows ?? [], 'PyIceberg');
      assert.deepEqual(py['scanned_files'], wantFiles, `PyIceberg plans only the files whose partition can match ${filter.py}`);
      assert.equal(py['files_scanned'], wantFiles.length);

      const duck = await readTable({ table: name, engine: 'duckdb', filter: filter.duck, files: true });
      assertSameRows(schema, want, duck.rows ?? [], 'DuckDB');
      const duckRead = duck['scanned_files'] as string[];
      assert.equal(duck['files_scanned'], duckRead.length);
      const ceiling = new Set([...wantFiles, ...(filter.duckMayAlsoRead ?? []).map((v) => pathOf.get(key(v)) as string)]);
      assert.ok(ceiling.size < files.length, 'test setup: DuckDB has files to prune');
      for (const f of wantFiles) assert.ok(duckRead.includes(f), `DuckDB reads ${f} for ${filter.duck}; it read ${duckRead.join(', ')}`);
      for (const f of duckRead) assert.ok(ceiling.has(f), `DuckDB prunes ${f} for ${filter.duck} (partition values); it read ${duckRead.join(', ')}`);
    }
  });
}

/** The spec and the manifests as PyIceberg reads them: transform, partition tuples, counts, no source bounds. */
function assertManifests(c: Case, py: ReaderResult, schema: Schema, pathOf: ReadonlyMap<string, string>): void {
  const idOf = (column: string): string => String(schema.fields.find((f) => f.name === column)?.id);
  const sourceId = Number(idOf(c.source));
  const other = idOf(c.source === 'id' ? 'name' : 'id');
  const spec = py['partition_spec'] as { source_id: number; name: string; transform: string }[];
  assert.deepEqual(spec, [{ source_id: sourceId, name: c.field.name, transform: c.field.transform }], 'the table spec PyIceberg sees');
  const live = py['live_files'] as LiveFile[];
  assert.equal(live.length, c.partitions.length);
  for (const p of c.partitions) {
    const f = live.find((lf) => lf.file_path === pathOf.get(key(p.value)));
    assert.ok(f !== undefined, `PyIceberg lists the file of ${p.path}`);
    assert.deepEqual(f.partition.map(key), [key(p.value)], `${p.path}: the partition tuple in the manifest`);
    assert.equal(Number(f.record_count), p.rows.length, `${p.path}: record count in the manifest`);
    assert.ok(!(String(sourceId) in f.lower_bounds) && !(String(sourceId) in f.upper_bounds), `${p.path}: no bounds for ${c.source} (metrics mode counts)`);
    assert.ok(other in f.lower_bounds && other in f.upper_bounds, `${p.path}: other columns keep their bounds`);
  }
}
