/**
 * `ControlTopicReader` over a librdkafka KafkaConsumer used by assignment only (it never joins a group or
 * commits): isolation.level=read_committed, auto.offset.reset=error, partition EOF events on.
 *
 * A read first takes each partition's log start offset and last stable offset (ListOffsets, READ_COMMITTED),
 * checks the start positions against the log (past the high watermark is a FatalError: the topic was
 * recreated; below the log start a RetriableError: retention deleted records since the caller looked, and
 * it reads again from the log start it then sees, stopping only the tables that lost announcements), then reads until every partition
 * reached the LSO taken at the start — or a bound (records, bytes, time) is reached: then it returns the
 * prefix it read and where each partition stopped (the committer catches up over several rounds). Records at or past that LSO are not returned, so a read is a
 * consistent prefix even while tasks keep committing. Transaction markers occupy offsets without
 * records, so "reached" is decided by librdkafka's EOF event (its fetch position reached the LSO) or by a
 * record at LSO-1.
 *
 * Owns: one reader client. Must not: remember positions between reads (the committer stores them in
 * the table snapshots) or skip a gap.
 */
import { randomUUID } from 'node:crypto';
import { FatalError, RetriableError } from '../../core/errors.ts';
import { partitionKey } from '../port.ts';
import type { ControlRead, ControlReadOptions, ControlTopicReader, RawRecord, TopicPartitionOffset } from '../port.ts';
import { RdKafka, call, sync, toRawRecord } from './internal.ts';
import type { KafkaConsumerClient } from './internal.ts';
import { Reachability } from './reachability.ts';
import { leaderChanged, retryOnLeaderChange } from './leader-retry.ts';
import { controlReaderConfig, offsetFromNumber, offsetToNumber, splitTopicConfig } from './settings.ts';
import type { ClientSettings } from './settings.ts';

export interface ControlReaderOptions {
  readonly settings: ClientSettings;
}

const LIST_TIMEOUT_MS = 15_000;
/** At most one client renewal per this long (a broker that is away fails the leader lookup too). */
export const RENEW_INTERVAL_MS = 30_000;

/** The reader's client pair: the consumer, and an admin client on the same handle (ListOffsets). */
export interface ReaderClients {
  readonly consumer: KafkaConsumerClient;
  readonly admin: RdKafka.IAdminClient;
}

export class ConfluentControlTopicReader implements ControlTopicReader {
  #consumer: KafkaConsumerClient;
  #admin: RdKafka.IAdminClient;
  /** Partition → the offset librdkafka's fetcher reported EOF at, during the current read. */
  readonly #eof = new Map<string, bigint>();
  /** A fresh client pair (connect); undefined: never renewed. */
  readonly #renew: (() => Promise<ReaderClients>) | undefined;
  /** Set when the leader lookup still failed after the bounded retries: the next read renews the clients. */
  #stale = false;
  #renewedAtMs = Number.NEGATIVE_INFINITY;

  private constructor(clients: ReaderClients, renew?: () => Promise<ReaderClients>) {
    this.#consumer = clients.consumer;
    this.#admin = clients.admin;
    this.#renew = renew;
    this.#watchEof(clients.consumer);
  }

