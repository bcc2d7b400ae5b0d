/**
 * Test helpers for the data generator: an order event as the row a table of any of its schemas holds, in
 * the logical-value convention of test/helpers/type-matrix.ts (longs and timestamps bigint µs, decimals
 * unscaled bigint, maps as [key, value] pairs), derived by walking the table's Iceberg schema, so one
 * function serves the Avro, Protobuf and Connect JSON tables alike.
 */
import type { OrderEvent } from '../../../tools/generate/orders.ts';
import type { IcebergType, Schema } from '../../../src/iceberg/types.ts';
import type { Row, Value } from '../write/helpers.ts';

function valueFor(type: IcebergType, v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (type.kind) {
    case 'struct': {
      const o = v as Record<string, unknown>;
      return Object.fromEntries(type.fields.map((f) => [f.name, valueFor(f.type, o[f.name])]));
    }
    case 'list':
      return (v as unknown[]).map((e) => valueFor(type.element, e));
    case 'map':
      return Object.entries(v as Record<string, unknown>).map(([k, x]) => [valueFor(type.key, k), valueFor(type.value, x)]);
    case 'int':
      return Number(v);
    case 'long':
    case 'decimal':
      return BigInt(v as number | bigint);
    case 'timestamptz':
    case 'timestamp':
      // Event times are epoch ms; the column holds µs.
      return BigInt(v as number) * 1000n;
    default:
      return v as Value;
  }
}

/** The row `table` should hold for `event` (fields the event lacks, such as v2's channel in v1 data, are null). */
export function expectedRow(table: Schema, event: OrderEvent): Row {
  return valueFor({ kind: 'struct', fields: table.fields }, event) as Row;
}
