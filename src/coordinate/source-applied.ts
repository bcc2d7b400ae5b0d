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

/** `sourceKey(topic, partition)` → the highest offset applied; also keeps topic and partition for encoding. */
export type SourceApplied = ReadonlyMap<string, { readonly topic: string; readonly partition: number; readonly last: bigint }>;

export function encodeSourceApplied(applied: SourceApplied): string {
  const out: Record<string, Record<string, bigint>> = {};
  for (const v of [...applied.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))) (out[v.topic] ??= {})[String(v.partition)] = v.last;
  return stringifyJson(out);
}

/** Throws TypeError when malformed. */
export function decodeSourceApplied(text: string): Map<string, { topic: string; partition: number; last: bigint }> {
  const doc = parseJson(text);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new TypeError('source offsets applied must be a JSON object');
  const out = new Map<string, { topic: string; partition: number; last: bigint }>();
  for (const [topic, parts] of Object.entries(doc as Record<string, unknown>)) {
    if (typeof parts !== 'object' || parts === null || Array.isArray(parts)) throw new TypeError(`source offsets applied of ${topic} must be an object`);
    for (const [p, v] of Object.entries(parts as Record<string, unknown>)) {
      const partition = Number(p);
      if (!/^(0|[1-9]\d*)$/.test(p) || !Number.isSafeInteger(partition)) throw new TypeError(`${JSON.stringify(p)} is not a partition number`);
      out.set(sourceKey(topic, partition), { topic, partition, last: toBigInt(v, `offset of ${topic}[${p}]`) });
    }
  }
  return out;
}

export interface OverlapCandidate {
  readonly announcement: Announcement;
}

export type OverlapOutcome<C extends OverlapCandidate> =
  | { readonly kind: 'ok'; readonly kept: C[]; readonly dropped: C[]; readonly applied: Map<string, { topic: string; partition: number; last: bigint }> }
  | { readonly kind: 'overlap'; readonly candidate: C; readonly span: SourceSpan; readonly appliedThrough: bigint };

/**
 * The rule of the module header over `candidates`, in the order given (control partition and offset):
 * against what the table applied before (a highest offset per source partition), and against the exact
 * spans kept earlier in the same plan (so the order between control partitions does not matter within it).
 */
export function checkSourceOverlap<C extends OverlapCandidate>(candidates: readonly C[], before: SourceApplied): OverlapOutcome<C> {
  const applied = new Map(before);
  const planned = new Map<string, { first: bigint; last: bigint }[]>();
  const kept: C[] = [];
  const dropped: C[] = [];
  for (const c of candidates) {
    const spans = c.announcement.sourceSpans;
    let covered = 0;
    let overlap: { span: SourceSpan; through: bigint } | undefined;
    for (const s of spans) {
      const key = sourceKey(s.topic, s.partition);
      const through = before.get(key)?.last ?? -1n;
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
      if (s.lastOffset > (applied.get(key)?.last ?? -1n)) applied.set(key, { topic: s.topic, partition: s.partition, last: s.lastOffset });
    }
    kept.push(c);
  }
  return { kind: 'ok', kept, dropped, applied };
}
