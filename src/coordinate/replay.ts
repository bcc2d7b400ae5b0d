/**
 * The replay runbook (docs/operations.md, "Replay a table from a snapshot"; the streaming-lakehouse playbook's
 * "roll back, reset offsets to the snapshot's source offsets, resume"): with the connector stopped, one table
 * goes back to snapshot S of its branch and the connector's consumer group goes back to just after the
 * source records S holds, so that on resume the tasks deliver again exactly what the rollback removed.
 *
 * Steps (each refuses with the reason before anything changes):
 * 1. The connector's consumer group has no members (the connector is stopped), announcements do not wait
 *    for the committer (source-holdings.ts), and S is in the ancestry of the table's commit branch.
 * 2. What S holds of each source partition: the highest offsets the connector applied in S's ancestry
 *    (`icefloe.source-applied.<connector>`). Each partition whose records the rollback removes restarts at
 *    the offset after what S holds — or, for a partition S holds nothing of, at the first offset the removed
 *    snapshots cover (`icefloe.source-offsets.<connector>`). That offset must still be in Kafka (retention),
 *    and no other table of the connector may hold records from there on (they would receive them twice).
 * 3. ONE catalog commit moves the branch to a new snapshot whose parent is S, with S's files and no new
 *    ones, whose summary carries: control positions at everything announced so far (the rolled-back
 *    announcements are never applied again; the tasks announce the records anew), source-applied = what S
 *    holds (so the committer's overlap guard accepts the records again), and `icefloe.replayed.<connector>`
 *    = {"snapshot-id": S, "replaced": old head, "offsets": the restart offsets}. It asserts the head it read,
 *    so it happens once or not at all; a run after a crash finds the mark and only redoes step 4.
 * 4. The group's offsets of those partitions are committed (the others keep theirs).
 * Resume the connector: the table ends holding every record once.
 *
 * Owns: the runbook as one operation. Must not: run while tasks consume, or touch another table.
 */
import { createHash, randomUUID } from 'node:crypto';
import { RequestRefused } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { parseJson, stringifyJson, toBigInt } from '../core/json.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { GroupAdmin, GroupInspector, KafkaAdmin } from '../consume/port.ts';
import { COMMIT_ID_KEY, commitWithRetry } from '../commit/commit-retry.ts';
import { parseIdentifier } from '../commit/port.ts';
import type { Catalog, LoadedTable } from '../commit/port.ts';
import { updateProperties } from '../commit/table-ops.ts';
import { buildAppendCommit, writeAppendManifests } from '../iceberg/append.ts';
import { readManifestList } from '../iceberg/manifest-list.ts';
import { ancestors, MAIN_BRANCH, snapshotById, snapshotIdFromUuid } from '../iceberg/metadata.ts';
import type { Snapshot, TableMetadata } from '../iceberg/metadata.ts';
import type { ObjectStore } from '../upload/port.ts';
import { commitIdPrefix, controlOffsetsKey, controlTopicIdKey, decodePositions, kafkaClusterIdKey, positionsSummary, readControlPositions, SOURCE_OFFSETS_PREFIX, VALID_THROUGH_TS_KEY } from './control-positions.ts';
import type { ControlIdentity } from './control-positions.ts';
import { controlGroupId, reapplyKey } from './connector-position.ts';
import { readConnectorPositions } from './position-store.ts';
import { encodeSourceApplied, sourceAppliedKey } from './source-applied.ts';
import type { SourceApplied } from './source-applied.ts';
import { highestApplied, holdingKey, liveIdentity, pendingAnnouncements, pendingMessage, replayedKey, sourceHoldings } from './source-holdings.ts';

export interface ReplayDeps {
  readonly connector: ConnectorConfig;
  readonly admin: KafkaAdmin & GroupAdmin & GroupInspector;
  readonly catalog: Catalog;
  readonly store: ObjectStore;
  readonly log: Logger;
}

export interface ReplayOffset {
  readonly topic: string;
  readonly partition: number;
  /** The next offset the connector reads (its group's committed offset after the replay). */
  readonly offset: string;
}

export interface ReplayReport {
  readonly table: string;
  readonly branch: string;
  /** The snapshot the table was rolled back to. */
  readonly snapshotId: string;
  /** The branch head the rollback replaced. */
  readonly replaced: string;
  /** The snapshot the replay committed (S's files, the replay's positions). */
  readonly replaySnapshotId: string;
  readonly offsets: readonly ReplayOffset[];
  readonly result: string;
}

