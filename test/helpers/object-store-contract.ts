/**
 * The ObjectStore contract as tests, run against every adapter (memory and local in the unit suite, S3 on
 * moto in the integration suite), so that the port means the same thing everywhere.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { ObjectExistsError, ObjectNotFoundError } from '../../src/upload/port.ts';
import type { ObjectStore } from '../../src/upload/port.ts';

export interface ContractTarget {
  store: ObjectStore;
  /** A fresh location prefix ending in '/', e.g. s3://warehouse/contract/<uuid>/ */
  base: string;
}

async function collect(it: AsyncIterable<{ location: string; size: number }>): Promise<{ location: string; size: number }[]> {
  const out: { location: string; size: number }[] = [];
  for await (const o of it) out.push({ location: o.location, size: o.size });
  return out;
}

async function* chunksOf(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, Math.min(bytes.length, at + size));
}

export function objectStoreContract(name: string, target: () => Promise<ContractTarget>, options: { bigStreamBytes?: number } = {}): void {
  test(`${name}: put, get, head, exists and delete round-trip the bytes`, async () => {
    const { store, base } = await target();
    const loc = `${base}a/${randomUUID()}.bin`;
    const body = randomBytes(1000);
    const info = await store.put(loc, body);
    assert.equal(info.size, 1000);
    assert.deepEqual(Buffer.from(await store.get(loc)), body);
    const head = await store.head(loc);
    assert.equal(head?.size, 1000);
    assert.ok((head?.lastModifiedMs ?? 0) > 0, 'head carries a modification time');
    assert.equal(await store.exists(loc), true);
    await store.delete(loc);
    assert.equal(await store.exists(loc), false);
    assert.equal(await store.head(loc), undefined);
    await store.delete(loc); // deleting a missing object succeeds
  });

  test(`${name}: get of a missing object is ObjectNotFoundError`, async () => {
    const { store, base } = await target();
    await assert.rejects(store.get(`${base}missing/${randomUUID()}`), ObjectNotFoundError);
  });

  test(`${name}: ranged gets (start/end, open end, suffix)`, async () => {
    const { store, base } = await target();
    const loc = `${base}range.bin`;
    const body = Uint8Array.from({ length: 100 }, (_, i) => i);
    await store.put(loc, body);
    assert.deepEqual([...(await store.get(loc, { range: { start: 10, end: 13 } }))], [10, 11, 12]);
    assert.deepEqual([...(await store.get(loc, { range: { start: 97 } }))], [97, 98, 99]);
    assert.deepEqual([...(await store.get(loc, { range: { suffix: 2 } }))], [98, 99]);
    assert.equal((await store.get(loc, { range: { start: 5, end: 5 } })).length, 0);
  });

  test(`${name}: an empty object is stored and read as empty`, async () => {
    const { store, base } = await target();
    const loc = `${base}empty.bin`;
    await store.put(loc, new Uint8Array(0));
    assert.equal((await store.get(loc)).length, 0);
    assert.equal((await store.head(loc))?.size, 0);
  });

  test(`${name}: a create-only put refuses to overwrite and leaves the first body`, async () => {
    const { store, base } = await target();
    const loc = `${base}once.json`;
    await store.put(loc, new TextEncoder().encode('first'), { ifAbsent: true });
    await assert.rejects(store.put(loc, new TextEncoder().encode('second'), { ifAbsent: true }), ObjectExistsError);
    assert.equal(new TextDecoder().decode(await store.get(loc)), 'first');
    await store.put(loc, new TextEncoder().encode('third')); // a plain put overwrites
    assert.equal(new TextDecoder().decode(await store.get(loc)), 'third');
  });

  test(`${name}: list by prefix is a string prefix over the whole subtree, sorted`, async () => {
    const { store, base } = await target();
    const p = `${base}list/`;
    for (const k of ['a/1', 'a/2', 'ab/3', 'b/4', 'a/deep/5']) await store.put(`${p}${k}`, new Uint8Array([1, 2]));
    const all = (await collect(store.list(p))).map((o) => o.location.slice(p.length));
    assert.deepEqual(all, ['a/1', 'a/2', 'a/deep/5', 'ab/3', 'b/4']);
    const a = (await collect(store.list(`${p}a`))).map((o) => o.location.slice(p.length));
    assert.deepEqual(a, ['a/1', 'a/2', 'a/deep/5', 'ab/3']);
    const aDir = (await collect(store.list(`${p}a/`))).map((o) => o.location.slice(p.length));
    assert.deepEqual(aDir, ['a/1', 'a/2', 'a/deep/5']);
    assert.deepEqual(await collect(store.list(`${p}nothing-here/`)), []);
    assert.ok((await collect(store.list(p))).every((o) => o.size === 2));
  });

  test(`${name}: putStream from sync and async chunks writes the concatenation`, async () => {
    const { store, base } = await target();
    const big = options.bigStreamBytes ?? 3 * 1024 * 1024 + 123;
    const body = randomBytes(big);
    const loc = `${base}stream.bin`;
    const info = await store.putStream(loc, chunksOf(body, 256 * 1024 + 7));
    assert.equal(info.size, body.length);
    assert.ok(Buffer.from(await store.get(loc)).equals(body), 'streamed object differs from its chunks');
    const small = `${base}stream-small.bin`;
    await store.putStream(small, [new Uint8Array([1]), new Uint8Array([]), new Uint8Array([2, 3])]);
    assert.deepEqual([...(await store.get(small))], [1, 2, 3]);
  });

  test(`${name}: a putStream whose source fails leaves no object`, async () => {
    const { store, base } = await target();
    const loc = `${base}failed-stream.bin`;
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield randomBytes(1024);
      throw new Error('source broke');
    }
    await assert.rejects(store.putStream(loc, failing()), /source broke/);
    assert.equal(await store.exists(loc), false);
    assert.deepEqual(await collect(store.list(`${base}failed-stream`)), []);
  });
}
