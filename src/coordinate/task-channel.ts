/**
 * The sink task's side of the commit channel (docs/architecture.md, "Exactly-once"): when a commit cycle
 * ends, the data path's files are closed and uploaded, then ONE Kafka transaction carries the
 * announcements on the control topic, a cycle-complete event for every assigned partition and the source
 * offsets covered by those files. The data path (src/sink/) decides what a record becomes; this module
 * decides when it counts as consumed.
 *
 * The rules kept here:
 * - Offsets reach the group only in the cycle's transaction, and only up to records that are in a file
 *   of that cycle or skipped by configuration (`handled`) — never the consumer's read position, which
 *   runs ahead within a batch.
 * - Revocation: `onRevoked` completes the cycle (revoked partitions included) before the partitions
 *   move; if they were lost, the task has failed, or the cycle fails, everything unannounced is abandoned.
 * - Abort: after any failed or aborted transaction the unannounced files are dropped and the task must
 *   rewind every assigned partition to its committed offset (`needsRewind`) before reading on.
 * - Files are deleted after a failed cycle only when the transaction is known to be aborted: a commit
 *   whose answer was lost may have announced them.
 * - Fenced (another incarnation took our transactional.id, or we are a zombie): the error is passed on
 *   untouched; the task stops and never retries it.
 * - A producer in a state it cannot leave (`ProducerResetRequiredError`: librdkafka's fatal state, an
 *   invalid transaction state, a transaction the coordinator timed out), or whose abort failed: it is
 *   re-created (same transactional.id; its registration aborts what the old client left open) before the
 *   rewind, so the committed offsets are read once nothing of ours is pending (a broker restart is ridden
 *   out by the task itself). Files of a transaction that failed before its commit call are deleted even
 *   when the abort failed: only our commit call can commit a transaction.
 * - Zombie fence on every cycle: the transaction carries the offsets of every assigned partition, the
 *   committed ones where nothing moved, so the group coordinator checks our generation each time.
 * - A commit or abort that timed out is resumed by calling it again (librdkafka's rule); a timed-out
 *   commit is never treated as aborted. Files of a cycle whose transaction never began are deleted.
 * - Reports (cycle-complete): a partition is caught up when every offset below its high watermark was
 *   handled or skipped as a transaction marker (the consumer's position after the poll), with the time
 *   of that poll; each new assignment is reported once, a lagging one until it caught up, an idle one
 *   not again.
 *
 * Owns: per-partition consumption state, cycle triggers, the cycle transaction, abandon and rewind.
 * Must not: decode, route or write records (the `CycleWriter` does), or retry a cycle on its own (the
 * task loop decides; resuming a timed-out transactional call is finishing it, not retrying).
 */
