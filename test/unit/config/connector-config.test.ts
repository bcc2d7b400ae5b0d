import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HIDDEN } from '../../../src/config/config-def.ts';
import {
  CONNECTOR_CONFIG_DEF,
  MESSAGES,
  parseConnectorConfig,
  validateConnectorConfig,
} from '../../../src/config/connector-config.ts';
import { CONNECTOR_UNSUPPORTED, WRITE_PROPS_UNSUPPORTED } from '../../../src/config/unsupported.ts';
import { ConfigError } from '../../../src/core/errors.ts';

const BASE: Readonly<Record<string, string>> = {
  name: 'orders',
  'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
  topics: 'orders',
  'iceberg.tables': 'sales.orders',
  'iceberg.catalog.type': 'rest',
  'iceberg.catalog.uri': 'http://127.0.0.1:8181',
};

function without(raw: Readonly<Record<string, string>>, ...keys: string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(raw).filter(([k]) => !keys.includes(k)));
}

function errorsOf(raw: Record<string, string>, options = {}): Record<string, readonly string[]> {
  return Object.fromEntries(validateConnectorConfig(raw, options).errors);
}

test('a minimal config gets the Apache sink\'s defaults', () => {
  const c = parseConnectorConfig(BASE);
  assert.equal(c.name, 'orders');
  assert.equal(c.tasksMax, 1);
  assert.deepEqual(c.topics, { kind: 'list', topics: ['orders'] });
  assert.equal(c.groupId, 'connect-orders');
  assert.deepEqual(c.tables.routing, { kind: 'all', tables: ['sales.orders'] });
  assert.equal(c.tables.autoCreate, false);
  assert.equal(c.tables.evolveSchema, false);
  assert.equal(c.tables.forceOptional, false);
  assert.equal(c.tables.caseInsensitive, false);
  assert.equal(c.tables.unrouted, 'fail');
  assert.deepEqual(c.tables.kafkaMetadata, { columns: [], prefix: '_kafka_metadata_' });
  assert.deepEqual(c.tables.settings('sales.orders'), { partitionBy: '', partitionByKey: 'iceberg.tables.default-partition-by', routeRegex: null, commitBranch: 'main' });
  assert.equal(c.control.topic, 'icefloe-control-orders');
  assert.equal(c.control.commitIntervalMs, 300000);
  assert.equal(c.control.topicRetentionMs, 7 * 24 * 3600 * 1000);
  assert.equal(c.control.topicReplicationFactor, -1);
  assert.deepEqual(c.commit, { intervalMs: 300000, maxBytes: null, maxRecords: null });
  assert.equal(c.memoryBudgetBytes, 192 * 1024 * 1024);
  assert.equal(parseConnectorConfig({ ...BASE, 'icefloe.task.memory-budget-bytes': '1073741824' }).memoryBudgetBytes, 1073741824);
  assert.throws(() => parseConnectorConfig({ ...BASE, 'icefloe.task.memory-budget-bytes': '1024' }), /icefloe.task.memory-budget-bytes/);
  assert.equal(c.catalog.name, 'iceberg');
  assert.equal(c.catalog.type, 'rest');
  assert.equal(c.catalog.fromWorker, false);
  assert.deepEqual(c.errors, { tolerance: 'none', logEnable: false, retryTimeoutMs: null, retryDelayMaxMs: 60000, logIncludeMessages: false, deadLetterTopic: null, deadLetterTable: null, recordMaxBytes: 0 });
  assert.equal(c.keyConverter, null);
  assert.equal(c.valueConverter, null);
  assert.deepEqual(c.warnings, []);
});

test('the typed result is immutable and echoes the stored map exactly', () => {
  const raw = { ...BASE, 'tasks.max': ' 2 ', 'some.plugin.key': 'kept' };
  const c = parseConnectorConfig(raw);
  assert.ok(Object.isFrozen(c) && Object.isFrozen(c.tables) && Object.isFrozen(c.control) && Object.isFrozen(c.catalog.props));
  assert.throws(() => {
    (c as { tasksMax: number }).tasksMax = 5;
  }, TypeError);
  assert.deepEqual(c.stored(), raw);
  assert.notEqual(c.stored(), c.stored());
  assert.equal(c.tasksMax, 2);
});

test('connector.class: the Apache, Tabular and Icefloe names and Connect\'s simple aliases', () => {
  for (const cls of ['org.apache.iceberg.connect.IcebergSinkConnector', 'io.tabular.iceberg.connect.IcebergSinkConnector', 'io.icefloe.connect.IcefloeSinkConnector', 'IcebergSinkConnector', 'IcebergSink']) {
    assert.deepEqual(errorsOf({ ...BASE, 'connector.class': cls }), {}, cls);
  }
  assert.match(errorsOf({ ...BASE, 'connector.class': 'com.example.S3Sink' })['connector.class']?.[0] ?? '', /^Failed to find any class that implements Connector and which name matches com\.example\.S3Sink/);
});

