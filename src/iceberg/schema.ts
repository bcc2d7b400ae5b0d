/**
 * Iceberg schemas: the JSON codec (spec Appendix C, Java `SchemaParser` field names), lookups by field id
 * and by dotted name path, fresh id assignment as Java's `TypeUtil.assignFreshIds` does it, id
 * reassignment by name, structural comparison, and the `schema.name-mapping.default` document.
 *
 * Owns: everything about one schema in isolation. Evolution between schemas lives in evolution.ts.
 * Must not: do I/O, or mutate its inputs (every function returns new objects).
 *
 * JSON objects produced here are plain values ready for core/json.ts `stringifyJson`; parsing accepts the
 * output of `parseJson` (ids are small, so they are numbers).
 */
import { ConfigError } from '../core/errors.ts';
import {
  asArray,
  asObject,
  malformed,
  optInt,
  optString,
  reqBool,
  reqInt,
  reqString,
} from './json-util.ts';
import {
  isPrimitive,
  primitiveToString,
  type IcebergType,
  type ListType,
  type MapType,
  type NestedField,
  type PrimitiveType,
  type Schema,
  type StructType,
} from './types.ts';

// ---------------------------------------------------------------------------------------------------
// JSON codec (Appendix C)
// ---------------------------------------------------------------------------------------------------

const SIMPLE_PRIMITIVES = new Set([
  'boolean',
  'int',
  'long',
  'float',
  'double',
  'date',
  'time',
  'timestamp',
  'timestamptz',
  'timestamp_ns',
  'timestamptz_ns',
  'string',
  'uuid',
  'binary',
]);

/** Parses a primitive type string: `long`, `decimal(10, 2)` / `decimal(10,2)`, `fixed[16]`. */
export function parsePrimitive(text: string): PrimitiveType {
  const s = text.trim();
  if (SIMPLE_PRIMITIVES.has(s)) return { kind: s } as PrimitiveType;
  const dec = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(s);
  if (dec) {
    const precision = Number(dec[1]);
    const scale = Number(dec[2]);
    if (precision < 1 || precision > 38 || scale > precision) {
      throw new ConfigError(`invalid decimal type ${s}: precision must be 1..38 and scale <= precision`);
    }
    return { kind: 'decimal', precision, scale };
  }
  const fixed = /^fixed\[\s*(\d+)\s*\]$/.exec(s);
  if (fixed) {
    const length = Number(fixed[1]);
    if (length < 1) throw new ConfigError(`invalid fixed type ${s}`);
    return { kind: 'fixed', length };
  }
  throw new ConfigError(`unsupported Iceberg type "${s}" (v3 variant/unknown/geometry/geography are not supported)`);
}

/** Type -> Appendix C JSON (a string for primitives). */
export function typeToJson(t: IcebergType): unknown {
  switch (t.kind) {
    case 'struct':
      return { type: 'struct', fields: t.fields.map(fieldToJson) };
    case 'list':
      return { type: 'list', 'element-id': t.elementId, element: typeToJson(t.element), 'element-required': t.elementRequired };
    case 'map':
      return {
        type: 'map',
        'key-id': t.keyId,
        key: typeToJson(t.key),
        'value-id': t.valueId,
        value: typeToJson(t.value),
        'value-required': t.valueRequired,
      };
    default:
      return primitiveToString(t);
  }
}

function fieldToJson(f: NestedField): unknown {
  // Java SchemaParser order: id, name, required, type, doc, initial-default, write-default.
  const o: Record<string, unknown> = { id: f.id, name: f.name, required: f.required, type: typeToJson(f.type) };
  if (f.doc !== undefined) o['doc'] = f.doc;
  if (f.initialDefault !== undefined) o['initial-default'] = f.initialDefault;
  if (f.writeDefault !== undefined) o['write-default'] = f.writeDefault;
  return o;
}

/** Schema -> Appendix C JSON: `{type:"struct", schema-id, identifier-field-ids?, fields}`. */
export function schemaToJson(schema: Schema): Record<string, unknown> {
  const o: Record<string, unknown> = { type: 'struct', 'schema-id': schema.schemaId };
  if (schema.identifierFieldIds !== undefined && schema.identifierFieldIds.length > 0) {
    o['identifier-field-ids'] = [...schema.identifierFieldIds];
  }
  o['fields'] = schema.fields.map(fieldToJson);
  return o;
}

