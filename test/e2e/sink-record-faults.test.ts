/**
 * Records the worker cannot write as they are, end to end (the real worker, tasks as child processes,
 * Avro values with the stack's schema registry, REST catalog on S3), counted by Kafka coordinates:
 *
 * (a) values a registry converter cannot read — plain text, empty, 2 bytes, a first byte of 1 — between
 *     valid records on two partitions, read by two connectors at once on the same topic: with
 *     errors.tolerance=all (two tasks) every valid record is in the table exactly once and every bad one
 *     is skipped, logged with its coordinates and counted exactly once — also across a cycle forced to be
 *     read again (the fault proxy fails the data-file uploads); with errors.tolerance=none (two tasks)
 *     each task fails naming the coordinates of its partition's first bad record and what is wrong, and
 *     nothing past it is committed; the worker, stopped with those tasks FAILED, exits 1 naming them;
 * (b) records of partition 1 whose schema id the registry does not know yet (registered ~10 s after
 *     they were produced): partition 0 lands in the table while partition 1 waits with a growing back-off
 *     (no cycle abandoned), then everything lands exactly once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import avro from 'avsc';
import { ConfluentKafkaAdmin, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import { ConfluentSchemaResolver } from '../../src/decode/registry/schema-registry.ts';
import { SCHEMA_WAIT_BACKOFF } from '../../src/runtime/task.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, unique } from '../helpers/kafka.ts';
import { avroFramed, committedRecords, e2eResources, PROCESS_WORKER, registryConverter, sinkConnector, stopWorker, uniqueIdent } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const TIMEOUT = 240_000;

/** A fresh record type (its own name, so the registry sees new content and gives it a new id). */
function orderSchema(name: string): { type: 'record'; name: string; fields: { name: string; type: string }[] } {
  return { type: 'record', name, fields: [{ name: 'seq', type: 'long' }, { name: 'label', type: 'string' }] };
}

function framed(id: number, type: avro.Type, seq: number): Buffer {
  return avroFramed(id, type, { seq, label: `order ${seq}` });
}

async function createTopic(topic: string, partitions: number): Promise<void> {
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  try {
    await admin.ensureTopic({ name: topic, partitions, replicationFactor: -1 });
  } finally {
    await admin.close();
  }
}

/** Produces the values to their partitions, in order; returns where each landed. */
async function produceValues(topic: string, records: readonly { readonly partition: number; readonly value: Buffer }[]): Promise<Coordinates[]> {
  const producer = await ConfluentRecordProducer.connect({ settings: await kafkaSettings(), clientId: 'icefloe-e2e-record-faults' });
  try {
    const delivered = await producer.send(records.map((r) => ({ topic, partition: r.partition, key: null, value: r.value })));
    return delivered.map((d) => ({ topic: d.topic, partition: d.partition, offset: d.offset }));
  } finally {
    await producer.close();
  }
}

