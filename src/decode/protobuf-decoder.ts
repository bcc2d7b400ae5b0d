/**
 * Protobuf binary → columns, with no per-record JS object: a decoder is compiled once per (writer message,
 * table Iceberg schema) pair (protobuf-message.ts and protobuf-values.ts, reading through
 * protobuf-reader.ts), bound once per sink (a write-stage RecordAppender, seen through sink.ts), and then
 * reads each message's bytes and appends every value straight to its column.
 *
 * Owns: programs and their per-sink binding, the per-record contract, and the Confluent-framed decoder
 * (framing with its message-index list in confluent-frame.ts; parsed schemas cached by id in
 * registry-cache.ts, programs per message path here). Must not: do I/O (the registry is a port), or
 * import src/write.
 *
 * Per record: bytes that do not decode (truncated, a varint over 10 bytes, a wire type that does not
 * match the field's type, an end-group without its start) or a value that does not fit its column raise a
 * DataError naming the field, after `abortRecord()` rolled the partial record back. A proto type that
 * cannot be written to its table column is a ConfigError at compile time.
 */
import protobuf from 'protobufjs';
import { DataError, IcefloeError } from '../core/errors.ts';
import type { Schema } from '../iceberg/types.ts';
import { CONFLUENT_HEADER_BYTES, confluentMessageIndexes, confluentSchemaId } from './confluent-frame.ts';
import { ProtobufCompiler } from './protobuf-message.ts';
import { EMPTY, PbReader } from './protobuf-reader.ts';
import { parseProtobufSchema, ProtobufSchema } from './protobuf-schema.ts';
import type { PbType, ProtobufSource } from './protobuf-schema.ts';
import type { Body, ProtobufDecoderOptions } from './protobuf-values.ts';
import { RegistryCache } from './registry-cache.ts';
import type { SchemaResolver } from './registry-port.ts';
import type { RecordSink } from './sink.ts';

export type { ProtobufDecoderOptions } from './protobuf-values.ts';

/** A decoder bound to one sink: `decode` appends one record and returns endRecord()'s flush hint. */
export class BoundProtobufDecoder {
  readonly sink: RecordSink;
  private readonly body: Body;
  private readonly reader = new PbReader();

  constructor(sink: RecordSink, body: Body) {
    this.sink = sink;
    this.body = body;
  }

  /**
   * Decodes one Protobuf message from `buf[offset, end)` into the sink. On a DataError the partial record
   * is rolled back with abortRecord() before the error is rethrown; the sink stays usable.
   */
  decode(buf: Uint8Array, offset = 0, end = buf.length): boolean {
    const r = this.reader;
    r.buf = buf;
    r.pos = offset;
    r.end = end;
    try {
      this.body(r, offset, end);
      return this.sink.endRecord();
    } catch (e) {
      this.sink.abortRecord();
      if (e instanceof IcefloeError) throw e;
      throw new DataError(`Protobuf message could not be decoded: ${(e as Error).message}`, { stage: 'deserialize', cause: e });
    } finally {
      r.buf = EMPTY;
    }
  }
}

/** A decoder compiled for one (writer message, table schema) pair; `bind(sink)` looks the columns up once per sink. */
export class ProtobufProgram {
  readonly message: PbType;
  readonly table: Schema;
  private readonly binder: (sink: RecordSink) => Body;
  private readonly bound = new WeakMap<RecordSink, BoundProtobufDecoder>();

  constructor(message: PbType, table: Schema, binder: (sink: RecordSink) => Body) {
    this.message = message;
    this.table = table;
    this.binder = binder;
  }

  bind(sink: RecordSink): BoundProtobufDecoder {
    let d = this.bound.get(sink);
    if (d === undefined) {
      d = new BoundProtobufDecoder(sink, this.binder(sink));
      this.bound.set(sink, d);
    }
    return d;
  }

  decode(sink: RecordSink, buf: Uint8Array, offset = 0, end = buf.length): boolean {
    return this.bind(sink).decode(buf, offset, end);
  }
}

export interface CompileProtobufOptions extends ProtobufDecoderOptions {
  /** Which message of the schema: a full name or a Confluent message-index path (default [0]). */
  readonly message?: string | readonly number[];
}

