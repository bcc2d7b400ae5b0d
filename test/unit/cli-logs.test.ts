/**
 * The worker's log format, end to end through `icefloe standalone` (no services needed): a worker file with
 * an ignored key logs a warning, then a connector file that is not JSON stops the worker with exit 2 — so
 * every run shows one real log line in the format the setting, ICEFLOE_LOG_FORMAT, NO_COLOR and the kind
 * of stderr (a pipe, a file, a pseudo-terminal from util-linux's `script`) decide.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const WARNING = 'plugin.path is ignored: the connector, converters and transforms are built in';
const PRETTY = /^\d\d:\d\d:\d\d\.\d{3} WARN {2}plugin\.path is ignored: the connector, converters and transforms are built in$/m;
/** pino's line as it has always been (scripts and tests grep it): level, time, pid, msg, nothing else. */
const JSON_LINE = new RegExp(`^\\{"level":40,"time":\\d{13},"pid":\\d+,"msg":"${WARNING.replace(/\./g, '\\.')}"\\}$`, 'm');
const BAD_CONNECTOR = /icefloe standalone: connector\.json: not valid JSON/;

/** A directory with worker.properties (`plugin.path` plus `extra`) and a connector file that is not JSON. */
function files(extra: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-logs-'));
  writeFileSync(join(dir, 'worker.properties'), `plugin.path=/opt/plugins\n${extra}\n`);
  writeFileSync(join(dir, 'connector.json'), '{ not json');
  return dir;
}

/** The test's own environment without the variables under test. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const k of ['ICEFLOE_LOG_FORMAT', 'NO_COLOR', 'FORCE_COLOR']) if (!(k in extra)) delete e[k];
  return e;
}

/** stderr to a pipe. */
function runPiped(extra: string, vars: Record<string, string> = {}): { status: number | null; stderr: string } {
  const dir = files(extra);
  const r = spawnSync(process.execPath, [cli, 'standalone', 'worker.properties', 'connector.json'], { cwd: dir, env: env(vars), encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
}

/** stderr to a file, as the quickstart and a supervisor's log redirection have it. */
function runToFile(extra: string, vars: Record<string, string> = {}): { status: number | null; stderr: string } {
  const dir = files(extra);
  const path = join(dir, 'stderr.log');
  const fd = openSync(path, 'w');
  try {
    const r = spawnSync(process.execPath, [cli, 'standalone', 'worker.properties', 'connector.json'], { cwd: dir, env: env(vars), stdio: ['ignore', 'ignore', fd], timeout: 30_000 });
    return { status: r.status, stderr: readFileSync(path, 'utf8') };
  } finally {
    closeSync(fd);
  }
}

/** stdout and stderr on a pseudo-terminal (`script -qec`, util-linux); the terminal turns \n into \r\n. */
function runOnTerminal(extra: string, vars: Record<string, string> = {}): { status: number | null; output: string } {
  const dir = files(extra);
  const command = `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(cli)} standalone worker.properties connector.json`;
  const r = spawnSync('script', ['-qec', command, '/dev/null'], { cwd: dir, env: env(vars), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
  assert.equal(r.error, undefined, `script (util-linux) must run: ${String(r.error)}`);
  return { status: r.status, output: r.stdout.replace(/\r\n/g, '\n') };
}

test('icefloe.log.format=pretty: a readable line without colour on a pipe, no JSON', () => {
  const r = runPiped('icefloe.log.format=pretty');
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, PRETTY);
  assert.doesNotMatch(r.stderr, /"level"/);
  assert.ok(!r.stderr.includes('\x1b'), 'no colour off a terminal');
  assert.match(r.stderr, BAD_CONNECTOR);
});

test('the default (auto) with stderr in a file: JSON lines as always', () => {
  const r = runToFile('');
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, JSON_LINE);
  assert.doesNotMatch(r.stderr, PRETTY);
  assert.match(r.stderr, BAD_CONNECTOR);
});

test('ICEFLOE_LOG_FORMAT overrides icefloe.log.format both ways', () => {
  const json = runPiped('icefloe.log.format=pretty', { ICEFLOE_LOG_FORMAT: 'json' });
  assert.equal(json.status, 2, json.stderr);
  assert.match(json.stderr, JSON_LINE);
  const pretty = runToFile('icefloe.log.format=json', { ICEFLOE_LOG_FORMAT: 'pretty' });
  assert.equal(pretty.status, 2, pretty.stderr);
  assert.match(pretty.stderr, PRETTY);
});

test('a bad ICEFLOE_LOG_FORMAT exits 2 naming the variable and its values (a bad icefloe.log.format: worker-config.test.ts)', () => {
  const r = runPiped('', { ICEFLOE_LOG_FORMAT: 'fancy' });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^icefloe standalone: ICEFLOE_LOG_FORMAT must be one of auto, json, pretty, not 'fancy'$/m);
});

test('on a terminal: auto is pretty with a coloured level; NO_COLOR keeps it pretty without colour; icefloe.log.format=json gives JSON', () => {
  const auto = runOnTerminal('');
  assert.equal(auto.status, 2, auto.output);
  // eslint-disable-next-line no-control-regex -- the terminal's colour codes are what is under test
  assert.match(auto.output, /^\x1b\[2m\d\d:\d\d:\d\d\.\d{3}\x1b\[0m \x1b\[33mWARN\x1b\[0m {2}plugin\.path is ignored: /m);
  // eslint-disable-next-line no-control-regex
  assert.match(auto.output.replace(/\x1b\[[0-9;]*m/g, ''), PRETTY);
  assert.match(auto.output, BAD_CONNECTOR);

  const noColor = runOnTerminal('', { NO_COLOR: '1' });
  assert.match(noColor.output, PRETTY);
  assert.ok(!noColor.output.includes('\x1b['), JSON.stringify(noColor.output));

  const json = runOnTerminal('icefloe.log.format=json');
  assert.match(json.output, JSON_LINE);
});
