/**
 * The Kafka ports (docs/architecture.md, "Exactly-once"): what a sink task and a committer need from
 * Kafka, with no client library in sight.
 *
 * - `KafkaSource`: the task's consumer in the connector's group (`connect-<name>`), cooperative
 *   rebalancing, manual offsets only (nothing is ever auto-committed or auto-stored: offsets reach the
 *   group only through the cycle's transaction), batch polling with back-pressure (the caller asks for
 *   at most N records; nothing is buffered beyond the client's own fetch queue and, in the Kafka adapter,
 *   one batch consumed ahead, which seek, pause and rebalances take into account), pause/resume, seek.
 * - `TransactionalProducer`: one Kafka transaction per commit cycle: control-topic announcements, DLQ
 *   records and the source offsets (`sendOffsetsToTransaction` with the consumer's group metadata,
 *   KIP-447), then commit or abort. A stable `transactional.id` (`<connector>-<task>`) fences the
 *   previous incarnation at `initTransactions`.
 * - `ControlTopicReader`: the committer's read_committed reader: from given positions to the last stable
 *   offset, never past it, never with an implicit reset.
 * - `KafkaAdmin`: topic creation, the cluster id and topic ids (fail-closed identity), watermarks, and
 *   the committed offsets (with metadata) of a group no member consumes for: the committer's
 *   connector-level control position (coordinate/connector-position.ts); a group's live members (the
 *   worker checks at start that no other process runs its task ids).
 * - `GroupAdmin`: the cluster's topics and deleting a consumer group, for the offsets API.
 * - `RecordProducer`: a plain idempotent producer (no transactions) that reports where each record
 *   landed, for tools such as the data generator (`icefloe generate`); never used for the sink's own
 *   announcements, DLQ records or offsets (those go through `TransactionalProducer`).
 *
 * Error contract (every method): failures are `core/errors.ts` classes, translated once by the adapter.
 * - `FatalError` with `context.reason === 'fenced'` (see `isFenced`): another process registered our
 *   transactional.id while our transaction was younger than `transaction.timeout.ms` (so the coordinator
 *   did not time it out): a successor of this task, or a second worker with the same task ids; stop.
 * - `TransactionAbortRequiredError` (a `RetriableError`): the transaction cannot commit (for example the
 *   consumer's group generation is stale); abort it, drop unannounced files, seek every assigned
 *   partition back to its committed offset, and start a new cycle.
 * - `TransactionCallTimedOutError` (a `RetriableError`): `commitTransaction` or `abortTransaction` timed
 *   out and goes on in the background; call the same method again (librdkafka resumes it) until it
 *   resolves. Another transactional call meanwhile fails with a conflict, and a commit that timed out
 *   may still commit: its files are not known to be unannounced.
 * - `ProducerResetRequiredError` (a `RetriableError`): the transactional producer is in a state it cannot
 *   leave (librdkafka's fatal state, an invalid transaction state, a transaction the coordinator timed
 *   out); abandon the cycle and `reinitialize()` the producer before the next transaction.
 * - `RetriableError`: broker or network trouble; retry the operation (or the cycle).
 * - `ConfigError`: a setting that cannot work.
 *
 * Offsets are `bigint` everywhere. Owns: types and contracts. Must not: import a Kafka client.
 */
import { FatalError, IcefloeError, RetriableError } from '../core/errors.ts';
import type { ErrorOptions } from '../core/errors.ts';

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

export interface TopicPartitionOffset extends TopicPartition {
  /** The next offset to read (Kafka's committed-offset convention: last processed + 1). */
  readonly offset: bigint;
}

export interface RecordHeader {
  readonly key: string;
  readonly value: Uint8Array | null;
}

/** One record as the broker returned it; key and value are views over the client's buffers (no copy). */
export interface RawRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** Record timestamp in ms since the epoch; null when the record carries none. */
  readonly timestamp: number | null;
  readonly key: Uint8Array | null;
  /** Null for a tombstone. */
  readonly value: Uint8Array | null;
  readonly headers: readonly RecordHeader[];
}

/** What to consume: a list of topics, or a regular expression matched against the whole topic name. */
export type Subscription =
  | { readonly kind: 'list'; readonly topics: readonly string[] }
  | { readonly kind: 'regex'; readonly pattern: string };

export interface RevokeInfo {
  /**
   * True when the partitions were lost rather than handed over (session timeout, fenced member): the
   * group generation is already gone, so a transaction for them can no longer commit; abandon the cycle.
   */
  readonly lost: boolean;
}