/** Appendix C JSON -> type. Throws FatalError on a malformed document, ConfigError on an unsupported type. */
export function typeFromJson(json: unknown): IcebergType {
  if (typeof json === 'string') return parsePrimitive(json);
  const o = asObject(json, 'schema type');
  const kind = reqString(o, 'type', 'schema type');
  switch (kind) {
    case 'struct':
      return { kind: 'struct', fields: asArray(o['fields'], 'struct fields').map(fieldFromJson) };
    case 'list':
      return {
        kind: 'list',
        elementId: reqInt(o, 'element-id', 'list type'),
        element: typeFromJson(o['element']),
        elementRequired: reqBool(o, 'element-required', 'list type'),
      };
    case 'map':
      return {
        kind: 'map',
        keyId: reqInt(o, 'key-id', 'map type'),
        key: typeFromJson(o['key']),
        valueId: reqInt(o, 'value-id', 'map type'),
        value: typeFromJson(o['value']),
        valueRequired: reqBool(o, 'value-required', 'map type'),
      };
    default:
      throw malformed('schema type', `unknown nested type "${kind}"`);
  }
}

function fieldFromJson(json: unknown): NestedField {
  const o = asObject(json, 'schema field');
  const doc = optString(o, 'doc', 'schema field');
  const f: { -readonly [K in keyof NestedField]: NestedField[K] } = {
    id: reqInt(o, 'id', 'schema field'),
    name: reqString(o, 'name', 'schema field'),
    required: reqBool(o, 'required', 'schema field'),
    type: typeFromJson(o['type']),
  };
  if (doc !== undefined) f.doc = doc;
  if (o['initial-default'] !== undefined) f.initialDefault = o['initial-default'];
  if (o['write-default'] !== undefined) f.writeDefault = o['write-default'];
  return f;
}

/** Appendix C JSON -> Schema. A schema without `schema-id` (v1) gets `defaultSchemaId` (0). */
export function schemaFromJson(json: unknown, defaultSchemaId = 0): Schema {
  const o = asObject(json, 'schema');
  if (o['type'] !== 'struct') throw malformed('schema', 'a schema must be {"type":"struct", ...}');
  const schemaId = optInt(o, 'schema-id', 'schema') ?? defaultSchemaId;
  const fields = asArray(o['fields'], 'schema fields').map(fieldFromJson);
  const ids = o['identifier-field-ids'];
  const schema: Schema =
    ids === undefined || ids === null
      ? { schemaId, fields }
      : {
          schemaId,
          fields,
          identifierFieldIds: asArray(ids, 'identifier-field-ids').map((x) => {
            if (typeof x !== 'number' || !Number.isInteger(x)) throw malformed('schema', 'identifier-field-ids must be integers');
            return x;
          }),
        };
  validateSchema(schema, 'schema');
  return schema;
}

/** Duplicate field ids make a schema ambiguous for every reader; reject them at the boundary. */
function validateSchema(schema: Schema, what: string): void {
  const seen = new Set<number>();
  for (const info of indexFields(schema)) {
    if (seen.has(info.field.id)) throw malformed(what, `field id ${info.field.id} is used twice`);
    seen.add(info.field.id);
  }
}

// ---------------------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------------------

/** One field of a schema as seen from the root. List elements and map keys/values appear as pseudo fields
 *  named `element`, `key`, `value` (Java's naming), so every field id has exactly one entry. */
export interface FieldInfo {
  readonly field: NestedField;
  /** Full dotted name, Java style: `a.b`, `tags.element`, `attrs.key`, `attrs.value.x`. */
  readonly path: string;
  /** Java's short name: the path without a list's `element` / a map's `value` (`points.x`). */
  readonly shortPath: string;
  /** Path segments (field names, `element`, `key`, `value`). */
  readonly segments: readonly string[];
  /** Id of the enclosing field, or undefined at the top level. */
  readonly parentId: number | undefined;
  /** True when the field sits (at any depth) inside a list or map: Java keeps only column sizes for those. */
  readonly inRepeated: boolean;
}

