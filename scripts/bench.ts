/**
 * End-to-end benchmark of the sink (`npm run bench`): Kafka → `icefloe standalone` (tasks as child
 * processes, the embedded default catalog: SQLite + a local warehouse in a temp directory) → Iceberg.
 * A benchmark, not a test: it prints numbers and judges them against the targets of issue 4, it asserts
 * nothing else. Needs the local stack (Kafka, Schema Registry): `bash scripts/stack up`.
 *
 * Phases, in one run:
 *  0. Produce N order events (Avro, ≈ 194 B each, fixed seed and event times) to a fresh 6-partition
 *     topic with `runGenerate` at full speed, before any clock starts.
 *  1. Ceiling: the same N events encoded in memory (the generator's encoder, same seed, same schema id:
 *     byte-identical, checked), decoded by our compiled Avro decoder into a DataFileWriter whose store
 *     counts and drops the bytes (scripts/lib/bench-common.ts, as stage (c) of `npm run bench:decode`):
 *     one core, no Kafka, no upload, no commit. Median of --repeat runs after a warm-up.
 *  1b. Consume only: the task's KafkaSource (same client, same settings as a task's consumer) polling the
 *     topic in this process, records dropped: what the Kafka client alone costs per GB.
 *  2. Throughput, per task count (--tasks=1,2): a worker with a fresh connector (own name, control topic
 *     and consumer group, so it reads the topic from the start) and its own temp directory, commit interval
 *     --interval-ms, no byte/record trigger, default writer settings (128 MiB target files, ZSTD). Measured
 *     until the committer's 'table committed' lines add up to N records. Wall time from worker start and
 *     from the first partition assignment; "busy" time (the window minus the stretches where the task
 *     processes together used < 5 % of a core, i.e. mostly the wait for the cycle deadline after the last
 *     record); CPU-seconds of every process in the worker's process group from /proc/<pid>/stat (tasks
 *     from the moment they logged 'task started', and with their start-up), the worker (its committer)
 *     separately, the Kafka broker from /proc before/after; peak RSS (VmHWM) per process; the committer's
 *     latencyMs per commit; "steady" records/s from each task's full cycles ('cycle committed' lines: every
 *     cycle with records but the task's last, in which the data ran out), summed over the tasks.
 *     --runs=N repeats the task counts in turn (1, 2, 1, 2, ...); the targets then use the medians.
 *  2b. One long cycle (memory): one task reads the whole topic in a single commit cycle (10-minute
 *     interval; the worker is stopped once the task is idle, which commits it), so the writer fills files
 *     and row groups as far as the data allows; peak RSS sampled every 50 ms until the processes exit.
 *  3. Freshness, per --fresh-tasks: a worker on a fresh topic, a warm-up of 1,000 records (table creation),
 *     then --fresh-rate records/s for --fresh-seconds; per record, the time of the 'table committed' line
 *     whose sourceRanges cover its offset minus the producer's delivery-confirmation time (onDelivered).
 *  4. Idle partitions: one task, a warm-up over all 6 partitions, then records to partition 0 only at
 *     --idle-rate for --idle-seconds; "lands" when a commit of that phase carries a validThroughTs at or
 *     after the phase's start (the 5 idle partitions did not hold the watermark back).
 * Everything it creates (topics, control topics, consumer groups, registry subjects, temp directories)
 * is deleted at the end, also after a failure or Ctrl-C (--keep keeps the directories).
 *
 * MB is 10^6 bytes of framed Avro record values (keys not counted); GB is 10^9.
 * Usage: node scripts/bench.ts [records=1000000] [--tasks=1,2] [--runs=1] [--interval-ms=5000] [--repeat=3]
 *          [--fresh-tasks=1,2] [--fresh-rate=20000] [--fresh-seconds=30] [--idle-rate=50] [--idle-seconds=20]
 *          [--skip=ceiling,consume,throughput,long,freshness,idle] [--profile=DIR] [--logs=DIR] [--keep] [--out=FILE.md]
 *   --logs=DIR keeps every worker's log lines there (<connector>.log).
 *   --profile=DIR runs the worker and its tasks with `node --cpu-prof --cpu-prof-dir=DIR` (throughput only).
 * Targets (issue 4): ≥ 15 MB/s of Avro per core end to end with one task; with two tasks, CPU-s per GB
 * per task within 20 % of one task; ≥ 60 % of the ceiling; peak RSS < 1 GiB per task (128 MiB files).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { RdKafka } from '@confluentinc/kafka-javascript';
import { runGenerate } from '../src/app.ts';
import type { GenerateStats } from '../src/app.ts';
import { ConfluentKafkaAdmin, ConfluentKafkaSource } from '../src/consume/confluent/index.ts';
import { compileAvroDecoder } from '../src/decode/avro-decoder.ts';
import { avroToIceberg } from '../src/decode/avro-schema.ts';
import { orderEncoder } from '../src/generate/order-encodings.ts';
import { orderAvroSchema } from '../src/generate/order-schemas.ts';
import { OrderGenerator } from '../src/generate/orders.ts';
import { buildLayout, resolveWriteConfig } from '../src/write/index.ts';
import { requireReachable, stackEndpoints } from '../test/helpers/stack.ts';
import { startWorker } from '../test/helpers/worker.ts';
import type { WorkerProcess } from '../test/helpers/worker.ts';
import { decodeIntoWriter, measure, median, percentile } from './lib/bench-common.ts';
import type { Frames, Run } from './lib/bench-common.ts';
import { findProcess, loadAverage, procCmdline, procMemory, processGroup, procStat } from './lib/proc.ts';

// ---------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const list = (name: string, fallback: number[]): number[] => (opt(name)?.split(',').filter((s) => s !== '').map(Number) ?? fallback);
const RECORDS = Number(args.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
const TASKS = list('tasks', [1, 2]);
const RUNS = Number(opt('runs') ?? 1);
const INTERVAL_MS = Number(opt('interval-ms') ?? 5000);
const REPEAT = Number(opt('repeat') ?? 3);
const FRESH_TASKS = list('fresh-tasks', [1, 2]);
const FRESH_RATE = Number(opt('fresh-rate') ?? 20_000);
const FRESH_SECONDS = Number(opt('fresh-seconds') ?? 30);
const IDLE_RATE = Number(opt('idle-rate') ?? 50);
const IDLE_SECONDS = Number(opt('idle-seconds') ?? 20);
const SKIP = new Set(opt('skip')?.split(',') ?? []);
const PROFILE_DIR = opt('profile') === undefined ? undefined : resolve(opt('profile') as string);
const KEEP = args.includes('--keep');
const OUT = opt('out');
const LOG_DIR = opt('logs') === undefined ? undefined : resolve(opt('logs') as string);

const PARTITIONS = 6;
const SEED = 20260101;
/** Fixed event times: the in-memory copy of phase 1 is then byte for byte what was produced. */
const START_TIME_MS = Date.UTC(2026, 0, 1);
const TABLE = 'bench.orders';
const SAMPLE_MS = 200;
const IDLE_CPU_SHARE = 0.05;
const MiB = 2 ** 20;

