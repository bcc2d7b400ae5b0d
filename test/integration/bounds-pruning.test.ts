/**
 * Column bounds as readers use them, on an UNPARTITIONED table (so any file pruning comes from bounds alone):
 *
 * 1. Three data files with disjoint ranges of a long column (negative, small, beyond 2^32) and of a string
 *    column whose values are longer than 16 characters (default metrics mode truncate(16); one file's strings
 *    are non-ASCII within the first 16 code points). The bounds our writer recorded — in its DataFiles and, as
 *    PyIceberg reads them, in the manifests — equal the true min/max computed here: exact for longs; for the
 *    strings a 16-code-point prefix of the min and the 16-code-point prefix of the max with its last code point
 *    incremented. Range filters then plan only the overlapping files in PyIceberg (files_scanned and the planned
 *    paths) and return exactly the matching rows in PyIceberg and DuckDB; DuckDB's scan (EXPLAIN ANALYZE) reads
 *    every overlapping file and prunes the rest.
 * 2. Readers trust the bounds: a data file committed with a deliberately too-small upper bound (long and string)
 *    is pruned by PyIceberg and by DuckDB, which then MISS rows the file really holds (an unfiltered read still
 *    returns them). So the exact-pruning results of part 1 are meaningful: a wrong bound from our writer would
 *    lose data silently.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { fromBoundBytes, toBoundBytes } from '../../src/iceberg/bounds.ts';
import type { DataFile } from '../../src/iceberg/data-file.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import type { PrimitiveType, Schema } from '../../src/iceberg/types.ts';
import { readTable } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import { assertSameRows } from '../helpers/type-matrix.ts';
import type { Row } from '../helpers/type-matrix.ts';

const SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'v', required: false, type: { kind: 'long' } },
    { id: 3, name: 's', required: false, type: { kind: 'string' } },
  ],
};
const LONG: PrimitiveType = { kind: 'long' };
const STRING: PrimitiveType = { kind: 'string' };
const pad = (n: number): string => String(n).padStart(6, '0');

interface FileSpec {
  readonly label: string;
  readonly v: (i: number) => bigint;
  readonly s: (i: number) => string;
}

const PER_FILE = 50;
// Disjoint in both columns, in this order: A < B < C.
const FILES: FileSpec[] = [
  { label: 'A', v: (i) => -500n + BigInt(i), s: (i) => `alpha-sensor-reading-${pad(i)}` },
  { label: 'B', v: (i) => 100n + BigInt(i), s: (i) => `bravo-sensor-reading-${pad(100 + i)}` },
  // 2^40 + i: the 8-byte little-endian bound matters beyond 32 bits. Non-ASCII inside the first 16 code points.
  { label: 'C', v: (i) => 2n ** 40n + BigInt(i), s: (i) => `charlie-größen-ü-${pad(200 + i)}` },
];

function rowsOf(files: readonly FileSpec[]): Row[][] {
  let id = 0n;
  return files.map((f) => Array.from({ length: PER_FILE }, (_, i) => ({ id: ++id, v: f.v(i), s: f.s(i) })));
}

/** The truncate(16) bounds of a string column, by the spec's definition (code points; the upper one rounded up). */
function truncatedBounds(values: readonly string[]): { lower: string; upper: string } {
  const sorted = [...values].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const min = Array.from(sorted[0] as string);
  const max = Array.from(sorted.at(-1) as string);
  assert.ok(min.length > 16 && max.length > 16, 'test setup: strings longer than 16 code points');
  const prefix = max.slice(0, 16);
  const last = (prefix.at(-1) as string).codePointAt(0) as number;
  return { lower: min.slice(0, 16).join(''), upper: prefix.slice(0, 15).join('') + String.fromCodePoint(last + 1) };
}

function minMax(values: readonly bigint[]): { lower: bigint; upper: bigint } {
  return { lower: values.reduce((a, b) => (b < a ? b : a)), upper: values.reduce((a, b) => (b > a ? b : a)) };
}

interface LiveFile {
  readonly file_path: string;
  readonly record_count: number;
  readonly lower_bounds: Record<string, string>;
  readonly upper_bounds: Record<string, string>;
}

const fromHex = (type: PrimitiveType, hex: string | undefined): unknown => (hex === undefined ? undefined : fromBoundBytes(type, Uint8Array.from(Buffer.from(hex, 'hex'))));

