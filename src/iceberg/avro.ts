/**
 * Avro object container files in memory (Avro 1.11 spec "Object Container Files"): encode and decode to
 * and from Uint8Array, for manifests and manifest lists.
 *
 * Why our own framing: avsc's encoder either loses the `field-id` / `element-id` attributes from the
 * header schema or cannot use a BigInt long type (reference iceberg-writer.md §6.7). So we write the
 * container ourselves (magic, metadata map with `avro.schema` = our exact JSON, sync marker, blocks) and
 * use avsc only to encode/decode record bodies, with a long type that maps Avro long <-> bigint (snapshot
 * ids exceed 2^53).
 *
 * Codecs: read null, deflate, snappy (with its 4-byte big-endian CRC-32 of the uncompressed block),
 * zstandard (Node's zlib); write null, deflate, snappy, zstandard.
 *
 * Owns: bytes <-> records. Must not: do I/O, or interpret Iceberg semantics (manifest*.ts do).
 * A file we cannot decode is a FatalError (json-util.ts `malformed`).
 */
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import avro from 'avsc';
import snappy from 'snappyjs';
import { asBuffer, bytesEqual, concatBytes, utf8Decode, utf8Encode } from './bytes.ts';
import { malformed } from './json-util.ts';

export type AvroCodec = 'null' | 'deflate' | 'snappy' | 'zstandard';

const MAGIC = Uint8Array.of(0x4f, 0x62, 0x6a, 0x01); // "Obj" 1

/** avsc long that reads and writes bigint (the default rejects values beyond 2^53). */
function bigintLongType(): avro.Type {
  return avro.types.LongType.__with({
    fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
    toBuffer: (n: bigint | number) => {
      const buf = Buffer.alloc(8);
      buf.writeBigInt64LE(BigInt(n));
      return buf;
    },
    fromJSON: (v: unknown) => BigInt(v as string),
    toJSON: (n: bigint) => Number(n),
    isValid: (n: unknown) => typeof n === 'bigint',
    compare: (a: bigint, b: bigint) => (a === b ? 0 : a < b ? -1 : 1),
  });
}

/** An avsc Type for a schema with bigint longs; records decode to plain objects keyed by field name. */
export function avroType(schema: unknown): avro.Type {
  const long = bigintLongType();
  return avro.Type.forSchema(schema as avro.Schema, {
    registry: { long },
    // `{"type":"long","logicalType":...}` (timestamps in partition records) bypasses the registry in
    // avsc; the hook routes every long, bare or annotated, to the bigint type.
    typeHook: (s: unknown) => (typeof s === 'object' && s !== null && (s as { type?: unknown }).type === 'long' ? long : undefined),
    wrapUnions: 'auto',
    omitRecordMethods: true,
  });
}

// ---------------------------------------------------------------------------------------------------
// Varints (zig-zag longs) for the container framing
// ---------------------------------------------------------------------------------------------------

function writeLong(out: number[], v: number): void {
  let n = v >= 0 ? v * 2 : -v * 2 - 1; // zig-zag, exact for |v| < 2^52
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
}

class Reader {
  pos = 0;
  readonly bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }
  long(): number {
    let n = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.bytes.length) throw malformed('avro file', 'truncated varint');
      const b = this.bytes[this.pos++] as number;
      n += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) break;
      mul *= 0x80;
      if (mul > 2 ** 63) throw malformed('avro file', 'varint too long');
    }
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
  }
  take(n: number): Uint8Array {
    if (n < 0 || this.pos + n > this.bytes.length) throw malformed('avro file', 'truncated data');
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  bytesField(): Uint8Array {
    return this.take(this.long());
  }
}

// ---------------------------------------------------------------------------------------------------
// Codecs
// ---------------------------------------------------------------------------------------------------

function compress(codec: AvroCodec, data: Uint8Array): Uint8Array {
  switch (codec) {
    case 'null':
      return data;
    case 'deflate':
      // Avro deflate is raw RFC 1951 (Java's Deflater with nowrap), no zlib header.
      return zlib.deflateRawSync(data);
    case 'snappy': {
      const body = snappy.compress(asBuffer(data));
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(zlib.crc32(data) >>> 0);
      return concatBytes([body, crc]);
    }
    case 'zstandard':
      return zlib.zstdCompressSync(data);
  }
}

