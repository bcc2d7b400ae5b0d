/**
 * The per-table committer state machine, pure (docs/architecture.md, "Idempotent commits (no
 * duplicates)"): from the positions stored in the table, the control records read from those positions,
 * the live Kafka identity and "now", it decides what one commit of one table contains — or that the table
 * must stop, and why.
 *
 * Rules it keeps (each has a test in test/unit/coordinate/commit-state.test.ts or connector-position.test.ts):
 * - The effective position of a control partition is the stored one, raised by the connector position C
 *   where C says every table applied further (connector-position.ts); a table moved backwards behind what
 *   was applied stops (`positions-rolled-back`) unless an operator's recovery acknowledges it; an
 *   effective position below the log start stops the table (`control-records-lost`).
 * - Only announcements of this connector for this table with control offset >= the effective position of
 *   their control partition are considered; everything else is ignored (it is not this table's).
 * - An announcement whose source records the table holds already is passed without its files; one that
 *   partly overlaps them stops the table (`source-overlap`, source-applied.ts).
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
 * The commit's watermark (`icefloe.valid-through-ts`) follows the rules in watermark.ts.
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
import { decodeControlEvent, isUnsupportedControlVersion, reassembleAnnouncement, sameTable, tableRefString } from './events.ts';
import type { Announcement, AnnouncementPart, ControlEvent, CycleComplete, SourceSpan, TableRef } from './events.ts';
import { commitWatermark, sourceKey } from './watermark.ts';
import { positionRules } from './connector-position.ts';
import { checkSourceOverlap, decodeSourceApplied, encodeSourceApplied, encodeSourceTopicIds, sourceAppliedKey, sourceTopicIdsKey, stampTopicIds } from './source-applied.ts';
import type { SourceApplied, SourceLogs } from './source-applied.ts';
import type { ConnectorPositions } from './connector-position.ts';
import type { SourceKnowledge } from './watermark.ts';

/**
 * One record of this connector read from the control topic (read_committed), decoded or not. The
 * committer hands the planner only records that are this connector's (events.ts `classifyControlRecord`):
 * another connector's or another product's records never get here, so an error here is always ours.
 */
export type ControlRecordRead = {
  readonly partition: number;
  readonly offset: bigint;
  /** The Kafka record timestamp (ms), for the retention alarm. */
  readonly timestampMs?: number;
} & ({ readonly event: ControlEvent } | { readonly error: string; readonly unsupportedVersion?: boolean });

/** Decodes a record value of this connector; one that cannot be decoded is kept as an error (it stops this connector's tables). */
export function readControlRecord(partition: number, offset: bigint, value: Uint8Array, timestampMs?: number): ControlRecordRead {
  const at = { partition, offset, ...(timestampMs === undefined ? {} : { timestampMs }) };
  try {
    return { ...at, event: decodeControlEvent(value) };
  } catch (e) {
    return { ...at, error: e instanceof Error ? e.message : String(e), ...(isUnsupportedControlVersion(value) ? { unsupportedVersion: true } : {}) };
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
  /** C, the connector-level position (connector-position.ts); absent: the table's own positions only. */
  readonly connectorPositions?: ConnectorPositions;
  /**
   * Control partitions whose C is a seed set after the connector had committed before (C re-seeded): a table
   * with no position there may have lost announcements below the seed, so it stops (control-records-lost).
   */
  readonly unvouchedSeeds?: ReadonlySet<number>;
  /** What this committer saw applied to the table earlier in its life (live rollback detection). */
  readonly appliedBefore?: { readonly tableUuid: string; readonly positions: ControlPositions };
  /** False while the committer catches up in bounded reads: control partitions are then read to different
   *  depths, so a task's newer reports may lie past what was read; the commit carries the stored watermark. */
  readonly readToEnd?: boolean;
  /** What the committer knows of the source partitions beyond this buffer (watermark.ts), and each source
   *  topic's live id and log ends as it looked this round (`logs`): whether the source offsets the table
   *  applied still name the live log's records (source-applied.ts). Absent: unknown. */
  readonly sources?: SourceKnowledge & { readonly logs?: SourceLogs };
  /** The branch the table's commits go to (default main); `positions` were read from its ancestry. */
  readonly branch?: string;
}

export type StopCode =
  | 'positions-identity-mismatch'
  | 'positions-expired'
  | 'positions-unseeded'
  | 'positions-malformed'
  | 'control-records-lost'
  | 'positions-rolled-back'
  | 'commit-failed'
  | 'source-overlap'
  | 'source-log-changed'
  | 'undecodable-event'
  | 'unsupported-control-version'
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
  /** Its Kafka timestamp (ms since the epoch). */
  readonly oldestUnappliedMs?: number;
  /** E: where the plan read from per control partition (connector-position.ts); T raised by C. */
  readonly effectivePositions: ControlPositions;
}

