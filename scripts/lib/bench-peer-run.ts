/**
 * The three runs of `npm run bench:peer` (scripts/bench-peer.ts), each reading the produced topic from the
 * start into a fresh table of the stack's REST catalog (PostgreSQL + S3) with one task and the same commit
 * interval, measured until its commits add up to every record:
 * - icefloe: `icefloe standalone`, the task as a child process (lib/bench-worker.ts), 'table committed' lines;
 * - java cold: a fresh Connect JVM with the connector on its command line, measured from the JVM's spawn;
 * - java warm: a Connect JVM that first ran a warm-up connector over its own topic to the end (its JIT and
 *   class loading done), then the measured connector created through its REST API, measured from that PUT.
 * Every run samples, over its own window, the CPU and memory of the sink's processes and of the stack's
 * services (lib/bench-peer-procs.ts).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RdKafka } from '@confluentinc/kafka-javascript';
import { restCatalogKeys } from '../../test/helpers/sink-e2e.ts';
import { load } from './bench-context.ts';
import type { Bench } from './bench-context.ts';
import { JavaWorker, connectorConfig } from './bench-peer-java.ts';
import type { JavaCommit, JavaConnector, JavaInstall } from './bench-peer-java.ts';
import type { GroupsSampler } from './bench-peer-procs.ts';
import type { GroupUsage } from './bench-peer-procs.ts';
import { percentile } from './bench-stats.ts';
import { pump, startBenchWorker, stopBenchWorker, waitUntil, withWorker } from './bench-worker.ts';
import type { CommitLine } from './bench-worker.ts';

export interface PeerOptions {
  readonly records: number;
  readonly warmupRecords: number;
  readonly intervalMs: number;
  readonly javaHeap: string;
  /** The Connect worker's offset.flush.interval.ms (lib/bench-peer-java.ts says why it matters). */
  readonly javaOffsetFlushMs: number;
  /** The Connect worker's plugin.discovery. */
  readonly javaDiscovery: string;
  readonly icefloe: boolean;
  readonly javaCold: boolean;
  readonly javaWarm: boolean;
}

/** A sink process (Icefloe's worker or a task, the Connect JVM) over its run. */
export interface SinkProc {
  readonly name: string;
  readonly cpuS: number;
  readonly hwmBytes: number;
}

export interface RunResult {
  readonly label: string;
  readonly table: string;
  readonly load: string;
  /** From the worker's spawn (Java warm: from the connector's PUT) to the commit that completed N records. */
  readonly wallFromStartS: number;
  /** From the sink consumer's first partition assignment to that commit. */
  readonly wallFromAssignS: number;
  readonly sink: readonly SinkProc[];
  readonly sinkCpuS: number;
  /** The sink's CPU from its spawn until its consumer's first assignment (NaN for Java warm). */
  readonly startupCpuS: number;
  readonly services: readonly GroupUsage[];
  readonly commits: number;
  /** Data announced on the control topic → the table's snapshot (see docs/benchmarks.md). */
  readonly latencyMs: readonly number[];
  /** Java only: the coordinator's START_COMMIT → the table's snapshot. */
  readonly roundMs: readonly number[];
  readonly note: string;
}

export const p50 = (xs: readonly number[]): number => percentile(xs, 50);
export const p99 = (xs: readonly number[]): number => percentile(xs, 99);

/** Names of one run: connector, control topic, table (namespace shared by the run). */
export function names(bench: Bench, namespace: string, label: string, topic: string): JavaConnector {
  const name = `${bench.runId}-${label}`;
  return { name, topic, table: `${namespace}.${label.replaceAll('-', '_')}`, control: `${name}-control` };
}

/** Creates topics (the Java sink does not create its control topic) and registers them for cleanup. */
export async function createTopics(bench: Bench, topics: readonly string[], partitions: number): Promise<void> {
  const admin = RdKafka.AdminClient.create({ 'bootstrap.servers': bench.stack.kafkaBootstrap });
  try {
    for (const topic of topics) {
      bench.topics.add(topic);
      await new Promise<void>((res, rej) => admin.createTopic({ topic, num_partitions: partitions, replication_factor: -1 }, 30_000, (err) => (err ? rej(new Error(`creating ${topic}: ${err.message}`)) : res())));
    }
  } finally {
    admin.disconnect();
  }
}

