#!/usr/bin/env node
/**
 * The `icefloe` command: process entry, the only place that reads argv (with main.ts, process.env).
 * Commands arrive with the capabilities they run: `standalone` (the worker, connect-standalone's shape)
 * comes with the sink, and everything past its argument parsing happens in app.ts; `generate` produces test
 * data with the generator tool (tools/generate/, its own composition), loaded only for that command, so
 * the worker's import graph does not contain it and the worker image, which does not ship tools/, runs
 * without it; `produce` and `consume` do the same with the console tool (src/cli/console.ts, tools/console/).
 * Help: `icefloe` alone is a usage error (exit 2); `icefloe <command> --help` prints the command's own
 * text (src/cli/usage.ts) before its arguments are parsed. Users run it through bin/icefloe, which picks
 * the project's Node 24.
 */
import { existsSync, readFileSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import type { GenerateFormat } from '../tools/generate/index.ts';
import { ConfigError, IcefloeError } from './core/errors.ts';
import type { LogEnvironment } from './core/log-format.ts';
import { runConsoleTool } from './cli/console.ts';
import { endpoints, integer, parseOptions } from './cli/options.ts';
import { COMMAND_HELP, USAGE, wantsHelp } from './cli/usage.ts';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return `icefloe ${pkg.version} (node ${process.version})`;
}

/** What the log format depends on besides icefloe.log.format (core/log-format.ts resolves it). */
function logEnvironment(): LogEnvironment {
  return { format: process.env['ICEFLOE_LOG_FORMAT'], noColor: process.env['NO_COLOR'], stderrIsTty: process.stderr.isTTY === true };
}

async function generate(args: readonly string[]): Promise<void> {
  // Loaded here, not at startup: the tool brings the native Kafka client, which `version` and `help` do not
  // need, and the worker image has no tools/ at all.
  if (!existsSync(new URL('../tools/generate/index.ts', import.meta.url))) {
    throw new ConfigError('the test-data generator is not installed here: it is a tool of the source tree (tools/generate/), not part of the worker image');
  }
  const { GENERATE_FORMATS, runGenerate } = await import('../tools/generate/index.ts');
  const o = parseOptions(args, { values: ['topic', 'count', 'rate', 'format', 'partitions', 'only-partitions', 'seed', 'schema-version', 'bootstrap-servers', 'registry-url'] });
  const format = o.get('format') ?? 'avro';
  if (!(GENERATE_FORMATS as readonly string[]).includes(format)) throw new ConfigError(`--format must be one of ${GENERATE_FORMATS.join(', ')}, not '${format}'`);
  const rate = Number(o.get('rate') ?? '0');
  if (!Number.isFinite(rate) || rate < 0) throw new ConfigError(`--rate must be a non-negative number, not '${o.get('rate')}'`);
  const schemaVersion = integer('schema-version', o.get('schema-version') ?? '1', 1);
  if (schemaVersion !== 1 && schemaVersion !== 2) throw new ConfigError(`--schema-version must be 1 or 2, not ${schemaVersion}`);
  const only = o.get('only-partitions');
  const topic = o.get('topic') ?? 'orders';

  const stats = await runGenerate({
    ...endpoints(o, process.env),
    topic,
    partitions: integer('partitions', o.get('partitions') ?? '6', 1),
    ...(only === undefined ? {} : { onlyPartitions: only.split(',').map((p) => integer('only-partitions', p, 0)) }),
    format: format as GenerateFormat,
    count: integer('count', o.get('count') ?? '10000', 0),
    ratePerSec: rate,
    seed: integer('seed', o.get('seed') ?? '1', Number.MIN_SAFE_INTEGER),
    schemaVersion,
  });
  const seconds = stats.durationMs / 1000;
  const perSecond = seconds > 0 ? Math.round(stats.records / seconds) : stats.records;
  const schema = stats.schemaId === null ? '' : `, schema id ${stats.schemaId}`;
  console.log(
    `generated ${stats.records} ${format} records to ${topic}: ${(stats.bytes / 1e6).toFixed(2)} MB in ${seconds.toFixed(2)} s, ${perSecond} records/s${schema}`,
  );
}

