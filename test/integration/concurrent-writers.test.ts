/**
 * Two writers append to one table at the same time through the real REST catalog, with the race forced
 * rather than hoped for: writer A's commit request is held by the fault-injection proxy until writer B's
 * commit (straight to the catalog) has landed; then A's request reaches the catalog, whose
 * `assert-ref-snapshot-id` check now fails (409). A's committer must treat that as a conflict — reload,
 * rebuild its manifest list on top of B's snapshot, commit again — and land exactly once, without losing
 * or duplicating any of B's data files (docs/architecture.md, "Idempotent commits").
 *
 * Checked at every level: the committer's events, the proxy's record of what the catalog answered, the
 * snapshot ancestry, the data files referenced by every snapshot's manifests (read from S3 with our own
 * manifest readers), and the rows PyIceberg and DuckDB read back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { COMMIT_ID_KEY } from '../../src/commit/commit-retry.ts';
import type { CommitEvent } from '../../src/commit/commit-retry.ts';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { EntryStatus } from '../../src/iceberg/data-file.ts';
import type { DataFile } from '../../src/iceberg/data-file.ts';
import { readManifest } from '../../src/iceberg/manifest.ts';
import { readManifestList } from '../../src/iceberg/manifest-list.ts';
import type { Snapshot } from '../../src/iceberg/metadata.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import type { ObjectStore } from '../../src/upload/port.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import { commitIds } from '../helpers/commits.ts';
import { readTable } from '../helpers/readers.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';
import type { Row } from '../helpers/type-matrix.ts';

const schema: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'writer', required: true, type: { kind: 'string' } },
  ],
};

const rowsOf = (writer: string, from: number, count: number): Row[] =>
  Array.from({ length: count }, (_, i) => ({ id: BigInt(from + i), writer }));

/** Live data-file references (entry status ADDED or EXISTING) of a snapshot, one per manifest entry. */
async function liveDataFiles(store: ObjectStore, snapshot: Snapshot): Promise<{ path: string; addedBy: bigint | null }[]> {
  const list = readManifestList(await store.get(snapshot.manifestList));
  const paths = list.manifests.map((m) => m.manifestPath);
  assert.equal(new Set(paths).size, paths.length, `snapshot ${snapshot.snapshotId} lists a manifest twice`);
  const out: { path: string; addedBy: bigint | null }[] = [];
  for (const m of list.manifests) {
    for (const e of readManifest(await store.get(m.manifestPath), { inheritFrom: m }).entries) {
      if (e.status !== EntryStatus.DELETED) out.push({ path: e.dataFile.filePath, addedBy: e.snapshotId });
    }
  }
  return out;
}

