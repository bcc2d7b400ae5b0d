/**
 * The stack's S3 outlives a restart of its server (`scripts/stack stop s3` / `start s3`, as the missing-
 * service test and a user's own restarts do): infra/s3/moto_single.py saves the store on SIGTERM and loads
 * it at start. Without that, the catalog (on PostgreSQL, which keeps its data) would keep tables whose files
 * are gone — a user's quickstart table among them — and every later load would fail.
 *
 * Written before the restart, checked after it: an Iceberg table (metadata, manifest list, manifests,
 * Parquet) read back by PyIceberg and DuckDB through the REST catalog, then appended to again; an object
 * completed as a multipart upload, byte for byte with its etag; a create-only (`If-None-Match: *`) put of an
 * existing key still refused; and a multipart upload left open before the restart completed after it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { ObjectExistsError } from '../../src/upload/port.ts';
import { readTable } from '../helpers/readers.ts';
import { ensureStarted, restoreServiceAfter, stopService } from '../helpers/stack-services.ts';
import { s3Settings, stackEndpoints } from '../helpers/stack.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import type { Row } from '../helpers/type-matrix.ts';

const SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'name', required: false, type: { kind: 'string' } },
  ],
};
const rows = (from: number, n: number): Row[] => Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), name: `row-${from + i}` }));
const ids = (r: { rows?: Record<string, unknown>[] }): number[] => (r.rows ?? []).map((x) => Number(x['id'])).sort((a, b) => a - b);
const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
const PART = 5 * 1024 * 1024; // S3's (and moto's) minimum size of a part that is not the last

test('a table and objects written before an S3 restart are all there after it', { timeout: 240_000 }, async (t) => {
  restoreServiceAfter(t, 's3'); // whatever happens below, S3 comes back for the tests after this one
  const h = await harness(t);
  const e = stackEndpoints();
  const catalog = h.rest();
  const ns = h.namespace();
  const id = ident(ns, 'kept');
  const name = `${ns}.kept`;

  // An Iceberg table with two files, committed through the REST catalog.
  const table = await createTable(h.deps(catalog), id, { schema: SCHEMA });
  const files = await writeRows(h.store, table, rows(0, 200), { rowsPerFile: 100 });
  assert.equal((await appendFiles(h.deps(catalog), id, { commitId: 'before-restart', files })).status, 'committed');

  // A multipart object (two parts), a small one, and a multipart upload left open.
  const raw = new S3Client(s3Settings());
  t.after(() => raw.destroy());
  const bucket = e.s3Bucket;
  const prefix = `s3-restart-${randomUUID()}`;
  const big = randomBytes(PART + 1234);
  const bigKey = `${prefix}/multipart.bin`;
  const bigInfo = await h.store.putStream(`s3://${bucket}/${bigKey}`, [big.subarray(0, PART), big.subarray(PART)], { ifAbsent: true });
  const small = `s3://${bucket}/${prefix}/small.json`;
  await h.store.put(small, new TextEncoder().encode('{"kept":true}'), { ifAbsent: true });
  const openKey = `${prefix}/open.bin`;
  const upload = await raw.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: openKey }));
  const uploadId = upload.UploadId as string;
  t.after(() => raw.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: openKey, UploadId: uploadId })).catch(() => undefined));
  const first = randomBytes(PART);
  const part1 = await raw.send(new UploadPartCommand({ Bucket: bucket, Key: openKey, UploadId: uploadId, PartNumber: 1, Body: first }));

  stopService('s3');
  ensureStarted('s3');

  // The table loads and reads whole in both readers.
  for (const engine of ['pyiceberg', 'duckdb'] as const) {
    assert.deepEqual(ids(await readTable({ table: name, engine, columns: ['id'] })), range(0, 200), `${engine} reads every row written before the restart`);
  }
  // ... and takes a new commit on top of the snapshot it had.
  const loaded = await catalog.loadTable(id);
  const more = await writeRows(h.store, loaded, rows(200, 50));
  assert.equal((await appendFiles(h.deps(catalog), id, { commitId: 'after-restart', files: more })).status, 'committed');
  assert.deepEqual(ids(await readTable({ table: name, engine: 'duckdb', columns: ['id'] })), range(0, 250));

  // The multipart object, byte for byte, with the etag it had.
  const got = await h.store.get(`s3://${bucket}/${bigKey}`);
  assert.equal(Buffer.compare(Buffer.from(got), big), 0, 'the multipart object is byte for byte what was written');
  assert.equal((await h.store.head(`s3://${bucket}/${bigKey}`))?.etag, bigInfo.etag);
  // Create-only still sees the existing key.
  await assert.rejects(h.store.put(small, new TextEncoder().encode('{"kept":false}'), { ifAbsent: true }), ObjectExistsError);
  assert.equal(new TextDecoder().decode(await h.store.get(small)), '{"kept":true}');
  // The upload left open completes with its part from before the restart.
  const last = randomBytes(99);
  const part2 = await raw.send(new UploadPartCommand({ Bucket: bucket, Key: openKey, UploadId: uploadId, PartNumber: 2, Body: last }));
  await raw.send(new CompleteMultipartUploadCommand({
    Bucket: bucket, Key: openKey, UploadId: uploadId,
    MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part1.ETag as string }, { PartNumber: 2, ETag: part2.ETag as string }] },
  }));
  const opened = await h.store.get(`s3://${bucket}/${openKey}`);
  assert.equal(Buffer.compare(Buffer.from(opened), Buffer.concat([first, last])), 0, 'the upload opened before the restart completes with both parts');
});