/**
 * `icefloe standalone`: runs until SIGTERM/SIGINT, serving the Kafka Connect REST API (`listeners`).
 * ICEFLOE_CRASH_POINT / ICEFLOE_CRASH_AFTER / ICEFLOE_CRASH_ACTION arm a named crash point (tests only;
 * src/core/crash-points.ts); ICEFLOE_LOG_LEVEL sets the log level, ICEFLOE_LOG_FORMAT (auto | json | pretty)
 * overrides icefloe.log.format, NO_COLOR turns colour off.
 *
 * FAILED tasks and connectors stay in the status the REST API shows (a restart request brings them back),
 * as in Connect. `--exit-on-failure` is for supervisors without the API: the worker then stops by itself
 * once every task has FAILED for good, or when a connector cannot start.
 *
 * Exit codes (docs/sink.md "When tasks fail"): 0 stopped by a signal with no task FAILED; 1 stopped by a
 * signal while some were FAILED, or (--exit-on-failure) every task FAILED for good or a connector could not
 * start — with a summary on stderr; 2 a usage or configuration error at start.
 */
async function standalone(args: readonly string[]): Promise<number> {
  const flags = args.filter((a) => a.startsWith('--'));
  const [workerFile, ...connectorFiles] = args.filter((a) => !a.startsWith('--'));
  if (workerFile === undefined || flags.some((f) => f !== '--exit-on-failure')) {
    process.stderr.write(`usage: icefloe standalone [--exit-on-failure] WORKER.properties [CONNECTOR.json...]\n`);
    return 2;
  }
  return serve('standalone', workerFile, connectorFiles, flags.includes('--exit-on-failure'));
}

/**
 * `icefloe distributed WORKER.properties`: a worker of the cluster its group.id names (Kafka's
 * connect-distributed shape; docs/design/cluster.md). Connectors are created through the REST API of any
 * worker. SIGTERM stops it gracefully: its tasks commit their cycles and leave their groups, its committers
 * run a last round and release their leases, then it leaves the cluster. Exit codes as `standalone`.
 */
async function distributed(args: readonly string[]): Promise<number> {
  const [workerFile, ...extra] = args;
  if (workerFile === undefined || workerFile.startsWith('--') || extra.length > 0) {
    process.stderr.write('usage: icefloe distributed WORKER.properties\n');
    return 2;
  }
  return serve('distributed', workerFile, [], false);
}

async function serve(mode: 'standalone' | 'distributed', workerFile: string, connectorFiles: readonly string[], exitOnFailure: boolean): Promise<number> {
  // Listen before starting anything: a SIGTERM during start-up (a supervisor stopping a worker that has
  // just been started) must stop it cleanly once it is up, not kill it by the default action and leave its
  // task processes to notice on their own.
  let stopRequested = false;
  let onStop = (): void => {
    stopRequested = true;
  };
  const stop = (): void => onStop();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const { failureSummary, parseCrashSpec, runDistributed, runStandalone } = await import('./app.ts');
  let running: Awaited<ReturnType<typeof runStandalone>>;
  try {
    running = await (mode === 'standalone' ? runStandalone : runDistributed)({
      workerPropertiesPath: workerFile,
      connectorPaths: connectorFiles,
      cwd: process.cwd(),
      crash: parseCrashSpec(process.env['ICEFLOE_CRASH_POINT'], process.env['ICEFLOE_CRASH_AFTER'], process.env['ICEFLOE_CRASH_ACTION']),
      logLevel: process.env['ICEFLOE_LOG_LEVEL'] ?? 'info',
      logEnvironment: logEnvironment(),
      exitOnFailure,
      env: process.env,
    });
  } catch (e) {
    const text = e instanceof IcefloeError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
    process.stderr.write(`icefloe ${mode}: ${text}\n`);
    return e instanceof ConfigError ? 2 : 1;
  }
  const { worker } = running;
  let allFailed = false;
  if (!stopRequested) {
    await new Promise<void>((resolve) => {
      onStop = resolve;
      if (exitOnFailure) {
        void worker.whenAllFailed().then(() => {
          allFailed = true;
          resolve();
        });
      }
    });
  }
  process.off('SIGTERM', stop);
  process.off('SIGINT', stop);
  // Read before stopping: stop() forgets the connectors. A supervisor must see FAILED tasks in the exit
  // code even when it stopped the worker itself (a rolling restart would otherwise hide them).
  const { failed, total } = worker.failures();
  // Bounded (icefloe.shutdown.timeout.ms, within a Kubernetes grace period): a stop that hangs (a catalog
  // that does not answer the last round) must not outlive it; fencing makes a cut-short stop harmless.
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), running.shutdownTimeoutMs)));
  const how = await Promise.race([running.stop().then(() => 'stopped' as const), late]);
  clearTimeout(timer);
  if (how === 'late') {
    process.stderr.write(`icefloe ${mode}: the worker did not stop within icefloe.shutdown.timeout.ms (${running.shutdownTimeoutMs} ms); exiting (open cycles are read again by the next owner)\n`);
    return 1;
  }
  if (failed.length === 0) return 0;
  process.stderr.write(failureSummary(failed, total, allFailed ? 'all-failed' : 'stopped'));
  return 1;
}

