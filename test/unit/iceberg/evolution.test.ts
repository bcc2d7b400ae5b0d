import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { applySchemaChanges, diffSchemas, evolveTableSchema, isPromotionAllowed, unionByName } from '../../../src/iceberg/evolution.ts';
import { currentSchema } from '../../../src/iceberg/metadata.ts';
import { tableMetadataFromJson } from '../../../src/iceberg/metadata-json.ts';
import { indexFields, SchemaIndex } from '../../../src/iceberg/schema.ts';
import { applyUpdates, checkRequirements } from '../../../src/iceberg/apply-updates.ts';
import type { NestedField, Schema } from '../../../src/iceberg/types.ts';

const table: Schema = {
  schemaId: 3,
  identifierFieldIds: [1],
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'int' } },
    { id: 2, name: 'price', required: true, type: { kind: 'decimal', precision: 9, scale: 2 } },
    { id: 3, name: 'ratio', required: false, type: { kind: 'float' } },
    {
      id: 4,
      name: 'customer',
      required: false,
      type: { kind: 'struct', fields: [{ id: 5, name: 'name', required: true, type: { kind: 'string' } }] },
    },
    {
      id: 6,
      name: 'lines',
      required: false,
      type: {
        kind: 'list',
        elementId: 7,
        elementRequired: true,
        element: { kind: 'struct', fields: [{ id: 8, name: 'sku', required: true, type: { kind: 'string' } }] },
      },
    },
  ],
};
const LAST = 8;

/** A source schema: ids are irrelevant (matched by name). */
function source(fields: NestedField[]): Schema {
  return { schemaId: 0, fields };
}
const f = (name: string, type: NestedField['type'], required = false): NestedField => ({ id: 0, name, required, type });

test('unionByName: no difference, no change', () => {
  const ev = unionByName(table, table, LAST);
  assert.equal(ev.changed, false);
  assert.equal(ev.schema, table);
  assert.deepEqual(ev.updates, []);
  // a source missing columns keeps them; a narrower type is accepted as is
  const narrower = source([f('id', { kind: 'int' }, true), f('ratio', { kind: 'float' })]);
  assert.equal(unionByName(table, narrower, LAST).changed, false);
  const widerTable: Schema = { ...table, fields: table.fields.map((x) => (x.id === 1 ? { ...x, type: { kind: 'long' } } : x)) };
  assert.equal(unionByName(widerTable, source([f('id', { kind: 'int' }, true)]), LAST).changed, false);
});

test('unionByName adds optional columns at any depth with ids from last-column-id + 1 in Java order', () => {
  const src = source([
    f('id', { kind: 'int' }, true),
    {
      ...f('customer', {
        kind: 'struct',
        fields: [f('name', { kind: 'string' }, true), f('email', { kind: 'string' }, true)],
      }),
    },
    f('lines', {
      kind: 'list',
      elementId: 0,
      elementRequired: true,
      element: { kind: 'struct', fields: [f('sku', { kind: 'string' }, true), f('qty', { kind: 'int' })] },
    }),
    f('tags', { kind: 'map', keyId: 0, key: { kind: 'string' }, valueId: 0, valueRequired: false, value: { kind: 'struct', fields: [f('v', { kind: 'long' }, true)] } }, true),
    f('note', { kind: 'string' }),
  ]);
  const ev = unionByName(table, src, LAST);
  assert.equal(ev.changed, true);
  assert.equal(ev.schema.schemaId, 4);
  const index = new SchemaIndex(ev.schema);
  // nested adds first (Java's post-order visitor), then the top-level ones in order
  assert.equal(index.findByName('customer.email')?.id, 9);
  assert.equal(index.findByName('lines.element.qty')?.id, 10);
  assert.equal(index.findByName('tags')?.id, 11);
  assert.equal(index.findByName('tags.key')?.id, 12);
  assert.equal(index.findByName('tags.value')?.id, 13);
  assert.equal(index.findByName('tags.value.v')?.id, 14);
  assert.equal(index.findByName('note')?.id, 15);
  assert.equal(ev.lastColumnId, 15);
  // added columns are optional (even if required in the source); their nested fields keep requiredness
  assert.equal(index.findByName('customer.email')?.required, false);
  assert.equal(index.findByName('tags')?.required, false);
  assert.equal(index.findByName('tags.value.v')?.required, true);
  // existing ids untouched
  for (const info of indexFields(table)) assert.equal(index.findByName(info.path)?.id, info.field.id);
  assert.deepEqual(ev.updates.map((u) => u.action), ['add-schema', 'set-current-schema']);
  assert.deepEqual(ev.requirements, [
    { type: 'assert-current-schema-id', currentSchemaId: 3 },
    { type: 'assert-last-assigned-field-id', lastAssignedFieldId: 8 },
  ]);
});

