/**
 * The exact Avro schemas Java writes for v2 manifests (`manifest_entry`, record `r2` for data_file,
 * `r102` for the partition tuple, `k<key>_v<value>` map-entry records) and v2 manifest lists
 * (`manifest_file`, `r508` partition field summaries), as produced by Java's `AvroSchemaUtil.convert` /
 * `TypeToSchema` over `V2Metadata.entrySchema` and `V2Metadata.MANIFEST_LIST_SCHEMA` (Iceberg 1.x).
 *
 * Why exact: Spark and older Java readers resolve these files by record names and field ids; writers
 * whose names or shapes differed broke them (apache/iceberg-rust#179, iceberg-cpp#306, iceberg-go#305,
 * redpanda#24602, paimon#5384). Key order inside each JSON object follows Avro's `Schema.toString()`:
 * record {type, name, fields}, field {name, type, doc, default, then props: iceberg-field-name, field-id},
 * array {type, items, then props: element-id / logicalType}.
 *
 * Owns: schema JSON only. Must not: encode records (manifest.ts / manifest-list.ts do).
 */
import { isPrimitive, type NestedField, type PrimitiveType, type StructType } from './types.ts';

type Json = Record<string, unknown>;

/** Java `TypeUtil.decimalRequiredBytes`: the smallest length whose max precision
 *  floor(log10(2^(8*len-1) - 1)) covers `precision` (same double arithmetic as Java, so sizes match). */
export function decimalRequiredBytes(precision: number): number {
  if (precision < 0 || precision > 40) throw new RangeError(`decimal precision ${precision} out of range`);
  let len = 1;
  while (Math.floor(Math.log10(Math.pow(2, 8 * len - 1) - 1)) < precision) len++;
  return len;
}

/** Avro names: Java's `AvroSchemaUtil.validAvroName` (ASCII subset, which avsc requires). */
export function isValidAvroName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);
}

/** Java `AvroSchemaUtil.sanitize`: invalid characters become `_x<HEX>`, a leading digit `_<digit>`. */
export function sanitizeAvroName(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i] as string;
    const ok = i === 0 ? /[A-Za-z_]/.test(c) : /[A-Za-z0-9_]/.test(c);
    if (ok) out += c;
    else if (/[0-9]/.test(c)) out += `_${c}`;
    else out += `_x${(name.charCodeAt(i) as number).toString(16).toUpperCase()}`;
  }
  return out;
}

/** Named Avro types may be defined once per schema; later uses refer to them by name (as Java's cache does). */
export class NamedTypes {
  private readonly defined = new Set<string>();
  use(name: string, define: () => Json): Json | string {
    if (this.defined.has(name)) return name;
    this.defined.add(name);
    return define();
  }
}

/** Java `TypeToSchema.primitive`: the Avro form of an Iceberg primitive (partition values). */
export function avroPrimitive(t: PrimitiveType, named: NamedTypes): unknown {
  switch (t.kind) {
    case 'boolean':
    case 'int':
    case 'long':
    case 'float':
    case 'double':
    case 'string':
      return t.kind;
    case 'binary':
      return 'bytes';
    case 'date':
      return { type: 'int', logicalType: 'date' };
    case 'time':
      return { type: 'long', logicalType: 'time-micros' };
    case 'timestamp':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': false };
    case 'timestamptz':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': true };
    case 'timestamp_ns':
      return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': false };
    case 'timestamptz_ns':
      return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': true };
    case 'uuid':
      return named.use('uuid_fixed', () => ({ type: 'fixed', name: 'uuid_fixed', size: 16, logicalType: 'uuid' }));
    case 'fixed':
      return named.use(`fixed_${t.length}`, () => ({ type: 'fixed', name: `fixed_${t.length}`, size: t.length }));
    case 'decimal': {
      const name = `decimal_${t.precision}_${t.scale}`;
      return named.use(name, () => ({ type: 'fixed', name, size: decimalRequiredBytes(t.precision), logicalType: 'decimal', precision: t.precision, scale: t.scale }));
    }
  }
}

function field(name: string, type: unknown, fieldId: number, doc?: string, optional = false): Json {
  const valid = isValidAvroName(name);
  const o: Json = { name: valid ? name : sanitizeAvroName(name), type: optional ? ['null', type] : type };
  if (doc !== undefined) o['doc'] = doc;
  if (optional) o['default'] = null;
  if (!valid) o['iceberg-field-name'] = name;
  o['field-id'] = fieldId;
  return o;
}

function intMap(keyId: number, valueId: number, valueType: string): Json {
  return {
    type: 'array',
    items: {
      type: 'record',
      name: `k${keyId}_v${valueId}`,
      fields: [
        { name: 'key', type: 'int', 'field-id': keyId },
        { name: 'value', type: valueType, 'field-id': valueId },
      ],
    },
    logicalType: 'map',
  };
}

/** The Avro record `r102` for a partition struct (every field optional, as Java's partition type is). */
export function partitionRecordSchema(partitionType: StructType, named: NamedTypes = new NamedTypes()): Json {
  return {
    type: 'record',
    name: 'r102',
    fields: partitionType.fields.map((f: NestedField) => {
      if (!isPrimitive(f.type)) throw new TypeError(`partition field ${f.name} is not primitive`);
      return field(f.name, avroPrimitive(f.type, named), f.id, undefined, true);
    }),
  };
}

