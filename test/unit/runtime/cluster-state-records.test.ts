/**
 * The state topics' codecs and folds (src/runtime/cluster/state-records.ts) against Kafka Connect's record
 * shapes (connect-rest.md §3.2; KafkaConfigBackingStore / KafkaStatusBackingStore): the exact JSON a Java
 * worker writes, commit-gated task configs, STOPPED's fallback, tombstones, and records that are not what
 * they should be (skipped with a warning, never thrown). Also the key → partition hash (Kafka's murmur2).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigSnapshot,
  StatusSnapshot,
  canWriteSafely,
  configKeys,
  encodeConnectorConfig,
  encodeConnectorRemoval,
  encodeConnectorRestart,
  encodeConnectorStatus,
  encodeConnectorStatusRemoval,
  encodeLoggerLevel,
  encodeTargetState,
  encodeTaskCommit,
  encodeTaskConfig,
  encodeTaskRestart,
  encodeTaskStatus,
  parseTaskSuffix,
} from '../../../src/runtime/cluster/state-records.ts';
import type { StateEntry } from '../../../src/runtime/cluster/state-records.ts';
import { keyPartition, murmur2 } from '../../../src/runtime/cluster/key-partition.ts';

/** A record as it sits in the topic: key and value text. */
const wire = (e: StateEntry): [string, string | null] => [e.key, e.value === null ? null : JSON.stringify(e.value)];

/** Folds records (key, value text) at offsets 0, 1, 2, ...; returns the snapshot and every warning. */
function fold(records: readonly (readonly [string, string | null])[], snapshot = new ConfigSnapshot(), firstOffset = 0n): { s: ConfigSnapshot; warnings: string[] } {
  const warnings: string[] = [];
  records.forEach(([k, v], i) => {
    const r = snapshot.apply(k, v, firstOffset + BigInt(i));
    if (r.warning !== undefined) warnings.push(r.warning);
  });
  return { s: snapshot, warnings };
}

test('encoders write Connect\'s keys and JSON exactly (schemaless JsonConverter, field order of its schemas)', () => {
  const cfg = { 'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector', 'tasks.max': '2', topics: 'orders' };
  assert.deepEqual(wire(encodeConnectorConfig('orders-sink', cfg)), ['connector-orders-sink', '{"properties":{"connector.class":"org.apache.iceberg.connect.IcebergSinkConnector","tasks.max":"2","topics":"orders"}}']);
  assert.deepEqual(wire(encodeTaskConfig('orders-sink', 1, { 'task.id': '1' })), ['task-orders-sink-1', '{"properties":{"task.id":"1"}}']);
  assert.deepEqual(wire(encodeTaskCommit('orders-sink', 2)), ['commit-orders-sink', '{"tasks":2}']);
  assert.deepEqual(wire(encodeTargetState('orders-sink', 'STARTED')), ['target-state-orders-sink', '{"state":"STARTED","state.v2":"STARTED"}']);
  assert.deepEqual(wire(encodeTargetState('orders-sink', 'PAUSED')), ['target-state-orders-sink', '{"state":"PAUSED","state.v2":"PAUSED"}']);
  // Workers before 3.5 read only `state`: STOPPED reads as PAUSED there.
  assert.deepEqual(wire(encodeTargetState('orders-sink', 'STOPPED')), ['target-state-orders-sink', '{"state":"PAUSED","state.v2":"STOPPED"}']);
  assert.deepEqual(wire(encodeConnectorRestart('orders-sink', { includeTasks: true, onlyFailed: false })), ['restart-connector-orders-sink', '{"include-tasks":true,"only-failed":false}']);
  assert.deepEqual(wire(encodeTaskRestart('orders-sink', 3, 1_764_000_000_000)), ['restart-task-orders-sink-3', '{"requested-ms":1764000000000}']);
  assert.deepEqual(wire(encodeLoggerLevel('org.apache.iceberg', 'DEBUG')), ['logger-cluster-org.apache.iceberg', '{"level":"DEBUG"}']);
  assert.deepEqual(encodeConnectorRemoval('orders-sink').map(wire), [['connector-orders-sink', null], ['target-state-orders-sink', null]]);
  const status = { state: 'RUNNING', trace: null, workerId: '10.0.0.7:8083', generation: 3 } as const;
  assert.deepEqual(wire(encodeConnectorStatus('orders-sink', status)), ['status-connector-orders-sink', '{"state":"RUNNING","trace":null,"worker_id":"10.0.0.7:8083","generation":3}']);
  assert.deepEqual(wire(encodeTaskStatus('orders-sink', 0, { ...status, state: 'FAILED', trace: 'boom\n\tat x' })), ['status-task-orders-sink-0', '{"state":"FAILED","trace":"boom\\n\\tat x","worker_id":"10.0.0.7:8083","generation":3}']);
  assert.deepEqual(wire(encodeConnectorStatusRemoval('orders-sink')), ['status-connector-orders-sink', null]);
});

