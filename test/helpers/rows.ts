/**
 * Feeding logical rows (the type-matrix convention, test/helpers/type-matrix.ts) into the writer's
 * columnar API, exactly as a decoder would: one call per value, no row objects inside the writer.
 * Test code only: the sink's decoders append straight from the wire bytes.
 */
import type { IcebergType, NestedField } from '../../src/iceberg/types.ts';
import type {
  BinaryColumn,
  BooleanColumn,
  DecimalColumn,
  DoubleColumn,
  FixedColumn,
  FloatColumn,
  IntColumn,
  ListColumn,
  LongColumn,
  MapColumn,
  RecordAppender,
  StringColumn,
  StructColumn,
} from '../../src/write/index.ts';
import type { Row, Value } from './type-matrix.ts';

/** Appends one value of `type` to the column of field `id` (recursively for nested values). */
export function appendValue(a: RecordAppender, id: number, type: IcebergType, v: Value): void {
  const col = a.column(id);
  if (v === null) {
    col.appendNull();
    return;
  }
  switch (type.kind) {
    case 'boolean':
      (col as BooleanColumn).append(v as boolean);
      return;
    case 'int':
    case 'date':
      (col as IntColumn).append(v as number);
      return;
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      (col as LongColumn).append(v as bigint);
      return;
    case 'float':
      (col as FloatColumn).append(v as number);
      return;
    case 'double':
      (col as DoubleColumn).append(v as number);
      return;
    case 'decimal':
      (col as DecimalColumn).appendUnscaled(v as bigint);
      return;
    case 'string':
      (col as StringColumn).append(v as string);
      return;
    case 'binary':
      (col as BinaryColumn).append(v as Uint8Array);
      return;
    case 'uuid':
    case 'fixed':
      (col as FixedColumn).append(v as Uint8Array);
      return;
    case 'struct': {
      const s = col as StructColumn;
      const o = v as Record<string, Value>;
      s.begin();
      for (const f of type.fields) if (f.name in o) appendValue(a, f.id, f.type, o[f.name] ?? null);
      s.end();
      return;
    }
    case 'list': {
      const l = col as ListColumn;
      l.begin();
      for (const e of v as Value[]) appendValue(a, type.elementId, type.element, e);
      l.end();
      return;
    }
    case 'map': {
      const m = col as MapColumn;
      m.begin();
      for (const [k, val] of v as [Value, Value][]) {
        appendValue(a, type.keyId, type.key, k);
        appendValue(a, type.valueId, type.value, val);
      }
      m.end();
      return;
    }
  }
}

/** Appends a whole row (a field absent from the object is left out, as a decoder of an older schema would). */
export function appendRow(a: RecordAppender, fields: readonly NestedField[], row: Row): boolean {
  for (const f of fields) if (f.name in row) appendValue(a, f.id, f.type, row[f.name] ?? null);
  return a.endRecord();
}

