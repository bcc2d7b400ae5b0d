/**
 * The workers of `npm run bench:cluster` (scripts/bench-cluster.ts): a fresh cluster of `icefloe distributed`
 * workers (own group.id, config and status topics, Redis key prefix; tasks as child processes), a connector
 * created through the REST API on the stack's REST catalog over S3 (a cluster refuses SQLite catalogs), the
 * workers' log lines read into assignments and commits, and per worker a sampler of CPU time and peak RSS of
 * its process group (the worker and its task processes).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { parseIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { clusterKeyPrefix } from '../../src/coordinate/redis/connection.ts';
import { http, runningOn, waitStatuses, workerIdOf } from '../../test/helpers/cluster.ts';
import { restCatalogKeys } from '../../test/helpers/sink-e2e.ts';
import { stackEndpoints } from '../../test/helpers/stack.ts';
import { startWorker } from '../../test/helpers/worker.ts';
import type { WorkerProcess } from '../../test/helpers/worker.ts';
import { sleep } from './bench-context.ts';
import type { Bench } from './bench-context.ts';
import { GroupSampler } from './bench-worker.ts';
import type { CommitLine, LogLine } from './bench-worker.ts';

export interface ClusterSettings {
  readonly tasks: number;
  readonly intervalMs: number;
  /** The task consumers' group session (consumer.session.timeout.ms): when Kafka moves a dead task's partitions. */
  readonly consumerSessionMs: number;
}

export interface ClusterWorker {
  readonly w: WorkerProcess;
  readonly url: string;
  readonly id: string;
  readonly sampler: GroupSampler;
  /** Parsed JSON log lines so far (read() appends the new ones). */
  readonly log: LogLine[];
  readLines: number;
}

export interface Cluster {
  readonly bench: Bench;
  readonly label: string;
  readonly group: string;
  readonly workers: ClusterWorker[];
}

/** Removes what a cluster keeps in Redis under its group's key prefix (SCAN + DEL: other clusters share it). */
async function deleteRedisKeys(bench: Bench, group: string): Promise<void> {
  const redis = new Redis(bench.stack.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${clusterKeyPrefix(group)}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

async function dropTable(table: string): Promise<void> {
  const e = stackEndpoints();
  const catalog = new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse });
  try {
    await catalog.dropTable(parseIdentifier(table));
  } finally {
    await catalog.close();
  }
}

/** New JSON log lines of a worker into its `log`. */
export function read(cw: ClusterWorker): void {
  const lines = cw.w.lines;
  for (; cw.readLines < lines.length; cw.readLines++) {
    const l = lines[cw.readLines] as string;
    if (!l.startsWith('{')) continue;
    let j: LogLine;
    try {
      j = JSON.parse(l) as LogLine;
    } catch {
      continue; // not a log line
    }
    cw.log.push(j);
    // Read while the run goes on, so the task's CPU at this moment is its start-up (node, modules, clients).
    if (j.msg === 'task started' && typeof j['pid'] === 'number' && typeof j['task'] === 'number') cw.sampler.markStarted(j['pid'], j['task']);
  }
}

/** The cluster's members as a worker last logged them ('joined the cluster', 'cluster members changed'). */
function members(cw: ClusterWorker): number {
  read(cw);
  for (let i = cw.log.length - 1; i >= 0; i--) {
    const l = cw.log[i] as LogLine;
    if ((l.msg === 'joined the cluster' || l.msg === 'cluster members changed') && Array.isArray(l['workers'])) return l['workers'].length;
  }
  return 0;
}

/**
 * Starts `size` workers of a fresh cluster and waits until each of them sees all of them, so a connector
 * created next is placed once, not moved again by a late join.
 */
export async function startCluster(bench: Bench, label: string, size: number, s: ClusterSettings): Promise<Cluster> {
  const group = `${bench.runId}-${label}`;
  bench.topics.add(`${group}-configs`);
  bench.topics.add(`${group}-status`);
  bench.cleanups.push(() => deleteRedisKeys(bench, group));
  const props: Record<string, string> = {
    'group.id': group,
    'config.storage.topic': `${group}-configs`,
    'config.storage.replication.factor': '-1',
    'status.storage.topic': `${group}-status`,
    'status.storage.replication.factor': '-1',
    'icefloe.redis.url': bench.stack.redisUrl,
    'icefloe.tasks.mode': 'process',
    // Kafka's default (45 s) would make the failover mostly a wait for dead task consumers; 10 s is common.
    'consumer.session.timeout.ms': String(s.consumerSessionMs),
    'consumer.heartbeat.interval.ms': String(Math.max(500, Math.floor(s.consumerSessionMs / 3))),
  };
  const workers: ClusterWorker[] = [];
  for (let i = 0; i < size; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'icefloe-bench-cluster-'));
    bench.dirs.add(dir);
    const w = startWorker({ mode: 'distributed', dir, worker: props, connectors: [], env: { ICEFLOE_LOG_LEVEL: 'info' } });
    bench.live.add(w);
    const sampler = new GroupSampler(w.child.pid as number);
    sampler.start();
    workers.push({ w, url: '', id: '', sampler, log: [], readLines: 0 });
  }
  for (const cw of workers) {
    const url = await cw.w.restUrl();
    Object.assign(cw, { url, id: workerIdOf(url) });
  }
  const deadline = Date.now() + 120_000;
  while (!workers.every((cw) => members(cw) === size)) {
    if (Date.now() > deadline) throw new Error(`cluster ${group}: the workers did not all see ${size} members within 120 s`);
    await sleep(100);
  }
  return { bench, label, group, workers };
}