import { randomUUID } from 'node:crypto';
import type { CrashPoints } from '../core/crash-points.ts';
import { errorMessage, IcefloeError, RetriableError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { isCallTimedOut, isFenced, partitionKey, requiresProducerReset } from '../consume/port.ts';
import type { KafkaSource, OutgoingRecord, RawRecord, TopicPartition, TopicPartitionOffset, TransactionalProducer } from '../consume/port.ts';
import type { DataFile } from '../iceberg/data-file.ts';
import type { ObjectStore } from '../upload/port.ts';
import { controlRecordKey, encodeAnnouncement, encodeControlEvent } from './events.ts';
import { TRIMMED_MESSAGE, trimmedFields } from './metrics-trim.ts';
import type { MetricsTrim } from './metrics-trim.ts';
import type { PartitionAssignment, SourceSpan, TableRef } from './events.ts';
import { FETCH_SLACK_MS } from './watermark.ts';

/** One table's share of a cycle: the files the data path closed and uploaded, and what they cover. */
export interface CycleTableFiles {
  readonly table: TableRef;
  readonly tableUuid: string;
  /** The schema and partition spec the files were written with (ids the catalog returned). */
  readonly schemaId: number;
  readonly specId: number;
  readonly files: readonly DataFile[];
  readonly spans: readonly SourceSpan[];
}

/** The data path as the channel sees it at the end of a cycle. */
export interface CycleWriter {
  /** Closes and uploads every open file; one entry per table that received records this cycle. */
  complete(): Promise<CycleTableFiles[]>;
  /** Drops every record and file not yet announced; returns uploaded files that will never be announced. */
  abort(reason: unknown): Promise<string[]>;
  /**
   * The cycle's dead-letter records, taken once after `complete()` into the cycle's transaction (so they
   * are committed exactly when the offsets of their records are); absent: the writer has none.
   */
  takeDeadLetters?(): OutgoingRecord[];
}

export interface CycleTriggers {
  readonly intervalMs: number;
  readonly maxRecords: number | null;
  readonly maxBytes: number | null;
}

export interface TaskChannelDeps {
  readonly connector: string;
  readonly taskId: number;
  readonly controlTopic: string;
  readonly triggers: CycleTriggers;
  readonly source: KafkaSource;
  readonly producer: TransactionalProducer;
  readonly writer: CycleWriter;
  /** Where abandoned files are deleted from. */
  readonly store: ObjectStore;
  readonly crash: CrashPoints;
  readonly log: Logger;
  readonly now: () => number;
  /** Largest control record (announcements are split above it); default 900 KiB, under Kafka's 1 MiB. */
  readonly maxControlRecordBytes?: number;
  /** Called after a cycle's transaction committed (wakes an in-process committer). */
  readonly onAnnounced?: () => void;
  /** The task was asked to stop: a transactional call that times out is left pending, not resumed (review M2). */
  readonly stopping?: () => boolean;
}

/**
 * A timed-out commit or abort that a stopping task left pending instead of resuming it (review M2). A commit
 * left so may still land (its files are kept); the broker times the transaction out, or the successor's
 * registration of the transactional.id resolves it. The pending call also refuses an abort meanwhile.
 */
class CallLeftPendingError extends RetriableError {}

export interface ChannelMetrics {
  cyclesCommitted: number;
  cyclesAborted: number;
  filesAnnounced: number;
  lastCycleMs: number;
  /** Transactional calls (commit, abort) that timed out and were called again to resume them. */
  callsResumed: number;
  /** Times the transactional producer was re-created after a state it could not leave. */
  producerResets: number;
}

interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** The group's committed offset (null: none; undefined: not fetched yet). */
  committed: bigint | null | undefined;
  /** Offset after the last record fully handled since the last commit or rewind; undefined: none yet. */
  next: bigint | undefined;
  maxTs: number | undefined;
  /** What the last cycle-complete said; a lagging report is followed up even by an otherwise empty cycle. */
  reportedCaughtUp: boolean;
  /** Offset after the last record a poll returned (undefined: none since the assignment or rewind). */
  returnedNext: bigint | undefined;
  /** The consumer's position right after the last poll: past returned records and transaction markers. */
  readTo: bigint | undefined;
}

const DEFAULT_MAX_CONTROL_RECORD_BYTES = 900 * 1024;


export class TaskChannel {
  readonly metrics: ChannelMetrics = { cyclesCommitted: 0, cyclesAborted: 0, filesAnnounced: 0, lastCycleMs: 0, callsResumed: 0, producerResets: 0 };
  private readonly d: TaskChannelDeps;
  private readonly incarnation = randomUUID().slice(0, 8);
  private readonly partitions = new Map<string, PartitionState>();
  /** The partition of the last record handled (records come in runs of one partition). */
  private lastPartition: PartitionState | undefined;
  private rewindPending = false;
  /** The producer must be re-created before its next transaction (and before the rewind). */
  private producerResetPending = false;
  private failed = false;
  private cycleCounter = 0;
  private cycleStartMs: number;
  private cycleRecords = 0;
  private cycleBytes = 0;
  /** When the last poll whose position snapshot the partitions hold started. */
  private lastPollStartMs: number | undefined;

  constructor(deps: TaskChannelDeps) {
    this.d = deps;
    this.cycleStartMs = deps.now();
  }

  /** True after an abandoned cycle until `rewind()`: whatever was read since must be read again. */
  get needsRewind(): boolean {
    return this.rewindPending;
  }

  /** The task failed: a revocation from now on abandons instead of committing. */
  markFailed(): void {
    this.failed = true;
  }

