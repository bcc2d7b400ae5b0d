/**
 * Runs the test suites one after another with node's test runner, prints how long each took against
 * its budget (docs/testing.md), and ends with one summary line, `tests: N passed, N failed`.
 *
 * A skipped or todo test counts as a failure: a missing service must fail a test, never skip it.
 * Usage: node scripts/run-tests.ts [suite...]   (default: every suite, in order)
 */
import { spawn } from 'node:child_process';
import { globSync } from 'node:fs';
import { availableParallelism } from 'node:os';

interface Suite {
  name: string;
  /** Globs, relative to the repository root. */
  files: string[];
  /** The budget in docs/testing.md; exceeding it is reported, not failed (tests are not timed). */
  budgetSeconds: number;
  /** How many files run at once (they share the one local stack; each names its own topics, tables and groups). */
  concurrency: number;
  /**
   * Files run afterwards, one at a time with nothing else: they stop, restart or freeze a shared service
   * (Kafka, PostgreSQL, Redis), or run the documented commands with their fixed names and ports.
   */
  alone?: string[];
}

// Unit files wait on module loading as much as on the CPU: one per core (node's default is one fewer).
const CORES = availableParallelism();

const SUITES: Suite[] = [
  { name: 'unit', files: ['test/unit/**/*.test.ts'], budgetSeconds: 60, concurrency: CORES },
  { name: 'smoke', files: ['test/smoke/**/*.test.ts'], budgetSeconds: 300, concurrency: 1 },
  { name: 'integration', files: ['test/integration/**/*.test.ts'], budgetSeconds: 900, concurrency: 1 },
  // The worker end to end (test/e2e): real worker processes, crashes, rebalances; minutes, not seconds, mostly
  // spent waiting for commit intervals and time-outs, so two files share the machine.
  {
    name: 'e2e',
    files: ['test/e2e/**/*.test.ts'],
    budgetSeconds: 1500,
    concurrency: 2,
    alone: [
      'test/e2e/sink-broker-restart.test.ts', // restarts Kafka
      'test/e2e/sink-task-process.test.ts', // restarts Kafka
      'test/e2e/sink-broker-freeze.test.ts', // freezes Kafka
      'test/e2e/sink-broker-chaos.test.ts', // freezes and restarts Kafka
      'test/e2e/sink-infra-faults.test.ts', // restarts PostgreSQL; S3 and catalog outages through the shared proxy
      'test/e2e/cluster-chaos.test.ts', // flushes and restarts Redis
      'test/e2e/cluster-outage.test.ts', // stops Kafka for 70 s
      'test/e2e/cluster-partition.test.ts', // disturbs nothing shared (its own network namespace), but timing-sensitive: a busy machine stretches heartbeats past its session time-outs
      'test/e2e/docs-commands.test.ts', // the README's commands: the quickstart's names and ports
    ],
  },
  { name: 'stack', files: ['test/stack/**/*.test.ts'], budgetSeconds: 300, concurrency: 1 },
];

interface Counts {
  pass: number;
  fail: number;
  skipped: number;
  todo: number;
  cancelled: number;
}

function parseCounts(output: string): Counts {
  const get = (label: string): number => {
    const m = new RegExp(`^ℹ ${label} (\\d+)$`, 'm').exec(output);
    return m?.[1] === undefined ? 0 : Number(m[1]);
  };
  return { pass: get('pass'), fail: get('fail'), skipped: get('skipped'), todo: get('todo'), cancelled: get('cancelled') };
}

const NONE: Counts = { pass: 0, fail: 0, skipped: 0, todo: 0, cancelled: 0 };

/** One run of node's test runner over `files`; its output is passed through. */
async function runFiles(files: string[], concurrency: number): Promise<{ counts: Counts; exitCode: number }> {
  if (files.length === 0) return { counts: { ...NONE }, exitCode: 0 };
  const args = ['--test', '--test-reporter=spec', `--test-concurrency=${concurrency}`, ...files];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    output += chunk.toString('utf8');
  });
  const exitCode = await new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  return { counts: parseCounts(output), exitCode };
}

async function runSuite(suite: Suite): Promise<{ counts: Counts; exitCode: number; seconds: number }> {
  const files = suite.files.flatMap((g) => globSync(g)).sort();
  const alone = suite.alone ?? [];
  const missing = alone.filter((f) => !files.includes(f));
  if (missing.length > 0) throw new Error(`suite ${suite.name}: no such file(s) to run alone: ${missing.join(', ')}`);
  const started = performance.now();
  const shared = await runFiles(files.filter((f) => !alone.includes(f)), suite.concurrency);
  const single = await runFiles(alone, 1);
  const counts = { ...NONE };
  for (const k of Object.keys(counts) as (keyof Counts)[]) counts[k] = shared.counts[k] + single.counts[k];
  return { counts, exitCode: shared.exitCode !== 0 ? shared.exitCode : single.exitCode, seconds: (performance.now() - started) / 1000 };
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !SUITES.some((s) => s.name === w));
if (unknown.length > 0) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; suites: ${SUITES.map((s) => s.name).join(', ')}`);
  process.exit(2);
}
const selected = wanted.length === 0 ? SUITES : SUITES.filter((s) => wanted.includes(s.name));

const total: Counts = { pass: 0, fail: 0, skipped: 0, todo: 0, cancelled: 0 };
const lines: string[] = [];
let failed = false;
for (const suite of selected) {
  console.log(`\n=== suite ${suite.name} ===`);
  const { counts, exitCode, seconds } = await runSuite(suite);
  for (const k of Object.keys(total) as (keyof Counts)[]) total[k] += counts[k];
  const notRun = counts.skipped + counts.todo + counts.cancelled;
  const ok = exitCode === 0 && counts.fail === 0 && notRun === 0;
  failed ||= !ok;
  const over = seconds > suite.budgetSeconds ? ` OVER BUDGET (${suite.budgetSeconds}s)` : ` (budget ${suite.budgetSeconds}s)`;
  lines.push(
    `  ${suite.name.padEnd(12)} ${seconds.toFixed(1).padStart(7)}s${over}  ${counts.pass} passed, ${counts.fail} failed` +
      (notRun > 0 ? `, ${notRun} skipped/todo/cancelled (not allowed)` : '') +
      (exitCode !== 0 && counts.fail === 0 ? `, runner exited ${exitCode}` : ''),
  );
}
console.log('\nSuite durations:');
for (const l of lines) console.log(l);
const notRun = total.skipped + total.todo + total.cancelled;
console.log(`tests: ${total.pass} passed, ${total.fail + notRun} failed`);
process.exit(failed ? 1 : 0);
