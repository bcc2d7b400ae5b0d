/**
 * Partition specs (spec "Partitioning", Appendix C "Partition Specs"): the model, its JSON codec (Java
 * `PartitionSpecParser` names: spec-id, fields[name, transform, source-id, field-id]), the builder from
 * the Apache Iceberg Kafka Connect sink's `partition-by` terms (parsed by partition-by.ts) against a
 * table schema, validation against a schema,
 * the partition struct type, and the Hive-style partition path.
 *
 * Owns: spec-level rules (field ids from 1000, last-partition-id 999 when unpartitioned, unique names,
 * no redundant time transforms, sources must be primitive columns outside lists and maps).
 * Must not: fall back to an unpartitioned table on a bad spec. Every invalid spec is a ConfigError that
 * names the offending term or field.
 */
import { ConfigError } from '../core/errors.ts';
import { asArray, asObject, optInt, reqInt, reqString } from './json-util.ts';
import { parsePartitionBy } from './partition-by.ts';
import { SchemaIndex } from './schema.ts';
import {
  bindTransform,
  canTransform,
  humanString,
  parseTransform,
  transformDedupName,
  transformResultType,
  transformToString,
  urlEncode,
  type BoundTransform,
  type Transform,
} from './transforms.ts';
import { isPrimitive, type NestedField, type PartitionValue, type PrimitiveType, type Schema, type StructType } from './types.ts';

export interface PartitionField {
  readonly sourceId: number;
  /** Partition field id: 1000, 1001, ... (spec: ids start at 1000 by convention). */
  readonly fieldId: number;
  readonly name: string;
  readonly transform: Transform;
}

export interface PartitionSpec {
  readonly specId: number;
  readonly fields: readonly PartitionField[];
}

/** First partition field id (Java `PARTITION_DATA_ID_START`). */
export const PARTITION_DATA_ID_START = 1000;
/** `last-partition-id` of a table that has never had a partition field. */
export const UNPARTITIONED_LAST_PARTITION_ID = PARTITION_DATA_ID_START - 1;

export function unpartitionedSpec(specId = 0): PartitionSpec {
  return { specId, fields: [] };
}

/** True when the spec produces no partition values (no fields, or only void fields). */
export function isUnpartitioned(spec: PartitionSpec): boolean {
  return spec.fields.every((f) => f.transform.kind === 'void');
}

/** Highest partition field id in the spec, or 999 for an empty spec (Java `lastAssignedFieldId`). */
export function lastAssignedPartitionId(spec: PartitionSpec): number {
  return spec.fields.reduce((m, f) => Math.max(m, f.fieldId), UNPARTITIONED_LAST_PARTITION_ID);
}

// ---------------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------------

/** The fields array alone; this (not the whole spec) is the manifest header's `partition-spec` value. */
export function partitionFieldsToJson(spec: PartitionSpec): Record<string, unknown>[] {
  return spec.fields.map((f) => ({ name: f.name, transform: transformToString(f.transform), 'source-id': f.sourceId, 'field-id': f.fieldId }));
}

export function partitionSpecToJson(spec: PartitionSpec): Record<string, unknown> {
  return { 'spec-id': spec.specId, fields: partitionFieldsToJson(spec) };
}

/**
 * Parses `{spec-id, fields}` or a bare fields array (v1 `partition-spec`, manifest headers; those get
 * `defaultSpecId`). v1 fields without `field-id` get 1000, 1001, ... in order, as Java does.
 */
export function partitionSpecFromJson(json: unknown, defaultSpecId = 0): PartitionSpec {
  let specId = defaultSpecId;
  let fieldsJson: readonly unknown[];
  if (Array.isArray(json)) fieldsJson = json;
  else {
    const o = asObject(json, 'partition spec');
    // REST create requests may omit spec-id (the catalog assigns it).
    specId = optInt(o, 'spec-id', 'partition spec') ?? defaultSpecId;
    fieldsJson = asArray(o['fields'], 'partition spec fields');
  }
  let nextId = PARTITION_DATA_ID_START;
  const fields = fieldsJson.map((fj) => {
    const o = asObject(fj, 'partition field');
    const fieldId = optInt(o, 'field-id', 'partition field') ?? nextId;
    nextId = fieldId + 1;
    return {
      sourceId: reqInt(o, 'source-id', 'partition field'),
      fieldId,
      name: reqString(o, 'name', 'partition field'),
      transform: parseTransform(reqString(o, 'transform', 'partition field')),
    };
  });
  return { specId, fields };
}

/** Same fields (ids, sources, names, transforms), ignoring the spec id: Java reuses such a spec on add-spec. */
export function sameSpecFields(a: PartitionSpec, b: PartitionSpec): boolean {
  return (
    a.fields.length === b.fields.length &&
    a.fields.every((f, i) => {
      const g = b.fields[i] as PartitionField;
      return f.fieldId === g.fieldId && f.sourceId === g.sourceId && f.name === g.name && transformToString(f.transform) === transformToString(g.transform);
    })
  );
}

