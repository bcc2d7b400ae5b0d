/**
 * The dead-letter queue end to end (the real worker, tasks as child processes, Avro values with the
 * stack's schema registry, REST catalog on S3), counted by Kafka coordinates only.
 *
 * One connector with errors.tolerance=all, a dead-letter topic (context headers on) and a dead-letter
 * table reads two partitions in which bad records sit between good ones: bytes a registry converter
 * cannot read (plain text, 2 bytes, a first byte of 1: stage deserialize), a record over
 * icefloe.errors.record.max-bytes (deserialize), and a value that does not fit the table (a null in a
 * required column, written with a second schema: stage convert). The fault proxy fails the first data-file
 * uploads, so a cycle holding dead letters is abandoned and read again. Then:
 * - every good record is in the data table exactly once (PyIceberg, DuckDB counts the same rows);
 * - every bad record is in the dead-letter TABLE exactly once, with its stage and error, read by PyIceberg;
 * - every bad record is in the dead-letter TOPIC exactly once (read_committed: the abandoned cycle's
 *   transaction was aborted), with its original value and Connect's `__connect.errors.*` headers;
 * - each is logged once with its coordinates, and nothing else is.
 * Then the replay runbook: the connector's config changes through the REST API to evolve the table's
 * schema (the fix for the null labels), and `icefloe dead-letters replay` puts the 8 dead letters back on
 * the source topic in one go; the 2 that fit now land in the table, the 6 that cannot fail again into the
 * dead-letter queue, each exactly once by its new coordinates; a dry run after it finds only those 6
 * (the replay's progress was committed with its records).
 * A second connector on the same topic with errors.tolerance=none fails its task: its REST status says
 * FAILED with a trace naming the first bad record's topic, partition and offset and what is wrong, and its
 * consumer group committed nothing past that record.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';
import avro from 'avsc';
import { ConfluentKafkaAdmin, ConfluentKafkaSource, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import type { RawRecord } from '../../src/consume/port.ts';
import { ConfluentSchemaResolver } from '../../src/decode/registry/schema-registry.ts';
import { DLQ_HEADERS } from '../../src/sink/dead-letters.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import { assertExactlyOnce, coordinateKey } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { FAST_GROUP, kafkaSettings, pollUntil, unique } from '../helpers/kafka.ts';
import { readTable } from '../helpers/readers.ts';
import { avroFramed, committedRecords, e2eResources, PROCESS_WORKER, registryConverter, sinkConnector, uniqueIdent } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const TIMEOUT = 300_000;
const CLI = resolve(import.meta.dirname, '../../src/cli.ts');

/** Runs the icefloe command line; its exit code, stdout and stderr. */
function runCli(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('exit', (code) => res({ code, stdout, stderr }));
  });
}
const MAX_BYTES = 2000;