const stack = stackEndpoints();
const runId = `bench-${randomUUID().slice(0, 8)}`;

// ---------------------------------------------------------------------------------------------------
// Cleanup: everything made is registered here and removed at the end, whatever happened
// ---------------------------------------------------------------------------------------------------

const topics = new Set<string>();
const groups = new Set<string>();
const dirs = new Set<string>();
const live = new Set<WorkerProcess>();

let cleaning: Promise<void> | undefined;

/** Removes everything made so far; a second call (Ctrl-C during the run's own cleanup) waits for the first. */
function cleanUp(): Promise<void> {
  cleaning ??= removeAll();
  return cleaning;
}

async function removeAll(): Promise<void> {
  for (const w of live) await w.kill().catch(() => undefined);
  live.clear();
  const settings = { 'bootstrap.servers': stack.kafkaBootstrap };
  const admin = await ConfluentKafkaAdmin.connect({ settings }).catch(() => undefined);
  for (const t of topics) await admin?.deleteTopic(t).catch((e: unknown) => console.error(`  cleanup: topic ${t}: ${String(e)}`));
  await admin?.close().catch(() => undefined);
  if (groups.size > 0) {
    const ga = RdKafka.AdminClient.create(settings);
    await new Promise<void>((res) => ga.deleteGroups([...groups], { timeout: 10_000 }, (err) => (err ? (console.error(`  cleanup: consumer groups: ${err.message}`), res()) : res())));
    ga.disconnect();
  }
  // Registry subjects (TopicNameStrategy): soft delete, then permanent.
  for (const t of topics) {
    const url = `${stack.registryUrl}/subjects/${encodeURIComponent(`${t}-value`)}`;
    await fetch(url, { method: 'DELETE' }).catch(() => undefined);
    await fetch(`${url}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
  }
  if (!KEEP) for (const d of dirs) rmSync(d, { recursive: true, force: true });
  else if (dirs.size > 0) console.log(`  kept: ${[...dirs].join(' ')}`);
}

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '–');
const int = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–');
const mib = (bytes: number): string => `${int(bytes / MiB)} MiB`;
const load = (): string => loadAverage().map((x) => x.toFixed(2)).join(' ');

function generate(topic: string, count: number, extra: Partial<Parameters<typeof runGenerate>[0]> = {}): Promise<GenerateStats> {
  topics.add(topic);
  return runGenerate({
    bootstrapServers: stack.kafkaBootstrap,
    registryUrl: stack.registryUrl,
    topic,
    partitions: PARTITIONS,
    format: 'avro',
    count,
    ratePerSec: 0,
    seed: SEED,
    schemaVersion: 1,
    ...extra,
  });
}

/** The worker's parsed JSON log lines, read incrementally. */
interface LogLine {
  readonly msg: string;
  readonly time: number;
  readonly [k: string]: unknown;
}

class LogTail {
  private at = 0;
  private readonly w: WorkerProcess;
  constructor(w: WorkerProcess) {
    this.w = w;
  }
  next(): LogLine[] {
    const out: LogLine[] = [];
    const lines = this.w.lines;
    for (; this.at < lines.length; this.at++) {
      const l = lines[this.at] as string;
      if (!l.startsWith('{')) continue;
      try {
        out.push(JSON.parse(l) as LogLine);
      } catch {
        // not a log line
      }
    }
    return out;
  }
}

interface CommitLine {
  readonly time: number;
  readonly records: number;
  readonly latencyMs: number | undefined;
  readonly validThroughTs: number | undefined;
  readonly ranges: readonly { partition: number; first: number; last: number }[];
}

function commitLine(l: LogLine): CommitLine {
  const ranges = (l['sourceRanges'] as { partition: number; first: string; last: string }[] | undefined) ?? [];
  return {
    time: l.time,
    records: Number(l['records']),
    latencyMs: typeof l['latencyMs'] === 'number' ? l['latencyMs'] : undefined,
    validThroughTs: typeof l['validThroughTs'] === 'number' ? l['validThroughTs'] : undefined,
    ranges: ranges.map((r) => ({ partition: r.partition, first: Number(r.first), last: Number(r.last) })),
  };
}

interface ProcInfo {
  readonly pid: number;
  readonly role: 'worker' | 'task';
  task: number | undefined;
  cpuS: number;
  /** CPU time when the task logged 'task started' (its start-up: node, modules, clients). */
  startCpuS: number | undefined;
  hwmBytes: number;
}

/**
 * Samples every process of the worker's process group (the worker leads it; task processes are its forked
 * children) every SAMPLE_MS: CPU time and peak RSS. A process's last sample stands after it is gone.
 */
class GroupSampler {
  readonly procs = new Map<number, ProcInfo>();
  /** Per sample: time and the task processes' summed CPU seconds. */
  readonly series: { t: number; taskCpuS: number }[] = [];
  private readonly pgid: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(pgid: number) {
    this.pgid = pgid;
  }

  start(intervalMs = SAMPLE_MS): void {
    this.sample();
    clearInterval(this.timer);
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }

  sample(): void {
    for (const pid of processGroup(this.pgid)) this.read(pid);
    let taskCpuS = 0;
    for (const p of this.procs.values()) if (p.role === 'task') taskCpuS += p.cpuS;
    this.series.push({ t: Date.now(), taskCpuS });
  }

  /** A task process logged 'task started': its CPU so far is start-up. */
  markStarted(pid: number, task: number): void {
    const p = this.read(pid);
    if (p === undefined) return;
    p.task = task;
    p.startCpuS ??= p.cpuS;
  }

  private read(pid: number): ProcInfo | undefined {
    const st = procStat(pid);
    const mem = procMemory(pid);
    let p = this.procs.get(pid);
    if (p === undefined) {
      if (st === undefined) return undefined;
      const role = pid === this.pgid ? 'worker' : / task$/.test(procCmdline(pid) ?? '') ? 'task' : undefined;
      if (role === undefined) return undefined;
      p = { pid, role, task: undefined, cpuS: 0, startCpuS: undefined, hwmBytes: 0 };
      this.procs.set(pid, p);
    }
    if (st !== undefined) p.cpuS = st.cpuS;
    if (mem !== undefined && Number.isFinite(mem.hwmBytes)) p.hwmBytes = Math.max(p.hwmBytes, mem.hwmBytes);
    return p;
  }

  tasks(): ProcInfo[] {
    return [...this.procs.values()].filter((p) => p.role === 'task').sort((a, b) => (a.task ?? 99) - (b.task ?? 99));
  }

  worker(): ProcInfo | undefined {
    return this.procs.get(this.pgid);
  }

  /** Seconds within [from, to] during which the task processes together used less than `share` of a core. */
  idleSeconds(from: number, to: number, share = IDLE_CPU_SHARE): number {
    let idle = 0;
    for (let i = 1; i < this.series.length; i++) {
      const a = this.series[i - 1] as { t: number; taskCpuS: number };
      const b = this.series[i] as { t: number; taskCpuS: number };
      const lo = Math.max(a.t, from);
      const hi = Math.min(b.t, to);
      if (hi <= lo) continue;
      const dt = (b.t - a.t) / 1000;
      if (dt > 0 && (b.taskCpuS - a.taskCpuS) / dt < share) idle += (hi - lo) / 1000;
    }
    return idle;
  }
}

function brokerCpu(pid: number | undefined): number {
  return pid === undefined ? Number.NaN : (procStat(pid)?.cpuS ?? Number.NaN);
}

function parquetBytesUnder(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.parquet')) {
        files++;
        bytes += statSync(p).size;
      }
    }
  };
  try {
    walk(dir);
  } catch {
    // no warehouse yet
  }
  return { files, bytes };
}

interface BenchWorker {
  readonly w: WorkerProcess;
  readonly tail: LogTail;
  readonly sampler: GroupSampler;
  readonly dir: string;
  readonly spawnedAt: number;
  readonly name: string;
  /** Every 'table committed' line so far. */
  readonly commits: CommitLine[];
  /** Records per task from its 'cycle committed' lines. */
  readonly taskRecords: Map<number, number>;
  /** Duration of every task cycle commit (close files, upload, transaction), from 'cycle committed'. */
  readonly cycleMs: number[];
  /** Per task, its cycles with records: from the previous cycle's end (or its first assignment) to this one's. */
  readonly cycles: Map<number, { from: number; to: number; records: number }[]>;
  /** Per task, where its current cycle started (its previous cycle's end, or its first non-empty assignment). */
  readonly cycleFrom: Map<number, number>;
  /** Current assignment per task. */
  readonly assigned: Map<number, Set<string>>;
  firstAssignedAt: number | undefined;
  committed: number;
}

function startBenchWorker(label: string, topic: string, tasks: number, env: Record<string, string> = {}, intervalMs = INTERVAL_MS): BenchWorker {
  const name = `${runId}-${label}`;
  const control = `${name}-control`;
  topics.add(control);
  groups.add(`connect-${name}`);
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-bench-'));
  dirs.add(dir);
  const spawnedAt = Date.now();
  const w = startWorker({
    dir,
    env: { ICEFLOE_LOG_LEVEL: 'info', ...env },
    worker: {
      'icefloe.tasks.mode': 'process',
      'icefloe.catalog': `sqlite:${join(dir, 'catalog.db')}`,
      'icefloe.warehouse': join(dir, 'warehouse'),
    },
    connectors: [
      {
        name,
        config: {
          'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
          'tasks.max': String(tasks),
          topics: topic,
          'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
          'value.converter': 'io.confluent.connect.avro.AvroConverter',
          'value.converter.schema.registry.url': stack.registryUrl,
          'iceberg.tables': TABLE,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.control.topic': control,
          'iceberg.control.commit.interval-ms': String(intervalMs),
        },
      },
    ],
  });
  live.add(w);
  const sampler = new GroupSampler(w.child.pid as number);
  sampler.start();
  return { w, tail: new LogTail(w), sampler, dir, spawnedAt, name, commits: [], taskRecords: new Map(), cycleMs: [], cycles: new Map(), cycleFrom: new Map(), assigned: new Map(), firstAssignedAt: undefined, committed: 0 };
}

/** Reads new log lines into the worker's state. */
function pump(b: BenchWorker): void {
  for (const l of b.tail.next()) {
    const task = typeof l['task'] === 'number' ? l['task'] : undefined;
    switch (l.msg) {
      case 'task started':
        if (typeof l['pid'] === 'number' && task !== undefined) b.sampler.markStarted(l['pid'], task);
        break;
      case 'partitions assigned':
      case 'partitions revoked': {
        if (task === undefined) break;
        const set = b.assigned.get(task) ?? new Set<string>();
        for (const p of (l['partitions'] as string[] | undefined) ?? []) {
          if (l.msg === 'partitions assigned') set.add(p);
          else set.delete(p);
        }
        b.assigned.set(task, set);
        if (l.msg === 'partitions assigned' && set.size > 0) {
          b.firstAssignedAt ??= l.time;
          if (!b.cycleFrom.has(task)) b.cycleFrom.set(task, l.time);
        }
        break;
      }
      case 'cycle committed':
        if (task !== undefined) b.taskRecords.set(task, (b.taskRecords.get(task) ?? 0) + Number(l['records']));
        if (typeof l['ms'] === 'number' && Number(l['records']) > 0) b.cycleMs.push(l['ms']);
        if (task !== undefined && Number(l['records']) > 0) {
          const list = b.cycles.get(task) ?? [];
          list.push({ from: b.cycleFrom.get(task) ?? l.time, to: l.time, records: Number(l['records']) });
          b.cycles.set(task, list);
        }
        if (task !== undefined) b.cycleFrom.set(task, l.time);
        break;
      case 'table committed': {
        const c = commitLine(l);
        b.commits.push(c);
        b.committed += c.records;
        break;
      }
    }
  }
}

async function waitUntil(b: BenchWorker, what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  let exited: string | undefined;
  void b.w.exited.then((how) => (exited = how));
  for (;;) {
    pump(b);
    if (cond()) return;
    if (exited !== undefined) throw new Error(`worker exited (${exited}) while waiting for ${what}; last lines:\n${b.w.lines.slice(-20).join('\n')}`);
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}; last lines:\n${b.w.lines.slice(-20).join('\n')}`);
    await sleep(20);
  }
}

