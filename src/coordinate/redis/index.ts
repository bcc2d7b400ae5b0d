/**
 * The Redis coordination adapter (distributed mode): membership, leases and commit wake-ups behind the
 * ports of ../cluster-port.ts. Wired only by app.ts (and tests).
 *
 * Connections: one for membership and leases (no offline queue, command time-out: coordination must
 * notice an outage at once), one that BullMQ's queues and workers share (`maxRetriesPerRequest: null`;
 * each BullMQ Worker adds its own blocking connection). Every key lives under the cluster's prefix,
 * `icefloe:<group.id>:` (clusterKeyPrefix), so clusters sharing a Redis never meet.
 *
 * Everything here can be rebuilt: a flushed or restarted Redis costs a lease (a committer re-elected) and
 * waiting wake-ups (the commit interval still runs), never the membership view or any data.
 */
import { ConfigError } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import { systemClock, type RetryClock } from '../../core/retry.ts';
import type { Coordination } from '../cluster-port.ts';
import { bullClient, closeClient, commandClient, defineScripts, keysUnder, redisUrlForLogs, whenReady } from './connection.ts';
import { RedisLeases } from './leases.ts';
import { RedisMembership } from './membership.ts';
import { BullWakeups } from './wakeups.ts';

export { clusterKeyPrefix, redisUrlForLogs, wakeQueueName } from './connection.ts';

export interface RedisCoordinationOptions {
  /** `redis://[user:password@]host:port[/db]`. */
  readonly redisUrl: string;
  /** Every key lives under it: clusterKeyPrefix(group.id). */
  readonly keyPrefix: string;
  readonly workerId: string;
  /** This worker's REST URL, as the others reach it. */
  readonly restUrl: string;
  readonly heartbeatMs: number;
  /** A member whose heartbeat has not advanced for this long (by each viewer's own clock) leaves the view. */
  readonly sessionTimeoutMs: number;
  readonly leaseTtlMs: number;
  readonly log: Logger;
  /** join() gives up after this long; default max(10 s, the session timeout). */
  readonly joinTimeoutMs?: number;
  /** One coordination command's time-out, and wake()'s; default max(1 s, the heartbeat). */
  readonly commandTimeoutMs?: number;
  /** Monotonic time and waits; default the system's. */
  readonly clock?: RetryClock;
}

function checkOptions(o: RedisCoordinationOptions): void {
  const positive = (name: string, v: number): void => {
    if (!Number.isFinite(v) || v <= 0) throw new ConfigError(`redis coordination: ${name} must be a positive number of ms, got ${v}`);
  };
  positive('heartbeatMs', o.heartbeatMs);
  positive('sessionTimeoutMs', o.sessionTimeoutMs);
  positive('leaseTtlMs', o.leaseTtlMs);
  // Two missed heartbeats must not drop a member: a poll can be late by up to one interval.
  if (o.sessionTimeoutMs < 3 * o.heartbeatMs) {
    throw new ConfigError(`redis coordination: the session timeout (${o.sessionTimeoutMs} ms) must be at least 3 heartbeats (${3 * o.heartbeatMs} ms)`);
  }
  if (o.workerId === '' || o.workerId.includes('/')) throw new ConfigError(`redis coordination: workerId must be non-empty and without '/', got ${JSON.stringify(o.workerId)}`);
  if (o.keyPrefix === '') throw new ConfigError('redis coordination: keyPrefix must not be empty');
}

/** Builds the adapter and opens its connections (they connect in the background; membership.join() waits for Redis). */
export function redisCoordination(options: RedisCoordinationOptions): Coordination {
  checkOptions(options);
  const clock = options.clock ?? systemClock;
  const redisUrl = redisUrlForLogs(options.redisUrl);
  const commandTimeoutMs = options.commandTimeoutMs ?? Math.max(1000, options.heartbeatMs);
  const log = options.log.child({ component: 'coordination', workerId: options.workerId });
  const keys = keysUnder(options.keyPrefix);
  const command = commandClient(options.redisUrl, `icefloe:${options.workerId}`, commandTimeoutMs);
  const bull = bullClient(options.redisUrl, `icefloe:${options.workerId}:bull`);
  // Errors reach the callers of each command; the client's own error events (one per reconnect attempt)
  // would otherwise print "Unhandled error event" for every attempt.
  command.on('error', () => undefined);
  bull.on('error', () => undefined);
  const scripts = defineScripts(command);
  const ready = (maxMs: number): Promise<void> => whenReady(command, maxMs);
  const membership = new RedisMembership({
    scripts,
    ready,
    keys,
    self: { workerId: options.workerId, url: options.restUrl },
    heartbeatMs: options.heartbeatMs,
    sessionTimeoutMs: options.sessionTimeoutMs,
    joinTimeoutMs: options.joinTimeoutMs ?? Math.max(10_000, options.sessionTimeoutMs),
    clock,
    log,
    redisUrl,
  });
  const leases = new RedisLeases({ scripts, ready, commandTimeoutMs, redis: command, keys, workerId: options.workerId, ttlMs: options.leaseTtlMs, clock, log, redisUrl });
  const wakeups = new BullWakeups({ connection: bull, prefix: keys.bullPrefix, timeoutMs: commandTimeoutMs, log, redisUrl });
  let closing: Promise<void> | undefined;
  return {
    membership,
    leases,
    wakeups,
    close: () => {
      closing ??= (async () => {
        await Promise.all([membership.stop(), leases.stop(), wakeups.close()]);
        closeClient(command);
        closeClient(bull);
      })();
      return closing;
    },
  };
}
