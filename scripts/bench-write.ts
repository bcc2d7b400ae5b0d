/**
 * Benchmark of the columnar Parquet writer (`npm run bench:write`).
 *
 * 1M deterministic order events (15 top-level fields incl. a struct, a list and a map; the schema of
 * docs/reference/perf.md) go through `DataFileWriter` one record at a time, with the same per-column
 * append calls a decoder makes: value generation happens before the clock starts, so the timed loop is
 * append + seal (metrics, Arrow IPC) + parquet-wasm encode + footer check, streamed to a store that
 * counts and drops the bytes. Beside it, in the same process: a bare parquet-wasm encode of the same
 * finished columns (Arrow IPC + `writeParquet` of one table, same row groups and properties), i.e. the
 * library's own floor. Prints rows/s, MB/s, CPU-seconds per GB, peak RSS, and writer/bare ratio.
 *
 * Usage: node scripts/bench-write.ts [rows=1000000] [--codec=zstd] [--repeat=3]
 *   For a strict one-core number: taskset -c 0 node scripts/bench-write.ts
 * Targets (docs/architecture.md): writer ≤ 2× the bare encode; ≥ 100k rows/s on one core.
 */
import { prng } from '../test/helpers/prng.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import * as arrow from 'apache-arrow';
import * as pw from 'parquet-wasm';
import type { Schema } from '../src/iceberg/types.ts';
import type { ObjectInfo } from '../src/upload/port.ts';
import { buildLayout, DataFileWriter, DEFAULT_WRITE_CONFIG, RecordAppender, wasmMemoryBytes } from '../src/write/index.ts';
import type { WriteConfig } from '../src/write/index.ts';

const CODEC_ENUM: Record<WriteConfig['codec'], pw.Compression> = {
  zstd: pw.Compression.ZSTD,
  snappy: pw.Compression.SNAPPY,
  gzip: pw.Compression.GZIP,
  brotli: pw.Compression.BROTLI,
  lz4_raw: pw.Compression.LZ4_RAW,
  uncompressed: pw.Compression.UNCOMPRESSED,
};

const args = process.argv.slice(2);
const ROWS = Number(args.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
const CODEC = (args.find((a) => a.startsWith('--codec='))?.slice(8) ?? 'zstd') as WriteConfig['codec'];
const REPEAT = Number(args.find((a) => a.startsWith('--repeat='))?.slice(9) ?? 3);
const ONLY = args.find((a) => a.startsWith('--only='))?.slice(7); // writer | bare (for profiling)
const ROW_GROUP_ROWS = 100_000;

// --- schema (perf.md §"How it was measured") ---------------------------------------------------------

const SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'order_id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'customer_id', required: true, type: { kind: 'string' } },
    { id: 3, name: 'status', required: true, type: { kind: 'string' } },
    { id: 4, name: 'event_time', required: true, type: { kind: 'timestamptz' } },
    { id: 5, name: 'amount', required: true, type: { kind: 'double' } },
    { id: 6, name: 'price', required: true, type: { kind: 'decimal', precision: 10, scale: 2 } },
    { id: 7, name: 'quantity', required: true, type: { kind: 'int' } },
    { id: 8, name: 'sku', required: true, type: { kind: 'string' } },
    { id: 9, name: 'country', required: true, type: { kind: 'string' } },
    { id: 10, name: 'is_priority', required: true, type: { kind: 'boolean' } },
    { id: 11, name: 'note', required: false, type: { kind: 'string' } },
    {
      id: 12,
      name: 'address',
      required: false,
      type: {
        kind: 'struct',
        fields: [
          { id: 16, name: 'street', required: false, type: { kind: 'string' } },
          { id: 17, name: 'city', required: false, type: { kind: 'string' } },
          { id: 18, name: 'zip', required: false, type: { kind: 'string' } },
        ],
      },
    },
    { id: 13, name: 'tags', required: false, type: { kind: 'list', elementId: 19, elementRequired: false, element: { kind: 'string' } } },
    { id: 14, name: 'attributes', required: false, type: { kind: 'map', keyId: 20, key: { kind: 'string' }, valueId: 21, valueRequired: false, value: { kind: 'string' } } },
    { id: 15, name: 'kafka_offset', required: true, type: { kind: 'long' } },
  ],
};

// --- deterministic data, generated before the clock starts --------------------------------------------


/**
 * Per-row values are indexes into pools of distinct strings (as a decoder's output would be short-lived
 * strings, not a million of them kept alive: a large live heap would make every GC slower and bill it
 * to the writer). Pools are flattened strings, as a decoder's utf8Slice produces.
 */
