/**
 * Smoke: the stack's S3 store is usable from Node through @aws-sdk/client-s3 with path-style
 * addressing: put, get, list, a conditional create, and a multipart upload of more than one part.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';

async function s3(): Promise<{ client: S3Client; bucket: string }> {
  const e = stackEndpoints();
  await requireReachable('S3 (moto)', e.s3Endpoint);
  const client = new S3Client({
    endpoint: e.s3Endpoint,
    region: e.s3Region,
    forcePathStyle: true,
    credentials: { accessKeyId: e.s3AccessKey, secretAccessKey: e.s3SecretKey },
    maxAttempts: 1,
  });
  return { client, bucket: e.s3Bucket };
}

test('S3: put, get and list an object', async () => {
  const { client, bucket } = await s3();
  const prefix = `smoke/${randomUUID()}/`;
  const body = `hello from icefloe ${prefix}`;
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}a.txt`, Body: body }));
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}b.txt`, Body: 'b' }));
  const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}a.txt` }));
  assert.equal(await got.Body?.transformToString(), body);
  const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  assert.deepEqual(listed.Contents?.map((o) => o.Key).sort(), [`${prefix}a.txt`, `${prefix}b.txt`]);
});

test('S3: a conditional create (If-None-Match: *) refuses to overwrite', async () => {
  const { client, bucket } = await s3();
  const key = `smoke/${randomUUID()}/once.txt`;
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'first', IfNoneMatch: '*' }));
  await assert.rejects(
    client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'second', IfNoneMatch: '*' })),
    (e: { $metadata?: { httpStatusCode?: number } }) => e.$metadata?.httpStatusCode === 412,
  );
  const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  assert.equal(await got.Body?.transformToString(), 'first');
});

test('S3: multipart upload of two parts reads back byte for byte', async () => {
  const { client, bucket } = await s3();
  const key = `smoke/${randomUUID()}/multipart.bin`;
  const part1 = randomBytes(5 * 1024 * 1024); // S3's minimum size for every part but the last
  const part2 = randomBytes(1024 * 1024 + 17);
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const parts = [];
  for (const [i, body] of [part1, part2].entries()) {
    const r = await client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: body }));
    parts.push({ ETag: r.ETag, PartNumber: i + 1 });
  }
  await client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }));
  const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
  assert.equal(bytes.length, part1.length + part2.length);
  assert.ok(bytes.equals(Buffer.concat([part1, part2])), 'multipart object differs from its parts');
});
