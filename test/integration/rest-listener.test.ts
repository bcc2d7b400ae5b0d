/**
 * The REST listeners on real sockets (src/rest/listeners.ts): worker properties → RestConfig →
 * `startRestListeners` → requests by curl and node's https client.
 * - http on port 0 with basic authentication from a `user: password` file (401 with a challenge, then 200);
 * - https with a self-signed certificate made by `openssl` here: a PKCS12 keystore from `ssl.*`, PEM text
 *   from `listeners.https.ssl.*`, a PEM file; `ssl.enabled.protocols=TLSv1.3` refuses a TLSv1.2 client;
 * - a JKS keystore (made by keytool) refused with the conversion command; a wrong PKCS12 password named;
 * - worker_id from the bound port or from rest.advertised.*; a port in use names the listener.
 *
 * The herder behind the API is the unit tests' in-memory one: what is under test here is the socket, TLS
 * and authentication layer (the herder's own behaviour has its tests; the conformance suite drives both).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { validateWorkerConfig } from '../../src/config/worker-config.ts';
import type { RestConfig } from '../../src/config/worker-config.ts';
import { loadBasicAuth, startRestListeners } from '../../src/rest/listeners.ts';
import { buildServer } from '../../src/rest/server.ts';
import { FakeHerder } from '../unit/rest/fake-herder.ts';

let dir = '';
let certPem = '';

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'icefloe-rest-tls-'));
  // A self-signed certificate for localhost / 127.0.0.1, and the same key as PKCS12 and as one PEM file.
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'pipe' });
  execFileSync('openssl', ['pkcs12', '-export', '-in', join(dir, 'cert.pem'), '-inkey', join(dir, 'key.pem'), '-out', join(dir, 'keystore.p12'), '-passout', 'pass:changeit'], { stdio: 'pipe' });
  certPem = readFileSync(join(dir, 'cert.pem'), 'utf8');
  writeFileSync(join(dir, 'both.pem'), readFileSync(join(dir, 'key.pem'), 'utf8') + certPem);
  writeFileSync(join(dir, 'users.properties'), '# PropertyFileLoginModule format\nadmin: s3cret\n');
});

after(() => rmSync(dir, { recursive: true, force: true }));

function restConfig(props: Record<string, string>): RestConfig {
  const v = validateWorkerConfig(props, { baseDir: dir });
  assert.deepEqual(Object.fromEntries(v.errors), {});
  return (v.config ?? assert.fail('no config')).rest;
}

async function start(props: Record<string, string>) {
  const rest = restConfig(props);
  const herder = new FakeHerder();
  herder.add('orders');
  const server = buildServer(herder, { auth: loadBasicAuth(rest.basicAuthFile), topicTracking: rest.topicTracking });
  const listeners = await startRestListeners(rest, server.handler);
  return { rest, herder, listeners };
}

/** curl in a child process (asynchronously: the listener under test runs in this process's event loop). */
async function curl(...args: string[]): Promise<{ status: number; headers: string; body: string }> {
  const { stdout: out } = await promisify(execFile)('curl', ['-s', '-S', '-D', '-', '-m', '10', ...args], { encoding: 'utf8' });
  const [head = '', body = ''] = out.split(/\r\n\r\n/, 2);
  return { status: Number(/^HTTP\/\S+ (\d+)/.exec(head)?.[1]), headers: head, body };
}

/** GET over https trusting only the test's certificate, optionally pinned to one TLS version. */
function httpsGet(url: string, tls: { maxVersion?: 'TLSv1.2' | 'TLSv1.3' } = {}): Promise<{ status: number; body: string; protocol: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: certPem, ...tls }, (res) => {
      let body = '';
      const protocol = (res.socket as { getProtocol?: () => string | null }).getProtocol?.() ?? '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, protocol }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('http on port 0 with basic auth: 401 with a challenge, then 200 with the right user; worker_id from the bound port', async () => {
  const { listeners } = await start({ listeners: 'http://127.0.0.1:0', 'icefloe.rest.basic-auth.file': 'users.properties' });
  try {
    const url = listeners.urls[0] as string;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(listeners.workerId, `127.0.0.1:${new URL(url).port}`);
    const denied = await curl(`${url}/connectors`);
    assert.equal(denied.status, 401);
    assert.match(denied.headers, /^www-authenticate: Basic realm="Icefloe", charset="UTF-8"$/im);
    assert.deepEqual(JSON.parse(denied.body), { error_code: 401, message: 'User cannot access the resource.' });
    assert.equal((await curl('-u', 'admin:wrong', `${url}/`)).status, 401);
    const ok = await curl('-u', 'admin:s3cret', `${url}/connectors/orders/status`);
    assert.equal(ok.status, 200);
    assert.match(ok.headers, /^content-type: application\/json$/im);
    assert.equal(JSON.parse(ok.body).connector.state, 'RUNNING');
    // curl's -d without -H sends a form: Jersey's 415.
    assert.equal((await curl('-u', 'admin:s3cret', '-X', 'PUT', '-d', '{}', `${url}/connectors/orders/config`)).status, 415);
    assert.equal((await curl('-u', 'admin:s3cret', '-X', 'PUT', `${url}/connectors/orders/pause`)).status, 202);
  } finally {
    await listeners.close();
  }
});