/** Deletes the subjects a test registered (soft, then for good), best effort. */
async function deleteSubjects(subjects: readonly string[]): Promise<void> {
  const base = stackEndpoints().registryUrl;
  for (const s of subjects) {
    await fetch(`${base}/subjects/${encodeURIComponent(s)}`, { method: 'DELETE' }).catch(() => undefined);
    await fetch(`${base}/subjects/${encodeURIComponent(s)}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
  }
}

const key = (c: { topic: unknown; partition: unknown; offset: unknown }): string => `${String(c.topic)}/${String(c.partition)}/${String(c.offset)}`;

/** The partitions each task of a connector holds now, from its assigned/revoked log lines. */
function holdings(w: WorkerProcess, connector: string): Map<number, Set<string>> {
  const held = new Map<number, Set<string>>();
  for (const line of w.lines) {
    if (!line.startsWith('{') || !line.includes(connector)) continue;
    const l = JSON.parse(line) as Record<string, unknown>;
    if (l['connector'] !== connector || (l['msg'] !== 'partitions assigned' && l['msg'] !== 'partitions revoked')) continue;
    const task = Number(l['task']);
    const set = held.get(task) ?? new Set<string>();
    for (const p of l['partitions'] as string[]) {
      if (l['msg'] === 'partitions assigned') set.add(p);
      else set.delete(p);
    }
    held.set(task, set);
  }
  return held;
}

/** Polls `check` every 250 ms; fails with `what` and the worker's last lines after `timeoutMs`. */
async function until(w: WorkerProcess, what: string, check: () => boolean, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (w.child.exitCode !== null || w.child.signalCode !== null) throw new Error(`waiting for ${what}: the worker exited:\n${w.lines.slice(-15).join('\n')}`);
    if (Date.now() > deadline) throw new Error(`no ${what} after ${timeoutMs} ms:\n${w.lines.slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const POISON = {
  text: Buffer.from('plain text, not Confluent-framed'),
  empty: Buffer.alloc(0),
  twoBytes: Buffer.from([0, 0]),
  firstByteOne: Buffer.from([1, 0, 0, 0, 1, 2, 3]),
} as const;
/** What each kind's error says is wrong with its bytes. */
const WHAT: Record<keyof typeof POISON, RegExp> = {
  text: /not a Confluent-framed message: the first byte is 0x70, not the magic byte 0x00/,
  empty: /empty message/,
  twoBytes: /Confluent frame truncated: 2 bytes/,
  firstByteOne: /not a Confluent-framed message: the first byte is 0x01, not the magic byte 0x00/,
};

test('(a) bad values among good ones: tolerance=all skips and counts each once (also across a forced re-read), tolerance=none fails naming the first one', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const e = stackEndpoints();
  const topic = unique('e2e-poison');
  const controlAll = unique('e2e-control');
  const controlNone = unique('e2e-control');
  const tableAll = `${uniqueIdent('e2e')}.orders`;
  const tableNone = `${uniqueIdent('e2e')}.orders`;
  res.topics.push(topic, controlAll, controlNone);
  res.tables.push(tableAll, tableNone);
  const subject = `${topic}-value`;
  t.after(() => deleteSubjects([subject]));
  const registry = new ConfluentSchemaResolver({ urls: [e.registryUrl] });
  const schema = orderSchema(uniqueIdent('Order'));
  const id = await registry.register(subject, { type: 'AVRO', schema: JSON.stringify(schema) });
  const type = avro.Type.forSchema(schema as avro.Schema);
  await createTopic(topic, 2);

  const proxy = new FaultProxy(e.proxyControlUrl);
  const all = unique('e2e-tolerate');
  const none = unique('e2e-strict');
  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: all,
        topics: topic,
        controlTopic: controlAll,
        config: {
          ...registryConverter('avro'),
          'tasks.max': '2',
          'iceberg.tables': tableAll,
          'iceberg.tables.auto-create-enabled': 'true',
          'errors.tolerance': 'all',
          'errors.log.enable': 'true',
          // Through the fault proxy: the test fails this connector's first data-file uploads.
          'iceberg.catalog.s3.endpoint': e.proxyS3Endpoint,
        },
      }),
      sinkConnector({
        name: none,
        topics: topic,
        controlTopic: controlNone,
        config: { ...registryConverter('avro'), 'tasks.max': '2', 'iceberg.tables': tableNone, 'iceberg.tables.auto-create-enabled': 'true' },
      }),
    ],
  });
  res.workers.push(worker);
  // Each partition settled with one task of the tolerant connector before anything is produced: a record
  // skipped, then handed to another task by a rebalance, would be counted by both (each task counts once).
  await until(worker, 'one partition per task', () => {
    const held = [...holdings(worker, all).values()];
    return held.length === 2 && held.every((s) => s.size === 1);
  });
  const ns = tableAll.split('.')[0] as string;
  const failUploads = await proxy.arm({ target: 's3', match: { method: 'PUT', path: `/${ns}/.*\\.parquet` }, times: 10, fault: { kind: 'status', preset: 'unavailable' } });
  t.after(() => proxy.remove(failUploads).catch(() => undefined));

  // Per partition: 5 good values, a bad one, and so on; partition 1 has the bad kinds in another order.
  const kinds: Record<number, (keyof typeof POISON)[]> = { 0: ['text', 'empty', 'twoBytes', 'firstByteOne'], 1: ['firstByteOne', 'twoBytes', 'empty', 'text'] };
  const plan: { partition: number; value: Buffer; bad?: keyof typeof POISON }[] = [];
  let seq = 0;
  for (const p of [0, 1]) {
    for (const bad of [...(kinds[p] ?? []), undefined]) {
      for (let i = 0; i < 5; i++) plan.push({ partition: p, value: framed(id, type, seq++) });
      if (bad !== undefined) plan.push({ partition: p, value: POISON[bad], bad });
    }
  }
  const coords = await produceValues(topic, plan);
  const good = coords.filter((_, i) => plan[i]?.bad === undefined);
  const bad = coords.map((c, i) => ({ c, kind: plan[i]?.bad })).filter((x): x is { c: Coordinates; kind: keyof typeof POISON } => x.kind !== undefined);
  assert.equal(good.length, 50);
  assert.equal(bad.length, 8);

  const lines = (msg: string, connector: string): Record<string, unknown>[] => worker.logs(msg).filter((l) => l['connector'] === connector);
  await until(worker, `${good.length} records committed to ${tableAll}`, () => {
    const failed = taskFailures(worker, all);
    if (failed.length > 0) throw new Error(`a task of the tolerant connector failed: ${JSON.stringify(failed[0])}`);
    return committedRecords(worker, tableAll) >= good.length;
  }, 120_000);
  await until(worker, 'both strict tasks failed', () => taskFailures(worker, none, 'for-good').length >= 2, 60_000);
  // Stopped while the strict connector's tasks are FAILED: exit 1, with them in the summary (issue 11).
  assert.equal(await worker.stop(120_000), '1', 'a worker stopped with FAILED tasks exits 1');
  const summary = worker.lines.filter((l) => l.startsWith(`  connector ${none} task `));
  assert.equal(summary.length, 2, `the summary names both strict tasks; last lines:\n${worker.lines.slice(-6).join('\n')}`);

  // tolerance=none: each task names its partition's first bad record (or the other partition's, after
  // taking it over), with what is wrong; nothing at or past it is committed.
  const firstBad = new Map<string, { c: Coordinates; kind: keyof typeof POISON }>();
  for (const b of bad) if (!firstBad.has(`${b.c.partition}`)) firstBad.set(`${b.c.partition}`, b);
  for (const f of taskFailures(worker, none)) {
    const msg = String(f['msg']);
    const m = /^task \S+-(\d+) failed at (.+)\/(\d+)@(\d+): /.exec(msg);
    assert.ok(m !== null, `the failure line names the task and the record: ${msg}`);
    const expectedBad = firstBad.get(m[3] as string);
    assert.ok(expectedBad !== undefined && m[2] === topic && m[4] === String(expectedBad.c.offset), `${msg} names the first bad record of its partition`);
    assert.deepEqual([f['topic'], String(f['partition']), f['offset']], [topic, m[3], m[4]], 'and carries its coordinates as fields');
    assert.match(msg, WHAT[expectedBad.kind]);
    assert.ok(summary.some((l) => l.startsWith(`  connector ${none} task ${m[1]} at ${m[2]}/${m[3]}@${m[4]}: `)), `the summary names task ${m[1]} and the record`);
  }
  assert.equal(taskFailures(worker, all).length, 0, 'no task of the tolerant connector failed');
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  try {
    for (const o of await admin.groupOffsets(`connect-${none}`, topic)) {
      const limit = firstBad.get(`${o.partition}`)?.c.offset as bigint;
      assert.ok(o.offset <= limit, `strict connector committed ${topic}[${o.partition}] up to ${o.offset}, past its first bad record ${limit}`);
    }
  } finally {
    await admin.close();
  }

  // tolerance=all: a forced re-read happened, and still each bad record was logged and counted once.
  assert.ok((await proxy.rule(failUploads)).applied >= 5, 'the proxy failed the uploads');
  assert.ok(lines('cycle abandoned; reading again from the committed offsets', all).length >= 1, 'a cycle was read again');
  const skipped = lines('record skipped (errors.tolerance=all)', all).map((l) => key({ topic: l['topic'], partition: l['partition'], offset: l['offset'] }));
  assert.deepEqual([...skipped].sort(), bad.map((b) => key(b.c)).sort(), 'each bad record logged once, with its coordinates');
  for (const l of lines('record skipped (errors.tolerance=all)', all)) {
    const b = bad.find((x) => key(x.c) === key({ topic: l['topic'], partition: l['partition'], offset: l['offset'] }));
    assert.match(String(l['error']), WHAT[b?.kind ?? 'text']);
  }
  t.diagnostic(`tolerant connector: ${lines('cycle abandoned; reading again from the committed offsets', all).length} cycle(s) read again; proxy failed ${(await proxy.rule(failUploads)).applied} uploads`);
  const stopped = lines('task stopped', all);
  assert.equal(stopped.length, 2);
  assert.equal(stopped.reduce((n, l) => n + Number(l['errorsSkipped']), 0), bad.length, 'errorsSkipped adds up to the bad records, once each');
  await assertExactlyOnce(tableAll, good);
});

