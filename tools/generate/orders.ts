/**
 * The order events of `icefloe generate`: a deterministic generator of realistic e-commerce order events
 * (the same seed gives the same events, record for record), their schemas in every format the sink reads,
 * and encoders to Kafka record values and keys.
 *
 * Formats (what a Kafka Connect sink is configured with, see docs/configuration.md):
 * - `avro`: Confluent-framed Avro (magic 0, big-endian schema id, Avro binary) for AvroConverter;
 * - `protobuf`: Confluent-framed Protobuf with Confluent's message-index list, for ProtobufConverter;
 * - `json-schema`: JsonConverter with `schemas.enable=true`, the `{"schema": …, "payload": …}` envelope;
 * - `json`: JsonConverter with `schemas.enable=false`, the bare payload.
 * The key is the order id as UTF-8 (StringConverter), so one order's events stay in one partition.
 *
 * Schema versions: v1, and v2 = v1 plus an optional `channel` at the end and `items.quantity` widened from
 * int to long. v2 reads v1 data under Avro's resolution rules (BACKWARD compatible), which is what the
 * mid-stream evolution tests need: a topic that switches from v1 to v2 while the sink runs.
 *
 * Decimal choices: Avro uses `bytes` decimal(10, 2) and decimal(12, 2) and JSON with schemas Connect's
 * Decimal (base64 of the same bytes); Protobuf has no decimal type and our decoder does not read Confluent's
 * `confluent.type.Decimal`, so `unit_price` and `total` are int64 UNSCALED cents (scale 2): exact, summable
 * in queries, and equal to the unscaled values the Avro tables hold. Plain JSON writes them as JSON numbers
 * (`12.34`, what JsonConverter's `decimal.format=NUMERIC` writes).
 *
 * Owns: the events, schemas and encodings. Must not: do I/O or read the clock (live event times come from a
 * clock the caller passes in). Not on the sink's hot path: one JS object per event is fine here, but the
 * generator must feed a producer at up to ~100k records/s from one thread, so Avro (the benchmark format)
 * has a schema-specific encoder (AvroOrderWriter) and the catalogue's products and customers are built once.
 */
import protobuf from 'protobufjs';
import { ConfigError } from '../../src/core/errors.ts';
import { prng } from '../../src/core/prng.ts';

// ---------------------------------------------------------------------------------------------------
// The events
// ---------------------------------------------------------------------------------------------------

export type SchemaVersion = 1 | 2;
export type OrderFormat = 'avro' | 'protobuf' | 'json' | 'json-schema';
export const ORDER_FORMATS: readonly OrderFormat[] = ['avro', 'protobuf', 'json', 'json-schema'];

