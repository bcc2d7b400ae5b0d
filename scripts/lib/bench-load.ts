/**
 * The load phases of `npm run bench`: a worker reads the produced topic from the start with a fresh
 * connector, and the run is measured until its commits add up to every record.
 * - throughputN: N tasks, one unpartitioned table.
 * - routedN: N tasks, records routed by `region` (static route regexes, as connectors/static-regex-routing.json)
 *   to three tables, each partitioned by --routed-partition-by; the same measures.
 * - long: one task reads the whole topic in one commit cycle (memory).
 * Each on a storage path (lib/bench-storage.ts: embedded, s3-rest), with the --set connector keys and
 * --worker-set worker properties applied last; the stack's services' CPU-seconds over each run
 * (lib/bench-services.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { percentile } from './bench-stats.ts';
import { load } from './bench-context.ts';
import type { Bench } from './bench-context.ts';
import type { LoadPhase, StorageName } from './bench-options.ts';
import { measureServices } from './bench-services.ts';
import type { Service } from './bench-services.ts';
import { runStorage } from './bench-storage.ts';
import type { RunStorage } from './bench-storage.ts';
import { IDLE_CPU_SHARE, oneTable, pump, routedTables, saveLog, startBenchWorker, stopBenchWorker, waitUntil, withWorker } from './bench-worker.ts';
import type { BenchWorker, CommitLine, WorkerSpec } from './bench-worker.ts';
// ---------------------------------------------------------------------------------------------------
// Throughput and routed
// ---------------------------------------------------------------------------------------------------

export interface ThroughputResult {
  /** The phase's name (throughputN, routedN), its storage path, both as the report's label, and which of its --runs this was. */
  readonly phase: string;
  readonly storage: StorageName;
  readonly label: string;
  readonly run: number;
  readonly routed: boolean;
  readonly tasks: number;
  readonly load: string;
  readonly wallFromStartS: number;
  readonly wallFromAssignS: number;
  readonly busyS: number;
  readonly taskCpuS: number;
  readonly taskCpuWithStartupS: number;
  /**
   * Per task process: CPU-s after 'task started' and before it (start-up), records, peak RSS, and seconds
   * from the worker's spawn to its 'task started' line and to its first non-empty 'partitions assigned'.
   */
  readonly perTask: { task: number | undefined; cpuS: number; startupS: number; records: number; hwmBytes: number; startedAfterS: number; assignedAfterS: number }[];
  readonly workerCpuS: number;
  readonly workerHwmBytes: number;
  readonly brokerCpuS: number;
  /** CPU-seconds of each stack service from the worker's start to the last commit (NaN: not running). */
  readonly services: Readonly<Record<Service, number>>;
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
  /** Tables that received commits, and the Parquet files under the warehouse. */
  readonly tables: number;
  readonly files: number;
  readonly parquetBytes: number;
}

/** A phase's label in the report: its name and storage path. */
export function phaseLabel(phase: string, storage: StorageName): string {
  return `${phase} · ${storage}`;
}

/** A load phase's worker on a storage path, with the --set and --worker-set keys. */
function startLoadWorker(bench: Bench, storage: RunStorage, spec: WorkerSpec): BenchWorker {
  return startBenchWorker(bench, { ...spec, ...(storage.catalog === undefined ? {} : { catalog: storage.catalog }), config: bench.o.set, workerProps: bench.o.workerSet });
}

/** Parquet written by the run, then what it left in the shared stack dropped (a failure to drop is only reported). */
async function collect(storage: RunStorage, dir: string): Promise<{ files: number; bytes: number }> {
  try {
    return await storage.parquet(dir);
  } finally {
    await storage.drop().catch((e: unknown) => console.error(`  cleanup: ${storage.namespace}: ${e instanceof Error ? e.message : String(e)}`));
  }
}

/**
 * One run of a throughput or routed phase: a worker with a fresh connector (own name, control topic and
 * consumer group, so it reads the topic from the start), measured until its commits add up to every record.
 */
export async function throughput(bench: Bench, topic: string, phase: LoadPhase, run: number, storageName: StorageName = 'embedded'): Promise<ThroughputResult> {
  const records = bench.o.records;
  const tasks = phase.tasks;
  const loadAtStart = load();
  const label = `${phase.name}-${storageName}-r${run}`;
  const storage = runStorage(bench, storageName, label);
  const profileDir = bench.o.profileDir === undefined ? undefined : join(bench.o.profileDir, `${phase.name}-${storageName}-run-${run}`);
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  const services = measureServices(bench.stack.run);
  const b = startLoadWorker(bench, storage, {
    label,
    topic,
    tasks,
    tables: phase.routed ? routedTables(bench.o.routedPartitionBy, storage.namespace) : oneTable(storage.namespace),
    env: profileDir === undefined ? {} : { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` },
  });
  return withWorker(b, async () => {
    await waitUntil(b, `${records} committed records`, () => b.committed >= records, Math.max(5 * 60_000, records / 5)); // ≥ 5k records/s
    b.sampler.sample(); // at the moment the last commit was seen
    const servicesCpuS = services();
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
      startedAfterS: p.task === undefined ? Number.NaN : ((b.taskStartedAt.get(p.task) ?? Number.NaN) - b.spawnedAt) / 1000,
      assignedAfterS: p.task === undefined ? Number.NaN : ((b.taskAssignedAt.get(p.task) ?? Number.NaN) - b.spawnedAt) / 1000,
    }));
    const latencies = b.commits.map((c) => c.latencyMs).filter((x): x is number => x !== undefined);
    await stopBenchWorker(b);
    const out = await collect(storage, b.dir);
    const worker = b.sampler.worker();
    return {
      phase: phase.name,
      storage: storageName,
      label: phaseLabel(phase.name, storageName),
      run,
      routed: phase.routed,
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
      brokerCpuS: servicesCpuS.broker,
      services: servicesCpuS,
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
      tables: new Set(b.commits.map((c) => c.table)).size,
      files: out.files,
      parquetBytes: out.bytes,
    };
  });
}

// ---------------------------------------------------------------------------------------------------
// One long cycle (memory)
// ---------------------------------------------------------------------------------------------------

export interface LongCycleResult {
  readonly storage: StorageName;
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
export async function longCycle(bench: Bench, topic: string, storageName: StorageName = 'embedded'): Promise<LongCycleResult> {
  const loadAtStart = load();
  const storage = runStorage(bench, storageName, `long-${storageName}`);
  const b = startLoadWorker(bench, storage, { label: `long-${storageName}`, topic, tasks: 1, tables: oneTable(storage.namespace), intervalMs: 600_000 });
  return withWorker(b, async () => {
    let busySince: number | undefined;
    // Started: the task used more than half a core over the last second, or got its partitions (a small
    // --records may never keep it busy for a second); done: under 5 % of a core for 2 s, 3 s after that.
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
        if (busySince === undefined && (rate(1000) > 0.5 || b.firstAssignedAt !== undefined)) busySince = Date.now();
        return busySince !== undefined && Date.now() - busySince > 3000 && rate(2000) < IDLE_CPU_SHARE;
      },
      15 * 60_000,
    );
    b.sampler.start(50); // through the last cycle's close and upload, until the processes exit
    const how = await b.w.stop(120_000);
    bench.live.delete(b.w);
    b.sampler.stop();
    saveLog(b);
    if (how !== '0') console.log(`  note: worker ${b.name} exited with ${how}`);
    pump(b);
    const task = b.sampler.tasks()[0];
    const out = await collect(storage, b.dir);
    return {
      storage: storageName,
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
