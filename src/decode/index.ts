/**
 * The decode port: Schema Registry resolver port, Avro/Protobuf → Iceberg schema mapping, the columnar
 * Avro and Protobuf decoders that append straight into a write-stage sink (structural, sink.ts), and
 * Connect's JsonConverter / StringConverter / ByteArrayConverter. Callers import from here; the registry
 * adapter (registry/) is wired by app.ts only.
 */
export { avroToIceberg, parseAvroSchema, resolveAvroSchema } from './avro-schema.ts';
export type { AvroToIcebergOptions, AvroType } from './avro-schema.ts';
export { AvroProgram, BoundAvroDecoder, compileAvroDecoder, CONFLUENT_HEADER_BYTES, confluentSchemaId, ConfluentAvroDecoder } from './avro-decoder.ts';
export type { AvroDecoderOptions } from './avro-decoder.ts';
export type { RegisteredSchema, ResolvedReference, SchemaResolver, SchemaType } from './registry-port.ts';
export { parseProtobufSchema, protobufToIceberg, ProtobufSchema, selectMessage } from './protobuf-schema.ts';
export type { ProtobufSource, ProtobufToIcebergOptions } from './protobuf-schema.ts';
export { BoundProtobufDecoder, compileProtobufDecoder, confluentMessageIndexes, ConfluentProtobufDecoder, ProtobufProgram } from './protobuf-decoder.ts';
export type { CompileProtobufOptions, ConfluentProtobufOptions, ProtobufDecoderOptions } from './protobuf-decoder.ts';
export { connectSchemaToIceberg, inferIcebergSchema, JsonConverterDecoder, JsonNumberText, parseJson, RawColumnDecoder, singleColumnSchema, unwrapEnvelope } from './json-decoder.ts';
export type { ConnectSchema, JsonDecoderOptions, JsonToIcebergOptions } from './json-decoder.ts';
export type * from './sink.ts';