test('a config topic as a Java Connect worker writes it folds into connectors, targets, committed tasks, restarts and logger levels', () => {
  // Values as Connect 4.x writes them (no spaces, its field order), for two connectors with dashes in their names.
  const { s, warnings } = fold([
    ['target-state-a-b', '{"state":"PAUSED","state.v2":"STOPPED"}'], // 0: created with initial_state STOPPED
    ['connector-a-b', '{"properties":{"connector.class":"FileStreamSink","name":"a-b","tasks.max":"2"}}'], // 1
    ['connector-c', '{"properties":{"connector.class":"FileStreamSink","name":"c","tasks.max":"1"}}'], // 2
    ['task-c-0', '{"properties":{"connector.class":"FileStreamSink","task.class":"FileStreamSinkTask"}}'], // 3
    ['commit-c', '{"tasks":1}'], // 4
    ['session-key', '{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1764000000000}'], // 5
    ['restart-connector-c', '{"include-tasks":true,"only-failed":false}'], // 6
    ['logger-cluster-org.apache.kafka.connect', '{"level":"DEBUG"}'], // 7
    ['tasks-fencing-c', '{"task-count":1}'], // 8
  ]);
  assert.deepEqual(warnings, []);
  assert.deepEqual(s.connectorNames(), ['a-b', 'c']);
  assert.deepEqual(s.connector('a-b'), {
    name: 'a-b',
    config: { 'connector.class': 'FileStreamSink', name: 'a-b', 'tasks.max': '2' },
    target: 'STOPPED',
    taskCount: 0,
    taskConfigs: [],
    inconsistent: false,
    lastOffset: 1n,
  });
  assert.deepEqual(s.connector('c'), {
    name: 'c',
    config: { 'connector.class': 'FileStreamSink', name: 'c', 'tasks.max': '1' },
    target: 'STARTED',
    taskCount: 1,
    taskConfigs: [{ 'connector.class': 'FileStreamSink', 'task.class': 'FileStreamSinkTask' }],
    inconsistent: false,
    lastOffset: 4n,
  });
  assert.deepEqual(s.restartRequests(), [{ kind: 'connector', connector: 'c', includeTasks: true, onlyFailed: false, offset: 6n }]);
  assert.deepEqual(s.loggerLevels(), [{ namespace: 'org.apache.kafka.connect', level: 'DEBUG', offset: 7n }]);
  assert.equal(s.ignoredRecords, 2, 'session-key and tasks-fencing-c are not ours: ignored, counted');
  assert.equal(s.malformedRecords, 0);
  assert.equal(s.offset, 8n);
  assert.equal(s.connector('nope'), undefined);
});

