/**
 * The REST pipeline around the endpoints: `GET /` and `/health`, Jersey's routing answers (404, 405,
 * 415, trailing slashes, HEAD, OPTIONS), malformed JSON, the request timeout, how refusals and foreign
 * errors become statuses (never a stack trace or a password), basic authentication, CORS and static
 * response headers, and the node:http handler being the same pipeline as inject().
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RequestRefused } from '../../../src/core/errors.ts';
import { basicAuthFromProperties } from '../../../src/rest/auth.ts';
import { SINK_CLASS } from './fake-herder.ts';
import { assertError, rig } from './rig.ts';

test('GET / answers ServerInfo; /health maps healthy 200, starting 503, unhealthy 500, and no answer in time to 500', { timeout: 10_000 }, async () => {
  const r = rig({ healthTimeoutMs: 50 });
  const root = await r.req('GET', '/');
  assert.equal(root.status, 200);
  assert.equal(root.headers['content-type'], 'application/json');
  assert.deepEqual(root.json, { version: '3.9.0', commit: '0123456789abcdef', kafka_cluster_id: 'cluster-1' });
  assert.deepEqual((await r.req('GET', '/health')).json, { status: 'healthy', message: 'Worker has completed startup and is ready to handle requests.' });
  r.herder.healthAnswer = { status: 'starting', message: 'Worker is still starting up.' };
  assert.equal((await r.req('GET', '/health/')).status, 503);
  r.herder.healthAnswer = { status: 'unhealthy', message: 'Worker was unable to handle this request and may be unable to handle other requests.' };
  assert.equal((await r.req('GET', '/health')).status, 500);
  r.herder.hang = new Promise<never>(() => undefined);
  const hung = await r.req('GET', '/health');
  assert.equal(hung.status, 500);
  assert.deepEqual(hung.json, { status: 'unhealthy', message: 'Worker was unable to handle this request and may be unable to handle other requests.' });
});

test('routing: unknown path 404, wrong method 405 with Allow, trailing and doubled slashes accepted, HEAD and OPTIONS', async () => {
  const r = rig();
  r.herder.add('orders');
  assertError(await r.req('GET', '/nope'), 404, 'HTTP 404 Not Found');
  assertError(await r.req('GET', '/connectors/orders/nope'), 404, 'HTTP 404 Not Found');
  assertError(await r.req('GET', '/connectors/orders/tasks-config'), 404, 'HTTP 404 Not Found'); // removed in Kafka 4.0
  const wrong = await r.req('DELETE', '/connectors');
  assertError(wrong, 405, 'HTTP 405 Method Not Allowed');
  assert.equal(wrong.headers.allow, 'HEAD,GET,OPTIONS,POST');
  assertError(await r.req('POST', '/connectors/orders/pause'), 405, 'HTTP 405 Method Not Allowed');
  assertError(await r.req('POST', '/health'), 405, 'HTTP 405 Method Not Allowed');
  assert.equal((await r.req('PUT', '/connectors/orders/pause/')).status, 202);
  assert.equal((await r.req('GET', '//connectors//orders/')).status, 200);
  const head = await r.req('HEAD', '/connectors/orders');
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  // Jersey's own OPTIONS answer (observed on 4.3.1): 200, text/plain, the methods in this order.
  const options = await r.server.inject({ method: 'OPTIONS', url: '/connectors/orders/config' });
  assert.deepEqual(options, { status: 200, headers: { allow: 'HEAD,GET,OPTIONS,PUT,PATCH', 'content-type': 'text/plain' }, body: 'HEAD, GET, OPTIONS, PUT, PATCH' });
  assert.equal((await r.server.inject({ method: 'OPTIONS', url: '/health' })).body, 'HEAD, GET, OPTIONS');
  assertError(await r.req('OPTIONS', '/nope'), 404, 'HTTP 404 Not Found');
});

test('Content-Type: another media type is 415 on every JSON resource, body or not (curl -d sends form encoding); malformed JSON is 500', async () => {
  const r = rig();
  const create = JSON.stringify({ name: 'a', config: { 'connector.class': SINK_CLASS } });
  assertError(await r.req('POST', '/connectors', create, { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'HTTP 415 Unsupported Media Type');
  assertError(await r.req('PUT', '/connector-plugins/IcebergSinkConnector/config/validate', '{}', { 'content-type': 'text/plain' }), 415, 'HTTP 415 Unsupported Media Type');
  assert.equal(r.herder.calls.length, 0, 'a 415 reaches no herder call');
  assert.equal((await r.req('POST', '/connectors', create, { 'content-type': 'application/json; charset=utf-8' })).status, 201);
  assert.equal((await r.req('PUT', '/connectors/b/config', `{"connector.class":"${SINK_CLASS}"}`, { 'content-type': '' })).status, 201);
  // Jersey matches the header, not the body (observed on 4.3.1): a bodiless PUT or a GET with text/plain is 415 too.
  assertError(await r.req('PUT', '/connectors/a/pause', undefined, { 'content-type': 'text/plain' }), 415, 'HTTP 415 Unsupported Media Type');
  assertError(await r.req('GET', '/admin/loggers', undefined, { 'content-type': 'application/vnd.foo+json' }), 415, 'HTTP 415 Unsupported Media Type');
  for (const type of ['application/*', '*/*', 'Application/JSON']) assert.equal((await r.req('GET', '/connectors', undefined, { 'content-type': type })).status, 200, type);
  // GET / and /health consume nothing: no 415 there.
  assert.equal((await r.req('GET', '/', undefined, { 'content-type': 'text/plain' })).status, 200);
  assert.equal((await r.req('GET', '/health', undefined, { 'content-type': 'text/plain' })).status, 200);
  assertError(await r.req('GET', '/connectors', undefined, { 'content-type': 'garbage' }), 400, 'HTTP 400 Bad Request');
  assertError(await r.req('POST', '/connectors', '{"name": "x", config: }'), 500, /^Malformed JSON in the request body: /);
  assertError(await r.req('PUT', '/connectors/a/config', '{'), 500, /^Malformed JSON/);
});

