/**
 * The column layout of one Iceberg schema as the Parquet writer lays it out: the Arrow schema handed to
 * parquet-wasm (with `PARQUET:field_id` on every field that Iceberg gives an id, spec Appendix A), the
 * Parquet leaf columns in file order, and the Parquet schema elements we expect back in the footer.
 *
 * Owns: the Iceberg → Arrow type mapping (iceberg-writer.md §1.10) and the element naming Iceberg readers
 * expect (3-level LIST `list`/`element`, MAP `key_value`/`key`/`value`). Must not hold data; column
 * builders (columns.ts) are created from it per writer.
 *
 * Mapping: int→Int32, long→Int64, float→Float32, double→Float64, boolean→Bool, decimal(P,S)→Decimal128,
 * date→Date32(day), time→Time64(µs), timestamp→Timestamp(µs) without zone (isAdjustedToUTC=false),
 * timestamptz→Timestamp(µs,"UTC") (isAdjustedToUTC=true), the _ns variants likewise in ns,
 * string→Utf8 (never LargeUtf8), binary→Binary, fixed(L)→FixedSizeBinary(L), uuid→FixedSizeBinary(16)
 * (the footer is patched to carry the UUID logical type, parquet.ts), struct/list/map nested.
 *
 * Decimal physical types: arrow-rs picks INT32 for precision 2-9, INT64 for 10-18 and the minimal
 * FIXED_LEN_BYTE_ARRAY above (as the Parquet spec and Java Iceberg do), but INT64 for precision 1 (its
 * rule is `precision > 1 && precision <= 9`). So decimal(1, S) is handed to the encoder as
 * Decimal128(2, S): INT32, values unchanged; the footer is then patched back to precision 1
 * (`ExpectedElement.declaredPrecision`, and ARROW:schema from `declaredArrowSchema`).
 */
import * as arrow from 'apache-arrow';
import { ConfigError } from '../core/errors.ts';
import type { IcebergType, NestedField, PrimitiveType, Schema } from '../iceberg/types.ts';

export const FIELD_ID_KEY = 'PARQUET:field_id';

export interface LayoutNode {
  readonly fieldId: number;
  /** The Arrow/Parquet element name: the field name, or `element`, `key`, `value`. */
  readonly name: string;
  /** Iceberg's dotted-name path (`address.city`, `tags.element`, `attributes.key`). */
  readonly path: string;
  readonly required: boolean;
  readonly type: IcebergType;
  /** Struct fields; a list's [element]; a map's [key, value]; empty for primitives. */
  readonly children: readonly LayoutNode[];
  /** Under a list or a map: such leaves get column sizes only, no counts or bounds (Java ParquetMetrics). */
  readonly inRepeated: boolean;
  /** Position among the Parquet leaf columns (file order), or -1 for a nested node. */
  readonly leafIndex: number;
  readonly arrowField: arrow.Field;
}

/** One Parquet SchemaElement as we expect to read it back from the footer (depth-first order). */
export interface ExpectedElement {
  readonly name: string;
  readonly fieldId: number | undefined;
  readonly numChildren: number;
  /** A decimal whose footer precision must be patched to this (the encoder was given a wider one). */
  readonly declaredPrecision?: number;
}

export interface ColumnLayout {
  readonly schema: Schema;
  readonly roots: readonly LayoutNode[];
  readonly arrowSchema: arrow.Schema;
  readonly arrowStruct: arrow.Struct;
  /** Leaf columns in Parquet column order (depth-first). */
  readonly leaves: readonly LayoutNode[];
  readonly byId: ReadonlyMap<number, LayoutNode>;
  readonly byPath: ReadonlyMap<string, LayoutNode>;
  /** Footer schema elements after the root, depth-first: ids where Iceberg has them, none on `list`/`key_value`. */
  readonly expectedElements: readonly ExpectedElement[];
  /** The Arrow schema with the Iceberg types as declared, when the encoder's differs (decimal(1, S)). */
  readonly declaredArrowSchema: arrow.Schema | undefined;
}

/** arrow-rs would store Decimal128(1, S) as INT64; one digit more makes it INT32 (see the module header). */
const ENCODED_DECIMAL_PRECISION = new Map([[1, 2]]);

