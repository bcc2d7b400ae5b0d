/**
 * Distributed mode's state log (src/runtime/cluster/state-log.ts) on the stack's Kafka, through the real
 * Confluent adapters: two logs on the same topics see each other's writes in the same order; `append`
 * resolves only once the writer's own log has read the record; a fresh log rebuilds the same snapshot from
 * the topic; a topic that is not compacted is refused (as Connect refuses it) and an existing compacted one
 * is left as it is; a failing read is retried, not fatal; keys land in the partitions Java's producer picks
 * (checked against librdkafka's murmur2_random); the config and status topics a real Apache Kafka Connect
 * worker (the stack's reference worker) writes fold into what its REST API says. And how long 1,000
 * connectors take to load.
 */
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfluentControlTopicReader, ConfluentKafkaAdmin, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import type { ClientSettings } from '../../src/consume/confluent/index.ts';
import type { ControlTopicReader, KafkaAdmin, RecordProducer } from '../../src/consume/port.ts';
import { ConfigError, RetriableError } from '../../src/core/errors.ts';
import type { Logger } from '../../src/core/log.ts';
import { KafkaStateLog } from '../../src/runtime/cluster/state-log.ts';
import type { StateLogOptions, StateLogRecord } from '../../src/runtime/cluster/state-log.ts';
import {
  ConfigSnapshot,
  StatusSnapshot,
  encodeConnectorConfig,
  encodeConnectorRestart,
  encodeLoggerLevel,
  encodeTargetState,
  encodeTaskCommit,
  encodeTaskConfig,
  encodeTaskStatus,
} from '../../src/runtime/cluster/state-records.ts';
import type { StateEntry } from '../../src/runtime/cluster/state-records.ts';
import { keyPartition } from '../../src/runtime/cluster/key-partition.ts';
import { kafkaSettings, unique } from '../helpers/kafka.ts';
import { connectWorkerUrl, requireReachable } from '../helpers/stack.ts';

/** A logger that keeps warnings and errors (the log's retries must say so). */
function captureLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger: Logger & { lines: string[] } = {
    lines,
    debug: () => undefined,
    info: () => undefined,
    warn: (m, f) => lines.push(`WARN ${m} ${JSON.stringify(f ?? {})}`),
    error: (m, f) => lines.push(`ERROR ${m} ${JSON.stringify(f ?? {})}`),
    child: () => logger,
  };
  return logger;
}

interface Clients {
  readonly settings: ClientSettings;
  readonly admin: KafkaAdmin;
  readonly producer: RecordProducer;
  /** The logs opened on these clients, closed (newest first) before the topics go and the clients close. */
  readonly logClosers: (() => Promise<void>)[];
}

/**
 * One admin and one producer for the test (as a worker shares them between its logs); after the test the
 * logs close first, then the topics are deleted and the clients closed — in that order, as a worker does:
 * a log still tailing a deleted topic would call a closed admin.
 */
async function clients(t: TestContext, topics: string[]): Promise<Clients> {
  const settings = await kafkaSettings();
  const admin = await ConfluentKafkaAdmin.connect({ settings });
  const producer = await ConfluentRecordProducer.connect({ settings });
  const logClosers: (() => Promise<void>)[] = [];
  t.after(async () => {
    for (const close of logClosers.reverse()) await close().catch(() => undefined);
    for (const topic of topics) await admin.deleteTopic(topic).catch(() => undefined);
    await producer.close();
    await admin.close();
  });
  return { settings, admin, producer, logClosers };
}

type LogKind = 'config' | 'status';

/** A state log with its own reader (closed with the test's clients, before them), the records it handed over, and its logger. */
async function openLog(
  c: Clients,
  kind: LogKind,
  topic: string,
  extra: Partial<StateLogOptions> & { wrapReader?: (r: ControlTopicReader) => ControlTopicReader } = {},
): Promise<{ log: KafkaStateLog; seen: StateLogRecord[]; logger: ReturnType<typeof captureLogger> }> {
  const reader = await ConfluentControlTopicReader.connect({ settings: c.settings });
  const logger = captureLogger();
  const log = new KafkaStateLog({
    topic,
    setting: kind === 'config' ? 'config.storage.topic' : 'status.storage.topic',
    purpose: kind === 'config' ? 'connector configurations' : 'connector and task statuses',
    partitions: kind === 'config' ? 1 : 5,
    singlePartition: kind === 'config',
    replicationFactor: -1,
    admin: c.admin,
    producer: c.producer,
    reader: extra.wrapReader === undefined ? reader : extra.wrapReader(reader),
    log: logger,
    ...extra,
  });
  c.logClosers.push(async () => {
    await log.close();
    await reader.close();
  });
  return { log, seen: [], logger };
}

