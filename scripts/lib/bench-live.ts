/**
 * The live phases of `npm run bench`, each on its own fresh topic while a worker runs:
 * - freshness: produce → visible at a steady rate (per record, the commit whose sourceRanges cover it minus
 *   the producer's delivery confirmation);
 * - idle: one of six partitions written; does the committed watermark (validThroughTs) move on?
 */
import { SEED, generate, load } from './bench-context.ts';
import type { Bench } from './bench-context.ts';
import { percentile } from './bench-stats.ts';
import { ONE_TABLE, startBenchWorker, stopBenchWorker, waitAssigned, waitUntil, withWorker } from './bench-worker.ts';
import type { CommitLine } from './bench-worker.ts';

// ---------------------------------------------------------------------------------------------------
// Freshness
// ---------------------------------------------------------------------------------------------------

export interface FreshnessResult {
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

/** Delivery confirmation times per partition, in offset order (one producer: offsets arrive in order). */
interface Deliveries {
  readonly offsets: Map<number, number[]>;
  readonly times: Map<number, number[]>;
}

/** Per delivered record that a commit covers: the commit's time minus the record's delivery time. */
function producedToVisible(commits: readonly CommitLine[], d: Deliveries): number[] {
  const ages: number[] = [];
  for (const c of commits) {
    for (const r of c.ranges) {
      const o = d.offsets.get(r.partition);
      const t = d.times.get(r.partition);
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
  return ages;
}

export async function freshness(bench: Bench, tasks: number): Promise<FreshnessResult> {
  const topic = `${bench.runId}-fresh-t${tasks}`;
  await generate(bench, topic, 0); // the topic and its schema, before the worker subscribes
  const b = startBenchWorker(bench, { label: `fresh-t${tasks}`, topic, tasks, tables: ONE_TABLE });
  return withWorker(b, async () => {
    await waitAssigned(b, tasks);
    await generate(bench, topic, WARMUP, { seed: SEED + 1 });
    await waitUntil(b, 'the warm-up commit', () => b.committed >= WARMUP, 120_000);
    const commitsBefore = b.commits.length;
    const loadAtStart = load();
    const d: Deliveries = { offsets: new Map(), times: new Map() };
    const count = Math.round(bench.o.freshRate * bench.o.freshSeconds);
    const cpu0 = b.sampler.series[b.sampler.series.length - 1] as { t: number; taskCpuS: number };
    const stats = await generate(bench, topic, count, {
      seed: SEED + 2,
      ratePerSec: bench.o.freshRate,
      onDelivered: (delivered) => {
        const now = Date.now();
        for (const r of delivered) {
          let o = d.offsets.get(r.partition);
          if (o === undefined) {
            o = [];
            d.offsets.set(r.partition, o);
            d.times.set(r.partition, []);
          }
          o.push(Number(r.offset));
          (d.times.get(r.partition) as number[]).push(now);
        }
      },
    });
    await waitUntil(b, `${count} more committed records`, () => b.committed >= WARMUP + count, 5 * 60_000);
    b.sampler.sample();
    const cpu1 = b.sampler.series[b.sampler.series.length - 1] as { t: number; taskCpuS: number };
    const phase = b.commits.slice(commitsBefore);
    const ages = producedToVisible(phase, d);
    const latencies = phase.map((c) => c.latencyMs).filter((x): x is number => x !== undefined);
    await stopBenchWorker(b);
    return {
      tasks,
      load: loadAtStart,
      records: stats.records,
      achievedRate: stats.records / (stats.durationMs / 1000),
      p50: percentile(ages, 50),
      p99: percentile(ages, 99),
      max: ages.reduce((m, x) => (x > m ? x : m), Number.NEGATIVE_INFINITY),
      commits: phase.length,
      latencyP50: percentile(latencies, 50),
      latencyP99: percentile(latencies, 99),
      taskCpuShare: (cpu1.taskCpuS - cpu0.taskCpuS) / ((cpu1.t - cpu0.t) / 1000),
      measured: ages.length,
    };
  });
}

// ---------------------------------------------------------------------------------------------------
// Idle partitions
// ---------------------------------------------------------------------------------------------------

export interface IdleResult {
  readonly lands: boolean;
  readonly commits: number;
  readonly withWatermark: number;
  readonly lagMs: number | undefined;
  readonly records: number;
}

export async function idlePartitions(bench: Bench): Promise<IdleResult> {
  const topic = `${bench.runId}-idle`;
  await generate(bench, topic, 0);
  const b = startBenchWorker(bench, { label: 'idle', topic, tasks: 1, tables: ONE_TABLE });
  return withWorker(b, async () => {
    await waitAssigned(b, 1);
    // Every partition gets data first, so the idle ones have committed offsets and are reported caught up.
    await generate(bench, topic, 600, { seed: SEED + 3 });
    await waitUntil(b, 'the warm-up commit', () => b.committed >= 600, 120_000);
    const before = b.commits.length;
    const phaseStart = Date.now();
    const count = Math.round(bench.o.idleRate * bench.o.idleSeconds);
    await generate(bench, topic, count, { seed: SEED + 4, ratePerSec: bench.o.idleRate, onlyPartitions: [0] });
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
