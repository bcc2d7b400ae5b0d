/**
 * Pure parts of the Kafka adapter: error translation (by code and librdkafka's flags, never text), the
 * enforced client settings, topic-level property split, regex anchoring, offset and topic-id conversion,
 * and the cluster-id log line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, FatalError, RetriableError } from '../../../src/core/errors.ts';
import { TransactionAbortRequiredError, TransactionCallTimedOutError, isFenced, requiresAbort, requiresProducerReset } from '../../../src/consume/port.ts';
import { KAFKA_CODES, explainFence, translateKafkaError } from '../../../src/consume/confluent/errors.ts';
import {
  controlReaderConfig, offsetFromNumber, offsetToNumber, regexSubscription, sourceConsumerConfig, sourceOffsetReset, splitTopicConfig,
  transactionalProducerConfig, uuidFromHalves, clusterIdFromLogLine,
} from '../../../src/consume/confluent/settings.ts';
import { consumePacked, packedRecords } from '../../../src/consume/confluent/internal.ts';
import type { KafkaConsumerClient, PackedBatch } from '../../../src/consume/confluent/internal.ts';
import { resumable } from '../../../src/consume/confluent/producer.ts';

const BASE = { 'bootstrap.servers': 'localhost:9092' };

test('translate: fenced producer codes are a fenced FatalError, whatever the flags say', () => {
  for (const code of [KAFKA_CODES.ERR__FENCED, KAFKA_CODES.ERR_PRODUCER_FENCED, KAFKA_CODES.ERR_INVALID_PRODUCER_EPOCH]) {
    const e = translateKafkaError({ code, message: 'whatever', isFatal: true, isRetriable: false, isTxnRequiresAbort: false }, 'commit-transaction');
    assert.ok(e instanceof FatalError);
    assert.ok(isFenced(e));
    assert.equal(e.retriable, false);
  }
  // After fencing, librdkafka answers with a generic fatal error: still fenced.
  assert.ok(isFenced(translateKafkaError({ code: KAFKA_CODES.ERR__FATAL, isFatal: true }, 'begin-transaction', true)));
  assert.ok(!isFenced(translateKafkaError({ code: KAFKA_CODES.ERR__FATAL, isFatal: true }, 'begin-transaction', false)));
});

test('translate: abortable transaction errors and a stale group member ask for abort-and-rewind', () => {
  const flagged = translateKafkaError({ code: KAFKA_CODES.ERR_UNKNOWN_MEMBER_ID, isTxnRequiresAbort: true, isRetriable: false }, 'send-offsets');
  assert.ok(flagged instanceof TransactionAbortRequiredError);
  assert.ok(flagged instanceof RetriableError);
  assert.ok(requiresAbort(flagged));
  // The flag decides, not the text: same code, same message, no flag, outside a transaction → not abortable.
  assert.ok(!requiresAbort(translateKafkaError({ code: KAFKA_CODES.ERR_UNKNOWN_MEMBER_ID, message: 'Broker: Unknown member' }, 'committed')));
  assert.ok(requiresAbort(translateKafkaError({ code: KAFKA_CODES.ERR_ILLEGAL_GENERATION }, 'send-offsets')));
  assert.ok(requiresAbort(translateKafkaError({ code: KAFKA_CODES.ERR_INVALID_TXN_STATE, isTxnRequiresAbort: true }, 'commit-transaction')));
});

test('translate: a transactional producer in a state it cannot leave is to be re-created, on every producer call', () => {
  // The broker restart: send-offsets failed on the transport, then the abort and every begin failed.
  const cases: [number, boolean, Parameters<typeof translateKafkaError>[1]][] = [
    [KAFKA_CODES.ERR_INVALID_TXN_STATE, true, 'abort-transaction'],
    [KAFKA_CODES.ERR__FATAL, true, 'begin-transaction'],
    [KAFKA_CODES.ERR__STATE, false, 'begin-transaction'],
    [KAFKA_CODES.ERR_INVALID_PRODUCER_ID_MAPPING, true, 'send-offsets'],
    [KAFKA_CODES.ERR__FATAL, true, 'init-transactions'],
    [KAFKA_CODES.ERR__FATAL, true, 'send'],
    [KAFKA_CODES.ERR__FATAL, true, 'commit-transaction'],
  ];
  for (const [code, isFatal, op] of cases) {
    const e = translateKafkaError({ code, isFatal, message: 'Broker: Producer attempted a transactional operation in an invalid state' }, op);
    assert.ok(requiresProducerReset(e), `${code} on ${op}`);
    assert.ok(e instanceof RetriableError, 'the cycle is retried (after the re-creation)');
    assert.ok(!isFenced(e) && !requiresAbort(e));
  }
  // Abortable still wins (abort, then go on with the same producer); a fence is still a fence.
  assert.ok(requiresAbort(translateKafkaError({ code: KAFKA_CODES.ERR_INVALID_TXN_STATE, isTxnRequiresAbort: true }, 'commit-transaction')));
  assert.ok(isFenced(translateKafkaError({ code: KAFKA_CODES.ERR__FENCED, isFatal: true }, 'commit-transaction')));
  // ERR__STATE outside the producer is the consumer's own ('KafkaConsumer is disconnected'): not a producer reset.
  assert.ok(!requiresProducerReset(translateKafkaError({ code: KAFKA_CODES.ERR__STATE }, 'assign')));
});

test('a fence in a transaction older than transaction.timeout.ms may be the coordinator\'s own abort; a younger one, or a frozen process\'s, is another process', () => {
  const fence = translateKafkaError({ code: KAFKA_CODES.ERR__FENCED, isFatal: true, message: 'Producer fenced' }, 'commit-transaction');
  const facts = { transactionalId: 'c-orders-1', transactionTimeoutMs: 60_000, stalledMs: 0 };
  const old = explainFence(fence, { ...facts, ageMs: 61_000 });
  assert.ok(requiresProducerReset(old), 'the coordinator times out transactions and bumps the epoch: re-create');
  assert.match(old.message, /open 61000 ms, past transaction\.timeout\.ms \(60000\)/);
  for (const ageMs of [59_000, undefined]) {
    const young = explainFence(fence, { ...facts, ageMs });
    assert.ok(isFenced(young), `age ${ageMs}`);
    assert.match(young.message, /another process uses transactional\.id c-orders-1 \(a successor of this task, or two workers with overlapping icefloe\.tasks\.id-offset\?\)/);
    assert.equal(young.context['transactionalId'], 'c-orders-1');
  }
  // A zombie: its transaction grew old because the process was frozen while a successor took over.
  const zombie = explainFence(fence, { ...facts, ageMs: 90_000, stalledMs: 80_000 });
  assert.ok(isFenced(zombie), 'never re-created: that would fence the successor in turn');
  assert.match(zombie.message, /this process did not run for 80000 ms while its transaction was open \(frozen\): another process uses transactional\.id c-orders-1/);
  assert.ok(requiresProducerReset(explainFence(fence, { ...facts, ageMs: 90_000, stalledMs: 1_500 })), 'a GC pause is no freeze');
});

test('translate: retriable, config, offset-reset and unknown errors', () => {
  assert.ok(translateKafkaError({ code: KAFKA_CODES.ERR__TRANSPORT }, 'poll') instanceof RetriableError);
  assert.ok(translateKafkaError({ code: 12345, isRetriable: true }, 'poll') instanceof RetriableError);
  assert.ok(translateKafkaError({ code: KAFKA_CODES.ERR__TIMED_OUT, isRetriable: true }, 'commit-transaction') instanceof RetriableError);
  assert.ok(translateKafkaError({ code: KAFKA_CODES.ERR_TOPIC_AUTHORIZATION_FAILED }, 'poll') instanceof ConfigError);
  assert.ok(translateKafkaError({ code: KAFKA_CODES.ERR__AUTO_OFFSET_RESET }, 'read-control') instanceof FatalError);
  const unknown = translateKafkaError({ code: 9999, message: 'retry me maybe' }, 'poll');
  assert.ok(unknown instanceof FatalError, 'unknown errors stop rather than loop');
  assert.deepEqual(unknown.context, { operation: 'poll', kafkaCode: 9999, kafkaError: 'code 9999', restartable: true }, 'a new incarnation may not meet it');
  assert.ok(translateKafkaError(new Error('boom'), 'poll') instanceof FatalError);
  assert.equal(translateKafkaError(new Error('KafkaConsumer is disconnected'), 'assign').context['restartable'], true);
  assert.equal(translateKafkaError({ code: KAFKA_CODES.ERR__AUTO_OFFSET_RESET }, 'poll').context['restartable'], undefined, 'outside the log: a decision, not a crash');
  assert.equal(translateKafkaError({ code: KAFKA_CODES.ERR__FATAL, isFatal: true }, 'poll').context['restartable'], true, 'a consumer that broke');
  const own = new RetriableError('ours');
  assert.equal(translateKafkaError(own, 'poll'), own);
});

test('settings: the source consumer enforces manual offsets, cooperative-sticky and the group; librdkafka resets only as the user says', () => {
  const c = sourceConsumerConfig(BASE, { 'fetch.max.bytes': '1000' }, 'connect-orders');
  assert.equal(c['group.id'], 'connect-orders');
  assert.equal(c['enable.auto.commit'], 'false');
  assert.equal(c['enable.auto.offset.store'], 'false');
  assert.equal(c['partition.assignment.strategy'], 'cooperative-sticky');
  // Unset: librdkafka errors (the source starts new partitions at earliest itself; out of range fails).
  assert.equal(c['auto.offset.reset'], 'error');
  assert.equal(sourceOffsetReset(BASE, { 'fetch.max.bytes': '1000' }), undefined);
  assert.equal(c['fetch.max.bytes'], '1000');
  // A 16 MiB prefetch unless the worker or the connector set one (memory: docs/benchmarks.md).
  assert.equal(c['queued.max.messages.kbytes'], '16384');
  assert.equal(sourceConsumerConfig({ ...BASE, 'queued.max.messages.kbytes': '65536' }, undefined, 'g')['queued.max.messages.kbytes'], '65536');
  assert.equal(sourceConsumerConfig(BASE, { 'queued.max.messages.kbytes': '1024' }, 'g')['queued.max.messages.kbytes'], '1024');
  assert.equal(sourceConsumerConfig(BASE, { 'auto.offset.reset': 'latest' }, 'g')['auto.offset.reset'], 'latest');
  // The worker's consumer. value, overridden by the connector's; Java and librdkafka spellings.
  assert.equal(sourceOffsetReset({ ...BASE, 'auto.offset.reset': 'smallest' }, undefined), 'earliest');
  assert.equal(sourceOffsetReset({ ...BASE, 'auto.offset.reset': 'earliest' }, { 'auto.offset.reset': 'largest' }), 'latest');
  assert.equal(sourceConsumerConfig(BASE, { 'auto.offset.reset': 'none' }, 'g')['auto.offset.reset'], 'error');
  assert.throws(() => sourceConsumerConfig(BASE, { 'auto.offset.reset': 'sometimes' }, 'g'), ConfigError);
  assert.equal(sourceConsumerConfig(BASE, { 'enable.auto.commit': 'FALSE' }, 'g')['enable.auto.commit'], 'false');
  assert.throws(() => sourceConsumerConfig(BASE, { 'enable.auto.commit': 'true' }, 'g'), ConfigError);
  assert.throws(() => sourceConsumerConfig(BASE, { 'enable.auto.offset.store': 'true' }, 'g'), ConfigError);
  assert.throws(() => sourceConsumerConfig(BASE, { 'partition.assignment.strategy': 'range' }, 'g'), ConfigError);
  assert.throws(() => sourceConsumerConfig(BASE, { 'group.id': 'other' }, 'g'), ConfigError);
  assert.throws(() => sourceConsumerConfig({}, undefined, 'g'), ConfigError);
  // The KIP-848 protocol assigns on the broker: no client-side strategy.
  assert.equal(sourceConsumerConfig(BASE, { 'group.protocol': 'consumer' }, 'g')['partition.assignment.strategy'], undefined);
});

test('settings: producer and control reader', () => {
  const p = transactionalProducerConfig({ ...BASE, 'security.protocol': 'SASL_SSL' }, { acks: 'all' }, 'orders-0');
  assert.equal(p['transactional.id'], 'orders-0');
  assert.equal(p['enable.idempotence'], 'true');
  assert.equal(p['security.protocol'], 'SASL_SSL');
  assert.throws(() => transactionalProducerConfig(BASE, { 'enable.idempotence': 'false' }, 'orders-0'), ConfigError);
  assert.throws(() => transactionalProducerConfig(BASE, undefined, ''), ConfigError);
  const r = controlReaderConfig(BASE, 'reader-1');
  assert.equal(r['isolation.level'], 'read_committed');
  // The end of a read is an empty fetch, which the broker holds this long: 500 ms by default, in every commit's latency.
  assert.equal(r['fetch.wait.max.ms'], '10');
  assert.equal(controlReaderConfig({ ...BASE, 'fetch.wait.max.ms': '100' }, 'r')['fetch.wait.max.ms'], '100');
  assert.equal(r['auto.offset.reset'], 'error');
  assert.throws(() => controlReaderConfig({ ...BASE, 'isolation.level': 'read_uncommitted' }, 'r'), ConfigError);
  assert.throws(() => controlReaderConfig({ ...BASE, 'auto.offset.reset': 'earliest' }, 'r'), ConfigError);
});

test('settings: topic-level properties go to the topic configuration', () => {
  const { global, topic } = splitTopicConfig({ 'bootstrap.servers': 'b', 'auto.offset.reset': 'error', acks: 'all', 'group.id': 'g' });
  assert.deepEqual(global, { 'bootstrap.servers': 'b', 'group.id': 'g' });
  assert.deepEqual(topic, { 'auto.offset.reset': 'error', acks: 'all' });
});

test('regex subscriptions are anchored at both ends for librdkafka', () => {
  assert.equal(regexSubscription('orders-.*'), '^(orders-.*)$');
  assert.equal(regexSubscription('^orders-.*$'), '^(orders-.*)$');
  assert.equal(regexSubscription('price\\$'), '^(price\\$)$');
  assert.throws(() => regexSubscription(''), ConfigError);
});

test('offsets and topic ids', () => {
  assert.equal(offsetFromNumber(5), 5n);
  assert.equal(offsetFromNumber(-1001), null);
  assert.equal(offsetFromNumber(undefined), null);
  assert.equal(offsetToNumber(42n), 42);
  assert.throws(() => offsetToNumber(-1n), ConfigError);
  assert.throws(() => offsetToNumber(2n ** 53n), ConfigError);
  assert.equal(uuidFromHalves(0x0123456789abcdefn, -1n), '01234567-89ab-cdef-ffff-ffffffffffff');
  assert.equal(uuidFromHalves(0n, 1n), '00000000-0000-0000-0000-000000000001');
});

test('cluster id from librdkafka\'s metadata debug line', () => {
  assert.equal(clusterIdFromLogLine('[thrd:main]: 127.0.0.1:9092/bootstrap: ClusterId: ZgR_v0IiSVKhj9Rc8E15QQ, ControllerId: 1'), 'ZgR_v0IiSVKhj9Rc8E15QQ');
  assert.equal(clusterIdFromLogLine('Topic t partition count changed'), undefined);
  assert.equal(clusterIdFromLogLine('ClusterId: short, ControllerId: 1'), undefined);
});

/** A batch laid out as the patched binding's Pack() lays it out (scripts/patch-kafka-binding.ts). */
function packed(messages: readonly { topic: number; partition: number; offset: number; timestamp: number; key: string | null; value: string | null }[], topics: string[], headers: unknown[] = []): PackedBatch {
  const data = Buffer.concat(messages.flatMap((m) => [Buffer.from(m.key ?? ''), Buffer.from(m.value ?? '')]));
  const table = new Float64Array(messages.length * 8);
  let at = 0;
  messages.forEach((m, i) => {
    const key = m.key === null ? -1 : Buffer.byteLength(m.key);
    const value = m.value === null ? -1 : Buffer.byteLength(m.value);
    table.set([m.topic, m.partition, m.offset, m.timestamp, at, key], i * 8);
    at += Math.max(0, key);
    table.set([at, value], i * 8 + 6);
    at += Math.max(0, value);
  });
  return { count: messages.length, block: Buffer.concat([Buffer.from(table.buffer), data]), topics, headers };
}