interface ReplayMark {
  readonly snapshotId: bigint;
  readonly replaced: bigint;
  readonly offsets: readonly { readonly topic: string; readonly partition: number; readonly offset: bigint }[];
}

function refuse(message: string): RequestRefused {
  return new RequestRefused('bad-request', message);
}

function encodeMark(m: ReplayMark): string {
  const offsets: Record<string, Record<string, bigint>> = {};
  for (const o of m.offsets) (offsets[o.topic] ??= {})[String(o.partition)] = o.offset;
  return stringifyJson({ 'snapshot-id': m.snapshotId, replaced: m.replaced, offsets });
}

function decodeMark(text: string): ReplayMark {
  const doc = parseJson(text) as { 'snapshot-id'?: unknown; replaced?: unknown; offsets?: Record<string, Record<string, unknown>> };
  const offsets = Object.entries(doc.offsets ?? {}).flatMap(([topic, parts]) => Object.entries(parts).map(([p, o]) => ({ topic, partition: Number(p), offset: toBigInt(o, `replay offset of ${topic}[${p}]`) })));
  return { snapshotId: toBigInt(doc['snapshot-id'], 'replay snapshot-id'), replaced: toBigInt(doc.replaced, 'replay replaced'), offsets };
}

/** The metadata as if `branch` pointed at `snapshotId` (to read what S holds with the usual readers). */
function atSnapshot(md: TableMetadata, branch: string, snapshotId: bigint): TableMetadata {
  return { ...md, refs: { ...md.refs, [branch]: { ...(md.refs[branch] ?? { type: 'branch' }), snapshotId } }, ...(branch === MAIN_BRANCH ? { currentSnapshotId: snapshotId } : {}) };
}

/** Per source partition, the lowest first offset the snapshots cover (`icefloe.source-offsets.<connector>`). */
function firstOffsets(snapshots: readonly Snapshot[], connector: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const s of snapshots) {
    const text = s.summary[SOURCE_OFFSETS_PREFIX + connector];
    if (text === undefined) continue;
    try {
      for (const [topic, parts] of Object.entries(parseJson(text) as Record<string, Record<string, unknown[]>>)) {
        for (const [p, range] of Object.entries(parts)) {
          const first = toBigInt(range[0], 'first offset');
          const k = holdingKey(topic, Number(p));
          if (first < (out.get(k) ?? first + 1n)) out.set(k, first);
        }
      }
    } catch {
      // an unreadable operator summary adds nothing; a partition without a first offset is refused below
    }
  }
  return out;
}

/** Control positions past everything announced so far: the stored ones, C, every snapshot's, the log end. */
async function positionsPastEverything(deps: ReplayDeps, md: TableMetadata, live: ControlIdentity): Promise<Map<number, bigint>> {
  const { connector, admin } = deps;
  const out = new Map<number, bigint>();
  const raise = (p: number, o: bigint): void => {
    if (o > (out.get(p) ?? -1n)) out.set(p, o);
  };
  for (const m of await admin.watermarks(connector.control.topic)) raise(m.partition, m.lastStable);
  const c = await readConnectorPositions({ admin, groupId: controlGroupId(connector.control.groupIdPrefix, connector.name), topic: connector.control.topic, controlTopicId: live.controlTopicId, log: deps.log });
  for (const [p, e] of c ?? []) raise(p, e.offset);
  for (const s of md.snapshots) {
    const text = s.summary[controlOffsetsKey(connector.name)];
    if (text === undefined || s.summary[controlTopicIdKey(connector.name)] !== live.controlTopicId || s.summary[kafkaClusterIdKey(connector.name)] !== live.clusterId) continue;
    try {
      for (const [p, o] of decodePositions(text)) raise(p, o);
    } catch {
      // a malformed old snapshot adds nothing
    }
  }
  return out;
}