test('task configs are visible only after their commit, all at once; an incomplete commit marks the connector inconsistent', () => {
  const s = new ConfigSnapshot();
  const { s: snap } = fold([wire(encodeConnectorConfig('x', { 'tasks.max': '2' })), wire(encodeTaskConfig('x', 0, { t: '0' })), wire(encodeTaskConfig('x', 1, { t: '1' }))], s);
  assert.equal(snap.connector('x')?.taskCount, 0, 'no commit yet');
  assert.deepEqual(snap.connector('x')?.taskConfigs, []);
  assert.deepEqual(snap.apply(...wire(encodeTaskCommit('x', 2)), 3n).change, { kind: 'tasks-committed', connector: 'x', taskCount: 2, inconsistent: false });
  assert.deepEqual(snap.connector('x')?.taskConfigs, [{ t: '0' }, { t: '1' }]);
  assert.equal(snap.connector('x')?.lastOffset, 3n);

  // A reconfiguration to one task: the old task 1 config may still sit in the topic; the commit counts only task 0.
  fold([wire(encodeTaskConfig('x', 0, { t: '0-v2' })), wire(encodeTaskCommit('x', 1))], snap, 4n);
  assert.deepEqual(snap.connector('x')?.taskConfigs, [{ t: '0-v2' }]);
  assert.equal(snap.connector('x')?.inconsistent, false);

  // A commit of 2 that finds only task 1 (compaction took the first task 0, or the writer died half-way).
  const compacted = fold([wire(encodeConnectorConfig('y', {})), wire(encodeTaskConfig('y', 1, { t: '1' })), wire(encodeTaskCommit('y', 2))]).s;
  assert.deepEqual(compacted.connector('y'), { name: 'y', config: {}, target: 'STARTED', taskCount: 2, taskConfigs: [], inconsistent: true, lastOffset: 2n });
  // The pending configs are spent by that commit: a later commit needs a fresh, complete set.
  fold([wire(encodeTaskConfig('y', 0, { t: '0' })), wire(encodeTaskCommit('y', 2))], compacted, 3n);
  assert.equal(compacted.connector('y')?.inconsistent, true, 'task 1 of before the failed commit does not count');
  fold([wire(encodeTaskConfig('y', 0, { t: '0' })), wire(encodeTaskConfig('y', 1, { t: '1b' })), wire(encodeTaskCommit('y', 2))], compacted, 5n);
  assert.deepEqual(compacted.connector('y')?.taskConfigs, [{ t: '0' }, { t: '1b' }]);
  assert.equal(compacted.connector('y')?.inconsistent, false);

  // Zero tasks is a complete commit (a STOPPED connector's tasks are removed that way).
  fold([wire(encodeTaskCommit('y', 0))], compacted, 8n);
  assert.deepEqual([compacted.connector('y')?.taskCount, compacted.connector('y')?.taskConfigs, compacted.connector('y')?.inconsistent], [0, [], false]);
});

test('target state: STARTED by default, state.v2 over state, an old worker\'s record, STOPPED\'s fallback read back, tombstone', () => {
  const { s } = fold([wire(encodeConnectorConfig('x', {}))]);
  assert.equal(s.connector('x')?.target, 'STARTED');
  s.apply(...wire(encodeTargetState('x', 'STOPPED')), 1n);
  assert.equal(s.connector('x')?.target, 'STOPPED', 'state.v2 wins over the PAUSED fallback');
  s.apply('target-state-x', '{"state":"PAUSED"}', 2n); // a worker before 3.5
  assert.equal(s.connector('x')?.target, 'PAUSED');
  const r = s.apply('target-state-x', '{"state":"STARTED","state.v2":7}', 3n);
  assert.equal(s.connector('x')?.target, 'STARTED', 'a state.v2 that is not a string falls back on state');
  assert.equal(r.warning, undefined);
  const bad = s.apply('target-state-x', '{"state":"RUNNING","state.v2":"SLEEPING"}', 4n);
  assert.match(bad.warning ?? '', /no valid target state/);
  assert.equal(s.connector('x')?.target, 'STARTED', 'an invalid record changes nothing');
  s.apply(...wire(encodeTargetState('x', 'PAUSED')), 5n);
  assert.deepEqual(s.apply('target-state-x', null, 6n).change, { kind: 'target-state', connector: 'x', target: 'STARTED', removed: true });
  assert.equal(s.connector('x')?.target, 'STARTED', 'a config without a target state is STARTED');
  assert.equal(s.connector('x')?.lastOffset, 6n);
});