  /** A record is fully handled (in a writer, or skipped by configuration): its offset may be committed. */
  handled(r: RawRecord, written: boolean): void {
    const last = this.lastPartition;
    const p = last !== undefined && last.partition === r.partition && last.topic === r.topic ? last : (this.lastPartition = this.partitionState(r));
    p.next = r.offset + 1n;
    if (r.timestamp !== null && r.timestamp >= 0 && (p.maxTs === undefined || r.timestamp > p.maxTs)) p.maxTs = r.timestamp;
    if (written) this.cycleRecords++;
    this.cycleBytes += r.value?.byteLength ?? 0;
  }

  /**
   * A poll returned `batch` (started at `startedMs`): remembers per partition the last record returned
   * and the consumer's position, which also moves past transaction markers. A partition counts as caught
   * up when that position reached its high watermark and every record returned was handled — so an idle
   * partition of a transactionally produced topic (a commit marker after its last record) is caught up.
   */
  polled(batch: readonly RawRecord[], startedMs: number): void {
    let last: PartitionState | undefined;
    for (const r of batch) {
      if (last === undefined || last.partition !== r.partition || last.topic !== r.topic) last = this.partitionState(r);
      last.returnedNext = r.offset + 1n;
    }
    const parts = [...this.partitions.values()];
    for (const pos of this.d.source.position(parts)) {
      const p = this.partitions.get(partitionKey(pos));
      if (p !== undefined) p.readTo = pos.offset ?? undefined;
    }
    this.lastPollStartMs = startedMs;
  }

  deadline(): number {
    return this.cycleStartMs + this.d.triggers.intervalMs;
  }

  /** The cycle should end: its interval passed, or it holds the configured records or bytes. */
  due(): boolean {
    const t = this.d.triggers;
    return this.d.now() >= this.deadline() || (t.maxRecords !== null && this.cycleRecords >= t.maxRecords) || (t.maxBytes !== null && this.cycleBytes >= t.maxBytes);
  }

  /** Commits the cycle; on failure abandons it (so its records are read again) and rethrows. */
  async endCycle(why: string): Promise<void> {
    try {
      await this.commitCycle(why);
    } catch (e) {
      this.metrics.cyclesAborted++;
      await this.abandon(e);
      throw e;
    }
  }

  /** Drops every unannounced record and file; the task rewinds to the committed offsets before reading on. */
  async abandon(reason: unknown): Promise<void> {
    const orphans = await this.d.writer.abort(reason);
    for (const p of this.partitions.values()) {
      p.next = undefined;
      p.returnedNext = undefined;
      p.readTo = undefined;
    }
    this.resetCycle();
    this.rewindPending = true;
    // Uploaded but never announced: no snapshot can reference them. Best effort; orphan cleanup is the backstop.
    await this.deleteFiles(orphans);
  }

  /**
   * The abort rule: every assigned partition back to its committed offset. A producer that must be
   * re-created is re-created first: until its registration aborted what the old client left open, the
   * group's offsets may be pending in that transaction (a stable read would wait for it).
   */
  async rewind(): Promise<void> {
    await this.resetProducerIfNeeded();
    await this.d.source.rewindToCommitted();
    for (const p of this.partitions.values()) {
      p.committed = undefined;
      p.returnedNext = undefined;
      p.readTo = undefined;
    }
    this.rewindPending = false;
  }

  onAssigned(tps: readonly TopicPartition[]): void {
    this.lastPartition = undefined;
    for (const tp of tps) this.partitions.set(partitionKey(tp), newPartition(tp));
    this.d.log.info('partitions assigned', { partitions: tps.map(partitionKey) });
  }

  /**
   * The revocation rule: the broker checks the group generation, not partition ownership, so the cycle
   * is committed (revoked partitions included) before the partitions move, or abandoned entirely.
   */
  async onRevoked(tps: readonly TopicPartition[], lost: boolean): Promise<void> {
    this.d.log.info('partitions revoked', { partitions: tps.map(partitionKey), lost });
    if (lost || this.failed) await this.abandon(new RetriableError('partitions lost'));
    else {
      try {
        await this.endCycle('revoke');
      } catch (e) {
        // Abandoned: nothing of the cycle is announced, so the next owner reads it again.
        if (isFenced(e) || !(e instanceof RetriableError)) throw e;
        this.d.log.warn('cycle abandoned at revocation', { error: errorMessage(e) });
      }
    }
    for (const tp of tps) this.partitions.delete(partitionKey(tp));
    this.lastPartition = undefined;
  }