test('a herder call that does not answer in time is 500 "Request timed out"', { timeout: 10_000 }, async () => {
  const r = rig({ requestTimeoutMs: 30 });
  r.herder.add('orders');
  r.herder.hang = new Promise<never>(() => undefined);
  for (const [method, url, body] of [
    ['GET', '/', undefined],
    ['POST', '/connectors', { name: 'x', config: { 'connector.class': SINK_CLASS } }],
    ['PUT', '/connectors/orders/stop', undefined],
    ['DELETE', '/connectors/orders', undefined],
    ['GET', '/connectors/orders/offsets', undefined],
  ] as const) {
    assertError(await r.req(method, url, body), 500, 'Request timed out');
  }
});

test('connector requests wait until the herder has loaded the stored connectors; the root, /health and plugins do not', { timeout: 10_000 }, async () => {
  const r = rig();
  let loaded!: () => void;
  r.herder.readyPromise = new Promise<void>((resolve) => (loaded = resolve));
  r.herder.healthAnswer = { status: 'starting', message: 'Worker is still starting up.' };
  const create = r.req('POST', '/connectors', { name: 'x', config: { 'connector.class': SINK_CLASS } });
  const list = r.req('GET', '/connectors');
  assert.equal((await r.req('GET', '/')).status, 200);
  assert.equal((await r.req('GET', '/health')).status, 503);
  assert.equal((await r.req('GET', '/connector-plugins')).status, 200);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(r.herder.calls.map(([m]) => m).filter((m) => !['serverInfo', 'health', 'plugins'].includes(m)), [], 'no connector call reached the herder before it was ready');
  // The connector the config topic holds is known by then: the create is refused, the list shows it.
  r.herder.add('x');
  loaded();
  assertError(await create, 409, 'Connector x already exists');
  assert.deepEqual((await list).json, ['x']);
  // Never ready: the request times out as any herder call does.
  const late = rig({ requestTimeoutMs: 30 });
  late.herder.readyPromise = new Promise<void>(() => undefined);
  assertError(await late.req('GET', '/connectors'), 500, 'Request timed out');
});