const keyOffset = (r: StateLogRecord): string => `${r.partition}@${r.offset} ${r.key}=${r.value ?? '∅'}`;

function folder(s: ConfigSnapshot, seen: StateLogRecord[]): (r: StateLogRecord) => void {
  return (r) => {
    seen.push(r);
    s.apply(r.key, r.value, r.offset);
  };
}

test('two logs on one config topic see each other\'s writes in one order; append resolves only after its own log read the record', async (t) => {
  const topic = unique('state-configs');
  const c = await clients(t, [topic]);
  const a = await openLog(c, 'config', topic);
  const b = await openLog(c, 'config', topic);
  const sa = new ConfigSnapshot();
  const sb = new ConfigSnapshot();
  const loadA = await a.log.start(folder(sa, a.seen));
  const loadB = await b.log.start(folder(sb, b.seen));
  assert.deepEqual([loadA.records, loadB.records], [0, 0], 'a new topic is empty');
  assert.equal(a.log.partitionCount, 1);
  assert.deepEqual((await c.admin.topicConfigs(topic))['cleanup.policy'], 'compact', 'created compacted');

  // Read-your-writes: the moment append resolves, the record has been handed to this log's consumer.
  const writes: [KafkaStateLog, StateEntry][] = [
    [a.log, encodeConnectorConfig('orders', { 'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector', 'tasks.max': '2' })],
    [b.log, encodeTargetState('orders', 'PAUSED')],
    [a.log, encodeTaskConfig('orders', 0, { 'task.id': '0' })],
    [a.log, encodeTaskConfig('orders', 1, { 'task.id': '1' })],
    [b.log, encodeConnectorRestart('orders', { includeTasks: true, onlyFailed: false })],
    [a.log, encodeTaskCommit('orders', 2)],
    [b.log, encodeLoggerLevel('org.apache.iceberg', 'DEBUG')],
    [a.log, encodeTargetState('orders', 'STOPPED')],
  ];
  for (const [log, e] of writes) {
    const offset = await log.append(e.key, e.value);
    const own = log === a.log ? a.seen : b.seen;
    assert.ok(own.some((r) => r.offset === offset && r.key === e.key), `${e.key}@${offset} was read before append resolved`);
  }
  await a.log.readToEnd();
  await b.log.readToEnd();
  assert.equal(a.seen.length, writes.length);
  assert.deepEqual(a.seen.map(keyOffset), b.seen.map(keyOffset), 'both logs read the same records in the same order');
  assert.deepEqual(a.seen.map((r) => r.key), writes.map(([, e]) => e.key));
  assert.ok(a.seen.every((r) => !r.initial), 'written after the initial load');
  assert.deepEqual(sa.connectors(), sb.connectors());
  assert.deepEqual(sa.connector('orders'), {
    name: 'orders',
    config: { 'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector', 'tasks.max': '2' },
    target: 'STOPPED',
    taskCount: 2,
    taskConfigs: [{ 'task.id': '0' }, { 'task.id': '1' }],
    inconsistent: false,
    lastOffset: 7n,
  });
  assert.deepEqual(sb.restartRequests().map((r) => [r.kind, r.offset]), [['connector', 4n]]);

  // A tombstone and a batch: appendAll keeps the order and waits as append does.
  const offsets = await b.log.appendAll([{ key: 'connector-orders', value: null }, { key: 'target-state-orders', value: null }]);
  assert.deepEqual(offsets, [8n, 9n]);
  assert.equal(sb.connector('orders'), undefined, 'deleted in the writer\'s snapshot when appendAll resolves');
  await a.log.readToEnd();
  assert.equal(sa.connector('orders'), undefined, 'and in the other log\'s after readToEnd');
});

