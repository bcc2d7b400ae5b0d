/**
 * DataFile metrics of written files, checked against values this test computes on its own from the
 * logical rows (counts, Iceberg ordering, Appendix D bytes, truncate(16)) and against the footer as
 * hyparquet reads it (column sizes, split offsets).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FileMetaData, SchemaElement } from 'hyparquet';
import type { DataFile } from '../../../src/iceberg/data-file.ts';
import type { IcebergType, NestedField, PrimitiveType, Schema, StructType } from '../../../src/iceberg/types.ts';
import { resolveWriteConfig } from '../../../src/write/index.ts';
import type { WriteConfig } from '../../../src/write/index.ts';
import { TYPE_MATRIX_SCHEMA, typeMatrixRows } from '../../helpers/type-matrix.ts';
import { appendRow, footerOf, harness, prng, readBack } from './helpers.ts';
import type { Row, Value } from './helpers.ts';

// --- the independent model ----------------------------------------------------------------------------

interface Leaf {
  readonly id: number;
  readonly type: PrimitiveType;
  readonly path: readonly string[];
}

/** Primitive leaves reachable through structs only (those get counts and bounds). */
function structLeaves(fields: readonly NestedField[], prefix: readonly string[] = []): Leaf[] {
  const out: Leaf[] = [];
  for (const f of fields) {
    const path = [...prefix, f.name];
    if (f.type.kind === 'struct') out.push(...structLeaves(f.type.fields, path));
    else if (f.type.kind !== 'list' && f.type.kind !== 'map') out.push({ id: f.id, type: f.type, path });
  }
  return out;
}

/** Ids of primitive leaves under a list or map (column sizes only). */
function repeatedLeafIds(fields: readonly NestedField[]): number[] {
  const out: number[] = [];
  const visit = (id: number, t: IcebergType, repeated: boolean): void => {
    if (t.kind === 'struct') for (const f of t.fields) visit(f.id, f.type, repeated);
    else if (t.kind === 'list') visit(t.elementId, t.element, true);
    else if (t.kind === 'map') {
      visit(t.keyId, t.key, true);
      visit(t.valueId, t.value, true);
    } else if (repeated) out.push(id);
  };
  for (const f of fields) visit(f.id, f.type, false);
  return out;
}

function valueAt(row: Row, path: readonly string[]): Value {
  let v: Value = row;
  for (const p of path) {
    if (v === null || typeof v !== 'object' || v instanceof Uint8Array || Array.isArray(v)) return null;
    v = (v as Record<string, Value>)[p] ?? null;
  }
  return v;
}

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

function compare(t: PrimitiveType, a: Value, b: Value): number {
  switch (t.kind) {
    case 'string':
      return Buffer.compare(utf8(a as string), utf8(b as string));
    case 'binary':
    case 'fixed':
    case 'uuid':
      return Buffer.compare(Buffer.from(a as Uint8Array), Buffer.from(b as Uint8Array));
    case 'boolean':
      return Number(a) - Number(b);
    default: {
      const x = t.kind === 'float' ? Math.fround(a as number) : a;
      const y = t.kind === 'float' ? Math.fround(b as number) : b;
      if ((x as number | bigint) < (y as number | bigint)) return -1;
      if ((x as number | bigint) > (y as number | bigint)) return 1;
      if (Object.is(x, -0) && Object.is(y, 0)) return -1;
      if (Object.is(x, 0) && Object.is(y, -0)) return 1;
      return 0;
    }
  }
}

function minimalBigEndian(v: bigint): Uint8Array {
  const bytes: number[] = [];
  let x = v;
  for (;;) {
    bytes.unshift(Number(x & 0xffn));
    const rest = x >> 8n; // arithmetic shift
    const sign = (bytes[0] as number) & 0x80;
    if ((rest === 0n && sign === 0) || (rest === -1n && sign !== 0)) break;
    x = rest;
  }
  return Uint8Array.from(bytes);
}

