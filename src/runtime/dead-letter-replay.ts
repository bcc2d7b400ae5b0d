/**
 * `icefloe dead-letters replay`: puts the records of a connector's dead-letter topic back on the topics
 * they were read from, once their cause is fixed (the schema registered, the table altered, the
 * configuration changed), so the connector reads and writes them again. Records whose cause is not fixed
 * fail again and land in the dead-letter queue again, with new coordinates.
 *
 * - Which topic: the record's `__connect.errors.topic` header (errors.deadletterqueue.context.headers.enable),
 *   or `--to-topic`. It must be one the connector consumes: a replay never writes anywhere else.
 * - What is replayed: the records the topic holds (committed ones: read_committed) when the replay starts,
 *   up to each partition's last stable offset then. Records that fail again during the replay are not
 *   replayed a second time in the same run.
 * - Exactly once: progress is the consumer group `icefloe-dlq-replay-<connector>`, committed in the same
 *   Kafka transaction as the records produced (transactional.id `icefloe-dlq-replay-<connector>`), so a
 *   replay that is cut short and run again goes on where it stopped, without a duplicate.
 * - What a replayed record carries: its key, value, timestamp and headers as read, without the dead-letter
 *   context headers (`__connect.errors.*`, `__icefloe.errors.*`).
 * - `--dry-run` counts what would be replayed per topic and commits nothing.
 *
 * Owns: the replay loop over the ports. Must not: decide whether a record is fixed (the connector does,
 * by reading it again).
 */
