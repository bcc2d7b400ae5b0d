/**
 * The task memory budget against a real S3 store (moto) at a high fan-out (review O2): 24 writers (one per
 * partition, as a partitioned table gets them) fed round-robin with incompressible rows, each file growing
 * to ~10 MiB — below the S3 store's 16 MiB multipart threshold, so an open file's upload holds it whole.
 * Run in a child process per accounting mode, which reports its peak RSS (VmHWM) over its RSS before
 * writing:
 * - `full` (what the writer does): the budget counts buffers, what the store holds of each open file, and
 *   the encoder; the process must stay within the budget plus a fixed overhead;
 * - `buffers` (what it counted before): the same writer, but the store's reports and the encoder are
 *   hidden from the budget. Its peak is reported next to the first, to show what was not counted.
 * Every record written must be in a closed file (the DataFiles' record counts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Schema } from '../../src/iceberg/types.ts';
import type { ByteChunks, ObjectInfo, PutOptions } from '../../src/upload/port.ts';
import { S3ObjectStore } from '../../src/upload/s3/store.ts';
import { buildLayout, DataFileWriter, DEFAULT_WRITE_CONFIG, WriteMemoryBudget } from '../../src/write/index.ts';
import { requireReachable, stackEndpoints, s3Settings } from '../helpers/stack.ts';

const MiB = 1024 * 1024;
const FAN_OUT = 24;
const ROWS_PER_WRITER = 10 * 1024; // of ~1 KiB each
/** ICEFLOE_BUDGET_MIB: another budget, to measure by hand (`ICEFLOE_BUDGET_CHILD='full s3://…' node <this file>`). */
const BUDGET = Number(process.env['ICEFLOE_BUDGET_MIB'] ?? 64) * MiB;
/**
 * What the process holds besides the budget: copies on their way out (the Arrow IPC of a row group, parts
 * given to the SDK) until the garbage collector frees them, the SDK's and sockets' buffers, the encoder's
 * fixed memory. Measured on the 2-core stack: peak RSS over the baseline was budget + 116 MiB (budget
 * 32 MiB), + 119 to 134 MiB (64 MiB), + 155 MiB (128 MiB); with the budget seeing buffers only, + 400 to
 * 630 MiB whatever the budget.
 */
const OVERHEAD = 160 * MiB;

const SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'payload', required: true, type: { kind: 'binary' } },
  ],
};

interface ChildResult {
  readonly mode: string;
  readonly baselineMiB: number;
  readonly peakMiB: number;
  readonly files: number;
  readonly forcedFlushes: number;
  readonly forcedRolls: number;
  readonly maxUploadMiB: number;
  readonly encoderMiB: number;
  readonly records: number;
  readonly seconds: number;
}

/** The S3 store with its held-bytes reports hidden (the `buffers` mode: what the budget saw before). */
class UncountedS3 extends S3ObjectStore {
  override putStream(location: string, chunks: ByteChunks, options: PutOptions = {}): Promise<ObjectInfo> {
    return super.putStream(location, chunks, { ...(options.signal === undefined ? {} : { signal: options.signal }) });
  }
}

