/**
 * The in-memory Kafka (src/consume/memory/): each behaviour the task and committer loops rely on, as
 * the real broker and the confluent adapter show it — transaction visibility and markers, the last
 * stable offset, fencing by producer epoch, KIP-447 stale-generation aborts, cooperative rebalances
 * with awaited callbacks, lost partitions on a session timeout, rewinds, retention and the reader's
 * refusal to jump, admin identity, and fault injection.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, FatalError, RetriableError } from '../../../src/core/errors.ts';
import { SILENT_LOGGER } from '../../../src/core/log.ts';
import { GroupNotEmptyError, isFenced, requiresAbort } from '../../../src/consume/port.ts';
import type { ConsumerGroupMetadata, RawRecord, RebalanceListener, RevokeInfo, TopicPartition } from '../../../src/consume/port.ts';
import { MemoryKafka, appliedButFailed, timedOut } from '../../../src/consume/memory/index.ts';
import type { MemoryKafkaSource } from '../../../src/consume/memory/index.ts';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (v: Uint8Array | null): string | null => (v === null ? null : new TextDecoder().decode(v));
const tps = (ps: readonly TopicPartition[]): string => ps.map((p) => `${p.topic}[${p.partition}]`).join(',');
const at = (rs: readonly RawRecord[]): string[] => rs.map((r) => `${r.partition}@${r.offset}`);
const values = (rs: readonly RawRecord[]): (string | null)[] => rs.map((r) => text(r.value));
const NO_LISTENER: RebalanceListener = { onAssigned: () => undefined, onRevoked: () => undefined };

/** A listener that logs `<name> assigned|revoked|lost <partitions>` and runs optional hooks. */
function recorder(
  name: string,
  events: string[],
  hooks: { revoked?: (ps: readonly TopicPartition[], info: RevokeInfo) => Promise<void> | void; assigned?: (ps: readonly TopicPartition[]) => Promise<void> | void } = {},
): RebalanceListener {
  return {
    async onAssigned(ps) {
      events.push(`${name} assigned ${tps(ps)}`);
      await hooks.assigned?.(ps);
    },
    async onRevoked(ps, info) {
      events.push(`${name} ${info.lost ? 'lost' : 'revoked'} ${tps(ps)}`);
      await hooks.revoked?.(ps, info);
    },
  };
}

/** Polls until a poll returns nothing. */
async function drain(source: MemoryKafkaSource, maxRecords = 1000): Promise<RawRecord[]> {
  const out: RawRecord[] = [];
  for (;;) {
    const got = await source.poll({ maxRecords, timeoutMs: 0 });
    if (got.length === 0) return out;
    out.push(...got);
  }
}

/** Deterministic ids: 00000000-0000-4000-8000-000000000001, ...2, ... */
function counterIds(): () => string {
  let n = 0;
  return () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test('transactions: records stay invisible until commit; commit and abort markers take an offset and are never returned', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('ctl', 1);
  const reader = kafka.createControlReader();
  const producer = kafka.createProducer('conn-0');
  await producer.initTransactions();
  await producer.beginTransaction();
  const reused = utf8('a');
  await producer.send([{ topic: 'ctl', partition: 0, key: 't', value: reused }, { topic: 'ctl', partition: 0, key: 't', value: utf8('b') }]);
  reused.set(utf8('z')); // the broker keeps its own bytes

  const open = await reader.read([{ topic: 'ctl', partition: 0, offset: 0n }]);
  assert.deepEqual(open.records, [], 'an open transaction is invisible to read_committed');
  assert.deepEqual(open.endOffsets, [{ topic: 'ctl', partition: 0, offset: 0n }], 'the read stops at the LSO');
  assert.deepEqual(kafka.watermarks('ctl', 0), { topic: 'ctl', partition: 0, low: 0n, high: 2n, lastStable: 0n });

  await producer.commitTransaction();
  assert.deepEqual(kafka.watermarks('ctl', 0), { topic: 'ctl', partition: 0, low: 0n, high: 3n, lastStable: 3n }, 'the commit marker is offset 2');
  const committed = await reader.read([{ topic: 'ctl', partition: 0, offset: 0n }]);
  assert.deepEqual(values(committed.records), ['a', 'b']);
  assert.deepEqual(at(committed.records), ['0@0', '0@1']);
  assert.deepEqual(committed.endOffsets.map((e) => e.offset), [3n]);

  await producer.beginTransaction();
  await producer.send([{ topic: 'ctl', partition: 0, key: 't', value: utf8('c') }]);
  await producer.abortTransaction();
  const afterAbort = await reader.read([{ topic: 'ctl', partition: 0, offset: 3n }]);
  assert.deepEqual(afterAbort.records, [], 'aborted records are never returned');
  assert.deepEqual(afterAbort.endOffsets.map((e) => e.offset), [5n], 'the read passes the aborted record and its marker');
  assert.deepEqual(
    kafka.readPartition('ctl', 0).map((e) => `${e.offset}:${e.kind}:${e.state}:${e.record === null ? '' : text(e.record.value)}`),
    ['0:record:committed:a', '1:record:committed:b', '2:commit-marker:committed:', '3:record:aborted:c', '4:abort-marker:aborted:'],
  );
});

