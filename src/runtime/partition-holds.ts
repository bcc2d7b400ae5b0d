/**
 * Partitions a sink task holds back while the writer schema of one of their records cannot be fetched
 * yet (decode/registry-port.ts `SchemaUnavailableError`: an id the registry does not know within
 * `icefloe.registry.unknown-id-grace-ms`, or a registry that cannot be reached). Only that partition
 * waits: the task seeks it back to the record, pauses it, and keeps handling and committing the others;
 * after a back-off that grows with each failed try (core/retry.ts `Backoff`) it resumes the partition and
 * the record is tried again. Once the grace period is over the registry's answer is a DataError and the
 * record follows errors.tolerance like any bad record.
 *
 * Exactly once: a held partition's records from the held one on are never handed to the writer (the rest
 * of the batch is dropped, later batches too until it resumes), so the offset the next transaction
 * commits for it is the end of the records it did handle (the commit channel only moves a partition's
 * offset over handled records). A rewind (an abandoned cycle) seeks it back to its committed offset and
 * it stays paused. A revoked partition is forgotten (and resumed, so the consumer keeps no pause for it);
 * a newly assigned one starts unpaused.
 *
 * Owns: which partitions wait, until when, and their pause/resume/seek calls. Must not: decide what a
 * record becomes (the writer) or what is committed (the channel).
 */
import type { Backoff } from '../core/retry.ts';
import { errorMessage } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { partitionKey } from '../consume/port.ts';
import type { KafkaSource, RawRecord, TopicPartition } from '../consume/port.ts';

interface Hold {
  readonly tp: TopicPartition;
  /** The record that waits for its schema (the partition was seeked back to it). */
  offset: bigint;
  readonly backoff: Backoff;
  readonly sinceMs: number;
  /** Why the last try failed (registry unreachable, id not known yet), for the status. */
  error: string;
  /** Paused until `resumeAtMs`; false once resumed (the record is being tried again). */
  paused: boolean;
  resumeAtMs: number;
}

export interface PartitionHoldsDeps {
  readonly source: KafkaSource;
  readonly log: Logger;
  readonly now: () => number;
  /** A fresh back-off per hold: the first wait is its first delay. */
  readonly backoff: () => Backoff;
}

export class PartitionHolds {
  /** Tries that found a schema still unavailable (a hold, or a hold made longer). */
  waits = 0;
  private readonly d: PartitionHoldsDeps;
  private readonly holds = new Map<string, Hold>();
  /** The partition of the last record asked about, and its answer (records come in runs of one partition). */
  private lastTopic: string | undefined;
  private lastPartition = -1;
  private lastHeld = false;

  constructor(deps: PartitionHoldsDeps) {
    this.d = deps;
  }

  /** Whether any partition is held or being tried again (the per-record checks are skipped otherwise). */
  get active(): boolean {
    return this.holds.size > 0;
  }

  /** True when the partition is held and paused (a resume of the whole task must leave it paused). */
  isHeld(tp: TopicPartition): boolean {
    return this.holds.get(partitionKey(tp))?.paused === true;
  }

  /** True when the record's partition is paused: the record must not be handled (it will be read again). */
  blocks(r: RawRecord): boolean {
    if (r.partition === this.lastPartition && r.topic === this.lastTopic) return this.lastHeld;
    this.lastTopic = r.topic;
    this.lastPartition = r.partition;
    this.lastHeld = this.holds.get(partitionKey(r))?.paused === true;
    return this.lastHeld;
  }

  /** The record's schema cannot be fetched yet: seek its partition back to it and pause it for a while. */
  async hold(r: RawRecord, error: unknown): Promise<void> {
    const tp = { topic: r.topic, partition: r.partition };
    const key = partitionKey(tp);
    const held = this.holds.get(key);
    const now = this.d.now();
    const backoff = held?.backoff ?? this.d.backoff();
    const delay = backoff.next();
    // Seek first: the batch and the client's prefetched records past it are dropped; then no fetch until resumed.
    await this.d.source.seek({ ...tp, offset: r.offset });
    this.d.source.pause([tp]);
    const hold: Hold = held ?? { tp, offset: r.offset, backoff, sinceMs: now, error: '', paused: true, resumeAtMs: 0 };
    hold.offset = r.offset;
    hold.error = errorMessage(error);
    hold.paused = true;
    hold.resumeAtMs = now + delay;
    this.holds.set(key, hold);
    this.lastTopic = undefined;
    this.waits++;
    this.d.log.warn("partition paused: a record's schema cannot be fetched yet; the task's other partitions go on", {
      topic: r.topic,
      partition: r.partition,
      offset: r.offset.toString(),
      error: errorMessage(error),
      tries: backoff.count,
      waitedMs: now - hold.sinceMs,
      retryInMs: delay,
    });
  }

