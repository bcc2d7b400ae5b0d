/**
 * The ObjectStore contract on the in-memory store and on the local file-system warehouse, plus what only
 * the local store has: atomic writes (no temp file is ever listed or left behind) and the root guard.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { ConfigError } from '../../../src/core/errors.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { LocalObjectStore } from '../../../src/upload/local/store.ts';
import { SchemeRouterStore } from '../../../src/upload/scheme-router.ts';
import { objectStoreContract } from '../../helpers/object-store-contract.ts';

const memory = new MemoryObjectStore();
objectStoreContract('memory store', async () => ({ store: memory, base: `s3://bucket/${randomUUID()}/` }));

const root = mkdtempSync(join(tmpdir(), 'icefloe-local-store-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const local = new LocalObjectStore({ root });
objectStoreContract('local store', async () => ({ store: local, base: `file://${root}/${randomUUID()}/` }));

test('memory store: s3a:// and s3:// name the same object, and a listing answers in the caller spelling', async () => {
  const store = new MemoryObjectStore();
  await store.put('s3a://b/k/x', new Uint8Array([7]));
  assert.deepEqual([...(await store.get('s3://b/k/x'))], [7]);
  const listed = [];
  for await (const o of store.list('s3a://b/k/')) listed.push(o.location);
  assert.deepEqual(listed, ['s3a://b/k/x']);
});

test('memory store: beforeOperation injects a failure into one call', async () => {
  let fail = true;
  const store = new MemoryObjectStore({
    beforeOperation: (op) => {
      if (op === 'put' && fail) {
        fail = false;
        throw new Error('injected');
      }
    },
  });
  await assert.rejects(store.put('memory://t/a', new Uint8Array([1])), /injected/);
  await store.put('memory://t/a', new Uint8Array([1]));
  assert.equal(await store.exists('memory://t/a'), true);
});

test('local store: a put leaves exactly the target file in its directory (the temp file is renamed away)', async () => {
  const dir = join(root, randomUUID());
  await local.put(`file://${dir}/data.parquet`, new Uint8Array(10));
  await local.put(`file://${dir}/once.json`, new Uint8Array(3), { ifAbsent: true });
  await assert.rejects(local.put(`file://${dir}/once.json`, new Uint8Array(3), { ifAbsent: true }));
  assert.deepEqual(readdirSync(dir).sort(), ['data.parquet', 'once.json']);
});

test('local store: a location outside the configured root is a ConfigError, as is a non-file scheme', async () => {
  await assert.rejects(local.put('file:///etc/icefloe-should-not-exist', new Uint8Array(1)), ConfigError);
  await assert.rejects(local.get('s3://bucket/key'), ConfigError);
});

test('local store: file:/abs (Hadoop spelling) and file:///abs are the same file', async () => {
  const path = join(root, `${randomUUID()}.bin`);
  await local.put(`file://${path}`, new Uint8Array([4, 2]));
  assert.deepEqual([...(await local.get(`file:${path}`))], [4, 2]);
});

test('router: dispatches by scheme and refuses a scheme without a store', async () => {
  const mem = new MemoryObjectStore();
  const router = new SchemeRouterStore({ s3: mem, file: local });
  await router.put('s3://b/x', new Uint8Array([1]));
  assert.equal(await mem.exists('s3://b/x'), true);
  const path = join(root, `${randomUUID()}.bin`);
  await router.put(`file://${path}`, new Uint8Array([2]));
  assert.equal(await local.exists(`file://${path}`), true);
  await assert.rejects(router.get('memory://n/x'), ConfigError);
});

test('router: a store given as a loader is made on its scheme\'s first call, once, and only then closed', async () => {
  const mem = new MemoryObjectStore();
  let loads = 0;
  let closed = 0;
  mem.close = async () => void closed++;
  let fail = true;
  const router = new SchemeRouterStore({
    file: local,
    s3: async () => {
      loads++;
      if (fail) {
        fail = false;
        throw new Error('the adapter did not load');
      }
      return mem;
    },
  });
  // Other schemes and close() do not load it (a connector that writes local files never loads the SDK).
  await router.put(`file://${join(root, `${randomUUID()}.bin`)}`, new Uint8Array([1]));
  const unused = new SchemeRouterStore({ s3: async () => assert.fail('loaded by close()') });
  await unused.close();
  assert.equal(loads, 0);
  // A failed load surfaces and is tried again on the next call.
  await assert.rejects(router.exists('s3://b/x'), /did not load/);
  // Concurrent first calls share one load.
  await Promise.all([router.put('s3://b/x', new Uint8Array([1])), router.put('s3://b/y', new Uint8Array([2]))]);
  assert.equal(loads, 2);
  assert.deepEqual([...(await router.get('s3://b/y'))], [2]);
  assert.equal(loads, 2);
  await router.close();
  assert.equal(closed, 1);
});
