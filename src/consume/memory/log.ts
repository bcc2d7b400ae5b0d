/**
 * One partition's log in the in-memory Kafka, with Kafka's transactional layout: records of a
 * transaction are appended as they are sent, and ending the transaction appends a control marker
 * (commit or abort) that occupies an offset of its own and is never returned to a reader. A
 * read_committed reader stops at the last stable offset (the first offset of the earliest transaction
 * still open here, else the high watermark) and skips aborted records and markers.
 *
 * Owns: entries, log start, high watermark, last stable offset. Must not: know about groups or clients.
 */
import type { RawRecord, RecordHeader, TopicPartitionOffset } from '../port.ts';

export type TxnState = 'open' | 'committed' | 'aborted';

/** A transaction, shared by every partition it wrote to; its state decides its records' visibility. */
export interface Txn {
  readonly transactionalId: string;
  readonly epoch: number;
  state: TxnState;
  /** Set by a stale-group offset commit (KIP-447): the transaction can only be aborted now. */
  abortOnly: boolean;
  /** Partitions written to, in first-write order. */
  readonly partitions: PartitionLog[];
  /** Group id → offsets sent with `sendOffsetsToTransaction`, visible to the group only at commit. */
  readonly offsets: Map<string, Map<string, TopicPartitionOffset>>;
}

export interface StoredRecord {
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly RecordHeader[];
  readonly timestamp: number | null;
}

/** A copy of what a client hands over (the broker keeps its own bytes); strings are taken as UTF-8. */
export function storedRecord(
  r: { readonly key?: Uint8Array | string | null; readonly value: Uint8Array | string | null; readonly headers?: readonly RecordHeader[]; readonly timestamp?: number },
  nowMs: number,
): StoredRecord {
  const bytes = (v: Uint8Array | string | null | undefined): Uint8Array | null =>
    v === null || v === undefined ? null : typeof v === 'string' ? new TextEncoder().encode(v) : v.slice();
  return { key: bytes(r.key), value: bytes(r.value), headers: (r.headers ?? []).map((h) => ({ key: h.key, value: bytes(h.value) })), timestamp: r.timestamp ?? nowMs };
}

export type LogEntry =
  | { readonly offset: bigint; readonly kind: 'record'; readonly record: StoredRecord; readonly txn: Txn | null }
  | { readonly offset: bigint; readonly kind: 'marker'; readonly commit: boolean; readonly txn: Txn };

/** What a test sees of one offset (`MemoryKafka.readPartition`). */
export interface PartitionEntry {
  readonly offset: bigint;
  readonly kind: 'record' | 'commit-marker' | 'abort-marker';
  /** `plain`: produced outside a transaction; otherwise the state of the record's transaction. */
  readonly state: 'plain' | TxnState;
  readonly transactionalId: string | null;
  readonly record: StoredRecord | null;
}

export class PartitionLog {
  readonly topic: string;
  readonly partition: number;
  /** `#entries[i].offset === #logStart + i`. */
  #entries: LogEntry[] = [];
  #logStart = 0n;
  /** Open transactions with records here → the offset of their first record here. */
  readonly #open = new Map<Txn, bigint>();

  constructor(topic: string, partition: number) {
    this.topic = topic;
    this.partition = partition;
  }

  get logStart(): bigint {
    return this.#logStart;
  }

  get high(): bigint {
    return this.#logStart + BigInt(this.#entries.length);
  }

  get lastStable(): bigint {
    let lso = this.high;
    for (const first of this.#open.values()) if (first < lso) lso = first;
    return lso < this.#logStart ? this.#logStart : lso;
  }

  append(record: StoredRecord, txn: Txn | null): bigint {
    const offset = this.high;
    this.#entries.push({ offset, kind: 'record', record, txn });
    if (txn !== null && !this.#open.has(txn)) {
      this.#open.set(txn, offset);
      txn.partitions.push(this);
    }
    return offset;
  }

  /** Ends `txn` here: the marker takes the next offset and the transaction no longer holds the LSO back. */
  writeMarker(txn: Txn, commit: boolean): void {
    this.#entries.push({ offset: this.high, kind: 'marker', commit, txn });
    this.#open.delete(txn);
  }

  /** Retention / DeleteRecords: everything before `offset` goes; the caller checks `offset <= high`. */
  deleteBefore(offset: bigint): void {
    if (offset <= this.#logStart) return;
    this.#entries = this.#entries.slice(Number(offset - this.#logStart));
    this.#logStart = offset;
  }

  /**
   * read_committed from `from` (>= log start) up to the LSO: at most `max` records, and the offset to
   * continue from (past skipped markers and aborted records, never past the LSO).
   */
  readCommitted(from: bigint, max: number): { records: RawRecord[]; next: bigint } {
    const records: RawRecord[] = [];
    const lso = this.lastStable;
    let at = from < this.#logStart ? this.#logStart : from;
    for (; at < lso && records.length < max; at++) {
      const e = this.#entries[Number(at - this.#logStart)];
      if (e === undefined || e.kind !== 'record' || (e.txn !== null && e.txn.state !== 'committed')) continue;
      records.push({ topic: this.topic, partition: this.partition, offset: e.offset, timestamp: e.record.timestamp, key: e.record.key, value: e.record.value, headers: e.record.headers });
    }
    return { records, next: at };
  }

  entries(): PartitionEntry[] {
    return this.#entries.map((e) => ({
      offset: e.offset,
      kind: e.kind === 'record' ? 'record' : e.commit ? 'commit-marker' : 'abort-marker',
      state: e.txn === null ? 'plain' : e.txn.state,
      transactionalId: e.txn?.transactionalId ?? null,
      record: e.kind === 'record' ? e.record : null,
    }));
  }
}
