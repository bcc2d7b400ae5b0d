import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

test('icefloe help lists generate and its options', () => {
  const r = run('help');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^ {2}generate {2}/m);
  for (const option of ['--topic', '--count', '--rate', '--format', '--partitions', '--only-partitions', '--seed', '--schema-version', '--bootstrap-servers', '--registry-url']) {
    assert.match(r.stdout, new RegExp(`^ {2}${option} `, 'm'), option);
  }
});

test('icefloe generate: a bad option exits 2 naming it, before connecting to anything', () => {
  for (const [args, message] of [
    [['--frobnicate', '1'], /unknown option --frobnicate/],
    [['--format', 'xml'], /--format must be one of avro, protobuf, json, json-schema/],
    [['--count', 'many'], /--count must be an integer/],
    [['--schema-version', '3'], /--schema-version must be 1 or 2/],
    [['--only-partitions', '0,x'], /--only-partitions must be an integer/],
    [['--topic'], /--topic needs a value/],
  ] as const) {
    // An unreachable broker: were the options accepted, the run would fail differently (exit 1).
    const r = run('generate', '--bootstrap-servers', '127.0.0.1:1', ...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});

test('the worker image (src/ without tools/): the worker loads, and generate says the tool is not there', () => {
  // What the Dockerfile copies: package.json, src/ and node_modules, not tools/.
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const image = mkdtempSync(join(tmpdir(), 'icefloe-image-'));
  try {
    cpSync(join(root, 'src'), join(image, 'src'), { recursive: true });
    cpSync(join(root, 'package.json'), join(image, 'package.json'));
    symlinkSync(join(root, 'node_modules'), join(image, 'node_modules'));
    const app = spawnSync(process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(join(image, 'src/app.ts'))})`], { encoding: 'utf8' });
    assert.equal(app.status, 0, `the worker's composition root must load without tools/: ${app.stderr}`);
    const r = spawnSync(process.execPath, [join(image, 'src/cli.ts'), 'generate', '--bootstrap-servers', '127.0.0.1:1'], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /icefloe generate: the test-data generator is not installed here: it is a tool of the source tree \(tools\/generate\/\)/);
  } finally {
    rmSync(image, { recursive: true, force: true });
  }
});
