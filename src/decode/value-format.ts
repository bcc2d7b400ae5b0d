/**
 * The record value formats a sink task reads (Connect's `value.converter`), behind one shape: what the
 * writer schema of a message is (for auto-create, evolution and the probe) and a decoder into a table's
 * columns. Avro and Protobuf come Confluent-framed through the Schema Registry; JSON follows Connect's
 * JsonConverter (with or without the schema envelope); String and ByteArray fill one `value` column.
 *
 * Owns: the schema key of a message, and doing each record's work once however many tables it goes to.
 * A runtime asks `schemaKey`, maybe `sourceSchema`, then `decode` once per target table (and once per
 * probe), all for the same message in a row; so each format keeps what it derived from the LAST message
 * it saw, keyed on the message buffer's identity (`LastMessage`): a JSON record is parsed once and its key
 * hashed once, an Avro or Protobuf key is read from the frame once. Identity, not content, because it is
 * one pointer comparison per call and a Kafka client hands every record its own buffer; a second message
 * (or the first one again later) only costs a fresh parse, never a wrong answer — unless a caller rewrites
 * a buffer in place and passes it again, which this contract forbids.
 * Must not: look inside a table (decoders do), or do I/O other than through the registry port.
 */
import { createHash } from 'node:crypto';
import { ConfigError, DataError } from '../core/errors.ts';
import type { Schema } from '../iceberg/types.ts';
import { avroToIceberg } from './avro-schema.ts';
import { ConfluentAvroDecoder } from './avro-decoder.ts';
import { confluentMessageIndexes, confluentSchemaId } from './confluent-frame.ts';
import type { ConnectSchema } from './connect-schema.ts';
import { connectSchemaToIceberg, inferIcebergSchema } from './connect-schema.ts';
import { JsonConverterDecoder, RawColumnDecoder, singleColumnSchema, unwrapEnvelope } from './json-decoder.ts';
import { JsonNumberText, parseJsonBytes } from './json-value.ts';
import { ConfluentProtobufDecoder } from './protobuf-decoder.ts';
import { protobufToIceberg } from './protobuf-schema.ts';
import { RegistryCache } from './registry-cache.ts';
import type { RegisteredSchema, SchemaResolver } from './registry-port.ts';
import type { RecordSink } from './sink.ts';

/** Decodes messages into the columns of one table schema. */
export interface TableDecoder {
  /** Fetches what `decode` needs for this message (a registry lookup); undefined when nothing is missing. */
  prepare(msg: Uint8Array): Promise<unknown> | undefined;
  /** Appends one record and closes it (endRecord's flush hint); DataError for bad bytes. */
  decode(msg: Uint8Array, sink: RecordSink): boolean;
}

/**
 * A record value format. Every method takes the record's value buffer, and may remember what it derived
 * from the last one by identity (see the module header): pass each record's own buffer, never one
 * rewritten in place.
 */
export interface ValueFormat {
  /** Equal keys: the same writer schema (no need to look at evolution again). Computed once per record. */
  schemaKey(msg: Uint8Array): string;
  /** The message's writer schema as an Iceberg schema with fresh ids. */
  sourceSchema(msg: Uint8Array): Promise<Schema>;
  decoderFor(table: Schema): TableDecoder;
  /**
   * True when `sourceSchema` is inferred from the record's value (schemaless JSON) rather than declared:
   * evolution then only adds the fields a table lacks (`unionByName`'s `addColumnsOnly`).
   */
  readonly inferredSchemas?: boolean;
}

export interface FormatOptions {
  readonly caseInsensitive: boolean;
  readonly forceOptional: boolean;
  /**
   * `iceberg.tables.evolve-schema-enabled`: schemaless JSON keys then tell records apart by their field
   * names at every depth (a key first seen inside a nested object is a new field to add), not only the
   * top-level ones. Off, the top-level names are enough and the keys stay few.
   */
  readonly evolveSchema?: boolean;
}

/** What a format needs of the converter's configuration (config/converters.ts `ConverterConfig` fits). */
export interface ValueConverter {
  readonly className: string;
  readonly kind: 'json' | 'string' | 'bytes' | 'avro' | 'protobuf';
  /** JsonConverter `schemas.enable`. */
  readonly schemasEnable: boolean;
}

