/**
 * The committer loop's back-off after failed rounds (issue 24 part 3): a back-off grown over an outage is
 * cut short and starts afresh when a task announces, so the first table commit after the outage follows
 * the tasks' announcements instead of the back-off's maximum. Mock timers: every wait is exact.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { CommitterLoop } from '../../../src/coordinate/committer-loop.ts';
import { SILENT_LOGGER } from '../../../src/core/log.ts';

/** Advances the mock clock by `ms` in steps, letting promise chains run between them. */
async function tick(t: TestContext, ms: number, step = 100): Promise<void> {
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };
  for (let left = ms; left > 0; left -= step) {
    await settle();
    t.mock.timers.tick(Math.min(step, left));
  }
  await settle();
  t.mock.timers.tick(0);
  await settle();
}

test('after an outage grew the round back-off to its maximum, a task\'s announcement starts a round after the wake delay, and the back-off starts afresh', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let down = true;
  const rounds: { readonly atMs: number; readonly ok: boolean }[] = [];
  let nowMs = 0;
  const intervalMs = 10_000;
  const loop = new CommitterLoop({
    round: () => {
      rounds.push({ atMs: nowMs, ok: !down });
      return down ? Promise.reject(new Error('Leader epoch is older than broker epoch')) : Promise.resolve([1]);
    },
  }, { intervalMs, wakeDelayMs: 100, log: SILENT_LOGGER, random: () => 0.999 });
  const advance = async (ms: number): Promise<void> => {
    for (let left = ms; left > 0; left -= 100) {
      await tick(t, Math.min(100, left));
      nowMs += Math.min(100, left);
    }
  };
  // The interval's round, then failures backing off ~6 s, ~18 s, 30 s, 30 s (jitter pinned high).
  for (let i = 0; i < 2_000 && rounds.length < 5; i++) await advance(100);
  assert.equal(rounds.length, 5, `five failed rounds: ${JSON.stringify(rounds)}`);
  assert.ok(rounds.every((r) => !r.ok));
  assert.equal((rounds[4]?.atMs ?? 0) - (rounds[3]?.atMs ?? 0), 30_000, `the back-off grew to its maximum, and the retry follows it at once: ${JSON.stringify(rounds)}`);
  // The broker is back; a task announces 1 s into the 30 s back-off.
  down = false;
  await advance(1_000);
  const announcedAt = nowMs;
  loop.wake(0);
  await advance(200);
  const first = rounds.find((r) => r.ok);
  assert.ok(first !== undefined, `a round after the announcement, not 30 s later: ${JSON.stringify(rounds)}`);
  assert.ok(first.atMs - announcedAt <= 2 * intervalMs, `within two commit intervals of the announcement (${first.atMs - announcedAt} ms)`);
  assert.ok(first.atMs - announcedAt <= 200, `after the wake delay (${first.atMs - announcedAt} ms)`);
  // The back-off started afresh: the next failure waits from the first step (under 6 s), not 30 s.
  down = true;
  loop.wake(0);
  await advance(200);
  const failedAt = rounds.at(-1)?.atMs ?? 0;
  assert.equal(rounds.at(-1)?.ok, false);
  down = false;
  await advance(6_100);
  const retried = rounds.findLast((r) => r.ok);
  assert.ok(retried !== undefined && retried.atMs > failedAt && retried.atMs - failedAt <= 6_000, `retried from the first back-off step (under 3 × its 2 s): ${JSON.stringify(rounds.slice(-3))}`);
  const stopped = loop.stop();
  await tick(t, 0);
  await stopped;
});

test('without an announcement, a failed round waits out its back-off (a failure alone is no news that the cause is gone)', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let calls = 0;
  const loop = new CommitterLoop({
    round: () => {
      calls++;
      return Promise.reject(new Error('catalog unreachable'));
    },
  }, { intervalMs: 10_000, wakeDelayMs: 100, log: SILENT_LOGGER, retry: { initialDelayMs: 30_000, maxDelayMs: 30_000 } });
  await tick(t, 10_000);
  assert.equal(calls, 1);
  await tick(t, 29_800);
  assert.equal(calls, 1, 'the back-off is waited out');
  await tick(t, 300);
  assert.equal(calls, 2, 'and the retry follows it at once (the back-off is its wait, not an interval more)');
  const stopped = loop.stop();
  await tick(t, 0);
  await stopped;
});
