/**
 * Smoke tests of our fault-injection proxy (test/fault-proxy/) against the real stack: one test per
 * fault mode through the S3 route, one through the catalog route, and a plain pass-through.
 *
 * Each test checks what actually reached the real service twice over: by asking the upstream directly
 * (not through the proxy) and by reading the proxy's request log.
 */
import { test, afterEach, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { FaultProxy } from '../fault-proxy/client.ts';
import type { LogEntry } from '../fault-proxy/client.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import type { StackEndpoints } from '../helpers/stack.ts';

interface Env {
  ep: StackEndpoints;
  proxy: FaultProxy;
  /** Straight to the S3 store: what really is there. */
  direct: S3Client;
  /** Through the proxy's S3 route. */
  viaProxy: S3Client;
}

let envPromise: Promise<Env> | undefined;
const clients: S3Client[] = [];

function s3Client(ep: StackEndpoints, endpoint: string): S3Client {
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: ep.s3Region,
    credentials: { accessKeyId: ep.s3AccessKey, secretAccessKey: ep.s3SecretKey },
    // One attempt: the test must see the injected fault, not the SDK's retry of it.
    maxAttempts: 1,
  });
  clients.push(client);
  return client;
}

/** The stack's endpoints and clients, after checking that S3 and the proxy answer (naming what is down). */
function env(): Promise<Env> {
  envPromise ??= (async () => {
    const ep = stackEndpoints();
    await requireReachable('S3 (moto)', ep.s3Endpoint);
    await requireReachable('Fault-injection proxy (control)', ep.proxyControlUrl);
    await requireReachable('Fault-injection proxy (S3 route)', ep.proxyS3Endpoint);
    const direct = s3Client(ep, ep.s3Endpoint);
    try {
      await direct.send(new HeadBucketCommand({ Bucket: ep.s3Bucket }));
    } catch (e) {
      throw new Error(`S3 at ${ep.s3Endpoint} has no bucket ${ep.s3Bucket} (${(e as Error).name}): scripts/stack up creates it`, { cause: e });
    }
    return { ep, proxy: new FaultProxy(ep.proxyControlUrl), direct, viaProxy: s3Client(ep, ep.proxyS3Endpoint) };
  })();
  return envPromise;
}

// Every test leaves the proxy transparent (clearing also forwards anything still held). When the stack
// was unreachable the test has already failed with the reason, so there is nothing to clear.
afterEach(async () => {
  const e = await envPromise?.catch(() => undefined);
  if (e !== undefined) await e.proxy.clear();
});

after(() => {
  for (const c of clients) c.destroy();
});

/** A fresh key under the bucket; the object is deleted (directly) when the test ends. */
async function freshKey(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { ep, direct } = await env();
  const key = `fault-proxy/${randomUUID()}`;
  t.after(async () => {
    await direct.send(new DeleteObjectCommand({ Bucket: ep.s3Bucket, Key: key }));
  });
  return key;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A rule match for a PUT of exactly this object (path style: /bucket/key?x-id=PutObject). */
function putOf(ep: StackEndpoints, key: string): { method: string; path: string } {
  return { method: 'PUT', path: `^/${escapeRegex(ep.s3Bucket)}/${escapeRegex(key)}(\\?|$)` };
}

async function existsUpstream(key: string): Promise<boolean> {
  const { ep, direct } = await env();
  try {
    await direct.send(new HeadObjectCommand({ Bucket: ep.s3Bucket, Key: key }));
    return true;
  } catch (e) {
    if ((e as Error).name === 'NotFound') return false;
    throw e;
  }
}

/** The proxy's log entries for this object's requests. */
async function logOf(key: string): Promise<LogEntry[]> {
  const { proxy } = await env();
  return (await proxy.log('s3')).filter((e) => e.path.includes(key));
}

function put(key: string, body: string | Uint8Array = 'hello'): Promise<unknown> {
  return env().then(({ ep, viaProxy }) => viaProxy.send(new PutObjectCommand({ Bucket: ep.s3Bucket, Key: key, Body: body })));
}

/** The SDK's error for a failed call: its name and HTTP status. */
async function failure(p: Promise<unknown>): Promise<{ name: string; status: number | undefined; code: string | undefined; message: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as Error & { $metadata?: { httpStatusCode?: number }; code?: string };
    return { name: err.name, status: err.$metadata?.httpStatusCode, code: err.code, message: err.message };
  }
  assert.fail('expected the call through the proxy to fail');
}