/** Steps 1–2 of the module header: where each removed partition restarts. */
async function planReplay(deps: ReplayDeps, table: LoadedTable, tableName: string, branch: string, s: bigint, head: bigint, live: ControlIdentity): Promise<{ offsets: ReplayMark['offsets']; held: SourceApplied }> {
  const { connector, admin } = deps;
  const md = table.metadata;
  const headAncestry = [...ancestors(md, head)];
  const at = headAncestry.findIndex((x) => x.snapshotId === s);
  if (at < 0) throw refuse(`snapshot ${s} is not in the history of ${tableName}'s branch ${branch} (head ${head}): a replay rolls the branch back to one of its own snapshots`);
  const read = readControlPositions(atSnapshot(md, branch, s), connector.name, live, branch);
  if (read.kind !== 'positions' && read.kind !== 'unseeded') {
    throw refuse(`${tableName} at snapshot ${s} has no usable positions of connector ${connector.name} (${read.kind}): it cannot be replayed from there`);
  }
  const held = highestApplied(headAncestry.slice(at), connector.name);
  const removed = headAncestry.slice(0, at);
  const before = highestApplied(removed, connector.name);
  const firsts = firstOffsets(removed, connector.name);
  const offsets: { topic: string; partition: number; offset: bigint }[] = [];
  for (const [k, now] of before) {
    const kept = held.get(k);
    if (kept !== undefined && kept.last >= now.last) continue; // nothing of this partition is removed
    const from = kept !== undefined ? kept.last + 1n : firsts.get(k);
    if (from === undefined) throw refuse(`cannot tell where the records of ${now.topic}[${now.partition}] that the rollback removes begin (no ${SOURCE_OFFSETS_PREFIX}${connector.name} in the removed snapshots)`);
    offsets.push({ topic: now.topic, partition: now.partition, offset: from });
  }
  const topics = new Set(offsets.map((o) => o.topic));
  for (const topic of topics) {
    for (const w of await admin.watermarks(topic)) {
      const o = offsets.find((x) => x.topic === topic && x.partition === w.partition);
      if (o !== undefined && o.offset < w.low) {
        throw refuse(`the records of ${topic}[${w.partition}] from offset ${o.offset} are no longer in Kafka (its log starts at ${w.low}): rolling ${tableName} back to snapshot ${s} would lose them`);
      }
    }
  }
  const others = await sourceHoldings(deps, connector, live, new Map([[tableName, held]]));
  for (const o of offsets) {
    const h = others.get(holdingKey(o.topic, o.partition));
    if (h !== undefined && h.last >= o.offset) {
      throw refuse(`table ${h.table} holds the records of ${o.topic}[${o.partition}] through offset ${h.last}: replaying ${tableName} from offset ${o.offset} would write them to ${h.table} again; replay ${h.table} to a snapshot before that offset too, first`);
    }
  }
  return { offsets, held };
}

/** The runbook's steps 1–4 (module header). */
export async function replayTable(deps: ReplayDeps, tableName: string, snapshotId: bigint): Promise<ReplayReport> {
  const { connector, admin, catalog } = deps;
  const members = await admin.groupMembers(connector.groupId);
  if (members.length > 0) {
    throw new RequestRefused('failed', `connector ${connector.name}'s consumer group ${connector.groupId} has ${members.length} live member(s): stop the connector (PUT /connectors/${connector.name}/stop, or stop the worker) before a replay`);
  }
  const id = parseIdentifier(tableName);
  const branch = connector.tables.settings(tableName).commitBranch;
  const live = await liveIdentity(admin, connector);
  if (live.controlTopicId === '') throw refuse(`control topic ${connector.control.topic} does not exist: connector ${connector.name} never ran, there is nothing to replay`);
  const table = await catalog.loadTable(id);
  const head = table.metadata.refs[branch]?.snapshotId ?? (branch === MAIN_BRANCH ? (table.metadata.currentSnapshotId ?? undefined) : undefined);
  if (head === undefined) throw refuse(`${tableName} has no snapshot on branch ${branch}`);
  const headSnap = snapshotById(table.metadata, head);
  const markText = headSnap?.summary[replayedKey(connector.name)];
  let mark = markText === undefined ? undefined : decodeMark(markText);
  let replaySnapshotId = head;
  if (mark === undefined || mark.snapshotId !== snapshotId || headSnap?.parentSnapshotId !== snapshotId) {
    const pending = await pendingAnnouncements(deps, connector, live);
    if (pending.length > 0) throw refuse(pendingMessage(connector.name, pending));
    const plan = await planReplay(deps, table, tableName, branch, snapshotId, head, live);
    mark = { snapshotId, replaced: head, offsets: plan.offsets };
    replaySnapshotId = await commitReplay(deps, table, branch, mark, plan.held, live);
  }
  const after = await catalog.loadTable(id);
  if (after.metadata.properties[reapplyKey(connector.name)] !== undefined) await updateProperties({ catalog, store: deps.store }, id, {}, [reapplyKey(connector.name)]);
  if (mark.offsets.length > 0) await admin.commitGroupOffsets(connector.groupId, mark.offsets.map((o) => ({ ...o, metadata: null })));
  deps.log.info('table replayed from a snapshot', { table: tableName, branch, snapshotId: String(snapshotId), offsets: mark.offsets.map((o) => `${o.topic}[${o.partition}]=${o.offset}`) });
  return {
    table: tableName,
    branch,
    snapshotId: String(snapshotId),
    replaced: String(mark.replaced),
    replaySnapshotId: String(replaySnapshotId),
    offsets: mark.offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: String(o.offset) })),
    result: mark.offsets.length === 0
      ? `rolled back to snapshot ${snapshotId}; no source records were removed, so no offsets moved`
      : `rolled back to snapshot ${snapshotId}; resume connector ${connector.name} and it delivers the removed records again, once`,
  };
}

