import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseJson, stringifyJson } from '../../../src/core/json.ts';
import {
  assignFreshIds,
  findFieldById,
  findFieldByName,
  indexFields,
  maxFieldId,
  nameMapping,
  parsePrimitive,
  reassignIdsByName,
  sameSchema,
  SchemaIndex,
  schemaFromJson,
  schemaToJson,
  typeToJson,
} from '../../../src/iceberg/schema.ts';
import type { Schema } from '../../../src/iceberg/types.ts';

const fixture = parseJson(readFileSync(new URL('../../fixtures/iceberg/java-metadata-v2.json', import.meta.url), 'utf8')) as Record<string, unknown>;
const javaSchemas = fixture['schemas'] as unknown[];

test('schema JSON round-trips a Java-written schema exactly (nested struct, list, map, decimal, fixed, uuid, doc)', () => {
  for (const json of javaSchemas) {
    const schema = schemaFromJson(json);
    assert.deepEqual(schemaToJson(schema), json);
    // and the text form uses Java's field names and order
    assert.equal(stringifyJson(schemaToJson(schema)), stringifyJson(json));
  }
  const s1 = schemaFromJson(javaSchemas[1]);
  assert.equal(s1.schemaId, 1);
  assert.deepEqual(s1.identifierFieldIds, [1]);
  const attrs = findFieldById(s1, 6);
  assert.equal(attrs?.type.kind, 'map');
  assert.deepEqual(findFieldById(s1, 12)?.type, { kind: 'decimal', precision: 10, scale: 2 });
  assert.deepEqual(findFieldById(s1, 13)?.type, { kind: 'fixed', length: 16 });
  assert.equal(findFieldById(s1, 3)?.doc, 'raw event body');
  assert.equal(maxFieldId(s1), 16);
});

test('list and map JSON use element-id/element/element-required and key-id/key/value-id/value/value-required', () => {
  assert.deepEqual(typeToJson({ kind: 'list', elementId: 3, element: { kind: 'string' }, elementRequired: true }), {
    type: 'list',
    'element-id': 3,
    element: 'string',
    'element-required': true,
  });
  assert.deepEqual(typeToJson({ kind: 'map', keyId: 4, key: { kind: 'string' }, valueId: 5, value: { kind: 'int' }, valueRequired: false }), {
    type: 'map',
    'key-id': 4,
    key: 'string',
    'value-id': 5,
    value: 'int',
    'value-required': false,
  });
});

test('primitive strings: Java prints decimal(P, S) with a space; both forms parse', () => {
  assert.deepEqual(parsePrimitive('decimal(10,2)'), { kind: 'decimal', precision: 10, scale: 2 });
  assert.deepEqual(parsePrimitive('decimal(10, 2)'), { kind: 'decimal', precision: 10, scale: 2 });
  assert.deepEqual(parsePrimitive('fixed[16]'), { kind: 'fixed', length: 16 });
  assert.equal(typeToJson({ kind: 'decimal', precision: 10, scale: 2 }), 'decimal(10, 2)');
  assert.throws(() => parsePrimitive('variant'), { name: 'ConfigError' });
  assert.throws(() => parsePrimitive('decimal(40, 2)'), { name: 'ConfigError' });
});

test('malformed schema documents are FatalError; duplicate ids are rejected', () => {
  assert.throws(() => schemaFromJson({ type: 'struct', fields: [{ id: 1, name: 'a', type: 'int' }] }), { name: 'FatalError' });
  assert.throws(
    () =>
      schemaFromJson({
        type: 'struct',
        fields: [
          { id: 1, name: 'a', required: true, type: 'int' },
          { id: 1, name: 'b', required: true, type: 'int' },
        ],
      }),
    /field id 1 is used twice/,
  );
});

