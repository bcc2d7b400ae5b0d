/**
 * The report of `npm run bench`: markdown tables of every phase that ran (printed, and written to --out),
 * each load phase labelled with its storage path (`throughput1 · s3-rest`): every run, every task (with its
 * start-up), the CPU-seconds per process (worker, tasks, the stack's services) per storage path, a summary
 * of the load phases (median per phase over --runs: what a before/after comparison reads), the routed and
 * partitioned run against the unpartitioned one, the targets of issue 4 (≥ 15 MB/s of Avro per core with
 * one task; two tasks within 20 % of one task per GB; ≥ 60 % of the ceiling; peak RSS < 1 GiB per task),
 * judged on the unpartitioned runs' medians per storage path, and the goals of issue 15 (end to end ≥ 60 %
 * of the ceiling per CPU-second, consume-only ≤ half the ceiling's CPU per GB, peak task RSS ≤ 512 MiB,
 * commit latency p50).
 */
import { MiB, PARTITIONS, fmt, int, load, mib } from './bench-context.ts';
import type { CeilingResult, ConsumeResult } from './bench-in-process.ts';
import type { FreshnessResult, IdleResult } from './bench-live.ts';
import type { LongCycleResult, ThroughputResult } from './bench-load.ts';
import type { BenchOptions, StorageName } from './bench-options.ts';
import { SERVICES, SERVICE_LABELS } from './bench-services.ts';
import { median } from './bench-stats.ts';

export interface Results {
  /** Framed Avro bytes of the produced records (NaN when no phase needed them). */
  readonly inputBytes: number;
  readonly ceil: CeilingResult | undefined;
  readonly cons: ConsumeResult | undefined;
  readonly tp: readonly ThroughputResult[];
  readonly long: LongCycleResult | undefined;
  readonly fr: readonly FreshnessResult[];
  readonly idle: IdleResult | undefined;
}

type Say = (line?: string) => void;

/** Sizes of the produced data, in the units of the report. */
interface Scale {
  readonly records: number;
  readonly bytes: number;
  readonly mb: number;
  readonly gb: number;
}

/** The median of each figure over the runs of one load phase. */
interface PhaseMedian {
  readonly phase: string;
  readonly storage: StorageName;
  /** phase · storage */
  readonly label: string;
  readonly routed: boolean;
  readonly tasks: number;
  readonly runs: number;
  readonly taskCpuS: number;
  readonly wallFromStartS: number;
  readonly wallFromAssignS: number;
  readonly busyS: number;
  readonly steadyRecordsPerS: number;
  readonly maxTaskHwmBytes: number;
  readonly files: number;
  readonly tables: number;
  readonly latencyP50: number;
}

function medians(tp: readonly ThroughputResult[]): PhaseMedian[] {
  const labels = [...new Set(tp.map((r) => r.label))];
  return labels.map((label) => {
    const rs = tp.filter((r) => r.label === label);
    const first = rs[0] as ThroughputResult;
    const m = (f: (r: ThroughputResult) => number): number => median(rs.map(f));
    return {
      phase: first.phase,
      storage: first.storage,
      label,
      routed: first.routed,
      tasks: first.tasks,
      runs: rs.length,
      taskCpuS: m((r) => r.taskCpuS),
      wallFromStartS: m((r) => r.wallFromStartS),
      wallFromAssignS: m((r) => r.wallFromAssignS),
      busyS: m((r) => r.busyS),
      steadyRecordsPerS: m((r) => r.steadyRecordsPerS),
      maxTaskHwmBytes: Math.max(...rs.flatMap((r) => r.perTask.map((p) => p.hwmBytes))),
      files: m((r) => r.files),
      tables: first.tables,
      latencyP50: m((r) => r.latencyP50),
    };
  });
}

