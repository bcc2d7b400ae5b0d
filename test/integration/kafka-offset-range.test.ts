/**
 * Where the sink's consumer starts, against the stack's broker (review O6, src/consume/offset-range.ts):
 * a group with no committed offset reads every partition from its earliest offset; a committed offset
 * below the log start (records deleted, here by DeleteRecords as retention would) or beyond its end (the
 * topic recreated) fails `poll()` with a FatalError naming the partition, the offset, the log's range and
 * the way out, instead of librdkafka's silent reset; a user's auto.offset.reset applies and the skipped
 * records are logged; a position that leaves the log while the consumer runs fails the same way, and a
 * partition librdkafka then stops fetching is caught by the stall check. Every record read is counted by
 * its coordinates.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RdKafka } from '@confluentinc/kafka-javascript';
import { FatalError, RetriableError } from '../../src/core/errors.ts';
import { SILENT_LOGGER } from '../../src/core/log.ts';
import type { Logger } from '../../src/core/log.ts';
import { ConfluentKafkaSource } from '../../src/consume/confluent/index.ts';
import type { SourceOptions } from '../../src/consume/confluent/index.ts';
import type { RawRecord, RebalanceListener } from '../../src/consume/port.ts';
import { FAST_GROUP, kafkaSettings, pollUntil, produce, sleep, unique, withTopics } from '../helpers/kafka.ts';

const NO_LISTENER: RebalanceListener = { onAssigned: () => undefined, onRevoked: () => undefined };

const at = (records: readonly RawRecord[]): string[] => records.map((r) => `${r.partition}@${r.offset}`).sort();
const range = (partition: number, from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => `${partition}@${from + i}`);

/** DeleteRecords through the client's admin API (what retention does to the log start). */
async function deleteRecordsBefore(topic: string, partition: number, offset: number): Promise<void> {
  const admin = RdKafka.AdminClient.create({ ...(await kafkaSettings()) });
  try {
    await new Promise<void>((resolve, reject) => admin.deleteRecords([{ topic, partition, offset }], { operationTimeout: 10_000 }, (err) => (err ? reject(err) : resolve())));
  } finally {
    admin.disconnect();
  }
}

async function connect(t: { after(fn: () => Promise<void>): void }, groupId: string, extra: Partial<SourceOptions> = {}): Promise<ConfluentKafkaSource> {
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), overrides: FAST_GROUP, groupId, ...extra });
  t.after(() => source.close().catch(() => undefined));
  return source;
}

async function pollFails(source: ConfluentKafkaSource, pattern: RegExp, deadlineMs = 20_000): Promise<string> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      const got = await source.poll({ maxRecords: 100, timeoutMs: 200 });
      assert.deepEqual(at(got), [], 'no record is returned from a partition outside its log');
    } catch (e) {
      assert.ok(e instanceof FatalError, `a FatalError, got ${String(e)}`);
      assert.match(e.message, pattern);
      assert.match(e.message, /kafka-consumer-groups --reset-offsets\).*auto\.offset\.reset=earliest/, 'the way out');
      return e.message;
    }
    if (Date.now() > end) assert.fail(`poll did not fail within ${deadlineMs} ms`);
  }
}

