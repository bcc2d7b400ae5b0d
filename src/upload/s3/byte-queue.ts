/**
 * The bytes of a streamed put that are not sent yet (S3ObjectStore.putStream): chunks in arrival order,
 * cut into parts of an exact size.
 *
 * Owns: the copy of queued chunks into one part buffer. Must not: copy a chunk on push (the caller hands
 * over a chunk it owns) or hold more than the caller queued.
 */
/** The bytes of a streamed put not yet sent: chunks in arrival order, taken off the front part by part. */
export class ByteQueue {
  private readonly chunks: Uint8Array[] = [];
  /** Bytes queued. */
  size = 0;

  push(chunk: Uint8Array): void {
    this.chunks.push(chunk);
    this.size += chunk.byteLength;
  }

  /** Takes exactly n bytes (or everything left) off the front of the queue, copied into one buffer. */
  take(n: number): Uint8Array {
    const out = new Uint8Array(Math.min(n, this.size));
    let at = 0;
    while (at < out.byteLength) {
      const head = this.chunks[0] as Uint8Array;
      const want = out.byteLength - at;
      if (head.byteLength <= want) {
        out.set(head, at);
        at += head.byteLength;
        this.chunks.shift();
      } else {
        out.set(head.subarray(0, want), at);
        at += want;
        this.chunks[0] = head.subarray(want);
      }
    }
    this.size -= out.byteLength;
    return out;
  }
}
