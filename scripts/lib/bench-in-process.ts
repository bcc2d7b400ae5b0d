/**
 * The phases of `npm run bench` that run in the bench process itself: the single-core ceiling (our Avro
 * decoder into a DataFileWriter, no Kafka, no upload, no commit) and the Kafka client alone (the task's
 * KafkaSource polling the topic, records dropped). They use the worker's modules directly, so scripts/bench.ts
 * loads this module only when one of them runs: the load phases then depend on nothing inside src/ but the
 * CLI, and run unchanged in another tree for a before/after comparison.
 */
import { ConfluentKafkaSource } from '../../src/consume/confluent/index.ts';
import { compileAvroDecoder } from '../../src/decode/avro-decoder.ts';
import { avroToIceberg } from '../../src/decode/avro-schema.ts';
import { buildLayout, resolveWriteConfig } from '../../src/write/index.ts';
import { decodeIntoWriter, measure, median } from './bench-common.ts';
import type { Frames, Run } from './bench-common.ts';
import { SEED, START_TIME_MS } from './bench-context.ts';
import type { Bench } from './bench-context.ts';

// ---------------------------------------------------------------------------------------------------
// The single-core ceiling
// ---------------------------------------------------------------------------------------------------

export interface CeilingResult {
  readonly run: Run;
  readonly runs: Run[];
  readonly parquetBytes: number;
}

/**
 * The produced events again, encoded in memory with the generator's encoder (same seed, same schema id:
 * byte-identical, checked), decoded into a DataFileWriter whose store counts and drops the bytes; median of
 * --repeat runs after a warm-up.
 */
export async function ceiling(b: Bench, inputBytes: number, schemaId: number): Promise<CeilingResult> {
  const records = b.o.records;
  const gen = new b.gen.OrderGenerator({ seed: SEED, schemaVersion: 1, startTimeMs: START_TIME_MS });
  const encode = b.gen.orderEncoder('avro', { schemaVersion: 1, schemaId });
  const buf = Buffer.allocUnsafe(inputBytes);
  const starts = new Float64Array(records + 1);
  let at = 0;
  for (let i = 0; i < records; i++) {
    const m = encode(gen.next());
    if (at + m.byteLength > inputBytes) throw new Error('the in-memory events are larger than what was produced: not the same data');
    buf.set(m, at);
    starts[i] = at;
    at += m.byteLength;
  }
  starts[records] = at;
  if (at !== inputBytes) throw new Error(`the in-memory events are ${at} bytes, the produced ones ${inputBytes}: not the same data`);
  const frames: Frames = { buf, starts };
  const schema = b.gen.orderAvroSchema(1);
  const table = avroToIceberg(schema);
  const layout = buildLayout(table);
  const program = compileAvroDecoder(schema, table);
  const config = resolveWriteConfig({}).config; // what an auto-created table without properties gets
  await decodeIntoWriter({ program, layout, config, frames, n: Math.min(records, 20_000) }); // warm-up: JIT, wasm
  const runs: Run[] = [];
  let parquetBytes = 0;
  for (let r = 0; r < b.o.repeat; r++) {
    runs.push(
      await measure(async () => {
        parquetBytes = (await decodeIntoWriter({ program, layout, config, frames, n: records })).parquetBytes;
      }),
    );
  }
  return { run: { wallS: median(runs.map((x) => x.wallS)), cpuS: median(runs.map((x) => x.cpuS)) }, runs, parquetBytes };
}

// ---------------------------------------------------------------------------------------------------
// The Kafka client alone
// ---------------------------------------------------------------------------------------------------

export interface ConsumeResult {
  readonly run: Run;
  readonly polls: number;
}

/** Polls the whole topic with the task's KafkaSource (4,096 records a poll, as a task) and drops the records. */
export async function consumeOnly(b: Bench, topic: string): Promise<ConsumeResult> {
  const records = b.o.records;
  const group = `${b.runId}-consume`;
  b.groups.add(group);
  const source = await ConfluentKafkaSource.connect({ settings: { 'bootstrap.servers': b.stack.kafkaBootstrap }, groupId: group });
  try {
    await source.subscribe({ kind: 'list', topics: [topic] }, { onAssigned: () => undefined, onRevoked: () => Promise.resolve() });
    let n = 0;
    let polls = 0;
    let t0 = 0;
    let cpu0 = process.cpuUsage();
    const until = Date.now() + 10 * 60_000;
    while (n < records) {
      if (Date.now() > until) throw new Error(`consume only: ${n} of ${records} records after 10 minutes`);
      const batch = await source.poll({ maxRecords: 4096, timeoutMs: 200 });
      if (n === 0 && batch.length > 0) {
        // The clock starts with the first records (after the group join), as the worker's "from assignment".
        t0 = performance.now();
        cpu0 = process.cpuUsage();
      }
      n += batch.length;
      polls++;
    }
    const cpu = process.cpuUsage(cpu0);
    return { run: { wallS: (performance.now() - t0) / 1000, cpuS: (cpu.user + cpu.system) / 1e6 }, polls };
  } finally {
    await source.close();
  }
}
