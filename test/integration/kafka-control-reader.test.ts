/**
 * The committer's Kafka side against the stack's broker: ControlTopicReader reads from given positions up
 * to the last stable offset and never returns aborted or open transactions' records, refuses a position
 * outside the log, reads a byte-bounded prefix when asked; the admin adapter creates topics idempotently and reports the cluster id (checked
 * against the broker's own meta.properties), the topic id (new when a topic is recreated) and watermarks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfluentControlTopicReader, ConfluentKafkaAdmin, ConfluentTransactionalProducer } from '../../src/consume/confluent/index.ts';
import { FatalError } from '../../src/core/errors.ts';
import { kafkaSettings, produce, readUntil, text, unique, withTopics } from '../helpers/kafka.ts';
import { stackEndpoints } from '../helpers/stack.ts';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

test('ControlTopicReader: from given positions to the LSO; aborted and open transactions are never returned', async (t) => {
  const control = unique('ctl');
  const admin = await withTopics(t, [{ name: control, partitions: 2 }]);
  /** send() only queues (and an abort purges what is still queued): wait until the log has `high` offsets. */
  const landed = async (partition: number, high: bigint): Promise<void> => {
    for (let i = 0; i < 100; i++) {
      if ((await admin.watermarks(control))[partition]?.high === high) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${control}[${partition}] never reached high watermark ${high}`);
  };
  const settings = await kafkaSettings();
  const producer = await ConfluentTransactionalProducer.connect({ settings, transactionalId: unique('ctl-task-0') });
  t.after(() => producer.close());
  await producer.initTransactions();
  const cycle = async (values: string[], partition: number, outcome: 'commit' | 'abort', high: bigint): Promise<void> => {
    await producer.beginTransaction();
    await producer.send(values.map((v) => ({ topic: control, partition, key: 'task-0', value: utf8(v) })));
    await landed(partition, high);
    if (outcome === 'commit') await producer.commitTransaction();
    else await producer.abortTransaction();
  };
  await cycle(['p0-a', 'p0-b'], 0, 'commit', 2n); // offsets 0,1 + marker 2
  await cycle(['p0-aborted'], 0, 'abort', 4n); // offset 3 (in the log) + abort marker 4
  await cycle(['p0-c'], 0, 'commit', 6n); // offset 5 + marker 6
  await cycle(['p1-a'], 1, 'commit', 1n); // offset 0 + marker 1

  const reader = await ConfluentControlTopicReader.connect({ settings });
  t.after(() => reader.close());
  const all = await readUntil(reader, [{ topic: control, partition: 0, offset: 0n }, { topic: control, partition: 1, offset: 0n }], 4);
  // Order is guaranteed within a partition only (the committer keeps positions per partition).
  for (const p of [0, 1]) {
    const offsets = all.records.filter((r) => r.partition === p).map((r) => r.offset);
    assert.deepEqual(offsets, [...offsets].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), `partition ${p} in offset order`);
  }
  const byPartition = [...all.records].sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : 1));
  assert.deepEqual(byPartition.map((r) => `${r.partition}/${r.offset}/${text(r.value)}`), ['0/0/p0-a', '0/1/p0-b', '0/5/p0-c', '1/0/p1-a']);
  assert.deepEqual(all.endOffsets.map((e) => [e.partition, e.offset]), [[0, 7n], [1, 2n]]);

  // From a stored position (the committer's "next offset after the last applied"): only what follows.
  const tail = await reader.read([{ topic: control, partition: 0, offset: 2n }]);
  assert.deepEqual(tail.records.map((r) => `${r.offset}/${text(r.value)}`), ['5/p0-c']);
  // At the end: nothing, immediately.
  const none = await reader.read([{ topic: control, partition: 0, offset: 7n }]);
  assert.deepEqual(none.records, []);
  assert.deepEqual(none.endOffsets.map((e) => e.offset), [7n]);

  // An open transaction holds the LSO back: its record and everything after it stay invisible.
  const other = await ConfluentTransactionalProducer.connect({ settings, transactionalId: unique('ctl-task-1') });
  t.after(() => other.close());
  await other.initTransactions();
  await other.beginTransaction();
  await other.send([{ topic: control, partition: 0, key: 'task-1', value: utf8('p0-open-by-1') }]); // offset 7
  await landed(0, 8n);
  await cycle(['p0-after-open'], 0, 'commit', 9n); // offset 8 + marker 9, committed but behind the open one
  const whileOpen = await reader.read([{ topic: control, partition: 0, offset: 7n }]);
  assert.deepEqual(whileOpen.records, [], 'nothing at or after an open transaction is read');
  assert.deepEqual(whileOpen.endOffsets.map((e) => e.offset), [7n]);
  await other.abortTransaction();
  const afterAbort = await readUntil(reader, [{ topic: control, partition: 0, offset: 7n }], 1);
  assert.deepEqual(afterAbort.records.map((r) => `${r.offset}/${text(r.value)}`), ['8/p0-after-open']);
  assert.deepEqual(afterAbort.endOffsets.map((e) => e.offset), [11n]);

  // A position outside the log fails closed.
  await assert.rejects(reader.read([{ topic: control, partition: 0, offset: 1000n }]), (e: unknown) => e instanceof FatalError);
});

test('admin: create-if-absent, cluster id, topic id (new on recreate), watermarks with the LSO', async (t) => {
  const topic = unique('adm');
  const settings = await kafkaSettings();
  const admin = await ConfluentKafkaAdmin.connect({ settings });
  t.after(async () => {
    await admin.deleteTopic(topic).catch(() => undefined);
    await admin.close();
  });
  assert.equal(await admin.ensureTopic({ name: topic, partitions: 3, replicationFactor: -1, configs: { 'retention.ms': String(7 * 24 * 3600 * 1000) } }), true);
  assert.equal(await admin.ensureTopic({ name: topic, partitions: 3, replicationFactor: -1 }), false);
  assert.equal(await admin.partitionCount(topic), 3);

  const meta = readFileSync(join(stackEndpoints().run, 'data', 'kafka-1', 'log', 'meta.properties'), 'utf8');
  const expected = /^cluster\.id=(.+)$/m.exec(meta)?.[1];
  assert.equal(await admin.clusterId(), expected);

  const id1 = await admin.topicId(topic);
  assert.match(id1, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.equal(await admin.topicId(topic), id1);

  const producer = await ConfluentTransactionalProducer.connect({ settings, transactionalId: unique('adm-task') });
  t.after(() => producer.close());
  await producer.initTransactions();
  await producer.beginTransaction();
  await producer.send([{ topic, partition: 0, key: null, value: utf8('open') }]);
  // send() only queues; wait until the open transaction's record reached the log.
  let marks = await admin.watermarks(topic);
  for (let i = 0; i < 50 && marks[0]?.high !== 1n; i++) {
    await new Promise((r) => setTimeout(r, 100));
    marks = await admin.watermarks(topic);
  }
  assert.deepEqual(marks.map((m) => [m.partition, m.low, m.high, m.lastStable]), [[0, 0n, 1n, 0n], [1, 0n, 0n, 0n], [2, 0n, 0n, 0n]]);
  await producer.commitTransaction();
  // EndTxn returns once the coordinator has logged the commit; it writes the partition's commit marker
  // afterwards, so the high watermark and LSO reach 2 shortly after: poll, bounded.
  let after = await admin.watermarks(topic);
  for (let i = 0; i < 50 && (after[0]?.high !== 2n || after[0]?.lastStable !== 2n); i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await admin.watermarks(topic);
  }
  assert.deepEqual(after.map((m) => [m.partition, m.high, m.lastStable]), [[0, 2n, 2n], [1, 0n, 0n], [2, 0n, 0n]]);

  // Recreated topic: a new id (what the committer's fail-closed identity check relies on).
  await admin.deleteTopic(topic);
  for (let i = 0; i < 40; i++) {
    if (await admin.ensureTopic({ name: topic, partitions: 1, replicationFactor: -1 }).catch(() => false)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.notEqual(await admin.topicId(topic), id1);
});

test('ControlTopicReader: a byte-bounded read returns a prefix and where it stopped; reads from there cover the log once', async (t) => {
  const control = unique('ctl-bounded');
  await withTopics(t, [{ name: control, partitions: 1 }]);
  const value = 'x'.repeat(10_000);
  await produce(Array.from({ length: 60 }, (_, i) => ({ topic: control, partition: 0, key: `k${i}`, value: `${i}:${value}` })));
  const reader = await ConfluentControlTopicReader.connect({ settings: await kafkaSettings() });
  t.after(() => reader.close());
  let at = 0n;
  const seen: bigint[] = [];
  let reads = 0;
  while (at < 60n && reads < 100) {
    const got = await reader.read([{ topic: control, partition: 0, offset: at }], { maxBytes: 50_000 });
    reads++;
    const bytes = got.records.reduce((n, r) => n + (r.key?.byteLength ?? 0) + (r.value?.byteLength ?? 0), 0);
    assert.ok(got.records.length >= 1, 'a read always progresses');
    assert.ok(bytes < 50_000 + 10_100, `within the bound plus the record crossing it: ${bytes}`);
    seen.push(...got.records.map((r) => r.offset));
    const end = got.endOffsets[0]?.offset ?? at;
    assert.equal(end, (got.records.at(-1)?.offset ?? at - 1n) + 1n, 'stops just past the last record returned');
    at = end;
  }
  assert.ok(reads >= 12, `bounded reads (${reads})`);
  assert.deepEqual(seen, Array.from({ length: 60 }, (_, i) => BigInt(i)), 'every record once, in order');
});
