/**
 * The record value formats a sink task reads (Connect's `value.converter`), behind one shape: what the
 * writer schema of a message is (for auto-create, evolution and the probe) and a decoder into a table's
 * columns. Avro and Protobuf come Confluent-framed through the Schema Registry; JSON follows Connect's
 * JsonConverter (with or without the schema envelope); String and ByteArray fill one `value` column.
 */
import { createHash } from 'node:crypto';
import { ConfigError, DataError } from '../core/errors.ts';
import { avroToIceberg } from './avro-schema.ts';
import { ConfluentAvroDecoder } from './avro-decoder.ts';
import { confluentMessageIndexes, confluentSchemaId } from './confluent-frame.ts';
import { connectSchemaToIceberg, inferIcebergSchema } from './connect-schema.ts';
import { ConfluentProtobufDecoder } from './protobuf-decoder.ts';
import { protobufToIceberg } from './protobuf-schema.ts';
import { JsonConverterDecoder, RawColumnDecoder, singleColumnSchema, unwrapEnvelope } from './json-decoder.ts';
import { JsonNumberText, parseJsonBytes } from './json-value.ts';
import type { SchemaResolver } from './registry-port.ts';
import type { RecordSink } from './sink.ts';
import type { Schema } from '../iceberg/types.ts';

/** Decodes messages into the columns of one table schema. */
export interface TableDecoder {
  /** Fetches what `decode` needs for this message (a registry lookup); undefined when nothing is missing. */
  prepare(msg: Uint8Array): Promise<unknown> | undefined;
  /** Appends one record and closes it (endRecord's flush hint); DataError for bad bytes. */
  decode(msg: Uint8Array, sink: RecordSink): boolean;
}

export interface ValueFormat {
  /** Equal keys: the same writer schema (no need to look at evolution again). */
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

function avroFormat(resolver: SchemaResolver, options: FormatOptions): ValueFormat {
  return {
    schemaKey: (msg) => String(confluentSchemaId(msg)),
    async sourceSchema(msg) {
      const registered = await resolver.byId(confluentSchemaId(msg));
      if (registered.type !== 'AVRO') throw new DataError(`schema id ${registered.id} is ${registered.type}, not AVRO`);
      return avroToIceberg(registered.schema, { forceOptional: options.forceOptional });
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
  return {
    schemaKey: (msg) => {
      const { indexes } = confluentMessageIndexes(msg);
      return indexes === null ? String(confluentSchemaId(msg)) : `${confluentSchemaId(msg)}:${indexes.join('.')}`;
    },
    async sourceSchema(msg) {
      const registered = await resolver.byId(confluentSchemaId(msg));
      if (registered.type !== 'PROTOBUF') throw new DataError(`schema id ${registered.id} is ${registered.type}, not PROTOBUF`);
      const { indexes } = confluentMessageIndexes(msg);
      return protobufToIceberg(registered, { message: indexes ?? [0], forceOptional: options.forceOptional });
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

function jsonFormat(schemasEnable: boolean, options: FormatOptions): ValueFormat {
  const parse = (msg: Uint8Array): { payload: unknown; schema: unknown } => unwrapEnvelope(parseJsonBytes(msg), schemasEnable);
  return {
    // Connect JSON carries its schema in every record (or none): the key is a digest of the schema, or
    // of the field names for schemaless JSON (new names are what evolution looks for) — at every depth
    // when evolution is on, so a key first seen inside a nested object is not dropped unseen.
    schemaKey(msg) {
      const { payload, schema } = parse(msg);
      const basis = schemasEnable
        ? JSON.stringify(schema ?? null)
        : options.evolveSchema === true
          ? fieldNamePaths(payload)
          : typeof payload === 'object' && payload !== null
            ? Object.keys(payload).sort().join('\u0000')
            : '';
      return createHash('sha1').update(basis).digest('base64');
    },
    sourceSchema(msg) {
      const { payload, schema } = parse(msg);
      return Promise.resolve(
        schemasEnable && schema !== undefined ? connectSchemaToIceberg(schema, { forceOptional: options.forceOptional }) : inferIcebergSchema(payload),
      );
    },
    decoderFor(table) {
      const d = new JsonConverterDecoder(table, { schemasEnable, caseInsensitive: options.caseInsensitive });
      return { prepare: () => undefined, decode: (msg, sink) => d.decode(msg, sink) };
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
