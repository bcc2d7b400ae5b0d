/**
 * The two measurements of `npm run bench:cluster`:
 * - throughput: a fresh cluster of N workers, a fresh connector reading the produced topic from the start,
 *   until its commits add up to every record: wall time, and CPU time of every worker and task process.
 * - failover: a fresh 3-worker cluster fed at a steady rate; one worker (not the committer's) is killed
 *   with SIGKILL (with its task processes, as a machine crash) and the time is taken until (a) every task
 *   shows RUNNING on the survivors, (b) each of its partitions is assigned to a surviving task, and (c)
 *   records of each of them are committed again.
 */
import { connectorStatus, runningOn } from '../../test/helpers/cluster.ts';
import { percentile } from './bench-stats.ts';
import { generate, load, sleep } from './bench-context.ts';
import type { Bench } from './bench-context.ts';
import { assignments, commitsOf, createConnector, holdsCommitter, linesOf, read, startCluster, stopCluster, waitRunning } from './bench-cluster.ts';
import type { Cluster, ClusterSettings, ClusterWorker } from './bench-cluster.ts';
import { brokerCpu } from './bench-worker.ts';
import type { CommitLine } from './bench-worker.ts';
import { findProcess } from './proc.ts';

export interface WorkerShare {
  readonly id: string;
  readonly tasks: number;
  /** Partitions its tasks held at the end. */
  readonly partitions: number;
  /** Records of its tasks' 'cycle committed' lines. */
  readonly records: number;
  readonly workerCpuS: number;
  readonly taskCpuS: number;
  readonly committer: boolean;
  readonly workerHwmBytes: number;
  readonly taskHwmBytes: number;
}

export interface ClusterThroughput {
  readonly workers: number;
  readonly tasks: number;
  readonly load: string;
  /** From the answer to the connector's POST, and from the first partition assignment, to the last commit. */
  readonly wallFromCreateS: number;
  readonly wallFromAssignS: number;
  /** All worker processes (from the POST; their own start-up excluded) and all task processes (start-up included). */
  readonly workerCpuS: number;
  readonly taskCpuS: number;
  readonly taskStartupCpuS: number;
  readonly brokerCpuS: number;
  readonly commits: number;
  readonly latencyP50: number;
  readonly latencyP99: number;
  readonly perWorker: WorkerShare[];
}

function exitedWorker(c: Cluster): ClusterWorker | undefined {
  return c.workers.find((cw) => c.bench.live.has(cw.w) && (cw.w.child.exitCode !== null || cw.w.child.signalCode !== null));
}

function fail(c: Cluster, what: string): never {
  const tails = c.workers.map((cw) => `--- ${cw.id}\n${cw.w.lines.slice(-10).join('\n')}`).join('\n');
  throw new Error(`${c.group}: ${what}; last lines:\n${tails}`);
}

/** Waits until the table's commits (from every worker) add up to `records`; returns them. */
async function waitCommitted(c: Cluster, table: string, records: number, timeoutMs: number): Promise<CommitLine[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const commits = commitsOf(c.workers, table);
    if (commits.reduce((n, x) => n + x.records, 0) >= records) return commits;
    const gone = exitedWorker(c);
    if (gone !== undefined) fail(c, `worker ${gone.id} exited while waiting for ${records} committed records`);
    if (Date.now() > deadline) fail(c, `fewer than ${records} records committed within ${timeoutMs / 1000} s`);
    await sleep(50);
  }
}

