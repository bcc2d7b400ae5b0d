/**
 * `TransactionalProducer` over the in-memory Kafka, with Kafka's transaction rules and the errors the
 * confluent adapter reports for them:
 * - `initTransactions` bumps the transactional.id's epoch (aborting what the earlier incarnation left
 *   open); from then on every call of an older epoch is `fencedError`, and stays so.
 * - `send`, `sendOffsetsToTransaction`, `commitTransaction`, `abortTransaction` need an open
 *   transaction, `beginTransaction` needs none (else a state error: a `FatalError`, a caller bug).
 * - `sendOffsetsToTransaction` presents the consumer's live membership (member id, generation) to the
 *   group; a member that left, was removed, or has not caught up with the group's generation gets
 *   `TransactionAbortRequiredError` (KIP-447), and the transaction can then only be aborted.
 * - A time-out queued with `timeOutNext` (commit or abort) behaves as librdkafka's: the call rejects with
 *   `TransactionCallTimedOutError` and stays pending; calling the same method again resumes (and
 *   completes) it, and any other transactional call meanwhile rejects with a retriable conflict
 *   (`ERR__CONFLICT`), for as long as the pending call is not resumed.
 * - `close` leaves an open transaction open: it holds the last stable offset back until a new
 *   incarnation's `initTransactions` aborts it.
 * - `reinitialize` is that new incarnation in the same object (the confluent adapter re-creates its client).
 *
 * Owns: one producer incarnation. Must not: retry or decide about the cycle.
 */
import { ConfigError, RetriableError } from '../../core/errors.ts';
import { TransactionAbortRequiredError, TransactionCallTimedOutError, fencedError, partitionKey } from '../port.ts';
import type { ConsumerGroupMetadata, OutgoingRecord, TopicPartitionOffset, TransactionalProducer } from '../port.ts';
import { stateError } from './broker.ts';
import type { Broker } from './broker.ts';
import { rejectCall } from './faults.ts';
import type { Fault, ProducerOperation } from './faults.ts';
import { membershipOf } from './group.ts';
import { storedRecord } from './log.ts';
import type { Txn } from './log.ts';

/** The transactional calls librdkafka can resume after a time-out. */
export type ResumableCall = 'commitTransaction' | 'abortTransaction';

export class MemoryTransactionalProducer implements TransactionalProducer {
  readonly transactionalId: string;
  readonly #broker: Broker;
  #epoch: number | undefined;
  #txn: Txn | undefined;
  #fenced = false;
  #closed = false;
  /** Time-outs queued by `timeOutNext`, per method, fired in order. */
  readonly #timeOuts: ResumableCall[] = [];
  /** A resumable call that timed out and was not resumed yet. */
  #pending: ResumableCall | undefined;
  /** `keepTimingOut`: every call of this operation times out, after this long. */
  #timingOut: { readonly operation: ResumableCall; readonly afterMs: number } | undefined;

  constructor(broker: Broker, transactionalId: string) {
    if (transactionalId === '') throw new ConfigError('the transactional.id may not be empty');
    this.#broker = broker;
    this.transactionalId = transactionalId;
  }

  /** True once this producer was seen fenced (it can never commit again). */
  get fenced(): boolean {
    return this.#fenced;
  }

  /** The epoch `initTransactions` gave this incarnation; undefined before. */
  get epoch(): number | undefined {
    return this.#epoch;
  }

  /** Queues a fault for this producer's next `operation` (a bare error: the call fails, nothing happens). */
  failNext(operation: ProducerOperation, fault: Fault | Error): void {
    this.#broker.faults.add(this.transactionalId, operation, fault instanceof Error ? rejectCall(fault) : fault);
  }

  /** The next `operation` call times out (nothing happens yet) and stays pending until called again. */
  timeOutNext(operation: ResumableCall): void {
    this.#timeOuts.push(operation);
  }

  /**
   * Every `operation` call from now on times out after `afterMs` (a broker that never answers in time: each
   * call takes its time-out, as librdkafka's does) until `stopTimingOut()`; then the next call resumes it.
   */
  keepTimingOut(operation: ResumableCall, afterMs = 1): void {
    this.#timingOut = { operation, afterMs };
  }

  stopTimingOut(): void {
    this.#timingOut = undefined;
  }

  /** The timed-out call waiting to be resumed, if any. */
  get pendingCall(): ResumableCall | undefined {
    return this.#pending;
  }

  initTransactions(): Promise<void> {
    return this.#call('initTransactions', () => {
      if (this.#closed) throw stateError('initTransactions', 'the producer is closed');
      if (this.#epoch !== undefined) throw stateError('initTransactions', 'initTransactions was already called');
      this.#epoch = this.#broker.initProducer(this.transactionalId);
    });
  }

