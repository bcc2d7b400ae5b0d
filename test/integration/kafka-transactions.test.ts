/**
 * The commit cycle's Kafka transaction against the stack's broker: control-topic records and the source
 * offsets (sendOffsetsToTransaction with the consumer's group metadata) become visible together on
 * commit and not at all on abort; a second producer with the same transactional.id fences the first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfluentControlTopicReader, ConfluentKafkaSource, ConfluentTransactionalProducer } from '../../src/consume/confluent/index.ts';
import { FatalError } from '../../src/core/errors.ts';
import { isFenced } from '../../src/consume/port.ts';
import type { RebalanceListener } from '../../src/consume/port.ts';
import { FAST_GROUP, kafkaSettings, pollUntil, produce, readUntil, text, unique, withTopics } from '../helpers/kafka.ts';

const NO_LISTENER: RebalanceListener = { onAssigned: () => undefined, onRevoked: () => undefined };
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

test('transaction: commit makes the announcement and the group offsets visible together; abort makes neither', async (t) => {
  const topic = unique('tx-src');
  const control = unique('tx-control');
  await withTopics(t, [{ name: topic, partitions: 1 }, { name: control, partitions: 1 }]);
  const settings = await kafkaSettings();
  await produce(Array.from({ length: 5 }, (_, i) => ({ topic, partition: 0, value: `c${i}` })));

  const groupId = unique('connect-tx');
  const source = await ConfluentKafkaSource.connect({ settings, overrides: FAST_GROUP, groupId });
  t.after(() => source.close());
  const producer = await ConfluentTransactionalProducer.connect({ settings, transactionalId: unique('tx-task-0') });
  t.after(() => producer.close());
  const reader = await ConfluentControlTopicReader.connect({ settings });
  t.after(() => reader.close());
  await producer.initTransactions();
  await source.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  const tp = { topic, partition: 0 };

  // Cycle 1: consume 5, announce, commit offsets 5 in the same transaction.
  assert.equal((await pollUntil(source, (g) => g.length >= 5)).length, 5);
  await producer.beginTransaction();
  await producer.send([{ topic: control, key: 'task-0', value: utf8('announce cycle 1') }]);
  await producer.sendOffsetsToTransaction([{ ...tp, offset: 5n }], source.groupMetadata());
  await producer.commitTransaction();
  assert.deepEqual((await source.committed([tp])).map((c) => c.offset), [5n]);
  const afterCommit = await readUntil(reader, [{ topic: control, partition: 0, offset: 0n }], 1);
  assert.deepEqual(afterCommit.records.map((r) => text(r.value)), ['announce cycle 1']);

  // Cycle 2: consume 3 more, announce, send offsets 8, abort.
  await produce(Array.from({ length: 3 }, (_, i) => ({ topic, partition: 0, value: `d${i}` })));
  assert.deepEqual((await pollUntil(source, (g) => g.length >= 3)).map((r) => r.offset), [5n, 6n, 7n]);
  await producer.beginTransaction();
  await producer.send([{ topic: control, key: 'task-0', value: utf8('announce cycle 2 (aborted)') }]);
  await producer.sendOffsetsToTransaction([{ ...tp, offset: 8n }], source.groupMetadata());
  await producer.abortTransaction();
  assert.deepEqual((await source.committed([tp])).map((c) => c.offset), [5n], 'an aborted transaction commits no offsets');
  const afterAbort = await reader.read([{ topic: control, partition: 0, offset: 0n }]);
  assert.deepEqual(afterAbort.records.map((r) => text(r.value)), ['announce cycle 1'], 'an aborted announcement is never visible');

  // The abort rule: rewind to the committed offset and re-read the aborted cycle's records.
  await source.rewindToCommitted();
  assert.deepEqual((await pollUntil(source, (g) => g.length >= 3)).map((r) => `${text(r.value)}@${r.offset}`), ['d0@5', 'd1@6', 'd2@7']);
});

test('fencing: a second producer with the same transactional.id fences the first; the zombie\'s records never become visible', async (t) => {
  const control = unique('fence-control');
  await withTopics(t, [{ name: control, partitions: 1 }]);
  const settings = await kafkaSettings();
  const transactionalId = unique('fence-task-0');
  const first = await ConfluentTransactionalProducer.connect({ settings, transactionalId });
  t.after(() => first.close());
  await first.initTransactions();
  await first.beginTransaction();
  await first.send([{ topic: control, key: 'task-0', value: utf8('zombie, in flight') }]);

  // The restarted task: same transactional.id. initTransactions bumps the epoch and aborts the open transaction.
  const second = await ConfluentTransactionalProducer.connect({ settings, transactionalId });
  t.after(() => second.close());
  await second.initTransactions();

  await assert.rejects(first.commitTransaction(), (e: unknown) => {
    assert.ok(e instanceof FatalError, `expected FatalError, got ${String(e)}`);
    assert.ok(isFenced(e), `expected a fenced error, got ${JSON.stringify((e as FatalError).context)}`);
    return true;
  });
  assert.equal(first.fenced, true);
  // Every later call of the zombie is fenced as well, it can never start a new transaction.
  await assert.rejects(first.beginTransaction().then(() => first.send([{ topic: control, key: 'task-0', value: utf8('zombie again') }])).then(() => first.commitTransaction()), (e: unknown) => isFenced(e));

  await second.beginTransaction();
  await second.send([{ topic: control, key: 'task-0', value: utf8('live') }]);
  await second.commitTransaction();

  const reader = await ConfluentControlTopicReader.connect({ settings });
  t.after(() => reader.close());
  const read = await reader.read([{ topic: control, partition: 0, offset: 0n }]);
  assert.deepEqual(read.records.map((r) => text(r.value)), ['live']);
});
