/**
 * Helpers for the Kafka adapter's integration tests (test/integration/kafka-*.test.ts): unique names,
 * client settings for the stack's broker, topic setup and teardown through our own admin adapter, a
 * plain (non-transactional) producer for source data, and a poll loop with a deadline.
 */
import { randomUUID } from 'node:crypto';
import { RdKafka } from '@confluentinc/kafka-javascript';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import type { ClientSettings } from '../../src/consume/confluent/index.ts';
import type { ControlRead, ControlTopicReader, KafkaSource, RawRecord, TopicPartitionOffset } from '../../src/consume/port.ts';
import { requireReachable, stackEndpoints } from './stack.ts';

export function unique(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}

/** Client settings for the stack's broker (pass-through, as a worker would give them). */
export async function kafkaSettings(): Promise<ClientSettings> {
  const { kafkaBootstrap } = stackEndpoints();
  await requireReachable('Kafka', kafkaBootstrap);
  return { 'bootstrap.servers': kafkaBootstrap };
}

/** Fast group failure detection for tests (the broker allows session timeouts down to 1 s). */
export const FAST_GROUP: ClientSettings = { 'session.timeout.ms': '6000', 'heartbeat.interval.ms': '500' };

/** Creates topics (deleted by `t.after`) and returns an admin the test may use. */
export async function withTopics(
  t: { after(fn: () => Promise<void>): void },
  topics: readonly { name: string; partitions: number }[],
): Promise<ConfluentKafkaAdmin> {
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  t.after(async () => {
    for (const topic of topics) await admin.deleteTopic(topic.name).catch(() => undefined);
    await admin.close();
  });
  for (const topic of topics) await admin.ensureTopic({ name: topic.name, partitions: topic.partitions, replicationFactor: 1 });
  return admin;
}

export interface PlainRecord {
  topic: string;
  partition: number;
  key?: string;
  value: string;
  headers?: Record<string, string>;
}

/** Produces with an idempotent, non-transactional producer and waits for every delivery. */
export async function produce(records: readonly PlainRecord[]): Promise<void> {
  const settings = await kafkaSettings();
  const producer = new RdKafka.Producer({ ...settings, 'enable.idempotence': true, dr_cb: true }, {});
  await new Promise<void>((resolve, reject) => producer.connect({}, (err) => (err ? reject(err) : resolve())));
  producer.setPollInterval(10);
  try {
    let pending = records.length;
    const done = new Promise<void>((resolve, reject) => {
      if (pending === 0) resolve();
      producer.on('delivery-report', (err) => {
        if (err) reject(err);
        else if (--pending === 0) resolve();
      });
    });
    for (const r of records) {
      const headers = r.headers === undefined ? undefined : Object.entries(r.headers).map(([k, v]) => ({ [k]: Buffer.from(v) }));
      producer.produce(r.topic, r.partition, Buffer.from(r.value), r.key === undefined ? null : Buffer.from(r.key), null, undefined, headers);
    }
    await done;
  } finally {
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  }
}

/** Polls until `until(all records so far)` holds; fails with what arrived when the deadline passes. */
export async function pollUntil(source: KafkaSource, until: (got: RawRecord[]) => boolean, deadlineMs = 15_000): Promise<RawRecord[]> {
  const got: RawRecord[] = [];
  const end = Date.now() + deadlineMs;
  while (!until(got)) {
    if (Date.now() > end) throw new Error(`pollUntil: condition not met after ${deadlineMs} ms; got ${got.length} records: ${describe(got)}`);
    got.push(...(await source.poll({ maxRecords: 500, timeoutMs: 200 })));
  }
  return got;
}

export function describe(records: readonly RawRecord[]): string {
  return records.map((r) => `${r.topic}[${r.partition}]@${r.offset}`).join(' ');
}

export function text(bytes: Uint8Array | null): string | null {
  return bytes === null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Reads the control topic until `count` records are visible (bounded). A commit returns once the
 * transaction coordinator has logged it; the commit markers that move each partition's last stable offset
 * are written just after, so a read right after a commit may legitimately stop short of it.
 */
export async function readUntil(
  reader: ControlTopicReader,
  from: readonly TopicPartitionOffset[],
  count: number,
  deadlineMs = 10_000,
): Promise<ControlRead> {
  const until = Date.now() + deadlineMs;
  let got = await reader.read(from);
  while (got.records.length < count && Date.now() < until) {
    await sleep(100);
    got = await reader.read(from);
  }
  return got;
}
