/**
 * Cluster membership over Redis: a ZSET of workerIds scored by Redis TIME at each heartbeat, a HASH of
 * their REST URLs, and `left:<workerId>` markers for graceful leaves. Each worker heartbeats and polls in
 * one script every heartbeat interval and judges liveness LOCALLY (liveness.ts): a flushed or restarted
 * Redis changes nobody's view, because everyone re-registers within one heartbeat.
 *
 * Owns: the heartbeat loop, the view's health, the outage log lines (one warning per outage, one line
 * when it ends). Must not: drop anyone while Redis is unreachable (a failed poll changes nothing), or
 * keep a timer or a command running after leave() / stop() resolved.
 */
import { RetriableError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import type { RetryClock } from '../../core/retry.ts';
import type { MemberInfo, Membership } from '../cluster-port.ts';
import { unreachable, type Keys, type Scripts } from './connection.ts';
import { LivenessView, type PollSnapshot } from './liveness.ts';

export interface MembershipDeps {
  readonly scripts: Scripts;
  /** Resolves when the connection is ready, or after `maxMs`. */
  readonly ready: (maxMs: number) => Promise<void>;
  readonly keys: Keys;
  readonly self: MemberInfo;
  readonly heartbeatMs: number;
  readonly sessionTimeoutMs: number;
  /** join() gives up after this long without one heartbeat reaching Redis. */
  readonly joinTimeoutMs: number;
  readonly clock: RetryClock;
  readonly log: Logger;
  /** The Redis URL without its password. */
  readonly redisUrl: string;
}

/** Entries nobody refreshed for this many session timeouts are deleted from Redis (viewers dropped them long before). */
const GC_SESSIONS = 20;

function asStrings(value: unknown, what: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new Error(`unexpected heartbeat reply: ${what} is not a list of strings`);
  return value as string[];
}

/** The heartbeat script's reply: [now, members WITHSCORES, urls as a flat list, left ids]. */
export function parseHeartbeatReply(reply: unknown): PollSnapshot {
  if (!Array.isArray(reply) || reply.length !== 4) throw new Error('unexpected heartbeat reply: not a list of four');
  const [now, flatMembers, flatUrls, left] = reply as unknown[];
  const members = asStrings(flatMembers, 'members');
  const urlList = asStrings(flatUrls, 'urls');
  const scores = new Map<string, number>();
  for (let i = 0; i + 1 < members.length; i += 2) scores.set(members[i] as string, Number(members[i + 1]));
  const urls = new Map<string, string>();
  for (let i = 0; i + 1 < urlList.length; i += 2) urls.set(urlList[i] as string, urlList[i + 1] as string);
  return { redisNowMs: Number(now), scores, urls, left: new Set(asStrings(left, 'left')) };
}

export class RedisMembership implements Membership {
  readonly #d: MembershipDeps;
  readonly #view: LivenessView;
  readonly #listeners: ((members: readonly MemberInfo[]) => void)[] = [];
  readonly #stop = new AbortController();
  #joining: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  #healthy = false;
  /** Local time the current outage began; undefined while Redis answers. */
  #outageSince: number | undefined;

  constructor(deps: MembershipDeps) {
    this.#d = deps;
    this.#view = new LivenessView(deps.self, deps.sessionTimeoutMs);
  }

  join(): Promise<void> {
    this.#joining ??= this.#join();
    return this.#joining;
  }

  members(): readonly MemberInfo[] {
    return this.#view.members();
  }

  onChange(listener: (members: readonly MemberInfo[]) => void): void {
    this.#listeners.push(listener);
  }

  healthy(): boolean {
    return this.#healthy;
  }

  async leave(): Promise<void> {
    await this.stop();
    const { scripts, keys, self, sessionTimeoutMs, log, redisUrl } = this.#d;
    try {
      await scripts.leave(keys, self.workerId, sessionTimeoutMs);
      log.info('left the cluster', { workerId: self.workerId });
    } catch (e) {
      // The others drop this worker after the session timeout instead: time, not correctness.
      log.warn('could not deregister from Redis; the other workers drop this one after the session timeout', { redis: redisUrl, error: errorMessage(e), sessionTimeoutMs });
    }
  }

  /** Stops heartbeating without deregistering (a crash as the others see it); waits for a poll in flight. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#healthy = false;
    await this.#joining?.catch(() => undefined);
    await this.#loop;
  }

  async #join(): Promise<void> {
    const { clock, heartbeatMs, joinTimeoutMs, self, redisUrl, log } = this.#d;
    const started = clock.now();
    for (;;) {
      if (this.#stop.signal.aborted) throw new RetriableError(`worker ${self.workerId} stopped before it joined the cluster`);
      try {
        // The connection is still being set up at start: wait for it rather than fail the first attempt.
        await this.#d.ready(Math.max(0, Math.min(heartbeatMs, joinTimeoutMs - (clock.now() - started))));
        await this.#poll();
        break;
      } catch (e) {
        // No outage warning while joining: the rejection below says it, once.
        this.#healthy = false;
        if (this.#stop.signal.aborted || clock.now() - started + heartbeatMs > joinTimeoutMs) {
          throw unreachable(`worker ${self.workerId} could not join the cluster within ${joinTimeoutMs} ms`, redisUrl, e);
        }
      }
      await clock.sleep(heartbeatMs, this.#stop.signal).catch(() => undefined);
    }
    log.info('registered in the cluster membership', { workerId: self.workerId, members: this.members().map((m) => m.workerId) });
    this.#loop = this.#run();
  }

  /** Heartbeats every heartbeatMs (measured start to start) until stopped. */
  async #run(): Promise<void> {
    const { clock, heartbeatMs } = this.#d;
    let last = clock.now();
    while (!this.#stop.signal.aborted) {
      try {
        await clock.sleep(Math.max(0, heartbeatMs - (clock.now() - last)), this.#stop.signal);
      } catch {
        return; // stopped
      }
      last = clock.now();
      try {
        await this.#poll();
      } catch (e) {
        this.#failed(e);
      }
    }
  }

  async #poll(): Promise<void> {
    const { scripts, keys, self, sessionTimeoutMs, clock } = this.#d;
    const reply = await scripts.heartbeat(keys, self.workerId, self.url, GC_SESSIONS * sessionTimeoutMs, this.#view.watched());
    // A poll that completes after stop() must not revive the view's health or call listeners.
    if (this.#stop.signal.aborted) return;
    const changed = this.#view.observe(clock.now(), parseHeartbeatReply(reply), this.#outageSince === undefined ? 0 : clock.now() - this.#outageSince);
    this.#healthy = true;
    if (this.#outageSince !== undefined) {
      this.#d.log.info('Redis reachable again; membership view kept through the outage', { redis: this.#d.redisUrl, outageMs: Math.round(clock.now() - this.#outageSince) });
      this.#outageSince = undefined;
    }
    if (!changed) return;
    const view = this.#view.members();
    this.#d.log.info('cluster membership changed', { members: view.map((m) => m.workerId) });
    for (const listener of this.#listeners) {
      try {
        listener(view);
      } catch (e) {
        this.#d.log.error('a membership listener failed', { error: errorMessage(e) });
      }
    }
  }

  #failed(error: unknown): void {
    this.#healthy = false;
    if (this.#outageSince !== undefined) return;
    this.#outageSince = this.#d.clock.now();
    this.#d.log.warn('Redis unreachable: keeping the last membership view until it answers again', {
      redis: this.#d.redisUrl,
      error: errorMessage(error),
      members: this.members().map((m) => m.workerId),
    });
  }
}
