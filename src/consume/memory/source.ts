/**
 * `KafkaSource` over the in-memory Kafka: one member of a consumer group, read_committed, manual
 * offsets only.
 *
 * As with the confluent adapter, rebalances are served only inside `poll()`, one step at a time, each
 * listener call awaited: a member removed by a session timeout first gets `onRevoked(all, {lost: true})`
 * and rejoins under a new member id; then partitions no longer in its target are revoked
 * (`onRevoked(moved, {lost: false})`) and only afterwards handed to the group; then free partitions of
 * its target are taken and `onAssigned(new)` runs before any of their records is returned. A listener
 * that throws makes `poll()` reject after the step completed. A new partition starts as the confluent
 * adapter starts it (consume/offset-range.ts): at the group's committed offset when it is in the log, at
 * the earliest offset without one, and a committed offset or position outside the log is a FatalError
 * unless `autoOffsetReset` (the user's auto.offset.reset) is set; while an open transaction carries an
 * offset for it the partition is not fetched (the committed offset is unstable, librdkafka waits too).
 *
 * Owns: one member's assignment, positions and rebalance sequencing. Must not: commit offsets.
 */
import { ConfigError, RetriableError } from '../../core/errors.ts';
import { SILENT_LOGGER } from '../../core/log.ts';
import type { Logger } from '../../core/log.ts';
import { offsetOutOfRangeError, startPosition } from '../offset-range.ts';
import type { OffsetReset } from '../offset-range.ts';
import { partitionKey } from '../port.ts';
import type {
  CommittedOffset, ConsumerGroupMetadata, KafkaSource, PollOptions, RawRecord, RebalanceListener, Subscription, TopicPartition, TopicPartitionOffset,
} from '../port.ts';
import { stateError } from './broker.ts';
import type { Broker } from './broker.ts';
import { rejectCall } from './faults.ts';
import type { Fault, SourceOperation } from './faults.ts';
import { membershipHandle } from './group.ts';
import type { Group } from './group.ts';
import type { PartitionLog } from './log.ts';

export interface MemorySourceOptions {
  readonly groupId: string;
  /** Names the client for fault injection; default `<groupId>-source-<n>`. */
  readonly clientId?: string;
  /**
   * The user's auto.offset.reset: start of a partition without a committed offset, and what a committed offset
   * or position outside the log does. Unset (Icefloe's default): earliest without one, a FatalError outside.
   */
  readonly autoOffsetReset?: OffsetReset;
  /** Where a configured reset is reported (records skipped). */
  readonly log?: Logger;
}

interface Assigned {
  readonly tp: TopicPartition;
  /** Where the next fetch starts; undefined until the start position is known. */
  fetch: bigint | undefined;
  /** The application's position: after the last record returned, or where it seeked. */
  app: bigint | null;
  /** The first offset returned since the assignment (the rewind target without a committed offset). */
  firstReturned: bigint | undefined;
  high: bigint | null;
  paused: boolean;
}

export class MemoryKafkaSource implements KafkaSource {
  readonly groupId: string;
  readonly clientId: string;
  readonly #broker: Broker;
  readonly #reset: OffsetReset | undefined;
  readonly #log: Logger;
  readonly #assigned = new Map<string, Assigned>();
  #listener: RebalanceListener | undefined;
  #subscribes: ((topic: string) => boolean) | undefined;
  #memberId: string | null = null;
  #generation = -1;
  #lost = false;
  #polling = false;
  #closed = false;
  #turn = 0;

  constructor(broker: Broker, options: MemorySourceOptions) {
    if (options.groupId === '') throw new ConfigError('the consumer group id may not be empty');
    this.#broker = broker;
    this.groupId = options.groupId;
    this.clientId = options.clientId ?? `${options.groupId}-source-${broker.nextClientNumber()}`;
    this.#reset = options.autoOffsetReset;
    this.#log = options.log ?? SILENT_LOGGER;
  }

  /** The member id in the group (a new one after each rejoin); null before `subscribe`. */
  get memberId(): string | null {
    return this.#memberId;
  }

  /** Queues a fault for this client's next `operation` (a bare error: the call fails, nothing happens). */
  failNext(operation: SourceOperation, fault: Fault | Error): void {
    this.#broker.faults.add(this.clientId, operation, fault instanceof Error ? rejectCall(fault) : fault);
  }