test('unionByName widens int->long, float->double, decimal precision, and makes required columns optional', () => {
  const src = source([
    f('id', { kind: 'long' }, true),
    f('price', { kind: 'decimal', precision: 12, scale: 2 }),
    f('ratio', { kind: 'double' }),
    f('customer', { kind: 'struct', fields: [f('name', { kind: 'string' })] }),
  ]);
  const ev = unionByName(table, src, LAST);
  const index = new SchemaIndex(ev.schema);
  assert.deepEqual(index.field(1)?.type, { kind: 'long' });
  assert.deepEqual(index.field(2), { id: 2, name: 'price', required: false, type: { kind: 'decimal', precision: 12, scale: 2 } });
  assert.deepEqual(index.field(3)?.type, { kind: 'double' });
  assert.equal(index.field(5)?.required, false);
  assert.equal(ev.lastColumnId, LAST);
  assert.deepEqual(
    ev.changes.map((c) => c.kind),
    ['make-optional', 'promote', 'make-optional', 'promote', 'promote'],
  );
});

test('disallowed changes are ConfigError naming the field', () => {
  const cases: [NestedField[], RegExp][] = [
    [[f('id', { kind: 'string' }, true)], /field id: cannot change type int to string/],
    [[f('price', { kind: 'decimal', precision: 12, scale: 3 })], /field price: cannot change type decimal\(9, 2\) to decimal\(12, 3\)/],
    [[f('ratio', { kind: 'struct', fields: [] })], /field ratio: the table has float, the source a struct/],
    [[f('customer', { kind: 'string' })], /field customer: the table has a struct, the source a string/],
    [[f('lines', { kind: 'list', elementId: 0, elementRequired: true, element: { kind: 'int' } })], /field lines.element: the table has a struct, the source a int/],
    [[f('customer', { kind: 'struct', fields: [f('name', { kind: 'int' }, true)] })], /field customer.name: cannot change type string to int/],
  ];
  for (const [fields, message] of cases) {
    assert.throws(() => unionByName(table, source(fields), LAST), (e: Error) => e.name === 'ConfigError' && message.test(e.message), message.source);
  }
  assert.throws(() => applySchemaChanges(table, [{ kind: 'add-column', parentId: null, field: f('x', { kind: 'int' }, true) }], LAST), /cannot add a required column/);
  assert.throws(() => applySchemaChanges(table, [{ kind: 'add-column', parentId: null, field: f('id', { kind: 'int' }) }], LAST), /field id: a column with that name already exists/);
  assert.throws(() => applySchemaChanges(table, [{ kind: 'add-column', parentId: 3, field: f('x', { kind: 'int' }) }], LAST), /ratio is a float, not a struct/);
  assert.throws(() => applySchemaChanges(table, [{ kind: 'promote', fieldId: 3, to: { kind: 'int' } }], LAST), /field ratio: cannot change type float to int/);
  assert.throws(() => applySchemaChanges(table, [{ kind: 'make-optional', fieldId: 1 }], LAST), /identifier field/);
  assert.throws(() => applySchemaChanges(table, [{ kind: 'rename', fieldId: 2, name: 'id' }], LAST), /name is taken/);
  assert.throws(() => applySchemaChanges(table, [{ kind: 'delete-column', fieldId: 1 }], LAST), /identifier/);
});

test('addColumnsOnly (a schema inferred from schemaless JSON): adds what the table lacks at any depth, keeps every existing field as it is', () => {
  // Every guess below would be a ConfigError or a promotion without the option.
  const guess = source([
    f('id', { kind: 'long' }),
    f('price', { kind: 'double' }),
    f('ratio', { kind: 'string' }),
    f('customer', { kind: 'struct', fields: [f('name', { kind: 'long' }), f('email', { kind: 'string' })] }),
    f('lines', { kind: 'list', elementId: 0, elementRequired: false, element: { kind: 'struct', fields: [f('sku', { kind: 'string' }), f('qty', { kind: 'long' })] } }),
    f('note', { kind: 'string' }),
  ]);
  assert.throws(() => unionByName(table, guess, LAST), /ConfigError|cannot change type/);
  const ev = unionByName(table, guess, LAST, { addColumnsOnly: true });
  assert.equal(ev.changed, true);
  assert.deepEqual(
    ev.changes.map((c) => (c.kind === 'add-column' ? `${c.kind} ${String(c.parentId)} ${c.field.name}` : c.kind)),
    ['add-column 4 email', 'add-column 7 qty', 'add-column null note'],
  );
  const idx = new SchemaIndex(ev.schema);
  for (const id of [1, 2, 3, 5, 8]) assert.deepEqual(idx.field(id), new SchemaIndex(table).field(id), `field ${id} unchanged`);
  assert.equal(ev.schema.fields.find((x) => x.name === 'note')?.required, false);
  // Nothing new: no change, whatever the guessed types.
  assert.equal(unionByName(table, source([f('id', { kind: 'string' }), f('customer', { kind: 'string' })]), LAST, { addColumnsOnly: true }).changed, false);
});

