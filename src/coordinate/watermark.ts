/**
 * The watermark (`icefloe.valid-through-ts`) a table commit stores, precisely (docs/architecture.md,
 * "Consequences", watermark). Meaning: every record routed to this table with timestamp <= W is in the
 * table. Assumptions: record timestamps are non-decreasing within a source partition and not older than
 * their append by more than `FETCH_SLACK_MS` (LogAppendTime, or CreateTime from well-behaved producers).
 *
 * Per source partition the commit needs a bound B: every record of it with timestamp <= B is in the table
 * after this commit or not routed here. W = min over the partitions of B:
 * - A partition with pending data (spans in the included announcements): the largest `maxTimestampMs`
 *   of those spans (so W never passes the newest record committed).
 * - Otherwise its latest report (the `cycle-complete` with the largest next offset, from this table's
 *   buffer or from what the committer read before) says every record below its next offset is handled:
 *   in a file of a cycle up to that one, or routed elsewhere (a cycle's announcements and its
 *   cycle-complete are one transaction, so those files are applied, included, or waiting — then W does
 *   not move). A lagging report bounds the partition at its `maxTimestampMs` (unread records are not
 *   older). A caught-up report bounds it at the time it was taken (`caughtUpAtMs`: records appended later
 *   carry later timestamps) — or, when the committer finds the partition still ending where the report
 *   read to (`endOffset`, past transaction markers), at the time of that look (`endsAtMs`), less the
 *   slack: nothing arrived since. So an idle partition, also of a transactionally produced topic, does
 *   not hold W back, while a report one interval old never vouches for records that arrived since (with
 *   two or more tasks, another task's data may be newer).
 * - A partition without a report: one the committer finds empty (log start = end) counts as caught up at
 *   its look; any other the committer knows exists (the connector's topics' partitions) holds W.
 * W advances only if every applied announcement's cycle has its `cycle-complete` among the records read
 * (the cycle is whole) and no announcement for this table is left waiting; W never regresses (max with
 * the stored value): the previous claim stays true as data is only added.
 *
 * Owns: the rule, and the committer's memory of the latest report per source partition
 * (`SourceReports`). Must not: do I/O or read a clock (pure, like the planner it serves).
 */
import type { Announcement, CycleComplete, PartitionAssignment } from './events.ts';

/** The key of a source partition in the maps of a commit. */
export const sourceKey = (topic: string, partition: number): string => `${topic}/${partition}`;

/** One partition's report in a cycle-complete, with the report's caught-up time. */
export interface SourceReport {
  readonly assignment: PartitionAssignment;
  readonly caughtUpAtMs?: number;
}

/** How long a record may take from its timestamp to the end of its partition's log (module header). */
export const FETCH_SLACK_MS = 1000;

/** What the committer knows of the connector's source partitions beyond one table's buffer. */
export interface SourceKnowledge {
  /** Every source partition the connector consumes (`sourceKey`), when the committer knows them. */
  readonly partitions?: ReadonlySet<string>;
  /** The latest report the committer read per source partition (`sourceKey`), this round or before. */
  readonly reports?: ReadonlyMap<string, SourceReport>;
  /** Each source partition's log start and end (high watermark) as the committer last looked... */
  readonly ends?: ReadonlyMap<string, { readonly low: bigint; readonly high: bigint }>;
  /** ...at this time of its clock (taken before it asked). */
  readonly endsAtMs?: number;
}

/** The committer's memory of the latest report per source partition (largest next offset wins). */
export class SourceReports {
  readonly #latest = new Map<string, SourceReport>();

  observe(event: CycleComplete): void {
    for (const a of event.assignments) keepLatest(this.#latest, a, event.caughtUpAtMs);
  }

  get latest(): ReadonlyMap<string, SourceReport> {
    return this.#latest;
  }
}

function keepLatest(m: Map<string, SourceReport>, a: PartitionAssignment, caughtUpAtMs: number | undefined): void {
  const k = sourceKey(a.topic, a.partition);
  const prior = m.get(k);
  if (prior === undefined || a.nextOffset >= prior.assignment.nextOffset) m.set(k, { assignment: a, ...(caughtUpAtMs === undefined ? {} : { caughtUpAtMs }) });
}

/**
 * The watermark a commit stores: the candidate (module header) when it can advance, never below
 * `previous`, the value stored with the positions the commit was planned from; undefined when neither exists.
 */
export function commitWatermark(
  previous: number | undefined,
  included: readonly { readonly announcement: Announcement }[],
  anyWaiting: boolean,
  cycleCompletes: readonly { readonly event: CycleComplete }[],
  known: SourceKnowledge = {},
): number | undefined {
  const candidate = candidateWatermark(included, anyWaiting, cycleCompletes, known);
  return candidate === undefined ? previous : previous === undefined ? candidate : Math.max(previous, candidate);
}

/** The candidate watermark of one commit, or undefined if it cannot advance. */
function candidateWatermark(
  included: readonly { readonly announcement: Announcement }[],
  anyWaiting: boolean,
  cycleCompletes: readonly { readonly event: CycleComplete }[],
  known: SourceKnowledge,
): number | undefined {
  if (anyWaiting) return undefined;
  const complete = new Set(cycleCompletes.map((c) => `${c.event.taskId}\u0000${c.event.cycleId}`));
  if (included.some(({ announcement: a }) => !complete.has(`${a.taskId}\u0000${a.cycleId}`))) return undefined;
  const data = new Map<string, number>();
  for (const { announcement } of included) {
    for (const s of announcement.sourceSpans) {
      const k = sourceKey(s.topic, s.partition);
      data.set(k, Math.max(data.get(k) ?? Number.NEGATIVE_INFINITY, s.maxTimestampMs ?? Number.NEGATIVE_INFINITY));
    }
  }
  const latest = new Map<string, SourceReport>(known.reports ?? []);
  for (const c of cycleCompletes) for (const a of c.event.assignments) keepLatest(latest, a, c.event.caughtUpAtMs);
  const keys = new Set([...data.keys(), ...latest.keys(), ...(known.partitions ?? [])]);
  if (keys.size === 0) return undefined;
  let w = Number.POSITIVE_INFINITY;
  for (const k of keys) {
    const b = data.get(k) ?? idleBound(latest.get(k), known.ends?.get(k), known.endsAtMs);
    if (!Number.isFinite(b)) return undefined; // nothing vouches for this partition: hold W
    w = Math.min(w, b);
  }
  return w;
}

/** How far a partition without pending data is known to be in the table (module header); -Infinity: not. */
function idleBound(r: SourceReport | undefined, end: { readonly low: bigint; readonly high: bigint } | undefined, endsAtMs: number | undefined): number {
  const lookedAt = endsAtMs === undefined ? Number.NEGATIVE_INFINITY : endsAtMs - FETCH_SLACK_MS;
  if (r === undefined) return end !== undefined && end.high <= end.low ? lookedAt : Number.NEGATIVE_INFINITY;
  const a = r.assignment;
  const consumed = a.maxTimestampMs ?? Number.NEGATIVE_INFINITY;
  if (!a.caughtUp) return consumed;
  const unchanged = end !== undefined && end.high <= (a.endOffset ?? a.nextOffset);
  return Math.max(consumed, r.caughtUpAtMs ?? Number.NEGATIVE_INFINITY, unchanged ? lookedAt : Number.NEGATIVE_INFINITY);
}
