/**
 * Fast append (reference iceberg-writer.md §1.8; Java `FastAppend`), pure: given the table metadata, the
 * new data files and ids supplied by the caller, produce the manifest bytes, the manifest list bytes,
 * the snapshot, and the REST updates and requirements of the commit.
 *
 * Two phases, so a conflict retry redoes only the cheap part:
 *  1. `writeAppendManifests` (once per commit): one new manifest per partition spec used, ADDED entries
 *     whose sequence numbers are inherited, so the same manifests stay valid for every attempt.
 *  2. `buildAppendCommit` (once per attempt, against freshly loaded metadata): a new manifest list with our
 *     manifests first and then every row of the parent's manifest list verbatim (delete manifests too),
 *     sequence number = last-sequence-number + 1, summary totals from the parent, and
 *     updates [add-snapshot, set-snapshot-ref <branch>] with requirements
 *     [assert-table-uuid, assert-ref-snapshot-id <branch> = the parent we built on]. A branch that does
 *     not exist yet is created by the commit as a fork of main's head (Java `SnapshotProducer.toBranch`):
 *     the parent is main's head, and the requirement says the branch must still not exist (null).
 * The parent's manifest list is I/O: `parentManifestListLocation` says which file to read; the caller reads
 * it (manifest-list.ts `readManifestList`) and passes its rows in.
 *
 * Must not: do I/O, read the clock, or generate ids (snapshot id, commit UUID, attempt, now are inputs).
 */
import { FatalError } from '../core/errors.ts';
import type { AvroCodec } from './avro.ts';
import { addedEntries, writeManifest } from './manifest.ts';
import { writeManifestList, type ManifestFile } from './manifest-list.ts';
import { commitBaseId, currentSchema, joinLocation, MAIN_BRANCH, metadataDir, snapshotById, specById, type Snapshot, type TableMetadata } from './metadata.ts';
import { computeSnapshotSummary } from './summary.ts';
import type { DataFile } from './data-file.ts';
import type { TableRequirement, TableUpdate } from './updates.ts';
import { isUuid } from './bytes.ts';

export interface OutputFile {
  readonly path: string;
  readonly bytes: Uint8Array;
}

export interface AppendManifestsInput {
  readonly base: TableMetadata;
  readonly files: readonly DataFile[];
  readonly snapshotId: bigint;
  /** A random UUID for this commit (names the files: `<uuid>-m<N>.avro`). */
  readonly commitUuid: string;
  readonly codec?: AvroCodec;
}

export interface AppendManifests {
  /** Manifest files to upload before the commit. */
  readonly outputs: readonly OutputFile[];
  /** Their manifest-list rows (sequence numbers unassigned). */
  readonly manifests: readonly ManifestFile[];
  /** The files, for the summary. */
  readonly files: readonly DataFile[];
  readonly snapshotId: bigint;
  readonly commitUuid: string;
}

/** Phase 1: writes one ADDED-entries manifest per partition spec among `files`. */
export function writeAppendManifests(input: AppendManifestsInput): AppendManifests {
  if (!isUuid(input.commitUuid)) throw new TypeError(`commitUuid is not a UUID: ${input.commitUuid}`);
  const seen = new Set<string>();
  for (const f of input.files) {
    // Spec: a path may appear at most once as ADDED/EXISTING in a snapshot; a duplicate here is a bug upstream.
    if (seen.has(f.filePath)) throw new FatalError(`data file ${f.filePath} is announced twice in one commit`);
    seen.add(f.filePath);
  }
  const bySpec = new Map<number, DataFile[]>();
  for (const f of input.files) bySpec.set(f.specId, [...(bySpec.get(f.specId) ?? []), f]);
  const schema = currentSchema(input.base);
  const dir = metadataDir(input.base);
  const outputs: OutputFile[] = [];
  const manifests: ManifestFile[] = [];
  let n = 0;
  for (const [specId, files] of [...bySpec].sort((x, y) => x[0] - y[0])) {
    const spec = specById(input.base, specId);
    if (spec === undefined) throw new FatalError(`data files were written for partition spec ${specId}, which the table does not have`);
    const path = joinLocation(dir, `${input.commitUuid}-m${n++}.avro`);
    const written = writeManifest({ path, schema, spec, snapshotId: input.snapshotId, entries: addedEntries(files, input.snapshotId), ...(input.codec ? { codec: input.codec } : {}) });
    outputs.push({ path, bytes: written.bytes });
    manifests.push(written.manifest);
  }
  return { outputs, manifests, files: input.files, snapshotId: input.snapshotId, commitUuid: input.commitUuid };
}

/**
 * The manifest list the caller must read before `buildAppendCommit` (undefined: nothing to build on). For a
 * branch that does not exist yet it is main's head's: the first commit forks the branch from main.
 */
export function parentManifestListLocation(base: TableMetadata, branch: string = MAIN_BRANCH): string | undefined {
  return parentOf(base, branch)?.manifestList;
}

/**
 * The snapshot an append to `branch` builds on: the branch's head, or for a branch that does not exist yet
 * main's head (Java `SnapshotUtil.latestSnapshot`: a new branch forks from main, keeping main's files).
 */
function parentOf(base: TableMetadata, branch: string): Snapshot | undefined {
  const id = commitBaseId(base, branch);
  return id === undefined ? undefined : snapshotById(base, id);
}