test('bounds prune files on range predicates over an unpartitioned table (PyIceberg, DuckDB)', async (t) => {
  const h = await harness(t);
  const catalog = h.rest();
  const ns = h.namespace();
  const id = ident(ns, 'ranges');
  const table = await createTable(h.deps(catalog), id, { schema: SCHEMA });
  const schema = currentSchema(table.metadata);
  const fid = (name: string): number => schema.fields.find((f) => f.name === name)?.id as number;

  const groups = rowsOf(FILES);
  const rows = groups.flat();
  // writeRows splits the rows in order: one file per group.
  const files = await writeRows(h.store, table, rows, { rowsPerFile: PER_FILE });
  assert.equal(files.length, FILES.length);

  // The bounds our writer recorded are the true min/max (strings: truncated to 16 code points, upper rounded up).
  const expected = groups.map((g) => ({
    id: minMax(g.map((r) => r['id'] as bigint)),
    v: minMax(g.map((r) => r['v'] as bigint)),
    s: truncatedBounds(g.map((r) => r['s'] as string)),
  }));
  assert.deepEqual(expected[0]?.s, { lower: 'alpha-sensor-rea', upper: 'alpha-sensor-reb' });
  assert.deepEqual(expected[2]?.s, { lower: 'charlie-größen-ü', upper: 'charlie-größen-ý' });
  const assertBounds = (what: string, i: number, lower: (id: number) => Uint8Array | undefined, upper: (id: number) => Uint8Array | undefined): void => {
    const e = expected[i] as (typeof expected)[number];
    const label = `${what}, file ${FILES[i]?.label}`;
    for (const col of ['id', 'v'] as const) {
      assert.equal(fromBoundBytes(LONG, lower(fid(col)) ?? new Uint8Array()), e[col].lower, `${label}: lower bound of ${col}`);
      assert.equal(fromBoundBytes(LONG, upper(fid(col)) ?? new Uint8Array()), e[col].upper, `${label}: upper bound of ${col}`);
    }
    assert.equal(fromBoundBytes(STRING, lower(fid('s')) ?? new Uint8Array()), e.s.lower, `${label}: lower bound of s = 16-code-point prefix of the min`);
    assert.equal(fromBoundBytes(STRING, upper(fid('s')) ?? new Uint8Array()), e.s.upper, `${label}: upper bound of s = prefix of the max, last code point + 1`);
  };
  for (const [i, f] of files.entries()) {
    assert.equal(f.recordCount, BigInt(PER_FILE));
    assertBounds('our DataFile', i, (k) => f.lowerBounds?.get(k), (k) => f.upperBounds?.get(k));
  }
  const outcome = await appendFiles(h.deps(catalog), id, { commitId: 'bounds-ranges', files });
  assert.equal(outcome.status, 'committed');

  const name = `${ns}.ranges`;
  const pathOf = (label: string): string => files[FILES.findIndex((f) => f.label === label)]?.filePath as string;
  const filters: { py: string; duck: string; match: (r: Row) => boolean; plans: string[] }[] = [
    {
      py: 'v >= 130 and v <= 1099511627800', // 2^40 + 24
      duck: 'v >= 130 AND v <= 1099511627800',
      match: (r) => (r['v'] as bigint) >= 130n && (r['v'] as bigint) <= 2n ** 40n + 24n,
      plans: ['B', 'C'],
    },
    { py: 'v > 120 and v <= 130', duck: 'v > 120 AND v <= 130', match: (r) => (r['v'] as bigint) > 120n && (r['v'] as bigint) <= 130n, plans: ['B'] },
    { py: 'v < 0', duck: 'v < 0', match: (r) => (r['v'] as bigint) < 0n, plans: ['A'] },
    {
      py: "s >= 'bravo-sensor-reading-000130' and s < 'charlie'",
      duck: "s >= 'bravo-sensor-reading-000130' AND s < 'charlie'",
      match: (r) => (r['s'] as string) >= 'bravo-sensor-reading-000130' && (r['s'] as string) < 'charlie',
      plans: ['B'],
    },
    {
      py: "s >= 'charlie-größen-ü-000230'",
      duck: "s >= 'charlie-größen-ü-000230'",
      match: (r) => (r['s'] as string) >= 'charlie-größen-ü-000230',
      plans: ['C'],
    },
    {
      // Above every value of A but below A's rounded-up upper bound 'alpha-sensor-reb': a truncated bound cannot
      // exclude A, so it is planned and yields no rows — the bound is above the true max, as it must be.
      py: "s > 'alpha-sensor-reading-999999' and s < 'b'",
      duck: "s > 'alpha-sensor-reading-999999' AND s < 'b'",
      match: (r) => (r['s'] as string) > 'alpha-sensor-reading-999999' && (r['s'] as string) < 'b',
      plans: ['A'],
    },
  ];
  let manifestsChecked = false;
  for (const f of filters) {
    const want = rows.filter(f.match);
    const wantFiles = f.plans.map(pathOf).sort();
    const py = await readTable({ table: name, filter: f.py, files: true });
    if (!manifestsChecked) {
      // The same bounds, as PyIceberg reads them from our manifests.
      const live = py['live_files'] as LiveFile[];
      assert.equal(live.length, files.length);
      for (const [i, df] of files.entries()) {
        const lf = live.find((x) => x.file_path === df.filePath);
        assert.ok(lf !== undefined, `PyIceberg lists ${df.filePath}`);
        const hexes = (m: Record<string, string>) => (k: number) => {
          const hx = m[String(k)];
          return hx === undefined ? undefined : Uint8Array.from(Buffer.from(hx, 'hex'));
        };
        assertBounds('manifest (PyIceberg)', i, hexes(lf.lower_bounds), hexes(lf.upper_bounds));
      }
      manifestsChecked = true;
    }
    assertSameRows(schema, want, py.rows ?? [], 'PyIceberg');
    assert.deepEqual(py['scanned_files'], wantFiles, `PyIceberg plans files ${f.plans.join(', ')} for ${f.py}`);
    assert.equal(py['files_scanned'], wantFiles.length);

    const duck = await readTable({ table: name, engine: 'duckdb', filter: f.duck, files: true });
    assertSameRows(schema, want, duck.rows ?? [], 'DuckDB');
    assert.deepEqual(duck['scanned_files'], wantFiles, `DuckDB reads files ${f.plans.join(', ')} for ${f.duck}`);
    assert.equal(duck['files_scanned'], wantFiles.length);
  }
});