function encode(t: PrimitiveType, v: Value): Uint8Array {
  const dv = (n: number, f: (d: DataView) => void): Uint8Array => {
    const out = new Uint8Array(n);
    f(new DataView(out.buffer));
    return out;
  };
  switch (t.kind) {
    case 'boolean':
      return Uint8Array.of(v === true ? 1 : 0);
    case 'int':
    case 'date':
      return dv(4, (d) => d.setInt32(0, v as number, true));
    case 'float':
      return dv(4, (d) => d.setFloat32(0, v as number, true));
    case 'double':
      return dv(8, (d) => d.setFloat64(0, v as number, true));
    case 'decimal':
      return minimalBigEndian(v as bigint);
    case 'string':
      return new Uint8Array(utf8(v as string));
    case 'binary':
    case 'fixed':
    case 'uuid':
      return Uint8Array.from(v as Uint8Array);
    default:
      return dv(8, (d) => d.setBigInt64(0, v as bigint, true));
  }
}

/** truncate(16) as the spec describes it, written independently of the writer. */
function truncatedLower(t: PrimitiveType, v: Value, n: number): Value {
  if (t.kind === 'string') return Array.from(v as string).slice(0, n).join('');
  if (t.kind === 'binary') return (v as Uint8Array).slice(0, n);
  return v;
}
function truncatedUpper(t: PrimitiveType, v: Value, n: number): Value | undefined {
  if (t.kind === 'string') {
    const cps = Array.from(v as string);
    if (cps.length <= n) return v;
    const head = cps.slice(0, n);
    for (let i = n - 1; i >= 0; i--) {
      const cp = (head[i] as string).codePointAt(0) as number;
      if (cp < 0x10ffff) return head.slice(0, i).join('') + String.fromCodePoint(cp + 1 === 0xd800 ? 0xe000 : cp + 1);
    }
    return undefined;
  }
  if (t.kind === 'binary') {
    const b = v as Uint8Array;
    if (b.length <= n) return b;
    for (let i = n - 1; i >= 0; i--) {
      if ((b[i] as number) < 255) {
        const out = b.slice(0, i + 1);
        out[i] = (b[i] as number) + 1;
        return out;
      }
    }
    return undefined;
  }
  return v;
}

interface Expected {
  valueCount: number;
  nullCount: number;
  nanCount: number;
  lower: Uint8Array | undefined;
  upper: Uint8Array | undefined;
}

function expectedMetrics(leaf: Leaf, rows: readonly Row[], truncate: number | undefined = 16): Expected {
  let nullCount = 0;
  let nanCount = 0;
  let min: Value | undefined;
  let max: Value | undefined;
  for (const r of rows) {
    const v = valueAt(r, leaf.path);
    if (v === null) {
      nullCount++;
      continue;
    }
    if (typeof v === 'number' && Number.isNaN(v)) {
      nanCount++;
      continue;
    }
    if (min === undefined || compare(leaf.type, v, min) < 0) min = v;
    if (max === undefined || compare(leaf.type, v, max) > 0) max = v;
  }
  const lo = min === undefined ? undefined : truncate === undefined ? min : truncatedLower(leaf.type, min, truncate);
  const hi = max === undefined ? undefined : truncate === undefined ? max : truncatedUpper(leaf.type, max, truncate);
  return {
    valueCount: rows.length,
    nullCount,
    nanCount,
    lower: lo === undefined ? undefined : encode(leaf.type, lo),
    upper: hi === undefined ? undefined : encode(leaf.type, hi),
  };
}

