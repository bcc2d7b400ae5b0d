/**
 * The committer's control reader after a broker restart (issue 24): a ListOffsets the broker refuses because
 * the client's leader epoch is stale (`Leader epoch is older than broker epoch`) is asked again at once,
 * after a metadata refresh, within the same read — the committer's round no longer fails and waits for its
 * back-off; and a leader lookup that still fails after those retries makes the next read start on fresh
 * clients. The reader runs here over fakes of librdkafka's consumer and admin client.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RetriableError } from '../../../src/core/errors.ts';
import { ConfluentControlTopicReader } from '../../../src/consume/confluent/control-reader.ts';
import { KAFKA_CODES } from '../../../src/consume/confluent/errors.ts';
import { RdKafka } from '../../../src/consume/confluent/internal.ts';
import { LEADER_RETRY_DELAYS_MS, retryOnLeaderChange } from '../../../src/consume/confluent/leader-retry.ts';

const TOPIC = 'control';

interface Fakes {
  readonly reader: ConfluentControlTopicReader;
  /** What happened, in order: `list` per ListOffsets, `refresh` per metadata request. */
  readonly calls: string[];
}

/** Fakes of the consumer and admin client whose ListOffsets fails with `failures` (one code per request, in order), then answers log [0, 5). */
function fakeClients(failures: number[], calls: string[], prefix = ''): { consumer: unknown; admin: unknown } {
  const consumer = {
    on: () => undefined,
    getMetadata: (_o: unknown, cb: (err: unknown, md: unknown) => void) => {
      calls.push(`${prefix}refresh`);
      cb(null, { topics: [] });
    },
    disconnect: () => calls.push(`${prefix}disconnect`),
  };
  const admin = {
    listOffsets: (parts: { topic: string; partition: number; offset: unknown }[], _o: unknown, cb: (err: unknown, r?: unknown) => void) => {
      calls.push(`${prefix}list`);
      const code = failures.shift();
      if (code === KAFKA_CODES.ERR__NOENT) return cb({ code, message: 'Local: No such entry' });
      const offset = (spec: unknown): number => (spec === RdKafka.OffsetSpec.EARLIEST ? 0 : 5);
      cb(null, parts.map((p) => ({ topic: p.topic, partition: p.partition, offset: offset(p.offset), ...(code === undefined ? {} : { error: { code, message: `Broker: code ${code}` } }) })));
    },
  };
  return { consumer, admin };
}

/** A reader over `fakeClients`; `renew` gives it fresh clients. */
function fakeReader(failures: number[], calls: string[] = [], renew?: () => Promise<unknown>): Fakes {
  const make = ConfluentControlTopicReader as unknown as new (c: unknown, renew?: () => Promise<unknown>) => ConfluentControlTopicReader;
  return { reader: new make(fakeClients(failures, calls), renew), calls };
}

test('control reader: a ListOffsets fenced on a stale leader epoch is asked again after a metadata refresh, within the read', async () => {
  const { reader, calls } = fakeReader([KAFKA_CODES.ERR_FENCED_LEADER_EPOCH, KAFKA_CODES.ERR__NOENT]);
  const started = Date.now();
  const got = await reader.read([{ topic: TOPIC, partition: 0, offset: 5n }]);
  assert.deepEqual(got.endOffsets, [{ topic: TOPIC, partition: 0, offset: 5n }]);
  assert.ok(Date.now() - started < 2_000, 'within the bounded retry');
  // Three lists in parallel (earliest, latest, stable): two failed, each followed by a refresh before its retry.
  assert.equal(calls.filter((c) => c === 'list').length, 5);
  assert.equal(calls.filter((c) => c === 'refresh').length, 2);
});