export function report(o: BenchOptions, r: Results): string {
  const md: string[] = [];
  const say: Say = (line = '') => {
    console.log(line);
    md.push(line);
  };
  const s: Scale = { records: o.records, bytes: r.inputBytes, mb: r.inputBytes / 1e6, gb: r.inputBytes / 1e9 };
  say('');
  say(
    `Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${o.records.toLocaleString('en-US')} records, ${fmt(s.mb)} MB of Avro (${fmt(r.inputBytes / o.records)} B/record), ` +
      `${PARTITIONS} partitions, commit interval ${o.intervalMs / 1000} s, node ${process.version}; load average (1/5/15 min) at the end: ${load()}.`,
  );
  say('');
  if (r.tp.length > 0 || r.long !== undefined) {
    const keys = (what: string, kv: Readonly<Record<string, string>>): string => (Object.keys(kv).length === 0 ? `${what}: none` : `${what}: ${Object.entries(kv).map(([k, v]) => `\`${k}=${v}\``).join(', ')}`);
    say(`Storage paths of the load phases: ${o.storage.join(', ')}${r.long === undefined ? '' : ` (long: ${r.long.storage})`}; ${keys('--set', o.set)}; ${keys('--worker-set', o.workerSet)}.`);
    say('');
  }
  if (r.tp.length > 0) {
    loadRuns(say, s, r);
    processes(say, o, r);
    loadSummary(say, o, s, medians(r.tp));
  }
  inProcess(say, o, s, r);
  liveAndMemory(say, o, s, r);
  targets(say, o, s, r);
  goals(say, o, s, r);
  return md.join('\n');
}

/** Every run of the throughput and routed phases: the whole-run table, then one row per task. */
function loadRuns(say: Say, s: Scale, r: Results): void {
  const { records, mb, gb } = s;
  say('| phase | tasks | load at start | wall s from start / from assignment / busy | records/s (from assignment) | MB/s from start / from assignment / busy | MB/s steady (full cycles) | task CPU-s (+ start-up) | CPU-s per GB, tasks | MB per task CPU-s | worker (committer) CPU-s | broker CPU-s | commits | commit latency p50 / p99 |');
  say('|---|---:|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---|');
  for (const t of r.tp) {
    say(
      `| ${t.label} | ${t.tasks} | ${t.load} | ${fmt(t.wallFromStartS)} / ${fmt(t.wallFromAssignS)} / ${fmt(t.busyS)} | ${int(records / t.wallFromAssignS)} | ${fmt(mb / t.wallFromStartS)} / ${fmt(mb / t.wallFromAssignS)} / ${fmt(mb / t.busyS)} | ${fmt((t.steadyRecordsPerS * s.bytes) / records / 1e6)} | ` +
        `${fmt(t.taskCpuS)} (+${fmt(t.taskCpuWithStartupS - t.taskCpuS)}) | ${fmt(t.taskCpuS / gb)} | ${fmt(mb / t.taskCpuS)} | ${fmt(t.workerCpuS)} | ${fmt(t.brokerCpuS)} | ${t.commits} | ${int(t.latencyP50)} / ${int(t.latencyP99)} ms |`,
    );
  }
  say('');
  say('| phase | task | records | CPU-s (start-up) | start-up: s from worker spawn to `task started` / first assignment | CPU-s per GB | peak RSS (VmHWM) | worker peak RSS | tables / Parquet files / MB | task cycles with records: n, total / longest |');
  say('|---|---:|---:|---|---|---:|---:|---:|---|---|');
  for (const t of r.tp) {
    for (const p of t.perTask) {
      const share = (p.records / records) * gb;
      say(
        `| ${t.label} | ${p.task ?? '?'} | ${int(p.records)} | ${fmt(p.cpuS, 2)} (${fmt(p.startupS, 2)}) | ${fmt(p.startedAfterS, 2)} / ${fmt(p.assignedAfterS, 2)} | ${fmt(p.cpuS / share)} | ${mib(p.hwmBytes)} | ${mib(t.workerHwmBytes)} | ${t.tables} / ${t.files} / ${fmt(t.parquetBytes / 1e6)} | ` +
          `${t.cycles}, ${fmt(t.cycleMsSum / 1000, 2)} / ${fmt(t.cycleMsMax / 1000, 2)} s (all tasks) |`,
      );
    }
  }
  say('');
}

/**
 * Per storage path, CPU-seconds of every process over each load run: the worker (its committer), each task
 * (after 'task started'; its start-up is in the per-task table), and the stack's services from /proc before
 * the worker's start and at the last commit ("–": not running).
 */
function processes(say: Say, o: BenchOptions, r: Results): void {
  for (const storage of o.storage) {
    const runs = r.tp.filter((t) => t.storage === storage);
    if (runs.length === 0) continue;
    say(`CPU-seconds per process, ${storage} (from the worker's start to the last commit; tasks from their \`task started\`):`);
    say('');
    say(`| phase | run | worker | tasks (each) | ${SERVICES.map((x) => SERVICE_LABELS[x]).join(' | ')} | all listed |`);
    say(`|---|---:|---:|---|${SERVICES.map(() => '---:|').join('')}---:|`);
    for (const t of runs) {
      const total = t.workerCpuS + t.taskCpuS + SERVICES.reduce((n, x) => n + (Number.isFinite(t.services[x]) ? t.services[x] : 0), 0);
      say(`| ${t.label} | ${t.run} | ${fmt(t.workerCpuS, 2)} | ${t.perTask.map((p) => fmt(p.cpuS, 2)).join(' / ')} | ${SERVICES.map((x) => fmt(t.services[x], 2)).join(' | ')} | ${fmt(total, 2)} |`);
    }
    say('');
  }
}

