/**
 * The connector-level control position C and the position rules built on it (docs/sink.md, "Control
 * positions"): pure codecs and decisions; the committer reads and commits, the planner applies them.
 *
 * C is the committed offsets of the consumer group `<iceberg.control.group-id-prefix><connector>` on the
 * control topic (nobody joins that group; the committer commits to it as a simple consumer). Each offset's
 * commit metadata says what it means:
 *   seed      written once, when the group has no offsets at all (the connector's first committer start):
 *             C[p] = the partition's log start then. Announcements below it are assumed not to be this
 *             connector's (a warning says so when it is above 0). A seed never raises a table's position.
 *   applied   written after a committer round: every table known to the connector has applied (or has
 *             nothing) below C[p]. It only grows; it is committed every round, changed or not, so the
 *             group's offsets do not expire (offsets.retention.minutes) while the worker runs. A worker
 *             down for longer than that finds no offsets and seeds again (documented).
 * The metadata also carries the control topic id: offsets of an earlier topic of the same name are not C.
 * An `applied` entry may carry R (`rest=<offset> except=<table keys>`): every table the committer knew,
 * except those listed (stopped, failing or parked in that round), applied everything below R[p]. C is held
 * back by what a stopped table still needs; R is not, so when retention deletes the log below C only the
 * tables that really lost announcements stop (control-records-lost), not every table idle behind C.
 *
 * The table's effective position E[p] = its stored position T[p]; where it stores none, or where C[p] is
 * `applied` and above T[p], E[p] = C[p] (nothing for the table was there: an idle table is not behind),
 * raised to R[p] when the table is not in R's except list.
 * Announcements below E are not the table's to apply; E below the log start means some were deleted.
 *
 * Tables that move backwards (rollback, branch reset, drop and recreate) are stopped with
 * `positions-rolled-back` unless an operator chose a recovery with `icefloe positions` (positions-tool.ts):
 *   --reapply  table property icefloe.reapply.<connector> = {"snapshot-id": S, "through": {p: X[p]}} with X
 *              what the table had applied: C raised by R and by the snapshots of the connector it still lists:
 *              while the table's positions come from S or a descendant and are below `through`, the
 *              table is planned from its own positions (C does not raise them) and no rollback check fires;
 *   --adopt    a snapshot without files whose positions are at least everything applied before
 *              (summary key icefloe.adopted.<connector>): nothing rolled back is applied again.
 *
 * Owns: the group id, the metadata codec, C's meaning, E, the rollback rules. Must not: do I/O or read a
 * clock.
 */
import { createHash } from 'node:crypto';
import { parseJson, stringifyJson, toBigInt } from '../core/json.ts';
import type { TableMetadata } from '../iceberg/metadata.ts';
import { MAIN_BRANCH, ancestors, commitBaseId } from '../commit/model.ts';
import { decodePositions, encodePositions } from './control-positions.ts';
import type { ControlPositions, PositionsRead } from './control-positions.ts';
import { sameTable, tableRefString } from './events.ts';
import type { TableRef } from './events.ts';

export type ConnectorPositionKind = 'seed' | 'applied';

export interface ConnectorPositionEntry {
  readonly offset: bigint;
  readonly kind: ConnectorPositionKind;
  /**
   * `applied` only: every table the committer knew applied everything below `rest.offset` (>= `offset`)
   * except the tables in `except` (`tableKey`s: stopped, failing or parked then). C itself stays below what
   * those tables still need; R lets the other tables' effective position go past it, so that a stopped table
   * holding C back does not make the others look behind when retention deletes the log below C.
   */
  readonly rest?: RestPositions;
}

export interface RestPositions {
  readonly offset: bigint;
  readonly except: readonly string[];
}

/** What a round learned for R: per control partition where the tables not in `except` are, and `except`. */
export interface RestThrough {
  readonly through: ReadonlyMap<number, bigint>;
  readonly except: readonly string[];
}

