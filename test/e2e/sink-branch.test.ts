/**
 * Commit branches on the real stack (iceberg.tables.default-commit-branch, iceberg.table.<t>.commit-branch),
 * counted by Kafka coordinates (test/helpers/exactly-once.ts), on both catalog paths: the REST catalog on S3
 * and the embedded SQLite catalog (our own metadata writer, read back by PyIceberg's SqlCatalog).
 *
 * Two tables, every record to both (no route field). First the connector commits to main; then it is
 * configured with `default-commit-branch=stage` and table b with its own `commit-branch=audit`:
 * - the first branch commit of each table creates the branch as a fork of main's head (so the branch
 *   holds main's records too) and goes on from main's control positions;
 * - the worker is killed right after its first catalog commit to a branch (crash point
 *   committer.after-catalog-commit, tasks in-process so the crash takes everything down) and restarted:
 *   the committer must read the table's positions from the branch, not main (main's are older: reading
 *   them would apply the branch's announcements again);
 * - main gets no new snapshot; a's `stage` and b's `audit` hold every record exactly once (PyIceberg reads
 *   the branch head's snapshot, DuckDB counts it too), and neither table has the other's branch.
 */
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseIdentifier } from '../../src/commit/port.ts';
import type { Catalog } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { SqlCatalog } from '../../src/commit/sql/catalog.ts';
import { SqliteDriver } from '../../src/commit/sql/sqlite.ts';
import type { TableMetadata } from '../../src/iceberg/metadata.ts';
import { LocalObjectStore } from '../../src/upload/local/store.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { readTable } from '../helpers/readers.ts';
import type { ReaderArgs } from '../helpers/readers.ts';
import { e2eResources, produceJson, restCatalogKeys, SCHEMALESS_JSON, uniqueIdent } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const PARTITIONS = 2;
const BATCH = 40;
const CRASH_LINE = /crash point committer\.after-catalog-commit reached/;

interface Target {
  readonly kind: 'rest' | 'embedded';
  readonly keys: Readonly<Record<string, string>>;
  readonly reader: NonNullable<ReaderArgs['catalog']>;
  open(): Catalog;
}

function restTarget(): Target {
  const e = stackEndpoints();
  return { kind: 'rest', keys: restCatalogKeys(), reader: { kind: 'rest' }, open: () => new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse }) };
}

/** The worker's embedded default in `dir`: icefloe-data/catalog.db (catalog `iceberg`) over icefloe-data/warehouse. */
function embeddedTarget(dir: string): Target {
  const db = join(dir, 'icefloe-data', 'catalog.db');
  const warehouse = `file://${join(dir, 'icefloe-data', 'warehouse')}`;
  return {
    kind: 'embedded',
    keys: {},
    reader: { kind: 'sql', uri: `sqlite:///${db}`, name: 'iceberg', warehouse },
    open: () => new SqlCatalog({ name: 'iceberg', driver: new SqliteDriver({ path: db }), store: new LocalObjectStore(), warehouse, initTables: false }),
  };
}

/** The table's metadata, or undefined while it (or the embedded catalog's file) does not exist yet. */
async function metadataOf(target: Target, table: string): Promise<TableMetadata | undefined> {
  let catalog: Catalog | undefined;
  try {
    catalog = target.open();
    return (await catalog.loadTable(parseIdentifier(table))).metadata;
  } catch {
    return undefined;
  } finally {
    await catalog?.close();
  }
}

/** `total-records` of the snapshot `ref` points at (-1 while the table or ref is absent). */
function refTotal(md: TableMetadata | undefined, ref: string): number {
  const id = md?.refs[ref]?.snapshotId;
  const s = md?.snapshots.find((x) => x.snapshotId === id);
  return s === undefined ? -1 : Number(s.summary['total-records'] ?? '0');
}

async function waitRefs(w: WorkerProcess, target: Target, want: readonly { table: string; ref: string; total: number }[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const totals = await Promise.all(want.map(async (x) => refTotal(await metadataOf(target, x.table), x.ref)));
    if (totals.every((n, i) => n >= (want[i]?.total ?? 0))) return;
    if (w.child.exitCode !== null || w.child.signalCode !== null) throw new Error(`the worker exited at ${totals.join(', ')} rows; last lines:\n${w.lines.slice(-15).join('\n')}`);
    const stopped = w.logs('table stopped: nothing is committed to it until an operator repairs it');
    if (stopped.length > 0) throw new Error(`a table stopped at ${totals.join(', ')} rows: ${JSON.stringify(stopped[0])}`);
    if (Date.now() > deadline) throw new Error(`${want.map((x) => `${x.table}@${x.ref}`).join(', ')} hold ${totals.join(', ')} rows after ${timeoutMs} ms; last lines:\n${w.lines.slice(-15).join('\n')}`);
    await sleep(500);
  }
}

