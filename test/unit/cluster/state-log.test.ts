/**
 * The state log's own view of Kafka (runtime/cluster/state-log.ts `unreadable()`): reads that fail, or one
 * that does not answer, make it say since when the topic cannot be read; a read that succeeds clears it.
 * A status answered while it says so names the outage (cluster-status.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RetriableError } from '../../../src/core/errors.ts';
import type { Logger } from '../../../src/core/log.ts';
import type { ControlRead, ControlTopicReader, KafkaAdmin, RecordProducer, TopicPartitionOffset } from '../../../src/consume/port.ts';
import { KafkaStateLog } from '../../../src/runtime/cluster/state-log.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => quiet };

async function until(what: string, check: () => boolean, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not ${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('reads failing (Kafka unreachable) or not answering make the log unreadable since the first; a read that succeeds clears it', async (t) => {
  /** What the next reads do: answer, fail, or hang until released. */
  let mode: 'ok' | 'fail' | 'hang' = 'ok';
  let release: (() => void) | undefined;
  const admin = {
    ensureTopic: async () => false,
    topicConfigs: async () => ({ 'cleanup.policy': 'compact' }),
    watermarks: async () => [{ topic: 'status', partition: 0, low: 0n, high: 0n, lastStable: 0n }],
  } as unknown as KafkaAdmin;
  const reader = {
    read: async (from: readonly TopicPartitionOffset[]): Promise<ControlRead> => {
      if (mode === 'fail') throw new RetriableError('Kafka read-control: Local: Broker transport failure');
      if (mode === 'hang') await new Promise<void>((r) => (release = r));
      return { records: [], endOffsets: from.map((p) => ({ ...p })) };
    },
  } as unknown as ControlTopicReader;
  const log = new KafkaStateLog({ topic: 'status', setting: 'status.storage.topic', purpose: 'statuses', partitions: 1, replicationFactor: 1, admin, producer: {} as RecordProducer, reader, log: quiet, idlePollMs: 5, readTimeoutMs: 50 });
  await log.start(() => undefined);
  t.after(() => {
    release?.();
    return log.close();
  });
  assert.equal(log.unreadable(), undefined);
  const before = Date.now();
  mode = 'fail';
  await until('unreadable', () => log.unreadable() !== undefined);
  const first = log.unreadable();
  assert.match(first?.error ?? '', /Broker transport failure/);
  assert.ok((first?.sinceMs ?? 0) >= before - 50);
  await new Promise((r) => setTimeout(r, 300)); // more failures: the time of the first stays
  assert.equal(log.unreadable()?.sinceMs, first?.sinceMs);
  mode = 'ok';
  await until('readable again', () => log.unreadable() === undefined);
  // A read that does not answer for twice its bound (100 ms here) says so before it fails.
  mode = 'hang';
  await until('a read in flight', () => release !== undefined);
  await until('stuck', () => log.unreadable() !== undefined);
  assert.match(log.unreadable()?.error ?? '', /has not answered/);
  mode = 'ok';
  release?.();
  await until('answered', () => log.unreadable() === undefined);
});
