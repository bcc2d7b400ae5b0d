/**
 * Applied control positions survive a foreign writer (architecture "Idempotent commits": the committer
 * reads the positions from the newest snapshot in the branch's ancestry that carries them). Our fast
 * append carries `icefloe.control-offsets.<connector>` and `icefloe.valid-through-ts` in its summary;
 * PyIceberg then appends on top (a snapshot without those keys, now the current one); `findInAncestry`
 * on the reloaded metadata still finds ours; our next append sits on PyIceberg's snapshot and the
 * running totals PyIceberg reads from the three summaries add up.
 *
 * The other half — expiry removed the carrying snapshot, so the walk is cut short and reports
 * `truncated` (the committer fails closed) — is a unit test: test/unit/iceberg/metadata.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMIT_ID_KEY } from '../../src/commit/commit-retry.ts';
import { appendFiles, createTable } from '../../src/commit/table-ops.ts';
import { currentSnapshot, findInAncestry, snapshotById } from '../../src/iceberg/metadata.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { readTable } from '../helpers/readers.ts';
import { harness, ident, writeRows } from '../helpers/tables.ts';

const OFFSETS_KEY = 'icefloe.control-offsets.orders';
const WATERMARK_KEY = 'icefloe.valid-through-ts';

const SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'name', required: false, type: { kind: 'string' } },
  ],
};

interface PySnapshot {
  snapshot_id: bigint | number;
  parent_snapshot_id: bigint | number | null;
  operation: string | null;
  summary: Record<string, string>;
}

test('control positions are found in the ancestry under a foreign snapshot, and totals add up across writers', async (t) => {
  const h = await harness(t);
  const catalog = h.rest();
  const ns = h.namespace();
  const id = ident(ns, 'orders');
  const name = `${ns}.orders`;
  const deps = h.deps(catalog);

  const created = await createTable(deps, id, { schema: SCHEMA });
  // Ours: 3 rows in one file, with the positions and the watermark.
  const first = await appendFiles(deps, id, {
    commitId: 'ancestry-1',
    files: await writeRows(h.store, created, [1n, 2n, 3n].map((i) => ({ id: i, name: `ours-${i}` }))),
    summary: { [OFFSETS_KEY]: '{"0":42}', [WATERMARK_KEY]: '1767225600000' },
  });
  assert.equal(first.status, 'committed');
  const ours1 = currentSnapshot(first.table.metadata);
  assert.ok(ours1 !== undefined);

  // Foreign: PyIceberg appends 2 rows on top (its own snapshot, none of our keys).
  const foreign = await readTable({ mode: 'append', table: name, rows: [{ id: 100, name: 'py-100' }, { id: 101, name: null }] });
  const foreignId = BigInt(foreign['snapshot_id'] as bigint | number);
  assert.equal(foreign['rows_appended'], 2);
  assert.equal((foreign['summary'] as Record<string, string>)[OFFSETS_KEY], undefined);

  const reloaded = await catalog.loadTable(id);
  const md = reloaded.metadata;
  const head = currentSnapshot(md);
  assert.equal(head?.snapshotId, foreignId, 'the foreign snapshot is the current one');
  assert.equal(head.parentSnapshotId, ours1.snapshotId, 'on top of ours');
  assert.equal(head.summary[OFFSETS_KEY], undefined, 'the foreign snapshot lacks the positions');
  assert.equal(head.summary[WATERMARK_KEY], undefined);
  assert.equal(head.summary[COMMIT_ID_KEY], undefined);

  const found = findInAncestry(md, OFFSETS_KEY);
  assert.equal(found.snapshot?.snapshotId, ours1.snapshotId, 'the newest snapshot carrying the positions is ours');
  assert.equal(found.value, '{"0":42}');
  assert.equal(found.scanned, 2);
  assert.equal(found.truncated, false);
  assert.equal(findInAncestry(md, WATERMARK_KEY).value, '1767225600000');
  const absent = findInAncestry(md, 'icefloe.control-offsets.other-connector');
  assert.deepEqual(absent, { scanned: 2, truncated: false }, 'another connector has no positions here, and the walk was complete');

  // Ours again, on top of PyIceberg's: 4 rows in 2 files, positions advanced.
  const second = await appendFiles(deps, id, {
    commitId: 'ancestry-2',
    files: await writeRows(h.store, reloaded, [4n, 5n, 6n, 7n].map((i) => ({ id: i, name: `ours-${i}` })), { rowsPerFile: 2 }),
    summary: { [OFFSETS_KEY]: '{"0":57}', [WATERMARK_KEY]: '1767229200000' },
  });
  assert.equal(second.status, 'committed');
  const md2 = second.table.metadata;
  const ours2 = currentSnapshot(md2);
  assert.equal(ours2?.parentSnapshotId, foreignId, 'our second snapshot sits on the foreign one');
  assert.equal(snapshotById(md2, foreignId)?.parentSnapshotId, ours1.snapshotId);
  const found2 = findInAncestry(md2, OFFSETS_KEY);
  assert.equal(found2.snapshot?.snapshotId, ours2.snapshotId);
  assert.equal(found2.value, '{"0":57}');
  assert.equal(found2.scanned, 1);

  // PyIceberg's view: three snapshots in one chain, and running totals that add up across writers.
  const py = await readTable({ table: name, order_by: ['id'] });
  assert.equal(BigInt(py['current_snapshot_id'] as bigint), ours2.snapshotId);
  const snaps = py['snapshots'] as PySnapshot[];
  assert.deepEqual(
    snaps.map((s) => [BigInt(s.snapshot_id), s.parent_snapshot_id === null ? null : BigInt(s.parent_snapshot_id), s.operation]),
    [
      [ours1.snapshotId, null, 'append'],
      [foreignId, ours1.snapshotId, 'append'],
      [ours2.snapshotId, foreignId, 'append'],
    ],
  );
  const pick = (s: PySnapshot | undefined, ...keys: string[]): (string | undefined)[] => keys.map((k) => s?.summary[k]);
  const totals = ['added-records', 'total-records', 'added-data-files', 'total-data-files'];
  assert.deepEqual(pick(snaps[0], ...totals), ['3', '3', '1', '1'], 'ours, first');
  assert.deepEqual(pick(snaps[1], ...totals), ['2', '5', '1', '2'], 'PyIceberg');
  assert.deepEqual(pick(snaps[2], ...totals), ['4', '9', '2', '4'], 'ours, second: totals carried over from the foreign snapshot');
  assert.deepEqual(pick(snaps[0], OFFSETS_KEY, WATERMARK_KEY, COMMIT_ID_KEY), ['{"0":42}', '1767225600000', 'ancestry-1']);
  assert.deepEqual(pick(snaps[1], OFFSETS_KEY, WATERMARK_KEY, COMMIT_ID_KEY), [undefined, undefined, undefined]);
  assert.deepEqual(pick(snaps[2], OFFSETS_KEY, WATERMARK_KEY, COMMIT_ID_KEY), ['{"0":57}', '1767229200000', 'ancestry-2']);
  // total-files-size adds up too (each snapshot's total = the previous total + what it added).
  const size = (s: PySnapshot | undefined, k: string): bigint => BigInt(s?.summary[k] ?? 'NaN');
  assert.equal(size(snaps[1], 'total-files-size'), size(snaps[0], 'total-files-size') + size(snaps[1], 'added-files-size'));
  assert.equal(size(snaps[2], 'total-files-size'), size(snaps[1], 'total-files-size') + size(snaps[2], 'added-files-size'));

  // And every row is there once, in both readers.
  const ids = [1, 2, 3, 4, 5, 6, 7, 100, 101];
  assert.deepEqual((py.rows ?? []).map((r) => Number(r['id'])), ids);
  assert.equal(py['files_scanned'], 4);
  const duck = await readTable({ table: name, engine: 'duckdb', order_by: ['id'] });
  assert.deepEqual((duck.rows ?? []).map((r) => Number(r['id'])), ids);
  assert.equal(duck['data_files'], 4);
});