  async subscribe(subscription: Subscription, listener: RebalanceListener): Promise<void> {
    await this.#broker.faults.around(this.clientId, 'subscribe', () => {
      this.#usable('subscribe');
      if (this.#subscribes !== undefined) throw stateError('subscribe', 'this source is already subscribed');
      if (subscription.kind === 'list') {
        const topics = new Set(subscription.topics);
        this.#subscribes = (topic) => topics.has(topic);
      } else {
        if (subscription.pattern === '') throw new ConfigError('topics.regex may not be empty');
        const re = new RegExp(`^(?:${subscription.pattern.replace(/^\^/, '').replace(/(?<!\\)\$$/, '')})$`);
        this.#subscribes = (topic) => re.test(topic);
      }
      this.#listener = listener;
      this.#join();
    });
  }

  async poll(options: PollOptions): Promise<RawRecord[]> {
    if (this.#polling) throw new RetriableError('KafkaSource.poll is already running: poll from one loop only');
    this.#polling = true;
    try {
      return await this.#broker.faults.around(this.clientId, 'poll', async () => {
        this.#usable('poll');
        if (this.#subscribes !== undefined) await this.#serveRebalance();
        const records = this.#fetch(Math.max(1, options.maxRecords));
        // Nothing to return: wait a token amount of real time (never the caller's timeout) so a loop yields.
        if (records.length === 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1, Math.max(0, options.timeoutMs))));
        return records;
      });
    } finally {
      this.#polling = false;
    }
  }

  pause(partitions: readonly TopicPartition[]): void {
    for (const tp of partitions) {
      const a = this.#assigned.get(partitionKey(tp));
      if (a !== undefined) a.paused = true;
    }
  }

  resume(partitions: readonly TopicPartition[]): void {
    for (const tp of partitions) {
      const a = this.#assigned.get(partitionKey(tp));
      if (a !== undefined) a.paused = false;
    }
  }

  async seek(position: TopicPartitionOffset): Promise<void> {
    await this.#broker.faults.around(this.clientId, 'seek', () => {
      this.#usable('seek');
      const a = this.#assigned.get(partitionKey(position));
      // librdkafka answers a seek on a partition it does not hold with ERR__UNKNOWN_PARTITION (a ConfigError).
      if (a === undefined) throw new ConfigError(`Kafka seek failed: ${partitionKey(position)} is not assigned to this consumer`, { context: { operation: 'seek' } });
      a.fetch = position.offset;
      a.app = position.offset;
    });
  }

  committed(partitions: readonly TopicPartition[]): Promise<CommittedOffset[]> {
    return this.#broker.faults.around(this.clientId, 'committed', () => {
      this.#usable('committed');
      return this.#committed(partitions);
    });
  }

  position(partitions: readonly TopicPartition[]): CommittedOffset[] {
    return partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition, offset: this.#assigned.get(partitionKey(tp))?.app ?? null }));
  }

  assignment(): TopicPartition[] {
    return [...this.#assigned.values()].map((a) => ({ topic: a.tp.topic, partition: a.tp.partition }));
  }

  highWatermark(partition: TopicPartition): bigint | null {
    return this.#assigned.get(partitionKey(partition))?.high ?? null;
  }

  async rewindToCommitted(): Promise<void> {
    await this.#broker.faults.around(this.clientId, 'rewindToCommitted', () => {
      this.#usable('rewindToCommitted');
      for (const c of this.#committed(this.assignment())) {
        const a = this.#assigned.get(partitionKey(c)) as Assigned;
        const target = c.offset ?? a.firstReturned;
        if (target === undefined) continue;
        a.fetch = target;
        a.app = target;
      }
    });
  }

  groupMetadata(): ConsumerGroupMetadata {
    return membershipHandle(this.groupId, () => ({ groupId: this.groupId, memberId: this.#memberId ?? '', generation: this.#generation }));
  }

  /** Revokes everything through the listener (lost if the member was expired), then leaves the group. */
  async close(): Promise<void> {
    await this.#broker.faults.around(this.clientId, 'close', async () => {
      if (this.#closed) return;
      let failure: unknown;
      const remaining = this.assignment();
      try {
        if (remaining.length > 0) await this.#listener?.onRevoked(remaining, { lost: this.#lost });
      } catch (e) {
        failure = e;
      }
      this.#assigned.clear();
      this.#closed = true;
      if (this.#memberId !== null) this.#group().leave(this.#memberId);
      if (failure !== undefined) throw failure;
    });
  }

  // -- internals --------------------------------------------------------------------------------------

  #usable(operation: string): void {
    if (this.#closed) throw stateError(operation, 'the consumer is closed');
  }

  #group(): Group {
    return this.#broker.group(this.groupId);
  }

  #join(): void {
    const subscribes = this.#subscribes ?? (() => false);
    this.#memberId = this.#group().join(this.clientId, subscribes, () => {
      this.#lost = true;
    });
  }

  #committed(partitions: readonly TopicPartition[]): CommittedOffset[] {
    const group = this.#broker.existingGroup(this.groupId);
    return partitions.map((tp) => {
      if (this.#broker.offsetPending(this.groupId, tp)) {
        // librdkafka waits out UNSTABLE_OFFSET_COMMIT until its timeout; nothing can settle it while we wait.
        throw new RetriableError(`Kafka committed failed: the offset of ${partitionKey(tp)} is part of an open transaction (UNSTABLE_OFFSET_COMMIT)`, { context: { operation: 'committed' } });
      }
      return { topic: tp.topic, partition: tp.partition, offset: group?.committed.get(partitionKey(tp)) ?? null };
    });
  }

  /** One rebalance step (see the module comment); the first listener error is rethrown at the end. */
  async #serveRebalance(): Promise<void> {
    const listener = this.#listener as RebalanceListener;
    let failure: unknown;
    const notify = async (call: () => Promise<void> | void): Promise<void> => {
      try {
        await call();
      } catch (e) {
        failure ??= e;
      }
    };
    if (this.#lost) {
      this.#lost = false;
      const lost = this.assignment();
      this.#assigned.clear();
      if (lost.length > 0) await notify(() => listener.onRevoked(lost, { lost: true }));
      if (this.#broker.rejoinStalled.has(this.clientId)) {
        this.#memberId = null;
        if (failure !== undefined) throw failure;
        return;
      }
      this.#join();
    }
    if (this.#memberId === null) return; // out of the group (stallRejoins)
    const group = this.#group();
    const memberId = this.#memberId as string;
    this.#generation = group.generation;
    const target = new Set(group.target(memberId).map(partitionKey));
    const revoked = this.assignment().filter((tp) => !target.has(partitionKey(tp)));
    if (revoked.length > 0) {
      await notify(() => listener.onRevoked(revoked, { lost: false }));
      for (const tp of revoked) this.#assigned.delete(partitionKey(tp));
      group.release(memberId, revoked);
      this.#generation = group.generation; // the revoking member rejoins at once (the hand-off round)
    }
    const claimed = group.claim(memberId, group.target(memberId).filter((tp) => !this.#assigned.has(partitionKey(tp))));
    if (claimed.length > 0) {
      for (const tp of claimed) this.#assigned.set(partitionKey(tp), { tp, fetch: undefined, app: null, firstReturned: undefined, high: null, paused: false });
      await notify(() => listener.onAssigned(claimed));
    }
    if (failure !== undefined) throw failure;
  }

  /** Up to `max` records from unpaused partitions, starting with a different partition each poll. */
  #fetch(max: number): RawRecord[] {
    const out: RawRecord[] = [];
    const parts = [...this.#assigned.values()].filter((a) => !a.paused);
    const start = parts.length === 0 ? 0 : this.#turn++ % parts.length;
    for (let i = 0; i < parts.length; i++) {
      const a = parts[(start + i) % parts.length] as Assigned;
      const log = this.#broker.partitionLog(a.tp);
      if (log === undefined) continue; // topic deleted: the next rebalance revokes it
      a.high = log.high;
      if (out.length >= max) continue;
      const from = this.#fetchPosition(a, log);
      if (from === undefined) continue;
      const { records, next } = log.readCommitted(from, max - out.length);
      a.fetch = next;
      // librdkafka moves the application's position past the transaction markers (and aborted records)
      // it consumed too, so a partition ending in a commit marker is read to its high watermark.
      if (next > (a.app ?? -1n)) a.app = next;
      const first = records[0];
      const last = records.at(-1);
      if (first === undefined || last === undefined) continue;
      a.firstReturned ??= first.offset;
      out.push(...records);
    }
    return out;
  }

  /** The partition's fetch position, resolved from the committed offset or the reset policy; undefined: wait. */
  #fetchPosition(a: Assigned, log: PartitionLog): bigint | undefined {
    const range = { low: log.logStart, high: log.high };
    if (a.fetch === undefined) {
      if (this.#broker.offsetPending(this.groupId, a.tp)) return undefined;
      const committed = this.#group().committed.get(partitionKey(a.tp));
      const decision = startPosition(a.tp, committed === undefined ? null : { offset: committed, log: range }, this.#reset);
      if (decision.reset !== undefined) this.#log.warn(decision.reset.message, decision.reset.fields);
      const start = decision.start;
      a.fetch = start.kind === 'offset' ? start.offset : start.kind === 'earliest' ? log.logStart : log.high;
    }
    if (a.fetch < log.logStart || a.fetch > log.high) {
      // Later (retention passed a lagging reader): librdkafka's own reset, `error` unless the user set one.
      if (this.#reset === 'earliest') a.fetch = log.logStart;
      else if (this.#reset === 'latest') a.fetch = log.high;
      else throw offsetOutOfRangeError(a.tp, a.fetch, range, 'the consumer\'s position');
    }
    return a.fetch;
  }
}
