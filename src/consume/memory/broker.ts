/**
 * The state of the in-memory Kafka cluster that its clients share: topics and their partition logs,
 * consumer groups, the transaction coordinator (producer epochs per transactional.id, open
 * transactions), the fault queue, and the cluster's clock and id source.
 *
 * Transactions follow Kafka's rules: a new incarnation of a transactional.id bumps its epoch and aborts
 * whatever the earlier one left open; ending a transaction writes a marker on every partition it wrote
 * to; offsets sent with it reach their group only when it commits, and while it is open the group's
 * offset for those partitions is unstable (a consumer waits instead of reading a stale one).
 *
 * Owns: cluster state and its invariants. Must not: implement a port (the clients in this folder do).
 */
import { ConfigError, FatalError } from '../../core/errors.ts';
import { partitionKey } from '../port.ts';
import type { TopicPartition } from '../port.ts';
import { FaultQueue } from './faults.ts';
import { Group } from './group.ts';
import { PartitionLog } from './log.ts';
import type { Txn } from './log.ts';

export interface Topic {
  readonly name: string;
  /** A new UUID each time a topic of this name is created. */
  readonly id: string;
  readonly partitions: readonly PartitionLog[];
  readonly configs: Readonly<Record<string, string>>;
}

/** A client used in a way Kafka refuses (librdkafka's ERR__STATE): a bug in the caller, never retried. */
export function stateError(operation: string, message: string): FatalError {
  return new FatalError(`Kafka ${operation} failed: ${message}`, { context: { operation, reason: 'invalid-state' } });
}

export class Broker {
  /** Changes only by `MemoryKafka.changeClusterId` (a failover to another cluster, as a test stages it). */
  clusterId: string;
  readonly faults = new FaultQueue();
  /** Client ids whose consumer cannot rejoin its group (MemoryKafka.stallRejoins). */
  readonly rejoinStalled = new Set<string>();
  readonly uuid: () => string;
  readonly now: () => number;
  readonly #topics = new Map<string, Topic>();
  readonly #groups = new Map<string, Group>();
  /** transactional.id → its current epoch and the transaction that epoch has open. */
  readonly #producers = new Map<string, { epoch: number; open: Txn | null }>();
  readonly #roundRobin = new Map<string, number>();
  #clients = 0;

  constructor(clusterId: string, uuid: () => string, now: () => number) {
    this.clusterId = clusterId;
    this.uuid = uuid;
    this.now = now;
  }

  /** Numbers default client names (`<group>-source-<n>`, `control-reader-<n>`). */
  nextClientNumber(): number {
    return ++this.#clients;
  }

  // -- topics -----------------------------------------------------------------------------------------

  topic(name: string): Topic | undefined {
    return this.#topics.get(name);
  }

  partitionLog(tp: TopicPartition): PartitionLog | undefined {
    return this.#topics.get(tp.topic)?.partitions[tp.partition];
  }

  /** The log, or the ConfigError librdkafka's unknown topic/partition becomes (errors.ts). */
  requireLog(operation: string, tp: TopicPartition): PartitionLog {
    const log = this.partitionLog(tp);
    if (log === undefined) throw new ConfigError(`Kafka ${operation} failed: unknown topic or partition ${partitionKey(tp)}`, { context: { operation, partition: partitionKey(tp) } });
    return log;
  }

