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
 * This module holds the events and their generator; their schemas are order-schemas.ts and the encoders
 * order-encodings.ts.
 *
 * Owns: the events. Must not: do I/O or read the clock (live event times come from a clock the caller
 * passes in). Not on the sink's hot path: one JS object per event is fine here, but the generator must
 * feed a producer at up to ~100k records/s from one thread, so the catalogue's products and customers are
 * built once (and Avro, the benchmark format, has a schema-specific encoder in order-encodings.ts).
 */
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