export type TablePlan =
  | (PlanCommon & {
      readonly kind: 'commit';
      readonly commitId: string;
      readonly files: readonly DataFile[];
      /** Every control partition's position after this commit (stored ones carried forward). */
      readonly positions: ControlPositions;
      readonly applied: readonly AppliedAnnouncement[];
      /** Passed without committing their files: every source record they carry is applied already. */
      readonly dropped: readonly AppliedAnnouncement[];
      readonly sourceRanges: readonly SourceRange[];
      readonly validThroughTs?: number;
      /** For appendFiles `summary`: positions, identity, watermark, source offsets. */
      readonly summary: Readonly<Record<string, string>>;
      /** Announcements for this table left for the next round (trailing parts not read yet). */
      readonly waiting: number;
    })
  | (PlanCommon & { readonly kind: 'nothing'; readonly positions: ControlPositions; readonly waiting: number })
  | (PlanCommon & { readonly kind: 'stopped'; readonly reason: StopReason; readonly positions: ControlPositions });

/**
 * `icefloe:<connector>:<32 hex>` from (connector, table, the control topic's id, per control partition
 * first/last offsets applied). The topic id makes it an id of this log's announcements: a recreated control
 * topic starts again at offset 0, and its first commit must not be taken for the old log's (found in the
 * ancestry as `already-applied`, its files never committed).
 */