  private async commitCycle(why: string): Promise<void> {
    const started = this.d.now();
    if (!this.hasWork()) {
      this.cycleStartMs = started;
      return;
    }
    const tables = await this.d.writer.complete();
    this.d.crash.reach('task.after-upload');
    try {
      await this.fetchCommitted();
    } catch (e) {
      // The transaction never began: the files can never be announced (the retry writes new ones).
      await this.deleteFiles(tables.flatMap((t) => t.files.map((f) => f.filePath)));
      throw e;
    }
    const cycleId = `${this.incarnation}-${++this.cycleCounter}`;
    const { assignments, offsets } = this.positions();
    const deadLetters = this.d.writer.takeDeadLetters?.() ?? [];
    const records = [...this.announcements(tables, cycleId), this.cycleComplete(cycleId, assignments), ...deadLetters];
    await this.transact(records, offsets, tables);
    this.d.crash.reach('task.after-announce');

    for (const p of this.partitions.values()) {
      if (p.next !== undefined) p.committed = p.next;
      const a = assignments.find((x) => x.topic === p.topic && x.partition === p.partition);
      // Not reportable yet (no position at all): its first record ends a cycle anyway.
      p.reportedCaughtUp = a?.caughtUp ?? true;
    }
    const files = tables.reduce((n, t) => n + t.files.length, 0);
    this.metrics.cyclesCommitted++;
    this.metrics.filesAnnounced += files;
    this.metrics.lastCycleMs = this.d.now() - started;
    this.d.log.info('cycle committed', { cycle: cycleId, why, records: this.cycleRecords, files, tables: tables.length, ...(deadLetters.length === 0 ? {} : { deadLetters: deadLetters.length }), ms: this.metrics.lastCycleMs });
    this.resetCycle();
    this.d.onAnnounced?.();
  }

  /**
   * Records written, offsets to move, or a partition not reported caught up yet: one that lagged, or
   * one newly assigned (each assignment is reported once, so the committer knows where it stands).
   */
  private hasWork(): boolean {
    if (this.cycleRecords > 0) return true;
    for (const p of this.partitions.values()) {
      if (!p.reportedCaughtUp || (p.next !== undefined && p.next !== p.committed)) return true;
    }
    return false;
  }

  /** Per assigned partition, what the cycle-complete reports, and the offsets the transaction commits. */
  private positions(): { assignments: PartitionAssignment[]; offsets: TopicPartitionOffset[] } {
    const assignments: PartitionAssignment[] = [];
    const offsets: TopicPartitionOffset[] = [];
    for (const p of this.partitions.values()) {
      const high = this.d.source.highWatermark(p);
      // Nothing handled and nothing committed: an empty partition (or one holding only markers) is still
      // reported — a partition without reports holds the watermark back — at its end. Not one whose
      // records were returned but not handled (held back by the task): its end is not reached.
      const onlyMarkers = p.readTo !== undefined && p.readTo >= (high ?? 0n) && p.returnedNext === undefined;
      const next = p.next ?? p.committed ?? (high !== null && (high === 0n || onlyMarkers) ? high : undefined);
      if (next === undefined) continue;
      // Read to the end: every offset below the high watermark handled, or consumed with nothing in
      // between but transaction markers (the position moved past them, every returned record handled).
      const caughtUp = high !== null && (next >= high || (p.readTo !== undefined && p.readTo >= high && (p.returnedNext === undefined || next >= p.returnedNext)));
      assignments.push({ topic: p.topic, partition: p.partition, nextOffset: next, ...(p.maxTs === undefined ? {} : { maxTimestampMs: p.maxTs }), caughtUp, ...(caughtUp ? { endOffset: high } : {}) });
      // Every partition, moved or not: an unmoved one re-commits its committed offset, which changes
      // nothing for a current member but makes the group coordinator check our generation (KIP-447).
      offsets.push({ topic: p.topic, partition: p.partition, offset: next });
    }
    return { assignments, offsets };
  }

