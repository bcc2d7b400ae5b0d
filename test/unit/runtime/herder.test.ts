/**
 * The standalone herder's state machine (runtime/herder.ts) over the real StandaloneWorker with scripted
 * tasks and committer: target states, what status says at each step, stored configs echoed as submitted,
 * an identical PUT that restarts nothing, offsets only while STOPPED, restarts and their RESTARTING plan,
 * a start failure shown as FAILED and retried by a restart, persistence through the store.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, FatalError, RequestRefused } from '../../../src/core/errors.ts';
import type { Logger } from '../../../src/core/log.ts';
import { parseConnectorConfig } from '../../../src/config/connector-config.ts';
import type { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { offsetsRequireStoppedMessage } from '../../../src/runtime/connector-offsets.ts';
import { StandaloneHerder } from '../../../src/runtime/herder.ts';
import type { ConnectorStore, StoredConnector } from '../../../src/runtime/herder.ts';
import type { IcebergAdoptReport, IcebergReplayReport } from '../../../src/runtime/herder-api.ts';
import { StandaloneWorker } from '../../../src/runtime/worker.ts';
import type { TaskHandle } from '../../../src/runtime/worker.ts';
import { until } from './rig.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => quiet };

const CONFIG = {
  'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
  'tasks.max': '2',
  topics: 'orders',
  'iceberg.tables': 'db.orders',
  'iceberg.catalog.type': 'sql',
  'iceberg.catalog.uri': 'jdbc:sqlite::memory:',
  'iceberg.catalog.warehouse': 'memory://warehouse',
  'iceberg.catalog.jdbc.password': '${env:CATALOG_PASSWORD}',
};

interface ScriptedTask {
  readonly id: number;
  readonly incarnation: number;
  state: string;
  stopped: boolean;
  end(error?: unknown): void;
}

function rig(options: { adoptFails?: unknown; tableStatus?: () => unknown[]; stored?: StoredConnector[]; failStart?: () => boolean; roundFails?: () => boolean; note?: () => string | undefined } = {}) {
  const tasks: ScriptedTask[] = [];
  let saved: readonly StoredConnector[] = options.stored ?? [];
  const store: ConnectorStore = { load: () => saved, save: (c) => void (saved = structuredClone(c)) };
  const committer = {
    round: () => (options.roundFails?.() === true ? Promise.reject(new Error('catalog http://cat:8181 unreachable: ECONNREFUSED')) : Promise.resolve([])),
    tableStatus: () => options.tableStatus?.() ?? [],
    controlStatus: () => ({ readRecords: 0, readBytes: 0, ignoredOtherConnector: 0, ignoredForeign: 0, bufferedRecords: 0, bufferedBytes: 0, behind: false, parkedTables: [] }),
  } as unknown as ConnectorCommitter;
  let commitersCreated = 0;
  let committersClosed = 0;
  const worker = new StandaloneWorker({
    log: quiet,
    taskShutdownTimeoutMs: 200,
    prepareConnector: () => (options.failStart?.() === true ? Promise.reject(new Error('control topic icefloe-control-x is compacted')) : Promise.resolve({ retentionMs: null })),
    createCommitter: () => {
      commitersCreated++;
      return Promise.resolve({
        committer,
        close: () => {
          committersClosed++;
          return new Promise<void>((resolve) => setTimeout(resolve, 50)); // a close that takes a moment
        },
      });
    },
    restartBackoff: { initialDelayMs: 60_000, maxDelayMs: 60_000 },
    startTask(_c, taskId, _announced, incarnation): TaskHandle {
      let settle: (e?: unknown) => void = () => undefined;
      const done = new Promise<void>((resolve, reject) => (settle = (e) => (e === undefined ? resolve() : reject(e))));
      const t: ScriptedTask = { id: taskId, incarnation, state: 'RUNNING', stopped: false, end: (e) => ((t.state = e === undefined ? 'STOPPED' : 'FAILED'), settle(e)) };
      tasks.push(t);
      return {
        taskId,
        done,
        stop: () => Promise.resolve(void ((t.stopped = true), t.end())),
        fail: (m) => Promise.resolve(t.end(new FatalError(m))),
        state: () => {
          const note = options.note?.();
          return { state: t.state, ...(note === undefined ? {} : { note }) };
        },
        pause: () => void (t.state = 'PAUSED'),
        resume: () => void (t.state = 'RUNNING'),
        topics: () => ['orders'],
        forgetTopics: () => undefined,
      };
    },
  });
  const offsetsCalls: string[] = [];
  const herder = new StandaloneHerder({
    worker,
    store,
    log: quiet,
    checkConfig: (raw) => {
      try {
        parseConnectorConfig(raw);
        return Promise.resolve();
      } catch (e) {
        return Promise.reject(e instanceof ConfigError ? new RequestRefused('bad-request', e.message) : e);
      }
    },
    parse: (raw) => parseConnectorConfig(raw),
    offsets: {
      read: () => Promise.resolve({ offsets: [] }),
      alter: (c) => Promise.resolve(void offsetsCalls.push(`alter ${c.name}`)).then(() => 'altered'),
      reset: (c) => Promise.resolve(void offsetsCalls.push(`reset ${c.name}`)).then(() => 'reset'),
    },
    tables: {
      // Records whether every task had stopped when the operation ran: the STOPPED rule is about that.
      replay: (c, table, snapshotId) => Promise.resolve(void offsetsCalls.push(`replay ${c.name} ${table} ${snapshotId} tasks-stopped=${tasks.every((x) => x.stopped)}`)).then(() => replayReport(table, snapshotId)),
      adopt: (c, table, o) => {
        offsetsCalls.push(`adopt ${c.name} ${table} ${o.holdsGroupOffsets}`);
        return options.adoptFails === undefined ? Promise.resolve(adoptReport(table)) : Promise.reject(options.adoptFails);
      },
    },
    plugins: { plugins: () => [], pluginConfig: () => [], validate: () => Promise.reject(new Error('unused')) },
    loggers: { loggers: () => ({}), logger: () => ({ level: 'INFO', last_modified: null }), setLevel: () => [] },
    serverInfo: () => Promise.resolve({ version: '3.9.0', commit: 'x', kafka_cluster_id: 'c' }),
    workerId: () => '127.0.0.1:8083',
    topicTracking: { enabled: true, allowReset: true },
    pluginVersion: (cls) => (cls === 'org.apache.iceberg.connect.IcebergSinkConnector' ? '1.11.0' : undefined),
  });
  return { herder, worker, tasks, store: () => saved, offsetsCalls, commitersCreated: () => commitersCreated, committersClosed: () => committersClosed };
}

function replayReport(table: string, snapshotId: bigint): IcebergReplayReport {
  return { table, branch: 'main', snapshotId: String(snapshotId), replaced: '2', replaySnapshotId: '3', offsets: [], result: 'rolled back' };
}

function adoptReport(table: string): IcebergAdoptReport {
  return { table, branch: 'main', action: 'adopt', stored: 'none', connectorPosition: null, reapplyMark: null, result: 'adopted' };
}

const state = (h: StandaloneHerder, name: string): string => {
  const s = h.connectorStatus(name);
  return `${s.connector.state}:${s.tasks.map((t) => t.state).join(',')}`;
};

test('create, pause, resume, stop, resume, delete: status follows, configs echo as submitted, the store keeps up', async (t) => {
  const r = rig();
  t.after(() => r.herder.stop());
  await r.herder.start([]);
  assert.equal((await r.herder.health()).status, 'healthy');
  const info = await r.herder.createConnector('orders', CONFIG, 'STARTED');
  assert.deepEqual(info, { name: 'orders', config: { ...CONFIG, name: 'orders' }, tasks: [], type: 'sink' });
  await until('running', () => r.herder.connectorNames().includes('orders') && state(r.herder, 'orders') === 'RUNNING:RUNNING,RUNNING');
  assert.deepEqual(r.herder.connectorConfig('orders'), { ...CONFIG, name: 'orders' }, 'no defaults added, the placeholder kept');
  assert.deepEqual(r.herder.connectorInfo('orders').tasks, [{ connector: 'orders', task: 0 }, { connector: 'orders', task: 1 }]);
  assert.equal(r.herder.connectorStatus('orders').tasks[0]?.worker_id, '127.0.0.1:8083');
  await assert.rejects(r.herder.createConnector('orders', CONFIG, 'STARTED'), (e: unknown) => e instanceof RequestRefused && e.refusal === 'already-exists' && e.message === 'Connector orders already exists');

  await r.herder.pauseConnector('orders');
  await until('paused', () => state(r.herder, 'orders') === 'PAUSED:PAUSED,PAUSED');
  await r.herder.resumeConnector('orders');
  await until('resumed', () => state(r.herder, 'orders') === 'RUNNING:RUNNING,RUNNING');
  assert.deepEqual(r.store(), [{ name: 'orders', config: { ...CONFIG, name: 'orders' }, target: 'STARTED' }]);

  await assert.rejects(r.herder.resetConnectorOffsets('orders'), (e: unknown) => e instanceof RequestRefused && e.refusal === 'bad-request' && e.message.startsWith('Connectors must be in the STOPPED state'));
  await r.herder.stopConnector('orders');
  assert.equal(r.store()[0]?.target, 'STOPPED');
  assert.equal(await r.herder.resetConnectorOffsets('orders'), 'reset', 'allowed once STOPPED: the stop is waited for');
  assert.deepEqual(r.offsetsCalls, ['reset orders']);
  assert.ok(r.tasks.every((x) => x.stopped), 'every task stopped before the offsets changed');
  assert.equal(state(r.herder, 'orders'), 'STOPPED:');
  assert.deepEqual(r.herder.connectorInfo('orders').tasks, []);
  assert.deepEqual(r.herder.activeTopics('orders'), { orders: { topics: ['orders'] } }, 'active topics survive the stop');

  await r.herder.resumeConnector('orders');
  await until('running again', () => state(r.herder, 'orders') === 'RUNNING:RUNNING,RUNNING');
  await r.herder.deleteConnector('orders');
  assert.throws(() => r.herder.connectorInfo('orders'), (e: unknown) => e instanceof RequestRefused && e.refusal === 'not-found' && e.message === 'Connector orders not found');
  assert.throws(() => r.herder.connectorStatus('orders'), /No status found for connector orders/);
  assert.deepEqual(r.store(), []);
  await until('its tasks stopped and the connector gone from the worker', () => r.tasks.every((x) => x.stopped) && r.worker.running().length === 0);
});

test('ready() resolves once start() has loaded the stored connectors, before they have started', async (t) => {
  const r = rig({ stored: [{ name: 'orders', config: { ...CONFIG, name: 'orders' }, target: 'STARTED' }] });
  t.after(() => r.herder.stop());
  let ready = false;
  void r.herder.ready().then(() => (ready = true));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(ready, false, 'not ready before start()');
  const started = r.herder.start([]);
  await r.herder.ready();
  assert.deepEqual(r.herder.connectorNames(), ['orders'], 'the stored connector is known when ready() resolves');
  assert.equal((await r.herder.health()).status, 'starting', 'ready before the connectors have started: their status is served meanwhile');
  await started;
  assert.equal((await r.herder.health()).status, 'healthy');
});

test('an identical PUT restarts nothing; a changed one restarts the connector with the new config', async (t) => {
  const r = rig();
  t.after(() => r.herder.stop());
  await r.herder.start([]);
  assert.equal((await r.herder.putConnectorConfig('orders', CONFIG)).created, true);
  await until('running', () => r.tasks.length === 2);
  assert.equal((await r.herder.putConnectorConfig('orders', { ...CONFIG, name: 'orders' })).created, false);
  await r.herder.pauseConnector('orders'); // a later operation on the chain: the PUT's would have run before it
  await until('paused', () => state(r.herder, 'orders') === 'PAUSED:PAUSED,PAUSED');
  assert.equal(r.tasks.length, 2, 'the identical PUT started no task');
  const patched = await r.herder.patchConnectorConfig('orders', { 'tasks.max': '1', 'iceberg.catalog.jdbc.password': null });
  assert.equal(patched.config['tasks.max'], '1');
  assert.equal('iceberg.catalog.jdbc.password' in patched.config, false, 'null removes the key');
  await until('restarted with one task, still paused', () => r.tasks.length === 3 && state(r.herder, 'orders') === 'PAUSED:PAUSED');
  await assert.rejects(r.herder.patchConnectorConfig('orders', { name: 'other' }), /doesn't match connector name in the URL/);
  await assert.rejects(r.herder.putConnectorConfig('orders', { ...CONFIG, 'tasks.max': 'two' }), (e: unknown) => e instanceof RequestRefused && e.refusal === 'bad-request');
});

test('initial_state PAUSED and STOPPED; a connector that cannot start is FAILED with the reason until a restart starts it', async (t) => {
  let failing = true;
  const r = rig({ failStart: () => failing });
  t.after(() => r.herder.stop());
  await r.herder.start([]);
  await r.herder.createConnector('broken', CONFIG, 'STARTED');
  await until('failed', () => r.herder.connectorStatus('broken').connector.state === 'FAILED');
  assert.match(r.herder.connectorStatus('broken').connector.trace ?? '', /control topic icefloe-control-x is compacted/);
  failing = false;
  const plan = await r.herder.restartConnector('broken', { includeTasks: true, onlyFailed: true });
  assert.equal(plan?.connector.state, 'RESTARTING', 'the 202 plan shows the failed connector RESTARTING');
  await until('running after the restart', () => state(r.herder, 'broken') === 'RUNNING:RUNNING,RUNNING');

  await r.herder.createConnector('later', CONFIG, 'PAUSED');
  assert.equal(state(r.herder, 'later'), 'PAUSED:', 'created PAUSED: no tasks until resumed, as Connect');
  assert.equal(r.worker.running().includes('later'), false);
  assert.deepEqual(r.store().find((c) => c.name === 'later')?.tasks, false);
  await r.herder.resumeConnector('later');
  await until('resumed with its tasks', () => state(r.herder, 'later') === 'RUNNING:RUNNING,RUNNING');
  await r.herder.pauseConnector('later');
  await until('paused with its tasks', () => state(r.herder, 'later') === 'PAUSED:PAUSED,PAUSED');
  assert.equal(r.herder.connectorStatus('later').tasks[0]?.version, '1.11.0', 'status entries carry the plugin version (KIP-891)');
  await r.herder.createConnector('off', CONFIG, 'STOPPED');
  assert.equal(state(r.herder, 'off'), 'STOPPED:');
  assert.equal(r.worker.running().includes('off'), false);
});

test('restarts: a task restart replaces its incarnation; includeTasks+onlyFailed restarts only the failed task; a bare restart only the committer', async (t) => {
  const r = rig();
  t.after(() => r.herder.stop());
  await r.herder.start([]);
  await r.herder.createConnector('orders', CONFIG, 'STARTED');
  await until('running', () => r.tasks.length === 2);
  await r.herder.restartTask('orders', 1);
  await until('task 1 replaced', () => r.tasks.length === 3 && r.tasks[2]?.id === 1);
  assert.equal(r.tasks[1]?.stopped, true, 'the old incarnation was stopped');
  assert.throws(() => r.herder.taskStatus('orders', 7), /No status found for task orders-7/);
  await assert.rejects(r.herder.restartTask('orders', 7), /Unknown task: orders-7/);
  await assert.rejects(r.herder.restartTask('nope', 0), /Unknown connector: nope/);

  r.tasks[0]?.end(new FatalError('record orders/0@5 is not JSON')); // task 0 FAILED for good (not restartable)
  await until('task 0 failed', () => r.herder.taskStatus('orders', 0).state === 'FAILED');
  const plan = await r.herder.restartConnector('orders', { includeTasks: true, onlyFailed: true });
  assert.deepEqual(plan?.tasks.map((x) => `${x.id}:${x.state}`), ['0:RESTARTING', '1:RUNNING']);
  assert.equal(plan?.connector.state, 'RUNNING', 'onlyFailed: the running connector is not restarted');
  await until('task 0 back', () => state(r.herder, 'orders') === 'RUNNING:RUNNING,RUNNING');
  assert.equal(r.tasks.length, 4, 'one new incarnation: only the failed task was restarted');
  const committers = r.commitersCreated();
  assert.equal(await r.herder.restartConnector('orders', { includeTasks: false, onlyFailed: false }), undefined);
  await until('a new committer', () => r.commitersCreated() === committers + 1);
  assert.equal(r.tasks.length, 4, 'a bare restart leaves the tasks alone');
});

test('connectors in the store start with the worker in their stored state; the command line adds or updates', async (t) => {
  const stored: StoredConnector[] = [
    { name: 'kept', config: { ...CONFIG, name: 'kept' }, target: 'PAUSED' },
    { name: 'off', config: { ...CONFIG, name: 'off' }, target: 'STOPPED' },
  ];
  const r = rig({ stored });
  t.after(() => r.herder.stop());
  await r.herder.start([{ ...CONFIG, name: 'kept', 'tasks.max': '1' }, { ...CONFIG, name: 'new' }]);
  assert.deepEqual(r.herder.connectorNames(), ['kept', 'new', 'off']);
  assert.equal(state(r.herder, 'kept'), 'PAUSED:PAUSED', 'the command line updated the config; the stored target stayed');
  assert.equal(state(r.herder, 'new'), 'RUNNING:RUNNING,RUNNING');
  assert.equal(state(r.herder, 'off'), 'STOPPED:');
  assert.equal(r.store().find((c) => c.name === 'kept')?.config['tasks.max'], '1');
});

test('status says why: failing committer rounds in the connector\'s trace, a task\'s reason in its trace while it runs', async (t) => {
  let failing = false;
  let note: string | undefined;
  const r = rig({ roundFails: () => failing, note: () => note });
  t.after(() => r.herder.stop());
  await r.herder.start([]);
  await r.herder.createConnector('orders', { ...CONFIG, 'iceberg.control.commit.interval-ms': '20' }, 'STARTED');
  await until('running', () => r.herder.connectorNames().includes('orders') && state(r.herder, 'orders') === 'RUNNING:RUNNING,RUNNING');
  assert.equal(r.herder.connectorStatus('orders').connector.trace, undefined, 'nothing to say while all is well');
  failing = true;
  note = 'partitions orders[3] wait for a record\'s schema from the registry (since 2026-12-02T12:03:10.000Z)';
  await until('the committer failing shows', () => /committer rounds failing since \S+ \(\d+ in a row\): catalog http:\/\/cat:8181 unreachable/.test(r.herder.connectorStatus('orders').connector.trace ?? ''), 30_000);
  assert.equal(r.herder.connectorStatus('orders').connector.state, 'RUNNING');
  assert.equal(r.herder.taskStatus('orders', 0).trace, note);
  failing = false;
  note = undefined;
  await until('cleared by a round that goes through', () => r.herder.connectorStatus('orders').connector.trace === undefined, 30_000);
  assert.equal(r.herder.taskStatus('orders', 0).trace, undefined);
});

test('Iceberg tables: replay and adopt only while STOPPED (the offsets\' message), after the stop has finished; tool refusals are 400s; table status from the committer', async (t) => {
  const lastSnapshotId = 2n ** 62n + 1n; // more digits than a JSON number keeps
  const r = rig({
    adoptFails: new ConfigError('db.orders changed while adopting (another commit landed): run the command again'),
    tableStatus: () => [
      { table: 'db.orders', state: 'RUNNING', lastSnapshotId, lastCommitMs: 1_700_000_000_000 },
      { table: 'db.returns', state: 'STOPPED', branch: 'audit', reason: { code: 'control-records-lost', message: 'announcements deleted by retention' } },
    ],
  });
  t.after(() => r.herder.stop());
  await r.herder.start([]);
  await r.herder.createConnector('orders', CONFIG, 'STARTED');
  await until('running', () => r.herder.connectorNames().includes('orders') && state(r.herder, 'orders') === 'RUNNING:RUNNING,RUNNING');
  await until('committer reports', () => r.herder.icebergTables('orders').length === 2);
  assert.deepEqual(r.herder.icebergTables('orders'), [
    { table: 'db.orders', branch: 'main', state: 'RUNNING', reason: null, last_snapshot_id: String(lastSnapshotId), last_commit_ms: 1_700_000_000_000 },
    { table: 'db.returns', branch: 'audit', state: 'STOPPED', reason: 'control-records-lost: announcements deleted by retention', last_snapshot_id: null, last_commit_ms: null },
  ]);

  const notStopped = (e: unknown): boolean => e instanceof RequestRefused && e.refusal === 'bad-request' && e.message === offsetsRequireStoppedMessage('orders');
  await assert.rejects(r.herder.replayTable('orders', 'db.orders', 1n), notStopped);
  await assert.rejects(r.herder.adoptTable('orders', 'db.orders', { holdsGroupOffsets: true }), notStopped);
  await r.herder.pauseConnector('orders');
  await assert.rejects(r.herder.replayTable('orders', 'db.orders', 1n), notStopped, 'PAUSED is not STOPPED: the group still has members');
  assert.deepEqual(r.offsetsCalls, [], 'nothing ran while the connector was not STOPPED');

  await r.herder.stopConnector('orders');
  const report = await r.herder.replayTable('orders', 'db.orders', lastSnapshotId);
  assert.deepEqual(report, replayReport('db.orders', lastSnapshotId));
  assert.deepEqual(r.offsetsCalls, [`replay orders db.orders ${lastSnapshotId} tasks-stopped=true`], 'the stop requested just before had finished');
  assert.deepEqual(r.herder.icebergTables('orders'), [], 'no committer while STOPPED');

  await assert.rejects(
    r.herder.adoptTable('orders', 'db.orders', { holdsGroupOffsets: true }),
    (e: unknown) => e instanceof RequestRefused && e.refusal === 'bad-request' && e.message.startsWith('db.orders changed while adopting'),
  );
  assert.equal(r.offsetsCalls[1], 'adopt orders db.orders true');
  const unknown = (e: unknown): boolean => e instanceof RequestRefused && e.refusal === 'not-found' && e.message === 'Connector nope not found';
  await assert.rejects(r.herder.replayTable('nope', 'db.orders', 1n), unknown);
  await assert.rejects(r.herder.adoptTable('nope', 'db.orders', { holdsGroupOffsets: false }), unknown);
  assert.throws(() => r.herder.icebergTables('nope'), unknown);
});

test('Iceberg tables: a failure of the operation itself is not turned into a 400', async (t) => {
  const r = rig({ adoptFails: new Error('catalog http://cat:8181 unreachable: ECONNREFUSED') });
  t.after(() => r.herder.stop());
  await r.herder.start([]);
  await r.herder.createConnector('orders', CONFIG, 'STOPPED');
  await assert.rejects(r.herder.adoptTable('orders', 'db.orders', { holdsGroupOffsets: false }), (e: unknown) => !(e instanceof RequestRefused) && /ECONNREFUSED/.test(String(e)));
});

test('a worker stop right after a DELETE waits for that connector\'s stop: each connector is closed once', async () => {
  const r = rig();
  await r.herder.start([]);
  await r.herder.createConnector('a', CONFIG, 'STARTED');
  await r.herder.createConnector('b', CONFIG, 'STARTED');
  await until('both running', () => r.worker.running().length === 2 && r.tasks.length === 4);
  await r.herder.deleteConnector('a'); // answers at once; the stop runs in the background
  await r.herder.stop();
  assert.equal(r.committersClosed(), 2, 'a closed by its DELETE, b by the worker stop, neither twice');
  assert.deepEqual(r.worker.running(), []);
  assert.ok(r.tasks.every((x) => x.stopped));
});
