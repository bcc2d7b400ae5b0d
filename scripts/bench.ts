/**
 * End-to-end benchmark of the sink (`npm run bench`): Kafka → `icefloe standalone` (tasks as child
 * processes) → Iceberg, on two storage paths (--storage): `embedded` (the default catalog: SQLite + a local
 * warehouse in a temp dir) and `s3-rest` (the stack's REST catalog on PostgreSQL, data files on S3/moto).
 * A benchmark, not a test: it prints numbers and judges them against the targets of issue 4 and the goals
 * of issue 15, it asserts nothing else. Needs the local stack (Kafka, Schema Registry; for s3-rest the
 * catalog, PostgreSQL and S3): `bash scripts/stack up`. Method and results: docs/benchmarks.md.
 *
 * Phases (--phases selects them; they always run in this order):
 *  0. Produce N order events (Avro, ≈ 194 B each, fixed seed and event times) to a fresh 6-partition
 *     topic at full speed, before any clock starts; only when a phase below reads it.
 *  ceiling: the same N events encoded in memory (byte-identical, checked), decoded by our compiled Avro
 *     decoder into a DataFileWriter whose store counts and drops the bytes: one core, no Kafka, no upload,
 *     no commit. Median of --repeat runs after a warm-up. (lib/bench-in-process.ts)
 *  consume: the task's KafkaSource polling the topic in this process, records dropped: what the Kafka
 *     client alone costs per GB. (lib/bench-in-process.ts)
 *  throughputN: a worker with N tasks and a fresh connector (own name, control topic and consumer group,
 *     so it reads the topic from the start), one unpartitioned table, commit interval --interval-ms, default
 *     writer settings (--set / --worker-set add keys); measured until the committer's 'table committed'
 *     lines add up to N records: wall time from worker start, from the first assignment and "busy"; task
 *     CPU-seconds from /proc (start-up apart, and each task's time from spawn to 'task started' and to its
 *     first assignment), the worker's and the stack services' (broker, S3, catalog, PostgreSQL, registry:
 *     lib/bench-services.ts); peak RSS per process; commit latency; steady rate of full cycles. Once per
 *     --storage path. (lib/bench-load.ts, lib/bench-storage.ts)
 *  routedN: the same with the records routed by `region` (static route regexes) to three tables, each
 *     partitioned by --routed-partition-by (default `day(created_at), bucket(order_id, 16)`). --runs=N
 *     repeats the throughput and routed phases in turn (each phase on each storage path before the next
 *     phase); the summary, the targets and the goals use the medians.
 *  long: one task reads the whole topic in a single commit cycle (memory), on the first --storage path.
 *     (lib/bench-load.ts)
 *  freshness: per --fresh-tasks, produce → visible at --fresh-rate for --fresh-seconds. (lib/bench-live.ts)
 *  idle: one task, records to partition 0 of 6 only: does the watermark land? (lib/bench-live.ts)
 * Everything it creates (topics, control topics, consumer groups, registry subjects, temp directories,
 * s3-rest namespaces with their tables and objects) is deleted at the end, also after a failure or Ctrl-C
 * (--keep keeps the directories and namespaces).
 *
 * Before/after: the load phases use nothing inside src/ but the CLI (`icefloe standalone`, its log lines)
 * and the generator (lib/bench-generator.ts finds it in either layout), so this script and scripts/lib/ can
 * be copied into an older checkout and run there with the same options.
 *
 * MB is 10^6 bytes of framed Avro record values (keys not counted); GB is 10^9.
 * Usage: node scripts/bench.ts --help (lib/bench-options.ts).
 */
import { writeFileSync } from 'node:fs';
import { requireReachable } from '../test/helpers/stack.ts';
import { PARTITIONS, START_TIME_MS, cleanUp, cleanUpOnInterrupt, createBench, fmt, generate, load } from './lib/bench-context.ts';
import type { Bench } from './lib/bench-context.ts';
import type { CeilingResult, ConsumeResult } from './lib/bench-in-process.ts';
import { freshness, idlePartitions } from './lib/bench-live.ts';
import type { FreshnessResult, IdleResult } from './lib/bench-live.ts';
import { longCycle, phaseLabel, throughput } from './lib/bench-load.ts';
import type { LongCycleResult, ThroughputResult } from './lib/bench-load.ts';
import { USAGE, needsTopic, optionsFromArgv, parseOptions } from './lib/bench-options.ts';
import type { BenchOptions, StorageName } from './lib/bench-options.ts';
import { report } from './lib/bench-report.ts';

/** Produces the topic the load phases read; returns its framed bytes and schema id. */
async function produce(b: Bench, topic: string): Promise<{ bytes: number; schemaId: number }> {
  const g0 = performance.now();
  const produced = await generate(b, topic, b.o.records, { startTimeMs: START_TIME_MS });
  const mb = produced.bytes / 1e6;
  console.log(`  produced ${produced.records.toLocaleString('en-US')} records, ${fmt(mb)} MB of Avro values (${fmt(produced.bytes / produced.records)} B/record) in ${fmt((performance.now() - g0) / 1000)} s (not timed)`);
  if (produced.records !== b.o.records) throw new Error(`produced ${produced.records} of ${b.o.records}`);
  return { bytes: produced.bytes, schemaId: produced.schemaId as number };
}

