/**
 * Small byte helpers shared by the Iceberg codecs: UTF-8, UUID text <-> 16 bytes, minimal big-endian
 * two's complement for decimals, unsigned lexicographic comparison, and safe Buffer views for avsc.
 *
 * Owns: byte-level conversions only. Must not know about Iceberg types (bounds.ts and transforms.ts do).
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function utf8Encode(s: string): Uint8Array {
  return encoder.encode(s);
}

/** Strict: invalid UTF-8 throws (a bound or partition value that is not UTF-8 is corrupt). */
export function utf8Decode(b: Uint8Array): string {
  return decoder.decode(b);
}

/** Unsigned lexicographic order, the order Iceberg uses for binary, fixed, uuid and (UTF-8) strings. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return compareBytes(a, b) === 0;
}

/** Strings compared by Unicode code point (= UTF-8 byte order), not by UTF-16 unit as `<` does. */
export function compareStrings(a: string, b: string): number {
  // Fast path: equal UTF-16 prefixes; fall back to code point comparison only where they differ.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    const pa = a.codePointAt(i) as number;
    const pb = b.codePointAt(i) as number;
    return pa < pb ? -1 : pa > pb ? 1 : 0;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** `f79c3e09-677c-4bbd-a479-3f349cb785e7` -> 16 bytes, big-endian (RFC 4122 byte order). */
export function uuidToBytes(uuid: string): Uint8Array {
  if (!UUID_RE.test(uuid)) throw new TypeError(`not a UUID: ${uuid}`);
  const hex = uuid.replaceAll('-', '');
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export function uuidFromBytes(b: Uint8Array): string {
  if (b.length !== 16) throw new TypeError(`a UUID has 16 bytes, got ${b.length}`);
  const h = toHex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

export function toHex(b: Uint8Array): string {
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return s;
}

export function fromHex(hex: string): Uint8Array {
  const clean = hex.replace(/\s+/g, '');
  if (clean.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(clean)) throw new TypeError(`not hex: ${hex}`);
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/**
 * The minimal big-endian two's-complement bytes of an integer (Java `BigInteger.toByteArray()`), the
 * decimal encoding of Appendix B (bucket input) and Appendix D (bounds). 0 -> [0x00]; 1420 -> 05 8C;
 * -1 -> [0xFF]; 128 -> 00 80.
 */
export function bigintToMinimalBytes(v: bigint): Uint8Array {
  // Number of bytes: smallest n with -2^(8n-1) <= v < 2^(8n-1).
  let n = 1;
  while (v >= 1n << BigInt(8 * n - 1) || v < -(1n << BigInt(8 * n - 1))) n++;
  return bigintToFixedBytes(v, n);
}

/** Two's-complement big-endian in exactly `size` bytes (Avro decimal `fixed`); throws if it does not fit. */
export function bigintToFixedBytes(v: bigint, size: number): Uint8Array {
  const limit = 1n << BigInt(8 * size - 1);
  if (v >= limit || v < -limit) throw new RangeError(`${v} does not fit in ${size} bytes`);
  let u = v < 0n ? (1n << BigInt(8 * size)) + v : v;
  const out = new Uint8Array(size);
  for (let i = size - 1; i >= 0; i--) {
    out[i] = Number(u & 0xffn);
    u >>= 8n;
  }
  return out;
}

/** Big-endian two's complement of any length -> bigint. Empty input is 0. */
export function bigintFromBytes(b: Uint8Array): bigint {
  if (b.length === 0) return 0n;
  let u = 0n;
  for (const x of b) u = (u << 8n) | BigInt(x);
  return (b[0] as number) & 0x80 ? u - (1n << BigInt(8 * b.length)) : u;
}

/** A Node Buffer over exactly these bytes (no copy); avsc insists on Buffer for bytes/fixed. */
export function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** A plain Uint8Array copy of exactly these bytes (never the whole backing ArrayBuffer; see §7 trap 4). */
export function copyBytes(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.subarray(0));
}

export { concatBytes } from '../core/bytes.ts';
