/**
 * Encoders of the order events (orders.ts) to Kafka record values and keys, one per format (see orders.ts):
 * Confluent-framed Avro and Protobuf, JsonConverter's envelope and bare JSON.
 *
 * Owns: the byte forms. Must not: do I/O. Avro, the benchmark format, has a schema-specific encoder
 * (AvroOrderWriter) so the generator feeds a producer at up to ~100k records/s from one thread; Protobuf is
 * encoded with protobufjs from the .proto text, an encoder independent of our decoder.
 */
import protobuf from 'protobufjs';
import { ConfigError } from '../../src/core/errors.ts';
import { ORDER_NAMESPACE, ORDER_PROTOBUF_MESSAGE_INDEXES, ORDER_RECORD, orderConnectSchema, orderProtobufSchema } from './order-schemas.ts';
import { ORDER_FORMATS, ORDER_STATUSES } from './orders.ts';
import type { OrderEvent, OrderFormat, SchemaVersion } from './orders.ts';

/** An unscaled decimal as Avro / Connect decimal bytes: big-endian two's complement, as few bytes as fit. */
export function decimalBytes(unscaled: bigint): Uint8Array {
  if (unscaled >= -0x80000000n && unscaled <= 0x7fffffffn) {
    // The common case (every generated price): 32-bit arithmetic, no BigInt shifts.
    const n = Number(unscaled);
    const size = n >= -0x80 && n <= 0x7f ? 1 : n >= -0x8000 && n <= 0x7fff ? 2 : n >= -0x800000 && n <= 0x7fffff ? 3 : 4;
    const out = new Uint8Array(size);
    for (let i = size - 1, v = n; i >= 0; i--, v >>= 8) out[i] = v & 0xff;
    return out;
  }
  const out: number[] = [];
  let v = unscaled;
  for (;;) {
    const b = Number(BigInt.asUintN(8, v));
    out.push(b);
    v >>= 8n;
    // Done once the remaining value is just the sign extension of the byte's top bit.
    if ((v === 0n && (b & 0x80) === 0) || (v === -1n && (b & 0x80) !== 0)) break;
  }
  return Uint8Array.from(out.reverse());
}

function centsText(unscaled: bigint): string {
  const neg = unscaled < 0n;
  const a = neg ? -unscaled : unscaled;
  return `${neg ? '-' : ''}${a / 100n}.${String(a % 100n).padStart(2, '0')}`;
}

/** The record key: the order id as UTF-8 (StringConverter). */
export function orderKey(event: OrderEvent): Uint8Array {
  return Buffer.from(event.order_id, 'utf8');
}

function writeHeader(out: Uint8Array, schemaId: number): void {
  if (!Number.isInteger(schemaId) || schemaId < 0 || schemaId > 0xffffffff) throw new ConfigError(`schema id ${schemaId} does not fit the Confluent wire format`);
  out[0] = 0;
  out[1] = schemaId >>> 24;
  out[2] = (schemaId >>> 16) & 0xff;
  out[3] = (schemaId >>> 8) & 0xff;
  out[4] = schemaId & 0xff;
}

/** Confluent framing: magic byte 0, the schema id as a big-endian int32, then the body. */
export function confluentFrame(schemaId: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + body.length);
  writeHeader(out, schemaId);
  out.set(body, 5);
  return out;
}

function zigzagVarint(n: number, out: number[]): void {
  let v = (n << 1) ^ (n >> 31);
  v >>>= 0;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
}

/**
 * Confluent's Protobuf message-index list: zig-zag varints, the count and then each index (the message's
 * path: top-level index, then nested), with the single byte 0 standing for [0], the file's first message.
 */
export function confluentMessageIndexBytes(indexes: readonly number[]): Uint8Array {
  if (indexes.length === 0 || (indexes.length === 1 && indexes[0] === 0)) return Uint8Array.of(0);
  const out: number[] = [];
  zigzagVarint(indexes.length, out);
  for (const i of indexes) {
    if (!Number.isInteger(i) || i < 0) throw new ConfigError(`a Protobuf message index must be a non-negative integer, not ${i}`);
    zigzagVarint(i, out);
  }
  return Uint8Array.from(out);
}

/** Confluent Protobuf framing: header, message-index list, message. */
export function confluentProtobufFrame(schemaId: number, indexes: readonly number[], body: Uint8Array): Uint8Array {
  const list = confluentMessageIndexBytes(indexes);
  const out = new Uint8Array(5 + list.length + body.length);
  writeHeader(out, schemaId);
  out.set(list, 5);
  out.set(body, 5 + list.length);
  return out;
}

