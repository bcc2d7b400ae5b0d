/**
 * Byte helpers shared by every stage (Avro containers, Parquet footers, object-store chunks).
 * Pure; Uint8Array in, Uint8Array out.
 */

/** The chunks joined into one new array (never aliasing a chunk, so callers may keep or reuse theirs). */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const c of chunks) size += c.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
