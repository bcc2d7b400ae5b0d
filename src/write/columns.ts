/**
 * Column builders: the columnar append API a decoder writes into, one object per Iceberg field, obtained
 * once and reused for every record, row group and file. Values land in growable typed arrays (Arrow's
 * physical layout), so a sealed row group becomes Arrow data with `makeData` over views of these arrays,
 * without a per-record JS object anywhere.
 *
 * Owns: physical layout (typed arrays, UTF-8 bytes + Int32 offsets, fixed-width bytes, little-endian
 * Decimal128 words, validity bitmaps, list/map offsets), value checks a column can make cheaply (int32
 * range, int64 range, decimal precision, fixed width, UTF-8), truncation for `abortRecord`.
 * Must not: compute metrics (metrics.ts scans the sealed buffers) or know about files.
 *
 * Nulls: `appendNull()` on a required field is a DataError. When a struct is null, each child gets a
 * slot too (null if optional, an ignored placeholder if required) so every struct child stays row
 * aligned; a null or empty list/map adds no child slots. Nested values follow begin()/end():
 *   struct.begin(); child.append(...); ...; struct.end();   // end() nulls optional children left out
 *   list.begin(); list.element.append(...) x n; list.end();
 *   map.begin(); map.key.append(k); map.value.append(v) x n; map.end();
 *
 * This module is the entry point: `createColumn` picks the builder for a layout node by the physical kind
 * of its type (iceberg/physical.ts), and the classes are re-exported from where they live: column-base.ts
 * (what every column shares), column-primitives.ts, column-bytes.ts and column-nested.ts.
 */
import { physicalType } from '../iceberg/physical.ts';
import { BinaryColumn, FixedColumn, StringColumn } from './column-bytes.ts';
import { ListColumn, MapColumn, StructColumn } from './column-nested.ts';
import type { AnyColumn } from './column-nested.ts';
import { BooleanColumn, DecimalColumn, DoubleColumn, FloatColumn, IntColumn, LongColumn } from './column-primitives.ts';
import type { LayoutNode } from './layout.ts';

export { Column, countZeroBits } from './column-base.ts';
export type { ColumnKind } from './column-base.ts';
export { BinaryColumn, FixedColumn, StringColumn } from './column-bytes.ts';
export { completeChildren, ListColumn, MapColumn, StructColumn } from './column-nested.ts';
export type { AnyColumn } from './column-nested.ts';
export { BooleanColumn, DecimalColumn, DoubleColumn, FloatColumn, IntColumn, LongColumn } from './column-primitives.ts';

/** Builds the column tree for one layout node. */
export function createColumn(node: LayoutNode): AnyColumn {
  const t = physicalType(node.type);
  switch (t.kind) {
    case 'boolean':
      return new BooleanColumn(node);
    case 'int':
      return new IntColumn(node);
    case 'long':
      return new LongColumn(node);
    case 'float':
      return new FloatColumn(node);
    case 'double':
      return new DoubleColumn(node);
    case 'decimal':
      return new DecimalColumn(node, t.precision, t.scale);
    case 'string':
      return new StringColumn(node);
    case 'binary':
      return new BinaryColumn(node);
    case 'fixed':
      return new FixedColumn(node, t.width);
    case 'struct':
      return new StructColumn(node, node.children.map(createColumn));
    case 'list': {
      const [el] = node.children;
      if (el === undefined) throw new Error(`list ${node.path} has no element`);
      return new ListColumn(node, createColumn(el));
    }
    case 'map': {
      const [k, v] = node.children;
      if (k === undefined || v === undefined) throw new Error(`map ${node.path} has no key or value`);
      return new MapColumn(node, createColumn(k), createColumn(v));
    }
  }
}
