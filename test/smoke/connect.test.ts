/**
 * Smoke: the stack's reference Kafka Connect worker (Apache Kafka Connect from Maven Central, distributed
 * mode, scripts/stack.d/connect.sh) answers as the real thing: the version of the stack's Kafka, healthy,
 * the file sink installed, and a file sink connector it runs delivers records from the stack's Kafka. The
 * REST conformance suite (test/e2e/rest-conformance.test.ts) takes its answers as the reference.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaJS } from '@confluentinc/kafka-javascript';
import { connectWorkerUrl, requireReachable, stackEndpoints } from '../helpers/stack.ts';

const NAME = 'Kafka Connect reference worker';

async function connectUrl(): Promise<string> {
  const url = connectWorkerUrl();
  await requireReachable(NAME, url);
  return url;
}

/** The stack's Kafka version (scripts/stack.env), which the worker's connect-runtime must match. */
function kafkaVersion(): string {
  const env = readFileSync(new URL('../../scripts/stack.env', import.meta.url), 'utf8');
  const v = /^KAFKA_VERSION=(.+)$/m.exec(env)?.[1];
  assert.ok(v !== undefined, 'scripts/stack.env has KAFKA_VERSION');
  return v;
}

async function call(method: string, url: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const init: RequestInit = { method };
  if (body !== undefined) init.body = JSON.stringify(body);
  if (body !== undefined) init.headers = { 'content-type': 'application/json' };
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${NAME}: ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('Kafka Connect reference worker: GET / reports the stack Kafka version and its cluster, /health is healthy, the file sink is installed', async () => {
  const url = await connectUrl();
  const root = await call('GET', `${url}/`);
  assert.equal(root.status, 200);
  const info = root.json as { version: string; commit: string; kafka_cluster_id: string };
  assert.equal(info.version, kafkaVersion());
  assert.match(info.commit, /^[0-9a-f]{16}$/);
  assert.ok(info.kafka_cluster_id.length > 0, 'kafka_cluster_id is set');
  const health = await call('GET', `${url}/health`);
  assert.deepEqual([health.status, (health.json as { status: string }).status], [200, 'healthy']);
  const plugins = (await call('GET', `${url}/connector-plugins`)).json as { class: string; type: string; version: string }[];
  assert.ok(
    plugins.some((p) => p.class === 'org.apache.kafka.connect.file.FileStreamSinkConnector' && p.type === 'sink' && p.version === info.version),
    `the file sink is listed: ${JSON.stringify(plugins)}`,
  );
});

test('Kafka Connect reference worker: a file sink connector consumes the stack Kafka topic into its file', async () => {
  const url = await connectUrl();
  const { kafkaBootstrap } = stackEndpoints();
  const topic = `connect-smoke-${randomUUID()}`;
  const name = `smoke-${randomUUID()}`;
  const dir = mkdtempSync(join(tmpdir(), 'connect-smoke-'));
  const file = join(dir, 'sink.txt');
  const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: kafkaBootstrap.split(','), logLevel: KafkaJS.logLevel.ERROR } });
  const admin = kafka.admin();
  const producer = kafka.producer();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
    await producer.connect();
    await producer.send({ topic, messages: [1, 2, 3].map((id) => ({ value: JSON.stringify({ id }) })) });
    const created = await call('POST', `${url}/connectors`, {
      name,
      config: { 'connector.class': 'org.apache.kafka.connect.file.FileStreamSinkConnector', topics: topic, file, 'tasks.max': '1' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const lines = await until('the file sink wrote 3 records', async () => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        return undefined;
      }
      const got = text.split('\n').filter((l) => l !== '');
      return got.length >= 3 ? got : undefined;
    });
    // Schemaless JSON in (the worker's JsonConverter), a Java map's toString out.
    assert.deepEqual(lines, ['{id=1}', '{id=2}', '{id=3}']);
    const status = (await call('GET', `${url}/connectors/${name}/status`)).json as { connector: { state: string } };
    assert.equal(status.connector.state, 'RUNNING');
  } finally {
    await call('DELETE', `${url}/connectors/${name}`);
    await producer.disconnect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
});
