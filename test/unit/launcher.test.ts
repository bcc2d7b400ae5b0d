/**
 * bin/icefloe, the launcher users put on their PATH: from a shell whose PATH has only the system's tools it
 * finds the repository through symlinks and runs the CLI with the project's Node (scripts/stack.env
 * NODE_VERSION, from the cache), never a `node` the PATH offers; when that Node or the npm dependencies
 * are missing it exits 127 naming the command that installs them.
 *
 * A `node` that records being run sits first on the PATH of every case: the launcher must never call it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { SpawnSyncReturns } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const nodeVersion = /^NODE_VERSION=(.+)$/m.exec(readFileSync(join(root, 'scripts/stack.env'), 'utf8'))?.[1] ?? '';

/** A scratch dir with a fake `node` (it leaves a marker when run) and a chain of two symlinks to the launcher. */
function scratch(t: { after(fn: () => void): void }, launcher = join(root, 'bin/icefloe')): { dir: string; link: string; marker: string; fakeBin: string } {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-launcher-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const fakeBin = join(dir, 'fake-bin');
  mkdirSync(fakeBin);
  const marker = join(dir, 'system-node-ran');
  writeFileSync(join(fakeBin, 'node'), `#!/bin/sh\ntouch '${marker}'\necho 'v18.0.0 (a system node)'\n`);
  chmodSync(join(fakeBin, 'node'), 0o755);
  mkdirSync(join(dir, 'local-bin'));
  // ~/.local/bin/icefloe -> a relative link -> the launcher: both kinds of link are followed.
  symlinkSync(launcher, join(dir, 'real-link'));
  symlinkSync('../real-link', join(dir, 'local-bin', 'icefloe'));
  return { dir, link: join(dir, 'local-bin', 'icefloe'), marker, fakeBin };
}

function runLauncher(link: string, fakeBin: string, args: readonly string[], env: Record<string, string> = {}): SpawnSyncReturns<string> {
  const cache = process.env['ICEFLOE_CACHE'];
  return spawnSync(link, args, {
    encoding: 'utf8',
    cwd: tmpdir(),
    env: { HOME: process.env['HOME'] ?? homedir(), PATH: `${fakeBin}:${SYSTEM_PATH}`, ...(cache === undefined ? {} : { ICEFLOE_CACHE: cache }), ...env },
  });
}

test('bin/icefloe through symlinks, with only system tools on the PATH, runs the CLI on the pinned Node', (t) => {
  assert.notEqual(nodeVersion, '');
  const s = scratch(t);
  const r = runLauncher(s.link, s.fakeBin, ['version']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), `icefloe ${(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version} (node v${nodeVersion})`);
  assert.equal(existsSync(s.marker), false, 'the node on the PATH must not be run');
  // Arguments and the exit status pass through.
  const none = runLauncher(s.link, s.fakeBin, []);
  assert.equal(none.status, 2);
  assert.match(none.stderr, /^usage: icefloe <command>/);
});

test('bin/icefloe without the project\'s Node exits 127 naming the commands that install it, and does not fall back', (t) => {
  const s = scratch(t);
  const emptyCache = join(s.dir, 'empty-cache');
  mkdirSync(emptyCache);
  const r = runLauncher(s.link, s.fakeBin, ['version'], { ICEFLOE_CACHE: emptyCache });
  assert.equal(r.status, 127);
  assert.equal(r.stdout, '');
  assert.equal(existsSync(s.marker), false, 'the node on the PATH must not be run');
  assert.ok(r.stderr.startsWith(`icefloe: Node ${nodeVersion} (the project's Node) is not installed in ${emptyCache}/node-${nodeVersion}.\n`), r.stderr);
  assert.match(r.stderr, new RegExp(`^ {2}${root}scripts/quickstart `, 'm'));
  assert.match(r.stderr, new RegExp(`^ {2}${root}scripts/stack install `, 'm'));
  assert.match(r.stderr, /A system node is not used/);
});

test('bin/icefloe in a checkout without node_modules exits 127 naming npm ci and the binding patch', (t) => {
  // A copy of the checkout's launcher, pinned version and CLI entry, but no node_modules.
  const repo = mkdtempSync(join(tmpdir(), 'icefloe-checkout-'));
  t.after(() => rmSync(repo, { recursive: true, force: true }));
  for (const f of ['bin/icefloe', 'scripts/stack.env', 'src/cli.ts']) {
    mkdirSync(join(repo, f, '..'), { recursive: true });
    copyFileSync(join(root, f), join(repo, f));
  }
  chmodSync(join(repo, 'bin/icefloe'), 0o755);
  const s = scratch(t, join(repo, 'bin/icefloe'));
  const r = runLauncher(s.link, s.fakeBin, ['version']);
  assert.equal(r.status, 127, r.stderr);
  assert.equal(existsSync(s.marker), false, 'the node on the PATH must not be run');
  assert.ok(r.stderr.startsWith(`icefloe: the npm dependencies are not installed in ${repo}/node_modules`), r.stderr);
  assert.match(r.stderr, new RegExp(`^ {2}${repo}/scripts/quickstart$`, 'm'));
  assert.match(r.stderr, /CKJS_LINKING=dynamic npm ci && .* node scripts\/patch-kafka-binding\.ts node_modules/);
});

test("the quickstart's closing text gives the PATH line, and with it icefloe runs from a system-PATH shell", () => {
  // The text as the quickstart prints it: its `cat <<MSG` block, expanded by bash with the checkout's root.
  const script = readFileSync(join(root, 'scripts/quickstart'), 'utf8');
  const block = /^cat <<MSG\n[\s\S]*?^MSG$/m.exec(script)?.[0];
  assert.ok(block !== undefined, 'scripts/quickstart ends with a cat <<MSG block');
  const printed = spawnSync('/bin/bash', ['-c', block], { encoding: 'utf8', env: { ICEFLOE_ROOT: root.replace(/\/$/, ''), PATH: SYSTEM_PATH } });
  assert.equal(printed.status, 0, printed.stderr);
  const pathLine = printed.stdout.split('\n').map((l) => l.trim()).find((l) => l.startsWith('export PATH='));
  assert.equal(pathLine, `export PATH="${root}bin:$PATH"`);
  assert.doesNotMatch(printed.stdout, /node src\/cli\.ts/);
  const commands = printed.stdout.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('icefloe '));
  assert.ok(commands.length >= 3, printed.stdout);
  // The line works as printed, from anywhere: `icefloe --help` (the first command it shows) answers.
  const cache = process.env['ICEFLOE_CACHE'];
  const r = spawnSync('/bin/bash', ['-c', `${pathLine}\nicefloe --help`], {
    encoding: 'utf8',
    cwd: tmpdir(),
    env: { HOME: process.env['HOME'] ?? homedir(), PATH: SYSTEM_PATH, ...(cache === undefined ? {} : { ICEFLOE_CACHE: cache }) },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^usage: icefloe <command>/);
});
