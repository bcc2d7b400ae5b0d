/**
 * The producer's freeze detector (src/consume/confluent/stall-watch.ts) on a real process: a child that
 * runs a StallWatch is stopped (SIGSTOP) for 1.5 s and continued; it then reports a stall of about that
 * length, and none before the stop.
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const MODULE = new URL('../../../src/consume/confluent/stall-watch.ts', import.meta.url).href;

test('a process stopped for 1.5 s notices the stall once it runs again', { timeout: 20_000 }, async () => {
  const script = join(mkdtempSync(join(tmpdir(), 'icefloe-stall-')), 'child.ts');
  writeFileSync(script, `import { StallWatch } from '${MODULE}';
const w = new StallWatch();
const t0 = performance.now();
process.on('message', () => process.send?.({ longest: w.longestSince(t0) }));
setInterval(() => undefined, 1000);
process.send?.('ready');
`);
  const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = (): Promise<unknown> => new Promise((resolve) => child.once('message', resolve));
  try {
    assert.equal(await next(), 'ready');
    await new Promise((r) => setTimeout(r, 700));
    child.send('report');
    assert.deepEqual(await next(), { longest: 0 }, 'no stall while it ran');
    child.kill('SIGSTOP');
    await new Promise((r) => setTimeout(r, 1_500));
    child.kill('SIGCONT');
    await new Promise((r) => setTimeout(r, 700));
    child.send('report');
    const { longest } = (await next()) as { longest: number };
    assert.ok(longest >= 1_000 && longest < 3_000, `a stall of about 1.5 s, got ${longest} ms`);
  } finally {
    child.kill('SIGKILL');
  }
});