/** Step 3: one commit, on S, asserting the head it read; returns the new snapshot's id. */
async function commitReplay(deps: ReplayDeps, table: LoadedTable, branch: string, mark: ReplayMark, held: SourceApplied, live: ControlIdentity): Promise<bigint> {
  const { connector, catalog, store } = deps;
  const name = connector.name;
  const positions = await positionsPastEverything(deps, table.metadata, live);
  const s = snapshotById(table.metadata, mark.snapshotId);
  const wm = s?.summary[VALID_THROUGH_TS_KEY];
  const commitId = `${commitIdPrefix(name)}replay-${createHash('sha256').update(`${table.metadata.tableUuid}:${mark.snapshotId}:${mark.replaced}`).digest('hex').slice(0, 24)}`;
  const summary = {
    ...positionsSummary(name, positions, live),
    [sourceAppliedKey(name)]: encodeSourceApplied(held),
    [replayedKey(name)]: encodeMark(mark),
    ...(wm === undefined ? {} : { [VALID_THROUGH_TS_KEY]: wm }),
  };
  const manifests = writeAppendManifests({ base: table.metadata, files: [], snapshotId: snapshotIdFromUuid(randomUUID()), commitUuid: randomUUID() });
  for (const out of manifests.outputs) await store.put(out.path, out.bytes);
  const outcome = await commitWithRetry(catalog, table.identifier, {
    commitId,
    ref: branch,
    async build(t, attempt) {
      // Another commit landed since the plan (the connector is not stopped after all, or an operator):
      // decide again rather than roll back what it added.
      if ((t.metadata.refs[branch]?.snapshotId ?? t.metadata.currentSnapshotId) !== mark.replaced) return undefined;
      const base = atSnapshot(t.metadata, branch, mark.snapshotId);
      const parent = snapshotById(base, mark.snapshotId);
      if (parent === undefined) return undefined;
      const commit = buildAppendCommit({
        base,
        manifests,
        parentManifests: readManifestList(await store.get(parent.manifestList)).manifests,
        attempt: attempt - 1,
        nowMs: Math.max(Date.now(), t.metadata.lastUpdatedMs + 1),
        branch,
        summaryExtra: { ...summary, [COMMIT_ID_KEY]: commitId },
      });
      await store.put(commit.manifestList.path, commit.manifestList.bytes);
      // The branch head as read, not S: the rollback and the new snapshot land together or not at all.
      const requirements = commit.requirements.map((r) => (r.type === 'assert-ref-snapshot-id' ? { ...r, snapshotId: mark.replaced } : r));
      return { requirements, updates: commit.updates };
    },
  });
  if (outcome.status === 'nothing-to-commit') throw refuse(`${formatName(table)} changed while replaying (another commit landed on ${branch}): check that connector ${name} is stopped, then run the replay again`);
  const landed = [...ancestors(outcome.table.metadata, outcome.table.metadata.refs[branch]?.snapshotId ?? outcome.table.metadata.currentSnapshotId ?? undefined)].find((x) => x.summary[COMMIT_ID_KEY] === commitId);
  return landed?.snapshotId ?? mark.snapshotId;
}

function formatName(t: LoadedTable): string {
  return [...t.identifier.namespace, t.identifier.name].join('.');
}
