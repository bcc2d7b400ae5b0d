/**
 * The write port: columnar record appending, rolling Parquet data files with Iceberg field ids and
 * metrics, and the per-task memory budget. Callers import from here, not from the modules behind it.
 */
export { buildLayout, deepestField, FIELD_ID_KEY, MAX_FIELD_DEPTH } from './layout.ts';
export type { ColumnLayout, LayoutNode } from './layout.ts';
export { RecordAppender } from './appender.ts';
export type { SealedBatch } from './appender.ts';
export {
  BinaryColumn,
  BooleanColumn,
  Column,
  DecimalColumn,
  DoubleColumn,
  FixedColumn,
  FloatColumn,
  IntColumn,
  ListColumn,
  LongColumn,
  MapColumn,
  StringColumn,
  StructColumn,
} from './columns.ts';
export type { AnyColumn, ColumnKind } from './columns.ts';
export { DataFileWriter } from './writer.ts';
export type { DataFileWriterOptions, WriterMetrics } from './writer.ts';
export { WriteMemoryBudget } from './budget.ts';
export type { BudgetMetrics, PressurePolicy } from './budget.ts';
export { DEFAULT_WRITE_CONFIG, resolveWriteConfig, unknownMetricsColumns } from './config.ts';
export type { WriteConfig } from './config.ts';
export { wasmMemoryBytes } from './parquet.ts';
export type { ParquetCodec } from './parquet.ts';
