/**
 * Kafka metadata columns on request (`icefloe.tables.kafka-metadata-columns`, named
 * `<icefloe.tables.kafka-metadata-prefix><column>`, default `_kafka_metadata_offset` etc., the flat
 * names of Iceberg's `KafkaMetadataTransform` with its default `field_name` `_kafka_metadata`).
 *
 * Owns: which Iceberg fields the columns add to a table (types, optionality, docs; no field ids — the
 * table gets ids from the catalog), a pure description of what each column takes from the record's Kafka
 * coordinates, and `metadataValues`, the reference extraction the runtime's column appenders must agree
 * with.
 * Must not: import the Iceberg model (config/ may import only core: the type shapes below are
 * structurally the `PrimitiveType`s of src/iceberg/types.ts, the map minus its ids), read a clock, or
 * decode a key or header (values are the raw bytes as consumed).
 *
 * Why config/: the specs are the resolved meaning of three connector keys (`…-metadata-columns`,
 * `…-metadata-prefix` and the key converter, all defined in connector-config.ts) and need nothing but
 * core and config, so every stage above config/ may use them without a new import arrow (the sink task
 * derives them from the connector config, its table writer adds the fields and appends the values).
 *
 * Decisions:
 * - Types: topic string, partition int, offset long, timestamp timestamptz (µs, UTC), key binary — or
 *   string when the key converter is StringConverter (its bytes are text by contract; any other
 *   converter's key is kept as the exact bytes on the wire, Confluent framing included, which is
 *   lossless and needs no key schema), headers map<string, binary> with optional values.
 *   KafkaMetadataTransform itself writes timestamp as a long of epoch ms and has no key or headers.
 * - Every column is optional, even topic, partition and offset, which the writer always fills: Iceberg
 *   does not let a v2 table gain a required column (rows written before have none), so an existing table
 *   can take the columns by ordinary schema evolution, and rows from before read null.
 * - The coordinates are the ORIGINAL ones, as consumed, before any SMT renames the topic or partition:
 *   they are what the consumer group commits, so (topic, partition, offset) identifies a Kafka record
 *   exactly and crash tests count records by them. The offset is a bigint end to end (never a Number).
 * - timestamp: Kafka's -1 (NO_TIMESTAMP) is null; any other negative value is invalid, as in Connect's
 *   `ConnectUtils.checkAndConvertTimestamp` ("Invalid record timestamp"), which fails the record.
 * - key: a null key is null.
 * - headers: never null (a record without headers has an empty map); a null header value is a null map
 *   value; a key repeated in one record keeps its last value (Connect's `Headers.lastWithName`), at the
 *   position of its first occurrence.
 */
import { DataError } from '../core/errors.ts';
import { KAFKA_METADATA_COLUMNS } from './connector-config.ts';
import type { KafkaMetadataColumn, TablesConfig } from './connector-config.ts';
import type { ConverterKind } from './converters.ts';

/** Column types, shaped as src/iceberg/types.ts's (the map without its key and value ids). */
export type MetadataPrimitiveType =
  | { readonly kind: 'string' }
  | { readonly kind: 'int' }
  | { readonly kind: 'long' }
  | { readonly kind: 'timestamptz' }
  | { readonly kind: 'binary' };
export interface MetadataMapType {
  readonly kind: 'map';
  readonly key: { readonly kind: 'string' };
  readonly value: { readonly kind: 'binary' };
  readonly valueRequired: false;
}
export type MetadataFieldType = MetadataPrimitiveType | MetadataMapType;

/** What one column's value is, from the consumed record. */
export type MetadataValueSource =
  /** The topic as consumed (before SMTs), a string. */
  | { readonly from: 'topic' }
  /** The partition as consumed, an int (number). */
  | { readonly from: 'partition' }
  /** The offset, exact: a bigint. */
  | { readonly from: 'offset' }
  /** The record timestamp in epoch ms × 1000 as a bigint of µs; null when -1 (no timestamp). */
  | { readonly from: 'timestamp'; readonly unit: 'micros' }
  /** The key bytes as consumed (`binary`), or decoded as UTF-8 (`string`, StringConverter); null key → null. */
  | { readonly from: 'key'; readonly as: 'binary' | 'string' }
  /** Every header as a map entry, raw value bytes; duplicate keys: the last value wins. */
  | { readonly from: 'headers'; readonly duplicates: 'last-wins' };

/** An Iceberg field to add to a table, without an id. */
export interface MetadataFieldSpec {
  readonly column: KafkaMetadataColumn;
  /** prefix + column, e.g. `_kafka_metadata_offset`. */
  readonly name: string;
  readonly required: false;
  readonly type: MetadataFieldType;
  readonly doc: string;
  readonly source: MetadataValueSource;
}

/** The consumed record's coordinates, as the consumer hands them over (original topic/partition/offset). */
export interface KafkaRecordCoordinates {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** Epoch ms; -1 or null when the record has none. */
  readonly timestamp: number | bigint | null;
  readonly key: Uint8Array | null;
  readonly headers: readonly (readonly [string, Uint8Array | null])[];
}

/** One column's value: string, int (number), long/timestamptz (bigint), binary, headers entries, or null. */
export type MetadataValue = string | number | bigint | Uint8Array | readonly (readonly [string, Uint8Array | null])[] | null;

