import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../../src/core/errors.ts';
import { checkControlTopicConfig } from '../../../src/coordinate/connector-health.ts';
import { describeRequest, parseDescribeResponse } from '../../../src/consume/confluent/topic-configs.ts';
import { defaultControlTopic, parseConnectorConfig } from '../../../src/config/connector-config.ts';
import { expected, Rig, sortCoordinates, until } from '../runtime/rig.ts';

const SAFE = { 'cleanup.policy': 'delete', 'retention.ms': String(7 * 86_400_000), 'retention.bytes': '-1' };
const control = { minRetentionMs: 86_400_000 };

test('the control topic check accepts delete, unlimited bytes and a long retention; returns retention.ms', () => {
  assert.equal(checkControlTopicConfig('t', SAFE, control), 7 * 86_400_000);
  assert.equal(checkControlTopicConfig('t', { ...SAFE, 'retention.ms': '-1' }, control), null);
});

test('the control topic check refuses compaction, a size bound or a short retention, naming the setting and the topic', () => {
  const refused = (configs: Record<string, string>, setting: RegExp): void => {
    assert.throws(() => checkControlTopicConfig('ctl-x', configs, control), (e: unknown) => e instanceof ConfigError && setting.test(e.message) && e.message.includes('control topic ctl-x'));
  };
  refused({ ...SAFE, 'cleanup.policy': 'compact' }, /cleanup\.policy=compact/);
  refused({ ...SAFE, 'cleanup.policy': 'compact,delete' }, /cleanup\.policy=compact,delete/);
  refused({ ...SAFE, 'retention.bytes': '1073741824' }, /retention\.bytes=1073741824/);
  refused({ ...SAFE, 'retention.ms': '3600000' }, /retention\.ms=3600000 is shorter than icefloe\.control\.topic\.min-retention-ms/);
  refused({ 'cleanup.policy': 'delete', 'retention.bytes': '-1' }, /retention\.ms=\(not reported\)/);
});

test('DescribeConfigs v1: the request encodes one topic resource; the response decodes configs and errors', () => {
  const req = describeRequest('abc', 'cid');
  assert.equal(req.readInt32BE(0), req.length - 4);
  assert.equal(req.readInt16BE(4), 32);
  assert.equal(req.readInt16BE(6), 1);
  const s = (v: string | null): Buffer => {
    if (v === null) return Buffer.from([0xff, 0xff]);
    const b = Buffer.alloc(2);
    b.writeInt16BE(v.length);
    return Buffer.concat([b, Buffer.from(v)]);
  };
  const i32 = (n: number): Buffer => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return b;
  };
  const cfg = (k: string, v: string | null): Buffer => Buffer.concat([s(k), s(v), Buffer.from([0, 5, 0]), i32(0)]);
  const body = (error: number, configs: Buffer[]): Buffer => Buffer.concat([i32(0), i32(1), Buffer.from([0, error]), s(null), Buffer.from([2]), s('abc'), i32(configs.length), ...configs]);
  assert.deepEqual(parseDescribeResponse(body(0, [cfg('cleanup.policy', 'compact'), cfg('retention.ms', '100'), cfg('secret', null)]), 'abc'), { 'cleanup.policy': 'compact', 'retention.ms': '100' });
  assert.throws(() => parseDescribeResponse(body(3, []), 'abc'), (e: unknown) => e instanceof ConfigError && /does not exist/.test(e.message));
});

test('the default control topic is the connector\'s own; a named one is shared as named', () => {
  assert.equal(defaultControlTopic('orders sink/1'), 'icefloe-control-orders_sink_1');
  const base = {
    name: 'orders',
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    topics: 't',
    'iceberg.tables': 'db.t',
    'iceberg.catalog.type': 'sql',
    'iceberg.catalog.uri': 'jdbc:sqlite::memory:',
    'iceberg.catalog.warehouse': 'file:///tmp/w',
  };
  assert.equal(parseConnectorConfig(base).control.topic, 'icefloe-control-orders');
  assert.equal(parseConnectorConfig({ ...base, 'iceberg.control.topic': 'control-iceberg' }).control.topic, 'control-iceberg');
  assert.throws(() => parseConnectorConfig({ ...base, 'icefloe.control.retention-alarm-ratio': '0.9', 'icefloe.control.retention-stop-ratio': '0.8' }), /retention-stop-ratio/);
  assert.throws(() => parseConnectorConfig({ ...base, 'icefloe.control.topic.retention-ms': '7200000' }), /min-retention-ms/);
});

test('the committer reports the oldest unapplied announcement of a table it cannot commit, and clears it once applied', async (t) => {
  const rig = await new Rig({ partitions: 1 }).init();
  t.after(() => rig.close());
  const produced = rig.produce(0, 10);
  const task = rig.startTask(0);
  await until('announced', () => rig.committedOffset(0) === 10n);
  await task.stop();
  const committer = rig.committer();
  rig.memoryCatalog.commitFaults.push(...Array.from({ length: 20 }, () => 'retriable' as const));
  await committer.round();
  const waiting = committer.tableStatus()[0];
  assert.equal(waiting?.state, 'RUNNING');
  assert.ok(waiting?.oldestUnappliedMs !== undefined && Math.abs(Date.now() - waiting.oldestUnappliedMs) < 60_000, 'the announcement\'s Kafka timestamp');
  rig.memoryCatalog.commitFaults.length = 0;
  await committer.round();
  assert.equal(committer.tableStatus()[0]?.oldestUnappliedMs, undefined);
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: produced }));
});