export const REGIONS = ['eu', 'us', 'apac'] as const;
export type Region = (typeof REGIONS)[number];
export const ORDER_STATUSES = ['CREATED', 'PAID', 'SHIPPED', 'DELIVERED', 'CANCELLED'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export interface OrderCustomer {
  readonly id: number;
  readonly name: string;
  readonly email: string | null;
}

export interface OrderItem {
  readonly sku: string;
  readonly quantity: number;
  /** Unscaled, scale 2 (cents): 1999n is 19.99. */
  readonly unit_price: bigint;
}

/** One order event as a plain object; field names are the schema's. */
export interface OrderEvent {
  readonly order_id: string;
  readonly region: Region;
  readonly status: OrderStatus;
  readonly customer: OrderCustomer;
  /** 1–3 items. */
  readonly items: readonly OrderItem[];
  /** 0–3 entries. */
  readonly attributes: Readonly<Record<string, string>>;
  /** Unscaled, scale 2: the sum of quantity × unit_price. */
  readonly total: bigint;
  readonly currency: string;
  /** Event time, epoch milliseconds. */
  readonly created_at: number;
  readonly note: string | null;
  /** Schema v2 only; absent from v1 events. */
  readonly channel?: string | null;
}

export interface OrderGeneratorOptions {
  readonly seed: number;
  /** Default 1. */
  readonly schemaVersion?: SchemaVersion;
  /** Nominal event time of event 0 when no clock is given (default 2025-01-01T00:00:00Z). */
  readonly startTimeMs?: number;
  /** Nominal milliseconds between consecutive events when no clock is given (default 10). */
  readonly stepMs?: number;
  /**
   * Live mode: each event's time is this clock's "now" minus a small random lateness, so event time stays
   * close to the Kafka timestamp. Without it, event times are a function of the seed and index alone.
   */
  readonly clock?: () => number;
}

export const DEFAULT_START_TIME_MS = Date.UTC(2025, 0, 1);

const FIRST_NAMES = [
  'Amara', 'Ben', 'Chloé', 'Daniel', 'Elif', 'Farid', 'Grace', 'Hiroshi', 'Ines', 'Jonas', 'Kavya', 'Liam', 'Mei', 'Noah',
  'Olga', 'Pedro', 'Quinn', 'Rosa', 'Sven', 'Tariq', 'Uma', 'Victor', 'Wen', 'Ximena', 'Yusuf', 'Zoë', 'Anders', 'Björn',
  'Carmen', 'Dmitri', 'Emma', 'François',
];
const LAST_NAMES = [
  'Andersson', 'Becker', 'Castillo', 'Dubois', 'Eriksen', 'Fischer', 'García', 'Hansen', 'Ito', 'Jansen', 'Kowalski',
  'Lindqvist', 'Müller', 'Nakamura', 'Okafor', 'Petrov', 'Rossi', 'Schmidt', 'Tanaka', 'Usman', 'Van Dijk', 'Wang',
  'Yilmaz', 'Zhang', "O'Brien", 'Novák', 'Silva', 'Kim', 'Patel', 'Moreau', 'Larsen', 'Nguyen',
];
const MAIL_DOMAINS = ['example.com', 'example.org', 'mail.example.net', 'shop.example'];
const CURRENCIES: Readonly<Record<Region, readonly string[]>> = { eu: ['EUR', 'EUR', 'EUR', 'GBP', 'SEK'], us: ['USD'], apac: ['AUD', 'SGD', 'JPY'] };
const CHANNELS = ['web', 'web', 'ios', 'android', 'store', 'partner'];
const NOTES = [
  'please leave the parcel at the front door if nobody answers',
  'call the mobile number on file before delivery',
  'this is a gift: do not put the invoice in the parcel',
  'Lieferung an Nachbarn im Erdgeschoss möglich',
  'deliver after 18:00 on weekdays, any time on weekends',
  'fragile — glassware, handle with care',
  'customer asked for express shipping at checkout',
  'shipping address changed by support after checkout',
  '配達前に電話してください',
  'reuse the original packaging, no plastic fillers please',
];
/** Attribute keys and the values each may take (none: a random session token). */
const ATTRIBUTES: readonly (readonly [string, readonly string[] | null])[] = [
  ['session_id', null],
  ['gift_wrap', ['true', 'false']],
  ['promo_code', ['SPRING25', 'WELCOME10', 'FREESHIP', 'VIP2025']],
  ['device', ['desktop', 'ios', 'android', 'tablet']],
  ['utm_source', ['newsletter', 'search', 'social', 'affiliate', 'direct']],
  ['delivery', ['standard', 'express', 'pickup']],
  ['loyalty_tier', ['bronze', 'silver', 'gold']],
  ['referrer', ['https://www.example.com/deals', 'https://search.example/?q=running+shoes', 'https://blog.example.org/gift-guide']],
  ['utm_campaign', ['spring_sale_2025', 'back_to_school', 'black_friday', 'newsletter_weekly']],
];
/** Product variants: a SKU names its colour and size, as catalogues do. */
const VARIANTS = ['BLK-S', 'BLK-M', 'BLK-L', 'WHT-M', 'RED-M', 'BLU-L', 'GRN-XL', 'STD'];
const SKU_COUNT = 5000;
const CUSTOMER_COUNT = 50_000;
/** Price endings, as shops set them. */
const CENT_ENDINGS = [99, 99, 95, 49, 0, 50];

/** A stable 32-bit mix of an integer (a SKU's price and a customer's details depend on their number only). */
function mix(n: number): number {
  let h = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

interface Product {
  readonly sku: string;
  readonly cents: number;
  readonly price: bigint;
}

/** The catalogue entry of product number n: its SKU (with a colour/size variant) and price depend on n alone. */
function product(n: number): Product {
  const h = mix(n + 1);
  // 1.00 … 499.99, most items under 50: a long tail as in a real catalogue.
  const units = 1 + (h % 100 < 70 ? h % 49 : h % 499);
  const cents = units * 100 + (CENT_ENDINGS[(h >>> 8) % CENT_ENDINGS.length] as number);
  return { sku: `SKU-${String(n).padStart(5, '0')}-${VARIANTS[mix(n) % VARIANTS.length] as string}`, cents, price: BigInt(cents) };
}

/** Customer number k's details (the same customer always has the same name and e-mail). */
function customer(k: number): OrderCustomer {
  const h = mix(k + 7919);
  const first = FIRST_NAMES[h % FIRST_NAMES.length] as string;
  const last = LAST_NAMES[(h >>> 5) % LAST_NAMES.length] as string;
  const local = `${first}.${last}`.normalize('NFD').replace(/[^A-Za-z.]/g, '').toLowerCase();
  // About one customer in nine has no e-mail address on file (a guest checkout by phone).
  const email = h % 9 === 0 ? null : `${local}${k % 100}@${MAIL_DOMAINS[(h >>> 10) % MAIL_DOMAINS.length] as string}`;
  return Object.freeze({ id: 100_000 + k, name: `${first} ${last}`, email });
}

/** Filled on first use and shared by every generator: building names and SKUs per event would dominate its cost. */
const PRODUCTS: (Product | undefined)[] = new Array<Product | undefined>(SKU_COUNT);
const CUSTOMERS: (OrderCustomer | undefined)[] = new Array<OrderCustomer | undefined>(CUSTOMER_COUNT);

/**
 * Order events, one after another, determined by the seed (and, in live mode, the clock). Each event draws
 * the same number of random values whatever the mode, so the seed alone fixes everything but the time.
 */
export class OrderGenerator {
  readonly schemaVersion: SchemaVersion;
  /** Events produced so far (the index of the next one). */
  index = 0;
  private readonly rnd: () => number;
  private readonly idPrefix: string;
  private readonly startTimeMs: number;
  private readonly stepMs: number;
  private readonly clock: (() => number) | undefined;

  constructor(options: OrderGeneratorOptions) {
    if (!Number.isInteger(options.seed)) throw new ConfigError(`the generator's seed must be an integer, not ${options.seed}`);
    this.schemaVersion = options.schemaVersion ?? 1;
    this.rnd = prng(options.seed);
    // Order ids carry the seed, so two runs with different seeds never share an id (or a key).
    this.idPrefix = (mix(options.seed) % 36 ** 6).toString(36).padStart(6, '0');
    this.startTimeMs = options.startTimeMs ?? DEFAULT_START_TIME_MS;
    this.stepMs = options.stepMs ?? 10;
    this.clock = options.clock;
  }

  private int(n: number): number {
    return Math.floor(this.rnd() * n);
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }

  /** `length` random characters of [0-9a-z]. */
  private token(length: number): string {
    let out = '';
    while (out.length < length) out += Math.floor(this.rnd() * 36 ** 6).toString(36).padStart(6, '0');
    return out.slice(0, length);
  }

  next(): OrderEvent {
    const i = this.index++;
    const r = this.rnd();
    const region: Region = r < 0.4 ? 'eu' : r < 0.75 ? 'us' : 'apac';
    const s = this.rnd();
    const status: OrderStatus = s < 0.4 ? 'CREATED' : s < 0.65 ? 'PAID' : s < 0.8 ? 'SHIPPED' : s < 0.92 ? 'DELIVERED' : 'CANCELLED';
    // Repeat customers: the product of two uniforms skews towards low customer numbers.
    const k = Math.floor(this.rnd() * this.rnd() * CUSTOMER_COUNT);
    const who = CUSTOMERS[k] ?? (CUSTOMERS[k] = customer(k));

    const itemCount = 1 + this.int(3);
    const items: OrderItem[] = [];
    let cents = 0; // at most 3 × 7 × 499.99: a safe integer, so no BigInt arithmetic per item
    for (let n = 0; n < itemCount; n++) {
      const p = this.int(SKU_COUNT);
      const q = this.rnd();
      const quantity = q < 0.6 ? 1 : q < 0.85 ? 2 : 3 + this.int(3);
      const { sku, cents: unit, price } = PRODUCTS[p] ?? (PRODUCTS[p] = product(p));
      items.push({ sku, quantity, unit_price: price });
      cents += unit * quantity;
    }
    const total = BigInt(cents);

    const attributes: Record<string, string> = {};
    const a = this.rnd();
    for (let k = a < 0.1 ? 0 : a < 0.3 ? 1 : a < 0.6 ? 2 : 3; k > 0; k--) {
      const [key, values] = this.pick(ATTRIBUTES);
      // A repeated key keeps its last value: 0–3 entries.
      attributes[key] = values === null ? this.token(24) : this.pick(values);
    }

    const currency = this.pick(CURRENCIES[region]);
    // Most events arrive within 50 ms of their time; one in ten is up to 5 s late (out of order).
    const lateness = this.rnd() < 0.9 ? this.int(50) : this.int(5000);
    const created_at = (this.clock === undefined ? this.startTimeMs + i * this.stepMs : this.clock()) - lateness;
    const note = this.rnd() < 0.4 ? this.pick(NOTES) : null;
    const channelDraw = this.rnd();
    const channel = channelDraw < 0.1 ? null : (CHANNELS[Math.floor(channelDraw * 1e6) % CHANNELS.length] as string);

    const order_id = `ORD-${this.idPrefix}-${String(i).padStart(9, '0')}`;
    // Two fixed shapes rather than a spread: this runs up to 100k times a second.
    return this.schemaVersion === 2
      ? { order_id, region, status, customer: who, items, attributes, total, currency, created_at, note, channel }
      : { order_id, region, status, customer: who, items, attributes, total, currency, created_at, note };
  }

  /** The next `count` events. */
  *take(count: number): Generator<OrderEvent> {
    for (let k = 0; k < count; k++) yield this.next();
  }
}

/** `count` events from a fresh generator (tests, fixtures). */
export function generateOrderEvents(count: number, options: OrderGeneratorOptions): OrderEvent[] {
  return [...new OrderGenerator(options).take(count)];
}

// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

export const ORDER_NAMESPACE = 'io.icefloe.examples';
export const ORDER_RECORD = 'OrderEvent';

function avroDecimal(precision: number): Record<string, unknown> {
  return { type: 'bytes', logicalType: 'decimal', precision, scale: 2 };
}

/** The Avro schema (JSON form) of a version: record `io.icefloe.examples.OrderEvent`. */
export function orderAvroSchema(version: SchemaVersion): Record<string, unknown> {
  const fields: Record<string, unknown>[] = [
    { name: 'order_id', type: 'string' },
    { name: 'region', type: 'string', doc: 'eu, us or apac' },
    { name: 'status', type: { type: 'enum', name: 'OrderStatus', symbols: [...ORDER_STATUSES] } },
    {
      name: 'customer',
      type: {
        type: 'record',
        name: 'Customer',
        fields: [
          { name: 'id', type: 'long' },
          { name: 'name', type: 'string' },
          { name: 'email', type: ['null', 'string'], default: null },
        ],
      },
    },
    {
      name: 'items',
      type: {
        type: 'array',
        items: {
          type: 'record',
          name: 'Item',
          fields: [
            { name: 'sku', type: 'string' },
            // v2 widens int → long: an Avro promotion, so v2 readers read v1 data.
            { name: 'quantity', type: version === 1 ? 'int' : 'long' },
            { name: 'unit_price', type: avroDecimal(10) },
          ],
        },
      },
    },
    { name: 'attributes', type: { type: 'map', values: 'string' } },
    { name: 'total', type: avroDecimal(12) },
    { name: 'currency', type: 'string' },
    { name: 'created_at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'note', type: ['null', 'string'], default: null },
  ];
  // A new field must have a default for v2 to read v1 data (BACKWARD).
  if (version === 2) fields.push({ name: 'channel', type: ['null', 'string'], default: null });
  return { type: 'record', name: ORDER_RECORD, namespace: ORDER_NAMESPACE, doc: 'An order event written by icefloe generate.', fields };
}

/**
 * The Protobuf schema (proto3) of a version. OrderEvent is the file's first message, so its Confluent
 * message-index list is [0]. The enum starts at CREATED = 0 (not an UNSPECIFIED value) so its symbols
 * are exactly Avro's; a proto3 enum without presence then reads CREATED when absent, which is also its
 * encoded default.
 */
export function orderProtobufSchema(version: SchemaVersion): string {
  return `syntax = "proto3";
package ${ORDER_NAMESPACE};

import "google/protobuf/timestamp.proto";

// An order event written by icefloe generate. unit_price and total are unscaled cents (scale 2).
message ${ORDER_RECORD} {
  enum OrderStatus {
    CREATED = 0;
    PAID = 1;
    SHIPPED = 2;
    DELIVERED = 3;
    CANCELLED = 4;
  }
  message Customer {
    int64 id = 1;
    string name = 2;
    optional string email = 3;
  }
  message Item {
    string sku = 1;
    ${version === 1 ? 'int32' : 'int64'} quantity = 2;
    int64 unit_price = 3;
  }
  string order_id = 1;
  string region = 2;
  OrderStatus status = 3;
  Customer customer = 4;
  repeated Item items = 5;
  map<string, string> attributes = 6;
  int64 total = 7;
  string currency = 8;
  google.protobuf.Timestamp created_at = 9;
  optional string note = 10;
${version === 2 ? '  optional string channel = 11;\n' : ''}}
`;
}

/** OrderEvent's path in its .proto file, as Confluent's message-index list. */
export const ORDER_PROTOBUF_MESSAGE_INDEXES: readonly number[] = [0];

const CONNECT_DECIMAL = 'org.apache.kafka.connect.data.Decimal';
const CONNECT_TIMESTAMP = 'org.apache.kafka.connect.data.Timestamp';

function connectDecimal(field: string | undefined, precision: number): Record<string, unknown> {
  return {
    type: 'bytes',
    optional: false,
    name: CONNECT_DECIMAL,
    version: 1,
    parameters: { scale: '2', 'connect.decimal.precision': String(precision) },
    ...(field === undefined ? {} : { field }),
  };
}

/**
 * The Connect schema (JsonConverter's JSON form) of a version, as the `schema` of the envelope. Connect has
 * no enum: `status` is a string. Decimals are Connect Decimal (base64 bytes), `created_at` Connect Timestamp.
 */
export function orderConnectSchema(version: SchemaVersion): Record<string, unknown> {
  const str = (field: string, optional = false): Record<string, unknown> => ({ type: 'string', optional, field });
  const fields: Record<string, unknown>[] = [
    str('order_id'),
    str('region'),
    str('status'),
    {
      type: 'struct',
      optional: false,
      name: `${ORDER_NAMESPACE}.Customer`,
      field: 'customer',
      fields: [{ type: 'int64', optional: false, field: 'id' }, str('name'), str('email', true)],
    },
    {
      type: 'array',
      optional: false,
      field: 'items',
      items: {
        type: 'struct',
        optional: false,
        name: `${ORDER_NAMESPACE}.Item`,
        fields: [str('sku'), { type: version === 1 ? 'int32' : 'int64', optional: false, field: 'quantity' }, connectDecimal('unit_price', 10)],
      },
    },
    { type: 'map', optional: false, field: 'attributes', keys: { type: 'string', optional: false }, values: { type: 'string', optional: false } },
    connectDecimal('total', 12),
    str('currency'),
    { type: 'int64', optional: false, name: CONNECT_TIMESTAMP, version: 1, field: 'created_at' },
    str('note', true),
  ];
  if (version === 2) fields.push(str('channel', true));
  return { type: 'struct', optional: false, name: `${ORDER_NAMESPACE}.${ORDER_RECORD}`, version, fields };
}

// ---------------------------------------------------------------------------------------------------
// Encodings
// ---------------------------------------------------------------------------------------------------

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
