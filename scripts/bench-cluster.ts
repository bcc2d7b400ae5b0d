/**
 * Distributed-mode benchmark (`npm run bench:cluster`, issue 13): the sink as a cluster of `icefloe
 * distributed` workers (tasks as child processes) on the stack's REST catalog over S3 — a cluster refuses
 * SQLite catalogs, so this is not the embedded path of `npm run bench`. A benchmark, not a test: it prints
 * numbers and asserts nothing. Needs the whole local stack (Kafka, Schema Registry, REST catalog, S3, Redis).
 *
 *  0. Produce N order events (the generator and topic code of `npm run bench`) before any clock starts.
 *  throughput: per --workers size (default 1, then 3), a fresh cluster (own group.id, config/status topics,
 *     Redis prefix) and a fresh connector (own name, control topic, consumer group, table; tasks.max
 *     --tasks), measured until its 'table committed' lines, summed over every worker, reach N: wall time,
 *     CPU-seconds of every worker and task process (/proc), peak RSS.
 *  failover: a fresh 3-worker cluster fed at --failover-rate; --kill-after seconds in, one worker that runs
 *     tasks but not the committer is killed with SIGKILL (its task processes too); the time until every task
 *     is RUNNING on the survivors (REST status), its partitions are assigned to surviving tasks ('partitions
 *     assigned' lines) and records of them are committed again ('table committed' sourceRanges).
 * Everything it makes (topics, consumer groups, registry subjects, tables, the clusters' Redis keys, temp
 * directories) is removed at the end, also after a failure or Ctrl-C. Method and results: docs/benchmarks.md.
 */
import { writeFileSync } from 'node:fs';
import { requireReachable } from '../test/helpers/stack.ts';
import { START_TIME_MS, cleanUp, cleanUpOnInterrupt, createBench, fmt, generate, int, load, mib } from './lib/bench-context.ts';
import type { Bench } from './lib/bench-context.ts';
import { clusterThroughput, failover } from './lib/bench-cluster-run.ts';
import type { ClusterThroughput, FailoverOptions, FailoverResult } from './lib/bench-cluster-run.ts';
import type { ClusterSettings } from './lib/bench-cluster.ts';
import { UsageError, optionsFromArgv, parseOptions } from './lib/bench-options.ts';

const USAGE = `usage: node scripts/bench-cluster.ts [records] [options]

  records, --records=N        order events read by each throughput run (default 1000000)
  --phases=LIST               throughput,failover (default both)
  --workers=1,3               cluster sizes of the throughput runs
  --tasks=6                   tasks.max of every connector
  --interval-ms=5000          commit interval
  --consumer-session-ms=10000 consumer.session.timeout.ms of the task consumers (Kafka's default is 45000)
  --failover-rate=20000 --failover-seconds=60 --kill-after=15
                              failover: records/s produced, for how long, and when the worker is killed
  --logs=DIR                  keep every worker's log lines there (<group>-<n>.log)
  --keep                      keep the temp directories
  --out=FILE.md               also write the report there
`;

interface Options {
  readonly records: number;
  readonly throughput: boolean;
  readonly failover: boolean;
  readonly workers: number[];
  readonly settings: ClusterSettings;
  readonly failoverOptions: FailoverOptions;
  readonly logs: string | undefined;
  readonly keep: boolean;
  readonly out: string | undefined;
}

