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
  /** v3 `initial-default` / `write-default`, kept in their JSON single-value form (Appendix C) so foreign
   *  metadata round-trips; Icefloe itself writes v2 and never sets them. */
  readonly initialDefault?: unknown;
  readonly writeDefault?: unknown;
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

/**
 * One Iceberg primitive value in JS, used by transforms, partition tuples and bounds:
 * - boolean -> boolean
 * - int, date (days since 1970-01-01) -> number
 * - float, double -> number
 * - long, time (µs since midnight), timestamp / timestamptz (µs since epoch),
 *   timestamp_ns / timestamptz_ns (ns since epoch) -> bigint
 * - decimal(P, S) -> bigint, the unscaled value (the scale comes from the type)
 * - string -> string
 * - uuid -> Uint8Array of 16 bytes, RFC 4122 (big-endian) order; bytes.ts `uuidToBytes` converts text
 * - fixed[L], binary -> Uint8Array
 */
export type PrimitiveValue = boolean | number | bigint | string | Uint8Array;

/** A partition tuple member: a transform result, or null. */
export type PartitionValue = PrimitiveValue | null;

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
