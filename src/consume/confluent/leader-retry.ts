/**
 * A request that failed because the client's view of a partition's leader is stale is asked again at once,
 * after a metadata refresh, a few times within the call (issue 24: after a broker restart the committer's
 * round failed on `Leader epoch is older than broker epoch` and waited 30 s for its next round, while the
 * tasks were back in 11 s). librdkafka's admin ListOffsets sends the cached leader epoch and does not
 * refresh its metadata when the broker fences it, so only a refresh helps, and one is enough once the
 * broker is back: the retries are bounded (under 2 s in all) and what is still failing then is the
 * caller's to retry, as before.
 *
 * Owns: which errors mean "the leader moved" and the bounded retry. Must not: import the client, or
 * retry anything else (a broker that is away is the caller's back-off, not a tight loop here).
 */
import { IcefloeError } from '../../core/errors.ts';
import { KAFKA_CODES } from './errors.ts';

/** Codes that say the request went to a leader, or with a leader epoch, that is no longer current. */
const LEADER_CHANGED = new Set<number>([
  KAFKA_CODES.ERR_LEADER_NOT_AVAILABLE,
  KAFKA_CODES.ERR_NOT_LEADER_FOR_PARTITION,
  KAFKA_CODES.ERR_FENCED_LEADER_EPOCH,
  KAFKA_CODES.ERR_UNKNOWN_LEADER_EPOCH,
  // librdkafka's answer to a whole request while its metadata names no leader (seen after broker restarts).
  KAFKA_CODES.ERR__NOENT,
]);

/** The waits before each retry: three retries, 1.4 s in all. */
export const LEADER_RETRY_DELAYS_MS: readonly number[] = [100, 300, 1_000];

/** The Kafka code an adapter error carries (`context.kafkaCode`), if any. */
function kafkaCode(e: unknown): number | undefined {
  const code = e instanceof IcefloeError ? e.context['kafkaCode'] : undefined;
  return typeof code === 'number' ? code : undefined;
}

/** True when `e` says the leader (or its epoch) the request used is stale: a metadata refresh fixes it. */
export function leaderChanged(e: unknown): boolean {
  const code = kafkaCode(e);
  return code !== undefined && LEADER_CHANGED.has(code);
}

export interface LeaderRetryOptions {
  readonly delaysMs?: readonly number[];
  readonly sleep?: (ms: number) => Promise<void>;
  /** Told before each retry (for a debug line). */
  readonly onRetry?: (attempt: number, error: unknown) => void;
}

/**
 * Runs `run`; when it fails because the leader moved, refreshes the metadata and runs it again after the
 * next delay, up to `delaysMs.length` times. Any other error, or the last one, is thrown as it came.
 */
export async function retryOnLeaderChange<T>(run: () => Promise<T>, refresh: () => Promise<void>, options: LeaderRetryOptions = {}): Promise<T> {
  const delays = options.delaysMs ?? LEADER_RETRY_DELAYS_MS;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (e) {
      const delay = delays[attempt];
      if (delay === undefined || !leaderChanged(e)) throw e;
      options.onRetry?.(attempt + 1, e);
      await refresh();
      await sleep(delay);
    }
  }
}
