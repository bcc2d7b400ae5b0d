/**
 * The Redis coordination adapter (src/coordinate/redis/) against the stack's real Redis: membership
 * judged by each worker's own clock (a flush changes nobody's view, a graceful leave is seen within a
 * heartbeat, a silent member leaves after the session timeout, an outage keeps the view), leases that
 * fence a holder whose event loop was blocked past the TTL, and BullMQ wake-ups that reach another client
 * and coalesce without losing one.
 *
 * Redis is shared with other tests: every test uses its own random key prefix, and the flush test uses a
 * database of its own (FLUSHDB on it, never FLUSHALL). Timings are short (heartbeat 200 ms, session
 * 1500 ms, lease TTL 1000 ms) so the file runs in well under a minute.
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, test, type TestContext } from 'node:test';
import { Redis } from 'ioredis';
import type { Coordination, MemberInfo } from '../../src/coordinate/cluster-port.ts';
import { clusterKeyPrefix, redisCoordination } from '../../src/coordinate/redis/index.ts';
import { LeaseLostError, RetriableError } from '../../src/core/errors.ts';
import type { Logger } from '../../src/core/log.ts';
import { freePort, requireReachable, stackEndpoints } from '../helpers/stack.ts';

const HEARTBEAT_MS = 200;
const SESSION_MS = 1500;
const TTL_MS = 1000;
/** The database the flush test owns (FLUSHDB wipes only it). */
const FLUSH_DB = 7;

const { redisUrl } = stackEndpoints();

function inDb(url: string, db: number): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

interface Line {
  readonly level: string;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** A logger that keeps every line, for asserting what was said (and how often). */
function capture(lines: Line[]): Logger {
  const at =
    (level: string) =>
    (message: string, fields: Readonly<Record<string, unknown>> = {}): void =>
      void lines.push({ level, message, fields });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return log;
}

/** Raw clients for setup and inspection, closed after the file. */
const raws: Redis[] = [];
function raw(url = redisUrl): Redis {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  raws.push(r);
  return r;
}
after(() => {
  for (const r of raws) r.disconnect();
});

interface WorkerOptions {
  readonly url?: string;
  readonly lines?: Line[];
  readonly joinTimeoutMs?: number;
}

/** A worker's coordination with the test's timings. */
function coordination(prefix: string, workerId: string, options: WorkerOptions = {}): Coordination {
  return redisCoordination({
    redisUrl: options.url ?? redisUrl,
    keyPrefix: prefix,
    workerId,
    restUrl: `http://${workerId}.test:8083`,
    heartbeatMs: HEARTBEAT_MS,
    sessionTimeoutMs: SESSION_MS,
    leaseTtlMs: TTL_MS,
    log: capture(options.lines ?? []),
    ...(options.joinTimeoutMs === undefined ? {} : { joinTimeoutMs: options.joinTimeoutMs }),
  });
}

/**
 * A fresh cluster under a random prefix. After the test its workers are closed (not left) and then its
 * keys deleted, in that order, so no heartbeat writes them again.
 */
function cluster(t: TestContext, url = redisUrl): { prefix: string; worker(workerId: string, options?: WorkerOptions): Coordination } {
  const prefix = clusterKeyPrefix(`test-${randomUUID()}`);
  const workers: Coordination[] = [];
  t.after(async () => {
    await Promise.all(workers.map((w) => w.close()));
    const r = raw(url);
    const keys = await r.keys(`${prefix}*`);
    if (keys.length > 0) await r.del(...keys);
  });
  return {
    prefix,
    worker: (workerId, options = {}) => {
      const w = coordination(prefix, workerId, { url, ...options });
      workers.push(w);
      return w;
    },
  };
}

const ids = (members: readonly MemberInfo[]): string[] => members.map((m) => m.workerId);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every 10 ms; the elapsed ms once it holds, or a failure naming `what` after `timeoutMs`. */
async function until(what: string, condition: () => boolean, timeoutMs: number): Promise<number> {
  const started = performance.now();
  while (!condition()) {
    if (performance.now() - started > timeoutMs) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await sleep(10);
  }
  return performance.now() - started;
}

/** Blocks this process's event loop (no timer, no socket read runs) for `ms`: a GC pause, a frozen process. */
function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin
  }
}

