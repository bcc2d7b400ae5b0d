/**
 * Single-value binary serialisation (spec Appendix D) for column bounds and partition summaries, bound
 * truncation under the default `truncate(16)` metrics mode, and metrics-mode parsing
 * (`write.metadata.metrics.default` / `write.metadata.metrics.column.<col>`).
 *
 * Encodings: boolean 1 byte; int/date 4-byte LE; long/time/timestamp(tz)/timestamp(tz)_ns 8-byte LE;
 * float/double 4/8-byte LE IEEE-754; string UTF-8 (no length); binary/fixed raw; uuid 16 bytes BE;
 * decimal the unscaled value as minimal big-endian two's complement.
 *
 * Owns: bytes of one value and the truncation rules. Must not: emit NaN as a bound (spec: NaN is never a
 * bound; `boundBytes` returns undefined for it), split a UTF-8 sequence, or return an upper bound below
 * the value (a too-small upper bound makes engines skip data, duckdb/duckdb-iceberg#1047).
 */
import { ConfigError } from '../core/errors.ts';
import { bigintFromBytes, bigintToMinimalBytes, copyBytes, utf8Decode, utf8Encode } from './bytes.ts';
import { physicalKind } from './physical.ts';
import { truncateCodePoints } from './transforms.ts';
import { primitiveToString, type PrimitiveType, type PrimitiveValue } from './types.ts';

function typeError(type: PrimitiveType, v: unknown): TypeError {
  return new TypeError(`value ${String(v)} (${typeof v}) does not fit type ${primitiveToString(type)}`);
}

/** Appendix D bytes of one non-null value. Fresh bytes, exactly sized (never a view of a larger buffer). */
export function toBoundBytes(type: PrimitiveType, value: PrimitiveValue): Uint8Array {
  switch (physicalKind(type)) {
    case 'boolean':
      if (typeof value !== 'boolean') throw typeError(type, value);
      return Uint8Array.of(value ? 1 : 0);
    case 'int': {
      if (typeof value !== 'number' || !Number.isInteger(value)) throw typeError(type, value);
      const out = new Uint8Array(4);
      new DataView(out.buffer).setInt32(0, value, true);
      return out;
    }
    case 'long': {
      if (typeof value !== 'bigint') throw typeError(type, value);
      const out = new Uint8Array(8);
      new DataView(out.buffer).setBigInt64(0, value, true);
      return out;
    }
    case 'float': {
      if (typeof value !== 'number') throw typeError(type, value);
      const out = new Uint8Array(4);
      new DataView(out.buffer).setFloat32(0, value, true);
      return out;
    }
    case 'double': {
      if (typeof value !== 'number') throw typeError(type, value);
      const out = new Uint8Array(8);
      new DataView(out.buffer).setFloat64(0, value, true);
      return out;
    }
    case 'decimal':
      if (typeof value !== 'bigint') throw typeError(type, value);
      return bigintToMinimalBytes(value);
    case 'string':
      if (typeof value !== 'string') throw typeError(type, value);
      return utf8Encode(value);
    case 'fixed':
    case 'binary':
      // A uuid is exactly 16 bytes; the length of a fixed(L) or binary value is not checked here.
      if (!(value instanceof Uint8Array) || (type.kind === 'uuid' && value.length !== 16)) throw typeError(type, value);
      return copyBytes(value);
  }
}

/**
 * Appendix D bytes -> value. Tolerates promoted columns: a 4-byte bound on a long column was written
 * as int, a 4-byte bound on a double column as float (spec: promotion does not rewrite old bounds).
 */
export function fromBoundBytes(type: PrimitiveType, bytes: Uint8Array): PrimitiveValue {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (n: number): void => {
    if (bytes.length !== n) throw new TypeError(`a ${primitiveToString(type)} bound has ${n} bytes, got ${bytes.length}`);
  };
  switch (physicalKind(type)) {
    case 'boolean':
      need(1);
      return bytes[0] !== 0;
    case 'int':
      need(4);
      return dv.getInt32(0, true);
    case 'long':
      if (bytes.length === 4) return BigInt(dv.getInt32(0, true));
      need(8);
      return dv.getBigInt64(0, true);
    case 'float':
      need(4);
      return dv.getFloat32(0, true);
    case 'double':
      if (bytes.length === 4) return dv.getFloat32(0, true);
      need(8);
      return dv.getFloat64(0, true);
    case 'decimal':
      return bigintFromBytes(bytes);
    case 'string':
      return utf8Decode(bytes);
    case 'fixed':
    case 'binary':
      if (type.kind === 'uuid') need(16);
      return copyBytes(bytes);
  }
}

// ---------------------------------------------------------------------------------------------------
// Truncation (spec "Metrics", Java `UnicodeUtil` / `BinaryUtil`)
// ---------------------------------------------------------------------------------------------------