test('tombstones: a deleted connector loses its config and committed tasks; task and commit records outlive it as in Connect', () => {
  const records = [
    wire(encodeConnectorConfig('x', { v: '1' })),
    wire(encodeTaskConfig('x', 0, { t: '0' })),
    wire(encodeTaskCommit('x', 1)),
    ...encodeConnectorRemoval('x').map(wire),
  ];
  const { s } = fold(records);
  assert.equal(s.connector('x'), undefined);
  assert.deepEqual(s.connectorNames(), []);
  // Re-created on a worker that saw the tombstone: no tasks until new ones are committed.
  s.apply(...wire(encodeConnectorConfig('x', { v: '2' })), 5n);
  assert.deepEqual([s.connector('x')?.config, s.connector('x')?.taskCount, s.connector('x')?.target], [{ v: '2' }, 0, 'STARTED']);
  // After compaction dropped the tombstones (delete.retention.ms), a new worker sees the old task records
  // before the new config: Connect shows those tasks until the herder commits new ones; so do we.
  const fresh = fold([wire(encodeTaskConfig('x', 0, { t: '0' })), wire(encodeTaskCommit('x', 1)), wire(encodeConnectorConfig('x', { v: '2' }))]).s;
  assert.deepEqual(fresh.connector('x')?.taskConfigs, [{ t: '0' }]);
});

test('restart requests keep their offsets (a worker runs only those after its initial read); the task restart is our extension', () => {
  const { s, warnings } = fold([
    wire(encodeConnectorRestart('x', { includeTasks: false, onlyFailed: true })), // 0
    wire(encodeTaskRestart('x', 2, 1000)), // 1
    wire(encodeConnectorRestart('y', { includeTasks: true, onlyFailed: true })), // 2
    wire(encodeConnectorRestart('x', { includeTasks: true, onlyFailed: false })), // 3: replaces 0
    ['restart-connector-z', '{}'], // 4: Connect defaults both flags to false, with a warning
    ['restart-connector-w', null], // 5: not a request
    ['restart-task-x', '{"requested-ms":1}'], // 6: no task number
    ['restart-task-x-1', '{"requested-ms":"soon"}'], // 7
  ]);
  assert.deepEqual(s.restartRequests(), [
    { kind: 'task', connector: 'x', task: 2, requestedMs: 1000, offset: 1n },
    { kind: 'connector', connector: 'y', includeTasks: true, onlyFailed: true, offset: 2n },
    { kind: 'connector', connector: 'x', includeTasks: true, onlyFailed: false, offset: 3n },
    { kind: 'connector', connector: 'z', includeTasks: false, onlyFailed: false, offset: 4n },
  ]);
  assert.deepEqual(s.restartRequests(3n).map((r) => r.offset), [3n, 4n], 'from an offset on (the initial read ended there)');
  assert.equal(warnings.length, 4);
  assert.match(warnings[0] ?? '', /restart-connector-z.*taken as false/);
  assert.match(warnings[1] ?? '', /restart-connector-w: unexpected tombstone/);
  assert.match(warnings[2] ?? '', /restart-task-x: not a task restart key/);
  assert.match(warnings[3] ?? '', /requested-ms/);
  assert.equal(s.malformedRecords, 3);
});

test('cluster logger levels: the latest per namespace with its offset', () => {
  const { s } = fold([wire(encodeLoggerLevel('org.apache.iceberg', 'DEBUG')), wire(encodeLoggerLevel('io.icefloe', 'WARN')), wire(encodeLoggerLevel('org.apache.iceberg', 'INFO'))]);
  assert.deepEqual(s.loggerLevels(), [{ namespace: 'io.icefloe', level: 'WARN', offset: 1n }, { namespace: 'org.apache.iceberg', level: 'INFO', offset: 2n }]);
  assert.match(s.apply('logger-cluster-x', '{"level":3}', 3n).warning ?? '', /"level" is a JSON number/);
  assert.match(s.apply('logger-cluster-x', null, 4n).warning ?? '', /unexpected tombstone/);
  assert.equal(s.loggerLevels().length, 2);
});