test('last stable offset: the earliest open transaction holds it back, whatever is appended or committed after it', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('ctl', 1);
  const reader = kafka.createControlReader();
  const [p1, p2] = [kafka.createProducer('t-1'), kafka.createProducer('t-2')];
  await p1.initTransactions();
  await p2.initTransactions();
  kafka.produce('ctl', 0, [{ value: 'x' }]);
  await p1.beginTransaction();
  await p1.send([{ topic: 'ctl', partition: 0, key: null, value: utf8('y') }]);
  kafka.produce('ctl', 0, [{ value: 'z' }]);
  await p2.beginTransaction();
  await p2.send([{ topic: 'ctl', partition: 0, key: null, value: utf8('w') }]);
  await p2.commitTransaction();
  assert.equal(kafka.watermarks('ctl', 0).lastStable, 1n, 'p1 opened at offset 1');
  const held = await reader.read([{ topic: 'ctl', partition: 0, offset: 0n }]);
  assert.deepEqual(values(held.records), ['x'], 'nothing past the LSO, not even committed or plain records');
  assert.deepEqual(held.endOffsets.map((e) => e.offset), [1n]);

  await p1.commitTransaction();
  assert.deepEqual(kafka.watermarks('ctl', 0), { topic: 'ctl', partition: 0, low: 0n, high: 6n, lastStable: 6n });
  const all = await reader.read([{ topic: 'ctl', partition: 0, offset: 1n }]);
  assert.deepEqual(values(all.records), ['y', 'z', 'w']);
  assert.deepEqual(all.endOffsets.map((e) => e.offset), [6n]);
});

test('fencing: initTransactions of a new incarnation aborts the old one\'s open transaction and fences every later call of the old epoch', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('ctl', 1);
  const zombie = kafka.createProducer('conn-0');
  await zombie.initTransactions();
  await zombie.beginTransaction();
  await zombie.send([{ topic: 'ctl', partition: 0, key: 'k', value: utf8('zombie') }]);
  assert.equal(kafka.watermarks('ctl', 0).lastStable, 0n);

  const live = kafka.createProducer('conn-0');
  await live.initTransactions();
  assert.equal(live.epoch, (zombie.epoch ?? -1) + 1);
  assert.deepEqual(kafka.readPartition('ctl', 0).map((e) => `${e.kind}:${e.state}`), ['record:aborted', 'abort-marker:aborted']);
  assert.equal(kafka.watermarks('ctl', 0).lastStable, 2n, 'the aborted transaction no longer holds the LSO back');

  await assert.rejects(zombie.commitTransaction(), (e: unknown) => isFenced(e) && e instanceof FatalError);
  assert.equal(zombie.fenced, true);
  await assert.rejects(zombie.beginTransaction(), (e: unknown) => isFenced(e), 'stays fenced');
  await assert.rejects(zombie.abortTransaction(), (e: unknown) => isFenced(e));

  await live.beginTransaction();
  await live.send([{ topic: 'ctl', partition: 0, key: 'k', value: utf8('live') }]);
  await live.commitTransaction();
  const read = await kafka.createControlReader().read([{ topic: 'ctl', partition: 0, offset: 0n }]);
  assert.deepEqual(values(read.records), ['live']);
});

test('producer state rules: nothing before initTransactions, send/commit/abort only inside a transaction, one transaction at a time', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('ctl', 1);
  const p = kafka.createProducer('conn-0');
  const stateError = (e: unknown): boolean => e instanceof FatalError && !isFenced(e) && e.context['reason'] === 'invalid-state';
  await assert.rejects(p.beginTransaction(), stateError);
  await p.initTransactions();
  await assert.rejects(p.initTransactions(), stateError);
  await assert.rejects(p.send([{ topic: 'ctl', partition: 0, key: null, value: utf8('x') }]), stateError);
  await assert.rejects(p.commitTransaction(), stateError);
  await assert.rejects(p.abortTransaction(), stateError);
  await p.beginTransaction();
  await assert.rejects(p.beginTransaction(), stateError);
  await assert.rejects(p.send([{ topic: 'nope', partition: 0, key: null, value: utf8('x') }]), (e: unknown) => e instanceof ConfigError);
  assert.equal(kafka.watermarks('ctl', 0).high, 0n, 'nothing was written outside a transaction');
  await p.commitTransaction();
  await p.close();
  await assert.rejects(p.beginTransaction(), stateError);
});

