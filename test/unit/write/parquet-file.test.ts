/**
 * Files written by the columnar writer, read back by an independent reader (hyparquet): every value of
 * every type with nulls at every nesting level, the Parquet schema (field ids on every element, list and
 * map naming, repetition, physical and logical types per Iceberg spec Appendix A), V1 data pages, codec.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import type { SchemaElement } from 'hyparquet';
import type { IcebergType, NestedField, Schema } from '../../../src/iceberg/types.ts';
import { TYPE_MATRIX_SCHEMA, canonical, typeMatrixRows } from '../../helpers/type-matrix.ts';
import { appendRow, footerOf, harness, readBack } from './helpers.ts';
import type { Row } from './helpers.ts';

const MATRIX: IcebergType = { kind: 'struct', fields: TYPE_MATRIX_SCHEMA.fields };

async function writeRows(schema: Schema, rows: readonly Row[], config = {}): Promise<{ bytes: Uint8Array; rows: Row[] }> {
  const h = harness(schema, config);
  for (const r of rows) appendRow(h.writer.appender, schema.fields, r);
  const files = await h.writer.complete();
  assert.equal(files.length, 1);
  const bytes = await h.store.get((files[0] as { filePath: string }).filePath);
  return { bytes, rows: (await readBack(bytes, schema)).rows };
}

test('type matrix: every Iceberg type, nulls at every level and edge values read back exactly', async () => {
  const want = typeMatrixRows();
  const { rows } = await writeRows(TYPE_MATRIX_SCHEMA, want);
  assert.equal(rows.length, want.length);
  for (const [i, w] of want.entries()) {
    for (const f of TYPE_MATRIX_SCHEMA.fields) {
      assert.deepEqual(canonical(f.type, rows[i]?.[f.name] ?? null), canonical(f.type, w[f.name] ?? null), `row ${i}, column ${f.name}`);
    }
  }
  // The canonical form distinguishes what matters: NaN, -0, min/max longs, 38-digit decimals.
  const row1 = canonical(MATRIX, rows[1] ?? {}) as Record<string, unknown>;
  assert.equal(row1['f'], 'NaN');
  assert.equal(row1['d'], '-0');
  assert.equal(row1['l'], '-9223372036854775808');
  assert.equal(row1['dec_big'], '-9999999999999999999999999999.9999999999');
  assert.equal(row1['s'], '');
});

/** Walks the Iceberg schema and the footer's depth-first element list together. */
function expectedElements(fields: readonly NestedField[]): { name: string; id: number | undefined; type: IcebergType | undefined; required: boolean }[] {
  const out: { name: string; id: number | undefined; type: IcebergType | undefined; required: boolean }[] = [];
  const visit = (name: string, id: number, type: IcebergType, required: boolean): void => {
    out.push({ name, id, type, required });
    if (type.kind === 'struct') for (const f of type.fields) visit(f.name, f.id, f.type, f.required);
    if (type.kind === 'list') {
      out.push({ name: 'list', id: undefined, type: undefined, required: false });
      visit('element', type.elementId, type.element, type.elementRequired);
    }
    if (type.kind === 'map') {
      out.push({ name: 'key_value', id: undefined, type: undefined, required: false });
      visit('key', type.keyId, type.key, true);
      visit('value', type.valueId, type.value, type.valueRequired);
    }
  };
  for (const f of fields) visit(f.name, f.id, f.type, f.required);
  return out;
}

test('schema: field_id on every element (struct children, list element, map key and value), none on list/key_value', async () => {
  const { bytes } = await writeRows(TYPE_MATRIX_SCHEMA, typeMatrixRows());
  const schema = footerOf(bytes).schema;
  const want = expectedElements(TYPE_MATRIX_SCHEMA.fields);
  assert.equal(schema.length, want.length + 1, 'root + one element per Iceberg field and per repeated group');
  let ids = 0;
  for (const [i, w] of want.entries()) {
    const e = schema[i + 1] as SchemaElement;
    assert.equal(e.name, w.name, `element ${i + 1}`);
    assert.equal(e.field_id, w.id, `field_id of ${w.name} (element ${i + 1})`);
    if (w.id !== undefined) ids++;
    if (w.type === undefined) {
      assert.equal(e.repetition_type, 'REPEATED', `${w.name} is the repeated group`);
    } else {
      assert.equal(e.repetition_type, w.required ? 'REQUIRED' : 'OPTIONAL', `repetition of ${w.name}`);
    }
    if (w.type?.kind === 'list') assert.equal(e.logical_type?.type, 'LIST');
    if (w.type?.kind === 'map') assert.equal(e.logical_type?.type, 'MAP');
  }
  // 21 top-level/struct fields... every Iceberg id in the schema appears exactly once.
  assert.equal(ids, 42);
});

