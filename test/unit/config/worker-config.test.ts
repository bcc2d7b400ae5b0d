import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { ConfigError } from '../../../src/core/errors.ts';
import { HIDDEN } from '../../../src/config/config-def.ts';
import { WORKER_UNSUPPORTED } from '../../../src/config/unsupported.ts';
import { parseConnectorFile, parseProperties, parseWorkerProperties, validateWorkerConfig } from '../../../src/config/worker-config.ts';

const BASE_DIR = '/srv/icefloe';

test('parseProperties: Java properties syntax', () => {
  const text = [
    '# a comment',
    '  ! another comment \\',
    'a=1',
    'b: 2',
    'c   3',
    '  d = spaced value  ',
    'e=multi \\',
    '    line \\',
    '    value',
    'f=tab\\there\\nnewline \\u00e9 back\\\\slash',
    'g\\=key\\:with\\ seps=v',
    'h=ends with backslash\\\\',
    'i=',
    'j',
    'a=override',
    'url=http://host:8081',
    '',
  ].join('\n');
  assert.deepEqual(parseProperties(text), {
    a: 'override',
    b: '2',
    c: '3',
    d: 'spaced value  ',
    e: 'multi line value',
    f: 'tab\there\nnewline é back\\slash',
    'g=key:with seps': 'v',
    h: 'ends with backslash\\',
    i: '',
    j: '',
    url: 'http://host:8081',
  });
  assert.deepEqual(parseProperties('a=1\r\nb=2\r'), { a: '1', b: '2' });
  assert.throws(() => parseProperties('a=\\u12'), ConfigError);
});

test('an empty worker file is the embedded default', () => {
  const w = parseWorkerProperties('', { baseDir: BASE_DIR });
  assert.deepEqual(w.bootstrapServers, ['localhost:9092']);
  assert.equal(w.keyConverter.kind, 'json');
  assert.equal(w.valueConverter.schemasEnable, true);
  assert.equal(w.warehouse, '/srv/icefloe/icefloe-data/warehouse');
  assert.deepEqual(w.catalog, { kind: 'sqlite', path: '/srv/icefloe/icefloe-data/catalog.db' });
  assert.deepEqual(w.defaultCatalogProps, { type: 'sql', uri: 'jdbc:sqlite:/srv/icefloe/icefloe-data/catalog.db', warehouse: 'file:///srv/icefloe/icefloe-data/warehouse' });
  assert.equal(w.tasksMode, 'process');
  assert.equal(w.taskIdOffset, 0);
  assert.equal(w.taskShutdownTimeoutMs, 30_000);
  assert.deepEqual(w.clientSecurity, { 'security.protocol': 'PLAINTEXT' });
  assert.deepEqual(w.warnings, []);
});

test('connect-standalone keys that do not apply are accepted with a note', () => {
  const v = validateWorkerConfig(
    parseProperties('offset.flush.interval.ms=10000\noffset.storage.file.filename=/tmp/connect.offsets\nplugin.path=/usr/share/java\ngroup.id=x\nicefloe.warehous=typo'),
    { baseDir: BASE_DIR },
  );
  assert.equal(v.errorCount, 0);
  assert.equal(v.warnings.length, 4);
  assert.ok(v.warnings.some((w) => /offset.flush.interval.ms is ignored/.test(w)));
  assert.ok(v.warnings.some((w) => /icefloe.warehous is not a known worker key/.test(w)));
});

