/**
 * The four runs of `npm run bench:peer` (scripts/bench-peer.ts), each reading the produced topic from the
 * start into a fresh table of the stack's REST catalog (PostgreSQL + S3) with one task and the same commit
 * interval, measured until its commits add up to every record:
 * - icefloe: `icefloe standalone`, the task as a child process (lib/bench-worker.ts), 'table committed' lines;
 * - icefloe warm: the same worker started without a connector, measured as java warm is (below): a warm-up
 *   connector first, then the measured one created through its REST API, measured from that PUT;
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
import { load, sleep } from './bench-context.ts';
import type { Bench } from './bench-context.ts';
import { JavaWorker, connectorConfig } from './bench-peer-java.ts';
import type { JavaCommit, JavaConnector, JavaInstall } from './bench-peer-java.ts';
import type { GroupsSampler } from './bench-peer-procs.ts';
import type { GroupUsage } from './bench-peer-procs.ts';
import { percentile } from './bench-stats.ts';
import { benchConnector, followConnector, pump, startBenchWorker, stopBenchWorker, waitUntil, withWorker } from './bench-worker.ts';
import type { BenchWorker, CommitLine, WorkerSpec } from './bench-worker.ts';
import { deleteConnector, putConnectorConfig } from './connect-rest.ts';
import { processGroup } from './proc.ts';

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
  readonly icefloeWarm: boolean;
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

const timeout = (o: PeerOptions): number => Math.max(10 * 60_000, o.records / 2);

function services(usage: Map<string, GroupUsage>, exclude: readonly string[]): GroupUsage[] {
  return [...usage.values()].filter((u) => !exclude.includes(u.name));
}

// ---------------------------------------------------------------------------------------------------
// Icefloe
// ---------------------------------------------------------------------------------------------------

/** Icefloe's connector settings in both runs: one task, the run's interval, the stack's REST catalog. */
function icefloeSpec(bench: Bench, o: PeerOptions, c: JavaConnector): WorkerSpec {
  // names() made the connector's name `<run id>-<label>`, as startBenchWorker() makes it from the label.
  return { label: c.name.slice(bench.runId.length + 1), topic: c.topic, tasks: 1, tables: { 'iceberg.tables': c.table }, intervalMs: o.intervalMs, catalog: restCatalogKeys() };
}

/** A run of Icefloe: `b` follows its connector (its commits, first assignment), `from` is where its clock starts. */
function icefloeResult(r: { label: string; c: JavaConnector; b: BenchWorker; loadAtStart: string; from: number; sink: SinkProc[]; startupCpuS: number; usage: Map<string, GroupUsage>; note: string }): RunResult {
  const last = r.b.commits[r.b.commits.length - 1] as CommitLine;
  return {
    label: r.label,
    table: r.c.table,
    load: r.loadAtStart,
    wallFromStartS: (last.time - r.from) / 1000,
    wallFromAssignS: (last.time - (r.b.firstAssignedAt ?? r.from)) / 1000,
    sink: r.sink,
    sinkCpuS: r.sink.reduce((n, p) => n + p.cpuS, 0),
    startupCpuS: r.startupCpuS,
    services: services(r.usage, []),
    commits: r.b.commits.length,
    latencyMs: r.b.commits.map((x) => x.latencyMs).filter((x): x is number => x !== undefined),
    roundMs: [],
    note: r.note,
  };
}

const taskProc = (p: { task: number | undefined; cpuS: number; hwmBytes: number }): SinkProc => ({ name: `task ${p.task ?? '?'}`, cpuS: p.cpuS, hwmBytes: p.hwmBytes });

