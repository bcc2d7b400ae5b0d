/**
 * Schema evolution (spec "Schema Evolution"; reference iceberg-writer.md §2.1): explicit changes and their
 * application, a diff between two schemas that share ids, and `unionByName` (Java `UnionByNameVisitor`):
 * the sink's evolve-schema step, which turns "the table schema plus whatever the source now has" into a
 * new table schema and the REST updates/requirements that commit it.
 *
 * Allowed (v2): add an optional column at any depth (ids from last-column-id + 1, nested ids too, in
 * Java's order), widen int->long, float->double, decimal(P,S)->decimal(P',S) with P' >= P, make a
 * required field optional, rename, update a doc, delete a column (only through explicit changes).
 * Rejected with a ConfigError naming the field: narrowing, any other type change (incl. decimal scale),
 * primitive <-> nested, optional -> required, adding a required column, duplicate names.
 *
 * Must not: do I/O, reuse a field id (last-column-id only grows), or drop a column on its own
 * (`unionByName` keeps table columns the source no longer has; writers write nulls).
 */
import { ConfigError } from '../core/errors.ts';
import { currentSchema, type TableMetadata } from './metadata.ts';
import { assignFreshTypeIds, childFields, nameMapping, sameSchema, SchemaIndex } from './schema.ts';
import { LAST_ADDED, type TableRequirement, type TableUpdate } from './updates.ts';
import { stringifyJson } from '../core/json.ts';
import { isPrimitive, primitiveToString, type IcebergType, type NestedField, type PrimitiveType, type Schema, type StructType } from './types.ts';

export type SchemaChange =
  /** Add `field` (ids are (re)assigned on apply) under the struct with id `parentId` (null = top level;
   *  a list element id or map value id whose type is a struct also works). */
  | { readonly kind: 'add-column'; readonly parentId: number | null; readonly field: NestedField }
  | { readonly kind: 'promote'; readonly fieldId: number; readonly to: PrimitiveType }
  | { readonly kind: 'make-optional'; readonly fieldId: number }
  | { readonly kind: 'rename'; readonly fieldId: number; readonly name: string }
  | { readonly kind: 'update-doc'; readonly fieldId: number; readonly doc: string }
  | { readonly kind: 'delete-column'; readonly fieldId: number };

export interface AppliedChanges {
  readonly schema: Schema;
  readonly lastColumnId: number;
  /** The changes as applied: `add-column` fields carry their final ids. */
  readonly applied: readonly SchemaChange[];
}

/** Java `TypeUtil.isPromotionAllowed` for v2: int->long, float->double, decimal precision widening. */
export function isPromotionAllowed(from: PrimitiveType, to: PrimitiveType): boolean {
  if (from.kind === to.kind) {
    if (from.kind === 'decimal' && to.kind === 'decimal') return from.scale === to.scale && to.precision >= from.precision;
    if (from.kind === 'fixed' && to.kind === 'fixed') return from.length === to.length;
    return true;
  }
  return (from.kind === 'int' && to.kind === 'long') || (from.kind === 'float' && to.kind === 'double');
}

function samePrimitive(a: PrimitiveType, b: PrimitiveType): boolean {
  return primitiveToString(a) === primitiveToString(b);
}

function reject(path: string, message: string): ConfigError {
  return new ConfigError(`schema evolution: field ${path}: ${message}`, { context: { field: path } });
}

/**
 * Applies changes to a schema. New ids come from `lastColumnId + 1` upward in change order (for an added
 * nested type: the field, then its children as Java's `assignFreshIds` numbers them). The result keeps
 * `schemaId` unless `newSchemaId` is given.
 */
export function applySchemaChanges(schema: Schema, changes: readonly SchemaChange[], lastColumnId: number, newSchemaId: number = schema.schemaId): AppliedChanges {
  const pending = new PendingChanges(schema, lastColumnId);
  for (const c of changes) pending.apply(c);
  return pending.result(newSchemaId);
}

type ChangeOf<K extends SchemaChange['kind']> = Extract<SchemaChange, { readonly kind: K }>;

/** What the changes do to one existing field. */
interface FieldUpdate {
  name?: string;
  type?: PrimitiveType;
  optional?: boolean;
  doc?: string;
  deleted?: boolean;
}

/**
 * The changes of one `applySchemaChanges` call, each checked against the schema as the changes before it
 * left it (a rename frees or takes a name, an added column takes one), then rebuilt into one schema.
 */
