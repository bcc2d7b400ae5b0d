/**
 * Little-endian IEEE 754 reads shared by the Avro and Protobuf decoders (both wire formats store floats
 * and doubles little-endian). A fixed scratch buffer avoids a DataView or a copy per value.
 */
const SCRATCH = new Uint8Array(8);
const F32 = new Float32Array(SCRATCH.buffer, 0, 1);
const F64 = new Float64Array(SCRATCH.buffer, 0, 1);

/** The float32 at `buf[pos..pos+4)`; the caller has checked the bounds and advances its position. */
export function float32At(buf: Uint8Array, pos: number): number {
  SCRATCH[0] = buf[pos] as number;
  SCRATCH[1] = buf[pos + 1] as number;
  SCRATCH[2] = buf[pos + 2] as number;
  SCRATCH[3] = buf[pos + 3] as number;
  return F32[0] as number;
}

/** The float64 at `buf[pos..pos+8)`; the caller has checked the bounds and advances its position. */
export function float64At(buf: Uint8Array, pos: number): number {
  SCRATCH[0] = buf[pos] as number;
  SCRATCH[1] = buf[pos + 1] as number;
  SCRATCH[2] = buf[pos + 2] as number;
  SCRATCH[3] = buf[pos + 3] as number;
  SCRATCH[4] = buf[pos + 4] as number;
  SCRATCH[5] = buf[pos + 5] as number;
  SCRATCH[6] = buf[pos + 6] as number;
  SCRATCH[7] = buf[pos + 7] as number;
  return F64[0] as number;
}
