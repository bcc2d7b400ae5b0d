/**
 * The per-table committer state machine, pure (docs/architecture.md, "Idempotent commits (no
 * duplicates)"): from the positions stored in the table, the control records read from those positions,
 * the live Kafka identity and "now", it decides what one commit of one table contains — or that the table
 * must stop, and why.
 *
 * Rules it keeps (each has a test in test/unit/coordinate/commit-state.test.ts):
 * - Only announcements of this connector for this table with control offset >= the stored position of
 *   their control partition are considered; everything else is ignored (it is not this table's).
 * - Per control partition, announcements are applied in offset order and NEVER skipped. An announcement
 *   that cannot be applied (undecodable record, table UUID differs, schema or spec id unknown to the
 *   table, a file reported missing, a file announced twice, a missing or inconsistent part of a split
 *   announcement) stops the table: nothing is committed and the positions stay put. The stop reason
 *   names the control partition and offset so an operator can repair and resume.
 * - A split announcement whose trailing parts are not read yet (and no later record of its task proves
 *   them missing) is "waiting": everything before its first part is committed, it and everything after it
 *   on that partition wait for the next round.
 * - New position of a control partition = the offset after the last record actually included (the last
 *   part of the last applied announcement), exclusive. Partitions with nothing applied keep their stored
 *   position. Since an announcement is included only when all its parts lie below the partition's cut,
 *   every announcement is either wholly below the new position or wholly at/after it.
 * - The commit id is derived from (connector, table, per control partition the first and last offsets
 *   included), so a committer that restarts from the same stored positions over the same records
 *   recomputes the same id, and commitWithRetry's ancestry lookup finds a commit that already landed.
 *
 * Watermark (`icefloe.valid-through-ts`), precisely. Assumption: record timestamps are non-decreasing
 * within a source partition (LogAppendTime, or CreateTime from well-behaved producers). Meaning: every
 * record routed to this table with timestamp <= W is in the table. For one commit:
 * - A source partition has pending data if the commit includes records of it for this table; its bound is
 *   the largest `maxTimestampMs` of those spans (unknown if none carries one).
 * - A source partition with no records for this table in the commit does not hold W back if its latest
 *   `cycle-complete` report (largest next offset) says `caughtUp` — idle, or busy only with other tables.
 *   If that report says it was lagging, its bound is the report's `maxTimestampMs` (what was consumed so
 *   far): its unread records may be older than the other partitions' data. Partitions never reported do
 *   not hold it back.
 * - W advances to min(bounds) only if every applied announcement's cycle has its `cycle-complete` among
 *   the records read (the cycle is whole), no announcement for this table is left waiting, and every bound
 *   is known; otherwise the previous W is carried forward. W never regresses (max with the stored value):
 *   the previous claim stays true as data is only added.
 *
 * Owns: the decision. Must not: do I/O, read a clock, or talk to Kafka or a catalog (the caller reads,
 * checks file existence and commits; see `isPlanCurrent` for the re-check inside commitWithRetry's build).
 */
import { createHash } from 'node:crypto';
import { stringifyJson } from '../core/json.ts';
import type { DataFile } from '../iceberg/data-file.ts';
import type { TableMetadata } from '../iceberg/metadata.ts';
import { commitIdPrefix, positionsSummary, sourceOffsetsKey, VALID_THROUGH_TS_KEY } from './control-positions.ts';
import type { ControlIdentity, ControlPositions, PositionsRead } from './control-positions.ts';
import { decodeControlEvent, reassembleAnnouncement, sameTable, tableRefString } from './events.ts';
import type { Announcement, AnnouncementPart, ControlEvent, CycleComplete, PartitionAssignment, SourceSpan, TableRef } from './events.ts';

/** One record read from the control topic (read_committed), decoded or not. */
export type ControlRecordRead = {
  readonly partition: number;
  readonly offset: bigint;
  /** The Kafka record timestamp (ms), for the retention alarm. */
  readonly timestampMs?: number;
} & ({ readonly event: ControlEvent } | { readonly error: string });

