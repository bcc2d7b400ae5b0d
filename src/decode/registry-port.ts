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
import { RetriableError } from '../core/errors.ts';
import type { IcefloeError } from '../core/errors.ts';

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

/**
 * A record's writer schema cannot be fetched yet: the registry does not know its id (within the grace
 * period) or cannot be reached. Retriable, and about one record and what follows it in its partition: a
 * sink task holds back only that partition and tries it again later (runtime/partition-holds.ts), instead
 * of abandoning the cycle of every partition. Thrown by the registry cache (registry-cache.ts) for any
 * retriable failure of the resolver; the resolver's own error is the cause.
 */
export class SchemaUnavailableError extends RetriableError {
  readonly schemaId: number;
  constructor(schemaId: number, cause: IcefloeError) {
    super(cause.message, { cause, context: { ...cause.context, schemaId } });
    this.schemaId = schemaId;
  }
}

export function isSchemaUnavailable(error: unknown): error is SchemaUnavailableError {
  return error instanceof SchemaUnavailableError;
}
