/**
 * The S3 adapter against the real S3 store (moto), directly and through the fault-injection proxy:
 * - the ObjectStore contract (put/get/ranges/head/delete/list, create-only puts, streams that go multipart);
 * - a multipart upload of three parts reads back byte for byte;
 * - SlowDown answers and a reset connection are retried and the object lands once;
 * - a part that keeps failing aborts the upload: no object and no open multipart upload remain in the
 *   store, and the abort reached it (proxy log).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { RetriableError } from '../../src/core/errors.ts';
import { S3ObjectStore } from '../../src/upload/s3/store.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import { objectStoreContract } from '../helpers/object-store-contract.ts';
import { requireReachable, stackEndpoints, s3Settings } from '../helpers/stack.ts';

const MiB = 1024 * 1024;
const stores: S3ObjectStore[] = [];

function store(endpoint: string, extra: Partial<ConstructorParameters<typeof S3ObjectStore>[0]> = {}): S3ObjectStore {
  const s = new S3ObjectStore({
    ...s3Settings(endpoint),
    partSizeBytes: 5 * MiB,
    multipartThresholdBytes: 5 * MiB,
    retry: { initialDelayMs: 20, maxDelayMs: 200 },
    ...extra,
  });
  stores.push(s);
  return s;
}

after(async () => {
  for (const s of stores) await s.close();
});

let ready: Promise<void> | undefined;
function stack(): Promise<void> {
  ready ??= (async () => {
    const e = stackEndpoints();
    await requireReachable('S3 (moto)', e.s3Endpoint);
    await requireReachable('Fault-injection proxy (control)', e.proxyControlUrl);
    await requireReachable('Fault-injection proxy (S3 route)', e.proxyS3Endpoint);
  })();
  return ready;
}

const base = (): string => `s3://${stackEndpoints().s3Bucket}/it-upload/${randomUUID()}/`;

objectStoreContract(
  'S3 on moto',
  async () => {
    await stack();
    return { store: store(stackEndpoints().s3Endpoint), base: base() };
  },
  { bigStreamBytes: 11 * MiB + 17 },
);

async function openUploads(prefix: string): Promise<number> {
  const e = stackEndpoints();
  const client = new S3Client({
    endpoint: e.s3Endpoint,
    region: e.s3Region,
    forcePathStyle: true,
    credentials: { accessKeyId: e.s3AccessKey, secretAccessKey: e.s3SecretKey },
  });
  try {
    const out = await client.send(new ListMultipartUploadsCommand({ Bucket: e.s3Bucket, Prefix: prefix }));
    return out.Uploads?.length ?? 0;
  } finally {
    client.destroy();
  }
}

async function* chunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, Math.min(at + size, bytes.length));
}

test('S3 on moto: a three-part multipart upload reads back byte for byte', async () => {
  await stack();
  const s = store(stackEndpoints().s3Endpoint);
  const loc = `${base()}three-parts.bin`;
  const body = randomBytes(12 * MiB + 3);
  const info = await s.putStream(loc, chunks(body, MiB));
  assert.equal(info.size, body.length);
  assert.match(info.etag ?? '', /-3"$/, 'a multipart ETag of three parts');
  assert.ok(Buffer.from(await s.get(loc)).equals(body));
  assert.deepEqual([...(await s.get(loc, { range: { suffix: 3 } }))], [...body.subarray(body.length - 3)]);
});

test('S3 via the fault proxy: SlowDown twice, then a reset, are retried; the object lands once', async () => {
  await stack();
  const e = stackEndpoints();
  const proxy = new FaultProxy(e.proxyControlUrl);
  const s = store(e.proxyS3Endpoint);
  const key = `it-upload/${randomUUID()}/throttled.json`;
  const loc = `s3://${e.s3Bucket}/${key}`;
  const path = `^/${e.s3Bucket}/${key.replaceAll('.', '\\.')}`;
  const slow = await proxy.arm({ target: 's3', match: { method: 'PUT', path }, times: 2, fault: { kind: 'status', preset: 'slowdown' } });
  const reset = await proxy.arm({ target: 's3', match: { method: 'GET', path }, times: 1, fault: { kind: 'reset' } });
  try {
    await s.put(loc, new TextEncoder().encode('{"ok":true}'), { ifAbsent: true });
    assert.equal(new TextDecoder().decode(await s.get(loc)), '{"ok":true}');
    const log = (await proxy.log('s3')).filter((l) => l.path.startsWith(`/${e.s3Bucket}/${key}`));
    assert.deepEqual(
      log.map((l) => `${l.method} ${l.fault ?? 'pass'} ${l.forwarded}`),
      ['PUT status false', 'PUT status false', 'PUT pass true', 'GET reset false', 'GET pass true'],
    );
    // Straight from the store: exactly our object.
    assert.equal(new TextDecoder().decode(await store(e.s3Endpoint).get(loc)), '{"ok":true}');
  } finally {
    await proxy.remove(slow);
    await proxy.remove(reset);
  }
});

test('S3 via the fault proxy: a part that keeps failing aborts the upload; nothing is left behind', async () => {
  await stack();
  const e = stackEndpoints();
  const proxy = new FaultProxy(e.proxyControlUrl);
  const s = store(e.proxyS3Endpoint, { retry: { initialDelayMs: 20, maxDelayMs: 200, maxAttempts: 3 } });
  const prefix = `it-upload/${randomUUID()}/`;
  const key = `${prefix}broken.bin`;
  const rule = await proxy.arm({
    target: 's3',
    match: { method: 'PUT', path: `^/${e.s3Bucket}/${key.replaceAll('.', '\\.')}\\?.*partNumber=2` },
    times: 0,
    fault: { kind: 'fail-without-forward' },
  });
  try {
    await assert.rejects(s.putStream(`s3://${e.s3Bucket}/${key}`, chunks(randomBytes(11 * MiB), MiB)), (err: unknown) => {
      assert.ok(err instanceof RetriableError);
      assert.equal(err.context['attempts'], 3);
      return true;
    });
  } finally {
    await proxy.remove(rule);
  }
  assert.equal(await store(e.s3Endpoint).exists(`s3://${e.s3Bucket}/${key}`), false);
  assert.equal(await openUploads(prefix), 0, 'the multipart upload was aborted');
  const log = (await proxy.log('s3')).filter((l) => l.path.startsWith(`/${e.s3Bucket}/${key}`));
  assert.ok(log.some((l) => l.method === 'DELETE' && l.path.includes('uploadId=') && l.forwarded), 'AbortMultipartUpload reached S3');
  assert.equal(log.filter((l) => l.path.includes('partNumber=2')).length, 3, 'part 2 was tried maxAttempts times');
});
