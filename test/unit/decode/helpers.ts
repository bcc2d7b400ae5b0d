/**
 * Decoder test helpers: encode values with avsc (the reference implementation), decode the bytes with
 * our compiled decoder into a real DataFileWriter's RecordAppender, read the Parquet file back with
 * hyparquet, and compute what should come back from avsc's own decoding of the same bytes, in the
 * logical-value convention of test/helpers/type-matrix.ts (longs/timestamps bigint µs, decimals unscaled
 * bigint, uuid/fixed/binary bytes, maps as [key, value] pairs, the union struct as {tag, field0, …}).
 */
import avro from 'avsc';
import { DataError } from '../../../src/core/errors.ts';
import { compileAvroDecoder } from '../../../src/decode/avro-decoder.ts';
import type { AvroDecoderOptions } from '../../../src/decode/avro-decoder.ts';
import { avroToIceberg, resolveAvroSchema, unionShape } from '../../../src/decode/avro-schema.ts';
import type { AvroType } from '../../../src/decode/avro-schema.ts';
import type { IcebergType, Schema } from '../../../src/iceberg/types.ts';
import { harness, readAll } from '../write/helpers.ts';
import type { Row, Value } from '../write/helpers.ts';

export type { Row, Value };

/** avsc with longs as bigint (so values beyond 2^53 round-trip) and unions always wrapped ({branch: v}). */
export const bigLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
  toBuffer: (n: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(BigInt(n));
    return b;
  },
  fromJSON: (v: unknown) => BigInt(v as number),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint',
  compare: (a: bigint, b: bigint) => (a === b ? 0 : a < b ? -1 : 1),
});

export function avscType(schema: unknown, bigints = false): avro.Type {
  return avro.Type.forSchema(schema as avro.Schema, bigints ? { wrapUnions: true, registry: { long: bigLong } } : { wrapUnions: true });
}

export interface RoundTrip {
  readonly table: Schema;
  /** What came back from the Parquet file. */
  readonly rows: Row[];
  /** What avsc says the bytes hold, in the same convention. */
  readonly expected: Row[];
  /** DataErrors raised per input (undefined = decoded). */
  readonly errors: (DataError | undefined)[];
}

/**
 * Encodes each value with avsc (or takes raw bytes), decodes it into a real writer, and reads the file
 * back. Inputs that raise a DataError are recorded and left out of `expected`.
 */
export async function roundTrip(
  writerSchema: unknown,
  inputs: readonly unknown[],
  opts: { table?: Schema; decoder?: AvroDecoderOptions; bigints?: boolean } = {},
): Promise<RoundTrip> {
  const table = opts.table ?? avroToIceberg(writerSchema);
  const type = avscType(writerSchema, opts.bigints === true);
  const w = resolveAvroSchema(writerSchema);
  const program = compileAvroDecoder(w, table, opts.decoder);
  const h = harness(table);
  const expected: Row[] = [];
  const errors: (DataError | undefined)[] = [];
  for (const input of inputs) {
    const bytes = input instanceof Uint8Array ? input : type.toBuffer(input);
    try {
      program.decode(h.writer.appender, bytes);
      errors.push(undefined);
      expected.push(expectRow(w, table, type.fromBuffer(Buffer.from(bytes))));
    } catch (e) {
      if (!(e instanceof DataError)) throw e;
      errors.push(e);
    }
  }
  const files = await h.writer.close();
  const rows = files.length === 0 ? [] : await readAll(h.store, files, table);
  return { table, rows, expected, errors };
}

function bigintFromBE(b: Uint8Array): bigint {
  let u = 0n;
  for (const x of b) u = (u << 8n) | BigInt(x);
  return b.length > 0 && (b[0] as number) & 0x80 ? u - (1n << BigInt(8 * b.length)) : u;
}

function uuidBytes(text: string): Uint8Array {
  return Uint8Array.from(Buffer.from(text.replace(/-/g, ''), 'hex'));
}

