/**
 * Defence in depth against announcing the same source records twice (a zombie task whose cycle was not
 * fenced, a consumer group reset backwards): per table and source partition, the highest source offset the
 * connector applied, carried forward in every snapshot it commits (summary key
 * `icefloe.source-applied.<connector>` = {"<topic>": {"<partition>": lastOffsetApplied}}), and the rule the
 * planner applies to every announcement it is about to include:
 *   - every span at or below what was applied (wholly covered): the records are in the table already; the
 *     announcement is dropped (its files are not committed), its control position is passed, and the
 *     committer logs it;
 *   - some span partly covered, or covered spans mixed with new ones (partial overlap): applying would
 *     write some records twice and dropping would lose others, so the table stops with the reason;
 *   - otherwise it is applied and raises the highest offsets.
 * Within one plan the announcements are also checked against each other's exact spans.
 *
 * "Covered" is a claim about records, but the offsets only name records of one log: a source topic deleted
 * and recreated (Kafka deletes the group's offsets with it, so the task starts the new log at earliest), a
 * failover to a mirror with lower offsets, or a truncated log put different records under the same offsets.
 * So a covered (or overlapping) span is judged only when the committer can tie the applied offsets to the
 * live log: the topic id stored with them (`icefloe.source-topic-ids.<connector>` = {"<topic>": "<id>"}) is the
 * live topic's id, and the partition's log still reaches the applied offset (its end is past it). Otherwise
 * the table stops (`source-log-changed`): never a silent drop, never a duplicate. `icefloe positions --adopt`
 * is the recovery: it forgets the offsets the live log no longer vouches for. Entries without an id (written
 * before ids were stored) are stamped with the live id only while the live log reaches every one of them.
 * Residual: announcements do not carry the topic id, so the committer's view of the live log stands in for
 * the log the task read (module `commit-state.ts`; docs/sink.md).
 *
 * The rule relies on the connector applying one source partition's announcements in source-offset order.
 * That holds because a partition changes task only after the previous owner's cycle transaction committed
 * (its announcement is then below the last stable offset every later read uses). Across control partitions
 * it holds only when every round reads each of them to the same point, which a committer catching up in
 * bounded steps does not: so with more than one control partition a wholly covered announcement stops the
 * table (commit-state.ts) instead of being dropped. The default control topic has one partition.
 *
 * Owns: the key, its codec, the overlap rule. Must not: do I/O.
 */
import { parseJson, stringifyJson, toBigInt } from '../core/json.ts';
import type { Announcement, SourceSpan } from './events.ts';
import { sourceKey } from './watermark.ts';

export const SOURCE_APPLIED_PREFIX = 'icefloe.source-applied.';
export const sourceAppliedKey = (connector: string): string => SOURCE_APPLIED_PREFIX + connector;
export const SOURCE_TOPIC_IDS_PREFIX = 'icefloe.source-topic-ids.';
export const sourceTopicIdsKey = (connector: string): string => SOURCE_TOPIC_IDS_PREFIX + connector;

/** One source partition's highest applied offset, and the id of the topic (incarnation) it was applied from, when known. */
export interface AppliedEntry {
  readonly topic: string;
  readonly partition: number;
  readonly last: bigint;
  readonly topicId?: string;
}

/** `sourceKey(topic, partition)` → the highest offset applied; also keeps topic and partition for encoding. */
export type SourceApplied = ReadonlyMap<string, AppliedEntry>;

/** What the committer sees of the live source logs now: topic ids and each partition's log end. */
export interface SourceLogs {
  /** topic → its live topic id (absent: not known this round). */
  readonly topicIds: ReadonlyMap<string, string>;
  /** `sourceKey` → the partition's log start and end (high watermark: the next offset). */
  readonly ends: ReadonlyMap<string, { readonly low: bigint; readonly high: bigint }>;
  /**
   * Topics the cluster answered it does not have (deleted, not recreated yet). Not "could not look": a log
   * that is gone vouches for nothing, and waiting for it would hold the table forever while it shows RUNNING.
   */
  readonly gone?: ReadonlySet<string>;
}

/**
 * Whether the live log vouches for `entry`: the same topic id, and the partition's log still reaches the
 * applied offset. `unknown` when the committer could not look this round (retry, never guess).
 */