test('lookups by id and by name path, including list element / map value short names', () => {
  const s = schemaFromJson(javaSchemas[1]);
  const index = new SchemaIndex(s);
  assert.equal(index.columnName(7), 'location.lat');
  assert.equal(index.columnName(9), 'tags.element');
  assert.equal(index.columnName(10), 'attrs.key');
  assert.equal(index.columnName(12), 'attrs.value.amount');
  assert.equal(findFieldByName(s, 'attrs.value.amount')?.id, 12);
  assert.equal(findFieldByName(s, 'attrs.amount')?.id, 12); // Java short name
  assert.equal(findFieldByName(s, 'Location.LAT', false)?.id, 7);
  assert.equal(findFieldByName(s, 'Location.LAT'), undefined);
  const infos = indexFields(s);
  assert.equal(infos.find((i) => i.field.id === 12)?.inRepeated, true);
  assert.equal(infos.find((i) => i.field.id === 7)?.inRepeated, false);
});

test('assignFreshIds numbers a struct fields first, then nested types, like Java TypeUtil.assignFreshIds', () => {
  const source: Schema = {
    schemaId: 7,
    identifierFieldIds: [100],
    fields: [
      { id: 100, name: 'id', required: true, type: { kind: 'long' } },
      {
        id: 101,
        name: 'point',
        required: false,
        type: {
          kind: 'struct',
          fields: [
            { id: 102, name: 'x', required: true, type: { kind: 'double' } },
            { id: 103, name: 'y', required: true, type: { kind: 'double' } },
          ],
        },
      },
      { id: 104, name: 'tags', required: false, type: { kind: 'list', elementId: 105, elementRequired: false, element: { kind: 'string' } } },
      {
        id: 106,
        name: 'props',
        required: false,
        type: {
          kind: 'map',
          keyId: 107,
          key: { kind: 'string' },
          valueId: 108,
          valueRequired: true,
          value: { kind: 'struct', fields: [{ id: 109, name: 'v', required: false, type: { kind: 'int' } }] },
        },
      },
      { id: 110, name: 'name', required: false, type: { kind: 'string' } },
    ],
  };
  let last = 0;
  const fresh = assignFreshIds(source, () => ++last, 0);
  const ids = Object.fromEntries(indexFields(fresh).map((i) => [i.path, i.field.id]));
  assert.deepEqual(ids, {
    id: 1,
    point: 2,
    tags: 3,
    props: 4,
    name: 5,
    'point.x': 6,
    'point.y': 7,
    'tags.element': 8,
    'props.key': 9,
    'props.value': 10,
    'props.value.v': 11,
  });
  assert.equal(fresh.schemaId, 0);
  assert.deepEqual(fresh.identifierFieldIds, [1]);
  assert.equal(last, 11);
  // the ids can be mapped back onto the source by name
  const back = reassignIdsByName(fresh, source);
  assert.ok(sameSchema({ ...back, schemaId: 7 }, source));
  assert.throws(() => reassignIdsByName({ schemaId: 0, fields: [{ id: 1, name: 'nope', required: false, type: { kind: 'int' } }] }, source), /field nope is not in the table schema/);
});

test('name mapping mirrors the schema (element, key, value)', () => {
  const s = schemaFromJson(javaSchemas[1]);
  const mapping = nameMapping(s);
  const tags = mapping.find((m) => m.names[0] === 'tags');
  assert.deepEqual(tags, { 'field-id': 5, names: ['tags'], fields: [{ 'field-id': 9, names: ['element'] }] });
  const attrs = mapping.find((m) => m.names[0] === 'attrs');
  assert.deepEqual(attrs?.fields?.map((f) => f.names[0]), ['key', 'value']);
});

test('sameSchema ignores schema ids and docs but not names, types or requiredness', () => {
  const a = schemaFromJson(javaSchemas[0]);
  assert.ok(sameSchema(a, { ...a, schemaId: 99 }));
  assert.ok(!sameSchema(a, { ...a, fields: a.fields.map((f) => (f.id === 3 ? { ...f, required: true } : f)) }));
  assert.ok(!sameSchema(a, { ...a, identifierFieldIds: [] }));
});
