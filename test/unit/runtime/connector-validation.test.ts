import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { RequestRefused } from '../../../src/core/errors.ts';
import type { ConfigInfos } from '../../../src/config/config-def.ts';
import { configProviders, parseConfigProviders } from '../../../src/config/config-providers.ts';
import type { CatalogConfig } from '../../../src/config/connector-config.ts';
import { parseConnectorFile, parseWorkerProperties } from '../../../src/config/worker-config.ts';
import { ConnectorPlugins } from '../../../src/runtime/connector-plugins.ts';
import { checkConnectorType, checkStartConfig, invalidConfigMessage, validateConfig, validateForWrite } from '../../../src/runtime/connector-validation.ts';
import { catalogProbe } from '../../../src/runtime/catalog-probe.ts';
import { parseConnectorConfig } from '../../../src/config/connector-config.ts';
import type { CatalogProbe, ValidationDeps } from '../../../src/runtime/connector-validation.ts';

const plugins = new ConnectorPlugins({ icefloeVersion: '0.1.0' });
const deps: ValidationDeps = { plugins };

const BASE: Readonly<Record<string, string>> = {
  name: 'orders',
  'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
  topics: 'orders',
  'iceberg.tables': 'sales.orders',
  'iceberg.catalog.type': 'rest',
  'iceberg.catalog.uri': 'http://127.0.0.1:8181',
};

function errorsOf(infos: ConfigInfos): Record<string, string[]> {
  return Object.fromEntries(infos.configs.filter((c) => c.value.errors.length > 0).map((c) => [c.value.name, c.value.errors]));
}

function refused(reason: RequestRefused['refusal'], message: string | RegExp): (e: unknown) => boolean {
  return (e) => e instanceof RequestRefused && e.refusal === reason && (typeof message === 'string' ? e.message === message : message.test(e.message));
}

test('a valid config: 200 with no error, name as submitted, every definition with its value', async () => {
  const infos = await validateConfig('IcebergSink', { ...BASE, 'connector.class': 'IcebergSink' }, deps);
  assert.equal(infos.name, 'IcebergSink');
  assert.equal(infos.error_count, 0);
  assert.deepEqual(infos.groups.slice(0, 4), ['Common', 'Transforms', 'Predicates', 'Error Handling']);
  const tasks = infos.configs.find((c) => c.value.name === 'tasks.max');
  assert.equal(tasks?.definition?.order_in_group, 3);
  assert.equal(tasks?.value.value, '1');
});

test('AKHQ\'s {connector.class, topics: "getPlugins"} answers with definitions and per-key errors, never a refusal', async () => {
  const infos = await validateConfig('org.apache.iceberg.connect.IcebergSinkConnector', { 'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector', topics: 'getPlugins' }, deps);
  assert.ok(infos.configs.length > 40);
  assert.ok(infos.configs.every((c) => c.definition !== null || c.value.errors.length > 0));
  const errors = errorsOf(infos);
  assert.deepEqual(errors.name, ['Missing required configuration "name" which has no default value.']);
  assert.deepEqual(errors['iceberg.tables'], ['Must specify table name(s)']);
  assert.equal(infos.error_count, Object.values(errors).flat().length);
});

