/**
 * Fault injection for the in-memory Kafka: a test queues a fault for the next call of one operation on
 * one named client (a producer's transactional.id, a source's client id, a reader's or admin's name),
 * and that call fails in the way the test chose. Each queued fault fires once, in queue order.
 *
 * Owns: the fault kinds and the queue. Must not: decide how a client reacts to a fault (the client's
 * caller does; that is what the tests examine).
 */
import { RetriableError } from '../../core/errors.ts';

export type ProducerOperation = 'initTransactions' | 'reinitialize' | 'beginTransaction' | 'send' | 'sendOffsetsToTransaction' | 'commitTransaction' | 'abortTransaction' | 'close';
export type SourceOperation = 'subscribe' | 'poll' | 'seek' | 'committed' | 'rewindToCommitted' | 'close';
export type ReaderOperation = 'read' | 'close';
export type AdminOperation = 'ensureTopic' | 'deleteTopic' | 'clusterId' | 'topicId' | 'partitionCount' | 'watermarks' | 'groupOffsets' | 'groupMembers' | 'commitGroupOffsets' | 'topicConfigs' | 'listTopics' | 'deleteGroup' | 'close';
export type Operation = ProducerOperation | SourceOperation | ReaderOperation | AdminOperation;

/**
 * `before`: the call fails and nothing happened. `after`: the operation took effect (a transaction is
 * committed, an offset is stored), then the call fails, as when the broker's reply is lost.
 */
export interface Fault {
  readonly when: 'before' | 'after';
  readonly error: unknown;
}

/** The call fails with `error`; the operation did not happen. */
export function rejectCall(error: unknown): Fault {
  return { when: 'before', error };
}

/** The operation took effect but the caller gets an error (default: a `RetriableError`, the reply was lost). */
export function appliedButFailed(error?: unknown): Fault {
  return { when: 'after', error: error ?? new RetriableError('the request was applied but its reply was lost (injected)', { context: { injected: true } }) };
}

/**
 * A timeout: the caller gets a `RetriableError` it cannot tell apart in either case (context
 * `outcome: 'unknown'`); `applied` says which outcome the test chose.
 */
export function timedOut(options: { readonly applied: boolean }): Fault {
  const error = new RetriableError('the request timed out; its outcome is unknown (injected)', { context: { injected: true, outcome: 'unknown' } });
  return { when: options.applied ? 'after' : 'before', error };
}

export class FaultQueue {
  readonly #queued = new Map<string, { readonly client: string; readonly operation: Operation; readonly faults: Fault[] }>();

  add(client: string, operation: Operation, fault: Fault): void {
    const key = `${client}\u0000${operation}`;
    const entry = this.#queued.get(key) ?? { client, operation, faults: [] };
    entry.faults.push(fault);
    this.#queued.set(key, entry);
  }

  /** Faults queued and not fired yet (a test can assert its faults were reached). */
  pending(): { readonly client: string; readonly operation: Operation; readonly count: number }[] {
    return [...this.#queued.values()].filter((e) => e.faults.length > 0).map((e) => ({ client: e.client, operation: e.operation, count: e.faults.length }));
  }

  /** Runs one client call with the next queued fault for it, if any. */
  async around<T>(client: string, operation: Operation, run: () => T | Promise<T>): Promise<T> {
    const fault = this.#queued.get(`${client}\u0000${operation}`)?.faults.shift();
    if (fault?.when === 'before') throw fault.error;
    const result = await run();
    if (fault?.when === 'after') throw fault.error;
    return result;
  }
}
