/**
 * Exactly-once commits through real failures: the committer talks to the real REST catalog through the
 * fault-injection proxy, which breaks the commit request.
 * - apply-then-fail: the catalog applies the commit, the client gets a 500 (outcome unknown). The
 *   committer must not resend: it reloads, finds its commit id in main's ancestry, and reports success.
 *   Exactly one snapshot carries the id; exactly one commit request reached the catalog.
 * - fail-without-forward: the client gets a 500 but the catalog never saw the request. The committer
 *   reloads, does not find its id, rebuilds and commits again: it lands exactly once.
 * The commits are real appends (a Parquet data file from the write stage, manifests and manifest list
 * from src/iceberg/append.ts), so both are checked at the level a user sees: the table read back directly
 * (not through the proxy) has one snapshot with our commit id, and PyIceberg and DuckDB read each row once.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { COMMIT_ID_KEY, commitWithRetry } from '../../src/commit/commit-retry.ts';
import type { CommitEvent } from '../../src/commit/commit-retry.ts';
import type { Schema } from '../../src/commit/model.ts';
import type { TableIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { S3ObjectStore } from '../../src/upload/s3/store.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import type { Fault } from '../fault-proxy/client.ts';
import { commitIds, rowsAppendPlan } from '../helpers/commits.ts';
import { readTable } from '../helpers/readers.ts';
import { requireReachable, stackEndpoints, s3Settings } from '../helpers/stack.ts';

const schema: Schema = { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'long' } }] };
const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function scenario(fault: Fault): Promise<{ events: CommitEvent['kind'][]; table: TableIdentifier; commitId: string; direct: RestCatalog; resolvedBy: string; posts: { forwarded: boolean; upstreamStatus: number | null; clientStatus: number | null }[] }> {
  const e = stackEndpoints();
  await requireReachable('Iceberg REST catalog', e.catalogUri);
  await requireReachable('Fault-injection proxy (catalog route)', e.proxyCatalogUri);
  await requireReachable('Fault-injection proxy (control)', e.proxyControlUrl);
  const proxy = new FaultProxy(e.proxyControlUrl);
  const store = new S3ObjectStore(s3Settings());
  cleanup.push(() => store.close());
  const direct = new RestCatalog({ uri: e.catalogUri, warehouse: e.catalogWarehouse });
  const viaProxy = new RestCatalog({ uri: e.proxyCatalogUri, warehouse: e.catalogWarehouse });
  const n = `it_fault_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const table = { namespace: [n], name: 'events' };
  await direct.createNamespace([n]);
  await direct.createTable(table, { schema });
  cleanup.push(() => direct.dropTable(table).catch(() => undefined));
  // A first snapshot (row 0), so that the faulted commit has a parent and asserts a real snapshot id.
  await commitWithRetry(direct, table, rowsAppendPlan(store, 'seed', [0n]));

  const commitPath = `^/v1/namespaces/${n}/tables/events$`;
  const rule = await proxy.arm({ target: 'catalog', match: { method: 'POST', path: commitPath }, times: 1, fault });
  const commitId = `commit-${randomUUID()}`;
  const events: CommitEvent['kind'][] = [];
  try {
    const out = await commitWithRetry(viaProxy, table, rowsAppendPlan(store, commitId, [1n, 2n, 3n]), {
      retry: { initialDelayMs: 50 },
      onEvent: (ev) => events.push(ev.kind),
    });
    assert.equal(out.status, 'committed');
    const posts = (await proxy.log('catalog'))
      .filter((l) => l.method === 'POST' && new RegExp(commitPath).test(l.path))
      .map((l) => ({ forwarded: l.forwarded, upstreamStatus: l.upstreamStatus, clientStatus: l.clientStatus }));
    return { events, table, commitId, direct, resolvedBy: out.status === 'committed' ? out.resolvedBy : '', posts };
  } finally {
    await proxy.remove(rule).catch(() => undefined);
  }
}

async function assertExactlyOnce(direct: RestCatalog, table: TableIdentifier, commitId: string): Promise<void> {
  const loaded = await direct.loadTable(table);
  assert.deepEqual(commitIds(loaded), ['seed', commitId]);
  assert.equal(loaded.metadata.snapshots.filter((s) => s.summary[COMMIT_ID_KEY] === commitId).length, 1);
  const name = `${table.namespace.join('.')}.${table.name}`;
  const py = await readTable({ table: name, order_by: ['id'] });
  const ids = (py['snapshots'] as { summary: Record<string, string> }[]).map((s) => s.summary[COMMIT_ID_KEY]);
  assert.deepEqual(ids, ['seed', commitId], 'PyIceberg sees the same: one snapshot with our commit id');
  assert.deepEqual(py.rows, [{ id: 0 }, { id: 1 }, { id: 2 }, { id: 3 }], 'every row exactly once');
  const duck = await readTable({ table: name, engine: 'duckdb', order_by: ['id'] });
  assert.deepEqual(duck.rows, [{ id: 0 }, { id: 1 }, { id: 2 }, { id: 3 }]);
}

test('apply-then-fail: the commit landed but the answer was a 500 → found by its commit id, never resent', async () => {
  const r = await scenario({ kind: 'apply-then-fail' });
  assert.equal(r.resolvedBy, 'reload');
  assert.deepEqual(r.events, ['attempt', 'unknown-outcome', 'found-applied']);
  assert.deepEqual(r.posts, [{ forwarded: true, upstreamStatus: 200, clientStatus: 500 }], 'one commit request, and it reached the catalog');
  await assertExactlyOnce(r.direct, r.table, r.commitId);
});

test('fail-without-forward: a 500 that never reached the catalog → reload finds nothing, the retry lands once', async () => {
  const r = await scenario({ kind: 'fail-without-forward' });
  assert.equal(r.resolvedBy, 'response');
  assert.deepEqual(r.events, ['attempt', 'unknown-outcome', 'attempt']);
  assert.deepEqual(r.posts, [
    { forwarded: false, upstreamStatus: null, clientStatus: 500 },
    { forwarded: true, upstreamStatus: 200, clientStatus: 200 },
  ]);
  await assertExactlyOnce(r.direct, r.table, r.commitId);
});