import { ConfigError, RetriableError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { KafkaAdmin, KafkaSource, OutgoingRecord, RawRecord, TopicPartitionOffset, TransactionalProducer } from '../consume/port.ts';
import { DLQ_HEADERS } from '../sink/dead-letters.ts';

export interface DeadLetterReplayDeps {
  readonly connector: ConnectorConfig;
  readonly admin: KafkaAdmin;
  /** A read_committed consumer in the replay group (`replayGroup`), starting at the earliest offset. */
  readonly source: KafkaSource;
  /** A transactional producer with the id `replayGroup` (initTransactions not called yet). */
  readonly producer: TransactionalProducer;
  /** Replay every record to this topic instead of its `__connect.errors.topic` header. */
  readonly toTopic?: string;
  readonly dryRun: boolean;
  readonly log: Logger;
  /** Give up when no record arrives for this long while some are still expected; default 30 s. */
  readonly stallMs?: number;
}

export interface DeadLetterReplayReport {
  readonly deadLetterTopic: string;
  readonly group: string;
  readonly dryRun: boolean;
  /** Records replayed (or, in a dry run, that would be), in all and per target topic. */
  readonly replayed: number;
  readonly byTopic: Readonly<Record<string, number>>;
  /** Per dead-letter partition: where the replay stopped (the last stable offset when it started). */
  readonly upTo: Readonly<Record<string, string>>;
}

/** The consumer group and transactional.id of a connector's replays. */
export function replayGroup(connector: string): string {
  return `icefloe-dlq-replay-${connector}`;
}

const CONTEXT_PREFIXES = ['__connect.errors.', '__icefloe.errors.'];

export async function replayDeadLetters(d: DeadLetterReplayDeps): Promise<DeadLetterReplayReport> {
  const c = d.connector;
  const dlq = c.errors.deadLetterTopic?.topic;
  if (dlq === undefined) throw new ConfigError(`connector ${c.name} has no errors.deadletterqueue.topic.name: there is no dead-letter topic to replay`);
  if (d.toTopic !== undefined) checkTarget(c, d.toTopic, '--to-topic');
  const marks = await d.admin.watermarks(dlq);
  const end = new Map(marks.map((m) => [m.partition, m.lastStable]));
  const start = new Map(marks.map((m) => [m.partition, m.low]));
  const reached = new Map<number, bigint>();
  const byTopic: Record<string, number> = {};
  let replayed = 0;
  if (!d.dryRun) await d.producer.initTransactions();
  await d.source.subscribe({ kind: 'list', topics: [dlq] }, {
    onAssigned: async (tps) => {
      for (const o of await d.source.committed(tps)) if (o.offset !== null) reached.set(o.partition, o.offset);
    },
    onRevoked: () => undefined,
  });
  const done = (): boolean => [...end].every(([p, e]) => e <= (reached.get(p) ?? start.get(p) ?? 0n));
  let lastProgress = Date.now();
  while (!done()) {
    const records = await d.source.poll({ maxRecords: 500, timeoutMs: 500 });
    const out: OutgoingRecord[] = [];
    const next = new Map<number, bigint>();
    for (const r of records) {
      const limit = end.get(r.partition) ?? 0n;
      if (r.offset >= limit) continue; // written after the replay started (maybe by this replay's records failing again)
      const target = d.toTopic ?? headerText(r, DLQ_HEADERS.topic);
      if (target === undefined) {
        throw new ConfigError(`dead letter ${dlq}/${r.partition}@${r.offset} has no ${DLQ_HEADERS.topic} header (errors.deadletterqueue.context.headers.enable was off when it was written): name its topic with --to-topic`);
      }
      checkTarget(c, target, `the ${DLQ_HEADERS.topic} header of ${dlq}/${r.partition}@${r.offset}`);
      out.push({ topic: target, key: r.key, value: r.value, headers: r.headers.filter((h) => !CONTEXT_PREFIXES.some((p) => h.key.startsWith(p))), ...(r.timestamp === null ? {} : { timestamp: r.timestamp }) });
      next.set(r.partition, r.offset + 1n);
      byTopic[target] = (byTopic[target] ?? 0) + 1;
    }
    if (out.length > 0 && !d.dryRun) await replayBatch(d, dlq, out, next);
    replayed += out.length;
    for (const [p, o] of next) reached.set(p, o);
    // The consumer's position also moves past transaction markers (the dead-letter topic is transactional).
    for (const pos of d.source.position(d.source.assignment())) if (pos.offset !== null && pos.offset > (reached.get(pos.partition) ?? -1n)) reached.set(pos.partition, pos.offset);
    if (records.length > 0) lastProgress = Date.now();
    else if (Date.now() - lastProgress > (d.stallMs ?? 30_000)) throw new RetriableError(`dead-letter topic ${dlq}: no record for ${d.stallMs ?? 30_000} ms while records up to ${[...end].map(([p, e]) => `${p}@${e}`).join(', ')} are expected; run the replay again (it goes on where it stopped)`);
  }
  d.log.info('dead letters replayed', { topic: dlq, replayed, byTopic, dryRun: d.dryRun });
  return { deadLetterTopic: dlq, group: replayGroup(c.name), dryRun: d.dryRun, replayed, byTopic, upTo: Object.fromEntries([...end].map(([p, e]) => [String(p), e.toString()])) };
}

/** One transaction: the records on their topics and the replay group's progress, together. */
async function replayBatch(d: DeadLetterReplayDeps, dlq: string, out: readonly OutgoingRecord[], next: ReadonlyMap<number, bigint>): Promise<void> {
  const offsets: TopicPartitionOffset[] = [...next].map(([partition, offset]) => ({ topic: dlq, partition, offset }));
  await d.producer.beginTransaction();
  try {
    await d.producer.send(out);
    await d.producer.sendOffsetsToTransaction(offsets, d.source.groupMetadata());
    await d.producer.commitTransaction();
  } catch (e) {
    await d.producer.abortTransaction().catch(() => undefined);
    throw e;
  }
}

function headerText(r: RawRecord, key: string): string | undefined {
  const h = r.headers.find((x) => x.key === key);
  return h === undefined || h.value === null ? undefined : Buffer.from(h.value).toString('utf8');
}

/** A replay only writes to a topic the connector consumes. */
function checkTarget(c: ConnectorConfig, topic: string, what: string): void {
  const consumed = c.topics.kind === 'list' ? c.topics.topics.includes(topic) : c.topics.regex.test(topic);
  if (!consumed) throw new ConfigError(`${what} names topic ${topic}, which connector ${c.name} does not consume (${c.topics.kind === 'list' ? `topics=${c.topics.topics.join(',')}` : `topics.regex=${c.topics.pattern}`}): a replay only writes to the connector's own topics`);
}
