import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CommitStateUnknownError, ConfigError, RetriableError } from '../../../src/core/errors.ts';
import { prng } from '../../../src/core/prng.ts';
import { Backoff, RetryBudget, checkBounds, retry, systemClock } from '../../../src/core/retry.ts';
import type { RetryBounds, RetryEvent } from '../../../src/core/retry.ts';
import { FakeClock } from '../../helpers/clock.ts';

const bounds = (b: Partial<RetryBounds> = {}): RetryBounds => ({ initialDelayMs: 100, maxDelayMs: 5000, maxAttempts: 5, totalTimeoutMs: Infinity, ...b });

/** An operation that fails `failures` times with `error`, then answers 'ok' (see the runaway guard). */
function flaky(failures: number, error: () => unknown = () => new RetriableError('down')): { fn: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    fn: async () => {
      calls++;
      // A broken bound must fail a test, not hang it: past 1000 calls, a failure no predicate retries.
      if (calls > 1000) throw new Error('runaway: retried past every bound under test');
      if (calls <= failures) throw error();
      return 'ok';
    },
    calls: () => calls,
  };
}

test('Backoff: every delay lies in [initial, min(max, 3 × previous)] and never exceeds max', () => {
  const b = new Backoff({ initialDelayMs: 100, maxDelayMs: 5000 }, prng(7));
  let previous = 100;
  const seen: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const d = b.next();
    assert.ok(Number.isInteger(d), `whole ms: ${d}`);
    assert.ok(d >= 100, `never below initial: ${d}`);
    assert.ok(d <= Math.min(5000, 3 * previous), `step ${i}: ${d} within 3 × ${previous} and the cap`);
    seen.push(d);
    previous = d;
  }
  assert.ok(seen.includes(5000), 'reaches the cap');
});

test('Backoff: the jitter spreads the first delay over [initial, 3 × initial)', () => {
  const random = prng(42);
  const first: number[] = [];
  for (let i = 0; i < 1000; i++) first.push(new Backoff({ initialDelayMs: 100, maxDelayMs: 60_000 }, random).next());
  assert.ok(Math.min(...first) < 110, `some retriers go early: ${Math.min(...first)}`);
  assert.ok(Math.max(...first) > 290 && Math.max(...first) < 300, `some go late, none at 3 × initial: ${Math.max(...first)}`);
  assert.ok(new Set(first).size > 100, 'not one shared delay (that would be no jitter at all)');
});

test('Backoff: grows by at most ×3 per step, capped; reset starts again from the initial delay', () => {
  const top = new Backoff({ initialDelayMs: 10, maxDelayMs: 500 }, () => 1);
  assert.deepEqual([top.next(), top.next(), top.next(), top.next(), top.next()], [30, 90, 270, 500, 500]);
  assert.equal(top.count, 5);
  top.reset();
  assert.equal(top.count, 0);
  assert.equal(top.next(), 30);
  const bottom = new Backoff({ initialDelayMs: 10, maxDelayMs: 500 }, () => 0);
  assert.deepEqual([bottom.next(), bottom.next()], [10, 10], 'the lowest draw waits the initial delay, never less');
  assert.equal(new Backoff({ initialDelayMs: 0, maxDelayMs: 0 }).next(), 0, 'initial 0: no waiting');
});

test('retry: retriable failures are retried with the back-off, then the answer is returned', async () => {
  const clock = new FakeClock();
  const op = flaky(3);
  const events: RetryEvent[] = [];
  const out = await retry(op.fn, { bounds: bounds(), clock, random: () => 0.5, onRetry: (e) => events.push(e) });
  assert.equal(out, 'ok');
  assert.equal(op.calls(), 4);
  assert.deepEqual(clock.sleeps, [200, 350, 575], 'decorrelated: 100 + 0.5 × (3 × previous − 100)');
  assert.deepEqual(
    events.map((e) => [e.attempt, e.delayMs]),
    [
      [1, 200],
      [2, 350],
      [3, 575],
    ],
  );
});

test('retry: gives up with the last failure when the attempts are used up', async () => {
  const clock = new FakeClock();
  const op = flaky(10, () => new RetriableError(`down at ${clock.now()}`));
  await assert.rejects(retry(op.fn, { bounds: bounds({ maxAttempts: 3 }), clock, random: () => 0 }), /down at 200/);
  assert.equal(op.calls(), 3);
  assert.equal(clock.sleeps.length, 2, 'no wait after the last attempt');
});

test('retry: no attempt starts after the total time-out', async () => {
  const clock = new FakeClock(1_000_000);
  const op = flaky(Infinity);
  // Waits of exactly 300 ms (random 0): attempts at 0, 300, 600, 900; the next would start at 1200 > 1000.
  // (maxAttempts 100 rather than Infinity: a broken time bound then fails this test instead of hanging it.)
  await assert.rejects(retry(op.fn, { bounds: bounds({ initialDelayMs: 300, maxAttempts: 100, totalTimeoutMs: 1000 }), clock, random: () => 0 }), RetriableError);
  assert.equal(op.calls(), 4);
  assert.deepEqual(clock.sleeps, [300, 300, 300]);
});