export interface AppendCommitInput {
  /** The freshly loaded table metadata this attempt builds on. */
  readonly base: TableMetadata;
  readonly manifests: AppendManifests;
  /** Rows of the parent's manifest list (`readManifestList(...).manifests`); required when the branch has
   *  a head snapshot, ignored otherwise. */
  readonly parentManifests?: readonly ManifestFile[];
  /** 0 for the first attempt, then 1, 2, ... (names the manifest list, as Java does). */
  readonly attempt: number;
  readonly nowMs: number;
  readonly branch?: string;
  /** Extra summary properties (e.g. `icefloe.control-offsets.<connector>`, `icefloe.commit-id`). */
  readonly summaryExtra?: Readonly<Record<string, string>>;
  readonly codec?: AvroCodec;
}

export interface AppendCommit {
  /** The manifest list to upload before the commit. */
  readonly manifestList: OutputFile;
  readonly snapshot: Snapshot;
  readonly updates: readonly TableUpdate[];
  readonly requirements: readonly TableRequirement[];
}

/** Phase 2: the manifest list, snapshot, updates and requirements of one commit attempt. */
export function buildAppendCommit(input: AppendCommitInput): AppendCommit {
  const { base, manifests: m } = input;
  const branch = input.branch ?? MAIN_BRANCH;
  const headRef = base.refs[branch];
  const baseId = commitBaseId(base, branch);
  const head = parentOf(base, branch);
  if (baseId !== undefined && head === undefined) throw new FatalError(`${headRef === undefined ? MAIN_BRANCH : branch} points at snapshot ${baseId}, which is not in the metadata`);
  if (headRef !== undefined && headRef.type !== 'branch') throw new FatalError(`${branch} is a tag, not a branch`);
  if (head !== undefined && input.parentManifests === undefined) {
    throw new TypeError(`branch ${branch} has snapshot ${head.snapshotId}: pass the rows of its manifest list ${head.manifestList}`);
  }
  if (base.snapshots.some((s) => s.snapshotId === m.snapshotId)) throw new FatalError(`snapshot id ${m.snapshotId} already exists in the table`);
  if (!Number.isInteger(input.attempt) || input.attempt < 0) throw new TypeError('attempt must be a non-negative integer');

  const parentRows = head === undefined ? [] : [...(input.parentManifests ?? [])];
  const sequenceNumber = base.lastSequenceNumber + 1n;
  const path = joinLocation(metadataDir(base), `snap-${m.snapshotId}-${input.attempt}-${m.commitUuid}.avro`);
  const list = writeManifestList({
    snapshotId: m.snapshotId,
    parentSnapshotId: head?.snapshotId ?? null,
    sequenceNumber,
    manifests: [...m.manifests, ...parentRows],
    ...(input.codec ? { codec: input.codec } : {}),
  });

  const summary = computeSnapshotSummary({
    operation: 'append',
    parentSummary: head?.summary,
    addedFiles: m.files,
    manifestsCreated: m.manifests.length,
    manifestsKept: parentRows.length,
    manifestsReplaced: 0,
    ...(input.summaryExtra ? { extra: input.summaryExtra } : {}),
  });
  const snapshot: Snapshot = {
    snapshotId: m.snapshotId,
    ...(head === undefined ? {} : { parentSnapshotId: head.snapshotId }),
    sequenceNumber,
    timestampMs: input.nowMs,
    manifestList: path,
    summary,
    schemaId: base.currentSchemaId,
  };
  // Keep the branch's retention settings when moving it (Java `SnapshotRef.builderFrom`); a branch that
  // does not exist yet is created by this commit, without retention settings (the table's apply).
  const ref = headRef === undefined ? { snapshotId: m.snapshotId, type: 'branch' as const } : { ...headRef, snapshotId: m.snapshotId };
  return {
    manifestList: { path, bytes: list.bytes },
    snapshot,
    updates: [
      { action: 'add-snapshot', snapshot },
      { action: 'set-snapshot-ref', refName: branch, ref },
    ],
    requirements: [
      { type: 'assert-table-uuid', uuid: base.tableUuid },
      // The ref as read: a new branch asserts that it still does not exist (Java UpdateRequirements), so
      // two first commits to it can never both land.
      { type: 'assert-ref-snapshot-id', ref: branch, snapshotId: headRef?.snapshotId ?? null },
    ],
  };
}

export interface FastAppendInput extends Omit<AppendCommitInput, 'manifests'> {
  readonly files: readonly DataFile[];
  readonly snapshotId: bigint;
  readonly commitUuid: string;
}

export interface FastAppend extends AppendCommit {
  readonly manifestOutputs: readonly OutputFile[];
  /** Keep for retries: pass to `buildAppendCommit` with a reloaded base and attempt + 1. */
  readonly appendManifests: AppendManifests;
}

/** Both phases in one call (first attempt). */
export function fastAppend(input: FastAppendInput): FastAppend {
  const appendManifests = writeAppendManifests({
    base: input.base,
    files: input.files,
    snapshotId: input.snapshotId,
    commitUuid: input.commitUuid,
    ...(input.codec ? { codec: input.codec } : {}),
  });
  const commit = buildAppendCommit({ ...input, manifests: appendManifests });
  return { ...commit, manifestOutputs: appendManifests.outputs, appendManifests };
}
