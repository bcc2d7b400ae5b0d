/**
 * A worker under measurement for `npm run bench`: `icefloe standalone` as a child process (tasks as child
 * processes of it; the embedded default catalog, SQLite + a local warehouse in a temp directory, unless the
 * spec names another catalog through connector keys), its JSON
 * log lines read into counters (assignments, task cycles, commits), and a sampler of CPU time and peak RSS
 * of every process in its process group. Uses only what every tree the benchmark is compared across has:
 * the CLI, its log lines ('task started', 'partitions assigned'/'revoked', 'cycle committed',
 * 'table committed') and the test helpers that start a worker.
 */
import { mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker } from '../../test/helpers/worker.ts';
import type { WorkerProcess } from '../../test/helpers/worker.ts';
import { PARTITIONS, sleep } from './bench-context.ts';
import type { Bench } from './bench-context.ts';
import { procCmdline, procMemory, processGroup, procStat } from './proc.ts';

const SAMPLE_MS = 200;
/** Below this share of a core the task processes count as idle (waiting for a cycle deadline). */
export const IDLE_CPU_SHARE = 0.05;

/** The worker's parsed JSON log lines, read incrementally. */
export interface LogLine {
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

export interface CommitLine {
  readonly time: number;
  readonly table: string;
  readonly records: number;
  readonly latencyMs: number | undefined;
  readonly validThroughTs: number | undefined;
  readonly ranges: readonly { partition: number; first: number; last: number }[];
}

function commitLine(l: LogLine): CommitLine {
  const ranges = (l['sourceRanges'] as { partition: number; first: string; last: string }[] | undefined) ?? [];
  return {
    time: l.time,
    table: String(l['table']),
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
export class GroupSampler {
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

export function brokerCpu(pid: number | undefined): number {
  return pid === undefined ? Number.NaN : (procStat(pid)?.cpuS ?? Number.NaN);
}

export function parquetBytesUnder(dir: string): { files: number; bytes: number } {
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

export interface BenchWorker {
  readonly bench: Bench;
  readonly w: WorkerProcess;
  readonly tail: LogTail;
  readonly sampler: GroupSampler;
  readonly dir: string;
  readonly spawnedAt: number;
  readonly name: string;
  /**
   * Only this connector's log lines count (undefined: every line): a worker that runs connectors one after
   * another through its REST API, followed one at a time (followConnector()).
   */
  readonly connector: string | undefined;
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
  /** Per task, the time of its first 'task started' line and of its first non-empty 'partitions assigned'. */
  readonly taskStartedAt: Map<number, number>;
  readonly taskAssignedAt: Map<number, number>;
  firstAssignedAt: number | undefined;
  committed: number;
}

/** The one unpartitioned table of the throughput, long, freshness and idle phases. */
export const ONE_TABLE: Readonly<Record<string, string>> = { 'iceberg.tables': 'bench.orders' };

/** ONE_TABLE in another namespace (the s3-rest storage path: a fresh one per run in the shared catalog). */
export function oneTable(namespace: string): Record<string, string> {
  return { 'iceberg.tables': `${namespace}.orders` };
}

/**
 * The routed phase's tables: records routed by their `region` field (the generator's eu, us, apac) with
 * static route regexes, as connectors/static-regex-routing.json does, to three tables that share one
 * partition spec.
 */
export function routedTables(partitionBy: string, namespace = 'bench'): Record<string, string> {
  const ns = namespace;
  return {
    'iceberg.tables': `${ns}.orders_eu,${ns}.orders_us,${ns}.orders_other`,
    'iceberg.tables.route-field': 'region',
    [`iceberg.table.${ns}.orders_eu.route-regex`]: 'eu(-.*)?',
    [`iceberg.table.${ns}.orders_us.route-regex`]: 'us(-.*)?',
    [`iceberg.table.${ns}.orders_other.route-regex`]: '(?!eu(-|$)|us(-|$)).*',
    'iceberg.tables.default-partition-by': partitionBy,
    'icefloe.tables.unrouted': 'fail',
  };
}

export interface WorkerSpec {
  /** Names the connector (with the run id), its control topic and consumer group: fresh for every worker. */
  readonly label: string;
  readonly topic: string;
  readonly tasks: number;
  /** Connector keys that name the tables and how records reach them (ONE_TABLE, routedTables()). */
  readonly tables: Readonly<Record<string, string>>;
  readonly env?: Readonly<Record<string, string>>;
  /** Default: --interval-ms. */
  readonly intervalMs?: number;
  /**
   * Another catalog than the embedded default (SQLite + a local warehouse in the temp directory): its
   * connector keys (`iceberg.catalog.*`, e.g. the stack's REST catalog over S3 for `npm run bench:peer`).
   */
  readonly catalog?: Readonly<Record<string, string>>;
  /** Connector keys applied over everything above (--set). */
  readonly config?: Readonly<Record<string, string>>;
  /** Worker properties applied over the benchmark's (--worker-set). */
  readonly workerProps?: Readonly<Record<string, string>>;
}

/**
 * The connector a WorkerSpec stands for: named `<run id>-<label>`, with a control topic of its own; its topic
 * and consumer groups are registered for the cleanup.
 */
export function benchConnector(bench: Bench, spec: WorkerSpec): { readonly name: string; readonly config: Record<string, string> } {
  const name = `${bench.runId}-${spec.label}`;
  const control = `${name}-control`;
  bench.topics.add(control);
  bench.groups.add(`connect-${name}`);
  bench.groups.add(`cg-control-${name}`); // the committer's consumer of the control topic
  return {
    name,
    config: {
      'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
      'tasks.max': String(spec.tasks),
      topics: spec.topic,
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'value.converter': 'io.confluent.connect.avro.AvroConverter',
      'value.converter.schema.registry.url': bench.stack.registryUrl,
      ...spec.tables,
      'iceberg.tables.auto-create-enabled': 'true',
      'iceberg.control.topic': control,
      'iceberg.control.commit.interval-ms': String(spec.intervalMs ?? bench.o.intervalMs),
      ...spec.catalog,
      ...spec.config,
    },
  };
}

/** What a worker has seen of a connector's lines: nothing yet. */
function counters(): Pick<BenchWorker, 'commits' | 'taskRecords' | 'cycleMs' | 'cycles' | 'cycleFrom' | 'assigned' | 'taskStartedAt' | 'taskAssignedAt' | 'firstAssignedAt' | 'committed'> {
  return { commits: [], taskRecords: new Map(), cycleMs: [], cycles: new Map(), cycleFrom: new Map(), assigned: new Map(), taskStartedAt: new Map(), taskAssignedAt: new Map(), firstAssignedAt: undefined, committed: 0 };
}

/**
 * `icefloe standalone` with the spec's worker properties and its connector on the command line, or (`rest`)
 * with none: the connectors are then created through its REST API (spec.label names the worker only).
 */
export function startBenchWorker(bench: Bench, spec: WorkerSpec, options: { readonly rest?: boolean } = {}): BenchWorker {
  const connector = options.rest === true ? undefined : benchConnector(bench, spec);
  const name = connector?.name ?? `${bench.runId}-${spec.label}`;
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-bench-'));
  bench.dirs.add(dir);
  const spawnedAt = Date.now();
  const w = startWorker({
    dir,
    env: { ICEFLOE_LOG_LEVEL: 'info', ...spec.env },
    worker: {
      'icefloe.tasks.mode': 'process',
      ...(spec.catalog === undefined ? { 'icefloe.catalog': `sqlite:${join(dir, 'catalog.db')}`, 'icefloe.warehouse': join(dir, 'warehouse') } : {}),
      ...spec.workerProps,
    },
    connectors: connector === undefined ? [] : [connector],
  });
  bench.live.add(w);
  const sampler = new GroupSampler(w.child.pid as number);
  sampler.start();
  return { bench, w, tail: new LogTail(w), sampler, dir, spawnedAt, name, connector: undefined, ...counters() };
}

/** A view of the worker that reads its log from the first line again, counting only `connector`'s lines. */
export function followConnector(b: BenchWorker, connector: string): BenchWorker {
  return { ...b, tail: new LogTail(b.w), connector, ...counters() };
}

/** Reads new log lines into the worker's state. */
export function pump(b: BenchWorker): void {
  for (const l of b.tail.next()) {
    if (b.connector !== undefined && l['connector'] !== b.connector) continue;
    const task = typeof l['task'] === 'number' ? l['task'] : undefined;
    switch (l.msg) {
      case 'task started':
        if (typeof l['pid'] === 'number' && task !== undefined) b.sampler.markStarted(l['pid'], task);
        if (task !== undefined && !b.taskStartedAt.has(task)) b.taskStartedAt.set(task, l.time);
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
          if (!b.taskAssignedAt.has(task)) b.taskAssignedAt.set(task, l.time);
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

export async function waitUntil(b: BenchWorker, what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
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
export function waitAssigned(b: BenchWorker, tasks: number): Promise<void> {
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

export function saveLog(b: BenchWorker): void {
  const dir = b.bench.o.logDir;
  if (dir === undefined) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${b.name}.log`), `${b.w.lines.join('\n')}\n`);
}

/**
 * Runs a phase with its worker; on failure stops sampling, and whatever happens kills a worker the phase
 * left running (saving its log) so no process outlives the benchmark.
 */
export async function withWorker<T>(b: BenchWorker, phase: () => Promise<T>): Promise<T> {
  try {
    return await phase();
  } catch (e) {
    b.sampler.stop();
    throw e;
  } finally {
    if (b.bench.live.has(b.w)) {
      await b.w.kill();
      saveLog(b);
    }
    b.bench.live.delete(b.w);
  }
}

export async function stopBenchWorker(b: BenchWorker): Promise<void> {
  b.sampler.stop();
  const how = await b.w.stop(60_000);
  b.bench.live.delete(b.w);
  saveLog(b);
  if (how !== '0') console.log(`  note: worker ${b.name} exited with ${how}`);
}