function assertMetrics(file: DataFile, schema: Schema, rows: readonly Row[], truncate: number | undefined = 16, uuidBounds = false): void {
  assert.equal(file.recordCount, BigInt(rows.length));
  for (const leaf of structLeaves(schema.fields)) {
    const computed = expectedMetrics(leaf, rows, truncate);
    // uuid: counts only unless icefloe.write.metadata.metrics.uuid-bounds (Java compares uuids signed).
    const want = leaf.type.kind === 'uuid' && !uuidBounds ? { ...computed, lower: undefined, upper: undefined } : computed;
    const name = leaf.path.join('.');
    assert.equal(file.valueCounts?.get(leaf.id), BigInt(want.valueCount), `${name}: value count`);
    assert.equal(file.nullValueCounts?.get(leaf.id), BigInt(want.nullCount), `${name}: null count`);
    if (leaf.type.kind === 'float' || leaf.type.kind === 'double') assert.equal(file.nanValueCounts?.get(leaf.id), BigInt(want.nanCount), `${name}: NaN count`);
    else assert.equal(file.nanValueCounts?.has(leaf.id), false, `${name}: no NaN count`);
    assert.deepEqual(file.lowerBounds?.get(leaf.id), want.lower, `${name}: lower bound`);
    assert.deepEqual(file.upperBounds?.get(leaf.id), want.upper, `${name}: upper bound`);
  }
  for (const id of repeatedLeafIds(schema.fields)) {
    assert.equal(file.valueCounts?.has(id), false, `leaf ${id} under a list/map has no value count`);
    assert.equal(file.lowerBounds?.has(id), false, `leaf ${id} under a list/map has no bounds`);
  }
}

/** Column sizes and split offsets as hyparquet reads the footer. */
function assertFooterMetrics(file: DataFile, meta: FileMetaData): void {
  const idByPath = new Map<string, number>();
  const walk = (elements: SchemaElement[], at: number, prefix: string[]): number => {
    const e = elements[at] as SchemaElement;
    const path = at === 0 ? [] : [...prefix, e.name];
    let next = at + 1;
    for (let i = 0; i < (e.num_children ?? 0); i++) next = walk(elements, next, path);
    if ((e.num_children ?? 0) === 0 && e.field_id !== undefined) idByPath.set(path.join('.'), e.field_id);
    return next;
  };
  walk(meta.schema, 0, []);
  const sizes = new Map<number, bigint>();
  for (const rg of meta.row_groups) {
    for (const c of rg.columns) {
      const id = idByPath.get(c.meta_data?.path_in_schema.join('.') ?? '');
      assert.ok(id !== undefined, `leaf ${c.meta_data?.path_in_schema.join('.')} has a field id`);
      sizes.set(id, (sizes.get(id) ?? 0n) + (c.meta_data?.total_compressed_size ?? 0n));
    }
  }
  assert.deepEqual(new Map([...(file.columnSizes ?? new Map<number, bigint>())].sort((a, b) => a[0] - b[0])), new Map([...sizes].sort((a, b) => a[0] - b[0])));
  const starts = meta.row_groups.map((rg) => {
    const m = rg.columns[0]?.meta_data;
    assert.ok(m);
    const d = m.dictionary_page_offset;
    return d !== undefined && d < m.data_page_offset ? d : m.data_page_offset;
  });
  assert.deepEqual(file.splitOffsets, starts);
  assert.equal(file.splitOffsets?.[0], 4n, 'the first row group starts right after the PAR1 magic');
}

async function writeAndCheck(schema: Schema, rows: readonly Row[], config: Partial<WriteConfig> = {}, truncate: number | undefined = 16): Promise<DataFile> {
  const h = harness(schema, config);
  for (const r of rows) {
    if (appendRow(h.writer.appender, schema.fields, r)) await h.writer.flushIfNeeded();
  }
  const files = await h.writer.complete();
  assert.equal(files.length, 1);
  const file = files[0] as DataFile;
  const bytes = await h.store.get(file.filePath);
  assert.equal(file.fileSizeInBytes, BigInt(bytes.length));
  assertMetrics(file, schema, rows, truncate, config.uuidBounds === true);
  assertFooterMetrics(file, footerOf(bytes));
  return file;
}

// --- tests --------------------------------------------------------------------------------------------

