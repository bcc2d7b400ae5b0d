/**
 * Schema evolution end to end: every kind of change the sink makes (optional column at the top level, in a
 * nested struct, in a struct inside a list element and a map value; int→long, float→double,
 * decimal(9,2)→decimal(18,2); required→optional; rename) is committed to the catalog first, the table
 * reloaded, and NEW files written with the ids the catalog returned (architecture "Field ids"). After each
 * change PyIceberg and DuckDB read old and new files together: old rows read null in new columns,
 * widened columns read the old values exactly, a renamed column reads old files' values under its new
 * name (readers resolve by field id, not by name). Incompatible changes are refused with a ConfigError
 * naming the field, and nothing reaches the catalog.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/core/errors.ts';
import type { Catalog, LoadedTable, TableIdentifier } from '../../src/commit/port.ts';
import { appendFiles, createTable, evolveSchema } from '../../src/commit/table-ops.ts';
import { applySchemaChanges } from '../../src/iceberg/evolution.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import { indexFields, SchemaIndex } from '../../src/iceberg/schema.ts';
import type { IcebergType, NestedField, PrimitiveType, Schema } from '../../src/iceberg/types.ts';
import { LAST_ADDED } from '../../src/iceberg/updates.ts';
import { readFooters, readTable } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import type { CatalogKind, Harness } from '../helpers/tables.ts';
import { assertSameRows } from '../helpers/type-matrix.ts';
import type { Row, Value } from '../helpers/type-matrix.ts';

// --- source schemas ------------------------------------------------------------------------------------
// What a decoder would hand the evolve step at each stage. Their ids are placeholders (unionByName matches
// by name and ignores them); the table's ids come from the catalog.

let placeholder = 1000;
const pid = (): number => ++placeholder;
const prim = (kind: PrimitiveType['kind']): PrimitiveType => ({ kind }) as PrimitiveType;
const fld = (name: string, type: IcebergType, required = false): NestedField => ({ id: pid(), name, required, type });
const struct = (...fields: NestedField[]): IcebergType => ({ kind: 'struct', fields });
const list = (element: IcebergType): IcebergType => ({ kind: 'list', elementId: pid(), elementRequired: false, element });
const map = (key: IcebergType, value: IcebergType): IcebergType => ({ kind: 'map', keyId: pid(), key, valueId: pid(), valueRequired: false, value });
const dec = (precision: number, scale: number): PrimitiveType => ({ kind: 'decimal', precision, scale });

/** Where the source schema stands: the widenable columns' types, and which optional additions it has. */
interface Stage {
  readonly qty: PrimitiveType;
  readonly ratio: PrimitiveType;
  readonly price: PrimitiveType;
  readonly codeRequired: boolean;
  readonly note: boolean;
  readonly stB: boolean;
  readonly nestedAdds: boolean;
}

function sourceSchema(s: Stage): Schema {
  const fields = [
    fld('id', prim('long'), true),
    fld('name', prim('string')),
    fld('qty', s.qty),
    fld('ratio', s.ratio),
    fld('price', s.price),
    fld('code', prim('string'), s.codeRequired),
    fld('st', struct(fld('a', prim('string')), ...(s.stB ? [fld('b', prim('int'))] : []))),
    fld('items', list(struct(fld('sku', prim('string')), ...(s.nestedAdds ? [fld('count', prim('int'))] : [])))),
    fld('attrs', map(prim('string'), struct(fld('v', prim('long')), ...(s.nestedAdds ? [fld('w', prim('string'))] : [])))),
    ...(s.note ? [fld('note', prim('string'))] : []),
  ];
  return { schemaId: 0, fields };
}

const BASE: Stage = { qty: prim('int'), ratio: prim('float'), price: dec(9, 2), codeRequired: true, note: false, stB: false, nestedAdds: false };

// --- rows ------------------------------------------------------------------------------------------------

/** A row as written at the base stage; floats are float32-exact so the widened double reads them exactly. */
function baseRow(id: number): Row {
  return {
    id: BigInt(id),
    name: `name-${id}`,
    qty: id % 2 === 0 ? -(2 ** 31) + id : 2 ** 31 - id, // int extremes: exact after int→long
    ratio: Math.fround(id + 0.1), // float32 value; as double it must read exactly this
    price: id % 2 === 0 ? 9999999_99n - BigInt(id) : -(9999999_99n - BigInt(id)), // decimal(9,2) extremes
    code: `c${id}`,
    st: id === 2 ? null : { a: `a${id}` },
    items: id === 2 ? [] : [{ sku: `sku-${id}` }, null],
    attrs: id === 2 ? [['k', null]] : [[`k${id}`, { v: BigInt(id) * 10n }]],
  };
}

