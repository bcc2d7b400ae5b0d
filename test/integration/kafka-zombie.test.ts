/**
 * KIP-447 zombie fencing through the consumer group generation, the guarantee the exactly-once design
 * rests on: a task that was removed from the group while it held an open cycle cannot commit that
 * cycle's offsets or announcements, even though its transactional.id was never fenced.
 *
 * Task A runs in a child process (this file, with ICEFLOE_ZOMBIE_CHILD set): it consumes every record,
 * opens a transaction, produces its announcement, and reports ready. The test freezes it (SIGSTOP) past
 * its session timeout, so the broker removes it from the group; task B (same group, its own
 * transactional.id) gets all partitions, reads the same records and commits its cycle. Then A is thawed
 * and finishes its cycle as if nothing happened: sendOffsetsToTransaction + commit with its own consumer's
 * group metadata. The broker must refuse it, A's announcement must never become visible, and the group's
 * offsets must be B's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ConfluentControlTopicReader, ConfluentKafkaSource, ConfluentTransactionalProducer } from '../../src/consume/confluent/index.ts';
import { IcefloeError } from '../../src/core/errors.ts';
import { isFenced, requiresAbort } from '../../src/consume/port.ts';
import type { RebalanceListener } from '../../src/consume/port.ts';
import { kafkaSettings, pollUntil, produce, sleep, text, unique, withTopics } from '../helpers/kafka.ts';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const PARTITIONS = 2;
const RECORDS = 10;
/** A's session timeout: the freeze must outlast it. */
const A_SESSION_MS = 2000;
const A_HEARTBEAT_MS = 300;

interface ChildArgs {
  topic: string;
  control: string;
  groupId: string;
  transactionalId: string;
}

function describeError(e: unknown): Record<string, unknown> {
  return e instanceof IcefloeError
    ? { name: e.name, code: e.code, fenced: isFenced(e), abortRequired: requiresAbort(e), context: e.context, message: e.message }
    : { name: 'foreign', message: String(e) };
}