/** Pseudo fields for a list element / map key / map value, so nested types can be walked uniformly. */
export function childFields(t: IcebergType): readonly NestedField[] {
  switch (t.kind) {
    case 'struct':
      return t.fields;
    case 'list':
      return [{ id: t.elementId, name: 'element', required: t.elementRequired, type: t.element }];
    case 'map':
      return [
        { id: t.keyId, name: 'key', required: true, type: t.key },
        { id: t.valueId, name: 'value', required: t.valueRequired, type: t.value },
      ];
    default:
      return [];
  }
}

/** Every field in pre-order (a field before its children), depth-first in declaration order. */
export function indexFields(schema: Schema | StructType): FieldInfo[] {
  const out: FieldInfo[] = [];
  const walk = (
    fields: readonly NestedField[],
    segments: readonly string[],
    shortSegments: readonly string[],
    parentId: number | undefined,
    inRepeated: boolean,
    parent: IcebergType | undefined,
  ): void => {
    const repeated = inRepeated || parent?.kind === 'list' || parent?.kind === 'map';
    for (const f of fields) {
      const segs = [...segments, f.name];
      // Java's IndexByName also accepts short names that skip a list's `element` or a map's `value`
      // (`points.x` for `points.element.x`).
      const skip = (parent?.kind === 'list' && f.name === 'element') || (parent?.kind === 'map' && f.name === 'value');
      const shortSegs = skip ? shortSegments : [...shortSegments, f.name];
      out.push({ field: f, path: segs.join('.'), shortPath: shortSegs.join('.'), segments: segs, parentId, inRepeated: repeated });
      if (!isPrimitive(f.type)) walk(childFields(f.type), segs, shortSegs, f.id, repeated, f.type);
    }
  };
  walk(schema.fields, [], [], undefined, false, undefined);
  return out;
}

/** Fast lookups over one schema; build once per schema and reuse. */
export class SchemaIndex {
  readonly schema: Schema;
  private readonly byId = new Map<number, FieldInfo>();
  private readonly byName = new Map<string, FieldInfo>();
  private readonly byLowerName = new Map<string, FieldInfo>();

  constructor(schema: Schema) {
    this.schema = schema;
    const all = indexFields(schema);
    for (const info of all) {
      this.byId.set(info.field.id, info);
      this.byName.set(info.path, info);
    }
    // Full names win over short aliases when they collide.
    for (const info of all) if (!this.byName.has(info.shortPath)) this.byName.set(info.shortPath, info);
    for (const [name, info] of this.byName) {
      const lower = name.toLowerCase();
      if (!this.byLowerName.has(lower)) this.byLowerName.set(lower, info);
    }
  }

  field(id: number): NestedField | undefined {
    return this.byId.get(id)?.field;
  }

  info(id: number): FieldInfo | undefined {
    return this.byId.get(id);
  }

  /** Full dotted column name of a field id (Java `Schema.findColumnName`). */
  columnName(id: number): string | undefined {
    return this.byId.get(id)?.path;
  }

  /** Field by dotted name path; case-sensitive unless `caseSensitive` is false. */
  findByName(name: string, caseSensitive = true): NestedField | undefined {
    return (caseSensitive ? this.byName.get(name) : this.byLowerName.get(name.toLowerCase()))?.field;
  }

  infoByName(name: string, caseSensitive = true): FieldInfo | undefined {
    return caseSensitive ? this.byName.get(name) : this.byLowerName.get(name.toLowerCase());
  }

  ids(): IterableIterator<number> {
    return this.byId.keys();
  }
}

/** Field by id (walks the schema; use SchemaIndex for repeated lookups). */
export function findFieldById(schema: Schema, id: number): NestedField | undefined {
  return new SchemaIndex(schema).field(id);
}

/** Field by dotted name path (`a.b.c`, `tags.element`, `attrs.value.x`). */
export function findFieldByName(schema: Schema, name: string, caseSensitive = true): NestedField | undefined {
  return new SchemaIndex(schema).findByName(name, caseSensitive);
}

