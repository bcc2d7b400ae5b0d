import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../src/core/errors.ts';
import { runConsoleTool } from '../../src/cli/console.ts';
import { COMMAND_HELP } from '../../src/cli/usage.ts';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

/** The same, several at once (each CLI start costs a few hundred ms of a loaded machine). */
function runAll(argLists: readonly (readonly string[])[]): Promise<{ status: number | null; stdout: string; stderr: string }[]> {
  return Promise.all(argLists.map((args) => new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  })));
}

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

test('icefloe with no arguments prints the usage to stderr and exits 2 (a usage error, as for any tool)', () => {
  const r = run();
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^usage: icefloe <command> \[options\]/);
});

test('icefloe help, --help and -h print the command list to stdout and exit 0', () => {
  for (const args of [['help'], ['--help'], ['-h']]) {
    const r = run(...args);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    for (const command of ['standalone', 'generate', 'produce', 'consume', 'positions', 'replay', 'version', 'help']) {
      assert.match(r.stdout, new RegExp(`^ {2}${command} `, 'm'), `${args.join(' ')} lists ${command}`);
    }
    assert.match(r.stdout, /icefloe <command> --help/);
  }
});

/** Each subcommand and the options its --help must document (with the default where there is one). */
const COMMAND_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  standalone: ['--exit-on-failure'],
  generate: ['--topic', '--count', '--rate', '--format', '--partitions', '--only-partitions', '--seed', '--schema-version', '--bootstrap-servers', '--registry-url'],
  produce: ['--topic', '--value', '--format', '--schema', '--message', '--key', '--key-field', '--partition', '--partitions', '--bootstrap-servers', '--registry-url'],
  consume: ['--topic', '--from-beginning', '--max-messages', '--timeout-ms', '--partition', '--bootstrap-servers', '--registry-url'],
  positions: ['--table', '--reapply', '--adopt', '--holds-group-offsets'],
  replay: ['--table', '--snapshot'],
  version: [],
};

test('every subcommand has its own help: synopsis, options (with defaults) and an example', () => {
  for (const [command, options] of Object.entries(COMMAND_OPTIONS)) {
    const text = COMMAND_HELP[command] ?? '';
    assert.match(text, new RegExp(`^usage: icefloe ${command}\\b`), `${command}: synopsis first`);
    assert.match(text, new RegExp(`^examples?:\\n {2}icefloe ${command}\\b`, 'm'), `${command}: an example`);
    for (const option of options) assert.match(text, new RegExp(`^ {2}${option}\\b`, 'm'), `${command}: ${option}`);
    if (options.some((o) => o !== '--exit-on-failure' && o !== '--reapply' && o !== '--adopt' && o !== '--holds-group-offsets' && o !== '--table' && o !== '--snapshot')) {
      assert.match(text, /\(default /, `${command}: defaults`);
    }
  }
});

test('icefloe <command> --help and -h (and icefloe help <command>) print that help and exit 0, before parsing anything else', async () => {
  // One process per way of asking (the dispatch is the same for every command); the texts are checked above.
  // Other arguments do not matter: help is answered before they are parsed (and before any connection).
  const asks = [['produce', '--help'], ['standalone', '-h', 'no-such.properties'], ['consume', '--topic', 't', '--help', '--bootstrap-servers', '127.0.0.1:1'], ['help', 'positions'], ['version', '-h']];
  const results = await runAll(asks);
  asks.forEach((args, i) => {
    const r = results[i] as { status: number | null; stdout: string; stderr: string };
    const command = args[0] === 'help' ? (args[1] as string) : (args[0] as string);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, COMMAND_HELP[command], args.join(' '));
  });
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
    for (const command of ['produce', 'consume']) {
      const args = command === 'produce' ? ['--topic', 't', '--value', '{}'] : ['--topic', 't'];
      const c = spawnSync(process.execPath, [join(image, 'src/cli.ts'), command, ...args, '--bootstrap-servers', '127.0.0.1:1'], { encoding: 'utf8' });
      assert.equal(c.status, 2, c.stderr);
      assert.match(c.stderr, new RegExp(`icefloe ${command}: the console tool is not installed here: it is a tool of the source tree \\(tools/console/\\)`));
    }
  } finally {
    rmSync(image, { recursive: true, force: true });
  }
});