function services(usage: Map<string, GroupUsage>, exclude: readonly string[]): GroupUsage[] {
  return [...usage.values()].filter((u) => !exclude.includes(u.name));
}

// ---------------------------------------------------------------------------------------------------
// Icefloe
// ---------------------------------------------------------------------------------------------------

export async function runIcefloe(bench: Bench, o: PeerOptions, sampler: GroupsSampler, c: JavaConnector): Promise<RunResult> {
  const loadAtStart = load();
  const window = sampler.begin();
  const b = startBenchWorker(bench, { label: 'icefloe', topic: c.topic, tasks: 1, tables: { 'iceberg.tables': c.table }, intervalMs: o.intervalMs, catalog: restCatalogKeys() });
  return withWorker(b, async () => {
    await waitUntil(b, 'the first assignment', () => b.firstAssignedAt !== undefined, 5 * 60_000);
    b.sampler.sample();
    // The worker's and task's CPU until the task's consumer got partitions: start-up, as for the JVM.
    const startupCpuS = [...b.sampler.procs.values()].reduce((n, p) => n + p.cpuS, 0);
    await waitUntil(b, `${o.records} committed records`, () => b.committed >= o.records, Math.max(10 * 60_000, o.records / 2));
    b.sampler.sample();
    const usage = sampler.end(window);
    const last = b.commits[b.commits.length - 1] as CommitLine;
    const worker = b.sampler.worker();
    const tasks = b.sampler.tasks();
    const sink: SinkProc[] = [
      { name: 'worker', cpuS: worker?.cpuS ?? Number.NaN, hwmBytes: worker?.hwmBytes ?? Number.NaN },
      ...tasks.map((p) => ({ name: `task ${p.task ?? '?'}`, cpuS: p.cpuS, hwmBytes: p.hwmBytes })),
    ];
    const latencies = b.commits.map((x) => x.latencyMs).filter((x): x is number => x !== undefined);
    await stopBenchWorker(b);
    pump(b);
    return {
      label: 'Icefloe',
      table: c.table,
      load: loadAtStart,
      wallFromStartS: (last.time - b.spawnedAt) / 1000,
      wallFromAssignS: (last.time - (b.firstAssignedAt ?? b.spawnedAt)) / 1000,
      sink,
      sinkCpuS: sink.reduce((n, p) => n + p.cpuS, 0),
      startupCpuS,
      services: services(usage, []),
      commits: b.commits.length,
      latencyMs: latencies,
      roundMs: [],
      note: `${b.name}`,
    };
  });
}

// ---------------------------------------------------------------------------------------------------
// Java
// ---------------------------------------------------------------------------------------------------

/** Live Connect JVMs of the run: the cleanup kills them before anything else is removed. */
export const liveJvms = new Set<JavaWorker>();

