/**
 * The physical kind of every Iceberg type: the representation its values share once the logical meaning
 * is set aside — date is an int of days, time and every timestamp a long, uuid a 16-byte fixed. It is what
 * a column builder stores (src/write/columns.ts), which typed sink a decoder asks for (src/decode/sink.ts),
 * which statistics a leaf keeps (src/write/metrics.ts) and how a bound is serialised (bounds.ts, spec
 * Appendix D). The same grouping is the Parquet physical type of spec "Parquet" (INT32, INT64, FLOAT,
 * DOUBLE, FIXED_LEN_BYTE_ARRAY, BINARY), with decimal kept apart because its width depends on precision.
 *
 * Owns: the one mapping, so adding a type means adding one row here and the compiler points at every
 * switch over physical kinds that lacks it. Must not: carry logical meaning (units, time zones, Arrow
 * types): the stages that need those switch on the Iceberg kind itself.
 */
import type { IcebergType, PrimitiveKind, PrimitiveType } from './types.ts';

export type PhysicalKind = 'boolean' | 'int' | 'long' | 'float' | 'double' | 'decimal' | 'string' | 'binary' | 'fixed';
export type NestedKind = 'struct' | 'list' | 'map';

/** A primitive's physical kind with what the representation needs: decimal precision/scale, fixed width. */
export type PhysicalType =
  | { readonly kind: 'boolean' | 'int' | 'long' | 'float' | 'double' | 'string' | 'binary' }
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number }
  | { readonly kind: 'fixed'; readonly width: number };

const PHYSICAL_KIND: { readonly [K in PrimitiveKind]: PhysicalKind } = {
  boolean: 'boolean',
  int: 'int',
  date: 'int',
  long: 'long',
  time: 'long',
  timestamp: 'long',
  timestamptz: 'long',
  timestamp_ns: 'long',
  timestamptz_ns: 'long',
  float: 'float',
  double: 'double',
  decimal: 'decimal',
  string: 'string',
  binary: 'binary',
  uuid: 'fixed',
  fixed: 'fixed',
};

// One shared object per parameterless kind: the mapping is looked up once per column, never per value.
const SIMPLE: { readonly [K in Exclude<PhysicalKind, 'decimal' | 'fixed'>]: PhysicalType } = {
  boolean: Object.freeze({ kind: 'boolean' }),
  int: Object.freeze({ kind: 'int' }),
  long: Object.freeze({ kind: 'long' }),
  float: Object.freeze({ kind: 'float' }),
  double: Object.freeze({ kind: 'double' }),
  string: Object.freeze({ kind: 'string' }),
  binary: Object.freeze({ kind: 'binary' }),
};

/** The physical kind of a type; struct, list and map are their own (nested) kinds. */
export function physicalKind(t: PrimitiveType): PhysicalKind;
export function physicalKind(t: IcebergType): PhysicalKind | NestedKind;
export function physicalKind(t: IcebergType): PhysicalKind | NestedKind {
  return t.kind === 'struct' || t.kind === 'list' || t.kind === 'map' ? t.kind : PHYSICAL_KIND[t.kind];
}

/** The physical type of a primitive: its kind, plus precision/scale for decimal and the width of fixed (uuid: 16). */
export function physicalType(t: PrimitiveType): PhysicalType;
export function physicalType(t: IcebergType): PhysicalType | { readonly kind: NestedKind };
export function physicalType(t: IcebergType): PhysicalType | { readonly kind: NestedKind } {
  switch (t.kind) {
    case 'decimal':
      return { kind: 'decimal', precision: t.precision, scale: t.scale };
    case 'uuid':
      return { kind: 'fixed', width: 16 };
    case 'fixed':
      return { kind: 'fixed', width: t.length };
    case 'struct':
    case 'list':
    case 'map':
      return { kind: t.kind };
    default:
      // Every primitive kind left maps to a parameterless physical kind (the cases above take the others).
      return SIMPLE[PHYSICAL_KIND[t.kind] as keyof typeof SIMPLE];
  }
}