test('packed batches: records with keys, values, nulls, timestamps and headers as views over the one block; the filter sees topic and partition', () => {
  const batch = packed([
    { topic: 0, partition: 3, offset: 41, timestamp: 1700000000000, key: 'k1', value: 'v-one' },
    { topic: 1, partition: 0, offset: 2 ** 40, timestamp: -1, key: null, value: '' },
    { topic: 0, partition: 3, offset: 42, timestamp: 5, key: '', value: null },
  ], ['orders', 'refunds'], [2, [{ trace: Buffer.from('t') }, { empty: null }]]);
  const seen: string[] = [];
  const all = packedRecords(batch, (topic, partition) => (seen.push(`${topic}/${partition}`), true));
  assert.deepEqual(seen, ['orders/3', 'refunds/0', 'orders/3']);
  assert.deepEqual(all.map((r) => [r.topic, r.partition, r.offset, r.timestamp]), [['orders', 3, 41n, 1700000000000], ['refunds', 0, 2n ** 40n, null], ['orders', 3, 42n, 5]]);
  assert.deepEqual(all.map((r) => [r.key === null ? null : Buffer.from(r.key).toString(), r.value === null ? null : Buffer.from(r.value).toString()]), [['k1', 'v-one'], [null, ''], ['', null]]);
  assert.deepEqual(all.map((r) => r.headers.map((h) => [h.key, h.value === null ? null : Buffer.from(h.value).toString()])), [[], [], [['trace', 't'], ['empty', null]]]);
  assert.ok(Buffer.isBuffer(all[0]?.value), 'values are Buffers, as the client\'s own messages');
  assert.equal((all[0]?.value as Buffer).buffer, batch.block?.buffer, 'a view, not a copy');
  assert.deepEqual(packedRecords(batch, (topic) => topic === 'refunds').map((r) => r.offset), [2n ** 40n]);
  assert.deepEqual(packedRecords({ count: 0, topics: [], headers: [] }, () => true), []);
});

