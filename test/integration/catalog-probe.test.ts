/**
 * The catalog probe of connector validation against real catalogs: the stack's REST catalog answers
 * (no error); a refused port, a server that accepts and never answers, and PostgreSQL refusing a wrong
 * password are each an error on the catalog key, within the validation's time box, and the password
 * never reaches the answer. Catalog clients are built the way the worker builds them (REST without
 * read retries for the probe).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CatalogConfig } from '../../src/config/connector-config.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { SqlCatalog } from '../../src/commit/sql/catalog.ts';
import { PostgresDriver } from '../../src/commit/sql/postgres.ts';
import { LocalObjectStore } from '../../src/upload/local/store.ts';
import { ConnectorPlugins } from '../../src/runtime/connector-plugins.ts';
import { catalogProbe } from '../../src/runtime/catalog-probe.ts';
import type { ProbeTarget } from '../../src/runtime/catalog-probe.ts';
import { validateConfig } from '../../src/runtime/connector-validation.ts';
import type { ValidationDeps } from '../../src/runtime/connector-validation.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';

const dir = mkdtempSync(join(tmpdir(), 'icefloe-probe-'));
const sockets = new Set<Socket>();
const servers: Server[] = [];
after(() => {
  for (const s of sockets) s.destroy();
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A catalog client as the worker builds one, for the probe. */
function open(c: CatalogConfig): ProbeTarget {
  if (c.type === 'rest') return new RestCatalog({ uri: c.uri, name: c.name, ...(c.warehouse === null ? {} : { warehouse: c.warehouse }), properties: c.props, requestTimeoutMs: 3_000, readRetry: { maxAttempts: 1 } });
  const url = new URL(c.uri.replace(/^jdbc:/, ''));
  if (c.props['jdbc.user'] !== undefined) url.username = encodeURIComponent(c.props['jdbc.user']);
  if (c.props['jdbc.password'] !== undefined) url.password = encodeURIComponent(c.props['jdbc.password']);
  return new SqlCatalog({ name: c.name, driver: new PostgresDriver({ connectionString: url.toString() }), store: new LocalObjectStore(), warehouse: `file://${dir}` });
}

const deps: ValidationDeps = { plugins: new ConnectorPlugins({ icefloeVersion: '0.1.0' }), catalogProbe: catalogProbe(open), probeTimeoutMs: 1_500 };

function config(catalog: Record<string, string>): Record<string, string> {
  // Auto-create on: no table must exist (the lookup of static tables is test/e2e/config-errors.test.ts's).
  const out: Record<string, string> = { name: 'probe', 'connector.class': 'IcebergSink', topics: 't', 'iceberg.tables': 'a.b', 'iceberg.tables.auto-create-enabled': 'true' };
  for (const [k, v] of Object.entries(catalog)) out[`iceberg.catalog.${k}`] = v;
  return out;
}

async function catalogErrors(catalog: Record<string, string>): Promise<{ errors: string[]; ms: number; text: string }> {
  const started = Date.now();
  const infos = await validateConfig('IcebergSink', config(catalog), deps);
  const ms = Date.now() - started;
  const errors = infos.configs.filter((c) => c.value.name.startsWith('iceberg.catalog')).flatMap((c) => c.value.errors);
  assert.equal(infos.error_count, errors.length, 'only the catalog is at fault');
  return { errors, ms, text: JSON.stringify(infos) };
}