/**
 * Rebalance callbacks. They run inside `poll()` (the only place a rebalance is served), one at a time,
 * and the rebalance does not proceed until the returned promise settles:
 * - `onRevoked` may finish the cycle (announce and commit, revoked partitions included) or abandon it
 *   before it returns; the partitions move to another member only afterwards (the revocation rule).
 * - `onAssigned` runs before any record of the new partitions is returned; reading starts at the
 *   group's committed offset (the earliest offset when there is none; a committed offset outside the log
 *   fails `poll()` unless the user set `auto.offset.reset`: consume/offset-range.ts) unless it seeks.
 * A callback that throws makes `poll()` reject with that error after the rebalance step completed.
 */
export interface RebalanceListener {
  onAssigned(partitions: readonly TopicPartition[]): Promise<void> | void;
  onRevoked(partitions: readonly TopicPartition[], info: RevokeInfo): Promise<void> | void;
}

/**
 * The consumer's group membership as the broker will check it in a transactional offset commit (group
 * id, member id, generation). Opaque: only the adapter that created it can use it.
 */
declare const groupMetadataBrand: unique symbol;
export interface ConsumerGroupMetadata {
  readonly groupId: string;
  /** Brand: created by an adapter, never by hand. */
  readonly [groupMetadataBrand]: true;
}

export interface PollOptions {
  /** At most this many records (back-pressure: the caller asks only for what it can take). */
  readonly maxRecords: number;
  /** How long to wait for the first record. */
  readonly timeoutMs: number;
}

export interface CommittedOffset extends TopicPartition {
  /** Null when the group has no committed offset for the partition. */
  readonly offset: bigint | null;
}

export interface KafkaSource {
  readonly groupId: string;
  /** Joins the group. The listener is called from within `poll()`. */
  subscribe(subscription: Subscription, listener: RebalanceListener): Promise<void>;
  /** Up to `maxRecords` records of currently assigned, unpaused partitions, in offset order per partition. */
  poll(options: PollOptions): Promise<RawRecord[]>;
  pause(partitions: readonly TopicPartition[]): void;
  resume(partitions: readonly TopicPartition[]): void;
  /** The next `poll()` returns records of the partition from `offset` on (discarding anything prefetched). */
  seek(position: TopicPartitionOffset): Promise<void>;
  /** The group's committed offsets (stable: waits out pending transactional commits). */
  committed(partitions: readonly TopicPartition[], timeoutMs?: number): Promise<CommittedOffset[]>;
  /** The consumer's in-memory read position (next offset it returns), null before it read anything. */
  position(partitions: readonly TopicPartition[]): CommittedOffset[];
  assignment(): TopicPartition[];
  /**
   * The partition's high watermark as last reported by the broker in a fetch response (no request; null
   * before the first fetch). Tells a task whether it has read to the end (caught up) when a cycle closes.
   */
  highWatermark(partition: TopicPartition): bigint | null;
  /**
   * The abort rule: seek every assigned partition back to the group's committed offset (or, without one,
   * to the first offset returned since it was assigned), so the next poll re-reads the aborted cycle.
   */
  rewindToCommitted(timeoutMs?: number): Promise<void>;
  /** For `TransactionalProducer.sendOffsetsToTransaction`. */
  groupMetadata(): ConsumerGroupMetadata;
  /** Leaves the group (revoking through the listener first) and releases the client. */
  close(): Promise<void>;
}

/** A record to produce; a null partition lets the key choose. */
export interface OutgoingRecord {
  readonly topic: string;
  readonly partition?: number | null;
  readonly key: Uint8Array | string | null;
  readonly value: Uint8Array | null;
  readonly headers?: readonly RecordHeader[];
  readonly timestamp?: number;
}