test('type matrix: counts, NaN, ±0, min/max long, 38-digit decimals, truncated strings, nested nulls', async () => {
  const rows = typeMatrixRows();
  const file = await writeAndCheck(TYPE_MATRIX_SCHEMA, rows);
  // A few expectations written out by hand, so the model above is checked too.
  const id = (name: string): number => (TYPE_MATRIX_SCHEMA.fields.find((f) => f.name === name) as NestedField).id;
  const hex = (b: Uint8Array | undefined): string => Buffer.from(b ?? []).toString('hex');
  assert.equal(hex(file.lowerBounds?.get(id('l'))), '0000000000000080', 'min long, little-endian');
  assert.equal(hex(file.upperBounds?.get(id('l'))), 'ffffffffffffff7f', 'max long');
  assert.equal(hex(file.lowerBounds?.get(id('f'))), '00000080', '-0.0 is the float lower bound');
  assert.equal(hex(file.upperBounds?.get(id('f'))), '0000807f', '+Infinity is the float upper bound; NaN is never one');
  assert.equal(file.nanValueCounts?.get(id('f')), 1n);
  assert.equal(hex(file.lowerBounds?.get(id('dec_big'))), 'b4c4b357a5793b85f675ddc000000001', '-(10^38 - 1), big-endian');
  assert.equal(Buffer.from(file.upperBounds?.get(id('s')) ?? []).toString(), 'aaaaaaaaaaaaaaab', 'upper bound truncated to 16 code points and rounded up');
  assert.equal(Buffer.from(file.lowerBounds?.get(id('s')) ?? []).toString(), '', 'empty string lower bound');
  assert.equal(file.upperBounds?.has(id('u')), false, 'no uuid bounds by default');
  assert.equal(file.valueCounts?.get(id('u')), 4n, 'uuid counts are kept');
  const withUuidBounds = await writeAndCheck(TYPE_MATRIX_SCHEMA, rows, { uuidBounds: true });
  assert.equal(hex(withUuidBounds.upperBounds?.get(id('u'))), 'f79c3e09677c4bbda4793f349cb785e7', 'uuid bound is big-endian bytes');
  // st.name is null in row 1 (name null) and row 0 (st null); st.inner.depth null in rows 0, 1 (inner null), 3.
  const st = TYPE_MATRIX_SCHEMA.fields.find((f) => f.name === 'st') as NestedField;
  const stFields = (st.type as StructType).fields;
  const depth = ((stFields[1] as NestedField).type as StructType).fields[0] as NestedField;
  assert.equal(file.nullValueCounts?.get(depth.id), 3n);
});