/** Lower bound of a string/binary under truncate(width): its prefix. Other types are returned unchanged. */
export function truncateLowerBound(type: PrimitiveType, value: PrimitiveValue, width: number): PrimitiveValue {
  if (type.kind === 'string') return truncateCodePoints(value as string, width);
  if (type.kind === 'binary') {
    const b = value as Uint8Array;
    return b.length <= width ? b : b.slice(0, width);
  }
  return value;
}

/**
 * Upper bound of a string/binary under truncate(width): unchanged when it fits; otherwise the prefix with
 * its last incrementable code point (byte) incremented and everything after it dropped. Returns null when
 * no valid upper bound exists (all code points U+10FFFF, all bytes 0xFF): then write no upper bound.
 * Code points skip the surrogate range (U+D7FF + 1 -> U+E000), so the bound is always valid UTF-8; Java's
 * `truncateStringMax` can emit a lone surrogate there (apache/iceberg#11161).
 */
export function truncateUpperBound(type: PrimitiveType, value: PrimitiveValue, width: number): PrimitiveValue | null {
  if (type.kind === 'string') return truncateStringMax(value as string, width);
  if (type.kind === 'binary') return truncateBinaryMax(value as Uint8Array, width);
  return value;
}

export function truncateStringMax(s: string, width: number): string | null {
  const prefix = truncateCodePoints(s, width);
  if (prefix.length === s.length) return s;
  const cps = Array.from(prefix, (c) => c.codePointAt(0) as number);
  for (let i = cps.length - 1; i >= 0; i--) {
    let next = (cps[i] as number) + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
    if (next <= 0x10ffff) {
      return String.fromCodePoint(...cps.slice(0, i), next);
    }
  }
  return null;
}

export function truncateBinaryMax(b: Uint8Array, width: number): Uint8Array | null {
  if (b.length <= width) return b;
  for (let i = width - 1; i >= 0; i--) {
    const x = b[i] as number;
    if (x !== 0xff) {
      const out = b.slice(0, i + 1);
      out[i] = x + 1;
      return out;
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Metrics modes
// ---------------------------------------------------------------------------------------------------

export type MetricsMode =
  | { readonly kind: 'none' }
  | { readonly kind: 'counts' }
  | { readonly kind: 'truncate'; readonly length: number }
  | { readonly kind: 'full' };

/** The default (`write.metadata.metrics.default` absent): truncate(16). */
export const DEFAULT_METRICS_MODE: MetricsMode = { kind: 'truncate', length: 16 };

/** Parses `none`, `counts`, `full`, `truncate(N)` (case-insensitive, as Java's `MetricsModes.fromString`). */
export function parseMetricsMode(text: string): MetricsMode {
  const s = text.trim().toLowerCase();
  if (s === 'none' || s === 'counts' || s === 'full') return { kind: s };
  const m = /^truncate\(\s*(\d+)\s*\)$/.exec(s);
  if (m) {
    const length = Number(m[1]);
    if (length <= 0) throw new ConfigError(`invalid metrics mode ${text}: truncate length must be positive`);
    return { kind: 'truncate', length };
  }
  throw new ConfigError(`invalid metrics mode "${text}" (expected none, counts, truncate(N) or full)`);
}

export function metricsModeToString(m: MetricsMode): string {
  return m.kind === 'truncate' ? `truncate(${m.length})` : m.kind;
}

export interface BoundBytes {
  readonly lower?: Uint8Array;
  readonly upper?: Uint8Array;
}

/**
 * Lower/upper bound bytes of a column from its min and max non-null values under a metrics mode:
 * none/counts -> no bounds; full -> exact; truncate(N) -> strings and binary truncated (upper rounded up,
 * dropped if impossible), other types exact. NaN min/max give no bound (callers should never pass NaN
 * min/max: they track NaN separately in nan_value_counts). -0.0 and +0.0 are preserved as given.
 */
export function boundBytes(type: PrimitiveType, min: PrimitiveValue | undefined, max: PrimitiveValue | undefined, mode: MetricsMode = DEFAULT_METRICS_MODE): BoundBytes {
  if (mode.kind === 'none' || mode.kind === 'counts') return {};
  const out: { lower?: Uint8Array; upper?: Uint8Array } = {};
  const isNaNValue = (v: PrimitiveValue): boolean => typeof v === 'number' && Number.isNaN(v);
  if (min !== undefined && !isNaNValue(min)) {
    out.lower = toBoundBytes(type, mode.kind === 'truncate' ? truncateLowerBound(type, min, mode.length) : min);
  }
  if (max !== undefined && !isNaNValue(max)) {
    const upper = mode.kind === 'truncate' ? truncateUpperBound(type, max, mode.length) : max;
    if (upper !== null) out.upper = toBoundBytes(type, upper);
  }
  return out;
}
