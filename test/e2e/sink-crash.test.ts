/**
 * Crash safety of the whole worker (docs/architecture.md, "Exactly-once"), counted by Kafka coordinates
 * only: every record the generator's idempotent producer delivered — (topic, partition, offset), collected
 * from `onDelivered` — must be in the table exactly once, read back by PyIceberg from the
 * `_kafka_metadata_*` columns, and no data file may be added twice in the snapshot history
 * (test/helpers/exactly-once.ts). Never a payload field.
 *
 * 1. Each named crash point (src/core/crash-points.ts): a worker with its tasks in its own process
 *    (`icefloe.tasks.mode=in-process`, so the crash takes tasks and committer down at once, like a machine
 *    crash) is started with the point armed, records are produced while it runs, the process dies by
 *    SIGKILL at the point (its line proves the point was reached), and a restarted worker (same connector,
 *    same directory, nothing armed) finishes. Both catalog paths: the REST catalog on S3, and the embedded
 *    default (SQLite catalog + local warehouse, read by PyIceberg's SqlCatalog on the same file).
 *    `committer.between-tables` needs two tables per round: `iceberg.tables=a,b` without a route field
 *    sends every record to both.
 * 2. Ten kill -9s of the worker's process group (worker + task processes) during a 500,000-record run, each
 *    2–6 s (seeded PRNG) after the incarnation's tasks got their partitions (so every kill hits a working
 *    worker, not one still waiting out the dead members' sessions), each followed by a restart in the same
 *    directory; production is paced over about as long as the kills take. DuckDB counts the rows too.
 * 3. The fault proxy applies a catalog commit and answers 500 (apply-then-fail): the committer must find
 *    its commit by its commit id instead of resending, across a kill -9 and restart in between.
 *
 * Consumers use a 6 s session timeout so that a restart does not wait out the default 45 s for the dead
 * incarnation's group members. Names are unique per run (other suites share the stack), and nothing here
 * asserts on timing.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGenerate } from '../../tools/generate/index.ts';
import { refSnapshotId } from '../../src/commit/model.ts';
import { parseIdentifier } from '../../src/commit/port.ts';
import type { Catalog } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { SqlCatalog } from '../../src/commit/sql/catalog.ts';
import { SqliteDriver } from '../../src/commit/sql/sqlite.ts';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import type { CrashPoint } from '../../src/core/crash-points.ts';
import { LocalObjectStore } from '../../src/upload/local/store.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import { assertExactlyOnce, duckdbCount } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { prng } from '../helpers/prng.ts';
import type { ReaderArgs } from '../helpers/readers.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import type { StackEndpoints } from '../helpers/stack.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';
import type { WorkerOptions, WorkerProcess } from '../helpers/worker.ts';

const PARTITIONS = 6;
const EMBEDDED_CATALOG_NAME = 'iceberg'; // the connector's default iceberg.catalog

let E: StackEndpoints;
let admin: ConfluentKafkaAdmin;
const cleanup: (() => Promise<void>)[] = [];
const running = new Set<WorkerProcess>();

before(async () => {
  E = stackEndpoints();
  await requireReachable('Kafka', E.kafkaBootstrap);
  await requireReachable('Schema Registry', E.registryUrl);
  await requireReachable('S3', E.s3Endpoint);
  await requireReachable('Iceberg REST catalog', E.catalogUri);
  await requireReachable('Fault-injection proxy (catalog route)', E.proxyCatalogUri);
  await requireReachable('Fault-injection proxy (control)', E.proxyControlUrl);
  admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
});

after(async () => {
  for (const w of running) await w.kill();
  for (const c of cleanup.reverse()) await c().catch(() => undefined);
  await admin?.close();
});

// ---------------------------------------------------------------------------------------------------
// Where the tables live
// ---------------------------------------------------------------------------------------------------

interface Target {
  readonly kind: 'rest' | 'embedded';
  /** The connector's iceberg.catalog.* properties (none: the worker's embedded default). */
  readonly connectorProps: Readonly<Record<string, string>>;
  /** How PyIceberg reaches the tables (test/readers/read_table.py). */
  readonly reader: ReaderArgs['catalog'];
  /** A catalog client of our own, to watch progress while the worker runs. */
  open(): Catalog;
}

