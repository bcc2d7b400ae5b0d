/**
 * Real Connect REST clients drive Icefloe end to end (issue 12's done-when), each through its own API
 * (test/clients/, test/helpers/connect-client.ts): org.sourcelab's kafka-connect-client from Maven Central
 * (the library AKHQ's Connect pages use) and kafka-connect-py from PyPI. Each runs the same lifecycle
 * against `icefloe standalone` serving the REST API on `listeners`,
 * on the stack's Kafka, REST catalog and S3. It creates an Iceberg sink connector from a config, reads it
 * back, restarts it, updates it (PUT config), pauses, resumes, stops, resumes and deletes it, while records are
 * produced between the steps. Asserted: what the client got back at each step (the stored config exactly,
 * the states it saw, its tasks, topics, listing and plugins), nothing consumed while PAUSED or STOPPED (no commit, the group's offsets unmoved),
 * and at the end every produced record in the table exactly once by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { ConfluentKafkaSource } from '../../src/consume/confluent/index.ts';
import { ConnectClient } from '../helpers/connect-client.ts';
import type { ClientKind, ClientStatus } from '../helpers/connect-client.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, PROCESS_WORKER, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker, untilWorkers } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';
import { freePort } from '../helpers/stack.ts';

const TIMEOUT = 600_000;
const PARTITIONS = 2;
/** Longer than two commit intervals (the connector's is 3 s): a consuming task would have committed by then. */
const QUIET_MS = 9_000;

/** How many times the worker has logged stopping `connector` (PUT /stop, a new config, DELETE). */
function stops(w: WorkerProcess, connector: string): number {
  return w.logs('connector stopped').filter((l) => l['connector'] === connector).length;
}

/** `count` JSON records spread over the partitions, ids from `from`. */
function records(from: number, count: number): { partition: number; value: unknown }[] {
  return Array.from({ length: count }, (_, i) => ({ partition: (from + i) % PARTITIONS, value: { id: from + i, note: `r${from + i}` } }));
}

/** The consumer group's committed offsets of `topic`'s partitions (null: none). */
async function groupOffsets(groupId: string, topic: string): Promise<(bigint | null)[]> {
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), groupId, clientId: 'icefloe-e2e-offsets' });
  try {
    const got = await source.committed(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition })));
    return got.sort((a, b) => a.partition - b.partition).map((c) => c.offset);
  } finally {
    await source.close();
  }
}

/** Per partition, the offset after the last of `coords` (what a group that consumed exactly them has committed). */
function endOffsets(coords: readonly Coordinates[]): (bigint | null)[] {
  const out: (bigint | null)[] = Array.from({ length: PARTITIONS }, () => null);
  for (const c of coords) if (out[c.partition] === null || (out[c.partition] as bigint) <= c.offset) out[c.partition] = c.offset + 1n;
  return out;
}

/**
 * Polls the status through the client until the connector is in `state` and its tasks are all in
 * `taskState` (none: no tasks, as Connect reports a STOPPED connector). Returns the status it matched;
 * fails with every status the client saw meanwhile.
 */
async function untilState(client: ConnectClient, w: WorkerProcess, name: string, state: string, taskState: string | 'none', timeoutMs = 90_000): Promise<ClientStatus> {
  const deadline = Date.now() + timeoutMs;
  const seen: string[] = [];
  for (;;) {
    const a = await client.call({ op: 'status', name });
    if (a.ok) {
      const s = a.result as ClientStatus;
      const tasks = s.tasks.map((t) => t.state);
      const line = `${s.connector.state} [${tasks.join(',')}]`;
      if (seen.at(-1) !== line) seen.push(line);
      const tasksMatch = taskState === 'none' ? tasks.length === 0 : tasks.length > 0 && tasks.every((t) => t === taskState);
      if (s.connector.state === state && tasksMatch) return s;
      const failed = s.tasks.find((t) => t.state === 'FAILED');
      if (failed !== undefined && state !== 'FAILED') throw new Error(`waiting for ${state}: task ${failed.id} FAILED: ${failed.trace ?? ''}`);
    } else if (seen.at(-1) !== `error ${a.error?.errorCode}`) {
      seen.push(`error ${a.error?.errorCode ?? ''} ${a.error?.message ?? ''}`);
    }
    if (w.child.exitCode !== null || w.child.signalCode !== null) throw new Error(`waiting for ${state}: the worker exited; last lines:\n${w.lines.slice(-15).join('\n')}`);
    if (Date.now() > deadline) throw new Error(`${name}: not ${state} with tasks ${taskState} after ${timeoutMs} ms; the client saw: ${seen.join(' → ')}`);
    await sleep(500);
  }
}