test('control reader: a leader that stays stale fails the read after the bounded retries (the committer backs off as before)', async () => {
  const fenced = Array.from({ length: 3 * (LEADER_RETRY_DELAYS_MS.length + 1) }, () => KAFKA_CODES.ERR_FENCED_LEADER_EPOCH);
  const { reader, calls } = fakeReader(fenced);
  await assert.rejects(reader.read([{ topic: TOPIC, partition: 0, offset: 5n }]), (e: unknown) => e instanceof RetriableError && /Leader|code 74/.test(e.message));
  // The read fails with the first list that gave up; the other two give up within the same bound.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(calls.filter((c) => c === 'list').length, 3 * (LEADER_RETRY_DELAYS_MS.length + 1), 'each list tried once and retried a bounded number of times');
});

test('control reader: a leader lookup still failing after the retries (librdkafka\'s "No such entry" round after round) makes the next read renew the clients, at most once per interval', async () => {
  const noLeader = (reads = 1): number[] => Array.from({ length: reads * 3 * (LEADER_RETRY_DELAYS_MS.length + 1) }, () => KAFKA_CODES.ERR__NOENT);
  const calls: string[] = [];
  let renewals = 0;
  // The fresh pair answers at once; its calls are prefixed.
  const fresh = (): Promise<unknown> => Promise.resolve(fakeClients([], calls, `fresh${++renewals}-`));
  const { reader } = fakeReader(noLeader(), calls, fresh);
  await assert.rejects(reader.read([{ topic: TOPIC, partition: 0, offset: 5n }]), /No such entry/);
  await new Promise((resolve) => setTimeout(resolve, 1_500)); // the other two lists give up too
  assert.equal(renewals, 0, 'no renewal within the failing read');
  const got = await reader.read([{ topic: TOPIC, partition: 0, offset: 5n }]);
  assert.deepEqual(got.endOffsets, [{ topic: TOPIC, partition: 0, offset: 5n }]);
  assert.equal(renewals, 1, 'the next read renewed the clients first');
  assert.ok(calls.includes('disconnect'), 'the old client is let go');
  assert.equal(calls.filter((c) => c === 'fresh1-list').length, 3, 'the read went through the fresh clients');
  // The fresh clients fail the lookup too (an outage does): no second renewal within the interval.
  const failing = (): Promise<unknown> => Promise.resolve(fakeClients(noLeader(5), calls, `fresh${++renewals}-`));
  const again = fakeReader(noLeader(), [], failing).reader;
  await assert.rejects(again.read([{ topic: TOPIC, partition: 0, offset: 5n }]), /No such entry/);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await assert.rejects(again.read([{ topic: TOPIC, partition: 0, offset: 5n }]), /No such entry/, 'renewed, and failing still');
  assert.equal(renewals, 2);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await assert.rejects(again.read([{ topic: TOPIC, partition: 0, offset: 5n }]), /No such entry/);
  assert.equal(renewals, 2, 'not renewed again within RENEW_INTERVAL_MS');
});

test('retryOnLeaderChange: only leader errors are retried; others are thrown at once, without a refresh', async () => {
  let runs = 0;
  let refreshes = 0;
  const timedOut = new RetriableError('Kafka read-control failed: Local: Timed out', { context: { kafkaCode: KAFKA_CODES.ERR__TIMED_OUT } });
  await assert.rejects(retryOnLeaderChange(() => (runs++, Promise.reject(timedOut)), () => (refreshes++, Promise.resolve()), { sleep: () => Promise.resolve() }), (e) => e === timedOut);
  assert.deepEqual([runs, refreshes], [1, 0]);
  const moved = new RetriableError('not leader', { context: { kafkaCode: KAFKA_CODES.ERR_NOT_LEADER_FOR_PARTITION } });
  runs = 0;
  const waits: number[] = [];
  const v = await retryOnLeaderChange(() => (++runs < 3 ? Promise.reject(moved) : Promise.resolve('ok')), () => (refreshes++, Promise.resolve()), { sleep: (ms) => (waits.push(ms), Promise.resolve()) });
  assert.equal(v, 'ok');
  assert.deepEqual([runs, refreshes], [3, 2]);
  assert.deepEqual(waits, LEADER_RETRY_DELAYS_MS.slice(0, 2));
});
