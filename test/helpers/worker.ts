/**
 * Runs the real worker (`icefloe standalone`, or `icefloe distributed`) as a child process for end-to-end tests: writes its
 * worker properties and connector files to a fresh directory, captures its log lines, and stops it
 * gracefully (SIGTERM), abruptly (SIGKILL), or freezes it (SIGSTOP/SIGCONT).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stackEndpoints } from './stack.ts';

const CLI = resolve(import.meta.dirname, '../../src/cli.ts');

export interface WorkerOptions {
  /** Worker properties (bootstrap.servers defaults to the stack's). */
  readonly worker?: Readonly<Record<string, string>>;
  readonly connectors: readonly { readonly name: string; readonly config: Readonly<Record<string, string>> }[];
  /** Extra environment, e.g. ICEFLOE_CRASH_POINT. */
  readonly env?: Readonly<Record<string, string>>;
  /** Reuse a directory (a restart keeps the SQLite catalog and local warehouse). */
  readonly dir?: string;
  /**
   * Options of `icefloe standalone` before its files; default `--exit-on-failure` (the worker ends once
   * every task FAILED for good, or a connector cannot start): the tests written before the REST API
   * assert that end. Pass `[]` for a worker that stays up and shows FAILED in its REST status.
   */
  readonly args?: readonly string[];
  /** `distributed`: `icefloe distributed worker.properties` (no connector files; create them through REST). */
  readonly mode?: 'standalone' | 'distributed';
  /** A command the worker runs under, e.g. `ip netns exec <ns>` (test/helpers/netns.ts); it must exec the worker in place. */
  readonly wrap?: readonly string[];
}