  /** A new incarnation of this producer: a new epoch (aborting what the old one left open), no pending call. */
  reinitialize(): Promise<void> {
    return this.#call('reinitialize', () => {
      this.#closed = false;
      this.#fenced = false;
      this.#pending = undefined;
      this.#txn = undefined;
      this.#epoch = this.#broker.initProducer(this.transactionalId);
    });
  }

  beginTransaction(): Promise<void> {
    return this.#call('beginTransaction', () => {
      const epoch = this.#live('beginTransaction');
      this.#noConflict('beginTransaction');
      if (this.#txn?.state === 'open') throw stateError('beginTransaction', 'a transaction is already open');
      this.#txn = this.#broker.beginTransaction(this.transactionalId, epoch);
    });
  }

  send(records: readonly OutgoingRecord[]): Promise<void> {
    return this.#call('send', () => {
      const txn = this.#open('send');
      this.#noConflict('send');
      this.#abortable(txn, 'send');
      const now = this.#broker.now();
      // Every record's partition is resolved before any is appended: an unknown topic appends nothing.
      const placed = records.map((r) => {
        const stored = storedRecord(r, now);
        return { stored, log: this.#broker.choosePartition('send', r.topic, r.partition, stored.key) };
      });
      for (const { stored, log } of placed) log.append(stored, txn);
    });
  }

  sendOffsetsToTransaction(offsets: readonly TopicPartitionOffset[], group: ConsumerGroupMetadata): Promise<void> {
    return this.#call('sendOffsetsToTransaction', () => {
      const txn = this.#open('sendOffsetsToTransaction');
      this.#noConflict('sendOffsetsToTransaction');
      this.#abortable(txn, 'sendOffsetsToTransaction');
      const member = membershipOf(group);
      if (member === undefined) throw new ConfigError('sendOffsetsToTransaction needs group metadata from a MemoryKafkaSource of the same cluster');
      const g = this.#broker.existingGroup(member.groupId);
      if (g === undefined || !g.isCurrent(member)) {
        txn.abortOnly = true;
        const known = g?.members().some((m) => m.memberId === member.memberId) === true;
        throw new TransactionAbortRequiredError(
          `Kafka sendOffsetsToTransaction failed: member ${member.memberId || '(none)'} of group ${member.groupId} at generation ${member.generation} is stale ` +
            `(${known ? `the group is at generation ${g?.generation}` : 'not a member'}): the transaction must be aborted and the cycle re-read`,
          { context: { operation: 'sendOffsetsToTransaction', kafkaError: known ? 'ERR_ILLEGAL_GENERATION' : 'ERR_UNKNOWN_MEMBER_ID', groupId: member.groupId, memberId: member.memberId, generation: member.generation } },
        );
      }
      const pending = txn.offsets.get(member.groupId) ?? new Map<string, TopicPartitionOffset>();
      for (const o of offsets) pending.set(partitionKey(o), { topic: o.topic, partition: o.partition, offset: o.offset });
      txn.offsets.set(member.groupId, pending);
    });
  }

  async commitTransaction(): Promise<void> {
    await this.#waitTimeOut('commitTransaction');
    return this.#call('commitTransaction', () => {
      const txn = this.#open('commitTransaction');
      this.#noConflict('commitTransaction');
      this.#abortable(txn, 'commitTransaction');
      this.#maybeTimeOut('commitTransaction');
      this.#broker.endTransaction(txn, true);
    });
  }

  async abortTransaction(): Promise<void> {
    await this.#waitTimeOut('abortTransaction');
    return this.#call('abortTransaction', () => {
      const txn = this.#open('abortTransaction');
      this.#noConflict('abortTransaction');
      this.#maybeTimeOut('abortTransaction');
      this.#broker.endTransaction(txn, false);
    });
  }

  close(): Promise<void> {
    return this.#call('close', () => {
      this.#closed = true;
    });
  }

  #call(operation: ProducerOperation, run: () => void): Promise<void> {
    return this.#broker.faults.around(this.transactionalId, operation, run);
  }

  /** The current epoch, after checking this incarnation may still act. */
  #live(operation: string): number {
    if (this.#closed) throw stateError(operation, 'the producer is closed');
    const epoch = this.#epoch;
    if (epoch === undefined) throw stateError(operation, 'initTransactions was not called');
    const current = this.#broker.producerEpoch(this.transactionalId);
    if (this.#fenced || current !== epoch) {
      this.#fenced = true;
      throw fencedError(`Kafka ${operation} failed: epoch ${epoch} of ${this.transactionalId} was fenced by epoch ${current}: another process uses transactional.id ${this.transactionalId} (a successor of this task, or two workers with overlapping icefloe.tasks.id-offset?); this task stops so that only one of them commits`, {
        context: { operation, transactionalId: this.transactionalId, epoch, currentEpoch: current },
      });
    }
    return epoch;
  }

  #open(operation: string): Txn {
    this.#live(operation);
    const txn = this.#txn;
    if (txn?.state !== 'open') throw stateError(operation, 'no transaction is open');
    return txn;
  }

  /** librdkafka's rule: while a timed-out call is pending, only that same call may be made (it resumes). */
  #noConflict(operation: ProducerOperation): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    if (pending !== operation) {
      throw new RetriableError(`Kafka ${operation} failed: Conflicting ${pending} API call is already in progress (ERR__CONFLICT)`, {
        context: { operation, kafkaError: 'ERR__CONFLICT', pending },
      });
    }
    this.#pending = undefined; // resumed: it runs to completion now
  }

  /** A call that will time out (`keepTimingOut`) takes its time first. */
  async #waitTimeOut(operation: ResumableCall): Promise<void> {
    const t = this.#timingOut;
    if (t?.operation === operation) await new Promise((resolve) => setTimeout(resolve, t.afterMs));
  }

  #maybeTimeOut(operation: ResumableCall): void {
    const i = this.#timeOuts.indexOf(operation);
    if (i < 0 && this.#timingOut?.operation !== operation) return;
    if (i >= 0) this.#timeOuts.splice(i, 1);
    this.#pending = operation;
    throw new TransactionCallTimedOutError(operation, `Kafka ${operation} failed: Transactional API operation timed out (ERR__TIMED_OUT): it goes on in the background; call ${operation} again`, {
      context: { operation, kafkaError: 'ERR__TIMED_OUT', injected: true },
    });
  }

  #abortable(txn: Txn, operation: string): void {
    if (txn.abortOnly) {
      throw new TransactionAbortRequiredError(`Kafka ${operation} failed: an earlier error left the transaction abortable only: the transaction must be aborted and the cycle re-read`, {
        context: { operation },
      });
    }
  }
}
