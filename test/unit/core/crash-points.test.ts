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
  assert.throws(() => parseCrashSpec('task.after-upload', '2', 'explode'), /unknown crash action "explode"; known: kill, throw/);
});
