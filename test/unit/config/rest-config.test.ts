/**
 * The REST API's worker keys (src/config/rest-config.ts through validateWorkerConfig): listeners as
 * Connect parses them, the advertised address, CORS, header rules, admin endpoints, topic tracking, the
 * basic authentication file and the HTTPS key material (PKCS12 or PEM; JKS refused with the way out).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseListener } from '../../../src/config/rest-config.ts';
import { validateWorkerConfig } from '../../../src/config/worker-config.ts';

const BASE_DIR = '/srv/icefloe';

function rest(props: Record<string, string>) {
  const v = validateWorkerConfig(props, { baseDir: BASE_DIR });
  assert.deepEqual(Object.fromEntries(v.errors), {});
  return (v.config ?? assert.fail('no config')).rest;
}

function errors(props: Record<string, string>): Record<string, readonly string[]> {
  return Object.fromEntries(validateWorkerConfig(props, { baseDir: BASE_DIR }).errors);
}

test('defaults: one http listener on every interface at 8083, tracking on, admin endpoints on, no auth', () => {
  const r = rest({});
  assert.deepEqual(r.listeners, [{ protocol: 'http', host: '', port: 8083 }]);
  assert.equal(r.advertisedHostName, null);
  assert.equal(r.advertisedPort, null);
  assert.equal(r.advertisedListener, null);
  assert.deepEqual(r.cors, { allowOrigin: '', allowMethods: '' });
  assert.deepEqual(r.responseHeaders, []);
  assert.equal(r.adminEndpoints, true);
  assert.deepEqual(r.topicTracking, { enabled: true, allowReset: true });
  assert.equal(r.basicAuthFile, null);
});

test('listeners: http and https, upper-case protocols, IPv6 in brackets, port 0; bad ones name the listener', () => {
  assert.deepEqual(parseListener('HTTP://myhost:8083'), { protocol: 'http', host: 'myhost', port: 8083 });
  assert.deepEqual(parseListener('https://[::1]:0'), { protocol: 'https', host: '::1', port: 0 });
  assert.deepEqual(parseListener('http://:8083'), { protocol: 'http', host: '', port: 8083 });
  assert.match(parseListener('ftp://h:1') as string, /protocol must be either "http" or "https"/);
  assert.match(parseListener('localhost:8083') as string, /doesn't have the right format \(protocol:\/\/hostname:port\)/);
  assert.match(parseListener('http://h:70000') as string, /port must be 0\.\.65535/);
  const r = rest({ listeners: 'http://127.0.0.1:0, http://localhost:8084', 'rest.advertised.host.name': 'w1', 'rest.advertised.port': '9000', 'rest.advertised.listener': 'HTTP' });
  assert.deepEqual(r.listeners.map((l) => `${l.host}:${l.port}`), ['127.0.0.1:0', 'localhost:8084']);
  assert.equal(r.advertisedHostName, 'w1');
  assert.equal(r.advertisedPort, 9000);
  assert.equal(r.advertisedListener, 'http');
  assert.match(errors({ listeners: 'nope' }).listeners?.[0] ?? '', /right format/);
  assert.match(errors({ listeners: '' }).listeners?.[0] ?? '', /at least one URL is expected/);
  assert.ok(errors({ 'rest.advertised.listener': 'ftp' })['rest.advertised.listener']);
});

test('CORS, header rules, admin.listeners empty, topic tracking and the auth file (relative to the working directory)', () => {
  const r = rest({
    'access.control.allow.origin': 'https://*.example.com',
    'access.control.allow.methods': 'GET,PUT',
    'response.http.headers.config': 'set X-Frame-Options: DENY,"add Cache-Control: no-cache, no-store",setDate Expires: 31540000000',
    'admin.listeners': '',
    'topic.tracking.enable': 'true',
    'topic.tracking.allow.reset': 'false',
    'icefloe.rest.basic-auth.file': 'secrets/users.properties',
  });
  assert.deepEqual(r.cors, { allowOrigin: 'https://*.example.com', allowMethods: 'GET,PUT' });
  assert.deepEqual(r.responseHeaders, [
    { action: 'set', name: 'X-Frame-Options', value: 'DENY' },
    { action: 'add', name: 'Cache-Control', value: 'no-cache, no-store' },
    { action: 'setDate', name: 'Expires', value: '31540000000' },
  ]);
  assert.equal(r.adminEndpoints, false);
  assert.deepEqual(r.topicTracking, { enabled: true, allowReset: false });
  assert.equal(r.basicAuthFile, '/srv/icefloe/secrets/users.properties');
  assert.match(errors({ 'response.http.headers.config': 'replace X: y' })['response.http.headers.config']?.[0] ?? '', /Invalid header config action: 'replace'/);
  assert.match(errors({ 'response.http.headers.config': 'set X-Y' })['response.http.headers.config']?.[0] ?? '', /Expected: '\[header name\]:\[header value\]'/);
  assert.match(errors({ 'response.http.headers.config': 'set X Y: z' })['response.http.headers.config']?.[0] ?? '', /cannot contain whitespace/);
});

test('https: a PKCS12 or PEM keystore from listeners.https.ssl.* (all or nothing) or ssl.*; JKS and client auth refused', () => {
  const p12 = rest({ listeners: 'https://:8443', 'ssl.keystore.location': 'ks.p12', 'ssl.keystore.password': 'pw', 'ssl.keystore.type': 'pkcs12' });
  assert.equal(p12.tls.prefix, '');
  assert.equal(p12.tls.keystoreType, 'PKCS12');
  assert.equal(p12.tls.keystoreLocation, '/srv/icefloe/ks.p12');
  assert.equal(p12.tls.keystorePassword?.reveal(), 'pw');
  assert.ok(!JSON.stringify(p12.tls).includes('pw'), 'the password prints as [hidden]');
  // Any listeners.https.* key wins over every ssl.* key (Connect's valuesWithPrefixAllOrNothing).
  const scoped = rest({
    listeners: 'https://:8443',
    'ssl.keystore.location': 'kafka-client.p12',
    'listeners.https.ssl.keystore.type': 'PEM',
    'listeners.https.ssl.keystore.key': '-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----',
    'listeners.https.ssl.keystore.certificate.chain': '-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----',
    'listeners.https.ssl.enabled.protocols': 'TLSv1.3',
  });
  assert.equal(scoped.tls.prefix, 'listeners.https.');
  assert.equal(scoped.tls.keystoreLocation, null);
  assert.equal(scoped.tls.keystoreType, 'PEM');
  assert.deepEqual(scoped.tls.enabledProtocols, ['TLSv1.3']);
  const v = validateWorkerConfig({ listeners: 'https://:8443', 'ssl.keystore.key': '-----BEGIN PRIVATE KEY-----\nsecret-key\n', 'ssl.keystore.type': 'PEM', 'ssl.keystore.certificate.chain': 'x' }, { baseDir: BASE_DIR });
  assert.ok(!JSON.stringify(v.redacted()).includes('secret-key'), 'a PEM key is redacted in the worker config');

  assert.match(errors({ listeners: 'https://:8443' })['ssl.keystore.location']?.[0] ?? '', /needs a keystore/);
  assert.match(errors({ listeners: 'https://:8443', 'ssl.keystore.type': 'JKS', 'ssl.keystore.location': 'k.jks' })['ssl.keystore.type']?.[0] ?? '', /JKS keystores are not supported .*keytool -importkeystore .*PKCS12/);
  assert.match(errors({ listeners: 'https://:8443', 'ssl.keystore.type': 'PEM', 'ssl.keystore.key': 'k' })['ssl.keystore.key']?.[0] ?? '', /go together/);
  assert.match(errors({ listeners: 'https://:8443', 'ssl.keystore.location': 'k.p12', 'ssl.client.auth': 'required' })['ssl.client.auth']?.[0] ?? '', /not supported yet/);
  assert.match(errors({ listeners: 'https://:8443', 'ssl.keystore.location': 'k.p12', 'ssl.enabled.protocols': 'TLSv1.1' })['ssl.enabled.protocols']?.[0] ?? '', /TLSv1\.1 is not offered/);
  // Only an https listener needs key material: the Kafka clients' ssl.* keys alone are fine.
  assert.deepEqual(errors({ 'ssl.keystore.type': 'JKS', 'ssl.keystore.location': 'client.jks' }), {});
});