class PendingChanges {
  private readonly schema: Schema;
  private readonly index: SchemaIndex;
  private readonly identifier: ReadonlySet<number>;
  private last: number;
  private readonly updates = new Map<number, FieldUpdate>();
  /** Added fields by parent id (null = top level), in change order. */
  private readonly adds = new Map<number | null, NestedField[]>();
  private readonly applied: SchemaChange[] = [];

  constructor(schema: Schema, lastColumnId: number) {
    this.schema = schema;
    this.index = new SchemaIndex(schema);
    this.identifier = new Set(schema.identifierFieldIds ?? []);
    this.last = lastColumnId;
  }

  apply(c: SchemaChange): void {
    switch (c.kind) {
      case 'add-column':
        this.addColumn(c);
        break;
      case 'promote':
        this.promote(c);
        break;
      case 'make-optional':
        this.makeOptional(c);
        break;
      case 'rename':
        this.rename(c);
        break;
      case 'update-doc':
        this.update(c.fieldId).doc = c.doc;
        this.applied.push(c);
        break;
      case 'delete-column':
        this.deleteColumn(c);
        break;
    }
  }

  result(newSchemaId: number): AppliedChanges {
    const schema = this.schema;
    const fields = [...this.rebuildFields(schema.fields), ...(this.adds.get(null) ?? [])];
    const out: Schema = schema.identifierFieldIds === undefined ? { schemaId: newSchemaId, fields } : { schemaId: newSchemaId, fields, identifierFieldIds: schema.identifierFieldIds };
    return { schema: out, lastColumnId: this.last, applied: this.applied };
  }

  private readonly nextId = (): number => ++this.last;

  private pathOf(id: number): string {
    return this.index.columnName(id) ?? `#${id}`;
  }

  private update(id: number): FieldUpdate {
    if (this.index.field(id) === undefined) throw new ConfigError(`schema evolution: field id ${id} is not in the schema`);
    let u = this.updates.get(id);
    if (u === undefined) this.updates.set(id, (u = {}));
    return u;
  }

  private addColumn(c: ChangeOf<'add-column'>): void {
    let parentStruct: StructType;
    let parentPath = '';
    if (c.parentId === null) parentStruct = { kind: 'struct', fields: this.schema.fields };
    else {
      const parent = this.index.field(c.parentId);
      if (parent === undefined) throw new ConfigError(`schema evolution: parent field id ${c.parentId} is not in the schema`);
      parentPath = this.pathOf(c.parentId);
      if (parent.type.kind !== 'struct') throw reject(parentPath, `cannot add column ${c.field.name}: ${parentPath} is a ${parent.type.kind}, not a struct`);
      parentStruct = parent.type;
    }
    const fullName = parentPath === '' ? c.field.name : `${parentPath}.${c.field.name}`;
    if (c.field.name === '' || c.field.name.includes('.')) throw reject(fullName, 'a column name must be non-empty and contain no dot');
    if (c.field.required) throw reject(fullName, 'cannot add a required column (v2 allows only optional ones)');
    const siblings = [...parentStruct.fields.map((f) => this.updates.get(f.id)?.name ?? f.name), ...(this.adds.get(c.parentId) ?? []).map((f) => f.name)];
    if (siblings.includes(c.field.name)) throw reject(fullName, 'a column with that name already exists');
    const id = this.nextId();
    const field: NestedField = { ...c.field, id, type: assignFreshTypeIds(c.field.type, this.nextId) };
    this.adds.set(c.parentId, [...(this.adds.get(c.parentId) ?? []), field]);
    this.applied.push({ kind: 'add-column', parentId: c.parentId, field });
  }

  private promote(c: ChangeOf<'promote'>): void {
    const index = this.index;
    const f = index.field(c.fieldId);
    const path = this.pathOf(c.fieldId);
    if (f === undefined) throw new ConfigError(`schema evolution: field id ${c.fieldId} is not in the schema`);
    if (!isPrimitive(f.type)) throw reject(path, `cannot change a ${f.type.kind} to ${primitiveToString(c.to)}`);
    const current = this.updates.get(c.fieldId)?.type ?? f.type;
    if (samePrimitive(current, c.to)) return;
    if (!isPromotionAllowed(current, c.to)) throw reject(path, `cannot change type ${primitiveToString(current)} to ${primitiveToString(c.to)}`);
    if (index.info(c.fieldId)?.segments.at(-1) === 'key' && index.field(index.info(c.fieldId)?.parentId ?? -1)?.type.kind === 'map') {
      throw reject(path, 'map keys cannot change type');
    }
    this.update(c.fieldId).type = c.to;
    this.applied.push(c);
  }