export async function clusterThroughput(bench: Bench, topic: string, size: number, s: ClusterSettings): Promise<ClusterThroughput> {
  const loadAtStart = load();
  const c = await startCluster(bench, `w${size}`, size, s);
  try {
    const name = `${c.group}-sink`;
    const table = `${bench.runId.replaceAll('-', '_')}.orders_w${size}`;
    for (const cw of c.workers) cw.sampler.sample();
    const workerCpu0 = c.workers.map((cw) => cw.sampler.worker()?.cpuS ?? Number.NaN);
    const broker = findProcess(/ kafka\.Kafka /);
    const broker0 = brokerCpu(broker);
    const created = await createConnector(c, name, topic, table, s);
    const commits = await waitCommitted(c, table, bench.o.records, Math.max(10 * 60_000, bench.o.records / 2));
    for (const cw of c.workers) cw.sampler.sample(); // at the moment the last commit was seen
    const broker1 = brokerCpu(broker);
    const end = (commits[commits.length - 1] as CommitLine).time;
    const firstAssigned = Math.min(...linesOf(c.workers, name, 'partitions assigned').filter((l) => ((l['partitions'] as unknown[] | undefined) ?? []).length > 0).map((l) => l.time));
    const statuses = await connectorStatus((c.workers[0] as ClusterWorker).url, name);
    const perWorker = c.workers.map((cw, i): WorkerShare => {
      const tasks = cw.sampler.tasks();
      return {
        id: cw.id,
        tasks: statuses?.tasks.filter((t) => t.worker_id === cw.id).length ?? Number.NaN,
        partitions: [...assignments(cw, name).values()].reduce((n, set) => n + set.size, 0),
        records: linesOf([cw], name, 'cycle committed').reduce((n, l) => n + Number(l['records']), 0),
        workerCpuS: (cw.sampler.worker()?.cpuS ?? Number.NaN) - (workerCpu0[i] as number),
        taskCpuS: tasks.reduce((n, p) => n + p.cpuS, 0),
        committer: holdsCommitter(cw, name),
        workerHwmBytes: cw.sampler.worker()?.hwmBytes ?? Number.NaN,
        taskHwmBytes: Math.max(0, ...tasks.map((p) => p.hwmBytes)),
      };
    });
    const latencies = commits.map((x) => x.latencyMs).filter((x): x is number => x !== undefined);
    return {
      workers: size,
      tasks: s.tasks,
      load: loadAtStart,
      wallFromCreateS: (end - created) / 1000,
      wallFromAssignS: (end - firstAssigned) / 1000,
      workerCpuS: perWorker.reduce((n, w) => n + w.workerCpuS, 0),
      taskCpuS: perWorker.reduce((n, w) => n + w.taskCpuS, 0),
      taskStartupCpuS: c.workers.reduce((n, cw) => n + cw.sampler.tasks().reduce((k, p) => k + (p.startCpuS ?? 0), 0), 0),
      brokerCpuS: broker1 - broker0,
      commits: commits.length,
      latencyP50: percentile(latencies, 50),
      latencyP99: percentile(latencies, 99),
      perWorker,
    };
  } finally {
    await stopCluster(c);
  }
}

export interface FailoverOptions {
  readonly rate: number;
  readonly seconds: number;
  readonly killAfterS: number;
}

export interface FailoverResult {
  readonly load: string;
  readonly killed: string;
  readonly killedTasks: number[];
  readonly killedPartitions: string[];
  readonly killedHeldCommitter: boolean;
  /** Seconds from the SIGKILL; NaN when it did not happen within the wait. */
  readonly runningS: number;
  /** The last 'task started' on a survivor after the kill. */
  readonly tasksStartedS: number;
  /** Per killed partition: assigned to a surviving task, and records of it committed after that. */
  readonly assignedS: Map<string, number>;
  readonly committedS: Map<string, number>;
  readonly produced: number;
  readonly committed: number;
}

/** Kills a worker that runs tasks but not the committer (the lease's expiry would add to (c) otherwise). */
function victimOf(c: Cluster, name: string): ClusterWorker {
  const withTasks = c.workers.filter((cw) => [...assignments(cw, name).values()].some((set) => set.size > 0));
  return withTasks.find((cw) => !holdsCommitter(cw, name)) ?? (withTasks[withTasks.length - 1] as ClusterWorker);
}