/** The Parquet physical type and annotation Iceberg's spec (Appendix A) asks for, per primitive. */
test('schema: physical and logical types per Iceberg Appendix A', async () => {
  const id = (() => {
    let n = 0;
    return () => ++n;
  })();
  const f = (name: string, type: IcebergType): NestedField => ({ id: id(), name, required: false, type });
  const schema: Schema = {
    schemaId: 3,
    fields: [
      f('b', { kind: 'boolean' }),
      f('i', { kind: 'int' }),
      f('l', { kind: 'long' }),
      f('fl', { kind: 'float' }),
      f('d', { kind: 'double' }),
      f('dec1', { kind: 'decimal', precision: 1, scale: 0 }),
      f('dec4', { kind: 'decimal', precision: 4, scale: 1 }),
      f('dec9', { kind: 'decimal', precision: 9, scale: 2 }),
      f('dec10', { kind: 'decimal', precision: 10, scale: 2 }),
      f('dec18', { kind: 'decimal', precision: 18, scale: 0 }),
      f('dec19', { kind: 'decimal', precision: 19, scale: 4 }),
      f('dec38', { kind: 'decimal', precision: 38, scale: 38 }),
      f('dt', { kind: 'date' }),
      f('tm', { kind: 'time' }),
      f('ts', { kind: 'timestamp' }),
      f('tstz', { kind: 'timestamptz' }),
      f('tsns', { kind: 'timestamp_ns' }),
      f('tstzns', { kind: 'timestamptz_ns' }),
      f('s', { kind: 'string' }),
      f('u', { kind: 'uuid' }),
      f('fx', { kind: 'fixed', length: 7 }),
      f('bin', { kind: 'binary' }),
    ],
  };
  const { bytes, rows } = await writeRows(schema, [{ dec1: -9n, dec38: -(10n ** 38n - 1n), tsns: -1n, tstzns: 1_700_000_000_000_000_001n, u: new Uint8Array(16).fill(0xab) }, { dec1: 9n }]);
  assert.equal(rows[0]?.['dec1'], -9n);
  assert.equal(rows[1]?.['dec1'], 9n);
  assert.equal(rows[0]?.['dec38'], -(10n ** 38n - 1n));
  assert.equal(rows[0]?.['tsns'], -1n);
  assert.equal(rows[0]?.['tstzns'], 1_700_000_000_000_000_001n);
  assert.deepEqual(rows[0]?.['u'], new Uint8Array(16).fill(0xab));
  const byName = new Map(footerOf(bytes).schema.map((e) => [e.name, e]));
  const check = (name: string, type: string, logical: Record<string, unknown> | undefined, extra: Partial<SchemaElement> = {}): void => {
    const e = byName.get(name);
    assert.ok(e, name);
    assert.equal(e.type, type, `${name}: physical type`);
    assert.deepEqual(e.logical_type, logical, `${name}: logical type`);
    for (const [k, v] of Object.entries(extra)) assert.equal(e[k as keyof SchemaElement], v, `${name}: ${k}`);
  };
  check('b', 'BOOLEAN', undefined);
  check('i', 'INT32', undefined);
  check('l', 'INT64', undefined);
  check('fl', 'FLOAT', undefined);
  check('d', 'DOUBLE', undefined);
  // arrow-rs 59 would store decimal(1, s) as INT64 (its INT32 range starts at precision 2); the writer
  // encodes it as precision 2 and patches the footer back (layout.ts), so it is INT32 like 2..9.
  check('dec1', 'INT32', { type: 'DECIMAL', precision: 1, scale: 0 }, { precision: 1, scale: 0 });
  check('dec4', 'INT32', { type: 'DECIMAL', precision: 4, scale: 1 }, { precision: 4, scale: 1 });
  check('dec9', 'INT32', { type: 'DECIMAL', precision: 9, scale: 2 });
  check('dec10', 'INT64', { type: 'DECIMAL', precision: 10, scale: 2 });
  check('dec18', 'INT64', { type: 'DECIMAL', precision: 18, scale: 0 });
  check('dec19', 'FIXED_LEN_BYTE_ARRAY', { type: 'DECIMAL', precision: 19, scale: 4 }, { type_length: 9 });
  check('dec38', 'FIXED_LEN_BYTE_ARRAY', { type: 'DECIMAL', precision: 38, scale: 38 }, { type_length: 16 });
  // The Arrow schema arrow-rs keeps in the footer (pyarrow restores types from it) declares the same precisions.
  const stored = footerOf(bytes).key_value_metadata?.find((kv) => kv.key === 'ARROW:schema')?.value;
  assert.ok(stored !== undefined, 'ARROW:schema entry');
  const arrowSchema = arrow.RecordBatchReader.from(Buffer.from(stored, 'base64')).open().schema;
  const precisionOf = (name: string): number | undefined => (arrowSchema.fields.find((x) => x.name === name)?.type as arrow.Decimal | undefined)?.precision;
  assert.deepEqual(['dec1', 'dec4', 'dec38'].map(precisionOf), [1, 4, 38]);
  check('dt', 'INT32', { type: 'DATE' });
  check('tm', 'INT64', { type: 'TIME', isAdjustedToUTC: false, unit: 'MICROS' });
  check('ts', 'INT64', { type: 'TIMESTAMP', isAdjustedToUTC: false, unit: 'MICROS' });
  check('tstz', 'INT64', { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' });
  check('tsns', 'INT64', { type: 'TIMESTAMP', isAdjustedToUTC: false, unit: 'NANOS' });
  check('tstzns', 'INT64', { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'NANOS' });
  check('s', 'BYTE_ARRAY', { type: 'STRING' });
  check('u', 'FIXED_LEN_BYTE_ARRAY', { type: 'UUID' }, { type_length: 16 });
  check('fx', 'FIXED_LEN_BYTE_ARRAY', undefined, { type_length: 7 });
  check('bin', 'BYTE_ARRAY', undefined);
});

test('pages are DATA_PAGE (V1) and ZSTD by default; write.parquet.compression-codec is honoured', async () => {
  for (const [codec, name] of [
    ['zstd', 'ZSTD'],
    ['snappy', 'SNAPPY'],
    ['gzip', 'GZIP'],
    ['uncompressed', 'UNCOMPRESSED'],
  ] as const) {
    const { bytes, rows } = await writeRows(TYPE_MATRIX_SCHEMA, typeMatrixRows(), { codec });
    assert.equal(rows.length, 4);
    const meta = footerOf(bytes);
    for (const rg of meta.row_groups) {
      for (const c of rg.columns) {
        assert.equal(c.meta_data?.codec, name, `${codec}: ${c.meta_data?.path_in_schema.join('.')}`);
        const pageTypes = new Set(c.meta_data?.encoding_stats?.map((s) => s.page_type));
        assert.ok(pageTypes.has('DATA_PAGE'), 'has data pages');
        assert.ok(!pageTypes.has('DATA_PAGE_V2'), 'no V2 pages');
      }
    }
  }
});

test('empty strings, non-ASCII (2-, 3- and 4-byte UTF-8), lone surrogates and long strings', async () => {
  const schema: Schema = { schemaId: 0, fields: [{ id: 1, name: 's', required: true, type: { kind: 'string' } }] };
  const values = ['', 'a', 'é', 'Zoë', '東京', '🧊', 'x'.repeat(100), `${'ü'.repeat(70)}!`, 'mixed ascii then ñ', '\u0000nul'];
  const { rows } = await writeRows(
    schema,
    values.map((s) => ({ s })),
  );
  assert.deepEqual(
    rows.map((r) => r['s']),
    values,
  );
  // A lone surrogate cannot be UTF-8: it is stored as U+FFFD (the column stays valid UTF-8).
  const lone = await writeRows(schema, [{ s: 'a\ud800b' }]);
  assert.equal(lone.rows[0]?.['s'], 'a\ufffdb');
});

test('timestamps before 1970 and far in the future, dates, both append paths for longs', async () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'ts', required: true, type: { kind: 'timestamp' } },
      { id: 2, name: 'tstz', required: true, type: { kind: 'timestamptz' } },
      { id: 3, name: 'dt', required: true, type: { kind: 'date' } },
    ],
  };
  const h = harness(schema);
  const a = h.writer.appender;
  const ts = a.long(1);
  const tstz = a.long(2);
  const dt = a.int(3);
  // 0001-01-01, 1900, just before and at the epoch, 9999-12-31T23:59:59.999999, the safe-integer edges, word edges.
  const micros = [-62135596800000000n, -2208988800000000n, -1n, 0n, 1n, 253402300799999999n, BigInt(Number.MIN_SAFE_INTEGER), BigInt(Number.MAX_SAFE_INTEGER), -4294967296n, 4294967295n, -2147483649n];
  const DAY = 86_400_000_000n;
  const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
  for (const m of micros) {
    // Safe integers go in as two int32 words (no BigInt); beyond ±2^53 µs (years ~1685-2255) as bigint.
    if (m >= BigInt(Number.MIN_SAFE_INTEGER) && m <= BigInt(Number.MAX_SAFE_INTEGER)) ts.appendNumber(Number(m));
    else ts.append(m);
    tstz.append(m);
    dt.append(Number(floorDiv(m, DAY)));
    a.endRecord();
  }
  const [file] = await h.writer.complete();
  assert.ok(file);
  const { rows } = await readBack(await h.store.get(file.filePath), schema);
  assert.deepEqual(
    rows.map((r) => r['ts']),
    micros,
  );
  assert.deepEqual(
    rows.map((r) => r['tstz']),
    micros,
  );
  assert.deepEqual(
    rows.map((r) => r['dt']),
    micros.map((m) => Number(floorDiv(m, DAY))),
  );
  assert.equal(rows[0]?.['dt'], -719162, '0001-01-01');
});

