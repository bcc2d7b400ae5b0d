import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

test('icefloe version names the package version and the Node runtime', () => {
  const r = run('version');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^icefloe \d+\.\d+\.\d+ \(node v24\./);
});

test('an unknown command exits 2 with the usage', () => {
  const r = run('frobnicate');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown command 'frobnicate'/);
  assert.match(r.stderr, /usage: icefloe/);
});