/** How the key column is typed for a key converter: string for StringConverter, else the raw bytes. */
export function keyColumnFormat(keyConverter: ConverterKind): 'binary' | 'string' {
  return keyConverter === 'string' ? 'string' : 'binary';
}

const DOCS: Readonly<Record<KafkaMetadataColumn, string>> = {
  topic: 'Kafka topic the record was consumed from (before any SMT)',
  partition: 'Kafka partition the record was consumed from (before any SMT)',
  offset: 'Kafka offset of the record in its partition',
  timestamp: 'Kafka record timestamp (CreateTime or LogAppendTime); null when the record has none',
  key: 'Kafka record key',
  headers: 'Kafka record headers (raw values; a repeated key keeps its last value)',
};

/**
 * The metadata fields for a table, in the canonical order topic, partition, offset, timestamp, key,
 * headers (whatever order the config lists them in), no duplicates; empty when none are requested.
 * `keyConverter` is the effective key converter's kind (connector's, else the worker's).
 */
export function metadataFields(config: Pick<TablesConfig, 'kafkaMetadata'>, keyConverter: ConverterKind): readonly MetadataFieldSpec[] {
  const wanted = new Set(config.kafkaMetadata.columns);
  const prefix = config.kafkaMetadata.prefix;
  const keyAs = keyColumnFormat(keyConverter);
  return Object.freeze(
    KAFKA_METADATA_COLUMNS.filter((c) => wanted.has(c)).map((column): MetadataFieldSpec => {
      const doc = column === 'key' ? `${DOCS.key}${keyAs === 'string' ? ' (UTF-8 text, StringConverter)' : ' (bytes as consumed)'}` : DOCS[column];
      return Object.freeze({ column, name: `${prefix}${column}`, required: false, type: typeOf(column, keyAs), doc, source: sourceOf(column, keyAs) });
    }),
  );
}

function typeOf(column: KafkaMetadataColumn, keyAs: 'binary' | 'string'): MetadataFieldType {
  switch (column) {
    case 'topic':
      return { kind: 'string' };
    case 'partition':
      return { kind: 'int' };
    case 'offset':
      return { kind: 'long' };
    case 'timestamp':
      return { kind: 'timestamptz' };
    case 'key':
      return { kind: keyAs };
    case 'headers':
      return { kind: 'map', key: { kind: 'string' }, value: { kind: 'binary' }, valueRequired: false };
  }
}

function sourceOf(column: KafkaMetadataColumn, keyAs: 'binary' | 'string'): MetadataValueSource {
  switch (column) {
    case 'timestamp':
      return { from: 'timestamp', unit: 'micros' };
    case 'key':
      return { from: 'key', as: keyAs };
    case 'headers':
      return { from: 'headers', duplicates: 'last-wins' };
    default:
      return { from: column };
  }
}

/**
 * Names of record fields that collide with a metadata column (the decoded record must not already have
 * them: the table could not hold both). Case-insensitive when the table matching is
 * (`iceberg.tables.schema-case-insensitive`).
 */
export function metadataNameConflicts(fields: readonly MetadataFieldSpec[], recordFieldNames: Iterable<string>, caseInsensitive: boolean): string[] {
  const norm = (n: string): string => (caseInsensitive ? n.toLowerCase() : n);
  const ours = new Set(fields.map((f) => norm(f.name)));
  return [...recordFieldNames].filter((n) => ours.has(norm(n)));
}

const UTF8 = new TextDecoder('utf-8');

/**
 * The values of `fields` for one record, in the same order: the reference the columnar appenders follow.
 * Throws a DataError for a negative timestamp other than -1 (Connect rejects such a record).
 */
export function metadataValues(fields: readonly MetadataFieldSpec[], record: KafkaRecordCoordinates): MetadataValue[] {
  return fields.map((f) => valueOf(f.source, record));
}

function valueOf(source: MetadataValueSource, r: KafkaRecordCoordinates): MetadataValue {
  switch (source.from) {
    case 'topic':
      return r.topic;
    case 'partition':
      return r.partition;
    case 'offset':
      return r.offset;
    case 'timestamp':
      return timestampMicros(r);
    case 'key':
      // Java's `new String(bytes, UTF_8)` (StringConverter) replaces malformed input with U+FFFD, as TextDecoder does.
      return r.key === null ? null : source.as === 'string' ? UTF8.decode(r.key) : r.key;
    case 'headers':
      return lastWins(r.headers);
  }
}

function timestampMicros(r: KafkaRecordCoordinates): bigint | null {
  if (r.timestamp === null) return null;
  const ms = BigInt(r.timestamp);
  if (ms === -1n) return null;
  if (ms < 0n) {
    throw new DataError(`invalid record timestamp ${ms}`, { stage: 'convert', record: { topic: r.topic, partition: r.partition, offset: r.offset } });
  }
  return ms * 1000n;
}

function lastWins(headers: readonly (readonly [string, Uint8Array | null])[]): readonly (readonly [string, Uint8Array | null])[] {
  if (headers.length < 2) return headers;
  const map = new Map<string, Uint8Array | null>();
  for (const [k, v] of headers) map.set(k, v);
  return map.size === headers.length ? headers : [...map.entries()];
}