/** Task A, in the child process: one cycle, paused (by the parent) between announcing and committing. */
async function zombieChild(args: ChildArgs): Promise<void> {
  const say = (msg: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(msg, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}\n`);
  const settings = await kafkaSettings();
  const source = await ConfluentKafkaSource.connect({
    settings, groupId: args.groupId, overrides: { 'session.timeout.ms': String(A_SESSION_MS), 'heartbeat.interval.ms': String(A_HEARTBEAT_MS) },
  });
  const producer = await ConfluentTransactionalProducer.connect({
    settings, transactionalId: args.transactionalId, overrides: { 'transaction.timeout.ms': '30000' },
  });
  await producer.initTransactions();
  const listener: RebalanceListener = { onAssigned: () => undefined, onRevoked: (ps, info) => say({ event: 'revoked', partitions: ps.map((p) => p.partition), lost: info.lost }) };
  await source.subscribe({ kind: 'list', topics: [args.topic] }, listener);
  const got = await pollUntil(source, (g) => g.length >= RECORDS);
  const positions = source.position(source.assignment());
  await producer.beginTransaction();
  await producer.send([{ topic: args.control, key: 'task-A', value: utf8('A announces') }]);
  say({ event: 'ready', records: got.length, assignment: source.assignment().map((p) => p.partition) });
  // The parent freezes us here, lets B take over, thaws us and writes "go".
  await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()));
  const offsets = positions.flatMap((p) => (p.offset === null ? [] : [{ topic: p.topic, partition: p.partition, offset: p.offset }]));
  try {
    await producer.sendOffsetsToTransaction(offsets, source.groupMetadata());
    say({ event: 'sent-offsets' });
    await producer.commitTransaction();
    say({ event: 'committed' });
  } catch (e) {
    say({ event: 'failed', error: describeError(e) });
    try {
      await producer.abortTransaction();
      say({ event: 'aborted' });
    } catch (abortError) {
      say({ event: 'abort-failed', error: describeError(abortError) });
    }
  }
  await producer.close();
  await source.close().catch(() => undefined);
  say({ event: 'exit' });
}

const childArgs = process.env['ICEFLOE_ZOMBIE_CHILD'];
if (childArgs !== undefined) {
  await zombieChild(JSON.parse(childArgs) as ChildArgs);
  process.exit(0);
} else {
  test('zombie by group generation: a task removed from the group cannot commit its cycle (KIP-447)', async (t) => {
    const topic = unique('zombie-src');
    const control = unique('zombie-control');
    await withTopics(t, [{ name: topic, partitions: PARTITIONS }, { name: control, partitions: 1 }]);
    await produce(Array.from({ length: RECORDS }, (_, i) => ({ topic, partition: i % PARTITIONS, value: `z${i}` })));
    const settings = await kafkaSettings();
    const groupId = unique('connect-zombie');
    const args: ChildArgs = { topic, control, groupId, transactionalId: unique('zombie-task-A') };

    const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
      env: { ...process.env, ICEFLOE_ZOMBIE_CHILD: JSON.stringify(args) },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    t.after(() => {
      if (child.exitCode === null) {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
    });
    const events: Record<string, unknown>[] = [];
    const waiters: { event: string; resolve: (m: Record<string, unknown>) => void }[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line) as Record<string, unknown>;
      events.push(msg);
      for (const w of waiters.filter((x) => x.event === msg['event'])) w.resolve(msg);
    });
    /** The first of `names` the child reports (or already reported). */
    const waitFor = (names: string | string[], ms: number): Promise<Record<string, unknown>> => {
      const wanted = typeof names === 'string' ? [names] : names;
      const seen = events.find((e) => wanted.includes(String(e['event'])));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`child never reported ${wanted.join('/')}; saw ${JSON.stringify(events)}`)), ms);
        let done = false;
        for (const event of wanted) {
          waiters.push({ event, resolve: (m) => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            resolve(m);
          } });
        }
      });
    };

    const ready = await waitFor('ready', 15_000);
    assert.equal(ready['records'], RECORDS);
    assert.deepEqual(ready['assignment'], [0, 1]);

    // Freeze A: its librdkafka threads stop too, so its heartbeats stop and the broker removes it.
    child.kill('SIGSTOP');
    const frozenAt = Date.now();

    const b = await ConfluentKafkaSource.connect({ settings, groupId, overrides: { 'session.timeout.ms': '6000', 'heartbeat.interval.ms': '500' } });
    t.after(() => b.close());
    const producerB = await ConfluentTransactionalProducer.connect({ settings, transactionalId: unique('zombie-task-B') });
    t.after(() => producerB.close());
    await producerB.initTransactions();
    await b.subscribe({ kind: 'list', topics: [topic] }, { onAssigned: () => undefined, onRevoked: () => undefined });
    const bRecords = await pollUntil(b, (g) => g.length >= RECORDS, 15_000);
    assert.deepEqual(b.assignment().map((p) => p.partition).sort(), [0, 1]);
    // The session runs from A's last heartbeat, which may be up to one heartbeat interval before the freeze.
    const elapsed = Date.now() - frozenAt;
    assert.ok(elapsed >= A_SESSION_MS - A_HEARTBEAT_MS, `B got the partitions only after A's session expired (${elapsed} ms after the freeze)`);
    assert.deepEqual(bRecords.map((r) => text(r.value)).sort(), Array.from({ length: RECORDS }, (_, i) => `z${i}`).sort());
    await producerB.beginTransaction();
    await producerB.send([{ topic: control, key: 'task-B', value: utf8('B announces') }]);
    await producerB.sendOffsetsToTransaction(b.position(b.assignment()).map((p) => ({ topic: p.topic, partition: p.partition, offset: p.offset ?? 0n })), b.groupMetadata());
    await producerB.commitTransaction();

    // Thaw A and let it finish its cycle immediately, before it can notice anything.
    child.kill('SIGCONT');
    child.stdin.end('go\n');
    const outcome = await waitFor(['committed', 'failed'], 20_000);
    assert.equal(outcome['event'], 'failed', `the zombie committed its cycle: ${JSON.stringify(events)}`);
    const error = outcome['error'] as Record<string, unknown>;
    assert.equal(error['abortRequired'], true, `expected an abort-and-rewind error, got ${JSON.stringify(error)}`);
    await waitFor('exit', 20_000);
    t.diagnostic(`zombie outcome: ${JSON.stringify(events.filter((e) => e['event'] !== 'ready'))}`);

    // Nothing of A's cycle is visible: only B's announcement, and the group's offsets are B's.
    const reader = await ConfluentControlTopicReader.connect({ settings });
    t.after(() => reader.close());
    const read = await reader.read([{ topic: control, partition: 0, offset: 0n }], { timeoutMs: 15_000 });
    assert.deepEqual(read.records.map((r) => text(r.value)), ['B announces']);
    assert.deepEqual((await b.committed([{ topic, partition: 0 }, { topic, partition: 1 }])).map((c) => c.offset), [5n, 5n]);
    await sleep(0);
  });
}