test('a fresh log rebuilds the same snapshot from the topic; records after its initial load are told apart', async (t) => {
  const topic = unique('state-configs');
  const c = await clients(t, [topic]);
  const writer = await openLog(c, 'config', topic);
  const live = new ConfigSnapshot();
  await writer.log.start(folder(live, writer.seen));
  const entries: StateEntry[] = [];
  for (let i = 0; i < 20; i++) {
    const name = `c-${i}`;
    entries.push(encodeConnectorConfig(name, { 'tasks.max': '1', n: String(i) }), encodeTaskConfig(name, 0, { n: String(i) }), encodeTaskCommit(name, 1));
    if (i % 4 === 0) entries.push(encodeTargetState(name, 'PAUSED'));
    if (i % 5 === 0) entries.push({ key: `connector-${name}`, value: null });
  }
  entries.push(encodeConnectorRestart('c-1', { includeTasks: false, onlyFailed: true }), encodeLoggerLevel('io.icefloe', 'WARN'));
  await writer.log.appendAll(entries);

  const fresh = await openLog(c, 'config', topic);
  const rebuilt = new ConfigSnapshot();
  const load = await fresh.log.start(folder(rebuilt, fresh.seen));
  assert.equal(load.records, entries.length);
  assert.deepEqual(load.endOffsets, [{ topic, partition: 0, offset: BigInt(entries.length) }]);
  assert.ok(fresh.seen.every((r) => r.initial));
  assert.deepEqual(rebuilt.connectors(), live.connectors());
  assert.equal(rebuilt.connectors().length, 16);
  assert.deepEqual(rebuilt.restartRequests(), live.restartRequests());
  assert.deepEqual(rebuilt.loggerLevels(), live.loggerLevels());

  // A restart requested after the fresh log's initial load is the only one it should run.
  const restart = encodeConnectorRestart('c-2', { includeTasks: true, onlyFailed: true });
  const at = await writer.log.append(restart.key, restart.value);
  await fresh.log.readToEnd();
  const end = load.endOffsets[0]?.offset ?? 0n;
  assert.deepEqual(rebuilt.restartRequests(end).map((r) => [r.connector, r.offset]), [['c-2', at]]);
  assert.equal(fresh.seen.at(-1)?.initial, false);
});

test('a status topic of 5 partitions: keys land where Java\'s producer puts them, each key keeps its order across logs', async (t) => {
  const topic = unique('state-status');
  const c = await clients(t, [topic]);
  const a = await openLog(c, 'status', topic);
  const b = await openLog(c, 'status', topic);
  const sa = new StatusSnapshot();
  const sb = new StatusSnapshot();
  await a.log.start((r) => (a.seen.push(r), sa.apply(r.key, r.value, r.partition, r.offset)));
  await b.log.start((r) => (b.seen.push(r), sb.apply(r.key, r.value, r.partition, r.offset)));
  assert.equal(a.log.partitionCount, 5);
  const entries: StateEntry[] = [];
  for (let g = 1; g <= 3; g++) {
    for (let n = 0; n < 12; n++) entries.push(encodeTaskStatus('orders', n, { state: g === 3 ? 'RUNNING' : 'UNASSIGNED', trace: null, workerId: `w${g}:8083`, generation: g }));
  }
  await Promise.all([a.log.appendAll(entries.slice(0, 18)), b.log.appendAll(entries.slice(18))]);
  await a.log.readToEnd();
  await b.log.readToEnd();
  for (const r of a.seen) assert.equal(r.partition, keyPartition(r.key, 5), `${r.key} in the partition of Java's default partitioner`);
  assert.ok(new Set(a.seen.map((r) => r.partition)).size > 1, 'spread over partitions');
  for (let n = 0; n < 12; n++) {
    assert.deepEqual([sa.task('orders', n)?.generation, sa.task('orders', n)?.state], [3, 'RUNNING'], `task ${n}: the last write wins`);
    assert.deepEqual(sb.task('orders', n), sa.task('orders', n));
  }

  // librdkafka's murmur2_random partitioner is Java's: a record it places by key lands where keyPartition says.
  const java = await ConfluentRecordProducer.connect({ settings: c.settings, overrides: { partitioner: 'murmur2_random' } });
  t.after(() => java.close());
  const keys = Array.from({ length: 20 }, (_, i) => `status-connector-probe-${i}`);
  const delivered = await java.send(keys.map((key) => ({ topic, key, value: null })));
  assert.deepEqual(delivered.map((d) => d.partition), keys.map((k) => keyPartition(k, 5)));
});

