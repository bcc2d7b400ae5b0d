/**
 * Golden-file checks of the shipped examples: every connectors/*.json and config/*.properties is parsed
 * and validated, so adding a file adds a test. Connectors are validated against the embedded standalone
 * worker (whose default catalog serves connectors that name none) and with every shipped worker file,
 * and must load without errors, warnings or unknown keys (the worker logs warnings on every start);
 * endpoints must be the local stack's (scripts/stack.env).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { parseConnectorConfig, validateConnectorConfig } from '../../../src/config/connector-config.ts';
import { CONNECTOR_CONFIG_DEF } from '../../../src/config/connector-def.ts';
import { partitionByProblem } from '../../../src/iceberg/partition-by.ts';
import { WORKER_CONFIG_DEF, parseConnectorFile, parseProperties, parseWorkerProperties, validateWorkerConfig } from '../../../src/config/worker-config.ts';

const root = new URL('../../../', import.meta.url);
const read = (rel: string): string => readFileSync(new URL(rel, root), 'utf8');
const stack = parseProperties(read('scripts/stack.env'));
const ports = ['KAFKA_PORT', 'REGISTRY_PORT', 'S3_PORT', 'CATALOG_PORT', 'POSTGRES_PORT', 'REDIS_PORT'].map((k) => stack[k]);

function endpointsUseStackPorts(values: Iterable<string>, what: string): void {
  for (const v of values) {
    for (const m of v.matchAll(/(?:\/\/|^)(?:[^@/\s]*@)?(127\.0\.0\.1|localhost):(\d+)/g)) {
      assert.ok(ports.includes(m[2]), `${what}: ${m[0]} is not a port of the local stack`);
    }
  }
}

const standalone = parseWorkerProperties(read('config/worker-standalone.properties'), { baseDir: '/work' });

const connectorFiles = readdirSync(new URL('connectors/', root)).filter((f) => f.endsWith('.json')).sort();
const workerFiles = readdirSync(new URL('config/', root)).filter((f) => f.endsWith('.properties')).sort();

test('the example folders hold what the README promises', () => {
  for (const f of ['orders-avro-s3-rest.json', 'orders-protobuf.json', 'events-json.json', 'dynamic-routing.json', 'static-regex-routing.json']) assert.ok(connectorFiles.includes(f), f);
  for (const f of ['worker-standalone.properties', 'worker-s3-rest.properties']) assert.ok(workerFiles.includes(f), f);
});

for (const file of connectorFiles) {
  test(`connectors/${file} parses and validates`, () => {
    const { name, config: raw } = parseConnectorFile(read(`connectors/${file}`), file);
    assert.equal(`${name}.json`, file, 'the file is named after the connector');
    const c = parseConnectorConfig(raw, { defaultCatalog: standalone.defaultCatalogProps ?? {} });
    assert.deepEqual(c.warnings, []);
    assert.deepEqual(c.stored(), raw);
    for (const table of c.tables.routing.kind === 'all' ? c.tables.routing.tables : c.tables.routing.kind === 'regex' ? c.tables.routing.routes.map((r) => r.table) : []) {
      assert.equal(partitionByProblem(c.tables.settings(table).partitionBy), undefined);
    }
    endpointsUseStackPorts(Object.values(raw), file);
    for (const k of c.secretKeys) assert.equal(c.redacted()[k], '[hidden]');
  });
}

for (const file of workerFiles) {
  test(`config/${file} parses and validates without a warning`, () => {
    const props = parseProperties(read(`config/${file}`));
    const v = validateWorkerConfig(props, { baseDir: '/work' });
    assert.deepEqual(Object.fromEntries(v.errors), {});
    // The worker logs each warning on every start: a shipped example must start without one.
    assert.deepEqual(v.warnings, []);
    assert.deepEqual(WORKER_CONFIG_DEF.parse(props).unknown, {}, 'every key is defined or under a declared prefix');
    endpointsUseStackPorts(Object.values(props), file);
  });
}

// Every connector as the worker would start it with every shipped worker file (whose default catalog and
// converters fill in what the connector leaves out): no error, no warning, no unknown key.
for (const workerFile of workerFiles) {
  const worker = parseWorkerProperties(read(`config/${workerFile}`), { baseDir: '/work' });
  for (const file of connectorFiles) {
    test(`connectors/${file} starts with config/${workerFile} without a warning`, () => {
      const { config: raw } = parseConnectorFile(read(`connectors/${file}`), file);
      const v = validateConnectorConfig(raw, worker.defaultCatalogProps === undefined ? {} : { defaultCatalog: worker.defaultCatalogProps });
      assert.equal(v.errorCount, 0, v.summary().text);
      assert.deepEqual(v.warnings, []);
      assert.deepEqual(CONNECTOR_CONFIG_DEF.parse(raw).unknown, {}, 'every key is defined or under a declared prefix');
    });
  }
}

test('example specifics: the orders connector, JSON with and without schemas, both routings, the embedded worker', () => {
  const load = (f: string) => parseConnectorConfig(parseConnectorFile(read(`connectors/${f}`), f).config, { defaultCatalog: standalone.defaultCatalogProps ?? {} });
  const orders = load('orders-avro-s3-rest.json');
  assert.deepEqual(orders.topics, { kind: 'list', topics: ['orders'] });
  assert.equal(orders.valueConverter?.kind, 'avro');
  assert.equal(orders.tables.autoCreate, true);
  assert.equal(orders.tables.settings('sales.orders').partitionBy, 'day(created_at), bucket(order_id, 16)');
  assert.equal(orders.catalog.type, 'rest');
  assert.equal(orders.catalog.s3.endpoint, 'http://127.0.0.1:9000');
  assert.equal(load('orders-protobuf.json').valueConverter?.kind, 'protobuf');
  const events = load('events-json.json');
  assert.equal(events.valueConverter?.schemasEnable, false);
  assert.equal(events.catalog.fromWorker, true);
  assert.equal(load('events-json-schema.json').valueConverter?.schemasEnable, true);
  assert.equal(load('dynamic-routing.json').tables.routing.kind, 'dynamic');
  const regex = load('static-regex-routing.json');
  assert.ok(regex.tables.routing.kind === 'regex' && regex.tables.routing.routes.length === 3);
  assert.equal(regex.catalog.type, 'sql');
  assert.equal(standalone.catalog.kind, 'sqlite');
  assert.equal(standalone.tasksMode, 'process');
  const s3 = parseWorkerProperties(read('config/worker-s3-rest.properties'), { baseDir: '/work' });
  assert.equal(s3.catalog.kind, 'rest');
  assert.equal(s3.valueConverter.kind, 'avro');
  assert.equal(s3.tasksMode, 'process');
});