export function appliedIdentity(entry: AppliedEntry, logs: SourceLogs | undefined): { readonly kind: 'same' } | { readonly kind: 'unknown' } | { readonly kind: 'changed'; readonly why: string } {
  if (logs?.gone?.has(entry.topic) === true) return { kind: 'changed', why: `topic ${entry.topic} no longer exists (deleted)` };
  const liveId = logs?.topicIds.get(entry.topic);
  const end = logs?.ends.get(sourceKey(entry.topic, entry.partition));
  if (liveId === undefined || end === undefined) return { kind: 'unknown' };
  if (entry.topicId !== undefined && entry.topicId !== liveId) {
    return { kind: 'changed', why: `topic ${entry.topic} is not the one the table applied from (topic id ${entry.topicId}, now ${liveId}: deleted and recreated, or another cluster)` };
  }
  if (end.high <= entry.last) {
    return { kind: 'changed', why: `the log of ${entry.topic}[${entry.partition}] ends at ${end.high}, below the offset the table applied (${entry.last}): recreated, truncated, or a failover to a log with lower offsets` };
  }
  if (entry.topicId === undefined) return { kind: 'changed', why: `the table's applied offsets of ${entry.topic} were stored without a topic id (an older Icefloe), so they cannot be tied to the live topic` };
  return { kind: 'same' };
}

/** `{"<topic>": "<topic id>"}` for the topics whose entries carry an id. */
export function encodeSourceTopicIds(applied: SourceApplied): string {
  const out: Record<string, string> = {};
  for (const v of [...applied.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0))) if (v.topicId !== undefined) out[v.topic] ??= v.topicId;
  return stringifyJson(out);
}

/**
 * Stamps the entries of each topic that has no id with its live id, when the live log reaches every one of
 * them (module header); entries of a topic with an id keep it (one id per topic).
 */
export function stampTopicIds(applied: SourceApplied, logs: SourceLogs | undefined): Map<string, AppliedEntry> {
  const byTopic = new Map<string, AppliedEntry[]>();
  for (const v of applied.values()) byTopic.set(v.topic, [...(byTopic.get(v.topic) ?? []), v]);
  const out = new Map<string, AppliedEntry>();
  for (const [topic, entries] of byTopic) {
    const known = entries.find((e) => e.topicId !== undefined)?.topicId;
    const liveId = logs?.topicIds.get(topic);
    const reached = liveId !== undefined && entries.every((e) => (logs?.ends.get(sourceKey(topic, e.partition))?.high ?? -1n) > e.last);
    const id = known ?? (reached ? liveId : undefined);
    for (const e of entries) {
      const rest: AppliedEntry = { topic: e.topic, partition: e.partition, last: e.last };
      out.set(sourceKey(topic, e.partition), id === undefined ? rest : { ...rest, topicId: id });
    }
  }
  return out;
}

/** The entries the live log still vouches for (`icefloe positions --adopt`: what it does not vouch for is forgotten). */
export function vouchedFor(applied: SourceApplied, logs: SourceLogs): Map<string, AppliedEntry> {
  const out = new Map<string, AppliedEntry>();
  for (const [k, v] of stampTopicIds(applied, logs)) if (appliedIdentity(v, logs).kind === 'same') out.set(k, v);
  return out;
}

export function encodeSourceApplied(applied: SourceApplied): string {
  const out: Record<string, Record<string, bigint>> = {};
  for (const v of [...applied.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))) (out[v.topic] ??= {})[String(v.partition)] = v.last;
  return stringifyJson(out);
}

/** Throws TypeError when malformed. `idsText`: the `icefloe.source-topic-ids` value stored with it, if any. */
export function decodeSourceApplied(text: string, idsText?: string): Map<string, AppliedEntry> {
  const ids = idsText === undefined ? {} : parseJson(idsText);
  if (typeof ids !== 'object' || ids === null || Array.isArray(ids)) throw new TypeError('source topic ids must be a JSON object');
  const doc = parseJson(text);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new TypeError('source offsets applied must be a JSON object');
  const out = new Map<string, AppliedEntry>();
  for (const [topic, parts] of Object.entries(doc as Record<string, unknown>)) {
    const topicId = (ids as Record<string, unknown>)[topic];
    if (topicId !== undefined && typeof topicId !== 'string') throw new TypeError(`the topic id of ${topic} must be a string`);
    if (typeof parts !== 'object' || parts === null || Array.isArray(parts)) throw new TypeError(`source offsets applied of ${topic} must be an object`);
    for (const [p, v] of Object.entries(parts as Record<string, unknown>)) {
      const partition = Number(p);
      if (!/^(0|[1-9]\d*)$/.test(p) || !Number.isSafeInteger(partition)) throw new TypeError(`${JSON.stringify(p)} is not a partition number`);
      out.set(sourceKey(topic, partition), { topic, partition, last: toBigInt(v, `offset of ${topic}[${p}]`), ...(topicId === undefined ? {} : { topicId }) });
    }
  }
  return out;
}