test('a topic that is not compacted is refused, naming the topic and the setting; a single-partition log refuses more partitions', async (t) => {
  const deleting = unique('state-delete');
  const both = unique('state-compact-delete');
  const wide = unique('state-wide');
  const c = await clients(t, [deleting, both, wide]);
  await c.admin.ensureTopic({ name: deleting, partitions: 1, replicationFactor: -1, configs: { 'cleanup.policy': 'delete' } });
  await c.admin.ensureTopic({ name: both, partitions: 1, replicationFactor: -1, configs: { 'cleanup.policy': 'compact,delete' } });
  await c.admin.ensureTopic({ name: wide, partitions: 3, replicationFactor: -1, configs: { 'cleanup.policy': 'compact' } });
  for (const [topic, policy] of [[deleting, 'delete'], [both, 'compact,delete']] as const) {
    const { log } = await openLog(c, 'config', topic);
    await assert.rejects(log.start(() => undefined), (e: unknown) => {
      assert.ok(e instanceof ConfigError, String(e));
      assert.match(e.message, new RegExp(`Topic '${topic}' supplied via the 'config.storage.topic' property is required to have 'cleanup.policy=compact'`));
      assert.match(e.message, new RegExp(`currently has 'cleanup.policy=${policy}'`));
      return true;
    });
    assert.equal((await c.admin.topicConfigs(topic))['cleanup.policy'], policy, 'the topic is not changed');
  }
  const { log } = await openLog(c, 'config', wide);
  await assert.rejects(log.start(() => undefined), /Topic '.*' supplied via the 'config.storage.topic' property is required to have a single partition .* found 3 partitions/);
});

