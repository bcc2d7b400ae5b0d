/**
 * The decode port: Schema Registry resolver port, Avro → Iceberg schema mapping, and the columnar Avro
 * decoder that appends straight into a write-stage sink (structural, sink.ts). Callers import from here.
 */
export { avroToIceberg, parseAvroSchema, resolveAvroSchema } from './avro-schema.ts';
export type { AvroToIcebergOptions, AvroType } from './avro-schema.ts';
export { AvroProgram, BoundAvroDecoder, compileAvroDecoder, CONFLUENT_HEADER_BYTES, confluentSchemaId, ConfluentAvroDecoder } from './avro-decoder.ts';
export type { AvroDecoderOptions } from './avro-decoder.ts';
export type { RegisteredSchema, SchemaResolver, SchemaType } from './registry-port.ts';
export type * from './sink.ts';