test('offsets: a commit makes them visible to the group, an abort discards them, and while open they are unstable', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 1);
  const tp = { topic: 'src', partition: 0 };
  const source = kafka.createSource({ groupId: 'connect-x' });
  await source.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  await source.poll({ maxRecords: 10, timeoutMs: 0 });
  const producer = kafka.createProducer('x-0');
  await producer.initTransactions();

  await producer.beginTransaction();
  await producer.sendOffsetsToTransaction([{ ...tp, offset: 5n }], source.groupMetadata());
  await assert.rejects(source.committed([tp]), (e: unknown) => e instanceof RetriableError, 'an offset in an open transaction is unstable');
  assert.equal(kafka.committed('connect-x', tp), null);
  await producer.abortTransaction();
  assert.deepEqual(await source.committed([tp]), [{ ...tp, offset: null }], 'an aborted transaction commits no offsets');

  await producer.beginTransaction();
  await producer.sendOffsetsToTransaction([{ ...tp, offset: 3n }], source.groupMetadata());
  await producer.commitTransaction();
  assert.deepEqual(await source.committed([tp]), [{ ...tp, offset: 3n }]);
  assert.equal(kafka.committed('connect-x', tp), 3n);

  const foreign = Object.freeze({ groupId: 'connect-x' }) as unknown as ConsumerGroupMetadata;
  await producer.beginTransaction();
  await assert.rejects(producer.sendOffsetsToTransaction([{ ...tp, offset: 4n }], foreign), (e: unknown) => e instanceof ConfigError);
});

test('KIP-447: offsets sent with a stale generation require an abort, and the transaction can then only be aborted', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 2);
  const tp = { topic: 'src', partition: 0 };
  const a = kafka.createSource({ groupId: 'g' });
  const b = kafka.createSource({ groupId: 'g' });
  await a.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  await a.poll({ maxRecords: 10, timeoutMs: 0 });
  const metaA = a.groupMetadata(); // read live at use, as librdkafka does
  const producer = kafka.createProducer('a-0');
  await producer.initTransactions();

  await b.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER); // a rebalance: A has not rejoined yet
  await producer.beginTransaction();
  await producer.send([{ topic: 'src', partition: 1, key: null, value: utf8('announce') }]);
  await assert.rejects(producer.sendOffsetsToTransaction([{ ...tp, offset: 1n }], metaA), (e: unknown) => requiresAbort(e));
  await assert.rejects(producer.commitTransaction(), (e: unknown) => requiresAbort(e), 'abortable only');
  await producer.abortTransaction();
  assert.equal(kafka.committed('g', tp), null);
  assert.deepEqual(kafka.readPartition('src', 1).map((e) => e.state), ['aborted', 'aborted']);

  await a.poll({ maxRecords: 10, timeoutMs: 0 }); // A rejoins the new generation
  await producer.beginTransaction();
  await producer.sendOffsetsToTransaction([{ ...tp, offset: 1n }], metaA);
  await producer.commitTransaction();
  assert.equal(kafka.committed('g', tp), 1n);
});

test('rebalance: onRevoked is awaited before a partition moves, onAssigned before its first record, and reading resumes at the committed offset', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 2);
  for (const p of [0, 1]) kafka.produce('src', p, Array.from({ length: 4 }, (_, i) => ({ value: `p${p}-${i}` })));
  const events: string[] = [];
  const gate = deferred();
  const a = kafka.createSource({ groupId: 'g' });
  const producerA = kafka.createProducer('a-0');
  await producerA.initTransactions();
  await a.subscribe({ kind: 'list', topics: ['src'] }, recorder('A', events, {
    // The revocation rule: finish the cycle (commit offsets with the still-current generation) before returning.
    revoked: async (ps) => {
      await gate.promise;
      await producerA.beginTransaction();
      await producerA.sendOffsetsToTransaction(ps.map((p) => ({ ...p, offset: 3n })), a.groupMetadata());
      await producerA.commitTransaction();
      events.push('A committed');
    },
  }));
  assert.equal(at(await drain(a)).length, 8);
  const generationBefore = kafka.group('g').generation;

  const b = kafka.createSource({ groupId: 'g' });
  await b.subscribe({ kind: 'list', topics: ['src'] }, recorder('B', events, {
    assigned: async () => {
      await new Promise((resolve) => setTimeout(resolve, 2));
      events.push('B assigned done');
    },
  }));
  assert.equal(kafka.group('g').generation, generationBefore + 1, 'a join is a rebalance');

  const aPoll = a.poll({ maxRecords: 10, timeoutMs: 0 });
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(events, ['A assigned src[0],src[1]', 'A revoked src[1]'], 'cooperative: only the partition that moves is revoked');
  assert.deepEqual(await b.poll({ maxRecords: 10, timeoutMs: 0 }), [], 'B gets nothing while A is still in onRevoked');
  assert.deepEqual(b.assignment(), []);

  gate.resolve();
  assert.deepEqual(await aPoll, []);
  assert.deepEqual(a.assignment(), [{ topic: 'src', partition: 0 }]);
  assert.equal(kafka.group('g').generation, generationBefore + 2, 'the hand-off is another round');

  const got = await b.poll({ maxRecords: 10, timeoutMs: 0 });
  events.push(`B got ${at(got).join(' ')}`);
  assert.deepEqual(events.slice(1), ['A revoked src[1]', 'A committed', 'B assigned src[1]', 'B assigned done', 'B got 1@3']);
  assert.deepEqual(kafka.group('g').members.map((m) => tps(m.partitions)), ['src[0]', 'src[1]']);
  kafka.produce('src', 0, [{ value: 'p0-4' }]);
  assert.deepEqual(at(await a.poll({ maxRecords: 10, timeoutMs: 0 })), ['0@4'], 'A keeps its position on the partition it kept');
});