async function until(w: WorkerProcess, what: string, check: () => boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (w.child.exitCode !== null || w.child.signalCode !== null) throw new Error(`waiting for ${what}: the worker exited:\n${w.lines.slice(-15).join('\n')}`);
    const failed = taskFailures(w).filter((f) => !String(f['connector']).startsWith('e2e-strict'));
    if (failed.length > 0) throw new Error(`waiting for ${what}: a task failed: ${JSON.stringify(failed[0])}`);
    if (Date.now() > deadline) throw new Error(`no ${what} after ${timeoutMs} ms:\n${w.lines.slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

type Kind = 'text' | 'twoBytes' | 'firstByteOne' | 'oversize' | 'nullLabel';
const STAGE: Record<Kind, string> = { text: 'deserialize', twoBytes: 'deserialize', firstByteOne: 'deserialize', oversize: 'deserialize', nullLabel: 'convert' };
const WHAT: Record<Kind, RegExp> = {
  text: /not a Confluent-framed message: the first byte is 0x70/,
  twoBytes: /Confluent frame truncated: 2 bytes/,
  firstByteOne: /the first byte is 0x01, not the magic byte 0x00/,
  oversize: new RegExp(`over icefloe\\.errors\\.record\\.max-bytes=${MAX_BYTES}`),
  nullLabel: /required field label .* is null/,
};

const header = (r: RawRecord, key: string): string | undefined => {
  const h = r.headers.find((x) => x.key === key);
  return h === undefined || h.value === null ? undefined : Buffer.from(h.value).toString('utf8');
};

test('bad records go to the dead-letter topic and table exactly once, across a cycle read again; good ones to the table exactly once', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const e = stackEndpoints();
  const topic = unique('e2e-dlq-src');
  const dlqTopic = unique('e2e-dlq');
  const control = unique('e2e-control');
  const strictControl = unique('e2e-control');
  const ns = uniqueIdent('e2e');
  const table = `${ns}.orders`;
  const dlqTable = `${ns}.orders_dlq`;
  const strictTable = `${ns}.strict_orders`;
  res.topics.push(topic, dlqTopic, control, strictControl);
  res.tables.push(table, dlqTable, strictTable);
  const subject = `${topic}-value`;
  const looseSubject = `${topic}-loose-value`;
  t.after(async () => {
    for (const s of [subject, looseSubject]) {
      await fetch(`${e.registryUrl}/subjects/${encodeURIComponent(s)}`, { method: 'DELETE' }).catch(() => undefined);
      await fetch(`${e.registryUrl}/subjects/${encodeURIComponent(s)}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
    }
  });
  const registry = new ConfluentSchemaResolver({ urls: [e.registryUrl] });
  const name = uniqueIdent('Order');
  const strict = { type: 'record', name, fields: [{ name: 'seq', type: 'long' }, { name: 'label', type: 'string' }] };
  // The same record with an optional label: the table (created from the first) keeps label required.
  const loose = { type: 'record', name, fields: [{ name: 'seq', type: 'long' }, { name: 'label', type: ['null', 'string'], default: null }] };
  const strictId = await registry.register(subject, { type: 'AVRO', schema: JSON.stringify(strict) });
  const looseId = await registry.register(looseSubject, { type: 'AVRO', schema: JSON.stringify(loose) });
  const strictType = avro.Type.forSchema(strict as avro.Schema);
  const looseType = avro.Type.forSchema(loose as avro.Schema);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  try {
    await admin.ensureTopic({ name: topic, partitions: 2, replicationFactor: -1 });
  } finally {
    await admin.close();
  }

  // The first record of each partition is good, so the table exists before any bad one arrives.
  const poison = (kind: Kind, seq: number): Buffer => {
    switch (kind) {
      case 'text':
        return Buffer.from('plain text, not Confluent-framed');
      case 'twoBytes':
        return Buffer.from([0, 0]);
      case 'firstByteOne':
        return Buffer.from([1, 0, 0, 0, 1, 2, 3]);
      case 'oversize':
        return avroFramed(strictId, strictType, { seq, label: 'x'.repeat(MAX_BYTES) });
      case 'nullLabel':
        return avroFramed(looseId, looseType, { seq, label: null });
    }
  };
  const kinds: Record<number, Kind[]> = { 0: ['text', 'oversize', 'nullLabel', 'twoBytes'], 1: ['nullLabel', 'firstByteOne', 'oversize', 'text'] };
  const plan: { partition: number; value: Buffer; key: string; bad?: Kind }[] = [];
  let seq = 0;
  for (const p of [0, 1]) {
    for (const bad of [...(kinds[p] ?? []), undefined]) {
      for (let i = 0; i < 5; i++, seq++) plan.push({ partition: p, key: `k${seq}`, value: avroFramed(strictId, strictType, { seq, label: `order ${seq}` }) });
      if (bad !== undefined) plan.push({ partition: p, key: `k${seq}`, value: poison(bad, seq++), bad });
    }
  }

  const proxy = new FaultProxy(e.proxyControlUrl);
  const connector = unique('e2e-dlq');
  const strictConnector = unique('e2e-strict');
  const tolerant = sinkConnector({
        name: connector,
        topics: topic,
        controlTopic: control,
        config: {
          ...registryConverter('avro'),
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'errors.tolerance': 'all',
          'errors.log.enable': 'true',
          'errors.deadletterqueue.topic.name': dlqTopic,
          'errors.deadletterqueue.topic.replication.factor': '1',
          'errors.deadletterqueue.context.headers.enable': 'true',
          'icefloe.errors.deadletterqueue.table.name': dlqTable,
          'icefloe.errors.record.max-bytes': String(MAX_BYTES),
          // Through the fault proxy: the test fails the first data-file uploads of both tables.
          'iceberg.catalog.s3.endpoint': e.proxyS3Endpoint,
        },
      });
  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      tolerant,
      sinkConnector({
        name: strictConnector,
        topics: topic,
        controlTopic: strictControl,
        config: { ...registryConverter('avro'), 'iceberg.tables': strictTable, 'iceberg.tables.auto-create-enabled': 'true', 'errors.tolerance': 'none', 'icefloe.errors.record.max-bytes': String(MAX_BYTES) },
      }),
    ],
  });
  res.workers.push(worker);
  await until(worker, 'partitions assigned', () => worker.logs('partitions assigned').filter((l) => l['connector'] === connector).length > 0);
  const failUploads = await proxy.arm({ target: 's3', match: { method: 'PUT', path: `/${ns}/.*\\.parquet` }, times: 10, fault: { kind: 'status', preset: 'unavailable' } });
  t.after(() => proxy.remove(failUploads).catch(() => undefined));

  const producer = await ConfluentRecordProducer.connect({ settings: await kafkaSettings(), clientId: 'icefloe-e2e-dlq' });
  const send = async (records: typeof plan): Promise<Coordinates[]> =>
    (await producer.send(records.map((r) => ({ topic, partition: r.partition, key: r.key, value: r.value })))).map((d) => ({ topic: d.topic, partition: d.partition, offset: d.offset }));
  let coords: Coordinates[];
  let good: Coordinates[];
  let bad: Map<string, { c: Coordinates; kind: Kind; value: Buffer }>;
  try {
    coords = await send(plan);
    good = coords.filter((_, i) => plan[i]?.bad === undefined);
    bad = new Map(coords.flatMap((c, i) => (plan[i]?.bad === undefined ? [] : [[coordinateKey(c), { c, kind: plan[i]?.bad as Kind, value: plan[i]?.value as Buffer }] as const])));
    assert.equal(good.length, 50);
    assert.equal(bad.size, 8);
    await until(worker, 'every record committed to its table', () => committedRecords(worker, table) >= good.length && committedRecords(worker, dlqTable) >= bad.size);
    // Good records only, in later cycles: their transactions carry no dead letter again.
    const more: typeof plan = [];
    for (let i = 0; i < 10; i++, seq++) more.push({ partition: i % 2, key: `k${seq}`, value: avroFramed(strictId, strictType, { seq, label: `order ${seq}` }) });
    plan.push(...more);
    const later = await send(more);
    coords.push(...later);
    good.push(...later);
    await until(worker, 'the later good records committed', () => committedRecords(worker, table) >= good.length);
  } finally {
    await producer.close();
  }
  const dlqSource = await ConfluentKafkaSource.connect({ settings: { ...(await kafkaSettings()), ...FAST_GROUP, 'isolation.level': 'read_committed', 'auto.offset.reset': 'earliest' }, overrides: {}, groupId: unique('e2e-dlq-reader') });
  let letters: RawRecord[];
  try {
    await dlqSource.subscribe({ kind: 'list', topics: [dlqTopic] }, { onAssigned: async () => undefined, onRevoked: async () => undefined });
    letters = await pollUntil(dlqSource, (got) => got.length >= bad.size, 30_000);
    // Anything more would be a duplicate: read on a little longer than the last one took.
    letters.push(...(await dlqSource.poll({ maxRecords: 500, timeoutMs: 2_000 })));
  } finally {
    await dlqSource.close();
  }

  // The replay runbook: fix the cause (evolve the table's schema: label becomes optional), then replay.
  const rest = await worker.restUrl();
  const assignedBefore = worker.logs('partitions assigned').filter((l) => l['connector'] === connector).length;
  const put = await fetch(`${rest}/connectors/${connector}/config`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...tolerant.config, 'iceberg.tables.evolve-schema-enabled': 'true' }) });
  assert.equal(put.status, 200, await put.text());
  await until(worker, 'the reconfigured task assigned', () => worker.logs('partitions assigned').filter((l) => l['connector'] === connector).length > assignedBefore);
  const marksAdmin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  const before = new Map((await marksAdmin.watermarks(topic)).map((m) => [m.partition, m.high]));
  await marksAdmin.close();
  const replay = await runCli(['dead-letters', 'replay', `${worker.dir}/worker.properties`, `${worker.dir}/${connector}.json`]);
  assert.equal(replay.code, 0, replay.stderr);
  const report = JSON.parse(replay.stdout) as { replayed: number; byTopic: Record<string, number>; group: string };
  assert.deepEqual([report.replayed, report.byTopic], [bad.size, { [topic]: bad.size }], replay.stdout);
  // The replayed records, by their new coordinates in the source topic.
  const reader = await ConfluentKafkaSource.connect({ settings: { ...(await kafkaSettings()), ...FAST_GROUP, 'isolation.level': 'read_committed', 'auto.offset.reset': 'earliest' }, overrides: {}, groupId: unique('e2e-dlq-replayed') });
  let replayed: RawRecord[];
  try {
    await reader.subscribe({ kind: 'list', topics: [topic] }, { onAssigned: async () => undefined, onRevoked: async () => undefined });
    const isNew = (r: RawRecord): boolean => r.offset >= (before.get(r.partition) ?? 0n);
    replayed = (await pollUntil(reader, (got) => got.filter(isNew).length >= bad.size, 30_000)).filter(isNew);
  } finally {
    await reader.close();
  }
  const kindOf = (value: Uint8Array | null): Kind => [...bad.values()].find((b) => b.value.equals(Buffer.from(value ?? new Uint8Array())))?.kind as Kind;
  const fixed = replayed.filter((r) => kindOf(r.value) === 'nullLabel').map((r) => ({ topic: r.topic, partition: r.partition, offset: r.offset }));
  const failedAgain = new Map(replayed.filter((r) => kindOf(r.value) !== 'nullLabel').map((r) => {
    const c = { topic: r.topic, partition: r.partition, offset: r.offset };
    return [coordinateKey(c), { c, kind: kindOf(r.value), value: Buffer.from(r.value ?? new Uint8Array()) }] as const;
  }));
  assert.deepEqual([fixed.length, failedAgain.size], [2, 6]);
  for (const r of replayed) assert.equal(r.headers.filter((h) => h.key.startsWith('__connect.errors.')).length, 0, 'the context headers are not replayed');
  await until(worker, 'the replayed records committed', () => committedRecords(worker, table) >= good.length + fixed.length && committedRecords(worker, dlqTable) >= bad.size + failedAgain.size);
  const dry = await runCli(['dead-letters', 'replay', `${worker.dir}/worker.properties`, `${worker.dir}/${connector}.json`, '--dry-run']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal((JSON.parse(dry.stdout) as { replayed: number }).replayed, failedAgain.size, `a dry run after the replay finds only the dead letters written since: ${dry.stdout}`);
  // errors.tolerance=none: the strict connector's task is FAILED, and its status says where and why.
  let status: { connector: { state: string }; tasks: { id: number; state: string; trace?: string }[] } | undefined;
  const deadline = Date.now() + 60_000;
  for (;;) {
    status = (await (await fetch(`${rest}/connectors/${strictConnector}/status`)).json()) as typeof status;
    if (status?.tasks[0]?.state === 'FAILED' || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const firstBad = [0, 1].map((p) => [...bad.values()].find((b) => b.c.partition === p) as { c: Coordinates; kind: Kind });
  const strictTask = status?.tasks[0];
  assert.equal(strictTask?.state, 'FAILED', `the strict task failed: ${JSON.stringify(status)}`);
  const named = firstBad.find((b) => strictTask?.trace?.includes(`${b.c.topic}/${b.c.partition}@${b.c.offset}`));
  assert.ok(named !== undefined, `the trace names the first bad record of a partition: ${strictTask?.trace}`);
  assert.match(strictTask?.trace ?? '', WHAT[named.kind], 'and what is wrong with it');
  assert.equal(status?.connector.state, 'RUNNING', 'the connector runs; its task failed');
  const groupAdmin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  try {
    for (const o of await groupAdmin.groupOffsets(`connect-${strictConnector}`, topic)) {
      const limit = firstBad[o.partition]?.c.offset as bigint;
      assert.ok(o.offset <= limit, `the strict connector committed ${topic}[${o.partition}] up to ${o.offset}, past its first bad record ${limit}`);
    }
  } finally {
    await groupAdmin.close();
  }
  // A worker stopped with a FAILED task exits 1 (issue 11); the tolerant connector's tasks stopped cleanly.
  assert.equal(await worker.stop(120_000), '1');

  assert.ok((await proxy.rule(failUploads)).applied >= 1, 'the proxy failed an upload');
  const reread = worker.logs('cycle abandoned; reading again from the committed offsets').length;
  assert.ok(reread >= 1, 'a cycle was abandoned and read again');
  assert.equal(taskFailures(worker, connector).length, 0);

  // The data table: every good record once, nothing else.
  await assertExactlyOnce(table, [...good, ...fixed]);
  // The dead-letter table: every bad record once (its own topic/partition/offset columns), nothing else.
  const allBad = new Map([...bad, ...failedAgain]);
  await assertExactlyOnce(dlqTable, [...allBad.values()].map((b) => b.c), { prefix: '' });
  const rows = (await readTable({ table: dlqTable, columns: ['topic', 'partition', 'offset', 'key', 'value', 'stage', 'table', 'error_class', 'error_message', 'connector', 'task', 'failed_at'] })).rows ?? [];
  for (const row of rows) {
    const b = allBad.get(coordinateKey({ topic: String(row['topic']), partition: Number(row['partition']), offset: BigInt(String(row['offset'])) }));
    assert.ok(b !== undefined);
    assert.equal(row['stage'], STAGE[b.kind], `${b.kind}: stage`);
    assert.match(String(row['error_message']), WHAT[b.kind], `${b.kind}: error message`);
    assert.equal(row['error_class'], 'io.icefloe.errors.DataError');
    assert.equal(row['value'], b.value.toString('base64'), `${b.kind}: the original value bytes`);
    assert.equal(row['connector'], connector);
    assert.equal(row['table'], null, 'a record that went to no table names none');
    assert.ok(typeof row['failed_at'] === 'string' && row['failed_at'] !== '', 'the time of the failure');
  }

  // The dead-letter topic: every bad record once (by its context headers), its value as read, nothing else.
  const seen = new Map<string, number>();
  for (const l of letters) {
    const k = `${header(l, DLQ_HEADERS.topic)}/${header(l, DLQ_HEADERS.partition)}/${header(l, DLQ_HEADERS.offset)}`;
    seen.set(k, (seen.get(k) ?? 0) + 1);
    const b = bad.get(k);
    assert.ok(b !== undefined, `a dead letter for a record that was not bad: ${k}`);
    assert.deepEqual(Buffer.from(l.value ?? new Uint8Array()), b.value, `${b.kind}: the value as read`);
    assert.equal(header(l, DLQ_HEADERS.stage), STAGE[b.kind] === 'deserialize' ? 'VALUE_CONVERTER' : 'TASK_PUT');
    assert.equal(header(l, DLQ_HEADERS.icefloeStage), STAGE[b.kind]);
    assert.equal(header(l, DLQ_HEADERS.connector), connector);
    assert.equal(header(l, DLQ_HEADERS.exceptionClass), 'io.icefloe.errors.DataError');
    assert.match(header(l, DLQ_HEADERS.message) ?? '', WHAT[b.kind]);
    assert.ok((header(l, DLQ_HEADERS.stackTrace) ?? '').includes('DataError'), 'a stack trace');
    assert.equal(header(l, DLQ_HEADERS.executingClass), STAGE[b.kind] === 'deserialize' ? 'io.confluent.connect.avro.AvroConverter' : 'org.apache.iceberg.connect.IcebergSinkConnector');
    assert.equal(Buffer.from(l.key ?? new Uint8Array()).toString(), plan[coords.findIndex((c) => coordinateKey(c) === k)]?.key, 'the key as read');
  }
  assert.deepEqual([...seen.entries()].filter(([, n]) => n !== 1), [], 'no dead letter twice');
  assert.deepEqual([...seen.keys()].sort(), [...bad.keys()].sort(), 'every bad record has its dead letter');

  // Logged once each, with its coordinates and stage.
  const logged = worker.logs('record sent to the dead-letter queue (errors.tolerance=all)').filter((l) => l['connector'] === connector);
  assert.deepEqual(logged.map((l) => `${String(l['topic'])}/${String(l['partition'])}/${String(l['offset'])}`).sort(), [...allBad.keys()].sort());
  const stopped = worker.logs('task stopped').filter((l) => l['connector'] === connector);
  // The first incarnation's tasks counted the first 8; the reconfigured ones the 6 that failed again.
  assert.equal(stopped.reduce((n, l) => n + Number(l['deadLettered']), 0), allBad.size, 'deadLettered adds up to the bad records, once each');
  t.diagnostic(`${reread} cycle(s) read again; proxy failed ${(await proxy.rule(failUploads)).applied} upload(s); ${letters.length} dead letters on the topic, ${rows.length} rows in the dead-letter table`);
});