  private makeOptional(c: ChangeOf<'make-optional'>): void {
    const f = this.index.field(c.fieldId);
    if (f === undefined) throw new ConfigError(`schema evolution: field id ${c.fieldId} is not in the schema`);
    if (!f.required || this.updates.get(c.fieldId)?.optional === true) return;
    const info = this.index.info(c.fieldId);
    if (info?.field.name === 'key' && this.index.field(info.parentId ?? -1)?.type.kind === 'map') throw reject(this.pathOf(c.fieldId), 'map keys are always required');
    if (this.identifier.has(c.fieldId)) throw reject(this.pathOf(c.fieldId), 'an identifier field must stay required');
    this.update(c.fieldId).optional = true;
    this.applied.push(c);
  }

  private rename(c: ChangeOf<'rename'>): void {
    const info = this.index.info(c.fieldId);
    if (info === undefined) throw new ConfigError(`schema evolution: field id ${c.fieldId} is not in the schema`);
    const parentType = info.parentId === undefined ? undefined : this.index.field(info.parentId)?.type;
    if (parentType !== undefined && parentType.kind !== 'struct') throw reject(info.path, 'list elements and map keys/values cannot be renamed');
    if (c.name === '' || c.name.includes('.')) throw reject(info.path, 'a column name must be non-empty and contain no dot');
    const siblingFields = parentType === undefined ? this.schema.fields : childFields(parentType);
    const clash = siblingFields.some((s) => s.id !== c.fieldId && (this.updates.get(s.id)?.name ?? s.name) === c.name);
    const parentKey = info.parentId ?? null;
    if (clash || (this.adds.get(parentKey) ?? []).some((a) => a.name === c.name)) throw reject(info.path, `cannot rename to ${c.name}: the name is taken`);
    this.update(c.fieldId).name = c.name;
    this.applied.push(c);
  }

  private deleteColumn(c: ChangeOf<'delete-column'>): void {
    const info = this.index.info(c.fieldId);
    if (info === undefined) throw new ConfigError(`schema evolution: field id ${c.fieldId} is not in the schema`);
    const parentType = info.parentId === undefined ? undefined : this.index.field(info.parentId)?.type;
    if (parentType !== undefined && parentType.kind !== 'struct') throw reject(info.path, 'list elements and map keys/values cannot be deleted');
    if (this.identifier.has(c.fieldId)) throw reject(info.path, 'cannot delete an identifier field');
    this.update(c.fieldId).deleted = true;
    this.applied.push(c);
  }

  private rebuildType(t: IcebergType, ownId: number | null): IcebergType {
    switch (t.kind) {
      case 'struct':
        return { kind: 'struct', fields: [...this.rebuildFields(t.fields), ...(this.adds.get(ownId) ?? [])] };
      case 'list': {
        const u = this.updates.get(t.elementId);
        return { ...t, elementRequired: u?.optional === true ? false : t.elementRequired, element: u?.type ?? this.rebuildType(t.element, t.elementId) };
      }
      case 'map': {
        const uv = this.updates.get(t.valueId);
        return {
          ...t,
          key: this.rebuildType(t.key, t.keyId),
          valueRequired: uv?.optional === true ? false : t.valueRequired,
          value: uv?.type ?? this.rebuildType(t.value, t.valueId),
        };
      }
      default:
        return t;
    }
  }

  private rebuildFields(fields: readonly NestedField[]): NestedField[] {
    return fields
      .filter((f) => this.updates.get(f.id)?.deleted !== true)
      .map((f) => {
        const u = this.updates.get(f.id);
        const type = u?.type ?? this.rebuildType(f.type, f.id);
        const out: NestedField = { ...f, type, name: u?.name ?? f.name, required: u?.optional === true ? false : f.required };
        return u?.doc !== undefined ? { ...out, doc: u.doc } : out;
      });
  }
}

/**
 * The changes between two schemas that share field ids (`to` evolved from `from`): added ids become
 * add-column (with `to`'s ids), missing ids delete-column, then renames, promotions, make-optional and
 * doc updates. Throws ConfigError naming the field for anything evolution does not allow (type change
 * that is not a promotion, optional -> required, a field that moved to another parent, a required add).
 */
