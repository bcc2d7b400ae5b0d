/**
 * Leases over Redis (the per-table committer's): `SET key token NX PX ttl` to take one, a Lua
 * check-and-extend (GET == token → PEXPIRE) to renew or check it, a Lua compare-and-delete to release it.
 *
 * Owns: the renewal loop (every ttl/3), the local view of whether the lease is still ours, and the rule
 * that a lease once lost stays lost. Two clocks guard a holder: Redis's TTL (others may take the key once
 * it expired) and this process's monotonic clock (a renewal is trusted for ttl*0.8 from the moment its
 * request was SENT, so a process that was frozen, or whose event loop was blocked, knows it is stale before
 * it asks Redis, and a slow reply cannot stretch the lease). Must not: ever re-take a lease it lost
 * (another holder may have committed in between; it competes through tryAcquire like everyone else),
 * extend a key that another token holds, or keep renewing after release()/stop().
 */
import { randomUUID } from 'node:crypto';
import { LeaseLostError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import type { RetryClock } from '../../core/retry.ts';
import type { Lease, Leases } from '../cluster-port.ts';
import { unreachable, type Keys, type Scripts } from './connection.ts';

/** A renewal is trusted for this share of the TTL (by the local clock, from when its request was sent). */
export const LOCAL_VALIDITY = 0.8;

export interface LeaseDeps {
  readonly scripts: Scripts;
  /** Resolves when the connection is ready, or after `maxMs` (a lease asked for right after start-up waits for it). */
  readonly ready: (maxMs: number) => Promise<void>;
  /** How long tryAcquire() and holder() wait for the connection. */
  readonly commandTimeoutMs: number;
  /** SET NX PX and GET, on the command client. */
  readonly redis: {
    set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown>;
    get(key: string): Promise<string | null>;
  };
  readonly keys: Keys;
  readonly workerId: string;
  readonly ttlMs: number;
  readonly clock: RetryClock;
  readonly log: Logger;
  readonly redisUrl: string;
}

class RedisLease implements Lease {
  readonly name: string;
  readonly token: string;
  readonly #d: LeaseDeps;
  readonly #key: string;
  readonly #listeners: ((reason: string) => void)[] = [];
  readonly #stop = new AbortController();
  /** Local time the last successful renewal's request was sent. */
  #renewedAt: number;
  #lost: string | undefined;
  #released = false;
  readonly #loop: Promise<void>;

  constructor(deps: LeaseDeps, name: string, token: string, acquiredAt: number, onDone: (lease: RedisLease) => void) {
    this.#d = deps;
    this.name = name;
    this.token = token;
    this.#key = deps.keys.lease(name);
    this.#renewedAt = acquiredAt;
    // A lease whose loop ended (stopped, released or lost) is no longer the registry's to stop.
    this.#loop = this.#renewLoop().finally(() => onDone(this));
  }

  held(): boolean {
    return this.#stillHeld();
  }

  onLost(listener: (reason: string) => void): void {
    this.#listeners.push(listener);
    const reason = this.#lost;
    if (reason !== undefined) queueMicrotask(() => this.#call(listener, reason));
  }

  async check(): Promise<void> {
    if (!this.#stillHeld()) throw this.#lostError();
    const sent = this.#d.clock.now();
    let extended: boolean;
    try {
      extended = (await this.#d.scripts.renew(this.#key, this.token, this.#d.ttlMs)) === 1;
    } catch (e) {
      this.#markLost(`the check could not reach Redis (${errorMessage(e)})`);
      this.#releaseQuietly();
      throw this.#lostError(e);
    }
    if (!extended) this.#markLost('Redis says another token holds the lease, or it expired');
    else this.#renewed(sent);
    // Also catches a reply that came back too late to trust: the lease may have expired meanwhile.
    if (!this.#stillHeld()) throw this.#lostError();
  }

  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    await this.stop();
    try {
      await this.#d.scripts.release(this.#key, this.token);
    } catch (e) {
      this.#d.log.warn('could not release a lease; it expires after its TTL', { lease: this.name, redis: this.#d.redisUrl, error: errorMessage(e), ttlMs: this.#d.ttlMs });
    }
  }

  /** Stops renewing without releasing (the key expires after its TTL); waits for a renewal in flight. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  #stillHeld(): boolean {
    if (this.#lost !== undefined || this.#released) return false;
    const age = this.#d.clock.now() - this.#renewedAt;
    if (age < this.#d.ttlMs * LOCAL_VALIDITY) return true;
    this.#markLost(`no successful renewal for ${Math.round(age)} ms by the local clock (trusted for ${this.#d.ttlMs * LOCAL_VALIDITY} ms of the ${this.#d.ttlMs} ms TTL)`);
    return false;
  }

  #renewed(sentAt: number): void {
    if (this.#lost === undefined) this.#renewedAt = Math.max(this.#renewedAt, sentAt);
  }

  async #renewLoop(): Promise<void> {
    const { clock, ttlMs } = this.#d;
    while (!this.#stop.signal.aborted) {
      try {
        await clock.sleep(ttlMs / 3, this.#stop.signal);
      } catch {
        return; // stopped
      }
      if (!this.#stillHeld()) return;
      const sent = clock.now();
      try {
        const extended = (await this.#d.scripts.renew(this.#key, this.token, ttlMs)) === 1;
        if (this.#stop.signal.aborted) return;
        if (!extended) this.#markLost('renewal refused: another token holds the lease, or it expired');
        else this.#renewed(sent);
      } catch (e) {
        if (this.#stop.signal.aborted) return;
        this.#markLost(`renewal could not reach Redis (${errorMessage(e)})`);
        this.#releaseQuietly();
      }
    }
  }

  /**
   * After a renewal or check that failed on the way: it may have landed after all, so delete the key if it
   * is still ours, and another worker need not wait out the TTL. Best effort (Redis may be down).
   */
  #releaseQuietly(): void {
    this.#d.scripts.release(this.#key, this.token).catch(() => undefined);
  }

  #markLost(reason: string): void {
    if (this.#lost !== undefined || this.#released) return;
    this.#lost = reason;
    this.#stop.abort();
    this.#d.log.warn('lease lost', { lease: this.name, token: this.token, reason });
    for (const listener of this.#listeners) queueMicrotask(() => this.#call(listener, reason));
  }

  #call(listener: (reason: string) => void, reason: string): void {
    try {
      listener(reason);
    } catch (e) {
      this.#d.log.error('a lease-lost listener failed', { lease: this.name, error: errorMessage(e) });
    }
  }

  #lostError(cause?: unknown): LeaseLostError {
    const reason = this.#released ? 'released' : (this.#lost ?? 'lost');
    return new LeaseLostError(`lease ${this.name} (token ${this.token}) is no longer held: ${reason}`, {
      ...(cause === undefined ? {} : { cause }),
      context: { lease: this.name, token: this.token },
    });
  }
}

export class RedisLeases implements Leases {
  readonly #d: LeaseDeps;
  readonly #active = new Set<RedisLease>();

  constructor(deps: LeaseDeps) {
    this.#d = deps;
  }

  async tryAcquire(name: string): Promise<Lease | null> {
    const token = `${this.#d.workerId}/${randomUUID()}`;
    await this.#d.ready(this.#d.commandTimeoutMs);
    const sent = this.#d.clock.now();
    let reply: unknown;
    try {
      reply = await this.#d.redis.set(this.#d.keys.lease(name), token, 'PX', this.#d.ttlMs, 'NX');
    } catch (e) {
      throw unreachable(`could not ask for lease ${name}`, this.#d.redisUrl, e);
    }
    if (reply !== 'OK') return null;
    const lease = new RedisLease(this.#d, name, token, sent, (l) => this.#active.delete(l));
    this.#active.add(lease);
    this.#d.log.info('lease acquired', { lease: name, token });
    return lease;
  }

  async holder(name: string): Promise<string | null> {
    let token: string | null;
    await this.#d.ready(this.#d.commandTimeoutMs);
    try {
      token = await this.#d.redis.get(this.#d.keys.lease(name));
    } catch (e) {
      throw unreachable(`could not read lease ${name}`, this.#d.redisUrl, e);
    }
    if (token === null) return null;
    const slash = token.lastIndexOf('/');
    return slash < 0 ? token : token.slice(0, slash);
  }

  /** Stops renewing every lease this process holds, without releasing (a crash as the others see it). */
  async stop(): Promise<void> {
    await Promise.all([...this.#active].map((l) => l.stop()));
  }
}