function batch(from: number): { partition: number; key: string; value: unknown }[] {
  return Array.from({ length: BATCH }, (_, i) => ({ partition: (from + i) % PARTITIONS, key: `k${from + i}`, value: { n: from + i, note: `record ${from + i}` } }));
}

async function runBranchCase(t: TestContext, kind: Target['kind']): Promise<void> {
  const started = Date.now();
  const r = await e2eResources(t);
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-branch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const target = kind === 'rest' ? restTarget() : embeddedTarget(dir);
  const topic = unique('branch-src');
  const control = unique('branch-control');
  const ns = uniqueIdent('branch');
  const [a, b] = [`${ns}.a`, `${ns}.b`];
  r.topics.push(topic, control);
  if (kind === 'rest') r.tables.push(a, b);
  const base: Record<string, string> = {
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    'tasks.max': '1',
    topics: topic,
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    ...SCHEMALESS_JSON,
    'iceberg.tables': `${a},${b}`,
    'iceberg.tables.auto-create-enabled': 'true',
    'iceberg.control.topic': control,
    'iceberg.control.commit.interval-ms': '1500',
    'icefloe.tables.kafka-metadata-columns': 'topic,partition,offset',
    'consumer.override.session.timeout.ms': '6000',
    'consumer.override.heartbeat.interval.ms': '1000',
    ...target.keys,
  };
  const branched = { ...base, 'iceberg.tables.default-commit-branch': 'stage', [`iceberg.table.${b}.commit-branch`]: 'audit' };
  const worker = (config: Record<string, string>, env: Record<string, string> = {}): WorkerProcess => {
    const w = startWorker({ dir, worker: { 'icefloe.tasks.mode': 'in-process' }, connectors: [{ name: `branch-${ns}`, config }], env });
    r.workers.push(w);
    return w;
  };

  // 1. On main, as configured before the branch.
  const onMain: Coordinates[] = await produceJson(topic, PARTITIONS, batch(0));
  const first = worker(base);
  await waitRefs(first, target, [{ table: a, ref: 'main', total: BATCH }, { table: b, ref: 'main', total: BATCH }]);
  assert.equal(await first.stop(120_000), '0');
  const mainBefore = await Promise.all([a, b].map(async (x) => (await metadataOf(target, x))?.refs['main']?.snapshotId));

  // 2. Branches: killed right after the first catalog commit to a branch, restarted.
  const second: Coordinates[] = await produceJson(topic, PARTITIONS, batch(BATCH));
  const crashing = worker(branched, { ICEFLOE_CRASH_POINT: 'committer.after-catalog-commit' });
  await crashing.waitFor(CRASH_LINE, 120_000);
  await crashing.exited;
  const third: Coordinates[] = await produceJson(topic, PARTITIONS, batch(2 * BATCH));
  const restarted = worker(branched);
  await waitRefs(restarted, target, [{ table: a, ref: 'stage', total: 3 * BATCH }, { table: b, ref: 'audit', total: 3 * BATCH }]);
  // One more interval: a committer that applied anything twice would have done so by now.
  await sleep(3_000);
  assert.equal(await restarted.stop(120_000), '0');

  const all = [...onMain, ...second, ...third];
  for (const [i, [table, branch, other]] of ([[a, 'stage', 'audit'], [b, 'audit', 'stage']] as const).entries()) {
    const md = await metadataOf(target, table);
    assert.ok(md !== undefined);
    assert.equal(md.refs['main']?.snapshotId, mainBefore[i], `${table}: main has no new snapshot`);
    assert.equal(md.refs[other], undefined, `${table}: no ${other} branch`);
    const head = md.refs[branch]?.snapshotId;
    assert.ok(head !== undefined, `${table}: the ${branch} branch exists`);
    // The first branch snapshot's parent is main's head: a fork.
    assert.ok(md.snapshots.some((s) => s.parentSnapshotId === mainBefore[i]), `${table}: ${branch} forks from main's head`);
    await assertExactlyOnce(table, all, { catalog: target.reader, snapshotId: head });
    await assertExactlyOnce(table, onMain, { catalog: target.reader });
    if (kind === 'rest') {
      const duck = await readTable({ table, engine: 'duckdb', columns: ['_kafka_metadata_offset'], catalog: target.reader, snapshot_id: head });
      assert.equal(duck.rows?.length, all.length, `${table}: DuckDB at the ${branch} head`);
    }
  }
  assert.ok(restarted.logs('table committed').every((l) => l['branch'] === 'stage' || l['branch'] === 'audit'), 'every commit after the restart went to a branch');
  t.diagnostic(`${kind}: ${all.length} records, duration ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

test('commit branches on the REST catalog: main untouched, each branch holds every record once across a crash and restart; per-table branch beats the default', { timeout: 300_000 }, async (t) => {
  await runBranchCase(t, 'rest');
});

test('commit branches on the embedded SQLite catalog (our metadata writer): the same, read by PyIceberg\'s SqlCatalog', { timeout: 300_000 }, async (t) => {
  await runBranchCase(t, 'embedded');
});
