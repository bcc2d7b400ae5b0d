/**
 * Smoke: PostgreSQL (the SQL catalog's and the registry's database) and Redis (leases and BullMQ
 * queues) answer from Node through pg and ioredis.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';

test('PostgreSQL: connect as the catalog user and run a query', async (t) => {
  const { postgresUrl } = stackEndpoints();
  await requireReachable('PostgreSQL', postgresUrl.replace(/^postgresql:\/\/[^@]*@/, 'tcp://'));
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  t.after(() => client.end());
  const r = await client.query<{ v: string; db: string }>('SELECT current_setting($1) AS v, current_database() AS db', ['server_version_num']);
  assert.ok(Number(r.rows[0]?.v) >= 150000, `server_version_num ${r.rows[0]?.v}`);
  assert.equal(r.rows[0]?.db, new URL(postgresUrl).pathname.slice(1));
});

test('Redis: ping, and a key set with an expiry reads back', async (t) => {
  const { redisUrl } = stackEndpoints();
  await requireReachable('Redis', redisUrl);
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect();
  t.after(() => redis.quit());
  assert.equal(await redis.ping(), 'PONG');
  const key = `smoke:${randomUUID()}`;
  await redis.set(key, 'leased', 'PX', 10_000, 'NX');
  assert.equal(await redis.get(key), 'leased');
  assert.ok((await redis.pttl(key)) > 0);
  await redis.del(key);
});
