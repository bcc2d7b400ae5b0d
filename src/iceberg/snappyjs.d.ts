/**
 * Minimal types for snappyjs 0.7.0 (pure-JS Snappy, no bundled types), used only by avro.ts for the
 * Avro `snappy` codec. Output type follows the input: Buffer in, Buffer out; Uint8Array in, Uint8Array out.
 */
declare module 'snappyjs' {
  const snappy: {
    uncompress<T extends Uint8Array | ArrayBuffer>(compressed: T, maxLength?: number): T;
    compress<T extends Uint8Array | ArrayBuffer>(uncompressed: T): T;
  };
  export default snappy;
}