test('rebalance: cooperative-sticky, a join moves only what balance needs and each member revokes only what it gives up', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 4);
  const events: string[] = [];
  const members = ['A', 'B', 'C'].map((name) => ({ name, source: kafka.createSource({ groupId: 'g', clientId: name }) }));
  const pollJoined = async (): Promise<void> => {
    for (const m of members) if (m.source.memberId !== null) await m.source.poll({ maxRecords: 1, timeoutMs: 0 });
  };
  for (const m of members) {
    await m.source.subscribe({ kind: 'list', topics: ['src'] }, recorder(m.name, events));
    await pollJoined(); // the joiner's round, and the revocations it causes
    await pollJoined(); // the hand-off round
  }
  assert.deepEqual(events, [
    'A assigned src[0],src[1],src[2],src[3]',
    'A revoked src[2],src[3]', 'B assigned src[2],src[3]',
    'B revoked src[3]', 'C assigned src[3]',
  ]);
  assert.deepEqual(kafka.group('g').members.map((m) => tps(m.partitions)), ['src[0],src[1]', 'src[2]', 'src[3]']);
});

test('rebalance: a listener that throws fails the poll after the rebalance step completed', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 2);
  const a = kafka.createSource({ groupId: 'g' });
  await a.subscribe({ kind: 'list', topics: ['src'] }, { onAssigned: () => undefined, onRevoked: () => Promise.reject(new RetriableError('cycle failed')) });
  await a.poll({ maxRecords: 1, timeoutMs: 0 });
  const b = kafka.createSource({ groupId: 'g' });
  await b.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  await assert.rejects(a.poll({ maxRecords: 1, timeoutMs: 0 }), /cycle failed/);
  assert.deepEqual(a.assignment(), [{ topic: 'src', partition: 0 }], 'the revoke still happened');
  await b.poll({ maxRecords: 1, timeoutMs: 0 });
  assert.deepEqual(b.assignment(), [{ topic: 'src', partition: 1 }]);
});

test('session timeout: the others take the partitions, the zombie is refused, and it learns it lost them at its next poll before rejoining', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 2);
  for (const p of [0, 1]) kafka.produce('src', p, [{ value: `p${p}-0` }, { value: `p${p}-1` }]);
  kafka.commitOffsets('g', [{ topic: 'src', partition: 1, offset: 1n }]);
  const events: string[] = [];
  const a = kafka.createSource({ groupId: 'g', clientId: 'a' });
  const b = kafka.createSource({ groupId: 'g', clientId: 'b' });
  await a.subscribe({ kind: 'list', topics: ['src'] }, recorder('A', events));
  assert.equal((await drain(a)).length, 3);
  const oldMember = a.memberId;
  const producerA = kafka.createProducer('a-0');
  await producerA.initTransactions();
  await producerA.beginTransaction();

  kafka.expireMember(a);
  await b.subscribe({ kind: 'list', topics: ['src'] }, recorder('B', events));
  assert.deepEqual(at(await drain(b)), ['0@0', '0@1', '1@1'], 'B reads from the committed offsets');
  await assert.rejects(producerA.sendOffsetsToTransaction([{ topic: 'src', partition: 0, offset: 2n }], a.groupMetadata()), (e: unknown) => requiresAbort(e));
  await producerA.abortTransaction();

  assert.deepEqual(await a.poll({ maxRecords: 10, timeoutMs: 0 }), []);
  assert.deepEqual(events, ['A assigned src[0],src[1]', 'B assigned src[0],src[1]', 'A lost src[0],src[1]']);
  assert.notEqual(a.memberId, oldMember, 'it rejoined as a new member');
  assert.deepEqual(a.assignment(), []);
  await b.poll({ maxRecords: 10, timeoutMs: 0 });
  await a.poll({ maxRecords: 10, timeoutMs: 0 });
  assert.deepEqual(events.slice(3), ['B revoked src[1]', 'A assigned src[1]']);
});

