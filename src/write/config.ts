/**
 * Writer settings, resolved from Iceberg table properties (the Java names, so tables written by Spark or
 * the Apache sink behave the same here) plus a few `icefloe.write.*` keys for what only a JS writer needs.
 *
 * Table properties honoured:
 *   write.target-file-size-bytes            roll to a new file at this size (default 128 MiB here)
 *   write.parquet.row-group-size-bytes      encoded size a row group aims for (default 128 MiB)
 *   write.parquet.page-size-bytes           data page size limit (default 1 MiB)
 *   write.parquet.dict-size-bytes           dictionary page size limit (default 2 MiB)
 *   write.parquet.compression-codec         zstd (default), snappy, gzip, brotli, lz4 (= LZ4_RAW), uncompressed
 *   write.metadata.metrics.default          none | counts | truncate(N) | full (default truncate(16))
 *   write.metadata.metrics.column.<name>    per column, by dotted name
 * Accepted but not applied (reported in `ignored`): write.parquet.compression-level (parquet-wasm has no
 * level setting; arrow-rs's default zstd level 1 is used), write.parquet.page-row-limit.
 * Icefloe keys:
 *   icefloe.write.row-group-buffer-bytes    cap on the raw bytes buffered per row group (default 32 MiB);
 *                                           bounds JS and wasm memory per writer: encoding a row group
 *                                           takes about 3× its raw bytes in parquet-wasm's memory, which
 *                                           keeps its largest size (docs/benchmarks.md, memory)
 *   icefloe.write.row-group-rows            cap on rows per row group (default 1,000,000)
 *   icefloe.write.parquet.statistics        footer statistics: none | chunk | page (default page)
 *   icefloe.write.metadata.metrics.uuid-bounds  true: uuid columns get bounds (manifest lower/upper bounds
 *                                           and Parquet statistics) like other columns; default false:
 *                                           value and null counts only. Java Iceberg compares uuids as
 *                                           two signed longs (apache/iceberg#14216), not as the unsigned
 *                                           bytes the spec and Parquet order them by, so Spark, Trino
 *                                           and Flink prune files and row groups that hold matching
 *                                           rows whenever a file's uuids straddle 80000000-…: without
 *                                           bounds they cannot prune, and never miss a row.
 */
import { ConfigError } from '../core/errors.ts';
import type { ColumnLayout, LayoutNode } from './layout.ts';
import { DEFAULT_METRICS_MODE, parseMetricsMode } from '../iceberg/bounds.ts';
import type { MetricsMode } from '../iceberg/bounds.ts';
import { parseCodec } from './parquet.ts';
import type { ParquetCodec, ParquetStatistics } from './parquet.ts';

const MiB = 1024 * 1024;

export interface WriteConfig {
  readonly targetFileSizeBytes: number;
  readonly rowGroupSizeBytes: number;
  readonly rowGroupBufferBytes: number;
  readonly rowGroupRows: number;
  readonly pageSizeBytes: number;
  readonly dictSizeBytes: number;
  readonly codec: ParquetCodec;
  readonly statistics: ParquetStatistics;
  readonly metricsDefault: MetricsMode;
  /** By dotted column name (`address.city`). */
  readonly metricsColumns: ReadonlyMap<string, MetricsMode>;
  /** icefloe.write.metadata.metrics.uuid-bounds: bounds and Parquet statistics for uuid columns. */
  readonly uuidBounds: boolean;
}

export const UUID_BOUNDS_KEY = 'icefloe.write.metadata.metrics.uuid-bounds';

export const DEFAULT_WRITE_CONFIG: WriteConfig = {
  targetFileSizeBytes: 128 * MiB,
  rowGroupSizeBytes: 128 * MiB,
  rowGroupBufferBytes: 32 * MiB,
  rowGroupRows: 1_000_000,
  pageSizeBytes: 1 * MiB,
  dictSizeBytes: 2 * MiB,
  codec: 'zstd',
  statistics: 'page',
  metricsDefault: DEFAULT_METRICS_MODE,
  metricsColumns: new Map(),
  uuidBounds: false,
};

const IGNORED = ['write.parquet.compression-level', 'write.parquet.page-row-limit'];

function positive(props: Readonly<Record<string, string>>, key: string, fallback: number): number {
  const raw = props[key];
  if (raw === undefined) return fallback;
  const v = Number(raw.trim());
  if (!Number.isSafeInteger(v) || v <= 0) throw new ConfigError(`${key} must be a positive integer, got ${JSON.stringify(raw)}`, { context: { key } });
  return v;
}

