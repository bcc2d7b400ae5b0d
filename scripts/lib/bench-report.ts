/**
 * The report of `npm run bench`: markdown tables of every phase that ran (printed, and written to --out),
 * a summary of the load phases (median per phase over --runs: what a before/after comparison reads), the
 * routed and partitioned run against the unpartitioned one, and the targets of issue 4 (≥ 15 MB/s of Avro
 * per core with one task; two tasks within 20 % of one task per GB; ≥ 60 % of the ceiling; peak RSS < 1 GiB
 * per task), judged on the unpartitioned runs' medians.
 */
import { MiB, PARTITIONS, fmt, int, load, mib } from './bench-context.ts';
import type { CeilingResult, ConsumeResult } from './bench-in-process.ts';
import type { FreshnessResult, IdleResult } from './bench-live.ts';
import type { LongCycleResult, ThroughputResult } from './bench-load.ts';
import type { BenchOptions } from './bench-options.ts';
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
}

function medians(tp: readonly ThroughputResult[]): PhaseMedian[] {
  const phases = [...new Set(tp.map((r) => r.phase))];
  return phases.map((phase) => {
    const rs = tp.filter((r) => r.phase === phase);
    const first = rs[0] as ThroughputResult;
    const m = (f: (r: ThroughputResult) => number): number => median(rs.map(f));
    return {
      phase,
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
  if (r.tp.length > 0) {
    loadRuns(say, s, r);
    loadSummary(say, o, s, medians(r.tp));
  }
  inProcess(say, o, s, r);
  liveAndMemory(say, o, s, r);
  targets(say, o, s, r);
  return md.join('\n');
}

/** Every run of the throughput and routed phases: the whole-run table, then one row per task. */
function loadRuns(say: Say, s: Scale, r: Results): void {
  const { records, mb, gb } = s;
  say('| phase | tasks | load at start | wall s from start / from assignment / busy | records/s (from assignment) | MB/s from start / from assignment / busy | MB/s steady (full cycles) | task CPU-s (+ start-up) | CPU-s per GB, tasks | MB per task CPU-s | worker (committer) CPU-s | broker CPU-s | commits | commit latency p50 / p99 |');
  say('|---|---:|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---|');
  for (const t of r.tp) {
    say(
      `| ${t.phase} | ${t.tasks} | ${t.load} | ${fmt(t.wallFromStartS)} / ${fmt(t.wallFromAssignS)} / ${fmt(t.busyS)} | ${int(records / t.wallFromAssignS)} | ${fmt(mb / t.wallFromStartS)} / ${fmt(mb / t.wallFromAssignS)} / ${fmt(mb / t.busyS)} | ${fmt((t.steadyRecordsPerS * s.bytes) / records / 1e6)} | ` +
        `${fmt(t.taskCpuS)} (+${fmt(t.taskCpuWithStartupS - t.taskCpuS)}) | ${fmt(t.taskCpuS / gb)} | ${fmt(mb / t.taskCpuS)} | ${fmt(t.workerCpuS)} | ${fmt(t.brokerCpuS)} | ${t.commits} | ${int(t.latencyP50)} / ${int(t.latencyP99)} ms |`,
    );
  }
  say('');
  say('| phase | task | records | CPU-s (start-up) | CPU-s per GB | peak RSS (VmHWM) | worker peak RSS | tables / Parquet files / MB | task cycles with records: n, total / longest |');
  say('|---|---:|---:|---|---:|---:|---:|---|---|');
  for (const t of r.tp) {
    for (const p of t.perTask) {
      const share = (p.records / records) * gb;
      say(
        `| ${t.phase} | ${p.task ?? '?'} | ${int(p.records)} | ${fmt(p.cpuS, 2)} (${fmt(p.startupS, 2)}) | ${fmt(p.cpuS / share)} | ${mib(p.hwmBytes)} | ${mib(t.workerHwmBytes)} | ${t.tables} / ${t.files} / ${fmt(t.parquetBytes / 1e6)} | ` +
          `${t.cycles}, ${fmt(t.cycleMsSum / 1000, 2)} / ${fmt(t.cycleMsMax / 1000, 2)} s (all tasks) |`,
      );
    }
  }
  say('');
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
      `| ${m.phase} | ${m.runs} | ${m.tables} | ${fmt(m.taskCpuS / gb)} | ${fmt(mb / m.taskCpuS)} | ${fmt(mb / m.wallFromAssignS)} / ${fmt(mb / m.busyS)} / ${fmt((m.steadyRecordsPerS * s.bytes) / s.records / 1e6)} | ${mib(m.maxTaskHwmBytes)} | ${int(m.files)} |`,
    );
  }
  say('');
  for (const routed of ms.filter((m) => m.routed)) {
    const plain = ms.find((m) => !m.routed && m.tasks === routed.tasks);
    if (plain === undefined) continue;
    const pct = (a: number, b: number): string => `${a >= b ? '+' : ''}${fmt(100 * (a / b - 1), 0)} %`;
    say(
      `${routed.phase} against ${plain.phase}: task CPU-s per GB ${pct(routed.taskCpuS, plain.taskCpuS)}, wall from assignment ${pct(routed.wallFromAssignS, plain.wallFromAssignS)}, ` +
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
      `One long cycle (1 task, the whole topic in one commit cycle, default writer settings; load at start ${long.load}): ${int(long.committed)} records committed in ${long.files} file(s), ` +
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

/** Issue 4's targets, on the unpartitioned throughput phases (medians when --runs repeats them). */
function targets(say: Say, o: BenchOptions, s: Scale, r: Results): void {
  const { mb, gb } = s;
  const ms = medians(r.tp.filter((t) => !t.routed));
  const one = ms.find((m) => m.tasks === 1);
  const two = ms.find((m) => m.tasks === 2);
  const rss = [...r.tp.filter((t) => !t.routed).flatMap((t) => t.perTask.map((p) => p.hwmBytes)), ...(r.long === undefined ? [] : [r.long.taskHwmBytes])];
  if (one === undefined && rss.length === 0) return;
  const ceilMBs = r.ceil === undefined ? Number.NaN : mb / r.ceil.run.wallS;
  const ceilCpuPerGB = r.ceil === undefined ? Number.NaN : r.ceil.run.cpuS / gb;
  const verdict = (ok: boolean): string => (ok ? 'pass' : '**fail**');
  if (o.runs > 1) {
    say(`Targets on the median of the ${o.runs} runs per task count:`);
    say('');
  }
  say('| target | result | met |');
  say('|---|---|---|');
  if (one !== undefined) {
    const perCoreCpu = mb / one.taskCpuS;
    const perCoreWall = mb / one.wallFromAssignS;
    const perCoreBusy = mb / one.busyS;
    const perCoreSteady = (one.steadyRecordsPerS * s.bytes) / s.records / 1e6;
    say(
      `| ≥ 15 MB/s of Avro per core, one task | ${fmt(perCoreCpu)} MB per task CPU-second; wall: ${fmt(perCoreSteady)} MB/s steady (full cycles), ${fmt(perCoreWall)} from assignment to the last commit (${fmt(perCoreBusy)} busy, ${fmt(mb / one.wallFromStartS)} from worker start) | ` +
        `${verdict(perCoreCpu >= 15)} per CPU-second; ${Number.isFinite(perCoreSteady) ? verdict(perCoreSteady >= 15) : 'n/a (no full cycle)'} steady wall; ${verdict(perCoreWall >= 15)} wall from assignment to the last commit |`,
    );
    if (two !== undefined) {
      const scale = two.taskCpuS / one.taskCpuS - 1;
      say(`| two tasks: CPU-s per GB per task within 20 % of one task | ${fmt(two.taskCpuS / gb)} vs ${fmt(one.taskCpuS / gb)} CPU-s/GB (${scale >= 0 ? '+' : ''}${fmt(100 * scale, 0)} %) | ${verdict(Math.abs(scale) <= 0.2)} |`);
    }
    if (r.ceil !== undefined) {
      const ratioCpu = ceilCpuPerGB / (one.taskCpuS / gb);
      const ratioBusy = perCoreBusy / ceilMBs;
      const ratioWall = perCoreWall / ceilMBs;
      say(`| ≥ 60 % of the ceiling | ${fmt(100 * ratioCpu, 0)} % by CPU-s per GB; ${fmt(100 * ratioBusy, 0)} % busy wall, ${fmt(100 * ratioWall, 0)} % wall from assignment | ${verdict(ratioCpu >= 0.6)} by CPU; ${verdict(ratioWall >= 0.6)} by wall |`);
    }
  }
  if (rss.length > 0) {
    const maxRss = Math.max(...rss);
    say(`| peak RSS < 1 GiB per task (128 MiB target files) | max ${mib(maxRss)} | ${verdict(maxRss < 1024 * MiB)} |`);
  }
}
