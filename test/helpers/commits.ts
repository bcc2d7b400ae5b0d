/**
 * Commits for catalog and committer tests.
 * - `emptyAppend`: a light snapshot carrying `icefloe.commit-id`, with the requirements a real append has
 *   (assert-table-uuid + assert-ref-snapshot-id on main) and no data: for protocol tests (catalog answers,
 *   conflicts, lost answers). With a store, its (empty, valid) manifest list is written so readers can scan.
 * - `rowsAppendPlan`: a real append — Parquet data file from the write stage, manifests and manifest list
 *   from src/iceberg/append.ts — for tests that count rows.
 */
import { randomUUID } from 'node:crypto';
import { buildAppendCommit, parentManifestListLocation, writeAppendManifests } from '../../src/iceberg/append.ts';
import type { AppendManifests } from '../../src/iceberg/append.ts';
import { snapshotIdFromUuid } from '../../src/iceberg/metadata.ts';
import { readManifestList, writeManifestList } from '../../src/iceberg/manifest-list.ts';
import { DataFileWriter, buildLayout } from '../../src/write/index.ts';
import { COMMIT_ID_KEY } from '../../src/commit/commit-retry.ts';
import type { CommitPlan, CommitRequest } from '../../src/commit/commit-retry.ts';
import { refSnapshotId } from '../../src/commit/model.ts';
import type { LoadedTable } from '../../src/commit/port.ts';
import type { ObjectStore } from '../../src/upload/port.ts';

export async function emptyAppend(table: LoadedTable, commitId: string, store?: ObjectStore, now: number = Date.now()): Promise<CommitRequest> {
  const md = table.metadata;
  const parent = refSnapshotId(md, 'main');
  const snapshotId = snapshotIdFromUuid(randomUUID());
  const sequenceNumber = md.lastSequenceNumber + 1n;
  const manifestList = `${md.location}/metadata/snap-${snapshotId}-1-${randomUUID()}.avro`;
  if (store !== undefined) {
    const { bytes } = writeManifestList({ snapshotId, parentSnapshotId: parent ?? null, sequenceNumber, manifests: [] });
    await store.put(manifestList, bytes);
  }
  return {
    requirements: [
      { type: 'assert-table-uuid', uuid: md.tableUuid },
      { type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: parent ?? null },
    ],
    updates: [
      {
        action: 'add-snapshot',
        snapshot: {
          snapshotId,
          ...(parent === undefined ? {} : { parentSnapshotId: parent }),
          sequenceNumber,
          timestampMs: Math.max(now, md.lastUpdatedMs + 1),
          manifestList,
          summary: {
            operation: 'append',
            [COMMIT_ID_KEY]: commitId,
            'added-data-files': '0',
            'added-records': '0',
            'total-data-files': '0',
            'total-records': '0',
            'total-files-size': '0',
            'total-delete-files': '0',
            'total-position-deletes': '0',
            'total-equality-deletes': '0',
          },
          schemaId: md.currentSchemaId,
        },
      },
      { action: 'set-snapshot-ref', refName: 'main', ref: { snapshotId, type: 'branch' } },
    ],
  };
}

/** Snapshots of main, oldest first, with their commit ids. */
export function commitIds(table: LoadedTable): (string | undefined)[] {
  const out: (string | undefined)[] = [];
  let id = refSnapshotId(table.metadata, 'main');
  const byId = new Map(table.metadata.snapshots.map((s) => [s.snapshotId, s]));
  while (id !== undefined) {
    const s = byId.get(id);
    if (s === undefined) break;
    out.unshift(s.summary[COMMIT_ID_KEY]);
    id = s.parentSnapshotId;
  }
  return out;
}

/**
 * A real append of `ids` as the rows of a one-column (`id long`, field id 1) table: a Parquet data file
 * written by the write stage (src/write DataFileWriter) through `store`, its manifest and, per attempt, a
 * manifest list built by src/iceberg/append.ts on the freshly loaded table, with `icefloe.commit-id` in the
 * summary. The data file and manifest are written once; every attempt reuses them, as the committer will.
 */
export function rowsAppendPlan(store: ObjectStore, commitId: string, ids: readonly bigint[]): CommitPlan {
  let phase1: Promise<AppendManifests> | undefined;
  const writeOnce = (table: LoadedTable): Promise<AppendManifests> => {
    phase1 ??= (async () => {
      const md = table.metadata;
      const schema = md.schemas.find((s) => s.schemaId === md.currentSchemaId);
      if (schema === undefined) throw new Error('no current schema');
      const writer = new DataFileWriter({
        layout: buildLayout(schema),
        store,
        newLocation: () => `${md.location}/data/${randomUUID()}.parquet`,
        partition: [],
        specId: md.defaultSpecId,
      });
      const idField = schema.fields[0]?.id ?? 1;
      for (const v of ids) {
        writer.appender.long(idField).append(v);
        writer.appender.endRecord();
      }
      const files = await writer.complete();
      await writer.close();
      const manifests = writeAppendManifests({ base: md, files, snapshotId: snapshotIdFromUuid(randomUUID()), commitUuid: randomUUID() });
      for (const out of manifests.outputs) await store.put(out.path, out.bytes);
      return manifests;
    })();
    return phase1;
  };
  return {
    commitId,
    async build(table, attempt) {
      const manifests = await writeOnce(table);
      const parentList = parentManifestListLocation(table.metadata);
      const parentManifests = parentList === undefined ? [] : readManifestList(await store.get(parentList)).manifests;
      const commit = buildAppendCommit({
        base: table.metadata,
        manifests,
        parentManifests,
        attempt: attempt - 1,
        nowMs: Date.now(),
        summaryExtra: { [COMMIT_ID_KEY]: commitId },
      });
      await store.put(commit.manifestList.path, commit.manifestList.bytes);
      return { requirements: commit.requirements, updates: commit.updates };
    },
  };
}