/** One row per load phase (medians over its runs), and the routed phases against the unpartitioned ones. */
function loadSummary(say: Say, o: BenchOptions, s: Scale, ms: readonly PhaseMedian[]): void {
  const { mb, gb } = s;
  say(`Load phases, median of each phase's runs (routed: 3 tables by \`region\`, each \`partition-by\` ${o.routedPartitionBy}):`);
  say('');
  say('| phase | runs | tables | task CPU-s per GB | MB per task CPU-s | wall MB/s from assignment / busy / steady | peak task RSS (max) | Parquet files |');
  say('|---|---:|---:|---:|---:|---|---:|---:|');
  for (const m of ms) {
    say(
      `| ${m.label} | ${m.runs} | ${m.tables} | ${fmt(m.taskCpuS / gb)} | ${fmt(mb / m.taskCpuS)} | ${fmt(mb / m.wallFromAssignS)} / ${fmt(mb / m.busyS)} / ${fmt((m.steadyRecordsPerS * s.bytes) / s.records / 1e6)} | ${mib(m.maxTaskHwmBytes)} | ${int(m.files)} |`,
    );
  }
  say('');
  for (const routed of ms.filter((m) => m.routed)) {
    const plain = ms.find((m) => !m.routed && m.tasks === routed.tasks && m.storage === routed.storage);
    if (plain === undefined) continue;
    const pct = (a: number, b: number): string => `${a >= b ? '+' : ''}${fmt(100 * (a / b - 1), 0)} %`;
    say(
      `${routed.label} against ${plain.label}: task CPU-s per GB ${pct(routed.taskCpuS, plain.taskCpuS)}, wall from assignment ${pct(routed.wallFromAssignS, plain.wallFromAssignS)}, ` +
        `peak task RSS ${pct(routed.maxTaskHwmBytes, plain.maxTaskHwmBytes)}.`,
    );
    say('');
  }
}

function inProcess(say: Say, o: BenchOptions, s: Scale, r: Results): void {
  const { ceil, cons } = r;
  if (ceil === undefined && cons === undefined) return;
  say('| in the bench process | wall s | CPU s | records/s | MB/s | CPU-s per GB | note |');
  say('|---|---:|---:|---:|---:|---:|---|');
  if (ceil !== undefined) {
    say(
      `| ceiling: decode + DataFileWriter, median of ${o.repeat} | ${fmt(ceil.run.wallS, 2)} | ${fmt(ceil.run.cpuS, 2)} | ${int(s.records / ceil.run.wallS)} | ${fmt(s.mb / ceil.run.wallS)} | ${fmt(ceil.run.cpuS / s.gb)} | ` +
        `${fmt(ceil.parquetBytes / 1e6)} MB of Parquet; runs ${ceil.runs.map((x) => x.wallS.toFixed(2)).join(', ')} s |`,
    );
  }
  if (cons !== undefined) {
    say(`| consume only: KafkaSource.poll, records dropped | ${fmt(cons.run.wallS, 2)} | ${fmt(cons.run.cpuS, 2)} | ${int(s.records / cons.run.wallS)} | ${fmt(s.mb / cons.run.wallS)} | ${fmt(cons.run.cpuS / s.gb)} | ${cons.polls} polls |`);
  }
  say('');
}