/** Decodes a record value; a value that cannot be decoded is kept as an error (it stops every table). */
export function readControlRecord(partition: number, offset: bigint, value: Uint8Array, timestampMs?: number): ControlRecordRead {
  const at = { partition, offset, ...(timestampMs === undefined ? {} : { timestampMs }) };
  try {
    return { ...at, event: decodeControlEvent(value) };
  } catch (e) {
    return { ...at, error: e instanceof Error ? e.message : String(e) };
  }
}

export interface TableCommitInput {
  readonly connector: string;
  readonly table: TableRef;
  /** The table as loaded (UUID, schemas and specs to validate against). */
  readonly metadata: TableMetadata;
  /** `readControlPositions` of the same metadata. */
  readonly positions: PositionsRead;
  readonly live: ControlIdentity;
  /** Everything read from each control partition from its stored position on (any order, duplicates ok). */
  readonly records: readonly ControlRecordRead[];
  readonly nowMs: number;
  /** The caller's answer to "is this announced file absent from the object store?" (checked beforehand). */
  readonly isFileMissing?: (path: string) => boolean;
  /** Each control partition's log start offset, if known: a stored position below it means announcements
   *  this table never applied were deleted by retention. */
  readonly logStartOffsets?: ReadonlyMap<number, bigint>;
}

export type StopCode =
  | 'positions-identity-mismatch'
  | 'positions-expired'
  | 'positions-unseeded'
  | 'positions-malformed'
  | 'control-records-lost'
  | 'undecodable-event'
  | 'table-uuid-mismatch'
  | 'unknown-schema'
  | 'unknown-partition-spec'
  | 'file-missing'
  | 'duplicate-file'
  | 'part-missing'
  | 'inconsistent-parts';

export interface StopReason {
  readonly code: StopCode;
  readonly message: string;
  /** Where the announcement that could not be applied starts (absent for position-level reasons). */
  readonly partition?: number;
  readonly offset?: bigint;
  readonly context: Readonly<Record<string, unknown>>;
}

/** An announcement included in a commit, with where it sits in the control topic. */
export interface AppliedAnnouncement {
  readonly partition: number;
  /** Offsets of its parts, in part order. */
  readonly offsets: readonly bigint[];
  readonly announcement: Announcement;
}

export interface SourceRange {
  readonly topic: string;
  readonly partition: number;
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
}

interface PlanCommon {
  /** The positions the plan was computed from (empty for a fresh table). */
  readonly basePositions: ControlPositions;
  /** Age of the oldest announcement for this table that is read but not applied (retention alarm). */
  readonly oldestUnappliedAgeMs?: number;
}

export type TablePlan =
  | (PlanCommon & {
      readonly kind: 'commit';
      readonly commitId: string;
      readonly files: readonly DataFile[];
      /** Every control partition's position after this commit (stored ones carried forward). */
      readonly positions: ControlPositions;
      readonly applied: readonly AppliedAnnouncement[];
      readonly sourceRanges: readonly SourceRange[];
      readonly validThroughTs?: number;
      /** For appendFiles `summary`: positions, identity, watermark, source offsets. */
      readonly summary: Readonly<Record<string, string>>;
      /** Announcements for this table left for the next round (trailing parts not read yet). */
      readonly waiting: number;
    })
  | (PlanCommon & { readonly kind: 'nothing'; readonly positions: ControlPositions; readonly waiting: number })
  | (PlanCommon & { readonly kind: 'stopped'; readonly reason: StopReason; readonly positions: ControlPositions });

/** `icefloe:<connector>:<32 hex>` from (connector, table, per control partition first/last offsets applied). */
export function commitIdFor(connector: string, table: TableRef, ranges: ReadonlyMap<number, { first: bigint; last: bigint }>): string {
  const canonical = stringifyJson([
    connector,
    [...table.namespace, table.name],
    [...ranges].sort((a, b) => a[0] - b[0]).map(([p, r]) => [p, r.first, r.last]),
  ]);
  return commitIdPrefix(connector) + createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}

/** Whether positions read again (inside commitWithRetry's build) are still the ones the plan was made
 *  from; if not, another commit advanced them: drop the plan and plan again from the reloaded table. */