/**
 * `rows` (written at an earlier stage) as they must read under a later schema: a column or struct member
 * the row's writer did not know reads null (inside a non-null struct, list element or map value too); a
 * renamed column reads the old value under its new name. Values themselves are unchanged by widening.
 */
function asReadUnder(schema: Schema, rows: readonly Row[], renames: ReadonlyMap<string, string>): Row[] {
  const fill = (type: IcebergType, v: Value): Value => {
    if (v === null) return null;
    switch (type.kind) {
      case 'struct': {
        const o = v as Record<string, Value>;
        return Object.fromEntries(type.fields.map((f) => [f.name, fill(f.type, o[f.name] ?? null)]));
      }
      case 'list':
        return (v as Value[]).map((e) => fill(type.element, e));
      case 'map':
        return (v as [Value, Value][]).map(([k, val]) => [k, fill(type.value, val)]);
      default:
        return v;
    }
  };
  return rows.map((r) => {
    const renamed = Object.fromEntries(Object.entries(r).map(([k, v]) => [renames.get(k) ?? k, v]));
    return Object.fromEntries(schema.fields.map((f) => [f.name, fill(f.type, renamed[f.name] ?? null)]));
  });
}

// --- catalog helpers -------------------------------------------------------------------------------------

/** Rename through a catalog commit: unionByName never renames, so the change is explicit. */
async function renameColumn(catalog: Catalog, id: TableIdentifier, path: string, name: string): Promise<LoadedTable> {
  const { metadata: md } = await catalog.loadTable(id);
  const schema = currentSchema(md);
  const fieldId = new SchemaIndex(schema).findByName(path)?.id;
  assert.ok(fieldId !== undefined, `column ${path}`);
  const nextSchemaId = Math.max(...md.schemas.map((s) => s.schemaId)) + 1;
  const applied = applySchemaChanges(schema, [{ kind: 'rename', fieldId, name }], md.lastColumnId, nextSchemaId);
  return catalog.commitTable(
    id,
    [
      { type: 'assert-current-schema-id', currentSchemaId: schema.schemaId },
      { type: 'assert-last-assigned-field-id', lastAssignedFieldId: md.lastColumnId },
    ],
    [
      { action: 'add-schema', schema: applied.schema },
      { action: 'set-current-schema', schemaId: LAST_ADDED },
    ],
  );
}

interface Fixture {
  readonly h: Harness;
  readonly catalog: Catalog;
  readonly kind: CatalogKind;
  readonly ns: string;
  readonly id: TableIdentifier;
}

let commitSeq = 0;

/** Writes `rows` with `table`'s current ids (one file) and appends it. */
async function writeAndAppend(f: Fixture, table: LoadedTable, rows: Row[]): Promise<LoadedTable> {
  const files = await writeRows(f.h.store, table, rows);
  assert.equal(files.length, 1);
  const outcome = await appendFiles(f.h.deps(f.catalog), f.id, { commitId: `evolution-${f.kind}-${++commitSeq}`, files });
  assert.equal(outcome.status, 'committed');
  return outcome.table;
}

/** PyIceberg and DuckDB both read exactly `expected` (every row, every column of the current schema). */
async function assertReadsBack(f: Fixture, table: LoadedTable, expected: Row[], files: number): Promise<void> {
  const schema = currentSchema(table.metadata);
  const name = `${f.ns}.${f.id.name}`;
  const py = await readTable({ table: name, catalog: f.h.readerCatalog(f.catalog) });
  assert.equal(py['files_scanned'], files, 'PyIceberg: files scanned');
  assert.deepEqual(
    (py['schema'] as { name: string }[]).map((c) => c.name),
    schema.fields.map((c) => c.name),
    'PyIceberg: the current schema',
  );
  assertSameRows(schema, expected, py.rows ?? [], 'PyIceberg');
  const duck = await readTable(
    f.kind === 'rest' ? { table: name, engine: 'duckdb' } : { table: name, engine: 'duckdb', metadata_location: table.metadataLocation },
  );
  assert.deepEqual(Object.keys(duck.rows?.[0] ?? {}), schema.fields.map((c) => c.name), 'DuckDB: the current schema');
  assertSameRows(schema, expected, duck.rows ?? [], 'DuckDB');
}

function typeOf(table: LoadedTable, path: string): IcebergType | undefined {
  return new SchemaIndex(currentSchema(table.metadata)).findByName(path)?.type;
}