function vmHwmBytes(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

async function child(mode: 'full' | 'buffers', prefix: string): Promise<ChildResult> {
  const store = mode === 'full' ? new S3ObjectStore(s3Settings()) : new UncountedS3(s3Settings());
  const budget = new WriteMemoryBudget(BUDGET, mode === 'full' ? {} : { encoderMemory: () => 0 });
  const layout = buildLayout(SCHEMA);
  const config = { ...DEFAULT_WRITE_CONFIG, codec: 'uncompressed' as const };
  let n = 0;
  const writers = Array.from({ length: FAN_OUT }, (_, p) => new DataFileWriter({
    layout, store, budget, config, partition: [], specId: 0,
    newLocation: () => `${prefix}/p${p}/${n++}.parquet`,
  }));
  // Incompressible and distinct payloads (no dictionary can shrink them): 1000-byte windows of one random pool.
  const pool = randomBytes(16 * MiB);
  const payload = (id: bigint): Uint8Array => {
    const at = Number((id * 7919n) % BigInt(pool.length - 1000));
    return pool.subarray(at, at + 1000);
  };
  global.gc?.();
  const started = Date.now();
  const baseline = process.memoryUsage().rss;
  resetPeak();
  let maxUpload = 0;
  for (let r = 0; r < ROWS_PER_WRITER; r++) {
    for (const [p, w] of writers.entries()) {
      const id = BigInt(p * ROWS_PER_WRITER + r);
      w.appender.long(1).append(id);
      w.appender.binary(2).append(payload(id));
      if (w.appender.endRecord()) await w.flushIfNeeded();
    }
    if (r % 256 === 0) maxUpload = Math.max(maxUpload, budget.metrics().uploadBytes);
  }
  const files = [];
  for (const w of writers) files.push(...(await w.close())); // one after the other, as a table sink closes them
  const peak = vmHwmBytes();
  const m = budget.metrics();
  await store.close();
  const records = files.reduce((s, f) => s + Number(f.recordCount), 0);
  return {
    mode,
    baselineMiB: Math.round(baseline / MiB),
    peakMiB: Math.round((peak - baseline) / MiB),
    files: files.length,
    forcedFlushes: m.forcedFlushes,
    forcedRolls: m.forcedRolls,
    maxUploadMiB: Math.round(maxUpload / MiB),
    encoderMiB: Math.round(m.encoderBytes / MiB),
    records,
    seconds: (Date.now() - started) / 1000,
  };
}

/** Resets VmHWM to the current RSS (Linux: 5 into clear_refs), so the peak is the writing's. */
function resetPeak(): void {
  writeFileSync('/proc/self/clear_refs', '5');
}

if (process.env['ICEFLOE_BUDGET_CHILD'] !== undefined) {
  const [mode, prefix] = (process.env['ICEFLOE_BUDGET_CHILD'] as string).split(' ') as ['full' | 'buffers', string];
  console.log(JSON.stringify(await child(mode, prefix)));
} else {
  test(`memory budget at fan-out ${FAN_OUT} on S3: the task stays within budget + overhead when uploads and the encoder are counted`, async (t) => {
    const e = stackEndpoints();
    await requireReachable('S3 (moto)', e.s3Endpoint);
    const prefix = `s3://${e.s3Bucket}/icefloe-budget-test/${randomUUID()}`;
    const cleanup = new S3ObjectStore(s3Settings());
    t.after(async () => {
      for await (const o of cleanup.list(prefix)) await cleanup.delete(o.location);
      await cleanup.close();
    });
    const run = (mode: string): Promise<ChildResult> =>
      new Promise((resolve, reject) => {
        execFile(process.execPath, [fileURLToPath(import.meta.url)], { env: { ...process.env, ICEFLOE_BUDGET_CHILD: `${mode} ${prefix}/${mode}` }, maxBuffer: 1 << 20, timeout: 240_000 }, (err, stdout, stderr) => {
          if (err) reject(new Error(`${mode}: ${stderr || err.message}`));
          else resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as ChildResult);
        });
      });
    const full = await run('full');
    const buffers = await run('buffers');
    t.diagnostic(`full: ${JSON.stringify(full)}`);
    t.diagnostic(`buffers only: ${JSON.stringify(buffers)}`);
    for (const r of [full, buffers]) assert.equal(r.records, FAN_OUT * ROWS_PER_WRITER, `${r.mode}: every record is in a file`);
    assert.ok(full.peakMiB * MiB <= BUDGET + OVERHEAD, `peak RSS ${full.peakMiB} MiB over the baseline, budget ${BUDGET / MiB} MiB + ${OVERHEAD / MiB} MiB overhead`);
    assert.ok(full.forcedRolls > 0, 'the budget closed files whose uploads held the most');
    assert.ok(buffers.peakMiB > full.peakMiB, `counting uploads and the encoder lowers the peak (${buffers.peakMiB} → ${full.peakMiB} MiB)`);
  });
}