test('generated rows over many row groups: metrics merge across row groups exactly', async () => {
  const schema: Schema = {
    schemaId: 7,
    fields: [
      { id: 1, name: 'l', required: true, type: { kind: 'long' } },
      { id: 2, name: 'f', required: false, type: { kind: 'float' } },
      { id: 3, name: 'd', required: false, type: { kind: 'double' } },
      { id: 4, name: 's', required: false, type: { kind: 'string' } },
      { id: 5, name: 'dec', required: false, type: { kind: 'decimal', precision: 20, scale: 3 } },
      { id: 6, name: 'b', required: false, type: { kind: 'boolean' } },
      {
        id: 7,
        name: 'st',
        required: false,
        type: {
          kind: 'struct',
          fields: [
            { id: 8, name: 'req', required: true, type: { kind: 'int' } },
            { id: 9, name: 'bin', required: false, type: { kind: 'binary' } },
            { id: 10, name: 'tags', required: false, type: { kind: 'list', elementId: 11, elementRequired: true, element: { kind: 'string' } } },
          ],
        },
      },
      { id: 12, name: 'fx', required: false, type: { kind: 'fixed', length: 3 } },
    ],
  };
  const rnd = prng(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const words = ['', 'a', 'Zoë', '東京', '🧊', 'zzzzzzzzzzzzzzzzzzzzzz', 'aaaaaaaaaaaaaaaaa€', 'M', '\u{10FFFF}x'];
  const rows: Row[] = [];
  for (let i = 0; i < 700; i++) {
    const nullish = (p: number): boolean => rnd() < p;
    rows.push({
      l: pick([-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n, 4294967295n, 4294967296n, -4294967296n, BigInt(Math.floor(rnd() * 2 ** 40) - 2 ** 39)]),
      f: nullish(0.1) ? null : pick([Number.NaN, -0, 0, 1.5, -3.25, 3.4e38, Number.NEGATIVE_INFINITY, rnd() * 100]),
      d: nullish(0.1) ? null : pick([Number.NaN, -0, 0, 1e-300, -1e300, rnd()]),
      s: nullish(0.2) ? null : pick(words),
      dec: nullish(0.1) ? null : BigInt(Math.floor(rnd() * 2 ** 50) - 2 ** 49) * pick([1n, 100000n]),
      b: nullish(0.3) ? null : rnd() < 0.5,
      st: nullish(0.25)
        ? null
        : {
            req: Math.floor(rnd() * 2 ** 31) * (rnd() < 0.5 ? -1 : 1),
            bin: nullish(0.2) ? null : Uint8Array.from({ length: Math.floor(rnd() * 20) }, () => pick([0, 1, 255, Math.floor(rnd() * 256)])),
            tags: nullish(0.2) ? null : Array.from({ length: Math.floor(rnd() * 3) }, () => pick(words)),
          },
      fx: nullish(0.2) ? null : Uint8Array.from({ length: 3 }, () => Math.floor(rnd() * 256)),
    });
  }
  const file = await writeAndCheck(schema, rows, { rowGroupRows: 64 });
  assert.equal(file.splitOffsets?.length, Math.ceil(700 / 64));
  // The struct's required child is null exactly where the struct is.
  assert.equal(file.nullValueCounts?.get(8), BigInt(rows.filter((r) => r['st'] === null).length));
  // The list element has a column size, but no counts or bounds.
  assert.ok((file.columnSizes?.get(11) ?? 0n) > 0n);
});

test('all-null and all-NaN columns: counts but no bounds', async () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'n', required: false, type: { kind: 'string' } },
      { id: 2, name: 'nan', required: false, type: { kind: 'double' } },
    ],
  };
  const file = await writeAndCheck(schema, [
    { n: null, nan: Number.NaN },
    { n: null, nan: Number.NaN },
  ]);
  assert.equal(file.lowerBounds?.size, 0);
  assert.equal(file.upperBounds?.size, 0);
  assert.equal(file.nanValueCounts?.get(2), 2n);
  assert.equal(file.nullValueCounts?.get(1), 2n);
});

test('upper bounds that cannot be rounded up are dropped; lower bounds stay', async () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 's', required: true, type: { kind: 'string' } },
      { id: 2, name: 'b', required: true, type: { kind: 'binary' } },
    ],
  };
  const maxString = '\u{10FFFF}'.repeat(17);
  const maxBytes = new Uint8Array(17).fill(0xff);
  const file = await writeAndCheck(schema, [{ s: maxString, b: maxBytes }]);
  assert.equal(file.upperBounds?.has(1), false);
  assert.equal(file.upperBounds?.has(2), false);
  assert.equal(Buffer.from(file.lowerBounds?.get(1) ?? []).toString(), '\u{10FFFF}'.repeat(16));
  assert.deepEqual(file.lowerBounds?.get(2), new Uint8Array(16).fill(0xff));
  // A code point before the surrogate range increments past it (U+D7FF + 1 = U+E000).
  const f2 = await writeAndCheck(schema, [{ s: '\u{D7FF}'.repeat(17), b: Uint8Array.of(1) }]);
  assert.equal(Buffer.from(f2.upperBounds?.get(1) ?? []).toString(), '\u{D7FF}'.repeat(15) + '\u{E000}');
});