test('retry: Infinity attempts go on until shouldStop, which gives up with the last failure', async () => {
  const clock = new FakeClock();
  const op = flaky(Infinity);
  let stop = false;
  clock.onSleep = () => {
    if (clock.sleeps.length === 50) stop = true; // asked to stop during the 50th wait
  };
  await assert.rejects(
    retry(op.fn, { bounds: bounds({ maxAttempts: Infinity, maxDelayMs: 1000 }), clock, shouldStop: () => stop }),
    RetriableError,
  );
  assert.equal(op.calls(), 50, 'no attempt after the stop');
  assert.ok(clock.sleeps.every((d) => d >= 100 && d <= 1000));
});

test('retry: an abort rejects with the signal’s reason — before the first attempt, during a wait, or mid-attempt', async () => {
  const reason = new Error('shutting down');
  const before = new AbortController();
  before.abort(reason);
  const op0 = flaky(0);
  await assert.rejects(retry(op0.fn, { bounds: bounds(), clock: new FakeClock(), signal: before.signal }), (e) => e === reason);
  assert.equal(op0.calls(), 0);

  const during = new AbortController();
  const clock = new FakeClock();
  clock.onSleep = () => during.abort(reason);
  const op1 = flaky(Infinity);
  await assert.rejects(retry(op1.fn, { bounds: bounds({ maxAttempts: Infinity }), clock, signal: during.signal }), (e) => e === reason);
  assert.equal(op1.calls(), 1);

  const mid = new AbortController();
  await assert.rejects(
    retry(
      async () => {
        mid.abort(reason);
        // What a client library throws when its request is cancelled: foreign, so not retriable by itself.
        throw Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });
      },
      { bounds: bounds(), clock: new FakeClock(), signal: mid.signal },
    ),
    (e) => e === reason,
  );
});

test('retry: failures the predicate refuses are thrown at once (default: only IcefloeError.retriable)', async () => {
  for (const error of [new ConfigError('bad'), new CommitStateUnknownError('lost answer'), new Error('foreign, whatever it says: retry')]) {
    const op = flaky(1, () => error);
    await assert.rejects(retry(op.fn, { bounds: bounds(), clock: new FakeClock() }), (e) => e === error);
    assert.equal(op.calls(), 1, error.message);
  }
  const foreign = flaky(2, () => Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
  const out = await retry(foreign.fn, { bounds: bounds(), clock: new FakeClock(), retriable: (e) => (e as { code?: string }).code === 'ECONNRESET' });
  assert.equal(out, 'ok');
  assert.equal(foreign.calls(), 3);
});

test('RetryBudget: counts attempts, reports time left, refuses a wait past the deadline', () => {
  const clock = new FakeClock();
  const budget = new RetryBudget(bounds({ initialDelayMs: 400, maxAttempts: 10, totalTimeoutMs: 1000 }), { clock, random: () => 0 });
  assert.equal(budget.remainingMs(), 1000, 'the clock starts with the first attempt');
  clock.nowMs = 5000;
  assert.equal(budget.start(), 1);
  clock.nowMs = 5700;
  assert.equal(budget.remainingMs(), 300);
  assert.equal(budget.nextDelay(), undefined, 'a 400 ms wait would end after the deadline');
  assert.equal(budget.attempts, 1);
});

test('checkBounds: bounds that cannot work are a ConfigError', () => {
  for (const b of [
    bounds({ initialDelayMs: -1 }),
    bounds({ maxDelayMs: 50 }),
    bounds({ maxDelayMs: Infinity }),
    bounds({ maxAttempts: 0 }),
    bounds({ maxAttempts: 1.5 }),
    bounds({ totalTimeoutMs: -5 }),
    bounds({ totalTimeoutMs: NaN }),
  ]) {
    assert.throws(() => checkBounds(b), ConfigError, JSON.stringify(b));
  }
  assert.doesNotThrow(() => checkBounds(bounds({ maxAttempts: Infinity, totalTimeoutMs: Infinity })));
});

test('systemClock: sleep waits on a real timer and an abort ends it at once with the reason', async () => {
  const started = systemClock.now();
  await systemClock.sleep(20);
  assert.ok(systemClock.now() - started >= 15);
  const ac = new AbortController();
  const reason = new Error('stop');
  const t0 = systemClock.now();
  const sleeping = systemClock.sleep(60_000, ac.signal);
  setTimeout(() => ac.abort(reason), 5);
  const stillSleeping = new Promise((resolve) => setTimeout(() => resolve('still sleeping 1 s after the abort'), 1000));
  await assert.rejects(Promise.race([sleeping, stillSleeping]), (e) => e === reason);
  assert.ok(systemClock.now() - t0 < 1000);
});
