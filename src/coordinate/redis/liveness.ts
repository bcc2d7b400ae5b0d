/**
 * The local liveness view of cluster membership: which workers this process believes alive, judged by
 * ITS OWN monotonic clock from what each poll of Redis shows. Pure: no I/O, no clock (the caller passes
 * `now`), so the rules below are unit-tested with a hand-driven clock.
 *
 * Why local time and not presence in Redis: Redis is a cache that may be flushed or restarted at any
 * moment (docs/architecture.md, "Exactly-once", Consequences). If the view were "whoever is in the
 * sorted set", a FLUSHDB would empty every worker's view until the members re-register, and placement
 * would reshuffle every task for nothing. Instead a member stays in the view until this process has not
 * seen its heartbeat score CHANGE for `sessionTimeoutMs` of its own clock; a member missing from Redis
 * simply has not advanced yet. Scores are compared only with each other and with the same Redis's TIME,
 * never with this machine's wall clock, so clock skew between hosts plays no part.
 *
 * Rules, applied in this order at each poll:
 * 1. A member seen for the first time is as old as Redis says (Redis TIME at the poll minus its score):
 *    older than the session timeout, it is a left-over of a dead worker and is not added; younger, it is
 *    added as if its last advance happened that long ago by the local clock.
 * 2. A known member whose score changed (any change: a restarted Redis may have a different clock) has
 *    advanced now; a dropped member whose score changes is alive again.
 * 3. A member with a `left` marker (a graceful leave) is dropped at once.
 * 4. A member whose last advance is `sessionTimeoutMs` or more ago is dropped.
 * 5. This worker is always in the view, with its own URL.
 * A dropped member is remembered with its last score while Redis still lists it, so a stale entry is not
 * mistaken for a new member; once Redis no longer lists it, it is forgotten.
 * Must not: read a clock, talk to Redis, or let a failed poll change anything (the caller does not call
 * `observe` for a poll that failed: the last view stands while Redis is unreachable).
 */
import type { MemberInfo } from '../cluster-port.ts';

/** What one poll read from Redis, atomically (one Lua script). */
export interface PollSnapshot {
  /** Redis TIME at the poll, in ms. */
  readonly redisNowMs: number;
  /** workerId → its last heartbeat's score (Redis TIME in ms when it was written). */
  readonly scores: ReadonlyMap<string, number>;
  /** workerId → REST URL. */
  readonly urls: ReadonlyMap<string, string>;
  /** workerIds whose graceful-leave marker exists (asked for the ids of `watched()` only). */
  readonly left: ReadonlySet<string>;
}

interface Entry {
  score: number;
  /** Local monotonic time of the last score change seen (or inferred on first sight). */
  lastAdvance: number;
  url: string;
  live: boolean;
}

export class LivenessView {
  readonly #self: MemberInfo;
  readonly #sessionTimeoutMs: number;
  readonly #entries = new Map<string, Entry>();
  #view: readonly MemberInfo[];

  constructor(self: MemberInfo, sessionTimeoutMs: number) {
    this.#self = { workerId: self.workerId, url: self.url };
    this.#sessionTimeoutMs = sessionTimeoutMs;
    this.#view = Object.freeze([this.#self]);
  }

  /** The live view, sorted by workerId, this worker included. */
  members(): readonly MemberInfo[] {
    return this.#view;
  }

  /** The other members in the view: the ids whose leave markers the next poll should look for. */
  watched(): string[] {
    return this.#view.filter((m) => m.workerId !== this.#self.workerId).map((m) => m.workerId);
  }

  /**
   * Applies one successful poll read at local monotonic time `now`; true when the view changed.
   * `unobservedMs`: how long Redis could not be read before this poll (an outage). That time does not count
   * against anyone: a restarted Redis comes back empty and its members re-register within a heartbeat, so
   * judging them by the outage would drop every member for one poll and move their work for nothing.
   */
  observe(now: number, snapshot: PollSnapshot, unobservedMs = 0): boolean {
    if (unobservedMs > 0) for (const e of this.#entries.values()) if (e.live) e.lastAdvance = Math.min(now, e.lastAdvance + unobservedMs);
    for (const [id, score] of snapshot.scores) {
      if (id === this.#self.workerId) continue;
      const url = snapshot.urls.get(id);
      const known = this.#entries.get(id);
      if (known === undefined) {
        const age = Math.max(0, snapshot.redisNowMs - score);
        this.#entries.set(id, { score, lastAdvance: now - age, url: url ?? '', live: age < this.#sessionTimeoutMs });
        continue;
      }
      if (score !== known.score) {
        known.score = score;
        known.lastAdvance = now;
        known.live = true;
      }
      if (url !== undefined) known.url = url;
    }
    for (const id of snapshot.left) {
      const known = this.#entries.get(id);
      if (known !== undefined) known.live = false;
    }
    for (const [id, e] of this.#entries) {
      if (e.live && now - e.lastAdvance >= this.#sessionTimeoutMs) e.live = false;
      if (!e.live && !snapshot.scores.has(id)) this.#entries.delete(id);
    }
    return this.#rebuild();
  }

  #rebuild(): boolean {
    const next: MemberInfo[] = [this.#self];
    for (const [workerId, e] of this.#entries) if (e.live) next.push({ workerId, url: e.url });
    next.sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
    const prev = this.#view;
    const same = prev.length === next.length && prev.every((m, i) => m.workerId === next[i]?.workerId && m.url === next[i]?.url);
    if (same) return false;
    this.#view = Object.freeze(next.map((m) => Object.freeze(m)));
    return true;
  }
}