export function diffSchemas(from: Schema, to: Schema): SchemaChange[] {
  const a = new SchemaIndex(from);
  const b = new SchemaIndex(to);
  const changes: SchemaChange[] = [];
  const deletes: SchemaChange[] = [];
  for (const info of a.ids()) {
    if (b.info(info) === undefined) {
      const parent = a.info(info)?.parentId;
      // Deleting a field deletes its children: report only the outermost one.
      if (parent === undefined || b.info(parent) !== undefined) deletes.push({ kind: 'delete-column', fieldId: info });
    }
  }
  const walk = (fields: readonly NestedField[], parentId: number | null): void => {
    for (const f of fields) {
      const old = a.info(f.id);
      const path = b.columnName(f.id) ?? f.name;
      if (old === undefined) {
        if (f.required) throw reject(path, 'cannot add a required column');
        changes.push({ kind: 'add-column', parentId, field: f });
        continue;
      }
      if ((old.parentId ?? null) !== parentId) throw reject(path, 'a field cannot move to another parent');
      if (old.field.name !== f.name && !['element', 'key', 'value'].includes(f.name)) changes.push({ kind: 'rename', fieldId: f.id, name: f.name });
      if (!old.field.required && f.required) throw reject(path, 'cannot make an optional field required');
      if (old.field.required && !f.required) changes.push({ kind: 'make-optional', fieldId: f.id });
      if (f.doc !== undefined && f.doc !== old.field.doc) changes.push({ kind: 'update-doc', fieldId: f.id, doc: f.doc });
      const ot = old.field.type;
      const nt = f.type;
      if (isPrimitive(ot) !== isPrimitive(nt) || (!isPrimitive(ot) && ot.kind !== nt.kind)) throw reject(path, `cannot change a ${ot.kind} to a ${nt.kind}`);
      if (isPrimitive(ot) && isPrimitive(nt)) {
        if (!samePrimitive(ot, nt)) {
          if (!isPromotionAllowed(ot, nt)) throw reject(path, `cannot change type ${primitiveToString(ot)} to ${primitiveToString(nt)}`);
          changes.push({ kind: 'promote', fieldId: f.id, to: nt });
        }
      } else walk(childFields(nt), f.id);
    }
  };
  walk(to.fields, null);
  return [...deletes, ...changes];
}

export interface UnionByNameOptions {
  /** Schema id for the evolved schema; default: the table schema's id + 1. Pass the metadata's highest id
   *  + 1 (or use `evolveTableSchema`); a catalog renumbers it on add-schema anyway. */
  readonly newSchemaId?: number;
  readonly caseSensitive?: boolean;
  /** Also emit `set-properties schema.name-mapping.default` regenerated from the new schema. */
  readonly updateNameMapping?: boolean;
  /**
   * The source schema is a guess — inferred from one schemaless JSON record, where an integral number
   * reads as long, a fraction as double, a null or an empty array as string: take only the fields the
   * table lacks (at any depth). Fields the table has keep their type and requiredness whatever the guess
   * says (no promotion, no make-optional, and a conflict is not an error): the decoder converts each value
   * to the table's type or rejects that record. This is the Apache sink's rule for schemaless values.
   */
  readonly addColumnsOnly?: boolean;
}

export interface SchemaEvolution {
  /** False when the table schema already accepts everything in the source. */
  readonly changed: boolean;
  /** The evolved schema (the table schema itself when unchanged). */
  readonly schema: Schema;
  readonly lastColumnId: number;
  readonly changes: readonly SchemaChange[];
  /** `[add-schema, set-current-schema -1]` (+ set-properties for the name mapping), or [] when unchanged. */
  readonly updates: readonly TableUpdate[];
  /** `[assert-current-schema-id, assert-last-assigned-field-id]` of the base, or [] when unchanged. */
  readonly requirements: readonly TableRequirement[];
}

/**
 * Evolves `tableSchema` so it can hold everything in `sourceSchema`, matching fields by name (Java
 * `UpdateSchema.unionByNameWith`): a source field the table lacks is added as an optional column (its
 * nested types keep their own requiredness and get fresh ids); a wider source type promotes the column;
 * a narrower one is ignored (the table type accepts it); an optional source field makes a required column
 * optional; a changed doc is copied. Table columns missing from the source are kept. Source ids are
 * ignored. Any incompatible difference is a ConfigError naming the field.
 */
