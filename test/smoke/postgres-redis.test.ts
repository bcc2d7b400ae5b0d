/**
 * Smoke: PostgreSQL (the SQL catalog's and the registry's database) answers from Node through pg, and
 * Redis (distributed mode's membership, leases and queues) answers plain RESP commands over a socket:
 * the service is checked without our client (ioredis), so a failure here is Redis's, not the client's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import pg from 'pg';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';

type Reply = string | number | null;

/** A RESP2 command: an array of bulk strings. */
function encode(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

/** One RESP2 reply at the start of `buf` (simple string, error, integer, bulk string), or undefined when incomplete. */
function parseReply(buf: Buffer): { value: Reply | Error; next: number } | undefined {
  const eol = buf.indexOf('\r\n');
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[0] ?? 0);
  const line = buf.toString('utf8', 1, eol);
  if (type === '+') return { value: line, next: eol + 2 };
  if (type === '-') return { value: new Error(line), next: eol + 2 };
  if (type === ':') return { value: Number(line), next: eol + 2 };
  if (type !== '$') return { value: new Error(`unexpected RESP reply type ${JSON.stringify(type)}`), next: buf.length };
  const len = Number(line);
  if (len < 0) return { value: null, next: eol + 2 };
  if (buf.length < eol + 2 + len + 2) return undefined;
  return { value: buf.toString('utf8', eol + 2, eol + 2 + len), next: eol + 2 + len + 2 };
}

/** Sends `commands` pipelined on one connection and returns their replies; a Redis error rejects. */
async function redis(url: string, commands: readonly (readonly string[])[]): Promise<Reply[]> {
  const u = new URL(url);
  const socket = connect({ host: u.hostname, port: Number(u.port === '' ? '6379' : u.port) });
  try {
    return await new Promise<Reply[]>((resolve, reject) => {
      let buf = Buffer.alloc(0);
      const replies: Reply[] = [];
      socket.setTimeout(5000, () => reject(new Error(`Redis at ${u.host} did not answer within 5 s`)));
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        for (let r = parseReply(buf); r !== undefined && replies.length < commands.length; r = parseReply(buf)) {
          if (r.value instanceof Error) return reject(r.value);
          replies.push(r.value);
          buf = buf.subarray(r.next);
        }
        if (replies.length === commands.length) resolve(replies);
      });
      socket.write(commands.map(encode).join(''));
    });
  } finally {
    socket.destroy();
  }
}

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

test('Redis: ping, and a key set with an expiry reads back', async () => {
  const { redisUrl } = stackEndpoints();
  await requireReachable('Redis', redisUrl);
  const key = `smoke:${randomUUID()}`;
  const [pong, set, got, ttl, deleted] = await redis(redisUrl, [['PING'], ['SET', key, 'leased', 'PX', '10000', 'NX'], ['GET', key], ['PTTL', key], ['DEL', key]]);
  assert.equal(pong, 'PONG');
  assert.equal(set, 'OK');
  assert.equal(got, 'leased');
  assert.ok(typeof ttl === 'number' && ttl > 0, `PTTL ${String(ttl)}`);
  assert.equal(deleted, 1);
});