function parse(argv: readonly string[]): Options {
  const v = new Map<string, string>();
  let keep = false;
  for (const arg of argv) {
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (/^\d+$/.test(arg)) v.set('records', arg);
    else if (arg === '--keep') keep = true;
    else if (m !== null && ['records', 'phases', 'workers', 'tasks', 'interval-ms', 'consumer-session-ms', 'failover-rate', 'failover-seconds', 'kill-after', 'logs', 'out'].includes(m[1] as string)) v.set(m[1] as string, m[2] as string);
    else throw new UsageError(`unknown argument '${arg}'`);
  }
  const num = (name: string, fallback: number): number => {
    const n = Number(v.get(name) ?? fallback);
    if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer, not '${v.get(name)}'`);
    return n;
  };
  const phases = (v.get('phases') ?? 'throughput,failover').split(',').filter((p) => p !== '');
  for (const p of phases) if (p !== 'throughput' && p !== 'failover') throw new UsageError(`unknown phase '${p}' (throughput, failover)`);
  const workers = (v.get('workers') ?? '1,3').split(',').map(Number);
  if (workers.some((n) => !Number.isSafeInteger(n) || n < 1)) throw new UsageError(`--workers must list positive integers, not '${v.get('workers')}'`);
  return {
    records: num('records', 1_000_000),
    throughput: phases.includes('throughput'),
    failover: phases.includes('failover'),
    workers,
    settings: { tasks: num('tasks', 6), intervalMs: num('interval-ms', 5000), consumerSessionMs: num('consumer-session-ms', 10_000) },
    failoverOptions: { rate: num('failover-rate', 20_000), seconds: num('failover-seconds', 60), killAfterS: num('kill-after', 15) },
    logs: v.get('logs'),
    keep,
    out: v.get('out'),
  };
}

function throughputReport(r: ClusterThroughput, bytes: number, records: number): string[] {
  const gb = bytes / 1e9;
  const cpu = r.workerCpuS + r.taskCpuS;
  const out = [
    `| ${r.workers} | ${r.tasks} | ${r.load} | ${fmt(r.wallFromCreateS, 2)} / ${fmt(r.wallFromAssignS, 2)} | ${int(records / r.wallFromCreateS)} | ${fmt(bytes / 1e6 / r.wallFromCreateS)} / ${fmt(bytes / 1e6 / r.wallFromAssignS)} | ${fmt(r.taskCpuS, 1)} (${fmt(r.taskStartupCpuS, 1)} start-up) | ${fmt(r.workerCpuS, 1)} | ${fmt(cpu / gb)} | ${fmt((cpu - r.taskStartupCpuS) / gb)} | ${fmt(r.brokerCpuS, 1)} | ${r.commits} | ${int(r.latencyP50)} / ${int(r.latencyP99)} ms |`,
  ];
  return out;
}

function perWorkerReport(r: ClusterThroughput): string[] {
  return r.perWorker.map((w) => `| ${r.workers} | ${w.id} | ${w.tasks} | ${w.partitions} | ${int(w.records)} | ${fmt(w.workerCpuS, 1)} | ${fmt(w.taskCpuS, 1)} | ${w.committer ? 'yes' : ''} | ${mib(w.workerHwmBytes)} | ${mib(w.taskHwmBytes)} |`);
}

function failoverReport(f: FailoverResult, o: Options): string[] {
  const max = (m: Map<string, number>): number => Math.max(...m.values());
  const per = f.killedPartitions.map((p) => `${p.replace(/^.*\[/, '[')} ${fmt(f.assignedS.get(p) ?? Number.NaN)} → ${fmt(f.committedS.get(p) ?? Number.NaN)} s`).join('; ');
  return [
    `Failover (3 workers, ${o.settings.tasks} tasks, ${int(o.failoverOptions.rate)} records/s, SIGKILL ${o.failoverOptions.killAfterS} s in; worker session.timeout.ms 10000 (default), consumer.session.timeout.ms ${o.settings.consumerSessionMs}; load at start ${f.load}):`,
    `killed ${f.killed} (tasks ${f.killedTasks.join(', ')}${f.killedHeldCommitter ? ', and the committer' : ''}), its partitions ${f.killedPartitions.length}.`,
    '',
    '| after the SIGKILL | seconds |',
    '|---|---:|',
    `| (a) every task RUNNING on the survivors (REST status of both) | ${fmt(f.runningS)} |`,
    `| last task started on a survivor | ${fmt(f.tasksStartedS)} |`,
    `| (b) every killed partition assigned to a surviving task | ${fmt(max(f.assignedS))} |`,
    `| (c) records of every killed partition committed again | ${fmt(max(f.committedS))} |`,
    '',
    `Per partition, assigned → committed again: ${per}. Records: ${int(f.committed)} committed of ${int(f.produced)} produced.`,
  ];
}

/** Prints a finished section and rewrites --out with everything so far (a later phase's failure keeps it). */
function emit(md: string[], o: Options, section: readonly string[]): void {
  md.push(...(md.length > 0 ? [''] : []), ...section);
  console.log(`\n${section.join('\n')}\n`);
  if (o.out !== undefined) writeFileSync(o.out, `${md.join('\n')}\n`);
}

async function run(b: Bench, o: Options): Promise<void> {
  for (const [what, url] of [['Kafka', b.stack.kafkaBootstrap], ['Schema Registry', b.stack.registryUrl], ['REST catalog', b.stack.catalogUri], ['S3', b.stack.s3Endpoint]] as const) await requireReachable(what, url);
  console.log(`bench:cluster ${b.runId}: ${o.records.toLocaleString('en-US')} order events, tasks.max ${o.settings.tasks}, workers ${o.workers.join(', ')}; node ${process.version}; load ${load()}`);
  const md: string[] = [];
  if (o.throughput) {
    const topic = `${b.runId}-orders`;
    const g0 = performance.now();
    const produced = await generate(b, topic, o.records, { startTimeMs: START_TIME_MS });
    if (produced.records !== o.records) throw new Error(`produced ${produced.records} of ${o.records}`);
    console.log(`  produced ${int(produced.records)} records, ${fmt(produced.bytes / 1e6)} MB in ${fmt((performance.now() - g0) / 1000)} s (not timed)`);
    const runs: ClusterThroughput[] = [];
    for (const size of o.workers) {
      console.log(`  throughput: ${size} worker(s); load ${load()}`);
      const r = await clusterThroughput(b, topic, size, o.settings);
      console.log(`    ${fmt(r.wallFromCreateS, 2)} s from creation, CPU ${fmt(r.workerCpuS + r.taskCpuS, 1)} s`);
      runs.push(r);
    }
    emit(md, o, [
      `Throughput (${int(o.records)} records, ${fmt(produced.bytes / 1e6)} MB of Avro values, commit interval ${o.settings.intervalMs} ms):`,
      '',
      '| workers | tasks | load at start | wall s from creation / from assignment | records/s (from creation) | MB/s from creation / from assignment | task CPU-s | worker CPU-s | CPU-s per GB, all processes | without task start-up | broker CPU-s | commits | commit latency p50 / p99 |',
      '|---:|---:|---|---|---:|---|---|---:|---:|---:|---:|---:|---|',
      ...runs.flatMap((r) => throughputReport(r, produced.bytes, o.records)),
      '',
      '| workers | worker | tasks | partitions at the end | records | worker CPU-s | task CPU-s | committer | worker peak RSS | largest task peak RSS |',
      '|---:|---|---:|---:|---:|---:|---:|---|---:|---:|',
      ...runs.flatMap(perWorkerReport),
    ]);
  }
  if (o.failover) {
    console.log(`  failover: 3 workers, ${int(o.failoverOptions.rate)} records/s for ${o.failoverOptions.seconds} s; load ${load()}`);
    const f = await failover(b, o.settings, o.failoverOptions);
    emit(md, o, failoverReport(f, o));
  }
}

function options(): Options {
  return optionsFromArgv('bench:cluster', USAGE, parse);
}

const o = options();
// The shared register of what a run makes (and its cleanup); of bench.ts's options only these matter here.
const bench = await createBench(parseOptions([`--records=${o.records}`, ...(o.keep ? ['--keep'] : []), ...(o.logs === undefined ? [] : [`--logs=${o.logs}`])]));

cleanUpOnInterrupt(bench);

let code = 0;
try {
  await run(bench, o);
} catch (e) {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  code = 1;
} finally {
  await cleanUp(bench);
}
process.exit(code);