/** Waits until every task has partitions and all PARTITIONS are assigned. */
function waitAssigned(b: BenchWorker, tasks: number): Promise<void> {
  return waitUntil(
    b,
    'the partition assignment',
    () => {
      const sets = [...b.assigned.values()];
      return sets.length >= Math.min(tasks, PARTITIONS) && sets.every((s) => s.size > 0) && sets.reduce((n, s) => n + s.size, 0) === PARTITIONS;
    },
    120_000,
  );
}

function saveLog(b: BenchWorker): void {
  if (LOG_DIR === undefined) return;
  mkdirSync(LOG_DIR, { recursive: true });
  writeFileSync(join(LOG_DIR, `${b.name}.log`), `${b.w.lines.join('\n')}\n`);
}

/**
 * Runs a phase with its worker; on failure stops sampling, and whatever happens kills a worker the phase
 * left running (saving its log) so no process outlives the benchmark.
 */
async function withWorker<T>(b: BenchWorker, phase: () => Promise<T>): Promise<T> {
  try {
    return await phase();
  } catch (e) {
    b.sampler.stop();
    throw e;
  } finally {
    if (live.has(b.w)) {
      await b.w.kill();
      saveLog(b);
    }
    live.delete(b.w);
  }
}

async function stopBenchWorker(b: BenchWorker): Promise<void> {
  b.sampler.stop();
  const how = await b.w.stop(60_000);
  live.delete(b.w);
  saveLog(b);
  if (how !== '0') console.log(`  note: worker ${b.name} exited with ${how}`);
}