test('close revokes everything through the listener, then leaves the group so the others rebalance', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 2);
  const events: string[] = [];
  const a = kafka.createSource({ groupId: 'g' });
  const b = kafka.createSource({ groupId: 'g' });
  await a.subscribe({ kind: 'list', topics: ['src'] }, recorder('A', events, { revoked: () => new Promise((resolve) => setTimeout(resolve, 2)).then(() => void events.push('A revoke done')) }));
  await a.poll({ maxRecords: 1, timeoutMs: 0 });
  await b.subscribe({ kind: 'list', topics: ['src'] }, recorder('B', events));
  await a.close();
  assert.deepEqual(events, ['A assigned src[0],src[1]', 'A revoked src[0],src[1]', 'A revoke done']);
  assert.deepEqual(kafka.group('g').members.map((m) => m.memberId), [b.memberId]);
  await b.poll({ maxRecords: 1, timeoutMs: 0 });
  assert.deepEqual(events.at(-1), 'B assigned src[0],src[1]');
  await assert.rejects(a.poll({ maxRecords: 1, timeoutMs: 0 }), (e: unknown) => e instanceof FatalError);
});

test('poll: up to maxRecords from assigned, unpaused partitions, offset order per partition, committed offset else earliest; seek, position, high watermark', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 2);
  for (const p of [0, 1]) kafka.produce('src', p, Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: `p${p}-${i}`, timestamp: 1000 + i })));
  kafka.commitOffsets('g', [{ topic: 'src', partition: 0, offset: 2n }]);
  const source = kafka.createSource({ groupId: 'g' });
  const both = [{ topic: 'src', partition: 0 }, { topic: 'src', partition: 1 }];
  await source.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  assert.equal(source.highWatermark(both[0] as TopicPartition), null, 'no fetch yet');

  const first = await source.poll({ maxRecords: 3, timeoutMs: 0 });
  assert.equal(first.length, 3);
  const all = [...first, ...(await drain(source, 3))];
  for (const p of [0, 1]) {
    const offsets = all.filter((r) => r.partition === p).map((r) => r.offset);
    assert.deepEqual(offsets, p === 0 ? [2n, 3n, 4n] : [0n, 1n, 2n, 3n, 4n], `partition ${p} in offset order from its start`);
  }
  const r = all.find((x) => x.partition === 1 && x.offset === 3n);
  assert.deepEqual([text(r?.key ?? null), text(r?.value ?? null), r?.timestamp], ['k3', 'p1-3', 1003]);
  assert.deepEqual(source.position(both).map((p) => p.offset), [5n, 5n]);
  assert.deepEqual(both.map((tp) => source.highWatermark(tp)), [5n, 5n]);
  assert.deepEqual(await source.committed(both), [{ ...both[0], offset: 2n }, { ...both[1], offset: null }], 'reading commits nothing');

  source.pause([{ topic: 'src', partition: 0 }]);
  kafka.produce('src', 0, [{ value: 'p0-5' }]);
  kafka.produce('src', 1, [{ value: 'p1-5' }]);
  assert.deepEqual(at(await drain(source)), ['1@5'], 'a paused partition returns nothing');
  source.resume([{ topic: 'src', partition: 0 }]);
  assert.deepEqual(at(await drain(source)), ['0@5']);
  await source.seek({ topic: 'src', partition: 1, offset: 4n });
  assert.deepEqual(source.position([{ topic: 'src', partition: 1 }]).map((p) => p.offset), [4n]);
  assert.deepEqual(at(await drain(source)), ['1@4', '1@5']);
  await assert.rejects(source.seek({ topic: 'src', partition: 7, offset: 0n }), (e: unknown) => e instanceof ConfigError);
});

