/**
 * `KafkaAdmin` over librdkafka's AdminClient: topic creation, topic ids, watermarks (with the last
 * stable offset), and the cluster id.
 *
 * The cluster id: the client exposes no API for it (librdkafka has `rd_kafka_clusterid()`, the binding
 * does not bind it, and neither API surface has DescribeCluster). librdkafka does log it at debug level
 * `metadata` for every Metadata response ("ClusterId: <id>, ControllerId: <n>"), over whatever security
 * protocol the settings configure, so we open a short-lived client with that debug context and take the
 * id from that line, validated as Kafka's 22-character base64url UUID. A librdkafka upgrade that changes
 * the line fails the admin integration test, not silently.
 *
 * Group offsets: read and committed through a KafkaConsumer with that group.id that never subscribes, one
 * per group, kept until close(): the AdminClient has no AlterConsumerGroupOffsets (the consumer commits
 * as a simple consumer: generation -1, which the coordinator accepts while the group has no members), and
 * its ListConsumerGroupOffsets can crash the process (see listGroupOffsets).
 * Topic configs come from topic-configs.ts (the binding has no DescribeConfigs).
 *
 * Group members: DescribeGroups, for the worker's check that no other process runs its task ids.
 * Deleting a group (the offsets API's reset): DeleteGroups; the binding has no DeleteConsumerGroupOffsets.
 *
 * Owns: admin calls and their translation. Must not: delete or alter topics it did not create (deleteTopic
 * exists for tests and tools).
 */
import { IcefloeError, RetriableError } from '../../core/errors.ts';
import { GroupNotEmptyError } from '../port.ts';
import type { GroupAdmin, GroupInspector, GroupMemberInfo, GroupOffset, KafkaAdmin, TopicSpec, Watermarks } from '../port.ts';
import { KAFKA_CODES, translateKafkaError } from './errors.ts';
import { RdKafka, call, sync } from './internal.ts';
import type { KafkaConsumerClient } from './internal.ts';
import { describeTopicConfigs } from './topic-configs.ts';
import { Reachability } from './reachability.ts';
import { adminConfig, clusterIdFromLogLine, offsetFromNumber, offsetToNumber, splitTopicConfig, uuidFromHalves } from './settings.ts';
import type { ClientSettings } from './settings.ts';

export interface AdminOptions {
  readonly settings: ClientSettings;
  /** admin.override.* (prefix stripped). */
  readonly overrides?: ClientSettings;
}

const TIMEOUT_MS = 15_000;
/**
 * How long checkReachable waits for the cluster's first metadata: shorter than a request's TIMEOUT_MS so
 * a worker pointed at the wrong place says so sooner, long enough for a broker that is still starting.
 * Causes no retry can change (DNS, TLS, SASL) end the wait as soon as librdkafka has retried each once.
 */
export const REACHABLE_BUDGET_MS = 8_000;
/** One metadata request of checkReachable (a request in flight delays the client's close by up to this). */
const ATTEMPT_MS = 500;

export class ConfluentKafkaAdmin implements KafkaAdmin, GroupInspector, GroupAdmin {
  readonly #config: Record<string, string>;
  readonly #admin: RdKafka.IAdminClient;
  /** librdkafka's connection failures, attached to errors that name no host (reachability.ts). */
  readonly #reach: Reachability;
  /** Group id → the never-subscribing consumer that commits its offsets. */
  readonly #committers = new Map<string, Promise<KafkaConsumerClient>>();

  private constructor(config: Record<string, string>, admin: RdKafka.IAdminClient, reach: Reachability) {
    this.#config = config;
    this.#admin = admin;
    this.#reach = reach;
  }

  static connect(options: AdminOptions): Promise<ConfluentKafkaAdmin> {
    const config = adminConfig(options.settings, options.overrides);
    const reach = new Reachability(config);
    // Handlers go in at creation: the client starts connecting at once, and its first failures are the telling ones.
    const admin = sync('admin', () => RdKafka.AdminClient.create(config, {
      'event.log': (e: { severity?: unknown; fac?: unknown; message?: unknown }) => reach.onLog(e),
      'event.error': (e: { message?: unknown }) => reach.onError(e),
    }));
    return Promise.resolve(new ConfluentKafkaAdmin(config, admin, reach));
  }

