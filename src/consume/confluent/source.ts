/**
 * `KafkaSource` over librdkafka's KafkaConsumer (the client's callback API, see index.ts for why).
 *
 * Rebalances: librdkafka serves a rebalance only inside a consume call and, with a `rebalance_cb`, waits
 * for the application's incremental_assign/unassign before it goes on; the group cannot finish the
 * rebalance (and the revoked partitions cannot reach another member) until then. We queue the events
 * the callback delivers and serve them at the end of `poll()`: for a revoke, the listener's `onRevoked`
 * runs (the task may commit its cycle: the group generation is still current) and only then do we call
 * incrementalUnassign. Records of a partition revoked during this poll are dropped (the next owner reads
 * them from the committed offset).
 *
 * Owns: the consumer's lifecycle, rebalance sequencing, record conversion. Must not: commit offsets
 * (only the transactional producer does), buffer records beyond what one poll asked for.
 */
import { RetriableError } from '../../core/errors.ts';
import { partitionKey } from '../port.ts';
import type {
  CommittedOffset, ConsumerGroupMetadata, KafkaSource, PollOptions, RawRecord, RebalanceListener, Subscription, TopicPartition, TopicPartitionOffset,
} from '../port.ts';
import { KAFKA_CODES, translateKafkaError } from './errors.ts';
import { RdKafka, call, groupMetadataHandle, nextTick, sync, toRawRecord } from './internal.ts';
import type { KafkaConsumerClient } from './internal.ts';
import { offsetFromNumber, offsetToNumber, regexSubscription, sourceConsumerConfig, splitTopicConfig } from './settings.ts';
import type { ClientSettings } from './settings.ts';

export interface SourceOptions {
  /** Pass-through client settings (bootstrap.servers, security.*, sasl.*, ssl.*, ...). */
  readonly settings: ClientSettings;
  /** The connector's consumer.override.* (prefix stripped). */
  readonly overrides?: ClientSettings;
  readonly groupId: string;
  readonly clientId?: string;
}

interface RebalanceEvent {
  readonly kind: 'assign' | 'revoke' | 'error';
  readonly partitions: TopicPartition[];
  readonly lost: boolean;
  readonly error?: unknown;
}

export class ConfluentKafkaSource implements KafkaSource {
  readonly groupId: string;
  readonly #consumer: KafkaConsumerClient;
  readonly #events: RebalanceEvent[] = [];
  readonly #assigned = new Map<string, TopicPartition>();
  /** First offset returned per partition since it was assigned: the rewind target without a committed offset. */
  readonly #firstReturned = new Map<string, bigint>();
  #listener: RebalanceListener | undefined;
  #closing = false;
  #polling = false;

  private constructor(groupId: string, consumer: KafkaConsumerClient) {
    this.groupId = groupId;
    this.#consumer = consumer;
  }

  static async connect(options: SourceOptions): Promise<ConfluentKafkaSource> {
    const config = sourceConsumerConfig(options.settings, options.overrides, options.groupId);
    if (options.clientId !== undefined) config['client.id'] = options.clientId;
    // The callback needs the instance, which needs the client: the box breaks the cycle.
    const box: { self?: ConfluentKafkaSource } = {};
    const { global, topic } = splitTopicConfig(config);
    const consumer = sync('connect', () => new RdKafka.KafkaConsumer({
      ...global,
      rebalance_cb: (err: RdKafka.LibrdKafkaError | undefined, assignment: RdKafka.TopicPartition[]) => box.self?.onRebalance(err, assignment),
    }, topic) as KafkaConsumerClient);
    const self = new ConfluentKafkaSource(options.groupId, consumer);
    box.self = self;
    await call<unknown>('connect', (cb) => consumer.connect({ timeout: 10_000 }, cb));
    return self;
  }