test('the composition root loads no client library a connector may not use: the AWS SDK, pg, BullMQ, ioredis come when used', () => {
  // Each costs start-up CPU in every task process (the AWS SDK ~0.2 CPU-s): S3 is loaded on the first
  // s3:// location, pg with the first PostgreSQL statement, Redis and BullMQ by distributed mode.
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r; } });
    await import(${JSON.stringify(join(root, 'src/app.ts'))});
    process.stdout.write(JSON.stringify(seen));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const seen = JSON.parse(r.stdout) as string[];
  assert.ok(seen.some((u) => u.endsWith('/src/app.ts')) && seen.length > 100, `the hook saw the imports (${seen.length})`);
  const heavy = seen.filter((u) => /\/node_modules\/(@aws-sdk|pg|bullmq|ioredis)\/|\/src\/upload\/s3\//.test(u));
  assert.deepEqual(heavy, []);
});

test('icefloe produce and consume: a bad option or input exits 2 naming it, before connecting to anything', async () => {
  const cases = [
    [['produce', '--value', '{}'], /--topic is required/],
    [['produce', '--topic', 't', '--frobnicate', '1'], /unknown option --frobnicate \(options: --topic, /],
    [['produce', '--topic', 't', '--format', 'xml', '--value', '{}'], /--format must be one of json, avro, protobuf, not 'xml'/],
    [['produce', '--topic', 't', '--format', 'avro', '--value', '{}'], /--format avro needs --schema/],
    [['produce', '--topic', 't', '--format', 'avro', '--schema', 'no-such-file.avsc', '--value', '{}'], /--schema no-such-file.avsc: no such file/],
    [['produce', '--topic', 't', '--key', 'k', '--key-field', 'id', '--value', '{}'], /--key and --key-field exclude each other/],
    [['produce', '--topic', 't', '--value', '{"id": 1', '--value', 'x'], /--value #1 is not a JSON document/],
    [['produce', '--topic', 't', '--format', 'avro', '--schema', '{"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}', '--value', '{"id": 1}', '--value', '{"id": "one"}'],
      /--value #2 does not fit the Avro schema: field id: expected long, got "one"/],
    [['produce', '--topic', 't', '--key-field', 'id', '--value', '{"name": "x"}'], /--value #1 has no field 'id' for --key-field \(its fields: name\)/],
    [['produce', '--topic', 't', '--partitions', '0', '--value', '{}'], /--partitions must be an integer of at least 1/],
    [['consume'], /--topic is required/],
    [['consume', '--topic', 't', '--max-messages', 'ten'], /--max-messages must be an integer of at least 1, not 'ten'/],
    [['consume', '--topic', 't', '--from-beginning=yes'], /option --from-beginning takes no value/],
  ] as const;
  // In-process: each is refused before anything connects (the broker is unreachable: were the arguments
  // accepted, the run would fail differently, after 15 s).
  for (const [args, message] of cases) {
    const [command, ...rest] = args;
    await assert.rejects(runConsoleTool(command, [...rest, '--bootstrap-servers', '127.0.0.1:1'], {}), (e: unknown) => {
      assert.ok(e instanceof ConfigError, `${args.join(' ')}: ${String(e)}`);
      assert.match(e.message, message, args.join(' '));
      return true;
    });
  }
  // As a process: the command's name, the message, exit 2.
  const results = await runAll([['produce', '--topic', 't', '--format', 'xml', '--value', '{}'], ['consume', '--topic', 't', '--max-messages', 'ten']]);
  assert.deepEqual(results.map((r) => [r.status, r.stdout, r.stderr]), [
    [2, '', "icefloe produce: --format must be one of json, avro, protobuf, not 'xml'\n"],
    [2, '', "icefloe consume: --max-messages must be an integer of at least 1, not 'ten'\n"],
  ]);
});
