/**
 * Test helpers for the Parquet writer: a generic feeder that appends logical rows (type-matrix
 * convention, test/helpers/type-matrix.ts) through the columnar API exactly as a decoder would, and an
 * independent read-back with hyparquet that returns values in the same convention, exactly (decimals
 * unscaled, timestamps as µs bigint, uuid as bytes).
 */
import zlib from 'node:zlib';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import type { FileMetaData, SchemaElement } from 'hyparquet';
import type { IcebergType, Schema } from '../../../src/iceberg/types.ts';
import type { DataFile } from '../../../src/iceberg/data-file.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { buildLayout, DataFileWriter, DEFAULT_WRITE_CONFIG } from '../../../src/write/index.ts';
import type { WriteConfig, WriteMemoryBudget } from '../../../src/write/index.ts';
import type { Row, Value } from '../../helpers/type-matrix.ts';
import { appendRow, appendValue } from '../../helpers/rows.ts';

export type { Row, Value };
export { appendRow, appendValue };
export { prng } from '../../helpers/prng.ts';

const compressors = {
  ZSTD: (input: Uint8Array) => zlib.zstdDecompressSync(input),
  GZIP: (input: Uint8Array) => zlib.gunzipSync(input),
  BROTLI: (input: Uint8Array) => zlib.brotliDecompressSync(input),
};

export function arrayBufferOf(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

export function footerOf(bytes: Uint8Array): FileMetaData {
  return parquetMetadata(arrayBufferOf(bytes));
}

function bigintFromBE(b: Uint8Array): bigint {
  let u = 0n;
  for (const x of b) u = (u << 8n) | BigInt(x);
  return b.length > 0 && (b[0] as number) & 0x80 ? u - (1n << BigInt(8 * b.length)) : u;
}

/** hyparquet's value → our logical value convention. */
function fromHyparquet(type: IcebergType, v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (type.kind) {
    case 'struct': {
      const o = v as Record<string, unknown>;
      return Object.fromEntries(type.fields.map((f) => [f.name, fromHyparquet(f.type, o[f.name])]));
    }
    case 'list':
      return (v as unknown[]).map((e) => fromHyparquet(type.element, e));
    case 'map':
      return Object.entries(v as Record<string, unknown>).map(([k, val]) => [
        fromHyparquet(type.key, type.key.kind === 'int' || type.key.kind === 'long' ? (type.key.kind === 'int' ? Number(k) : BigInt(k)) : k),
        fromHyparquet(type.value, val),
      ]);
    case 'decimal':
      if (v instanceof Uint8Array) return bigintFromBE(v);
      return BigInt(v as number | bigint);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return BigInt(v as bigint);
    case 'binary':
    case 'fixed':
    case 'uuid':
      return typeof v === 'string' ? new TextEncoder().encode(v) : Uint8Array.from(v as Uint8Array);
    default:
      return v as Value;
  }
}

/** Reads a file we wrote with hyparquet; values come back in the logical convention, exactly. */
export async function readBack(bytes: Uint8Array, schema: Schema): Promise<{ meta: FileMetaData; rows: Row[] }> {
  const file = arrayBufferOf(bytes);
  const meta = parquetMetadata(file);
  // hyparquet converts DECIMAL to a JS number (lossy beyond 2^53): read the unscaled value instead.
  const raw: FileMetaData = {
    ...meta,
    schema: meta.schema.map((e): SchemaElement => {
      if (e.converted_type !== 'DECIMAL') return e;
      const rest = { ...e };
      delete rest.converted_type;
      delete rest.logical_type;
      return rest;
    }),
  };
  const objects = await parquetReadObjects({
    file,
    metadata: raw,
    compressors,
    utf8: false, // STRING-annotated columns still decode; unannotated binary stays bytes
    parsers: {
      timestampFromMicroseconds: (x: bigint) => x,
      timestampFromNanoseconds: (x: bigint) => x,
      dateFromDays: (d: number) => d,
      uuidFromBytes: (b: Uint8Array) => b,
    },
  });
  const rows = objects.map((o) => Object.fromEntries(schema.fields.map((f) => [f.name, fromHyparquet(f.type, (o as Record<string, unknown>)[f.name])])));
  return { meta, rows };
}

export interface Harness {
  readonly store: MemoryObjectStore;
  readonly writer: DataFileWriter;
  readonly locations: string[];
}

export function harness(schema: Schema, config: Partial<WriteConfig> = {}, budget?: WriteMemoryBudget, name = 'w'): Harness {
  const store = new MemoryObjectStore();
  return harnessOn(store, schema, config, budget, name);
}

export function harnessOn(store: MemoryObjectStore, schema: Schema, config: Partial<WriteConfig> = {}, budget?: WriteMemoryBudget, name = 'w'): Harness {
  const locations: string[] = [];
  let n = 0;
  const writer = new DataFileWriter({
    layout: buildLayout(schema),
    store,
    newLocation: () => {
      const loc = `memory://wh/t/data/${name}-${n++}.parquet`;
      locations.push(loc);
      return loc;
    },
    partition: [],
    specId: 0,
    config: { ...DEFAULT_WRITE_CONFIG, ...config },
    ...(budget === undefined ? {} : { budget }),
  });
  return { store, writer, locations };
}

/** Reads every file back and returns all rows (in file order). */
export async function readAll(store: MemoryObjectStore, files: readonly DataFile[], schema: Schema): Promise<Row[]> {
  const out: Row[] = [];
  for (const f of files) out.push(...(await readBack(await store.get(f.filePath), schema)).rows);
  return out;
}