async function run(b: Bench): Promise<string> {
  const o = b.o;
  await requireReachable('Kafka', b.stack.kafkaBootstrap);
  await requireReachable('Schema Registry', b.stack.registryUrl);
  const phases = [o.ceiling && 'ceiling', o.consume && 'consume', ...o.load.map((p) => p.name), o.long && 'long', o.freshness && 'freshness', o.idle && 'idle'].filter((p) => p !== false);
  const storageNeeded = o.load.length > 0 || o.long;
  if (storageNeeded && o.storage.includes('s3-rest')) {
    await requireReachable('Iceberg REST catalog', b.stack.catalogUri);
    await requireReachable('S3 (moto)', b.stack.s3Endpoint);
  }
  const tuning = [...Object.entries(o.set).map(([k, v]) => `--set=${k}=${v}`), ...Object.entries(o.workerSet).map(([k, v]) => `--worker-set=${k}=${v}`)];
  console.log(
    `bench  ${b.runId}: ${o.records.toLocaleString('en-US')} order events, ${PARTITIONS} partitions, commit interval ${o.intervalMs} ms; phases ${phases.join(',')}${o.runs > 1 ? ` (load phases ×${o.runs})` : ''}` +
      `${storageNeeded ? `; storage ${o.storage.join(',')}` : ''}${tuning.length > 0 ? `; ${tuning.join(' ')}` : ''}; node ${process.version}; load ${load()}`,
  );

  const topic = `${b.runId}-orders`;
  const input = needsTopic(o) ? await produce(b, topic) : { bytes: Number.NaN, schemaId: Number.NaN };

  let ceil: CeilingResult | undefined;
  let cons: ConsumeResult | undefined;
  if (o.ceiling || o.consume) {
    // Loaded only for these phases: they use the worker's modules directly (see the module's header).
    const inProcess = await import('./lib/bench-in-process.ts');
    if (o.ceiling) {
      console.log(`  ceiling: decode + encode in this process (warm-up, then ${o.repeat} runs); load ${load()}`);
      ceil = await inProcess.ceiling(b, input.bytes, input.schemaId);
      console.log(`    runs (wall s): ${ceil.runs.map((r) => r.wallS.toFixed(2)).join(' ')}`);
      globalThis.gc?.();
    }
    if (o.consume) {
      console.log(`  consume only: KafkaSource in this process; load ${load()}`);
      cons = await inProcess.consumeOnly(b, topic);
    }
  }

  const tp: ThroughputResult[] = [];
  for (let n = 1; n <= o.runs; n++) {
    for (const phase of o.load) {
      for (const storage of o.storage) {
        console.log(`  ${phaseLabel(phase.name, storage)}${o.runs > 1 ? ` run ${n}` : ''}: ${phase.tasks} task(s), ${phase.routed ? `routed to 3 tables, partitioned by ${o.routedPartitionBy}` : 'one unpartitioned table'}; load ${load()}`);
        const r = await throughput(b, topic, phase, n, storage);
        console.log(`    ${fmt(r.wallFromAssignS, 2)} s from assignment, task CPU ${fmt(r.taskCpuS, 2)} s, ${r.commits} commits, ${r.files} files`);
        tp.push(r);
      }
    }
  }

  let long: LongCycleResult | undefined;
  if (o.long) {
    const storage = o.storage[0] as StorageName;
    console.log(`  one long cycle (memory) · ${storage}: 1 task, the whole topic in one commit cycle; load ${load()}`);
    long = await longCycle(b, topic, storage);
  }

  const fr: FreshnessResult[] = [];
  if (o.freshness) {
    for (const n of o.freshTasks) {
      console.log(`  freshness: ${n} task(s), ${o.freshRate.toLocaleString('en-US')} records/s for ${o.freshSeconds} s; load ${load()}`);
      fr.push(await freshness(b, n));
    }
  }

  let idle: IdleResult | undefined;
  if (o.idle) {
    console.log(`  idle partitions: partition 0 of ${PARTITIONS} only, ${o.idleRate} records/s for ${o.idleSeconds} s; load ${load()}`);
    idle = await idlePartitions(b);
  }

  return report(o, { inputBytes: input.bytes, ceil, cons, tp, long, fr, idle });
}

function options(): BenchOptions {
  return optionsFromArgv('bench', USAGE, parseOptions);
}

const bench = await createBench(options());

cleanUpOnInterrupt(bench);

let code = 0;
try {
  const md = await run(bench);
  if (bench.o.out !== undefined) writeFileSync(bench.o.out, `${md}\n`);
} catch (e) {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  code = 1;
} finally {
  await cleanUp(bench);
}
process.exit(code);