test('worker catalogs: PostgreSQL, REST with extra properties, none', () => {
  const pg = parseWorkerProperties('icefloe.catalog=postgresql://iceberg:pw@127.0.0.1:5432/iceberg\nicefloe.warehouse=s3://warehouse/', { baseDir: BASE_DIR });
  assert.deepEqual(pg.defaultCatalogProps, { type: 'sql', uri: 'jdbc:postgresql://iceberg:pw@127.0.0.1:5432/iceberg', warehouse: 's3://warehouse/' });
  assert.ok(!JSON.stringify(pg.defaultCatalogProps).includes(':pw@'), 'a uri password is masked when logged');
  assert.ok(!JSON.stringify(pg.redacted()).includes(':pw@'));
  const rest = parseWorkerProperties('icefloe.catalog=http://127.0.0.1:8181\nicefloe.catalog.token=tok\nicefloe.catalog.warehouse=s3://w/', { baseDir: BASE_DIR });
  assert.deepEqual(rest.defaultCatalogProps, { type: 'rest', uri: 'http://127.0.0.1:8181', token: 'tok', warehouse: 's3://w/' });
  assert.ok(!inspect(rest.defaultCatalogProps).includes('tok\''), 'inspect hides the token');
  assert.deepEqual(rest.secretKeys, ['icefloe.catalog.token']);
  assert.equal(parseWorkerProperties('icefloe.catalog=none', { baseDir: BASE_DIR }).defaultCatalogProps, undefined);
  const bad = validateWorkerConfig({ 'icefloe.catalog': 'hive://x' }, { baseDir: BASE_DIR });
  assert.match(bad.errors.get('icefloe.catalog')?.[0] ?? '', /Expected sqlite:<file>/);
});

test('task.shutdown.graceful.timeout.ms: how long stopping tasks may take, a non-negative number of ms', () => {
  assert.equal(parseWorkerProperties('task.shutdown.graceful.timeout.ms=5000', { baseDir: BASE_DIR }).taskShutdownTimeoutMs, 5000);
  for (const bad of ['-1', 'soon']) {
    const v = validateWorkerConfig({ 'task.shutdown.graceful.timeout.ms': bad }, { baseDir: BASE_DIR });
    assert.equal(v.errorCount, 1, bad);
    assert.ok(v.errors.has('task.shutdown.graceful.timeout.ms'), bad);
  }
});

test('icefloe.tasks.id-offset: a non-negative integer added to the task ids', () => {
  assert.equal(parseWorkerProperties('icefloe.tasks.id-offset=2', { baseDir: BASE_DIR }).taskIdOffset, 2);
  for (const bad of ['-1', 'one']) {
    const v = validateWorkerConfig({ 'icefloe.tasks.id-offset': bad }, { baseDir: BASE_DIR });
    assert.equal(v.errorCount, 1, bad);
    assert.ok(v.errors.has('icefloe.tasks.id-offset'), bad);
  }
});

test('client security passes through, and is redacted for logs', () => {
  const w = parseWorkerProperties(
    [
      'security.protocol=sasl_ssl',
      'sasl.mechanism=PLAIN',
      'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
      'ssl.ca.location=/etc/ca.pem',
      'ssl.key.password=kp',
      'consumer.max.poll.records=1000',
    ].join('\n'),
    { baseDir: BASE_DIR },
  );
  assert.equal(w.clientSecurity['security.protocol'], 'SASL_SSL');
  assert.equal(w.clientSecurity['sasl.jaas.config']?.includes('password="p"'), true);
  assert.equal(w.clientSecurity['ssl.ca.location'], '/etc/ca.pem');
  assert.deepEqual(w.consumerProps, { 'max.poll.records': '1000' });
  assert.deepEqual(w.secretKeys, ['sasl.jaas.config', 'ssl.key.password']);
  assert.equal(w.redacted()['sasl.jaas.config'], HIDDEN);
  const logged = JSON.stringify(w.clientSecurity) + inspect(w.clientSecurity);
  assert.ok(!logged.includes('password="p"') && !logged.includes('kp'));
});

test('worker errors are collected: converters, security protocol, brokers, unsupported keys', () => {
  const v = validateWorkerConfig(
    {
      'value.converter': 'io.confluent.connect.avro.AvroConverter',
      'admin.listeners': 'http://127.0.0.1:8084',
      'security.protocol': 'TLS',
      'bootstrap.servers': 'kafka',
    },
    { baseDir: BASE_DIR },
  );
  assert.deepEqual([...v.errors.keys()].sort(), ['admin.listeners', 'bootstrap.servers', 'security.protocol', 'value.converter']);
  assert.match(v.errors.get('value.converter')?.[0] ?? '', /value.converter.schema.registry.url/);
  assert.throws(() => parseWorkerProperties('admin.listeners=http://:8084', { baseDir: BASE_DIR }), /not supported yet: admin.listeners needs a separate listener/);
});