test('ensureTopic leaves an existing compacted topic alone: its partitions, its configs and its records', async (t) => {
  const topic = unique('state-existing');
  const c = await clients(t, [topic]);
  await c.admin.ensureTopic({ name: topic, partitions: 3, replicationFactor: -1, configs: { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.2', 'segment.ms': '3600000' } });
  // A topic just created may be unknown to DescribeConfigs for a moment (metadata lag).
  const configs = await until('the new topic described', () => c.admin.topicConfigs(topic).catch(() => undefined), 10_000);
  const before = { id: await c.admin.topicId(topic), configs };
  const first = await openLog(c, 'status', topic, { topicConfigs: { 'segment.ms': '60000' } });
  await first.log.start(() => undefined);
  await first.log.append('status-connector-x', { state: 'RUNNING', trace: null, worker_id: 'w:1', generation: 1 });
  const again = await openLog(c, 'status', topic, { topicConfigs: { 'segment.ms': '60000' } });
  const seen: StateLogRecord[] = [];
  await again.log.start((r) => seen.push(r));
  assert.equal(again.log.partitionCount, 3, 'the topic keeps its 3 partitions (the log asked for 5)');
  assert.equal(await c.admin.topicId(topic), before.id, 'not recreated');
  const after = await c.admin.topicConfigs(topic);
  for (const k of ['cleanup.policy', 'min.cleanable.dirty.ratio', 'segment.ms']) assert.equal(after[k], before.configs[k], k);
  assert.deepEqual(seen.map((r) => r.key), ['status-connector-x'], 'and its records');
});

test('a read that fails is retried with a warning; the log keeps tailing', async (t) => {
  const topic = unique('state-configs');
  const c = await clients(t, [topic]);
  let failures = 0;
  const flaky = (r: ControlTopicReader): ControlTopicReader => ({
    read: (from, options) => {
      if (failures > 0) {
        failures--;
        return Promise.reject(new RetriableError('injected: broker unreachable'));
      }
      return r.read(from, options);
    },
    close: () => r.close(),
  });
  const reader = await openLog(c, 'config', topic, { wrapReader: flaky, waitTimeoutMs: 15_000 });
  const writer = await openLog(c, 'config', topic);
  const s = new ConfigSnapshot();
  await reader.log.start(folder(s, reader.seen));
  await writer.log.start(() => undefined);
  failures = 3;
  const record = encodeConnectorConfig('x', { v: '1' });
  await writer.log.append(record.key, record.value);
  await reader.log.readToEnd();
  assert.deepEqual(s.connector('x')?.config, { v: '1' });
  assert.equal(failures, 0);
  const warnings = reader.logger.lines.filter((l) => l.includes('reading the state topic failed; retrying'));
  assert.equal(warnings.length, 3, reader.logger.lines.join('\n'));
  assert.match(warnings[0] ?? '', /injected: broker unreachable/);
});

test('a topic recreated under a running log fails it for good: onFailure is called, appends and reads reject', async (t) => {
  const topic = unique('state-configs');
  const c = await clients(t, [topic]);
  const failures: unknown[] = [];
  const { log } = await openLog(c, 'config', topic, { onFailure: (e) => failures.push(e) });
  await log.start(() => undefined);
  for (let i = 0; i < 3; i++) await log.append(`connector-c${i}`, { properties: {} });
  await c.admin.deleteTopic(topic);
  await until('the topic recreated', async () => ((await c.admin.ensureTopic({ name: topic, partitions: 1, replicationFactor: -1, configs: { 'cleanup.policy': 'compact' } }).catch(() => false)) ? true : undefined), 15_000);
  await until('the log failed', () => Promise.resolve(failures.length > 0 ? true : undefined), 30_000);
  assert.equal(failures.length, 1);
  assert.match(String(failures[0]), /outside the log .*restart the worker/);
  await assert.rejects(log.append('connector-x', { properties: {} }), /outside the log/);
  await assert.rejects(log.readToEnd(), /outside the log/);
});

test('1,000 connectors (config, target state, task config, commit) load from the topic in well under a few seconds', async (t) => {
  const topic = unique('state-configs');
  const c = await clients(t, [topic]);
  const writer = await openLog(c, 'config', topic);
  await writer.log.start(() => undefined);
  const entries: StateEntry[] = [];
  for (let i = 0; i < 1000; i++) {
    const name = `connector-${String(i).padStart(4, '0')}`;
    const config = { 'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector', 'tasks.max': '1', topics: `orders-${i}`, 'iceberg.tables': `db.orders_${i}`, 'iceberg.catalog.type': 'rest', 'iceberg.catalog.uri': 'http://catalog:8181' };
    entries.push(encodeConnectorConfig(name, config), encodeTargetState(name, 'STARTED'), encodeTaskConfig(name, 0, config), encodeTaskCommit(name, 1));
  }
  const written = performance.now();
  for (let i = 0; i < entries.length; i += 1000) await writer.log.appendAll(entries.slice(i, i + 1000));
  const writeMs = performance.now() - written;

  const fresh = await openLog(c, 'config', topic);
  const s = new ConfigSnapshot();
  const load = await fresh.log.start(folder(s, fresh.seen));
  assert.equal(load.records, 4000);
  assert.equal(s.connectors().length, 1000);
  assert.ok(s.connectors().every((e) => e.taskConfigs.length === 1));
  t.diagnostic(`4,000 records (1,000 connectors) appended in ${writeMs.toFixed(0)} ms; a fresh log loaded them in ${load.elapsedMs.toFixed(0)} ms (topic checks included)`);
  assert.ok(load.elapsedMs < 5_000, `loading took ${load.elapsedMs.toFixed(0)} ms`);
});

/**
 * An admin over existing topics that changes nothing: ensureTopic only checks that the topic exists
 * (resolves false, as for an existing topic), and every call that would change the cluster throws.
 */
function readOnlyAdmin(admin: KafkaAdmin, topics: readonly string[]): KafkaAdmin {
  const refuse = (what: string) => (): never => {
    throw new Error(`read-only admin: ${what} refused`);
  };
  return new Proxy(admin, {
    get(target, prop) {
      if (prop === 'ensureTopic') {
        return async (spec: { name: string }): Promise<boolean> => {
          if (!topics.includes(spec.name)) throw new Error(`read-only admin: ${spec.name} is not one of the topics it may read`);
          await target.partitionCount(spec.name);
          return false;
        };
      }
      if (prop === 'deleteTopic' || prop === 'commitGroupOffsets') return refuse(String(prop));
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** A producer that refuses every record (the reference worker's topics are never written by this test). */
function refusingProducer(): RecordProducer {
  const refuse = (): Promise<never> => Promise.reject(new Error('refusing producer: this test never writes the reference worker\'s topics'));
  return { send: refuse, flush: refuse, close: () => Promise.resolve() };
}

/** A request to the reference Connect worker; the JSON answer (null for an empty body). */
async function connect(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const r = await fetch(`${connectWorkerUrl()}${path}`, {
    method,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  return { status: r.status, json: text === '' ? null : (JSON.parse(text) as unknown) };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('the config and status topics of a real Apache Kafka Connect worker fold into what its REST API says', async (t) => {
  await requireReachable('Kafka Connect reference worker', connectWorkerUrl());
  // The reference worker's own topics (infra/connect/connect-distributed.properties): only read here, never written.
  const configTopic = 'icefloe-connect-reference-configs';
  const statusTopic = 'icefloe-connect-reference-status';
  const c = await clients(t, []);
  const dir = mkdtempSync(join(tmpdir(), 'state-log-'));
  const name = unique('statelog-file-sink');
  const source = unique('statelog-src');
  const namespace = `org.icefloe.statelog.${name.replace(/-/g, '')}`;
  t.after(async () => {
    await connect('DELETE', `/connectors/${name}`).catch(() => undefined);
    await c.admin.deleteTopic(source).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  await c.admin.ensureTopic({ name: source, partitions: 1, replicationFactor: -1 });
  // The reference worker is shared by the whole stack: its topics are read through clients that cannot
  // create, delete or write anything, whatever the log under test does (a mutation of ensureTopic once
  // recreated them).
  const readOnly: Clients = { settings: c.settings, admin: readOnlyAdmin(c.admin, [configTopic, statusTopic]), producer: refusingProducer(), logClosers: c.logClosers };
  const cfgLog = await openLog(readOnly, 'config', configTopic);
  const stLog = await openLog(readOnly, 'status', statusTopic);
  const config = new ConfigSnapshot();
  const status = new StatusSnapshot();
  const warnings: string[] = [];
  await cfgLog.log.start((r) => {
    const w = config.apply(r.key, r.value, r.offset).warning;
    if (w !== undefined) warnings.push(w);
  });
  await stLog.log.start((r) => {
    const w = status.apply(r.key, r.value, r.partition, r.offset).warning;
    if (w !== undefined) warnings.push(w);
  });

  const userConfig = { 'connector.class': 'org.apache.kafka.connect.file.FileStreamSinkConnector', 'tasks.max': '1', topics: source, file: join(dir, 'sink.txt') };
  assert.equal((await connect('POST', '/connectors', { name, config: userConfig })).status, 201);
  await until('the connector and its task RUNNING', async () => {
    const s = (await connect('GET', `/connectors/${name}/status`)).json as { connector?: { state: string }; tasks?: { state: string }[] };
    return s.connector?.state === 'RUNNING' && s.tasks?.[0]?.state === 'RUNNING' ? true : undefined;
  });
  assert.equal((await connect('POST', `/connectors/${name}/restart?includeTasks=true&onlyFailed=false`)).status, 202);
  assert.equal((await connect('PUT', `/admin/loggers/${namespace}?scope=cluster`, { level: 'DEBUG' })).status, 204);
  const storedConfig = (await connect('GET', `/connectors/${name}/config`)).json;
  const tasks = (await connect('GET', `/connectors/${name}/tasks`)).json as { id: { task: number }; config: Record<string, string> }[];

  await until('the restart and logger records read', async () => {
    await cfgLog.log.readToEnd();
    return config.restartRequests().some((r) => r.connector === name) && config.loggerLevels().some((l) => l.namespace === namespace) ? true : undefined;
  });
  const entry = config.connector(name);
  assert.deepEqual(entry?.config, storedConfig, 'the config exactly as Connect stores and serves it');
  assert.equal(entry?.target, 'STARTED');
  assert.deepEqual(entry?.taskConfigs, tasks.map((x) => x.config), 'the committed task configs GET /tasks serves');
  assert.deepEqual(config.restartRequests().filter((r) => r.connector === name).map((r) => r.kind === 'connector' && [r.includeTasks, r.onlyFailed]), [[true, false]]);
  assert.equal(config.loggerLevels().find((l) => l.namespace === namespace)?.level, 'DEBUG');

  assert.equal((await connect('PUT', `/connectors/${name}/stop`)).status, 204);
  const stopped = await until('the connector STOPPED in its status topic', async () => {
    await stLog.log.readToEnd();
    await cfgLog.log.readToEnd();
    return status.connector(name)?.state === 'STOPPED' && config.connector(name)?.target === 'STOPPED' ? status.connector(name) : undefined;
  });
  const restStatus = (await connect('GET', `/connectors/${name}/status`)).json as { connector: { state: string; worker_id: string } };
  assert.deepEqual([stopped?.state, stopped?.workerId], [restStatus.connector.state, restStatus.connector.worker_id]);
  assert.equal(config.connector(name)?.taskCount, 0, 'a stopped connector\'s tasks are committed away (zero tasks)');

  assert.equal((await connect('DELETE', `/connectors/${name}`)).status, 204);
  await until('the connector gone from both topics', async () => {
    await cfgLog.log.readToEnd();
    await stLog.log.readToEnd();
    return config.connector(name) === undefined && status.connector(name) === undefined ? true : undefined;
  });
  assert.deepEqual(warnings, [], 'every record Connect wrote was understood');
});