async function withJvm<T>(bench: Bench, w: JavaWorker, label: string, body: () => Promise<T>): Promise<T> {
  liveJvms.add(w);
  try {
    return await body();
  } finally {
    for (const g of w.groups) bench.groups.add(g);
    if (liveJvms.has(w)) {
      const how = await w.stop();
      if (how !== '0' && how !== '143' && how !== 'SIGTERM') console.log(`  note: the Connect worker (${label}) exited with ${how}`);
      liveJvms.delete(w);
    }
    for (const g of w.groups) bench.groups.add(g);
    const dir = bench.o.logDir;
    if (dir !== undefined) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${bench.runId}-${label}.log`), `${w.lines.join('\n')}\n`);
    }
  }
}

function javaResult(label: string, c: JavaConnector, w: JavaWorker, loadAtStart: string, from: number, usage: Map<string, GroupUsage>, startupCpuS: number, note: string): RunResult {
  const log = w.of(c.name);
  const commits = log.commits.filter((x) => x.records > 0);
  const last = log.commits[log.commits.length - 1] as JavaCommit;
  const jvm = usage.get('Connect JVM');
  return {
    label,
    table: c.table,
    load: loadAtStart,
    wallFromStartS: (last.time - from) / 1000,
    wallFromAssignS: (last.time - (log.firstAssignedAt ?? from)) / 1000,
    sink: [{ name: 'Connect JVM', cpuS: jvm?.cpuS ?? Number.NaN, hwmBytes: jvm?.leaderHwmBytes ?? Number.NaN }],
    sinkCpuS: jvm?.cpuS ?? Number.NaN,
    startupCpuS,
    services: services(usage, ['Connect JVM']),
    commits: commits.length,
    latencyMs: commits.flatMap((x) => (x.dataWrittenAt === undefined ? [] : [x.time - x.dataWrittenAt])),
    roundMs: commits.flatMap((x) => (x.initiatedAt === undefined ? [] : [x.time - x.initiatedAt])),
    note,
  };
}

function jvmDir(bench: Bench): string {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-bench-peer-'));
  bench.dirs.add(dir);
  return dir;
}

const timeout = (o: PeerOptions): number => Math.max(10 * 60_000, o.records / 2);

/** A fresh JVM with the connector on its command line, measured from its spawn. */
export async function runJavaCold(bench: Bench, o: PeerOptions, sampler: GroupsSampler, install: JavaInstall, c: JavaConnector): Promise<RunResult> {
  await createTopics(bench, [c.control], 1);
  const loadAtStart = load();
  const w = await JavaWorker.start(bench, { install, dir: jvmDir(bench), heap: o.javaHeap, offsetFlushMs: o.javaOffsetFlushMs, discovery: o.javaDiscovery, connectors: [{ c, config: connectorConfig(bench, c, o.intervalMs) }] });
  return withJvm(bench, w, 'java-cold', async () => {
    sampler.track({ name: 'Connect JVM', pgid: w.pid });
    const window = sampler.begin([w.pid]); // all of the JVM's CPU, from its spawn
    const log = w.of(c.name);
    await w.waitUntil('the first assignment', c.name, () => log.firstAssignedAt !== undefined, 5 * 60_000);
    // The JVM's CPU until its consumer got partitions: start-up (JVM, plugin scan, worker, connector, clients).
    const startupCpuS = sampler.reading(w.pid)?.cpuS ?? Number.NaN;
    await w.waitUntil(`${o.records} committed records`, c.name, () => log.totalRecords >= o.records, timeout(o));
    const usage = sampler.end(window);
    sampler.untrack(w.pid);
    return javaResult('Java cold', c, w, loadAtStart, w.spawnedAt, usage, startupCpuS, `JVM spawned with the connector`);
  });
}

/**
 * One JVM: the warm-up connector over its own topic until every warm-up record is committed, then that
 * connector deleted and the measured one created; measured from its creation.
 */
export async function runJavaWarm(bench: Bench, o: PeerOptions, sampler: GroupsSampler, install: JavaInstall, warm: JavaConnector, c: JavaConnector): Promise<RunResult> {
  await createTopics(bench, [warm.control, c.control], 1);
  const w = await JavaWorker.start(bench, { install, dir: jvmDir(bench), heap: o.javaHeap, offsetFlushMs: o.javaOffsetFlushMs, discovery: o.javaDiscovery, connectors: [{ c: warm, config: connectorConfig(bench, warm, o.intervalMs) }] });
  return withJvm(bench, w, 'java-warm', async () => {
    sampler.track({ name: 'Connect JVM', pgid: w.pid });
    const warmLog = w.of(warm.name);
    const t0 = Date.now();
    await w.waitUntil(`${o.warmupRecords} committed warm-up records`, warm.name, () => warmLog.totalRecords >= o.warmupRecords, timeout(o));
    console.log(`    warm-up: ${o.warmupRecords.toLocaleString('en-US')} records committed in ${((Date.now() - t0) / 1000).toFixed(1)} s; deleting the warm-up connector`);
    await w.deleteConnector(warm.name);
    await new Promise((r) => setTimeout(r, 2000)); // its task and coordinator closed
    const loadAtStart = load();
    const window = sampler.begin();
    const from = await w.putConnector(c, connectorConfig(bench, c, o.intervalMs));
    const log = w.of(c.name);
    await w.waitUntil(`${o.records} committed records`, c.name, () => log.totalRecords >= o.records, timeout(o));
    const usage = sampler.end(window);
    sampler.untrack(w.pid);
    return javaResult('Java warm', c, w, loadAtStart, from, usage, Number.NaN, `after ${o.warmupRecords.toLocaleString('en-US')} warm-up records in the same JVM`);
  });
}