/** Creates the connector through the first worker's REST API; resolves at the moment the POST was answered. */
export async function createConnector(c: Cluster, name: string, topic: string, table: string, s: ClusterSettings): Promise<number> {
  const control = `${name}-control`;
  c.bench.topics.add(control);
  c.bench.groups.add(`connect-${name}`);
  c.bench.cleanups.push(() => dropTable(table));
  const config = {
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    'tasks.max': String(s.tasks),
    topics: topic,
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'value.converter': 'io.confluent.connect.avro.AvroConverter',
    'value.converter.schema.registry.url': c.bench.stack.registryUrl,
    'iceberg.tables': table,
    'iceberg.tables.auto-create-enabled': 'true',
    'iceberg.control.topic': control,
    'iceberg.control.commit.interval-ms': String(s.intervalMs),
    ...restCatalogKeys(),
  };
  const r = await http('POST', `${(c.workers[0] as ClusterWorker).url}/connectors`, { name, config });
  if (r.status !== 201) throw new Error(`creating connector ${name}: HTTP ${r.status} ${JSON.stringify(r.json)}`);
  return Date.now();
}

/** Waits until every task of `name` is RUNNING on `workers` (as placement spreads them), on every one's status. */
export async function waitRunning(workers: readonly ClusterWorker[], name: string, tasks: number, timeoutMs = 120_000): Promise<void> {
  await waitStatuses(workers.map((cw) => cw.url), name, 'every task RUNNING', runningOn(workers.map((cw) => cw.id), tasks), timeoutMs);
}

/** 'table committed' lines of `table` from all `workers`, in time order. */
export function commitsOf(workers: readonly ClusterWorker[], table: string): CommitLine[] {
  const out: CommitLine[] = [];
  for (const cw of workers) {
    read(cw);
    for (const l of cw.log) {
      if (l.msg !== 'table committed' || String(l['table']) !== table) continue;
      const ranges = (l['sourceRanges'] as { partition: number; first: string; last: string }[] | undefined) ?? [];
      out.push({
        time: l.time,
        table,
        records: Number(l['records']),
        latencyMs: typeof l['latencyMs'] === 'number' ? l['latencyMs'] : undefined,
        validThroughTs: undefined,
        ranges: ranges.map((r) => ({ partition: r.partition, first: Number(r.first), last: Number(r.last) })),
      });
    }
  }
  return out.sort((a, b) => a.time - b.time);
}

/** A task's partitions as its worker's log last assigned them ('partitions assigned' / 'revoked'), per task id. */
export function assignments(cw: ClusterWorker, connector: string): Map<number, Set<string>> {
  read(cw);
  const out = new Map<number, Set<string>>();
  for (const l of cw.log) {
    if ((l.msg !== 'partitions assigned' && l.msg !== 'partitions revoked') || l['connector'] !== connector || typeof l['task'] !== 'number') continue;
    const set = out.get(l['task']) ?? new Set<string>();
    for (const p of (l['partitions'] as string[] | undefined) ?? []) {
      if (l.msg === 'partitions assigned') set.add(p);
      else set.delete(p);
    }
    out.set(l['task'], set);
  }
  return out;
}

/** Log lines of a connector with this message, from all `workers`, in time order. */
export function linesOf(workers: readonly ClusterWorker[], connector: string, msg: string): LogLine[] {
  const out: LogLine[] = [];
  for (const cw of workers) {
    read(cw);
    for (const l of cw.log) if (l.msg === msg && l['connector'] === connector) out.push(l);
  }
  return out.sort((a, b) => a.time - b.time);
}

/** Whether this worker's log says it holds the connector's committer lease. */
export function holdsCommitter(cw: ClusterWorker, connector: string): boolean {
  read(cw);
  return cw.log.some((l) => l.msg.startsWith('committer seated') && l['connector'] === connector);
}

/**
 * Stops the cluster's live workers (SIGTERM, in parallel; a worker already gone is left as it is) and, with
 * --logs, keeps every worker's lines there (<group>-<n>.log).
 */
export async function stopCluster(c: Cluster): Promise<void> {
  await Promise.all(
    c.workers.map(async (cw) => {
      cw.sampler.stop();
      if (!c.bench.live.has(cw.w)) return;
      const how = await cw.w.stop(60_000);
      c.bench.live.delete(cw.w);
      if (how !== '0') console.log(`  note: worker ${cw.id} of ${c.group} exited with ${how}`);
    }),
  );
  const dir = c.bench.o.logDir;
  if (dir === undefined) return;
  mkdirSync(dir, { recursive: true });
  c.workers.forEach((cw, i) => writeFileSync(join(dir, `${c.group}-${i}.log`), `${cw.w.lines.join('\n')}\n`));
}
