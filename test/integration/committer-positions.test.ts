/**
 * Issue 9, points 2, 3, 4 (committer half) and 6 on the real services: Kafka (control topic, the
 * connector-position group), the REST catalog (directly and through the fault proxy), S3. A committer
 * runs in this process against a control topic of its own; announcements are produced into it
 * transactionally, as tasks do, for data files the real writer put on S3, whose rows carry the Kafka
 * coordinates they stand for. Every check counts rows by those coordinates (PyIceberg, DuckDB).
 *
 * - idle table + retention: not stopped (C says every table applied through); a fresh table whose
 *   announcements retention deleted: stopped as control-records-lost, never skipped silently;
 * - rollback under a live committer → positions-rolled-back; `icefloe positions --reapply` (the CLI, as a
 *   process) → re-applied once; rollback found by a restarted committer → stopped; `--adopt` → kept;
 * - a crafted duplicate announcement (a zombie's) is passed, a partial overlap stops the table;
 * - one table's commit refused by the catalog (400 through the fault proxy): the other table commits.
 */
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NO_CRASH_POINTS } from '../../src/core/crash-points.ts';
import { RetriableError } from '../../src/core/errors.ts';
import type { Logger } from '../../src/core/log.ts';
import { parseConnectorConfig } from '../../src/config/connector-config.ts';
import type { ConnectorConfig } from '../../src/config/connector-config.ts';
import { ConfluentControlTopicReader, ConfluentKafkaAdmin, ConfluentTransactionalProducer } from '../../src/consume/confluent/index.ts';
import { RdKafka } from '../../src/consume/confluent/internal.ts';
import type { ClientSettings } from '../../src/consume/confluent/index.ts';
import { parseIdentifier } from '../../src/commit/port.ts';
import type { Catalog } from '../../src/commit/port.ts';
import { ConnectorCommitter } from '../../src/coordinate/committer.ts';
import { controlRecordKey, encodeAnnouncement } from '../../src/coordinate/events.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import { assertExactlyOnce, duckdbCount, exactlyOnceReport } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, unique } from '../helpers/kafka.ts';
import { produceJson, restCatalogKeys, uniqueIdent } from '../helpers/sink-e2e.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import { harness, writeRows } from '../helpers/tables.ts';
import type { Harness } from '../helpers/tables.ts';

const SOURCE = 'orders-src';
/** More than the highest source offset any test announces. */
const SOURCE_RECORDS = 64n;
const SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: '_kafka_metadata_topic', required: false, type: { kind: 'string' } },
    { id: 2, name: '_kafka_metadata_partition', required: false, type: { kind: 'int' } },
    { id: 3, name: '_kafka_metadata_offset', required: false, type: { kind: 'long' } },
  ],
};
const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;

interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

function memoryLog(lines: LogLine[]): Logger {
  const at = (level: string) => (msg: string, fields: Readonly<Record<string, unknown>> = {}): void => void lines.push({ level, msg, fields });
  const self: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => self };
  return self;
}

interface Ctx {
  readonly h: Harness;
  readonly settings: ClientSettings;
  readonly ns: string;
  readonly controlTopic: string;
  readonly connector: ConnectorConfig;
  readonly connectorFile: { name: string; config: Record<string, string> };
  readonly admin: ConfluentKafkaAdmin;
  readonly lines: LogLine[];
  readonly producers: Map<number, ConfluentTransactionalProducer>;
  readonly closers: (() => Promise<void>)[];
}