  /**
   * A record was handled: a partition tried again is no longer held once its record went through —
   * written, or skipped (a schema id still unknown after the grace period is a data error).
   */
  handled(r: RawRecord, outcome: 'written' | 'skipped'): void {
    const key = partitionKey(r);
    const h = this.holds.get(key);
    if (h === undefined || h.paused || r.offset < h.offset) return;
    this.holds.delete(key);
    this.lastTopic = undefined;
    this.d.log.info('partition resumed: the record waiting for its schema went through', {
      topic: r.topic,
      partition: r.partition,
      offset: r.offset.toString(),
      outcome,
      waitedMs: this.d.now() - h.sinceMs,
      tries: h.backoff.count,
    });
  }

  /** `partitions t[0], t[3] wait for a record's schema (since …)`, or undefined when none waits. */
  /** When the longest-waiting partition first waited (undefined: none waits). */
  oldestSinceMs(): number | undefined {
    let oldest: number | undefined;
    for (const h of this.holds.values()) if (oldest === undefined || h.sinceMs < oldest) oldest = h.sinceMs;
    return oldest;
  }

  describe(): string | undefined {
    if (this.holds.size === 0) return undefined;
    const list = [...this.holds.values()];
    const since = Math.min(...list.map((h) => h.sinceMs));
    const last = list.reduce((a, b) => (b.resumeAtMs > a.resumeAtMs ? b : a));
    return `partitions ${list.map((h) => `${h.tp.topic}[${h.tp.partition}]`).join(', ')} wait for a record's schema from the registry (since ${new Date(since).toISOString()}): ${last.error}`;
  }

  /** Resumes every partition whose wait is over (its record is read and tried again). */
  resumeDue(): void {
    if (this.holds.size === 0) return;
    const now = this.d.now();
    const due: TopicPartition[] = [];
    for (const h of this.holds.values()) {
      if (!h.paused || h.resumeAtMs > now) continue;
      h.paused = false;
      due.push(h.tp);
    }
    if (due.length === 0) return;
    this.lastTopic = undefined;
    this.d.source.resume(due);
  }

  /** Milliseconds until the next held partition is due (Infinity: none waits). */
  msToNextResume(): number {
    let next = Infinity;
    for (const h of this.holds.values()) if (h.paused) next = Math.min(next, h.resumeAtMs);
    return next === Infinity ? Infinity : Math.max(0, next - this.d.now());
  }

  /**
   * After a rewind: every assigned partition was seeked back to its committed offset; a held one must
   * stay paused until its time (a seek does not change a pause, but saying so again costs nothing).
   */
  afterRewind(): void {
    const paused = [...this.holds.values()].filter((h) => h.paused).map((h) => h.tp);
    if (paused.length > 0) this.d.source.pause(paused);
  }

  /**
   * Partitions assigned or revoked: their holds end. A revoked partition is resumed on the way out, so
   * the consumer does not keep it paused should it come back; a newly assigned one starts unpaused.
   */
  forget(tps: readonly TopicPartition[]): void {
    if (this.holds.size === 0) return;
    const paused: TopicPartition[] = [];
    for (const tp of tps) {
      const h = this.holds.get(partitionKey(tp));
      if (h === undefined) continue;
      this.holds.delete(partitionKey(tp));
      if (h.paused) paused.push(h.tp);
    }
    this.lastTopic = undefined;
    if (paused.length === 0) return;
    try {
      this.d.source.resume(paused);
    } catch (e) {
      // Best effort: the partitions are leaving; a client that no longer holds them has nothing to resume.
      this.d.log.debug('resuming revoked partitions failed', { error: errorMessage(e) });
    }
  }
}