/** Highest field id used anywhere in the type (0 when there are none). */
export function maxFieldId(t: Schema | IcebergType): number {
  const fields = 'schemaId' in t ? t.fields : childFields(t);
  let max = 0;
  for (const f of fields) {
    max = Math.max(max, f.id);
    if (!isPrimitive(f.type)) max = Math.max(max, maxFieldId(f.type));
  }
  return max;
}

// ---------------------------------------------------------------------------------------------------
// Id assignment
// ---------------------------------------------------------------------------------------------------

/**
 * Gives every field of `type` a new id from `nextId`, the way Java's `TypeUtil.assignFreshIds` does:
 * within a struct, all of its fields get ids first (in order), then each field's nested type is visited;
 * a list assigns its element id before the element type; a map assigns key id and value id, then visits
 * key and value. REST/Java catalogs renumber a new table's schema exactly this way, so matching it lets
 * us predict (and test) the ids a catalog will return.
 */
export function assignFreshTypeIds(type: IcebergType, nextId: () => number): IcebergType {
  switch (type.kind) {
    case 'struct': {
      const ids = type.fields.map(() => nextId());
      return {
        kind: 'struct',
        fields: type.fields.map((f, i) => withType({ ...f, id: ids[i] as number }, assignFreshTypeIds(f.type, nextId))),
      };
    }
    case 'list': {
      const elementId = nextId();
      return { ...type, elementId, element: assignFreshTypeIds(type.element, nextId) };
    }
    case 'map': {
      const keyId = nextId();
      const valueId = nextId();
      return { ...type, keyId, valueId, key: assignFreshTypeIds(type.key, nextId), value: assignFreshTypeIds(type.value, nextId) };
    }
    default:
      return type;
  }
}

function withType(f: NestedField, type: IcebergType): NestedField {
  return { ...f, type };
}

/**
 * A copy of `schema` with fresh ids from `nextId` (Java `TypeUtil.assignFreshIds(schemaId, schema, nextId)`),
 * identifier field ids remapped. Example: `let last = 0; assignFreshIds(s, () => ++last)` numbers from 1.
 */
export function assignFreshIds(schema: Schema, nextId: () => number, schemaId: number = schema.schemaId): Schema {
  const struct = assignFreshTypeIds({ kind: 'struct', fields: schema.fields }, nextId) as StructType;
  const out: Schema = { schemaId, fields: struct.fields };
  if (schema.identifierFieldIds === undefined) return out;
  const oldIndex = new SchemaIndex(schema);
  const newIndex = new SchemaIndex(out);
  const identifierFieldIds = schema.identifierFieldIds.map((id) => {
    const path = oldIndex.columnName(id);
    const nf = path === undefined ? undefined : newIndex.findByName(path);
    if (nf === undefined) throw new ConfigError(`identifier field id ${id} is not in the schema`);
    return nf.id;
  });
  return { ...out, identifierFieldIds };
}

/**
 * A copy of `schema` whose ids are taken from the same-named fields of `idSource` (Java
 * `TypeUtil.reassignIds`): how a source schema is mapped onto a table's ids by name path. Every field must
 * exist in `idSource` with the same shape (struct/list/map/primitive); otherwise ConfigError naming it.
 */
