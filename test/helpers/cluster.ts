/**
 * Distributed-mode test helpers: worker properties of a fresh cluster (its own group.id, config and status
 * topics, Redis key prefix) with short time-outs, the REST calls the cluster tests make, and waits on what
 * every worker's status says.
 */
import { Redis } from 'ioredis';
import { place } from '../../src/runtime/cluster/placement.ts';
import { sleep, unique } from './kafka.ts';
import { committedRecords } from './sink-e2e.ts';
import { stackEndpoints } from './stack.ts';
import { startWorker } from './worker.ts';
import type { WorkerProcess } from './worker.ts';

export interface ClusterNames {
  readonly group: string;
  readonly configTopic: string;
  readonly statusTopic: string;
}

export function clusterNames(prefix: string): ClusterNames {
  const group = unique(prefix);
  return { group, configTopic: `${group}-configs`, statusTopic: `${group}-status` };
}

/**
 * A cluster worker's properties: in-process tasks (fewer processes on a 2-core machine; the protocol is the
 * same), heartbeats every 500 ms, a worker gone after 3 s, committer leases of 4 s, and task consumers whose
 * group session ends 6 s after their worker died (Kafka moves their partitions then).
 */
export function clusterWorkerProps(n: ClusterNames, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return {
    'group.id': n.group,
    'config.storage.topic': n.configTopic,
    'config.storage.replication.factor': '-1',
    'status.storage.topic': n.statusTopic,
    'status.storage.replication.factor': '-1',
    'status.storage.partitions': '3',
    'icefloe.redis.url': stackEndpoints().redisUrl,
    'heartbeat.interval.ms': '500',
    'session.timeout.ms': '3000',
    'icefloe.cluster.lease.ttl.ms': '4000',
    'icefloe.tasks.mode': 'in-process',
    'consumer.session.timeout.ms': '6000',
    'consumer.heartbeat.interval.ms': '1000',
    'task.shutdown.graceful.timeout.ms': '20000',
    ...extra,
  };
}

export function startClusterWorker(n: ClusterNames, options: { readonly worker?: Readonly<Record<string, string>>; readonly env?: Readonly<Record<string, string>>; readonly wrap?: readonly string[] } = {}): WorkerProcess {
  return startWorker({ mode: 'distributed', worker: clusterWorkerProps(n, options.worker), connectors: [], ...(options.env === undefined ? {} : { env: options.env }), ...(options.wrap === undefined ? {} : { wrap: options.wrap }) });
}

export async function http(method: string, url: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(url, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? null : JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

export interface StatusBody {
  readonly name: string;
  readonly connector: { readonly state: string; readonly worker_id: string; readonly trace?: string };
  readonly tasks: readonly { readonly id: number; readonly state: string; readonly worker_id: string; readonly trace?: string }[];
}

export async function connectorStatus(url: string, name: string): Promise<StatusBody | undefined> {
  const r = await http('GET', `${url}/connectors/${name}/status`).catch(() => undefined);
  return r?.status === 200 ? (r.json as StatusBody) : undefined;
}

/** Waits until `check` holds for the status every one of `urls` answers; returns the last statuses. */
export async function waitStatuses(urls: readonly string[], name: string, what: string, check: (s: StatusBody) => boolean, timeoutMs = 90_000): Promise<StatusBody[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const last = await Promise.all(urls.map((u) => connectorStatus(u, name)));
    if (last.every((s) => s !== undefined && check(s))) return last as StatusBody[];
    if (Date.now() > deadline) throw new Error(`no status of ${name} showed ${what} within ${timeoutMs} ms on every worker: ${JSON.stringify(last)}`);
    await sleep(250);
  }
}

/** Every task RUNNING on one of `workers` (ids), spread as evenly as placement spreads them. */
export function runningOn(workers: readonly string[], tasks: number): (s: StatusBody) => boolean {
  return (s) => {
    if (s.connector.state !== 'RUNNING' || s.tasks.length !== tasks) return false;
    if (!s.tasks.every((t) => t.state === 'RUNNING' && workers.includes(t.worker_id))) return false;
    const load = workers.map((w) => s.tasks.filter((t) => t.worker_id === w).length);
    return Math.max(...load) - Math.min(...load) <= 1;
  };
}

/** `host:port` of a worker's REST URL: its worker id. */
export function workerIdOf(url: string): string {
  return new URL(url).host;
}

/** Records of `table` committed by any of `workers` ('table committed' lines, summed over all of them). */
export function committedAcross(workers: readonly WorkerProcess[], table: string): number {
  return workers.reduce((n, w) => n + committedRecords(w, table), 0);
}

export async function waitCommittedAcross(workers: () => readonly WorkerProcess[], tables: readonly string[], total: number, timeoutMs = 240_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = tables.map((t) => committedAcross(workers(), t));
    if (counts.every((c) => c >= total)) return;
    if (Date.now() > deadline) throw new Error(`committed ${JSON.stringify(counts)} of ${total} per table within ${timeoutMs} ms`);
    await sleep(500);
  }
}

/** A connector name whose committer placement puts on `owner` among `workers` (a test that needs to know where it runs). */
export function nameCommittedBy(prefix: string, owner: string, workers: readonly string[], tasks: number): string {
  for (;;) {
    const name = unique(prefix);
    if (place([{ name, tasks, committer: true }], workers).committers.get(name) === owner) return name;
  }
}

/** FLUSHALL on the stack's Redis: everything the cluster keeps there is gone at once. */
export async function flushRedis(): Promise<void> {
  const redis = new Redis(stackEndpoints().redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    await redis.flushall();
  } finally {
    redis.disconnect();
  }
}
