/**
 * `MemoryKafka`: an in-memory Kafka cluster for unit tests of the sink task and committer loops. It
 * makes the clients of the Kafka ports (consume/port.ts) — `createSource`, `createProducer`,
 * `createControlReader`, `createAdmin` — and gives the test what a broker operator has: plain produce
 * for source data, retention (`deleteRecordsBefore`), topics deleted and recreated (a new topic id each
 * time), a failover (`changeClusterId`), a look at every offset of a partition (records,
 * markers, transaction states), group offsets and membership, session timeouts (`expireMember`), and
 * fault injection (`failNext`).
 *
 * Deterministic: no timers beyond the ~1 ms an empty poll waits, no randomness except the ids from
 * `uuid` (injectable). Everything happens at the call that causes it; nothing runs in the background.
 *
 * Owns: the façade and test helpers. Must not: stand in for the integration suite (the real broker is
 * the proof; this fake follows what the confluent adapter shows of it).
 */
import { randomUUID } from 'node:crypto';
import { ConfigError } from '../../core/errors.ts';
import { partitionKey } from '../port.ts';
import type { RecordHeader, TopicPartition, TopicPartitionOffset, Watermarks } from '../port.ts';
import { MemoryKafkaAdmin } from './admin.ts';
import { Broker } from './broker.ts';
import { rejectCall } from './faults.ts';
import type { Fault, Operation } from './faults.ts';
import { storedRecord } from './log.ts';
import type { PartitionEntry } from './log.ts';
import { MemoryTransactionalProducer } from './producer.ts';
import { MemoryControlTopicReader } from './reader.ts';
import { MemoryKafkaSource } from './source.ts';
import type { MemorySourceOptions } from './source.ts';

export interface MemoryKafkaOptions {
  /** Default: 22 base64url characters derived from `uuid()`, the shape brokers report. */
  readonly clusterId?: string;
  /** Topic ids (and the default cluster id). Default `crypto.randomUUID`. */
  readonly uuid?: () => string;
  /** Timestamps of records produced without one. Default `Date.now`. */
  readonly nowMs?: () => number;
}

/** A record for `produce`: strings are taken as UTF-8. */
export interface TestRecord {
  readonly key?: Uint8Array | string | null;
  readonly value: Uint8Array | string | null;
  readonly headers?: readonly RecordHeader[];
  readonly timestamp?: number;
}

export interface GroupView {
  readonly generation: number;
  /** In join order, with the partitions each holds. */
  readonly members: readonly { readonly memberId: string; readonly partitions: TopicPartition[] }[];
}

export class MemoryKafka {
  readonly #broker: Broker;

  constructor(options: MemoryKafkaOptions = {}) {
    const uuid = options.uuid ?? randomUUID;
    const clusterId = options.clusterId ?? Buffer.from(uuid().replaceAll('-', ''), 'hex').toString('base64url');
    this.#broker = new Broker(clusterId, uuid, options.nowMs ?? Date.now);
  }

  get clusterId(): string {
    return this.#broker.clusterId;
  }

  /**
   * A failover to another cluster as the clients see it: the cluster id they are told changes. Topics keep
   * their ids; a test that stages a real failover recreates the topics too (another cluster's topic of the
   * same name has its own id).
   */
  changeClusterId(clusterId: string): void {
    this.#broker.clusterId = clusterId;
  }

  // -- clients ----------------------------------------------------------------------------------------

