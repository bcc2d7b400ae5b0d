/**
 * The Schema Registry port: what a decoder needs from a registry. The HTTP adapter (`registry/`, over
 * `@kafkajs/confluent-schema-registry`) implements it and translates its failures at the boundary:
 * unreachable registry or an id the registry does not (yet) know → RetriableError (never DLQ'd);
 * a registry answer that is not a schema → DataError. See registry/schema-registry.ts for when an
 * unknown id stops being retriable.
 * Must not: parse schemas. Decoders cache compiled programs by id (avro-decoder.ts); an adapter may cache
 * the raw answers by id too (ids are immutable in a Confluent-API registry), so that decoders for several
 * tables share one fetch.
 */

export type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

/** A schema another one references (Protobuf `import`, Avro named types), resolved to its text. */
export interface ResolvedReference {
  /** The reference's name: for Protobuf the import path (`other/common.proto`), for Avro the type's full name. */
  readonly name: string;
  readonly subject: string;
  readonly version: number;
  readonly type: SchemaType;
  readonly schema: string;
}

export interface RegisteredSchema {
  readonly id: number;
  /** The registry's `schemaType`; absent in the registry's answer means AVRO. */
  readonly type: SchemaType;
  /** The schema text exactly as the registry returns it (Avro: JSON text). */
  readonly schema: string;
  /** Every schema it references, transitively, dependencies first (absent or empty: none). */
  readonly references?: readonly ResolvedReference[];
}

export interface SchemaResolver {
  /** The schema registered under a global id (Confluent wire format bytes 1–4). */
  byId(id: number): Promise<RegisteredSchema>;
}
