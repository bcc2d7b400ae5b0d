/**
 * Field ids follow the catalog (architecture "Field ids"): a table created through the REST catalog with
 * ids deliberately out of the catalog's own order (top level 10, 3, 7, …; nested struct, list element, map
 * key/value ids interleaved) gets fresh ids from the catalog; files written after create carry exactly the
 * catalog's ids in their Parquet footers — every node, list elements and map keys/values included — as
 * pyarrow.parquet reads them, and none of the ids we sent. A rename committed through the catalog then
 * reads old files' values under the new name in PyIceberg and DuckDB, which resolve columns by id.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { applySchemaChanges } from '../../src/iceberg/evolution.ts';
import { currentSchema } from '../../src/iceberg/metadata.ts';
import { indexFields, SchemaIndex } from '../../src/iceberg/schema.ts';
import type { IcebergType, NestedField, PrimitiveType, Schema } from '../../src/iceberg/types.ts';
import { LAST_ADDED } from '../../src/iceberg/updates.ts';
import { readFooters, readTable } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import { assertSameRows } from '../helpers/type-matrix.ts';
import type { Row } from '../helpers/type-matrix.ts';

const prim = (kind: PrimitiveType['kind']): PrimitiveType => ({ kind }) as PrimitiveType;
const fld = (id: number, name: string, type: IcebergType, required = false): NestedField => ({ id, name, required, type });

/** Ids out of any breadth-first or depth-first order a catalog would assign; the largest is 20. */
const SENT: Schema = {
  schemaId: 0,
  fields: [
    fld(10, 'id', prim('long'), true),
    fld(3, 'st', { kind: 'struct', fields: [fld(12, 'x', prim('int')), fld(1, 'inner', { kind: 'struct', fields: [fld(20, 'y', prim('string'))] })] }),
    fld(7, 'tags', { kind: 'list', elementId: 2, elementRequired: false, element: prim('string') }),
    fld(15, 'm', {
      kind: 'map',
      keyId: 5,
      key: prim('string'),
      valueId: 9,
      valueRequired: false,
      value: { kind: 'struct', fields: [fld(11, 'q', prim('long')), fld(4, 'r', { kind: 'list', elementId: 6, elementRequired: true, element: prim('double') })] },
    }),
    fld(8, 'lm', { kind: 'list', elementId: 14, elementRequired: false, element: { kind: 'map', keyId: 13, key: prim('int'), valueId: 16, valueRequired: false, value: prim('string') } }),
    fld(18, 'name', prim('string')),
  ],
};

/** Column path (`a.b`, `tags.element`, `m.key`, `m.value.q`) → field id, for every field of `schema`. */
function idsByPath(schema: Schema): Map<string, number> {
  return new Map(indexFields(schema).map((i) => [i.path, i.field.id]));
}

const ROWS_A: Row[] = [
  { id: 1n, st: { x: 1, inner: { y: 'y1' } }, tags: ['a', null], m: [['k1', { q: 10n, r: [1.5, -0] }]], lm: [[[1, 'one']], null], name: 'first' },
  { id: 2n, st: null, tags: null, m: [['k2', null]], lm: [], name: null },
];
const ROWS_B: Row[] = [{ id: 3n, st: { x: null, inner: null }, tags: [], m: null, lm: [[[-2, null], [3, 'three']]], name: 'third' }];

