/**
 * The Iceberg type model (spec "Schemas and Data Types", Appendix C for the JSON form).
 *
 * Owns: the type and field shapes every stage shares (decoders produce them, the writer lays out columns
 * by them, the catalog serialises them). Pure data; the JSON codec lives in schema.ts.
 * Field ids are plain numbers (they are int32 in the spec); anything 64-bit elsewhere is bigint.
 */

export type PrimitiveType =
  | { readonly kind: 'boolean' }
  | { readonly kind: 'int' }
  | { readonly kind: 'long' }
  | { readonly kind: 'float' }
  | { readonly kind: 'double' }
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number }
  | { readonly kind: 'date' }
  | { readonly kind: 'time' }
  | { readonly kind: 'timestamp' }
  | { readonly kind: 'timestamptz' }
  | { readonly kind: 'timestamp_ns' }
  | { readonly kind: 'timestamptz_ns' }
  | { readonly kind: 'string' }
  | { readonly kind: 'uuid' }
  | { readonly kind: 'fixed'; readonly length: number }
  | { readonly kind: 'binary' };

export interface NestedField {
  readonly id: number;
  readonly name: string;
  readonly required: boolean;
  readonly type: IcebergType;
  readonly doc?: string;
}

export interface StructType {
  readonly kind: 'struct';
  readonly fields: readonly NestedField[];
}

export interface ListType {
  readonly kind: 'list';
  readonly elementId: number;
  readonly elementRequired: boolean;
  readonly element: IcebergType;
}

export interface MapType {
  readonly kind: 'map';
  readonly keyId: number;
  readonly key: IcebergType;
  readonly valueId: number;
  readonly valueRequired: boolean;
  readonly value: IcebergType;
}

export type IcebergType = PrimitiveType | StructType | ListType | MapType;
export type PrimitiveKind = PrimitiveType['kind'];

export interface Schema {
  readonly schemaId: number;
  readonly fields: readonly NestedField[];
  readonly identifierFieldIds?: readonly number[];
}

export function isPrimitive(t: IcebergType): t is PrimitiveType {
  return t.kind !== 'struct' && t.kind !== 'list' && t.kind !== 'map';
}

/** The spec's string form of a primitive: `decimal(10, 2)`, `fixed[16]`, `long`, ... */
export function primitiveToString(t: PrimitiveType): string {
  switch (t.kind) {
    case 'decimal':
      return `decimal(${t.precision}, ${t.scale})`;
    case 'fixed':
      return `fixed[${t.length}]`;
    default:
      return t.kind;
  }
}