/**
 * The client's other reads of a running connector, in the shape each library returns: its tasks, its
 * active topics, the expanded listing (AKHQ's view: `?expand=info&expand=status`; kafka-connect-py asks
 * for status only) and the plugin list.
 */
async function inspect(client: ConnectClient, kind: ClientKind, name: string): Promise<{ tasks: unknown; topics: unknown; listedState: unknown; plugins: unknown }> {
  const tasks = ((await client.ok({ op: 'tasks', name })) as { id: unknown }[]).map((task) => task.id);
  const topics = (await client.ok({ op: 'topics', name })) as Record<string, unknown>;
  const expanded = (await client.ok({ op: 'expanded' })) as Record<string, unknown>;
  const plugins = (await client.ok({ op: 'plugins' })) as Record<string, unknown>[];
  if (kind === 'sourcelab') {
    // Its ConnectorTopics DTO ({name, topics}) and ConnectorsWithExpandedMetadata (statuses and definitions by name).
    const statuses = expanded['mapped_statuses'] as Record<string, ClientStatus>;
    const definitions = expanded['mapped_definitions'] as Record<string, { name: string }>;
    return { tasks, topics: topics['topics'], listedState: [statuses[name]?.connector.state, definitions[name]?.name], plugins: plugins.map((p) => p['class_name']) };
  }
  // Connect's JSON as it came: {name: {topics}}, {name: {status}}, [{class, type}].
  const listed = (expanded[name] as { status: ClientStatus } | undefined)?.status;
  return { tasks, topics: (topics[name] as { topics: unknown } | undefined)?.topics, listedState: [listed?.connector.state, listed?.name], plugins: plugins.map((p) => p['class']) };
}

const CLIENTS: readonly { kind: ClientKind; label: string }[] = [
  { kind: 'sourcelab', label: 'AKHQ\'s org.sourcelab kafka-connect-client (Maven Central)' },
  { kind: 'kafka-connect-py', label: 'kafka-connect-py (PyPI)' },
];