test('KafkaSource start positions: earliest without a committed offset; outside the log a FatalError naming partition, offset and range, unless a reset is configured', async (t) => {
  const topic = unique('src-range');
  const admin = await withTopics(t, [{ name: topic, partitions: 2 }]);
  await produce(Array.from({ length: 20 }, (_, i) => ({ topic, partition: i % 2, value: `v${i}` }))); // 10 per partition
  await deleteRecordsBefore(topic, 0, 4); // partition 0 now holds 4..9
  const [deleted, ahead, configured] = [unique('connect-deleted'), unique('connect-ahead'), unique('connect-configured')];
  await admin.commitGroupOffsets(deleted, [{ topic, partition: 0, offset: 2n, metadata: null }, { topic, partition: 1, offset: 5n, metadata: null }]);
  await admin.commitGroupOffsets(ahead, [{ topic, partition: 0, offset: 50n, metadata: null }]);
  await admin.commitGroupOffsets(configured, [{ topic, partition: 0, offset: 2n, metadata: null }]);

  // A new group reads everything the log still holds, from the earliest offset of each partition.
  const fresh = await connect(t, unique('connect-fresh'));
  await fresh.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  const all = await pollUntil(fresh, (g) => g.length >= 16);
  await sleep(300);
  all.push(...(await fresh.poll({ maxRecords: 100, timeoutMs: 200 })));
  assert.deepEqual(at(all), [...range(0, 4, 10), ...range(1, 0, 10)].sort());

  // Committed below the log start: records 2 and 3 were never read. No silent jump.
  const below = await connect(t, deleted);
  await below.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  await pollFails(below, new RegExp(`${topic}\\[0\\]: the group's committed offset 2 is outside the log, which holds offsets 4 to 9 \\(high watermark 10\\): records 2 to 3 were deleted`));

  // Committed beyond the end (as after the topic was deleted and recreated).
  const beyond = await connect(t, ahead);
  await beyond.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  await pollFails(beyond, new RegExp(`${topic}\\[0\\]: the group's committed offset 50 is outside the log, which holds offsets 4 to 9 .*beyond the end of the log`));

  // The user's auto.offset.reset applies to out-of-range too, and says what was skipped.
  const warnings: string[] = [];
  const log: Logger = { ...SILENT_LOGGER, warn: (message, fields) => void warnings.push(`${message} ${JSON.stringify(fields)}`) };
  const reset = await connect(t, configured, { overrides: { ...FAST_GROUP, 'auto.offset.reset': 'earliest' }, log });
  await reset.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  const after = await pollUntil(reset, (g) => g.length >= 16);
  assert.deepEqual(at(after), [...range(0, 4, 10), ...range(1, 0, 10)].sort());
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0] ?? '', new RegExp(`records 2 to 3 were deleted before the sink read them; auto.offset.reset=earliest continues at offset 4.*"partition":"${topic}\\[0\\]"`));
});

test('KafkaSource: a position that leaves the log while the consumer runs fails; librdkafka then stops the partition, and the stall check says so again', async (t) => {
  const topic = unique('src-lag');
  await withTopics(t, [{ name: topic, partitions: 1 }]);
  await produce(Array.from({ length: 10 }, (_, i) => ({ topic, partition: 0, value: `a${i}` })));
  const source = await connect(t, unique('connect-lag'), { stallCheckMs: 1_000 });
  await source.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  assert.deepEqual(at(await pollUntil(source, (g) => g.length >= 10)), range(0, 0, 10));
  // The consumer falls behind: its partition is paused while more records come and retention removes some.
  source.pause([{ topic, partition: 0 }]);
  await produce(Array.from({ length: 10 }, (_, i) => ({ topic, partition: 0, value: `b${i}` })));
  await deleteRecordsBefore(topic, 0, 15);
  source.resume([{ topic, partition: 0 }]);
  const pattern = new RegExp(`${topic}\\[0\\]: the consumer's position 10 is outside the log, which holds offsets 15 to 19 \\(high watermark 20\\): records 10 to 14 were deleted`);
  await pollFails(source, pattern);
  // The error was delivered once; librdkafka fetches the partition no more. Polling on is never silent.
  await sleep(1_100);
  await pollFails(source, pattern);
});

test('KafkaSource: a start that could not be decided (committed offsets unavailable for a moment) costs one retriable poll; the new partitions are then read from their start', async (t) => {
  const topic = unique('src-transient');
  await withTopics(t, [{ name: topic, partitions: 2 }]);
  await produce(Array.from({ length: 10 }, (_, i) => ({ topic, partition: i % 2, value: `v${i}` })));
  const source = await connect(t, unique('connect-transient'));
  // The group coordinator does not answer the first committed-offsets request (as while it loads).
  const committed = source.committed.bind(source);
  let fail = true;
  source.committed = async (tps, timeoutMs) => {
    if (!fail) return committed(tps, timeoutMs);
    fail = false;
    throw new RetriableError('Kafka committed failed: the coordinator is loading (test)');
  };
  await source.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  const errors: unknown[] = [];
  const got: RawRecord[] = [];
  const end = Date.now() + 20_000;
  while (got.length < 10 && Date.now() < end) {
    try {
      got.push(...(await source.poll({ maxRecords: 100, timeoutMs: 200 })));
    } catch (e) {
      errors.push(e);
    }
  }
  // Assigned without a decided start, librdkafka's `error` reset stops the partitions; they are assigned
  // again at their earliest offsets rather than failing the task or skipping anything.
  assert.deepEqual(errors.map((e) => (e instanceof RetriableError ? 'retriable' : String(e))), ['retriable']);
  assert.deepEqual(at(got), [...range(0, 0, 5), ...range(1, 0, 5)].sort());
});
