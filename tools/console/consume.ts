/**
 * `icefloe consume` over the ports: reads a topic by assignment with the read_committed reader the
 * committer uses (no consumer group joins, nothing is committed: a connector's group and offsets are never
 * touched), from each partition's first record (`--from-beginning`) or its end, and hands every record to
 * the printer in offset order per partition, until `maxMessages`, `timeoutMs` without a new record, or the
 * abort signal.
 *
 * Owns: positions and the stop conditions. Must not: know a Kafka client (index.ts wires the adapters).
 */
import { ConfigError, IcefloeError, RetriableError } from '../../src/core/errors.ts';
import type { ControlTopicReader, KafkaAdmin, RawRecord, TopicPartitionOffset, Watermarks } from '../../src/consume/port.ts';

export interface ConsumeRequest {
  readonly bootstrapServers: string;
  readonly topic: string;
  readonly fromBeginning: boolean;
  readonly maxMessages?: number;
  /** Stop after this long without a new record (default: never). */
  readonly timeoutMs?: number;
  readonly partition?: number;
  readonly signal?: AbortSignal;
}

export interface ConsumeResult {
  readonly records: number;
  readonly stoppedBy: 'max-messages' | 'timeout' | 'signal';
}

/** How long one read may wait for the log to fill before the loop looks at its stop conditions again. */
const READ_SLICE_MS = 1_000;
/** The pause between reads that found nothing new. */
const IDLE_MS = 200;

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Where reading starts: each partition's log start or end (ListOffsets), one partition if asked. */
async function startPositions(admin: KafkaAdmin, req: ConsumeRequest): Promise<TopicPartitionOffset[]> {
  let marks: Watermarks[];
  try {
    marks = await admin.watermarks(req.topic);
  } catch (e) {
    const why = e instanceof IcefloeError ? e.message : String(e);
    const Class = e instanceof ConfigError ? ConfigError : RetriableError;
    throw new Class(`cannot read topic ${req.topic} on the Kafka cluster at ${req.bootstrapServers}: ${why}`, { cause: e });
  }
  const chosen = req.partition === undefined ? marks : marks.filter((m) => m.partition === req.partition);
  if (chosen.length === 0) throw new ConfigError(`--partition ${req.partition}: topic ${req.topic} has ${marks.length} partition${marks.length === 1 ? '' : 's'} (0-${marks.length - 1})`);
  return chosen.map((m) => ({ topic: m.topic, partition: m.partition, offset: req.fromBeginning ? m.low : m.high }));
}

export async function consumeRecords(req: ConsumeRequest, admin: KafkaAdmin, reader: ControlTopicReader, handle: (r: RawRecord) => Promise<void>): Promise<ConsumeResult> {
  let positions = await startPositions(admin, req);
  let count = 0;
  let lastRecordAt = Date.now();
  for (;;) {
    if (req.signal?.aborted === true) return { records: count, stoppedBy: 'signal' };
    if (req.maxMessages !== undefined && count >= req.maxMessages) return { records: count, stoppedBy: 'max-messages' };
    if (req.timeoutMs !== undefined && Date.now() - lastRecordAt >= req.timeoutMs) return { records: count, stoppedBy: 'timeout' };
    const left = req.maxMessages === undefined ? undefined : req.maxMessages - count;
    let records: RawRecord[] = [];
    try {
      const read = await reader.read(positions, { timeoutMs: READ_SLICE_MS, ...(left === undefined ? {} : { maxRecords: left }) });
      records = read.records;
      positions = [...read.endOffsets];
    } catch (e) {
      // A slice that reached no record (a loaded broker) is only a slow moment: the stop conditions decide.
      if (!(e instanceof RetriableError)) throw e;
    }
    // Partitions interleave in a read; within one they are in offset order, which is all Kafka promises.
    for (const r of records) {
      if (req.maxMessages !== undefined && count >= req.maxMessages) break;
      await handle(r);
      count++;
      lastRecordAt = Date.now();
    }
    if (records.length === 0) await sleep(IDLE_MS, req.signal);
  }
}
