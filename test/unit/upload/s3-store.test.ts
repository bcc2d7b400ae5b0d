/**
 * The S3 adapter's own logic against a scripted fake of the S3 API (the real store is covered by
 * test/integration/upload-s3.test.ts on moto): error classification, bounded retries with backoff,
 * multipart splitting with bounded parts in flight, abort on failure, and the two "lost answer" cases
 * (a create-only put and a CompleteMultipartUpload that succeeded although we saw an error).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { ConfigError, FatalError, RetriableError } from '../../../src/core/errors.ts';
import { ObjectExistsError, ObjectNotFoundError } from '../../../src/upload/port.ts';
import { MIN_PART_SIZE, S3ObjectStore, classifyS3Error } from '../../../src/upload/s3/store.ts';
import type { S3Command, S3Sender } from '../../../src/upload/s3/store.ts';
import { FakeClock } from '../../helpers/clock.ts';

const MiB = 1024 * 1024;

function sdkError(name: string, status?: number, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${name} (fake)`), {
    name,
    ...(status === undefined ? {} : { $metadata: { httpStatusCode: status } }),
    $fault: status !== undefined && status >= 500 ? 'server' : 'client',
    ...extra,
  });
}

function netError(code: string): Error {
  return Object.assign(new Error(`socket ${code}`), { code });
}

const md5 = (b: Uint8Array): string => `"${createHash('md5').update(b).digest('hex')}"`;

/** An in-memory S3 that records every command; `fault` can fail a command before or after it applies. */
class FakeS3 implements S3Sender {
  readonly objects = new Map<string, { body: Uint8Array; etag: string }>();
  readonly uploads = new Map<string, Map<number, Uint8Array>>();
  readonly calls: string[] = [];
  inFlightParts = 0;
  maxInFlightParts = 0;
  fault: (command: S3Command, nth: number) => { before?: unknown; after?: unknown } | undefined = () => undefined;
  #n = 0;
  #uploadSeq = 0;

  async send(command: S3Command): Promise<unknown> {
    const name = command.constructor.name.replace(/Command$/, '');
    this.calls.push(name);
    const f = this.fault(command, this.#n++);
    if (f?.before !== undefined) throw f.before;
    const out = await this.#apply(command);
    if (f?.after !== undefined) throw f.after;
    return out;
  }

  async #apply(c: S3Command): Promise<unknown> {
    const key = (i: { Bucket?: string | undefined; Key?: string | undefined }): string => `${i.Bucket}/${i.Key}`;
    if (c instanceof PutObjectCommand) {
      const k = key(c.input);
      if (c.input.IfNoneMatch === '*' && this.objects.has(k)) throw sdkError('PreconditionFailed', 412);
      const body = c.input.Body as Uint8Array;
      this.objects.set(k, { body, etag: md5(body) });
      return { ETag: md5(body) };
    }
    if (c instanceof GetObjectCommand) {
      const o = this.objects.get(key(c.input));
      if (o === undefined) throw sdkError('NoSuchKey', 404);
      let bytes = o.body;
      const m = /^bytes=(\d*)-(\d*)$/.exec(c.input.Range ?? '');
      if (m !== null) {
        if (m[1] === '') bytes = bytes.subarray(bytes.length - Number(m[2]));
        else bytes = bytes.subarray(Number(m[1]), m[2] === '' ? undefined : Number(m[2]) + 1);
      }
      return { Body: { transformToByteArray: async () => bytes } };
    }
    if (c instanceof HeadObjectCommand) {
      const o = this.objects.get(key(c.input));
      if (o === undefined) throw sdkError('NotFound', 404);
      return { ContentLength: o.body.length, ETag: o.etag, LastModified: new Date(1) };
    }
    if (c instanceof DeleteObjectCommand) {
      this.objects.delete(key(c.input));
      return {};
    }
    if (c instanceof ListObjectsV2Command) {
      const prefix = `${c.input.Bucket}/${c.input.Prefix ?? ''}`;
      const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
      const start = c.input.ContinuationToken === undefined ? 0 : Number(c.input.ContinuationToken);
      const page = keys.slice(start, start + 2); // tiny pages: pagination is exercised
      return {
        Contents: page.map((k) => ({ Key: k.slice(k.indexOf('/') + 1), Size: this.objects.get(k)?.body.length, LastModified: new Date(1) })),
        IsTruncated: start + 2 < keys.length,
        NextContinuationToken: String(start + 2),
      };
    }
    if (c instanceof CreateMultipartUploadCommand) {
      const id = `u${++this.#uploadSeq}`;
      this.uploads.set(id, new Map());
      return { UploadId: id };
    }
    if (c instanceof UploadPartCommand) {
      this.inFlightParts++;
      this.maxInFlightParts = Math.max(this.maxInFlightParts, this.inFlightParts);
      await new Promise((r) => setTimeout(r, 2));
      this.inFlightParts--;
      const parts = this.uploads.get(c.input.UploadId ?? '');
      if (parts === undefined) throw sdkError('NoSuchUpload', 404);
      parts.set(c.input.PartNumber ?? 0, c.input.Body as Uint8Array);
      return { ETag: `"p${c.input.PartNumber}"` };
    }
    if (c instanceof CompleteMultipartUploadCommand) {
      const parts = this.uploads.get(c.input.UploadId ?? '');
      if (parts === undefined) throw sdkError('NoSuchUpload', 404);
      const list = c.input.MultipartUpload?.Parts ?? [];
      const bytes = Buffer.concat(list.map((p) => parts.get(p.PartNumber ?? 0) as Uint8Array));
      this.uploads.delete(c.input.UploadId ?? '');
      const etag = `"x-${list.length}"`;
      this.objects.set(key(c.input), { body: bytes, etag });
      return { ETag: etag };
    }
    if (c instanceof AbortMultipartUploadCommand) {
      if (!this.uploads.delete(c.input.UploadId ?? '')) throw sdkError('NoSuchUpload', 404);
      return {};
    }
    throw new Error('unexpected command');
  }
}

