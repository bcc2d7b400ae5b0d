/**
 * The command line of `npm run bench` (scripts/bench.ts): the record count, which phases run, and the
 * knobs of each phase. Unknown options and phase names are errors, so a typo in a before/after comparison
 * does not quietly run something else.
 */
import { resolve } from 'node:path';

export const USAGE = `usage: node scripts/bench.ts [records] [options]

  records, --records=N   order events produced once and read by every load phase (default 1000000)
  --phases=LIST          phases to run, comma-separated; they always run in this order:
                           ceiling       decode + encode in this process, no Kafka (median of --repeat)
                           consume       the Kafka client alone, records dropped
                           throughput    one throughputN per --tasks count (throughput1, throughput2, ...:
                                         N tasks, one unpartitioned table)
                           routed        routed1: 1 task, records routed by region to 3 tables, each
                                         partitioned by --routed-partition-by (routedN: N tasks)
                           long          one task, the whole topic in one commit cycle (memory)
                           freshness     produce → visible at --fresh-rate, per --fresh-tasks count
                           idle          the watermark with 1 of 6 partitions written
                         default: ceiling,consume,throughput,routed,long,freshness,idle
  --skip=LIST            phases to leave out of --phases (throughput / routed: all of that kind)
  --tasks=1,2            the task counts 'throughput' stands for (default 1,2)
  --runs=N               repeat the throughput and routed phases N times, interleaved (default 1)
  --storage=LIST         storage paths of the load phases, comma-separated (default embedded,s3-rest):
                           embedded      SQLite catalog + local warehouse in a temp directory
                           s3-rest       the stack's REST catalog (on PostgreSQL) + data files on S3 (moto),
                                         a fresh namespace per run, dropped (files deleted) after it
                         throughputN and routedN run once per path; long with the first one
  --set=KEY=VALUE        connector config key for the load phases, added or overriding (repeatable), e.g.
                         --set=consumer.override.queued.max.messages.kbytes=16384
  --worker-set=KEY=VALUE worker property for the load phases, added or overriding (repeatable)
  --interval-ms=5000     commit interval of the load phases
  --routed-partition-by=SPEC  partition spec of the routed tables (default "day(created_at), bucket(order_id, 16)")
  --repeat=3             ceiling runs (after a warm-up)
  --fresh-tasks=1,2 --fresh-rate=20000 --fresh-seconds=30 --idle-rate=50 --idle-seconds=20
  --logs=DIR             keep every worker's log lines there (<connector>.log)
  --profile=DIR          run the worker and its tasks of the load phases with node --cpu-prof
  --keep                 keep the temp directories (warehouses, catalogs) and the s3-rest namespaces
  --out=FILE.md          also write the report there
`;

/** A phase that reads the produced topic through a worker: throughput (one table) or routed (three). */
export interface LoadPhase {
  /** throughputN or routedN. */
  readonly name: string;
  readonly routed: boolean;
  readonly tasks: number;
}

/** Where a load phase's tables live (lib/bench-storage.ts). */
export const STORAGES = ['embedded', 's3-rest'] as const;
export type StorageName = (typeof STORAGES)[number];

export interface BenchOptions {
  readonly records: number;
  readonly ceiling: boolean;
  readonly consume: boolean;
  /** Throughput phases first (by task count), then routed ones; --runs repeats this list. */
  readonly load: readonly LoadPhase[];
  readonly long: boolean;
  readonly freshness: boolean;
  readonly idle: boolean;
  readonly runs: number;
  /** Storage paths of the load phases, in --storage order (long uses the first). */
  readonly storage: readonly StorageName[];
  /** --set: connector keys of the load phases, applied over everything the benchmark sets. */
  readonly set: Readonly<Record<string, string>>;
  /** --worker-set: worker properties of the load phases, applied over the benchmark's. */
  readonly workerSet: Readonly<Record<string, string>>;
  readonly intervalMs: number;
  readonly routedPartitionBy: string;
  readonly repeat: number;
  readonly freshTasks: readonly number[];
  readonly freshRate: number;
  readonly freshSeconds: number;
  readonly idleRate: number;
  readonly idleSeconds: number;
  readonly profileDir: string | undefined;
  readonly logDir: string | undefined;
  readonly keep: boolean;
  readonly out: string | undefined;
}

const VALUE_OPTIONS = [
  'records', 'phases', 'skip', 'tasks', 'runs', 'interval-ms', 'routed-partition-by', 'repeat',
  'fresh-tasks', 'fresh-rate', 'fresh-seconds', 'idle-rate', 'idle-seconds', 'logs', 'profile', 'out',
  'storage',
];
/** Options that may be given more than once, each a KEY=VALUE pair. */
const PAIR_OPTIONS = ['set', 'worker-set'];
const SIMPLE_PHASES = ['ceiling', 'consume', 'long', 'freshness', 'idle'];
const DEFAULT_PHASES = 'ceiling,consume,throughput,routed,long,freshness,idle';

export class UsageError extends Error {}

/** A benchmark's options from the command line: --help prints `usage` (exit 0), a UsageError prints it after the message (exit 2). */
export function optionsFromArgv<T>(name: string, usage: string, parse: (argv: string[]) => T): T {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    process.exit(0);
  }
  try {
    return parse(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`${name}: ${e.message}\n\n${usage}`);
    process.exit(2);
  }
}