async function listening(onConnection: (s: Socket) => void): Promise<number> {
  const server = createServer((s) => {
    sockets.add(s);
    onConnection(s);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

test('the stack\'s REST catalog answers: no error', async () => {
  const e = stackEndpoints();
  await requireReachable('Iceberg REST catalog', e.catalogUri);
  const r = await catalogErrors({ type: 'rest', uri: e.catalogUri, warehouse: e.catalogWarehouse });
  assert.deepEqual(r.errors, []);
});

test('a refused port is an error on iceberg.catalog.uri, answered at once', async () => {
  const port = await listening(() => undefined);
  await new Promise<void>((resolve) => (servers.pop() as Server).close(() => resolve()));
  const r = await catalogErrors({ type: 'rest', uri: `http://127.0.0.1:${port}` });
  assert.equal(r.errors.length, 1);
  assert.match(r.errors[0] ?? '', new RegExp(`^The catalog at http://127\\.0\\.0\\.1:${port} cannot be used: `));
  assert.doesNotMatch(r.errors[0] ?? '', /no answer within/);
  assert.ok(r.ms < 1_500, `${r.ms} ms`);
});

test('a catalog that never answers is cut off by the time box', async () => {
  const port = await listening(() => undefined); // accepts, reads, never writes
  const r = await catalogErrors({ type: 'rest', uri: `http://127.0.0.1:${port}` });
  assert.deepEqual(r.errors, [`The catalog at http://127.0.0.1:${port} cannot be used: no answer within 1500 ms; check iceberg.catalog.uri, the catalog's credentials, and that the catalog is running`]);
  assert.ok(r.ms >= 1_400 && r.ms < 3_000, `${r.ms} ms`);
});

test('PostgreSQL refusing the login: an error that never shows the password', async () => {
  const pg = new URL(stackEndpoints().postgresUrl);
  await requireReachable('PostgreSQL', `${pg.hostname}:${pg.port}`);
  const secret = `wrong-${process.pid}-pw`;
  // The stack's PostgreSQL may trust local logins whatever the password; an unknown role it refuses.
  const r = await catalogErrors({ type: 'jdbc', uri: `jdbc:postgresql://${pg.host}${pg.pathname}`, warehouse: `file://${dir}`, 'jdbc.user': `nobody_${process.pid}`, 'jdbc.password': secret });
  assert.equal(r.errors.length, 1, r.text);
  assert.match(r.errors[0] ?? '', /^The catalog at jdbc:postgresql:\/\/127\.0\.0\.1:\d+\/\w+ cannot be used: /);
  assert.ok(!r.text.includes(secret), r.text);

  const ok = await catalogErrors({ type: 'jdbc', uri: `jdbc:postgresql://${pg.host}${pg.pathname}`, warehouse: `file://${dir}`, 'jdbc.user': decodeURIComponent(pg.username), 'jdbc.password': decodeURIComponent(pg.password) });
  assert.deepEqual(ok.errors, []);
});

test('a JDBC catalog that answers: a static table it does not hold is an error on iceberg.tables', async () => {
  const pg = new URL(stackEndpoints().postgresUrl);
  await requireReachable('PostgreSQL', `${pg.hostname}:${pg.port}`);
  const table = `probe_${process.pid}_${Date.now()}.absent`;
  const raw = {
    ...config({ type: 'jdbc', uri: `jdbc:postgresql://${pg.host}${pg.pathname}`, warehouse: `file://${dir}`, 'jdbc.user': decodeURIComponent(pg.username), 'jdbc.password': decodeURIComponent(pg.password) }),
    'iceberg.tables': table,
    'iceberg.tables.auto-create-enabled': 'false',
  };
  const infos = await validateConfig('IcebergSink', raw, deps);
  const errors = infos.configs.filter((c) => c.value.errors.length > 0).map((c) => [c.value.name, c.value.errors]);
  assert.deepEqual(errors.map(([k]) => k), ['iceberg.tables'], JSON.stringify(errors));
  assert.match(String(errors[0]?.[1]), new RegExp(`^Invalid value ${table.replace('.', '\\.')} for configuration iceberg\\.tables: the table ${table.replace('.', '\\.')} does not exist in the catalog at jdbc:postgresql://127\\.0\\.0\\.1:\\d+/\\w+, and iceberg\\.tables\\.auto-create-enabled is false\\. Create it`));
});
