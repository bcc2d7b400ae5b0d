/**
 * Group fencing and cooperative rebalances with real worker processes (docs/architecture.md,
 * "Exactly-once": the revocation and abort rules, KIP-447 fencing by group generation).
 *
 * Several standalone workers (`icefloe standalone`, tasks in-process, each with its own in-process
 * committer) run one connector over a 6-partition topic while order events are produced at a steady
 * rate. Each worker gets its own `icefloe.tasks.id-offset`, so the tasks have distinct transactional ids
 * (`<connector>-0`, `-1`, `-2`) and only the consumer group can tell a zombie apart: that is the fencing
 * under test, not the transactional.id fencing of a restart.
 *
 * 1. Zombie: worker A is frozen (SIGSTOP) while its cycle holds records, past its 6 s session timeout;
 *    B takes A's partitions, re-reads them from the committed offsets and commits. A is thawed and runs
 *    on with its stale cycle: its consumer must learn it lost its partitions (a lost revoke abandons the
 *    cycle) or its transaction must be refused by the broker (aborted, then re-read) — never committed.
 * 2. Cooperative rebalance: A and B run, C joins mid-stream; A and B give up partitions (revoked, not
 *    lost) while their cycles hold records, and complete those cycles in the revoke callback
 *    (`why: revoke`, records included) instead of abandoning them.
 *
 * After all workers stopped gracefully, every produced record (topic, partition, offset) is in the table
 * exactly once (PyIceberg, with the file history) and DuckDB counts the same rows.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { runGenerate } from '../../tools/generate/index.ts';
import { parseIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import { assertExactlyOnce, duckdbCount } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const PARTITIONS = 6;
/** The consumers' group session timeout; a frozen worker must stay frozen longer than this. */
const SESSION_TIMEOUT_MS = 6000;
const COMMIT_INTERVAL_MS = 3000;

// ---------------------------------------------------------------------------------------------------
// Setup and cleanup
// ---------------------------------------------------------------------------------------------------

interface Scenario {
  readonly name: string;
  readonly topic: string;
  readonly control: string;
  /** `<namespace>.orders` */
  readonly table: string;
  readonly workers: WorkerProcess[];
  readonly produced: Coordinates[];
}

/** Unique names; after the test: workers killed (thawed first), topics deleted, table dropped. */
async function scenario(t: TestContext, prefix: string): Promise<Scenario> {
  const e = stackEndpoints();
  await requireReachable('Schema registry', e.registryUrl);
  await requireReachable('S3 (moto)', e.s3Endpoint);
  await requireReachable('Iceberg REST catalog', e.catalogUri);
  const settings = await kafkaSettings();
  const s: Scenario = {
    name: unique(prefix),
    topic: unique(`${prefix}-src`),
    control: unique(`${prefix}-control`),
    table: `e2e_${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}.orders`,
    workers: [],
    produced: [],
  };
  const admin = await ConfluentKafkaAdmin.connect({ settings });
  t.after(async () => {
    for (const w of s.workers) {
      if (w.child.exitCode === null && w.child.signalCode === null) {
        w.thaw();
        await w.kill();
      }
    }
    for (const topic of [s.topic, s.control]) await admin.deleteTopic(topic).catch(() => undefined);
    await admin.close();
    const catalog = new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse });
    await catalog.dropTable(parseIdentifier(s.table)).catch(() => undefined);
    await catalog.close();
  });
  await admin.ensureTopic({ name: s.topic, partitions: PARTITIONS, replicationFactor: 1 });
  return s;
}

/** The connector every worker of a scenario runs: REST catalog on S3, Avro through the registry, 3 s cycles. */
function connector(s: Scenario): { name: string; config: Record<string, string> } {
  const e = stackEndpoints();
  return {
    name: s.name,
    config: {
      'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
      'tasks.max': '1',
      topics: s.topic,
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'value.converter': 'io.confluent.connect.avro.AvroConverter',
      'value.converter.schema.registry.url': e.registryUrl,
      'iceberg.tables': s.table,
      'iceberg.tables.auto-create-enabled': 'true',
      'iceberg.control.topic': s.control,
      'iceberg.control.commit.interval-ms': String(COMMIT_INTERVAL_MS),
      'icefloe.tables.kafka-metadata-columns': 'topic,partition,offset',
      'iceberg.catalog': e.catalogName,
      'iceberg.catalog.type': 'rest',
      'iceberg.catalog.uri': e.catalogUri,
      'iceberg.catalog.warehouse': e.catalogWarehouse,
      'iceberg.catalog.s3.endpoint': e.s3Endpoint,
      'iceberg.catalog.s3.path-style-access': 'true',
      'iceberg.catalog.s3.access-key-id': e.s3AccessKey,
      'iceberg.catalog.s3.secret-access-key': e.s3SecretKey,
      'iceberg.catalog.client.region': e.s3Region,
    },
  };
}

