/**
 * Snapshot summaries (spec "Snapshots" summary; reference iceberg-writer.md §1.3) computed as Java's
 * `SnapshotSummary.Builder` + `SnapshotProducer.summary` do: added/removed counts for this commit's files,
 * `changed-partition-count`, manifest counts, and `total-*` values carried from the parent's summary.
 *
 * Totals: with no parent snapshot they start at 0; when the parent's summary lacks a total (another
 * writer did not record it, or it is not a number) ours is omitted rather than guessed.
 *
 * Owns: the summary map. Must not: do I/O. Caller-supplied extra properties (engine name, Kafka control
 * positions, commit id) are copied in, but may not overwrite a key this module computes (ConfigError).
 */
import { ConfigError } from '../core/errors.ts';
import { toHex } from './bytes.ts';
import { FileContent, type DataFile } from './data-file.ts';
import type { SnapshotSummary } from './metadata.ts';

export type SnapshotOperation = 'append' | 'replace' | 'overwrite' | 'delete';

export const SummaryKeys = {
  ADDED_DATA_FILES: 'added-data-files',
  DELETED_DATA_FILES: 'deleted-data-files',
  TOTAL_DATA_FILES: 'total-data-files',
  ADDED_DELETE_FILES: 'added-delete-files',
  ADDED_EQ_DELETE_FILES: 'added-equality-delete-files',
  REMOVED_EQ_DELETE_FILES: 'removed-equality-delete-files',
  ADDED_POS_DELETE_FILES: 'added-position-delete-files',
  REMOVED_POS_DELETE_FILES: 'removed-position-delete-files',
  REMOVED_DELETE_FILES: 'removed-delete-files',
  TOTAL_DELETE_FILES: 'total-delete-files',
  ADDED_RECORDS: 'added-records',
  DELETED_RECORDS: 'deleted-records',
  TOTAL_RECORDS: 'total-records',
  ADDED_FILE_SIZE: 'added-files-size',
  REMOVED_FILE_SIZE: 'removed-files-size',
  TOTAL_FILE_SIZE: 'total-files-size',
  ADDED_POS_DELETES: 'added-position-deletes',
  REMOVED_POS_DELETES: 'removed-position-deletes',
  TOTAL_POS_DELETES: 'total-position-deletes',
  ADDED_EQ_DELETES: 'added-equality-deletes',
  REMOVED_EQ_DELETES: 'removed-equality-deletes',
  TOTAL_EQ_DELETES: 'total-equality-deletes',
  CHANGED_PARTITION_COUNT: 'changed-partition-count',
  MANIFESTS_CREATED: 'manifests-created',
  MANIFESTS_KEPT: 'manifests-kept',
  MANIFESTS_REPLACED: 'manifests-replaced',
} as const;

export interface SummaryInput {
  readonly operation: SnapshotOperation;
  /** The parent (branch head) snapshot's summary; `undefined` when there is no parent snapshot (totals
   *  start at 0); pass `{}` for a parent that has no summary (totals are then omitted). */
  readonly parentSummary: SnapshotSummary | undefined;
  readonly addedFiles?: readonly DataFile[];
  readonly removedFiles?: readonly DataFile[];
  /** Manifest counts of the new snapshot (Java `buildManifestCountSummary`); omitted when undefined. */
  readonly manifestsCreated?: number;
  readonly manifestsKept?: number;
  readonly manifestsReplaced?: number;
  /** Extra properties (engine-name, icefloe.*). */
  readonly extra?: Readonly<Record<string, string>>;
}

const COMPUTED = new Set<string>(['operation', ...Object.values(SummaryKeys)]);

interface Metrics {
  size: bigint;
  files: bigint;
  records: bigint;
  deleteFiles: bigint;
  eqDeleteFiles: bigint;
  posDeleteFiles: bigint;
  posDeletes: bigint;
  eqDeletes: bigint;
}

function metricsOf(files: readonly DataFile[]): Metrics {
  const m: Metrics = { size: 0n, files: 0n, records: 0n, deleteFiles: 0n, eqDeleteFiles: 0n, posDeleteFiles: 0n, posDeletes: 0n, eqDeletes: 0n };
  for (const f of files) {
    m.size += f.fileSizeInBytes;
    if (f.content === FileContent.DATA) {
      m.files++;
      m.records += f.recordCount;
    } else if (f.content === FileContent.POSITION_DELETES) {
      m.deleteFiles++;
      m.posDeleteFiles++;
      m.posDeletes += f.recordCount;
    } else {
      m.deleteFiles++;
      m.eqDeleteFiles++;
      m.eqDeletes += f.recordCount;
    }
  }
  return m;
}

function partitionKey(f: DataFile): string {
  return (
    `${f.specId}|` +
    f.partition
      .map((v) => (v === null ? 'null' : v instanceof Uint8Array ? `0x${toHex(v)}` : typeof v === 'bigint' ? `${v}n` : `${typeof v}:${String(v)}`))
      .join('/')
  );
}