/** Control partition → C[p]. */
export type ConnectorPositions = ReadonlyMap<number, ConnectorPositionEntry>;

export const REAPPLY_PREFIX = 'icefloe.reapply.';
export const ADOPTED_PREFIX = 'icefloe.adopted.';
export const reapplyKey = (connector: string): string => REAPPLY_PREFIX + connector;
export const adoptedKey = (connector: string): string => ADOPTED_PREFIX + connector;

export function controlGroupId(prefix: string, connector: string): string {
  return prefix + connector;
}

const METADATA = /^icefloe\/1 (seed|applied) ([0-9a-f-]{36})(?: rest=(\d+) except=((?:[0-9a-f]{12})(?:,[0-9a-f]{12})*)?)?$/;
/** Kafka's default offset.metadata.max.bytes is 4096: R is left out (C alone is always true) rather than refused. */
const METADATA_MAX_CHARS = 4000;

/** The key a table has in R's `except` list: 12 hex digits of the SHA-256 of its name (metadata is short). */
export function tableKey(table: TableRef): string {
  return createHash('sha256').update(tableRefString(table)).digest('hex').slice(0, 12);
}

export function encodePositionMetadata(kind: ConnectorPositionKind, controlTopicId: string, rest?: RestPositions): string {
  const base = `icefloe/1 ${kind} ${controlTopicId}`;
  if (rest === undefined || kind !== 'applied') return base;
  const full = `${base} rest=${rest.offset} except=${[...rest.except].sort().join(',')}`;
  return full.length <= METADATA_MAX_CHARS ? full : base;
}

export type GroupPositionsRead =
  | { readonly kind: 'none' }
  | { readonly kind: 'positions'; readonly positions: ConnectorPositions }
  /** Offsets of the group that were committed for another control topic of the same name (recreated). */
  | { readonly kind: 'other-topic'; readonly topicIds: readonly string[] }
  /** Offsets whose metadata is not ours: someone else commits to this group. */
  | { readonly kind: 'foreign'; readonly partition: number; readonly metadata: string | null };

/** C from the group's committed offsets on the control topic (`controlTopicId`: the live one). */
export function readGroupPositions(offsets: readonly { readonly partition: number; readonly offset: bigint; readonly metadata: string | null }[], controlTopicId: string): GroupPositionsRead {
  if (offsets.length === 0) return { kind: 'none' };
  const positions = new Map<number, ConnectorPositionEntry>();
  const others = new Set<string>();
  for (const o of offsets) {
    const m = METADATA.exec(o.metadata ?? '');
    if (m === null) return { kind: 'foreign', partition: o.partition, metadata: o.metadata };
    if (m[2] !== controlTopicId) others.add(m[2] as string);
    else {
      const rest = m[3] === undefined ? undefined : { offset: BigInt(m[3]), except: m[4] === undefined || m[4] === '' ? [] : m[4].split(',') };
      positions.set(o.partition, { offset: o.offset, kind: m[1] as ConnectorPositionKind, ...(rest === undefined || rest.offset < o.offset ? {} : { rest }) });
    }
  }
  if (positions.size === 0) return { kind: 'other-topic', topicIds: [...others] };
  return { kind: 'positions', positions };
}

/**
 * What to commit after a round: C grows only; partitions the round knows nothing of keep their value. R is
 * what this round found (not grown from before: a table that resumes joins it where it is), on the
 * partitions it covers, and never below C.
 */
export function nextAppliedPositions(current: ConnectorPositions, appliedThrough: ReadonlyMap<number, bigint>, rest?: RestThrough): Map<number, ConnectorPositionEntry> {
  const out = new Map<number, ConnectorPositionEntry>();
  for (const [p, c] of current) out.set(p, { offset: c.offset, kind: c.kind });
  for (const [p, o] of appliedThrough) {
    const c = current.get(p);
    out.set(p, { offset: c === undefined || o > c.offset ? o : c.offset, kind: 'applied' });
  }
  for (const [p, o] of rest?.through ?? []) {
    const e = out.get(p);
    if (e === undefined || e.kind !== 'applied' || rest === undefined) continue;
    out.set(p, { ...e, rest: { offset: o > e.offset ? o : e.offset, except: rest.except } });
  }
  return out;
}