test('poll: source topics are read_committed too (markers and aborted records skipped, open ones wait), and an empty poll returns at once', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 1);
  const producer = kafka.createProducer('upstream');
  await producer.initTransactions();
  await producer.beginTransaction();
  await producer.send([{ topic: 'src', partition: 0, key: null, value: utf8('aborted') }]);
  await producer.abortTransaction();
  kafka.produce('src', 0, [{ value: 'plain' }]);
  await producer.beginTransaction();
  await producer.send([{ topic: 'src', partition: 0, key: null, value: utf8('pending') }]);
  const source = kafka.createSource({ groupId: 'g' });
  await source.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  const started = performance.now();
  assert.deepEqual(values(await drain(source)), ['plain']);
  assert.ok(performance.now() - started < 500, 'an empty poll does not wait out its timeout');
  const waited = performance.now();
  assert.deepEqual(await source.poll({ maxRecords: 10, timeoutMs: 60_000 }), []);
  assert.ok(performance.now() - waited < 500);
  await producer.commitTransaction();
  assert.deepEqual(values(await drain(source)), ['pending']);
});

test('start positions: earliest without a committed offset; a committed offset outside the log fails, unless auto.offset.reset is set', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 1);
  kafka.produce('src', 0, Array.from({ length: 5 }, (_, i) => ({ value: `v${i}` })));
  kafka.commitOffsets('old', [{ topic: 'src', partition: 0, offset: 1n }]);
  kafka.commitOffsets('ahead', [{ topic: 'src', partition: 0, offset: 9n }]);
  kafka.deleteRecordsBefore('src', 0, 3n);

  const fresh = kafka.createSource({ groupId: 'fresh' });
  await fresh.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  assert.deepEqual(at(await drain(fresh)), ['0@3', '0@4'], 'no committed offset: the earliest offset there is');

  // Default: never a silent jump, and the message says where, what and what to do.
  for (const [group, pattern] of [['old', /src\[0\]: the group's committed offset 1 is outside the log, which holds offsets 3 to 4 \(high watermark 5\): records 1 to 2 were deleted/], ['ahead', /offset 9 is outside .* beyond the end of the log .*recreated/]] as const) {
    const strict = kafka.createSource({ groupId: group });
    await strict.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
    await assert.rejects(strict.poll({ maxRecords: 10, timeoutMs: 0 }), (e: unknown) => e instanceof FatalError && pattern.test(e.message) && /kafka-consumer-groups --reset-offsets/.test(e.message));
    await strict.close();
  }

  const warnings: string[] = [];
  const log = { ...SILENT_LOGGER, warn: (message: string, fields?: Readonly<Record<string, unknown>>) => void warnings.push(`${message} ${JSON.stringify(fields)}`) };
  const earliest = kafka.createSource({ groupId: 'old', autoOffsetReset: 'earliest', log });
  await earliest.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  assert.deepEqual(at(await drain(earliest)), ['0@3', '0@4'], 'a configured reset applies to out of range');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', /records 1 to 2 were deleted .*continues at offset 3/);
  await earliest.close();

  const latest = kafka.createSource({ groupId: 'fresh2', autoOffsetReset: 'latest' });
  await latest.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  assert.deepEqual(await drain(latest), []);
  kafka.produce('src', 0, [{ value: 'v5' }]);
  assert.deepEqual(at(await drain(latest)), ['0@5']);

  // A position that leaves the log later (retention passing a lagging reader) fails the same way.
  kafka.commitOffsets('lagging', [{ topic: 'src', partition: 0, offset: 3n }]);
  const lagging = kafka.createSource({ groupId: 'lagging' });
  await lagging.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  await lagging.poll({ maxRecords: 1, timeoutMs: 0 });
  lagging.pause([{ topic: 'src', partition: 0 }]);
  kafka.deleteRecordsBefore('src', 0, 6n);
  lagging.resume([{ topic: 'src', partition: 0 }]);
  await assert.rejects(lagging.poll({ maxRecords: 10, timeoutMs: 0 }), (e: unknown) => e instanceof FatalError && /the consumer's position 4 is outside the log/.test(e.message));

  const none = kafka.createSource({ groupId: 'fresh3', autoOffsetReset: 'error' });
  await none.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  await assert.rejects(none.poll({ maxRecords: 10, timeoutMs: 0 }), (e: unknown) => e instanceof FatalError && /no committed offset and auto.offset.reset=error/.test(e.message));
});

test('rewindToCommitted: back to the committed offset, or without one to the first offset returned since the assignment', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src', 2);
  for (const p of [0, 1]) kafka.produce('src', p, Array.from({ length: 4 }, (_, i) => ({ value: `p${p}-${i}` })));
  kafka.commitOffsets('g', [{ topic: 'src', partition: 0, offset: 1n }]);
  const source = kafka.createSource({ groupId: 'g' });
  await source.subscribe({ kind: 'list', topics: ['src'] }, NO_LISTENER);
  await source.poll({ maxRecords: 1, timeoutMs: 0 }); // joins; partition 1 is then read from a seek
  await source.seek({ topic: 'src', partition: 1, offset: 2n });
  const firstRead = await drain(source);
  assert.deepEqual(firstRead.filter((r) => r.partition === 1).map((r) => r.offset), [2n, 3n]);

  await source.rewindToCommitted();
  const again = await drain(source);
  assert.deepEqual(again.filter((r) => r.partition === 0).map((r) => r.offset), [1n, 2n, 3n], 'to the committed offset');
  assert.deepEqual(again.filter((r) => r.partition === 1).map((r) => r.offset), [2n, 3n], 'to the first offset returned since the assignment');
});