test('readers trust the bounds: a too-small upper bound makes PyIceberg and DuckDB skip rows the file holds', async (t) => {
  const h = await harness(t);
  const catalog = h.rest();
  const ns = h.namespace();
  const id = ident(ns, 'wrong_bound');
  const table = await createTable(h.deps(catalog), id, { schema: SCHEMA });
  const schema = currentSchema(table.metadata);
  const fid = (name: string): number => schema.fields.find((f) => f.name === name)?.id as number;

  const groups = rowsOf(FILES.slice(0, 2)); // A: v -500..-451; B: v 100..149, s bravo-…-000100..000149
  const rows = groups.flat();
  const [fileA, fileB] = (await writeRows(h.store, table, rows, { rowsPerFile: PER_FILE })) as [DataFile, DataFile];
  // What the writer recorded for B is right...
  assert.equal(fromBoundBytes(LONG, fileB.upperBounds?.get(fid('v')) ?? new Uint8Array()), 149n);
  assert.equal(fromBoundBytes(STRING, fileB.upperBounds?.get(fid('s')) ?? new Uint8Array()), 'bravo-sensor-reb');
  // ...replace it with upper bounds below B's real maxima (still above its lower bounds).
  const wrongUpper = new Map(fileB.upperBounds);
  wrongUpper.set(fid('v'), toBoundBytes(LONG, 120n));
  wrongUpper.set(fid('s'), toBoundBytes(STRING, 'bravo-sensor-reading-000120'));
  const corrupted: DataFile = { ...fileB, upperBounds: wrongUpper };
  const outcome = await appendFiles(h.deps(catalog), id, { commitId: 'bounds-wrong', files: [fileA, corrupted] });
  assert.equal(outcome.status, 'committed');
  const name = `${ns}.wrong_bound`;

  // The rows are in the file: an unfiltered scan (no pruning) returns all of them.
  const all = await readTable({ table: name, files: true });
  assertSameRows(schema, rows, all.rows ?? [], 'PyIceberg');
  const live = (all['live_files'] as LiveFile[]).find((f) => f.file_path === fileB.filePath);
  assert.equal(fromHex(LONG, live?.upper_bounds[String(fid('v'))]), 120n, 'the manifest carries the wrong upper bound');

  // Rows 121..149 exist (29 of them), but B's upper bound says 120: PyIceberg plans no file and returns nothing.
  for (const f of [
    { py: 'v > 120', match: (r: Row) => (r['v'] as bigint) > 120n },
    { py: "s > 'bravo-sensor-reading-000120'", match: (r: Row) => (r['s'] as string) > 'bravo-sensor-reading-000120' },
  ]) {
    const really = rows.filter(f.match);
    assert.equal(really.length, 29, 'test setup: the file holds matching rows');
    const py = await readTable({ table: name, filter: f.py, files: true });
    assert.equal(py['files_scanned'], 0, `PyIceberg prunes B on its wrong upper bound for ${f.py}`);
    assert.deepEqual(py.rows, [], `PyIceberg misses the ${really.length} rows B holds for ${f.py}: it trusts our bounds`);
    // DuckDB trusts them too (the same filter text is valid SQL here).
    const duck = await readTable({ table: name, engine: 'duckdb', filter: f.py, files: true });
    assert.equal(duck['files_scanned'], 0, `DuckDB prunes B on its wrong upper bound for ${f.py}`);
    assert.deepEqual(duck.rows, [], `DuckDB misses the ${really.length} rows B holds for ${f.py}`);
  }
  // A filter that B's wrong bound still admits finds B's rows: the file is readable, only pruned above.
  const py = await readTable({ table: name, filter: 'v >= 110', files: true });
  assert.deepEqual(py['scanned_files'], [fileB.filePath]);
  assertSameRows(
    schema,
    rows.filter((r) => (r['v'] as bigint) >= 110n),
    py.rows ?? [],
    'PyIceberg',
  );
});
