/**
 * The Schema Registry ports: what a decoder needs from a registry (`SchemaResolver`), and what a producer
 * of test data needs (`SchemaRegistrar`). The HTTP adapter (`registry/`, over
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

/** A reference from a schema being registered to a schema already registered (Confluent's shape). */
export interface SchemaReference {
  /** Protobuf: the import path; Avro: the referenced type's full name. */
  readonly name: string;
  readonly subject: string;
  readonly version: number;
}

export interface SchemaToRegister {
  readonly type: SchemaType;
  /** The schema text (Avro: JSON text; Protobuf: the .proto file). */
  readonly schema: string;
  readonly references?: readonly SchemaReference[];
}

/**
 * Registers schemas under a subject (`POST /subjects/{subject}/versions`). Registering a schema the subject
 * already has returns its existing id; a schema the subject's compatibility rule rejects, or one the
 * registry cannot parse, is a ConfigError; an unreachable registry a RetriableError.
 */
export interface SchemaRegistrar {
  /** The schema's global id (what Confluent frames carry in bytes 1–4). */
  register(subject: string, schema: SchemaToRegister): Promise<number>;
}

/** Confluent's TopicNameStrategy: the subject of a topic's values (`<topic>-value`) or keys (`<topic>-key`). */
export function topicNameSubject(topic: string, part: 'value' | 'key' = 'value'): string {
  return `${topic}-${part}`;
}
