import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, DataError, FatalError, RetriableError } from '../../../src/core/errors.ts';
import { RegistryCache } from '../../../src/decode/registry-cache.ts';
import type { RegisteredSchema, SchemaResolver } from '../../../src/decode/registry-port.ts';

/** A resolver that counts fetches, answers from `schemas`, and is unreachable while `down`. */
function fakeRegistry(schemas: Record<number, RegisteredSchema>): { resolver: SchemaResolver; calls: number[]; setDown(down: boolean): void } {
  const calls: number[] = [];
  let down = false;
  const resolver: SchemaResolver = {
    async byId(id) {
      calls.push(id);
      await new Promise((r) => setImmediate(r));
      if (down) throw new RetriableError('registry unreachable');
      const s = schemas[id];
      if (s === undefined) throw new RetriableError(`schema id ${id} not found (yet)`);
      return s;
    },
  };
  return { resolver, calls, setDown: (d) => (down = d) };
}

const avro = (id: number, schema: string): RegisteredSchema => ({ id, type: 'AVRO', schema });

test('one fetch per id however many prepare it concurrently; the built value is kept', async () => {
  const reg = fakeRegistry({ 1: avro(1, 'a'), 2: avro(2, 'b') });
  let builds = 0;
  const cache = new RegistryCache(reg.resolver, 'AVRO', (r) => (builds++, `built:${r.schema}`));
  assert.equal(cache.settled(1), false);
  assert.throws(() => cache.get(1), FatalError); // used before prepare: a bug, not bad data
  const got = await Promise.all([cache.prepare(1), cache.prepare(1), cache.prepare(2), cache.prepare(1)]);
  assert.deepEqual(got, ['built:a', 'built:a', 'built:b', 'built:a']);
  assert.deepEqual(reg.calls, [1, 2]);
  assert.equal(builds, 2);
  assert.equal(cache.settled(1), true);
  assert.equal(cache.get(1), 'built:a');
  assert.equal(await cache.prepare(1), 'built:a');
  assert.deepEqual(reg.calls, [1, 2]);
});

test('an unknown id or an unreachable registry is retried on the next prepare, never cached', async () => {
  const schemas: Record<number, RegisteredSchema> = {};
  const reg = fakeRegistry(schemas);
  const cache = new RegistryCache(reg.resolver, 'AVRO', (r) => r.schema);
  await assert.rejects(cache.prepare(7), RetriableError);
  assert.equal(cache.settled(7), false);
  reg.setDown(true);
  schemas[7] = avro(7, 'late');
  await assert.rejects(cache.prepare(7), /unreachable/);
  reg.setDown(false);
  assert.equal(await cache.prepare(7), 'late');
  assert.deepEqual(reg.calls, [7, 7, 7]);
});

test('a schema of the wrong type, or one that does not build, fails for good without asking again', async () => {
  const reg = fakeRegistry({ 3: { id: 3, type: 'PROTOBUF', schema: 'syntax = "proto3";' }, 4: avro(4, 'bad') });
  const cache = new RegistryCache<string>(reg.resolver, 'AVRO', (r) => {
    throw new ConfigError(`schema ${r.id} does not fit the table`);
  });
  await assert.rejects(cache.prepare(3), (e: unknown) => e instanceof DataError && /schema id 3 is PROTOBUF, not AVRO/.test(e.message));
  // The schema that does not build is its records' problem (errors.tolerance), not the configuration's.
  const unfit = (e: unknown): boolean => e instanceof DataError && e.stage === 'convert' && /^schema id 4 does not fit the table: schema 4 does not fit the table/.test(e.message);
  await assert.rejects(cache.prepare(4), unfit);
  assert.equal(cache.settled(3), true);
  assert.throws(() => cache.get(3), DataError);
  assert.throws(() => cache.get(4), unfit);
  await assert.rejects(cache.prepare(4), unfit);
  assert.deepEqual(reg.calls, [3, 4]);
});

test('a retriable failure of the build itself is not cached either', async () => {
  const reg = fakeRegistry({ 5: avro(5, 's') });
  let fail = true;
  const cache = new RegistryCache(reg.resolver, 'AVRO', (r) => {
    if (fail) throw new RetriableError('transient');
    return r.schema;
  });
  await assert.rejects(cache.prepare(5), RetriableError);
  fail = false;
  assert.equal(await cache.prepare(5), 's');
});