  /** Undefined when a topic of that name exists (it is left as it is). */
  createTopic(name: string, partitions: number, configs: Readonly<Record<string, string>>): Topic | undefined {
    if (this.#topics.has(name)) return undefined;
    if (name === '' || !Number.isInteger(partitions) || partitions < 1) {
      throw new ConfigError(`Kafka admin failed: a topic needs a name and at least one partition (got ${JSON.stringify(name)}, ${partitions})`);
    }
    const topic: Topic = { name, id: this.uuid(), partitions: Array.from({ length: partitions }, (_, p) => new PartitionLog(name, p)), configs: { ...configs } };
    this.#topics.set(name, topic);
    for (const g of this.#groups.values()) g.refresh();
    return topic;
  }

  /** Removes the topic and, as Kafka does for deleted partitions, the groups' offsets for it. */
  deleteTopic(name: string): boolean {
    if (!this.#topics.delete(name)) return false;
    for (const g of this.#groups.values()) {
      for (const k of [...g.committed.keys()]) if (k.startsWith(`${name}[`)) g.committed.delete(k);
      g.refresh();
    }
    return true;
  }

  /** Every partition, sorted by topic then partition (the assignor's input). */
  allPartitions(): TopicPartition[] {
    return [...this.#topics.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partition })));
  }

  /** An explicit partition, else by key (FNV-1a), else round robin per topic. */
  choosePartition(operation: string, topicName: string, partition: number | null | undefined, key: Uint8Array | null): PartitionLog {
    const topic = this.#topics.get(topicName);
    const count = topic?.partitions.length ?? 0;
    let p: number;
    if (partition !== null && partition !== undefined) p = partition;
    else if (key !== null) {
      let h = 0x811c9dc5;
      for (const b of key) h = Math.imul(h ^ b, 0x01000193) >>> 0;
      p = h % Math.max(1, count);
    } else {
      p = (this.#roundRobin.get(topicName) ?? 0) % Math.max(1, count);
      this.#roundRobin.set(topicName, p + 1);
    }
    return this.requireLog(operation, { topic: topicName, partition: p });
  }

  // -- groups -----------------------------------------------------------------------------------------

  /** The group, created on first use (as the coordinator does on the first join or offset commit). */
  group(id: string): Group {
    let g = this.#groups.get(id);
    if (g === undefined) {
      g = new Group(id, () => this.allPartitions());
      this.#groups.set(id, g);
    }
    return g;
  }

  existingGroup(id: string): Group | undefined {
    return this.#groups.get(id);
  }

  /** Removes the group and its offsets; false when there was none (Kafka's DeleteGroups, members checked by the caller). */
  deleteGroup(id: string): boolean {
    return this.#groups.delete(id);
  }

  topicNames(): string[] {
    return [...this.#topics.keys()].sort();
  }

  /** True while an open transaction carries an offset for the group's partition (KIP-447 "unstable"). */
  offsetPending(groupId: string, tp: TopicPartition): boolean {
    for (const p of this.#producers.values()) if (p.open?.offsets.get(groupId)?.has(partitionKey(tp)) === true) return true;
    return false;
  }

  // -- transactions -----------------------------------------------------------------------------------

  /** InitProducerId: a new epoch for the id; the earlier incarnation's open transaction is aborted. */
  initProducer(transactionalId: string): number {
    const entry = this.#producers.get(transactionalId) ?? { epoch: -1, open: null };
    if (entry.open !== null) this.endTransaction(entry.open, false);
    entry.epoch++;
    this.#producers.set(transactionalId, entry);
    return entry.epoch;
  }

  producerEpoch(transactionalId: string): number | undefined {
    return this.#producers.get(transactionalId)?.epoch;
  }

  beginTransaction(transactionalId: string, epoch: number): Txn {
    const txn: Txn = { transactionalId, epoch, state: 'open', abortOnly: false, partitions: [], offsets: new Map() };
    const entry = this.#producers.get(transactionalId);
    if (entry !== undefined) entry.open = txn;
    return txn;
  }

  /** Writes a marker on every partition the transaction touched; a commit hands its offsets to their groups. */
  endTransaction(txn: Txn, commit: boolean): void {
    for (const log of txn.partitions) log.writeMarker(txn, commit);
    txn.state = commit ? 'committed' : 'aborted';
    if (commit) {
      for (const [groupId, offsets] of txn.offsets) {
        const g = this.group(groupId);
        for (const [k, o] of offsets) g.committed.set(k, o.offset);
      }
    }
    const entry = this.#producers.get(txn.transactionalId);
    if (entry?.open === txn) entry.open = null;
  }
}