function storeOn(fake: FakeS3, extra: Partial<ConstructorParameters<typeof S3ObjectStore>[0]> = {}): { store: S3ObjectStore; sleeps: number[] } {
  const clock = new FakeClock();
  const store = new S3ObjectStore({
    region: 'us-east-1',
    client: fake,
    clock,
    random: () => 0.5,
    partSizeBytes: MIN_PART_SIZE,
    multipartThresholdBytes: MIN_PART_SIZE,
    ...extra,
  });
  return { store, sleeps: clock.sleeps };
}

async function* chunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, Math.min(at + size, bytes.length));
}

test('classifyS3Error: by status, AWS error name and errno; never by message', () => {
  const cases: [unknown, string][] = [
    [sdkError('SlowDown', 503), 'retriable'],
    [sdkError('ThrottlingException', 400), 'retriable'],
    [sdkError('InternalError', 500), 'retriable'],
    [sdkError('Whatever', 502), 'retriable'],
    [sdkError('RequestTimeout', 400), 'retriable'],
    [sdkError('TooManyRequests', 429), 'retriable'],
    [netError('ECONNRESET'), 'retriable'],
    [Object.assign(new Error('fetch failed'), { cause: netError('EPIPE') }), 'retriable'],
    [sdkError('NoSuchKey', 404), 'not-found'],
    [sdkError('NotFound', 404), 'not-found'],
    [sdkError('NoSuchBucket', 404), 'config'],
    [sdkError('AccessDenied', 403), 'config'],
    [sdkError('InvalidAccessKeyId', 403), 'config'],
    [sdkError('PreconditionFailed', 412), 'precondition-failed'],
    [sdkError('EntityTooSmall', 400), 'fatal'],
    [new Error('Service unavailable, throttling, please retry'), 'fatal'], // message text means nothing
  ];
  for (const [e, kind] of cases) assert.equal(classifyS3Error(e), kind, (e as Error).name);
  assert.equal(classifyS3Error(sdkError('AbortError'), true), 'retriable', 'our own per-attempt time-out');
});

test('retries throttling and resets with growing backoff, then succeeds', async () => {
  const fake = new FakeS3();
  fake.fault = (c, n) => (c instanceof PutObjectCommand && n < 3 ? { before: n === 1 ? netError('ECONNRESET') : sdkError('SlowDown', 503) } : undefined);
  const { store, sleeps } = storeOn(fake, { retry: { initialDelayMs: 100 } });
  await store.put('s3://b/k', new Uint8Array([1, 2, 3]));
  assert.deepEqual(fake.calls, ['PutObject', 'PutObject', 'PutObject', 'PutObject']);
  assert.deepEqual(sleeps, [200, 350, 575], 'core/retry.ts back-off, random fixed at 0.5: 100 + 0.5 × (3 × previous − 100)');
  assert.deepEqual([...(fake.objects.get('b/k')?.body ?? [])], [1, 2, 3]);
});