test('refusals map to statuses by reason; a foreign error is 500 with its message only, URL passwords masked', async () => {
  const r = rig();
  r.herder.add('orders');
  const cases: [RequestRefused, number][] = [
    [new RequestRefused('conflict', 'Cannot complete request momentarily due to stale configuration (typically caused by a concurrent config change)'), 409],
    [new RequestRefused('already-exists', 'Connector orders already exists'), 409],
    [new RequestRefused('bad-request', 'bad'), 400],
    [new RequestRefused('forbidden', 'no'), 403],
    [new RequestRefused('not-found', 'gone'), 404],
    [new RequestRefused('timeout', 'Request timed out'), 500],
    [new RequestRefused('failed', 'Request cannot be completed because a rebalance is expected'), 500],
  ];
  for (const [e, status] of cases) {
    r.herder.throwNext = e;
    assertError(await r.req('GET', '/connectors/orders'), status, e.message);
  }
  r.herder.throwNext = new Error('catalog http://admin:hunter2@catalog:8181 unreachable');
  const a = await r.req('GET', '/connectors/orders/config');
  assertError(a, 500, 'catalog http://admin:[hidden]@catalog:8181 unreachable');
  assert.ok(!a.body.includes('hunter2') && !a.body.includes('    at '), a.body);
});

test('plugins: connectorsOnly defaults to true; plugin config; unknown plugin 404', async () => {
  const r = rig();
  assert.deepEqual((await r.req('GET', '/connector-plugins')).json, [{ class: SINK_CLASS, type: 'sink', version: '1.9.2' }]);
  assert.deepEqual(r.herder.calls.at(-1), ['plugins', true]);
  assert.equal(((await r.req('GET', '/connector-plugins/?connectorsOnly=false')).json as unknown[]).length, 2);
  assert.deepEqual(r.herder.calls.at(-1), ['plugins', false]);
  // An empty value takes the default, any other value but "true" is false (observed on 4.3.1).
  await r.req('GET', '/connector-plugins?connectorsOnly=');
  assert.deepEqual(r.herder.calls.at(-1), ['plugins', true]);
  await r.req('GET', '/connector-plugins?connectorsOnly=nope');
  assert.deepEqual(r.herder.calls.at(-1), ['plugins', false]);
  const config = await r.req('GET', '/connector-plugins/IcebergSinkConnector/config');
  assert.equal((config.json as { name: string }[])[0]?.name, 'tasks.max');
  assertError(await r.req('GET', '/connector-plugins/FileStreamSource/config'), 404, 'Unknown plugin FileStreamSource.');
});