  createSource(options: MemorySourceOptions): MemoryKafkaSource {
    return new MemoryKafkaSource(this.#broker, options);
  }

  createProducer(transactionalId: string): MemoryTransactionalProducer {
    return new MemoryTransactionalProducer(this.#broker, transactionalId);
  }

  createControlReader(options: { readonly name?: string } = {}): MemoryControlTopicReader {
    return new MemoryControlTopicReader(this.#broker, options.name ?? `control-reader-${this.#broker.nextClientNumber()}`);
  }

  createAdmin(options: { readonly name?: string } = {}): MemoryKafkaAdmin {
    return new MemoryKafkaAdmin(this.#broker, options.name ?? `admin-${this.#broker.nextClientNumber()}`);
  }

  // -- topics and records -----------------------------------------------------------------------------

  /** Creates a topic (an error if it exists); returns its new topic id. */
  createTopic(name: string, partitions: number, configs: Readonly<Record<string, string>> = {}): string {
    const topic = this.#broker.createTopic(name, partitions, configs);
    if (topic === undefined) throw new ConfigError(`topic ${name} already exists`);
    return topic.id;
  }

  deleteTopic(name: string): void {
    if (!this.#broker.deleteTopic(name)) throw new ConfigError(`unknown topic ${name}`);
  }

  /** The configs the topic was created with (cleanup.policy, retention.ms, ...). */
  topicConfigs(name: string): Readonly<Record<string, string>> {
    const topic = this.#broker.topic(name);
    if (topic === undefined) throw new ConfigError(`unknown topic ${name}`);
    return topic.configs;
  }

  /** Plain (non-transactional) produce, as source data arrives; returns each record's offset. */
  produce(topic: string, partition: number, records: readonly TestRecord[]): bigint[] {
    const log = this.#broker.requireLog('produce', { topic, partition });
    const now = this.#broker.now();
    return records.map((r) => log.append(storedRecord(r, now), null));
  }

  /** Retention or DeleteRecords: the log starts at `offset` from now on (at most the high watermark). */
  deleteRecordsBefore(topic: string, partition: number, offset: bigint): void {
    const log = this.#broker.requireLog('deleteRecords', { topic, partition });
    if (offset > log.high) throw new ConfigError(`deleteRecordsBefore ${topic}[${partition}]@${offset}: past the high watermark ${log.high} (OFFSET_OUT_OF_RANGE)`);
    log.deleteBefore(offset);
  }

  /** Every offset from the log start: records and markers, with the state of their transaction. */
  readPartition(topic: string, partition: number): PartitionEntry[] {
    return this.#broker.requireLog('readPartition', { topic, partition }).entries();
  }

  watermarks(topic: string, partition: number): Watermarks {
    const log = this.#broker.requireLog('watermarks', { topic, partition });
    return { topic, partition, low: log.logStart, high: log.high, lastStable: log.lastStable };
  }

  // -- groups -----------------------------------------------------------------------------------------

  /** The group's committed offset (the next offset to read), null when it has none. */
  committed(groupId: string, tp: TopicPartition): bigint | null {
    return this.#broker.existingGroup(groupId)?.committed.get(partitionKey(tp)) ?? null;
  }

  /** A plain offset commit, as the offsets API or a reset tool makes one (never a task). */
  commitOffsets(groupId: string, offsets: readonly TopicPartitionOffset[]): void {
    const g = this.#broker.group(groupId);
    for (const o of offsets) g.committed.set(partitionKey(o), o.offset);
  }

  group(groupId: string): GroupView {
    const g = this.#broker.existingGroup(groupId);
    return { generation: g?.generation ?? 0, members: g?.members() ?? [] };
  }

  /**
   * A session timeout: the member leaves the group now and the others take its partitions at their next
   * poll; the member learns it at its own next poll (`onRevoked(all, {lost: true})`) and rejoins.
   */
  expireMember(member: { readonly groupId: string; readonly memberId: string | null }): void {
    const g = this.#broker.existingGroup(member.groupId);
    if (member.memberId === null || g?.expire(member.memberId) !== true) {
      throw new ConfigError(`${member.memberId ?? '(no member id)'} is not a member of group ${member.groupId}`);
    }
  }

  // -- faults -----------------------------------------------------------------------------------------

  /**
   * The source `clientId`, once its assignment is lost (`expireMember`), does not get back into the group:
   * it polls on with no partition, as librdkafka's group handle stuck in "no broker available for
   * coordinator query" after a broker restart did (issue 24).
   */
  stallRejoins(clientId: string): void {
    this.#broker.rejoinStalled.add(clientId);
  }

  /**
   * Makes the next `operation` call of the named client fail: `client` is a producer's transactional.id,
   * a source's client id, a reader's or admin's name. A bare error fails the call before anything
   * happens; see faults.ts for `appliedButFailed` and `timedOut`.
   */
  failNext(client: string, operation: Operation, fault: Fault | Error): void {
    this.#broker.faults.add(client, operation, fault instanceof Error ? rejectCall(fault) : fault);
  }

  /** Faults queued and not reached yet. */
  pendingFaults(): { readonly client: string; readonly operation: Operation; readonly count: number }[] {
    return this.#broker.faults.pending();
  }
}
