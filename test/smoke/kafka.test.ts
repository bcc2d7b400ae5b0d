/**
 * Smoke: the stack's Kafka broker is real and usable from Node through @confluentinc/kafka-javascript
 * (librdkafka): topics, an idempotent producer, a consumer group with committed offsets, and a
 * transaction read back under read_committed (the sink's exactly-once protocol needs all of them).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { KafkaJS } from '@confluentinc/kafka-javascript';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';

const { Kafka } = KafkaJS;

async function kafka(): Promise<InstanceType<typeof Kafka>> {
  const { kafkaBootstrap } = stackEndpoints();
  await requireReachable('Kafka', kafkaBootstrap);
  return new Kafka({ kafkaJS: { brokers: kafkaBootstrap.split(','), logLevel: KafkaJS.logLevel.ERROR } });
}

/** Consume until `want` messages arrived or the deadline passes. */
async function consumeN(
  consumer: KafkaJS.Consumer,
  want: number,
  deadlineMs = 30_000,
): Promise<{ value: string; offset: string; partition: number }[]> {
  const got: { value: string; offset: string; partition: number }[] = [];
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      got.push({ value: message.value?.toString('utf8') ?? '', offset: message.offset, partition });
      if (got.length >= want) resolveDone();
    },
  });
  const timer = setTimeout(resolveDone, deadlineMs);
  await done;
  clearTimeout(timer);
  return got;
}

test('Kafka: produce and consume through a consumer group, offsets committed', async (t) => {
  const k = await kafka();
  const topic = `smoke-${randomUUID()}`;
  const groupId = `smoke-group-${randomUUID()}`;
  const admin = k.admin();
  await admin.connect();
  t.after(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });
  await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1 }] });

  const producer = k.producer({ 'enable.idempotence': true, kafkaJS: { idempotent: true } });
  await producer.connect();
  const values = Array.from({ length: 10 }, (_, i) => `message-${i}`);
  await producer.send({ topic, messages: values.map((value, i) => ({ value, partition: i % 2 })) });
  await producer.disconnect();

  const consumer = k.consumer({ kafkaJS: { groupId, fromBeginning: true, autoCommit: false } });
  await consumer.connect();
  t.after(() => consumer.disconnect());
  await consumer.subscribe({ topics: [topic] });
  const got = await consumeN(consumer, values.length);
  assert.deepEqual(got.map((m) => m.value).sort(), [...values].sort());

  await consumer.commitOffsets([
    { topic, partition: 0, offset: '5' },
    { topic, partition: 1, offset: '5' },
  ]);
  // On a fresh broker the first commit also creates __consumer_offsets, and an offset fetch right after
  // it can answer empty while that partition loads: ask again for a few seconds before judging.
  let offsets: (string | number)[][] | undefined;
  for (let attempt = 0; attempt < 20; attempt++) {
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    offsets = committed[0]?.partitions.map((p) => [p.partition, p.offset]).sort();
    if (offsets?.length === 2) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.deepEqual(offsets, [
    [0, '5'],
    [1, '5'],
  ]);
});

test('Kafka: a committed transaction is visible under read_committed, an aborted one is not', async (t) => {
  const k = await kafka();
  const topic = `smoke-tx-${randomUUID()}`;
  const admin = k.admin();
  await admin.connect();
  t.after(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });

  const producer = k.producer({ kafkaJS: { transactionalId: `smoke-${randomUUID()}`, idempotent: true, maxInFlightRequests: 1 } });
  await producer.connect();
  t.after(() => producer.disconnect());
  const aborted = await producer.transaction();
  await aborted.send({ topic, messages: [{ value: 'aborted' }] });
  await aborted.abort();
  const committed = await producer.transaction();
  await committed.send({ topic, messages: [{ value: 'committed' }] });
  await committed.commit();

  const consumer = k.consumer({
    'isolation.level': 'read_committed',
    kafkaJS: { groupId: `smoke-tx-group-${randomUUID()}`, fromBeginning: true, autoCommit: false },
  });
  await consumer.connect();
  t.after(() => consumer.disconnect());
  await consumer.subscribe({ topics: [topic] });
  const got = await consumeN(consumer, 1);
  assert.deepEqual(got.map((m) => m.value), ['committed']);
  // The aborted record and both transaction markers occupy offsets 0..2: the committed record is at 2.
  assert.equal(got[0]?.offset, '2');
});
