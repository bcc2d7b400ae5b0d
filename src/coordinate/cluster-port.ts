/**
 * The ports distributed mode coordinates through (issue 13): who is in the cluster, who holds a table's
 * committer lease, and cross-process wake-ups for committers. Pure types, no I/O; the adapter is
 * `redis/` (ioredis + BullMQ), wired only by app.ts.
 *
 * Everything behind these ports is a cache that can be rebuilt (docs/architecture.md, "Exactly-once",
 * Consequences): the control topic and the tables hold the truth. Losing the backing store (a flush, a
 * restart) may cost time — a committer re-elected, a wake-up missed until the next commit interval — never
 * correctness, so nothing here may be the only guard of an invariant: a committer checks its lease before
 * every catalog commit AND commits with the snapshot requirement.
 */

export interface MemberInfo {
  readonly workerId: string;
  /** The worker's REST URL (where requests are forwarded). */
  readonly url: string;
}

export interface Membership {
  /** Registers this worker and starts heartbeating every heartbeatMs; resolves after the first heartbeat reached Redis (rejects with a RetriableError naming the Redis URL if it cannot, after a bounded wait). */
  join(): Promise<void>;
  /**
   * The live view, sorted by workerId, this worker included (always, even while Redis is unreachable).
   * Liveness is judged by this process's own monotonic clock: a member leaves the view when its heartbeat
   * has not advanced for the session timeout, or at once when it left gracefully; a flushed or restarted
   * Redis does not change the view (everyone re-registers within one heartbeat).
   */
  members(): readonly MemberInfo[];
  /** Called (synchronously after a poll) whenever the live view changed. */
  onChange(listener: (members: readonly MemberInfo[]) => void): void;
  /** False while the last heartbeat/poll failed to reach Redis (and before the first one succeeded). */
  healthy(): boolean;
  /** Deregisters at once (others drop this worker at their next poll, not after the session timeout), stops timers. */
  leave(): Promise<void>;
}

export interface Lease {
  readonly name: string;
  /** `<workerId>/<random uuid>`: unique per acquisition. */
  readonly token: string;
  /**
   * Throws LeaseLostError unless Redis says this token still holds the lease; extends it (check-and-extend,
   * one Lua script). Call before every catalog commit. A lease that is no longer held() fails without
   * asking; any other answer than "this token holds it" (another token, no key, Redis unreachable) marks
   * the lease lost for good.
   */
  check(): Promise<void>;
  /** Local view: false once a renewal failed or the last successful renewal is older than ttl*0.8 by this process's monotonic clock (a process that was frozen knows it is stale before asking Redis). */
  held(): boolean;
  /** Called once when the lease is lost (renewal refused, or local expiry); a listener added after the loss is called on the next microtask. Not called by release(). */
  onLost(listener: (reason: string) => void): void;
  /** Deletes the key only if it still holds this token; stops renewing. Never rejects (a key it cannot delete expires after the TTL). */
  release(): Promise<void>;
}

export interface Leases {
  /** One attempt (SET NX PX ttl); null when another token holds it. A taken lease renews itself every ttl/3 until released or lost. Rejects with a RetriableError when Redis cannot be asked. */
  tryAcquire(name: string): Promise<Lease | null>;
  /** The workerId part of the current holder's token, or null. */
  holder(name: string): Promise<string | null>;
}

/** Cross-process wake-ups for a connector's committer (BullMQ): tasks on any worker announce a cycle; the worker running the committer is woken at once instead of at the next commit interval. */
export interface CommitWakeups {
  /** Best effort: rejects with a RetriableError when Redis cannot take it in time (the commit interval still applies). */
  wake(connector: string): Promise<void>;
  /** Runs `handler` for wake-ups of `connector` (at most one at a time) until the returned close() resolves. */
  listen(connector: string, handler: () => void): Promise<{ close(): Promise<void> }>;
  close(): Promise<void>;
}

/** The three together, as one backing store provides them. */
export interface Coordination {
  readonly membership: Membership;
  readonly leases: Leases;
  readonly wakeups: CommitWakeups;
  /**
   * Stops every timer and closes every connection WITHOUT leaving or releasing: to the other workers this
   * looks like a crash (they drop this worker after the session timeout, its leases expire after their
   * TTL). A graceful exit calls membership.leave() and each lease's release() first.
   */
  close(): Promise<void>;
}
