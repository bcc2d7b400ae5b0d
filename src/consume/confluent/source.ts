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
 * Start positions (review O6, consume/offset-range.ts): before assigning partitions we read the group's
 * committed offsets and, for those that have one, the partition's log range, and assign each at an explicit
 * offset: earliest without a committed offset, the committed offset when it is in the log, and otherwise a
 * FatalError naming the partition, offset and range — unless the user configured `auto.offset.reset`, which
 * then applies (logged with the records skipped). librdkafka's own reset is `error` unless configured, so
 * a position that leaves the log later (retention passing a lagging task) fails too: its
 * ERR__AUTO_OFFSET_RESET carries no partition, so we look up which one. The binding drops a consume error
 * that follows records in the same batch (workers.cc, KafkaConsumerConsumeNum) and librdkafka then stops
 * fetching the partition: every `stallCheckMs` the positions of idle, unpaused partitions are checked
 * against their log ranges, so such a stall fails too instead of going silent.
 *
 * Fetching overlaps processing (issue 15): as poll() returns records it issues the next consume at once,
 * with no wait, so librdkafka's queue is copied and packed on the libuv pool thread while the caller
 * handles the batch (`Ahead`). The next poll() returns those records, but a partition's records are
 * dropped when it was sought, assigned or revoked since (the seek or the assignment decides where reading
 * goes on; a seek waits for the consume in flight, so no record after the seek is in it), and given back —
 * sought to the first of them — when it was paused since or the caller now asks for fewer records.
 * position() reports where the caller stands (the first offset not returned), not how far the client read.
 *
 * Owns: the consumer's lifecycle, rebalance sequencing, start positions, record conversion. Must not:
 * commit offsets (only the transactional producer does), hold more than one poll's records ahead.
 */
import { ConfigError, IcefloeError, RetriableError } from '../../core/errors.ts';
import { SILENT_LOGGER } from '../../core/log.ts';
import type { Logger } from '../../core/log.ts';
import { offsetOutOfRangeError, startPosition } from '../offset-range.ts';
import type { LogRange, OffsetReset, StartPosition } from '../offset-range.ts';
import { partitionKey } from '../port.ts';
import type {
  CommittedOffset, ConsumerGroupMetadata, KafkaSource, PollOptions, RawRecord, RebalanceListener, Subscription, TopicPartition, TopicPartitionOffset,
} from '../port.ts';
import { KAFKA_CODES, translateKafkaError } from './errors.ts';
import { Reachability } from './reachability.ts';
import { retryOnLeaderChange } from './leader-retry.ts';
import { RdKafka, call, consumePacked, groupMetadataHandle, nextTick, packedRecords, sync } from './internal.ts';
import type { PackedBatch } from './internal.ts';
import type { KafkaConsumerClient } from './internal.ts';
import { offsetFromNumber, offsetToNumber, regexSubscription, sourceConsumerConfig, sourceOffsetReset, splitTopicConfig } from './settings.ts';
import type { ClientSettings } from './settings.ts';

export interface SourceOptions {
  /** Pass-through client settings (bootstrap.servers, security.*, sasl.*, ssl.*, ...). */
  readonly settings: ClientSettings;
  /** The connector's consumer.override.* (prefix stripped). */
  readonly overrides?: ClientSettings;
  readonly groupId: string;
  readonly clientId?: string;
  /** Where a reset the user configured is reported (records skipped). */
  readonly log?: Logger;
  /** How often idle partitions with unread records are checked for a position outside the log (default 60 s). */
  readonly stallCheckMs?: number;
}

/** librdkafka's logical offsets for an assignment. */
const OFFSET_BEGINNING = -2;
const OFFSET_END = -1;