/** The lifecycle with one client, records produced between the steps, checked in the data at the end. */
async function lifecycle(t: TestContext, kind: ClientKind): Promise<void> {
  const res = await e2eResources(t);
  const topic = unique('rc-src');
  const control = unique('rc-control');
  const name = unique('rc');
  const table = `${uniqueIdent('rc')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const produced: Coordinates[] = [];
  const batchA = await produceJson(topic, PARTITIONS, records(0, 150));
  produced.push(...batchA);

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // No --exit-on-failure: the worker serves the API with no connector, and a FAILED task shows in the client's status.
  const worker = startWorker({ worker: { ...PROCESS_WORKER, listeners: url }, connectors: [], args: [] });
  res.workers.push(worker);
  const client = await ConnectClient.start(kind, url);
  t.after(() => client.close());
  t.after(() => {
    // What the client saw, call by call: the first place to look when a step broke it.
    if (process.env['ICEFLOE_TEST_CLIENT_LOG'] === '1') for (const x of client.transcript) process.stderr.write(`${JSON.stringify(x)}\n`);
  });

  // The server answers GET / once it listens: the client's version call, with a numeric version (kcctl parses it).
  const deadline = Date.now() + 60_000;
  let version = await client.call({ op: 'version' });
  while (!version.ok && Date.now() < deadline && worker.child.exitCode === null) {
    await sleep(500);
    version = await client.call({ op: 'version' });
  }
  assert.ok(version.ok, `GET / through the client: ${JSON.stringify(version.error)}; the worker's last lines:\n${worker.lines.slice(-10).join('\n')}`);
  assert.match(String((version.result as { version: string }).version), /^\d+\.\d+/);

  // Create from a config; the answer, GET /connectors/{c} and GET config all echo the stored config exactly (plus name).
  const { config } = sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.tables': table } });
  const stored = { ...config, name };
  const created = (await client.ok({ op: 'create', name, config })) as { name: string; type: string; config: Record<string, string> };
  assert.equal(created.name, name);
  assert.equal(created.type, 'sink');
  assert.deepEqual(created.config, stored, 'POST /connectors answers with the config as stored');
  assert.deepEqual(((await client.ok({ op: 'get', name })) as { config: Record<string, string> }).config, stored, 'GET /connectors/{c}');
  assert.deepEqual(await client.ok({ op: 'config', name }), stored, 'GET /connectors/{c}/config');
  assert.ok(((await client.ok({ op: 'list' })) as string[]).includes(name), 'GET /connectors lists it');
  const running = await untilState(client, worker, name, 'RUNNING', 'RUNNING');
  assert.equal(running.name, name);
  await waitCommitted(worker, table, produced.length, 180_000);
  const seen = await inspect(client, kind, name);
  assert.deepEqual(seen.tasks, [{ connector: name, task: 0 }], 'GET /connectors/{c}/tasks');
  assert.deepEqual(seen.topics, [topic], 'GET /connectors/{c}/topics: the topic its task read');
  assert.deepEqual(seen.listedState, ['RUNNING', name], 'GET /connectors?expand=…');
  assert.ok((seen.plugins as unknown[]).includes('org.apache.iceberg.connect.IcebergSinkConnector'), `GET /connector-plugins: ${JSON.stringify(seen.plugins)}`);

  // Restart (the connector only, no parameters): back to RUNNING; the records keep landing once (checked at the end).
  await client.ok({ op: 'restart', name });
  await untilState(client, worker, name, 'RUNNING', 'RUNNING');

  // Update (PUT config): a changed commit interval; the answer and the config read back hold it.
  const updatedConfig = { ...config, 'iceberg.control.commit.interval-ms': '2000' };
  const updated = (await client.ok({ op: 'update', name, config: updatedConfig })) as { name: string; config: Record<string, string> };
  assert.deepEqual(updated.config, { ...updatedConfig, name }, 'PUT config answers with the new config');
  assert.deepEqual(await client.ok({ op: 'config', name }), { ...updatedConfig, name }, 'GET config after PUT');
  await untilState(client, worker, name, 'RUNNING', 'RUNNING');
  produced.push(...(await produceJson(topic, PARTITIONS, records(150, 150))));
  await waitCommitted(worker, table, produced.length, 180_000);

  // Pause: PAUSED through the client; records produced meanwhile are neither committed nor acknowledged.
  await client.ok({ op: 'pause', name });
  await untilState(client, worker, name, 'PAUSED', 'PAUSED');
  const beforePause = [...produced];
  const committedAtPause = committedRecords(worker, table);
  produced.push(...(await produceJson(topic, PARTITIONS, records(300, 100))));
  await sleep(QUIET_MS);
  assert.equal(committedRecords(worker, table), committedAtPause, 'nothing committed while PAUSED');
  assert.deepEqual(await groupOffsets(`connect-${name}`, topic), endOffsets(beforePause), 'the group\'s offsets stay put while PAUSED');
  assert.equal(((await client.ok({ op: 'status', name })) as ClientStatus).connector.state, 'PAUSED', 'still PAUSED');

  // Resume: RUNNING again, and what was produced while paused lands.
  await client.ok({ op: 'resume', name });
  await untilState(client, worker, name, 'RUNNING', 'RUNNING');
  await waitCommitted(worker, table, produced.length, 180_000);

  // Stop: STOPPED with no tasks, config kept; nothing consumed until resumed.
  await client.ok({ op: 'stop', name });
  await untilState(client, worker, name, 'STOPPED', 'none');
  assert.deepEqual(await client.ok({ op: 'config', name }), { ...updatedConfig, name }, 'a STOPPED connector keeps its config');
  const beforeStop = [...produced];
  const committedAtStop = committedRecords(worker, table);
  produced.push(...(await produceJson(topic, PARTITIONS, records(400, 100))));
  await sleep(QUIET_MS);
  assert.equal(committedRecords(worker, table), committedAtStop, 'nothing committed while STOPPED');
  assert.deepEqual(await groupOffsets(`connect-${name}`, topic), endOffsets(beforeStop), 'the group\'s offsets stay put while STOPPED');

  // Resume from STOPPED: tasks come back and pick up where the group's offsets say.
  await client.ok({ op: 'resume', name });
  await untilState(client, worker, name, 'RUNNING', 'RUNNING');
  await waitCommitted(worker, table, produced.length, 180_000);

  // Delete: gone for the client (a 404 it reports), no longer listed.
  const stopsBeforeDelete = stops(worker, name);
  await client.ok({ op: 'delete', name });
  const gone = await client.call({ op: 'get', name });
  assert.deepEqual([gone.ok, gone.error?.errorCode], [false, 404], `GET after DELETE: ${JSON.stringify(gone)}`);
  assert.ok(!((await client.ok({ op: 'list' })) as string[]).includes(name), 'GET /connectors no longer lists it');

  // DELETE answers before the connector has stopped (herder.deleteConnector stops it in the background);
  // a SIGTERM overlapping that stop is a separate shutdown race (it has ended the worker with exit 13), so
  // the worker is stopped once the deleted connector's own stop is logged.
  await untilWorkers('the deleted connector\'s stop', () => stops(worker, name) > stopsBeforeDelete, [worker], 60_000);
  await stopWorker(worker);
  await assertExactlyOnce(table, produced);
  assert.equal(committedRecords(worker, table), produced.length, 'the worker committed each record once');
}

for (const { kind, label } of CLIENTS) {
  test(`${label} creates, restarts, updates, pauses, resumes, stops, resumes and deletes an Iceberg sink on Icefloe; every record lands once`, { timeout: TIMEOUT }, (t) => lifecycle(t, kind));
}