interface Data {
  n: number;
  pools: { customer: string[]; status: string[]; sku: string[]; country: string[]; note: string[]; street: string[]; city: string[]; zip: string[]; tag: string[]; attrKey: string[]; attrValue: string[] };
  customer: Int32Array;
  status: Uint8Array;
  eventTime: Float64Array;
  amount: Float64Array;
  priceCents: Float64Array;
  quantity: Int32Array;
  sku: Int32Array;
  country: Uint8Array;
  priority: Uint8Array;
  /** -1 = null */
  note: Int32Array;
  street: Int32Array;
  city: Int32Array;
  zip: Int32Array;
  tagCount: Uint8Array;
  tags: Int32Array;
  attrCount: Uint8Array;
  attrKeys: Int32Array;
  attrValues: Int32Array;
}

const flat = (s: string): string => Buffer.from(s, 'utf8').toString('utf8');

function generate(n: number, seed: number): Data {
  const rnd = prng(seed);
  const int = (k: number): number => Math.floor(rnd() * k);
  const hex = (len: number): string => Array.from({ length: len }, () => '0123456789abcdef'[int(16)]).join('');
  const words = Array.from({ length: 300 }, () => Array.from({ length: 3 + int(7) }, () => String.fromCharCode(97 + int(26))).join(''));
  const pools = {
    customer: Array.from({ length: 100_000 }, () => flat(`${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`)),
    status: ['CREATED', 'CREATED', 'CREATED', 'PAID', 'PAID', 'SHIPPED', 'DELIVERED', 'CANCELLED'],
    sku: Array.from({ length: 20_000 }, (_, i) => flat(`SKU-${String(i).padStart(6, '0')}-${hex(4)}`)),
    country: ['DE', 'FR', 'US', 'GB', 'NL', 'ES', 'IT', 'PL', 'SE', 'JP', 'BR', 'IN', 'CA', 'AU', 'AT', 'CH'],
    note: Array.from({ length: 200_000 }, () => flat(Array.from({ length: 3 + int(8) }, () => words[int(words.length)]).join(' '))),
    street: Array.from({ length: 100_000 }, (_, i) => flat(`${1 + int(300)} ${words[(i * 7) % 300]} ${['Street', 'Road', 'Allee', 'Straße'][i % 4]}`)),
    city: Array.from({ length: 500 }, (_, i) => flat(i % 17 === 0 ? `Zürich-${i}` : `${words[i % 300]}ville`)),
    zip: Array.from({ length: 90_000 }, (_, i) => String(10000 + i)),
    tag: Array.from({ length: 50 }, (_, i) => flat(`tag-${words[i]}`)),
    attrKey: ['color', 'size', 'gift', 'channel', 'promo'],
    attrValue: words,
  };
  const tags: number[] = [];
  const attrKeys: number[] = [];
  const attrValues: number[] = [];
  const d: Data = {
    n,
    pools,
    customer: new Int32Array(n),
    status: new Uint8Array(n),
    eventTime: new Float64Array(n),
    amount: new Float64Array(n),
    priceCents: new Float64Array(n),
    quantity: new Int32Array(n),
    sku: new Int32Array(n),
    country: new Uint8Array(n),
    priority: new Uint8Array(n),
    note: new Int32Array(n),
    street: new Int32Array(n),
    city: new Int32Array(n),
    zip: new Int32Array(n),
    tagCount: new Uint8Array(n),
    tags: new Int32Array(0),
    attrCount: new Uint8Array(n),
    attrKeys: new Int32Array(0),
    attrValues: new Int32Array(0),
  };
  const base = 1_700_000_000_000_000;
  for (let i = 0; i < n; i++) {
    d.customer[i] = Math.floor(rnd() * rnd() * pools.customer.length); // skewed: some customers order often
    d.status[i] = int(pools.status.length);
    d.eventTime[i] = base + i * 1000 + int(1000);
    d.priceCents[i] = 99 + int(99_900);
    d.amount[i] = Math.round(rnd() * 100_000) / 100;
    d.quantity[i] = 1 + int(10);
    d.sku[i] = int(pools.sku.length);
    d.country[i] = int(pools.country.length);
    d.priority[i] = rnd() < 0.1 ? 1 : 0;
    d.note[i] = rnd() < 0.3 ? -1 : int(pools.note.length);
    d.street[i] = int(pools.street.length);
    d.city[i] = int(pools.city.length);
    d.zip[i] = int(pools.zip.length);
    const tc = int(4);
    d.tagCount[i] = tc;
    for (let k = 0; k < tc; k++) tags.push(int(pools.tag.length));
    const ac = int(4);
    d.attrCount[i] = ac;
    for (let k = 0; k < ac; k++) {
      attrKeys.push((i + k) % pools.attrKey.length);
      attrValues.push(int(pools.attrValue.length));
    }
  }
  d.tags = Int32Array.from(tags);
  d.attrKeys = Int32Array.from(attrKeys);
  d.attrValues = Int32Array.from(attrValues);
  return d;
}