const UNIT: Record<string, bigint> = {
  'time-millis': 1000n,
  'timestamp-millis': 1000n,
  'local-timestamp-millis': 1000n,
};

export function expectRow(w: AvroType, table: Schema, v: unknown): Row {
  return expectValue(w, { kind: 'struct', fields: table.fields }, v) as Row;
}

/** avsc's decoded value of writer type w → the logical value the table column t should hold. */
export function expectValue(w: AvroType, t: IcebergType, v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (w.type) {
    case 'union': {
      const [name, inner] = Object.entries(v as Record<string, unknown>)[0] as [string, unknown];
      const branch = w.branches.find((b) => branchName(b) === name) as AvroType;
      const { nonNull } = unionShape(w);
      if (nonNull.length <= 1) return expectValue(branch, t, inner);
      if (t.kind !== 'struct') throw new Error('union into a non-struct');
      const k = nonNull.indexOf(branch);
      const out: Record<string, Value> = {};
      for (const f of t.fields) {
        if (f.name === 'tag') out[f.name] = k;
        else out[f.name] = f.name === `field${k}` ? expectValue(branch, f.type, inner) : null;
      }
      return out;
    }
    case 'record': {
      if (t.kind !== 'struct') throw new Error('record into a non-struct');
      const o = v as Record<string, unknown>;
      const out: Record<string, Value> = {};
      for (const f of t.fields) {
        const wf = w.fields.find((x) => x.name.toLowerCase() === f.name.toLowerCase());
        out[f.name] = wf === undefined ? null : expectValue(wf.type, f.type, o[wf.name]);
      }
      return out;
    }
    case 'array':
      if (t.kind !== 'list') throw new Error('array into a non-list');
      return (v as unknown[]).map((e) => expectValue(w.items, t.element, e));
    case 'map':
      if (t.kind !== 'map') throw new Error('map into a non-map');
      return Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, expectValue(w.values, t.value, x)]);
    case 'enum':
    case 'string':
      return t.kind === 'uuid' ? uuidBytes(v as string) : (v as string);
    case 'bytes':
    case 'fixed': {
      const b = Uint8Array.from(v as Buffer);
      if (w.logical?.kind === 'decimal') {
        const u = bigintFromBE(b);
        if (t.kind === 'string') return formatUnscaled(u, w.logical.scale);
        return u;
      }
      return b;
    }
    case 'int':
    case 'long': {
      const n = typeof v === 'bigint' ? v : BigInt(v as number);
      switch (t.kind) {
        case 'int':
        case 'date':
        case 'float':
        case 'double':
          return Number(n);
        default:
          return n * (UNIT[w.logical?.kind ?? ''] ?? 1n);
      }
    }
    default:
      return v as Value;
  }
}

function formatUnscaled(u: bigint, scale: number): string {
  const neg = u < 0n;
  let d = (neg ? -u : u).toString();
  if (scale > 0) {
    d = d.padStart(scale + 1, '0');
    d = `${d.slice(0, -scale)}.${d.slice(-scale)}`;
  }
  return neg ? `-${d}` : d;
}

function branchName(b: AvroType): string {
  if (b.type === 'record' || b.type === 'enum' || b.type === 'fixed') return b.name;
  return b.type;
}

// --- hand encoding (what avsc cannot write: negative block counts, corrupt bytes) --------------------

export function zigzag(n: number | bigint): number[] {
  let u = BigInt(n) >= 0n ? BigInt(n) << 1n : (-BigInt(n) << 1n) - 1n;
  const out: number[] = [];
  do {
    let b = Number(u & 0x7fn);
    u >>= 7n;
    if (u !== 0n) b |= 0x80;
    out.push(b);
  } while (u !== 0n);
  return out;
}

export function str(s: string): number[] {
  const b = [...Buffer.from(s, 'utf8')];
  return [...zigzag(b.length), ...b];
}
