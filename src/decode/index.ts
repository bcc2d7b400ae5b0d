/**
 * The decode port: Schema Registry resolver port, Avro/Protobuf → Iceberg schema mapping, the columnar
 * Avro and Protobuf decoders that append straight into a write-stage sink (structural, sink.ts), Connect's
 * JsonConverter / StringConverter / ByteArrayConverter, the value formats a task reads through
 * (value-format.ts) and the one probe that reads a few fields of a record before it is written
 * (record-probe.ts over probe.ts). Callers import from here; the registry adapter (registry/) is wired
 * by app.ts only.
 */
export { avroToIceberg, parseAvroSchema, resolveAvroSchema } from './avro-schema.ts';
export type { AvroToIcebergOptions, AvroType } from './avro-schema.ts';
export { AvroProgram, BoundAvroDecoder, compileAvroDecoder, ConfluentAvroDecoder } from './avro-decoder.ts';
export type { AvroDecoderOptions } from './avro-decoder.ts';
export { CONFLUENT_HEADER_BYTES, confluentMessageIndexes, confluentSchemaId } from './confluent-frame.ts';
export type { MessageIndexes } from './confluent-frame.ts';
export { RegistryCache } from './registry-cache.ts';
export type { RegisteredSchema, ResolvedReference, SchemaResolver, SchemaType } from './registry-port.ts';
export { parseProtobufSchema, protobufToIceberg, ProtobufSchema, selectMessage } from './protobuf-schema.ts';
export type { ProtobufSource, ProtobufToIcebergOptions } from './protobuf-schema.ts';
export { BoundProtobufDecoder, compileProtobufDecoder, ConfluentProtobufDecoder, ProtobufProgram } from './protobuf-decoder.ts';
export type { CompileProtobufOptions, ConfluentProtobufOptions, ProtobufDecoderOptions } from './protobuf-decoder.ts';
export { connectSchemaToIceberg, inferIcebergSchema } from './connect-schema.ts';
export type { ConnectSchema, JsonToIcebergOptions } from './connect-schema.ts';
export { JsonNumberText, parseJsonBytes } from './json-value.ts';
export { JsonConverterDecoder, RawColumnDecoder, singleColumnSchema, unwrapEnvelope } from './json-decoder.ts';
export type { JsonDecoderOptions } from './json-decoder.ts';
export { valueFormat } from './value-format.ts';
export type { FormatOptions, TableDecoder, ValueConverter, ValueFormat } from './value-format.ts';
export { CaptureSink, fieldAtPath, fieldPathOf, projectSchema } from './probe.ts';
export { RecordProbe } from './record-probe.ts';
export type { ProbeField, ProbeRequest, ProbeView } from './record-probe.ts';
export type * from './sink.ts';