/**
 * Per control partition, the offset below which the connector position says `table` applied everything:
 * C, raised by R where C is `applied` and the table was not excepted. Seeds say nothing of the table (0).
 */
export function appliedThroughFor(c: ConnectorPositions, table: TableRef): Map<number, bigint> {
  const key = tableKey(table);
  const out = new Map<number, bigint>();
  for (const [p, e] of c) out.set(p, raisedBy(e, key));
  return out;
}

function raisedBy(e: ConnectorPositionEntry, key: string): bigint {
  if (e.kind !== 'applied' || e.rest === undefined || e.rest.except.includes(key)) return e.offset;
  return e.rest.offset > e.offset ? e.rest.offset : e.offset;
}

// --- recovery marks ---------------------------------------------------------------------------------

export interface ReapplyMark {
  /** The table's positions come from this snapshot (or a descendant) while the mark holds. */
  readonly snapshotId: bigint;
  /** What the table had applied when marked (C, raised by R and its listed snapshots): the mark is spent once nothing of the table is left below it. */
  readonly through: ControlPositions;
}

export function encodeReapplyMark(mark: ReapplyMark): string {
  return stringifyJson({ 'snapshot-id': mark.snapshotId, through: parseJson(encodePositions(mark.through)) });
}

/** Undefined when the property is absent; throws TypeError when it is malformed. */
export function readReapplyMark(md: TableMetadata, connector: string): ReapplyMark | undefined {
  const text = md.properties[reapplyKey(connector)];
  if (text === undefined) return undefined;
  const doc = parseJson(text);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new TypeError(`${reapplyKey(connector)} must be a JSON object`);
  const o = doc as Record<string, unknown>;
  return { snapshotId: toBigInt(o['snapshot-id'], 'snapshot-id'), through: decodePositions(stringifyJson(o['through'] ?? {})) };
}

/**
 * The mark applies to the table as it is: positions read from its snapshot or a descendant (on `branch`,
 * the branch the connector commits to), still below `through`.
 */
export function reapplyHolds(md: TableMetadata, mark: ReapplyMark | undefined, read: PositionsRead, branch: string = MAIN_BRANCH): boolean {
  if (mark === undefined || read.kind !== 'positions') return false;
  let descends = false;
  for (const s of ancestors(md, commitBaseId(md, branch))) {
    if (s.snapshotId === mark.snapshotId) {
      descends = true;
      break;
    }
  }
  if (!descends) return false;
  return [...mark.through].some(([p, o]) => (read.positions.get(p) ?? -1n) < o);
}

/** The positions were read from a snapshot `icefloe positions --adopt` wrote. */
export function isAdopted(md: TableMetadata, connector: string, read: PositionsRead): boolean {
  if (read.kind !== 'positions') return false;
  return md.snapshots.find((s) => s.snapshotId === read.snapshotId)?.summary[adoptedKey(connector)] !== undefined;
}

// --- the rules --------------------------------------------------------------------------------------

/** A record of the control topic as far as the rollback check needs it. */
export interface AnnouncementAt {
  readonly partition: number;
  readonly offset: bigint;
  readonly connector: string;
  readonly table: TableRef;
  readonly tableUuid: string;
}

export interface PositionRulesInput {
  readonly connector: string;
  readonly table: TableRef;
  readonly tableName: string;
  readonly metadata: TableMetadata;
  /** T: the stored positions (`positions` read only; callers stop other kinds first). */
  readonly stored: ControlPositions;
  readonly read: PositionsRead;
  readonly connectorPositions: ConnectorPositions;
  readonly announcements: readonly AnnouncementAt[];
  /** What this committer (process) saw applied to the table before, if anything. */
  readonly appliedBefore?: { readonly tableUuid: string; readonly positions: ControlPositions };
  /** The branch the connector commits this table to (default main): a re-apply mark is checked on it. */
  readonly branch?: string;
}

