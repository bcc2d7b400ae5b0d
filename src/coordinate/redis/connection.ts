/**
 * Redis connections, key names and Lua scripts of the coordination adapter. Owns: how ioredis clients are
 * configured (fail fast for coordination commands, wait-forever for BullMQ's workers), the key layout
 * under `icefloe:<group.id>:`, the scripts that make read-compare-write steps atomic, and the Redis URL
 * as logs may show it. Must not: log secrets (the URL's password is masked), or hide a failure (every
 * command error reaches the caller, which decides what it means).
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { RetriableError, errorMessage } from '../../core/errors.ts';

/** The key prefix of a cluster: every key of a `group.id` lives under it. */
export function clusterKeyPrefix(groupId: string): string {
  return `icefloe:${groupId}:`;
}

/** The Redis URL as logs and errors show it: a password becomes `***`. */
export function redisUrlForLogs(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/(\/\/[^/:@\s]*):[^@/\s]+@/g, '$1:***@');
  }
}

export interface Keys {
  /** ZSET workerId → Redis TIME (ms) of its last heartbeat. */
  readonly members: string;
  /** HASH workerId → REST URL. */
  readonly urls: string;
  /** The prefix of the graceful-leave markers, `left:<workerId>` (TTL = the session timeout). */
  readonly leftPrefix: string;
  /** STRING lease name → holder token (TTL = the lease TTL). */
  lease(name: string): string;
  /** BullMQ's `prefix` option (BullMQ adds `:<queue>:…` itself). */
  readonly bullPrefix: string;
}

export function keysUnder(prefix: string): Keys {
  const p = prefix.endsWith(':') ? prefix : `${prefix}:`;
  return {
    members: `${p}members`,
    urls: `${p}member-urls`,
    leftPrefix: `${p}left:`,
    lease: (name) => `${p}lease:${name}`,
    bullPrefix: `${p}bull`,
  };
}

/**
 * BullMQ's queue name for a connector's wake-ups. Queue names may not contain `:` and become part of
 * key names, so anything outside [A-Za-z0-9._-] is replaced; a replaced name gets a hash of the original
 * so that `a:b` and `a_b` stay two queues.
 */
export function wakeQueueName(connector: string): string {
  const safe = connector.replace(/[^A-Za-z0-9._-]/g, '_');
  if (safe === connector && connector !== '') return `wake-${connector}`;
  return `wake-${safe}-${createHash('sha256').update(connector).digest('hex').slice(0, 12)}`;
}

/**
 * Heartbeat and poll in one atomic step. KEYS: members, urls, this worker's left marker. ARGV: workerId,
 * url, gcAfterMs, leftPrefix, then the ids whose left markers to report.
 * Writes this worker's score (Redis TIME: one clock for every score, whatever the hosts' clocks say),
 * clears its own left marker (a restart under the same id), forgets entries nobody refreshed for
 * gcAfterMs (left-overs of crashed workers; viewers judge liveness locally long before that), and returns
 * [now, members WITHSCORES, urls, left ids].
 */
const HEARTBEAT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('DEL', KEYS[3])
local stale = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
for _, id in ipairs(stale) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
local left = {}
for i = 5, #ARGV do
  if redis.call('EXISTS', ARGV[4] .. ARGV[i]) == 1 then left[#left + 1] = ARGV[i] end
end
return {tostring(now), redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'), redis.call('HGETALL', KEYS[2]), left}
`;

/** Graceful leave. KEYS: members, urls, left marker. ARGV: workerId, marker TTL ms. */
const LEAVE_LUA = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], '1', 'PX', ARGV[2])
return 1
`;

/** Check-and-extend a lease: only the token that holds it extends it. KEYS: lease. ARGV: token, ttl ms. */
const RENEW_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`;

/** Compare-and-delete a lease. KEYS: lease. ARGV: token. */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;

/** The scripts, bound to one client (ioredis sends EVALSHA and falls back to EVAL after a restart flushed the script cache). */
export interface Scripts {
  heartbeat(keys: Keys, workerId: string, url: string, gcAfterMs: number, watched: readonly string[]): Promise<unknown>;
  leave(keys: Keys, workerId: string, markerTtlMs: number): Promise<unknown>;
  renew(key: string, token: string, ttlMs: number): Promise<unknown>;
  release(key: string, token: string): Promise<unknown>;
}

export function defineScripts(redis: Redis): Scripts {
  const define = (name: string, numberOfKeys: number, lua: string): ScriptFn => {
    redis.defineCommand(name, { numberOfKeys, lua });
    const fn = (redis as unknown as Record<string, ScriptFn>)[name];
    if (fn === undefined) throw new Error(`ioredis did not define the script ${name}`);
    return fn.bind(redis);
  };
  const heartbeat = define('icefloeHeartbeat', 3, HEARTBEAT_LUA);
  const leave = define('icefloeLeave', 3, LEAVE_LUA);
  const renew = define('icefloeLeaseRenew', 1, RENEW_LUA);
  const release = define('icefloeLeaseRelease', 1, RELEASE_LUA);
  return {
    heartbeat: (k, id, url, gc, watched) => heartbeat(k.members, k.urls, k.leftPrefix + id, id, url, gc, k.leftPrefix, ...watched),
    leave: (k, id, ttl) => leave(k.members, k.urls, k.leftPrefix + id, id, ttl),
    renew: (key, token, ttl) => renew(key, token, ttl),
    release: (key, token) => release(key, token),
  };
}

/**
 * The client for membership and leases. No offline queue: while the connection is down a command fails
 * at once instead of waiting for a reconnect, so a poll reports the outage in time and a lease renewal
 * that cannot reach Redis counts as failed. Reconnects quickly (a restarted Redis is back within a
 * heartbeat or two).
 */
export function commandClient(url: string, name: string, commandTimeoutMs: number): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(commandTimeoutMs, 1000),
    retryStrategy: (times) => Math.min(100 * times, 1000),
    connectionName: name,
  });
}

/** The client BullMQ's queues and workers share: BullMQ requires `maxRetriesPerRequest: null` for workers (their blocking reads wait across reconnects). */
export function bullClient(url: string, name: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(100 * times, 1000),
    connectionName: name,
  });
}

/** Rejects with a RetriableError naming the Redis URL when `promise` has not settled within `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string, urlForLogs: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RetriableError(`${what}: Redis at ${urlForLogs} did not answer within ${ms} ms`, { context: { redis: urlForLogs } })), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A Redis failure as our error: retriable, naming the URL (without its password). */
export function unreachable(what: string, urlForLogs: string, cause: unknown): RetriableError {
  return new RetriableError(`${what}: Redis at ${urlForLogs} is unreachable (${errorMessage(cause)})`, { cause, context: { redis: urlForLogs } });
}

/**
 * Resolves once `redis` is connected and ready, or after `maxMs` whichever comes first (the command that
 * follows then fails and says why). Lets the first command after start-up wait for the connection that
 * the no-offline-queue client would otherwise refuse it.
 */
export function whenReady(redis: Redis, maxMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, maxMs);
    redis.once('ready', done);
  });
}

/** Closes a client without waiting for the server: pending commands fail, no reconnect follows. */
export function closeClient(redis: Redis): void {
  redis.disconnect(false);
}
