/**
 * The exactly-once check of the sink tests, by Kafka coordinates only (never a payload field): every
 * produced record (topic, partition, offset) is in the table exactly once, nothing else is, and no data
 * file was added twice across the snapshot history. The coordinates are read by PyIceberg from the
 * Kafka metadata columns the connector writes (`icefloe.tables.kafka-metadata-columns` with at least
 * topic, partition, offset; default prefix `_kafka_metadata_`); DuckDB counts the same rows.
 */
import assert from 'node:assert/strict';
import { readTable } from './readers.ts';
import type { ReaderArgs } from './readers.ts';

export interface Coordinates {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

export const coordinateKey = (c: Coordinates): string => `${c.topic}/${c.partition}/${c.offset}`;

export interface ExactlyOnceReport {
  readonly rows: number;
  readonly distinct: number;
  readonly missing: string[];
  readonly duplicates: string[];
  readonly unexpected: string[];
  readonly filesAddedTwice: string[];
  readonly snapshots: number;
}

export interface ExactlyOnceOptions {
  readonly catalog?: ReaderArgs['catalog'];
  readonly prefix?: string;
  /** Read this snapshot (e.g. a branch's head) instead of the current one. */
  readonly snapshotId?: bigint;
}

/** Reads the table's coordinates (current snapshot, or `snapshotId`) and file history and compares them with the produced set. */
export async function exactlyOnceReport(
  table: string,
  produced: Iterable<Coordinates>,
  options: ExactlyOnceOptions = {},
): Promise<ExactlyOnceReport> {
  const prefix = options.prefix ?? '_kafka_metadata_';
  const cols = [`${prefix}topic`, `${prefix}partition`, `${prefix}offset`];
  const base = { table, ...(options.catalog === undefined ? {} : { catalog: options.catalog }) };
  const read = await readTable({ ...base, columns: cols, ...(options.snapshotId === undefined ? {} : { snapshot_id: options.snapshotId }) });
  const rows = (read.rows ?? []).map((r) => ({ topic: String(r[cols[0] as string]), partition: Number(r[cols[1] as string]), offset: BigInt(String(r[cols[2] as string])) }));
  const expected = new Set<string>();
  for (const c of produced) expected.add(coordinateKey(c));
  const seen = new Map<string, number>();
  for (const r of rows) {
    const k = coordinateKey(r);
    seen.set(k, (seen.get(k) ?? 0) + 1);
  }
  const history = await readTable({ ...base, mode: 'history' });
  const added = (history['added'] as { file_path: string }[] | undefined) ?? [];
  const addCount = new Map<string, number>();
  for (const a of added) addCount.set(a.file_path, (addCount.get(a.file_path) ?? 0) + 1);
  return {
    rows: rows.length,
    distinct: seen.size,
    missing: [...expected].filter((k) => !seen.has(k)),
    duplicates: [...seen].filter(([, n]) => n > 1).map(([k]) => k),
    unexpected: [...seen.keys()].filter((k) => !expected.has(k)),
    filesAddedTwice: [...addCount].filter(([, n]) => n > 1).map(([p]) => p),
    snapshots: ((history['snapshots'] as unknown[] | undefined) ?? []).length,
  };
}

/** Asserts the report is clean, with the first offending coordinates in the message. */
export async function assertExactlyOnce(
  table: string,
  produced: Iterable<Coordinates>,
  options: ExactlyOnceOptions = {},
): Promise<ExactlyOnceReport> {
  const list = [...produced];
  const r = await exactlyOnceReport(table, list, options);
  const sample = (xs: string[]): string => xs.slice(0, 5).join(', ') + (xs.length > 5 ? ` … (${xs.length})` : '');
  assert.deepEqual(
    { missing: r.missing.length, duplicates: r.duplicates.length, unexpected: r.unexpected.length, filesAddedTwice: r.filesAddedTwice.length },
    { missing: 0, duplicates: 0, unexpected: 0, filesAddedTwice: 0 },
    `${table}: missing [${sample(r.missing)}], duplicated [${sample(r.duplicates)}], unexpected [${sample(r.unexpected)}], files added twice [${sample(r.filesAddedTwice)}]`,
  );
  assert.equal(r.rows, list.length, `${table}: row count`);
  return r;
}

/** DuckDB's row count of the table (REST catalog): a second, independent reader agrees on the total. */
export async function duckdbCount(table: string, column = '_kafka_metadata_offset'): Promise<number> {
  const read = await readTable({ table, engine: 'duckdb', columns: [column], catalog: { kind: 'rest' } });
  return (read.rows ?? []).length;
}