test('malformed records are skipped with a warning and counted; nothing throws; valid state stays as it was', () => {
  const base = [wire(encodeConnectorConfig('x', { v: '1' })), wire(encodeTaskConfig('x', 0, { t: '0' })), wire(encodeTaskCommit('x', 1))];
  const bad: [string, string | null][] = [
    ['connector-x', '{"properties":'], // not JSON
    ['connector-x', '[1,2]'],
    ['connector-x', '{"properties":"v=2"}'],
    ['connector-x', '{"properties":{"v":2}}'],
    ['connector-x', '"just a string"'],
    ['task-x-0', '{"properties":{"t":"bad"'],
    ['task-x', '{"properties":{}}'], // no task number
    ['task-x-one', '{"properties":{}}'],
    ['task-x-0', null],
    ['commit-x', '{"tasks":"1"}'],
    ['commit-x', '{"tasks":-1}'],
    ['commit-x', '{"tasks":1.5}'],
    ['commit-x', null],
    ['target-state-x', '{}'],
    ['target-state-x', 'PAUSED'],
  ];
  const { s, warnings } = fold([...base, ...bad]);
  assert.equal(warnings.length, bad.length, warnings.join('\n'));
  assert.equal(s.malformedRecords, bad.length);
  assert.match(warnings[0] ?? '', /^record connector-x: the value is not JSON/);
  assert.match(warnings[3] ?? '', /property "v" is a JSON number, not a string/);
  assert.deepEqual(s.connector('x'), { name: 'x', config: { v: '1' }, target: 'STARTED', taskCount: 1, taskConfigs: [{ t: '0' }], inconsistent: false, lastOffset: 2n });
  assert.equal(s.offset, BigInt(base.length + bad.length - 1), 'skipped records still advance the offset');

  // Connect's schema allows null property values; they are dropped (and named), the rest is taken.
  const nulls = new ConfigSnapshot().apply('connector-n', '{"properties":{"a":"1","b":null}}', 0n);
  assert.match(nulls.warning ?? '', /null values dropped: b/);
  // A key such as __proto__ is a key like any other.
  const proto = new ConfigSnapshot();
  proto.apply('connector-p', '{"properties":{"__proto__":"x","a":"1"}}', 0n);
  assert.deepEqual(Object.entries(proto.connector('p')?.config ?? {}), [['__proto__', 'x'], ['a', '1']]);
});

test('task keys split at the last dash, as Connect\'s parseTaskId', () => {
  assert.deepEqual(parseTaskSuffix('a-b-c-12'), { connector: 'a-b-c', task: 12 });
  assert.deepEqual(parseTaskSuffix('a--3'), { connector: 'a-', task: 3 });
  for (const bad of ['abc', '-1', 'a-', 'a-x', 'a-99999999999', 'a-2147483648']) assert.equal(parseTaskSuffix(bad), undefined, bad);
  assert.equal(configKeys.task('a-b', 3), 'task-a-b-3');
});

test('status topic: the latest per key, tombstones delete, a connector tombstone takes its task statuses, bad records skipped', () => {
  const s = new StatusSnapshot();
  const w = (e: StateEntry, partition: number, offset: bigint) => s.apply(...wire(e), partition, offset);
  const running = { state: 'RUNNING', trace: null, workerId: 'w1:8083', generation: 1 } as const;
  w(encodeConnectorStatus('x', running), 0, 0n);
  w(encodeTaskStatus('x', 0, running), 1, 0n);
  w(encodeTaskStatus('x', 1, { ...running, state: 'FAILED', trace: 'boom', generation: 2 }), 2, 0n);
  w(encodeTaskStatus('x', 0, { ...running, workerId: 'w2:8083', generation: 3 }), 1, 1n);
  assert.deepEqual(s.task('x', 0), { state: 'RUNNING', trace: null, workerId: 'w2:8083', generation: 3, partition: 1, offset: 1n });
  assert.deepEqual(s.tasks('x').map((t) => [t.task, t.status.state, t.status.trace]), [[0, 'RUNNING', null], [1, 'FAILED', 'boom']]);
  // A Connect record without trace, one from 4.1+ with a plugin version.
  s.apply('status-connector-y', '{"state":"PAUSED","worker_id":"w1:8083","generation":7}', 3, 0n);
  s.apply('status-task-y-0', '{"state":"RUNNING","trace":null,"worker_id":"w1:8083","generation":7,"version":"4.3.1"}', 3, 1n);
  assert.deepEqual(s.connector('y'), { state: 'PAUSED', trace: null, workerId: 'w1:8083', generation: 7, partition: 3, offset: 0n });
  assert.equal(s.task('y', 0)?.version, '4.3.1');
  assert.deepEqual(s.connectorNames(), ['x', 'y']);

  assert.deepEqual(s.apply('status-task-x-1', null, 2, 1n).change, { kind: 'task-status', connector: 'x', task: 1, status: null });
  assert.equal(s.task('x', 1), undefined);
  s.apply('status-connector-x', null, 0, 1n);
  assert.equal(s.connector('x'), undefined);
  assert.deepEqual(s.tasks('x'), [], 'the connector\'s tombstone takes its task statuses');
  assert.deepEqual(s.connectorNames(), ['y']);

  const bad: [string, string | null][] = [
    ['status-task-y-0', '{"state":"SLEEPING","trace":null,"worker_id":"w","generation":1}'],
    ['status-task-y-0', '{"state":"RUNNING","worker_id":"w","generation":"1"}'],
    ['status-task-y-0', '{"state":"RUNNING","generation":1}'],
    ['status-task-y-0', '{"state":"RUNNING","trace":5,"worker_id":"w","generation":1}'],
    ['status-task-y', '{"state":"RUNNING","worker_id":"w","generation":1}'],
    ['status-connector-', '{"state":"RUNNING","worker_id":"w","generation":1}'],
    ['status-connector-y', 'not json'],
  ];
  for (const [k, v] of bad) assert.notEqual(s.apply(k, v, 3, 9n).warning, undefined, `${k} ${v}`);
  assert.equal(s.malformedRecords, bad.length);
  assert.equal(s.task('y', 0)?.offset, 1n, 'bad records change nothing');
  s.apply('status-topic-orders:connector-y', '{"topic":{"name":"orders","connector":"y","task":0,"discoverTimestamp":1}}', 3, 10n);
  assert.equal(s.ignoredRecords, 1);
});