test('the Java sink\'s table rules, with its messages', () => {
  const noTables = without(BASE, 'iceberg.tables');
  assert.deepEqual(errorsOf(noTables), { 'iceberg.tables': [MESSAGES.noTables] });
  assert.equal(MESSAGES.noTables, 'Must specify table name(s)');
  assert.deepEqual(errorsOf({ ...BASE, 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 'db' }), {
    // Java's text, then the value and the fix (one message per key).
    'iceberg.tables': ['Invalid value sales.orders for configuration iceberg.tables: Cannot specify both static and dynamic table names: iceberg.tables.dynamic-enabled=true routes each record to the table its route field names. Remove iceberg.tables for dynamic routing, or set iceberg.tables.dynamic-enabled=false to write to the listed tables'],
  });
  assert.deepEqual(errorsOf({ ...noTables, 'iceberg.tables.dynamic-enabled': 'true' }), {
    'iceberg.tables.route-field': ['Must specify a route field if using dynamic table names (iceberg.tables.dynamic-enabled=true): set iceberg.tables.route-field to the record field whose value names the table (namespace.table), or turn dynamic routing off and list the tables in iceberg.tables'],
  });
  const noCatalog = without(BASE, 'iceberg.catalog.type', 'iceberg.catalog.uri');
  assert.deepEqual(errorsOf(noCatalog), { 'iceberg.catalog': ['Must specify Iceberg catalog properties'] });
});

test('every problem is reported at once, not just the first', () => {
  const v = validateConnectorConfig({ 'connector.class': 'IcebergSink', 'tasks.max': '0', 'iceberg.tables.dynamic-enabled': 'yes' });
  assert.equal(v.config, null);
  assert.deepEqual([...v.errors.keys()].sort(), ['iceberg.catalog', 'iceberg.tables', 'iceberg.tables.dynamic-enabled', 'name', 'tasks.max', 'topics', 'topics.regex']);
  assert.equal(v.errorCount, 8 - 1, 'both topics keys, one each for the rest');
  assert.throws(() => parseConnectorConfig({ name: 'x' }), (e: unknown) => e instanceof ConfigError && /connector x: \d+ configuration error/.test(e.message));
});