function fieldMeta(id: number): Map<string, string> {
  return new Map([[FIELD_ID_KEY, String(id)]]);
}

export function arrowPrimitive(t: PrimitiveType): arrow.DataType {
  switch (t.kind) {
    case 'boolean':
      return new arrow.Bool();
    case 'int':
      return new arrow.Int32();
    case 'long':
      return new arrow.Int64();
    case 'float':
      return new arrow.Float32();
    case 'double':
      return new arrow.Float64();
    case 'decimal':
      if (t.precision < 1 || t.precision > 38 || t.scale < 0 || t.scale > t.precision) {
        throw new ConfigError(`unsupported decimal(${t.precision}, ${t.scale})`);
      }
      return new arrow.Decimal(t.scale, ENCODED_DECIMAL_PRECISION.get(t.precision) ?? t.precision, 128);
    case 'date':
      return new arrow.DateDay();
    case 'time':
      return new arrow.TimeMicrosecond();
    case 'timestamp':
      return new arrow.TimestampMicrosecond();
    case 'timestamptz':
      return new arrow.TimestampMicrosecond('UTC');
    case 'timestamp_ns':
      return new arrow.TimestampNanosecond();
    case 'timestamptz_ns':
      return new arrow.TimestampNanosecond('UTC');
    case 'string':
      return new arrow.Utf8();
    case 'binary':
      return new arrow.Binary();
    case 'uuid':
      return new arrow.FixedSizeBinary(16);
    case 'fixed':
      if (!Number.isInteger(t.length) || t.length < 1) throw new ConfigError(`unsupported fixed[${t.length}]`);
      return new arrow.FixedSizeBinary(t.length);
  }
}

interface Builder {
  leaves: LayoutNode[];
  byId: Map<number, LayoutNode>;
  byPath: Map<string, LayoutNode>;
  elements: ExpectedElement[];
  /** Some leaf is encoded with a type other than its declared one. */
  widened: boolean;
}

function mapOf(key: arrow.Field, value: arrow.Field): arrow.Map_ {
  const entries = new arrow.Field('entries', new arrow.Struct([key, value]), false);
  const mapType = new arrow.Map_(entries, false);
  // apache-arrow renames the entries field to `entries` (ARROW-8716); arrow-rs names the repeated
  // group after it. Iceberg (and the Parquet spec's MAP form) call it `key_value`.
  const entriesField = mapType.children[0] as { name: string } | undefined;
  if (entriesField === undefined) throw new Error('apache-arrow Map_ has no entries field');
  entriesField.name = 'key_value';
  return mapType;
}

/** The node's Arrow field with the declared Iceberg types (decimal(1, S) as Decimal128(1, S)). */
function declaredField(n: LayoutNode): arrow.Field {
  const t = n.type;
  const child = (i: number): arrow.Field => declaredField(n.children[i] as LayoutNode);
  let type: arrow.DataType;
  if (t.kind === 'struct') type = new arrow.Struct(n.children.map(declaredField));
  else if (t.kind === 'list') type = new arrow.List(child(0));
  else if (t.kind === 'map') type = mapOf(child(0), child(1));
  else if (t.kind === 'decimal') type = new arrow.Decimal(t.scale, t.precision, 128);
  else return n.arrowField;
  return new arrow.Field(n.name, type, n.arrowField.nullable, n.arrowField.metadata);
}