/**
 * Compiles a decoder from a writer message (a .proto text / registry answer / parsed schema, plus which
 * message) to a table schema. ConfigError when the message does not fit the table.
 */
export function compileProtobufDecoder(writer: string | ProtobufSource | ProtobufSchema | PbType, table: Schema, options: CompileProtobufOptions = {}): ProtobufProgram {
  let t: PbType;
  if (writer instanceof protobuf.Type) t = writer;
  else {
    const schema = writer instanceof ProtobufSchema ? writer : parseProtobufSchema(writer);
    t = typeof options.message === 'string' ? schema.byName(options.message) : schema.message(options.message ?? [0]);
  }
  const binder = new ProtobufCompiler(options).message(t, table.fields, '');
  return new ProtobufProgram(t, table, binder);
}

/** A parsed schema file and the programs compiled from it, by message path. */
interface Entry {
  readonly schema: ProtobufSchema;
  /** The program of the file's first message (`[0]`, the common case: looked up without a key). */
  first?: ProtobufProgram | IcefloeError;
  readonly byPath: Map<string, ProtobufProgram | IcefloeError>;
}

export interface ConfluentProtobufOptions extends ProtobufDecoderOptions {
  /**
   * True (default): frames carry Confluent's message-index list. False: they do not — what
   * @kafkajs/confluent-schema-registry 4.1 writes (docs/stack.md); the message is then the file's first.
   */
  readonly messageIndexes?: boolean;
}

/**
 * Decodes Confluent-framed Protobuf values for one table schema, with parsed schemas cached by id
 * (registry-cache.ts: one fetch per id, deterministic failures cached, resolver failures retried) and
 * compiled programs by (id, message-index path). Call `prepare(id)` (async: it may ask the registry) for
 * the ids of a batch, then `decode` synchronously per message; `decodeAsync` does both. A message that does
 * not fit the table is cached as a deterministic failure too. When the table schema changes, make a new
 * decoder.
 */
export class ConfluentProtobufDecoder {
  readonly table: Schema;
  private readonly options: ConfluentProtobufOptions;
  private readonly entries: RegistryCache<Entry>;

  constructor(resolver: SchemaResolver, table: Schema, options: ConfluentProtobufOptions = {}) {
    this.table = table;
    this.options = options;
    this.entries = new RegistryCache(resolver, 'PROTOBUF', (registered) => ({ schema: parseProtobufSchema(registered), byPath: new Map() }));
  }

  /** The parsed schema for an id, fetching it on first use. */
  async prepare(id: number): Promise<ProtobufSchema> {
    return (await this.entries.prepare(id)).schema;
  }

  /** True when `decode` needs no `prepare` first for this id (parsed, or failed for good). */
  prepared(id: number): boolean {
    return this.entries.settled(id);
  }

  /** The program for an id (prepared) and message path, compiled on first use. */
  program(id: number, indexes: readonly number[] | null = null): ProtobufProgram {
    const e = this.entries.get(id);
    const isFirst = indexes === null || (indexes.length === 1 && indexes[0] === 0);
    const key = isFirst ? '' : (indexes as readonly number[]).join('.');
    let p = isFirst ? e.first : e.byPath.get(key);
    if (p === undefined) {
      try {
        p = compileProtobufDecoder(e.schema, this.table, { ...this.options, message: indexes ?? [0] });
      } catch (err) {
        if (!(err instanceof IcefloeError) || err.retriable) throw err;
        p = err;
      }
      if (isFirst) e.first = p;
      else e.byPath.set(key, p);
    }
    if (p instanceof IcefloeError) throw p;
    return p;
  }

  /** Decodes one framed message into the sink (its schema id must have been prepared). */
  decode(msg: Uint8Array, sink: RecordSink): boolean {
    const id = confluentSchemaId(msg);
    if (this.options.messageIndexes === false) return this.program(id).bind(sink).decode(msg, CONFLUENT_HEADER_BYTES, msg.length);
    const { indexes, start } = confluentMessageIndexes(msg);
    return this.program(id, indexes).bind(sink).decode(msg, start, msg.length);
  }

  async decodeAsync(msg: Uint8Array, sink: RecordSink): Promise<boolean> {
    const id = confluentSchemaId(msg);
    if (!this.entries.settled(id)) await this.entries.prepare(id);
    return this.decode(msg, sink);
  }
}