export function isPlanCurrent(plan: TablePlan, read: PositionsRead): boolean {
  const now = read.kind === 'positions' ? read.positions : read.kind === 'fresh' ? new Map<number, bigint>() : undefined;
  if (now === undefined || now.size !== plan.basePositions.size) return false;
  for (const [p, o] of plan.basePositions) if (now.get(p) !== o) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------------

interface Group {
  readonly partition: number;
  readonly parts: { readonly offset: bigint; readonly timestampMs?: number; readonly part: AnnouncementPart }[];
}

interface Blocker {
  readonly partition: number;
  readonly offset: bigint;
  /** `stop`: cannot be applied; `wait`: trailing parts not read yet. */
  readonly kind: 'stop' | 'wait';
  readonly reason?: StopReason;
}

const sourceKey = (topic: string, partition: number): string => `${topic}/${partition}`;

function stop(code: StopCode, message: string, where: { partition?: number; offset?: bigint }, context: Record<string, unknown> = {}): StopReason {
  return { code, message, ...where, context };
}

function positionsStop(read: PositionsRead, table: string): StopReason | undefined {
  switch (read.kind) {
    case 'positions':
    case 'fresh':
      return undefined;
    case 'identity-mismatch':
      return stop(
        'positions-identity-mismatch',
        `${table}: the stored control positions belong to control topic ${String(read.stored.controlTopicId)} on cluster ${String(read.stored.clusterId)}, ` +
          `but the live ones are ${read.live.controlTopicId} on ${read.live.clusterId} (topic recreated or cluster failover); re-seed positions with the offsets API`,
        {},
        { stored: read.stored, live: read.live, snapshotId: read.snapshotId },
      );
    case 'expired':
      return stop(
        'positions-expired',
        `${table}: no snapshot in the branch's ancestry carries this connector's control positions (${read.reason}); re-seed positions with the offsets API`,
        {},
        { reason: read.reason, scanned: read.scanned },
      );
    case 'unseeded':
      return stop(
        'positions-unseeded',
        `${table}: the table has ${read.snapshots} snapshots written by others and none carries this connector's control positions; seed them with the offsets API`,
        {},
        { snapshots: read.snapshots },
      );
    case 'malformed':
      return stop('positions-malformed', `${table}: summary key ${read.key} of snapshot ${read.snapshotId} is malformed: ${read.message}`, {}, {
        key: read.key,
        snapshotId: read.snapshotId,
      });
  }
}

/** Plans one commit of one table. Pure: same input, same plan. */
export function planTableCommit(input: TableCommitInput): TablePlan {
  const { connector, table, metadata: md } = input;
  const tableName = tableRefString(table);
  const base: ControlPositions =
    input.positions.kind === 'positions' || input.positions.kind === 'identity-mismatch' ? input.positions.positions : new Map();
  const prevWatermark = input.positions.kind === 'positions' ? input.positions.validThroughTs : undefined;
  const stopped = (reason: StopReason, oldest?: number): TablePlan => ({
    kind: 'stopped',
    reason,
    positions: base,
    basePositions: base,
    ...(oldest === undefined ? {} : { oldestUnappliedAgeMs: Math.max(0, input.nowMs - oldest) }),
  });

  const positionProblem = positionsStop(input.positions, tableName);
  if (positionProblem !== undefined) return stopped(positionProblem);
  for (const [p, pos] of base) {
    const start = input.logStartOffsets?.get(p);
    if (start !== undefined && pos < start) {
      return stopped(
        stop('control-records-lost', `${tableName}: control partition ${p} starts at ${start} but this table has applied only up to ${pos}: unapplied announcements were deleted by retention`, { partition: p, offset: pos }, {
          logStartOffset: start,
        }),
      );
    }
  }

  // Records per control partition, in offset order, at or after the stored position, deduplicated.
  const byPartition = new Map<number, ControlRecordRead[]>();
  for (const r of input.records) {
    if (r.offset < (base.get(r.partition) ?? 0n)) continue;
    let list = byPartition.get(r.partition);
    if (list === undefined) byPartition.set(r.partition, (list = []));
    list.push(r);
  }
  for (const [p, list] of byPartition) {
    list.sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
    byPartition.set(
      p,
      list.filter((r, i) => i === 0 || list[i - 1]?.offset !== r.offset),
    );
  }

  const blockers: Blocker[] = [];
  const groups: Group[] = [];
  const cycleCompletes: { partition: number; offset: bigint; event: CycleComplete }[] = [];
  for (const [partition, list] of [...byPartition].sort((a, b) => a[0] - b[0])) {
    const open = new Map<string, Group>();
    for (const r of list) {
      if ('error' in r) {
        blockers.push({
          partition,
          offset: r.offset,
          kind: 'stop',
          reason: stop('undecodable-event', `${tableName}: control record ${partition}@${r.offset} cannot be decoded (it may be an announcement for this table): ${r.error}`, { partition, offset: r.offset }),
        });
        continue;
      }
      const e = r.event;
      if (e.connector !== connector) continue;
      if (e.type === 'cycle-complete') {
        cycleCompletes.push({ partition, offset: r.offset, event: e });
        continue;
      }
      if (!sameTable(e.table, table)) continue;
      const key = `${e.taskId}\u0000${e.cycleId}`;
      let g = open.get(key);
      if (g === undefined) {
        g = { partition, parts: [] };
        open.set(key, g);
        groups.push(g);
      }
      g.parts.push({ offset: r.offset, ...(r.timestampMs === undefined ? {} : { timestampMs: r.timestampMs }), part: e });
    }
  }

  // Validate each announcement; a valid complete one is a candidate, anything else a blocker at its first part.
  const candidates: { group: Group; announcement: Announcement }[] = [];
  const schemaIds = new Set(md.schemas.map((s) => s.schemaId));
  const specIds = new Set(md.partitionSpecs.map((s) => s.specId));
  for (const g of groups) {
    const first = g.parts[0];
    if (first === undefined) continue;
    const where = { partition: g.partition, offset: first.offset };
    const what = `announcement of task ${first.part.taskId} cycle ${first.part.cycleId} at control ${g.partition}@${first.offset}`;
    const block = (reason: StopReason): void => void blockers.push({ ...where, kind: 'stop', reason });
    const indices = g.parts.map((p) => p.part.part);
    if (indices.some((v, i) => i > 0 && v <= (indices[i - 1] ?? -1))) {
      block(stop('inconsistent-parts', `${tableName}: ${what}: parts are not in order or repeat (${indices.join(', ')})`, where, { indices }));
      continue;
    }
    const re = reassembleAnnouncement(g.parts.map((p) => p.part));
    if (re.kind === 'inconsistent') {
      block(stop('inconsistent-parts', `${tableName}: ${what}: ${re.message}`, where));
      continue;
    }
    if (re.kind === 'incomplete') {
      const lastOffset = g.parts[g.parts.length - 1]?.offset ?? first.offset;
      const maxPresent = Math.max(...indices);
      const laterFromTask = (byPartition.get(g.partition) ?? []).some(
        (r) => r.offset > lastOffset && 'event' in r && r.event.connector === connector && r.event.taskId === first.part.taskId,
      );
      if (re.missing.some((m) => m < maxPresent) || laterFromTask) {
        block(
          stop('part-missing', `${tableName}: ${what}: part(s) ${re.missing.join(', ')} of ${re.parts} are missing from the control topic`, where, {
            missing: re.missing,
            parts: re.parts,
          }),
        );
      } else {
        blockers.push({ ...where, kind: 'wait' });
      }
      continue;
    }
    const a = re.announcement;
    if (a.tableUuid !== md.tableUuid) {
      block(stop('table-uuid-mismatch', `${tableName}: ${what} was written for table UUID ${a.tableUuid}, but the table is ${md.tableUuid} (replaced?)`, where, { announced: a.tableUuid, actual: md.tableUuid }));
      continue;
    }
    if (!schemaIds.has(a.schemaId)) {
      block(stop('unknown-schema', `${tableName}: ${what} was written with schema id ${a.schemaId}, which the table does not have`, where, { schemaId: a.schemaId }));
      continue;
    }
    const badSpec = [a.specId, ...a.files.map((f) => f.specId)].find((s) => !specIds.has(s));
    if (badSpec !== undefined) {
      block(stop('unknown-partition-spec', `${tableName}: ${what} references partition spec id ${badSpec}, which the table does not have`, where, { specId: badSpec }));
      continue;
    }
    const missing = input.isFileMissing === undefined ? undefined : a.files.find((f) => input.isFileMissing?.(f.filePath) === true);
    if (missing !== undefined) {
      block(stop('file-missing', `${tableName}: ${what} names ${missing.filePath}, which does not exist`, where, { path: missing.filePath }));
      continue;
    }
    candidates.push({ group: g, announcement: a });
  }

  // Any announcement that cannot be applied stops the table (nothing committed, positions stay put).
  const firstStop = blockers
    .filter((b) => b.kind === 'stop')
    .sort((x, y) => x.partition - y.partition || (x.offset < y.offset ? -1 : x.offset > y.offset ? 1 : 0))[0];
  const unappliedTimes = (gs: readonly Group[]): number | undefined => {
    const ts = gs.flatMap((g) => g.parts.flatMap((p) => (p.timestampMs === undefined ? [] : [p.timestampMs])));
    return ts.length === 0 ? undefined : Math.min(...ts);
  };
  if (firstStop?.reason !== undefined) return stopped(firstStop.reason, unappliedTimes(groups));

  // Cut each partition at its first waiting announcement; an announcement straddling the cut moves it down.
  const cut = new Map<number, bigint>();
  for (const b of blockers) {
    const c = cut.get(b.partition);
    if (c === undefined || b.offset < c) cut.set(b.partition, b.offset);
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const { group } of candidates) {
      const c = cut.get(group.partition);
      const firstOffset = group.parts[0]?.offset ?? 0n;
      const lastOffset = group.parts[group.parts.length - 1]?.offset ?? 0n;
      if (c !== undefined && firstOffset < c && lastOffset >= c) {
        cut.set(group.partition, firstOffset);
        changed = true;
      }
    }
  }
  const included = candidates
    .filter(({ group }) => {
      const c = cut.get(group.partition);
      return c === undefined || (group.parts[group.parts.length - 1]?.offset ?? 0n) < c;
    })
    .sort((x, y) => x.group.partition - y.group.partition || ((x.group.parts[0]?.offset ?? 0n) < (y.group.parts[0]?.offset ?? 0n) ? -1 : 1));
  const includedSet = new Set(included.map((c) => c.group));
  const notIncluded = groups.filter((g) => !includedSet.has(g));
  const oldest = unappliedTimes(notIncluded);
  const common: PlanCommon = { basePositions: base, ...(oldest === undefined ? {} : { oldestUnappliedAgeMs: Math.max(0, input.nowMs - oldest) }) };

  // A file announced twice would be committed twice: stop instead of de-duplicating silently.
  const seenPaths = new Map<string, { partition: number; offset: bigint }>();
  for (const { group, announcement } of included) {
    const at = { partition: group.partition, offset: group.parts[0]?.offset ?? 0n };
    for (const f of announcement.files) {
      const prior = seenPaths.get(f.filePath);
      if (prior !== undefined) {
        return stopped(
          stop('duplicate-file', `${tableName}: ${f.filePath} is announced at control ${prior.partition}@${prior.offset} and again at ${at.partition}@${at.offset}`, at, {
            path: f.filePath,
            first: prior,
          }),
          oldest,
        );
      }
      seenPaths.set(f.filePath, at);
    }
  }

  if (included.length === 0) return { kind: 'nothing', positions: base, waiting: notIncluded.length, ...common };

  const ranges = new Map<number, { first: bigint; last: bigint }>();
  for (const { group } of included) {
    const f = group.parts[0]?.offset ?? 0n;
    const l = group.parts[group.parts.length - 1]?.offset ?? 0n;
    const r = ranges.get(group.partition);
    ranges.set(group.partition, r === undefined ? { first: f, last: l } : { first: r.first < f ? r.first : f, last: r.last > l ? r.last : l });
  }
  const positions = new Map(base);
  for (const [p, r] of ranges) positions.set(p, r.last + 1n);

  const sourceRanges = mergeSpans(included.flatMap((c) => c.announcement.sourceSpans));
  const candidateWm = watermark(included, notIncluded.length > 0, cycleCompletes);
  const validThroughTs = candidateWm === undefined ? prevWatermark : prevWatermark === undefined ? candidateWm : Math.max(prevWatermark, candidateWm);

  const summary: Record<string, string> = {
    ...positionsSummary(connector, positions, input.live),
    [sourceOffsetsKey(connector)]: encodeSourceRanges(sourceRanges),
    ...(validThroughTs === undefined ? {} : { [VALID_THROUGH_TS_KEY]: String(validThroughTs) }),
  };
  return {
    kind: 'commit',
    commitId: commitIdFor(connector, table, ranges),
    files: included.flatMap((c) => c.announcement.files),
    positions,
    applied: included.map((c) => ({ partition: c.group.partition, offsets: c.group.parts.map((p) => p.offset), announcement: c.announcement })),
    sourceRanges,
    ...(validThroughTs === undefined ? {} : { validThroughTs }),
    summary,
    waiting: notIncluded.length,
    ...common,
  };
}

