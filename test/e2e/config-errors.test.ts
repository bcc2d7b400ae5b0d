/**
 * Configuration errors are caught before anything runs, one message per key (issue 14), on the real
 * worker against the stack's REST catalog: each misconfiguration is an error on the key at fault in the
 * answer of `PUT /connector-plugins/{plugin}/config/validate` (counted by error_count), refuses
 * `POST /connectors` and `PUT /connectors/{name}/config` with Connect's 400 message, and makes
 * `icefloe standalone` exit 2 before it starts, with the same message. An unreachable catalog is the
 * exception by design (runtime/connector-validation.ts): validate reports it, a create does not wait for it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { parseIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { createTable } from '../../src/commit/table-ops.ts';
import { S3ObjectStore } from '../../src/upload/s3/store.ts';
import type { ConfigInfos } from '../../src/config/config-def.ts';
import { unique } from '../helpers/kafka.ts';
import { e2eResources, sinkConnector, SCHEMALESS_JSON, uniqueIdent } from '../helpers/sink-e2e.ts';
import { freePort, s3Settings, stackEndpoints } from '../helpers/stack.ts';
import { startWorker } from '../helpers/worker.ts';

const TIMEOUT = 120_000;
const PLUGIN = 'IcebergSinkConnector';
const AVRO = 'io.confluent.connect.avro.AvroConverter';

interface Case {
  readonly what: string;
  /** Keys over a valid connector (tables auto-created, so no table needs to exist). */
  readonly config: Readonly<Record<string, string>>;
  readonly key: string;
  readonly message: string | RegExp;
}

function invalid(errors: readonly string[]): string {
  return [`Connector configuration is invalid and contains the following ${errors.length} error(s):`, ...errors, 'You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`'].join('\n');
}

async function call(base: string, method: string, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A table in the stack's catalog (its namespace too), dropped after the test. */
async function existingTable(t: TestContext, tables: string[]): Promise<string> {
  const e = stackEndpoints();
  const catalog = new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse });
  const store = new S3ObjectStore(s3Settings());
  t.after(async () => {
    await catalog.close();
    await store.close();
  });
  const table = `${uniqueIdent('e2e_cfg')}.present`;
  const id = parseIdentifier(table);
  await catalog.createNamespace(id.namespace);
  await createTable({ catalog, store }, id, { schema: { schemaId: 0, fields: [{ id: 1, name: 'id', required: false, type: { kind: 'long' } }] } });
  tables.push(table);
  return table;
}