// ---------------------------------------------------------------------------------------------------
// Phase 1: the single-core ceiling
// ---------------------------------------------------------------------------------------------------

interface CeilingResult {
  readonly run: Run;
  readonly runs: Run[];
  readonly parquetBytes: number;
}

async function ceiling(inputBytes: number, schemaId: number): Promise<CeilingResult> {
  const gen = new OrderGenerator({ seed: SEED, schemaVersion: 1, startTimeMs: START_TIME_MS });
  const encode = orderEncoder('avro', { schemaVersion: 1, schemaId });
  const buf = Buffer.allocUnsafe(inputBytes);
  const starts = new Float64Array(RECORDS + 1);
  let at = 0;
  for (let i = 0; i < RECORDS; i++) {
    const m = encode(gen.next());
    if (at + m.byteLength > inputBytes) throw new Error('the in-memory events are larger than what was produced: not the same data');
    buf.set(m, at);
    starts[i] = at;
    at += m.byteLength;
  }
  starts[RECORDS] = at;
  if (at !== inputBytes) throw new Error(`the in-memory events are ${at} bytes, the produced ones ${inputBytes}: not the same data`);
  const frames: Frames = { buf, starts };
  const schema = orderAvroSchema(1);
  const table = avroToIceberg(schema);
  const layout = buildLayout(table);
  const program = compileAvroDecoder(schema, table);
  const config = resolveWriteConfig({}).config; // what an auto-created table without properties gets
  await decodeIntoWriter({ program, layout, config, frames, n: Math.min(RECORDS, 20_000) }); // warm-up: JIT, wasm
  const runs: Run[] = [];
  let parquetBytes = 0;
  for (let r = 0; r < REPEAT; r++) {
    runs.push(
      await measure(async () => {
        parquetBytes = (await decodeIntoWriter({ program, layout, config, frames, n: RECORDS })).parquetBytes;
      }),
    );
  }
  return { run: { wallS: median(runs.map((x) => x.wallS)), cpuS: median(runs.map((x) => x.cpuS)) }, runs, parquetBytes };
}

// ---------------------------------------------------------------------------------------------------
// Phase 1b: the Kafka client alone
// ---------------------------------------------------------------------------------------------------

interface ConsumeResult {
  readonly run: Run;
  readonly polls: number;
}