/** The stack's REST catalog on S3, optionally through another address (the fault proxy). */
function restTarget(uri: string = E.catalogUri): Target {
  return {
    kind: 'rest',
    connectorProps: {
      'iceberg.catalog': E.catalogName,
      'iceberg.catalog.type': 'rest',
      'iceberg.catalog.uri': uri,
      'iceberg.catalog.warehouse': E.catalogWarehouse,
      'iceberg.catalog.s3.endpoint': E.s3Endpoint,
      'iceberg.catalog.s3.path-style-access': 'true',
      'iceberg.catalog.s3.access-key-id': E.s3AccessKey,
      'iceberg.catalog.s3.secret-access-key': E.s3SecretKey,
      'iceberg.catalog.client.region': E.s3Region,
    },
    reader: { kind: 'rest' },
    open: () => new RestCatalog({ uri: E.catalogUri, name: E.catalogName, warehouse: E.catalogWarehouse }),
  };
}

/** The worker's embedded default in `dir` (its working directory): icefloe-data/catalog.db + icefloe-data/warehouse. */
function embeddedTarget(dir: string): Target {
  const db = join(dir, 'icefloe-data', 'catalog.db');
  const warehouse = `file://${join(dir, 'icefloe-data', 'warehouse')}`;
  return {
    kind: 'embedded',
    connectorProps: {},
    reader: { kind: 'sql', uri: `sqlite:///${db}`, name: EMBEDDED_CATALOG_NAME, warehouse },
    open: () => new SqlCatalog({ name: EMBEDDED_CATALOG_NAME, driver: new SqliteDriver({ path: db }), store: new LocalObjectStore(), warehouse, initTables: false }),
  };
}

/** The rows of the table's current snapshot (summary `total-records`); -1 while it cannot be loaded. */
async function totalRecords(catalog: Catalog, table: string): Promise<bigint> {
  try {
    const t = await catalog.loadTable(parseIdentifier(table));
    const id = refSnapshotId(t.metadata, 'main');
    const snapshot = t.metadata.snapshots.find((s) => s.snapshotId === id);
    return BigInt(snapshot?.summary['total-records'] ?? '0');
  } catch {
    return -1n;
  }
}

function alive(w: WorkerProcess): boolean {
  return w.child.exitCode === null && w.child.signalCode === null;
}

