#!/usr/bin/env node
/**
 * The `icefloe` command: process entry, the only place that reads argv (with main.ts, process.env).
 * Commands arrive with the capabilities they run: `standalone` (the worker, connect-standalone's shape)
 * comes with the sink, and everything past its argument parsing happens in app.ts; `generate` produces test
 * data with the generator tool (tools/generate/, its own composition), loaded only for that command, so
 * the worker's import graph does not contain it and the worker image, which does not ship tools/, runs
 * without it.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { GenerateFormat } from '../tools/generate/index.ts';
import { ConfigError, IcefloeError } from './core/errors.ts';
import type { LogEnvironment } from './core/log-format.ts';

const DEFAULT_BOOTSTRAP_SERVERS = 'localhost:9092';
const DEFAULT_REGISTRY_URL = 'http://localhost:8081/apis/ccompat/v7';

const USAGE = `usage: icefloe <command> [options]

commands:
  standalone WORKER.properties CONNECTOR.json...
            run the worker with these connectors (Kafka's connect-standalone shape); SIGTERM/SIGINT stop
            it cleanly: every task commits its last cycle, the committer applies it
  generate  produce order events to Kafka (registering their schema), for quickstarts, tests and benchmarks
            (a tool of the source tree, tools/generate/: not in the worker image)
  positions WORKER.properties CONNECTOR.json --table NS.TABLE [--reapply | --adopt]
            a table's control positions and the connector's (read only without a flag); after a rollback
            or branch reset stopped the table (positions-rolled-back): --reapply applies the announcements it
            lost again from its current positions, --adopt keeps the table as it is (docs/sink.md)
  version   print Icefloe's version and the Node runtime
  help      this text

icefloe generate [options]
  --topic NAME               topic to produce to (default orders)
  --count N                  number of events (default 10000)
  --rate N                   events per second, 0 for as fast as possible (default 0)
  --format F                 avro | protobuf (Confluent-framed, schema registered as <topic>-value),
                             json-schema (JsonConverter with schemas.enable=true) | json (schemas.enable=false)
                             (default avro)
  --partitions N             partitions to create the topic with if it does not exist (default 6)
  --only-partitions 0,1      produce only to these partitions, in turn (default: the key, the order id, chooses)
  --seed N                   the same seed produces the same events (default 1)
  --schema-version 1|2       2 adds the optional field channel and widens items.quantity to long (default 1)
  --bootstrap-servers HOSTS  Kafka (default $ICEFLOE_BOOTSTRAP_SERVERS, else ${DEFAULT_BOOTSTRAP_SERVERS})
  --registry-url URL         Confluent-API schema registry (default $ICEFLOE_REGISTRY_URL, else
                             ${DEFAULT_REGISTRY_URL})
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return `icefloe ${pkg.version} (node ${process.version})`;
}

/** `--name value` and `--name=value` options; a repeated option keeps its last value. */
function parseOptions(args: readonly string[], known: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument '${arg}'`);
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    if (!known.includes(name)) throw new ConfigError(`unknown option --${name}`);
    const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new ConfigError(`option --${name} needs a value`);
    out.set(name, value);
  }
  return out;
}

function integer(name: string, text: string, min: number): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < min) throw new ConfigError(`--${name} must be an integer of at least ${min}, not '${text}'`);
  return n;
}

function env(name: string): string | undefined {
  const v = process.env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
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
  const o = parseOptions(args, ['topic', 'count', 'rate', 'format', 'partitions', 'only-partitions', 'seed', 'schema-version', 'bootstrap-servers', 'registry-url']);
  const format = o.get('format') ?? 'avro';
  if (!(GENERATE_FORMATS as readonly string[]).includes(format)) throw new ConfigError(`--format must be one of ${GENERATE_FORMATS.join(', ')}, not '${format}'`);
  const rate = Number(o.get('rate') ?? '0');
  if (!Number.isFinite(rate) || rate < 0) throw new ConfigError(`--rate must be a non-negative number, not '${o.get('rate')}'`);
  const schemaVersion = integer('schema-version', o.get('schema-version') ?? '1', 1);
  if (schemaVersion !== 1 && schemaVersion !== 2) throw new ConfigError(`--schema-version must be 1 or 2, not ${schemaVersion}`);
  const only = o.get('only-partitions');
  const topic = o.get('topic') ?? 'orders';

  const stats = await runGenerate({
    bootstrapServers: o.get('bootstrap-servers') ?? env('ICEFLOE_BOOTSTRAP_SERVERS') ?? DEFAULT_BOOTSTRAP_SERVERS,
    registryUrl: o.get('registry-url') ?? env('ICEFLOE_REGISTRY_URL') ?? DEFAULT_REGISTRY_URL,
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
 * `icefloe standalone`: runs until SIGTERM/SIGINT. ICEFLOE_CRASH_POINT / ICEFLOE_CRASH_AFTER /
 * ICEFLOE_CRASH_ACTION arm a named crash point (tests only; src/core/crash-points.ts); ICEFLOE_LOG_LEVEL
 * sets the log level, ICEFLOE_LOG_FORMAT (auto | json | pretty) overrides icefloe.log.format, NO_COLOR turns
 * colour off.
 */
async function standalone(args: readonly string[]): Promise<number> {
  const [workerFile, ...connectorFiles] = args;
  if (workerFile === undefined || connectorFiles.length === 0 || args.some((a) => a.startsWith('--'))) {
    process.stderr.write(`usage: icefloe standalone WORKER.properties CONNECTOR.json...\n`);
    return 2;
  }
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
  const { parseCrashSpec, runStandalone } = await import('./app.ts');
  let worker: Awaited<ReturnType<typeof runStandalone>>;
  try {
    worker = await runStandalone({
      workerPropertiesPath: workerFile,
      connectorPaths: connectorFiles,
      cwd: process.cwd(),
      crash: parseCrashSpec(process.env['ICEFLOE_CRASH_POINT'], process.env['ICEFLOE_CRASH_AFTER'], process.env['ICEFLOE_CRASH_ACTION']),
      logLevel: process.env['ICEFLOE_LOG_LEVEL'] ?? 'info',
      logEnvironment: logEnvironment(),
    });
  } catch (e) {
    const text = e instanceof IcefloeError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
    process.stderr.write(`icefloe standalone: ${text}\n`);
    return e instanceof ConfigError ? 2 : 1;
  }
  if (!stopRequested) await new Promise<void>((resolve) => (onStop = resolve));
  process.off('SIGTERM', stop);
  process.off('SIGINT', stop);
  await worker.stop();
  return 0;
}

/** `icefloe positions`: prints the report as JSON; exit 2 on a usage or configuration error. */
async function positions(args: readonly string[]): Promise<number> {
  let table: string | undefined;
  let action: 'show' | 'reapply' | 'adopt' = 'show';
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--table') table = args[++i];
    else if (a.startsWith('--table=')) table = a.slice('--table='.length);
    else if (a === '--reapply' || a === '--adopt') {
      if (action !== 'show') throw new ConfigError('--reapply and --adopt exclude each other');
      action = a === '--reapply' ? 'reapply' : 'adopt';
    } else if (!a.startsWith('--')) rest.push(a);
    else throw new ConfigError(`unknown option ${a}`);
  }
  const [workerFile, connectorFile, ...extra] = rest;
  if (workerFile === undefined || connectorFile === undefined || extra.length > 0 || table === undefined || table === '') {
    process.stderr.write('usage: icefloe positions WORKER.properties CONNECTOR.json --table NS.TABLE [--reapply | --adopt]\n');
    return 2;
  }
  const { runPositions } = await import('./app.ts');
  const report = await runPositions({ workerPropertiesPath: workerFile, connectorPath: connectorFile, cwd: process.cwd(), table, action, logEnvironment: logEnvironment() });
  console.log(JSON.stringify(report, null, 2));
  return 0;
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'version':
    case '--version':
      console.log(version());
      return 0;
    case undefined:
    case 'help':
    case '--help':
      process.stdout.write(USAGE);
      return 0;
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
        const text = e instanceof IcefloeError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
        process.stderr.write(`icefloe positions: ${text}\n`);
        return e instanceof ConfigError ? 2 : 1;
      }
    case 'generate':
      if (rest.includes('--help')) {
        process.stdout.write(USAGE);
        return 0;
      }
      try {
        await generate(rest);
        return 0;
      } catch (e) {
        // Our errors carry a message meant for the user; anything else is a bug, so show its stack.
        const text = e instanceof IcefloeError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
        process.stderr.write(`icefloe generate: ${text}\n`);
        return e instanceof ConfigError ? 2 : 1;
      }
    default:
      process.stderr.write(`icefloe: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