/** `icefloe positions`: prints the report as JSON; exit 2 on a usage or configuration error. */
async function positions(args: readonly string[]): Promise<number> {
  let table: string | undefined;
  let action: 'show' | 'reapply' | 'adopt' = 'show';
  let holdsGroupOffsets = false;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--table') table = args[++i];
    else if (a.startsWith('--table=')) table = a.slice('--table='.length);
    else if (a === '--reapply' || a === '--adopt') {
      if (action !== 'show') throw new ConfigError('--reapply and --adopt exclude each other');
      action = a === '--reapply' ? 'reapply' : 'adopt';
    } else if (a === '--holds-group-offsets') holdsGroupOffsets = true;
    else if (!a.startsWith('--')) rest.push(a);
    else throw new ConfigError(`unknown option ${a}`);
  }
  const [workerFile, connectorFile, ...extra] = rest;
  if (workerFile === undefined || connectorFile === undefined || extra.length > 0 || table === undefined || table === '') {
    process.stderr.write('usage: icefloe positions WORKER.properties CONNECTOR.json --table NS.TABLE [--reapply | --adopt [--holds-group-offsets]]\n');
    return 2;
  }
  const { runPositions } = await import('./app.ts');
  if (holdsGroupOffsets && action !== 'adopt') throw new ConfigError('--holds-group-offsets goes with --adopt');
  const report = await runPositions({ workerPropertiesPath: workerFile, connectorPath: connectorFile, cwd: process.cwd(), table, action, holdsGroupOffsets, logEnvironment: logEnvironment() });
  console.log(JSON.stringify(report, null, 2));
  return 0;
}

/** `icefloe replay`: prints the report as JSON; exit 2 on a usage or configuration error. */
async function replay(args: readonly string[]): Promise<number> {
  let table: string | undefined;
  let snapshot: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--table') table = args[++i];
    else if (a.startsWith('--table=')) table = a.slice('--table='.length);
    else if (a === '--snapshot') snapshot = args[++i];
    else if (a.startsWith('--snapshot=')) snapshot = a.slice('--snapshot='.length);
    else if (!a.startsWith('--')) rest.push(a);
    else throw new ConfigError(`unknown option ${a}`);
  }
  const [workerFile, connectorFile, ...extra] = rest;
  if (workerFile === undefined || connectorFile === undefined || extra.length > 0 || table === undefined || table === '' || snapshot === undefined || !/^-?\d+$/.test(snapshot)) {
    process.stderr.write('usage: icefloe replay WORKER.properties CONNECTOR.json --table NS.TABLE --snapshot ID\n');
    return 2;
  }
  const { runReplay } = await import('./app.ts');
  const report = await runReplay({ workerPropertiesPath: workerFile, connectorPath: connectorFile, cwd: process.cwd(), table, snapshotId: BigInt(snapshot), logEnvironment: logEnvironment() });
  console.log(JSON.stringify(report, null, 2));
  return 0;
}

