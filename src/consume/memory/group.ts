/**
 * A consumer group in the in-memory Kafka: members, the partitions each one holds, the target
 * assignment, the generation, and the committed offsets.
 *
 * Rebalancing is cooperative (incremental): a change of membership or of the subscribed partitions
 * computes a new target with a sticky, balanced assignor (a partition stays with its holder while the
 * holder is within its fair share, the rest go to the member holding the fewest, join order breaking
 * ties) and bumps the generation. Members apply the target at their next poll: a partition moves only
 * after its holder revoked it (`release`), and that hand-off is one more round (another bump), as in
 * Kafka's cooperative protocol. A member removed by a session timeout loses its partitions at once.
 *
 * Owns: membership, ownership, generations, committed offsets. Must not: call a client's listener.
 */
import { partitionKey } from '../port.ts';
import type { ConsumerGroupMetadata, TopicPartition } from '../port.ts';

export interface GroupMember {
  readonly id: string;
  readonly clientId: string;
  readonly subscribes: (topic: string) => boolean;
  /** Told when the coordinator removed the member (session timeout). */
  readonly expired: () => void;
}

/** What a transactional offset commit presents to the coordinator (KIP-447). */
export interface Membership {
  readonly groupId: string;
  readonly memberId: string;
  readonly generation: number;
}

export class Group {
  readonly id: string;
  /** Bumped by every rebalance round. */
  generation = 0;
  /** Partition key → the next offset to read. */
  readonly committed = new Map<string, bigint>();
  /** Partition key → the commit metadata stored with the offset (simple-consumer commits carry one). */
  readonly metadata = new Map<string, string | null>();
  /** Live members, in join order. */
  readonly #members = new Map<string, GroupMember>();
  /** Partition key → the member holding it (it has not revoked it yet). */
  readonly #owner = new Map<string, string>();
  #target = new Map<string, TopicPartition[]>();
  #joins = 0;
  readonly #partitions: () => readonly TopicPartition[];

  /** `partitions`: every partition of the cluster, sorted by topic and partition. */
  constructor(id: string, partitions: () => readonly TopicPartition[]) {
    this.id = id;
    this.#partitions = partitions;
  }

  join(clientId: string, subscribes: (topic: string) => boolean, expired: () => void): string {
    const id = `${clientId}-${++this.#joins}`;
    this.#members.set(id, { id, clientId, subscribes, expired });
    this.#rebalance();
    return id;
  }

  /** The member left (close) or was removed (expire): its partitions are free for the others now. */
  leave(memberId: string): void {
    if (!this.#members.delete(memberId)) return;
    for (const [k, owner] of this.#owner) if (owner === memberId) this.#owner.delete(k);
    this.#rebalance();
  }

  /** A session timeout: the member is removed and told; false when it is not a member. */
  expire(memberId: string): boolean {
    const member = this.#members.get(memberId);
    if (member === undefined) return false;
    this.leave(memberId);
    member.expired();
    return true;
  }

  isCurrent(membership: Membership): boolean {
    return this.#members.has(membership.memberId) && membership.generation === this.generation;
  }

  target(memberId: string): TopicPartition[] {
    return [...(this.#target.get(memberId) ?? [])];
  }

  /** The member revoked these partitions: the others may take them, in a new round. */
  release(memberId: string, partitions: readonly TopicPartition[]): void {
    let released = false;
    for (const tp of partitions) {
      const k = partitionKey(tp);
      if (this.#owner.get(k) === memberId) {
        this.#owner.delete(k);
        released = true;
      }
    }
    if (released) this.generation++;
  }

  /** Takes the partitions no other member still holds; returns those taken. */
  claim(memberId: string, partitions: readonly TopicPartition[]): TopicPartition[] {
    if (!this.#members.has(memberId)) return [];
    const taken = partitions.filter((tp) => (this.#owner.get(partitionKey(tp)) ?? memberId) === memberId);
    for (const tp of taken) this.#owner.set(partitionKey(tp), memberId);
    return taken;
  }

  /** A topic appeared or went: rebalance when the subscribed partitions changed. */
  refresh(): void {
    const next = this.#assign();
    const same = (a: readonly TopicPartition[] | undefined, b: readonly TopicPartition[] | undefined): boolean =>
      (a ?? []).map(partitionKey).join() === (b ?? []).map(partitionKey).join();
    if ([...this.#members.keys()].some((m) => !same(next.get(m), this.#target.get(m)))) this.#rebalance();
  }

  /** Members in join order with their client ids and the partitions they hold. */
  members(): { readonly memberId: string; readonly clientId: string; readonly partitions: TopicPartition[] }[] {
    return [...this.#members.values()].map((m) => ({
      memberId: m.id,
      clientId: m.clientId,
      partitions: this.#partitions().filter((tp) => this.#owner.get(partitionKey(tp)) === m.id),
    }));
  }

  #rebalance(): void {
    this.#target = this.#assign();
    this.generation++;
  }

  #assign(): Map<string, TopicPartition[]> {
    const members = [...this.#members.values()];
    const out = new Map<string, TopicPartition[]>(members.map((m) => [m.id, []]));
    const wanted = this.#partitions().filter((tp) => members.some((m) => m.subscribes(tp.topic)));
    if (members.length === 0) return out;
    const floor = Math.floor(wanted.length / members.length);
    let extra = wanted.length % members.length; // how many members may hold floor + 1
    const rest: TopicPartition[] = [];
    for (const tp of wanted) {
      const holder = this.#members.get(this.#owner.get(partitionKey(tp)) ?? '');
      const held = holder === undefined ? undefined : out.get(holder.id);
      if (holder !== undefined && held !== undefined && holder.subscribes(tp.topic) && (held.length < floor || (held.length === floor && extra > 0))) {
        if (held.length === floor) extra--;
        held.push(tp);
      } else rest.push(tp);
    }
    for (const tp of rest) {
      let best: TopicPartition[] | undefined;
      for (const m of members) {
        const held = out.get(m.id) as TopicPartition[];
        if (m.subscribes(tp.topic) && (best === undefined || held.length < best.length)) best = held;
      }
      best?.push(tp);
    }
    for (const held of out.values()) held.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
    return out;
  }
}

/** Group-metadata handles → the live membership of the source that made them (read at use, as librdkafka does). */
const handles = new WeakMap<object, () => Membership>();

export function membershipHandle(groupId: string, live: () => Membership): ConsumerGroupMetadata {
  const handle = Object.freeze({ groupId }) as unknown as ConsumerGroupMetadata;
  handles.set(handle, live);
  return handle;
}

/** Undefined for metadata another adapter made. */
export function membershipOf(handle: ConsumerGroupMetadata): Membership | undefined {
  return handles.get(handle)?.();
}