export function unionByName(tableSchema: Schema, sourceSchema: Schema, lastColumnId: number, options: UnionByNameOptions = {}): SchemaEvolution {
  const caseSensitive = options.caseSensitive ?? true;
  const index = new SchemaIndex(tableSchema);
  const changes: SchemaChange[] = [];
  const find = (fields: readonly NestedField[], name: string): NestedField | undefined =>
    caseSensitive ? fields.find((f) => f.name === name) : fields.find((f) => f.name.toLowerCase() === name.toLowerCase());

  const updateColumn = (source: NestedField, existing: NestedField): void => {
    if (options.addColumnsOnly === true) return;
    const path = index.columnName(existing.id) ?? existing.name;
    if (!source.required && existing.required) changes.push({ kind: 'make-optional', fieldId: existing.id });
    const st = source.type;
    const et = existing.type;
    if (isPrimitive(et)) {
      if (!isPrimitive(st)) throw reject(path, `the table has ${primitiveToString(et)}, the source a ${st.kind}`);
      // A narrower source type is fine: the wider table type accepts its values.
      if (!isPromotionAllowed(st, et)) {
        if (!isPromotionAllowed(et, st)) throw reject(path, `cannot change type ${primitiveToString(et)} to ${primitiveToString(st)}`);
        changes.push({ kind: 'promote', fieldId: existing.id, to: st });
      }
    } else if (isPrimitive(st) || st.kind !== et.kind) {
      throw reject(path, `the table has a ${et.kind}, the source a ${isPrimitive(st) ? primitiveToString(st) : st.kind}`);
    }
    if (source.doc !== undefined && source.doc !== existing.doc) changes.push({ kind: 'update-doc', fieldId: existing.id, doc: source.doc });
  };

  // Post-order like Java's visitor: nested structs are reconciled before their parent's own fields.
  const visitStruct = (sourceFields: readonly NestedField[], tableFields: readonly NestedField[], parentId: number | null): void => {
    for (const sf of sourceFields) {
      const tf = find(tableFields, sf.name);
      if (tf !== undefined) visitNested(sf.type, tf);
    }
    for (const sf of sourceFields) {
      const tf = find(tableFields, sf.name);
      if (tf === undefined) changes.push({ kind: 'add-column', parentId, field: { ...sf, required: false } });
      else updateColumn(sf, tf);
    }
  };
  const visitNested = (st: IcebergType, tf: NestedField): void => {
    const et = tf.type;
    if (st.kind === 'struct' && et.kind === 'struct') visitStruct(st.fields, et.fields, tf.id);
    else if (st.kind === 'list' && et.kind === 'list') {
      const [se] = childFields(st) as [NestedField];
      const [ee] = childFields(et) as [NestedField];
      visitNested(se.type, ee);
      updateColumn(se, ee);
    } else if (st.kind === 'map' && et.kind === 'map') {
      const [sk, sv] = childFields(st) as [NestedField, NestedField];
      const [ek, ev] = childFields(et) as [NestedField, NestedField];
      visitNested(sk.type, ek);
      visitNested(sv.type, ev);
      updateColumn(sk, ek);
      updateColumn(sv, ev);
    }
  };
  visitStruct(sourceSchema.fields, tableSchema.fields, null);

  if (changes.length === 0) {
    return { changed: false, schema: tableSchema, lastColumnId, changes: [], updates: [], requirements: [] };
  }
  const newSchemaId = options.newSchemaId ?? tableSchema.schemaId + 1;
  const result = applySchemaChanges(tableSchema, changes, lastColumnId, newSchemaId);
  const updates: TableUpdate[] = [
    { action: 'add-schema', schema: result.schema },
    { action: 'set-current-schema', schemaId: LAST_ADDED },
  ];
  if (options.updateNameMapping === true) {
    updates.push({ action: 'set-properties', updates: { 'schema.name-mapping.default': stringifyJson(nameMapping(result.schema)) } });
  }
  return {
    changed: true,
    schema: result.schema,
    lastColumnId: result.lastColumnId,
    changes: result.applied,
    updates,
    requirements: [
      { type: 'assert-current-schema-id', currentSchemaId: tableSchema.schemaId },
      { type: 'assert-last-assigned-field-id', lastAssignedFieldId: lastColumnId },
    ],
  };
}

/**
 * `unionByName` against a table's current schema, with the schema id taken as the metadata's highest + 1.
 * When an identical schema already exists in the table (e.g. an earlier schema), the update switches to
 * it by id (`set-current-schema N`) instead of re-adding it: Java catalogs reject `-1` in that case.
 */
export function evolveTableSchema(md: TableMetadata, sourceSchema: Schema, options: Omit<UnionByNameOptions, 'newSchemaId'> = {}): SchemaEvolution {
  const table = currentSchema(md);
  const newSchemaId = md.schemas.reduce((m, s) => Math.max(m, s.schemaId), -1) + 1;
  const ev = unionByName(table, sourceSchema, md.lastColumnId, { ...options, newSchemaId });
  if (!ev.changed) return ev;
  const existing = md.schemas.find((s) => sameSchema(s, ev.schema));
  if (existing === undefined) return ev;
  return {
    ...ev,
    schema: existing,
    updates: [{ action: 'set-current-schema', schemaId: existing.schemaId }, ...ev.updates.filter((u) => u.action === 'set-properties')],
  };
}