export interface WorkerProcess {
  readonly dir: string;
  readonly child: ChildProcess;
  /** Every line the worker wrote to stdout and stderr so far. */
  readonly lines: string[];
  /** Resolves with the exit code (or signal name). */
  readonly exited: Promise<string>;
  /** Waits for a line matching `pattern` (default 60 s). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Parsed JSON log lines with this `msg`. */
  logs(msg: string): Record<string, unknown>[];
  /** The base URL of its REST API (from its `REST API listening` line, waited for). */
  restUrl(): Promise<string>;
  /** SIGTERM and wait: tasks finish their cycle, the committer runs a last round. */
  stop(timeoutMs?: number): Promise<string>;
  /** SIGKILL to the worker and its task processes. */
  kill(): Promise<string>;
  /** SIGSTOP / SIGCONT to the worker and its task processes. */
  freeze(): void;
  thaw(): void;
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

export function startWorker(options: WorkerOptions): WorkerProcess {
  const e = stackEndpoints();
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'icefloe-worker-'));
  // Port 0: every test worker serves the REST API on a port of its own (restUrl() finds it).
  const props = { 'bootstrap.servers': e.kafkaBootstrap, listeners: 'http://127.0.0.1:0', ...options.worker };
  writeFileSync(join(dir, 'worker.properties'), Object.entries(props).map(([k, v]) => `${k}=${v.replace(/\\/g, '\\\\')}`).join('\n') + '\n');
  const files = options.connectors.map((c) => {
    const f = join(dir, `${c.name}.json`);
    writeFileSync(f, JSON.stringify({ name: c.name, config: c.config }, null, 2));
    return f;
  });
  const argv = options.mode === 'distributed' ? ['distributed', join(dir, 'worker.properties')] : ['standalone', ...(options.args ?? ['--exit-on-failure']), join(dir, 'worker.properties'), ...files];
  const command = [...(options.wrap ?? []), process.execPath, CLI, ...argv];
  const child = spawn(command[0] as string, command.slice(1), {
    cwd: dir,
    // Without the caller's ICEFLOE_LOG_FORMAT: the tests read JSON lines (auto on a pipe) unless they set one.
    env: { ...process.env, ICEFLOE_LOG_FORMAT: undefined, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: kill() and freeze() reach its task processes too, as a machine crash would.
    detached: true,
  });
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (l: string) => void }[] = [];
  const onLine = (line: string): void => {
    lines.push(line);
    if (process.env['ICEFLOE_TEST_WORKER_LOG'] === '1') process.stderr.write(`[worker ${child.pid}] ${line}\n`);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i];
      if (w !== undefined && w.pattern.test(line)) {
        waiters.splice(i, 1);
        w.resolve(line);
      }
    }
  };
  for (const stream of [child.stdout, child.stderr]) {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        onLine(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    });
  }
  const exited = new Promise<string>((res) => child.on('exit', (code, signal) => res(signal ?? String(code))));
  const self: WorkerProcess = {
    dir,
    child,
    lines,
    exited,
    async restUrl() {
      const line = await self.waitFor(/"msg":"REST API listening"/);
      return ((JSON.parse(line) as { urls: string[] }).urls[0] as string).replace(/\/$/, '');
    },
    waitFor(pattern, timeoutMs = 60_000) {
      const found = lines.find((l) => pattern.test(l));
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((res, rej) => {
        const timer = setTimeout(() => rej(new Error(`worker: no line matching ${pattern} within ${timeoutMs} ms; last lines:\n${lines.slice(-15).join('\n')}`)), timeoutMs);
        waiters.push({ pattern, resolve: (l) => (clearTimeout(timer), res(l)) });
        void exited.then((how) => rej(new Error(`worker exited (${how}) before a line matched ${pattern}; last lines:\n${lines.slice(-15).join('\n')}`)));
      });
    },
    logs(msg) {
      const out: Record<string, unknown>[] = [];
      for (const l of lines) {
        if (!l.startsWith('{')) continue;
        try {
          const j = JSON.parse(l) as Record<string, unknown>;
          if (j['msg'] === msg) out.push(j);
        } catch {
          // not a log line
        }
      }
      return out;
    },
    async stop(timeoutMs = 60_000) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const how = await exited;
      clearTimeout(timer);
      return how;
    },
    async kill() {
      signalGroup(child, 'SIGKILL');
      return exited;
    },
    freeze() {
      signalGroup(child, 'SIGSTOP');
    },
    thaw() {
      signalGroup(child, 'SIGCONT');
    },
  };
  return self;
}

/**
 * The worker's task failure lines (runtime/worker.ts: `task <connector>-<id> failed[ at t/p@o]: <cause>`,
 * error level; `restarting` says whether a restart follows), optionally of one connector, optionally only those
 * that stay FAILED.
 */
export function taskFailures(w: WorkerProcess, connector?: string, only?: 'for-good'): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const l of w.lines) {
    if (!l.startsWith('{')) continue;
    try {
      const j = JSON.parse(l) as Record<string, unknown>;
      if (j['level'] === 50 && /^task \S+ failed[ :]/.test(String(j['msg'])) && (connector === undefined || j['connector'] === connector) && (only === undefined || j['restarting'] === false)) out.push(j);
    } catch {
      // not a log line
    }
  }
  return out;
}

/** Waits for `check`, failing early (with the workers' last log lines) when a worker exits or a task fails. */
export async function untilWorkers(what: string, check: () => boolean, ws: readonly WorkerProcess[], timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    for (const w of ws) {
      if (w.child.exitCode !== null || w.child.signalCode !== null) throw new Error(`waiting for ${what}: worker ${w.child.pid} exited:\n${w.lines.slice(-15).join('\n')}`);
      const failed = taskFailures(w, undefined, 'for-good');
      if (failed.length > 0) throw new Error(`waiting for ${what}: a task failed: ${JSON.stringify(failed[0])}`);
    }
    if (Date.now() > deadline) throw new Error(`no ${what} after ${timeoutMs} ms:\n${ws.map((w) => `[${w.child.pid}]\n${w.lines.slice(-10).join('\n')}`).join('\n')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