function node(
  b: Builder,
  fieldId: number,
  name: string,
  path: string,
  required: boolean,
  type: IcebergType,
  inRepeated: boolean,
): LayoutNode {
  if (!Number.isInteger(fieldId) || fieldId < 0) throw new ConfigError(`field ${path} has no valid id: ${fieldId}`);
  if (b.byId.has(fieldId)) throw new ConfigError(`field id ${fieldId} is used twice (${path})`);
  const elementIndex = b.elements.length;
  b.elements.push({ name, fieldId, numChildren: 0 });
  const setChildren = (n: number): void => {
    b.elements[elementIndex] = { name, fieldId, numChildren: n };
  };
  let children: LayoutNode[] = [];
  let arrowType: arrow.DataType;
  let leafIndex = -1;
  switch (type.kind) {
    case 'struct': {
      setChildren(type.fields.length);
      children = type.fields.map((f) => childOf(b, f, path, inRepeated));
      arrowType = new arrow.Struct(children.map((c) => c.arrowField));
      break;
    }
    case 'list': {
      setChildren(1);
      b.elements.push({ name: 'list', fieldId: undefined, numChildren: 1 });
      const el = node(b, type.elementId, 'element', `${path}.element`, type.elementRequired, type.element, true);
      children = [el];
      arrowType = new arrow.List(el.arrowField);
      break;
    }
    case 'map': {
      setChildren(1);
      b.elements.push({ name: 'key_value', fieldId: undefined, numChildren: 2 });
      const key = node(b, type.keyId, 'key', `${path}.key`, true, type.key, true);
      const value = node(b, type.valueId, 'value', `${path}.value`, type.valueRequired, type.value, true);
      children = [key, value];
      arrowType = mapOf(key.arrowField, value.arrowField);
      break;
    }
    default:
      arrowType = arrowPrimitive(type);
      leafIndex = b.leaves.length;
      if (type.kind === 'decimal' && ENCODED_DECIMAL_PRECISION.has(type.precision)) {
        b.elements[elementIndex] = { name, fieldId, numChildren: 0, declaredPrecision: type.precision };
        b.widened = true;
      }
  }
  const arrowField = new arrow.Field(name, arrowType, !required, fieldMeta(fieldId));
  const n: LayoutNode = { fieldId, name, path, required, type, children, inRepeated, leafIndex, arrowField };
  if (leafIndex >= 0) b.leaves.push(n);
  b.byId.set(fieldId, n);
  b.byPath.set(path, n);
  return n;
}

function childOf(b: Builder, f: NestedField, parentPath: string, inRepeated: boolean): LayoutNode {
  const path = parentPath === '' ? f.name : `${parentPath}.${f.name}`;
  return node(b, f.id, f.name, path, f.required, f.type, inRepeated);
}

/**
 * The deepest nesting the writer can write, in Arrow fields along one path (a top-level primitive is 1, a
 * struct's field 2; a map counts its entries struct). parquet-wasm reads every batch as an Arrow IPC
 * message whose flatbuffers verifier stops at 64 levels: the message, its schema, a table per field down
 * the path and the deepest field's type. Deeper fails only when the first file is flushed.
 */
export const MAX_FIELD_DEPTH = 61;

/** The schema's deepest field as the writer nests it: its Iceberg path and depth (see MAX_FIELD_DEPTH). */
export function deepestField(schema: Schema): { readonly path: string; readonly depth: number } {
  const arrowDepth = (f: arrow.Field): number => 1 + (f.type.children ?? []).reduce((max: number, c: arrow.Field) => Math.max(max, arrowDepth(c)), 0);
  let deepest = { path: '', depth: 0 };
  for (const root of buildLayout(schema).roots) {
    let node = root;
    const depth = arrowDepth(root.arrowField);
    if (depth <= deepest.depth) continue;
    // Down the deepest child to name the field.
    while (node.children.length > 0) node = node.children.reduce((a, b) => (arrowDepth(b.arrowField) > arrowDepth(a.arrowField) ? b : a));
    deepest = { path: node.path, depth };
  }
  return deepest;
}

/** Lays out a schema. Leaves are ordered as Parquet orders its columns (depth-first, map key before value). */
export function buildLayout(schema: Schema): ColumnLayout {
  const b: Builder = { leaves: [], byId: new Map(), byPath: new Map(), elements: [], widened: false };
  if (schema.fields.length === 0) throw new ConfigError('cannot write a schema without fields');
  const roots = schema.fields.map((f) => childOf(b, f, '', false));
  // Primitives were numbered as the depth-first walk met them: Parquet's column order.
  const leaves = b.leaves;
  const arrowFields = roots.map((r) => r.arrowField);
  return {
    schema,
    roots,
    arrowSchema: new arrow.Schema(arrowFields),
    arrowStruct: new arrow.Struct(arrowFields),
    leaves,
    byId: b.byId,
    byPath: b.byPath,
    expectedElements: b.elements,
    declaredArrowSchema: b.widened ? new arrow.Schema(roots.map(declaredField)) : undefined,
  };
}