// ---------------------------------------------------------------------------------------------------
// Validation and binding
// ---------------------------------------------------------------------------------------------------

function sourceField(index: SchemaIndex, f: PartitionField): NestedField {
  const info = index.info(f.sourceId);
  if (info === undefined) {
    throw new ConfigError(`partition field ${f.name}: source column id ${f.sourceId} is not in the schema`, { context: { partitionField: f.name } });
  }
  if (!isPrimitive(info.field.type)) {
    throw new ConfigError(`partition field ${f.name}: source column ${info.path} is a ${info.field.type.kind}, not a primitive`, { context: { partitionField: f.name } });
  }
  if (info.inRepeated) {
    throw new ConfigError(`partition field ${f.name}: source column ${info.path} is inside a list or map`, { context: { partitionField: f.name } });
  }
  return info.field;
}

/**
 * Checks a spec against a schema before it is used for writing (Java `checkCompatibility`: sources exist,
 * are primitive, outside lists/maps, and accept the transform; known transforms only). With `strict`
 * (the default) also the builder's rules: names unique and not clashing with other columns, no redundant
 * time transforms. Throws ConfigError naming the partition field.
 */
export function validatePartitionSpec(spec: PartitionSpec, schema: Schema, options: { readonly strict?: boolean } = {}): void {
  const strict = options.strict ?? true;
  const index = new SchemaIndex(schema);
  const names = new Set<string>();
  const dedup = new Map<string, string>();
  const ids = new Set<number>();
  for (const f of spec.fields) {
    if (f.name === '') throw new ConfigError('partition field names must not be empty');
    if (names.has(f.name)) throw new ConfigError(`partition field name ${f.name} is used more than once`, { context: { partitionField: f.name } });
    names.add(f.name);
    if (ids.has(f.fieldId)) throw new ConfigError(`partition field id ${f.fieldId} is used more than once`, { context: { partitionField: f.name } });
    ids.add(f.fieldId);
    if (f.transform.kind === 'unknown') {
      throw new ConfigError(`partition field ${f.name}: unknown transform ${f.transform.text}`, { context: { partitionField: f.name } });
    }
    // Java keeps void fields whose source column was dropped (that is how partition fields are removed in v1).
    if (f.transform.kind === 'void' && index.field(f.sourceId) === undefined) continue;
    const src = sourceField(index, f);
    if (!canTransform(f.transform, src.type)) {
      throw new ConfigError(`partition field ${f.name}: transform ${transformToString(f.transform)} cannot be applied to ${index.columnName(src.id)} of type ${String(typeName(src))}`, {
        context: { partitionField: f.name },
      });
    }
    if (!strict) continue;
    // A partition name may equal a column name only for identity/void of that same column.
    const clash = index.findByName(f.name);
    if (clash !== undefined && !((f.transform.kind === 'identity' || f.transform.kind === 'void') && clash.id === f.sourceId)) {
      throw new ConfigError(`partition field name ${f.name} clashes with a schema column of that name`, { context: { partitionField: f.name } });
    }
    if (f.transform.kind !== 'void' && f.transform.kind !== 'bucket' && f.transform.kind !== 'truncate') {
      const key = `${f.sourceId}:${transformDedupName(f.transform)}`;
      const prev = dedup.get(key);
      if (prev !== undefined) throw new ConfigError(`partition field ${f.name} is redundant with ${prev} (same source, same kind of transform)`, { context: { partitionField: f.name } });
      dedup.set(key, f.name);
    }
  }
}

function typeName(f: NestedField): string {
  return isPrimitive(f.type) ? (f.type.kind === 'decimal' ? `decimal(${f.type.precision}, ${f.type.scale})` : f.type.kind) : f.type.kind;
}

/** The struct of partition values (field id = partition field id, optional, type = transform result). */
export function partitionType(spec: PartitionSpec, schema: Schema): StructType {
  const index = new SchemaIndex(schema);
  return {
    kind: 'struct',
    fields: spec.fields.map((f) => ({ id: f.fieldId, name: f.name, required: false, type: partitionFieldResultType(index, f) })),
  };
}

function partitionFieldResultType(index: SchemaIndex, f: PartitionField): PrimitiveType {
  const src = index.field(f.sourceId);
  if (src === undefined && f.transform.kind === 'void') return { kind: 'int' };
  if (src === undefined || !isPrimitive(src.type)) {
    throw new ConfigError(`partition field ${f.name}: source column id ${f.sourceId} is not a primitive column of the schema`);
  }
  return transformResultType(f.transform, src.type);
}

/** Result types of the spec's fields, in spec order. */
export function partitionResultTypes(spec: PartitionSpec, schema: Schema): PrimitiveType[] {
  const index = new SchemaIndex(schema);
  return spec.fields.map((f) => partitionFieldResultType(index, f));
}

export interface BoundPartitionField {
  readonly field: PartitionField;
  readonly sourceType: PrimitiveType;
  readonly resultType: PrimitiveType;
  /** Source value -> partition value. */
  readonly apply: BoundTransform;
}