export interface OverlapCandidate {
  readonly announcement: Announcement;
}

export type OverlapOutcome<C extends OverlapCandidate> =
  | { readonly kind: 'ok'; readonly kept: C[]; readonly dropped: C[]; readonly applied: Map<string, AppliedEntry> }
  | { readonly kind: 'overlap'; readonly candidate: C; readonly span: SourceSpan; readonly appliedThrough: bigint }
  /** A span at or below what was applied, but the live log does not vouch for the applied offsets. */
  | { readonly kind: 'log-changed'; readonly candidate: C; readonly span: SourceSpan; readonly appliedThrough: bigint; readonly why: string }
  /** The same, but the committer could not look at the live log this round: decide next round. */
  | { readonly kind: 'unknown'; readonly candidate: C; readonly span: SourceSpan };

/**
 * The rule of the module header over `candidates`, in the order given (control partition and offset):
 * against what the table applied before (a highest offset per source partition, judged only where `logs`
 * ties it to the live log), and against the exact spans kept earlier in the same plan (so the order between
 * control partitions does not matter within it).
 */
export function checkSourceOverlap<C extends OverlapCandidate>(candidates: readonly C[], before: SourceApplied, logs?: SourceLogs): OverlapOutcome<C> {
  const applied = new Map<string, AppliedEntry>(before);
  const planned = new Map<string, { first: bigint; last: bigint }[]>();
  const kept: C[] = [];
  const dropped: C[] = [];
  for (const c of candidates) {
    const spans = c.announcement.sourceSpans;
    let covered = 0;
    let overlap: { span: SourceSpan; through: bigint } | undefined;
    for (const s of spans) {
      const key = sourceKey(s.topic, s.partition);
      const entry = before.get(key);
      const through = entry?.last ?? -1n;
      if (entry !== undefined && s.firstOffset <= through) {
        // Offsets at or below what was applied: the same records only if the live log vouches for them.
        const identity = appliedIdentity(entry, logs);
        if (identity.kind === 'unknown') return { kind: 'unknown', candidate: c, span: s };
        if (identity.kind === 'changed') return { kind: 'log-changed', candidate: c, span: s, appliedThrough: through, why: identity.why };
      }
      const inPlan = planned.get(key) ?? [];
      if (s.lastOffset <= through || inPlan.some((r) => r.first <= s.firstOffset && s.lastOffset <= r.last)) covered++;
      else if (s.firstOffset <= through || inPlan.some((r) => r.first <= s.lastOffset && s.firstOffset <= r.last)) overlap ??= { span: s, through };
    }
    if (spans.length > 0 && covered === spans.length) {
      dropped.push(c);
      continue;
    }
    if (overlap === undefined && covered > 0) overlap = { span: spans[0] as SourceSpan, through: before.get(sourceKey(spans[0]?.topic ?? '', spans[0]?.partition ?? 0))?.last ?? -1n };
    if (overlap !== undefined) return { kind: 'overlap', candidate: c, span: overlap.span, appliedThrough: overlap.through };
    for (const s of spans) {
      const key = sourceKey(s.topic, s.partition);
      planned.set(key, [...(planned.get(key) ?? []), { first: s.firstOffset, last: s.lastOffset }]);
      const prior = applied.get(key);
      // The topic id stays the one the entry had: only stampTopicIds gives an id, when the live log vouches.
      if (s.lastOffset > (prior?.last ?? -1n)) applied.set(key, { topic: s.topic, partition: s.partition, last: s.lastOffset, ...(prior?.topicId === undefined ? {} : { topicId: prior.topicId }) });
    }
    kept.push(c);
  }
  return { kind: 'ok', kept, dropped, applied };
}