test('validate: 200 even with errors; connector.class must name the path\'s plugin (alias rule); nulls become per-key errors', async () => {
  const r = rig();
  const ok = await r.req('PUT', '/connector-plugins/IcebergSinkConnector/config/validate', { 'connector.class': SINK_CLASS, 'tasks.max': 'x', topics: 'getPlugins' });
  assert.equal(ok.status, 200);
  assert.equal((ok.json as { error_count: number }).error_count, 1);
  // The full class, the simple name and the alias without "Connector" all name the same plugin.
  for (const plugin of [SINK_CLASS, 'IcebergSinkConnector', 'IcebergSink']) {
    assert.equal((await r.req('PUT', `/connector-plugins/${plugin}/config/validate/`, { 'connector.class': SINK_CLASS })).status, 200, plugin);
  }
  assertError(
    await r.req('PUT', '/connector-plugins/FileStreamSink/config/validate', { 'connector.class': SINK_CLASS }),
    400,
    `Included connector type ${SINK_CLASS} does not match request type FileStreamSink`,
  );
  const nulls = await r.req('PUT', '/connector-plugins/IcebergSink/config/validate', { 'connector.class': SINK_CLASS, 'tasks.max': null, other: null });
  const infos = nulls.json as { error_count: number; configs: { definition: unknown; value: { name: string; value: unknown; errors: string[] } }[] };
  assert.equal(infos.error_count, 2);
  assert.deepEqual(infos.configs.find((c) => c.value.name === 'tasks.max')?.value.errors, ['Null value can not be supplied as the configuration value.']);
  assert.deepEqual(infos.configs.find((c) => c.value.name === 'other'), {
    definition: null,
    value: { name: 'other', value: null, recommended_values: [], errors: ['Null value can not be supplied as the configuration value.'], visible: true },
  });
  assert.deepEqual(r.herder.calls.at(-1)?.[2], { 'connector.class': SINK_CLASS }, 'the herder gets no nulls');
});

test('loggers: list (trailing slash), one, PUT worker scope 200 with names, cluster scope 204; missing level 400, bad level 404', async () => {
  const r = rig();
  assert.deepEqual((await r.req('GET', '/admin/loggers/')).json, { root: { level: 'INFO', last_modified: null } });
  assert.deepEqual((await r.req('GET', '/admin/loggers/root')).json, { level: 'INFO', last_modified: null });
  assertError(await r.req('GET', '/admin/loggers/org.nope'), 404, 'Logger org.nope not found.');
  const worker = await r.req('PUT', '/admin/loggers/org.apache.kafka.connect', { level: 'debug' });
  assert.equal(worker.status, 200);
  assert.deepEqual(worker.json, ['org.apache.kafka.connect']);
  assert.deepEqual(r.herder.calls.at(-1), ['setLoggerLevel', 'org.apache.kafka.connect', 'debug', 'worker']);
  const cluster = await r.req('PUT', '/admin/loggers/root?scope=CLUSTER', { level: 'WARN' });
  assert.equal(cluster.status, 204);
  assert.equal(cluster.body, '');
  assert.deepEqual(r.herder.calls.at(-1), ['setLoggerLevel', 'root', 'WARN', 'cluster']);
  assert.equal((await r.req('PUT', '/admin/loggers/root?scope=galaxy', { level: 'INFO' })).status, 200, 'unknown scopes fall back to worker');
  assertError(await r.req('PUT', '/admin/loggers/root', {}), 400, "Desired 'level' parameter was not specified in request.");
  assertError(await r.req('PUT', '/admin/loggers/root', { level: 'LOUD' }), 404, "invalid log level 'LOUD'.");
  const noAdmin = rig({ adminEndpoints: false });
  assertError(await noAdmin.req('GET', '/admin/loggers'), 404, 'HTTP 404 Not Found');
});

test('basic authentication guards every route, / and /health included; 401 carries WWW-Authenticate', async () => {
  const auth = basicAuthFromProperties('# Connect PropertyFileLoginModule format\nalice: s3cret\nbob=pw:with:colons\n', 'users.properties');
  const r = rig({ auth });
  const basic = (user: string, pw: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${user}:${pw}`).toString('base64')}` });
  for (const url of ['/', '/health', '/connectors', '/nope']) {
    const a = await r.req('GET', url);
    assertError(a, 401, 'User cannot access the resource.');
    assert.equal(a.headers['www-authenticate'], 'Basic realm="Icefloe", charset="UTF-8"');
  }
  assertError(await r.req('GET', '/connectors', undefined, basic('alice', 'wrong')), 401, 'User cannot access the resource.');
  assertError(await r.req('GET', '/connectors', undefined, basic('mallory', 's3cret')), 401, 'User cannot access the resource.');
  assertError(await r.req('GET', '/connectors', undefined, { authorization: 'Bearer abc' }), 401, 'User cannot access the resource.');
  assert.equal((await r.req('GET', '/connectors', undefined, basic('alice', 's3cret'))).status, 200);
  assert.equal((await r.req('GET', '/', undefined, basic('bob', 'pw:with:colons'))).status, 200);
  assert.equal(r.herder.calls.filter((c) => c[0] === 'connectorNames').length, 1, 'refused requests reach no herder call');
  assert.throws(() => basicAuthFromProperties('# nobody\n', 'empty.properties'), /empty\.properties: the basic authentication file names no users/);
});