test('pass-through: an 8 MiB streamed (aws-chunked) PUT and its GET arrive byte-identical', async (t) => {
  const { ep, direct, viaProxy } = await env();
  const key = await freshKey(t);
  const data = randomBytes(8 * 1024 * 1024);
  // A stream body with a known length: the SDK sends it aws-chunked with a trailing checksum.
  await viaProxy.send(new PutObjectCommand({ Bucket: ep.s3Bucket, Key: key, Body: Readable.from([data]), ContentLength: data.length }));
  const got = await direct.send(new GetObjectCommand({ Bucket: ep.s3Bucket, Key: key }));
  const bytes = await got.Body?.transformToByteArray();
  assert.equal(createHash('sha256').update(bytes ?? new Uint8Array()).digest('hex'), createHash('sha256').update(data).digest('hex'));
  const back = await viaProxy.send(new GetObjectCommand({ Bucket: ep.s3Bucket, Key: key }));
  assert.equal((await back.Body?.transformToByteArray())?.length, data.length);
  const entries = await logOf(key);
  assert.deepEqual(
    entries.map((e) => [e.method, e.ruleId, e.forwarded, e.upstreamStatus, e.clientStatus]),
    [['PUT', null, true, 200, 200], ['GET', null, true, 200, 200]],
  );
});

test('delay: the PUT waits at least ms, then reaches S3', async (t) => {
  const { ep, proxy } = await env();
  const key = await freshKey(t);
  const ms = 400;
  const id = await proxy.arm({ target: 's3', match: putOf(ep, key), fault: { kind: 'delay', ms } });
  const started = performance.now();
  await put(key);
  const took = performance.now() - started;
  assert.ok(took >= ms, `PUT took ${took.toFixed(0)} ms, expected >= ${ms}`);
  assert.equal(await existsUpstream(key), true);
  const [entry, ...rest] = await logOf(key).then((l) => l.filter((e) => e.method === 'PUT'));
  assert.equal(rest.length, 0);
  assert.equal(entry?.ruleId, id);
  assert.equal(entry.forwarded, true);
  assert.equal(entry.upstreamStatus, 200);
  assert.equal((await proxy.rule(id)).spent, true);
});

test('hold: the PUT stays pending and absent upstream until released, then it lands', async (t) => {
  const { ep, proxy } = await env();
  const key = await freshKey(t);
  const id = await proxy.arm({ target: 's3', match: putOf(ep, key), fault: { kind: 'hold' } });
  let settled = false;
  const pending = put(key).finally(() => {
    settled = true;
  });
  await proxy.waitHeld(id, 1);
  assert.equal(settled, false, 'the PUT answered while held');
  assert.equal(await existsUpstream(key), false, 'a held PUT reached S3');
  const [held] = await logOf(key);
  assert.equal(held?.forwarded, false);
  assert.equal(held.ruleId, id);

  assert.equal(await proxy.release(id), 1);
  await pending;
  assert.equal(await existsUpstream(key), true);
  assert.equal((await proxy.rule(id)).held, 0);
  const entries = await logOf(key).then((l) => l.filter((e) => e.method === 'PUT'));
  assert.deepEqual(entries.map((e) => [e.ruleId, e.forwarded, e.upstreamStatus, e.clientStatus]), [[id, true, 200, 200]]);
});

test('status slowdown: the client gets S3 503 SlowDown and nothing reaches S3', async (t) => {
  const { ep, proxy } = await env();
  const key = await freshKey(t);
  const id = await proxy.arm({ target: 's3', match: putOf(ep, key), fault: { kind: 'status', preset: 'slowdown' } });
  const err = await failure(put(key));
  assert.equal(err.status, 503);
  assert.equal(err.name, 'SlowDown');
  assert.equal(await existsUpstream(key), false);
  const entries = await logOf(key);
  assert.deepEqual(entries.map((e) => [e.ruleId, e.fault, e.forwarded, e.upstreamStatus, e.clientStatus]), [[id, 'status', false, null, 503]]);
});