/**
 * Starts worker number `index` of the scenario: tasks in-process (one process per worker keeps this
 * 2-core machine usable), task ids from `index` on, a short session timeout (worker `consumer.*` keys
 * reach the task's consumer).
 */
function addWorker(s: Scenario, index: number): WorkerProcess {
  const w = startWorker({
    worker: {
      'icefloe.tasks.mode': 'in-process',
      'icefloe.catalog': 'none',
      'icefloe.tasks.id-offset': String(index),
      'consumer.session.timeout.ms': String(SESSION_TIMEOUT_MS),
      'consumer.heartbeat.interval.ms': '500',
    },
    connectors: [connector(s)],
  });
  s.workers.push(w);
  return w;
}

/** Produces `count` order events at `ratePerSec` (0: at once), adding their coordinates to `s.produced`. */
async function produce(s: Scenario, count: number, ratePerSec: number, seed: number): Promise<void> {
  const e = stackEndpoints();
  const stats = await runGenerate({
    bootstrapServers: e.kafkaBootstrap,
    registryUrl: e.registryUrl,
    topic: s.topic,
    partitions: PARTITIONS,
    // Round robin over every partition: each worker's share always has data in flight.
    onlyPartitions: Array.from({ length: PARTITIONS }, (_, i) => i),
    format: 'avro',
    count,
    ratePerSec,
    seed,
    schemaVersion: 1,
    onDelivered: (delivered) => {
      for (const d of delivered) s.produced.push({ topic: d.topic, partition: d.partition, offset: d.offset });
    },
  });
  assert.equal(stats.records, count, 'every generated record was delivered');
}

// ---------------------------------------------------------------------------------------------------
// Reading the workers' logs
// ---------------------------------------------------------------------------------------------------

type LogLine = Record<string, unknown> & { readonly msg: string; readonly index: number };

/** The worker's JSON log lines from line `from` on, with their line index. */
function events(w: WorkerProcess, from = 0): LogLine[] {
  const out: LogLine[] = [];
  for (let i = from; i < w.lines.length; i++) {
    const l = w.lines[i] as string;
    if (!l.startsWith('{')) continue;
    try {
      const j = JSON.parse(l) as Record<string, unknown>;
      if (typeof j['msg'] === 'string') out.push({ ...j, msg: j['msg'], index: i });
    } catch {
      // not a log line
    }
  }
  return out;
}

/** The partitions the worker's task holds now, by its 'partitions assigned' / 'partitions revoked' lines. */
function owned(w: WorkerProcess): Set<string> {
  const held = new Set<string>();
  for (const ev of events(w)) {
    const ps = (ev['partitions'] as string[] | undefined) ?? [];
    if (ev.msg === 'partitions assigned') for (const p of ps) held.add(p);
    else if (ev.msg === 'partitions revoked') for (const p of ps) held.delete(p);
  }
  return held;
}

/**
 * Records committed to the table by the workers' committers ('table committed' lines), counted once per
 * snapshot: two committers that plan the same announcements compute the same commit id, and the one that
 * finds the other's snapshot in the table logs it as its own outcome too ('already-applied', or
 * 'committed' resolved by reload).
 */
function committedRecords(ws: readonly WorkerProcess[], table: string): number {
  const bySnapshot = new Map<string, number>();
  for (const w of ws) for (const l of w.logs('table committed')) if (l['table'] === table) bySnapshot.set(String(l['snapshotId']), Number(l['records']));
  return [...bySnapshot.values()].reduce((n, r) => n + r, 0);
}

/** Fails fast (with the line) when a worker's task failed, so a wait does not run into its deadline. */
function noTaskFailed(ws: readonly WorkerProcess[]): void {
  for (const w of ws) {
    const failed = taskFailures(w);
    if (failed.length > 0) throw new Error(`worker ${w.child.pid}: a task failed: ${JSON.stringify(failed[0])}`);
  }
}