export function commitIdFor(connector: string, table: TableRef, ranges: ReadonlyMap<number, { first: bigint; last: bigint }>, controlTopicId: string): string {
  const canonical = stringifyJson([
    connector,
    [...table.namespace, table.name],
    controlTopicId,
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

interface Blocker {
  readonly partition: number;
  readonly offset: bigint;
  /** `stop`: cannot be applied; `wait`: trailing parts not read yet. */
  readonly kind: 'stop' | 'wait';
  readonly reason?: StopReason;
}

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
          `but the live ones are ${read.live.controlTopicId} on ${read.live.clusterId} (topic recreated or cluster failover); they say nothing of the live log, and this stopped table holds the connector position at the start of it. ` +
          `"icefloe positions WORKER.properties CONNECTOR.json --table ${table} --adopt" starts the table there, so every announcement the tasks made on the live topic is applied; ` +
          `announcements the old topic held that the table had not applied are gone with it: compare the table's icefloe.source-offsets.<connector> with the source offsets the tasks committed before the change (docs/sink.md)`,
        {},
        { stored: read.stored, storedPositions: Object.fromEntries([...read.positions].map(([p, o]) => [String(p), o.toString()])), live: read.live, snapshotId: read.snapshotId },
      );
    case 'expired':
      return stop(
        'positions-expired',
        `${table}: no snapshot in the branch's ancestry carries this connector's control positions (${read.reason}); re-seed them with "icefloe positions WORKER.properties CONNECTOR.json --table ${table} --adopt" (docs/sink.md)`,
        {},
        { reason: read.reason, scanned: read.scanned },
      );
    case 'unseeded':
      return stop(
        'positions-unseeded',
        `${table}: the table has ${read.snapshots} snapshots written by others and none carries this connector's control positions; seed them with "icefloe positions WORKER.properties CONNECTOR.json --table ${table} --adopt" (docs/sink.md)`,
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
  const tableName = tableRefString(input.table);
  // Positions stored for another control topic or cluster (identity-mismatch) say nothing of the live log: a
  // stopped table's needs would otherwise carry offsets of the old log to the new one (C moved past what the
  // tasks announced there, review N10). They stay in the stop reason's context.
  const base: ControlPositions = input.positions.kind === 'positions' ? input.positions.positions : new Map();
  let eff: ControlPositions = base;
  const stopped = (reason: StopReason, oldest?: number): TablePlan => ({
    kind: 'stopped',
    reason,
    positions: eff,
    basePositions: base,
    effectivePositions: eff,
    ...ages(input.nowMs, oldest),
  });

  const positionProblem = positionsStop(input.positions, tableName);
  if (positionProblem !== undefined) return stopped(positionProblem);
  if (input.positions.kind === 'positions' || input.positions.kind === 'fresh') {
    const rules = positionRules({
      connector: input.connector,
      table: input.table,
      tableName,
      metadata: input.metadata,
      stored: base,
      read: input.positions,
      connectorPositions: input.connectorPositions ?? new Map(),
      announcements: announcementsAt(input.records),
      ...(input.appliedBefore === undefined ? {} : { appliedBefore: input.appliedBefore }),
      ...(input.branch === undefined ? {} : { branch: input.branch }),
    });
    if (rules.kind === 'rolled-back') {
      const where = { ...(rules.partition === undefined ? {} : { partition: rules.partition }), ...(rules.offset === undefined ? {} : { offset: rules.offset }) };
      return stopped(stop('positions-rolled-back', rules.message, where, rules.context));
    }
    const e = rules.effective;
    // With C known, a partition neither the table nor C has a position for is read from offset 0: if its
    // log no longer starts there, something may have been deleted (the check below says so).
    if (input.connectorPositions !== undefined && !rules.reapplying) for (const p of input.logStartOffsets?.keys() ?? []) if (!e.has(p)) e.set(p, 0n);
    eff = e;
  }
  const unvouched = [...(input.unvouchedSeeds ?? [])].sort((a, b) => a - b).find((p) => !base.has(p) && (input.logStartOffsets?.get(p) ?? 0n) > 0n);
  if (unvouched !== undefined) {
    // Its needs start at 0 there, so C stays a seed (committer.ts) and a restart stops the table again.
    const start = input.logStartOffsets?.get(unvouched) ?? 0n;
    eff = new Map([...eff, [unvouched, 0n]]);
    return stopped(
      stop(
        'control-records-lost',
        `${tableName}: the connector position on control partition ${unvouched} was re-seeded at the log start ${start} (its offsets expired after offsets.retention.minutes, or were deleted) after the connector had committed to its tables, and this table has no position there: ` +
          `announcements for it below ${start} may have been deleted before it applied them. If none was made (check the source offsets of its rows against the connector's consumer group), seed it with "icefloe positions WORKER.properties CONNECTOR.json --table ${tableName} --adopt" (docs/sink.md)`,
        { partition: unvouched, offset: 0n },
        { logStartOffset: start, reseeded: true },
      ),
    );
  }
  const lost = lostRecordsStop(eff, input.logStartOffsets, tableName);
  if (lost !== undefined) return stopped(lost);

  const byPartition = recordsByPartition(input.records, eff);
  const { groups, blockers, cycleCompletes } = groupAnnouncements(byPartition, input, tableName);
  const candidates = validateAnnouncements(groups, byPartition, input, tableName, blockers);

  // Any announcement that cannot be applied stops the table (nothing committed, positions stay put).
  const firstStop = blockers
    .filter((b) => b.kind === 'stop')
    .sort((x, y) => x.partition - y.partition || compareOffsets(x.offset, y.offset))[0];
  if (firstStop?.reason !== undefined) return stopped(firstStop.reason, oldestTimestamp(groups));

  const included = includedAnnouncements(candidates, blockers);
  const includedSet = new Set(included.map((c) => c.group));
  const notIncluded = groups.filter((g) => !includedSet.has(g));
  const oldest = oldestTimestamp(notIncluded);
  const common: PlanCommon = { basePositions: base, effectivePositions: eff, ...ages(input.nowMs, oldest) };

  const duplicate = duplicateFileStop(included, tableName);
  if (duplicate !== undefined) return stopped(duplicate, oldest);

  if (included.length === 0) return { kind: 'nothing', positions: eff, waiting: notIncluded.length, ...common };
  const guarded = sourceGuard(input, tableName, included, oldest, stopped, { basePositions: base, effectivePositions: eff, ...ages(input.nowMs, oldestTimestamp(groups)) }, groups.length);
  if ('kind' in guarded) return guarded;
  return commitPlan(input, eff, included, guarded, notIncluded.length, cycleCompletes, common);
}

/**
 * The source-applied guard over the included announcements (source-applied.ts): what to commit and what to
 * pass, or the plan that stops the table (`stopped`) or waits for the next round (`allWaiting`, `waiting`).
 */
function sourceGuard(
  input: TableCommitInput,
  tableName: string,
  included: readonly Candidate[],
  oldest: number | undefined,
  stopped: (reason: StopReason, oldest?: number) => TablePlan,
  allWaiting: PlanCommon,
  waiting: number,
): TablePlan | { readonly kept: readonly Candidate[]; readonly dropped: readonly Candidate[]; readonly applied: SourceApplied } {
  let before: SourceApplied = new Map();
  const stored = input.positions.kind === 'positions' ? input.positions.sourceApplied : undefined;
  const storedIds = input.positions.kind === 'positions' ? input.positions.sourceTopicIds : undefined;
  try {
    if (stored !== undefined) before = decodeSourceApplied(stored, storedIds);
  } catch (e) {
    return stopped(stop('positions-malformed', `${tableName}: summary key ${sourceAppliedKey(input.connector)} is malformed: ${e instanceof Error ? e.message : String(e)}`, {}), oldest);
  }
  const logs: SourceLogs | undefined = input.sources?.logs;
  const overlap = checkSourceOverlap(included, before, logs);
  if (overlap.kind === 'unknown') {
    // Source records at or below what was applied, and the live log could not be looked at this round:
    // neither drop nor apply on a guess; the next round decides (everything stays buffered meanwhile).
    return { kind: 'nothing', positions: allWaiting.effectivePositions, waiting, ...allWaiting };
  }
  if (overlap.kind === 'log-changed') {
    const g = overlap.candidate.group;
    const at = { partition: g.partition, offset: firstOffsetOf(g) };
    const sp = overlap.span;
    return stopped(
      stop(
        'source-log-changed',
        `${tableName}: the announcement at control ${at.partition}@${at.offset} carries ${sp.topic}[${sp.partition}] offsets ${sp.firstOffset}..${sp.lastOffset}, at or below the offset the table applied (${overlap.appliedThrough}), but ${overlap.why}; ` +
          `they may be new records under old offsets, so they are neither dropped nor applied. If the source log was replaced (topic recreated, failover, truncation), run "icefloe positions WORKER.properties CONNECTOR.json --table ${tableName} --adopt": it forgets the applied offsets the live log no longer vouches for, and the next round applies the announcement; if they are the old records again, delete them from the table after it applies them, or move the group connect-${input.connector} past them before (docs/sink.md)`,
        at,
        { topic: sp.topic, partition: sp.partition, first: sp.firstOffset, last: sp.lastOffset, appliedThrough: overlap.appliedThrough, why: overlap.why },
      ),
      oldest,
    );
  }
  if (overlap.kind === 'overlap') {
    const g = overlap.candidate.group;
    const at = { partition: g.partition, offset: firstOffsetOf(g) };
    const sp = overlap.span;
    return stopped(
      stop(
        'source-overlap',
        `${tableName}: the announcement at control ${at.partition}@${at.offset} carries ${sp.topic}[${sp.partition}] offsets ${sp.firstOffset}..${sp.lastOffset}, which partly overlap what is applied already (through ${overlap.appliedThrough}): applying it would write records twice, dropping it would lose others`,
        at,
        { topic: sp.topic, partition: sp.partition, first: sp.firstOffset, last: sp.lastOffset, appliedThrough: overlap.appliedThrough },
      ),
      oldest,
    );
  }
  const unordered = overlap.dropped[0];
  if (unordered !== undefined && (input.logStartOffsets?.size ?? 1) > 1) {
    // With several control partitions a committer catching up reads them to different depths, so one source
    // partition's announcements may be applied out of order: "wholly covered" could then be a later cycle's
    // range covering an earlier one that was never applied. Fail closed instead of dropping.
    const g = unordered.group;
    const at = { partition: g.partition, offset: firstOffsetOf(g) };
    return stopped(
      stop('source-overlap', `${tableName}: the announcement at control ${at.partition}@${at.offset} carries source records the table already holds; with ${input.logStartOffsets?.size} control partitions it is not dropped (the order of announcements across control partitions is not guaranteed): check the table's rows for those offsets, then --adopt or --reapply`, at),
      oldest,
    );
  }
  return { kept: overlap.kept, dropped: overlap.dropped, applied: stampTopicIds(overlap.applied, logs) };
}

function ages(nowMs: number, oldest: number | undefined): { oldestUnappliedAgeMs?: number; oldestUnappliedMs?: number } {
  return oldest === undefined ? {} : { oldestUnappliedAgeMs: Math.max(0, nowMs - oldest), oldestUnappliedMs: oldest };
}

/** Every announcement part read, where it is and whose it is (for the rollback rules). */
function announcementsAt(records: readonly ControlRecordRead[]): { partition: number; offset: bigint; connector: string; table: TableRef; tableUuid: string }[] {
  const out: { partition: number; offset: bigint; connector: string; table: TableRef; tableUuid: string }[] = [];
  for (const r of records) {
    if ('event' in r && r.event.type === 'announcement') out.push({ partition: r.partition, offset: r.offset, connector: r.event.connector, table: r.event.table, tableUuid: r.event.tableUuid });
  }
  return out;
}

/** An announcement's parts as read: one task's cycle for this table on one control partition. */
interface Group {
  readonly partition: number;
  readonly parts: { readonly offset: bigint; readonly timestampMs?: number; readonly part: AnnouncementPart }[];
}

/** A whole, valid announcement that may be included if nothing before it on its partition waits. */
interface Candidate {
  readonly group: Group;
  readonly announcement: Announcement;
}

interface CycleCompleteRead {
  readonly partition: number;
  readonly offset: bigint;
  readonly event: CycleComplete;
}

const compareOffsets = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);
const firstOffsetOf = (g: Group): bigint => g.parts[0]?.offset ?? 0n;
const lastOffsetOf = (g: Group): bigint => g.parts[g.parts.length - 1]?.offset ?? 0n;

/** A stored position below its control partition's log start: announcements never applied were deleted. */
function lostRecordsStop(base: ControlPositions, logStartOffsets: ReadonlyMap<number, bigint> | undefined, table: string): StopReason | undefined {
  for (const [p, pos] of base) {
    const start = logStartOffsets?.get(p);
    if (start !== undefined && pos < start) {
      return stop('control-records-lost', `${table}: control partition ${p} starts at ${start} but this table has applied only up to ${pos}: unapplied announcements were deleted by retention`, { partition: p, offset: pos }, {
        logStartOffset: start,
      });
    }
  }
  return undefined;
}

/** Records per control partition, in offset order, at or after the stored position, deduplicated. */
function recordsByPartition(records: readonly ControlRecordRead[], base: ControlPositions): Map<number, ControlRecordRead[]> {
  const byPartition = new Map<number, ControlRecordRead[]>();
  for (const r of records) {
    if (r.offset < (base.get(r.partition) ?? 0n)) continue;
    let list = byPartition.get(r.partition);
    if (list === undefined) byPartition.set(r.partition, (list = []));
    list.push(r);
  }
  for (const [p, list] of byPartition) {
    list.sort((a, b) => compareOffsets(a.offset, b.offset));
    byPartition.set(
      p,
      list.filter((r, i) => i === 0 || list[i - 1]?.offset !== r.offset),
    );
  }
  return byPartition;
}

/**
 * Walks the records partition by partition: this connector's announcement parts for this table grouped by
 * (task, cycle), its cycle-complete events, and an undecodable record as a stop blocker.
 */
function groupAnnouncements(
  byPartition: ReadonlyMap<number, readonly ControlRecordRead[]>,
  input: Pick<TableCommitInput, 'connector' | 'table'>,
  tableName: string,
): { groups: Group[]; blockers: Blocker[]; cycleCompletes: CycleCompleteRead[] } {
  const blockers: Blocker[] = [];
  const groups: Group[] = [];
  const cycleCompletes: CycleCompleteRead[] = [];
  for (const [partition, list] of [...byPartition].sort((a, b) => a[0] - b[0])) {
    const open = new Map<string, Group>();
    for (const r of list) {
      if ('error' in r) {
        // Only this connector's records reach the planner, so this one may be an announcement for this table:
        // never skipped. A newer major version names the fix (upgrade this worker) apart from corruption.
        const reason =
          r.unsupportedVersion === true
            ? stop('unsupported-control-version', `${tableName}: control record ${partition}@${r.offset} of this connector was written by a newer Icefloe (unknown control event version); upgrade this worker: ${r.error}`, { partition, offset: r.offset })
            : stop('undecodable-event', `${tableName}: control record ${partition}@${r.offset} of this connector cannot be decoded (it may be an announcement for this table): ${r.error}`, { partition, offset: r.offset });
        blockers.push({ partition, offset: r.offset, kind: 'stop', reason });
        continue;
      }
      const e = r.event;
      if (e.connector !== input.connector) continue;
      if (e.type === 'cycle-complete') {
        cycleCompletes.push({ partition, offset: r.offset, event: e });
        continue;
      }
      if (!sameTable(e.table, input.table)) continue;
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
  return { groups, blockers, cycleCompletes };
}

/** Validates each announcement: a valid complete one is a candidate, anything else a blocker (pushed) at its first part. */
function validateAnnouncements(
  groups: readonly Group[],
  byPartition: ReadonlyMap<number, readonly ControlRecordRead[]>,
  input: TableCommitInput,
  tableName: string,
  blockers: Blocker[],
): Candidate[] {
  const candidates: Candidate[] = [];
  const known: KnownIds = {
    schemaIds: new Set(input.metadata.schemas.map((s) => s.schemaId)),
    specIds: new Set(input.metadata.partitionSpecs.map((s) => s.specId)),
  };
  for (const g of groups) {
    const checked = checkAnnouncement(g, byPartition, input, tableName, known);
    if (checked === undefined) continue;
    if ('group' in checked) candidates.push(checked);
    else blockers.push(checked);
  }
  return candidates;
}

interface KnownIds {
  readonly schemaIds: ReadonlySet<number>;
  readonly specIds: ReadonlySet<number>;
}

/**
 * One group: its parts put back together and checked against the table. A blocker when the parts are out
 * of order, repeated, inconsistent or missing for good, or when the announcement cannot be applied (table
 * UUID, schema or spec id, a missing file); "wait" when only trailing parts are not read yet and no later
 * record of its task proves them missing.
 */
function checkAnnouncement(
  g: Group,
  byPartition: ReadonlyMap<number, readonly ControlRecordRead[]>,
  input: TableCommitInput,
  tableName: string,
  known: KnownIds,
): Candidate | Blocker | undefined {
  const md = input.metadata;
  const first = g.parts[0];
  if (first === undefined) return undefined;
  const where = { partition: g.partition, offset: first.offset };
  const what = `announcement of task ${first.part.taskId} cycle ${first.part.cycleId} at control ${g.partition}@${first.offset}`;
  const block = (reason: StopReason): Blocker => ({ ...where, kind: 'stop', reason });
  const indices = g.parts.map((p) => p.part.part);
  if (indices.some((v, i) => i > 0 && v <= (indices[i - 1] ?? -1))) {
    return block(stop('inconsistent-parts', `${tableName}: ${what}: parts are not in order or repeat (${indices.join(', ')})`, where, { indices }));
  }
  const re = reassembleAnnouncement(g.parts.map((p) => p.part));
  if (re.kind === 'inconsistent') return block(stop('inconsistent-parts', `${tableName}: ${what}: ${re.message}`, where));
  if (re.kind === 'incomplete') {
    const lastOffset = g.parts[g.parts.length - 1]?.offset ?? first.offset;
    const maxPresent = Math.max(...indices);
    const laterFromTask = (byPartition.get(g.partition) ?? []).some(
      (r) => r.offset > lastOffset && 'event' in r && r.event.connector === input.connector && r.event.taskId === first.part.taskId,
    );
    if (re.missing.some((m) => m < maxPresent) || laterFromTask) {
      return block(
        stop('part-missing', `${tableName}: ${what}: part(s) ${re.missing.join(', ')} of ${re.parts} are missing from the control topic`, where, {
          missing: re.missing,
          parts: re.parts,
        }),
      );
    }
    return { ...where, kind: 'wait' };
  }
  const a = re.announcement;
  if (a.tableUuid !== md.tableUuid) {
    return block(stop('table-uuid-mismatch', `${tableName}: ${what} was written for table UUID ${a.tableUuid}, but the table is ${md.tableUuid} (replaced?)`, where, { announced: a.tableUuid, actual: md.tableUuid }));
  }
  if (!known.schemaIds.has(a.schemaId)) {
    return block(stop('unknown-schema', `${tableName}: ${what} was written with schema id ${a.schemaId}, which the table does not have`, where, { schemaId: a.schemaId }));
  }
  const badSpec = [a.specId, ...a.files.map((f) => f.specId)].find((s) => !known.specIds.has(s));
  if (badSpec !== undefined) {
    return block(stop('unknown-partition-spec', `${tableName}: ${what} references partition spec id ${badSpec}, which the table does not have`, where, { specId: badSpec }));
  }
  const missing = input.isFileMissing === undefined ? undefined : a.files.find((f) => input.isFileMissing?.(f.filePath) === true);
  if (missing !== undefined) {
    return block(stop('file-missing', `${tableName}: ${what} names ${missing.filePath}, which does not exist`, where, { path: missing.filePath }));
  }
  return { group: g, announcement: a };
}

/** The earliest Kafka timestamp among the groups' parts (for the retention alarm), if any carries one. */
function oldestTimestamp(gs: readonly Group[]): number | undefined {
  const ts = gs.flatMap((g) => g.parts.flatMap((p) => (p.timestampMs === undefined ? [] : [p.timestampMs])));
  return ts.length === 0 ? undefined : Math.min(...ts);
}

/**
 * The candidates below each partition's cut, in (partition, offset) order. The cut is the first blocked
 * (waiting) announcement; an announcement straddling the cut moves it down to its first part, so every
 * included announcement lies wholly below the new position.
 */
function includedAnnouncements(candidates: readonly Candidate[], blockers: readonly Blocker[]): Candidate[] {
  const cut = new Map<number, bigint>();
  for (const b of blockers) {
    const c = cut.get(b.partition);
    if (c === undefined || b.offset < c) cut.set(b.partition, b.offset);
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const { group } of candidates) {
      const c = cut.get(group.partition);
      const firstOffset = firstOffsetOf(group);
      if (c !== undefined && firstOffset < c && lastOffsetOf(group) >= c) {
        cut.set(group.partition, firstOffset);
        changed = true;
      }
    }
  }
  return candidates
    .filter(({ group }) => {
      const c = cut.get(group.partition);
      return c === undefined || lastOffsetOf(group) < c;
    })
    .sort((x, y) => x.group.partition - y.group.partition || (firstOffsetOf(x.group) < firstOffsetOf(y.group) ? -1 : 1));
}

/** A file announced twice would be committed twice: stop instead of de-duplicating silently. */
function duplicateFileStop(included: readonly Candidate[], tableName: string): StopReason | undefined {
  const seenPaths = new Map<string, { partition: number; offset: bigint }>();
  for (const { group, announcement } of included) {
    const at = { partition: group.partition, offset: firstOffsetOf(group) };
    for (const f of announcement.files) {
      const prior = seenPaths.get(f.filePath);
      if (prior !== undefined) {
        return stop('duplicate-file', `${tableName}: ${f.filePath} is announced at control ${prior.partition}@${prior.offset} and again at ${at.partition}@${at.offset}`, at, {
          path: f.filePath,
          first: prior,
        });
      }
      seenPaths.set(f.filePath, at);
    }
  }
  return undefined;
}

/** The commit of the included announcements: new positions, commit id, source ranges, watermark, summary. */
function commitPlan(
  input: TableCommitInput,
  base: ControlPositions,
  included: readonly Candidate[],
  source: { readonly kept: readonly Candidate[]; readonly dropped: readonly Candidate[]; readonly applied: SourceApplied },
  waiting: number,
  cycleCompletes: readonly CycleCompleteRead[],
  common: PlanCommon,
): TablePlan {
  const { connector, table } = input;
  const prevWatermark = input.positions.kind === 'positions' ? input.positions.validThroughTs : undefined;
  const ranges = new Map<number, { first: bigint; last: bigint }>();
  for (const { group } of included) {
    const f = firstOffsetOf(group);
    const l = lastOffsetOf(group);
    const r = ranges.get(group.partition);
    ranges.set(group.partition, r === undefined ? { first: f, last: l } : { first: r.first < f ? r.first : f, last: r.last > l ? r.last : l });
  }
  const positions = new Map(base);
  for (const [p, r] of ranges) positions.set(p, r.last + 1n);

  const sourceRanges = mergeSpans(source.kept.flatMap((c) => c.announcement.sourceSpans));
  const validThroughTs = commitWatermark(prevWatermark, included, waiting > 0 || input.readToEnd === false, cycleCompletes, input.sources);

  const summary: Record<string, string> = {
    ...positionsSummary(connector, positions, input.live),
    [sourceOffsetsKey(connector)]: encodeSourceRanges(sourceRanges),
    [sourceAppliedKey(connector)]: encodeSourceApplied(source.applied),
    // Only when some topic has an id: a summary without ids reads as before (an older reader ignores the key anyway).
    ...([...source.applied.values()].some((v) => v.topicId !== undefined) ? { [sourceTopicIdsKey(connector)]: encodeSourceTopicIds(source.applied) } : {}),
    ...(validThroughTs === undefined ? {} : { [VALID_THROUGH_TS_KEY]: String(validThroughTs) }),
  };
  return {
    kind: 'commit',
    commitId: commitIdFor(connector, table, ranges, input.live.controlTopicId),
    files: source.kept.flatMap((c) => c.announcement.files),
    positions,
    applied: source.kept.map(appliedOf),
    dropped: source.dropped.map(appliedOf),
    sourceRanges,
    ...(validThroughTs === undefined ? {} : { validThroughTs }),
    summary,
    waiting,
    ...common,
  };
}

function appliedOf(c: Candidate): AppliedAnnouncement {
  return { partition: c.group.partition, offsets: c.group.parts.map((p) => p.offset), announcement: c.announcement };
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