/** `icefloe standalone` with the connector on its command line, measured from the worker's spawn. */
export async function runIcefloe(bench: Bench, o: PeerOptions, sampler: GroupsSampler, c: JavaConnector): Promise<RunResult> {
  const loadAtStart = load();
  const window = sampler.begin();
  const b = startBenchWorker(bench, icefloeSpec(bench, o, c));
  return withWorker(b, async () => {
    await waitUntil(b, 'the first assignment', () => b.firstAssignedAt !== undefined, 5 * 60_000);
    b.sampler.sample();
    // The worker's and task's CPU until the task's consumer got partitions: start-up, as for the JVM.
    const startupCpuS = [...b.sampler.procs.values()].reduce((n, p) => n + p.cpuS, 0);
    await waitUntil(b, `${o.records} committed records`, () => b.committed >= o.records, timeout(o));
    b.sampler.sample();
    const usage = sampler.end(window);
    const worker = b.sampler.worker();
    const sink: SinkProc[] = [{ name: 'worker', cpuS: worker?.cpuS ?? Number.NaN, hwmBytes: worker?.hwmBytes ?? Number.NaN }, ...b.sampler.tasks().map(taskProc)];
    await stopBenchWorker(b);
    pump(b);
    return icefloeResult({ label: 'Icefloe', c, b, loadAtStart, from: b.spawnedAt, sink, startupCpuS, usage, note: b.name });
  });
}

/**
 * Measured as Java warm is: `icefloe standalone` started with no connector; a warm-up connector over its own
 * topic until every warm-up record is committed, deleted through the REST API, its task process gone; then
 * the measured connector created through the REST API (`PUT /connectors/<name>/config`) and measured from
 * that request. Sink CPU: the worker's from the request on, and the whole lives of the task processes
 * spawned after it (the measured connector's).
 */
export async function runIcefloeWarm(bench: Bench, o: PeerOptions, sampler: GroupsSampler, warm: JavaConnector, c: JavaConnector): Promise<RunResult> {
  const b = startBenchWorker(bench, icefloeSpec(bench, o, c), { rest: true });
  return withWorker(b, async () => {
    const url = await b.w.restUrl();
    const warmup = benchConnector(bench, icefloeSpec(bench, o, warm));
    const warmLog = followConnector(b, warmup.name);
    const t0 = Date.now();
    await putConnectorConfig(url, warmup.name, warmup.config);
    await waitUntil(warmLog, `${o.warmupRecords} committed warm-up records`, () => warmLog.committed >= o.warmupRecords, timeout(o));
    console.log(`    warm-up: ${o.warmupRecords.toLocaleString('en-US')} records committed in ${((Date.now() - t0) / 1000).toFixed(1)} s; deleting the warm-up connector`);
    await deleteConnector(url, warmup.name);
    // Its task process gone (the worker alone in its group), so none of its CPU can count below.
    const pgid = b.w.child.pid as number;
    await waitUntil(b, 'the warm-up task process to exit', () => processGroup(pgid).every((pid) => pid === pgid), 60_000);
    await sleep(2000); // its committer closed, as Java warm waits
    const loadAtStart = load();
    b.sampler.sample();
    const before = new Set(b.sampler.procs.keys());
    const workerAtRequest = b.sampler.worker()?.cpuS ?? Number.NaN;
    const window = sampler.begin();
    const measured = benchConnector(bench, icefloeSpec(bench, o, c));
    const log = followConnector(b, measured.name);
    const from = await putConnectorConfig(url, measured.name, measured.config);
    await waitUntil(log, `${o.records} committed records`, () => log.committed >= o.records, timeout(o));
    b.sampler.sample();
    const usage = sampler.end(window);
    const worker = b.sampler.worker();
    const tasks = b.sampler.tasks().filter((p) => !before.has(p.pid));
    const sink: SinkProc[] = [{ name: 'worker', cpuS: (worker?.cpuS ?? Number.NaN) - workerAtRequest, hwmBytes: worker?.hwmBytes ?? Number.NaN }, ...tasks.map(taskProc)];
    await stopBenchWorker(b);
    pump(log);
    return icefloeResult({ label: 'Icefloe warm', c, b: log, loadAtStart, from, sink, startupCpuS: Number.NaN, usage, note: `after ${o.warmupRecords.toLocaleString('en-US')} warm-up records in the same worker` });
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
