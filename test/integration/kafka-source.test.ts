/**
 * The confluent KafkaSource against the stack's broker: exact batch consumption with manual offsets only,
 * pause/resume/seek, regex subscriptions, and cooperative rebalance callbacks whose async revoke work
 * (including a transactional commit) finishes before the partitions reach the other member.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfluentKafkaSource, ConfluentTransactionalProducer } from '../../src/consume/confluent/index.ts';
import type { RawRecord, RebalanceListener, TopicPartition } from '../../src/consume/port.ts';
import { FAST_GROUP, kafkaSettings, pollUntil, produce, sleep, text, unique, withTopics } from '../helpers/kafka.ts';

const NO_LISTENER: RebalanceListener = { onAssigned: () => undefined, onRevoked: () => undefined };

function coords(records: readonly RawRecord[]): string[] {
  return records.map((r) => `${r.topic}/${r.partition}/${r.offset}/${text(r.value)}`).sort();
}

test('KafkaSource: consumes a produced batch exactly, with keys, headers and timestamps; commits nothing on its own', async (t) => {
  const topic = unique('src-exact');
  await withTopics(t, [{ name: topic, partitions: 2 }]);
  const produced = Array.from({ length: 20 }, (_, i) => ({ topic, partition: i % 2, key: `k${i}`, value: `v${i}`, headers: { h: `x${i}` } }));
  await produce(produced);

  const groupId = unique('connect-exact');
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), overrides: FAST_GROUP, groupId });
  t.after(() => source.close());
  await source.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  const got = await pollUntil(source, (g) => g.length >= 20);
  await sleep(300);
  got.push(...(await source.poll({ maxRecords: 100, timeoutMs: 200 })));

  assert.equal(got.length, 20, 'no record twice, none missing');
  const expected = produced.map((r, i) => `${topic}/${r.partition}/${Math.floor(i / 2)}/v${i}`).sort();
  assert.deepEqual(coords(got), expected);
  for (const r of got) {
    assert.equal(typeof r.offset, 'bigint');
    assert.ok(r.value instanceof Uint8Array);
    const i = Number(text(r.value)?.slice(1));
    assert.equal(text(r.key), `k${i}`);
    assert.deepEqual(r.headers.map((h) => [h.key, text(h.value)]), [['h', `x${i}`]]);
    assert.ok(r.timestamp !== null && Math.abs(r.timestamp - Date.now()) < 60_000);
  }
  // Per partition in offset order.
  for (const p of [0, 1]) {
    const offsets = got.filter((r) => r.partition === p).map((r) => r.offset);
    assert.deepEqual(offsets, [...offsets].sort((a, b) => (a < b ? -1 : 1)));
  }
  const tps: TopicPartition[] = [{ topic, partition: 0 }, { topic, partition: 1 }];
  assert.deepEqual(source.assignment().map((p) => p.partition).sort(), [0, 1]);
  assert.deepEqual(source.position(tps).map((p) => p.offset), [10n, 10n]);
  // Manual offsets only: nothing was committed by reading.
  assert.deepEqual((await source.committed(tps)).map((c) => c.offset), [null, null]);
});

test('KafkaSource: pause holds a partition back, resume releases it, seek re-reads from an offset', async (t) => {
  const topic = unique('src-pause');
  await withTopics(t, [{ name: topic, partitions: 2 }]);
  await produce(Array.from({ length: 6 }, (_, i) => ({ topic, partition: i % 2, value: `a${i}` })));
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), overrides: FAST_GROUP, groupId: unique('connect-pause') });
  t.after(() => source.close());
  await source.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  await pollUntil(source, (g) => g.length >= 6);

  source.pause([{ topic, partition: 0 }]);
  await produce(Array.from({ length: 6 }, (_, i) => ({ topic, partition: i % 2, value: `b${i}` })));
  const whilePaused = await pollUntil(source, (g) => g.length >= 3);
  await sleep(500);
  whilePaused.push(...(await source.poll({ maxRecords: 100, timeoutMs: 300 })));
  assert.deepEqual(whilePaused.map((r) => r.partition), [1, 1, 1], 'a paused partition returns nothing');

  source.resume([{ topic, partition: 0 }]);
  const resumed = await pollUntil(source, (g) => g.length >= 3);
  assert.deepEqual(resumed.map((r) => `${r.partition}@${r.offset}`), ['0@3', '0@4', '0@5']);

  await source.seek({ topic, partition: 1, offset: 1n });
  const reread = await pollUntil(source, (g) => g.length >= 5);
  assert.deepEqual(reread.map((r) => `${r.partition}@${r.offset}`), ['1@1', '1@2', '1@3', '1@4', '1@5']);
});

test('KafkaSource: topics.regex matches whole topic names only', async (t) => {
  const prefix = unique('src-rx');
  const a = `${prefix}-a`;
  const b = `${prefix}-b`;
  const other = `${prefix}-a-not`;
  await withTopics(t, [{ name: a, partitions: 1 }, { name: b, partitions: 1 }, { name: other, partitions: 1 }]);
  await produce([{ topic: a, partition: 0, value: 'a' }, { topic: b, partition: 0, value: 'b' }, { topic: other, partition: 0, value: 'other' }]);
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), overrides: FAST_GROUP, groupId: unique('connect-rx') });
  t.after(() => source.close());
  await source.subscribe({ kind: 'regex', pattern: `${prefix}-[ab]` }, NO_LISTENER);
  const got = await pollUntil(source, (g) => g.length >= 2);
  await sleep(500);
  got.push(...(await source.poll({ maxRecords: 100, timeoutMs: 300 })));
  assert.deepEqual(got.map((r) => text(r.value)).sort(), ['a', 'b']);
});

test('KafkaSource: cooperative rebalance; onRevoked commits its cycle and finishes before the other member gets the partitions', async (t) => {
  const topic = unique('src-rebalance');
  const control = unique('src-rebalance-control');
  await withTopics(t, [{ name: topic, partitions: 4 }, { name: control, partitions: 1 }]);
  await produce(Array.from({ length: 40 }, (_, i) => ({ topic, partition: i % 4, value: `r${i}` })));
  const settings = await kafkaSettings();
  const groupId = unique('connect-rebalance');
  const log: string[] = [];
  const at = (what: string): void => void log.push(`${Date.now()} ${what}`);

  const a = await ConfluentKafkaSource.connect({ settings, overrides: FAST_GROUP, groupId });
  t.after(() => a.close());
  const producerA = await ConfluentTransactionalProducer.connect({ settings, transactionalId: unique('rebalance-task-0') });
  t.after(() => producerA.close());
  await producerA.initTransactions();

  let aAssigned: TopicPartition[] = [];
  let aRevoked: TopicPartition[] = [];
  let revokeDoneAt = 0;
  let committedInRevoke: { partition: number; offset: bigint }[] = [];
  await a.subscribe({ kind: 'list', topics: [topic] }, {
    onAssigned: (ps) => {
      aAssigned = [...aAssigned, ...ps];
      at(`A assigned ${ps.map((p) => p.partition).join(',')}`);
    },
    onRevoked: async (ps, info) => {
      if (revokeDoneAt !== 0) return; // only the first revoke runs a cycle (close() revokes the rest)
      at(`A revoke start ${ps.map((p) => p.partition).join(',')} lost=${info.lost}`);
      aRevoked = [...aRevoked, ...ps];
      assert.equal(info.lost, false);
      // The revocation rule: finish the cycle for the revoked partitions before returning. The group
      // generation is still current, so a transactional offset commit must succeed here.
      const positions = a.position(ps).filter((p) => p.offset !== null) as { topic: string; partition: number; offset: bigint }[];
      await producerA.beginTransaction();
      await producerA.send([{ topic: control, key: 'task-0', value: new TextEncoder().encode(`revoke ${ps.map((p) => p.partition).join(',')}`) }]);
      await producerA.sendOffsetsToTransaction(positions, a.groupMetadata());
      await producerA.commitTransaction();
      committedInRevoke = positions.map((p) => ({ partition: p.partition, offset: p.offset }));
      await sleep(1500); // slow revoke work: the other member must still wait
      revokeDoneAt = Date.now();
      at('A revoke done');
    },
  });
  const firstRead = await pollUntil(a, (g) => g.length >= 40);
  assert.equal(firstRead.length, 40);
  assert.deepEqual(aAssigned.map((p) => p.partition).sort(), [0, 1, 2, 3]);

  const b = await ConfluentKafkaSource.connect({ settings, overrides: FAST_GROUP, groupId });
  t.after(() => b.close());
  const bAssigned: { partition: number; at: number }[] = [];
  await b.subscribe({ kind: 'list', topics: [topic] }, {
    onAssigned: (ps) => {
      for (const p of ps) bAssigned.push({ partition: p.partition, at: Date.now() });
      at(`B assigned ${ps.map((p) => p.partition).join(',')}`);
    },
    onRevoked: () => undefined,
  });
  // Both members poll concurrently until B holds partitions and A's revoke finished.
  const end = Date.now() + 20_000;
  const bRecords: RawRecord[] = [];
  let stopA = false;
  const loopA = (async () => {
    while (!stopA) await a.poll({ maxRecords: 100, timeoutMs: 100 });
  })();
  while ((bAssigned.length === 0 || revokeDoneAt === 0) && Date.now() < end) {
    bRecords.push(...(await b.poll({ maxRecords: 100, timeoutMs: 100 })));
  }
  stopA = true;
  await loopA;
  assert.ok(bAssigned.length > 0, `B never got partitions: ${log.join(' | ')}`);

  // Cooperative: A lost only what moved to B and kept the rest without being revoked.
  assert.deepEqual(bAssigned.map((p) => p.partition).sort(), aRevoked.map((p) => p.partition).sort(), log.join(' | '));
  assert.equal(aRevoked.length, 2);
  assert.deepEqual(a.assignment().map((p) => p.partition).sort(), [0, 1, 2, 3].filter((p) => !aRevoked.some((r) => r.partition === p)));
  // The handover waited for the revoke's async work.
  for (const p of bAssigned) assert.ok(p.at >= revokeDoneAt, `B got ${p.partition} at ${p.at}, before A's revoke finished at ${revokeDoneAt}: ${log.join(' | ')}`);
  // B resumes exactly where A's revoke-time transaction committed: nothing is read twice.
  const bOffsets = await b.committed(bAssigned.map((p) => ({ topic, partition: p.partition })));
  assert.deepEqual(bOffsets.map((c) => c.offset), bAssigned.map(() => 10n));
  assert.deepEqual(committedInRevoke.map((c) => c.offset), [10n, 10n]);
  await produce([{ topic, partition: bAssigned[0]?.partition ?? 0, value: 'after' }]);
  const more = await pollUntil(b, (g) => bRecords.length + g.length >= 1);
  assert.deepEqual([...bRecords, ...more].map((r) => `${text(r.value)}@${r.offset}`), ['after@10']);
});

test('KafkaSource: the consume issued ahead: position, pause, seek and a smaller maxRecords see only what poll returned; every offset once, in order', async (t) => {
  const topic = unique('src-ahead');
  await withTopics(t, [{ name: topic, partitions: 2 }]);
  const perPartition = 120;
  await produce(Array.from({ length: 2 * perPartition }, (_, i) => ({ topic, partition: i % 2, value: `v${i}` })));
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), overrides: FAST_GROUP, groupId: unique('connect-ahead') });
  t.after(() => source.close());
  await source.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  const tp0 = { topic, partition: 0 };
  const tp1 = { topic, partition: 1 };
  const got: RawRecord[] = [];
  const take = async (maxRecords: number): Promise<RawRecord[]> => {
    const batch = await source.poll({ maxRecords, timeoutMs: 200 });
    assert.ok(batch.length <= maxRecords, `at most ${maxRecords} records, got ${batch.length}`);
    got.push(...batch);
    return batch;
  };
  const next = (partition: number): bigint | null => {
    const mine = got.filter((r) => r.partition === partition);
    return mine.length === 0 ? null : (mine.at(-1) as RawRecord).offset + 1n;
  };
  // Small batches while the client holds everything fetched: each poll leaves a consume of 10 more ahead.
  while (got.length === 0) await take(10);
  await sleep(500);
  await take(10);
  await sleep(300); // the consume ahead has settled: the client's own position is 10 records further
  assert.deepEqual(source.position([tp0, tp1]).map((p) => p.offset), [next(0), next(1)], 'position: the first offset not returned, not how far the client read ahead');

  // Paused after a poll: what was read ahead of it is not returned, and comes after the resume. The
  // partition of the last record returned is the one the consume ahead most likely went on reading.
  await take(10);
  await sleep(300);
  const held = { topic, partition: (got.at(-1) as RawRecord).partition };
  source.pause([held]);
  const heldBefore = got.filter((r) => r.partition === held.partition).length;
  for (let i = 0; i < 4; i++) await take(10);
  assert.equal(got.filter((r) => r.partition === held.partition).length, heldBefore, 'a paused partition returns nothing, read ahead or not');
  source.resume([held]);

  // Sought after a poll: the next record of the partition is the one sought.
  await take(10);
  const seekTo = (next(1) ?? 0n) > 3n ? (next(1) as bigint) - 3n : 0n;
  await source.seek({ ...tp1, offset: seekTo });
  got.splice(0, got.length, ...got.filter((r) => r.partition !== 1 || r.offset < seekTo));
  const afterSeek: RawRecord[] = [];
  while (!afterSeek.some((r) => r.partition === 1)) afterSeek.push(...(await take(10)));
  assert.equal(afterSeek.find((r) => r.partition === 1)?.offset, seekTo, 'after a seek the partition goes on from the offset sought');

  // Fewer records asked for than the consume ahead took: the rest is given back, not lost.
  await take(10);
  await sleep(200);
  await take(2);
  const end = Date.now() + 15_000;
  while (got.length < 2 * perPartition && Date.now() < end) await take(50);
  await sleep(300);
  await take(50); // nothing more: none twice
  for (const partition of [0, 1]) {
    const offsets = got.filter((r) => r.partition === partition).map((r) => Number(r.offset));
    assert.deepEqual(offsets, Array.from({ length: perPartition }, (_, i) => i), `partition ${partition}: every offset once, in order`);
  }
});