function mergeSpans(spans: readonly SourceSpan[]): SourceRange[] {
  const m = new Map<string, SourceRange>();
  for (const s of spans) {
    const k = sourceKey(s.topic, s.partition);
    const r = m.get(k);
    m.set(
      k,
      r === undefined
        ? { topic: s.topic, partition: s.partition, firstOffset: s.firstOffset, lastOffset: s.lastOffset }
        : {
            ...r,
            firstOffset: s.firstOffset < r.firstOffset ? s.firstOffset : r.firstOffset,
            lastOffset: s.lastOffset > r.lastOffset ? s.lastOffset : r.lastOffset,
          },
    );
  }
  return [...m.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
}

/** `{"<topic>": {"<partition>": [first, last]}}` (inclusive offsets). */
export function encodeSourceRanges(ranges: readonly SourceRange[]): string {
  const out: Record<string, Record<string, [bigint, bigint]>> = {};
  for (const r of ranges) (out[r.topic] ??= {})[String(r.partition)] = [r.firstOffset, r.lastOffset];
  return stringifyJson(out);
}

/** The candidate watermark of a commit (module header, "Watermark"), or undefined if it cannot advance. */
function watermark(
  included: readonly { announcement: Announcement }[],
  anyWaiting: boolean,
  cycleCompletes: readonly { partition: number; offset: bigint; event: CycleComplete }[],
): number | undefined {
  if (anyWaiting) return undefined;
  const complete = new Set(cycleCompletes.map((c) => `${c.event.taskId}\u0000${c.event.cycleId}`));
  if (included.some(({ announcement: a }) => !complete.has(`${a.taskId}\u0000${a.cycleId}`))) return undefined;
  const bounds = new Map<string, number>();
  for (const { announcement } of included) {
    for (const s of announcement.sourceSpans) {
      const k = sourceKey(s.topic, s.partition);
      const prior = bounds.get(k) ?? Number.NEGATIVE_INFINITY;
      bounds.set(k, Math.max(prior, s.maxTimestampMs ?? Number.NEGATIVE_INFINITY));
    }
  }
  // Latest report per source partition: the largest next offset (then the later control record).
  const latest = new Map<string, PartitionAssignment>();
  for (const c of cycleCompletes) {
    for (const a of c.event.assignments) {
      const k = sourceKey(a.topic, a.partition);
      const prior = latest.get(k);
      if (prior === undefined || a.nextOffset >= prior.nextOffset) latest.set(k, a);
    }
  }
  for (const [k, a] of latest) {
    if (bounds.has(k) || a.caughtUp) continue;
    bounds.set(k, a.maxTimestampMs ?? Number.NEGATIVE_INFINITY);
  }
  if (bounds.size === 0) return undefined;
  const w = Math.min(...bounds.values());
  return Number.isFinite(w) ? w : undefined;
}