  #watchEof(consumer: KafkaConsumerClient): void {
    consumer.on('partition.eof', (e: RdKafka.EofEvent) => {
      const at = offsetFromNumber(e.offset);
      if (at !== null) this.#eof.set(partitionKey(e), at);
    });
  }

  static async connect(options: ControlReaderOptions): Promise<ConfluentControlTopicReader> {
    const config = controlReaderConfig(options.settings, `icefloe-control-reader-${randomUUID()}`);
    const open = async (): Promise<ReaderClients> => {
      const { global, topic } = splitTopicConfig(config);
      const consumer = sync('connect', () => new RdKafka.KafkaConsumer(global, topic) as KafkaConsumerClient);
      const reach = new Reachability(config).watch(consumer);
      await call<unknown>('connect', (cb) => consumer.connect({ timeout: 10_000 }, cb)).catch((e: unknown) => {
        consumer.disconnect(() => undefined); // a renewal during an outage leaves no client behind
        throw reach.explain(e);
      });
      return { consumer, admin: sync('connect', () => RdKafka.AdminClient.createFrom(consumer)) };
    };
    return new ConfluentControlTopicReader(await open(), open);
  }

  /**
   * New clients in place of ones whose leader lookup keeps failing. Seen once in four 70 s broker outages
   * (cluster-outage): after the broker was back, one worker's status-topic reader failed every read with
   * `Local: No such entry` (librdkafka's "no leaders found": its metadata cache kept the partition without
   * a leader) for over a minute, through the metadata refreshes below, while every other client of the
   * same broker read on. A fresh client starts from fresh metadata. At most once per RENEW_INTERVAL_MS.
   */
  async #renewClients(): Promise<void> {
    if (this.#renew === undefined || Date.now() - this.#renewedAtMs < RENEW_INTERVAL_MS) return;
    this.#renewedAtMs = Date.now();
    const fresh = await this.#renew();
    const old = this.#consumer;
    this.#consumer = fresh.consumer;
    this.#admin = fresh.admin;
    this.#watchEof(fresh.consumer);
    this.#stale = false;
    old.disconnect(() => undefined);
  }

  /**
   * One ListOffsets for `from`; asked again at once, after a metadata refresh, when the leader moved
   * (leader-retry.ts: a broker frozen or restarted bumps the leader epochs, and librdkafka's admin
   * ListOffsets keeps sending the cached one until its periodic refresh, minutes later).
   */
  private async offsets(from: readonly TopicPartitionOffset[], spec: RdKafka.OffsetSpec, isolationLevel: RdKafka.IsolationLevel): Promise<Map<string, bigint>> {
    const topics = [...new Set(from.map((p) => p.topic))];
    const refresh = async (): Promise<void> => {
      for (const topic of topics) await this.refreshMetadata(topic);
    };
    try {
      return await retryOnLeaderChange(() => this.listOffsets(from, spec, isolationLevel), refresh);
    } catch (e) {
      // Still failing (the broker not back, or a whole request failed for another reason, as `Local: No such
      // entry` round after round was): the next read starts from fresh metadata, and, when it was the
      // leader lookup, from fresh clients.
      if (leaderChanged(e)) this.#stale = true;
      await refresh();
      throw e;
    }
  }

  private async listOffsets(from: readonly TopicPartitionOffset[], spec: RdKafka.OffsetSpec, isolationLevel: RdKafka.IsolationLevel): Promise<Map<string, bigint>> {
    const got = await call<RdKafka.ListOffsetsResult[]>('read-control', (cb) =>
      this.#admin.listOffsets(from.map((p) => ({ topic: p.topic, partition: p.partition, offset: spec })), { timeout: LIST_TIMEOUT_MS, isolationLevel }, cb));
    const out = new Map<string, bigint>();
    for (const r of got) {
      if (r.error !== undefined) {
        const code = typeof r.error.code === 'number' ? r.error.code : null;
        throw new RetriableError(`Kafka read-control: listing offsets of ${r.topic}[${r.partition}] failed: ${r.error.message}`, { cause: r.error, context: { kafkaCode: code } });
      }
      const v = offsetFromNumber(r.offset);
      if (v !== null) out.set(partitionKey(r), v);
    }
    return out;
  }

  /** A metadata request for the topic: librdkafka updates its cache (leaders, leader epochs) from the reply. */
  private async refreshMetadata(topic: string): Promise<void> {
    await call<unknown>('read-control', (cb) => this.#consumer.getMetadata({ topic, allTopics: false, timeout: LIST_TIMEOUT_MS }, cb)).catch(() => undefined);
  }

  async read(from: readonly TopicPartitionOffset[], options: ControlReadOptions = {}): Promise<ControlRead> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const maxRecords = options.maxRecords ?? Number.POSITIVE_INFINITY;
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    if (from.length === 0) return { records: [], endOffsets: [] };
    if (this.#stale) await this.#renewClients();
    const [start, high, stable] = await Promise.all([
      this.offsets(from, RdKafka.OffsetSpec.EARLIEST, RdKafka.IsolationLevel.READ_UNCOMMITTED),
      this.offsets(from, RdKafka.OffsetSpec.LATEST, RdKafka.IsolationLevel.READ_UNCOMMITTED),
      this.offsets(from, RdKafka.OffsetSpec.LATEST, RdKafka.IsolationLevel.READ_COMMITTED),
    ]);
    const target = new Map<string, bigint>();
    const reached = new Map<string, bigint>();
    for (const p of from) {
      const key = partitionKey(p);
      const logStart = start.get(key);
      const hw = high.get(key);
      const lso = stable.get(key);
      if (logStart === undefined || hw === undefined || lso === undefined) throw new RetriableError(`Kafka read-control: no offsets for ${key}`);
      if (p.offset > hw) {
        throw new FatalError(`control topic position ${key}@${p.offset} is outside the log [${logStart}, ${hw}]: the topic was recreated`, {
          context: { partition: key, position: String(p.offset), logStart: String(logStart), highWatermark: String(hw) },
        });
      }
      if (p.offset < logStart) {
        // Retention moved the log start past the position after the caller looked at it (the committer
        // starts every read at or above the log start it saw). Never read from the new start: that would
        // skip what was deleted. The caller reads again, sees the new log start, and stops only the tables
        // whose announcements were deleted (commit-state.ts control-records-lost).
        throw new RetriableError(`control topic position ${key}@${p.offset} is below the log start ${logStart}: retention deleted records since the read began; reading again`, {
          context: { partition: key, position: String(p.offset), logStart: String(logStart), highWatermark: String(hw) },
        });
      }
      target.set(key, lso);
      reached.set(key, p.offset);
    }
    const pending = from.filter((p) => p.offset < (target.get(partitionKey(p)) ?? 0n));
    const records: RawRecord[] = [];
    if (pending.length > 0) {
      this.#eof.clear();
      sync('assign', () => this.#consumer.assign(pending.map((p) => ({ topic: p.topic, partition: p.partition, offset: offsetToNumber(p.offset) }))));
      try {
        const deadline = Date.now() + timeoutMs;
        const open = new Set(pending.map(partitionKey));
        let bytes = 0;
        this.#consumer.setDefaultConsumeTimeout(100);
        while (open.size > 0 && records.length < maxRecords && bytes < maxBytes) {
          if (Date.now() > deadline) {
            // A bounded read that got somewhere returns its prefix (the next read goes on from there);
            // one that got nowhere is a stuck reader and says so.
            if (pending.some((p) => (reached.get(partitionKey(p)) ?? p.offset) > p.offset)) break;
            throw new RetriableError(`Kafka read-control: did not reach the last stable offset of ${[...open].join(', ')} within ${timeoutMs} ms`);
          }
          const batch = await call<RdKafka.Message[]>('read-control', (cb) => this.#consumer.consume(batchSize(records.length, bytes, maxRecords, maxBytes), cb));
          for (const m of batch) {
            const r = toRawRecord(m);
            const key = partitionKey(r);
            const end = target.get(key);
            if (end === undefined || !open.has(key) || r.offset >= end) continue;
            records.push(r);
            bytes += (r.key?.byteLength ?? 0) + (r.value?.byteLength ?? 0);
            reached.set(key, r.offset + 1n);
            if (r.offset + 1n >= end) open.delete(key);
            if (records.length >= maxRecords || bytes >= maxBytes) break;
          }
          // Stopped by a bound: the batch's EOF events may lie past records this read did not return
          // (they arrive with the batch, after its messages), so they must not move `reached` there.
          if (records.length >= maxRecords || bytes >= maxBytes) break;
          for (const key of [...open]) {
            const eofAt = this.#eof.get(key);
            const end = target.get(key) ?? 0n;
            if (eofAt !== undefined && eofAt >= end) {
              reached.set(key, end);
              open.delete(key);
            }
          }
        }
      } finally {
        sync('assign', () => this.#consumer.unassign());
      }
    }
    const endOffsets = from.map((p) => ({ topic: p.topic, partition: p.partition, offset: reached.get(partitionKey(p)) ?? p.offset }));
    return { records, endOffsets };
  }

  async close(): Promise<void> {
    await call<unknown>('close', (cb) => this.#consumer.disconnect(cb));
  }
}

/**
 * How many messages the next consume call may return: within the record bound, and — since one call
 * gathers whatever arrives during its wait, which on a fast broker is far more than the prefetch queue
 * holds — within the byte bound at the average record size seen so far (16 before any is seen). Messages
 * past the bound would be dropped and fetched again by the next read, but would first sit in memory.
 */
function batchSize(records: number, bytes: number, maxRecords: number, maxBytes: number): number {
  const byCount = Math.min(1000, maxRecords - records);
  if (!Number.isFinite(maxBytes)) return byCount;
  const average = records === 0 ? maxBytes / 16 : bytes / records;
  return Math.max(1, Math.min(byCount, Math.floor((maxBytes - bytes) / Math.max(1, average))));
}
