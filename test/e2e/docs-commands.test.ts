/**
 * Every command the README and docs/*.md show in ```bash blocks, run as a user runs it: from a shell whose
 * PATH has only the system's tools plus the documented line (`export PATH="$PWD/bin:$PATH"`), in a folder
 * that looks like the checkout (a symlink per top-level entry, so what the commands write, such as the
 * embedded catalog under ./icefloe-data, stays out of the repository), with the stack up. Each command's
 * exit status and a piece of its output are checked.
 *
 * The files are read when the test runs, so a command added to the docs is covered: each command is
 * classified by the first rule of RULES that matches it, and a command no rule matches fails the test
 * (give it a rule: run it, serve it, or exclude it with the reason). Commands run in the order the files
 * show them (README.md, then docs/*.md by name); `setup` lines (the PATH line) stay in force for the
 * rest of their file, as in the reader's shell.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** A login shell's PATH on Debian without anything the project installed. */
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

type Rule =
  /** A line that changes the shell (the documented PATH line): run first with every later command of its file. */
  | { readonly kind: 'setup'; readonly match: RegExp }
  /** Runs to the end: exit 0 and `expect` in its stdout or stderr. */
  | { readonly kind: 'run'; readonly match: RegExp; readonly expect: RegExp }
  /**
   * Runs until stopped (the worker): started, `ready` awaited in its output, given `settleMs` to work, then
   * SIGTERM (what Ctrl-C asks for): it must exit 0 and have printed `expect`.
   */
  | { readonly kind: 'serve'; readonly match: RegExp; readonly ready: RegExp; readonly settleMs: number; readonly expect: RegExp }
  /** Not run, for the reason given. */
  | { readonly kind: 'excluded'; readonly match: RegExp; readonly why: string };

/**
 * How each documented command is checked; the first match wins. A command no rule matches fails the test.
 * Exclusions are explicit and say why.
 */