export async function failover(bench: Bench, s: ClusterSettings, f: FailoverOptions): Promise<FailoverResult> {
  const loadAtStart = load();
  const c = await startCluster(bench, 'failover', 3, s);
  try {
    const topic = `${c.group}-orders`;
    const name = `${c.group}-sink`;
    const table = `${bench.runId.replaceAll('-', '_')}.orders_failover`;
    // A first batch creates the topic (6 partitions) before the connector subscribes to it.
    const warm = await generate(bench, topic, 6_000);
    await createConnector(c, name, topic, table, s);
    await waitRunning(c.workers, name, s.tasks);
    await waitCommitted(c, table, warm.records, 120_000);
    const producing = generate(bench, topic, f.rate * f.seconds, { ratePerSec: f.rate, seed: 7 });
    await sleep(f.killAfterS * 1000);
    const victim = victimOf(c, name);
    const killedPartitions = [...new Set([...assignments(victim, name).values()].flatMap((set) => [...set]))].sort();
    const before = await connectorStatus(victim.url, name);
    const killedTasks = before?.tasks.filter((t) => t.worker_id === victim.id).map((t) => t.id) ?? [];
    const committerBefore = holdsCommitter(victim, name);
    const tKill = Date.now();
    await victim.w.kill(); // SIGKILL to its process group: the worker and its task processes
    bench.live.delete(victim.w);
    victim.sampler.stop();
    console.log(`    killed ${victim.id} (tasks ${killedTasks.join(', ')}; partitions ${killedPartitions.join(' ')}) ${f.killAfterS} s into the load`);

    const survivors = c.workers.filter((cw) => cw !== victim);
    const assignedAt = new Map<string, number>();
    const committedAt = new Map<string, number>();
    let runningAt: number | undefined;
    const deadline = tKill + Math.max(180_000, f.seconds * 1000);
    while (Date.now() < deadline && (runningAt === undefined || committedAt.size < killedPartitions.length)) {
      if (runningAt === undefined) {
        const st = await Promise.all(survivors.map((cw) => connectorStatus(cw.url, name)));
        if (st.every((x) => x !== undefined && runningOn(survivors.map((cw) => cw.id), s.tasks)(x))) runningAt = Date.now();
      }
      for (const l of linesOf(survivors, name, 'partitions assigned')) {
        if (l.time < tKill) continue;
        for (const p of (l['partitions'] as string[] | undefined) ?? []) if (killedPartitions.includes(p) && !assignedAt.has(p)) assignedAt.set(p, l.time);
      }
      const commits = commitsOf(survivors, table);
      for (const [p, at] of assignedAt) {
        if (committedAt.has(p)) continue;
        const n = Number(/\[(\d+)\]$/.exec(p)?.[1]);
        const hit = commits.find((x) => x.time >= at && x.ranges.some((r) => r.partition === n));
        if (hit !== undefined) committedAt.set(p, hit.time);
      }
      await sleep(100);
    }
    const produced = await producing;
    const total = warm.records + produced.records;
    const all = await waitCommitted(c, table, total, 180_000).catch(() => commitsOf(c.workers, table));
    const started = linesOf(survivors, name, 'task started').filter((l) => l.time >= tKill);
    const sec = (t: number | undefined): number => (t === undefined ? Number.NaN : (t - tKill) / 1000);
    for (const cw of survivors) read(cw);
    return {
      load: loadAtStart,
      killed: victim.id,
      killedTasks,
      killedPartitions,
      killedHeldCommitter: committerBefore,
      runningS: sec(runningAt),
      tasksStartedS: started.length === 0 ? Number.NaN : sec(Math.max(...started.map((l) => l.time))),
      assignedS: new Map(killedPartitions.map((p) => [p, sec(assignedAt.get(p))])),
      committedS: new Map(killedPartitions.map((p) => [p, sec(committedAt.get(p))])),
      produced: total,
      committed: all.reduce((n, x) => n + x.records, 0),
    };
  } finally {
    await stopCluster(c);
  }
}
