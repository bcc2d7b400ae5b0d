/**
 * Murmur3 x86 32-bit hash (seed 0 by default), the hash behind Iceberg's `bucket[N]` transform (spec
 * Appendix B; Java uses Guava's `murmur3_32_fixed`). Hashes bytes, never JS strings: encode to UTF-8
 * first (npm `murmurhash3js` hashes UTF-16 char codes and gets every non-ASCII bucket wrong).
 *
 * Owns: the hash only. Must not know Iceberg types (transforms.ts chooses the bytes to hash).
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** Signed 32-bit result, as Java's `hashBytes(...).asInt()` returns it. */
export function murmur3x86_32(data: Uint8Array, seed = 0): number {
  let h = seed | 0;
  const len = data.length;
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
