/**
 * Independent readers of the manifests and manifest lists we write: PyIceberg decodes a manifest list
 * (snappy) and the manifests it names (deflate, partitioned by every transform; zstandard, unpartitioned)
 * and reports every field; DuckDB's Avro reader counts their rows. Both come from the stack's Python venv
 * (test/readers/iceberg_avro.py `check`), so this runs in every CI run, not only where a venv happens to be
 * configured. The fixtures are shared with the unit tests (test/helpers/manifest-fixtures.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { uuidFromBytes } from '../../src/iceberg/bytes.ts';
import { addedEntries, readManifest, writeManifest } from '../../src/iceberg/manifest.ts';
import { writeManifestList } from '../../src/iceberg/manifest-list.ts';
import type { ManifestFile } from '../../src/iceberg/manifest-list.ts';
import { unpartitionedSpec } from '../../src/iceberg/partition-spec.ts';
import { entryAsExpected, file, files, listAsExpected, schema, SNAP, spec } from '../helpers/manifest-fixtures.ts';
import type { ExpectedEntry, ExpectedList } from '../helpers/manifest-fixtures.ts';
import { stackEndpoints } from '../helpers/stack.ts';

const SCRIPT = fileURLToPath(new URL('../readers/iceberg_avro.py', import.meta.url));

interface CheckOutput {
  manifest_list: ExpectedList[];
  entries: Record<string, ExpectedEntry[]>;
  duckdb: Record<string, number | string>;
}

/** Runs iceberg_avro.py check on a local manifest list with the stack's venv (and its DuckDB extensions). */
function check(listPath: string): Promise<CheckOutput> {
  const e = stackEndpoints();
  if (!existsSync(e.python)) {
    throw new Error(`the readers' Python venv (${e.python}) is missing: scripts/stack up installs it (scripts/stack status)`);
  }
  const env = { ...process.env, ICEFLOE_DUCKDB_EXTENSION_DIR: e.duckdbExtensionDir };
  return new Promise((resolve, reject) => {
    execFile(e.python, [SCRIPT, 'check', listPath], { env, encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`iceberg_avro.py check failed: ${stderr.trim() || error.message}`, { cause: error }));
      else resolve(JSON.parse(stdout) as CheckOutput);
    });
  });
}

test('PyIceberg and DuckDB read the manifest list and manifests we write', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-manifest-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const mpath = join(dir, 'ours-m0.avro');
  const upath = join(dir, 'ours-m1.avro');
  const written = writeManifest({ path: mpath, schema, spec, snapshotId: SNAP, entries: addedEntries(files, SNAP) });
  writeFileSync(mpath, written.bytes);
  const unpartFile = { ...file('s3://b/t/data/u.parquet', [], 3n), specId: 0 };
  const unpart = writeManifest({ path: upath, schema, spec: unpartitionedSpec(0), snapshotId: SNAP, entries: addedEntries([unpartFile], SNAP), codec: 'zstandard' });
  writeFileSync(upath, unpart.bytes);
  const list = writeManifestList({ snapshotId: SNAP, parentSnapshotId: null, sequenceNumber: 1n, manifests: [written.manifest, unpart.manifest], codec: 'snappy' });
  const lpath = join(dir, 'snap.avro');
  writeFileSync(lpath, list.bytes);

  const out = await check(lpath);
  assert.deepEqual(out.manifest_list, list.manifests.map(listAsExpected));
  const ours = readManifest(written.bytes, { inheritFrom: list.manifests[0] as ManifestFile });
  // Every field of every entry; the partition tuple up to the uuid value, which PyIceberg reports as text.
  const theirs = (out.entries[mpath] ?? []).map((e) => ({ ...e, partition: e.partition.slice(0, 5) }));
  const mine = ours.entries.map((e) => entryAsExpected(e, new Map([[3, 2]]))).map((e) => ({ ...e, partition: e.partition.slice(0, 5) }));
  assert.deepEqual(theirs, mine);
  // The rest of the tuple (event_id as uuid text, meta.source, at).
  assert.deepEqual(
    (out.entries[mpath] ?? []).map((e) => e.partition.slice(5)),
    ours.entries.map(({ dataFile: { partition: p } }) => [p[5] instanceof Uint8Array ? uuidFromBytes(p[5]) : null, p[6] == null ? null : String(p[6]), p[7] == null ? null : String(p[7])]),
  );
  assert.equal(out.entries[upath]?.[0]?.record_count, '3');
  // DuckDB's Avro reader too (it lacks zstandard, so the zstd manifest is only checked by PyIceberg)
  assert.equal(out.duckdb[lpath], 2);
  assert.equal(out.duckdb[mpath], 2);
});
