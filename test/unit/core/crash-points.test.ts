import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../../src/core/errors.ts';
import { armCrashPoints, CRASH_POINTS, NO_CRASH_POINTS, parseCrashSpec } from '../../../src/core/crash-points.ts';

class Died extends Error {}

test('a crash point fires on its N-th hit only, naming itself', () => {
  const lines: string[] = [];
  const points = armCrashPoints(parseCrashSpec('task.in-transaction', '3'), (line) => {
    lines.push(line);
    throw new Died(line);
  });
  points.reach('task.after-upload'); // another point: ignored
  points.reach('task.in-transaction');
  points.reach('task.in-transaction');
  assert.throws(() => points.reach('task.in-transaction'), Died);
  assert.deepEqual(lines, ['icefloe: crash point task.in-transaction reached (hit 3); killing the process']);
});

test('unknown points and bad counts are configuration errors; no point set means no crash', () => {
  assert.throws(() => parseCrashSpec('task.after-lunch', undefined), ConfigError);
  assert.throws(() => parseCrashSpec('task.after-upload', '0'), ConfigError);
  assert.equal(parseCrashSpec(undefined, undefined), undefined);
  assert.equal(parseCrashSpec('', '2'), undefined);
  assert.deepEqual(parseCrashSpec('committer.between-tables', undefined), { point: 'committer.between-tables', after: 1 });
  assert.equal(armCrashPoints(undefined, () => { throw new Died(); }), NO_CRASH_POINTS);
  for (const p of CRASH_POINTS) NO_CRASH_POINTS.reach(p);
});

test('the crash action: kill by default, throw on request, anything else is a configuration error', () => {
  assert.equal(parseCrashSpec('task.after-upload', '2', undefined)?.action, undefined);
  assert.equal(parseCrashSpec('task.after-upload', '2', '')?.action, undefined);
  assert.equal(parseCrashSpec('task.after-upload', '2', 'kill')?.action, undefined);
  assert.deepEqual(parseCrashSpec('task.after-upload', '2', 'throw'), { point: 'task.after-upload', after: 2, action: 'throw' });
  assert.throws(() => parseCrashSpec('task.after-upload', '2', 'explode'), /unknown crash action "explode"; known: kill, throw, stop, hang/);
});

test('a stall point (action hang): reachAsync writes the line naming it and never settles, on its N-th hit only; other actions there kill', async () => {
  assert.deepEqual(parseCrashSpec('task.in-kafka-call', '2', 'hang'), { point: 'task.in-kafka-call', after: 2, action: 'hang' });
  const lines: string[] = [];
  const points = armCrashPoints(parseCrashSpec('task.in-kafka-call', '2', 'hang'), () => assert.fail('hang does not kill'), (line) => lines.push(line));
  await points.reachAsync?.('task.after-upload'); // another point: settles
  await points.reachAsync?.('task.in-kafka-call'); // the first hit: settles
  const hung = points.reachAsync?.('task.in-kafka-call');
  const outcome = await Promise.race([hung?.then(() => 'settled'), new Promise((resolve) => setTimeout(() => resolve('still hanging'), 100))]);
  assert.equal(outcome, 'still hanging');
  assert.deepEqual(lines, ['icefloe: stall point task.in-kafka-call reached (hit 2); the call hangs (never returns)']);
  await points.reachAsync?.('task.in-kafka-call'); // later hits: settle
  const killed: string[] = [];
  const kill = armCrashPoints(parseCrashSpec('task.in-kafka-call', '1'), (line) => killed.push(line));
  await kill.reachAsync?.('task.in-kafka-call');
  assert.deepEqual(killed, ['icefloe: crash point task.in-kafka-call reached (hit 1); killing the process']);
});