test('metrics modes: default counts, per-column full / truncate(4) / none', async () => {
  const { config } = resolveWriteConfig({
    'write.metadata.metrics.default': 'counts',
    'write.metadata.metrics.column.s': 'full',
    'write.metadata.metrics.column.st.bin': 'truncate(4)',
    'write.metadata.metrics.column.l': 'none',
  });
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'l', required: true, type: { kind: 'long' } },
      { id: 2, name: 's', required: true, type: { kind: 'string' } },
      { id: 3, name: 'i', required: false, type: { kind: 'int' } },
      { id: 4, name: 'st', required: true, type: { kind: 'struct', fields: [{ id: 5, name: 'bin', required: true, type: { kind: 'binary' } }] } },
    ],
  };
  const h = harness(schema, config);
  const rows: Row[] = [
    { l: 5n, s: 'x'.repeat(40), i: null, st: { bin: Uint8Array.of(1, 2, 3, 4, 5, 6) } },
    { l: 6n, s: 'a', i: 3, st: { bin: Uint8Array.of(9) } },
  ];
  for (const r of rows) appendRow(h.writer.appender, schema.fields, r);
  const [file] = await h.writer.complete();
  assert.ok(file);
  // none: nothing but the column size
  assert.equal(file.valueCounts?.has(1), false);
  assert.equal(file.lowerBounds?.has(1), false);
  assert.ok((file.columnSizes?.get(1) ?? 0n) > 0n);
  // full: the whole 40-character string
  assert.equal(Buffer.from(file.upperBounds?.get(2) ?? []).toString(), 'x'.repeat(40));
  // counts: counts only
  assert.equal(file.valueCounts?.get(3), 2n);
  assert.equal(file.nullValueCounts?.get(3), 1n);
  assert.equal(file.lowerBounds?.has(3), false);
  // truncate(4) on a nested binary
  assert.deepEqual(file.lowerBounds?.get(5), Uint8Array.of(1, 2, 3, 4));
  assert.deepEqual(file.upperBounds?.get(5), Uint8Array.of(9));
});

test('abortRecord drops a half-appended record from data and metrics, at every nesting level', async () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'id', required: true, type: { kind: 'long' } },
      { id: 2, name: 'name', required: false, type: { kind: 'string' } },
      { id: 3, name: 'tags', required: false, type: { kind: 'list', elementId: 4, elementRequired: false, element: { kind: 'string' } } },
      { id: 5, name: 'm', required: false, type: { kind: 'map', keyId: 6, key: { kind: 'string' }, valueId: 7, valueRequired: false, value: { kind: 'int' } } },
      { id: 8, name: 'st', required: false, type: { kind: 'struct', fields: [{ id: 9, name: 'x', required: false, type: { kind: 'double' } }] } },
    ],
  };
  const h = harness(schema);
  const a = h.writer.appender;
  const good: Row[] = [
    { id: 1n, name: 'b', tags: ['t'], m: [['k', 1]], st: { x: 1 } },
    { id: 2n, name: 'c', tags: [], m: null, st: null },
  ];
  appendRow(a, schema.fields, good[0] as Row);
  // A record that fails half-way: id, name and part of the list and map are in, the struct is open.
  a.long(1).append(-100n);
  a.string(2).append('AAA (aborted)');
  a.list(3).begin();
  a.string(4).append('aborted tag');
  a.map(5).begin();
  a.string(6).append('aborted key');
  a.struct(8).begin();
  a.double(9).append(-1e9);
  a.abortRecord();
  appendRow(a, schema.fields, good[1] as Row);
  const [file] = await h.writer.complete();
  assert.ok(file);
  const { rows } = await readBack(await h.store.get(file.filePath), schema);
  assert.equal(rows.length, 2);
  assert.deepEqual(
    rows.map((r) => r['tags']),
    [['t'], []],
  );
  assert.deepEqual(rows[0]?.['m'], [['k', 1]]);
  assertMetrics(file, schema, good);
});

test('a field the decoder leaves out is null (optional) or a DataError (required)', async () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'id', required: true, type: { kind: 'long' } },
      { id: 2, name: 'opt', required: false, type: { kind: 'int' } },
      { id: 3, name: 'st', required: false, type: { kind: 'struct', fields: [{ id: 4, name: 'a', required: false, type: { kind: 'int' } }, { id: 5, name: 'b', required: true, type: { kind: 'int' } }] } },
    ],
  };
  const h = harness(schema);
  const a = h.writer.appender;
  a.long(1).append(1n);
  a.struct(3).begin();
  a.int(5).append(7);
  a.struct(3).end(); // `a` left out -> null
  a.endRecord(); // `opt` left out -> null
  a.long(1).append(2n);
  a.struct(3).begin();
  assert.throws(() => a.struct(3).end(), (e: Error) => e.name === 'DataError' && /required field st\.b/.test(e.message));
  a.abortRecord();
  assert.throws(() => a.endRecord(), (e: Error) => e.name === 'DataError' && /required field id/.test(e.message));
  a.abortRecord();
  assert.throws(() => a.long(1).appendNull(), (e: Error) => e.name === 'DataError');
  const [file] = await h.writer.complete();
  assert.ok(file);
  const { rows } = await readBack(await h.store.get(file.filePath), schema);
  assert.deepEqual(rows, [{ id: 1n, opt: null, st: { a: null, b: 7 } }]);
});

