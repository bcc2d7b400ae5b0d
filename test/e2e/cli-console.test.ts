/**
 * `icefloe produce` and `icefloe consume` on the real stack, run as a user runs them (bin/icefloe): JSON,
 * Avro and Protobuf records produced to topics that do not exist yet and read back decoded; the bytes on
 * the topic, read with the Kafka client directly (not through our decoders), are what a Confluent
 * serializer writes (magic byte 0, the id the registry gives the subject <topic>-value, the Protobuf
 * message-index list) and decode with avsc / protobufjs from the registry's own schema text; a topic that
 * cannot be created fails at once naming the topic and the broker.
 */
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RdKafka } from '@confluentinc/kafka-javascript';
import avro from 'avsc';
import protobuf from 'protobufjs';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import { kafkaSettings, unique } from '../helpers/kafka.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';

const launcher = fileURLToPath(new URL('../../bin/icefloe', import.meta.url));

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** bin/icefloe with the stack's endpoints, stdin given, bounded in time (a hang fails the test, not the suite). */
function icefloe(args: readonly string[], stdin = '', timeoutMs = 45_000): Promise<Run> {
  const e = stackEndpoints();
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(launcher, [...args, '--bootstrap-servers', e.kafkaBootstrap, '--registry-url', e.registryUrl], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`icefloe ${args.join(' ')} did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr, ms: Date.now() - started });
    });
    child.stdin.end(stdin);
  });
}

/** The topic's records as raw bytes, read with librdkafka directly (assignment, no group commits). */
async function rawRecords(topic: string, count: number): Promise<{ key: Buffer | null; value: Buffer }[]> {
  const consumer = new RdKafka.KafkaConsumer({ ...(await kafkaSettings()), 'group.id': unique('cli-console-raw'), 'enable.auto.commit': false }, { 'auto.offset.reset': 'earliest' });
  await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())));
  try {
    consumer.assign([{ topic, partition: 0, offset: 0 }]);
    const got: { key: Buffer | null; value: Buffer }[] = [];
    const deadline = Date.now() + 15_000;
    while (got.length < count && Date.now() < deadline) {
      const batch = await new Promise<RdKafka.Message[]>((resolve, reject) => consumer.consume(count - got.length, (err, m) => (err ? reject(err) : resolve(m))));
      for (const m of batch) got.push({ key: (m.key as Buffer | undefined) ?? null, value: m.value as Buffer });
    }
    return got;
  } finally {
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  }
}

/** The registry's answer for the subject's latest version: the id a serializer would frame and the schema text. */
async function registered(subject: string): Promise<{ id: number; schema: string }> {
  const res = await fetch(`${stackEndpoints().registryUrl}/subjects/${encodeURIComponent(subject)}/versions/latest`);
  assert.equal(res.status, 200, `registry subject ${subject}`);
  return (await res.json()) as { id: number; schema: string };
}

function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function setUp(t: TestContext): Promise<{ topic: (p: string) => string; dir: string }> {
  const e = stackEndpoints();
  await requireReachable('Kafka', e.kafkaBootstrap);
  await requireReachable('registry', e.registryUrl);
  const topics: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-cli-console-'));
  t.after(async () => {
    rmSync(dir, { recursive: true, force: true });
    const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
    for (const name of topics) await admin.deleteTopic(name).catch(() => undefined);
    await admin.close();
  });
  return {
    dir,
    topic: (prefix) => {
      const name = unique(prefix);
      topics.push(name);
      return name;
    },
  };
}

test('JSON lines from stdin to a topic that does not exist yet, keyed by a field, and back', async (t) => {
  const { topic: name } = await setUp(t);
  const topic = name('cli-json');
  const p = await icefloe(['produce', '--topic', topic, '--key-field', 'id', '--partitions', '1'], '{"id": 1, "name": "first"}\n\n{"id": "b-2", "big": 12345678901234567890}\n');
  assert.equal(p.status, 0, p.stderr);
  assert.equal(p.stderr.trim(), `produced 2 json records to ${topic} (created with 1 partition): partition@offsets 0@0-1`);
  // The bytes are the text as given (JsonConverter with schemas.enable=false reads exactly that).
  const raw = await rawRecords(topic, 2);
  assert.deepEqual(raw.map((r) => [r.key?.toString(), r.value.toString()]), [['1', '{"id": 1, "name": "first"}'], ['b-2', '{"id": "b-2", "big": 12345678901234567890}']]);

  const c = await icefloe(['consume', '--topic', topic, '--from-beginning', '--max-messages', '2']);
  assert.equal(c.status, 0, c.stderr);
  assert.equal(c.stderr.trim(), `consumed 2 records from ${topic} (stopped by --max-messages 2)`);
  const lines = c.stdout.trim().split('\n');
  assert.equal(lines.length, 2);
  assert.match(lines[1] as string, /"key":"b-2","value":\{"id": "b-2", "big": 12345678901234567890\},"format":"json"/);
  assert.deepEqual(jsonLines(c.stdout).map((l) => [l['partition'], l['offset'], l['key'], l['format']]), [[0, 0, '1', 'json'], [0, 1, 'b-2', 'json']]);
  // Without --from-beginning only new records count: none arrive, and --timeout-ms ends the read.
  const idle = await icefloe(['consume', '--topic', topic, '--timeout-ms', '1500']);
  assert.equal(idle.status, 0, idle.stderr);
  assert.equal(idle.stdout, '');
  assert.equal(idle.stderr.trim(), `consumed 0 records from ${topic} (stopped by no new record for 1500 ms)`);
});

test('Avro with a schema file: registered as <topic>-value, Confluent-framed, decoded back', async (t) => {
  const { topic: name, dir } = await setUp(t);
  const topic = name('cli-avro');
  const schema = { type: 'record', name: 'Reading', namespace: 'demo', fields: [{ name: 'sensor', type: 'string' }, { name: 'value', type: 'double' }, { name: 'note', type: ['null', 'string'], default: null }] };
  const file = join(dir, 'reading.avsc');
  writeFileSync(file, JSON.stringify(schema));
  const p = await icefloe(['produce', '--topic', topic, '--format', 'avro', '--schema', file, '--key', 'k1', '--value', '{"sensor": "s1", "value": 1.5}', '--value', '{"sensor": "s2", "value": -2, "note": "n"}']);
  assert.equal(p.status, 0, p.stderr);
  const reg = await registered(`${topic}-value`);
  assert.equal(p.stderr.trim(), `produced 2 avro records to ${topic} (created with 1 partition): partition@offsets 0@0-1; schema id ${reg.id} registered as ${topic}-value`);

  const type = avro.Type.forSchema(JSON.parse(reg.schema) as avro.Schema, { wrapUnions: false });
  const raw = await rawRecords(topic, 2);
  for (const r of raw) {
    assert.equal(r.value[0], 0, 'magic byte');
    assert.equal(r.value.readUInt32BE(1), reg.id, 'the registered schema id');
    assert.equal(r.key?.toString(), 'k1');
  }
  assert.deepEqual(raw.map((r) => ({ ...(type.fromBuffer(r.value.subarray(5)) as object) })), [
    { sensor: 's1', value: 1.5, note: null },
    { sensor: 's2', value: -2, note: 'n' },
  ]);

  const c = await icefloe(['consume', '--topic', topic, '--from-beginning', '--max-messages', '2']);
  assert.equal(c.status, 0, c.stderr);
  assert.deepEqual(jsonLines(c.stdout).map((l) => [l['key'], l['value'], l['format'], l['schemaId']]), [
    ['k1', { sensor: 's1', value: 1.5, note: null }, 'avro', reg.id],
    ['k1', { sensor: 's2', value: -2, note: 'n' }, 'avro', reg.id],
  ]);
});

test('Protobuf inline, the second message of the file: its message-index list in the frame, decoded back', async (t) => {
  const { topic: name } = await setUp(t);
  const topic = name('cli-pb');
  const proto = 'syntax = "proto3";\npackage demo;\nmessage Other { string x = 1; }\nmessage Event { int64 id = 1; string kind = 2; repeated string tags = 3; }\n';
  const p = await icefloe(['produce', '--topic', topic, '--format', 'protobuf', '--schema', proto, '--message', 'demo.Event', '--key-field', 'kind'], '{"id": 9007199254740993, "kind": "click", "tags": ["a", "b"]}\n');
  assert.equal(p.status, 0, p.stderr);
  const reg = await registered(`${topic}-value`);
  assert.match(p.stderr, new RegExp(`^produced 1 protobuf record to ${topic} .*; schema id ${reg.id} registered as ${topic}-value$`, 'm'));

  const [raw] = await rawRecords(topic, 1);
  assert.ok(raw !== undefined);
  assert.equal(raw.value[0], 0, 'magic byte');
  assert.equal(raw.value.readUInt32BE(1), reg.id, 'the registered schema id');
  // Message-index list [1]: count 1 and index 1, each a zig-zag varint (2).
  assert.deepEqual([...raw.value.subarray(5, 7)], [2, 2]);
  const root = protobuf.parse(reg.schema, { keepCase: true }).root;
  const event = root.lookupType('demo.Event');
  assert.deepEqual(event.toObject(event.decode(raw.value.subarray(7)), { longs: String }), { id: '9007199254740993', kind: 'click', tags: ['a', 'b'] });
  assert.equal(raw.key?.toString(), 'click');

  const c = await icefloe(['consume', '--topic', topic, '--from-beginning', '--max-messages', '1']);
  assert.equal(c.status, 0, c.stderr);
  assert.deepEqual(jsonLines(c.stdout).map((l) => [l['key'], l['value'], l['format']]), [['click', { id: '9007199254740993', kind: 'click', tags: ['a', 'b'] }, 'protobuf']]);
});

test('a topic that cannot be created fails at once, naming the topic and the broker; a bad record produces nothing', async (t) => {
  const { topic: name } = await setUp(t);
  const e = stackEndpoints();
  const bad = await icefloe(['produce', '--topic', 'no spaces allowed!', '--value', '{"id": 1}']);
  assert.equal(bad.status, 2, bad.stderr);
  assert.ok(bad.ms < 10_000, `took ${bad.ms} ms`);
  assert.match(bad.stderr, new RegExp(`^icefloe produce: could not find or create topic no spaces allowed! on the Kafka cluster at ${e.kafkaBootstrap}: .*Topic name is invalid`));

  // Every record is checked before anything happens: the topic is not even created.
  const topic = name('cli-bad-record');
  const r = await icefloe(['produce', '--topic', topic], '{"id": 1}\n{"id": 2\n');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^icefloe produce: stdin line 2 is not a JSON document: /);
  const c = await icefloe(['consume', '--topic', topic, '--timeout-ms', '1000']);
  assert.equal(c.status, 2, c.stderr);
  assert.match(c.stderr, new RegExp(`^icefloe consume: cannot read topic ${topic} on the Kafka cluster at ${e.kafkaBootstrap}: .*Unknown topic or partition`));
});
