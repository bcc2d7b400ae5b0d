/**
 * The Schema Registry port: what a decoder needs from a registry. The HTTP adapter (`registry/`, over
 * `@kafkajs/confluent-schema-registry`) implements it and translates its failures at the boundary:
 * unreachable registry or an id the registry does not (yet) know → RetriableError (never DLQ'd);
 * a registry answer that is not a schema → DataError.
 * Must not: cache (decoders cache compiled programs by id, avro-decoder.ts) or parse schemas.
 */

export type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

export interface RegisteredSchema {
  readonly id: number;
  /** The registry's `schemaType`; absent in the registry's answer means AVRO. */
  readonly type: SchemaType;
  /** The schema text exactly as the registry returns it (Avro: JSON text). */
  readonly schema: string;
}

export interface SchemaResolver {
  /** The schema registered under a global id (Confluent wire format bytes 1–4). */
  byId(id: number): Promise<RegisteredSchema>;
}
