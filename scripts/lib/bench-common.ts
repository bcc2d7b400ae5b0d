/**
 * Shared pieces of the benchmarks (scripts/bench*.ts): timing a body by wall and CPU time, medians and
 * percentiles, and the single-core ceiling of decode + columnar encode — our compiled Avro decoder
 * writing into a `DataFileWriter` whose store counts and drops the bytes (no Kafka, no object store).
 */
import type { AvroProgram } from '../../src/decode/avro-decoder.ts';
import type { ObjectStore } from '../../src/upload/port.ts';
import { DataFileWriter } from '../../src/write/index.ts';
import type { ColumnLayout, WriteConfig } from '../../src/write/index.ts';

export interface Run {
  wallS: number;
  /** This process's user + system time (all threads, GC included). */
  cpuS: number;
}

/** Times `body` (after a GC when --expose-gc is on). */
export async function measure(body: () => Promise<void> | void): Promise<Run> {
  globalThis.gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await body();
  const wallS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { wallS, cpuS: (cpu.user + cpu.system) / 1e6 };
}

// In their own module so the benchmark's load phases, which must not import src/, can use them too.
export { median, percentile } from './bench-stats.ts';

/** Messages in one buffer: `starts[i]..starts[i+1]` is message i (Confluent framed). */
export interface Frames {
  readonly buf: Buffer;
  readonly starts: Float64Array;
}

/** Packs separately encoded messages into one buffer (messages become views, as in a fetch batch). */
export function packFrames(messages: readonly Uint8Array[]): Frames {
  const starts = new Float64Array(messages.length + 1);
  let at = 0;
  for (let i = 0; i < messages.length; i++) {
    starts[i] = at;
    at += (messages[i] as Uint8Array).byteLength;
  }
  starts[messages.length] = at;
  return { buf: Buffer.concat(messages, at), starts };
}

/** An object store that counts the bytes streamed into it and keeps none of them. */
export function countingStore(): { store: Pick<ObjectStore, 'putStream'>; bytes: () => number } {
  let bytes = 0;
  return {
    store: {
      async putStream(location, chunks) {
        let size = 0;
        for await (const c of chunks) size += c.byteLength;
        bytes += size;
        return { location, size, lastModifiedMs: 0 };
      },
    },
    bytes: () => bytes,
  };
}

export interface CeilingOptions {
  readonly program: AvroProgram;
  readonly layout: ColumnLayout;
  readonly config: WriteConfig;
  readonly frames: Frames;
  /** Messages to decode: the first n of `frames`. */
  readonly n: number;
}

/**
 * Decode + the full DataFileWriter encode (seal, parquet-wasm encode, footer) of the first n messages,
 * into a counting store; returns the Parquet bytes written. Throws unless every row reached a file.
 */
export async function decodeIntoWriter(o: CeilingOptions): Promise<{ parquetBytes: number; files: number }> {
  const counting = countingStore();
  const writer = new DataFileWriter({ layout: o.layout, store: counting.store, newLocation: () => 'memory://bench/data.parquet', partition: [], specId: 0, config: o.config });
  const d = o.program.bind(writer.appender);
  const { buf, starts } = o.frames;
  for (let i = 0; i < o.n; i++) {
    if (d.decode(buf, (starts[i] as number) + 5, starts[i + 1] as number)) await writer.flushIfNeeded();
  }
  const files = await writer.close();
  const rows = files.reduce((k, x) => k + Number(x.recordCount), 0);
  if (rows !== o.n) throw new Error(`wrote ${rows} rows, expected ${o.n}`);
  return { parquetBytes: counting.bytes(), files: files.length };
}