test('CORS (Jetty CrossOriginFilter defaults) and response.http.headers.config rules', async () => {
  const r = rig({
    cors: { allowOrigin: 'https://*.example.com', allowMethods: '' },
    responseHeaders: [
      { action: 'set', name: 'X-Frame-Options', value: 'DENY' },
      { action: 'add', name: 'Cache-Control', value: 'no-cache' },
      { action: 'add', name: 'Cache-Control', value: 'no-store' },
      { action: 'setDate', name: 'Expires', value: '1000' },
    ],
    now: () => Date.UTC(2026, 11, 2, 12, 0, 0),
  });
  const a = await r.req('GET', '/connectors', undefined, { origin: 'https://ui.example.com' });
  assert.equal(a.headers['access-control-allow-origin'], 'https://ui.example.com');
  assert.equal(a.headers['access-control-allow-credentials'], 'true');
  assert.equal(a.headers['x-frame-options'], 'DENY');
  assert.equal(a.headers['cache-control'], 'no-cache, no-store');
  assert.equal(a.headers.expires, 'Wed, 02 Dec 2026 12:00:01 GMT');
  assert.equal((await r.req('GET', '/connectors', undefined, { origin: 'https://evil.test' })).headers['access-control-allow-origin'], undefined);
  const preflight = await r.req('OPTIONS', '/connectors', undefined, { origin: 'https://ui.example.com', 'access-control-request-method': 'POST' });
  assert.equal(preflight.headers['access-control-allow-methods'], 'GET,POST,HEAD');
  assert.equal(preflight.headers['access-control-max-age'], '1800');
  const put = await r.req('OPTIONS', '/connectors', undefined, { origin: 'https://ui.example.com', 'access-control-request-method': 'PUT' });
  assert.equal(put.headers['access-control-allow-methods'], undefined, 'PUT is not among the default methods');
  // A preflight carries no credentials: it is answered with auth on too.
  const authed = rig({ cors: { allowOrigin: '*', allowMethods: 'GET,PUT' }, auth: basicAuthFromProperties('a: b', 'f') });
  const pre = await authed.req('OPTIONS', '/connectors/x/config', undefined, { origin: 'http://x', 'access-control-request-method': 'PUT' });
  assert.equal(pre.status, 200);
  assert.equal(pre.headers['access-control-allow-methods'], 'GET,PUT');
});

test('the node:http handler is the same pipeline: status, headers, body, a Content-Length, 413 for huge bodies', async () => {
  const r = rig({ maxBodyBytes: 1024 });
  r.herder.add('orders');
  const server = createServer(r.server.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = await fetch(`${base}/connectors/orders/status`);
    assert.equal(get.status, 200);
    assert.equal(get.headers.get('content-type'), 'application/json');
    assert.equal(((await get.json()) as { name: string }).name, 'orders');
    const put = await fetch(`${base}/connectors/new/config`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ 'connector.class': SINK_CLASS }) });
    assert.equal(put.status, 201);
    assert.equal(put.headers.get('location'), `${base}/connectors/new`);
    const big = await fetch(`${base}/connectors`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(4096) });
    assert.equal(big.status, 413);
    assert.deepEqual(await big.json(), { error_code: 413, message: 'The request body is larger than 1024 bytes' });
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