test('canWriteSafely: Connect\'s guard against a stale worker overwriting a newer owner\'s status', () => {
  const current = { state: 'RUNNING', trace: null, workerId: 'w2:8083', generation: 5 } as const;
  assert.equal(canWriteSafely(undefined, { workerId: 'w1:8083', generation: 1 }), true);
  assert.equal(canWriteSafely(current, { workerId: 'w2:8083', generation: 1 }), true, 'the same worker');
  assert.equal(canWriteSafely(current, { workerId: 'w1:8083', generation: 5 }), true, 'the same generation');
  assert.equal(canWriteSafely(current, { workerId: 'w1:8083', generation: 4 }), false, 'an older generation of another worker');
});

test('keys go to the partition the Java producer picks: Kafka\'s murmur2 test vectors, toPositive, modulo', () => {
  // Kafka's UtilsTest.testMurmur2.
  const vectors: [string, number][] = [
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ];
  for (const [s, h] of vectors) assert.equal(murmur2(new TextEncoder().encode(s)), h, s);
  assert.equal(keyPartition('foobar', 5), (-790332482 & 0x7fffffff) % 5);
  assert.equal(keyPartition('anything', 1), 0);
  const spread = new Set(Array.from({ length: 50 }, (_, i) => keyPartition(`status-task-c-${i}`, 5)));
  assert.equal(spread.size, 5, 'keys spread over every partition');
});

test('folding 1,000 connectors with 2 committed tasks each takes milliseconds', () => {
  const records: [string, string | null][] = [];
  for (let i = 0; i < 1000; i++) {
    const name = `connector-${i}`;
    const cfg = { 'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector', 'tasks.max': '2', topics: `t${i}`, 'iceberg.tables': `db.t${i}` };
    records.push(wire(encodeConnectorConfig(name, cfg)), wire(encodeTargetState(name, i % 3 === 0 ? 'PAUSED' : 'STARTED')));
    records.push(wire(encodeTaskConfig(name, 0, cfg)), wire(encodeTaskConfig(name, 1, cfg)), wire(encodeTaskCommit(name, 2)));
  }
  const started = performance.now();
  const { s, warnings } = fold(records);
  const entries = s.connectors();
  const ms = performance.now() - started;
  assert.deepEqual(warnings, []);
  assert.equal(entries.length, 1000);
  assert.ok(entries.every((e) => e.taskConfigs.length === 2));
  assert.ok(ms < 1000, `folding took ${ms.toFixed(0)} ms`);
});