test('control reader: retention moves the log start; below it a RetriableError (read again), past the end a FatalError, never a silent jump; maxRecords stops early', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('ctl', 2);
  const producer = kafka.createProducer('c-0');
  await producer.initTransactions();
  for (let i = 0; i < 3; i++) {
    await producer.beginTransaction();
    await producer.send([{ topic: 'ctl', partition: 0, key: null, value: utf8(`a${i}`) }]);
    await producer.commitTransaction();
  }
  kafka.deleteRecordsBefore('ctl', 0, 2n);
  const admin = kafka.createAdmin();
  assert.deepEqual((await admin.watermarks('ctl')).map((w) => [w.partition, w.low, w.high, w.lastStable]), [[0, 2n, 6n, 6n], [1, 0n, 0n, 0n]]);
  const reader = kafka.createControlReader();
  await assert.rejects(reader.read([{ topic: 'ctl', partition: 0, offset: 0n }]), (e: unknown) => e instanceof RetriableError && e.context['logStart'] === '2');
  await assert.rejects(reader.read([{ topic: 'ctl', partition: 0, offset: 7n }]), (e: unknown) => e instanceof FatalError);

  const read = await reader.read([{ topic: 'ctl', partition: 0, offset: 2n }, { topic: 'ctl', partition: 1, offset: 0n }]);
  assert.deepEqual(values(read.records), ['a1', 'a2']);
  assert.deepEqual(read.endOffsets.map((e) => e.offset), [6n, 0n]);
  const limited = await reader.read([{ topic: 'ctl', partition: 0, offset: 2n }], { maxRecords: 1 });
  assert.deepEqual(values(limited.records), ['a1']);
  assert.deepEqual(limited.endOffsets.map((e) => e.offset), [3n], 'just past the last record returned');
});

test('admin: topics with their configs, a new topic id on every creation, cluster id, partition count; deleting a topic drops its group offsets', async () => {
  const kafka = new MemoryKafka({ uuid: counterIds() });
  const admin = kafka.createAdmin();
  assert.equal(await admin.ensureTopic({ name: 'ctl', partitions: 3, replicationFactor: -1, configs: { 'cleanup.policy': 'delete', 'retention.ms': '604800000' } }), true);
  assert.equal(await admin.ensureTopic({ name: 'ctl', partitions: 5, replicationFactor: -1 }), false);
  assert.deepEqual(kafka.topicConfigs('ctl'), { 'cleanup.policy': 'delete', 'retention.ms': '604800000' });
  assert.equal(await admin.partitionCount('ctl'), 3);
  assert.equal(await admin.clusterId(), kafka.clusterId);
  assert.match(kafka.clusterId, /^[A-Za-z0-9_-]{22}$/);
  const firstId = await admin.topicId('ctl');
  assert.equal(firstId, '00000000-0000-4000-8000-000000000002');

  kafka.commitOffsets('g', [{ topic: 'ctl', partition: 0, offset: 4n }]);
  await admin.deleteTopic('ctl');
  assert.equal(kafka.committed('g', { topic: 'ctl', partition: 0 }), null);
  await assert.rejects(admin.topicId('ctl'), (e: unknown) => e instanceof ConfigError);
  await assert.rejects(admin.deleteTopic('ctl'), (e: unknown) => e instanceof ConfigError);
  await admin.ensureTopic({ name: 'ctl', partitions: 1, replicationFactor: -1 });
  assert.notEqual(await admin.topicId('ctl'), firstId, 'a recreated topic has a new id');
  assert.deepEqual(await admin.watermarks('ctl'), [{ topic: 'ctl', partition: 0, low: 0n, high: 0n, lastStable: 0n }]);
});