test('explicit changes: add into a list element struct, rename, delete; diffSchemas recovers them', () => {
  const r = applySchemaChanges(
    table,
    [
      { kind: 'add-column', parentId: 7, field: f('qty', { kind: 'int' }) },
      { kind: 'rename', fieldId: 3, name: 'ratio_pct' },
      { kind: 'delete-column', fieldId: 4 },
      { kind: 'update-doc', fieldId: 2, doc: 'unit price' },
    ],
    LAST,
    4,
  );
  const index = new SchemaIndex(r.schema);
  assert.equal(index.findByName('lines.element.qty')?.id, 9);
  assert.equal(index.field(3)?.name, 'ratio_pct');
  assert.equal(index.field(4), undefined);
  assert.equal(index.field(5), undefined);
  assert.equal(index.field(2)?.doc, 'unit price');
  assert.equal(r.lastColumnId, 9);
  const diff = diffSchemas(table, r.schema);
  assert.deepEqual(
    diff.map((c) => c.kind),
    ['delete-column', 'update-doc', 'rename', 'add-column'],
  );
  // narrowing and optional -> required are refused by diff too
  const required: Schema = { ...table, fields: table.fields.map((x) => (x.id === 3 ? { ...x, required: true } : x)) };
  assert.throws(() => diffSchemas(table, required), /field ratio: cannot make an optional field required/);
  const narrowed: Schema = { ...table, fields: table.fields.map((x) => (x.id === 2 ? { ...x, type: { kind: 'decimal', precision: 5, scale: 2 } } : x)) };
  assert.throws(() => diffSchemas(table, narrowed), /field price: cannot change type/);
});

test('promotion rules', () => {
  assert.ok(isPromotionAllowed({ kind: 'int' }, { kind: 'long' }));
  assert.ok(isPromotionAllowed({ kind: 'float' }, { kind: 'double' }));
  assert.ok(isPromotionAllowed({ kind: 'decimal', precision: 9, scale: 2 }, { kind: 'decimal', precision: 18, scale: 2 }));
  assert.ok(!isPromotionAllowed({ kind: 'long' }, { kind: 'int' }));
  assert.ok(!isPromotionAllowed({ kind: 'decimal', precision: 9, scale: 2 }, { kind: 'decimal', precision: 18, scale: 3 }));
  assert.ok(!isPromotionAllowed({ kind: 'date' }, { kind: 'timestamp' })); // v3 only
  assert.ok(!isPromotionAllowed({ kind: 'int' }, { kind: 'string' }));
});

test('evolveTableSchema commits through applyUpdates with its own requirements', () => {
  const md = tableMetadataFromJson(readFileSync(new URL('../../fixtures/iceberg/java-metadata-v2.json', import.meta.url), 'utf8'));
  const src = { ...currentSchema(md), fields: [...currentSchema(md).fields, f('country', { kind: 'string' })] };
  const ev = evolveTableSchema(md, src, { updateNameMapping: true });
  assert.equal(ev.schema.schemaId, 2);
  assert.equal(ev.lastColumnId, 17);
  checkRequirements(md, ev.requirements);
  const next = applyUpdates(md, ev.updates, { nowMs: 1, requirements: ev.requirements }).metadata;
  assert.equal(next.currentSchemaId, 2);
  assert.equal(next.lastColumnId, 17);
  assert.match(next.properties['schema.name-mapping.default'] ?? '', /"names":\["country"\]/);
  // when the evolved schema already exists in the table (made earlier, then rolled back), it is selected by
  // id: Java catalogs reject set-current-schema -1 for a schema that was not added in the same commit
  const loose = source([f('location', { kind: 'struct', fields: [f('lat', { kind: 'double' })] })]);
  const first = evolveTableSchema(md, loose);
  const withV2 = applyUpdates(md, first.updates, { nowMs: 2 }).metadata;
  assert.equal(withV2.currentSchemaId, 2);
  const rolledBack = applyUpdates(withV2, [{ action: 'set-current-schema', schemaId: 1 }], { nowMs: 3 }).metadata;
  const again = evolveTableSchema(rolledBack, loose);
  assert.deepEqual(again.updates, [{ action: 'set-current-schema', schemaId: 2 }]);
  assert.equal(applyUpdates(rolledBack, again.updates, { nowMs: 4, requirements: again.requirements }).metadata.currentSchemaId, 2);
});