test('worker keys Icefloe does not act on yet fail with "not supported yet"; their defaults load', () => {
  const rejected: Record<string, string> = {
    'header.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'connector.client.config.override.policy': 'None',
    'admin.listeners': 'http://127.0.0.1:8084',
    'rest.extension.classes': 'org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension',
  };
  const v = validateWorkerConfig(rejected, { baseDir: BASE_DIR });
  assert.deepEqual([...v.errors.keys()].sort(), Object.keys(rejected).sort());
  for (const [key, errs] of v.errors) {
    assert.equal(errs.length, 1, key);
    assert.ok(errs[0]?.startsWith(`not supported yet: ${key} needs `), errs[0]);
  }
  for (const rule of WORKER_UNSUPPORTED) assert.ok(Object.keys(rejected).some((k) => k === rule.key || (rule.key.endsWith('.') && k.startsWith(rule.key))), rule.key);
  assert.match(v.errors.get('rest.extension.classes')?.[0] ?? '', /needs Java REST extensions, which need a JVM\. For HTTP basic authentication .* set icefloe\.rest\.basic-auth\.file/);

  const noOp = {
    'header.converter': 'org.apache.kafka.connect.storage.SimpleHeaderConverter',
    'config.providers': '',
    'connector.client.config.override.policy': 'All',
    listeners: 'http://:8083',
    'admin.listeners': '',
    'rest.extension.classes': '',
  };
  assert.deepEqual(Object.fromEntries(validateWorkerConfig(noOp, { baseDir: BASE_DIR }).errors), {});
});