test('(b) a schema id the registry learns ~10 s late: its partition waits with back-off while the other lands, then everything lands once', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const e = stackEndpoints();
  const topic = unique('e2e-late-schema');
  const control = unique('e2e-control');
  const table = `${uniqueIdent('e2e')}.orders`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const subject = `${topic}-value`;
  const lateSubject = `${topic}-late-value`;
  const probeSubject = `${topic}-probe-value`;
  t.after(() => deleteSubjects([subject, lateSubject, probeSubject]));
  const registry = new ConfluentSchemaResolver({ urls: [e.registryUrl] });
  const known = orderSchema(uniqueIdent('Order'));
  const knownId = await registry.register(subject, { type: 'AVRO', schema: JSON.stringify(known) });
  // The registry numbers new schemas in turn: the next one gets the id after this one's.
  const probeId = await registry.register(probeSubject, { type: 'AVRO', schema: JSON.stringify(orderSchema(uniqueIdent('Probe'))) });
  const lateId = probeId + 1;
  const late = orderSchema(uniqueIdent('Late'));
  await createTopic(topic, 2);
  const knownType = avro.Type.forSchema(known as avro.Schema);
  const lateType = avro.Type.forSchema(late as avro.Schema);
  const plan: { partition: number; value: Buffer }[] = [];
  for (let i = 0; i < 20; i++) plan.push({ partition: 0, value: framed(knownId, knownType, i) });
  for (let i = 0; i < 5; i++) plan.push({ partition: 1, value: framed(knownId, knownType, 100 + i) });
  for (let i = 0; i < 10; i++) plan.push({ partition: 1, value: framed(lateId, lateType, 200 + i) });
  for (let i = 0; i < 5; i++) plan.push({ partition: 1, value: framed(knownId, knownType, 300 + i) });
  const coords = await produceValues(topic, plan);
  const producedAt = Date.now();
  const waiting = coords[25] as Coordinates; // the first record with the late id

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [sinkConnector({ name: unique('e2e-late'), topics: topic, controlTopic: control, config: { ...registryConverter('avro'), 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true' } })],
  });
  res.workers.push(worker);
  const pauses = (): Record<string, unknown>[] => worker.logs("partition paused: a record's schema cannot be fetched yet; the task's other partitions go on");
  // Partition 0 and the head of partition 1 land while the rest of partition 1 waits for its schema.
  await until(worker, 'partition 0 and the head of partition 1 committed while partition 1 waits', () => committedRecords(worker, table) >= 25 && pauses().length >= 2, 60_000);
  assert.equal(committedRecords(worker, table), 25, 'nothing of partition 1 past the waiting record');
  for (const p of pauses()) {
    assert.equal(p['partition'], 1);
    assert.equal(p['offset'], String(waiting.offset), 'it waits at the first record with the unknown id');
  }
  const wait = Math.max(0, producedAt + 10_000 - Date.now());
  await new Promise((r) => setTimeout(r, wait));
  const registered = await registry.register(lateSubject, { type: 'AVRO', schema: JSON.stringify(late) });
  assert.equal(registered, lateId, `the late schema got id ${registered}, not ${lateId}: another client registered a new schema in between; run again`);
  await until(worker, 'everything committed', () => committedRecords(worker, table) >= coords.length, 60_000);
  await stopWorker(worker);

  assert.equal(taskFailures(worker).length, 0);
  assert.equal(worker.logs('cycle abandoned; reading again from the committed offsets').length, 0, 'no cycle was abandoned while partition 1 waited');
  const tries = pauses().map((p) => Number(p['tries']));
  assert.deepEqual(tries, tries.map((_, i) => i + 1), 'one hold whose tries count up');
  const delays = pauses().map((p) => Number(p['retryInMs']));
  t.diagnostic(`partition 1 waited ${tries.length} times, ${delays.join(', ')} ms; resumed ${String(worker.logs('partition resumed: the record waiting for its schema went through')[0]?.['waitedMs'])} ms after its first wait`);
  assert.ok(tries.length <= 12, `a handful of tries in ~10 s, not one per cycle (${delays.join(', ')} ms)`);
  // Decorrelated jitter (core/retry.ts): every wait at least the first delay, at most the cap; the unit test checks the growth exactly.
  assert.ok(delays.every((d) => d >= SCHEMA_WAIT_BACKOFF.initialDelayMs && d <= SCHEMA_WAIT_BACKOFF.maxDelayMs), `waits within the back-off bounds (${delays.join(', ')} ms)`);
  assert.equal(worker.logs('partition resumed: the record waiting for its schema went through').length, 1);
  await assertExactlyOnce(table, coords);
});