async function setup(t: TestContext, tables: readonly string[]): Promise<Ctx> {
  const e = stackEndpoints();
  await requireReachable('Kafka', e.kafkaBootstrap);
  const h = await harness(t);
  const settings = await kafkaSettings();
  const ns = uniqueIdent('it_pos');
  const controlTopic = unique('control-pos');
  const admin = await ConfluentKafkaAdmin.connect({ settings });
  await admin.ensureTopic({ name: controlTopic, partitions: 1, replicationFactor: 1, configs: { 'cleanup.policy': 'delete' } });
  // The source topic's log reaches every offset the tests announce: the committer passes an announcement the
  // table holds already only while the live log vouches for the applied offsets (review N1).
  await admin.ensureTopic({ name: SOURCE, partitions: 1, replicationFactor: 1 });
  const [mark] = await admin.watermarks(SOURCE);
  if ((mark?.high ?? 0n) < SOURCE_RECORDS) await produceJson(SOURCE, 1, Array.from({ length: Number(SOURCE_RECORDS) }, (_, i) => ({ partition: 0, value: { id: i } })));
  const catalog = h.rest();
  await catalog.createNamespace([ns]);
  for (const name of tables) await catalog.createTable({ namespace: [ns], name }, { schema: SCHEMA });
  const name = uniqueIdent('pos');
  const connectorFile = {
    name,
    config: {
      'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
      topics: SOURCE,
      'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
      'value.converter.schemas.enable': 'false',
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'iceberg.tables': tables.map((x) => `${ns}.${x}`).join(','),
      'iceberg.control.topic': controlTopic,
      ...restCatalogKeys(),
    },
  };
  const ctx: Ctx = {
    h,
    settings,
    ns,
    controlTopic,
    connector: parseConnectorConfig({ name, ...connectorFile.config }),
    connectorFile,
    admin,
    lines: [],
    producers: new Map(),
    closers: [],
  };
  t.after(async () => {
    for (const c of ctx.closers.reverse()) await c().catch(() => undefined);
    for (const p of ctx.producers.values()) await p.close().catch(() => undefined);
    for (const x of tables) await catalog.dropTable({ namespace: [ns], name: x }).catch(() => undefined);
    await admin.deleteTopic(controlTopic).catch(() => undefined);
    await admin.close();
  });
  return ctx;
}

async function committer(ctx: Ctx, catalog: Catalog = ctx.h.rest()): Promise<ConnectorCommitter> {
  const reader = await ConfluentControlTopicReader.connect({ settings: ctx.settings });
  const admin = await ConfluentKafkaAdmin.connect({ settings: ctx.settings });
  ctx.closers.push(() => reader.close(), () => admin.close());
  return new ConnectorCommitter({ connector: ctx.connector, reader, admin, catalog, store: ctx.h.store, crash: NO_CRASH_POINTS, log: memoryLog(ctx.lines) });
}

/**
 * Writes a data file whose rows are the source records `first..last` of SOURCE[partition] and announces it
 * in one committed transaction of task `taskId`, as a task's cycle does. Returns the coordinates.
 */