export interface TransactionalProducer {
  readonly transactionalId: string;
  /** Registers the transactional id and fences every earlier producer that used it. Call once. */
  initTransactions(timeoutMs?: number): Promise<void>;
  /**
   * The way out of a state the producer cannot leave (`ProducerResetRequiredError`, an abort that
   * failed): drops this client and creates a new one with the same transactional.id and settings, then
   * registers it as `initTransactions` does — which fences our own old epoch and aborts the transaction
   * it left open. A time-out is retriable: call again (it resumes the registration).
   */
  reinitialize(timeoutMs?: number): Promise<void>;
  beginTransaction(): Promise<void>;
  /** Queues records in the open transaction; delivery is confirmed (or fails) at commit. */
  send(records: readonly OutgoingRecord[]): Promise<void>;
  sendOffsetsToTransaction(offsets: readonly TopicPartitionOffset[], group: ConsumerGroupMetadata, timeoutMs?: number): Promise<void>;
  commitTransaction(timeoutMs?: number): Promise<void>;
  abortTransaction(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Where a record was written: its own offset (not the next one). */
export interface DeliveredRecord extends TopicPartition {
  readonly offset: bigint;
}

/**
 * A non-transactional, idempotent producer (`enable.idempotence=true`, `acks=all`): no duplicates or
 * reordering within a partition from retries, and a record counts as delivered only once every in-sync
 * replica has it.
 */
export interface RecordProducer {
  /**
   * Queues the records and resolves once every one of them is delivered, with where each landed (in the
   * order given). Several calls may be in flight at once; that is how to reach a high rate. Rejects with
   * the first delivery failure after every record of the call has been settled (so none of the call's
   * records is still in flight); records of the call may then have been written or not.
   */
  send(records: readonly OutgoingRecord[]): Promise<DeliveredRecord[]>;
  /** Waits until everything queued so far is delivered or failed. */
  flush(timeoutMs?: number): Promise<void>;
  /** Flushes, then releases the client. */
  close(): Promise<void>;
}

export interface ControlRead {
  /** In offset order within each partition; partitions interleave in no particular order. */
  readonly records: RawRecord[];
  /** Per partition, where this read stopped (exclusive): the last stable offset, or just past the last record returned. */
  readonly endOffsets: readonly TopicPartitionOffset[];
}

/** Bounds of one control read: it stops at whichever is reached first and reports where it stopped. */
export interface ControlReadOptions {
  /** Time budget: a read that made progress returns what it has; one that made none fails (retriable). */
  readonly timeoutMs?: number;
  readonly maxRecords?: number;
  /** Key and value bytes; the record that crosses the limit is still returned (a read always progresses). */
  readonly maxBytes?: number;
}

/**
 * The committer's reader: `isolation.level=read_committed` (aborted and open transactions are never
 * returned), `auto.offset.reset=error` (a start position outside the log is a `FatalError`, never a
 * silent jump). `read` returns every committed record from each start position up to the partition's
 * last stable offset as of the call, or a prefix of them when a bound of `options` is reached first
 * (then `endOffsets` is just past the last record returned for that partition: the next read starts there).
 */
export interface ControlTopicReader {
  read(from: readonly TopicPartitionOffset[], options?: ControlReadOptions): Promise<ControlRead>;
  close(): Promise<void>;
}

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  /** -1: the broker default. */
  readonly replicationFactor: number;
  readonly configs?: Readonly<Record<string, string>>;
}

export interface Watermarks extends TopicPartition {
  readonly low: bigint;
  readonly high: bigint;
  /** The last stable offset (high watermark under read_committed). */
  readonly lastStable: bigint;
}

/** A group's committed offset with its commit metadata (Kafka's free-text field, null when none). */
export interface GroupOffset extends TopicPartitionOffset {
  readonly metadata: string | null;
}

/** A live member of a consumer group as the group coordinator describes it. */
export interface GroupMemberInfo {
  readonly memberId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly assignment: readonly TopicPartition[];
}

/** Who is in a consumer group (the admin adapters implement it next to `KafkaAdmin`). */
export interface GroupInspector {
  /** The group's live members (none when the group is empty or unknown). */
  groupMembers(groupId: string): Promise<GroupMemberInfo[]>;
}

export interface KafkaAdmin {
  /** Creates the topic unless it exists; true when this call created it. */
  ensureTopic(spec: TopicSpec): Promise<boolean>;
  deleteTopic(name: string): Promise<void>;
  /** The Kafka cluster id (as brokers report it in metadata). */
  clusterId(): Promise<string>;
  /** The topic's id as a UUID string; a recreated topic has a new one. */
  topicId(topic: string): Promise<string>;
  /** Partition count of an existing topic. */
  partitionCount(topic: string): Promise<number>;
  watermarks(topic: string): Promise<Watermarks[]>;
  /** The group's committed offsets on the topic (partitions without one are absent), with their metadata. */
  groupOffsets(groupId: string, topic: string): Promise<GroupOffset[]>;
  /**
   * Commits offsets with metadata for a group that has no members (a simple-consumer commit: no
   * subscription, generation -1). Resolves once the broker acknowledged every partition.
   */
  commitGroupOffsets(groupId: string, offsets: readonly GroupOffset[]): Promise<void>;
  /**
   * The topic's configuration as the broker reports it (DescribeConfigs: `cleanup.policy`,
   * `retention.ms`, `retention.bytes`, ...; broker defaults included).
   */
  topicConfigs(topic: string): Promise<Readonly<Record<string, string>>>;
  close(): Promise<void>;
}

/**
 * What the offsets API (runtime/connector-offsets.ts) needs besides `KafkaAdmin`: the cluster's topics (a
 * `topics.regex` connector's topics) and deleting a consumer group (Connect's offsets reset deletes the
 * sink's group, KIP-875). The admin adapters implement it next to `KafkaAdmin`.
 */
export interface GroupAdmin {
  /** Every topic of the cluster, internal ones (`__consumer_offsets`, ...) included. */
  listTopics(): Promise<string[]>;
  /**
   * Deletes the consumer group and every offset committed to it (DeleteGroups). Resolves false when the
   * group did not exist (a reset is idempotent); `GroupNotEmptyError` while it has members.
   */
  deleteGroup(groupId: string): Promise<boolean>;
}

/** A group with live members cannot be deleted, nor its offsets changed from outside (retry once they left). */
export class GroupNotEmptyError extends RetriableError {
  readonly groupId: string;
  constructor(groupId: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.groupId = groupId;
  }
}

/**
 * The transaction cannot commit and must be aborted (KIP-98 "abortable" errors, including a stale
 * consumer group generation under KIP-447). After aborting, rewind every assigned partition to its
 * committed offset and run a new cycle: the retry is safe because nothing of the aborted transaction
 * became visible.
 */
export class TransactionAbortRequiredError extends RetriableError {
  readonly abortRequired = true;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * A resumable transactional call (`commitTransaction`, `abortTransaction`) timed out: the operation goes
 * on in the background and its outcome is unknown. librdkafka keeps the call pending until the SAME
 * method is called again (which resumes it); any other transactional call meanwhile fails with a
 * conflict. The caller must call the same method again until it resolves; never treat a commit that
 * timed out as aborted (it may still commit).
 */
export class TransactionCallTimedOutError extends RetriableError {
  readonly resumeWith: 'commitTransaction' | 'abortTransaction';
  constructor(resumeWith: 'commitTransaction' | 'abortTransaction', message: string, options?: ErrorOptions) {
    super(message, options);
    this.resumeWith = resumeWith;
  }
}

/**
 * The transactional producer is in a state it cannot leave: librdkafka's fatal error state (for example
 * `INVALID_TXN_STATE` or `INVALID_PRODUCER_ID_MAPPING` from the coordinator after transport failures), a
 * call the client's state machine refuses (`ERR__STATE`), or a transaction the coordinator aborted itself
 * because it outlived `transaction.timeout.ms` (it bumps the epoch: the producer then reads as fenced,
 * though no other process is involved). Nothing of the transaction can commit any more; abandon the
 * cycle, `reinitialize()` the producer (same transactional.id), rewind to the committed offsets.
 */
export class ProducerResetRequiredError extends RetriableError {
  readonly resetRequired = true;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

export function requiresProducerReset(error: unknown): error is ProducerResetRequiredError {
  return error instanceof ProducerResetRequiredError;
}

export function isCallTimedOut(error: unknown): error is TransactionCallTimedOutError {
  return error instanceof TransactionCallTimedOutError;
}

/** Another producer with the same transactional.id (or a newer epoch) took over: this one is a zombie. */
export function fencedError(message: string, options: ErrorOptions = {}): FatalError {
  return new FatalError(message, { ...options, context: { ...options.context, reason: 'fenced' } });
}

export function isFenced(error: unknown): boolean {
  return error instanceof FatalError && error.context['reason'] === 'fenced';
}

export function requiresAbort(error: unknown): error is TransactionAbortRequiredError {
  return error instanceof TransactionAbortRequiredError;
}

/** `topic[partition]`, for maps and messages. */
export function partitionKey(tp: TopicPartition): string {
  return `${tp.topic}[${tp.partition}]`;
}

export function isIcefloeError(error: unknown): error is IcefloeError {
  return error instanceof IcefloeError;
}
