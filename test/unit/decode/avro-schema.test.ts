import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../../src/core/errors.ts';
import { avroToIceberg, parseAvroSchema } from '../../../src/decode/avro-schema.ts';
import { typeToJson } from '../../../src/iceberg/schema.ts';

const rec = (fields: unknown[], name = 'R'): unknown => ({ type: 'record', name, namespace: 'com.example', fields });
const f = (name: string, type: unknown): unknown => ({ name, type });

/** The schema as compact JSON (Appendix C), for readable expectations. */
function json(schema: unknown, opts = {}): unknown {
  return typeToJson({ kind: 'struct', fields: avroToIceberg(schema, opts).fields });
}

describe('Avro → Iceberg schema (iceberg-writer.md §2.2)', () => {
  test('primitives and logical types', () => {
    const s = avroToIceberg(
      rec([
        f('b', 'boolean'),
        f('i', 'int'),
        f('l', 'long'),
        f('f', 'float'),
        f('d', 'double'),
        f('s', 'string'),
        f('by', 'bytes'),
        f('fx', { type: 'fixed', name: 'F', size: 7 }),
        f('e', { type: 'enum', name: 'E', symbols: ['A'] }),
        f('dec', { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 }),
        f('decf', { type: 'fixed', name: 'DF', size: 16, logicalType: 'decimal', precision: 38, scale: 0 }),
        f('dec_wide', { type: 'bytes', logicalType: 'decimal', precision: 40, scale: 2 }),
        f('dec_bad', { type: 'fixed', name: 'DB', size: 2, logicalType: 'decimal', precision: 10, scale: 2 }), // ignored: 2 bytes hold 4 digits
        f('u', { type: 'string', logicalType: 'uuid' }),
        f('uf', { type: 'fixed', name: 'U', size: 16, logicalType: 'uuid' }),
        f('dt', { type: 'int', logicalType: 'date' }),
        f('tm', { type: 'int', logicalType: 'time-millis' }),
        f('tmu', { type: 'long', logicalType: 'time-micros' }),
        f('tsm', { type: 'long', logicalType: 'timestamp-millis' }),
        f('tsu', { type: 'long', logicalType: 'timestamp-micros' }),
        f('ltm', { type: 'long', logicalType: 'local-timestamp-millis' }),
        f('ltu', { type: 'long', logicalType: 'local-timestamp-micros' }),
        f('tsn', { type: 'long', logicalType: 'timestamp-nanos' }),
        f('unknown_logical', { type: 'string', logicalType: 'json' }),
        f('always_null', 'null'),
      ]),
    );
    const kinds = Object.fromEntries(s.fields.map((x) => [x.name, typeToJson(x.type)]));
    assert.deepStrictEqual(kinds, {
      b: 'boolean', i: 'int', l: 'long', f: 'float', d: 'double', s: 'string', by: 'binary', fx: 'fixed[7]', e: 'string',
      dec: 'decimal(10, 2)', decf: 'decimal(38, 0)', dec_wide: 'string', dec_bad: 'fixed[2]', u: 'uuid', uf: 'uuid', dt: 'date', tm: 'time', tmu: 'time',
      tsm: 'timestamptz', tsu: 'timestamptz', ltm: 'timestamp', ltu: 'timestamp', tsn: 'long', unknown_logical: 'string',
    });
    assert.ok(s.fields.every((x) => x.required));
    assert.deepStrictEqual(s.fields.map((x) => x.id), Array.from({ length: 24 }, (_, i) => i + 1));
    assert.equal(typeToJson(avroToIceberg(rec([f('tsn', { type: 'long', logicalType: 'timestamp-nanos' })]), { formatVersion: 3 }).fields[0]!.type), 'timestamptz_ns');
  });

  test('nested types, optional unions in either order, ids assigned like Java (breadth-first per struct)', () => {
    const schema = rec([
      f('id', 'long'),
      f('addr', ['null', { type: 'record', name: 'Addr', fields: [f('city', ['string', 'null']), f('geo', { type: 'record', name: 'Geo', fields: [f('lat', 'double')] })] }]),
      f('tags', { type: 'array', items: ['null', 'string'] }),
      f('attrs', ['null', { type: 'map', values: { type: 'array', items: 'Addr' } }]),
      f('again', 'Geo'), // a named reference (not recursion)
    ]);
    assert.deepStrictEqual(json(schema), {
      type: 'struct',
      fields: [
        { id: 1, name: 'id', required: true, type: 'long' },
        {
          id: 2, name: 'addr', required: false,
          type: { type: 'struct', fields: [{ id: 6, name: 'city', required: false, type: 'string' }, { id: 7, name: 'geo', required: true, type: { type: 'struct', fields: [{ id: 8, name: 'lat', required: true, type: 'double' }] } }] },
        },
        { id: 3, name: 'tags', required: true, type: { type: 'list', 'element-id': 9, element: 'string', 'element-required': false } },
        {
          id: 4, name: 'attrs', required: false,
          type: {
            type: 'map', 'key-id': 10, key: 'string', 'value-id': 11, 'value-required': true,
            value: {
              type: 'list', 'element-id': 12, 'element-required': true,
              element: { type: 'struct', fields: [{ id: 13, name: 'city', required: false, type: 'string' }, { id: 14, name: 'geo', required: true, type: { type: 'struct', fields: [{ id: 15, name: 'lat', required: true, type: 'double' }] } }] },
            },
          },
        },
        { id: 5, name: 'again', required: true, type: { type: 'struct', fields: [{ id: 16, name: 'lat', required: true, type: 'double' }] } },
      ],
    });
  });

  test('other unions become struct<tag, field0, …> (Java SchemaToType); with null the struct is optional', () => {
    const s = json(rec([f('u', ['int', 'string']), f('n', ['null', 'long', { type: 'record', name: 'X', fields: [f('a', 'int')] }])]));
    assert.deepStrictEqual(s, {
      type: 'struct',
      fields: [
        { id: 1, name: 'u', required: true, type: { type: 'struct', fields: [{ id: 3, name: 'tag', required: true, type: 'int' }, { id: 4, name: 'field0', required: false, type: 'int' }, { id: 5, name: 'field1', required: false, type: 'string' }] } },
        {
          id: 2, name: 'n', required: false,
          type: { type: 'struct', fields: [{ id: 6, name: 'tag', required: true, type: 'int' }, { id: 7, name: 'field0', required: false, type: 'long' }, { id: 8, name: 'field1', required: false, type: { type: 'struct', fields: [{ id: 9, name: 'a', required: true, type: 'int' }] } }] },
        },
      ],
    });
  });

  test('schema-force-optional makes every field, element and value optional', () => {
    const s = avroToIceberg(rec([f('a', 'int'), f('l', { type: 'array', items: 'int' }), f('m', { type: 'map', values: { type: 'record', name: 'V', fields: [f('x', 'int')] } })]), { forceOptional: true });
    assert.ok(s.fields.every((x) => !x.required));
    const l = s.fields[1]!.type;
    const m = s.fields[2]!.type;
    assert.ok(l.kind === 'list' && !l.elementRequired);
    assert.ok(m.kind === 'map' && !m.valueRequired && m.value.kind === 'struct' && !m.value.fields[0]!.required);
  });

  test('recursive records, bad schemas and non-record roots are ConfigErrors', () => {
    const linked = rec([f('value', 'int'), f('next', ['null', 'R'])]);
    assert.throws(() => avroToIceberg(linked), (e: unknown) => e instanceof ConfigError && /recursive at next/.test(e.message));
    assert.throws(() => avroToIceberg(rec([f('x', { type: 'array', items: 'com.example.R' })])), /recursive/);
    assert.throws(() => avroToIceberg(rec([f('x', 'Nope')])), /unknown type Nope/);
    assert.throws(() => avroToIceberg('"string"'), /record schema at the top level/);
    assert.throws(() => avroToIceberg('{not json'), ConfigError);
    // the registry hands out schema text: accepted as is
    assert.equal(avroToIceberg(JSON.stringify(rec([f('a', 'int')]))).fields[0]!.name, 'a');
    assert.equal(parseAvroSchema(['null', 'int']).type, 'union');
  });
});