test('packed batches: an addon built without the patch (an array of messages back) is refused, not read as empty', async () => {
  const native = (answer: unknown) => ({ _client: { consume: (_t: number, _n: number, _f: boolean, cb: (err: unknown, batch?: unknown) => void) => cb(null, answer) } }) as unknown as KafkaConsumerClient;
  const consume = (c: KafkaConsumerClient) => new Promise<unknown>((resolve, reject) => consumePacked(c, 10, 5, (err, batch) => (err === null || err === undefined ? resolve(batch) : reject(err))));
  await assert.rejects(consume(native([{ value: Buffer.from('x') }])), (e: unknown) => e instanceof FatalError && /patch-kafka-binding/.test(e.message));
  assert.deepEqual(await consume(native({ count: 0, topics: [], headers: [] })), { count: 0, topics: [], headers: [] });
});

test('a commit whose records timed out must be aborted, not resumed; a commit call that timed out is resumed', () => {
  const timedOutRecords = translateKafkaError({ code: KAFKA_CODES.ERR__TIMED_OUT, message: '2 message(s) timed out on control [0]', isFatal: false, isRetriable: false, isTxnRequiresAbort: true }, 'commit-transaction');
  assert.ok(resumable('commit-transaction', timedOutRecords) instanceof TransactionAbortRequiredError);
  const timedOutCall = translateKafkaError({ code: KAFKA_CODES.ERR__TIMED_OUT, message: 'Local: Timed out', isFatal: false, isRetriable: true, isTxnRequiresAbort: false }, 'commit-transaction');
  assert.ok(resumable('commit-transaction', timedOutCall) instanceof TransactionCallTimedOutError);
  assert.ok(resumable('abort-transaction', timedOutCall) instanceof TransactionCallTimedOutError);
});

test('translate: a stale leader epoch (after a broker restart or freeze) is retriable, not a task failure', () => {
  for (const code of [KAFKA_CODES.ERR_FENCED_LEADER_EPOCH, KAFKA_CODES.ERR_UNKNOWN_LEADER_EPOCH]) {
    for (const op of ['watermarks', 'committed', 'read-control'] as const) {
      const e = translateKafkaError({ code, message: 'Broker: Leader epoch is older than broker epoch', isFatal: false, isRetriable: false }, op);
      assert.ok(e instanceof RetriableError, `${code} in ${op}: ${e.constructor.name}`);
    }
  }
});
