/**
 * Connect's JsonConverter, StringConverter and ByteArrayConverter as columnar decoders: JSON text (with
 * the `{"schema": …, "payload": …}` envelope when `schemas.enable=true`, bare otherwise), strings and
 * bytes, appended into a write-stage sink (sink.ts) by the table's field ids.
 *
 * Owns: the envelope, the per-record contract of the JSON decoder, and the String/ByteArray single-column
 * tables. Must not: do I/O, or import src/write.
 *
 * Unlike the Avro and Protobuf decoders, JSON needs one JS object per record: `JSON.parse` builds the value
 * tree (json-value.ts), which is then walked into the columns by a writer compiled once per table schema
 * (json-columns.ts). That is acceptable for JSON: it is the slow, schemaless format, and parsing dominates
 * anyway — which is why a record is parsed once however many tables it goes to (value-format.ts hands the
 * parsed payload to `write`). String and ByteArray decoders copy bytes straight into the column (no string
 * is created for a string column).
 *
 * Invalid JSON or a missing envelope is a DataError with the parser's reason. A null payload (a tombstone)
 * is a DataError with `context.tombstone = true`: never dropped silently; the runtime decides
 * (errors.tolerance) like for any other record that cannot become a row.
 */
import { ConfigError, DataError, IcefloeError } from '../core/errors.ts';
import type { Schema } from '../iceberg/types.ts';
import type { ConnectSchema } from './connect-schema.ts';
import { JsonColumnCompiler } from './json-columns.ts';
import { isObject, parseJsonBytes } from './json-value.ts';
import type { RecordSink } from './sink.ts';

export interface JsonDecoderOptions {
  /** JsonConverter `schemas.enable` (default true: each record is a `{"schema", "payload"}` envelope). */
  readonly schemasEnable?: boolean;
  /** `iceberg.tables.schema-case-insensitive`. */
  readonly caseInsensitive?: boolean;
}

/** The JSON value of a record and its Connect schema (from the envelope), or DataError. */
export function unwrapEnvelope(value: unknown, schemasEnable: boolean): { payload: unknown; schema: ConnectSchema | undefined } {
  if (!schemasEnable) return { payload: value, schema: undefined };
  if (!isObject(value) || !('schema' in value) || !('payload' in value) || Object.keys(value).length !== 2) {
    throw new DataError('JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields; if you are trying to deserialize plain JSON data, set schemas.enable=false', { stage: 'deserialize' });
  }
  const schema = value['schema'];
  return { payload: value['payload'], schema: isObject(schema) ? (schema as unknown as ConnectSchema) : undefined };
}

/**
 * Connect JsonConverter records → columns of one table schema. `decode` parses, unwraps the envelope,
 * writes the payload and closes the record; on a DataError the partial record is rolled back.
 */
export class JsonConverterDecoder {
  readonly table: Schema;
  private readonly schemasEnable: boolean;
  private readonly binder: (sink: RecordSink) => (obj: Record<string, unknown>, s: ConnectSchema | undefined) => void;
  private readonly bound = new WeakMap<RecordSink, (obj: Record<string, unknown>, s: ConnectSchema | undefined) => void>();

  constructor(table: Schema, options: JsonDecoderOptions = {}) {
    this.table = table;
    this.schemasEnable = options.schemasEnable !== false;
    this.binder = new JsonColumnCompiler(options.caseInsensitive === true).fields(table.fields, '');
  }

  /** Parses one record's bytes and unwraps the envelope (for auto-create: `connectSchemaToIceberg(schema)` / `inferIcebergSchema(payload)`). */
  parse(buf: Uint8Array, offset = 0, end = buf.length): { payload: unknown; schema: ConnectSchema | undefined } {
    return unwrapEnvelope(parseJsonBytes(buf, offset, end), this.schemasEnable);
  }

  decode(buf: Uint8Array, sink: RecordSink, offset = 0, end = buf.length): boolean {
    const { payload, schema } = this.parse(buf, offset, end);
    return this.write(payload, schema, sink);
  }

  /** Writes an already parsed payload as one record. */
  write(payload: unknown, schema: ConnectSchema | undefined, sink: RecordSink): boolean {
    if (payload === null || payload === undefined) throw new DataError('null JSON value (a tombstone) cannot become a row', { stage: 'deserialize', context: { tombstone: true } });
    if (!isObject(payload)) throw new DataError(`the JSON value is ${Array.isArray(payload) ? 'an array' : typeof payload}, not an object: a table row needs an object`, { stage: 'deserialize' });
    let w = this.bound.get(sink);
    if (w === undefined) {
      w = this.binder(sink);
      this.bound.set(sink, w);
    }
    try {
      w(payload, schema);
      return sink.endRecord();
    } catch (e) {
      sink.abortRecord();
      if (e instanceof IcefloeError) throw e;
      throw new DataError(`JSON record could not be written: ${(e as Error).message}`, { stage: 'deserialize', cause: e });
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// StringConverter and ByteArrayConverter
// ---------------------------------------------------------------------------------------------------

/** The table of a StringConverter (`string`) or ByteArrayConverter (`binary`) value: one optional column. */
export function singleColumnSchema(kind: 'string' | 'binary', name = 'value'): Schema {
  return { schemaId: 0, fields: [{ id: 1, name, required: false, type: { kind } }] };
}

/**
 * StringConverter / ByteArrayConverter: the record's bytes into one column (string: validated UTF-8,
 * copied without making a JS string; binary: copied as is). `append` writes the column only (to combine
 * with other columns, such as a key column, in one record); `decode` also closes the record.
 */
export class RawColumnDecoder {
  readonly kind: 'string' | 'binary';
  readonly fieldId: number;

  constructor(table: Schema, kind: 'string' | 'binary', fieldName = 'value') {
    const f = table.fields.find((x) => x.name === fieldName);
    if (f === undefined) throw new ConfigError(`the table has no column ${fieldName} for the ${kind === 'string' ? 'StringConverter' : 'ByteArrayConverter'}`);
    if (f.type.kind !== kind) throw new ConfigError(`column ${fieldName} is ${f.type.kind}, not ${kind}`);
    this.kind = kind;
    this.fieldId = f.id;
  }

  /** Appends the bytes (null: a Kafka null) to the column. */
  append(buf: Uint8Array | null, sink: RecordSink, offset = 0, end = buf?.length ?? 0): void {
    const col = this.kind === 'string' ? sink.string(this.fieldId) : sink.binary(this.fieldId);
    if (buf === null) col.appendNull();
    else if (this.kind === 'string') (col as ReturnType<RecordSink['string']>).appendUtf8(buf, offset, end);
    else (col as ReturnType<RecordSink['binary']>).append(buf, offset, end);
  }

  decode(buf: Uint8Array | null, sink: RecordSink, offset = 0, end = buf?.length ?? 0): boolean {
    try {
      this.append(buf, sink, offset, end);
      return sink.endRecord();
    } catch (e) {
      sink.abortRecord();
      throw e;
    }
  }
}
