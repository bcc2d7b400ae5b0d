/**
 * A seeded pseudo-random number generator (mulberry32): the same sequence for the same seed on every run
 * and platform, for the data generator, tests and benchmarks. Not for anything secret.
 * Pure: no clock, no global state.
 */

/** Numbers in [0, 1), determined by the seed alone. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