  /** Called by the client (main thread) while librdkafka waits for our assign/unassign. */
  private onRebalance(err: RdKafka.LibrdKafkaError | undefined, assignment: RdKafka.TopicPartition[]): void {
    const partitions = assignment.map((tp) => ({ topic: tp.topic, partition: tp.partition }));
    if (this.#closing) {
      // Leaving the group: the listener already ran in close(); hand everything back at once. A client
      // already disconnected refuses ('KafkaConsumer is disconnected'); thrown here it would be uncaught
      // (this runs in the client's callback), and there is nothing left to hand back anyway.
      try {
        this.applyAssignment(err?.code === KAFKA_CODES.ERR__ASSIGN_PARTITIONS ? 'assign' : 'revoke', partitions);
      } catch {
        // disconnected: see above
      }
      return;
    }
    if (err?.code === KAFKA_CODES.ERR__ASSIGN_PARTITIONS) this.#events.push({ kind: 'assign', partitions, lost: false });
    else if (err?.code === KAFKA_CODES.ERR__REVOKE_PARTITIONS) {
      this.#events.push({ kind: 'revoke', partitions, lost: this.assignmentLost() });
    } else this.#events.push({ kind: 'error', partitions, lost: false, error: err });
  }

  /** Only meaningful inside the rebalance callback, which is where we ask. */
  private assignmentLost(): boolean {
    try {
      return this.#consumer.assignmentLost();
    } catch {
      return false;
    }
  }

  private applyAssignment(kind: 'assign' | 'revoke', partitions: TopicPartition[]): void {
    const eager = this.#consumer.rebalanceProtocol() === 'EAGER';
    const tps = partitions.map((p) => ({ topic: p.topic, partition: p.partition }));
    if (kind === 'assign') {
      if (eager) this.#consumer.assign(tps);
      else this.#consumer.incrementalAssign(tps);
      for (const p of partitions) {
        this.#assigned.set(partitionKey(p), p);
        this.#firstReturned.delete(partitionKey(p));
      }
    } else {
      if (eager) this.#consumer.unassign();
      else this.#consumer.incrementalUnassign(tps);
      for (const p of partitions) {
        this.#assigned.delete(partitionKey(p));
        this.#firstReturned.delete(partitionKey(p));
      }
    }
  }

  /** Serves queued rebalance events in order; returns the keys revoked. The first listener error is rethrown after all are served. */
  private async serveRebalances(): Promise<Set<string>> {
    const revoked = new Set<string>();
    let failure: unknown;
    while (this.#events.length > 0) {
      const event = this.#events.shift() as RebalanceEvent;
      if (event.kind === 'error') {
        failure ??= translateKafkaError(event.error, 'assign');
        continue;
      }
      if (event.kind === 'assign') {
        try {
          this.applyAssignment('assign', event.partitions);
        } catch (e) {
          failure ??= translateKafkaError(e, 'assign');
          continue;
        }
        try {
          await this.#listener?.onAssigned(event.partitions);
        } catch (e) {
          failure ??= e;
        }
      } else {
        try {
          await this.#listener?.onRevoked(event.partitions, { lost: event.lost });
        } catch (e) {
          failure ??= e;
        }
        // Always hand the partitions back, or the group stays stuck in this rebalance.
        try {
          this.applyAssignment('revoke', event.partitions);
        } catch (e) {
          failure ??= translateKafkaError(e, 'assign');
        }
        for (const p of event.partitions) revoked.add(partitionKey(p));
      }
    }
    if (failure !== undefined) throw failure;
    return revoked;
  }