test('gives up after maxAttempts with a RetriableError carrying status, code and attempts', async () => {
  const fake = new FakeS3();
  fake.fault = () => ({ before: sdkError('SlowDown', 503) });
  const { store } = storeOn(fake, { retry: { maxAttempts: 3 } });
  await assert.rejects(store.get('s3://b/k'), (e: unknown) => {
    assert.ok(e instanceof RetriableError);
    assert.deepEqual({ ...e.context }, { op: 'get', location: 's3://b/k', attempts: 3, status: 503, awsCode: 'SlowDown' });
    return true;
  });
  assert.equal(fake.calls.length, 3);
});

test('not found, refused and fatal errors are not retried', async () => {
  const fake = new FakeS3();
  const { store } = storeOn(fake);
  await assert.rejects(store.get('s3://b/missing'), ObjectNotFoundError);
  assert.equal(await store.head('s3://b/missing'), undefined);
  fake.fault = () => ({ before: sdkError('AccessDenied', 403) });
  await assert.rejects(store.put('s3://b/k', new Uint8Array(1)), ConfigError);
  fake.fault = () => ({ before: sdkError('EntityTooSmall', 400) });
  await assert.rejects(store.put('s3://b/k', new Uint8Array(1)), FatalError);
  assert.deepEqual(fake.calls, ['GetObject', 'HeadObject', 'PutObject', 'PutObject']);
});

test('a create-only put whose first answer was lost recognises its own object (same MD5) on the retry', async () => {
  const fake = new FakeS3();
  fake.fault = (c, n) => (c instanceof PutObjectCommand && n === 0 ? { after: netError('ECONNRESET') } : undefined);
  const { store } = storeOn(fake);
  const body = randomBytes(100);
  const info = await store.put('s3://b/meta.json', body, { ifAbsent: true });
  assert.equal(info.size, 100);
  assert.deepEqual(fake.calls, ['PutObject', 'PutObject', 'HeadObject']);
  // Someone else's object under the name is still an ObjectExistsError.
  const other = new FakeS3();
  other.objects.set('b/meta.json', { body: randomBytes(100), etag: '"different"' });
  other.fault = (c, n) => (c instanceof PutObjectCommand && n === 0 ? { before: netError('ECONNRESET') } : undefined);
  await assert.rejects(storeOn(other).store.put('s3://b/meta.json', body, { ifAbsent: true }), ObjectExistsError);
});

test('putStream: below the threshold one PutObject, above it parts of exactly partSize and a short last part', async () => {
  const fake = new FakeS3();
  const { store } = storeOn(fake, { multipartThresholdBytes: 6 * MiB });
  const small = randomBytes(6 * MiB);
  await store.putStream('s3://b/small', chunks(small, 1 * MiB + 3));
  assert.deepEqual(fake.calls, ['PutObject']);

  fake.calls.length = 0;
  const big = randomBytes(12 * MiB + 5);
  const info = await store.putStream('s3://b/big', chunks(big, 700 * 1024));
  assert.equal(info.size, big.length);
  assert.ok(Buffer.from(fake.objects.get('b/big')?.body ?? []).equals(big));
  assert.deepEqual(fake.calls, ['CreateMultipartUpload', 'UploadPart', 'UploadPart', 'UploadPart', 'CompleteMultipartUpload']);
});

test('putStream: at most maxConcurrentParts parts are in flight (bounded memory)', async () => {
  const fake = new FakeS3();
  const { store } = storeOn(fake, { maxConcurrentParts: 2 });
  await store.putStream('s3://b/many', chunks(randomBytes(6 * MIN_PART_SIZE), MiB));
  assert.equal(fake.calls.filter((c) => c === 'UploadPart').length, 6);
  assert.equal(fake.maxInFlightParts, 2);
});