const RULES: readonly Rule[] = [
  { kind: 'setup', match: /^export PATH="\$PWD\/bin:\$PATH"$/ },
  { kind: 'run', match: /^icefloe (--help|help)$/, expect: /^usage: icefloe <command> \[options\]$/m },
  { kind: 'run', match: /^icefloe \w+ --help$/, expect: /^usage: icefloe \w+/m },
  { kind: 'run', match: /^icefloe generate /, expect: /^generated \d+ [\w-]+ records to \S+: /m },
  { kind: 'run', match: /^icefloe produce /, expect: /^produced \d+ \w+ records? to \S+/m },
  { kind: 'run', match: /^icefloe consume /, expect: /^consumed \d+ records? from \S+ \(stopped by /m },
  { kind: 'run', match: /^icefloe positions .* --table \S+$/, expect: /^ {2}"table": "/m },
  // Seeding changes the quickstart's table (a snapshot of its own): shown, not run; test/integration/connector-offsets.test.ts runs it.
  { kind: 'excluded', match: /^icefloe positions .* --adopt\b/, why: 'seeds the table\'s positions (a commit to the quickstart\'s table); test/integration/connector-offsets.test.ts covers --adopt --holds-group-offsets' },
  // The replay runbook needs a stopped connector and a snapshot id of its table; its e2e test runs the procedure.
  { kind: 'excluded', match: /^icefloe replay /, why: 'needs a stopped connector and one of its table\'s snapshot ids: test/e2e/replay-runbook.test.ts runs the runbook' },
  { kind: 'run', match: /^icefloe version$/, expect: /^icefloe \d+\.\d+\.\d+ \(node v24\./m },
  // The worker: a task must get partitions (a line naming `topic[n]` with "partitions assigned", in JSON or
  // pretty lines), and a stop must commit what it read (exit 0, a table commit).
  { kind: 'serve', match: /^icefloe standalone /, ready: /partitions assigned[^\n]*\w\[\d+\]|\w\[\d+\][^\n]*partitions assigned/, settleMs: 3_000, expect: /table committed/ },
  // A cluster worker serves until stopped and has no connectors until one is created through REST.
  { kind: 'excluded', match: /^icefloe distributed /, why: 'a cluster worker: test/e2e/cluster-chaos.test.ts and cluster-failover.test.ts run workers this way' },
  { kind: 'excluded', match: /^sed .*worker-distributed\.properties/, why: 'prepares a second cluster worker\'s properties (shown beside the workers it is for)' },
  // REST calls need a worker serving the API while they run (the docs show them beside one started in
  // another terminal); the e2e tests make the same calls on a worker of their own.
  { kind: 'excluded', match: /^curl\b.*localhost:808[34]\//, why: 'a call to a running worker\'s REST API: test/e2e/rest-operations.test.ts, rest-conformance.test.ts and rest-client.test.ts make these calls' },
  { kind: 'run', match: /^scripts\/stack (status|env)$/, expect: /kafka|ICEFLOE_KAFKA_BOOTSTRAP=/i },
  // The README's two commands: the quickstart installs and brings the stack up (minutes cold; CI runs it
  // after the whole suite), and the test command is what runs this test.
  { kind: 'excluded', match: /^scripts\/quickstart\b/, why: 'the quickstart: CI runs it after the suite; minutes on a cold machine' },
  { kind: 'excluded', match: /^scripts\/test\b/, why: 'the test command, which runs this test' },
  { kind: 'excluded', match: /^npm (run )?test(:\w+)?\b/, why: 'a test suite, which runs this test or runs beside it' },
  // The shared stack other tests use at the same time: these stop, restart or reinstall its services.
  { kind: 'excluded', match: /^scripts\/stack (up|down|stop|start|install)\b/, why: 'changes the stack under the other tests (and up/install take minutes cold)' },
  // docs/benchmarks.md's recipe comparing two commits: minutes of load on a quiet machine, in a second worktree.
  { kind: 'excluded', match: /^(npm run bench\b|node scripts\/bench[\w-]*\.ts\b|\(cd \.\.\/icefloe-base && )/, why: 'a benchmark: minutes on a quiet machine' },
  { kind: 'excluded', match: /^(git worktree add|ln -s|cp) .*\.\.\/icefloe-base\b/, why: 'sets up the benchmark\'s second worktree' },
  { kind: 'excluded', match: /^uptime\b/, why: 'part of the benchmark recipe (checks the machine is quiet)' },
];

interface DocCommand {
  readonly file: string;
  readonly line: number;
  readonly text: string;
}

/** The commands of a markdown file's ```bash blocks: one per line (a trailing `\` continues it), comments and blank lines left out. */
function bashCommands(file: string, markdown: string): DocCommand[] {
  const out: DocCommand[] = [];
  let inBlock = false;
  let pending: { line: number; text: string } | undefined;
  markdown.split('\n').forEach((raw, i) => {
    const fence = /^\s*```(\w*)\s*$/.exec(raw);
    if (fence !== null) {
      inBlock = !inBlock && fence[1] === 'bash';
      return;
    }
    if (!inBlock) return;
    const line = raw.trim();
    if (pending === undefined && (line === '' || line.startsWith('#'))) return;
    const text = pending === undefined ? line : `${pending.text} ${line}`;
    const start = pending?.line ?? i + 1;
    if (text.endsWith('\\')) pending = { line: start, text: text.slice(0, -1).trimEnd() };
    else {
      pending = undefined;
      out.push({ file, line: start, text });
    }
  });
  return out;
}

/** The command without a trailing `# comment` (a `#` inside quotes is kept), for matching only. */
function withoutComment(text: string): string {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote !== null) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1] as string))) return text.slice(0, i).trimEnd();
  }
  return text;
}

function documentedCommands(): DocCommand[] {
  const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  return ['README.md', ...docs].flatMap((file) => bashCommands(file, readFileSync(join(root, file), 'utf8')));
}

/** A folder that looks like the checkout: one symlink per top-level entry (not .git, not what the commands write). */
function checkoutLookalike(): string {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-docs-'));
  for (const name of readdirSync(root)) {
    if (name === '.git' || name === 'icefloe-data') continue;
    symlinkSync(join(root, name), join(dir, name));
  }
  return dir;
}

/** The environment of a fresh login shell: HOME and the system PATH (plus the cache and run dirs when this run moved them). */
function shellEnv(): Record<string, string> {
  const env: Record<string, string> = { HOME: process.env['HOME'] ?? homedir(), PATH: SYSTEM_PATH, LANG: 'C.UTF-8' };
  for (const k of ['ICEFLOE_CACHE', 'ICEFLOE_RUN']) {
    const v = process.env[k];
    if (v !== undefined) env[k] = v;
  }
  return env;
}

interface Outcome {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly output: string;
}

/**
 * Runs `script` with bash in `cwd`; for a served command, waits for `serve.ready`, lets it work, then
 * sends SIGTERM. Bounded: past `timeoutMs` the process group is killed and the outcome says so.
 */
function runScript(script: string, cwd: string, timeoutMs: number, serve?: { ready: RegExp; settleMs: number }): Promise<Outcome & { ready: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', script], { cwd, env: shellEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let ready = false;
    const killGroup = (signal: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    const onData = (d: Buffer): void => {
      output += d.toString();
      if (serve !== undefined && !ready && serve.ready.test(output)) {
        ready = true;
        setTimeout(() => child.kill('SIGTERM'), serve.settleMs);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setTimeout(() => {
      output += `\n[docs-commands: killed after ${timeoutMs} ms]`;
      killGroup('SIGKILL');
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      killGroup('SIGKILL'); // task processes a failed worker may have left
      resolve({ status, signal, output, ready });
    });
  });
}

function classify(c: DocCommand): Rule | undefined {
  const text = withoutComment(c.text);
  return RULES.find((r) => r.match.test(text));
}

test('the bash blocks of README.md and docs/*.md are found, and every command in them has a rule', () => {
  const commands = documentedCommands();
  assert.ok(commands.some((c) => c.file === 'README.md' && c.text.startsWith('icefloe standalone ')), 'the README shows how to run the worker');
  const unclassified = commands.filter((c) => classify(c) === undefined);
  assert.deepEqual(
    unclassified.map((c) => `${c.file}:${c.line}: ${c.text}`),
    [],
    'commands the docs show that this test does not know how to check: add a rule to RULES in test/e2e/docs-commands.test.ts',
  );
  // The parser: continuation lines, comments, other languages' blocks.
  assert.deepEqual(bashCommands('x.md', '```bash\n# a comment\na --b \\\n  c   # why\n\n```\n```\nnot bash\n```\n').map((c) => [c.line, c.text]), [[3, 'a --b c   # why']]);
  assert.equal(withoutComment(`icefloe produce --value '{"a": "#1"}'   # mine`), `icefloe produce --value '{"a": "#1"}'`);
});

test('every command shown in README.md and docs/*.md works from a shell with only the system PATH plus the documented line', async (t) => {
  const e = stackEndpoints();
  await requireReachable('Kafka', e.kafkaBootstrap);
  await requireReachable('registry', e.registryUrl);
  const cwd = checkoutLookalike();
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  const setup = new Map<string, string[]>();
  const failures: string[] = [];
  const ran: string[] = [];
  for (const c of documentedCommands()) {
    const rule = classify(c);
    if (rule === undefined) {
      failures.push(`${c.file}:${c.line}: no rule for: ${c.text}`);
      continue;
    }
    if (rule.kind === 'excluded') continue;
    const before = setup.get(c.file) ?? [];
    const where = `${c.file}:${c.line}: ${c.text}`;
    const started = Date.now();
    if (rule.kind === 'setup') {
      const r = await runScript([...before, c.text].join('\n'), cwd, 10_000);
      if (r.status !== 0) failures.push(`${where}\n  exit ${r.status}: ${r.output}`);
      setup.set(c.file, [...before, c.text]);
      continue;
    }
    // `exec`: the command itself receives the stop signal, as in the reader's terminal.
    const script = [...before, `exec ${c.text}`].join('\n');
    const r = rule.kind === 'serve'
      ? await runScript(script, cwd, 90_000, { ready: rule.ready, settleMs: rule.settleMs })
      : await runScript(script, cwd, 60_000);
    ran.push(`${((Date.now() - started) / 1000).toFixed(1)} s  ${c.text}`);
    const tail = r.output.split('\n').slice(-25).join('\n  ');
    if (rule.kind === 'serve' && !r.ready) failures.push(`${where}\n  never printed ${rule.ready} (exit ${r.status ?? r.signal}):\n  ${tail}`);
    else if (r.status !== 0) failures.push(`${where}\n  exit ${r.status ?? r.signal}:\n  ${tail}`);
    else if (!rule.expect.test(r.output)) failures.push(`${where}\n  exit 0 but no ${rule.expect} in:\n  ${tail}`);
  }
  t.diagnostic(`ran:\n${ran.join('\n')}`);
  assert.deepEqual(failures, []);
  assert.ok(ran.length > 0);
});