test('files written after a REST create carry the catalog-assigned field ids (every node), and a rename reads old files by id', async (t) => {
  const h = await harness(t);
  const catalog = h.rest();
  const ns = h.namespace();
  const id = ident(ns, 'renumbered');
  const name = `${ns}.renumbered`;
  const deps = h.deps(catalog);

  const created = await createTable(deps, id, { schema: SENT });
  const schema = currentSchema(created.metadata);
  const sent = idsByPath(SENT);
  const assigned = idsByPath(schema);
  assert.deepEqual([...assigned.keys()].sort(), [...sent.keys()].sort(), 'same columns');
  // The catalog renumbered every field: we must follow it, not what we sent.
  for (const [path, sentId] of sent) assert.notEqual(assigned.get(path), sentId, `catalog id of ${path} differs from the id we sent`);
  assert.equal(created.metadata.lastColumnId, sent.size);
  assert.deepEqual((await catalog.loadTable(id)).metadata.schemas, created.metadata.schemas, 'a reload gives the same ids');

  // Two files, written after create with the returned table's schema.
  const files = [...(await writeRows(h.store, created, ROWS_A)), ...(await writeRows(h.store, created, ROWS_B))];
  assert.equal(files.length, 2);
  const appended = await appendFiles(deps, id, { commitId: 'field-ids-1', files });
  assert.equal(appended.status, 'committed');

  await t.test('pyarrow reads the catalog ids from every footer, list elements and map keys/values included', async () => {
    const footers = await readFooters({ table: name });
    // PyIceberg's own view of the schema agrees with the ids we parsed from the catalog.
    assert.deepEqual(new Map(Object.entries(footers.schema_field_ids)), assigned);
    assert.equal(footers.files.length, 2);
    assert.deepEqual(footers.files.map((f) => f.record_count).sort(), [1, 2], 'rows per file, from the footers');
    for (const file of footers.files) {
      const inFile = new Map(Object.entries(file.field_ids));
      assert.deepEqual([...inFile.keys()].sort(), [...assigned.keys()].sort(), `${file.file_path}: columns`);
      for (const [path, want] of assigned) {
        assert.equal(inFile.get(path), want, `${file.file_path}: field id of ${path}`);
        assert.notEqual(inFile.get(path), sent.get(path), `${file.file_path}: ${path} does not carry the id we sent`);
      }
    }
    for (const p of ['tags.element', 'm.key', 'm.value', 'm.value.r.element', 'lm.element', 'lm.element.key', 'lm.element.value']) {
      assert.ok(footers.files.every((f) => typeof f.field_ids[p] === 'number'), `${p} has a field id in every file`);
    }
  });

  await t.test('both readers read what we wrote', async () => {
    const all = [...ROWS_A, ...ROWS_B];
    assertSameRows(schema, all, (await readTable({ table: name })).rows ?? [], 'PyIceberg');
    assertSameRows(schema, all, (await readTable({ table: name, engine: 'duckdb' })).rows ?? [], 'DuckDB');
  });

  await t.test('a rename through the catalog: old files read under the new name, by id', async () => {
    const before = await catalog.loadTable(id);
    const base = currentSchema(before.metadata);
    const index = new SchemaIndex(base);
    const byName = (p: string): number => index.findByName(p)?.id ?? assert.fail(`no column ${p}`);
    // A top-level column, a nested struct member, and a member of a struct inside a map value.
    const renames = [
      { kind: 'rename' as const, fieldId: byName('name'), name: 'label' },
      { kind: 'rename' as const, fieldId: byName('st.inner.y'), name: 'why' },
      { kind: 'rename' as const, fieldId: byName('m.value.q'), name: 'qty' },
    ];
    const nextId = Math.max(...before.metadata.schemas.map((s) => s.schemaId)) + 1;
    const applied = applySchemaChanges(base, renames, before.metadata.lastColumnId, nextId);
    const renamed = await catalog.commitTable(
      id,
      [
        { type: 'assert-current-schema-id', currentSchemaId: base.schemaId },
        { type: 'assert-last-assigned-field-id', lastAssignedFieldId: before.metadata.lastColumnId },
      ],
      [
        { action: 'add-schema', schema: applied.schema },
        { action: 'set-current-schema', schemaId: LAST_ADDED },
      ],
    );
    const newSchema = currentSchema(renamed.metadata);
    const after = idsByPath(newSchema);
    assert.equal(after.get('label'), assigned.get('name'));
    assert.equal(after.get('st.inner.why'), assigned.get('st.inner.y'));
    assert.equal(after.get('m.value.qty'), assigned.get('m.value.q'));
    assert.equal(renamed.metadata.lastColumnId, created.metadata.lastColumnId, 'a rename assigns no id');

    // One more file with the renamed schema: its footer has the new names under the same ids.
    const rowsC: Row[] = [{ id: 4n, st: { x: 4, inner: { why: 'y4' } }, tags: ['d'], m: [['k4', { qty: 40n, r: [] }]], lm: null, label: 'fourth' }];
    const more = await appendFiles(deps, id, { commitId: 'field-ids-2', files: await writeRows(h.store, renamed, rowsC) });
    assert.equal(more.status, 'committed');
    const footers = await readFooters({ table: name });
    assert.equal(footers.files.length, 3);
    const newFile = footers.files.find((f) => 'label' in f.field_ids);
    assert.ok(newFile !== undefined, 'the new file names the column label');
    assert.deepEqual(new Map(Object.entries(newFile.field_ids)), after);
    assert.equal(footers.files.filter((f) => 'name' in f.field_ids).length, 2, 'the old files still name it name');

    // Old rows as they must read now: the same values under the new names.
    const asRenamed = (r: Row): Row => {
      const st = r['st'] as { x: number | null; inner: { y: string | null } | null } | null;
      const m = r['m'] as [string, { q: bigint; r: number[] } | null][] | null;
      return {
        id: r['id'] ?? null,
        st: st === null ? null : { x: st.x, inner: st.inner === null ? null : { why: st.inner.y } },
        tags: r['tags'] ?? null,
        m: m === null ? null : m.map(([k, v]) => [k, v === null ? null : { qty: v.q, r: v.r }]),
        lm: r['lm'] ?? null,
        label: r['name'] ?? null,
      };
    };
    const expected = [...ROWS_A, ...ROWS_B].map(asRenamed).concat(rowsC);
    const py = await readTable({ table: name });
    assert.deepEqual((py['schema'] as { name: string }[]).map((c) => c.name), ['id', 'st', 'tags', 'm', 'lm', 'label']);
    assertSameRows(newSchema, expected, py.rows ?? [], 'PyIceberg');
    const duck = await readTable({ table: name, engine: 'duckdb' });
    assert.deepEqual(Object.keys(duck.rows?.[0] ?? {}), ['id', 'st', 'tags', 'm', 'lm', 'label']);
    assertSameRows(newSchema, expected, duck.rows ?? [], 'DuckDB');
  });
});