/** Polls the whole topic with the task's KafkaSource (4,096 records a poll, as a task) and drops the records. */
async function consumeOnly(topic: string): Promise<ConsumeResult> {
  const group = `${runId}-consume`;
  groups.add(group);
  const source = await ConfluentKafkaSource.connect({ settings: { 'bootstrap.servers': stack.kafkaBootstrap }, groupId: group });
  try {
    await source.subscribe({ kind: 'list', topics: [topic] }, { onAssigned: () => undefined, onRevoked: () => Promise.resolve() });
    let n = 0;
    let polls = 0;
    let t0 = 0;
    let cpu0 = process.cpuUsage();
    const until = Date.now() + 10 * 60_000;
    while (n < RECORDS) {
      if (Date.now() > until) throw new Error(`consume only: ${n} of ${RECORDS} records after 10 minutes`);
      const batch = await source.poll({ maxRecords: 4096, timeoutMs: 200 });
      if (n === 0 && batch.length > 0) {
        // The clock starts with the first records (after the group join), as the worker's "from assignment".
        t0 = performance.now();
        cpu0 = process.cpuUsage();
      }
      n += batch.length;
      polls++;
    }
    const cpu = process.cpuUsage(cpu0);
    return { run: { wallS: (performance.now() - t0) / 1000, cpuS: (cpu.user + cpu.system) / 1e6 }, polls };
  } finally {
    await source.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Phase 2: throughput
// ---------------------------------------------------------------------------------------------------

interface ThroughputResult {
  readonly tasks: number;
  readonly load: string;
  readonly wallFromStartS: number;
  readonly wallFromAssignS: number;
  readonly busyS: number;
  readonly taskCpuS: number;
  readonly taskCpuWithStartupS: number;
  readonly perTask: { task: number | undefined; cpuS: number; startupS: number; records: number; hwmBytes: number }[];
  readonly workerCpuS: number;
  readonly workerHwmBytes: number;
  readonly brokerCpuS: number;
  readonly commits: number;
  /** Task cycle commits with records: count, summed and longest duration (ms). */
  readonly cycles: number;
  readonly cycleMsSum: number;
  readonly cycleMsMax: number;
  /**
   * Steady rate: per task, records over time of its full cycles (every cycle with records but its last,
   * in which the data ran out), summed over the tasks; NaN when a task had no full cycle.
   */
  readonly steadyRecordsPerS: number;
  readonly latencyP50: number;
  readonly latencyP99: number;
  readonly files: number;
  readonly parquetBytes: number;
}

async function throughput(topic: string, tasks: number, run: number): Promise<ThroughputResult> {
  const loadAtStart = load();
  const broker = findProcess(/ kafka\.Kafka /);
  const broker0 = brokerCpu(broker);
  const env: Record<string, string> = PROFILE_DIR === undefined ? {} : { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(PROFILE_DIR, `tasks-${tasks}-run-${run}`)}` };
  if (PROFILE_DIR !== undefined) mkdirSync(join(PROFILE_DIR, `tasks-${tasks}-run-${run}`), { recursive: true });
  const b = startBenchWorker(`t${tasks}-r${run}`, topic, tasks, env); // a fresh group per run: from the start
  return withWorker(b, async () => {
    await waitUntil(b, `${RECORDS} committed records`, () => b.committed >= RECORDS, Math.max(5 * 60_000, RECORDS / 5)); // ≥ 5k records/s
    b.sampler.sample(); // at the moment the last commit was seen
    const broker1 = brokerCpu(broker);
    const last = b.commits[b.commits.length - 1] as CommitLine;
    const end = last.time;
    const firstAssigned = b.firstAssignedAt ?? b.spawnedAt;
    const taskProcs = b.sampler.tasks();
    const perTask = taskProcs.map((p) => ({
      task: p.task,
      cpuS: p.cpuS - (p.startCpuS ?? 0),
      startupS: p.startCpuS ?? Number.NaN,
      records: p.task === undefined ? Number.NaN : (b.taskRecords.get(p.task) ?? 0),
      hwmBytes: p.hwmBytes,
    }));
    const latencies = b.commits.map((c) => c.latencyMs).filter((x): x is number => x !== undefined);
    await stopBenchWorker(b);
    const out = parquetBytesUnder(join(b.dir, 'warehouse'));
    const worker = b.sampler.worker();
    return {
      tasks,
      load: loadAtStart,
      wallFromStartS: (end - b.spawnedAt) / 1000,
      wallFromAssignS: (end - firstAssigned) / 1000,
      busyS: (end - firstAssigned) / 1000 - b.sampler.idleSeconds(firstAssigned, end),
      taskCpuS: perTask.reduce((n, p) => n + p.cpuS, 0),
      taskCpuWithStartupS: taskProcs.reduce((n, p) => n + p.cpuS, 0),
      perTask,
      workerCpuS: worker?.cpuS ?? Number.NaN,
      workerHwmBytes: worker?.hwmBytes ?? Number.NaN,
      brokerCpuS: broker1 - broker0,
      commits: b.commits.length,
      cycles: b.cycleMs.length,
      steadyRecordsPerS: [...b.cycles.values()].reduce((sum, list) => {
        const full = list.slice(0, -1);
        const ms = full.reduce((n, c) => n + (c.to - c.from), 0);
        return sum + (full.length === 0 || ms <= 0 ? Number.NaN : full.reduce((n, c) => n + c.records, 0) / (ms / 1000));
      }, 0),
      cycleMsSum: b.cycleMs.reduce((n, x) => n + x, 0),
      cycleMsMax: b.cycleMs.reduce((m, x) => Math.max(m, x), 0),
      latencyP50: percentile(latencies, 50),
      latencyP99: percentile(latencies, 99),
      files: out.files,
      parquetBytes: out.bytes,
    };
  });
}

// ---------------------------------------------------------------------------------------------------
// Phase 2b: one long cycle (memory)
// ---------------------------------------------------------------------------------------------------

interface LongCycleResult {
  readonly load: string;
  readonly committed: number;
  readonly taskHwmBytes: number;
  readonly workerHwmBytes: number;
  readonly taskCpuS: number;
  readonly files: number;
  readonly parquetBytes: number;
}

/**
 * One task reads the whole topic in ONE cycle (a 10-minute commit interval), so its writer fills files and
 * row groups as far as the data allows instead of closing them every few seconds; once the task is idle
 * the worker is stopped, which commits the cycle. Peak RSS is sampled until the processes exit.
 */
async function longCycle(topic: string): Promise<LongCycleResult> {
  const loadAtStart = load();
  const b = startBenchWorker('long', topic, 1, {}, 600_000);
  return withWorker(b, async () => {
    let busySince: number | undefined;
    // Busy: the task used more than half a core over the last second; done: under 5 % for 2 s after that.
    const rate = (ms: number): number => {
      const s = b.sampler.series;
      const last = s[s.length - 1];
      const first = s.find((x) => last !== undefined && x.t >= last.t - ms);
      return last === undefined || first === undefined || last.t === first.t ? 0 : (last.taskCpuS - first.taskCpuS) / ((last.t - first.t) / 1000);
    };
    await waitUntil(
      b,
      'the task to read the whole topic',
      () => {
        if (busySince === undefined && rate(1000) > 0.5) busySince = Date.now();
        return busySince !== undefined && Date.now() - busySince > 3000 && rate(2000) < IDLE_CPU_SHARE;
      },
      15 * 60_000,
    );
    b.sampler.start(50); // through the last cycle's close and upload, until the processes exit
    const how = await b.w.stop(120_000);
    live.delete(b.w);
    b.sampler.stop();
    saveLog(b);
    if (how !== '0') console.log(`  note: worker ${b.name} exited with ${how}`);
    pump(b);
    const task = b.sampler.tasks()[0];
    const out = parquetBytesUnder(join(b.dir, 'warehouse'));
    return {
      load: loadAtStart,
      committed: b.committed,
      taskHwmBytes: task?.hwmBytes ?? Number.NaN,
      workerHwmBytes: b.sampler.worker()?.hwmBytes ?? Number.NaN,
      taskCpuS: task === undefined ? Number.NaN : task.cpuS - (task.startCpuS ?? 0),
      files: out.files,
      parquetBytes: out.bytes,
    };
  });
}

// ---------------------------------------------------------------------------------------------------
// Phase 3: freshness
// ---------------------------------------------------------------------------------------------------

interface FreshnessResult {
  readonly tasks: number;
  readonly load: string;
  readonly records: number;
  readonly achievedRate: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly commits: number;
  readonly latencyP50: number;
  readonly latencyP99: number;
  readonly taskCpuShare: number;
  readonly measured: number;
}

const WARMUP = 1000;

async function freshness(tasks: number): Promise<FreshnessResult> {
  const topic = `${runId}-fresh-t${tasks}`;
  await generate(topic, 0); // the topic and its schema, before the worker subscribes
  const b = startBenchWorker(`fresh-t${tasks}`, topic, tasks);
  return withWorker(b, async () => {
    await waitAssigned(b, tasks);
    await generate(topic, WARMUP, { seed: SEED + 1 });
    await waitUntil(b, 'the warm-up commit', () => b.committed >= WARMUP, 120_000);
    const commitsBefore = b.commits.length;
    const loadAtStart = load();
    // Delivery times per partition, in offset order (one producer, so offsets arrive in order).
    const offsets = new Map<number, number[]>();
    const times = new Map<number, number[]>();
    const count = Math.round(FRESH_RATE * FRESH_SECONDS);
    const cpu0 = b.sampler.series[b.sampler.series.length - 1] as { t: number; taskCpuS: number };
    const stats = await generate(topic, count, {
      seed: SEED + 2,
      ratePerSec: FRESH_RATE,
      onDelivered: (delivered) => {
        const now = Date.now();
        for (const d of delivered) {
          let o = offsets.get(d.partition);
          if (o === undefined) {
            o = [];
            offsets.set(d.partition, o);
            times.set(d.partition, []);
          }
          o.push(Number(d.offset));
          (times.get(d.partition) as number[]).push(now);
        }
      },
  });
  await waitUntil(b, `${count} more committed records`, () => b.committed >= WARMUP + count, 5 * 60_000);
  b.sampler.sample();
  const cpu1 = b.sampler.series[b.sampler.series.length - 1] as { t: number; taskCpuS: number };
  const ages: number[] = [];
  const latencies = b.commits.slice(commitsBefore).map((c) => c.latencyMs).filter((x): x is number => x !== undefined);
  for (const c of b.commits.slice(commitsBefore)) {
    for (const r of c.ranges) {
      const o = offsets.get(r.partition);
      const t = times.get(r.partition);
      if (o === undefined || t === undefined) continue;
      // o is ascending: the first index at or above r.first, then forward to r.last.
      let lo = 0;
      let hi = o.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((o[mid] as number) < r.first) lo = mid + 1;
        else hi = mid;
      }
      for (let i = lo; i < o.length && (o[i] as number) <= r.last; i++) ages.push(c.time - (t[i] as number));
    }
  }
  await stopBenchWorker(b);
  return {
    tasks,
    load: loadAtStart,
    records: stats.records,
    achievedRate: stats.records / (stats.durationMs / 1000),
    p50: percentile(ages, 50),
    p99: percentile(ages, 99),
    max: ages.reduce((m, x) => (x > m ? x : m), Number.NEGATIVE_INFINITY),
    commits: b.commits.length - commitsBefore,
    latencyP50: percentile(latencies, 50),
    latencyP99: percentile(latencies, 99),
    taskCpuShare: (cpu1.taskCpuS - cpu0.taskCpuS) / ((cpu1.t - cpu0.t) / 1000),
    measured: ages.length,
  };
  });
}

// ---------------------------------------------------------------------------------------------------
// Phase 4: idle partitions
// ---------------------------------------------------------------------------------------------------

interface IdleResult {
  readonly lands: boolean;
  readonly commits: number;
  readonly withWatermark: number;
  readonly lagMs: number | undefined;
  readonly records: number;
}

async function idlePartitions(): Promise<IdleResult> {
  const topic = `${runId}-idle`;
  await generate(topic, 0);
  const b = startBenchWorker('idle', topic, 1);
  return withWorker(b, async () => {
    await waitAssigned(b, 1);
    // Every partition gets data first, so the idle ones have committed offsets and are reported caught up.
    await generate(topic, 600, { seed: SEED + 3 });
    await waitUntil(b, 'the warm-up commit', () => b.committed >= 600, 120_000);
    const before = b.commits.length;
    const phaseStart = Date.now();
    const count = Math.round(IDLE_RATE * IDLE_SECONDS);
    await generate(topic, count, { seed: SEED + 4, ratePerSec: IDLE_RATE, onlyPartitions: [0] });
    await waitUntil(b, `${count} more committed records`, () => b.committed >= 600 + count, 120_000);
    await stopBenchWorker(b);
    const phase = b.commits.slice(before);
    const marked = phase.filter((c) => c.validThroughTs !== undefined && c.validThroughTs >= phaseStart);
    const last = marked[marked.length - 1];
    return {
      lands: marked.length > 0,
      commits: phase.length,
      withWatermark: marked.length,
      lagMs: last === undefined ? undefined : last.time - (last.validThroughTs as number),
      records: phase.reduce((n, c) => n + c.records, 0),
    };
  });
}

// ---------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------

async function main(): Promise<string> {
  await requireReachable('Kafka', stack.kafkaBootstrap);
  await requireReachable('Schema Registry', stack.registryUrl);
  const md: string[] = [];
  const say = (line = ''): void => {
    console.log(line);
    md.push(line);
  };
  console.log(`bench  ${runId}: ${RECORDS.toLocaleString('en-US')} order events, ${PARTITIONS} partitions, commit interval ${INTERVAL_MS} ms; node ${process.version}; load ${load()}`);

  // Phase 0: the data, before any clock
  const topic = `${runId}-orders`;
  const g0 = performance.now();
  const produced = await generate(topic, RECORDS, { startTimeMs: START_TIME_MS });
  const inputBytes = produced.bytes;
  const mb = inputBytes / 1e6;
  const gb = inputBytes / 1e9;
  console.log(`  produced ${produced.records.toLocaleString('en-US')} records, ${fmt(mb)} MB of Avro values (${fmt(inputBytes / produced.records)} B/record) in ${fmt((performance.now() - g0) / 1000)} s (not timed)`);
  if (produced.records !== RECORDS) throw new Error(`produced ${produced.records} of ${RECORDS}`);

  let ceil: CeilingResult | undefined;
  if (!SKIP.has('ceiling')) {
    console.log(`  ceiling: decode + encode in this process (warm-up, then ${REPEAT} runs); load ${load()}`);
    ceil = await ceiling(inputBytes, produced.schemaId as number);
    console.log(`    runs (wall s): ${ceil.runs.map((r) => r.wallS.toFixed(2)).join(' ')}`);
    globalThis.gc?.();
  }

  let cons: ConsumeResult | undefined;
  if (!SKIP.has('consume')) {
    console.log(`  consume only: KafkaSource in this process; load ${load()}`);
    cons = await consumeOnly(topic);
  }

  const tp: ThroughputResult[] = [];
  if (!SKIP.has('throughput')) {
    for (let run = 1; run <= RUNS; run++) for (const n of TASKS) {
      console.log(`  throughput${RUNS > 1 ? ` run ${run}` : ''}: ${n} task(s); load ${load()}`);
      const r = await throughput(topic, n, run);
      console.log(`    ${fmt(r.wallFromAssignS, 2)} s from assignment, task CPU ${fmt(r.taskCpuS, 2)} s, ${r.commits} commits`);
      tp.push(r);
    }
  }

  let long: LongCycleResult | undefined;
  if (!SKIP.has('long')) {
    console.log(`  one long cycle (memory): 1 task, the whole topic in one commit cycle; load ${load()}`);
    long = await longCycle(topic);
  }

  const fr: FreshnessResult[] = [];
  if (!SKIP.has('freshness')) {
    for (const n of FRESH_TASKS) {
      console.log(`  freshness: ${n} task(s), ${FRESH_RATE.toLocaleString('en-US')} records/s for ${FRESH_SECONDS} s; load ${load()}`);
      fr.push(await freshness(n));
    }
  }

  let idle: IdleResult | undefined;
  if (!SKIP.has('idle')) {
    console.log(`  idle partitions: partition 0 of ${PARTITIONS} only, ${IDLE_RATE} records/s for ${IDLE_SECONDS} s; load ${load()}`);
    idle = await idlePartitions();
  }

  // --- report ---
  say('');
  say(`Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${RECORDS.toLocaleString('en-US')} records, ${fmt(mb)} MB of Avro (${fmt(inputBytes / RECORDS)} B/record), ${PARTITIONS} partitions, commit interval ${INTERVAL_MS / 1000} s, node ${process.version}; load average (1/5/15 min) at the end: ${load()}.`);
  say('');
  const ceilMBs = ceil === undefined ? Number.NaN : mb / ceil.run.wallS;
  const ceilCpuPerGB = ceil === undefined ? Number.NaN : ceil.run.cpuS / gb;
  if (tp.length > 0) {
    say('| tasks | load at start | wall s from start / from assignment / busy | records/s (from assignment) | MB/s from start / from assignment / busy | MB/s steady (full cycles) | task CPU-s (+ start-up) | CPU-s per GB, tasks | MB per task CPU-s | worker (committer) CPU-s | broker CPU-s | commits | commit latency p50 / p99 |');
    say('|---:|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---|');
    for (const r of tp) {
      say(
        `| ${r.tasks} | ${r.load} | ${fmt(r.wallFromStartS)} / ${fmt(r.wallFromAssignS)} / ${fmt(r.busyS)} | ${int(RECORDS / r.wallFromAssignS)} | ${fmt(mb / r.wallFromStartS)} / ${fmt(mb / r.wallFromAssignS)} / ${fmt(mb / r.busyS)} | ${fmt((r.steadyRecordsPerS * inputBytes) / RECORDS / 1e6)} | ${fmt(r.taskCpuS)} (+${fmt(r.taskCpuWithStartupS - r.taskCpuS)}) | ${fmt(r.taskCpuS / gb)} | ${fmt(mb / r.taskCpuS)} | ${fmt(r.workerCpuS)} | ${fmt(r.brokerCpuS)} | ${r.commits} | ${int(r.latencyP50)} / ${int(r.latencyP99)} ms |`,
      );
    }
    say('');
    say('| tasks | task | records | CPU-s (start-up) | CPU-s per GB | peak RSS (VmHWM) | worker peak RSS | Parquet files / MB | task cycles with records: n, total / longest |');
    say('|---:|---:|---:|---|---:|---:|---:|---|---|');
    for (const r of tp) {
      for (const p of r.perTask) {
        const share = (p.records / RECORDS) * gb;
        say(`| ${r.tasks} | ${p.task ?? '?'} | ${int(p.records)} | ${fmt(p.cpuS, 2)} (${fmt(p.startupS, 2)}) | ${fmt(p.cpuS / share)} | ${mib(p.hwmBytes)} | ${mib(r.workerHwmBytes)} | ${r.files} / ${fmt(r.parquetBytes / 1e6)} | ${r.cycles}, ${fmt(r.cycleMsSum / 1000, 2)} / ${fmt(r.cycleMsMax / 1000, 2)} s (all tasks) |`);
      }
    }
    say('');
  }
  if (ceil !== undefined || cons !== undefined) {
    say('| in the bench process | wall s | CPU s | records/s | MB/s | CPU-s per GB | note |');
    say('|---|---:|---:|---:|---:|---:|---|');
    if (ceil !== undefined) {
      say(`| ceiling: decode + DataFileWriter, median of ${REPEAT} | ${fmt(ceil.run.wallS, 2)} | ${fmt(ceil.run.cpuS, 2)} | ${int(RECORDS / ceil.run.wallS)} | ${fmt(ceilMBs)} | ${fmt(ceilCpuPerGB)} | ${fmt(ceil.parquetBytes / 1e6)} MB of Parquet; runs ${ceil.runs.map((r) => r.wallS.toFixed(2)).join(', ')} s |`);
    }
    if (cons !== undefined) {
      say(`| consume only: KafkaSource.poll, records dropped | ${fmt(cons.run.wallS, 2)} | ${fmt(cons.run.cpuS, 2)} | ${int(RECORDS / cons.run.wallS)} | ${fmt(mb / cons.run.wallS)} | ${fmt(cons.run.cpuS / gb)} | ${cons.polls} polls |`);
    }
    say('');
  }
  if (long !== undefined) {
    say(
      `One long cycle (1 task, the whole topic in one commit cycle, default writer settings; load at start ${long.load}): ${int(long.committed)} records committed in ${long.files} file(s), ` +
        `${fmt(long.parquetBytes / 1e6)} MB of Parquet; task peak RSS ${mib(long.taskHwmBytes)}, worker ${mib(long.workerHwmBytes)}; task CPU ${fmt(long.taskCpuS)} s (${fmt(long.taskCpuS / gb)} CPU-s per GB).`,
    );
    say('');
  }
  if (fr.length > 0) {
    say('| freshness | load at start | records | produce rate | commits | produce → visible p50 / p99 / max | commit latency p50 / p99 | task CPU (share of a core) |');
    say('|---|---|---:|---:|---:|---|---|---:|');
    for (const f of fr) {
      say(`| ${f.tasks} task(s) | ${f.load} | ${int(f.measured)} of ${int(f.records)} | ${int(f.achievedRate)}/s | ${f.commits} | ${fmt(f.p50 / 1000, 2)} / ${fmt(f.p99 / 1000, 2)} / ${fmt(f.max / 1000, 2)} s | ${int(f.latencyP50)} / ${int(f.latencyP99)} ms | ${fmt(100 * f.taskCpuShare, 0)} % |`);
    }
    say('');
  }
  if (idle !== undefined) {
    say(
      `Idle partitions (1 of ${PARTITIONS} partitions written, ${IDLE_RATE} records/s): icefloe.valid-through-ts **${idle.lands ? 'lands' : 'did not land'}**` +
        ` (${idle.withWatermark} of ${idle.commits} commits of the phase carry a watermark at or after its start${idle.lagMs === undefined ? '' : `; last commit's watermark ${fmt(idle.lagMs / 1000, 2)} s behind its commit`}).`,
    );
    say('');
  }

  // --- targets ---
  // Several runs per task count (--runs): the targets take the median of each figure.
  const agg = (tasks: number): ThroughputResult | undefined => {
    const rs = tp.filter((r) => r.tasks === tasks);
    if (rs.length <= 1) return rs[0];
    const m = (f: (r: ThroughputResult) => number): number => median(rs.map(f));
    return { ...(rs[0] as ThroughputResult), taskCpuS: m((r) => r.taskCpuS), wallFromAssignS: m((r) => r.wallFromAssignS), wallFromStartS: m((r) => r.wallFromStartS), busyS: m((r) => r.busyS), steadyRecordsPerS: m((r) => r.steadyRecordsPerS) };
  };
  const one = agg(1);
  const two = agg(2);
  const perCoreCpu = one === undefined ? Number.NaN : mb / one.taskCpuS;
  const perCoreWall = one === undefined ? Number.NaN : mb / one.wallFromAssignS;
  const perCoreBusy = one === undefined ? Number.NaN : mb / one.busyS;
  const perCoreSteady = one === undefined ? Number.NaN : (one.steadyRecordsPerS * inputBytes) / RECORDS / 1e6;
  const ratioCpu = one === undefined ? Number.NaN : ceilCpuPerGB / (one.taskCpuS / gb);
  const ratioBusy = one === undefined ? Number.NaN : perCoreBusy / ceilMBs;
  const ratioWall = one === undefined ? Number.NaN : perCoreWall / ceilMBs;
  const scale = one === undefined || two === undefined ? Number.NaN : two.taskCpuS / one.taskCpuS - 1;
  const rss = [...tp.flatMap((r) => r.perTask.map((p) => p.hwmBytes)), ...(long === undefined ? [] : [long.taskHwmBytes])];
  const maxRss = rss.length === 0 ? Number.NaN : Math.max(...rss);
  const verdict = (ok: boolean): string => (ok ? 'pass' : '**fail**');
  if (RUNS > 1) {
    say(`Targets on the median of the ${RUNS} runs per task count:`);
    say('');
  }
  say('| target | result | met |');
  say('|---|---|---|');
  if (one !== undefined) {
    say(
      `| ≥ 15 MB/s of Avro per core, one task | ${fmt(perCoreCpu)} MB per task CPU-second; wall: ${fmt(perCoreSteady)} MB/s steady (full cycles), ${fmt(perCoreWall)} from assignment to the last commit (${fmt(perCoreBusy)} busy, ${fmt(mb / one.wallFromStartS)} from worker start) | ${verdict(perCoreCpu >= 15)} per CPU-second; ${Number.isFinite(perCoreSteady) ? verdict(perCoreSteady >= 15) : 'n/a (no full cycle)'} steady wall; ${verdict(perCoreWall >= 15)} wall from assignment to the last commit |`,
    );
  }
  if (one !== undefined && two !== undefined) {
    say(`| two tasks: CPU-s per GB per task within 20 % of one task | ${fmt(two.taskCpuS / gb)} vs ${fmt(one.taskCpuS / gb)} CPU-s/GB (${scale >= 0 ? '+' : ''}${fmt(100 * scale, 0)} %) | ${verdict(Math.abs(scale) <= 0.2)} |`);
  }
  if (one !== undefined && ceil !== undefined) {
    say(`| ≥ 60 % of the ceiling | ${fmt(100 * ratioCpu, 0)} % by CPU-s per GB; ${fmt(100 * ratioBusy, 0)} % busy wall, ${fmt(100 * ratioWall, 0)} % wall from assignment | ${verdict(ratioCpu >= 0.6)} by CPU; ${verdict(ratioWall >= 0.6)} by wall |`);
  }
  if (rss.length > 0) say(`| peak RSS < 1 GiB per task (128 MiB target files) | max ${mib(maxRss)} | ${verdict(maxRss < 1024 * MiB)} |`);
  return md.join('\n');
}

let interrupted = false;
process.on('SIGINT', () => {
  if (interrupted) process.exit(130);
  interrupted = true;
  console.error('\ninterrupted: cleaning up (Ctrl-C again to leave things behind)');
  void cleanUp().finally(() => process.exit(130));
});

let code = 0;
try {
  const md = await main();
  if (OUT !== undefined) writeFileSync(OUT, `${md}\n`);
} catch (e) {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  code = 1;
} finally {
  await cleanUp();
}
process.exit(code);
