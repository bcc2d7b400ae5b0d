/**
 * Smoke: the stack's Iceberg REST catalog (JDBC on PostgreSQL, files on S3) is usable from Node over
 * plain HTTP, and both independent readers — PyIceberg and DuckDB's iceberg extension — read what is in it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import { readTable } from '../helpers/readers.ts';

async function catalog(): Promise<string> {
  const { catalogUri } = stackEndpoints();
  await requireReachable('Iceberg REST catalog', catalogUri);
  return catalogUri;
}

async function call(method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
  const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const r = await fetch(url, init);
  const text = await r.text();
  assert.ok(r.ok, `${method} ${url} answered ${r.status}: ${text}`);
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

const uniqueNamespace = (): string => `smoke_${randomUUID().replaceAll('-', '')}`;

test('Iceberg REST catalog: a namespace and table created from Node load back, and both readers see them', async () => {
  const uri = await catalog();
  await requireReachable('S3 (moto)', stackEndpoints().s3Endpoint);
  const config = await call('GET', `${uri}/v1/config`);
  assert.ok(typeof config['defaults'] === 'object', 'GET /v1/config has defaults');

  const ns = uniqueNamespace();
  await call('POST', `${uri}/v1/namespaces`, { namespace: [ns], properties: { owner: 'icefloe-smoke' } });
  const created = await call('POST', `${uri}/v1/namespaces/${ns}/tables`, {
    name: 'orders',
    schema: {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', required: true, type: 'long' },
        { id: 2, name: 'customer', required: false, type: 'string' },
        { id: 3, name: 'amount', required: false, type: 'decimal(10, 2)' },
      ],
    },
    properties: { 'format-version': '2' },
  });
  const metadata = created['metadata'] as { 'table-uuid': string; 'format-version': number };
  assert.equal(metadata['format-version'], 2);
  const loaded = await call('GET', `${uri}/v1/namespaces/${ns}/tables/orders`);
  assert.equal((loaded['metadata'] as { 'table-uuid': string })['table-uuid'], metadata['table-uuid']);

  const py = await readTable({ table: `${ns}.orders` });
  assert.deepEqual(py.rows, []);
  assert.deepEqual(
    (py['schema'] as { id: number; name: string; type: string }[]).map((f) => [f.id, f.name, f.type]),
    [
      [1, 'id', 'long'],
      [2, 'customer', 'string'],
      [3, 'amount', 'decimal(10, 2)'],
    ],
  );
  const duck = await readTable({ table: `${ns}.orders`, engine: 'duckdb' });
  assert.deepEqual(duck.rows, []);
});

test('Iceberg REST catalog: rows appended by PyIceberg read back identically in PyIceberg and DuckDB', async () => {
  await catalog();
  const table = `${uniqueNamespace()}.events`;
  const rows = [
    { id: 1, name: 'alpha' },
    { id: 2, name: 'βeta' },
    { id: 3, name: '' },
  ];
  const created = await readTable({ mode: 'create', table, rows });
  assert.equal(created['rows_appended'], 3);
  const py = await readTable({ table, order_by: ['id'] });
  const duck = await readTable({ table, engine: 'duckdb', order_by: ['id'] });
  assert.deepEqual(py.rows, rows);
  assert.deepEqual(duck.rows, rows);
  assert.equal((py['snapshots'] as unknown[]).length, 1);
  // Snapshot ids are 63-bit: the catalog's own JSON text, PyIceberg and DuckDB must agree on every digit.
  const [ns, name] = table.split('.');
  const raw = await (await fetch(`${stackEndpoints().catalogUri}/v1/namespaces/${ns}/tables/${name}`)).text();
  const fromCatalog = /"current-snapshot-id"\s*:\s*(\d+)/.exec(raw)?.[1];
  assert.ok(fromCatalog !== undefined, 'loadTable has a current-snapshot-id');
  const asParsed = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(v as number));
  assert.equal(asParsed(py['current_snapshot_id']).toString(), fromCatalog);
  assert.equal(asParsed((duck['snapshots'] as { snapshot_id: unknown }[])[0]?.snapshot_id).toString(), fromCatalog);
});
