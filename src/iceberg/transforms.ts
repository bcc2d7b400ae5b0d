/**
 * Partition transforms (spec "Partition Transforms", Appendix B for bucket hashing): identity,
 * bucket[N], truncate[W], year, month, day, hour, void; their string forms, which source types each
 * accepts, their result types, applying them to values, and Java's human-readable strings that make up
 * the Hive-style partition path (`PartitionSpec.partitionToPath`).
 *
 * Owns: per-value transform semantics. Must not: do I/O, or accept a value of the wrong JS type silently
 * (a wrong representation is a bug in the caller: TypeError).
 *
 * Values follow `PrimitiveValue` (types.ts): int/date numbers, long/time/timestamps bigint (µs, or ns for
 * the _ns types), decimal bigint unscaled, string, uuid/fixed/binary Uint8Array.
 */
import { ConfigError } from '../core/errors.ts';
import { bigintToMinimalBytes, compareBytes, uuidFromBytes, utf8Encode } from './bytes.ts';
import { murmur3Utf8, murmur3x86_32 } from './murmur3.ts';
import { primitiveToString, type IcebergType, type PartitionValue, type PrimitiveType, type PrimitiveValue } from './types.ts';

export type Transform =
  | { readonly kind: 'identity' }
  | { readonly kind: 'bucket'; readonly n: number }
  | { readonly kind: 'truncate'; readonly width: number }
  | { readonly kind: 'year' }
  | { readonly kind: 'month' }
  | { readonly kind: 'day' }
  | { readonly kind: 'hour' }
  | { readonly kind: 'void' }
  /** A transform another engine wrote that we do not know. Kept so foreign metadata parses and
   *  round-trips; never applied and never accepted for writing (spec: writers must not commit with it). */
  | { readonly kind: 'unknown'; readonly text: string };

/** Parses the spec's transform string (`identity`, `bucket[16]`, `truncate[4]`, `day`, `void`, ...).
 *  Unknown names parse to `{kind:'unknown'}` (see above); malformed known ones are a ConfigError. */
export function parseTransform(text: string): Transform {
  const s = text.trim();
  switch (s) {
    case 'identity':
    case 'year':
    case 'month':
    case 'day':
    case 'hour':
    case 'void':
      return { kind: s };
  }
  const m = /^(bucket|truncate)\[\s*(\d+)\s*\]$/.exec(s);
  if (m) {
    const arg = Number(m[2]);
    if (!Number.isSafeInteger(arg) || arg <= 0 || arg > 0x7fffffff) throw new ConfigError(`invalid transform ${s}: the argument must be a positive int`);
    return m[1] === 'bucket' ? { kind: 'bucket', n: arg } : { kind: 'truncate', width: arg };
  }
  if (/^(bucket|truncate)\b/.test(s)) throw new ConfigError(`invalid transform "${s}" (expected bucket[N] or truncate[W])`);
  return { kind: 'unknown', text: s };
}

export function transformToString(t: Transform): string {
  switch (t.kind) {
    case 'bucket':
      return `bucket[${t.n}]`;
    case 'truncate':
      return `truncate[${t.width}]`;
    case 'unknown':
      return t.text;
    default:
      return t.kind;
  }
}