/** Resolves the writer settings from table properties; `ignored` lists keys present but not applied. */
export function resolveWriteConfig(props: Readonly<Record<string, string>> = {}): { config: WriteConfig; ignored: string[] } {
  const metricsColumns = new Map<string, MetricsMode>();
  const prefix = 'write.metadata.metrics.column.';
  for (const [k, v] of Object.entries(props)) {
    if (k.startsWith(prefix)) metricsColumns.set(k.slice(prefix.length), parseMetricsMode(v));
  }
  const stats = props['icefloe.write.parquet.statistics'];
  if (stats !== undefined && stats !== 'none' && stats !== 'chunk' && stats !== 'page') {
    throw new ConfigError(`icefloe.write.parquet.statistics must be none, chunk or page, got ${JSON.stringify(stats)}`);
  }
  const uuidBounds = props[UUID_BOUNDS_KEY]?.trim().toLowerCase();
  if (uuidBounds !== undefined && uuidBounds !== 'true' && uuidBounds !== 'false') {
    throw new ConfigError(`${UUID_BOUNDS_KEY} must be true or false, got ${JSON.stringify(props[UUID_BOUNDS_KEY])}`, { context: { key: UUID_BOUNDS_KEY } });
  }
  const metricsDefault = props['write.metadata.metrics.default'];
  const codec = props['write.parquet.compression-codec'];
  const config: WriteConfig = {
    targetFileSizeBytes: positive(props, 'write.target-file-size-bytes', DEFAULT_WRITE_CONFIG.targetFileSizeBytes),
    rowGroupSizeBytes: positive(props, 'write.parquet.row-group-size-bytes', DEFAULT_WRITE_CONFIG.rowGroupSizeBytes),
    rowGroupBufferBytes: positive(props, 'icefloe.write.row-group-buffer-bytes', DEFAULT_WRITE_CONFIG.rowGroupBufferBytes),
    rowGroupRows: positive(props, 'icefloe.write.row-group-rows', DEFAULT_WRITE_CONFIG.rowGroupRows),
    pageSizeBytes: positive(props, 'write.parquet.page-size-bytes', DEFAULT_WRITE_CONFIG.pageSizeBytes),
    dictSizeBytes: positive(props, 'write.parquet.dict-size-bytes', DEFAULT_WRITE_CONFIG.dictSizeBytes),
    codec: codec === undefined ? DEFAULT_WRITE_CONFIG.codec : parseCodec(codec),
    statistics: stats ?? DEFAULT_WRITE_CONFIG.statistics,
    metricsDefault: metricsDefault === undefined ? DEFAULT_WRITE_CONFIG.metricsDefault : parseMetricsMode(metricsDefault),
    metricsColumns,
    uuidBounds: uuidBounds === 'true',
  };
  return { config, ignored: IGNORED.filter((k) => props[k] !== undefined) };
}

/** The metrics mode of a leaf: its own column setting, else the table default; a uuid's at most counts unless uuid bounds are on. */
export function metricsModeOf(config: WriteConfig, node: LayoutNode): MetricsMode {
  const mode = config.metricsColumns.get(node.path) ?? config.metricsDefault;
  return node.type.kind === 'uuid' && !config.uuidBounds && mode.kind !== 'none' ? COUNTS : mode;
}

const COUNTS: MetricsMode = { kind: 'counts' };

/**
 * The Parquet statistics of a file: the configured level, with none for uuid columns unless uuid bounds
 * are on (Java's row-group filter misreads them like manifest bounds). parquet-wasm can name only
 * top-level columns (its column path is one string), so a uuid inside a struct turns statistics off for
 * the whole file; a uuid under a list or map cannot be filtered on, so its statistics stay.
 */
export function parquetStatistics(config: WriteConfig, layout: ColumnLayout): { statistics: ParquetStatistics; offColumns: readonly string[] } {
  if (config.uuidBounds || config.statistics === 'none') return { statistics: config.statistics, offColumns: [] };
  const uuids = layout.leaves.filter((n) => n.type.kind === 'uuid' && !n.inRepeated);
  if (uuids.some((n) => n.path !== n.name)) return { statistics: 'none', offColumns: [] };
  return { statistics: config.statistics, offColumns: uuids.map((n) => n.name) };
}

/** Column names in `write.metadata.metrics.column.*` that name no column of the layout. */
export function unknownMetricsColumns(config: WriteConfig, layout: ColumnLayout): string[] {
  return [...config.metricsColumns.keys()].filter((name) => !layout.byPath.has(name));
}