test('each misconfiguration: an error on its key at validate, a 400 on create and update, exit 2 at the command line', { timeout: TIMEOUT }, async (t) => {
  const started = Date.now();
  const res = await e2eResources(t);
  const present = await existingTable(t, res.tables);
  const absent = `${uniqueIdent('e2e_cfg')}.absent`;
  const table = `${uniqueIdent('e2e_cfg')}.t`;
  const cases: Case[] = [
    {
      what: 'unknown catalog type',
      config: { 'iceberg.catalog.type': 'hive' },
      key: 'iceberg.catalog.type',
      message: /^Invalid value hive for configuration iceberg\.catalog\.type: Icefloe supports the catalog types rest, sql and jdbc: set it to rest /,
    },
    {
      what: 'unknown table with auto-create off',
      config: { 'iceberg.tables': `${present},${absent}`, 'iceberg.tables.auto-create-enabled': 'false' },
      key: 'iceberg.tables',
      message: `Invalid value ${present},${absent} for configuration iceberg.tables: the table ${absent} does not exist in the catalog at ${stackEndpoints().catalogUri}, and iceberg.tables.auto-create-enabled is false. ` +
        'Create it in the catalog, or set iceberg.tables.auto-create-enabled=true (the connector then creates it from the records\' schema), or correct the name; only if records for a missing table should be dropped, set icefloe.tables.unrouted=skip',
    },
    {
      what: 'invalid default partition spec',
      config: { 'iceberg.tables.default-partition-by': 'bucket(id), day(ts)' },
      key: 'iceberg.tables.default-partition-by',
      message: /^Invalid value bucket\(id\), day\(ts\) for configuration iceberg\.tables\.default-partition-by: partition-by term "bucket\(id\)": bucket takes a column and a positive integer; write comma-separated terms /,
    },
    {
      what: 'invalid per-table partition spec',
      config: { [`iceberg.table.${table}.partition-by`]: 'day(ts' },
      key: `iceberg.table.${table}.partition-by`,
      message: /^Invalid value day\(ts for configuration iceberg\.table\.\S+\.partition-by: partition-by "day\(ts" has unbalanced parentheses; write /,
    },
    {
      what: 'static tables with dynamic routing',
      config: { 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 'target' },
      key: 'iceberg.tables',
      message: new RegExp(`^Invalid value ${table} for configuration iceberg\\.tables: Cannot specify both static and dynamic table names: .*Remove iceberg\\.tables for dynamic routing, or set iceberg\\.tables\\.dynamic-enabled=false`),
    },
    {
      what: 'dynamic routing without a route field',
      config: { 'iceberg.tables': '', 'iceberg.tables.dynamic-enabled': 'true' },
      key: 'iceberg.tables.route-field',
      message: /^Must specify a route field if using dynamic table names \(iceberg\.tables\.dynamic-enabled=true\): set iceberg\.tables\.route-field /,
    },
    {
      what: 'a route field without route regexes',
      config: { 'iceberg.tables.route-field': 'region' },
      key: 'iceberg.tables.route-field',
      message: /^Invalid value region for configuration iceberg\.tables\.route-field: No table in iceberg\.tables has an iceberg\.table\.<table>\.route-regex/,
    },
    {
      what: 'a route regex without a route field',
      config: { [`iceberg.table.${table}.route-regex`]: 'eu' },
      key: `iceberg.table.${table}.route-regex`,
      message: /^Invalid value eu for configuration iceberg\.table\.\S+\.route-regex: iceberg\.tables\.route-field is not set, so this regex routes nothing/,
    },
    {
      what: 'Avro without a registry URL',
      config: { 'value.converter': AVRO },
      key: 'value.converter.schema.registry.url',
      message: `Missing required configuration "value.converter.schema.registry.url" which has no default value. ${AVRO} reads each record's schema from a schema registry: set value.converter.schema.registry.url to its URL (e.g. http://schema-registry:8081), or use a converter that needs none`,
    },
  ];
  const connector = (c: Case): { name: string; config: Record<string, string> } => {
    const base = sinkConnector({ name: unique('e2e-cfg'), topics: unique('e2e-cfg'), controlTopic: unique('e2e-cfg-control'), config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', ...c.config } });
    return base;
  };

  // The command line first, side by side: none of them gets as far as Kafka.
  const cli = cases.map((c) => {
    const conn = connector(c);
    return { c, name: conn.name, w: startWorker({ connectors: [conn] }) };
  });

  const worker = startWorker({ connectors: [], args: [] });
  res.workers.push(worker, ...cli.map((r) => r.w));
  const base = await worker.restUrl();
  const seen = new Map<string, string>();
  for (const c of cases) {
    const { name, config } = connector(c);
    const v = await call(base, 'PUT', `/connector-plugins/${PLUGIN}/config/validate`, { ...config, name });
    assert.equal(v.status, 200, c.what);
    const infos = v.body as unknown as ConfigInfos;
    const errors = infos.configs.filter((x) => x.value.errors.length > 0).map((x) => ({ key: x.value.name, errors: x.value.errors }));
    assert.equal(errors.length, 1, `${c.what}: one key at fault: ${JSON.stringify(errors)}`);
    assert.equal(errors[0]?.key, c.key, c.what);
    assert.equal(errors[0]?.errors.length, 1, `${c.what}: one message: ${JSON.stringify(errors)}`);
    const message = errors[0]?.errors[0] ?? '';
    if (typeof c.message === 'string') assert.equal(message, c.message, c.what);
    else assert.match(message, c.message, c.what);
    assert.equal(infos.error_count, 1, c.what);
    seen.set(c.what, message);

    const created = await call(base, 'POST', '/connectors', { name, config });
    assert.deepEqual(created, { status: 400, body: { error_code: 400, message: invalid([message]) } }, c.what);
    const updated = await call(base, 'PUT', `/connectors/${name}/config`, config);
    assert.deepEqual(updated, { status: 400, body: { error_code: 400, message: invalid([message]) } }, c.what);
  }
  assert.deepEqual((await (await fetch(`${base}/connectors`)).json()) as unknown, [], 'nothing was created');
  t.diagnostic(`REST: ${cases.length} cases in ${Date.now() - started} ms`);

  for (const { c, name, w } of cli) {
    assert.equal(await w.exited, '2', `${c.what}:\n${w.lines.join('\n')}`);
    const lines = w.lines.filter((l) => l.startsWith('icefloe standalone: '));
    assert.deepEqual(lines, [`icefloe standalone: connector ${name}: 1 configuration error(s): ${seen.get(c.what) ?? ''}`], c.what);
  }
  t.diagnostic(`with the command line: ${Date.now() - started} ms`);
});

test('an unreachable catalog: an error on iceberg.catalog.uri at validate, and no table lookup', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const port = await freePort();
  const worker = startWorker({ connectors: [], args: [] });
  res.workers.push(worker);
  const base = await worker.restUrl();
  const { name, config } = sinkConnector({ name: unique('e2e-cfg'), topics: unique('e2e-cfg'), controlTopic: unique('e2e-cfg-control'), config: { ...SCHEMALESS_JSON, 'iceberg.tables': `${uniqueIdent('e2e_cfg')}.t`, 'iceberg.catalog.uri': `http://127.0.0.1:${port}` } });
  const v = await call(base, 'PUT', `/connector-plugins/${PLUGIN}/config/validate`, { ...config, name });
  const infos = v.body as unknown as ConfigInfos;
  const errors = infos.configs.filter((x) => x.value.errors.length > 0).map((x) => ({ key: x.value.name, errors: x.value.errors }));
  assert.equal(infos.error_count, 1, JSON.stringify(errors));
  assert.equal(errors[0]?.key, 'iceberg.catalog.uri');
  assert.match(errors[0]?.errors[0] ?? '', new RegExp(`^The catalog at http://127\\.0\\.0\\.1:${port} cannot be used: .+; check iceberg\\.catalog\\.uri, the catalog's credentials, and that the catalog is running$`));
  // The static table is not looked up either: the catalog did not answer, so nothing says it is missing.
  assert.ok(!JSON.stringify(errors).includes('does not exist'));
});