/** Computes the summary (including `operation`, which comes first). */
export function computeSnapshotSummary(input: SummaryInput): Record<string, string> {
  const out: Record<string, string> = { operation: input.operation };
  for (const [k, v] of Object.entries(input.extra ?? {})) {
    if (COMPUTED.has(k)) throw new ConfigError(`snapshot summary property ${k} is computed and cannot be supplied`);
    out[k] = v;
  }
  if (input.manifestsCreated !== undefined) out[SummaryKeys.MANIFESTS_CREATED] = String(input.manifestsCreated);
  if (input.manifestsKept !== undefined) out[SummaryKeys.MANIFESTS_KEPT] = String(input.manifestsKept);
  if (input.manifestsReplaced !== undefined) out[SummaryKeys.MANIFESTS_REPLACED] = String(input.manifestsReplaced);

  const added = input.addedFiles ?? [];
  const removed = input.removedFiles ?? [];
  const a = metricsOf(added);
  const r = metricsOf(removed);
  const setIf = (cond: boolean, key: string, v: bigint): void => {
    if (cond) out[key] = v.toString();
  };
  // Java UpdateMetrics.addTo order.
  setIf(a.files > 0n, SummaryKeys.ADDED_DATA_FILES, a.files);
  setIf(r.files > 0n, SummaryKeys.DELETED_DATA_FILES, r.files);
  setIf(a.eqDeleteFiles > 0n, SummaryKeys.ADDED_EQ_DELETE_FILES, a.eqDeleteFiles);
  setIf(r.eqDeleteFiles > 0n, SummaryKeys.REMOVED_EQ_DELETE_FILES, r.eqDeleteFiles);
  setIf(a.posDeleteFiles > 0n, SummaryKeys.ADDED_POS_DELETE_FILES, a.posDeleteFiles);
  setIf(r.posDeleteFiles > 0n, SummaryKeys.REMOVED_POS_DELETE_FILES, r.posDeleteFiles);
  setIf(a.deleteFiles > 0n, SummaryKeys.ADDED_DELETE_FILES, a.deleteFiles);
  setIf(r.deleteFiles > 0n, SummaryKeys.REMOVED_DELETE_FILES, r.deleteFiles);
  setIf(a.records > 0n, SummaryKeys.ADDED_RECORDS, a.records);
  setIf(r.records > 0n, SummaryKeys.DELETED_RECORDS, r.records);
  setIf(a.size > 0n, SummaryKeys.ADDED_FILE_SIZE, a.size);
  setIf(r.size > 0n, SummaryKeys.REMOVED_FILE_SIZE, r.size);
  setIf(a.posDeletes > 0n, SummaryKeys.ADDED_POS_DELETES, a.posDeletes);
  setIf(r.posDeletes > 0n, SummaryKeys.REMOVED_POS_DELETES, r.posDeletes);
  setIf(a.eqDeletes > 0n, SummaryKeys.ADDED_EQ_DELETES, a.eqDeletes);
  setIf(r.eqDeletes > 0n, SummaryKeys.REMOVED_EQ_DELETES, r.eqDeletes);
  const partitions = new Set([...added, ...removed].map(partitionKey));
  out[SummaryKeys.CHANGED_PARTITION_COUNT] = String(partitions.size);

  const previous: SnapshotSummary =
    input.parentSummary ??
    ({
      [SummaryKeys.TOTAL_RECORDS]: '0',
      [SummaryKeys.TOTAL_FILE_SIZE]: '0',
      [SummaryKeys.TOTAL_DATA_FILES]: '0',
      [SummaryKeys.TOTAL_DELETE_FILES]: '0',
      [SummaryKeys.TOTAL_POS_DELETES]: '0',
      [SummaryKeys.TOTAL_EQ_DELETES]: '0',
    } as const);
  const total = (totalKey: string, addedKey: string, removedKey: string): void => {
    const prev = previous[totalKey];
    if (prev === undefined || !/^-?\d+$/.test(prev)) return;
    let n = BigInt(prev);
    const addedV = out[addedKey];
    if (n >= 0n && addedV !== undefined) n += BigInt(addedV);
    const removedV = out[removedKey];
    if (n >= 0n && removedV !== undefined) n -= BigInt(removedV);
    if (n >= 0n) out[totalKey] = n.toString();
  };
  total(SummaryKeys.TOTAL_RECORDS, SummaryKeys.ADDED_RECORDS, SummaryKeys.DELETED_RECORDS);
  total(SummaryKeys.TOTAL_FILE_SIZE, SummaryKeys.ADDED_FILE_SIZE, SummaryKeys.REMOVED_FILE_SIZE);
  total(SummaryKeys.TOTAL_DATA_FILES, SummaryKeys.ADDED_DATA_FILES, SummaryKeys.DELETED_DATA_FILES);
  total(SummaryKeys.TOTAL_DELETE_FILES, SummaryKeys.ADDED_DELETE_FILES, SummaryKeys.REMOVED_DELETE_FILES);
  total(SummaryKeys.TOTAL_POS_DELETES, SummaryKeys.ADDED_POS_DELETES, SummaryKeys.REMOVED_POS_DELETES);
  total(SummaryKeys.TOTAL_EQ_DELETES, SummaryKeys.ADDED_EQ_DELETES, SummaryKeys.REMOVED_EQ_DELETES);
  return out;
}