test('the plugin in the path is checked first, as Connect normalizes it; no or an unknown class is Connect\'s wrapped 500', async () => {
  await assert.rejects(validateConfig('IcefloeSink', { 'connector.class': 'IcebergSink' }, deps), refused('bad-request', 'Included connector type IcebergSink does not match request type IcefloeSink'));
  // Java compares `<class minus Connector>.endsWith(<plugin minus Connector>)`: a full path with a short class does not match.
  await assert.rejects(validateConfig('org.apache.iceberg.connect.IcebergSinkConnector', { 'connector.class': 'IcebergSink' }, deps), refused('bad-request', /^Included connector type IcebergSink does not match/));
  await validateConfig('IcebergSinkConnector', { ...BASE, 'connector.class': 'IcebergSink' }, deps);
  await validateConfig('IcebergSink', BASE, deps);

  const noClass = { name: 'x', topics: 'a', 'iceberg.catalog.token': 'tok-secret', 'iceberg.catalog.uri': 'http://u:pw-secret@h' };
  await assert.rejects(
    validateConfig('IcebergSink', noClass, deps),
    refused('failed', 'org.apache.kafka.connect.runtime.rest.errors.BadRequestException: Connector config {name=x, topics=a, iceberg.catalog.token=[hidden], iceberg.catalog.uri=http://u:[hidden]@h} contains no connector type'),
  );
  await assert.rejects(
    validateConfig('FileStreamSink', { 'connector.class': 'FileStreamSink' }, deps),
    refused('failed', /^org\.apache\.kafka\.connect\.runtime\.rest\.errors\.BadRequestException: Failed to find any class that implements Connector and which name matches FileStreamSink, available connectors are: PluginDesc\{klass=class org\.apache\.iceberg\.connect\.IcebergSinkConnector, /),
  );
});

test('create/update: Connect\'s 400 texts for no class, an unknown class and an invalid config', async () => {
  assert.throws(() => checkConnectorType({ name: 'x', topics: 'a' }, plugins), refused('bad-request', 'Connector config {name=x, topics=a} contains no connector type'));
  assert.throws(() => checkConnectorType({ 'connector.class': 'Foo' }, plugins), refused('bad-request', /^org\.apache\.kafka\.connect\.errors\.ConnectException: Failed to find any class that implements Connector and which name matches Foo, available connectors are: /));
  // The recorded 4.3.1 answer for a PUT with both topics and topics.regex, verbatim.
  await assert.rejects(
    validateForWrite({ ...BASE, 'topics.regex': 'b' }, deps),
    refused('bad-request', 'Connector configuration is invalid and contains the following 2 error(s):\ntopics and topics.regex are mutually exclusive options, but both are set.\ntopics and topics.regex are mutually exclusive options, but both are set.\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`'),
  );
  const ok = await validateForWrite(BASE, deps);
  assert.equal(ok.error_count, 0);
});

test('topics and topics.regex: Connect\'s texts on both keys', async () => {
  const both = errorsOf(await validateConfig('IcebergSink', { ...BASE, 'topics.regex': 'o.*' }, deps));
  assert.deepEqual(both.topics, ['topics and topics.regex are mutually exclusive options, but both are set.']);
  assert.deepEqual(both['topics.regex'], ['topics and topics.regex are mutually exclusive options, but both are set.']);
  const none = errorsOf(await validateConfig('IcebergSink', { ...BASE, topics: '' }, deps));
  assert.deepEqual(none.topics, ['Must configure one of topics or topics.regex']);
  assert.deepEqual(none['topics.regex'], ['Must configure one of topics or topics.regex']);
});

test('transforms and predicates: a group per alias with its type key; a missing type is Connect\'s missing-key error', async () => {
  const infos = await validateConfig('IcebergSink', {
    ...BASE,
    transforms: 'r,ins',
    'transforms.r.type': 'org.apache.kafka.connect.transforms.RegexRouter',
    predicates: 'p,p',
    'predicates.p.type': 'org.apache.kafka.connect.transforms.predicates.RecordIsTombstone',
  }, deps);
  assert.deepEqual(infos.groups.filter((g) => g.includes(': ')), ['Transforms: r', 'Transforms: ins', 'Predicates: p']);
  const entry = (k: string) => infos.configs.find((c) => c.value.name === k);
  assert.equal(entry('transforms.ins.type')?.definition?.group, 'Transforms: ins');
  assert.equal(entry('transforms.ins.type')?.definition?.display_name, 'Transformation type for ins');
  assert.deepEqual(entry('transforms.ins.type')?.value.errors, ['Missing required configuration "transforms.ins.type" which has no default value.']);
  assert.equal(entry('transforms.r.type')?.value.value, 'org.apache.kafka.connect.transforms.RegexRouter');
  assert.match(entry('transforms.r.type')?.value.errors[0] ?? '', /^not supported yet: transforms\.r\.type needs single message transforms/);
  assert.equal(infos.configs.filter((c) => c.value.name === 'transforms.r.type').length, 1, 'one entry per key');
  assert.ok(entry('predicates')?.value.errors.includes('Duplicate alias provided.'));
  assert.equal(infos.error_count, infos.configs.reduce((n, c) => n + c.value.errors.length, 0));
});

test('Icefloe\'s checks: partition specs against each other and the metadata columns, routing against the tables', async () => {
  const errors = errorsOf(await validateConfig('IcebergSink', {
    ...BASE,
    'iceberg.tables': 'sales.orders,sales.returns',
    'iceberg.tables.route-field': 'kind',
    'iceberg.tables.default-partition-by': 'day(ts), hour(ts)',
    'iceberg.table.sales.orders.partition-by': 'bucket(id, 4), bucket(id, 8)',
    'iceberg.table.sales.returns.partition-by': 'day(_kafka_metadata_offset), _kafka_metadata_topic',
    'icefloe.tables.kafka-metadata-columns': 'topic,offset',
    'iceberg.table.sales.typo.partition-by': 'id',
  }, deps));
  assert.deepEqual(errors['iceberg.tables.default-partition-by'], ['Invalid value day(ts), hour(ts) for configuration iceberg.tables.default-partition-by: the terms day(ts) and hour(ts) are redundant (the same column, the same kind of transform); Iceberg refuses such a spec']);
  assert.match(errors['iceberg.table.sales.orders.partition-by']?.[0] ?? '', /the terms bucket\(id, 4\) and bucket\(id, 8\) would both be the partition field id_bucket/);
  assert.deepEqual(errors['iceberg.table.sales.returns.partition-by'], [
    'Invalid value day(_kafka_metadata_offset), _kafka_metadata_topic for configuration iceberg.table.sales.returns.partition-by: the term day(_kafka_metadata_offset) cannot apply to the Kafka metadata column _kafka_metadata_offset of type long',
    'Invalid value day(_kafka_metadata_offset), _kafka_metadata_topic for configuration iceberg.table.sales.returns.partition-by: the term _kafka_metadata_topic partitions by the Kafka metadata column _kafka_metadata_topic, which Icefloe cannot do yet: every row would get a null partition value',
  ]);
  assert.match(errors['iceberg.table.sales.typo.partition-by']?.[0] ?? '', /sales\.typo is not in iceberg\.tables \(sales\.orders,sales\.returns\), so this setting applies to no table/);
  assert.match(errors['iceberg.tables.route-field']?.[0] ?? '', /No table in iceberg\.tables has an iceberg\.table\.<table>\.route-regex/);

  const regexWithoutField = errorsOf(await validateConfig('IcebergSink', { ...BASE, 'iceberg.table.sales.orders.route-regex': 'o.*' }, deps));
  assert.match(regexWithoutField['iceberg.table.sales.orders.route-regex']?.[0] ?? '', /iceberg\.tables\.route-field is not set, so this regex routes nothing/);
  const dynamic = errorsOf(await validateConfig('IcebergSink', { ...BASE, 'iceberg.tables': '', 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 't', 'iceberg.table.a.b.route-regex': 'x' }, deps));
  assert.match(dynamic['iceberg.table.a.b.route-regex']?.[0] ?? '', /dynamic-enabled=true the route field's value names the table/);
  // Java's own rule stays as it was, verbatim.
  const both = errorsOf(await validateConfig('IcebergSink', { ...BASE, 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 't' }, deps));
  assert.match(both['iceberg.tables']?.[0] ?? '', /^Invalid value sales\.orders for configuration iceberg\.tables: Cannot specify both static and dynamic table names: /);

  // strict=false: Java's checks only.
  const lax = await validateConfig('IcebergSink', { ...BASE, 'iceberg.tables.default-partition-by': 'day(ts), hour(ts)' }, { ...deps, strict: false });
  assert.equal(lax.error_count, 0);
});

test('the shipped example connectors pass the strict checks', async () => {
  const root = new URL('../../../', import.meta.url);
  const worker = parseWorkerProperties(readFileSync(new URL('config/worker-standalone.properties', root), 'utf8'), { baseDir: '/work' });
  for (const file of readdirSync(new URL('connectors/', root)).filter((f) => f.endsWith('.json'))) {
    const { config } = parseConnectorFile(readFileSync(new URL(`connectors/${file}`, root), 'utf8'), file);
    const infos = await validateConfig(config['connector.class'] ?? '', config, { plugins, defaultCatalog: worker.defaultCatalogProps ?? {} });
    assert.deepEqual(errorsOf(infos), {}, file);
  }
});

test('the catalog probe: an unreachable catalog is an error on its key; time-boxed; not run when the catalog keys are wrong or on writes', async () => {
  const calls: CatalogConfig[] = [];
  const down: CatalogProbe = async (catalog) => {
    calls.push(catalog);
    return 'connect ECONNREFUSED 127.0.0.1:8181';
  };
  const errors = errorsOf(await validateConfig('IcebergSink', BASE, { ...deps, catalogProbe: down }));
  assert.deepEqual(errors['iceberg.catalog.uri'], ['The catalog at http://127.0.0.1:8181 cannot be used: connect ECONNREFUSED 127.0.0.1:8181; check iceberg.catalog.uri, the catalog\'s credentials, and that the catalog is running']);
  assert.equal(calls[0]?.uri, 'http://127.0.0.1:8181');

  const fromWorker = errorsOf(await validateConfig('IcebergSink', { name: 'o', 'connector.class': 'IcebergSink', topics: 't', 'iceberg.tables': 'a.b' }, { ...deps, defaultCatalog: { type: 'rest', uri: 'http://cat:1' }, catalogProbe: down }));
  assert.match(fromWorker['iceberg.catalog']?.[0] ?? '', /^The catalog at http:\/\/cat:1 cannot be used: .*; check the worker's catalog settings/);

  let aborted = false;
  const hangs: CatalogProbe = (_c, signal) => new Promise((resolve) => signal.addEventListener('abort', () => { aborted = true; resolve(undefined); }));
  const started = Date.now();
  const slow = errorsOf(await validateConfig('IcebergSink', BASE, { ...deps, catalogProbe: hangs, probeTimeoutMs: 100 }));
  assert.ok(Date.now() - started < 2_000);
  assert.match(slow['iceberg.catalog.uri']?.[0] ?? '', /^The catalog at http:\/\/127\.0\.0\.1:8181 cannot be used: no answer within 100 ms; /);
  assert.ok(aborted, 'the probe is told to stop');

  const thrown = errorsOf(await validateConfig('IcebergSink', BASE, { ...deps, catalogProbe: async () => { throw new Error('HTTP 401 from http://u:pw@cat'); } }));
  assert.match(thrown['iceberg.catalog.uri']?.[0] ?? '', /^The catalog at http:\/\/127\.0\.0\.1:8181 cannot be used: HTTP 401 from http:\/\/u:\[hidden\]@cat; /);

  // A value shown beside an error never shows a password or a secret key's value.
  const withPassword = await validateConfig('IcebergSink', { ...BASE, 'iceberg.catalog.type': 'jdbc', 'iceberg.catalog.uri': 'jdbc:postgresql://u:pw-secret@db/x', 'iceberg.catalog.warehouse': 'file:///w', 'iceberg.catalog.jdbc.password': 'jdbc-secret' }, { ...deps, catalogProbe: down });
  const shown = withPassword.configs.find((c) => c.value.name === 'iceberg.catalog.uri')?.value;
  assert.equal(shown?.value, 'jdbc:postgresql://u:[hidden]@db/x');
  assert.ok(!JSON.stringify(withPassword).includes('secret'), JSON.stringify(withPassword.configs.filter((c) => c.definition === null)));

  const badUri = await validateConfig('IcebergSink', { ...BASE, 'iceberg.catalog.uri': 'ftp://u:pw-secret@h' }, deps);
  assert.equal(badUri.configs.find((c) => c.value.name === 'iceberg.catalog.uri')?.value.value, 'ftp://u:[hidden]@h');
  assert.ok(!JSON.stringify(badUri).includes('secret'));

  calls.length = 0;
  assert.equal((await validateConfig('IcebergSink', BASE, { ...deps, catalogProbe: async () => undefined })).error_count, 0);
  await validateConfig('IcebergSink', { ...BASE, 'iceberg.catalog.uri': 'not-a-url' }, { ...deps, catalogProbe: down });
  assert.equal(calls.length, 0, 'no probe for a wrong catalog');
  // Before a write an unreachable catalog is an outage, not an error: the write passes.
  await validateForWrite({ ...BASE, 'iceberg.tables.auto-create-enabled': 'true' }, { ...deps, catalogProbe: down });
  assert.equal(calls.length, 0, 'no probe before a write when no table must exist');
  await validateForWrite(BASE, { ...deps, catalogProbe: down });
  assert.equal(calls.length, 1, 'the probe looks up the static tables, and its outage passes');
});

test('config provider references: resolved for validation, shown as submitted, never a resolved value in the answer', async () => {
  const parsed = parseConfigProviders({ 'config.providers': 'env', 'config.providers.env.class': 'EnvVarConfigProvider' });
  const providers = configProviders(parsed.providers, { readFile: () => { throw new Error('no files here'); }, env: { TOKEN: 'tok-SECRET-1', TASKS: 'many-SECRET-2', URI: 'http://host-SECRET-3:1' } });
  const raw = { ...BASE, 'iceberg.catalog.token': '${env:TOKEN}', 'tasks.max': '${env:TASKS}', 'iceberg.catalog.uri': '${env:URI}', 'iceberg.control.topic': '${env:UNSET}' };
  let probed = '';
  const infos = await validateConfig('IcebergSink', raw, { ...deps, providers, catalogProbe: async (c) => {
    probed = c.uri;
    return `refused by ${c.uri}`;
  } });
  assert.equal(probed, 'http://host-SECRET-3:1', 'the probe gets the resolved catalog');
  const text = JSON.stringify(infos);
  for (const secret of ['SECRET-1', 'SECRET-2', 'SECRET-3']) assert.ok(!text.includes(secret), `${secret} in ${text}`);
  const errors = errorsOf(infos);
  assert.deepEqual(errors['tasks.max'], ['Invalid value ${env:TASKS} for configuration tasks.max: Not a number of type INT']);
  assert.deepEqual(errors['iceberg.control.topic'], ['iceberg.control.topic: cannot resolve ${env:UNSET}: environment variable UNSET is not set']);
  assert.match(errors['iceberg.catalog.uri']?.[0] ?? '', /^The catalog at \[hidden\] cannot be used: refused by \[hidden\]; /);
  assert.equal(infos.configs.find((c) => c.value.name === 'tasks.max')?.value.value, '${env:TASKS}');
  // Without providers a reference is an error on its key, not literal text sent to a catalog.
  const none = errorsOf(await validateConfig('IcebergSink', { ...BASE, 'iceberg.catalog.token': '${env:TOKEN}' }, deps));
  assert.match(none['iceberg.catalog.token']?.[0] ?? '', /no config provider named env/);
});

test('invalidConfigMessage lists every error in answer order, N counting each', () => {
  const infos: ConfigInfos = {
    name: 'x', error_count: 3, groups: [],
    configs: [
      { definition: null, value: { name: 'a', value: null, recommended_values: [], errors: ['e1', 'e2'], visible: true } },
      { definition: null, value: { name: 'b', value: null, recommended_values: [], errors: [], visible: true } },
      { definition: null, value: { name: 'c', value: null, recommended_values: [], errors: ['e3'], visible: true } },
    ],
  };
  assert.equal(invalidConfigMessage(infos), 'Connector configuration is invalid and contains the following 3 error(s):\ne1\ne2\ne3\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`');
});

test('static tables the catalog does not hold: one error on iceberg.tables naming them, for validate, create and the command line', async () => {
  const asked: string[][] = [];
  const holds = new Set(['sales.orders']);
  const probe: CatalogProbe = async (_c, _s, tables) => {
    asked.push([...tables]);
    const missingTables = tables.filter((t) => !holds.has(t));
    return missingTables.length === 0 ? undefined : { missingTables };
  };
  const withProbe = { ...deps, catalogProbe: probe };
  const config = { ...BASE, 'iceberg.tables': 'sales.orders,sales.returns,sales.refunds' };
  const message = 'Invalid value sales.orders,sales.returns,sales.refunds for configuration iceberg.tables: the tables sales.returns, sales.refunds do not exist in the catalog at http://127.0.0.1:8181, and iceberg.tables.auto-create-enabled is false. ' +
    'Create them in the catalog, or set iceberg.tables.auto-create-enabled=true (the connector then creates them from the records\' schema), or correct the name; only if records for a missing table should be dropped, set icefloe.tables.unrouted=skip';
  const infos = await validateConfig('IcebergSink', config, withProbe);
  assert.deepEqual(errorsOf(infos), { 'iceberg.tables': [message] });
  assert.equal(infos.error_count, 1);
  assert.deepEqual(asked.at(-1), ['sales.orders', 'sales.returns', 'sales.refunds']);
  await assert.rejects(validateForWrite(config, withProbe), refused('bad-request', `Connector configuration is invalid and contains the following 1 error(s):\n${message}\nYou can also find the above list of errors at the endpoint \`/connector-plugins/{connectorType}/config/validate\``));
  await assert.rejects(checkStartConfig(config, withProbe), (e: Error) => e.name === 'ConfigError' && e.message === `connector orders: 1 configuration error(s): ${message}`);
  await checkStartConfig(BASE, withProbe);
  await checkStartConfig(config, { ...deps, catalogProbe: async () => 'ECONNREFUSED' }); // an outage passes
  // Icefloe's own checks apply at the command line too, not only Java's.
  await assert.rejects(checkStartConfig({ ...BASE, 'iceberg.table.sales.orders.route-regex': 'o' }, withProbe), /route-regex: iceberg\.tables\.route-field is not set/);

  // With route-regexes only the tables that receive records must exist.
  asked.length = 0;
  await validateConfig('IcebergSink', { ...config, 'iceberg.tables.route-field': 'kind', 'iceberg.table.sales.orders.route-regex': 'o', 'iceberg.table.sales.returns.route-regex': 'r' }, withProbe);
  assert.deepEqual(asked, [['sales.orders', 'sales.returns']]);
  // No lookup when a missing table is created, skipped on purpose, or named by the records.
  asked.length = 0;
  for (const more of [{ 'iceberg.tables.auto-create-enabled': 'true' }, { 'icefloe.tables.unrouted': 'skip' }]) {
    assert.equal((await validateForWrite({ ...config, ...more }, withProbe)).error_count, 0);
    assert.equal((await validateConfig('IcebergSink', { ...config, ...more }, withProbe)).error_count, 0);
  }
  await validateConfig('IcebergSink', { ...BASE, 'iceberg.tables': '', 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 't' }, withProbe);
  assert.ok(asked.every((t) => t.length === 0), JSON.stringify(asked));
});

test('the catalog probe asks the catalog about each table and reports those it does not hold', async () => {
  const looked: string[] = [];
  let closed = 0;
  const probe = catalogProbe(() => ({
    listNamespaces: async () => [],
    tableExists: async (id) => {
      looked.push([...id.namespace, id.name].join('.'));
      return id.name !== 'gone';
    },
    close: async () => void closed++,
  }));
  const catalog = parseConnectorConfig(BASE).catalog;
  assert.deepEqual(await probe(catalog, new AbortController().signal, ['a.b.gone', 'a.here', 'noNamespace']), { missingTables: ['a.b.gone'] });
  assert.deepEqual(looked, ['a.b.gone', 'a.here'], 'a name that is no identifier is left to the config checks');
  assert.equal(await probe(catalog, new AbortController().signal, ['a.here']), undefined);
  const down = catalogProbe(() => ({ listNamespaces: async () => { throw new Error('ECONNREFUSED'); }, tableExists: async () => true, close: async () => undefined }));
  assert.equal(await down(catalog, new AbortController().signal, ['a.b']), 'ECONNREFUSED');
  assert.equal(closed, 2);
});
