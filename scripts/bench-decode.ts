/**
 * Benchmark of the columnar Avro decoder (`npm run bench:decode`).
 *
 * 1M deterministic order events (the 15-field schema of scripts/bench-write.ts and docs/reference/perf.md:
 * a nested record, an array, a map, a decimal, a timestamp, an optional string), encoded with avsc and
 * Confluent-framed into one buffer before the clock starts (messages are views into it, as a consumer's
 * fetch batch delivers them). Three timed stages over the same bytes, median of --repeat runs:
 *   (a) avsc `type.decode(buf, offset + 5)` to JS objects (the reference decoder, objects dropped);
 *   (b) our compiled decoder straight into a RecordAppender (buffers reset every 100k rows, not encoded);
 *   (c) our decoder into a DataFileWriter: decode + seal (metrics, Arrow IPC) + parquet-wasm ZSTD encode,
 *       streamed to a store that counts and drops the bytes: the single-core ceiling of decode + encode.
 * MB/s is always 10^6 bytes of framed Avro input per second; CPU-s/GB is CPU time per 10^9 input bytes.
 *
 * Usage: node scripts/bench-decode.ts [rows=1000000] [--repeat=3] [--codec=zstd]
 *   For a strict one-core number: taskset -c 0 node scripts/bench-decode.ts
 * Targets (issue 4): ≥ 15 MB/s of Avro per core end to end now, 25 MB/s is where we are heading.
 */
import { prng } from '../test/helpers/prng.ts';
import avro from 'avsc';
import { compileAvroDecoder } from '../src/decode/avro-decoder.ts';
import { avroToIceberg } from '../src/decode/avro-schema.ts';
import { buildLayout, DEFAULT_WRITE_CONFIG, RecordAppender } from '../src/write/index.ts';
import type { WriteConfig } from '../src/write/index.ts';
import { decodeIntoWriter, measure, median } from './lib/bench-common.ts';
import type { Frames, Run } from './lib/bench-common.ts';

const args = process.argv.slice(2);
const ROWS = Number(args.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
const REPEAT = Number(args.find((a) => a.startsWith('--repeat='))?.slice(9) ?? 3);
const CODEC = (args.find((a) => a.startsWith('--codec='))?.slice(8) ?? 'zstd') as WriteConfig['codec'];
const ROW_GROUP_ROWS = 100_000;

const SCHEMA = {
  type: 'record',
  name: 'OrderEvent',
  namespace: 'icefloe.bench',
  fields: [
    { name: 'order_id', type: 'long' },
    { name: 'customer_id', type: 'string' },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['CREATED', 'PAID', 'SHIPPED', 'DELIVERED', 'CANCELLED'] } },
    { name: 'event_time', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'amount', type: 'double' },
    { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'quantity', type: 'int' },
    { name: 'sku', type: 'string' },
    { name: 'country', type: 'string' },
    { name: 'is_priority', type: 'boolean' },
    { name: 'note', type: ['null', 'string'], default: null },
    {
      name: 'address',
      type: ['null', { type: 'record', name: 'Address', fields: [{ name: 'street', type: ['null', 'string'] }, { name: 'city', type: ['null', 'string'] }, { name: 'zip', type: ['null', 'string'] }] }],
      default: null,
    },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'attributes', type: { type: 'map', values: 'string' } },
    { name: 'kafka_offset', type: 'long' },
  ],
};