/** The consume issued as poll() returned (see the module header). */
interface Ahead {
  /** The consumer's positions when it was issued: position() reports these while its records are not returned. */
  readonly positions: ReadonlyMap<string, bigint | null>;
  /** Partitions sought, assigned or revoked since it was issued: their records in it are dropped. */
  readonly stale: Set<string>;
  settled: Promise<void>;
  batch?: PackedBatch;
  error?: unknown;
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
  /** Partitions paused by the caller, and those that returned records since the last stall check. */
  readonly #paused = new Set<string>();
  readonly #returnedSince = new Set<string>();
  readonly #reset: OffsetReset | undefined;
  readonly #log: Logger;
  readonly #stallCheckMs: number;
  /** The subscribed topic names (undefined for a pattern), for an unknown-topic error to name. */
  #topics: readonly string[] | undefined;
  #lastStallCheck = Date.now();
  #listener: RebalanceListener | undefined;
  #closing = false;
  #polling = false;
  #ahead: Ahead | undefined;

  private constructor(groupId: string, consumer: KafkaConsumerClient, options: SourceOptions) {
    this.groupId = groupId;
    this.#consumer = consumer;
    this.#reset = sourceOffsetReset(options.settings, options.overrides);
    this.#log = options.log ?? SILENT_LOGGER;
    this.#stallCheckMs = options.stallCheckMs ?? 60_000;
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
    const self = new ConfluentKafkaSource(options.groupId, consumer, options);
    box.self = self;
    const reach = new Reachability(config).watch(consumer);
    await call<unknown>('connect', (cb) => consumer.connect({ timeout: 10_000 }, cb)).catch((e: unknown) => {
      throw reach.explain(e);
    });
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

  private applyAssignment(kind: 'assign' | 'revoke', partitions: TopicPartition[], starts?: ReadonlyMap<string, StartPosition>): void {
    const eager = this.#consumer.rebalanceProtocol() === 'EAGER';
    const tps = partitions.map((p) => this.withStart(p, starts?.get(partitionKey(p))));
    if (kind === 'assign') {
      if (eager) this.#consumer.assign(tps);
      else this.#consumer.incrementalAssign(tps);
      for (const p of partitions) {
        this.#assigned.set(partitionKey(p), p);
        this.#firstReturned.delete(partitionKey(p));
        this.#ahead?.stale.add(partitionKey(p));
      }
    } else {
      if (eager) this.#consumer.unassign();
      else this.#consumer.incrementalUnassign(tps);
      for (const p of partitions) {
        this.#assigned.delete(partitionKey(p));
        this.#firstReturned.delete(partitionKey(p));
        this.#paused.delete(partitionKey(p));
        this.#ahead?.stale.add(partitionKey(p));
      }
    }
  }

  /** Assigns partitions already assigned again, at the given starts (the others keep their positions). */
  private reassign(starts: ReadonlyMap<string, StartPosition>): void {
    const tps = [...starts.keys()].map((k) => this.#assigned.get(k)).filter((p): p is TopicPartition => p !== undefined);
    for (const k of starts.keys()) this.#ahead?.stale.add(k);
    if (this.#consumer.rebalanceProtocol() === 'EAGER') {
      // assign() replaces the whole assignment: every other partition is given its current position.
      const keep = new Map<string, StartPosition>(starts);
      for (const p of this.position(this.assignment())) if (!keep.has(partitionKey(p)) && p.offset !== null) keep.set(partitionKey(p), { kind: 'offset', offset: p.offset });
      sync('assign', () => this.#consumer.assign(this.assignment().map((p) => this.withStart(p, keep.get(partitionKey(p))))));
      return;
    }
    sync('assign', () => this.#consumer.incrementalUnassign(tps.map((p) => ({ topic: p.topic, partition: p.partition }))));
    sync('assign', () => this.#consumer.incrementalAssign(tps.map((p) => this.withStart(p, starts.get(partitionKey(p))))));
  }

  /** A partition for assign(), with librdkafka's offset for `start` (none: its committed offset). */
  private withStart(p: TopicPartition, start: StartPosition | undefined): RdKafka.TopicPartitionOffset | RdKafka.TopicPartition {
    const tp = { topic: p.topic, partition: p.partition };
    if (start === undefined) return tp;
    return { ...tp, offset: start.kind === 'offset' ? offsetToNumber(start.offset) : start.kind === 'earliest' ? OFFSET_BEGINNING : OFFSET_END };
  }

  /**
   * The logs' offsets [low, high) as the partition leaders report them now: two batched ListOffsets
   * (earliest, latest) whatever the number of partitions. A partition the broker gave no answer for is missing.
   */
  private async logRanges(partitions: readonly TopicPartition[], timeoutMs = 10_000): Promise<Map<string, LogRange>> {
    const out = new Map<string, LogRange>();
    if (partitions.length === 0) return out;
    // A stale leader epoch (a broker frozen or restarted) is asked again at once after a metadata refresh.
    const refresh = (): Promise<void> => this.refreshMetadata(partitions);
    const ask = (timestamp: number): Promise<RdKafka.TopicPartitionOffset[]> =>
      retryOnLeaderChange(() => call('watermarks', (cb) => this.#consumer.offsetsForTimes(partitions.map((p) => ({ topic: p.topic, partition: p.partition, offset: timestamp })), timeoutMs, cb)), refresh);
    const [lows, highs] = await Promise.all([ask(OFFSET_BEGINNING), ask(OFFSET_END)]);
    const high = new Map(highs.filter((h) => typeof h.offset === 'number' && h.offset >= 0).map((h) => [partitionKey(h), BigInt(h.offset)]));
    for (const l of lows) {
      const h = typeof l.offset === 'number' && l.offset >= 0 ? high.get(partitionKey(l)) : undefined;
      if (h !== undefined) out.set(partitionKey(l), { low: BigInt(l.offset), high: h });
    }
    return out;
  }

  /** A metadata request for the partitions' topics: librdkafka updates its leaders and leader epochs from the reply. */
  private async refreshMetadata(partitions: readonly TopicPartition[]): Promise<void> {
    for (const topic of new Set(partitions.map((p) => p.topic))) {
      await call<unknown>('watermarks', (cb) => this.#consumer.getMetadata({ topic, allTopics: false, timeout: 5_000 }, cb)).catch(() => undefined);
    }
  }

  /**
   * Start offsets for newly assigned partitions (see the module header). A partition whose committed offset
   * is outside its log gets no explicit start (librdkafka fails its fetch); the first such error is returned
   * with the starts of the others.
   */
  private async startPositions(partitions: readonly TopicPartition[]): Promise<{ starts: Map<string, StartPosition>; failure: unknown }> {
    const committed = await this.committed(partitions);
    const logs = await this.logRanges(committed.filter((c) => c.offset !== null));
    const starts = new Map<string, StartPosition>();
    let failure: unknown;
    for (const c of committed) {
      const log = logs.get(partitionKey(c));
      if (c.offset !== null && log === undefined) continue; // no answer: librdkafka's committed offset, checked by its fetch
      try {
        const decision = startPosition(c, c.offset === null || log === undefined ? null : { offset: c.offset, log }, this.#reset);
        starts.set(partitionKey(c), decision.start);
        if (decision.reset !== undefined) this.#log.warn(decision.reset.message, decision.reset.fields);
      } catch (e) {
        failure ??= e;
      }
    }
    return { starts, failure };
  }

  /**
   * For partitions that may have stopped fetching (after librdkafka's reset error, or idle with unread
   * records): the first whose position (before it returned anything: its committed offset) is outside its
   * log, as the error to throw. After librdkafka's reset error (`restart`), a partition without a committed
   * offset (its start could not be decided at assignment, so the `error` reset stopped it) is assigned
   * again where a new partition starts.
   */
  private async findOutOfRange(partitions: readonly TopicPartition[], restart: boolean): Promise<IcefloeError | undefined> {
    const positions = this.position(partitions);
    const unread = positions.filter((p) => p.offset === null);
    const committed = unread.length === 0 ? [] : await this.committed(unread);
    const known = [...positions, ...committed].filter((p) => p.offset !== null);
    const logs = await this.logRanges(known);
    const restarts = new Map<string, StartPosition>();
    for (const p of committed) {
      // startPosition throws under a configured reset=error.
      if (p.offset === null && restart) restarts.set(partitionKey(p), startPosition(p, null, this.#reset).start);
    }
    // librdkafka stopped these partitions (a seek now fails with ERR__STATE): assign them again, at their start.
    if (restarts.size > 0) this.reassign(restarts);
    for (const p of known) {
      const log = logs.get(partitionKey(p));
      const offset = p.offset as bigint;
      if (log !== undefined && (offset < log.low || offset > log.high)) {
        return offsetOutOfRangeError(p, offset, log, positions.includes(p) ? 'the consumer\'s position' : 'the group\'s committed offset');
      }
    }
    return undefined;
  }

  /** Every `stallCheckMs`: the positions of idle, unpaused partitions must still be in their logs (two batched requests). */
  private async checkStalled(): Promise<void> {
    const now = Date.now();
    if (now - this.#lastStallCheck < this.#stallCheckMs || this.#reset === 'earliest' || this.#reset === 'latest') return;
    this.#lastStallCheck = now;
    const idle = this.assignment().filter((p) => !this.#paused.has(partitionKey(p)) && !this.#returnedSince.has(partitionKey(p)));
    this.#returnedSince.clear();
    let error: IcefloeError | undefined;
    try {
      error = await this.findOutOfRange(idle, false);
    } catch (e) {
      if (!(e instanceof RetriableError)) throw e;
      this.#log.debug('stall check skipped', { error: e.message }); // a check, not a read: try again next time
    }
    if (error !== undefined) throw error;
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
        // Assigned even when a start cannot be decided (librdkafka waits for it): those partitions get
        // librdkafka's committed offset, whose fetch fails under auto.offset.reset=error.
        let starts: ReadonlyMap<string, StartPosition> | undefined;
        try {
          const decided = await this.startPositions(event.partitions);
          starts = decided.starts;
          if (decided.failure !== undefined) failure ??= decided.failure;
        } catch (e) {
          failure ??= e;
        }
        try {
          this.applyAssignment('assign', event.partitions, starts);
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
    this.#topics = subscription.kind === 'list' ? topics : undefined;
    sync('subscribe', () => this.#consumer.subscribe(topics));
  }

  /**
   * librdkafka's unknown-topic error names no topic: the subscribed topics the cluster does not have
   * (all subscribed ones when its metadata cannot be read), and what to do. The class is kept.
   */
  private async unknownTopic(e: IcefloeError): Promise<IcefloeError> {
    const subscribed = this.#topics;
    if (subscribed === undefined) return e;
    let missing = subscribed;
    try {
      const md = await call<RdKafka.Metadata>('poll', (cb) => this.#consumer.getMetadata({ allTopics: true, timeout: 5_000 }, cb));
      const present = new Set(md.topics.map((t) => t.name));
      const absent = subscribed.filter((t) => !present.has(t));
      if (absent.length > 0) missing = absent;
    } catch {
      // the subscription is all we can name
    }
    const what = missing.length === 1 ? `topic ${missing[0]} does not exist` : `topics ${missing.join(', ')} do not exist`;
    return new ConfigError(`${e.message}: ${what} on the cluster (the connector's topics): create ${missing.length === 1 ? 'it' : 'them'} (kafka-topics.sh --create, or icefloe generate --topic), or correct topics`, {
      cause: e,
      context: { ...e.context, topics: missing },
    });
  }

  async poll(options: PollOptions): Promise<RawRecord[]> {
    if (this.#polling) throw new RetriableError('KafkaSource.poll is already running: poll from one loop only');
    this.#polling = true;
    try {
      // The consume issued ahead settles first: a rebalance served now marks its partitions stale in it.
      const ahead = this.#ahead;
      await ahead?.settled;
      await this.serveRebalances();
      this.#ahead = undefined;
      const timeoutMs = Math.max(0, Math.floor(options.timeoutMs));
      const maxRecords = Math.max(1, options.maxRecords);
      const fromAhead = ahead !== undefined && (ahead.error !== undefined || (ahead.batch?.count ?? 0) > 0);
      let batch: PackedBatch | undefined;
      try {
        if (fromAhead) {
          if (ahead.error !== undefined) throw ahead.error;
          batch = ahead.batch;
        } else {
          // Wait only for the first record; then take what is already fetched (the client's own default waits per record).
          batch = await call<PackedBatch>('poll', (cb) => consumePacked(this.#consumer, timeoutMs, maxRecords, cb));
        }
      } catch (e) {
        if (e instanceof IcefloeError && e.context['kafkaCode'] === KAFKA_CODES.ERR_UNKNOWN_TOPIC_OR_PART) throw await this.unknownTopic(e);
        // librdkafka's reset error does not say which partition: find it, and say what to do.
        if (!(e instanceof IcefloeError) || e.context['kafkaCode'] !== KAFKA_CODES.ERR__AUTO_OFFSET_RESET) throw e;
        const explained = await this.findOutOfRange(this.assignment(), true);
        if (explained !== undefined) throw explained;
        batch = undefined; // a partition without a committed offset was sent to its start: nothing lost, poll again
      }
      // A rebalance the consume call served is delivered through a separate async handle: let it arrive.
      await nextTick();
      const revoked = await this.serveRebalances();
      const stale = fromAhead ? ahead.stale : undefined;
      /** Partitions whose records are given back: the first of them, to seek to. */
      const giveBack = new Map<string, TopicPartitionOffset>();
      let kept = 0;
      // Records come in runs of one partition: its key and checks are made once per run, at its first record.
      let lastTopic: string | undefined;
      let lastPartition = -1;
      let lastKey = '';
      let lastKept = false;
      const out = batch === undefined ? [] : packedRecords(batch, (topic, partition, offset) => {
        if (topic !== lastTopic || partition !== lastPartition) {
          lastTopic = topic;
          lastPartition = partition;
          lastKey = `${topic}[${partition}]`;
          lastKept = !revoked.has(lastKey) && stale?.has(lastKey) !== true && this.#assigned.has(lastKey) && !giveBack.has(lastKey);
          if (lastKept && (this.#paused.has(lastKey) || kept >= maxRecords)) {
            giveBack.set(lastKey, { topic, partition, offset });
            lastKept = false;
          }
          if (lastKept) {
            this.#returnedSince.add(lastKey);
            if (!this.#firstReturned.has(lastKey)) this.#firstReturned.set(lastKey, offset);
          }
        } else if (lastKept && kept >= maxRecords) {
          giveBack.set(lastKey, { topic, partition, offset });
          lastKept = false;
        }
        if (lastKept) kept++;
        return lastKept;
      });
      for (const position of giveBack.values()) await this.seek(position);
      await this.checkStalled();
      if (out.length > 0 && !this.#closing) this.consumeAhead(maxRecords);
      return out;
    } finally {
      this.#polling = false;
    }
  }

  /** Issues the next consume without waiting for it (see the module header). */
  private consumeAhead(maxRecords: number): void {
    const positions = new Map(this.position(this.assignment()).map((p) => [partitionKey(p), p.offset]));
    const ahead: Ahead = { positions, stale: new Set(), settled: Promise.resolve() };
    ahead.settled = call<PackedBatch>('poll', (cb) => consumePacked(this.#consumer, 0, maxRecords, cb)).then(
      (batch) => {
        ahead.batch = batch;
      },
      (e: unknown) => {
        ahead.error = e;
      },
    );
    this.#ahead = ahead;
  }

  pause(partitions: readonly TopicPartition[]): void {
    sync('pause', () => this.#consumer.pause(partitions.map((p) => ({ topic: p.topic, partition: p.partition }))));
    for (const p of partitions) this.#paused.add(partitionKey(p));
  }

  resume(partitions: readonly TopicPartition[]): void {
    sync('resume', () => this.#consumer.resume(partitions.map((p) => ({ topic: p.topic, partition: p.partition }))));
    for (const p of partitions) this.#paused.delete(partitionKey(p));
  }

  async seek(position: TopicPartitionOffset): Promise<void> {
    // After the consume in flight: none of its records may come from past the seek.
    const ahead = this.#ahead;
    if (ahead !== undefined) {
      await ahead.settled;
      ahead.stale.add(partitionKey(position));
    }
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
    const ahead = this.#ahead;
    return got.map((tp) => {
      const key = partitionKey(tp);
      // Records read ahead are not returned yet: the caller stands where the last poll left it.
      const offset = ahead !== undefined && !ahead.stale.has(key) && ahead.positions.has(key) ? (ahead.positions.get(key) as bigint | null) : offsetFromNumber(tp.offset);
      return { topic: tp.topic, partition: tp.partition, offset };
    });
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
      await this.#ahead?.settled; // the client must not be disconnected under its consume
      this.#ahead = undefined;
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

