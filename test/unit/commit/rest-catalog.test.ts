/**
 * The REST catalog client against an in-process catalog (test/helpers/mini-rest-catalog.ts): paths with
 * the server's prefix and namespace separator, the JSON both ways (63-bit ids intact), and above all the
 * translation of every failure into the port's error contract — which decides whether a commit may be
 * resent — plus bearer and OAuth2 authentication (token reuse, refresh before expiry, one retry on 401,
 * no secret in any error).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  CommitConflictError,
  CommitStateUnknownError,
  ConfigError,
  RetriableError,
} from '../../../src/core/errors.ts';
import { parseJson } from '../../../src/core/json.ts';
import { COMMIT_ID_KEY, commitWithRetry } from '../../../src/commit/commit-retry.ts';
import { NamespaceAlreadyExistsError, NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError } from '../../../src/commit/port.ts';
import type { TableIdentifier } from '../../../src/commit/port.ts';
import { RestCatalog, uuidV7 } from '../../../src/commit/rest/catalog.ts';
import type { RestCatalogConfig } from '../../../src/commit/rest/catalog.ts';
import type { Schema } from '../../../src/commit/model.ts';
import { MiniRestCatalog } from '../../helpers/mini-rest-catalog.ts';
import type { MiniRestOptions } from '../../helpers/mini-rest-catalog.ts';
import { FakeClock } from '../../helpers/clock.ts';
import { commitIds, emptyAppend } from '../../helpers/commits.ts';

const schema: Schema = { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'long' } }] };
const T: TableIdentifier = { namespace: ['db'], name: 'events' };

async function withCatalog(
  options: MiniRestOptions,
  config: Partial<RestCatalogConfig>,
  fn: (server: MiniRestCatalog, catalog: RestCatalog) => Promise<void>,
): Promise<void> {
  const server = await new MiniRestCatalog(options).start();
  const catalog = new RestCatalog({ uri: server.uri, clock: new FakeClock(), requestTimeoutMs: 2000, ...config });
  try {
    await fn(server, catalog);
  } finally {
    await catalog.close();
    await server.stop();
  }
}

async function withTable(server: MiniRestCatalog, catalog: RestCatalog): Promise<void> {
  void server;
  await catalog.createNamespace(['db']);
  await catalog.createTable(T, { schema });
}

test('config: the prefix and the %1F separator shape every path; the warehouse is asked for', async () => {
  await withCatalog({ overrides: { prefix: 'ws/main' } }, { warehouse: 's3://bucket/wh' }, async (server, catalog) => {
    await catalog.createNamespace(['a', 'b c']);
    assert.equal(await catalog.namespaceExists(['a', 'b c']), true);
    await catalog.createTable({ namespace: ['a', 'b c'], name: 't' }, { schema });
    const config = server.requests[0];
    assert.equal(config?.path, '/v1/config');
    assert.equal(config?.query.get('warehouse'), 's3://bucket/wh');
    assert.deepEqual(
      server.apiRequests().map((r) => `${r.method} ${r.path}`),
      ['POST /v1/ws/main/namespaces', 'GET /v1/ws/main/namespaces/a%1Fb%20c', 'POST /v1/ws/main/namespaces/a%1Fb%20c/tables'],
    );
    assert.equal(server.requests.filter((r) => r.path === '/v1/config').length, 1, 'config is fetched once');
  });
});

test('create, load and commit round-trip; 63-bit snapshot ids survive both directions', async () => {
  await withCatalog({}, {}, async (server, catalog) => {
    await withTable(server, catalog);
    const loaded = await catalog.loadTable(T);
    assert.deepEqual(loaded.config, { token: 'vended-secret' });
    // Snapshot ids are random 63-bit numbers: one in 1024 is below 2^53, so commit until one is above.
    let table = loaded;
    const ids: string[] = [];
    let id: bigint | null = null;
    let body = '';
    for (let i = 1; i <= 8 && !(id !== null && id > 2n ** 53n); i++) {
      const append = await emptyAppend(table, `c${i}`);
      table = await catalog.commitTable(T, append.requirements, append.updates);
      ids.push(`c${i}`);
      id = table.metadata.currentSnapshotId;
      body = server.apiRequests().at(-1)?.body ?? '';
    }
    assert.ok(id !== null && id > 2n ** 53n, `snapshot id ${id} exceeds 2^53`);
    assert.match(body, new RegExp(`"snapshot-id":${id}[,}]`), 'sent as a bare JSON integer, every digit');
    assert.deepEqual(parseJson(body) && (parseJson(body) as { identifier: unknown }).identifier, { namespace: ['db'], name: 'events' });
    assert.deepEqual(commitIds(await catalog.loadTable(T)), ids);
  });
});

test('409 on commit is a CommitConflictError (the commit did not happen)', async () => {
  await withCatalog({}, {}, async (server, catalog) => {
    await withTable(server, catalog);
    const base = await catalog.loadTable(T);
    const first = await emptyAppend(base, 'a');
    await catalog.commitTable(T, first.requirements, first.updates);
    const stale = await emptyAppend(base, 'b');
    await assert.rejects(catalog.commitTable(T, stale.requirements, stale.updates), (e: unknown) => {
      assert.ok(e instanceof CommitConflictError);
      assert.match(e.message, /CommitFailedException/);
      return true;
    });
  });
});

test('commit failures after sending are CommitStateUnknownError: 500, 502, 503, 504, 408, reset, time-out', async () => {
  for (const action of [500, 502, 503, 504, 408, 'reset', 'hang'] as const) {
    await withCatalog({}, { requestTimeoutMs: 300 }, async (server, catalog) => {
      await withTable(server, catalog);
      const req = await emptyAppend(await catalog.loadTable(T), 'x');
      server.hooks.push({ method: 'POST', path: /\/tables\/events$/, action: typeof action === 'number' ? { status: action, body: { error: { message: 'boom', type: 'X', code: action } } } : action });
      await assert.rejects(catalog.commitTable(T, req.requirements, req.updates), CommitStateUnknownError, String(action));
      assert.equal(server.apiRequests().filter((r) => r.method === 'POST' && r.path.endsWith('/events')).length, 1, `${action}: never resent by the client`);
    });
  }
});

test('a commit that provably never reached the catalog is RetriableError: connection refused, 429', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const dead = new RestCatalog({ uri: `http://127.0.0.1:${port}`, clock: new FakeClock(), readRetry: { maxAttempts: 2 } });
  await assert.rejects(dead.loadTable(T), RetriableError);
  await withCatalog({}, {}, async (server, catalog) => {
    await withTable(server, catalog);
    const req = await emptyAppend(await catalog.loadTable(T), 'x');
    server.hooks.push({ method: 'POST', path: /\/tables\/events$/, action: { status: 429 } });
    await assert.rejects(catalog.commitTable(T, req.requirements, req.updates), RetriableError);
  });
});

test('reads are retried on 5xx and resets, then give up with RetriableError', async () => {
  await withCatalog({}, { readRetry: { maxAttempts: 3 } }, async (server, catalog) => {
    await withTable(server, catalog);
    server.hooks.push({ method: 'GET', path: /\/tables\/events$/, times: 2, action: { status: 503 } });
    assert.equal((await catalog.loadTable(T)).identifier.name, 'events');
    server.hooks.push({ method: 'GET', path: /\/tables\/events$/, times: 1, action: 'reset' });
    assert.equal((await catalog.loadTable(T)).identifier.name, 'events');
    server.hooks.push({ method: 'GET', path: /\/tables\/events$/, times: 3, action: { status: 500 } });
    await assert.rejects(catalog.loadTable(T), RetriableError);
    assert.equal(server.apiRequests().filter((r) => r.method === 'GET' && r.path.endsWith('/events')).length, 3 + 2 + 3);
  });
});

test('404s name what is missing; 409 on create names what exists; 400 is a ConfigError', async () => {
  await withCatalog({}, {}, async (server, catalog) => {
    await assert.rejects(catalog.loadTable(T), NoSuchNamespaceError);
    await assert.rejects(catalog.createTable(T, { schema }), NoSuchNamespaceError);
    await withTable(server, catalog);
    await assert.rejects(catalog.loadTable({ namespace: ['db'], name: 'nope' }), NoSuchTableError);
    await assert.rejects(catalog.createTable(T, { schema }), TableAlreadyExistsError);
    await assert.rejects(catalog.createNamespace(['db']), NamespaceAlreadyExistsError);
    assert.equal(await catalog.tableExists({ namespace: ['db'], name: 'nope' }), false);
    assert.equal(await catalog.tableExists(T), true);
    assert.equal(await catalog.namespaceExists(['nope']), false);
    server.hooks.push({ method: 'POST', path: /\/tables\/events$/, action: { status: 400, body: { error: { message: 'unknown update', type: 'BadRequestException', code: 400 } } } });
    await assert.rejects(catalog.commitTable(T, [], []), ConfigError);
  });
});

test('HEAD is used for existence checks only when the server lists the endpoint', async () => {
  const endpoints = ['HEAD /v1/{prefix}/namespaces/{namespace}', 'HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}'];
  await withCatalog({ endpoints }, {}, async (server, catalog) => {
    await withTable(server, catalog);
    await catalog.tableExists(T);
    await catalog.namespaceExists(['db']);
    assert.deepEqual(server.apiRequests().slice(-2).map((r) => r.method), ['HEAD', 'HEAD']);
  });
});

test('list calls follow next-page-token', async () => {
  await withCatalog({ pageSize: 2 }, {}, async (server, catalog) => {
    for (const n of ['a', 'b', 'c', 'd', 'e']) await catalog.createNamespace([n]);
    await catalog.createNamespace(['a', 'x']);
    assert.deepEqual(await catalog.listNamespaces(), [['a'], ['b'], ['c'], ['d'], ['e']]);
    assert.deepEqual(await catalog.listNamespaces(['a']), [['a', 'x']]);
    for (const t of ['t1', 't2', 't3']) await catalog.createTable({ namespace: ['b'], name: t }, { schema });
    assert.deepEqual((await catalog.listTables(['b'])).map((i) => i.name), ['t1', 't2', 't3']);
    void server;
  });
});

test('Idempotency-Key is sent (a UUIDv7) only when the server advertises idempotency-key-lifetime', async () => {
  await withCatalog({ idempotencyKeyLifetime: 'PT30M' }, {}, async (server, catalog) => {
    await withTable(server, catalog);
    await catalog.commitTable(T, [], [{ action: 'set-properties', updates: { a: '1' } }]);
    await catalog.commitTable(T, [], [{ action: 'set-properties', updates: { a: '2' } }], { idempotencyKey: 'given-key' });
    const keys = server.apiRequests().filter((r) => r.method === 'POST' && r.path.endsWith('/events')).map((r) => r.headers['idempotency-key']);
    assert.match(String(keys[0]), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(keys[1], 'given-key');
  });
  await withCatalog({}, {}, async (server, catalog) => {
    await withTable(server, catalog);
    await catalog.commitTable(T, [], [{ action: 'set-properties', updates: { a: '1' } }]);
    assert.equal(server.apiRequests().at(-1)?.headers['idempotency-key'], undefined);
  });
  assert.equal(uuidV7(0x0123456789ab).slice(0, 13), '01234567-89ab');
});

test('bearer token: sent on every request; a 401 is a ConfigError naming the status, not the token', async () => {
  const token = 'static-token-SECRET';
  await withCatalog(
    { authorize: (r) => (r.headers.authorization === `Bearer ${token}` ? undefined : { status: 401, body: { error: { message: 'no', type: 'NotAuthorizedException', code: 401 } } }) },
    { auth: { type: 'bearer', token } },
    async (server, catalog) => {
      await withTable(server, catalog);
      assert.ok(server.requests.every((r) => r.headers.authorization === `Bearer ${token}`));
    },
  );
  await withCatalog({ authorize: () => ({ status: 401 }) }, { auth: { type: 'bearer', token } }, async (_server, catalog) => {
    await assert.rejects(catalog.loadTable(T), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.doesNotMatch(JSON.stringify({ m: e.message, c: e.context }), /SECRET/);
      return true;
    });
  });
});

test('OAuth2 client credentials: one token for many calls, refreshed before expiry, re-fetched once on 401', async () => {
  let now = 1_000_000;
  let issued = 0;
  let revoked = new Set<string>();
  const forms: URLSearchParams[] = [];
  const options: MiniRestOptions = {
    authorize: (r) => {
      if (r.path === '/v1/oauth/tokens') return undefined;
      const token = String(r.headers.authorization ?? '').replace(/^Bearer /, '');
      return token.startsWith('tok-') && !revoked.has(token) ? undefined : { status: 401 };
    },
  };
  await withCatalog(options, { auth: { type: 'oauth2', clientId: 'icefloe', clientSecret: 'CLIENT-SECRET', scope: 'catalog', refreshMarginMs: 60_000 }, now: () => now }, async (server, catalog) => {
    server.hooks.push({
      method: 'POST',
      path: /\/v1\/oauth\/tokens$/,
      times: 100,
      action: (r) => {
        forms.push(new URLSearchParams(r.body));
        return { status: 200, body: { access_token: `tok-${++issued}`, token_type: 'bearer', expires_in: 3600 } };
      },
    });
    await withTable(server, catalog);
    await catalog.loadTable(T);
    assert.equal(issued, 1, 'one token for several requests');
    assert.equal(forms[0]?.get('grant_type'), 'client_credentials');
    assert.equal(forms[0]?.get('client_id'), 'icefloe');
    assert.equal(forms[0]?.get('scope'), 'catalog');
    now += 3600_000 - 59_000; // inside the refresh margin
    await catalog.loadTable(T);
    assert.equal(issued, 2, 'refreshed before it expired');
    revoked = new Set(['tok-2']); // the server revokes it early
    await catalog.loadTable(T);
    assert.equal(issued, 3, 'a 401 drops the token and the request is sent once more');
    assert.ok(server.apiRequests().every((r) => r.headers.authorization !== undefined));
    revoked = new Set(Array.from({ length: 100 }, (_, i) => `tok-${i + 1}`)); // now every token is refused
    await assert.rejects(catalog.loadTable(T), ConfigError);
    assert.equal(issued, 4, 'one fresh token per call, then the second 401 is final');
  });
});

test('OAuth2: a refused client is a ConfigError that carries the OAuth error code but never the secret', async () => {
  await withCatalog({}, { auth: { type: 'oauth2', clientId: 'icefloe', clientSecret: 'CLIENT-SECRET' } }, async (server, catalog) => {
    server.hooks.push({ method: 'POST', path: /\/oauth\/tokens$/, times: 5, action: { status: 401, body: { error: 'invalid_client', error_description: 'bad secret CLIENT-SECRET' } } });
    await assert.rejects(catalog.loadTable(T), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.context['oauthError'], 'invalid_client');
      assert.doesNotMatch(JSON.stringify({ m: e.message, c: e.context }), /CLIENT-SECRET/);
      return true;
    });
  });
});

test('committer over REST: a commit applied whose answer is lost (502) resolves to exactly one snapshot', async () => {
  await withCatalog({}, {}, async (server, catalog) => {
    await withTable(server, catalog);
    // The catalog applies the first commit; the client is told 502 (a gateway failing after the fact).
    let lost = 0;
    const flaky = new RestCatalog({
      uri: server.uri,
      clock: new FakeClock(),
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if (init?.method === 'POST' && String(input).endsWith('/tables/events') && lost === 0) {
          lost++;
          await res.text();
          return new Response('{"error":{"message":"bad gateway","type":"X","code":502}}', { status: 502 });
        }
        return res;
      },
    });
    const commitId = 'commit-1';
    const out = await commitWithRetry(flaky, T, { commitId, build: (t) => emptyAppend(t, commitId) }, { clock: new FakeClock() });
    assert.equal(out.status === 'committed' && out.resolvedBy, 'reload');
    const posts = server.apiRequests().filter((r) => r.method === 'POST' && r.path.endsWith('/tables/events'));
    assert.equal(posts.length, 1, 'the commit was sent once, never resent');
    const table = await catalog.loadTable(T);
    assert.deepEqual(commitIds(table), [commitId]);
    assert.equal(table.metadata.snapshots.filter((s) => s.summary[COMMIT_ID_KEY] === commitId).length, 1);
  });
});