/**
 * Avro binary (spec "Binary Encoding") for exactly the order schema, written by hand into one growing
 * buffer: int and long as zig-zag varints, strings and bytes length-prefixed, the enum as its index, a
 * union as its branch index then the value, arrays and maps as one block then the end marker 0. A generic
 * encoder (avsc) spends most of its time on what this schema never needs; the tests check every byte
 * against avsc's decoding.
 */
const utf8 = new TextEncoder();

class AvroOrderWriter {
  private buf = new Uint8Array(4096);
  private pos = 0;

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    bigger.set(this.buf.subarray(0, this.pos));
    this.buf = bigger;
  }

  /** Zig-zag varint of an integer within ±2^53 (Avro int and long alike). */
  private long(n: number): void {
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    if (n >= -0x40000000 && n < 0x40000000) {
      let z = (n << 1) ^ (n >> 31);
      while (z > 0x7f) {
        buf[pos++] = (z & 0x7f) | 0x80;
        z >>>= 7;
      }
      buf[pos++] = z;
    } else {
      // Beyond 31 bits: the same zig-zag in float arithmetic (exact below 2^53).
      let z = n >= 0 ? n * 2 : -n * 2 - 1;
      while (z > 0x7f) {
        buf[pos++] = (z % 128) | 0x80;
        z = Math.floor(z / 128);
      }
      buf[pos++] = z;
    }
    this.pos = pos;
  }

  private string(s: string): void {
    const n = s.length;
    this.ensure(5 + 3 * n);
    const start = this.pos;
    // Assume ASCII (nearly every value here): then the length is s.length and each char is its byte.
    this.long(n);
    const buf = this.buf;
    let at = this.pos;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) {
        // Not ASCII after all: start over with the UTF-8 length.
        this.pos = start;
        const bytes = utf8.encode(s);
        this.long(bytes.length);
        this.buf.set(bytes, this.pos);
        this.pos += bytes.length;
        return;
      }
      buf[at++] = c;
    }
    this.pos = at;
  }

  private optionalString(s: string | null | undefined): void {
    if (s === null || s === undefined) this.long(0);
    else {
      this.long(1);
      this.string(s);
    }
  }

  private decimal(unscaled: bigint): void {
    const b = decimalBytes(unscaled);
    this.long(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** One framed record: the Confluent header, then the event in the version's schema; a fresh copy. */
  frame(schemaId: number, e: OrderEvent, version: SchemaVersion): Uint8Array {
    this.pos = 0;
    this.ensure(5);
    writeHeader(this.buf, schemaId);
    this.pos = 5;
    this.string(e.order_id);
    this.string(e.region);
    this.long(ORDER_STATUSES.indexOf(e.status));
    this.long(e.customer.id);
    this.string(e.customer.name);
    this.optionalString(e.customer.email);
    const items = e.items;
    if (items.length > 0) {
      this.long(items.length);
      for (const it of items) {
        this.string(it.sku);
        this.long(it.quantity); // int (v1) and long (v2) encode alike
        this.decimal(it.unit_price);
      }
    }
    this.long(0);
    const keys = Object.keys(e.attributes);
    if (keys.length > 0) {
      this.long(keys.length);
      for (const k of keys) {
        this.string(k);
        this.string(e.attributes[k] as string);
      }
    }
    this.long(0);
    this.decimal(e.total);
    this.string(e.currency);
    this.long(e.created_at);
    this.optionalString(e.note);
    if (version === 2) this.optionalString(e.channel);
    return this.buf.slice(0, this.pos); // a plain Uint8Array: the producer takes it as is, and the scratch is reused
  }
}

/** The event as a JSON object, decimals written by `decimal` (the two JSON forms differ only there). */
function orderJson(e: OrderEvent, version: SchemaVersion, decimal: (unscaled: bigint) => string | number): Record<string, unknown> {
  const v: Record<string, unknown> = {
    order_id: e.order_id,
    region: e.region,
    status: e.status,
    customer: e.customer,
    items: e.items.map((it) => ({ sku: it.sku, quantity: it.quantity, unit_price: decimal(it.unit_price) })),
    attributes: e.attributes,
    total: decimal(e.total),
    currency: e.currency,
    created_at: e.created_at,
    note: e.note,
  };
  if (version === 2) v['channel'] = e.channel ?? null;
  return v;
}

/** The event as Connect's JsonConverter writes its payload (Decimal as base64 bytes, Timestamp as ms). */
export function orderConnectPayload(e: OrderEvent, version: SchemaVersion): Record<string, unknown> {
  return orderJson(e, version, (u) => Buffer.from(decimalBytes(u)).toString('base64'));
}

/** The event as plain JSON (schemas.enable=false): decimals as JSON numbers, times as epoch ms. */
export function orderPlainJson(e: OrderEvent, version: SchemaVersion): Record<string, unknown> {
  // n / 100 is the double nearest the decimal, and JSON prints that double as the decimal's own digits.
  return orderJson(e, version, (u) => Number(centsText(u)));
}

/** The .proto text parsed with protobufjs (an encoder independent of our decoder), well-known imports included. */
function protobufType(version: SchemaVersion): protobuf.Type {
  const root = new protobuf.Root();
  const ts = protobuf.common.get('google/protobuf/timestamp.proto') as { nested: Record<string, protobuf.AnyNestedObject> } | null;
  if (ts === null) throw new ConfigError('protobufjs lacks google/protobuf/timestamp.proto');
  root.addJSON(ts.nested);
  protobuf.parse(orderProtobufSchema(version), root, { keepCase: true });
  root.resolveAll();
  return root.lookupType(`${ORDER_NAMESPACE}.${ORDER_RECORD}`);
}

/** The event as a protobufjs message object (enum as its number, cents as int64, Timestamp as seconds + nanos). */
function protobufValue(e: OrderEvent, version: SchemaVersion): Record<string, unknown> {
  const ms = e.created_at;
  const seconds = Math.floor(ms / 1000);
  const c = e.customer;
  const v: Record<string, unknown> = {
    order_id: e.order_id,
    region: e.region,
    status: ORDER_STATUSES.indexOf(e.status),
    customer: c.email === null ? { id: c.id, name: c.name } : { id: c.id, name: c.name, email: c.email },
    items: e.items.map((it) => ({ sku: it.sku, quantity: it.quantity, unit_price: Number(it.unit_price) })),
    attributes: e.attributes,
    total: Number(e.total),
    currency: e.currency,
    created_at: { seconds, nanos: (ms - seconds * 1000) * 1_000_000 },
  };
  // proto3 `optional`: an absent field is null on the reading side.
  if (e.note !== null) v['note'] = e.note;
  if (version === 2 && e.channel !== null && e.channel !== undefined) v['channel'] = e.channel;
  return v;
}

export interface OrderEncoderOptions {
  readonly schemaVersion: SchemaVersion;
  /** The registry id the frames carry (Avro and Protobuf; ignored for JSON). */
  readonly schemaId?: number;
}

/** Encodes events as Kafka record values of one format and schema version. */
export type OrderValueEncoder = (event: OrderEvent) => Uint8Array;

/**
 * A value encoder for a format. The schema is compiled once; every call returns a fresh array the caller
 * owns (the producer keeps it until delivery).
 */
export function orderEncoder(format: OrderFormat, options: OrderEncoderOptions): OrderValueEncoder {
  const version = options.schemaVersion;
  const needsId = format === 'avro' || format === 'protobuf';
  const schemaId = options.schemaId ?? -1;
  if (needsId) writeHeader(new Uint8Array(5), schemaId); // validates the id once, up front
  switch (format) {
    case 'avro': {
      const writer = new AvroOrderWriter();
      return (e) => writer.frame(schemaId, e, version);
    }
    case 'protobuf': {
      const type = protobufType(version);
      return (e) => confluentProtobufFrame(schemaId, ORDER_PROTOBUF_MESSAGE_INDEXES, type.encode(protobufValue(e, version)).finish());
    }
    case 'json-schema': {
      // The envelope's schema is the same text in every record: serialise it once.
      const prefix = `{"schema":${JSON.stringify(orderConnectSchema(version))},"payload":`;
      return (e) => Buffer.from(`${prefix}${JSON.stringify(orderConnectPayload(e, version))}}`, 'utf8');
    }
    case 'json':
      return (e) => Buffer.from(JSON.stringify(orderPlainJson(e, version)), 'utf8');
    default:
      throw new ConfigError(`unknown format ${String(format)}: one of ${ORDER_FORMATS.join(', ')}`);
  }
}