/** Polls `check` (every 250 ms) until it returns true; generous deadline, the machine is shared. */
async function until(what: string, check: () => boolean, ws: readonly WorkerProcess[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    for (const w of ws) {
      if (w.child.exitCode !== null || w.child.signalCode !== null) {
        throw new Error(`waiting for ${what}: worker ${w.child.pid} exited; last lines:\n${w.lines.slice(-15).join('\n')}`);
      }
    }
    if (Date.now() > deadline) {
      throw new Error(`no ${what} after ${timeoutMs} ms; last lines:\n${ws.map((w) => `[${w.child.pid}]\n${w.lines.slice(-10).join('\n')}`).join('\n')}`);
    }
    await sleep(250);
  }
}

/** Every worker holds partitions and together they hold all of them (the group is settled). */
async function settled(ws: readonly WorkerProcess[]): Promise<void> {
  await until(
    `a settled assignment over ${ws.length} workers`,
    () => {
      noTaskFailed(ws);
      const sets = ws.map(owned);
      return sets.every((x) => x.size > 0) && sets.reduce((n, x) => n + x.size, 0) === PARTITIONS;
    },
    ws,
  );
}

/** Waits until the committers together committed every produced record, then stops the workers gracefully. */
async function drainAndStop(s: Scenario, ws: readonly WorkerProcess[]): Promise<void> {
  await until(`${s.produced.length} records committed to ${s.table}`, () => committedRecords(ws, s.table) >= s.produced.length, ws, 300_000);
  const exits = await Promise.all(ws.map((w) => w.stop(120_000)));
  assert.deepEqual(exits, ws.map(() => '0'), `graceful exits; last lines:\n${ws.map((w) => w.lines.slice(-8).join('\n')).join('\n')}`);
}

async function assertTable(t: TestContext, s: Scenario): Promise<void> {
  const report = await assertExactlyOnce(s.table, s.produced);
  assert.equal(await duckdbCount(s.table), s.produced.length, 'DuckDB counts every record once');
  t.diagnostic(`${s.table}: ${report.rows} rows, ${report.snapshots} snapshots`);
}

// ---------------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------------

test('a worker frozen past its session timeout cannot commit its stale cycle; every record lands once', { timeout: 480_000 }, async (t) => {
  const s = await scenario(t, 'fence');
  await produce(s, 1200, 0, 101); // the backlog: the topic, the schema, and work for the first cycles
  const a = addWorker(s, 0);
  const b = addWorker(s, 1);
  await settled([a, b]);

  // A steady stream for the rest of the test (about 35 s): every cycle of every task holds records.
  const streaming = produce(s, 10_500, 300, 102);
  streaming.catch(() => undefined); // awaited below

  // Freeze A one second into a fresh cycle: it holds records it has not announced.
  const aCycles = a.logs('cycle committed').length;
  await until('a cycle of A', () => a.logs('cycle committed').length > aCycles, [a, b]);
  await sleep(1000);
  const aHeld = owned(a);
  const bLinesAtFreeze = b.lines.length;
  a.freeze();
  const frozenAt = Date.now();

  // B's consumer gets A's partitions once the broker has expired A's session, re-reads them and commits.
  await until('B holding every partition', () => owned(b).size === PARTITIONS, [b]);
  const takeover = events(b, bLinesAtFreeze).find((l) => l.msg === 'partitions assigned' && (l['partitions'] as string[]).some((p) => aHeld.has(p)));
  assert.ok(takeover !== undefined, 'B was assigned A\'s partitions');
  await until('a cycle of B over A\'s partitions', () => events(b, takeover.index).some((l) => l.msg === 'cycle committed' && Number(l['records']) > 0), [b]);
  // (No bound on how long that took: A's last heartbeat preceded the freeze, and the machine is shared.)
  const frozenMs = Date.now() - frozenAt;

  // Thaw A: its cycle is long due; it must find out it is a zombie before (or when) it tries to commit.
  const aLinesAtThaw = a.lines.length;
  a.thaw();
  const fenced = (l: LogLine): boolean =>
    (l.msg === 'partitions revoked' && l['lost'] === true) ||
    l.msg === 'cycle abandoned; reading again from the committed offsets' ||
    l.msg === 'cycle abandoned at revocation' ||
    (/^task \S+ failed/.test(l.msg) && /fenc|generation|member|abort/i.test(String(l['error'])));
  // Not failing fast on A's exit: A whose task was fenced for good exits 1 by itself (all its tasks FAILED).
  await until('A noticing it lost its partitions', () => events(a, aLinesAtThaw).some(fenced), [b], 60_000);
  const afterThaw = events(a, aLinesAtThaw);
  const evidence = afterThaw.find(fenced) as LogLine;
  // No cycle of A committed between the thaw and that moment: it would have announced its stale files.
  const staleCommit = afterThaw.find((l) => l.msg === 'cycle committed' && l.index < evidence.index);
  assert.equal(staleCommit, undefined, `A committed a cycle after the thaw before noticing it was fenced: ${JSON.stringify(staleCommit)}`);
  if (evidence.msg === 'partitions revoked') assert.deepEqual(new Set(evidence['partitions'] as string[]), aHeld, 'A lost the partitions it held when frozen');
  t.diagnostic(`frozen ${frozenMs} ms; A after the thaw: ${JSON.stringify({ msg: evidence.msg, lost: evidence['lost'], error: evidence['error'], partitions: evidence['partitions'] })}`);

  await streaming;
  // Normally A rejoins and the group rebalances again; had A's task failed instead, B holds everything
  // (and A, its only task FAILED for good, exits 1 by itself). Either way the committers must apply
  // every record once.
  const aFailed = taskFailures(a, undefined, 'for-good');
  if (aFailed.length === 0) await drainAndStop(s, [a, b]);
  else {
    assert.equal(await a.exited, '1', 'A, every task FAILED, exits 1 by itself');
    await until(`${s.produced.length} records committed to ${s.table}`, () => committedRecords([a, b], s.table) >= s.produced.length, [b], 300_000);
    assert.equal(await b.stop(120_000), '0');
  }
  t.diagnostic(`A's task ${aFailed.length > 0 ? `failed: ${String(aFailed[0]?.['error'])}` : 'recovered and rejoined'}; records committed by A's committer ${committedRecords([a], s.table)}, by B's ${committedRecords([b], s.table)}`);
  await assertTable(t, s);
});