function liveAndMemory(say: Say, o: BenchOptions, s: Scale, r: Results): void {
  const { long, fr, idle } = r;
  if (long !== undefined) {
    say(
      `One long cycle · ${long.storage} (1 task, the whole topic in one commit cycle, default writer settings; load at start ${long.load}): ${int(long.committed)} records committed in ${long.files} file(s), ` +
        `${fmt(long.parquetBytes / 1e6)} MB of Parquet; task peak RSS ${mib(long.taskHwmBytes)}, worker ${mib(long.workerHwmBytes)}; task CPU ${fmt(long.taskCpuS)} s (${fmt(long.taskCpuS / s.gb)} CPU-s per GB).`,
    );
    say('');
  }
  if (fr.length > 0) {
    say('| freshness | load at start | records | produce rate | commits | produce → visible p50 / p99 / max | commit latency p50 / p99 | task CPU (share of a core) |');
    say('|---|---|---:|---:|---:|---|---|---:|');
    for (const f of fr) {
      say(
        `| ${f.tasks} task(s) | ${f.load} | ${int(f.measured)} of ${int(f.records)} | ${int(f.achievedRate)}/s | ${f.commits} | ${fmt(f.p50 / 1000, 2)} / ${fmt(f.p99 / 1000, 2)} / ${fmt(f.max / 1000, 2)} s | ` +
          `${int(f.latencyP50)} / ${int(f.latencyP99)} ms | ${fmt(100 * f.taskCpuShare, 0)} % |`,
      );
    }
    say('');
  }
  if (idle !== undefined) {
    say(
      `Idle partitions (1 of ${PARTITIONS} partitions written, ${o.idleRate} records/s): icefloe.valid-through-ts **${idle.lands ? 'lands' : 'did not land'}**` +
        ` (${idle.withWatermark} of ${idle.commits} commits of the phase carry a watermark at or after its start${idle.lagMs === undefined ? '' : `; last commit's watermark ${fmt(idle.lagMs / 1000, 2)} s behind its commit`}).`,
    );
    say('');
  }
}

/** Issue 4's targets, on the unpartitioned throughput phases (medians when --runs repeats them), per storage path. */
function targets(say: Say, o: BenchOptions, s: Scale, r: Results): void {
  const { mb, gb } = s;
  const all = medians(r.tp.filter((t) => !t.routed));
  const rss = [...r.tp.filter((t) => !t.routed).flatMap((t) => t.perTask.map((p) => p.hwmBytes)), ...(r.long === undefined ? [] : [r.long.taskHwmBytes])];
  if (all.length === 0 && rss.length === 0) return;
  const ceilMBs = r.ceil === undefined ? Number.NaN : mb / r.ceil.run.wallS;
  const ceilCpuPerGB = r.ceil === undefined ? Number.NaN : r.ceil.run.cpuS / gb;
  const verdict = (ok: boolean): string => (ok ? 'pass' : '**fail**');
  say(`Targets of issue 4${o.runs > 1 ? `, on the median of the ${o.runs} runs per phase` : ''}:`);
  say('');
  say('| target | result | met |');
  say('|---|---|---|');
  for (const storage of o.storage) {
    const ms = all.filter((m) => m.storage === storage);
    const one = ms.find((m) => m.tasks === 1);
    const two = ms.find((m) => m.tasks === 2);
    if (one === undefined) continue;
    const perCoreCpu = mb / one.taskCpuS;
    const perCoreWall = mb / one.wallFromAssignS;
    const perCoreBusy = mb / one.busyS;
    const perCoreSteady = (one.steadyRecordsPerS * s.bytes) / s.records / 1e6;
    say(
      `| ≥ 15 MB/s of Avro per core, one task, ${storage} | ${fmt(perCoreCpu)} MB per task CPU-second; wall: ${fmt(perCoreSteady)} MB/s steady (full cycles), ${fmt(perCoreWall)} from assignment to the last commit (${fmt(perCoreBusy)} busy, ${fmt(mb / one.wallFromStartS)} from worker start) | ` +
        `${verdict(perCoreCpu >= 15)} per CPU-second; ${Number.isFinite(perCoreSteady) ? verdict(perCoreSteady >= 15) : 'n/a (no full cycle)'} steady wall; ${verdict(perCoreWall >= 15)} wall from assignment to the last commit |`,
    );
    if (two !== undefined) {
      const scale = two.taskCpuS / one.taskCpuS - 1;
      say(`| two tasks: CPU-s per GB per task within 20 % of one task, ${storage} | ${fmt(two.taskCpuS / gb)} vs ${fmt(one.taskCpuS / gb)} CPU-s/GB (${scale >= 0 ? '+' : ''}${fmt(100 * scale, 0)} %) | ${verdict(Math.abs(scale) <= 0.2)} |`);
    }
    if (r.ceil !== undefined) {
      const ratioCpu = ceilCpuPerGB / (one.taskCpuS / gb);
      const ratioBusy = perCoreBusy / ceilMBs;
      const ratioWall = perCoreWall / ceilMBs;
      say(`| ≥ 60 % of the ceiling, ${storage} | ${fmt(100 * ratioCpu, 0)} % by CPU-s per GB; ${fmt(100 * ratioBusy, 0)} % busy wall, ${fmt(100 * ratioWall, 0)} % wall from assignment | ${verdict(ratioCpu >= 0.6)} by CPU; ${verdict(ratioWall >= 0.6)} by wall |`);
    }
  }
  if (rss.length > 0) {
    const maxRss = Math.max(...rss);
    say(`| peak RSS < 1 GiB per task (128 MiB target files), every storage path | max ${mib(maxRss)} | ${verdict(maxRss < 1024 * MiB)} |`);
  }
  say('');
}