test('topics and topics.regex: exactly one, errors on both keys, regex matches whole names', () => {
  const none = without(BASE, 'topics');
  assert.deepEqual(errorsOf(none), { topics: [MESSAGES.topicsNone], 'topics.regex': [MESSAGES.topicsNone] });
  assert.deepEqual(errorsOf({ ...BASE, 'topics.regex': 'o.*' }), { topics: [MESSAGES.topicsBoth], 'topics.regex': [MESSAGES.topicsBoth] });
  const c = parseConnectorConfig({ ...none, 'topics.regex': 'orders-.*' });
  assert.ok(c.topics.kind === 'regex');
  assert.ok(c.topics.regex.test('orders-eu') && !c.topics.regex.test('x-orders-eu'));
  assert.match(errorsOf({ ...none, 'topics.regex': '(' })['topics.regex']?.[0] ?? '', /^Invalid value \( for configuration topics.regex: Not a valid regular expression/);
  assert.match(errorsOf({ ...BASE, topics: 'a,b,a' }).topics?.[0] ?? '', /listed twice/);
});

test('keys Icefloe does not act on yet fail validation with "not supported yet", per key, naming what brings them', () => {
  const rejected: Record<string, string> = {
    transforms: 'route',
    'transforms.route.type': 'org.apache.kafka.connect.transforms.RegexRouter',
    predicates: 'notTombstone',
    'predicates.notTombstone.type': 'org.apache.kafka.connect.transforms.predicates.RecordIsTombstone',
    'header.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'header.converter.schemas.enable': 'false',
    'iceberg.tables.default-id-columns': 'id',
    'iceberg.table.sales.orders.id-columns': 'order_id, line',
    'iceberg.control.commit.threads': '4',
    'iceberg.control.commit.max-consecutive-failures': '3',
  };
  const errors = errorsOf({ ...BASE, 'errors.tolerance': 'all', ...rejected });
  assert.deepEqual(Object.keys(errors).sort(), Object.keys(rejected).sort());
  for (const [key, errs] of Object.entries(errors)) {
    assert.equal(errs.length, 1, key);
    assert.ok(errs[0]?.startsWith(`not supported yet: ${key} needs `), errs[0]);
  }
  // every listed key is covered above (pattern keys by a table's key)
  const covered = (rule: string): boolean => Object.keys(rejected).some((k) => k === rule || (rule.endsWith('.') && k.startsWith(rule)) || (rule.includes('<table>') && k === rule.replace('<table>', 'sales.orders')));
  for (const rule of CONNECTOR_UNSUPPORTED) assert.ok(covered(rule.key), rule.key);
  assert.match(errors.transforms?.[0] ?? '', /needs single message transforms \(SMTs\)\. Records would reach the tables untransformed/);
  assert.ok(!errors['errors.retry.timeout']?.[0]?.includes('-1'), 'values are never echoed (they may be secrets)');
  assert.match(errors['iceberg.table.sales.orders.id-columns']?.[0] ?? '', /needs identifier \(primary-key\) columns/);
  assert.match(errors['iceberg.control.commit.threads']?.[0] ?? '', /distributed mode/);
  assert.throws(() => parseConnectorConfig({ ...BASE, transforms: 'a', 'transforms.a.type': 'X' }), (e: unknown) => e instanceof ConfigError && /2 configuration error\(s\): not supported yet: transforms needs/.test(e.message));
});

test('write-props the Parquet writer cannot apply fail validation; a table property set elsewhere is not the connector\'s business', () => {
  const errors = errorsOf({
    ...BASE,
    'iceberg.tables.write-props.write.parquet.compression-level': '9',
    'iceberg.tables.write-props.write.parquet.page-row-limit': '1000',
    'iceberg.tables.write-props.write.format.default': 'orc',
    'iceberg.tables.write-props.write.parquet.compression-codec': 'snappy',
  });
  assert.deepEqual(Object.keys(errors).sort(), WRITE_PROPS_UNSUPPORTED.map((r) => r.key).sort());
  for (const [key, errs] of Object.entries(errors)) assert.ok(errs[0]?.startsWith(`not supported yet: ${key} needs `), errs[0]);
  assert.deepEqual(errorsOf({ ...BASE, 'iceberg.tables.write-props.write.format.default': 'PARQUET' }), {});
});

test('those keys are accepted at their default, or at a value that asks for what Icefloe does anyway', () => {
  const noOp = {
    transforms: '',
    predicates: ' ',
    'header.converter': 'org.apache.kafka.connect.storage.SimpleHeaderConverter',
    'errors.retry.timeout': '0',
    'errors.retry.delay.max.ms': '60000',
    'errors.log.include.messages': 'FALSE',
    'errors.deadletterqueue.topic.name': '',
    'errors.deadletterqueue.topic.replication.factor': ' 3',
    'errors.deadletterqueue.context.headers.enable': 'false',
    'iceberg.tables.default-commit-branch': 'main',
    'iceberg.table.sales.orders.commit-branch': 'main',
    'iceberg.tables.default-id-columns': '',
    'iceberg.table.sales.orders.id-columns': ' ',
    'iceberg.control.commit.threads': '1',
    'iceberg.control.commit.max-consecutive-failures': '1',
  };
  const v = validateConnectorConfig({ ...BASE, ...noOp });
  assert.deepEqual(Object.fromEntries(v.errors), {});
  assert.deepEqual(v.config?.stored(), { ...BASE, ...noOp }, 'stored exactly as given');
  assert.deepEqual(errorsOf({ ...BASE, 'header.converter': 'org.apache.kafka.connect.converters.ByteArrayConverter' }), {});
  // Keys whose purpose Icefloe's design already meets stay accepted (their docs say they have no effect).
  const compat = {
    'tasks.max.enforce': 'false',
    'config.action.reload': 'none',
    'iceberg.control.group-id-prefix': 'cg-other-',
    'iceberg.control.commit.timeout-ms': '60000',
    'iceberg.coordinator-executor-keep-alive-timeout-ms': '1000',
    'iceberg.hadoop-conf-dir': '/etc/hadoop/conf',
    'iceberg.hadoop.fs.s3a.endpoint': 'http://127.0.0.1:9000',
  };
  assert.deepEqual(errorsOf({ ...BASE, ...compat }), {});
});

test('partition-by: checked here (default and per table) by the grammar the spec builder uses', () => {
  assert.match(errorsOf({ ...BASE, 'iceberg.tables.default-partition-by': 'day(ts' })['iceberg.tables.default-partition-by']?.[0] ?? '', /^Invalid value day\(ts for configuration iceberg.tables.default-partition-by: partition-by "day\(ts" has unbalanced parentheses; write comma-separated terms col, identity\(col\), year\|month\|day\|hour\(col\), bucket\(col, N\), truncate\(col, W\), e\.g\. "bucket\(id, 16\), day\(ts\)"$/);
  assert.match(errorsOf({ ...BASE, 'iceberg.table.sales.orders.partition-by': 'month(ts), bucket(id)' })['iceberg.table.sales.orders.partition-by']?.[0] ?? '', /bucket takes a column/);
  assert.deepEqual(errorsOf({ ...BASE, 'iceberg.tables.default-partition-by': 'day(order_ts), bucket(16, customer_id), identity(a.b)' }), {});
});

test('per-table settings override the defaults; table names may contain dots', () => {
  const c = parseConnectorConfig({
    ...BASE,
    'iceberg.tables': 'sales.orders,sales.returns',
    'iceberg.tables.default-partition-by': 'day(ts)',
    'iceberg.table.sales.orders.partition-by': 'day(order_ts), bucket(customer_id, 16)',
    'iceberg.tables.default-commit-branch': ' staging ',
    'iceberg.table.sales.orders.commit-branch': 'audit',
  });
  assert.deepEqual(c.tables.settings('sales.orders'), { partitionBy: 'day(order_ts), bucket(customer_id, 16)', partitionByKey: 'iceberg.table.sales.orders.partition-by', routeRegex: null, commitBranch: 'audit' });
  assert.deepEqual(c.tables.settings('sales.returns'), { partitionBy: 'day(ts)', partitionByKey: 'iceberg.tables.default-partition-by', routeRegex: null, commitBranch: 'staging' });
  // a table routed dynamically (not listed) gets the default branch; an empty branch name is an error
  assert.equal(c.tables.settings('sales.other').commitBranch, 'staging');
  assert.match(errorsOf({ ...BASE, 'iceberg.tables.default-commit-branch': ' ' })['iceberg.tables.default-commit-branch']?.[0] ?? '', /String must be non-empty/);
  assert.match(errorsOf({ ...BASE, 'iceberg.table.sales.orders.commit-branch': '' })['iceberg.table.sales.orders.commit-branch']?.[0] ?? '', /String must be non-empty/);
  const w = validateConnectorConfig({ ...BASE, 'iceberg.table.sales.other.partition-by': 'day(ts)', 'iceberg.table.sales.orders.sort-by': 'x' });
  assert.equal(w.errorCount, 0);
  assert.ok(w.warnings.some((m) => /sales.other is not in iceberg.tables/.test(m)));
  assert.ok(w.warnings.some((m) => /iceberg.table.sales.orders.sort-by is not an Iceberg sink key/.test(m)));
});

test('routing: static fan-out by route-regex (whole match) and dynamic by field', () => {
  const c = parseConnectorConfig({
    ...BASE,
    'iceberg.tables': 'sales.eu,sales.us,sales.none',
    'iceberg.tables.route-field': 'region',
    'iceberg.table.sales.eu.route-regex': 'eu-.*',
    'iceberg.table.sales.us.route-regex': 'us-.*',
  });
  assert.ok(c.tables.routing.kind === 'regex');
  assert.equal(c.tables.routing.field, 'region');
  assert.deepEqual(c.tables.routing.routes.map((r) => r.table), ['sales.eu', 'sales.us']);
  assert.ok(c.tables.routing.routes[0]?.regex.test('eu-west') && !c.tables.routing.routes[0]?.regex.test('xeu-west'));
  assert.ok(c.warnings.some((m) => /sales.none receives no records/.test(m)));
  assert.match(errorsOf({ ...BASE, 'iceberg.tables.route-field': 'r', 'iceberg.table.sales.orders.route-regex': '[' })['iceberg.table.sales.orders.route-regex']?.[0] ?? '', /Not a valid regular expression/);

  const rest = without(BASE, 'iceberg.tables');
  const d = parseConnectorConfig({ ...rest, 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 'meta.table', 'icefloe.tables.unrouted': 'skip' });
  assert.deepEqual(d.tables.routing, { kind: 'dynamic', field: 'meta.table' });
  assert.equal(d.tables.unrouted, 'skip');
  assert.match(errorsOf({ ...BASE, 'icefloe.tables.unrouted': 'dlq' })['icefloe.tables.unrouted']?.[0] ?? '', /String must be one of: fail, skip/);
  assert.ok(validateConnectorConfig({ ...BASE, 'iceberg.table.sales.orders.route-regex': 'x' }).warnings.some((m) => /route-regex is ignored/.test(m)));
});

test('icefloe keys: commit triggers, metadata columns, control topic', () => {
  const c = parseConnectorConfig({
    ...BASE,
    'icefloe.commit.max-bytes': '134217728',
    'icefloe.commit.max-records': '100000',
    'icefloe.tables.kafka-metadata-columns': 'topic, partition,offset,timestamp,key,headers',
    'icefloe.tables.kafka-metadata-prefix': '_k_',
    'icefloe.control.topic.partitions': '3',
    'icefloe.control.topic.replication.factor': '3',
    'icefloe.control.topic.retention-ms': '-1',
  });
  assert.deepEqual(c.commit, { intervalMs: 300000, maxBytes: 134217728, maxRecords: 100000 });
  assert.deepEqual(c.tables.kafkaMetadata, { columns: ['topic', 'partition', 'offset', 'timestamp', 'key', 'headers'], prefix: '_k_' });
  assert.equal(c.control.topicPartitions, 3);
  assert.equal(c.control.topicRetentionMs, -1);
  const errs = errorsOf({
    ...BASE,
    'icefloe.commit.max-bytes': '0',
    'icefloe.tables.kafka-metadata-columns': 'topic,offsett',
    'icefloe.tables.kafka-metadata-prefix': '1bad',
    'icefloe.control.topic.replication.factor': '0',
    'iceberg.control.commit.interval-ms': '3600000',
    'icefloe.control.topic.retention-ms': '7200000',
  });
  assert.deepEqual(Object.keys(errs).sort(), [
    'icefloe.commit.max-bytes',
    'icefloe.control.topic.replication.factor',
    'icefloe.control.topic.retention-ms',
    'icefloe.tables.kafka-metadata-columns',
    'icefloe.tables.kafka-metadata-prefix',
  ]);
  assert.match(errs['icefloe.control.topic.retention-ms']?.[0] ?? '', /at least 10 × iceberg.control.commit.interval-ms/);
});

test('icefloe control read and buffer bounds: defaults, typed values, the buffer must hold one round', () => {
  const d = parseConnectorConfig(BASE);
  assert.deepEqual([d.control.readMaxBytes, d.control.bufferMaxBytes], [16 * 1024 * 1024, 64 * 1024 * 1024]);
  const c = parseConnectorConfig({ ...BASE, 'icefloe.control.read.max-bytes': '1048576', 'icefloe.control.buffer.max-bytes': '2097152' });
  assert.deepEqual([c.control.readMaxBytes, c.control.bufferMaxBytes], [1048576, 2097152]);
  const errs = errorsOf({ ...BASE, 'icefloe.control.read.max-bytes': '4096', 'icefloe.control.buffer.max-bytes': '2048' });
  assert.deepEqual(Object.keys(errs), ['icefloe.control.buffer.max-bytes']);
  assert.match(errs['icefloe.control.buffer.max-bytes']?.[0] ?? '', /at least icefloe.control.read.max-bytes \(4096\)/);
  assert.deepEqual(Object.keys(errorsOf({ ...BASE, 'icefloe.control.read.max-bytes': '10' })), ['icefloe.control.read.max-bytes']);
});

test('catalog: types rest, sql and jdbc; S3 settings typed; secrets wrapped', () => {
  const c = parseConnectorConfig({
    ...BASE,
    'iceberg.catalog': 'icefloe',
    'iceberg.catalog.warehouse': 's3://warehouse/',
    'iceberg.catalog.token': 'tok',
    'iceberg.catalog.s3.endpoint': 'http://127.0.0.1:9000',
    'iceberg.catalog.s3.path-style-access': 'true',
    'iceberg.catalog.s3.access-key-id': 'AK',
    'iceberg.catalog.s3.secret-access-key': 'SK',
    'iceberg.catalog.client.region': 'us-east-1',
  });
  assert.equal(c.catalog.name, 'icefloe');
  assert.equal(c.catalog.token?.reveal(), 'tok');
  assert.equal(String(c.catalog.token), HIDDEN);
  assert.deepEqual(JSON.parse(JSON.stringify(c.catalog.s3)), { endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', pathStyleAccess: true, accessKeyId: 'AK', secretAccessKey: HIDDEN, sessionToken: null, requestTimeoutMs: null });
  assert.equal(c.catalog.props.token, 'tok', 'the adapter gets the raw catalog properties');

  const sql = { ...BASE, 'iceberg.catalog.type': 'jdbc', 'iceberg.catalog.uri': 'jdbc:postgresql://u:p@127.0.0.1:5432/iceberg', 'iceberg.catalog.warehouse': 's3://w/' };
  assert.equal(parseConnectorConfig(sql).catalog.type, 'sql');
  const noWarehouse = without(sql, 'iceberg.catalog.warehouse');
  assert.match(errorsOf(noWarehouse)['iceberg.catalog.warehouse']?.[0] ?? '', /Missing required configuration "iceberg.catalog.warehouse"/);
  assert.match(errorsOf({ ...BASE, 'iceberg.catalog.type': 'hive' })['iceberg.catalog.type']?.[0] ?? '', /supports the catalog types rest, sql and jdbc/);
  const noType = without(BASE, 'iceberg.catalog.type');
  assert.match(errorsOf(noType)['iceberg.catalog.type']?.[0] ?? '', /Missing required configuration "iceberg.catalog.type"/);
  assert.equal(parseConnectorConfig({ ...noType, 'iceberg.catalog.catalog-impl': 'org.apache.iceberg.rest.RESTCatalog' }).catalog.type, 'rest');
  const badUri = errorsOf({ ...sql, 'iceberg.catalog.uri': 'mysql://u:secretpw@h/db' })['iceberg.catalog.uri']?.[0] ?? '';
  assert.match(badUri, /jdbc:sqlite/);
  assert.ok(!badUri.includes('secretpw'), 'a password in a uri never reaches an error message');
});

test('the worker\'s default catalog is used only when the connector names none', () => {
  const noCatalog = without(BASE, 'iceberg.catalog.type', 'iceberg.catalog.uri');
  const defaultCatalog = { type: 'sql', uri: 'jdbc:sqlite:/tmp/c.db', warehouse: 'file:///tmp/w' };
  const c = parseConnectorConfig(noCatalog, { defaultCatalog });
  assert.equal(c.catalog.fromWorker, true);
  assert.equal(c.catalog.type, 'sql');
  assert.equal(c.catalog.uri, 'jdbc:sqlite:/tmp/c.db');
  assert.equal(parseConnectorConfig(BASE, { defaultCatalog }).catalog.fromWorker, false);
});

test('converters: connector-level classes with their own settings; unknown classes refused', () => {
  const c = parseConnectorConfig({
    ...BASE,
    'value.converter': 'io.confluent.connect.avro.AvroConverter',
    'value.converter.schema.registry.url': 'http://a:8081, http://b:8081',
    'value.converter.basic.auth.user.info': 'u:p',
    'key.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'key.converter.schemas.enable': 'false',
  });
  assert.equal(c.valueConverter?.kind, 'avro');
  assert.deepEqual(c.valueConverter?.schemaRegistryUrls, ['http://a:8081', 'http://b:8081']);
  assert.equal(c.keyConverter?.kind, 'json');
  assert.equal(c.keyConverter?.schemasEnable, false);
  assert.ok(c.secretKeys.includes('value.converter.basic.auth.user.info'));
  assert.deepEqual(errorsOf({ ...BASE, 'value.converter': 'io.confluent.connect.protobuf.ProtobufConverter' }), {
    'value.converter.schema.registry.url': ['Missing required configuration "value.converter.schema.registry.url" which has no default value. io.confluent.connect.protobuf.ProtobufConverter reads each record\'s schema from a schema registry: set value.converter.schema.registry.url to its URL (e.g. http://schema-registry:8081), or use a converter that needs none'],
  });
  assert.match(errorsOf({ ...BASE, 'value.converter': 'com.example.Conv' })['value.converter']?.[0] ?? '', /Class com.example.Conv could not be found/);
  assert.match(errorsOf({ ...BASE, 'value.converter': 'org.apache.kafka.connect.json.JsonConverter', 'value.converter.schemas.enable': 'nope' })['value.converter.schemas.enable']?.[0] ?? '', /either true or false/);
  assert.ok(validateConnectorConfig({ ...BASE, 'value.converter.schemas.enable': 'false' }).warnings.some((w) => /worker's converter/.test(w)));
});

test('consumer group: iceberg.connect.group-id must match; auto-commit cannot be enabled', () => {
  assert.equal(parseConnectorConfig({ ...BASE, 'consumer.override.group.id': 'g1', 'iceberg.connect.group-id': 'g1' }).groupId, 'g1');
  assert.equal(parseConnectorConfig({ ...BASE, 'iceberg.connect.group-id': 'connect-orders' }).groupId, 'connect-orders');
  assert.match(errorsOf({ ...BASE, 'consumer.override.group.id': 'g1' , 'iceberg.connect.group-id': 'g2' })['iceberg.connect.group-id']?.[0] ?? '', /Must equal the connector's consumer group g1/);
  assert.match(errorsOf({ ...BASE, 'iceberg.connect.group-id': 'other' })['iceberg.connect.group-id']?.[0] ?? '', /connect-orders/);
  assert.equal(Object.keys(errorsOf({ ...BASE, 'consumer.override.enable.auto.commit': 'true' }))[0], 'consumer.override.enable.auto.commit');
  const c = parseConnectorConfig({ ...BASE, 'consumer.override.max.poll.records': '500', 'producer.override.linger.ms': '5' });
  assert.deepEqual(c.consumerOverrides, { 'max.poll.records': '500' });
  assert.deepEqual(c.producerOverrides, { 'linger.ms': '5' });
});

test('unknown keys are kept, never rejected; legacy Tabular keys and Tabular upsert/CDC are refused', () => {
  const raw = { ...BASE, 'connector.plugin.version': '1.9.2', 'icefloe.comit.max-bytes': '1', 'iceberg.coordinator.transactional.suffix': '-txn-1' };
  const v = validateConnectorConfig(raw);
  assert.equal(v.errorCount, 0);
  assert.deepEqual(v.config?.stored(), raw);
  assert.deepEqual(errorsOf({ ...BASE, 'iceberg.tables.defaultPartitionBy': 'day(ts)' }), {
    'iceberg.tables.defaultPartitionBy': ['iceberg.tables.defaultPartitionBy is a legacy Tabular key that neither Icefloe nor the Apache Iceberg sink reads; rename it to iceberg.tables.default-partition-by'],
  });
  assert.ok(v.warnings.some((w) => /icefloe.comit.max-bytes is not a known key/.test(w)));
  assert.ok(v.warnings.some((w) => /transactional.suffix is set per task/.test(w)));
  assert.ok(!v.warnings.some((w) => w.includes('connector.plugin.version')));
  assert.ok(!v.configInfos().configs.some((c) => c.value.name === 'connector.plugin.version'), 'unknown keys are not in configs[]');
  assert.match(errorsOf({ ...BASE, 'iceberg.tables.upsert-mode-enabled': 'true' })['iceberg.tables.upsert-mode-enabled']?.[0] ?? '', /only appends/);
  assert.deepEqual(errorsOf({ ...BASE, 'iceberg.tables.upsert-mode-enabled': 'false' }), {});
});

test('secrets are listed and redacted for logs; the stored map keeps them', () => {
  const raw = {
    ...BASE,
    'iceberg.catalog.credential': 'client:secret',
    'iceberg.catalog.s3.secret-access-key': 'SK',
    'consumer.override.sasl.jaas.config': 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
    'iceberg.kafka.sasl.jaas.config': 'x',
    'value.converter.basic.auth.user.info': 'u:p',
  };
  const c = parseConnectorConfig(raw);
  assert.deepEqual(c.secretKeys, [
    'consumer.override.sasl.jaas.config',
    'iceberg.catalog.credential',
    'iceberg.catalog.s3.secret-access-key',
    'iceberg.kafka.sasl.jaas.config',
    'value.converter.basic.auth.user.info',
  ]);
  const red = c.redacted();
  for (const k of c.secretKeys) assert.equal(red[k], HIDDEN, k);
  assert.equal(red.name, 'orders');
  assert.equal(c.stored()['iceberg.catalog.credential'], 'client:secret');
  const logged = JSON.stringify({ catalog: c.catalog, redacted: red });
  assert.ok(!logged.includes('client:secret') && !logged.includes('"SK"') && !logged.includes('password="p"'));
});

test('configInfos: Connect\'s validate body, name as submitted, errors counted', () => {
  const infos = validateConnectorConfig({ ...BASE, 'connector.class': 'IcebergSink', 'tasks.max': 'two', 'iceberg.catalog.token': 't' }).configInfos();
  assert.equal(infos.name, 'IcebergSink');
  assert.equal(infos.error_count, 1);
  assert.deepEqual(infos.groups, ['Common', 'Transforms', 'Predicates', 'Error Handling', 'Iceberg Tables', 'Iceberg Control', 'Iceberg Catalog', 'Icefloe']);
  assert.equal(infos.configs.length, CONNECTOR_CONFIG_DEF.keys().length);
  const tasks = infos.configs.find((c) => c.value.name === 'tasks.max');
  assert.deepEqual(tasks?.value.errors, ['Invalid value two for configuration tasks.max: Not a number of type INT']);
  const name = infos.configs.find((c) => c.value.name === 'name');
  assert.equal(name?.definition?.required, true);
  assert.equal(name?.value.value, 'orders');
  assert.ok(!JSON.stringify(infos).includes('"t"'));
  for (const c of infos.configs) {
    assert.ok(['HIGH', 'MEDIUM', 'LOW'].includes(c.definition?.importance ?? ''));
    assert.ok(['NONE', 'SHORT', 'MEDIUM', 'LONG'].includes(c.definition?.width ?? ''));
  }
});

test('a misspelled key gets a suggestion; the error it causes is listed once and names the key the config has', () => {
  // `topic` for `topics`: one problem (reported on topics and topics.regex), once, with the typo named.
  const topic = { ...without(BASE, 'topics'), topic: 'orders' };
  assert.throws(() => parseConnectorConfig(topic), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.equal(e.message, `connector orders: 1 configuration error(s): ${MESSAGES.topicsNone} — the config has 'topic': did you mean topics?`);
    return true;
  });
  // `iceberg.table` for `iceberg.tables`: a message that does not name its key gets the key in front.
  const table = { ...without(BASE, 'iceberg.tables'), 'iceberg.table': 'sales.orders' };
  assert.throws(() => parseConnectorConfig(table), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.match(e.message, /^connector orders: 1 configuration error\(s\): iceberg\.tables: Must specify table name\(s\) — the config has 'iceberg\.table': did you mean iceberg\.tables\?$/);
    return true;
  });
  const v = validateConnectorConfig(table);
  assert.deepEqual(v.warnings.filter((w) => w.startsWith('iceberg.table ')), ['iceberg.table is not a known key; it is kept but not used (did you mean iceberg.tables?)']);
  // A typo next to a valid config is a warning (Connect ignores unknown keys), listed once.
  const ok = validateConnectorConfig({ ...BASE, 'iceberg.tables.auto-create-enable': 'true', 'tasks.maxx': '2', 'iceberg.catalogs.uri': 'x' });
  assert.equal(ok.errorCount, 0);
  assert.deepEqual(ok.warnings, [
    'iceberg.tables.auto-create-enable is not a known key; it is kept but not used (did you mean iceberg.tables.auto-create-enabled?)',
    'tasks.maxx is not a known key; it is kept but not used (did you mean tasks.max?)',
    'iceberg.catalogs.uri is not a known key; it is kept but not used (did you mean iceberg.catalog.uri?)',
  ]);
  // Keys under pass-through prefixes are not unknown; keys that resemble nothing pass through silently, as in Connect.
  assert.deepEqual(validateConnectorConfig({ ...BASE, 'consumer.override.max.poll.records': '10', 'iceberg.catalog.s3.whatever': 'x', 'my.own.setting': 'x' }).warnings, []);
  // An unknown key with a suggestion that no error concerns is still listed with the errors.
  assert.throws(() => parseConnectorConfig({ ...BASE, 'tasks.max': '0', 'iceberg.tables.evolve-schema-enable': 'true' }), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.match(e.message, /: Invalid value 0 for configuration tasks\.max: .*; 'iceberg\.tables\.evolve-schema-enable' is not a known key \(did you mean iceberg\.tables\.evolve-schema-enabled\?\)$/);
    return true;
  });
});

test('dead-letter settings: a topic and a table with errors.tolerance=all; refused with none, when consumed by the connector, or routed to', () => {
  const dlq = { 'errors.tolerance': 'all', 'errors.deadletterqueue.topic.name': 'orders-dlq', 'errors.deadletterqueue.topic.replication.factor': '1', 'errors.deadletterqueue.context.headers.enable': 'true', 'errors.log.enable': 'true', 'errors.log.include.messages': 'true', 'icefloe.errors.deadletterqueue.table.name': 'sales.orders_dlq', 'icefloe.errors.record.max-bytes': '1048576' };
  const c = parseConnectorConfig({ ...BASE, ...dlq });
  assert.deepEqual(c.errors, {
    tolerance: 'all',
    logEnable: true,
    retryTimeoutMs: null,
    retryDelayMaxMs: 60000,
    logIncludeMessages: true,
    deadLetterTopic: { topic: 'orders-dlq', replicationFactor: 1, contextHeaders: true },
    deadLetterTable: 'sales.orders_dlq',
    recordMaxBytes: 1048576,
  });
  // With none the first bad record fails the task: a destination would never receive a record.
  const none = errorsOf({ ...BASE, ...dlq, 'errors.tolerance': 'none' });
  assert.match(none['errors.deadletterqueue.topic.name']?.[0] ?? '', /only receives records with errors\.tolerance=all/);
  assert.match(none['icefloe.errors.deadletterqueue.table.name']?.[0] ?? '', /only receives records with errors\.tolerance=all/);
  // Connect's checks and wording: the DLQ topic may not be consumed by the connector.
  assert.deepEqual(errorsOf({ ...BASE, ...dlq, topics: 'orders,orders-dlq' })['topics'], ["The DLQ topic 'orders-dlq' may not be included in the list of topics ('topics=[orders, orders-dlq]') consumed by the connector"]);
  const noTopics = Object.fromEntries(Object.entries(BASE).filter(([k]) => k !== 'topics'));
  assert.deepEqual(errorsOf({ ...noTopics, ...dlq, 'topics.regex': 'orders.*' })['topics.regex'], ["The DLQ topic 'orders-dlq' may not be matched by the regex for the topics ('topics.regex=orders.*') consumed by the connector"]);
  assert.match(errorsOf({ ...BASE, ...dlq, 'icefloe.errors.deadletterqueue.table.name': 'sales.orders' })['icefloe.errors.deadletterqueue.table.name']?.[0] ?? '', /may not be a table the records route to/);
  assert.ok(errorsOf({ ...BASE, ...dlq, 'icefloe.errors.deadletterqueue.table.name': 'nodot' })['icefloe.errors.deadletterqueue.table.name'] !== undefined);
});

test('errors.retry.timeout and errors.retry.delay.max.ms: 0 and -1 retry without limit, N > 0 bounds it; out-of-range values fail validation', () => {
  assert.equal(parseConnectorConfig({ ...BASE, 'errors.retry.timeout': '-1' }).errors.retryTimeoutMs, null);
  assert.equal(parseConnectorConfig({ ...BASE, 'errors.retry.timeout': '0' }).errors.retryTimeoutMs, null);
  const c = parseConnectorConfig({ ...BASE, 'errors.retry.timeout': '300000', 'errors.retry.delay.max.ms': '5000' });
  assert.deepEqual([c.errors.retryTimeoutMs, c.errors.retryDelayMaxMs], [300000, 5000]);
  assert.deepEqual(errorsOf({ ...BASE, 'errors.retry.timeout': '-2', 'errors.retry.delay.max.ms': '0' }), {
    'errors.retry.timeout': ['Invalid value -2 for configuration errors.retry.timeout: Value must be at least -1'],
    'errors.retry.delay.max.ms': ['Invalid value 0 for configuration errors.retry.delay.max.ms: Value must be at least 1'],
  });
});

test('iceberg.catalog.s3.request-timeout-ms: one S3 request\'s time-out in ms, a whole number of at least 1', () => {
  assert.equal(parseConnectorConfig({ ...BASE, 'iceberg.catalog.s3.request-timeout-ms': '2000' }).catalog.s3.requestTimeoutMs, 2000);
  assert.deepEqual(errorsOf({ ...BASE, 'iceberg.catalog.s3.request-timeout-ms': '0' }), {
    'iceberg.catalog.s3.request-timeout-ms': ['Invalid value 0 for configuration iceberg.catalog.s3.request-timeout-ms: Expected a whole number of milliseconds, at least 1'],
  });
});