export function valueFormat(converter: ValueConverter, resolver: SchemaResolver | undefined, options: FormatOptions): ValueFormat {
  const needRegistry = (): SchemaResolver => {
    if (resolver === undefined) throw new ConfigError(`${converter.className} needs value.converter.schema.registry.url`);
    return resolver;
  };
  switch (converter.kind) {
    case 'avro':
      return avroFormat(needRegistry(), options);
    case 'protobuf':
      return protobufFormat(needRegistry(), options);
    case 'json':
      return jsonFormat(converter.schemasEnable, options);
    case 'string':
    case 'bytes':
      return rawFormat(converter.kind === 'string' ? 'string' : 'binary');
  }
}

/**
 * What was derived from the last message seen, by the buffer's identity; a failure is remembered too, so
 * a record that does not parse is not parsed again for its next table.
 */
class LastMessage<T> {
  private msg: Uint8Array | undefined;
  private value: T | undefined;
  private failure: unknown;
  private failed = false;
  private readonly derive: (msg: Uint8Array) => T;

  constructor(derive: (msg: Uint8Array) => T) {
    this.derive = derive;
  }

  get(msg: Uint8Array): T {
    if (msg !== this.msg) {
      this.msg = msg;
      try {
        this.value = this.derive(msg);
        this.failed = false;
      } catch (e) {
        this.value = undefined;
        this.failure = e;
        this.failed = true;
      }
    }
    if (this.failed) throw this.failure;
    return this.value as T;
  }
}

/** The decimal text of a schema id, made once per id (the key of every record with that id). */
class IdKeys {
  private readonly keys = new Map<number, string>();
  of(id: number): string {
    let k = this.keys.get(id);
    if (k === undefined) this.keys.set(id, (k = String(id)));
    return k;
  }
}

/**
 * A registered writer schema as an Iceberg schema. One that cannot become one (recursive, a type Iceberg
 * has no column for) is the problem of the records carrying its id, as a schema that does not fit the
 * table is when a decoder is compiled (registry-cache.ts): a DataError (stage `convert`) that follows
 * errors.tolerance, never a ConfigError that would stop the task whatever the configuration says.
 */
function asTableSchema(id: number, convert: () => Schema): Schema {
  try {
    return convert();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new DataError(`schema id ${id} cannot become a table schema: ${e.message}`, { stage: 'convert', cause: e, context: { ...e.context, schemaId: id } });
  }
}

/** A registry format's writer schema: a few fetches per id at most (the adapter caches the raw answers). */
function registeredSchema(resolver: SchemaResolver, type: 'AVRO' | 'PROTOBUF'): RegistryCache<RegisteredSchema> {
  return new RegistryCache(resolver, type, (registered) => registered);
}

function avroFormat(resolver: SchemaResolver, options: FormatOptions): ValueFormat {
  const ids = new IdKeys();
  const key = new LastMessage((msg) => ids.of(confluentSchemaId(msg)));
  const schemas = registeredSchema(resolver, 'AVRO');
  return {
    schemaKey: (msg) => key.get(msg),
    async sourceSchema(msg) {
      const id = confluentSchemaId(msg);
      const registered = await schemas.prepare(id);
      return asTableSchema(id, () => avroToIceberg(registered.schema, { forceOptional: options.forceOptional }));
    },
    decoderFor(table) {
      const d = new ConfluentAvroDecoder(resolver, table, { caseInsensitive: options.caseInsensitive });
      return {
        prepare: (msg) => {
          const id = confluentSchemaId(msg);
          return d.prepared(id) ? undefined : d.prepare(id);
        },
        decode: (msg, sink) => d.decode(msg, sink),
      };
    },
  };
}