const BUCKET_TYPES = new Set([
  'int',
  'long',
  'decimal',
  'date',
  'time',
  'timestamp',
  'timestamptz',
  'timestamp_ns',
  'timestamptz_ns',
  'string',
  'uuid',
  'fixed',
  'binary',
]);
const TRUNCATE_TYPES = new Set(['int', 'long', 'decimal', 'string', 'binary']);
const DATE_TIME_TYPES = new Set(['date', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns']);
const TIMESTAMP_TYPES = new Set(['timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns']);

/** Whether `t` may be applied to a column of `source` type (Java `Transform.canTransform`). */
export function canTransform(t: Transform, source: IcebergType): boolean {
  if (source.kind === 'struct' || source.kind === 'list' || source.kind === 'map') return false;
  switch (t.kind) {
    case 'identity':
    case 'void':
      return true;
    case 'bucket':
      return BUCKET_TYPES.has(source.kind);
    case 'truncate':
      return TRUNCATE_TYPES.has(source.kind);
    case 'year':
    case 'month':
    case 'day':
      return DATE_TIME_TYPES.has(source.kind);
    case 'hour':
      return TIMESTAMP_TYPES.has(source.kind);
    case 'unknown':
      return false;
  }
}

/** The type of the transform's output (the partition field's type). */
export function transformResultType(t: Transform, source: PrimitiveType): PrimitiveType {
  switch (t.kind) {
    case 'bucket':
    case 'year':
    case 'month':
    case 'hour':
      return { kind: 'int' };
    case 'day':
      return { kind: 'date' };
    default:
      return source;
  }
}

/**
 * Java's dedup name: two fields of one spec on the same source with the same dedup name are redundant
 * (all time transforms share "time", so `day(ts)` and `hour(ts)` together are rejected).
 */
export function transformDedupName(t: Transform): string {
  switch (t.kind) {
    case 'year':
    case 'month':
    case 'day':
    case 'hour':
      return 'time';
    default:
      return transformToString(t);
  }
}

// ---------------------------------------------------------------------------------------------------
// Applying transforms
// ---------------------------------------------------------------------------------------------------

export type BoundTransform = (value: PrimitiveValue | null | undefined) => PartitionValue;

/**
 * Binds `t` to a source type and returns a fast per-value function (null/undefined -> null). Throws
 * ConfigError when the transform cannot apply to the type; the returned function throws TypeError when a
 * value has the wrong JS representation.
 */
export function bindTransform(t: Transform, source: PrimitiveType): BoundTransform {
  if (!canTransform(t, source)) {
    throw new ConfigError(`transform ${transformToString(t)} cannot be applied to type ${primitiveToString(source)}`);
  }
  const inner = bindNonNull(t, source);
  return (v) => (v === null || v === undefined ? null : inner(v));
}

/** One-shot form of `bindTransform` (bind once when transforming many values). */
export function applyTransform(t: Transform, source: PrimitiveType, value: PrimitiveValue | null | undefined): PartitionValue {
  return bindTransform(t, source)(value);
}

function bindNonNull(t: Transform, source: PrimitiveType): (v: PrimitiveValue) => PartitionValue {
  switch (t.kind) {
    case 'identity':
      return (v) => v;
    case 'void':
      return () => null;
    case 'bucket': {
      const hash = bucketHasher(source);
      const n = t.n;
      return (v) => (hash(v) & 0x7fffffff) % n;
    }
    case 'truncate':
      return truncater(source, t.width);
    case 'year':
    case 'month':
    case 'day':
    case 'hour':
      return timeTransformer(t.kind, source);
    case 'unknown':
      throw new ConfigError(`unknown transform ${t.text} cannot be applied`);
  }
}

const scratch = new DataView(new ArrayBuffer(8));
const scratchBytes = new Uint8Array(scratch.buffer);

/** Appendix B: int-like values hash as the 8-byte little-endian long (dates too: the spec's vector
 *  `2017-11-16` -> -653330422 only holds for the widened long, as in Java `BucketUtil.hash(int)`). */
export function hashLong(v: bigint): number {
  scratch.setBigInt64(0, v, true);
  return murmur3x86_32(scratchBytes);
}

function hashIntAsLong(v: number): number {
  scratch.setInt32(0, v, true);
  scratch.setInt32(4, v < 0 ? -1 : 0, true);
  return murmur3x86_32(scratchBytes);
}

function expect<T>(ok: boolean, v: unknown, what: string): T {
  if (!ok) throw new TypeError(`expected ${what}, got ${typeof v === 'object' ? Object.prototype.toString.call(v) : typeof v}`);
  return v as T;
}
const asInt = (v: PrimitiveValue): number => expect<number>(typeof v === 'number' && Number.isInteger(v), v, 'an integer number');
const asBig = (v: PrimitiveValue): bigint => expect<bigint>(typeof v === 'bigint', v, 'a bigint');
const asStr = (v: PrimitiveValue): string => expect<string>(typeof v === 'string', v, 'a string');
const asBytes = (v: PrimitiveValue): Uint8Array => expect<Uint8Array>(v instanceof Uint8Array, v, 'a Uint8Array');

/** The Appendix B hash of one non-null value of type `source` (signed 32-bit). */
export function bucketHash(source: PrimitiveType, value: PrimitiveValue): number {
  return bucketHasher(source)(value);
}

function bucketHasher(source: PrimitiveType): (v: PrimitiveValue) => number {
  switch (source.kind) {
    case 'int':
    case 'date':
      return (v) => hashIntAsLong(asInt(v));
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return (v) => hashLong(asBig(v));
    case 'timestamp_ns':
    case 'timestamptz_ns':
      // Appendix B: nanosecond timestamps hash as the equivalent microseconds (floor), so a column keeps
      // its buckets when promoted between precisions.
      return (v) => hashLong(floorDiv(asBig(v), 1000n));
    case 'decimal':
      return (v) => murmur3x86_32(bigintToMinimalBytes(asBig(v)));
    case 'string':
      return (v) => murmur3Utf8(asStr(v));
    case 'uuid':
      return (v) => {
        const b = asBytes(v);
        if (b.length !== 16) throw new TypeError(`a uuid value has 16 bytes, got ${b.length}`);
        return murmur3x86_32(b);
      };
    case 'fixed':
    case 'binary':
      return (v) => murmur3x86_32(asBytes(v));
    default:
      throw new ConfigError(`bucket cannot be applied to type ${primitiveToString(source)}`);
  }
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

function truncater(source: PrimitiveType, width: number): (v: PrimitiveValue) => PartitionValue {
  switch (source.kind) {
    case 'int':
      // Spec: v - (((v % W) + W) % W), i.e. floor to a multiple of W (also for negatives). `| 0` keeps
      // Java's int overflow behaviour at the extreme low end.
      return (v) => {
        const x = asInt(v);
        return (x - (((x % width) + width) % width)) | 0;
      };
    case 'long': {
      const w = BigInt(width);
      return (v) => {
        const x = asBig(v);
        return BigInt.asIntN(64, x - (((x % w) + w) % w));
      };
    }
    case 'decimal': {
      // W is in units of the unscaled value: truncate[50] on decimal(9,2) 10.65 -> 10.50.
      const w = BigInt(width);
      return (v) => {
        const x = asBig(v);
        return x - (((x % w) + w) % w);
      };
    }
    case 'string':
      return (v) => truncateCodePoints(asStr(v), width);
    case 'binary':
      return (v) => {
        const b = asBytes(v);
        return b.length <= width ? b : b.slice(0, width);
      };
    default:
      throw new ConfigError(`truncate cannot be applied to type ${primitiveToString(source)}`);
  }
}

/** The first `n` Unicode code points of `s` (never splits a surrogate pair). */
export function truncateCodePoints(s: string, n: number): string {
  if (s.length <= n) return s;
  let i = 0;
  let count = 0;
  while (i < s.length && count < n) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
    count++;
  }
  return s.slice(0, i);
}

const MICROS_PER_HOUR = 3_600_000_000n;
const MICROS_PER_DAY = 86_400_000_000n;

function timeTransformer(kind: 'year' | 'month' | 'day' | 'hour', source: PrimitiveType): (v: PrimitiveValue) => PartitionValue {
  if (source.kind === 'date') {
    return (v) => {
      const days = asInt(v);
      if (kind === 'day') return days;
      const { year, month } = civilFromDays(days);
      return kind === 'year' ? year - 1970 : (year - 1970) * 12 + (month - 1);
    };
  }
  const perMicro = source.kind === 'timestamp_ns' || source.kind === 'timestamptz_ns' ? 1000n : 1n;
  return (v) => {
    const t = asBig(v);
    // Floor division throughout: one microsecond before the epoch is hour -1, day -1 (1969-12-31).
    if (kind === 'hour') return Number(floorDiv(t, MICROS_PER_HOUR * perMicro));
    const days = Number(floorDiv(t, MICROS_PER_DAY * perMicro));
    if (kind === 'day') return days;
    const { year, month } = civilFromDays(days);
    return kind === 'year' ? year - 1970 : (year - 1970) * 12 + (month - 1);
  };
}

/** Days since 1970-01-01 -> proleptic Gregorian date (H. Hinnant's `civil_from_days`). */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  return { year, month, day };
}

/** Proleptic Gregorian date -> days since 1970-01-01 (`days_from_civil`). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

// ---------------------------------------------------------------------------------------------------
// Comparison of transform results (partition summaries)
// ---------------------------------------------------------------------------------------------------

/**
 * Total order over non-null values of one primitive type, as Iceberg compares them: numbers numerically
 * with -0.0 < +0.0 (NaN is never compared: callers keep it out of bounds), strings by code point,
 * binary/fixed/uuid unsigned lexicographically, booleans false < true.
 */
export function compareValues(type: PrimitiveType, a: PrimitiveValue, b: PrimitiveValue): number {
  switch (type.kind) {
    case 'string': {
      const x = a as string;
      const y = b as string;
      if (x === y) return 0;
      return compareBytes(utf8Encode(x), utf8Encode(y));
    }
    case 'uuid':
    case 'fixed':
    case 'binary':
      return compareBytes(a as Uint8Array, b as Uint8Array);
    case 'boolean':
      return a === b ? 0 : a ? 1 : -1;
    case 'float':
    case 'double': {
      const x = a as number;
      const y = b as number;
      if (x < y) return -1;
      if (x > y) return 1;
      if (x === 0 && y === 0) return Object.is(x, -0) === Object.is(y, -0) ? 0 : Object.is(x, -0) ? -1 : 1;
      return 0;
    }
    default: {
      const x = a as number | bigint;
      const y = b as number | bigint;
      return x < y ? -1 : x > y ? 1 : 0;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Human strings and partition paths
// ---------------------------------------------------------------------------------------------------

const pad = (n: number, w: number): string => (n < 0 ? '-' + String(-n).padStart(w, '0') : String(n).padStart(w, '0'));

function humanDay(days: number): string {
  const { year, month, day } = civilFromDays(days);
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}

function humanMonth(ordinal: number): string {
  const year = 1970 + Math.floor(ordinal / 12);
  const month = 1 + (((ordinal % 12) + 12) % 12);
  return `${pad(year, 4)}-${pad(month, 2)}`;
}

function humanHour(ordinal: number): string {
  const days = Math.floor(ordinal / 24);
  const hour = ((ordinal % 24) + 24) % 24;
  return `${humanDay(days)}-${pad(hour, 2)}`;
}

/** java.time ISO_LOCAL_TIME: HH:mm:ss plus the fraction without trailing zeros. */
function isoTime(nanosOfDay: bigint, alwaysSeconds: boolean): string {
  const h = Number(nanosOfDay / 3_600_000_000_000n);
  const m = Number((nanosOfDay / 60_000_000_000n) % 60n);
  const s = Number((nanosOfDay / 1_000_000_000n) % 60n);
  const ns = Number(nanosOfDay % 1_000_000_000n);
  let out = `${pad(h, 2)}:${pad(m, 2)}`;
  if (alwaysSeconds) {
    out += `:${pad(s, 2)}`;
    if (ns !== 0) out += '.' + String(ns).padStart(9, '0').replace(/0+$/, '');
    return out;
  }
  // LocalTime.toString(): seconds only when non-zero, fraction in groups of 3 digits.
  if (s !== 0 || ns !== 0) {
    out += `:${pad(s, 2)}`;
    if (ns !== 0) {
      const f = String(ns).padStart(9, '0');
      out += '.' + (ns % 1_000_000 === 0 ? f.slice(0, 3) : ns % 1000 === 0 ? f.slice(0, 6) : f);
    }
  }
  return out;
}

function isoTimestamp(value: bigint, nanosPerUnit: bigint): string {
  const nanos = value * nanosPerUnit;
  const perDay = 86_400_000_000_000n;
  const days = floorDiv(nanos, perDay);
  const ofDay = nanos - days * perDay;
  return `${humanDay(Number(days))}T${isoTime(ofDay, true)}`;
}

/** Java `BigDecimal.toString()` of unscaled/scale (scientific notation only for tiny adjusted exponents). */
export function decimalToString(unscaled: bigint, scale: number): string {
  const neg = unscaled < 0n;
  const digits = (neg ? -unscaled : unscaled).toString();
  const adjusted = -scale + (digits.length - 1);
  let body: string;
  if (scale >= 0 && adjusted >= -6) {
    if (scale === 0) body = digits;
    else if (digits.length > scale) body = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
    else body = `0.${'0'.repeat(scale - digits.length)}${digits}`;
  } else {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    body = `${mantissa}E${adjusted >= 0 ? '+' : ''}${adjusted}`;
  }
  return neg ? `-${body}` : body;
}

/** Java `Float.toString` / `Double.toString` (shortest round-trip digits, Java's notation). */
function javaFloatString(v: number, isFloat: boolean): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (v === 0) return Object.is(v, -0) ? '-0.0' : '0.0';
  let repr = String(v);
  if (isFloat) {
    for (let p = 1; p <= 9; p++) {
      const candidate = v.toPrecision(p);
      if (Math.fround(Number(candidate)) === v) {
        repr = String(Number(candidate));
        break;
      }
    }
  }
  const abs = Math.abs(v);
  if (abs >= 1e-3 && abs < 1e7) {
    const plain = Number(repr).toString();
    return plain.includes('.') || plain.includes('e') ? plain : `${plain}.0`;
  }
  const [mant, exp] = Number(repr).toExponential().split('e') as [string, string];
  return `${mant.includes('.') ? mant : `${mant}.0`}E${exp.replace('+', '')}`;
}

/**
 * Java's `Transform.toHumanString(resultType, value)`: `2017-11-16` for day, `2017-11` for month,
 * `2017-11-16-22` for hour, ISO timestamps (`+00:00` for tz), base64 for binary, `null` for null.
 */
export function humanString(t: Transform, resultType: PrimitiveType, value: PartitionValue): string {
  if (value === null) return 'null';
  switch (t.kind) {
    case 'year':
      return pad(1970 + (value as number), 4);
    case 'month':
      return humanMonth(value as number);
    case 'day':
      return humanDay(value as number);
    case 'hour':
      return humanHour(value as number);
    default:
      break;
  }
  switch (resultType.kind) {
    case 'date':
      return humanDay(value as number);
    case 'time':
      return isoTime((value as bigint) * 1000n, false);
    case 'timestamp':
      return isoTimestamp(value as bigint, 1000n);
    case 'timestamptz':
      return `${isoTimestamp(value as bigint, 1000n)}+00:00`;
    case 'timestamp_ns':
      return isoTimestamp(value as bigint, 1n);
    case 'timestamptz_ns':
      return `${isoTimestamp(value as bigint, 1n)}+00:00`;
    case 'decimal':
      return decimalToString(value as bigint, resultType.scale);
    case 'binary':
    case 'fixed':
      return Buffer.from((value as Uint8Array).buffer, (value as Uint8Array).byteOffset, (value as Uint8Array).byteLength).toString('base64');
    case 'uuid':
      return uuidFromBytes(value as Uint8Array);
    case 'float':
      return javaFloatString(value as number, true);
    case 'double':
      return javaFloatString(value as number, false);
    default:
      return String(value);
  }
}

/** Java `URLEncoder.encode(s, UTF_8)`: unreserved `A-Za-z0-9.-*_` kept, space as `+`, the rest %XX. */
export function urlEncode(s: string): string {
  let out = '';
  for (const b of utf8Encode(s)) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9.\-*_]/.test(c)) out += c;
    else if (b === 0x20) out += '+';
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}
