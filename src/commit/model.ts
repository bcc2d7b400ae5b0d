/**
 * The Iceberg model as commit/ sees it: the one module in this folder that imports src/iceberg/, so that
 * the catalogs and the committer depend on one short list of names (metadata.ts, metadata-json.ts,
 * updates.ts, apply-updates.ts, partition-spec.ts, schema.ts), plus the one helper the model does not have.
 */
import { MAIN_BRANCH } from '../iceberg/metadata.ts';
import type { TableMetadata } from '../iceberg/metadata.ts';

export {
  MAIN_BRANCH,
  UNSORTED_ORDER,
  ancestors,
  commitBaseId,
  metadataFilePath,
  newTableMetadata,
  parseMetadataVersion,
  snapshotById,
} from '../iceberg/metadata.ts';
export { serializeTableMetadata, sortOrderToJson, tableMetadataFromJson } from '../iceberg/metadata-json.ts';
export type { Snapshot, SnapshotRef, SortOrder, TableMetadata } from '../iceberg/metadata.ts';
export { commitUpdates } from '../iceberg/apply-updates.ts';
export { requirementToJson, updateToJson } from '../iceberg/updates.ts';
export type { TableRequirement, TableUpdate } from '../iceberg/updates.ts';
export { partitionSpecToJson, unpartitionedSpec } from '../iceberg/partition-spec.ts';
export type { PartitionSpec } from '../iceberg/partition-spec.ts';
export { schemaToJson } from '../iceberg/schema.ts';
export type { Schema } from '../iceberg/types.ts';

/** The snapshot id a ref points at (main falls back to current-snapshot-id, as v1 documents have no refs). */
export function refSnapshotId(md: TableMetadata, ref: string): bigint | undefined {
  const id = md.refs[ref]?.snapshotId ?? (ref === MAIN_BRANCH ? md.currentSnapshotId : null);
  return id === null ? undefined : id;
}