  private announcements(tables: readonly CycleTableFiles[], cycleId: string): OutgoingRecord[] {
    const { connector, taskId, controlTopic } = this.d;
    const key = controlRecordKey(connector, taskId);
    const out: OutgoingRecord[] = [];
    for (const t of tables) {
      if (t.files.length === 0) continue;
      const announcement = { connector, taskId, cycleId, table: t.table, tableUuid: t.tableUuid, schemaId: t.schemaId, specId: t.specId, sourceSpans: t.spans, files: t.files };
      const trims: MetricsTrim[] = [];
      for (const value of encodeAnnouncement(announcement, this.d.maxControlRecordBytes ?? DEFAULT_MAX_CONTROL_RECORD_BYTES, (trim) => trims.push(trim))) out.push({ topic: controlTopic, key, value });
      if (trims.length > 0) this.d.log.warn(TRIMMED_MESSAGE, trimmedFields(t.table, trims));
    }
    return out;
  }

  private cycleComplete(cycleId: string, assignments: PartitionAssignment[]): OutgoingRecord {
    const { connector, taskId, controlTopic } = this.d;
    const at = this.lastPollStartMs;
    const caughtUpAtMs = at !== undefined && assignments.some((a) => a.caughtUp) ? at - FETCH_SLACK_MS : undefined;
    const value = encodeControlEvent({ type: 'cycle-complete', connector, taskId, cycleId, assignments, ...(caughtUpAtMs === undefined ? {} : { caughtUpAtMs }) });
    return { topic: controlTopic, key: controlRecordKey(connector, taskId), value };
  }

  /**
   * The cycle's one transaction; on failure aborts it when it can and deletes the files only then.
   *
   * The zombie fence (KIP-447): the transaction always carries the offsets of every assigned partition
   * with the consumer's group metadata, so the group coordinator checks our member id and generation in
   * every cycle that announces — also when no offset moved (another member may have committed the same
   * next offset while we were frozen: without the check our late announcement would commit).
   */
  private async transact(records: readonly OutgoingRecord[], offsets: readonly TopicPartitionOffset[], tables: readonly CycleTableFiles[]): Promise<void> {
    const { producer, source } = this.d;
    const files = tables.flatMap((t) => t.files.map((f) => f.filePath));
    if (offsets.length === 0 && records.length > 1) {
      // Announcements without a partition to fence with cannot happen (records handled have offsets);
      // committing them unchecked could apply a zombie's files, so refuse rather than skip the check.
      await this.deleteFiles(files);
      throw new RetriableError('commit cycle has announcements but no source offsets to check the group generation with');
    }
    try {
      await this.resetProducerIfNeeded();
      await producer.beginTransaction();
    } catch (e) {
      // Never begun: nothing of the cycle can be announced, so its files go now (else every retry leaks them).
      if (requiresProducerReset(e)) this.producerResetPending = true;
      await this.deleteFiles(files);
      throw asIcefloe(e);
    }
    let committing = false;
    try {
      await producer.send(records);
      if (offsets.length > 0) await producer.sendOffsetsToTransaction(offsets, source.groupMetadata());
      this.d.crash.reach('task.in-transaction');
      committing = true;
      await this.resume('commitTransaction', () => producer.commitTransaction());
    } catch (e) {
      let aborted = false;
      let failure = e;
      if (requiresProducerReset(e)) {
        // The client cannot abort any more; the new client's registration aborts the transaction.
        this.producerResetPending = true;
      } else if (e instanceof CallLeftPendingError) {
        // The task stops with its commit pending: an abort now would only conflict with it.
      } else if (!isFenced(e)) {
        aborted = await this.resume('abortTransaction', () => producer.abortTransaction()).then(
          () => true,
          (err: unknown) => {
            // Fenced while aborting (a successor registered our id meanwhile): that is the task's end, and a
            // new producer would fence the successor in turn.
            if (isFenced(err) || err instanceof CallLeftPendingError) {
              failure = err;
              return false;
            }
            // Whatever state the client is left in, a new one gets out of it (the broker restart:
            // the abort failed, then every begin did).
            this.producerResetPending = true;
            this.d.log.warn('abort failed; the producer is re-created before the next cycle', { error: errorMessage(err) });
            return false;
          },
        );
      }
      // A transaction known to be aborted, or one our commit call never reached, cannot have announced the
      // files. After a commit call whose outcome is unknown they may be announced, and deleting them would
      // lose data: leave them to orphan cleanup.
      if (aborted || !committing) await this.deleteFiles(files);
      throw asIcefloe(failure);
    }
  }