  async subscribe(subscription: Subscription, listener: RebalanceListener): Promise<void> {
    this.#listener = listener;
    const topics = subscription.kind === 'list' ? [...subscription.topics] : [regexSubscription(subscription.pattern)];
    sync('subscribe', () => this.#consumer.subscribe(topics));
  }

  async poll(options: PollOptions): Promise<RawRecord[]> {
    if (this.#polling) throw new RetriableError('KafkaSource.poll is already running: poll from one loop only');
    this.#polling = true;
    try {
      await this.serveRebalances();
      const timeoutMs = Math.max(0, Math.floor(options.timeoutMs));
      this.#consumer.setDefaultConsumeTimeout(timeoutMs);
      // Wait only for the first record; then take what is already fetched (the client's own default waits per record).
      this.#consumer.setDefaultIsTimeoutOnlyForFirstMessage(true);
      const messages = await call<RdKafka.Message[]>('poll', (cb) => this.#consumer.consume(Math.max(1, options.maxRecords), cb));
      // A rebalance the consume call served is delivered through a separate async handle: let it arrive.
      await nextTick();
      const revoked = await this.serveRebalances();
      const out: RawRecord[] = [];
      for (const m of messages ?? []) {
        const key = `${m.topic}[${m.partition}]`;
        if (revoked.has(key) || !this.#assigned.has(key)) continue;
        const record = toRawRecord(m);
        if (!this.#firstReturned.has(key)) this.#firstReturned.set(key, record.offset);
        out.push(record);
      }
      return out;
    } finally {
      this.#polling = false;
    }
  }

  pause(partitions: readonly TopicPartition[]): void {
    sync('pause', () => this.#consumer.pause(partitions.map((p) => ({ topic: p.topic, partition: p.partition }))));
  }

  resume(partitions: readonly TopicPartition[]): void {
    sync('resume', () => this.#consumer.resume(partitions.map((p) => ({ topic: p.topic, partition: p.partition }))));
  }

  async seek(position: TopicPartitionOffset): Promise<void> {
    const tpo = { topic: position.topic, partition: position.partition, offset: offsetToNumber(position.offset) };
    await call('seek', (cb) => this.#consumer.seek(tpo, 10_000, cb));
  }

  async committed(partitions: readonly TopicPartition[], timeoutMs = 10_000): Promise<CommittedOffset[]> {
    if (partitions.length === 0) return [];
    const tps = partitions.map((p) => ({ topic: p.topic, partition: p.partition }));
    const got = await call<RdKafka.TopicPartitionOffsetAndMetadata[]>('committed', (cb) => this.#consumer.committed(tps, timeoutMs, cb));
    return got.map((tp) => ({ topic: tp.topic, partition: tp.partition, offset: offsetFromNumber(tp.offset) }));
  }

  position(partitions: readonly TopicPartition[]): CommittedOffset[] {
    if (partitions.length === 0) return [];
    const got = sync('position', () => this.#consumer.position(partitions.map((p) => ({ topic: p.topic, partition: p.partition }))));
    return got.map((tp) => ({ topic: tp.topic, partition: tp.partition, offset: offsetFromNumber(tp.offset) }));
  }

  assignment(): TopicPartition[] {
    return [...this.#assigned.values()];
  }

  highWatermark(partition: TopicPartition): bigint | null {
    try {
      const w = this.#consumer.getWatermarkOffsets(partition.topic, partition.partition);
      return typeof w.highOffset === 'number' && w.highOffset >= 0 ? BigInt(w.highOffset) : null;
    } catch {
      return null; // not fetched yet
    }
  }

  async rewindToCommitted(timeoutMs = 10_000): Promise<void> {
    const assigned = this.assignment();
    const committed = await this.committed(assigned, timeoutMs);
    for (const c of committed) {
      const target = c.offset ?? this.#firstReturned.get(partitionKey(c));
      if (target !== undefined) await this.seek({ topic: c.topic, partition: c.partition, offset: target });
    }
  }

  groupMetadata(): ConsumerGroupMetadata {
    return groupMetadataHandle(this.groupId, this.#consumer);
  }

  async close(): Promise<void> {
    if (this.#closing) return;
    // Serve what is pending, then give the listener the last revoke (Connect calls close() on the task here).
    let failure: unknown;
    try {
      await this.serveRebalances();
      const remaining = this.assignment();
      if (remaining.length > 0) await this.#listener?.onRevoked(remaining, { lost: false });
    } catch (e) {
      failure = e;
    }
    this.#closing = true;
    await call<unknown>('close', (cb) => this.#consumer.disconnect(cb));
    if (failure !== undefined) throw failure;
  }
}

