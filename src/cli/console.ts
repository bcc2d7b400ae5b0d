/**
 * `icefloe produce` and `icefloe consume`: their options, the records they take from the command line or
 * stdin, and the lines they print. The work is done by the console tool (tools/console/, its own
 * composition), loaded only for these commands, so the worker's import graph and image go without it.
 *
 * Owns: turning arguments into the tool's plain options, and the user-facing summary lines (stderr; records
 * that `consume` prints go to stdout, one JSON line each). Must not: talk to Kafka or a registry itself.
 */
import { existsSync, readFileSync } from 'node:fs';
import type * as ConsoleTool from '../../tools/console/index.ts';
import type { ConsumeResult, InputRecord, ProduceFormat, ProduceResult } from '../../tools/console/index.ts';
import { ConfigError } from '../core/errors.ts';
import { endpoints, integer, parseOptions } from './options.ts';
import type { ToolEnvironment } from './options.ts';

const ENDPOINT_OPTIONS = ['bootstrap-servers', 'registry-url'];
const FORMATS: readonly ProduceFormat[] = ['json', 'avro', 'protobuf'];

async function loadTool(): Promise<typeof ConsoleTool> {
  if (!existsSync(new URL('../../tools/console/index.ts', import.meta.url))) {
    throw new ConfigError('the console tool is not installed here: it is a tool of the source tree (tools/console/), not part of the worker image');
  }
  return import('../../tools/console/index.ts');
}

/** Runs `produce` or `consume`; resolves with the exit status (errors are thrown for the CLI to report). */
export async function runConsoleTool(command: 'produce' | 'consume', args: readonly string[], environment: ToolEnvironment): Promise<number> {
  return command === 'produce' ? produce(args, environment) : consume(args, environment);
}

function requiredTopic(topic: string | undefined): string {
  if (topic === undefined || topic === '') throw new ConfigError('--topic is required (the topic to use)');
  return topic;
}

/**
 * `--schema`: a file when one exists at that path, else the text itself when it looks like a schema (Avro's
 * JSON, a .proto file's declarations); anything else is a path that does not exist, and is said so.
 */
function schemaText(value: string): string {
  if (existsSync(value)) return readFileSync(value, 'utf8');
  const t = value.trim();
  if (t.startsWith('{') || t.startsWith('"') || t.startsWith('[') || /\b(syntax|message)\b/.test(t)) return value;
  throw new ConfigError(`--schema ${value}: no such file (and not an inline schema: Avro JSON starts with {, a .proto file declares a message)`);
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('icefloe produce: reading one JSON document per line from the terminal; end with Ctrl-D\n');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The records to produce: each `--value`, or else each non-blank line of stdin, with where it came from. */
async function inputRecords(values: readonly string[]): Promise<InputRecord[]> {
  if (values.length > 0) return values.map((text, i) => ({ origin: `--value #${i + 1}`, text }));
  const lines = (await readStdin()).split(/\r?\n/);
  const out: InputRecord[] = [];
  lines.forEach((text, i) => {
    if (text.trim() !== '') out.push({ origin: `stdin line ${i + 1}`, text });
  });
  return out;
}

async function produce(args: readonly string[], environment: ToolEnvironment): Promise<number> {
  const o = parseOptions(args, {
    values: ['topic', 'format', 'schema', 'message', 'key', 'key-field', 'partition', 'partitions', ...ENDPOINT_OPTIONS],
    repeatable: ['value'],
  });
  const topic = requiredTopic(o.get('topic'));
  const format = o.get('format') ?? 'json';
  if (!(FORMATS as readonly string[]).includes(format)) throw new ConfigError(`--format must be one of ${FORMATS.join(', ')}, not '${format}'`);
  const schemaOption = o.get('schema');
  if (format !== 'json' && schemaOption === undefined) throw new ConfigError(`--format ${format} needs --schema (a file or the schema's text)`);
  if (format === 'json' && schemaOption !== undefined) throw new ConfigError('--schema is for --format avro or protobuf; json records are produced as they are');
  if (o.get('message') !== undefined && format !== 'protobuf') throw new ConfigError('--message is for --format protobuf');
  const key = o.get('key');
  const keyField = o.get('key-field');
  if (key !== undefined && keyField !== undefined) throw new ConfigError('--key and --key-field exclude each other');
  const partitionText = o.get('partition');
  const partition = partitionText === undefined ? undefined : integer('partition', partitionText, 0);
  const partitions = integer('partitions', o.get('partitions') ?? '1', 1);
  const schema = schemaOption === undefined ? undefined : schemaText(schemaOption);
  const message = o.get('message');

  const { runProduce } = await loadTool();
  const records = await inputRecords(o.all('value'));
  if (records.length === 0) throw new ConfigError('nothing to produce: give --value JSON, or JSON lines on stdin');
  const result = await runProduce({
    ...endpoints(o, environment),
    topic,
    format: format as ProduceFormat,
    records,
    partitions,
    ...(schema === undefined ? {} : { schema }),
    ...(message === undefined ? {} : { message }),
    ...(key === undefined ? {} : { key }),
    ...(keyField === undefined ? {} : { keyField }),
    ...(partition === undefined ? {} : { partition }),
  });
  process.stderr.write(`${produceSummary(topic, format, result)}\n`);
  return 0;
}

function produceSummary(topic: string, format: string, r: ProduceResult): string {
  const created = r.createdPartitions === null ? '' : ` (created with ${r.createdPartitions} partition${r.createdPartitions === 1 ? '' : 's'})`;
  const where = r.ranges.map((p) => (p.first === p.last ? `${p.partition}@${p.first}` : `${p.partition}@${p.first}-${p.last}`)).join(', ');
  const schema = r.schemaId === null ? '' : `; schema id ${r.schemaId} registered as ${r.subject}`;
  return `produced ${r.records} ${format} record${r.records === 1 ? '' : 's'} to ${topic}${created}: partition@offsets ${where}${schema}`;
}

async function consume(args: readonly string[], environment: ToolEnvironment): Promise<number> {
  const o = parseOptions(args, { values: ['topic', 'max-messages', 'timeout-ms', 'partition', ...ENDPOINT_OPTIONS], flags: ['from-beginning'] });
  const topic = requiredTopic(o.get('topic'));
  const max = o.get('max-messages');
  const timeout = o.get('timeout-ms');
  const partition = o.get('partition');
  const limits = {
    ...(max === undefined ? {} : { maxMessages: integer('max-messages', max, 1) }),
    ...(timeout === undefined ? {} : { timeoutMs: integer('timeout-ms', timeout, 1) }),
    ...(partition === undefined ? {} : { partition: integer('partition', partition, 0) }),
  };
  const { runConsume } = await loadTool();
  // Ctrl-C and SIGTERM end the read cleanly (the summary still prints); a second one is not caught.
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let result: ConsumeResult;
  try {
    result = await runConsume({
      ...endpoints(o, environment),
      topic,
      fromBeginning: o.has('from-beginning'),
      signal: stop.signal,
      write: (line) => process.stdout.write(`${line}\n`),
      ...limits,
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const why = result.stoppedBy === 'max-messages' ? `--max-messages ${max}` : result.stoppedBy === 'timeout' ? `no new record for ${timeout} ms` : 'a signal';
  process.stderr.write(`consumed ${result.records} record${result.records === 1 ? '' : 's'} from ${topic} (stopped by ${why})\n`);
  return 0;
}