test('three workers see each other, sorted, with their URLs; a graceful leave is seen within one heartbeat', async (t) => {
  await requireReachable('Redis', redisUrl);
  const k = cluster(t);
  const [a, b, c] = ['w-a', 'w-b', 'w-c'].map((id) => k.worker(id)) as [Coordination, Coordination, Coordination];
  const changes: string[][] = [];
  a.membership.onChange((m) => changes.push(ids(m)));
  assert.equal(a.membership.healthy(), false, 'not healthy before the first heartbeat');
  await Promise.all([a, b, c].map((w) => w.membership.join()));
  for (const w of [a, b, c]) assert.equal(w.membership.healthy(), true);
  await until('every worker sees all three', () => [a, b, c].every((w) => w.membership.members().length === 3), 2 * HEARTBEAT_MS + 500);
  for (const w of [a, b, c]) {
    assert.deepEqual(w.membership.members(), [
      { workerId: 'w-a', url: 'http://w-a.test:8083' },
      { workerId: 'w-b', url: 'http://w-b.test:8083' },
      { workerId: 'w-c', url: 'http://w-c.test:8083' },
    ]);
  }
  assert.deepEqual(changes.at(-1), ['w-a', 'w-b', 'w-c']);

  await c.membership.leave();
  const seen = await until('a and b drop the leaver', () => [a, b].every((w) => !ids(w.membership.members()).includes('w-c')), SESSION_MS + 1000);
  t.diagnostic(`leave seen by both after ${Math.round(seen)} ms (heartbeat ${HEARTBEAT_MS} ms, session timeout ${SESSION_MS} ms)`);
  // One poll interval plus a poll's round trip (and slack for a loaded machine), far below the session timeout.
  assert.ok(seen <= 2 * HEARTBEAT_MS + 200, `leave seen after ${Math.round(seen)} ms`);
  assert.deepEqual(changes.at(-1), ['w-a', 'w-b']);
});

test('FLUSHDB changes nobody\'s view, every worker registers again within a heartbeat, and a lease it wiped is lost, not re-taken', async (t) => {
  const url = inDb(redisUrl, FLUSH_DB);
  const k = cluster(t, url);
  const prefix = k.prefix;
  const workers = ['w-a', 'w-b', 'w-c'].map((id) => k.worker(id));
  let changes = 0;
  for (const w of workers) w.membership.onChange(() => changes++);
  await Promise.all(workers.map((w) => w.membership.join()));
  await until('all three seen', () => workers.every((w) => w.membership.members().length === 3), 2000);
  const [a, b] = workers as [Coordination, Coordination];
  const lease = await a.leases.tryAcquire('db.orders');
  assert.ok(lease !== null);
  const lost: string[] = [];
  lease.onLost((reason) => lost.push(reason));
  changes = 0;
  const r = raw(url);
  const before = workers.map((w) => ids(w.membership.members()));
  const sampleUntil = performance.now() + 2 * SESSION_MS;
  await sleep(300);
  await r.flushdb();
  const flushedAt = performance.now();
  let registeredAfter: number | undefined;
  while (performance.now() < sampleUntil) {
    assert.deepEqual(workers.map((w) => ids(w.membership.members())), before, 'a view changed after the flush');
    if (registeredAfter === undefined && (await r.zcard(`${prefix}members`)) === 3) registeredAfter = performance.now() - flushedAt;
    await sleep(20);
  }
  assert.equal(changes, 0, 'onChange fired after the flush');
  assert.ok(registeredAfter !== undefined && registeredAfter <= 2 * HEARTBEAT_MS + 200, `all three registered again after ${String(registeredAfter)} ms`);
  t.diagnostic(`all three registered again ${Math.round(registeredAfter)} ms after FLUSHDB; no view changed over ${2 * SESSION_MS} ms`);
  assert.deepEqual((await r.zrange(`${prefix}members`, '0', '-1')).sort(), ['w-a', 'w-b', 'w-c']);
  assert.ok(workers.every((w) => w.membership.healthy()));
  // The flush took the lease with it: its holder learnt so at its next renewal and did not take it back
  // (another worker may have been elected meanwhile); anyone may acquire it now.
  assert.equal(lost.length, 1, 'the wiped lease was not reported lost');
  assert.equal(lease.held(), false);
  assert.equal(await r.exists(`${prefix}lease:db.orders`), 0, 'the old holder re-created its lease');
  assert.ok((await b.leases.tryAcquire('db.orders')) !== null);
});

