/**
 * The partition of a keyed record as the Java producer's default partitioner picks it:
 * `toPositive(murmur2(utf8(key))) % partitions` (Kafka's Utils.murmur2, seed 0x9747b28c).
 *
 * Why not leave it to librdkafka: its default partitioner (consistent_random, CRC32) puts a key elsewhere
 * than a Java worker does. The status topic has several partitions and compaction keeps the latest record
 * per key within a partition only; a key written to two partitions (by Connect before a migration, by us
 * after) would leave two live statuses whose order no reader can tell. Choosing the partition here keeps
 * every key where Connect keeps it, whatever the producer's settings.
 *
 * Owns: the hash. Must not: do I/O.
 */

const encoder = new TextEncoder();

/** Kafka's murmur2 (MurmurHash2, 32 bit, seed 0x9747b28c) over the bytes, as a signed int32. */
export function murmur2(data: Uint8Array): number {
  const m = 0x5bd1e995;
  const length = data.length;
  let h = (0x9747b28c ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = (data[i] as number) | ((data[i + 1] as number) << 8) | ((data[i + 2] as number) << 16) | ((data[i + 3] as number) << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  // The tail, as Java's switch with fall-through.
  const rest = length & 3;
  if (rest === 3) h ^= (data[whole + 2] as number) << 16;
  if (rest >= 2) h ^= (data[whole + 1] as number) << 8;
  if (rest >= 1) {
    h ^= data[whole] as number;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition the Java producer's default partitioner gives a record with this (UTF-8) key. */
export function keyPartition(key: string, partitions: number): number {
  return (murmur2(encoder.encode(key)) & 0x7fffffff) % partitions;
}