// --- the decoder-shaped append loop ---------------------------------------------------------------------

/** Appends every row, record by record; `flush` is awaited when endRecord() asks for it. */
async function appendAll(a: RecordAppender, d: Data, flush: (() => Promise<void>) | undefined): Promise<void> {
  const orderId = a.long(1);
  const customer = a.string(2);
  const status = a.string(3);
  const eventTime = a.long(4);
  const amount = a.double(5);
  const price = a.decimal(6);
  const quantity = a.int(7);
  const sku = a.string(8);
  const country = a.string(9);
  const priority = a.boolean(10);
  const note = a.string(11);
  const address = a.struct(12);
  const street = a.string(16);
  const city = a.string(17);
  const zip = a.string(18);
  const tags = a.list(13);
  const tag = a.string(19);
  const attrs = a.map(14);
  const key = a.string(20);
  const value = a.string(21);
  const offset = a.long(15);
  const p = d.pools;
  let t = 0;
  let m = 0;
  for (let i = 0; i < d.n; i++) {
    orderId.appendNumber(1_000_000_000_000 + i);
    customer.append(p.customer[d.customer[i] as number] as string);
    status.append(p.status[d.status[i] as number] as string);
    eventTime.appendNumber(d.eventTime[i] as number);
    amount.append(d.amount[i] as number);
    price.appendUnscaledNumber(d.priceCents[i] as number);
    quantity.append(d.quantity[i] as number);
    sku.append(p.sku[d.sku[i] as number] as string);
    country.append(p.country[d.country[i] as number] as string);
    priority.append(d.priority[i] === 1);
    const nt = d.note[i] as number;
    if (nt < 0) note.appendNull();
    else note.append(p.note[nt] as string);
    address.begin();
    street.append(p.street[d.street[i] as number] as string);
    city.append(p.city[d.city[i] as number] as string);
    zip.append(p.zip[d.zip[i] as number] as string);
    address.end();
    tags.begin();
    for (let k = d.tagCount[i] as number; k > 0; k--) tag.append(p.tag[d.tags[t++] as number] as string);
    tags.end();
    attrs.begin();
    for (let k = d.attrCount[i] as number; k > 0; k--) {
      key.append(p.attrKey[d.attrKeys[m] as number] as string);
      value.append(p.attrValue[d.attrValues[m++] as number] as string);
    }
    attrs.end();
    offset.appendNumber(i);
    if (a.endRecord() && flush !== undefined) await flush();
  }
}

// --- measurement ----------------------------------------------------------------------------------------

function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

function peakRssMiB(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m !== null) return Number(m[1]) / 1024;
  } catch {
    // not Linux: fall back to the process-lifetime peak
  }
  return process.resourceUsage().maxRSS / 1024;
}

interface Run {
  wallS: number;
  cpuS: number;
  outBytes: number;
  peakMiB: number;
  addedMiB: number;
  wasmMiB: number;
}

async function measure(body: () => Promise<number>): Promise<Run> {
  globalThis.gc?.();
  resetPeakRss();
  const before = process.memoryUsage().rss / 2 ** 20;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const outBytes = await body();
  const wallS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const peakMiB = peakRssMiB();
  return { wallS, cpuS: (cpu.user + cpu.system) / 1e6, outBytes, peakMiB, addedMiB: peakMiB - before, wasmMiB: wasmMemoryBytes() / 2 ** 20 };
}

const config: WriteConfig = { ...DEFAULT_WRITE_CONFIG, codec: CODEC, rowGroupRows: ROW_GROUP_ROWS, targetFileSizeBytes: 2 ** 40, rowGroupBufferBytes: 256 * 2 ** 20 };
const layout = buildLayout(SCHEMA);