for (const kind of ['rest', 'sql'] as CatalogKind[]) {
  test(`schema evolution through the ${kind === 'rest' ? 'REST' : 'SQL (PostgreSQL)'} catalog: old and new files read back in PyIceberg and DuckDB after each change`, async (t) => {
    const h = await harness(t);
    const catalog = h.catalog(kind);
    const ns = h.namespace();
    const f: Fixture = { h, catalog, kind, ns, id: ident(ns, 'evolving') };
    const deps = h.deps(catalog);

    let table = await createTable(deps, f.id, { schema: sourceSchema(BASE) });
    /** Every row written so far, each in the shape its writer knew. */
    const written: Row[] = [];
    const renames = new Map<string, string>();
    let files = 0;
    let stage: Stage = BASE;
    const step = async (rows: Row[]): Promise<void> => {
      table = await writeAndAppend(f, table, rows);
      written.push(...rows);
      files++;
      await assertReadsBack(f, table, asReadUnder(currentSchema(table.metadata), written, renames), files);
    };
    /** Commits the evolution to `next` and checks the table now has it; files are written only after. */
    const evolve = async (next: Stage): Promise<void> => {
      const before = table.metadata.lastColumnId;
      table = await evolveSchema(deps, f.id, sourceSchema(next));
      stage = next;
      const reloaded = await catalog.loadTable(f.id);
      assert.equal(reloaded.metadataLocation, table.metadataLocation, 'evolveSchema returns the table as committed');
      assert.ok(table.metadata.lastColumnId >= before);
    };

    await t.test('base table', async () => {
      await step([baseRow(1), baseRow(2)]);
    });

    await t.test('add an optional top-level column', async () => {
      await evolve({ ...stage, note: true });
      assert.deepEqual(typeOf(table, 'note'), prim('string'));
      await step([{ ...baseRow(3), note: 'three' }, { ...baseRow(4), note: null }]);
    });

    await t.test('add a column inside a nested struct', async () => {
      await evolve({ ...stage, stB: true });
      assert.deepEqual(typeOf(table, 'st.b'), prim('int'));
      await step([
        { ...baseRow(5), note: 'five', st: { a: 'a5', b: 55 } },
        { ...baseRow(6), note: null, st: { a: null, b: null } },
      ]);
    });

    await t.test('add a field to a struct inside a list element and a map value', async () => {
      await evolve({ ...stage, nestedAdds: true });
      assert.deepEqual(typeOf(table, 'items.element.count'), prim('int'));
      assert.deepEqual(typeOf(table, 'attrs.value.w'), prim('string'));
      await step([
        { ...baseRow(7), note: 'seven', st: { a: 'a7', b: 77 }, items: [{ sku: 's7', count: 7 }, { sku: null, count: null }], attrs: [['k7', { v: 70n, w: 'w7' }]] },
        { ...baseRow(8), note: null, st: { a: 'a8', b: null }, items: null, attrs: [['k8', { v: null, w: null }], ['k8b', null]] },
      ]);
    });

    await t.test('widen int→long, float→double, decimal(9,2)→decimal(18,2)', async () => {
      const ids = new SchemaIndex(currentSchema(table.metadata));
      const idsBefore = ['qty', 'ratio', 'price'].map((c) => ids.findByName(c)?.id);
      await evolve({ ...stage, qty: prim('long'), ratio: prim('double'), price: dec(18, 2) });
      assert.deepEqual(typeOf(table, 'qty'), prim('long'));
      assert.deepEqual(typeOf(table, 'ratio'), prim('double'));
      assert.deepEqual(typeOf(table, 'price'), dec(18, 2));
      const after = new SchemaIndex(currentSchema(table.metadata));
      assert.deepEqual(['qty', 'ratio', 'price'].map((c) => after.findByName(c)?.id), idsBefore, 'a promotion keeps the field id');
      // New files carry values only the wider types hold.
      await step([
        { ...baseRow(9), note: null, st: null, qty: 2n ** 40n, ratio: 0.1, price: 99_999_999_999_999_999n },
        { ...baseRow(10), note: null, st: null, qty: -(2n ** 62n), ratio: 1e300, price: -12_345_678_901_234_567n },
      ]);
    });

    await t.test('make a required column optional', async () => {
      assert.equal(currentSchema(table.metadata).fields.find((c) => c.name === 'code')?.required, true);
      await evolve({ ...stage, codeRequired: false });
      assert.equal(currentSchema(table.metadata).fields.find((c) => c.name === 'code')?.required, false);
      await step([
        { ...baseRow(11), code: null, note: null, st: null, qty: 11n, ratio: 1.1, price: 1100n },
        { ...baseRow(12), code: 'c12', note: null, st: null, qty: 12n, ratio: 1.2, price: 1200n },
      ]);
    });

    await t.test('rename a column: old files read under the new name', async () => {
      const before = new SchemaIndex(currentSchema(table.metadata)).findByName('name')?.id;
      table = await renameColumn(catalog, f.id, 'name', 'full_name');
      renames.set('name', 'full_name');
      const schema = currentSchema(table.metadata);
      assert.equal(schema.fields.find((c) => c.name === 'full_name')?.id, before, 'a rename keeps the field id');
      assert.equal(schema.fields.find((c) => c.name === 'name'), undefined);
      const rest = Object.fromEntries(Object.entries(baseRow(13)).filter(([k]) => k !== 'name'));
      await step([{ ...rest, full_name: 'renamed-13', note: null, st: null, qty: 13n, ratio: 1.3, price: 1300n }]);

      // Every file, old and new, carries the table's ids (pyarrow reads the footers): each column a file
      // has is the table's column of that id (old files: under the old name), and the newest file has
      // every column of the current schema.
      const pathOfId = new Map(indexFields(currentSchema(table.metadata)).map((i) => [i.field.id, i.path]));
      const footers = await readFooters({ table: `${f.ns}.${f.id.name}`, catalog: f.h.readerCatalog(f.catalog) });
      assert.equal(footers.files.length, files);
      for (const file of footers.files) {
        for (const [path, fieldId] of Object.entries(file.field_ids)) {
          assert.equal(pathOfId.get(fieldId ?? -1), path.replace(/^name(?=\.|$)/, 'full_name'), `${file.file_path}: ${path} has id ${fieldId}`);
        }
      }
      const newest = footers.files.filter((x) => 'full_name' in x.field_ids);
      assert.equal(newest.length, 1);
      assert.deepEqual(new Set(Object.keys(newest[0]?.field_ids ?? {})), new Set(pathOfId.values()));
      // the base file predates every added column
      assert.equal(footers.files.filter((x) => !('note' in x.field_ids)).length, 1);
    });

    await t.test('incompatible changes are refused naming the field, and nothing is committed', async () => {
      const before = await catalog.loadTable(f.id);
      const src = { ...sourceSchema({ ...stage, qty: prim('long'), ratio: prim('double'), price: dec(18, 2) }) };
      // the source no longer has `name` (renamed): rename it in the source too, or union would add it back
      const renamedSource: Schema = { ...src, fields: src.fields.map((c) => (c.name === 'name' ? { ...c, name: 'full_name' } : c)) };

      // decimal scale change (18,2 → 18,3) through the sink's evolve step
      const scaled: Schema = { ...renamedSource, fields: renamedSource.fields.map((c) => (c.name === 'price' ? { ...c, type: dec(18, 3) } : c)) };
      await assert.rejects(evolveSchema(deps, f.id, scaled), (e: unknown) => {
        assert.ok(e instanceof ConfigError, String(e));
        assert.match(e.message, /field price\b/);
        assert.equal(e.context['field'], 'price');
        return true;
      });
      // a type change that is not a promotion, nested (struct member string → int)
      const retyped: Schema = {
        ...renamedSource,
        fields: renamedSource.fields.map((c) => (c.name === 'st' ? { ...c, type: struct(fld('a', prim('int')), fld('b', prim('int'))) } : c)),
      };
      await assert.rejects(evolveSchema(deps, f.id, retyped), (e: unknown) => e instanceof ConfigError && e.context['field'] === 'st.a' && /field st\.a\b/.test(e.message));
      // narrowing long → int: the evolve step treats a narrower source as fitting the wider column (as
      // Java's unionByNameWith does) and changes nothing; as an explicit change it is refused.
      const narrower: Schema = { ...renamedSource, fields: renamedSource.fields.map((c) => (c.name === 'qty' ? { ...c, type: prim('int') } : c)) };
      const unchanged = await evolveSchema(deps, f.id, narrower);
      assert.equal(unchanged.metadataLocation, before.metadataLocation, 'a narrower source commits nothing');
      const schema = currentSchema(before.metadata);
      const qtyId = new SchemaIndex(schema).findByName('qty')?.id ?? -1;
      assert.throws(
        () => applySchemaChanges(schema, [{ kind: 'promote', fieldId: qtyId, to: prim('int') }], before.metadata.lastColumnId),
        (e: unknown) => e instanceof ConfigError && e.context['field'] === 'qty' && /field qty: cannot change type long to int/.test(e.message),
      );

      const after = await catalog.loadTable(f.id);
      assert.equal(after.metadataLocation, before.metadataLocation, 'no commit reached the catalog');
      assert.equal(after.metadata.currentSchemaId, before.metadata.currentSchemaId);
      assert.equal(after.metadata.schemas.length, before.metadata.schemas.length);
      assert.equal(after.metadata.lastColumnId, before.metadata.lastColumnId);
      // and the table still reads as before
      await assertReadsBack(f, after, asReadUnder(currentSchema(after.metadata), written, renames), files);
    });
  });
}