function decompress(codec: string, data: Uint8Array): Uint8Array {
  switch (codec) {
    case 'null':
      return data;
    case 'deflate':
      return zlib.inflateRawSync(data);
    case 'snappy': {
      if (data.length < 4) throw malformed('avro file', 'snappy block shorter than its checksum');
      const body = data.subarray(0, data.length - 4);
      const out = snappy.uncompress(asBuffer(body));
      const expected = new DataView(data.buffer, data.byteOffset + data.length - 4, 4).getUint32(0, false);
      if ((zlib.crc32(out) >>> 0) !== expected) throw malformed('avro file', 'snappy block checksum mismatch');
      return out;
    }
    case 'zstandard':
    case 'zstd':
      return zlib.zstdDecompressSync(data);
    default:
      throw malformed('avro file', `unsupported codec ${codec}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Container encode / decode
// ---------------------------------------------------------------------------------------------------

export interface AvroEncodeOptions {
  /** The writer schema as a JSON value (written verbatim into `avro.schema`, attributes included). */
  readonly schema: unknown;
  /** Extra header metadata (Iceberg keys such as `schema`, `partition-spec`, `snapshot-id`). */
  readonly metadata?: Readonly<Record<string, string | Uint8Array>>;
  readonly records: readonly unknown[];
  readonly codec?: AvroCodec;
  /** 16 bytes; default: derived from the content (deterministic output for deterministic input). */
  readonly syncMarker?: Uint8Array;
  /** Records per block (default 1000). */
  readonly blockSize?: number;
}

/** Encodes records into a complete Avro object container file. Throws TypeError on a record that does
 *  not match the schema (naming the first offending path avsc reports). */
export function encodeAvroContainer(opts: AvroEncodeOptions): Uint8Array {
  const codec = opts.codec ?? 'null';
  const type = avroType(opts.schema);
  const schemaText = JSON.stringify(opts.schema);
  const blockSize = Math.max(1, opts.blockSize ?? 1000);

  const bodies: Uint8Array[] = [];
  for (const r of opts.records) {
    let buf: Buffer;
    try {
      buf = type.toBuffer(r);
    } catch (e) {
      const paths: string[] = [];
      type.isValid(r, { errorHook: (path: string[]) => paths.push(path.join('.')) });
      throw new TypeError(`record does not match the Avro schema${paths.length > 0 ? ` at ${paths.join(', ')}` : ''}`, { cause: e });
    }
    bodies.push(buf);
  }

  const sync = opts.syncMarker ?? createHash('md5').update(schemaText).update(concatBytes(bodies)).digest();
  if (sync.length !== 16) throw new TypeError('an Avro sync marker has 16 bytes');

  const header: number[] = [...MAGIC];
  const meta: [string, Uint8Array][] = [
    ['avro.schema', utf8Encode(schemaText)],
    ['avro.codec', utf8Encode(codec)],
  ];
  for (const [k, v] of Object.entries(opts.metadata ?? {})) meta.push([k, typeof v === 'string' ? utf8Encode(v) : v]);
  const parts: Uint8Array[] = [];
  writeLong(header, meta.length);
  parts.push(Uint8Array.from(header));
  for (const [k, v] of meta) {
    const kb = utf8Encode(k);
    const lens: number[] = [];
    writeLong(lens, kb.length);
    parts.push(Uint8Array.from(lens), kb);
    const vl: number[] = [];
    writeLong(vl, v.length);
    parts.push(Uint8Array.from(vl), v);
  }
  parts.push(Uint8Array.of(0), sync);

  for (let i = 0; i < bodies.length; i += blockSize) {
    const chunk = bodies.slice(i, i + blockSize);
    const data = compress(codec, concatBytes(chunk));
    const head: number[] = [];
    writeLong(head, chunk.length);
    writeLong(head, data.length);
    parts.push(Uint8Array.from(head), data, sync);
  }
  return concatBytes(parts);
}

export interface AvroContainer {
  /** The writer schema, parsed. */
  readonly schema: unknown;
  /** `avro.schema` exactly as stored. */
  readonly schemaText: string;
  readonly codec: string;
  /** All header metadata as UTF-8 text (Iceberg keys are text), `avro.*` included. */
  readonly metadata: ReadonlyMap<string, string>;
  /** Decoded records (plain objects; long -> bigint, bytes/fixed -> Buffer). */
  readonly records: readonly unknown[];
}

/** Reads the header only (cheap: no block decoding). */
export function readAvroHeader(bytes: Uint8Array): { schemaText: string; codec: string; metadata: Map<string, string>; sync: Uint8Array; dataStart: number } {
  const r = new Reader(bytes);
  if (!bytesEqual(r.take(4), MAGIC)) throw malformed('avro file', 'not an Avro object container (bad magic)');
  const metadata = new Map<string, string>();
  for (;;) {
    let count = r.long();
    if (count === 0) break;
    if (count < 0) {
      count = -count;
      r.long(); // block size in bytes, unused
    }
    for (let i = 0; i < count; i++) {
      const key = utf8Decode(r.bytesField());
      const value = r.bytesField();
      let text: string;
      try {
        text = utf8Decode(value);
      } catch {
        text = Buffer.from(value).toString('latin1');
      }
      metadata.set(key, text);
    }
  }
  const sync = r.take(16);
  const schemaText = metadata.get('avro.schema');
  if (schemaText === undefined) throw malformed('avro file', 'header has no avro.schema');
  return { schemaText, codec: metadata.get('avro.codec') ?? 'null', metadata, sync, dataStart: r.pos };
}

/** Decodes a whole container: header, then every block with its codec, then every record. */
export function decodeAvroContainer(bytes: Uint8Array): AvroContainer {
  const h = readAvroHeader(bytes);
  let schema: unknown;
  try {
    schema = JSON.parse(h.schemaText);
  } catch (e) {
    throw malformed('avro file', 'avro.schema is not JSON', e);
  }
  let type: avro.Type;
  try {
    type = avroType(schema);
  } catch (e) {
    throw malformed('avro file', 'avro.schema is not a valid Avro schema', e);
  }
  const r = new Reader(bytes);
  r.pos = h.dataStart;
  const records: unknown[] = [];
  while (r.pos < bytes.length) {
    const count = r.long();
    const size = r.long();
    const block = asBuffer(decompress(h.codec, r.take(size)));
    if (!bytesEqual(r.take(16), h.sync)) throw malformed('avro file', 'sync marker mismatch (corrupt block)');
    let pos = 0;
    for (let i = 0; i < count; i++) {
      let res: { value: unknown; offset: number };
      try {
        res = type.decode(block, pos) as { value: unknown; offset: number };
      } catch (e) {
        throw malformed('avro file', 'record does not decode with the writer schema', e);
      }
      if (res.offset < 0) throw malformed('avro file', 'block ends inside a record');
      records.push(res.value);
      pos = res.offset;
    }
  }
  return { schema, schemaText: h.schemaText, codec: h.codec, metadata: h.metadata, records };
}