/** `icefloe dead-letters replay`: prints the report as JSON; exit 2 on a usage or configuration error. */
async function deadLetters(args: readonly string[]): Promise<number> {
  const [sub, ...rest0] = args;
  let toTopic: string | undefined;
  let dryRun = false;
  const rest: string[] = [];
  for (let i = 0; i < rest0.length; i++) {
    const a = rest0[i] as string;
    if (a === '--to-topic') toTopic = rest0[++i];
    else if (a.startsWith('--to-topic=')) toTopic = a.slice('--to-topic='.length);
    else if (a === '--dry-run') dryRun = true;
    else if (!a.startsWith('--')) rest.push(a);
    else throw new ConfigError(`unknown option ${a}`);
  }
  const [workerFile, connectorFile, ...extra] = rest;
  if (sub !== 'replay' || workerFile === undefined || connectorFile === undefined || extra.length > 0 || toTopic === '') {
    process.stderr.write('usage: icefloe dead-letters replay WORKER.properties CONNECTOR.json [--to-topic TOPIC] [--dry-run]\n');
    return 2;
  }
  const { runDeadLetterReplay } = await import('./app.ts');
  const report = await runDeadLetterReplay({ workerPropertiesPath: workerFile, connectorPath: connectorFile, cwd: process.cwd(), ...(toTopic === undefined ? {} : { toTopic }), dryRun, logEnvironment: logEnvironment() });
  console.log(JSON.stringify(report, null, 2));
  return 0;
}

/** Our errors carry a message meant for the user; anything else is a bug, so its stack is shown. */
function report(command: string, e: unknown): number {
  const text = e instanceof IcefloeError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
  process.stderr.write(`icefloe ${command}: ${text}\n`);
  return e instanceof ConfigError ? 2 : 1;
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  // `icefloe <command> --help` (and `icefloe help <command>`): the command's own text, before anything
  // else parses the arguments; the internal `task` command has none.
  const helpFor = command === 'help' ? (rest.find((a) => !a.startsWith('-')) ?? (wantsHelp(rest) ? 'help' : undefined))
    : command !== undefined && command !== 'task' && wantsHelp(rest) ? command : undefined;
  if (helpFor !== undefined) {
    const text = COMMAND_HELP[helpFor];
    if (text === undefined) {
      process.stderr.write(`icefloe: unknown command '${helpFor}'\n\n${USAGE}`);
      return 2;
    }
    process.stdout.write(text);
    return 0;
  }
  switch (command) {
    case 'version':
    case '--version':
      console.log(version());
      return 0;
    case undefined:
      // No command is a usage error, as for any tool: the overview goes to stderr, and the exit status says so.
      process.stderr.write(USAGE);
      return 2;
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return 0;
    case 'distributed':
      process.exit(await distributed(rest));
    // falls through (unreachable)
    case 'standalone':
      // Explicit exit: a stopped worker must not linger on a client's leftover handle.
      process.exit(await standalone(rest));
    // falls through (unreachable)
    case 'task':
      // Internal: a task process forked by the worker (its spec arrives over IPC, which would keep it alive).
      process.exit(await (await import('./app.ts')).runTaskChild());
    // falls through (unreachable)
    case 'positions':
      try {
        return await positions(rest);
      } catch (e) {
        return report(command, e);
      }
    case 'replay':
      try {
        return await replay(rest);
      } catch (e) {
        return report(command, e);
      }
    case 'dead-letters':
      try {
        return await deadLetters(rest);
      } catch (e) {
        return report(command, e);
      }
    case 'generate':
      try {
        await generate(rest);
        return 0;
      } catch (e) {
        return report(command, e);
      }
    case 'produce':
    case 'consume':
      try {
        return await runConsoleTool(command, rest, process.env);
      } catch (e) {
        return report(command, e);
      }
    default:
      process.stderr.write(`icefloe: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

// V8's code cache on disk (NODE_COMPILE_CACHE, else <tmpdir>/node-compile-cache; NODE_DISABLE_COMPILE_CACHE=1
// turns it off): every module loaded from here on — app.ts and the libraries behind it — is compiled once per
// machine rather than once per process. A worker forks a process per task and again at every restart;
// measured, it halves the CPU of loading the worker's modules (docs/benchmarks.md, start-up).
enableCompileCache();
process.exitCode = await main(process.argv.slice(2));