  /**
   * A bounded first metadata request: resolves once the cluster answered; otherwise an error naming the
   * bootstrap addresses and librdkafka's cause (reachability.ts), a ConfigError for a cause no retry can
   * change (found within about a second), a RetriableError after `budgetMs` for the others. The worker
   * calls it before anything else, so a wrong bootstrap.servers or security.protocol is named up front.
   */
  async checkReachable(budgetMs: number = REACHABLE_BUDGET_MS): Promise<void> {
    const started = Date.now();
    const hopeless = this.#reach.whenHopeless();
    let gaveUp = false;
    void hopeless.then(() => (gaveUp = true));
    // Short requests, repeated: a request in flight holds the client's close, and a definite cause must
    // be reported as soon as it is known, not when a long request times out.
    let last: unknown;
    const stop = hopeless.then(() => false);
    while (!gaveUp && Date.now() - started < budgetMs) {
      const attemptStarted = Date.now();
      const attemptMs = Math.min(ATTEMPT_MS, Math.max(100, budgetMs - (attemptStarted - started)));
      const listed = call<string[]>('admin', (cb) => this.#admin.listTopics({ timeout: attemptMs }, cb)).then(() => true, (e: unknown) => {
        last = e;
        return false;
      });
      if (await Promise.race([listed, stop])) return;
      if (gaveUp) break;
      await listed;
      // The cluster answered with a refusal (authorization, configuration): reachable, and that is the error.
      if (last instanceof IcefloeError && !last.retriable) throw last;
      // A request that failed at once is not repeated in a tight loop.
      const rest = attemptMs - (Date.now() - attemptStarted);
      if (rest > 0) await Promise.race([new Promise((resolve) => setTimeout(resolve, rest)), stop]);
    }
    throw this.#reach.unreachable(Date.now() - started, last);
  }

  /** An admin call; an error that may mean the cluster is unreachable names the bootstrap addresses and the cause. */
  #call<T = void>(run: (cb: (err: unknown, value?: T) => void) => void): Promise<T> {
    return call<T>('admin', run).catch((e: unknown) => {
      throw this.#reach.explain(e);
    });
  }

  async ensureTopic(spec: TopicSpec): Promise<boolean> {
    const topic: RdKafka.NewTopic = {
      topic: spec.name,
      num_partitions: spec.partitions,
      replication_factor: spec.replicationFactor,
      ...(spec.configs === undefined ? {} : { config: { ...spec.configs } }),
    };
    return await new Promise<boolean>((resolve, reject) => {
      this.#admin.createTopic(topic, TIMEOUT_MS, (err) => {
        if (err === null || err === undefined) resolve(true);
        else if (err.code === KAFKA_CODES.ERR_TOPIC_ALREADY_EXISTS) resolve(false);
        else reject(this.#reach.explain(translateKafkaError(err, 'admin')));
      });
    });
  }

  async deleteTopic(name: string): Promise<void> {
    await this.#call((cb) => this.#admin.deleteTopic(name, TIMEOUT_MS, cb));
  }

  private async describe(topic: string): Promise<RdKafka.TopicDescription> {
    const got = await this.#call<RdKafka.TopicDescription[]>((cb) => this.#admin.describeTopics([topic], { timeout: TIMEOUT_MS }, cb));
    const d = got[0];
    if (d === undefined) throw new RetriableError(`Kafka admin: no description for topic ${topic}`);
    if (d.error !== undefined) throw translateKafkaError(d.error, 'admin');
    return d;
  }

  async topicId(topic: string): Promise<string> {
    const d = await this.describe(topic);
    return uuidFromHalves(BigInt(d.topicId.mostSignificantBits), BigInt(d.topicId.leastSignificantBits));
  }

  async partitionCount(topic: string): Promise<number> {
    return (await this.describe(topic)).partitions.length;
  }

  async watermarks(topic: string): Promise<Watermarks[]> {
    const partitions = (await this.describe(topic)).partitions.map((p) => p.partition).sort((a, b) => a - b);
    const list = (spec: RdKafka.OffsetSpec, isolationLevel: RdKafka.IsolationLevel): Promise<RdKafka.ListOffsetsResult[]> =>
      this.#call<RdKafka.ListOffsetsResult[]>((cb) =>
        this.#admin.listOffsets(partitions.map((partition) => ({ topic, partition, offset: spec })), { timeout: TIMEOUT_MS, isolationLevel }, cb));
    const [low, high, stable] = await Promise.all([
      list(RdKafka.OffsetSpec.EARLIEST, RdKafka.IsolationLevel.READ_UNCOMMITTED),
      list(RdKafka.OffsetSpec.LATEST, RdKafka.IsolationLevel.READ_UNCOMMITTED),
      list(RdKafka.OffsetSpec.LATEST, RdKafka.IsolationLevel.READ_COMMITTED),
    ]);
    const at = (rs: RdKafka.ListOffsetsResult[], partition: number): bigint => {
      const r = rs.find((x) => x.partition === partition);
      if (r?.error !== undefined) throw translateKafkaError(r.error, 'admin');
      const v = offsetFromNumber(r?.offset);
      if (v === null) throw new RetriableError(`Kafka admin: no offset for ${topic}[${partition}]`);
      return v;
    };
    return partitions.map((partition) => ({ topic, partition, low: at(low, partition), high: at(high, partition), lastStable: at(stable, partition) }));
  }

  topicConfigs(topic: string): Promise<Readonly<Record<string, string>>> {
    return describeTopicConfigs(this.#config, topic);
  }

  async clusterId(): Promise<string> {
    const { global, topic } = splitTopicConfig({ ...this.#config, debug: 'metadata' });
    const probe = sync('admin', () => new RdKafka.Producer(global, topic));
    // The id usually shows up in a log line before connect() has called back. Disconnecting a producer that
    // is not connected yet throws ('Producer not connected', from its flush) and leaks the client, so the
    // probe is disconnected only once its connect settled, and only if it succeeded.
    let connected: (ok: boolean) => void = () => undefined;
    const connectSettled = new Promise<boolean>((resolve) => (connected = resolve));
    try {
      return await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new RetriableError('Kafka admin: no metadata response carried a cluster id in time')), TIMEOUT_MS);
        probe.on('event.log', (line: { message?: unknown }) => {
          const id = typeof line.message === 'string' ? clusterIdFromLogLine(line.message) : undefined;
          if (id !== undefined) {
            clearTimeout(timer);
            resolve(id);
          }
        });
        probe.connect({ timeout: TIMEOUT_MS }, (err) => {
          connected(err === null || err === undefined);
          if (err !== null && err !== undefined) {
            clearTimeout(timer);
            reject(translateKafkaError(err, 'admin'));
          }
        });
      });
    } finally {
      if (await connectSettled) await new Promise<void>((resolve) => probe.disconnect(() => resolve()));
    }
  }

  async groupOffsets(groupId: string, topic: string): Promise<GroupOffset[]> {
    // A group's coordinator answers COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR for a moment after the
    // group is first used or moves: retried here briefly, so the caller sees only lasting trouble.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.listGroupOffsets(groupId, topic);
      } catch (e) {
        if (!(e instanceof RetriableError) || attempt >= 20) throw e;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  /**
   * OffsetFetch through the group's own consumer client, not the AdminClient's ListConsumerGroupOffsets:
   * librdkafka 2.15 answers a NOT_COORDINATOR to the latter by asking the client's consumer group to look
   * up its coordinator, and an AdminClient has none — a NULL dereference that killed the worker with
   * SIGSEGV after a broker restart (the group coordinator not loaded yet). The consumer's committed() goes
   * through its group, which retries the lookup; with read_committed (librdkafka's default) it asks for
   * stable offsets, as requireStableOffsets did.
   */
  private async listGroupOffsets(groupId: string, topic: string): Promise<GroupOffset[]> {
    const partitions = (await this.describe(topic)).partitions.map((p) => ({ topic, partition: p.partition }));
    const consumer = await this.groupConsumer(groupId);
    let got: RdKafka.TopicPartitionOffsetAndMetadata[];
    try {
      got = await withTimeout(call<RdKafka.TopicPartitionOffsetAndMetadata[]>('admin', (cb) => consumer.committed(partitions, TIMEOUT_MS, cb)), TIMEOUT_MS + 1_000, `Kafka admin: reading the offsets of group ${groupId} did not finish within ${TIMEOUT_MS} ms`);
    } catch (e) {
      this.dropGroupConsumer(groupId, consumer);
      throw e;
    }
    const out: GroupOffset[] = [];
    for (const p of got as (RdKafka.TopicPartitionOffsetAndMetadata | Error)[]) {
      // The binding puts a partition's error in place of the partition.
      if (p instanceof Error) throw new RetriableError(`Kafka admin: reading the offsets of group ${groupId} failed: ${p.message}`);
      const offset = offsetFromNumber(p.offset);
      if (offset !== null) out.push({ topic: p.topic, partition: p.partition, offset, metadata: typeof p.metadata === 'string' ? p.metadata : null });
    }
    return out.sort((a, b) => a.partition - b.partition);
  }

  /** The group's never-subscribing consumer (one per group, kept until close()). */
  private groupConsumer(groupId: string): Promise<KafkaConsumerClient> {
    let client = this.#committers.get(groupId);
    if (client === undefined) {
      client = this.groupClient(groupId);
      this.#committers.set(groupId, client);
      client.catch(() => this.#committers.delete(groupId));
    }
    return client;
  }

  /** Replaces a group client after a failure (a stalled one must not serve the next call). */
  private dropGroupConsumer(groupId: string, consumer: KafkaConsumerClient): void {
    this.#committers.delete(groupId);
    void withTimeout(new Promise<void>((resolve) => consumer.disconnect(() => resolve())), TIMEOUT_MS, '').catch(() => undefined);
  }

  /**
   * DescribeGroups: the live members (a dead one stays until its session times out). A coordinator that
   * is loading or moving (COORDINATOR_LOAD_IN_PROGRESS on a fresh cluster, whose __consumer_offsets is
   * being created: the first worker on a new stack) is retried for up to 10 s, as in groupOffsets.
   */
  async groupMembers(groupId: string): Promise<GroupMemberInfo[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#describeGroupMembers(groupId);
      } catch (e) {
        if (!(e instanceof RetriableError) || attempt >= 40) throw e;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  async #describeGroupMembers(groupId: string): Promise<GroupMemberInfo[]> {
    const got = await this.#call<RdKafka.GroupDescriptions>((cb) => this.#admin.describeGroups([groupId], { timeout: TIMEOUT_MS }, cb));
    const g = got.groups.find((d) => d.groupId === groupId);
    if (g === undefined) throw new RetriableError(`Kafka admin: no description for group ${groupId}`);
    if (g.error !== undefined) throw translateKafkaError(g.error, 'admin');
    return g.members.map((m) => ({
      memberId: m.memberId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      assignment: (m.assignment?.topicPartitions ?? []).map((tp) => ({ topic: tp.topic, partition: tp.partition })),
    }));
  }

  async listTopics(): Promise<string[]> {
    return await this.#call<string[]>((cb) => this.#admin.listTopics({ timeout: TIMEOUT_MS }, cb));
  }

  async deleteGroup(groupId: string): Promise<boolean> {
    // Our own never-subscribing client of the group is not a member, but it is closed first so nothing of
    // ours uses the group while it goes.
    const own = this.#committers.get(groupId);
    if (own !== undefined) this.dropGroupConsumer(groupId, await own);
    for (let attempt = 1; ; attempt++) {
      const got = await this.#call<RdKafka.DeleteGroupsResult[]>((cb) => this.#admin.deleteGroups([groupId], { timeout: TIMEOUT_MS }, cb));
      const r = got.find((x) => x.groupId === groupId);
      const code = r?.errorCode ?? r?.error?.code;
      if (r === undefined) throw new RetriableError(`Kafka admin: no answer for deleting group ${groupId}`);
      if (code === undefined || code === 0) return true;
      if (code === KAFKA_CODES.ERR_GROUP_ID_NOT_FOUND) return false;
      if (code === KAFKA_CODES.ERR_NON_EMPTY_GROUP) throw new GroupNotEmptyError(groupId, `Kafka admin: group ${groupId} has members (NON_EMPTY_GROUP)`);
      const error = r.error === undefined ? new RetriableError(`Kafka admin: deleting group ${groupId} failed with code ${code}`) : translateKafkaError(r.error, 'admin');
      // A coordinator that is loading or moving answers for a moment (as in groupOffsets).
      if (!(error instanceof RetriableError) || attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  async commitGroupOffsets(groupId: string, offsets: readonly GroupOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    const consumer = await this.groupConsumer(groupId);
    const list = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: offsetToNumber(o.offset), ...(o.metadata === null ? {} : { metadata: o.metadata }) }));
    // librdkafka keeps a simple consumer's commit queued while it looks for the group coordinator (after a
    // broker stall, for as long as that takes): bounded here, and the client is replaced after a failure.
    try {
      await withTimeout(call('admin', (cb) => consumer.commitCb(list, (err) => cb(err))), TIMEOUT_MS, `Kafka admin: committing offsets for group ${groupId} did not finish within ${TIMEOUT_MS} ms`);
    } catch (e) {
      this.dropGroupConsumer(groupId, consumer);
      throw e;
    }
    // Observed on Kafka 4: the first commit of a group calls back before a read sees it (tens of ms).
    // Callers decide from what they read next (a group without offsets is seeded), so resolve only once
    // the broker shows every offset and its metadata.
    const topics = [...new Set(offsets.map((o) => o.topic))];
    for (let attempt = 1; ; attempt++) {
      const seen = (await Promise.all(topics.map((t) => this.groupOffsets(groupId, t)))).flat();
      const visible = offsets.every((o) => seen.some((s) => s.topic === o.topic && s.partition === o.partition && s.offset === o.offset && s.metadata === o.metadata));
      if (visible) return;
      if (attempt >= 40) throw new RetriableError(`Kafka admin: the offsets committed for group ${groupId} did not become visible`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private async groupClient(groupId: string): Promise<KafkaConsumerClient> {
    const { global, topic } = splitTopicConfig({ ...this.#config, 'group.id': groupId, 'enable.auto.commit': 'false', 'enable.auto.offset.store': 'false' });
    const consumer = sync('admin', () => new RdKafka.KafkaConsumer(global, topic) as KafkaConsumerClient);
    await call<unknown>('admin', (cb) => consumer.connect({ timeout: TIMEOUT_MS }, cb)).catch((e: unknown) => {
      throw this.#reach.explain(e);
    });
    return consumer;
  }

  async close(): Promise<void> {
    this.#admin.disconnect();
    for (const client of this.#committers.values()) {
      const consumer = await client.catch(() => undefined);
      // A disconnect waits for requests in flight; a stalled coordinator must not hold the worker's exit.
      if (consumer !== undefined) await withTimeout(new Promise<void>((resolve) => consumer.disconnect(() => resolve())), TIMEOUT_MS, '').catch(() => undefined);
    }
    this.#committers.clear();
  }
}

/** `p`, or a RetriableError after `ms` (the operation itself is not cancelled). */
function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new RetriableError(message)), ms)));
  return Promise.race([p, expired]).finally(() => clearTimeout(timer));
}