/**
 * Issue 15's goals, as ratios within this run (absolute figures move 2× between machines): (a) end to end
 * against the ceiling per CPU-second, per storage path; (b) the Kafka client alone against the ceiling;
 * (c) peak task RSS of throughput1 (per storage path) and of the long cycle against 512 MiB; (d) commit
 * latency p50 per storage path, for the record (the Java sink's is measured by `npm run bench:peer`).
 * Judged on the medians over --runs; a goal whose phases did not run is left out.
 */
function goals(say: Say, o: BenchOptions, s: Scale, r: Results): void {
  const { gb } = s;
  const ones = medians(r.tp.filter((t) => !t.routed && t.tasks === 1));
  const rows: string[] = [];
  const met = (ok: boolean): string => (ok ? 'met' : '**not met**');
  const ceilCpuPerGB = r.ceil === undefined ? Number.NaN : r.ceil.run.cpuS / gb;
  if (r.ceil !== undefined) {
    for (const one of ones) {
      const ratio = ceilCpuPerGB / (one.taskCpuS / gb);
      rows.push(`| (a) end to end ≥ 60 % of the ceiling per CPU-second, ${one.storage} | ${fmt(100 * ratio, 0)} %: ceiling ${fmt(ceilCpuPerGB)} CPU-s per GB ÷ ${one.label} tasks ${fmt(one.taskCpuS / gb)} CPU-s per GB | ${met(ratio >= 0.6)} |`);
    }
    if (r.cons !== undefined) {
      const consPerGB = r.cons.run.cpuS / gb;
      const ratio = consPerGB / ceilCpuPerGB;
      rows.push(`| (b) consume only ≤ 50 % of the ceiling's CPU per GB | ${fmt(100 * ratio, 0)} %: consume only ${fmt(consPerGB)} CPU-s per GB ÷ ceiling ${fmt(ceilCpuPerGB)} | ${met(ratio <= 0.5)} |`);
    }
  }
  const limit = 512 * MiB;
  for (const one of ones) rows.push(`| (c) peak task RSS ≤ 512 MiB, ${one.label} | ${mib(one.maxTaskHwmBytes)} (VmHWM, max over tasks and runs) | ${met(one.maxTaskHwmBytes <= limit)} |`);
  if (r.long !== undefined) rows.push(`| (c) peak task RSS ≤ 512 MiB, long · ${r.long.storage} | ${mib(r.long.taskHwmBytes)} (VmHWM, the whole topic in one cycle) | ${met(r.long.taskHwmBytes <= limit)} |`);
  for (const storage of o.storage) {
    const phases = medians(r.tp.filter((t) => t.storage === storage));
    if (phases.length === 0) continue;
    rows.push(`| (d) commit latency p50, ${storage} (for the record) | ${phases.map((m) => `${m.label} ${int(m.latencyP50)} ms`).join('; ')} | – (the Java sink's: \`npm run bench:peer\`) |`);
  }
  if (rows.length === 0) return;
  say(`Goals (issue 15)${o.runs > 1 ? `, on the median of the ${o.runs} runs per phase` : ''}:`);
  say('');
  say('| goal | figure | met |');
  say('|---|---|---|');
  for (const row of rows) say(row);
  say('');
}