test('reset: the client sees its connection reset and nothing reaches S3', async (t) => {
  const { ep, proxy } = await env();
  const key = await freshKey(t);
  const id = await proxy.arm({ target: 's3', match: putOf(ep, key), fault: { kind: 'reset' } });
  const err = await failure(put(key));
  assert.ok(err.code === 'ECONNRESET' || /ECONNRESET|socket hang up/.test(err.message), `expected a connection reset, got ${err.name}: ${err.message}`);
  assert.equal(await existsUpstream(key), false);
  const entries = await logOf(key);
  assert.deepEqual(entries.map((e) => [e.ruleId, e.fault, e.forwarded, e.clientStatus]), [[id, 'reset', false, null]]);
});

test('fail-without-forward: the client gets 500 and nothing reaches S3', async (t) => {
  const { ep, proxy } = await env();
  const key = await freshKey(t);
  const id = await proxy.arm({ target: 's3', match: putOf(ep, key), fault: { kind: 'fail-without-forward' } });
  const err = await failure(put(key));
  assert.equal(err.status, 500);
  assert.equal(err.name, 'InternalError');
  assert.equal(await existsUpstream(key), false);
  const entries = await logOf(key);
  assert.deepEqual(entries.map((e) => [e.ruleId, e.fault, e.forwarded, e.upstreamStatus, e.clientStatus]), [[id, 'fail-without-forward', false, null, 500]]);
});

test('apply-then-fail: the client gets 500 but the object IS in S3 (upstream answered 200)', async (t) => {
  const { ep, proxy } = await env();
  const key = await freshKey(t);
  const id = await proxy.arm({ target: 's3', match: putOf(ep, key), fault: { kind: 'apply-then-fail' } });
  const err = await failure(put(key, 'written but unacknowledged'));
  assert.equal(err.status, 500);
  assert.equal(err.name, 'InternalError');
  assert.equal(await existsUpstream(key), true);
  const entries = await logOf(key).then((l) => l.filter((e) => e.method === 'PUT'));
  assert.deepEqual(entries.map((e) => [e.ruleId, e.fault, e.forwarded, e.upstreamStatus, e.clientStatus]), [[id, 'apply-then-fail', true, 200, 500]]);
});

test('catalog route: GET /v1/config is forwarded, and a rule on a catalog path applies only there', async () => {
  const { ep, proxy } = await env();
  await requireReachable('Iceberg REST catalog', ep.catalogUri);
  await requireReachable('Fault-injection proxy (catalog route)', ep.proxyCatalogUri);
  const configUrl = (base: string): string => new URL('v1/config', base.endsWith('/') ? base : `${base}/`).toString();
  const directRes = await fetch(configUrl(ep.catalogUri));
  assert.equal(directRes.status, 200, `the Iceberg REST catalog at ${ep.catalogUri} answered GET /v1/config with ${directRes.status}`);
  const expected: unknown = await directRes.json();
  const since = Math.max(0, ...(await proxy.log()).map((e) => e.seq));

  const id = await proxy.arm({ target: 'catalog', match: { method: 'GET', path: '/v1/config(\\?|$)' }, fault: { kind: 'status', preset: 'unavailable' } });
  const faulted = await fetch(configUrl(ep.proxyCatalogUri));
  assert.equal(faulted.status, 503);
  assert.equal(faulted.headers.get('x-fault-proxy-rule'), id);
  // Shaped like the catalog's own errors (the Iceberg REST ErrorModel), so REST clients parse it.
  assert.deepEqual(((await faulted.json()) as { error?: { code?: number } }).error?.code, 503);

  // times defaults to 1: the next request passes through to the real catalog.
  const passed = await fetch(configUrl(ep.proxyCatalogUri));
  assert.equal(passed.status, 200);
  assert.deepEqual(await passed.json(), expected);

  const entries = (await proxy.log('catalog')).filter((e) => e.seq > since);
  assert.deepEqual(
    entries.map((e) => [e.method, e.ruleId, e.forwarded, e.upstreamStatus, e.clientStatus]),
    [['GET', id, false, null, 503], ['GET', null, true, 200, 200]],
  );
  assert.ok(entries.every((e) => /\/v1\/config/.test(e.path)));
  // The catalog rule never saw S3 traffic.
  assert.equal((await proxy.log('s3')).some((e) => e.seq > since && e.ruleId === id), false);
});