test('decimals: 38 digits, every append path (number, bigint, big-endian bytes) agrees', async () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'a', required: true, type: { kind: 'decimal', precision: 38, scale: 0 } },
      { id: 2, name: 'b', required: true, type: { kind: 'decimal', precision: 38, scale: 0 } },
      { id: 3, name: 'c', required: true, type: { kind: 'decimal', precision: 38, scale: 0 } },
      { id: 4, name: 'small', required: true, type: { kind: 'decimal', precision: 10, scale: 2 } },
    ],
  };
  const values = [0n, 1n, -1n, 127n, -128n, 255n, 2n ** 53n - 1n, -(2n ** 53n), 2n ** 63n, -(2n ** 64n) - 5n, 10n ** 38n - 1n, -(10n ** 38n - 1n), 12345678901234567890123456789012345678n];
  const be = (v: bigint): Uint8Array => {
    let n = 1;
    while (v >= 1n << BigInt(8 * n - 1) || v < -(1n << BigInt(8 * n - 1))) n++;
    let u = v < 0n ? (1n << BigInt(8 * n)) + v : v;
    const out = new Uint8Array(n);
    for (let i = n - 1; i >= 0; i--) {
      out[i] = Number(u & 0xffn);
      u >>= 8n;
    }
    return out;
  };
  const h = harness(schema);
  const ap = h.writer.appender;
  for (const [i, v] of values.entries()) {
    ap.decimal(1).appendUnscaled(v);
    if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) ap.decimal(2).appendUnscaledNumber(Number(v));
    else ap.decimal(2).appendUnscaled(v);
    ap.decimal(3).appendBigEndian(be(v));
    ap.decimal(4).appendUnscaledNumber(i * 101 - 500);
    ap.endRecord();
  }
  const [file] = await h.writer.complete();
  assert.ok(file);
  const { rows } = await readBack(await h.store.get(file.filePath), schema);
  for (const col of ['a', 'b', 'c']) {
    assert.deepEqual(
      rows.map((r) => r[col]),
      values,
      col,
    );
  }
  assert.deepEqual(
    rows.map((r) => r['small']),
    values.map((_, i) => BigInt(i * 101 - 500)),
  );
});
