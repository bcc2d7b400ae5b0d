/**
 * The registry adapter's settings (converter keys → options) and what goes on the wire: basic and bearer
 * auth headers, a URL path kept, user info stripped from the URL, and no secret in any error. A local
 * HTTP server stands in for the registry only to observe requests; the real registry is exercised in
 * test/integration/registry-resolver.test.ts.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ConfigError, RetriableError } from '../../../src/core/errors.ts';
import { ConfluentSchemaResolver, registryOptionsFromConverterProps } from '../../../src/decode/registry/schema-registry.ts';

describe('registryOptionsFromConverterProps', () => {
  test('URL list with a path; user info from the URL (Confluent default source URL) is stripped', () => {
    const o = registryOptionsFromConverterProps({ 'schema.registry.url': 'http://u:p%40ss@h1:8081/apis/ccompat/v7/, http://h2:8081' });
    assert.deepStrictEqual(o.urls, ['http://h1:8081/apis/ccompat/v7', 'http://h2:8081']);
    assert.deepStrictEqual(o.auth, { kind: 'basic', username: 'u', password: 'p@ss' });
  });

  test('USER_INFO, bearer, timeouts; errors name keys, never values', () => {
    const base = { 'schema.registry.url': 'http://h:1' };
    assert.deepStrictEqual(registryOptionsFromConverterProps({ ...base, 'basic.auth.credentials.source': 'USER_INFO', 'basic.auth.user.info': 'me:pa:ss' }).auth, { kind: 'basic', username: 'me', password: 'pa:ss' });
    assert.deepStrictEqual(registryOptionsFromConverterProps({ ...base, 'bearer.auth.credentials.source': 'STATIC_TOKEN', 'bearer.auth.token': 'tok' }).auth, { kind: 'bearer', token: 'tok' });
    const t = registryOptionsFromConverterProps({ ...base, 'http.read.timeout.ms': '5000', 'icefloe.registry.unknown-id-grace-ms': '0' });
    assert.equal(t.requestTimeoutMs, 5000);
    assert.equal(t.unknownIdGraceMs, 0);
    for (const bad of [
      {},
      { 'schema.registry.url': 'ftp://h' },
      { ...base, 'basic.auth.credentials.source': 'USER_INFO', 'basic.auth.user.info': 'no-colon-secret' },
      { ...base, 'basic.auth.credentials.source': 'SASL_INHERIT' },
      { ...base, 'bearer.auth.credentials.source': 'OAUTHBEARER', 'bearer.auth.token': 'secret-token' },
      { ...base, 'http.read.timeout.ms': 'soon' },
    ]) {
      assert.throws(() => registryOptionsFromConverterProps(bad), (e: unknown) => e instanceof ConfigError && !/secret/.test(e.message));
    }
  });
});

describe('ConfluentSchemaResolver on the wire', () => {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  let status = 200;
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
    res.end(status === 200 ? JSON.stringify({ schema: '"long"' }) : JSON.stringify({ error_code: 50001, message: 'boom' }));
  });
  let base = '';
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.close();
  });

  test('basic auth from the URL: Authorization header sent, path kept, AVRO by default', async () => {
    seen.length = 0;
    const r = new ConfluentSchemaResolver(registryOptionsFromConverterProps({ 'schema.registry.url': `${base.replace('://', '://alice:pw@')}/apis/ccompat/v7` }));
    const got = await r.byId(12);
    assert.deepStrictEqual(got, { id: 12, type: 'AVRO', schema: '"long"' });
    assert.equal(seen[0]?.url, '/apis/ccompat/v7/schemas/ids/12');
    assert.equal(seen[0]?.headers.authorization, `Basic ${Buffer.from('alice:pw').toString('base64')}`);
  });

  test('bearer token header; a 5xx is a RetriableError without the token in it', async () => {
    seen.length = 0;
    const r = new ConfluentSchemaResolver({ urls: [base], auth: { kind: 'bearer', token: 'tok-secret' }, retries: 0 });
    await r.byId(1);
    assert.equal(seen[0]?.headers.authorization, 'Bearer tok-secret');
    status = 503;
    try {
      await assert.rejects(r.byId(2), (e: unknown) => e instanceof RetriableError && e.context['status'] === 503 && !JSON.stringify([e.message, e.context]).includes('tok-secret'));
    } finally {
      status = 200;
    }
  });

  test('a registry that does not answer times out into a RetriableError', async () => {
    const silent = createServer(() => {}); // accepts, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const r = new ConfluentSchemaResolver({ urls: [url], requestTimeoutMs: 200, retries: 0 });
      const t0 = Date.now();
      await assert.rejects(r.byId(1), RetriableError);
      assert.ok(Date.now() - t0 < 5000, 'the per-request timeout applies');
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  test('401 is a ConfigError (credentials are configuration)', async () => {
    status = 401;
    try {
      const r = new ConfluentSchemaResolver({ urls: [base], auth: { kind: 'basic', username: 'u', password: 'wrong-pw' } });
      await assert.rejects(r.byId(3), (e: unknown) => e instanceof ConfigError && !e.message.includes('wrong-pw'));
    } finally {
      status = 200;
    }
  });
});
