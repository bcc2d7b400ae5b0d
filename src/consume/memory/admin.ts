/**
 * `KafkaAdmin` over the in-memory Kafka: topics (their configs kept for tests to read), the cluster id,
 * topic ids (new on every creation), partition counts and watermarks with the last stable offset.
 * Unknown topics fail as the confluent adapter reports them (librdkafka's UNKNOWN_TOPIC_OR_PART: a
 * `ConfigError`).
 *
 * Group offsets: read with their metadata, and committed as a simple consumer does (refused while the
 * group has members, as the coordinator refuses a commit from outside the current generation). A group is
 * deleted only without members (NON_EMPTY_GROUP otherwise), as Kafka's DeleteGroups.
 *
 * Owns: one admin client. Must not: touch records or groups beyond what deleting a topic implies.
 */
import { ConfigError } from '../../core/errors.ts';
import { GroupNotEmptyError, partitionKey } from '../port.ts';
import type { GroupAdmin, GroupInspector, GroupMemberInfo, GroupOffset, KafkaAdmin, TopicSpec, Watermarks } from '../port.ts';
import { stateError } from './broker.ts';
import type { Broker, Topic } from './broker.ts';
import { rejectCall } from './faults.ts';
import type { AdminOperation, Fault } from './faults.ts';

export class MemoryKafkaAdmin implements KafkaAdmin, GroupInspector, GroupAdmin {
  /** Names the client for fault injection. */
  readonly name: string;
  readonly #broker: Broker;
  #closed = false;

  constructor(broker: Broker, name: string) {
    this.#broker = broker;
    this.name = name;
  }

  failNext(operation: AdminOperation, fault: Fault | Error): void {
    this.#broker.faults.add(this.name, operation, fault instanceof Error ? rejectCall(fault) : fault);
  }

  ensureTopic(spec: TopicSpec): Promise<boolean> {
    return this.#call('ensureTopic', () => this.#broker.createTopic(spec.name, spec.partitions, spec.configs ?? {}) !== undefined);
  }

  deleteTopic(name: string): Promise<void> {
    return this.#call('deleteTopic', () => {
      if (!this.#broker.deleteTopic(name)) throw unknownTopic(name);
    });
  }

  clusterId(): Promise<string> {
    return this.#call('clusterId', () => this.#broker.clusterId);
  }

  topicId(topic: string): Promise<string> {
    return this.#call('topicId', () => this.#topic(topic).id);
  }

  partitionCount(topic: string): Promise<number> {
    return this.#call('partitionCount', () => this.#topic(topic).partitions.length);
  }

  watermarks(topic: string): Promise<Watermarks[]> {
    return this.#call('watermarks', () =>
      this.#topic(topic).partitions.map((log) => ({ topic, partition: log.partition, low: log.logStart, high: log.high, lastStable: log.lastStable })));
  }

  groupOffsets(groupId: string, topic: string): Promise<GroupOffset[]> {
    return this.#call('groupOffsets', () => {
      const g = this.#broker.existingGroup(groupId);
      const out: GroupOffset[] = [];
      for (const log of this.#topic(topic).partitions) {
        const k = partitionKey({ topic, partition: log.partition });
        const offset = g?.committed.get(k);
        if (offset !== undefined) out.push({ topic, partition: log.partition, offset, metadata: g?.metadata.get(k) ?? null });
      }
      return out;
    });
  }

  groupMembers(groupId: string): Promise<GroupMemberInfo[]> {
    return this.#call('groupMembers', () =>
      (this.#broker.existingGroup(groupId)?.members() ?? []).map((m) => ({ memberId: m.memberId, clientId: m.clientId, clientHost: 'memory', assignment: m.partitions })));
  }

  commitGroupOffsets(groupId: string, offsets: readonly GroupOffset[]): Promise<void> {
    return this.#call('commitGroupOffsets', () => {
      const g = this.#broker.group(groupId);
      if (g.members().length > 0) throw stateError('admin', `group ${groupId} has members: a commit from outside its generation is refused`);
      for (const o of offsets) {
        this.#broker.requireLog('admin', o);
        g.committed.set(partitionKey(o), o.offset);
        g.metadata.set(partitionKey(o), o.metadata);
      }
    });
  }

  listTopics(): Promise<string[]> {
    return this.#call('listTopics', () => this.#broker.topicNames());
  }

  deleteGroup(groupId: string): Promise<boolean> {
    return this.#call('deleteGroup', () => {
      if ((this.#broker.existingGroup(groupId)?.members().length ?? 0) > 0) throw new GroupNotEmptyError(groupId, `Kafka admin: group ${groupId} has members (NON_EMPTY_GROUP)`);
      return this.#broker.deleteGroup(groupId);
    });
  }

  /** What the topic was created with over Kafka's defaults for the three retention settings. */
  topicConfigs(topic: string): Promise<Readonly<Record<string, string>>> {
    return this.#call('topicConfigs', () => ({ 'cleanup.policy': 'delete', 'retention.ms': '604800000', 'retention.bytes': '-1', ...this.#topic(topic).configs }));
  }

  close(): Promise<void> {
    return this.#broker.faults.around(this.name, 'close', () => {
      this.#closed = true;
    });
  }

  #call<T>(operation: AdminOperation, run: () => T): Promise<T> {
    return this.#broker.faults.around(this.name, operation, () => {
      if (this.#closed) throw stateError('admin', 'the admin client is closed');
      return run();
    });
  }

  #topic(name: string): Topic {
    const topic = this.#broker.topic(name);
    if (topic === undefined) throw unknownTopic(name);
    return topic;
  }
}

function unknownTopic(name: string): ConfigError {
  return new ConfigError(`Kafka admin failed: unknown topic ${name} (UNKNOWN_TOPIC_OR_PART)`, { context: { operation: 'admin', topic: name } });
}