function protobufFormat(resolver: SchemaResolver, options: FormatOptions): ValueFormat {
  const ids = new IdKeys();
  // The common message path [0] (null) shares its id's key; another path is spelled out after the id.
  const key = new LastMessage((msg) => {
    const id = confluentSchemaId(msg);
    const { indexes } = confluentMessageIndexes(msg);
    return indexes === null ? ids.of(id) : `${id}:${indexes.join('.')}`;
  });
  const schemas = registeredSchema(resolver, 'PROTOBUF');
  return {
    schemaKey: (msg) => key.get(msg),
    async sourceSchema(msg) {
      const id = confluentSchemaId(msg);
      const registered = await schemas.prepare(id);
      const { indexes } = confluentMessageIndexes(msg);
      return asTableSchema(id, () => protobufToIceberg(registered, { message: indexes ?? [0], forceOptional: options.forceOptional }));
    },
    decoderFor(table) {
      const d = new ConfluentProtobufDecoder(resolver, table, { caseInsensitive: options.caseInsensitive });
      return {
        prepare: (msg) => {
          const id = confluentSchemaId(msg);
          return d.prepared(id) ? undefined : d.prepare(id);
        },
        decode: (msg, sink) => d.decode(msg, sink),
      };
    },
  };
}

/** One JSON record as the format sees it: parsed once, its key computed on first ask. */
interface JsonRecord {
  readonly payload: unknown;
  readonly schema: ConnectSchema | undefined;
  key: string | undefined;
}

function jsonFormat(schemasEnable: boolean, options: FormatOptions): ValueFormat {
  const last = new LastMessage<JsonRecord>((msg) => ({ ...unwrapEnvelope(parseJsonBytes(msg), schemasEnable), key: undefined }));
  const keyBasis = (rec: JsonRecord): string =>
    schemasEnable
      ? JSON.stringify(rec.schema ?? null)
      : options.evolveSchema === true
        ? fieldNamePaths(rec.payload)
        : typeof rec.payload === 'object' && rec.payload !== null
          ? Object.keys(rec.payload).sort().join('\u0000')
          : '';
  return {
    // Connect JSON carries its schema in every record (or none): the key is a digest of the schema, or
    // of the field names for schemaless JSON (new names are what evolution looks for) — at every depth
    // when evolution is on, so a key first seen inside a nested object is not dropped unseen.
    schemaKey(msg) {
      const rec = last.get(msg);
      rec.key ??= createHash('sha1').update(keyBasis(rec)).digest('base64');
      return rec.key;
    },
    sourceSchema(msg) {
      try {
        const { payload, schema } = last.get(msg);
        return Promise.resolve(
          schemasEnable && schema !== undefined ? connectSchemaToIceberg(schema, { forceOptional: options.forceOptional }) : inferIcebergSchema(payload),
        );
      } catch (e) {
        // The Connect schema travels in the record: one that cannot be read is this record's problem
        // (errors.tolerance decides), not the configuration's.
        if (e instanceof ConfigError) return Promise.reject(new DataError(`the record's Connect schema cannot be used: ${e.message}`, { stage: 'deserialize', cause: e, context: e.context }));
        return Promise.reject(e as Error);
      }
    },
    decoderFor(table) {
      const d = new JsonConverterDecoder(table, { schemasEnable, caseInsensitive: options.caseInsensitive });
      return {
        prepare: () => undefined,
        decode: (msg, sink) => {
          const rec = last.get(msg);
          return d.write(rec.payload, rec.schema, sink);
        },
      };
    },
    inferredSchemas: !schemasEnable,
  };
}

/**
 * Every object key of a schemaless JSON value as its path from the root (array elements share their
 * array's path), sorted and joined: equal for two values exactly when they have the same field names at
 * every depth. Names are JSON-quoted, so no name can fake a separator.
 */
function fieldNamePaths(value: unknown): string {
  const paths = new Set<string>();
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) {
      for (const e of v) walk(e, `${path}[]`);
    } else if (typeof v === 'object' && v !== null && !(v instanceof JsonNumberText)) {
      for (const [k, x] of Object.entries(v)) {
        const p = `${path}.${JSON.stringify(k)}`;
        paths.add(p);
        walk(x, p);
      }
    }
  };
  walk(value, '');
  return [...paths].sort().join('\u0000');
}

function rawFormat(kind: 'string' | 'binary'): ValueFormat {
  const schema = singleColumnSchema(kind);
  return {
    schemaKey: () => kind,
    sourceSchema: () => Promise.resolve(schema),
    decoderFor(table) {
      const d = new RawColumnDecoder(table, kind);
      return { prepare: () => undefined, decode: (msg, sink) => d.decode(msg, sink) };
    },
  };
}