test('uuid columns: counts only and no Parquet statistics by default; both with icefloe.write.metadata.metrics.uuid-bounds=true', async () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'u', required: false, type: { kind: 'uuid' } },
      { id: 2, name: 'l', required: true, type: { kind: 'long' } },
      { id: 3, name: 'tags', required: false, type: { kind: 'list', elementId: 4, elementRequired: false, element: { kind: 'uuid' } } },
    ],
  };
  const nested: Schema = {
    schemaId: 0,
    fields: [...schema.fields, { id: 5, name: 'st', required: false, type: { kind: 'struct', fields: [{ id: 6, name: 'u', required: false, type: { kind: 'uuid' } }] } }],
  };
  const uuid = (b: number): Uint8Array => new Uint8Array(16).fill(b);
  // Straddling 80000000-…: where Java's signed order and the spec's unsigned order disagree.
  const rows: Row[] = [
    { u: uuid(0x01), l: 1n, tags: [uuid(0x02)], st: { u: uuid(0x03) } },
    { u: uuid(0xfe), l: 2n, tags: null, st: { u: uuid(0xfd) } },
    { u: null, l: 3n, tags: [], st: null },
  ];
  /** Which leaf columns carry Parquet statistics, by path. */
  const statsOf = async (s: Schema, props: Record<string, string>): Promise<{ file: DataFile; stats: Record<string, boolean> }> => {
    const h = harness(s, resolveWriteConfig(props).config);
    for (const r of rows) appendRow(h.writer.appender, s.fields, r);
    const [file] = await h.writer.complete();
    assert.ok(file);
    const meta = footerOf(await h.store.get(file.filePath));
    const cols = meta.row_groups[0]?.columns ?? [];
    return { file, stats: Object.fromEntries(cols.map((c) => [c.meta_data?.path_in_schema.join('.'), c.meta_data?.statistics?.min_value !== undefined])) };
  };
  const off = await statsOf(schema, {});
  assert.equal(off.file.valueCounts?.get(1), 3n);
  assert.equal(off.file.nullValueCounts?.get(1), 1n);
  assert.equal(off.file.lowerBounds?.has(1), false, 'no lower bound');
  assert.equal(off.file.upperBounds?.has(1), false, 'no upper bound');
  assert.deepEqual(off.stats, { u: false, l: true, 'tags.list.element': true }, 'no statistics on the top-level uuid; others keep theirs');
  // A uuid inside a struct cannot be named to parquet-wasm: the whole file goes without statistics.
  const offNested = await statsOf(nested, {});
  assert.equal(offNested.file.lowerBounds?.has(6), false);
  assert.deepEqual(offNested.stats, { u: false, l: false, 'tags.list.element': false, 'st.u': false });
  const on = await statsOf(nested, { 'icefloe.write.metadata.metrics.uuid-bounds': 'true' });
  assert.deepEqual(on.file.lowerBounds?.get(1), uuid(0x01));
  assert.deepEqual(on.file.upperBounds?.get(1), uuid(0xfe));
  assert.deepEqual(on.file.upperBounds?.get(6), uuid(0xfd));
  assert.deepEqual(on.stats, { u: true, l: true, 'tags.list.element': true, 'st.u': true });
  assert.throws(() => resolveWriteConfig({ 'icefloe.write.metadata.metrics.uuid-bounds': 'yes' }), /must be true or false/);
  assert.equal(resolveWriteConfig({ 'icefloe.write.metadata.metrics.uuid-bounds': ' FALSE ' }).config.uuidBounds, false);
});