/** v2 `manifest_entry` (V2Metadata.entrySchema) for the given partition struct type. */
export function manifestEntrySchemaV2(partitionType: StructType): Json {
  const named = new NamedTypes();
  const dataFile: Json = {
    type: 'record',
    name: 'r2',
    fields: [
      field('content', 'int', 134, 'Contents of the file: 0=data, 1=position deletes, 2=equality deletes'),
      field('file_path', 'string', 100, 'Location URI with FS scheme'),
      field('file_format', 'string', 101, 'File format name: avro, orc, or parquet'),
      field('partition', partitionRecordSchema(partitionType, named), 102, 'Partition data tuple, schema based on the partition spec'),
      field('record_count', 'long', 103, 'Number of records in the file'),
      field('file_size_in_bytes', 'long', 104, 'Total file size in bytes'),
      field('column_sizes', intMap(117, 118, 'long'), 108, 'Map of column id to total size on disk', true),
      field('value_counts', intMap(119, 120, 'long'), 109, 'Map of column id to total count, including null and NaN', true),
      field('null_value_counts', intMap(121, 122, 'long'), 110, 'Map of column id to null value count', true),
      field('nan_value_counts', intMap(138, 139, 'long'), 137, 'Map of column id to number of NaN values in the column', true),
      field('lower_bounds', intMap(126, 127, 'bytes'), 125, 'Map of column id to lower bound', true),
      field('upper_bounds', intMap(129, 130, 'bytes'), 128, 'Map of column id to upper bound', true),
      field('key_metadata', 'bytes', 131, 'Encryption key metadata blob', true),
      field('split_offsets', { type: 'array', items: 'long', 'element-id': 133 }, 132, 'Splittable offsets', true),
      field('equality_ids', { type: 'array', items: 'int', 'element-id': 136 }, 135, 'Equality comparison field IDs', true),
      field('sort_order_id', 'int', 140, 'Sort order ID', true),
      field(
        'referenced_data_file',
        'string',
        143,
        'Fully qualified location (URI with FS scheme) of a data file that all deletes reference',
        true,
      ),
    ],
  };
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      field('status', 'int', 0),
      field('snapshot_id', 'long', 1, undefined, true),
      field('sequence_number', 'long', 3, undefined, true),
      field('file_sequence_number', 'long', 4, undefined, true),
      field('data_file', dataFile, 2),
    ],
  };
}

/** v2 `manifest_file` (V2Metadata.MANIFEST_LIST_SCHEMA). */
export function manifestFileSchemaV2(): Json {
  const summary: Json = {
    type: 'record',
    name: 'r508',
    fields: [
      field('contains_null', 'boolean', 509, 'True if any file has a null partition value'),
      field('contains_nan', 'boolean', 518, 'True if any file has a nan partition value', true),
      field('lower_bound', 'bytes', 510, 'Partition lower bound for all files', true),
      field('upper_bound', 'bytes', 511, 'Partition upper bound for all files', true),
    ],
  };
  return {
    type: 'record',
    name: 'manifest_file',
    fields: [
      field('manifest_path', 'string', 500, 'Location URI with FS scheme'),
      field('manifest_length', 'long', 501, 'Total file size in bytes'),
      field('partition_spec_id', 'int', 502, 'Spec ID used to write'),
      field('content', 'int', 517, 'Contents of the manifest: 0=data, 1=deletes'),
      field('sequence_number', 'long', 515, 'Sequence number when the manifest was added'),
      field('min_sequence_number', 'long', 516, 'Lowest sequence number in the manifest'),
      field('added_snapshot_id', 'long', 503, 'Snapshot ID that added the manifest'),
      field('added_files_count', 'int', 504, 'Added entry count'),
      field('existing_files_count', 'int', 505, 'Existing entry count'),
      field('deleted_files_count', 'int', 506, 'Deleted entry count'),
      field('added_rows_count', 'long', 512, 'Added rows count'),
      field('existing_rows_count', 'long', 513, 'Existing rows count'),
      field('deleted_rows_count', 'long', 514, 'Deleted rows count'),
      field('partitions', { type: 'array', items: summary, 'element-id': 508 }, 507, 'Summary for each partition', true),
      field('key_metadata', 'bytes', 519, 'Encryption key metadata blob', true),
    ],
  };
}

/** Field id -> field (name, type) of an Avro record schema, from its `field-id` attributes. */
export function avroFieldsById(record: unknown): Map<number, { name: string; type: unknown }> {
  const out = new Map<number, { name: string; type: unknown }>();
  if (typeof record !== 'object' || record === null) return out;
  const fields = (record as { fields?: unknown }).fields;
  if (!Array.isArray(fields)) return out;
  for (const f of fields as unknown[]) {
    if (typeof f !== 'object' || f === null) continue;
    const { name, type } = f as { name?: unknown; type?: unknown };
    const id = (f as Record<string, unknown>)['field-id'];
    if (typeof name === 'string' && typeof id === 'number') out.set(id, { name, type });
  }
  return out;
}