/** n framed order events in one buffer; deterministic. */
function generate(n: number, seed: number, type: avro.Type): Frames {
  const rnd = prng(seed);
  const int = (k: number): number => Math.floor(rnd() * k);
  const hex = (len: number): string => Array.from({ length: len }, () => '0123456789abcdef'[int(16)]).join('');
  const words = Array.from({ length: 300 }, () => Array.from({ length: 3 + int(7) }, () => String.fromCharCode(97 + int(26))).join(''));
  const customers = Array.from({ length: 100_000 }, () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`);
  const statuses = ['CREATED', 'CREATED', 'CREATED', 'PAID', 'PAID', 'SHIPPED', 'DELIVERED', 'CANCELLED'];
  const skus = Array.from({ length: 20_000 }, (_, i) => `SKU-${String(i).padStart(6, '0')}-${hex(4)}`);
  const countries = ['DE', 'FR', 'US', 'GB', 'NL', 'ES', 'IT', 'PL', 'SE', 'JP', 'BR', 'IN', 'CA', 'AU', 'AT', 'CH'];
  const cities = Array.from({ length: 500 }, (_, i) => (i % 17 === 0 ? `Zürich-${i}` : `${words[i % 300]}ville`));
  const attrKeys = ['color', 'size', 'gift', 'channel', 'promo'];
  const chunks: Buffer[] = [];
  const starts = new Float64Array(n + 1);
  let at = 0;
  const header = Buffer.from([0, 0, 0, 0, 42]);
  const price = Buffer.alloc(4);
  for (let i = 0; i < n; i++) {
    const cents = 99 + int(99_900);
    price.writeInt32BE(cents);
    const tags = Array.from({ length: int(4) }, () => `tag-${words[int(50)]}`);
    const attributes: Record<string, string> = {};
    for (let k = int(4); k > 0; k--) attributes[attrKeys[(i + k) % 5] as string] = words[int(300)] as string;
    const body = type.toBuffer({
      order_id: 1_000_000_000_000 + i,
      customer_id: customers[Math.floor(rnd() * rnd() * customers.length)],
      status: statuses[int(statuses.length)],
      event_time: 1_700_000_000_000_000 + i * 1000 + int(1000),
      amount: Math.round(rnd() * 100_000) / 100,
      price: Buffer.from(price),
      quantity: 1 + int(10),
      sku: skus[int(skus.length)],
      country: countries[int(countries.length)],
      is_priority: rnd() < 0.1,
      note: rnd() < 0.3 ? null : Array.from({ length: 3 + int(8) }, () => words[int(300)]).join(' '),
      address: { street: `${1 + int(300)} ${words[(i * 7) % 300]} ${['Street', 'Road', 'Allee', 'Straße'][i % 4]}`, city: cities[int(cities.length)], zip: String(10000 + int(90_000)) },
      tags,
      attributes,
      kafka_offset: i,
    });
    chunks.push(header, body);
    starts[i] = at;
    at += header.length + body.length;
  }
  starts[n] = at;
  return { buf: Buffer.concat(chunks, at), starts };
}

const type = avro.Type.forSchema(SCHEMA as avro.Schema);
const table = avroToIceberg(SCHEMA);
const layout = buildLayout(table);
const program = compileAvroDecoder(SCHEMA, table);
const config: WriteConfig = { ...DEFAULT_WRITE_CONFIG, codec: CODEC, rowGroupRows: ROW_GROUP_ROWS, targetFileSizeBytes: 2 ** 40, rowGroupBufferBytes: 256 * 2 ** 20 };

/** (a) avsc to JS objects. */
function runAvsc(f: Frames, n: number): number {
  let check = 0;
  const { buf, starts } = f;
  for (let i = 0; i < n; i++) {
    const r = type.decode(buf, (starts[i] as number) + 5) as { value: { kafka_offset: number } };
    check += r.value.kafka_offset;
  }
  return check;
}

/** (b) our decoder into a RecordAppender, buffers reset every row group (so memory stays as in the writer). */
function runColumnar(f: Frames, n: number, a: RecordAppender): void {
  const d = program.bind(a);
  const { buf, starts } = f;
  for (let i = 0; i < n; i++) {
    d.decode(buf, (starts[i] as number) + 5, starts[i + 1] as number);
    if (a.rows === ROW_GROUP_ROWS) {
      for (const c of a.columns) c.truncate(0);
      a.rows = 0;
    }
  }
  for (const c of a.columns) c.truncate(0);
  a.rows = 0;
}

/** (c) decode + the full DataFileWriter encode (scripts/lib/bench-common.ts, shared with `npm run bench`). */
async function runEndToEnd(f: Frames, n: number): Promise<number> {
  return (await decodeIntoWriter({ program, layout, config, frames: f, n })).parquetBytes;
}

async function main(): Promise<void> {
  const g0 = performance.now();
  const frames = generate(ROWS, 20240501, type);
  const warm = generate(20_000, 7, type);
  const inBytes = frames.starts[ROWS] as number;
  console.log(`bench:decode  ${ROWS.toLocaleString()} order events, ${(inBytes / ROWS).toFixed(1)} B/record framed Avro (${(inBytes / 1e6).toFixed(1)} MB), codec ${CODEC}, row groups of ${ROW_GROUP_ROWS.toLocaleString()}`);
  console.log(`  data generated and encoded with avsc in ${((performance.now() - g0) / 1000).toFixed(1)} s (not timed); node ${process.version}`);

  const appender = new RecordAppender(layout, () => ({ kind: 'none' }));
  // warm-up: JIT, wasm instance
  runAvsc(warm, 20_000);
  runColumnar(warm, 20_000, appender);
  await runEndToEnd(warm, 20_000);

  // sanity: avsc and our decoder agree on a checksum column (kafka_offset) before timing anything
  const expected = runAvsc(frames, ROWS);
  if (expected !== (ROWS * (ROWS - 1)) / 2) throw new Error('avsc checksum mismatch');

  const a: Run[] = [];
  const b: Run[] = [];
  const c: Run[] = [];
  let parquetBytes = 0;
  for (let r = 0; r < REPEAT; r++) {
    a.push(await measure(() => void runAvsc(frames, ROWS)));
    b.push(await measure(() => runColumnar(frames, ROWS, appender)));
    c.push(
      await measure(async () => {
        parquetBytes = await runEndToEnd(frames, ROWS);
      }),
    );
  }

  const rows: [string, Run[]][] = [
    ['(a) avsc decode → JS objects', a],
    ['(b) columnar decode → RecordAppender', b],
    ['(c) columnar decode + DataFileWriter (end to end)', c],
  ];
  const w = 52;
  console.log('');
  console.log(`  ${'stage'.padEnd(w)} ${'wall s'.padStart(7)} ${'CPU s'.padStart(7)} ${'records/s'.padStart(11)} ${'MB/s'.padStart(7)} ${'CPU-s/GB'.padStart(9)}  runs (wall s)`);
  for (const [name, runs] of rows) {
    const wall = median(runs.map((x) => x.wallS));
    const cpu = median(runs.map((x) => x.cpuS));
    console.log(
      `  ${name.padEnd(w)} ${wall.toFixed(2).padStart(7)} ${cpu.toFixed(2).padStart(7)} ${Math.round(ROWS / wall).toLocaleString().padStart(11)} ${(inBytes / 1e6 / wall).toFixed(1).padStart(7)} ${(cpu / (inBytes / 1e9)).toFixed(1).padStart(9)}  ${runs.map((x) => x.wallS.toFixed(2)).join(' ')}`,
    );
  }
  const wc = median(c.map((x) => x.wallS));
  const wb = median(b.map((x) => x.wallS));
  console.log('');
  console.log(`  Parquet out: ${(parquetBytes / 1e6).toFixed(1)} MB; decode share of end to end: ${((100 * wb) / wc).toFixed(0)}%`);
  console.log(`  end to end per core: ${(inBytes / 1e6 / wc).toFixed(1)} MB/s of Avro (targets: ≥ 15 MB/s now, 25 MB/s heading)`);
}

await main();