export type PositionRulesOutcome =
  | { readonly kind: 'effective'; readonly effective: Map<number, bigint>; readonly reapplying: boolean }
  | { readonly kind: 'rolled-back'; readonly message: string; readonly partition?: number; readonly offset?: bigint; readonly context: Record<string, unknown> };

const RECOVERY = '`icefloe positions WORKER.properties CONNECTOR.json --table <t> --reapply` applies the rolled-back announcements again, `--adopt` keeps the table as it is (docs/sink.md, "Tables that move backwards")';

export function positionRules(input: PositionRulesInput): PositionRulesOutcome {
  const { stored, connectorPositions: c } = input;
  const reapplying = reapplyHolds(input.metadata, readMarkSafe(input.metadata, input.connector), input.read, input.branch);
  const acknowledged = reapplying || isAdopted(input.metadata, input.connector, input.read);
  const before = input.appliedBefore;
  if (before !== undefined && !acknowledged) {
    // Dropped and recreated: a fresh table holds nothing of the old one's, and everything below C was applied
    // (to the old one), so it starts at C like any new table (the tasks write to the new UUID on their own).
    // A replacement that carries our positions (a restored backup) is compared position by position.
    const replaced = before.tableUuid !== input.metadata.tableUuid;
    for (const [p, o] of replaced && input.read.kind === 'fresh' ? [] : before.positions) {
      const t = stored.get(p);
      if (t === undefined || t < o) {
        return rolledBack(
          `${input.tableName}: its position on control partition ${p} went back from ${o} (applied by this committer) to ${t ?? 'none'} (rollback or branch reset); nothing is applied to it until an operator decides: ${RECOVERY}`,
          { partition: p, appliedThrough: o, stored: t ?? null },
          p,
          t,
        );
      }
    }
  }
  const effective = new Map(stored);
  const key = tableKey(input.table);
  for (const [p, entry] of c) {
    const t = stored.get(p);
    // Re-applying: the table's own positions rule; where it has none, from the start of what is retained.
    if (reapplying) continue;
    // C, raised by R unless this table was excepted from it (it was stopped, failing or parked then).
    const through = raisedBy(entry, key);
    if (t !== undefined && (entry.kind !== 'applied' || through <= t)) continue;
    if (entry.kind === 'applied' && !acknowledged && input.read.kind === 'positions') {
      // C (or R) says this table applied everything below it: an announcement of this table in [T[p], that)
      // was applied and is no longer in the table (rolled back); re-applying it silently could write it twice.
      const from = t ?? 0n;
      const gone = input.announcements.find(
        (a) => a.partition === p && a.offset >= from && a.offset < through && a.connector === input.connector && a.tableUuid === input.metadata.tableUuid && sameTable(a.table, input.table),
      );
      if (gone !== undefined) {
        return rolledBack(
          `${input.tableName}: control partition ${p} holds an announcement for the table at ${gone.offset}, which the connector applied (it applied everything below ${through}) but the table's positions (${t ?? 'none'}) no longer include: the table was rolled back; nothing is applied to it until an operator decides: ${RECOVERY}`,
          { partition: p, announcement: gone.offset, stored: t ?? null, appliedThrough: through },
          p,
          gone.offset,
        );
      }
    }
    effective.set(p, through);
  }
  return { kind: 'effective', effective, reapplying };
}

function readMarkSafe(md: TableMetadata, connector: string): ReapplyMark | undefined {
  try {
    return readReapplyMark(md, connector);
  } catch {
    return undefined; // a malformed mark acknowledges nothing: the rollback rules stay in force
  }
}

function rolledBack(message: string, context: Record<string, unknown>, partition?: number, offset?: bigint): PositionRulesOutcome {
  return { kind: 'rolled-back', message, ...(partition === undefined ? {} : { partition }), ...(offset === undefined ? {} : { offset }), context };
}
