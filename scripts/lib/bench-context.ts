/**
 * What every phase of `npm run bench` shares: the options, the run id, the stack's endpoints, the generator,
 * and the register of everything the run makes (topics, consumer groups, temp directories, live workers),
 * which `cleanUp` removes at the end whatever happened. Cleanup talks to Kafka through the client library
 * directly, not through src/, so it works in every tree the benchmark is run in.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { RdKafka } from '@confluentinc/kafka-javascript';
import { stackEndpoints } from '../../test/helpers/stack.ts';
import type { StackEndpoints } from '../../test/helpers/stack.ts';
import type { WorkerProcess } from '../../test/helpers/worker.ts';
import type { BenchOptions } from './bench-options.ts';
import { loadGenerator } from './bench-generator.ts';
import type { GenerateStats, Generator, RunGenerateOptions } from './bench-generator.ts';
import { loadAverage } from './proc.ts';

export const PARTITIONS = 6;
export const SEED = 20260101;
/** Fixed event times: the in-memory copy of the ceiling phase is then byte for byte what was produced. */
export const START_TIME_MS = Date.UTC(2026, 0, 1);
export const MiB = 2 ** 20;

export interface Bench {
  readonly o: BenchOptions;
  readonly runId: string;
  readonly stack: StackEndpoints;
  readonly gen: Generator;
  readonly topics: Set<string>;
  readonly groups: Set<string>;
  readonly dirs: Set<string>;
  readonly live: Set<WorkerProcess>;
  /** More to remove at the end, run after the workers are killed and before the topics go (catalog tables, Redis keys). */
  readonly cleanups: (() => Promise<void>)[];
  cleaning: Promise<void> | undefined;
}

export async function createBench(o: BenchOptions): Promise<Bench> {
  return {
    o,
    runId: `bench-${randomUUID().slice(0, 8)}`,
    stack: stackEndpoints(),
    gen: await loadGenerator(),
    topics: new Set(),
    groups: new Set(),
    dirs: new Set(),
    live: new Set(),
    cleanups: [],
    cleaning: undefined,
  };
}

/** Produces `count` order events (Avro, schema v1, the bench's seed) to a topic the run registers. */
export function generate(b: Bench, topic: string, count: number, extra: Partial<RunGenerateOptions> = {}): Promise<GenerateStats> {
  b.topics.add(topic);
  return b.gen.runGenerate({
    bootstrapServers: b.stack.kafkaBootstrap,
    registryUrl: b.stack.registryUrl,
    topic,
    partitions: PARTITIONS,
    format: 'avro',
    count,
    ratePerSec: 0,
    seed: SEED,
    schemaVersion: 1,
    ...extra,
  });
}

/** Removes everything made so far; a second call (Ctrl-C during the run's own cleanup) waits for the first. */
export function cleanUp(b: Bench): Promise<void> {
  b.cleaning ??= removeAll(b);
  return b.cleaning;
}

function adminCall(what: string, call: (cb: (err: RdKafka.LibrdKafkaError | null | undefined) => void) => void): Promise<void> {
  return new Promise((res) => call((err) => (err ? (console.error(`  cleanup: ${what}: ${err.message}`), res()) : res())));
}

/** Error codes of a group that does not exist (nothing to remove) and of one that still has members. */
const GROUP_ID_NOT_FOUND = 69;
const NON_EMPTY_GROUP = 68;

function deleteGroupsOnce(admin: RdKafka.IAdminClient, groups: string[]): Promise<{ groupId: string; errorCode: number | undefined; message: string | undefined }[]> {
  return new Promise((res) =>
    admin.deleteGroups(groups, { timeout: 10_000 }, (err, results) => {
      if (err) console.error(`  cleanup: consumer groups: ${err.message}`);
      res((results ?? []).map((r) => ({ groupId: r.groupId, errorCode: r.errorCode, message: r.error?.message })));
    }),
  );
}

/**
 * Deletes consumer groups. A group that still has a member is tried again for up to a minute: a consumer
 * of a process that exited without leaving its group (the Java Iceberg sink's coordinator) stays a member
 * until its session times out (45 s by default).
 */
async function deleteGroups(admin: RdKafka.IAdminClient, groups: string[]): Promise<void> {
  let left = groups;
  const until = Date.now() + 60_000;
  for (;;) {
    const failed = (await deleteGroupsOnce(admin, left)).filter((r) => r.errorCode !== undefined && r.errorCode !== 0 && r.errorCode !== GROUP_ID_NOT_FOUND);
    const busy = failed.filter((r) => r.errorCode === NON_EMPTY_GROUP);
    for (const r of failed) if (r.errorCode !== NON_EMPTY_GROUP || Date.now() > until) console.error(`  cleanup: consumer group ${r.groupId}: ${r.message ?? r.errorCode}`);
    if (busy.length === 0 || Date.now() > until) return;
    left = busy.map((r) => r.groupId);
    await sleep(5000);
  }
}

async function removeAll(b: Bench): Promise<void> {
  for (const w of b.live) await w.kill().catch(() => undefined);
  b.live.clear();
  for (const c of b.cleanups) await c().catch((e: unknown) => console.error(`  cleanup: ${e instanceof Error ? e.message : String(e)}`));
  if (b.topics.size > 0 || b.groups.size > 0) {
    const admin = RdKafka.AdminClient.create({ 'bootstrap.servers': b.stack.kafkaBootstrap });
    try {
      for (const t of b.topics) await adminCall(`topic ${t}`, (cb) => admin.deleteTopic(t, 10_000, cb));
      if (b.groups.size > 0) await deleteGroups(admin, [...b.groups]);
    } finally {
      admin.disconnect();
    }
  }
  // Registry subjects (TopicNameStrategy): soft delete, then permanent.
  for (const t of b.topics) {
    const url = `${b.stack.registryUrl}/subjects/${encodeURIComponent(`${t}-value`)}`;
    await fetch(url, { method: 'DELETE' }).catch(() => undefined);
    await fetch(`${url}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
  }
  if (!b.o.keep) for (const d of b.dirs) rmSync(d, { recursive: true, force: true });
  else if (b.dirs.size > 0) console.log(`  kept: ${[...b.dirs].join(' ')}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '–');
export const int = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–');
export const mib = (bytes: number): string => `${int(bytes / MiB)} MiB`;
export const load = (): string => loadAverage().map((x) => x.toFixed(2)).join(' ');

/** Ctrl-C cleans up what the run made before exiting (a second Ctrl-C leaves it behind). */
export function cleanUpOnInterrupt(bench: Bench): void {
  let interrupted = false;
  process.on('SIGINT', () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.error('\ninterrupted: cleaning up (Ctrl-C again to leave things behind)');
    void cleanUp(bench).finally(() => process.exit(130));
  });
}