test('a third worker joining mid-stream: revoked partitions finish their cycle first; every record lands once', { timeout: 480_000 }, async (t) => {
  const s = await scenario(t, 'coop');
  await produce(s, 1200, 0, 201);
  const a = addWorker(s, 0);
  const b = addWorker(s, 1);
  await settled([a, b]);

  const streaming = produce(s, 9000, 300, 202); // about 30 s
  streaming.catch(() => undefined); // awaited below

  // Let A and B run a cycle or two on the stream, then add C while their cycles hold records.
  const cycles = (): number => a.logs('cycle committed').length + b.logs('cycle committed').length;
  const before = cycles();
  await until('two cycles on the stream', () => cycles() >= before + 2, [a, b]);
  await sleep(1000);
  const marks = [a.lines.length, b.lines.length];
  const c = addWorker(s, 2);
  await settled([a, b, c]);
  noTaskFailed([a, b, c]);

  // A cooperative rebalance: C's partitions came from A and B, revoked (never lost) while both were
  // running. A revoke completes the cycle in the callback, revoked partitions included, so the first cycle
  // line after it is that cycle (why=revoke), never an abandoned one. A cycle the revoke finds empty
  // commits and logs nothing (the revoke landed in the poll right after a timed cycle, a few percent of
  // the time), so "with records" is asked of at least one of the two hand-overs, not of each.
  const handovers: { who: string; partitions: unknown; records: number }[] = [];
  for (const [i, w] of [a, b].entries()) {
    const who = 'AB'[i] as string;
    const after = events(w, marks[i]);
    const revoke = after.find((l) => l.msg === 'partitions revoked' && (l['partitions'] as string[]).length > 0);
    if (revoke === undefined) continue;
    assert.equal(revoke['lost'], false, `worker ${who}: a cooperative revoke, not a lost assignment`);
    const completed = after.find((l) => l.index > revoke.index && (l.msg === 'cycle committed' || l.msg.startsWith('cycle abandoned')));
    assert.ok(completed !== undefined, `worker ${who} committed a cycle after the revoke`);
    assert.equal(completed.msg, 'cycle committed', `worker ${who}: ${JSON.stringify(completed)}`);
    const records = completed['why'] === 'revoke' ? Number(completed['records']) : 0;
    handovers.push({ who, partitions: revoke['partitions'], records });
    t.diagnostic(`worker ${who}: revoked ${JSON.stringify(revoke['partitions'])}; next cycle: why=${String(completed['why'])}, ${String(completed['records'])} records`);
  }
  assert.ok(handovers.length > 0, 'A or B handed partitions over to C');
  assert.ok(handovers.some((h) => h.records > 0), `a revoke completed a cycle holding records: ${JSON.stringify(handovers)}`);

  await streaming;
  await drainAndStop(s, [a, b, c]);
  noTaskFailed([a, b, c]);
  for (const w of [a, b, c]) assert.equal(w.logs('cycle abandoned at revocation').length, 0, 'no revocation abandoned its cycle');
  await assertTable(t, s);
});