  /** Re-creates the producer when a failed transaction left it in a state it cannot leave (see header). */
  private async resetProducerIfNeeded(): Promise<void> {
    if (!this.producerResetPending) return;
    const started = this.d.now();
    await this.d.producer.reinitialize();
    this.producerResetPending = false;
    this.metrics.producerResets++;
    this.d.log.info('transactional producer re-created', { transactionalId: this.d.producer.transactionalId, ms: this.d.now() - started, resets: this.metrics.producerResets });
  }

  /**
   * Runs a resumable transactional call (commit, abort) to its end. librdkafka's rule: a call that timed
   * out goes on in the background and must be called again — the same call — to resume; any other call
   * (abort after a timed-out commit, the next begin) fails with a conflict for as long as it is pending,
   * and a timed-out commit may still commit, so it can never be treated as aborted. Each time-out is
   * logged; the broker resolves the call (or times the transaction out) once it answers again.
   *
   * Unless the task is stopping (review M2): a call that times out then is left pending
   * (`CallLeftPendingError`), so that stop() ends a task whose broker does not answer. The transaction is
   * left to the broker's time-out or to the successor's registration, which aborts it if it is still open.
   */
  private async resume(call: 'commitTransaction' | 'abortTransaction', run: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await run();
        if (attempt > 1) this.d.log.info('transaction call resumed', { call, attempts: attempt });
        return;
      } catch (e) {
        if (!isCallTimedOut(e)) throw e;
        if (this.d.stopping?.() === true) {
          this.d.log.warn('transaction call left pending: the task is stopping', { call, attempts: attempt, error: errorMessage(e) });
          throw new CallLeftPendingError(`${call} timed out while the task stops: left pending for the broker to resolve (${errorMessage(e)})`, { cause: e, context: { call } });
        }
        this.metrics.callsResumed++;
        this.d.log.warn('transaction call timed out; resuming it', { call, attempt, error: errorMessage(e) });
      }
    }
  }

  /** Committed offsets of partitions not asked about yet (reported for idle partitions). */
  private async fetchCommitted(): Promise<void> {
    const missing = [...this.partitions.values()].filter((p) => p.committed === undefined);
    if (missing.length === 0) return;
    for (const c of await this.d.source.committed(missing)) {
      const p = this.partitions.get(partitionKey(c));
      if (p !== undefined) p.committed = c.offset;
    }
  }

  private async deleteFiles(paths: readonly string[]): Promise<void> {
    await Promise.all(paths.map((path) => this.d.store.delete(path).catch(() => undefined)));
  }

  private resetCycle(): void {
    this.cycleRecords = 0;
    this.cycleBytes = 0;
    this.cycleStartMs = this.d.now();
  }

  private partitionState(tp: TopicPartition): PartitionState {
    const k = partitionKey(tp);
    let p = this.partitions.get(k);
    if (p === undefined) {
      // Records only come from assigned partitions, which onAssigned registered; this is a safety net.
      p = newPartition(tp);
      this.partitions.set(k, p);
    }
    return p;
  }
}

function asIcefloe(e: unknown): IcefloeError {
  return e instanceof IcefloeError ? e : new RetriableError(`commit cycle failed: ${errorMessage(e)}`, { cause: e });
}

function newPartition(tp: TopicPartition): PartitionState {
  return { topic: tp.topic, partition: tp.partition, committed: undefined, next: undefined, maxTs: undefined, reportedCaughtUp: false, returnedNext: undefined, readTo: undefined };
}

