/**
 * The watermark (`icefloe.valid-through-ts`) a table commit stores, precisely (docs/architecture.md,
 * "Consequences", watermark). Assumption: record timestamps are non-decreasing within a source partition (LogAppendTime,
 * or CreateTime from well-behaved producers). Meaning: every record routed to this table with timestamp
 * <= W is in the table. For one commit (planned by commit-state.ts):
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
 * Owns: the rule. Must not: do I/O or read a clock (pure, like the planner it serves).
 */
import type { Announcement, CycleComplete, PartitionAssignment } from './events.ts';

/** The key of a source partition in the maps of a commit. */
export const sourceKey = (topic: string, partition: number): string => `${topic}/${partition}`;

/**
 * The watermark a commit stores: the candidate (module header) when it can advance, never below
 * `previous`, the value stored with the positions the commit was planned from; undefined when neither exists.
 */
export function commitWatermark(
  previous: number | undefined,
  included: readonly { readonly announcement: Announcement }[],
  anyWaiting: boolean,
  cycleCompletes: readonly { readonly event: CycleComplete }[],
): number | undefined {
  const candidate = candidateWatermark(included, anyWaiting, cycleCompletes);
  return candidate === undefined ? previous : previous === undefined ? candidate : Math.max(previous, candidate);
}

/** The candidate watermark of one commit, or undefined if it cannot advance. */
function candidateWatermark(
  included: readonly { readonly announcement: Announcement }[],
  anyWaiting: boolean,
  cycleCompletes: readonly { readonly event: CycleComplete }[],
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