test('admin: listTopics names every topic; deleteGroup removes a group\'s offsets, is false for an unknown group, and refuses a group with members', async () => {
  const kafka = new MemoryKafka();
  const admin = kafka.createAdmin();
  await admin.ensureTopic({ name: 'b', partitions: 1, replicationFactor: -1 });
  await admin.ensureTopic({ name: 'a', partitions: 2, replicationFactor: -1 });
  assert.deepEqual(await admin.listTopics(), ['a', 'b']);
  kafka.commitOffsets('g', [{ topic: 'a', partition: 1, offset: 3n }]);
  assert.equal(await admin.deleteGroup('g'), true);
  assert.equal(kafka.committed('g', { topic: 'a', partition: 1 }), null);
  assert.equal(await admin.deleteGroup('g'), false, 'gone already');
  const source = kafka.createSource({ groupId: 'live' });
  await source.subscribe({ kind: 'list', topics: ['a'] }, NO_LISTENER);
  await source.poll({ maxRecords: 1, timeoutMs: 0 });
  await assert.rejects(admin.deleteGroup('live'), (e: unknown) => e instanceof GroupNotEmptyError && e.groupId === 'live');
  await source.close();
  assert.equal(await admin.deleteGroup('live'), true, 'once the member left');
});

test('regex subscription matches whole topic names and picks up a topic created later', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('src-a', 1);
  kafka.createTopic('src-ab', 1);
  kafka.createTopic('xsrc-a', 1);
  const events: string[] = [];
  const source = kafka.createSource({ groupId: 'g' });
  await source.subscribe({ kind: 'regex', pattern: 'src-[a-z]' }, recorder('S', events));
  await source.poll({ maxRecords: 1, timeoutMs: 0 });
  const generation = kafka.group('g').generation;
  kafka.createTopic('src-b', 1);
  assert.equal(kafka.group('g').generation, generation + 1, 'a new matching topic is a rebalance');
  kafka.createTopic('other', 1);
  assert.equal(kafka.group('g').generation, generation + 1, 'a topic nobody subscribes to is not');
  await source.poll({ maxRecords: 1, timeoutMs: 0 });
  assert.deepEqual(events, ['S assigned src-a[0]', 'S assigned src-b[0]']);
});

test('faults: a rejected call changes nothing; "applied but failed" commits and the abort after it is refused; a timeout is retriable with either outcome', async () => {
  const kafka = new MemoryKafka();
  kafka.createTopic('ctl', 1);
  const p = kafka.createProducer('conn-0');
  const other = kafka.createProducer('conn-1');
  await p.initTransactions();
  await other.initTransactions();
  const cycle = async (value: string): Promise<void> => {
    await p.beginTransaction();
    await p.send([{ topic: 'ctl', partition: 0, key: null, value: utf8(value) }]);
  };
  const visible = async (): Promise<(string | null)[]> => values((await kafka.createControlReader().read([{ topic: 'ctl', partition: 0, offset: 0n }])).records);

  // Rejected: the transaction is still open, a retry commits it.
  kafka.failNext('conn-0', 'commitTransaction', new RetriableError('broker away'));
  await other.beginTransaction();
  await other.commitTransaction(); // another client's call is not affected
  await cycle('one');
  await assert.rejects(p.commitTransaction(), /broker away/);
  assert.equal(kafka.watermarks('ctl', 0).lastStable, 0n, 'still open');
  await p.commitTransaction();
  assert.deepEqual(await visible(), ['one']);

  // Applied but failed: committed; the caller's abort is refused, so it cannot conclude "never announced".
  p.failNext('commitTransaction', appliedButFailed());
  await cycle('two');
  await assert.rejects(p.commitTransaction(), (e: unknown) => e instanceof RetriableError);
  assert.deepEqual(await visible(), ['one', 'two']);
  await assert.rejects(p.abortTransaction(), (e: unknown) => e instanceof FatalError && e.context['reason'] === 'invalid-state');

  // Timed out: the same retriable error either way; the test decides what happened.
  for (const applied of [false, true]) {
    p.failNext('commitTransaction', timedOut({ applied }));
    await cycle(applied ? 'four' : 'three');
    await assert.rejects(p.commitTransaction(), (e: unknown) => e instanceof RetriableError && e.context['outcome'] === 'unknown');
    if (!applied) await p.abortTransaction();
  }
  assert.deepEqual(await visible(), ['one', 'two', 'four']);

  // Sources and readers by their names; each fault fires once.
  const source = kafka.createSource({ groupId: 'g', clientId: 'task-0' });
  const reader = kafka.createControlReader({ name: 'committer' });
  kafka.failNext('task-0', 'poll', new RetriableError('poll hiccup'));
  kafka.failNext('committer', 'read', new RetriableError('read hiccup'));
  await source.subscribe({ kind: 'list', topics: ['ctl'] }, NO_LISTENER);
  await assert.rejects(source.poll({ maxRecords: 1, timeoutMs: 0 }), /poll hiccup/);
  await source.poll({ maxRecords: 1, timeoutMs: 0 });
  await assert.rejects(reader.read([{ topic: 'ctl', partition: 0, offset: 0n }]), /read hiccup/);
  await reader.read([{ topic: 'ctl', partition: 0, offset: 0n }]);
  assert.deepEqual(kafka.pendingFaults(), []);
});
