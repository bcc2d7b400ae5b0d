/**
 * Trimming one data file's metrics so that its announcement fits one control record (events.ts
 * `encodeAnnouncement` splits an announcement between files, but one file's encoded metrics can exceed a
 * record on their own: thousands of columns, or long bounds under `write.metadata.metrics.default=full`).
 *
 * Metrics are hints for readers, never data: a column without bounds is not pruned by its bounds, a column
 * without counts is not pruned by its counts, and every scan stays correct (the spec makes every metric
 * optional, per column). So the file is kept and its metrics are given up in this order, as far as needed:
 *   1. lower and upper bounds, the widest columns first (a column's two bounds go together), so the
 *      columns whose bounds are cheapest keep them;
 *   2. whole per-column count maps: column sizes (no reader prunes by them), NaN counts, value counts,
 *      null counts (the last: `IS NULL` pruning needs them).
 * Path, format, partition, record count, size, content, spec id, split offsets, key metadata, equality ids,
 * sort order and referenced file are never touched.
 *
 * Owns: that order, the measurement loop, and the wording of the warning the task logs. Must not: log, do
 * I/O, or know the record format (the caller passes the size of a file's encoding).
 */
import type { DataFile } from '../iceberg/data-file.ts';

/** What trimming did to one file. */
export interface MetricsTrim {
  readonly filePath: string;
  /** The file as it now fits, or as far as trimming got (`fits` false: even without metrics it does not). */
  readonly file: DataFile;
  readonly fits: boolean;
  readonly bytesBefore: number;
  readonly bytesAfter: number;
  /** Columns whose bounds were dropped, and those that kept them. */
  readonly boundsDropped: number;
  readonly boundsKept: number;
  /** Whole count maps dropped, in the order given up. */
  readonly mapsDropped: readonly CountMap[];
}

/** The warning a task logs once per announcement whose files were trimmed (with `trimmedFields`). */
export const TRIMMED_MESSAGE = 'data file metrics trimmed to fit one control record: readers prune less by them, every row is kept';

/** The log fields of that warning: the table, how many files, and the first few files' trims. */
export function trimmedFields(table: { readonly namespace: readonly string[]; readonly name: string }, trims: readonly MetricsTrim[]): Record<string, unknown> {
  return {
    table: [...table.namespace, table.name].join('.'),
    files: trims.length,
    trimmed: trims.slice(0, 5).map((t) => ({
      path: t.filePath,
      bytesBefore: t.bytesBefore,
      bytesAfter: t.bytesAfter,
      boundsDropped: t.boundsDropped,
      boundsKept: t.boundsKept,
      ...(t.mapsDropped.length === 0 ? {} : { mapsDropped: t.mapsDropped }),
    })),
  };
}

/** The count maps, in the order they are given up. */
const COUNT_MAPS = ['columnSizes', 'nanValueCounts', 'valueCounts', 'nullValueCounts'] as const;
type CountMap = (typeof COUNT_MAPS)[number];

/**
 * The file with as few metrics dropped as makes its encoding (`sizeOf`) at most `budget` bytes; unchanged
 * (no trim) when it fits already.
 */
export function trimFileMetrics(file: DataFile, budget: number, sizeOf: (f: DataFile) => number): MetricsTrim {
  const bytesBefore = sizeOf(file);
  const ids = boundIds(file);
  const result = (f: DataFile, size: number, dropped: number, maps: CountMap[]): MetricsTrim => ({
    filePath: file.filePath,
    file: f,
    fits: size <= budget,
    bytesBefore,
    bytesAfter: size,
    boundsDropped: dropped,
    boundsKept: ids.length - dropped,
    mapsDropped: maps,
  });
  if (bytesBefore <= budget) return result(file, bytesBefore, 0, []);

  // 1. Bounds, widest first. Each pass drops as many columns as the estimate says are needed, then measures
  // (the estimate is an encoding's base64 text and its JSON punctuation): one or two passes in practice.
  const widest = [...ids].sort((x, y) => y.width - x.width || x.id - y.id);
  let current = file;
  let size = bytesBefore;
  let dropped = 0;
  while (size > budget && dropped < widest.length) {
    let saved = 0;
    const from = dropped;
    while (dropped < widest.length && (dropped === from || saved < size - budget)) saved += (widest[dropped++] as BoundWidth).encoded;
    const gone = new Set(widest.slice(0, dropped).map((w) => w.id));
    current = withBounds(file, gone);
    size = sizeOf(current);
  }

  // 2. Whole count maps.
  const maps: CountMap[] = [];
  for (const key of COUNT_MAPS) {
    if (size <= budget) break;
    if (current[key] === undefined) continue;
    current = withoutMap(current, key);
    maps.push(key);
    size = sizeOf(current);
  }
  return result(current, size, dropped, maps);
}

interface BoundWidth {
  readonly id: number;
  /** Lower plus upper bound bytes. */
  readonly width: number;
  /** Their estimated share of the encoding: base64 text plus `[id,""],` around each. */
  readonly encoded: number;
}

function boundIds(f: DataFile): BoundWidth[] {
  const ids = new Set([...(f.lowerBounds?.keys() ?? []), ...(f.upperBounds?.keys() ?? [])]);
  return [...ids].map((id) => {
    const sizes = [f.lowerBounds?.get(id), f.upperBounds?.get(id)].filter((b): b is Uint8Array => b !== undefined).map((b) => b.byteLength);
    const encoded = sizes.reduce((n, s) => n + 4 * Math.ceil(s / 3) + String(id).length + 6, 0);
    return { id, width: sizes.reduce((n, s) => n + s, 0), encoded };
  });
}

/** The file without the bounds of the columns in `gone` (a map left empty is dropped). */
function withBounds(f: DataFile, gone: ReadonlySet<number>): DataFile {
  const keep = (m: ReadonlyMap<number, Uint8Array> | undefined): ReadonlyMap<number, Uint8Array> | undefined => {
    if (m === undefined) return undefined;
    const kept = new Map([...m].filter(([id]) => !gone.has(id)));
    return kept.size === 0 ? undefined : kept;
  };
  const { lowerBounds, upperBounds, ...rest } = f;
  const lower = keep(lowerBounds);
  const upper = keep(upperBounds);
  return { ...rest, ...(lower === undefined ? {} : { lowerBounds: lower }), ...(upper === undefined ? {} : { upperBounds: upper }) };
}

function withoutMap(f: DataFile, key: CountMap): DataFile {
  const out: { -readonly [K in keyof DataFile]?: DataFile[K] } = { ...f };
  delete out[key];
  return out as DataFile;
}