test('putStream reports what it holds (queued chunks, parts in flight) through onHeldBytes, ending at 0', async () => {
  const fake = new FakeS3();
  const { store } = storeOn(fake, { maxConcurrentParts: 2 });
  const reports: number[] = [];
  await store.putStream('s3://b/held', chunks(randomBytes(6 * MIN_PART_SIZE), MiB), { onHeldBytes: (b) => reports.push(b) });
  assert.ok(reports.length > 10);
  // Up to the threshold plus the parts in flight; with each part the queue shrinks by what went into it.
  assert.ok(Math.max(...reports) <= MIN_PART_SIZE + 2 * MIN_PART_SIZE + MiB, `peak ${Math.max(...reports)}`);
  assert.ok(Math.max(...reports) >= 2 * MIN_PART_SIZE, 'parts in flight are held too');
  assert.equal(reports.at(-1), 0, 'a finished put holds nothing');
  // Below the threshold the object is held whole until its PutObject is answered.
  const small: number[] = [];
  await store.putStream('s3://b/small-held', chunks(randomBytes(3 * MiB), MiB), { onHeldBytes: (b) => small.push(b) });
  assert.deepEqual(small, [MiB, 2 * MiB, 3 * MiB, 0]);
  // A failed put also ends at 0.
  const failed: number[] = [];
  fake.fault = (c) => (c instanceof UploadPartCommand ? { before: sdkError('InternalError', 500) } : undefined);
  const { store: broken } = storeOn(fake, { retry: { maxAttempts: 1 } });
  await assert.rejects(broken.putStream('s3://b/held-broken', chunks(randomBytes(3 * MIN_PART_SIZE), MiB), { onHeldBytes: (b) => failed.push(b) }));
  assert.equal(failed.at(-1), 0);
});

test('putStream: a part that keeps failing aborts the upload; no object, no open upload', async () => {
  const fake = new FakeS3();
  fake.fault = (c) => (c instanceof UploadPartCommand && c.input.PartNumber === 2 ? { before: sdkError('InternalError', 500) } : undefined);
  const { store } = storeOn(fake, { retry: { maxAttempts: 2 } });
  await assert.rejects(store.putStream('s3://b/broken', chunks(randomBytes(3 * MIN_PART_SIZE), MiB)), RetriableError);
  assert.equal(fake.objects.has('b/broken'), false);
  assert.equal(fake.uploads.size, 0, 'the multipart upload was aborted');
  assert.equal(fake.calls.at(-1), 'AbortMultipartUpload');
});

test('putStream: a source that fails after the upload started aborts it and rethrows the source error', async () => {
  const fake = new FakeS3();
  const { store } = storeOn(fake);
  async function* failing(): AsyncGenerator<Uint8Array> {
    yield randomBytes(MIN_PART_SIZE + 1);
    yield randomBytes(MIN_PART_SIZE);
    throw new Error('decoder broke');
  }
  await assert.rejects(store.putStream('s3://b/partial', failing()), /decoder broke/);
  assert.equal(fake.uploads.size, 0);
  assert.ok(fake.calls.includes('AbortMultipartUpload'));
});

test('putStream: a Complete whose answer was lost is recognised on the retry (NoSuchUpload, object there)', async () => {
  const fake = new FakeS3();
  fake.fault = (c) => (c instanceof CompleteMultipartUploadCommand && fake.calls.filter((x) => x === 'CompleteMultipartUpload').length === 1 ? { after: netError('ECONNRESET') } : undefined);
  const { store } = storeOn(fake);
  const body = randomBytes(2 * MIN_PART_SIZE + 10);
  const info = await store.putStream('s3://b/done', chunks(body, MiB));
  assert.equal(info.size, body.length);
  assert.deepEqual(fake.calls.slice(-3), ['CompleteMultipartUpload', 'CompleteMultipartUpload', 'HeadObject']);
  assert.ok(Buffer.from(fake.objects.get('b/done')?.body ?? []).equals(body));
});

test('list pages through continuation tokens; ranged get sends the Range header', async () => {
  const fake = new FakeS3();
  const { store } = storeOn(fake);
  for (const k of ['p/a', 'p/b', 'p/c', 'p/d', 'p/e', 'q/x']) await store.put(`s3://b/${k}`, new Uint8Array([1]));
  const listed = [];
  for await (const o of store.list('s3://b/p/')) listed.push(o.location);
  assert.deepEqual(listed, ['s3://b/p/a', 's3://b/p/b', 's3://b/p/c', 's3://b/p/d', 's3://b/p/e']);
  await store.put('s3://b/r', Uint8Array.from([0, 1, 2, 3, 4, 5]));
  assert.deepEqual([...(await store.get('s3://b/r', { range: { start: 1, end: 3 } }))], [1, 2]);
  assert.deepEqual([...(await store.get('s3://b/r', { range: { suffix: 2 } }))], [4, 5]);
});

test('configuration: a part size below 5 MiB is refused; non-s3 locations are ConfigErrors', async () => {
  assert.throws(() => new S3ObjectStore({ region: 'us-east-1', client: new FakeS3(), partSizeBytes: MiB }), ConfigError);
  await assert.rejects(storeOn(new FakeS3()).store.get('file:///tmp/x'), ConfigError);
});