test('https with a PKCS12 keystore from ssl.*: served with the certificate; curl verifies it; worker_id advertised', async () => {
  const { listeners } = await start({
    listeners: 'https://127.0.0.1:0',
    'ssl.keystore.type': 'PKCS12',
    'ssl.keystore.location': 'keystore.p12',
    'ssl.keystore.password': 'changeit',
    'rest.advertised.host.name': 'worker-7.example',
    'rest.advertised.port': '8443',
  });
  try {
    const url = listeners.urls[0] as string;
    assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(listeners.workerId, 'worker-7.example:8443');
    const r = await httpsGet(`${url}/connectors`);
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body), ['orders']);
    assert.equal((await curl('--cacert', join(dir, 'cert.pem'), `${url}/connectors/orders`)).status, 200);
  } finally {
    await listeners.close();
  }
});

test('https with PEM text from listeners.https.ssl.* (the plain ssl.* keys ignored), TLSv1.3 only; and a PEM file', async () => {
  const { listeners } = await start({
    listeners: 'https://127.0.0.1:0,http://127.0.0.1:0',
    'ssl.keystore.location': 'does-not-exist.p12',
    'listeners.https.ssl.keystore.type': 'PEM',
    'listeners.https.ssl.keystore.key': readFileSync(join(dir, 'key.pem'), 'utf8'),
    'listeners.https.ssl.keystore.certificate.chain': certPem,
    'listeners.https.ssl.enabled.protocols': 'TLSv1.3',
  });
  try {
    const [https, http] = listeners.urls as [string, string];
    const r = await httpsGet(`${https}/`);
    assert.equal(r.status, 200);
    assert.equal(r.protocol, 'TLSv1.3');
    await assert.rejects(httpsGet(`${https}/`, { maxVersion: 'TLSv1.2' }), /protocol|version|alert/i);
    // With an http listener present, Connect advertises http.
    assert.equal(listeners.workerId, `127.0.0.1:${new URL(http).port}`);
  } finally {
    await listeners.close();
  }
  const file = await start({ listeners: 'https://127.0.0.1:0', 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': join(dir, 'both.pem') });
  try {
    assert.equal((await httpsGet(`${file.listeners.urls[0] as string}/connectors`)).status, 200);
  } finally {
    await file.listeners.close();
  }
});

test('refused at start: a JKS keystore (with the keytool command to convert it), a wrong PKCS12 password, a port in use', async () => {
  const jks = join(dir, 'keystore.jks');
  execFileSync('keytool', ['-genkeypair', '-alias', 'rest', '-keyalg', 'RSA', '-keysize', '2048', '-dname', 'CN=localhost', '-validity', '1', '-keystore', jks, '-storetype', 'JKS', '-storepass', 'changeit', '-keypass', 'changeit'], { stdio: 'pipe' });
  // ssl.keystore.type unset is Kafka's default (JKS), under which Java also reads PKCS12 files: the file decides.
  const rest = restConfig({ listeners: 'https://127.0.0.1:0', 'ssl.keystore.location': 'keystore.jks', 'ssl.keystore.password': 'changeit' });
  await assert.rejects(startRestListeners(rest, () => undefined), /ssl\.keystore\.location: .*keystore\.jks is a JKS keystore, which Node cannot read: convert it with `keytool -importkeystore -srckeystore .*keystore\.jks -destkeystore keystore\.p12 -deststoretype PKCS12`/);
  const unset = restConfig({ listeners: 'https://127.0.0.1:0', 'ssl.keystore.location': 'keystore.p12', 'ssl.keystore.password': 'changeit' });
  const served = await startRestListeners(unset, () => undefined);
  await served.close();

  const wrong = restConfig({ listeners: 'https://127.0.0.1:0', 'ssl.keystore.location': 'keystore.p12', 'ssl.keystore.password': 'nope' });
  await assert.rejects(startRestListeners(wrong, () => undefined), (e: Error) => /^https listener: cannot use the PKCS12 keystore .*keystore\.p12 \(ssl\.keystore\.password\): .*mac verify failure/i.test(e.message) && !e.message.includes('nope'));

  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as AddressInfo).port;
  try {
    const clash = restConfig({ listeners: `http://127.0.0.1:0,http://127.0.0.1:${port}` });
    await assert.rejects(startRestListeners(clash, () => undefined), new RegExp(`listeners: cannot listen on http://127\\.0\\.0\\.1:${port}: .*EADDRINUSE`));
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
});

test('an every-interface listener answers on localhost; its worker_id names the machine', async () => {
  const { listeners } = await start({ listeners: 'http://:0' });
  try {
    const url = listeners.urls[0] as string;
    assert.match(url, /^http:\/\/localhost:\d+$/);
    assert.equal(listeners.workerId, `${hostname()}:${new URL(url).port}`);
    assert.equal((await curl(`${url.replace('localhost', '127.0.0.1')}/health`)).status, 200);
  } finally {
    await listeners.close();
  }
});