/** Waits until every table holds at least `expected` rows (more would be duplicates: the assertion says so). */
async function waitForRows(w: WorkerProcess, target: Target, tables: readonly string[], expected: number, timeoutMs: number): Promise<void> {
  if (target.kind === 'embedded') {
    const db = join(w.dir, 'icefloe-data', 'catalog.db');
    for (const end = Date.now() + timeoutMs; !existsSync(db); await sleep(500)) {
      if (Date.now() > end) throw new Error(`no embedded catalog at ${db} after ${timeoutMs} ms`);
    }
  }
  const catalog = target.open();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const totals = await Promise.all(tables.map((t) => totalRecords(catalog, t)));
      if (totals.every((n) => n >= BigInt(expected))) return;
      if (!alive(w)) throw new Error(`the worker exited while tables ${tables.join(', ')} held ${totals.join(', ')} of ${expected} rows; last lines:\n${w.lines.slice(-20).join('\n')}`);
      if (Date.now() > deadline) {
        throw new Error(`tables ${tables.join(', ')} hold ${totals.join(', ')} rows, expected ${expected}, after ${timeoutMs} ms; last lines:\n${w.lines.slice(-20).join('\n')}`);
      }
      await sleep(1000);
    }
  } finally {
    await catalog.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Topics, records, workers
// ---------------------------------------------------------------------------------------------------

/** A unique source topic with 6 partitions and a unique control topic, both deleted after the run. */
async function topics(prefix: string): Promise<{ topic: string; control: string }> {
  const topic = unique(`${prefix}-src`);
  const control = unique(`${prefix}-control`);
  await admin.ensureTopic({ name: topic, partitions: PARTITIONS, replicationFactor: 1 });
  cleanup.push(() => admin.deleteTopic(topic));
  cleanup.push(() => admin.deleteTopic(control));
  return { topic, control };
}

/** A unique namespace; the REST tables in it are dropped after the run. */
function namespace(prefix: string, tables: readonly string[], target: Target): { ns: string; names: string[] } {
  const ns = unique(prefix).replaceAll('-', '_');
  const names = tables.map((t) => `${ns}.${t}`);
  if (target.kind === 'rest') {
    cleanup.push(async () => {
      const c = restTarget().open();
      for (const n of names) await c.dropTable(parseIdentifier(n)).catch(() => undefined);
      await c.close();
    });
  }
  return { ns, names };
}

/**
 * Produces `count` Avro order events to the topic with the generator's idempotent producer and returns
 * where each one landed. Partitions: the key chooses, over all 6.
 */
async function produce(topic: string, count: number, seed: number, ratePerSec = 0): Promise<Coordinates[]> {
  const coords: Coordinates[] = [];
  const stats = await runGenerate({
    bootstrapServers: E.kafkaBootstrap,
    registryUrl: E.registryUrl,
    topic,
    partitions: PARTITIONS,
    format: 'avro',
    count,
    ratePerSec,
    seed,
    schemaVersion: 1,
    onDelivered: (delivered) => {
      for (const d of delivered) coords.push({ topic: d.topic, partition: d.partition, offset: d.offset });
    },
  });
  assert.equal(stats.records, count);
  assert.equal(coords.length, count);
  assert.equal(new Set(coords.map((c) => c.partition)).size, PARTITIONS, 'the records spread over every partition');
  return coords;
}

interface ConnectorSpec {
  readonly name: string;
  readonly topic: string;
  readonly control: string;
  readonly tables: readonly string[];
  readonly tasksMax: number;
  readonly intervalMs: number;
  readonly target: Target;
}

function connector(c: ConnectorSpec): WorkerOptions['connectors'][number] {
  return {
    name: c.name,
    config: {
      'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
      'tasks.max': String(c.tasksMax),
      'topics': c.topic,
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'value.converter': 'io.confluent.connect.avro.AvroConverter',
      'value.converter.schema.registry.url': E.registryUrl,
      // Without a route field every record goes to every table listed.
      'iceberg.tables': c.tables.join(','),
      'iceberg.tables.auto-create-enabled': 'true',
      // Several data files per table and cycle: more files for "no file added twice" to check.
      'iceberg.tables.default-partition-by': 'bucket(order_id, 4)',
      'iceberg.control.topic': c.control,
      'iceberg.control.commit.interval-ms': String(c.intervalMs),
      'icefloe.tables.kafka-metadata-columns': 'topic,partition,offset',
      // A restart must not wait out the default 45 s session of the killed incarnation's members.
      'consumer.override.session.timeout.ms': '6000',
      'consumer.override.heartbeat.interval.ms': '1000',
      ...c.target.connectorProps,
    },
  };
}

function start(options: WorkerOptions): WorkerProcess {
  const w = startWorker(options);
  running.add(w);
  void w.exited.then(() => running.delete(w));
  return w;
}

/** Rejects with `what` if `p` has not settled within `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what())), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The worker's log lines with `msg` across several incarnations. */
function logsOf(workers: readonly WorkerProcess[], msg: string): Record<string, unknown>[] {
  return workers.flatMap((w) => w.logs(msg));
}

/** What must never appear: a stopped table or a failed task (retries are allowed: see `retries`). */
function assertNoErrors(workers: readonly WorkerProcess[]): void {
  assert.deepEqual(logsOf(workers, 'table stopped: nothing is committed to it until an operator repairs it'), [], 'no table stopped');
  // A task process killed at its crash point (a signal) is the scenario; any other task failure is not.
  const failed = workers.flatMap((w) => taskFailures(w)).filter((l) => l['restarting'] === false || !/^SIG/.test(String(l['exit'] ?? '')));
  assert.deepEqual(failed, [], 'no task failed');
}

/** Retried trouble (a loaded machine may have some), for the diagnostics. */
function retries(workers: readonly WorkerProcess[]): string {
  const n = (msg: string): number => logsOf(workers, msg).length;
  return `retries: ${n('cycle abandoned; reading again from the committed offsets') + n('cycle abandoned at revocation')} abandoned cycles, ${n('committer round failed; retrying')} failed committer rounds, ${n('table commit failed; retrying next round')} failed table commits`;
}

/** SIGTERM once the worker is up (its handler is installed before it starts connectors); asserts a clean exit. */
async function stopCleanly(w: WorkerProcess, what: string): Promise<void> {
  await w.waitFor(/"msg":"connector started"/, 120_000);
  assert.equal(await w.stop(120_000), '0', `${what} stops cleanly`);
}

const seconds = (startedMs: number): string => `${((Date.now() - startedMs) / 1000).toFixed(1)} s`;

// ---------------------------------------------------------------------------------------------------
// 1. Named crash points
// ---------------------------------------------------------------------------------------------------

interface CrashCase {
  readonly point: CrashPoint;
  readonly catalog: 'rest' | 'embedded';
  readonly tables: readonly string[];
  readonly tasksMax: number;
  /** Crash the N-th time the point is reached (in one task, or in the committer). */
  readonly after: number;
}

const CRASH_CASES: readonly CrashCase[] = [
  { point: 'task.after-upload', catalog: 'embedded', tables: ['orders'], tasksMax: 2, after: 2 },
  { point: 'task.in-transaction', catalog: 'rest', tables: ['orders'], tasksMax: 2, after: 2 },
  { point: 'task.after-announce', catalog: 'embedded', tables: ['orders'], tasksMax: 1, after: 2 },
  { point: 'committer.after-catalog-commit', catalog: 'rest', tables: ['orders'], tasksMax: 2, after: 2 },
  { point: 'committer.between-tables', catalog: 'embedded', tables: ['orders_a', 'orders_b'], tasksMax: 2, after: 2 },
];

const CRASH_RECORDS = 24_000;
/** Spread over several 1 s cycles, so that the crash falls in the middle of the stream. */
const CRASH_RATE = 4_000;

for (const [i, c] of CRASH_CASES.entries()) {
  test(`crash at ${c.point} (${c.catalog === 'rest' ? 'REST catalog on S3' : 'embedded SQLite catalog'}, ${c.tables.length} table(s), tasks.max ${c.tasksMax}): the restarted worker lands every record exactly once`, { timeout: 300_000 }, async (t) => {
    const started = Date.now();
    const { topic, control } = await topics('crash');
    const dir = mkdtempSync(join(tmpdir(), 'icefloe-crash-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const target = c.catalog === 'rest' ? restTarget() : embeddedTarget(dir);
    const { names } = namespace('crash', c.tables, target);
    const spec = connector({ name: unique('crash'), topic, control, tables: names, tasksMax: c.tasksMax, intervalMs: 1000, target });
    const worker = { 'icefloe.tasks.mode': 'in-process' };

    const first = start({ worker, connectors: [spec], dir, env: { ICEFLOE_CRASH_POINT: c.point, ICEFLOE_CRASH_AFTER: String(c.after) } });
    await first.waitFor(/"msg":"partitions assigned"/, 120_000);
    const producing = produce(topic, CRASH_RECORDS, 100 + i, CRASH_RATE);
    producing.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile
    const how = await within(first.exited, 180_000, () => `the worker did not die at ${c.point} within 180 s; last lines:\n${first.lines.slice(-20).join('\n')}`);
    assert.equal(how, 'SIGKILL', 'the worker died by SIGKILL');
    const line = `icefloe: crash point ${c.point} reached (hit ${c.after}); killing the process`;
    // stderr may still be draining when the exit is reported.
    for (const end = Date.now() + 10_000; !first.lines.includes(line) && Date.now() < end; ) await sleep(100);
    assert.ok(first.lines.includes(line), `the crash point was reached: "${line}" in the worker's output; last lines:\n${first.lines.slice(-10).join('\n')}`);
    const beforeCrash = { cycles: first.logs('cycle committed').length, commits: first.logs('table committed').length };

    const coords = await producing;
    const second = start({ worker, connectors: [spec], dir });
    await waitForRows(second, target, names, CRASH_RECORDS, 240_000);
    await stopCleanly(second, 'the restarted worker');
    for (const table of names) await assertExactlyOnce(table, coords, { catalog: target.reader });
    assertNoErrors([first, second]);
    t.diagnostic(`${c.point}: crashed after ${beforeCrash.cycles} cycle(s) and ${beforeCrash.commits} table commit(s); restart + ${second.logs('table committed').length} commit(s); ${retries([first, second])}; ${seconds(started)}`);
  });
}

// ---------------------------------------------------------------------------------------------------
// 2. Ten random kill -9s during a 500k-record run
// ---------------------------------------------------------------------------------------------------

const SOAK_RECORDS = 500_000;
const KILLS = 10;
const SOAK_RATE = 5_000;

test(`${KILLS} random kill -9s of the worker and its task processes during a ${SOAK_RECORDS}-record run: exactly once`, { timeout: 600_000 }, async (t) => {
  const started = Date.now();
  const random = prng(20261130);
  const { topic, control } = await topics('kill9');
  const target = restTarget();
  const { names } = namespace('kill9', ['orders'], target);
  const table = names[0] as string;
  const spec = connector({ name: unique('kill9'), topic, control, tables: names, tasksMax: 2, intervalMs: 2000, target });
  const worker = { 'icefloe.tasks.mode': 'process' };

  // Paced over about as long as the ten kills take, so that every kill lands while records are flowing.
  const producing = produce(topic, SOAK_RECORDS, 7, SOAK_RATE);
  producing.catch(() => undefined); // awaited below
  const incarnations: WorkerProcess[] = [];
  let w = start({ worker, connectors: [spec] });
  incarnations.push(w);
  const killedAt: string[] = [];
  const watch = target.open();
  cleanup.push(() => watch.close());
  for (let k = 1; k <= KILLS; k++) {
    // Kill a working worker: after its tasks got partitions, at a random moment 2–6 s later.
    await w.waitFor(/"msg":"partitions assigned"/, 120_000);
    const waitMs = 2000 + Math.floor(random() * 4000);
    await sleep(waitMs);
    assert.ok(alive(w), `incarnation ${k} is still running before its kill; last lines:\n${w.lines.slice(-20).join('\n')}`);
    assert.equal(await w.kill(), 'SIGKILL');
    const rows = await totalRecords(watch, table);
    killedAt.push(`${waitMs} ms (${w.logs('cycle committed').length} cycles, ${w.logs('table committed').length} commits, table at ${rows})`);
    w = start({ worker, connectors: [spec], dir: w.dir });
    incarnations.push(w);
  }
  const coords = await producing;
  t.diagnostic(`produced ${coords.length} records; kills after assignment + ${killedAt.join(', ')}`);
  await waitForRows(w, target, [table], SOAK_RECORDS, 300_000);
  await stopCleanly(w, 'the last incarnation');
  const report = await assertExactlyOnce(table, coords);
  assert.equal(report.distinct, SOAK_RECORDS);
  assert.equal(await duckdbCount(table), SOAK_RECORDS, "DuckDB's count agrees");
  assertNoErrors(incarnations);
  t.diagnostic(`${report.snapshots} snapshots; ${retries(incarnations)}; ${seconds(started)}`);
});

// ---------------------------------------------------------------------------------------------------
// 3. Apply-then-fail: the catalog applied the commit, the committer got a 500
// ---------------------------------------------------------------------------------------------------

test('the catalog applies a commit and answers 500 (fault proxy), around a kill -9 and restart: found by commit id, never resent; exactly once', { timeout: 300_000 }, async (t) => {
  const started = Date.now();
  const proxy = new FaultProxy(E.proxyControlUrl);
  const { topic, control } = await topics('atf');
  const target = restTarget(E.proxyCatalogUri);
  const { ns, names } = namespace('atf', ['orders'], target);
  const table = names[0] as string;
  const commitPath = `^/v1/namespaces/${ns}/tables/orders$`;
  const spec = connector({ name: unique('atf'), topic, control, tables: names, tasksMax: 2, intervalMs: 1000, target });
  const worker = { 'icefloe.tasks.mode': 'in-process' };
  const armApplyThenFail = (times: number): Promise<string> => proxy.arm({ target: 'catalog', match: { method: 'POST', path: commitPath }, times, fault: { kind: 'apply-then-fail' } });
  const rules: string[] = [];
  cleanup.push(async () => {
    for (const r of rules) await proxy.remove(r).catch(() => undefined);
  });

  // First run: the first two commits of the table are applied by the catalog and answered with a 500.
  rules.push(await armApplyThenFail(2));
  const first = start({ worker, connectors: [spec] });
  await first.waitFor(/"msg":"partitions assigned"/, 120_000);
  const producing = produce(topic, 30_000, 31, 3_000);
  producing.catch(() => undefined); // awaited below
  for (const end = Date.now() + 180_000; ; await sleep(250)) {
    const spent = (await proxy.rule(rules[0] as string)).spent;
    if (spent && first.logs('table committed').length >= 2) break;
    assert.ok(alive(first), `the worker is running; last lines:\n${first.lines.slice(-20).join('\n')}`);
    assert.ok(Date.now() < end, `two commits through the faulted route within 180 s; last lines:\n${first.lines.slice(-20).join('\n')}`);
  }
  // Restart in between: kill -9 while the stream is still flowing, arm the fault again for the next incarnation.
  assert.equal(await first.kill(), 'SIGKILL');
  rules.push(await armApplyThenFail(1));
  const second = start({ worker, connectors: [spec], dir: first.dir });
  const coords = await producing;
  await waitForRows(second, target, [table], coords.length, 240_000);
  await stopCleanly(second, 'the restarted worker');

  const rulesAfter = await Promise.all(rules.map((r) => proxy.rule(r)));
  assert.deepEqual(rulesAfter.map((r) => r.applied), [2, 1], 'every armed apply-then-fail fault was applied');
  const posts = (await proxy.log('catalog')).filter((l) => l.method === 'POST' && new RegExp(commitPath).test(l.path));
  const faulted = posts.filter((p) => p.fault === 'apply-then-fail');
  assert.equal(faulted.length, 3);
  for (const p of faulted) assert.deepEqual({ forwarded: p.forwarded, upstream: p.upstreamStatus, client: p.clientStatus }, { forwarded: true, upstream: 200, client: 500 }, 'applied by the catalog, answered 500');

  // The committer resolved each 500 by finding its commit id: "committed" by reload, no error stop, and no
  // commit request was resent — every request that reached the catalog made exactly one snapshot.
  const committed = logsOf([first, second], 'table committed');
  for (const l of committed) assert.ok(l['outcome'] === 'committed' || l['outcome'] === 'already-applied', `outcome ${String(l['outcome'])}`);
  assert.equal(first.logs('table committed').filter((l) => l['resolvedBy'] === 'reload').length, 2, 'both faulted commits of the first run found by their commit id');
  assert.ok(second.logs('table committed').some((l) => l['resolvedBy'] === 'reload'), 'the faulted commit of the second run found by its commit id');
  const report = await assertExactlyOnce(table, coords);
  const landed = posts.filter((p) => p.upstreamStatus === 200).length;
  assert.equal(report.snapshots, landed, 'one snapshot per commit request the catalog accepted: nothing resent');
  assert.equal(await duckdbCount(table), coords.length, "DuckDB's count agrees");
  assertNoErrors([first, second]);
  t.diagnostic(`${posts.length} commit requests (${faulted.length} apply-then-fail), ${report.snapshots} snapshots; ${retries([first, second])}; ${seconds(started)}`);
});