test('a worker that stops heartbeating without leaving is dropped after the session timeout, not before', async (t) => {
  const k = cluster(t);
  const a = k.worker('w-a');
  const silent = k.worker('w-silent');
  await Promise.all([a.membership.join(), silent.membership.join()]);
  await until('a sees the other', () => a.membership.members().length === 2, 2000);
  await silent.close(); // timers stop, nothing deregistered: a crash as the others see it
  const stoppedAt = performance.now();
  await sleep(SESSION_MS - 2 * HEARTBEAT_MS);
  assert.deepEqual(ids(a.membership.members()), ['w-a', 'w-silent'], 'dropped before the session timeout');
  await until('a drops the silent worker', () => a.membership.members().length === 1, 3 * HEARTBEAT_MS + 500);
  const droppedAfter = performance.now() - stoppedAt;
  t.diagnostic(`silent worker dropped ${Math.round(droppedAfter)} ms after its last heartbeat could have been sent (session ${SESSION_MS} ms)`);
  // Its last heartbeat was at most one interval before close(); a poll is at most one interval late (plus
  // slack for a loaded machine).
  assert.ok(droppedAfter >= SESSION_MS - HEARTBEAT_MS && droppedAfter <= SESSION_MS + 3 * HEARTBEAT_MS + 300, `dropped after ${Math.round(droppedAfter)} ms`);
});