test('two writers race on one table: the held writer gets a 409, rebuilds on the other’s snapshot and lands once', async (t) => {
  // Registered before the harness's own clean-up, so it runs first, while the store and catalogs are open.
  const cleanup: (() => Promise<unknown>)[] = [];
  t.after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });
  const e = stackEndpoints();
  await requireReachable('Fault-injection proxy (catalog route)', e.proxyCatalogUri);
  await requireReachable('Fault-injection proxy (control)', e.proxyControlUrl);
  const h = await harness(t);
  const proxy = new FaultProxy(e.proxyControlUrl);
  const direct = h.rest();
  const viaProxy = h.rest({ viaProxy: true });
  const ns = h.namespace();
  const id = ident(ns, 'events');
  const name = `${ns}.events`;

  const created = await createTable(h.deps(direct), id, { schema });
  cleanup.push(() => direct.dropTable(id));
  // A first snapshot, so that both writers assert a real snapshot id rather than "no main branch yet".
  const seedFiles = await writeRows(h.store, created, rowsOf('seed', 0, 10));
  assert.equal((await appendFiles(h.deps(direct), id, { commitId: 'seed', files: seedFiles })).status, 'committed');

  // Both writers write their data files against the same table state (the seed snapshot).
  const base = await direct.loadTable(id);
  const filesA = await writeRows(h.store, base, rowsOf('A', 1000, 100), { rowsPerFile: 50 });
  const filesB = await writeRows(h.store, base, rowsOf('B', 2000, 100), { rowsPerFile: 50 });
  assert.equal(filesA.length, 2);
  assert.equal(filesB.length, 2);

  // Clean-up runs last-in first-out: remove the rule (forwarding anything it still holds), let A settle,
  // then drop the table; so a failing assertion never leaves A's request parked in the proxy.
  let settleA: Promise<unknown> = Promise.resolve();
  cleanup.push(() => settleA);

  // Hold exactly one request: the commit POST of this table (never another test's, never a GET).
  const commitPath = `^/v1/namespaces/${ns}/tables/events(\\?|$)`;
  const rule = await proxy.arm({ target: 'catalog', match: { method: 'POST', path: commitPath }, times: 1, fault: { kind: 'hold' } });
  cleanup.push(() => proxy.remove(rule));

  const commitA = `writer-a-${randomUUID()}`;
  const commitB = `writer-b-${randomUUID()}`;
  const eventsA: CommitEvent['kind'][] = [];
  const depsA = h.deps(viaProxy);
  let settledA = false;
  const pendingA = appendFiles({ ...depsA, committer: { ...depsA.committer, onEvent: (ev) => eventsA.push(ev.kind) } }, id, { commitId: commitA, files: filesA }).finally(() => {
    settledA = true;
  });
  settleA = pendingA.catch(() => undefined);

  await proxy.waitHeld(rule, 1);
  assert.equal(settledA, false, 'A’s commit answered while its request was held');
  assert.deepEqual(eventsA, ['attempt']);

  // B commits straight to the catalog while A's request waits: B builds on the seed snapshot and lands.
  const outB = await appendFiles(h.deps(direct), id, { commitId: commitB, files: filesB });
  assert.equal(outB.status, 'committed');
  assert.equal(outB.status === 'committed' && outB.resolvedBy, 'response');
  assert.equal(outB.attempts, 1);

  // Release A: its request still asserts the seed snapshot, so the catalog refuses it.
  assert.equal(await proxy.release(rule), 1);
  const outA = await pendingA;
  assert.equal(outA.status, 'committed');
  assert.equal(outA.status === 'committed' && outA.resolvedBy, 'response');
  assert.equal(outA.attempts, 2);
  assert.deepEqual(eventsA, ['attempt', 'conflict', 'attempt'], 'A saw exactly one conflict, then one more attempt');
  assert.equal(eventsA.filter((k) => k === 'conflict').length, 1);

  // What the catalog answered A, from the proxy's log: the held request 409, then one forwarded 200.
  const posts = (await proxy.log('catalog'))
    .filter((l) => l.method === 'POST' && new RegExp(commitPath).test(l.path))
    .map((l) => ({ ruleId: l.ruleId, forwarded: l.forwarded, upstreamStatus: l.upstreamStatus, clientStatus: l.clientStatus }));
  assert.deepEqual(posts, [
    { ruleId: rule, forwarded: true, upstreamStatus: 409, clientStatus: 409 },
    { ruleId: null, forwarded: true, upstreamStatus: 200, clientStatus: 200 },
  ]);

  // The table, read straight from the catalog: seed → B → A, each commit id once, A's parent is B's.
  const table = await direct.loadTable(id);
  assert.deepEqual(commitIds(table), ['seed', commitB, commitA]);
  const byCommit = (c: string): Snapshot[] => table.metadata.snapshots.filter((s) => s.summary[COMMIT_ID_KEY] === c);
  assert.equal(byCommit(commitA).length, 1, 'A’s commit id is in exactly one snapshot');
  assert.equal(byCommit(commitB).length, 1, 'B’s commit id is in exactly one snapshot');
  const [snapSeed] = byCommit('seed');
  const [snapB] = byCommit(commitB);
  const [snapA] = byCommit(commitA);
  assert.ok(snapSeed !== undefined && snapB !== undefined && snapA !== undefined);
  assert.equal(table.metadata.snapshots.length, 3, 'the refused attempt left no snapshot behind');
  assert.equal(snapB.parentSnapshotId, snapSeed.snapshotId);
  assert.equal(snapA.parentSnapshotId, snapB.snapshotId, 'A was rebuilt on top of B');
  assert.equal(table.metadata.currentSnapshotId, snapA.snapshotId);
  assert.ok(snapA.sequenceNumber > snapB.sequenceNumber);
  assert.equal(snapA.summary['total-records'], '210');
  assert.equal(snapA.summary['total-data-files'], '5');
  assert.equal(snapA.summary['added-data-files'], '2');

  // Data files, snapshot by snapshot, from the manifests on S3: none lost, none referenced twice, each
  // added by exactly one snapshot (its own writer's).
  const paths = (fs: readonly DataFile[]): string[] => fs.map((f) => f.filePath).sort();
  const added = new Map<string, bigint[]>();
  const expectedLive = new Map<bigint, string[]>([
    [snapSeed.snapshotId, paths(seedFiles)],
    [snapB.snapshotId, paths([...seedFiles, ...filesB])],
    [snapA.snapshotId, paths([...seedFiles, ...filesB, ...filesA])],
  ]);
  for (const snap of [snapSeed, snapB, snapA]) {
    const live = await liveDataFiles(h.store, snap);
    assert.deepEqual(live.map((f) => f.path).sort(), expectedLive.get(snap.snapshotId), `live data files of snapshot ${snap.summary[COMMIT_ID_KEY]}`);
    for (const f of live) if (f.addedBy === snap.snapshotId) added.set(f.path, [...(added.get(f.path) ?? []), snap.snapshotId]);
  }
  const expectAdded = (fs: readonly DataFile[], by: bigint): void => {
    for (const f of fs) assert.deepEqual(added.get(f.filePath), [by], `${f.filePath} added once, by its writer's snapshot`);
  };
  expectAdded(seedFiles, snapSeed.snapshotId);
  expectAdded(filesB, snapB.snapshotId);
  expectAdded(filesA, snapA.snapshotId);
  assert.equal(added.size, 5);

  // Independent readers: every row of both writers exactly once; PyIceberg plans one task per live
  // manifest entry (5 = no file referenced twice), DuckDB counts the distinct live data files.
  const expectedRows = [...rowsOf('seed', 0, 10), ...rowsOf('A', 1000, 100), ...rowsOf('B', 2000, 100)].map((r) => ({ id: Number(r['id']), writer: r['writer'] }));
  const py = await readTable({ table: name, order_by: ['id'] });
  assert.deepEqual(py.rows, expectedRows, 'PyIceberg reads every row of both writers exactly once');
  assert.equal(py['files_scanned'], 5);
  // Lossless JSON: a snapshot id is a bigint unless it happens to fit a double exactly.
  const big = (v: number | bigint | null): bigint | null => (v === null ? null : BigInt(v));
  const pySnaps = (py['snapshots'] as { snapshot_id: number | bigint; parent_snapshot_id: number | bigint | null; summary: Record<string, string> }[]).map((s) => [
    s.summary[COMMIT_ID_KEY],
    big(s.snapshot_id),
    big(s.parent_snapshot_id),
  ]);
  assert.deepEqual(pySnaps, [
    ['seed', snapSeed.snapshotId, null],
    [commitB, snapB.snapshotId, snapSeed.snapshotId],
    [commitA, snapA.snapshotId, snapB.snapshotId],
  ]);
  const duck = await readTable({ table: name, engine: 'duckdb', order_by: ['id'] });
  assert.deepEqual(duck.rows, expectedRows, 'DuckDB reads every row of both writers exactly once');
  assert.equal(duck['data_files'], 5);
});