async function announce(ctx: Ctx, table: string, first: bigint, last: bigint, taskId = 0, partition = 0, options: { readonly deleteFiles?: boolean } = {}): Promise<Coordinates[]> {
  const id = parseIdentifier(`${ctx.ns}.${table}`);
  const loaded = await ctx.h.rest().loadTable(id);
  const coords: Coordinates[] = [];
  for (let o = first; o <= last; o++) coords.push({ topic: SOURCE, partition, offset: o });
  const files = await writeRows(ctx.h.store, loaded, coords.map((c) => ({ _kafka_metadata_topic: c.topic, _kafka_metadata_partition: c.partition, _kafka_metadata_offset: c.offset })));
  // An announcement that cannot be applied (its files are gone): the table stops with file-missing.
  if (options.deleteFiles === true) for (const f of files) await ctx.h.store.delete(f.filePath);
  const values = encodeAnnouncement(
    {
      connector: ctx.connector.name,
      taskId,
      cycleId: `cycle-${first}-${last}-${Math.random().toString(36).slice(2, 8)}`,
      table: { namespace: id.namespace, name: id.name },
      tableUuid: loaded.metadata.tableUuid,
      schemaId: loaded.metadata.currentSchemaId,
      specId: loaded.metadata.defaultSpecId,
      sourceSpans: [{ topic: SOURCE, partition, firstOffset: first, lastOffset: last }],
      files,
    },
    900_000,
  );
  let producer = ctx.producers.get(taskId);
  if (producer === undefined) {
    producer = await ConfluentTransactionalProducer.connect({ settings: ctx.settings, transactionalId: `${ctx.connector.name}-${taskId}` });
    await producer.initTransactions();
    ctx.producers.set(taskId, producer);
  }
  await producer.beginTransaction();
  await producer.send(values.map((value) => ({ topic: ctx.controlTopic, key: controlRecordKey(ctx.connector.name, taskId), value })));
  await producer.commitTransaction();
  // commitTransaction returns once the coordinator decided; the markers reach the partition a moment later,
  // and only then does the last stable offset (what a committer reads up to) pass the announcement.
  for (let i = 0; ; i++) {
    const [m] = await ctx.admin.watermarks(ctx.controlTopic);
    if (m !== undefined && m.lastStable === m.high) break;
    if (i > 100) throw new Error('the control topic\'s last stable offset did not reach its end');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return coords;
}

/** Retention passing: every record of the control topic below its high watermark is deleted. */
async function deleteControlRecords(ctx: Ctx): Promise<bigint> {
  const [marks] = await ctx.admin.watermarks(ctx.controlTopic);
  assert.ok(marks !== undefined);
  const admin = RdKafka.AdminClient.create({ ...ctx.settings });
  try {
    await new Promise<void>((resolve, reject) =>
      admin.deleteRecords([{ topic: ctx.controlTopic, partition: 0, offset: Number(marks.high) }], { timeout: 15_000, operationTimeout: 15_000 }, (err) => (err ? reject(err) : resolve())),
    );
  } finally {
    admin.disconnect();
  }
  const [after] = await ctx.admin.watermarks(ctx.controlTopic);
  assert.equal(after?.low, marks.high, 'the log now starts at its end');
  return marks.high;
}

function statusOf(c: ConnectorCommitter, ctx: Ctx, table: string): ReturnType<ConnectorCommitter['tableStatus']>[number] | undefined {
  return c.tableStatus().find((s) => s.table === `${ctx.ns}.${table}`);
}

async function rollBackToFirstSnapshot(ctx: Ctx, table: string): Promise<bigint> {
  const catalog = ctx.h.rest();
  const id = parseIdentifier(`${ctx.ns}.${table}`);
  const md = (await catalog.loadTable(id)).metadata;
  const first = md.snapshots[0]?.snapshotId;
  assert.ok(first !== undefined && md.snapshots.length >= 2);
  await catalog.commitTable(id, [], [{ action: 'set-snapshot-ref', refName: 'main', ref: { snapshotId: first, type: 'branch' } }]);
  return first;
}

/** `icefloe positions` as an operator runs it: a process, with the worker and connector files. */
function positionsCli(ctx: Ctx, table: string, flag: '--reapply' | '--adopt'): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-positions-'));
  writeFileSync(join(dir, 'worker.properties'), `bootstrap.servers=${stackEndpoints().kafkaBootstrap}\n`);
  writeFileSync(join(dir, 'connector.json'), JSON.stringify(ctx.connectorFile));
  const run = spawnSync(process.execPath, [CLI, 'positions', 'worker.properties', 'connector.json', '--table', `${ctx.ns}.${table}`, flag], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, `icefloe positions failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

test('point 2: an idle table survives retention (C); a fresh table whose announcements were deleted stops, never skipped', async (t) => {
  const started = performance.now();
  const ctx = await setup(t, ['a', 'b', 'c']);
  const a = await announce(ctx, 'a', 0n, 9n);
  const b = await announce(ctx, 'b', 0n, 9n);
  const live = await committer(ctx);
  await live.round();
  for (let i = 1n; i <= 3n; i++) b.push(...(await announce(ctx, 'b', i * 10n, i * 10n + 9n)));
  await live.round();
  const cGroup = await ctx.admin.groupOffsets(`cg-control-${ctx.connector.name}`, ctx.controlTopic);
  assert.match(cGroup[0]?.metadata ?? '', /^icefloe\/1 applied /, 'C committed as applied');
  // Retention deletes everything: a's stored position is now below the log start, though nothing of a's was lost.
  await deleteControlRecords(ctx);
  const restarted = await committer(ctx);
  await restarted.round();
  assert.equal(statusOf(restarted, ctx, 'a')?.state, 'RUNNING', statusOf(restarted, ctx, 'a')?.reason?.message);
  a.push(...(await announce(ctx, 'a', 10n, 19n)));
  await restarted.round();
  assert.equal(statusOf(restarted, ctx, 'a')?.lastSnapshotId !== undefined, true);
  await assertExactlyOnce(`${ctx.ns}.a`, a, { catalog: { kind: 'rest' } });
  await assertExactlyOnce(`${ctx.ns}.b`, b, { catalog: { kind: 'rest' } });
  assert.equal(await duckdbCount(`${ctx.ns}.a`), a.length);

  // The committer is down while table c gets an announcement, and retention deletes it before a restart.
  await announce(ctx, 'c', 0n, 9n);
  await deleteControlRecords(ctx);
  const afterOutage = await committer(ctx);
  await afterOutage.round();
  const c = statusOf(afterOutage, ctx, 'c');
  assert.equal(c?.state, 'STOPPED', 'a fresh table is read from C, not from the log start');
  assert.equal(c?.reason?.code, 'control-records-lost');
  assert.ok(ctx.lines.some((l) => l.level === 'error' && l.msg.startsWith('table stopped') && l.fields['code'] === 'control-records-lost'), 'logged at error level');
  const cRows = await ctx.h.rest().loadTable(parseIdentifier(`${ctx.ns}.c`));
  assert.equal(cRows.metadata.snapshots.length, 0, 'nothing applied to c');
  t.diagnostic(`duration ${Math.round(performance.now() - started)} ms`);
});

test('point 3: rollback under a live committer stops the table; `icefloe positions --reapply` re-applies it once', async (t) => {
  const started = performance.now();
  const ctx = await setup(t, ['a']);
  const first = await announce(ctx, 'a', 0n, 9n);
  const live = await committer(ctx);
  await live.round();
  const second = await announce(ctx, 'a', 10n, 19n);
  await live.round();
  await rollBackToFirstSnapshot(ctx, 'a');
  await live.round();
  assert.equal(statusOf(live, ctx, 'a')?.reason?.code, 'positions-rolled-back', 'stopped, not skipped and not re-applied');
  assert.match(statusOf(live, ctx, 'a')?.reason?.message ?? '', /--reapply/);
  await assertExactlyOnce(`${ctx.ns}.a`, first, { catalog: { kind: 'rest' } });
  const report = positionsCli(ctx, 'a', '--reapply');
  assert.match(String(report['result']), /^marked/);
  await live.round();
  await live.round();
  assert.equal(statusOf(live, ctx, 'a')?.state, 'RUNNING');
  const r = await exactlyOnceReport(`${ctx.ns}.a`, [...first, ...second], { catalog: { kind: 'rest' } });
  assert.deepEqual({ missing: r.missing, duplicates: r.duplicates, unexpected: r.unexpected, rows: r.rows }, { missing: [], duplicates: [], unexpected: [], rows: 20 });
  // The rolled-back snapshot still lists the second file; the re-apply adds it again on main: by design.
  assert.equal(r.filesAddedTwice.length, 1);
  assert.equal(await duckdbCount(`${ctx.ns}.a`), 20);
  const md = (await ctx.h.rest().loadTable(parseIdentifier(`${ctx.ns}.a`))).metadata;
  assert.equal(md.properties[`icefloe.reapply.${ctx.connector.name}`], undefined, 'the spent mark is removed');
  t.diagnostic(`duration ${Math.round(performance.now() - started)} ms`);
});

test('point 3: a restarted committer finds the rollback (announcement in [T, C)) and stops; `--adopt` keeps the table', async (t) => {
  const started = performance.now();
  const ctx = await setup(t, ['a']);
  const first = await announce(ctx, 'a', 0n, 9n);
  await (await committer(ctx)).round();
  await announce(ctx, 'a', 10n, 19n);
  await (await committer(ctx)).round();
  await rollBackToFirstSnapshot(ctx, 'a');
  const restarted = await committer(ctx);
  await restarted.round();
  assert.equal(statusOf(restarted, ctx, 'a')?.reason?.code, 'positions-rolled-back');
  await assertExactlyOnce(`${ctx.ns}.a`, first, { catalog: { kind: 'rest' } });
  const report = positionsCli(ctx, 'a', '--adopt');
  assert.match(String(report['result']), /^adopted/);
  const third = await announce(ctx, 'a', 20n, 29n);
  await restarted.round();
  assert.equal(statusOf(restarted, ctx, 'a')?.state, 'RUNNING');
  await assertExactlyOnce(`${ctx.ns}.a`, [...first, ...third], { catalog: { kind: 'rest' } });
  t.diagnostic(`duration ${Math.round(performance.now() - started)} ms`);
});

test('point 4 (committer half): a zombie\'s duplicate announcement is passed and logged; a partial overlap stops the table', async (t) => {
  const started = performance.now();
  const ctx = await setup(t, ['a']);
  const produced = await announce(ctx, 'a', 0n, 9n, 0);
  const live = await committer(ctx);
  await live.round();
  // A zombie (task 1, another transactional id: not fenced by task 0) announces the same records late.
  await announce(ctx, 'a', 0n, 9n, 1);
  produced.push(...(await announce(ctx, 'a', 10n, 19n, 0)));
  await live.round();
  await assertExactlyOnce(`${ctx.ns}.a`, produced, { catalog: { kind: 'rest' } });
  assert.equal(statusOf(live, ctx, 'a')?.state, 'RUNNING');
  assert.equal(live.droppedAnnouncements, 1);
  assert.ok(ctx.lines.some((l) => l.msg.startsWith('announcements whose source records the table holds already')), 'counted in the log');
  // Partly new, partly applied: neither applying nor dropping is right.
  await announce(ctx, 'a', 15n, 25n, 1);
  await live.round();
  assert.equal(statusOf(live, ctx, 'a')?.reason?.code, 'source-overlap');
  await assertExactlyOnce(`${ctx.ns}.a`, produced, { catalog: { kind: 'rest' } });
  assert.equal(await duckdbCount(`${ctx.ns}.a`), produced.length);
  t.diagnostic(`duration ${Math.round(performance.now() - started)} ms`);
});

test('point 6: the catalog refuses one table\'s commit (400): that table stops, the other commits in the same round', async (t) => {
  const started = performance.now();
  const e = stackEndpoints();
  await requireReachable('Fault-injection proxy (control)', e.proxyControlUrl);
  const ctx = await setup(t, ['a', 'b']);
  const proxy = new FaultProxy(e.proxyControlUrl);
  const a = await announce(ctx, 'a', 0n, 9n);
  const b = await announce(ctx, 'b', 0n, 9n);
  const rule = await proxy.arm({
    target: 'catalog',
    match: { method: 'POST', path: `^/v1/namespaces/${ctx.ns}/tables/a$` },
    times: 0,
    fault: { kind: 'status', code: 400, body: '{"error":{"message":"refused (injected)","type":"BadRequestException","code":400}}', headers: { 'content-type': 'application/json' } },
  });
  t.after(() => proxy.remove(rule).catch(() => undefined));
  const live = await committer(ctx, ctx.h.rest({ viaProxy: true }));
  await live.round();
  assert.equal(statusOf(live, ctx, 'a')?.reason?.code, 'commit-failed');
  assert.ok(statusOf(live, ctx, 'a')?.oldestUnappliedMs !== undefined, 'the age of what a waits for is tracked');
  assert.equal(statusOf(live, ctx, 'b')?.state, 'RUNNING');
  await assertExactlyOnce(`${ctx.ns}.b`, b, { catalog: { kind: 'rest' } });
  await proxy.remove(rule);
  await live.round();
  assert.equal(statusOf(live, ctx, 'a')?.state, 'RUNNING');
  await assertExactlyOnce(`${ctx.ns}.a`, a, { catalog: { kind: 'rest' } });
  await assertExactlyOnce(`${ctx.ns}.b`, b, { catalog: { kind: 'rest' } });
  t.diagnostic(`duration ${Math.round(performance.now() - started)} ms`);
});

test('issue 10 point 3 (O8): a truncated control log stops only the table that lost announcements; a table idle behind the C a stopped table holds back goes on, live and after a restart', async (t) => {
  const started = performance.now();
  const ctx = await setup(t, ['a', 'b']);
  const a = await announce(ctx, 'a', 0n, 9n);
  const b = await announce(ctx, 'b', 0n, 9n);
  const live = await committer(ctx);
  await live.round();
  // a's next announcement cannot be applied (its file is gone): a stops and holds C back at it.
  await announce(ctx, 'a', 10n, 19n, 0, 0, { deleteFiles: true });
  b.push(...(await announce(ctx, 'b', 10n, 19n)));
  await live.round();
  assert.equal(statusOf(live, ctx, 'a')?.reason?.code, 'file-missing');
  assert.equal(statusOf(live, ctx, 'b')?.state, 'RUNNING');
  const [group] = await ctx.admin.groupOffsets(`cg-control-${ctx.connector.name}`, ctx.controlTopic);
  assert.match(group?.metadata ?? '', / rest=\d+ except=[0-9a-f]{12}$/, 'C carries R, a excepted');
  // Retention deletes the whole log, a's unapplied announcement with it; b lost nothing (it is idle behind C).
  await deleteControlRecords(ctx);
  // A reader asked for a position retention just deleted (the committer looked at the log start a moment
  // before) says so as a retriable error, never reading on from the new log start.
  const reader = await ConfluentControlTopicReader.connect({ settings: ctx.settings });
  ctx.closers.push(() => reader.close());
  await assert.rejects(reader.read([{ topic: ctx.controlTopic, partition: 0, offset: 0n }]), (e: unknown) => e instanceof RetriableError && /below the log start/.test(e.message));
  await live.round();
  assert.equal(statusOf(live, ctx, 'a')?.reason?.code, 'control-records-lost', 'a lost an announcement: it stops with the reason');
  assert.match(statusOf(live, ctx, 'a')?.reason?.message ?? '', /deleted by retention/);
  assert.equal(statusOf(live, ctx, 'b')?.state, 'RUNNING', statusOf(live, ctx, 'b')?.reason?.message);
  b.push(...(await announce(ctx, 'b', 20n, 29n)));
  await live.round();
  await assertExactlyOnce(`${ctx.ns}.b`, b, { catalog: { kind: 'rest' } });
  // The same after a restart (the committer's memory is gone; C's R says where b is).
  const restarted = await committer(ctx);
  await restarted.round();
  assert.equal(statusOf(restarted, ctx, 'a')?.reason?.code, 'control-records-lost');
  assert.equal(statusOf(restarted, ctx, 'b')?.state, 'RUNNING', statusOf(restarted, ctx, 'b')?.reason?.message);
  b.push(...(await announce(ctx, 'b', 30n, 39n)));
  await restarted.round();
  await assertExactlyOnce(`${ctx.ns}.b`, b, { catalog: { kind: 'rest' } });
  await assertExactlyOnce(`${ctx.ns}.a`, a, { catalog: { kind: 'rest' } });
  assert.equal(await duckdbCount(`${ctx.ns}.b`), b.length);
  t.diagnostic(`duration ${Math.round(performance.now() - started)} ms`);
});