/** A TCP proxy in front of Redis that the test can cut (every connection dropped, no new ones) and restore. */
async function cuttableProxy(target: string): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const to = new URL(target);
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = async (): Promise<void> => {
    server = createServer((client) => {
      const upstream = connect({ host: to.hostname, port: Number(to.port) });
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
  };
  const cut = async (): Promise<void> => {
    const s = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (s !== undefined) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  return { url: `redis://127.0.0.1:${port}`, cut, restore: listen, close: cut };
}

test('while Redis is unreachable a worker keeps its view, is unhealthy, warns once, and recovers by itself', async (t) => {
  const k = cluster(t);
  const proxy = await cuttableProxy(redisUrl);
  t.after(() => proxy.close());
  const lines: Line[] = [];
  const a = k.worker('w-a', { url: proxy.url, lines });
  const b = k.worker('w-b');
  await Promise.all([a.membership.join(), b.membership.join()]);
  await until('a sees b', () => a.membership.members().length === 2, 2000);
  const view = a.membership.members();
  await proxy.cut();
  await until('a notices the outage', () => !a.membership.healthy(), 2 * HEARTBEAT_MS + 1500);
  // Longer than the session timeout: b keeps heartbeating, but a cannot see it; it must not drop b.
  await sleep(SESSION_MS + 500);
  assert.equal(a.membership.members(), view, 'the view changed during the outage');
  const warnings = lines.filter((l) => l.level === 'warn');
  assert.equal(warnings.length, 1, `one warning per outage, got ${warnings.map((w) => w.message).join(' | ')}`);
  assert.match(String(warnings[0]?.fields['redis']), /^redis:\/\/127\.0\.0\.1:\d+/);
  await proxy.restore();
  const back = await until('a is healthy again', () => a.membership.healthy(), 3000);
  t.diagnostic(`healthy ${Math.round(back)} ms after Redis came back`);
  assert.deepEqual(ids(a.membership.members()), ['w-a', 'w-b']);
  assert.ok(lines.some((l) => l.level === 'info' && /reachable again/.test(l.message)));
});

test('join() rejects with a RetriableError naming the Redis URL (never its password) after a bounded wait', async (t) => {
  const port = await freePort();
  const c = coordination(clusterKeyPrefix(`test-${randomUUID()}`), 'w-a', { url: `redis://:hunter2@127.0.0.1:${port}/0`, joinTimeoutMs: 1000 });
  t.after(() => c.close());
  const started = performance.now();
  const error: unknown = await c.membership.join().then(
    () => assert.fail('joined a Redis that does not exist'),
    (e: unknown) => e,
  );
  const took = performance.now() - started;
  assert.ok(error instanceof RetriableError, String(error));
  assert.match(error.message, new RegExp(`redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port}/0`));
  assert.doesNotMatch(error.message, /hunter2/);
  assert.ok(took >= 800 && took < 3000, `gave up after ${Math.round(took)} ms`);
  assert.deepEqual(ids(c.membership.members()), ['w-a'], 'members() always holds this worker');
  // The rest gives up as promptly: a wake-up (tasks must not hang on it), a lease, and shutting down.
  await assert.rejects(c.wakeups.wake('orders'), (e: unknown) => e instanceof RetriableError && !e.message.includes('hunter2'));
  await assert.rejects(c.leases.tryAcquire('db.orders'), RetriableError);
  const closing = performance.now();
  await c.close();
  assert.ok(performance.now() - closing < 3000, `close() took ${Math.round(performance.now() - closing)} ms with Redis down`);
});

test('a lease is exclusive across clients and renews itself while held', async (t) => {
  const k = cluster(t);
  const a = k.worker('w-a');
  const b = k.worker('w-b');
  const lease = await a.leases.tryAcquire('db.orders');
  assert.ok(lease !== null);
  assert.match(lease.token, /^w-a\/[0-9a-f-]{36}$/);
  assert.equal(await b.leases.tryAcquire('db.orders'), null);
  assert.equal(await b.leases.holder('db.orders'), 'w-a');
  assert.equal(await b.leases.holder('db.other'), null);
  const lost: string[] = [];
  lease.onLost((r) => lost.push(r));
  // Three TTLs: only the renewals keep it.
  for (let i = 0; i < 6; i++) {
    await sleep(TTL_MS / 2);
    assert.equal(await b.leases.tryAcquire('db.orders'), null, `b acquired it after ${(i + 1) * (TTL_MS / 2)} ms`);
    assert.equal(lease.held(), true);
  }
  await lease.check();
  assert.deepEqual(lost, []);
  await lease.release();
  assert.equal(lease.held(), false);
  await assert.rejects(lease.check(), LeaseLostError);
  assert.deepEqual(lost, [], 'release is not a loss');
});

test('a holder whose event loop was blocked past the TTL knows it at once, another acquires, and its check() throws', async (t) => {
  const k = cluster(t);
  const a = k.worker('w-a');
  const b = k.worker('w-b');
  const lease = await a.leases.tryAcquire('db.orders');
  assert.ok(lease !== null);
  const lost: string[] = [];
  lease.onLost((r) => lost.push(r));
  await sleep(TTL_MS / 2);
  busyWait(TTL_MS + 500);
  // Before anything else runs (no renewal, no reply): the local clock alone says the lease is stale.
  assert.equal(lease.held(), false, 'held() after a blocked event loop');
  const taken = await b.leases.tryAcquire('db.orders');
  assert.ok(taken !== null, 'another client could not acquire the expired lease');
  const error: unknown = await lease.check().then(
    () => assert.fail('check() passed for a lost lease'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof LeaseLostError, String(error));
  assert.equal(error.retriable, false);
  assert.equal(await a.leases.holder('db.orders'), 'w-b');
  await sleep(TTL_MS);
  assert.equal(lost.length, 1, `onLost called once, got ${JSON.stringify(lost)}`);
  assert.equal(await a.leases.holder('db.orders'), 'w-b', 'the old holder took the lease back');
  await taken.check();
});

test('Redis decides by token: a holder whose key was taken over fails check(), loses the lease at its next renewal, and its release leaves the new holder alone', async (t) => {
  const k = cluster(t);
  const prefix = k.prefix;
  const a = k.worker('w-a');
  const b = k.worker('w-b');
  const lease = await a.leases.tryAcquire('db.orders');
  assert.ok(lease !== null);
  const lost: string[] = [];
  lease.onLost((r) => lost.push(r));
  // The key vanishes (an expiry a's clock did not see, a flush) and b takes it.
  await raw().del(`${prefix}lease:db.orders`);
  const taken = await b.leases.tryAcquire('db.orders');
  assert.ok(taken !== null);
  assert.equal(lease.held(), true, 'locally still fresh: only Redis can tell');
  await assert.rejects(lease.check(), LeaseLostError);
  assert.equal(lease.held(), false);
  await lease.release();
  assert.equal(await a.leases.holder('db.orders'), 'w-b', 'a\'s release deleted b\'s lease');
  await taken.check();

  // The renewal loop refuses too: c's lease is taken over behind its back and c notices within one renewal.
  const c = k.worker('w-c');
  const other = await c.leases.tryAcquire('db.refunds');
  assert.ok(other !== null);
  const cLost: string[] = [];
  other.onLost((r) => cLost.push(r));
  await raw().set(`${prefix}lease:db.refunds`, 'w-z/intruder', 'PX', 10_000);
  await until('c loses the lease at its next renewal', () => cLost.length === 1, TTL_MS / 3 + 300);
  assert.equal(other.held(), false);
  assert.equal(await c.leases.holder('db.refunds'), 'w-z', 'the renewal extended or replaced another token\'s key');
  assert.ok((await raw().pttl(`${prefix}lease:db.refunds`)) > 8000, 'the renewal touched another token\'s TTL');
  await other.release();
  assert.deepEqual(lost.length, 1);
});

test('release lets another worker acquire at once', async (t) => {
  const k = cluster(t);
  const a = k.worker('w-a');
  const b = k.worker('w-b');
  const lease = await a.leases.tryAcquire('db.orders');
  assert.ok(lease !== null);
  assert.equal(await b.leases.tryAcquire('db.orders'), null);
  await lease.release();
  const next = await b.leases.tryAcquire('db.orders');
  assert.ok(next !== null, 'b waited for the TTL instead of acquiring a released lease');
  assert.equal(await a.leases.holder('db.orders'), 'w-b');
  await next.release();
  assert.equal(await a.leases.holder('db.orders'), null);
});

test('wake-ups reach a listener in another client, per connector, and coalesce while one waits', async (t) => {
  const k = cluster(t);
  const committer = k.worker('w-committer');
  const task = k.worker('w-task');
  let calls = 0;
  let otherCalls = 0;
  const listener = await committer.wakeups.listen('orders sink', () => calls++);
  const other = await committer.wakeups.listen('refunds', () => otherCalls++);
  const sent = performance.now();
  await task.wakeups.wake('orders sink');
  await until('the committer is woken', () => calls === 1, 2000);
  const latency = performance.now() - sent;
  t.diagnostic(`wake-up reached the other client ${Math.round(latency)} ms after wake() was called`);
  assert.ok(latency < 500, `woken after ${Math.round(latency)} ms`);
  await sleep(300);
  assert.equal(calls, 1);
  assert.equal(otherCalls, 0, 'a wake-up reached another connector\'s listener');

  // Nobody listening: five wake-ups wait as one.
  await listener.close();
  for (let i = 0; i < 5; i++) await task.wakeups.wake('orders sink');
  calls = 0;
  const again = await committer.wakeups.listen('orders sink', () => calls++);
  await until('the waiting wake-up is delivered', () => calls === 1, 2000);
  await sleep(500);
  assert.equal(calls, 1, 'waiting wake-ups did not coalesce');
  await again.close();
  await other.close();
});

test('a wake-up that arrives while the handler runs is kept and delivered after it, not dropped', async (t) => {
  const k = cluster(t);
  const prefix = k.prefix;
  const committer = k.worker('w-committer');
  const child = fork(new URL('../helpers/redis-waker.ts', import.meta.url), [redisUrl, prefix, 'orders'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  t.after(async () => {
    // The waker exits by itself once close() left nothing open; a process that stays up kept a timer or socket.
    const exited = child.exitCode !== null ? Promise.resolve() : once(child, 'exit');
    if (child.connected) child.send('close');
    const stayed = await Promise.race([exited.then(() => false), sleep(5000).then(() => true)]);
    if (stayed) {
      child.kill('SIGKILL');
      assert.fail('the waker process did not exit within 5 s of close(): something stayed open');
    }
  });
  const replies: string[] = [];
  child.on('message', (m) => replies.push(String(m)));
  await until('the waker is ready', () => replies.includes('ready'), 10_000);
  let calls = 0;
  await committer.wakeups.listen('orders', () => {
    calls++;
    if (calls === 1) {
      // The other process wakes while this handler (the job) is still active; the busy wait keeps it so.
      child.send('wake');
      busyWait(700);
    }
  });
  const task = k.worker('w-task');
  await task.wakeups.wake('orders');
  await until('the first wake-up is handled', () => calls >= 1, 2000);
  await until('the waker\'s wake-up reached Redis', () => replies.includes('woken'), 2000);
  await until('the wake-up sent during the handler is delivered after it', () => calls === 2, 2000);
  await sleep(300);
  assert.equal(calls, 2);
});

test('close() leaves no timer and no socket behind', async (t) => {
  const k = cluster(t);
  const prefix = k.prefix;
  await sleep(100);
  const count = (): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const r of process.getActiveResourcesInfo()) out[r] = (out[r] ?? 0) + 1;
    return out;
  };
  const baseline = count();
  const c = redisCoordination({
    redisUrl,
    keyPrefix: prefix,
    workerId: 'w-closer',
    restUrl: 'http://w-closer.test:8083',
    heartbeatMs: HEARTBEAT_MS,
    sessionTimeoutMs: SESSION_MS,
    leaseTtlMs: TTL_MS,
    log: capture([]),
  });
  await c.membership.join();
  const lease = await c.leases.tryAcquire('db.orders');
  assert.ok(lease !== null);
  await c.wakeups.listen('orders', () => undefined);
  await c.wakeups.wake('orders');
  const busy = count();
  assert.ok((busy['TCPSocketWrap'] ?? 0) > (baseline['TCPSocketWrap'] ?? 0), `expected open sockets, got ${JSON.stringify(busy)}`);
  await c.close();
  await until('timers and sockets are gone', () => {
    const now = count();
    return (now['TCPSocketWrap'] ?? 0) <= (baseline['TCPSocketWrap'] ?? 0) && (now['Timeout'] ?? 0) <= (baseline['Timeout'] ?? 0);
  }, 2000).catch(() => assert.fail(`left behind: ${JSON.stringify(count())}, before: ${JSON.stringify(baseline)}`));
});