export function reassignIdsByName(schema: Schema, idSource: Schema, caseSensitive = true): Schema {
  const index = new SchemaIndex(idSource);
  const mapFields = (fields: readonly NestedField[], prefix: string): NestedField[] =>
    fields.map((f) => {
      const path = prefix === '' ? f.name : `${prefix}.${f.name}`;
      const target = index.infoByName(path, caseSensitive);
      if (target === undefined) throw new ConfigError(`field ${path} is not in the table schema`, { context: { field: path } });
      return { ...f, id: target.field.id, type: mapType(f.type, target.field.type, target.path) };
    });
  const mapType = (t: IcebergType, into: IcebergType, path: string): IcebergType => {
    if (t.kind !== into.kind && !(isPrimitive(t) && isPrimitive(into))) {
      throw new ConfigError(`field ${path} is a ${t.kind} in the source but a ${into.kind} in the table`, { context: { field: path } });
    }
    if (t.kind === 'struct') return { kind: 'struct', fields: mapFields(t.fields, path) };
    if (t.kind === 'list' && into.kind === 'list') {
      return { ...t, elementId: into.elementId, element: mapType(t.element, into.element, `${path}.element`) };
    }
    if (t.kind === 'map' && into.kind === 'map') {
      return {
        ...t,
        keyId: into.keyId,
        valueId: into.valueId,
        key: mapType(t.key, into.key, `${path}.key`),
        value: mapType(t.value, into.value, `${path}.value`),
      };
    }
    return t;
  };
  const fields = mapFields(schema.fields, '');
  if (schema.identifierFieldIds === undefined) return { schemaId: idSource.schemaId, fields };
  const own = new SchemaIndex(schema);
  const identifierFieldIds = schema.identifierFieldIds.map((id) => {
    const path = own.columnName(id);
    const target = path === undefined ? undefined : index.findByName(path, caseSensitive);
    if (target === undefined) throw new ConfigError(`identifier field id ${id} has no match in the table schema`);
    return target.id;
  });
  return { schemaId: idSource.schemaId, fields, identifierFieldIds };
}

// ---------------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------------

/** Structural type equality (ids, names, requiredness, types; docs ignored, as Java's equals does not).
 *  Java's `NestedField.equals` does compare docs; we ignore them so a doc-only difference never forks a schema. */
export function sameType(a: IcebergType, b: IcebergType): boolean {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case 'struct': {
      const bs = b as StructType;
      return a.fields.length === bs.fields.length && a.fields.every((f, i) => sameField(f, bs.fields[i] as NestedField));
    }
    case 'list': {
      const bl = b as ListType;
      return a.elementId === bl.elementId && a.elementRequired === bl.elementRequired && sameType(a.element, bl.element);
    }
    case 'map': {
      const bm = b as MapType;
      return a.keyId === bm.keyId && a.valueId === bm.valueId && a.valueRequired === bm.valueRequired && sameType(a.key, bm.key) && sameType(a.value, bm.value);
    }
    case 'decimal': {
      const bd = b as typeof a;
      return a.precision === bd.precision && a.scale === bd.scale;
    }
    case 'fixed':
      return a.length === (b as typeof a).length;
    default:
      return true;
  }
}

function sameField(a: NestedField, b: NestedField): boolean {
  return a.id === b.id && a.name === b.name && a.required === b.required && sameType(a.type, b.type);
}

/** Same columns and identifier fields, ignoring schema ids (Java `Schema.sameSchema`). */
export function sameSchema(a: Schema, b: Schema): boolean {
  const ia = [...(a.identifierFieldIds ?? [])].sort((x, y) => x - y);
  const ib = [...(b.identifierFieldIds ?? [])].sort((x, y) => x - y);
  return (
    ia.length === ib.length &&
    ia.every((x, i) => x === ib[i]) &&
    sameType({ kind: 'struct', fields: a.fields }, { kind: 'struct', fields: b.fields })
  );
}

// ---------------------------------------------------------------------------------------------------
// Name mapping (table property `schema.name-mapping.default`, spec "Column Projection")
// ---------------------------------------------------------------------------------------------------

export interface MappedField {
  readonly 'field-id': number;
  readonly names: readonly string[];
  readonly fields?: readonly MappedField[];
}

/**
 * The default name mapping for a schema (Java `MappingUtil.create`): each field maps its own name to its
 * id; lists map `element`, maps `key` and `value`. Serialise with `stringifyJson` and store under
 * `schema.name-mapping.default`; readers use it only for files without field ids.
 */
export function nameMapping(schema: Schema): MappedField[] {
  const mapFields = (fields: readonly NestedField[]): MappedField[] =>
    fields.map((f) => {
      const nested = isPrimitive(f.type) ? [] : mapFields(childFields(f.type));
      return nested.length > 0 ? { 'field-id': f.id, names: [f.name], fields: nested } : { 'field-id': f.id, names: [f.name] };
    });
  return mapFields(schema.fields);
}