test('distributed-mode keys: Connect\'s names and defaults, the Redis URL a secret, the missing ones named', () => {
  const props = {
    'group.id': 'icefloe-cluster',
    'config.storage.topic': 'icefloe-configs',
    'status.storage.topic': 'icefloe-status',
    'offset.storage.topic': 'icefloe-offsets',
    'config.storage.replication.factor': '1',
    'icefloe.redis.url': 'redis://:s3cret@127.0.0.1:6379/0',
  };
  const w = parseWorkerProperties(Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n'), { baseDir: BASE_DIR });
  const c = w.cluster;
  assert.ok(c !== null);
  assert.equal(c.groupId, 'icefloe-cluster');
  assert.deepEqual(c.configTopic, { name: 'icefloe-configs', replicationFactor: 1 });
  assert.deepEqual(c.statusTopic, { name: 'icefloe-status', partitions: 5, replicationFactor: 3 });
  assert.deepEqual([c.heartbeatMs, c.sessionTimeoutMs, c.leaseTtlMs], [3000, 10_000, 15_000]);
  assert.equal(c.redisUrl.reveal(), 'redis://:s3cret@127.0.0.1:6379/0');
  assert.ok(!JSON.stringify(c).includes('s3cret') && !inspect(c).includes('s3cret') && !JSON.stringify(w.redacted()).includes('s3cret'));
  const partial = parseWorkerProperties('group.id=g\n', { baseDir: BASE_DIR });
  assert.equal(partial.cluster, null);
  assert.deepEqual(partial.clusterMissing, ['config.storage.topic', 'status.storage.topic', 'icefloe.redis.url']);
  const v = validateWorkerConfig({ ...props, 'heartbeat.interval.ms': '5000', 'session.timeout.ms': '4000' }, { baseDir: BASE_DIR });
  assert.match(v.errors.get('session.timeout.ms')?.[0] ?? '', /must exceed heartbeat.interval.ms/);
});

test('connector files: the REST shape and the flat shape', () => {
  const rest = parseConnectorFile(JSON.stringify({ name: 'orders', config: { 'connector.class': 'IcebergSink', 'tasks.max': 2, 'iceberg.tables.auto-create-enabled': true } }), 'orders.json');
  assert.equal(rest.name, 'orders');
  assert.deepEqual(rest.config, { 'connector.class': 'IcebergSink', 'tasks.max': '2', 'iceberg.tables.auto-create-enabled': 'true', name: 'orders' });
  assert.equal(rest.initialState, 'RUNNING');
  const flat = parseConnectorFile('{"name": "o", "topics": "x", "big": 12345678901234567890}', 'o.json');
  assert.deepEqual(flat.config, { name: 'o', topics: 'x', big: '12345678901234567890' });
  const props = parseConnectorFile('name=p\ntopics=x\n', 'p.properties');
  assert.deepEqual(props.config, { name: 'p', topics: 'x' });
  assert.equal(parseConnectorFile('{"name":"s","config":{},"initial_state":"stopped"}', 's.json').initialState, 'STOPPED');

  const bad: [string, RegExp][] = [
    ['{"name":"a","config":{"name":"b"}}', /Connector name configuration \(b\) doesn't match connector name in the URL \(a\)/],
    ['{"config":{"topics":"x"}}', /has no "name"/],
    ['{"topics":"x"}', /has no "name"/],
    ['{"name":"a","config":{"topics":["x"]}}', /must be a string .* got an array/],
    ['{"name":"a","topics":null}', /got null/],
    ['{"name":"a","config":{},"tasks":[]}', /unexpected field/],
    ['{"name":"a","config":{},"initial_state":"GONE"}', /initial_state/],
    ['[1]', /expected a JSON object/],
    ['{nope', /not valid JSON/],
  ];
  for (const [text, re] of bad) assert.throws(() => parseConnectorFile(text, 'f.json'), (e: unknown) => e instanceof ConfigError && re.test(e.message), text);
});

test('icefloe.log.format: auto by default, json or pretty; anything else is an error naming the key and its values', () => {
  assert.equal(parseWorkerProperties('', { baseDir: BASE_DIR }).logFormat, 'auto');
  assert.equal(parseWorkerProperties('icefloe.log.format=json', { baseDir: BASE_DIR }).logFormat, 'json');
  assert.equal(parseWorkerProperties('icefloe.log.format=pretty', { baseDir: BASE_DIR }).logFormat, 'pretty');
  assert.throws(() => parseWorkerProperties('icefloe.log.format=fancy', { baseDir: BASE_DIR }), /Invalid value fancy for configuration icefloe\.log\.format: String must be one of: auto, json, pretty/);
});

test('a worker key that looks like a known one is named with a suggestion, once', () => {
  const v = validateWorkerConfig(parseProperties('bootstrap.server=127.0.0.1:9092\nicefloe.tasks.mod=process\nicefloe.tasks.mode=process\nsecurity.protocl=SSL\nmy.own=1'), { baseDir: BASE_DIR });
  assert.equal(v.errorCount, 0);
  assert.deepEqual(v.warnings, [
    'bootstrap.server is not a known worker key; it is kept but not used (did you mean bootstrap.servers?)',
    'icefloe.tasks.mod is not a known worker key; it is kept but not used (did you mean icefloe.tasks.mode?)',
    'security.protocl is not a known worker key; it is kept but not used (did you mean security.protocol?)',
  ]);
  // With errors, the suggestion goes with them (the worker does not start, so its warnings are not logged).
  assert.throws(() => parseWorkerProperties('icefloe.tasks.mode=threads\nbootstrap.server=x:1', { baseDir: BASE_DIR }), (e: unknown) => {
    assert.ok(e instanceof Error);
    assert.match(e.message, /^worker config: 1 configuration error\(s\): Invalid value threads for configuration icefloe\.tasks\.mode: .*; 'bootstrap\.server' is not a known key \(did you mean bootstrap\.servers\?\)$/);
    return true;
  });
});