/** The writer, end to end, into a store that counts and drops the bytes. */
async function runWriter(d: Data): Promise<number> {
  let bytes = 0;
  const store = {
    async putStream(location: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<ObjectInfo> {
      let size = 0;
      for await (const c of chunks) size += c.byteLength;
      bytes += size;
      return { location, size, lastModifiedMs: 0 };
    },
  };
  const writer = new DataFileWriter({ layout, store, newLocation: () => 'memory://bench/data.parquet', partition: [], specId: 0, config });
  await appendAll(writer.appender, d, () => writer.flushIfNeeded());
  const files = await writer.close();
  const rows = files.reduce((n, f) => n + Number(f.recordCount), 0);
  if (rows !== d.n) throw new Error(`writer wrote ${rows} rows, expected ${d.n}`);
  return bytes;
}

/** The finished columns of all rows (built untimed with the same builders), as one Arrow table. */
function finishedColumns(d: Data): arrow.Table {
  const a = new RecordAppender(layout, () => ({ kind: 'none' }));
  void appendAll(a, d, undefined);
  const data = arrow.makeData({ type: layout.arrowStruct, length: d.n, nullCount: 0, children: a.columns.map((c) => c.toData()) });
  return new arrow.Table([new arrow.RecordBatch(layout.arrowSchema, data)]);
}

/** Bare parquet-wasm: Arrow IPC + writeParquet of the finished columns, same row groups and properties. */
function runBare(table: arrow.Table): number {
  const ipc = arrow.tableToIPC(table, 'stream');
  const wt = pw.Table.fromIPCStream(ipc);
  // The writer's encoder settings, with row groups cut by count (the writer seals every 100k rows).
  const props = new pw.WriterPropertiesBuilder()
    .setWriterVersion(pw.WriterVersion.V1)
    .setCompression(CODEC_ENUM[CODEC])
    .setMaxRowGroupSize(ROW_GROUP_ROWS)
    .setDataPageSizeLimit(config.pageSizeBytes)
    .setDictionaryPageSizeLimit(config.dictSizeBytes)
    .setStatisticsEnabled(pw.EnabledStatistics.Page)
    .build();
  const out = pw.writeParquet(wt, props); // consumes wt

  return out.byteLength;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

async function main(): Promise<void> {
  const gen0 = performance.now();
  const d = generate(ROWS, 20240501);
  const warm = generate(20_000, 7);
  const rawBytes = (() => {
    const a = new RecordAppender(layout, () => ({ kind: 'none' }));
    void appendAll(a, d, undefined);
    return a.usedBytes();
  })();
  console.log(`bench:write  ${ROWS.toLocaleString()} rows, 15 fields (struct, list, map), codec ${CODEC}, row groups of ${ROW_GROUP_ROWS.toLocaleString()} rows`);
  console.log(`  data generated in ${((performance.now() - gen0) / 1000).toFixed(1)} s (not timed); raw column data ${(rawBytes / 1e6).toFixed(1)} MB`);

  await runWriter(warm); // warm-up: JIT, wasm instance
  runBare(finishedColumns(warm));

  const writerRuns: Run[] = [];
  if (ONLY !== 'bare') for (let r = 0; r < REPEAT; r++) writerRuns.push(await measure(() => runWriter(d)));
  const bareRuns: Run[] = [];
  if (ONLY !== 'writer') {
    const table = finishedColumns(d);
    for (let r = 0; r < REPEAT; r++) bareRuns.push(await measure(async () => runBare(table)));
  }
  if (ONLY !== undefined) {
    report(ONLY, ONLY === 'bare' ? bareRuns : writerRuns);
    return;
  }

  function report(name: string, runs: Run[]): { wall: number; cpu: number } {
    const wall = median(runs.map((r) => r.wallS));
    const cpu = median(runs.map((r) => r.cpuS));
    const out = (runs[0] as Run).outBytes;
    const peak = Math.max(...runs.map((r) => r.peakMiB));
    const added = Math.max(...runs.map((r) => r.addedMiB));
    const wasm = Math.max(...runs.map((r) => r.wasmMiB));
    console.log(
      `  ${name.padEnd(7)} ${wall.toFixed(2)} s wall (runs ${runs.map((r) => r.wallS.toFixed(2)).join(' ')}), ${cpu.toFixed(2)} CPU-s | ` +
        `${Math.round(ROWS / wall).toLocaleString()} rows/s wall, ${Math.round(ROWS / cpu).toLocaleString()} rows/CPU-s | ` +
        `${(rawBytes / 1e6 / wall).toFixed(1)} MB/s raw in, ${(out / 1e6 / wall).toFixed(1)} MB/s Parquet out | ` +
        `${(cpu / (rawBytes / 1e9)).toFixed(1)} CPU-s/GB raw, ${(cpu / (out / 1e9)).toFixed(1)} CPU-s/GB out | ` +
        `file ${(out / 1e6).toFixed(1)} MB | peak RSS ${peak.toFixed(0)} MiB (+${added.toFixed(0)} MiB during the run), wasm memory ${wasm.toFixed(0)} MiB`,
    );
    return { wall, cpu };
  }
  const w = report('writer', writerRuns);
  const b = report('bare', bareRuns);
  console.log(`  ratio writer/bare: ${(w.wall / b.wall).toFixed(2)}× wall, ${(w.cpu / b.cpu).toFixed(2)}× CPU   (target ≤ 2×)`);
  console.log(`  one-core rate: ${Math.round(ROWS / w.cpu).toLocaleString()} rows per CPU-second   (target ≥ 100,000)`);
}

await main();
