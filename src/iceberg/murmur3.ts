/**
 * Murmur3 x86 32-bit hash (seed 0 by default), the hash behind Iceberg's `bucket[N]` transform (spec
 * Appendix B; Java uses Guava's `murmur3_32_fixed`). Hashes bytes, never JS strings: encode to UTF-8
 * first (npm `murmurhash3js` hashes UTF-16 char codes and gets every non-ASCII bucket wrong).
 *
 * Owns: the hash only. Must not know Iceberg types (transforms.ts chooses the bytes to hash).
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** Signed 32-bit result, as Java's `hashBytes(...).asInt()` returns it; `len`: hash only the first bytes. */
export function murmur3x86_32(data: Uint8Array, seed = 0, len = data.length): number {
  let h = seed | 0;
  const blocks = len & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let k =
      (data[i] as number) | ((data[i + 1] as number) << 8) | ((data[i + 2] as number) << 16) | ((data[i + 3] as number) << 24);
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = len & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= (data[blocks + 2] as number) << 16;
    if (tail >= 2) k ^= (data[blocks + 1] as number) << 8;
    k ^= data[blocks] as number;
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
  }
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

const encoder = new TextEncoder();
/** Grows to the longest string hashed so far; strings are encoded into it instead of a new array each. */
let scratch = new Uint8Array(256);

/**
 * The hash of a string's UTF-8 bytes (what Java hashes for a string bucket), without allocating them: ASCII
 * is copied char by char into a reused buffer, anything else encoded into it.
 */
export function murmur3Utf8(s: string, seed = 0): number {
  const n = s.length;
  if (n * 3 > scratch.length) scratch = new Uint8Array(n * 3); // UTF-8 needs at most 3 bytes per UTF-16 unit
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) break;
    scratch[i] = c;
  }
  if (i === n) return murmur3x86_32(scratch, seed, n);
  const { written } = encoder.encodeInto(s, scratch);
  return murmur3x86_32(scratch, seed, written);
}