/** Validates (compatibility only: a table made by another engine may use names our builder would not)
 *  and binds every field of the spec to the schema, for a partitioner to call per row. A void field whose
 *  source is gone binds to int and always yields null. */
export function bindPartitionSpec(spec: PartitionSpec, schema: Schema): BoundPartitionField[] {
  validatePartitionSpec(spec, schema, { strict: false });
  const index = new SchemaIndex(schema);
  return spec.fields.map((f) => {
    if (f.transform.kind === 'void' && index.field(f.sourceId) === undefined) {
      return { field: f, sourceType: { kind: 'int' }, resultType: { kind: 'int' }, apply: () => null };
    }
    const sourceType = sourceField(index, f).type as PrimitiveType;
    return { field: f, sourceType, resultType: transformResultType(f.transform, sourceType), apply: bindTransform(f.transform, sourceType) };
  });
}

/**
 * Hive-style relative path of one partition tuple (Java `PartitionSpec.partitionToPath`): `name=value`
 * per field, joined by `/`, each part URL-encoded; values in Java's human form (`ts_day=2017-11-16`).
 * Empty for an unpartitioned spec.
 */
export function partitionPath(spec: PartitionSpec, schema: Schema, values: readonly PartitionValue[]): string {
  if (values.length !== spec.fields.length) throw new TypeError(`partition tuple has ${values.length} values, spec has ${spec.fields.length} fields`);
  const types = partitionResultTypes(spec, schema);
  return spec.fields
    .map((f, i) => `${urlEncode(f.name)}=${urlEncode(humanString(f.transform, types[i] as PrimitiveType, values[i] as PartitionValue))}`)
    .join('/');
}

// ---------------------------------------------------------------------------------------------------
// The Kafka Connect sink's `partition-by` syntax (parsed by partition-by.ts)
// ---------------------------------------------------------------------------------------------------

export interface PartitionByOptions {
  readonly specId?: number;
  /** Field ids continue from here + 1 (Java: the table's last-partition-id; 999 for a new table). */
  readonly lastPartitionId?: number;
  readonly caseSensitive?: boolean;
}

/** Java's default partition field name suffixes (`PartitionSpec.Builder`). */
export const NAME_SUFFIX: Readonly<Record<Transform['kind'], string>> = {
  identity: '',
  year: '_year',
  month: '_month',
  day: '_day',
  hour: '_hour',
  bucket: '_bucket',
  truncate: '_trunc',
  void: '_null',
  unknown: '',
};

/**
 * Builds a spec from `partition-by` terms (grammar: partition-by.ts `parsePartitionBy`) against a table
 * schema, as the Apache Iceberg Kafka Connect sink does (`SchemaUtils.createPartitionSpec`). Field names
 * follow Java's builder: `col`, `col_year`, `col_month`, `col_day`, `col_hour`, `col_bucket`,
 * `col_trunc` (col = the full dotted column name). Empty input -> unpartitioned.
 * Any problem is a ConfigError naming the term; nothing is silently dropped.
 */
export function buildPartitionSpec(schema: Schema, partitionBy: string | readonly string[], options: PartitionByOptions = {}): PartitionSpec {
  const terms = parsePartitionBy(partitionBy);
  const index = new SchemaIndex(schema);
  const caseSensitive = options.caseSensitive ?? true;
  let lastId = options.lastPartitionId ?? UNPARTITIONED_LAST_PARTITION_ID;
  const fields: PartitionField[] = terms.map(({ text, column, transform }) => {
    const info = index.infoByName(column, caseSensitive);
    if (info === undefined) throw new ConfigError(`partition-by term "${text}": column ${column} is not in the table schema`, { context: { term: text, column } });
    return { sourceId: info.field.id, fieldId: ++lastId, name: info.path + NAME_SUFFIX[transform.kind], transform };
  });
  const spec: PartitionSpec = { specId: options.specId ?? 0, fields };
  try {
    validatePartitionSpec(spec, schema);
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(`partition-by "${terms.map((t) => t.text).join(', ')}": ${e.message}`, { cause: e, context: e.context });
    throw e;
  }
  return spec;
}

/**
 * Rebuilds a spec against a freshly numbered schema by source column name (Java `freshSpec` in
 * `TableMetadata.newTableMetadata`): field ids from 1000, the given spec id.
 */
export function freshPartitionSpec(spec: PartitionSpec, oldSchema: Schema, freshSchema: Schema, specId = 0): PartitionSpec {
  const oldIndex = new SchemaIndex(oldSchema);
  const newIndex = new SchemaIndex(freshSchema);
  let next = PARTITION_DATA_ID_START;
  const fields = spec.fields.map((f) => {
    const name = oldIndex.columnName(f.sourceId);
    const nf = name === undefined ? undefined : newIndex.findByName(name);
    if (nf === undefined) throw new ConfigError(`partition field ${f.name}: source column id ${f.sourceId} is not in the schema`);
    return { ...f, sourceId: nf.id, fieldId: next++ };
  });
  return { specId, fields };
}