function positive(name: string, text: string, min = 1): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} must be an integer of at least ${min}, not '${text}'`);
  return n;
}

function counts(name: string, text: string): number[] {
  const out = text.split(',').filter((s) => s !== '').map((s) => positive(name, s));
  if (out.length === 0) throw new UsageError(`--${name} needs at least one value`);
  return out;
}

/** Phase names of a list, with 'throughput' expanded to the --tasks counts and 'routed' to 'routed1'. */
function expand(list: string, tasks: readonly number[], what: string): string[] {
  const out: string[] = [];
  for (const raw of list.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (SIMPLE_PHASES.includes(raw)) out.push(raw);
    else if (raw === 'throughput') out.push(...tasks.map((n) => `throughput${n}`));
    else if (raw === 'routed') out.push('routed1');
    else if (/^(throughput|routed)[1-9]\d*$/.test(raw)) out.push(raw);
    else throw new UsageError(`${what}: unknown phase '${raw}' (one of ${SIMPLE_PHASES.join(', ')}, throughput, throughputN, routed, routedN)`);
  }
  return out;
}

/** KEY=VALUE → [KEY, VALUE]: the key is up to the first '=', the value may hold more (and be empty). */
function pair(name: string, text: string): [string, string] {
  const eq = text.indexOf('=');
  const key = eq < 0 ? '' : text.slice(0, eq).trim();
  if (key === '') throw new UsageError(`--${name} needs KEY=VALUE, not '${text}'`);
  return [key, text.slice(eq + 1)];
}

function storages(text: string): StorageName[] {
  const out = [...new Set(text.split(',').map((s) => s.trim()).filter((s) => s !== ''))];
  for (const s of out) if (!(STORAGES as readonly string[]).includes(s)) throw new UsageError(`--storage: unknown storage path '${s}' (one of ${STORAGES.join(', ')})`);
  if (out.length === 0) throw new UsageError('--storage needs at least one storage path');
  return out as StorageName[];
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  const values = new Map<string, string>();
  const pairs = new Map<string, Record<string, string>>(PAIR_OPTIONS.map((o) => [o, {}]));
  let keep = false;
  for (const arg of argv) {
    if (/^\d+$/.test(arg)) values.set('records', arg);
    else if (arg === '--keep') keep = true;
    else {
      const m = /^--([a-z-]+)=(.*)$/.exec(arg);
      const name = m?.[1] as string;
      if (m !== null && PAIR_OPTIONS.includes(name)) {
        const [k, v] = pair(name, m[2] as string);
        (pairs.get(name) as Record<string, string>)[k] = v;
        continue;
      }
      if (m === null || !VALUE_OPTIONS.includes(name)) throw new UsageError(`unknown argument '${arg}'`);
      values.set(name, m[2] as string);
    }
  }
  const get = (name: string, fallback: string): string => values.get(name) ?? fallback;
  const tasks = counts('tasks', get('tasks', '1,2'));
  const skip = get('skip', '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  expand(skip.join(','), [], '--skip'); // only to reject unknown names
  const skipped = (p: string): boolean => skip.some((s) => s === p || ((s === 'throughput' || s === 'routed') && new RegExp(`^${s}\\d+$`).test(p)));
  const phases = [...new Set(expand(get('phases', DEFAULT_PHASES), tasks, '--phases'))].filter((p) => !skipped(p));
  if (phases.length === 0) throw new UsageError('no phase left to run');
  const load = phases
    .filter((p) => /\d$/.test(p))
    .map((p) => ({ name: p, routed: p.startsWith('routed'), tasks: Number(/\d+$/.exec(p)?.[0]) }))
    .sort((a, b) => Number(a.routed) - Number(b.routed) || a.tasks - b.tasks);
  const partitionBy = get('routed-partition-by', 'day(created_at), bucket(order_id, 16)');
  if (partitionBy.trim() === '') throw new UsageError('--routed-partition-by may not be empty (the routed phase is the partitioned one)');
  return {
    records: positive('records', get('records', '1000000')),
    ceiling: phases.includes('ceiling'),
    consume: phases.includes('consume'),
    load,
    long: phases.includes('long'),
    freshness: phases.includes('freshness'),
    idle: phases.includes('idle'),
    runs: positive('runs', get('runs', '1')),
    storage: storages(get('storage', STORAGES.join(','))),
    set: pairs.get('set') as Record<string, string>,
    workerSet: pairs.get('worker-set') as Record<string, string>,
    intervalMs: positive('interval-ms', get('interval-ms', '5000')),
    routedPartitionBy: partitionBy,
    repeat: positive('repeat', get('repeat', '3')),
    freshTasks: counts('fresh-tasks', get('fresh-tasks', '1,2')),
    freshRate: positive('fresh-rate', get('fresh-rate', '20000')),
    freshSeconds: positive('fresh-seconds', get('fresh-seconds', '30')),
    idleRate: positive('idle-rate', get('idle-rate', '50')),
    idleSeconds: positive('idle-seconds', get('idle-seconds', '20')),
    profileDir: values.has('profile') ? resolve(values.get('profile') as string) : undefined,
    logDir: values.has('logs') ? resolve(values.get('logs') as string) : undefined,
    keep,
    out: values.get('out'),
  };
}

/** Whether any phase reads the produced topic (otherwise the bench does not produce it). */
export function needsTopic(o: BenchOptions): boolean {
  return o.ceiling || o.consume || o.load.length > 0 || o.long;
}
