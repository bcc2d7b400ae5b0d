/**
 * Avro binary → columns, with no per-record JS object: a decoder is compiled once per (writer Avro
 * schema, table Iceberg schema) pair into a tree of closures (avro-compiler.ts, reading through
 * avro-reader.ts), bound once per sink (a write-stage RecordAppender, seen through sink.ts), and then
 * reads each message's bytes and appends every value straight to its column by the table's field id.
 *
 * Owns: programs and their per-sink binding, the per-record contract, and the Confluent-framed decoder
 * (framing in confluent-frame.ts, programs cached by schema id in registry-cache.ts). Must not: do I/O
 * (the registry is a port), or import src/write.
 *
 * Per record: bytes that do not decode (truncated, a bad union index or length, trailing bytes) or a
 * value that does not fit its column (null into a required column, a decimal too wide, invalid UTF-8)
 * raise a DataError naming the field, after `abortRecord()` rolled the partial record back. A writer
 * schema that does not fit the table is a ConfigError at compile time (every record would fail).
 */
import { ConfigError, DataError, IcefloeError } from '../core/errors.ts';
import type { Schema } from '../iceberg/types.ts';
import { AvroCompiler } from './avro-compiler.ts';
import type { AvroDecoderOptions, Binder } from './avro-compiler.ts';
import { AvroReader, EMPTY } from './avro-reader.ts';
import type { Step } from './avro-reader.ts';
import { resolveAvroSchema } from './avro-schema.ts';
import type { AvroType } from './avro-schema.ts';
import { CONFLUENT_HEADER_BYTES, confluentSchemaId } from './confluent-frame.ts';
import { RegistryCache } from './registry-cache.ts';
import type { SchemaResolver } from './registry-port.ts';
import type { RecordSink } from './sink.ts';

export type { AvroDecoderOptions } from './avro-compiler.ts';

/** A decoder bound to one sink: `decode` appends one record and returns endRecord()'s flush hint. */
export class BoundAvroDecoder {
  readonly sink: RecordSink;
  private readonly steps: Step[];
  private readonly reader = new AvroReader();

  constructor(sink: RecordSink, steps: Step[]) {
    this.sink = sink;
    this.steps = steps;
  }

  /**
   * Decodes one Avro-encoded record from `buf[offset, end)` into the sink. On a DataError (bad bytes, a
   * value that does not fit) the partial record is rolled back with abortRecord() before the error is
   * rethrown; the sink stays usable for the next record.
   */
  decode(buf: Uint8Array, offset = 0, end = buf.length): boolean {
    const r = this.reader;
    r.buf = buf;
    r.pos = offset;
    r.end = end;
    const steps = this.steps;
    try {
      for (let i = 0; i < steps.length; i++) (steps[i] as Step)(r);
      if (r.pos !== end) {
        if (r.pos > end) throw new DataError(`Avro record truncated: needs more than its ${end - offset} bytes`, { stage: 'deserialize', context: { offset: r.pos } });
        throw new DataError(`${end - r.pos} bytes left after the Avro record: the bytes do not match the writer schema`, { stage: 'deserialize', context: { offset: r.pos } });
      }
      return this.sink.endRecord();
    } catch (e) {
      this.sink.abortRecord();
      if (e instanceof IcefloeError) throw e;
      // A foreign error while reading bytes (e.g. a RangeError) is bad data too; keep it as the cause.
      throw new DataError(`Avro record could not be decoded: ${(e as Error).message}`, { stage: 'deserialize', cause: e });
    } finally {
      r.buf = EMPTY;
    }
  }
}

/**
 * A decoder compiled for one (writer Avro schema, table Iceberg schema) pair. `bind(sink)` looks the
 * columns up once per sink (cached), so one program serves every partition writer of the table.
 */
export class AvroProgram {
  readonly writerSchema: AvroType;
  readonly table: Schema;
  private readonly binders: Binder[];
  private readonly bound = new WeakMap<RecordSink, BoundAvroDecoder>();

  constructor(writerSchema: AvroType, table: Schema, binders: Binder[]) {
    this.writerSchema = writerSchema;
    this.table = table;
    this.binders = binders;
  }

  bind(sink: RecordSink): BoundAvroDecoder {
    let d = this.bound.get(sink);
    if (d === undefined) {
      d = new BoundAvroDecoder(
        sink,
        this.binders.map((b) => b(sink)),
      );
      this.bound.set(sink, d);
    }
    return d;
  }

  /** Shorthand for bind(sink).decode(...). */
  decode(sink: RecordSink, buf: Uint8Array, offset = 0, end = buf.length): boolean {
    return this.bind(sink).decode(buf, offset, end);
  }
}

/**
 * Compiles a decoder from a writer Avro schema (JSON, text, or a resolveAvroSchema result) to a table
 * schema. ConfigError when the writer schema does not fit the table (a type that cannot be converted).
 */
export function compileAvroDecoder(writer: unknown, table: Schema, options: AvroDecoderOptions = {}): AvroProgram {
  const w = resolveAvroSchema(writer);
  if (w.type !== 'record') throw new ConfigError(`the writer schema must be an Avro record, not ${w.type}`);
  const binders = new AvroCompiler(options).fields(w, table.fields, '');
  return new AvroProgram(w, table, binders);
}

/**
 * Decodes Confluent-framed Avro values for one table schema, with compiled programs cached by schema id
 * (registry-cache.ts: one fetch per id, deterministic failures cached, resolver failures retried).
 * Call `prepare(id)` (async: it may ask the registry) for the ids of a batch, then `decode` synchronously
 * per message; `decodeAsync` does both. When the table schema changes, make a new ConfluentAvroDecoder.
 */
export class ConfluentAvroDecoder {
  readonly table: Schema;
  private readonly programs: RegistryCache<AvroProgram>;

  constructor(resolver: SchemaResolver, table: Schema, options: AvroDecoderOptions = {}) {
    this.table = table;
    this.programs = new RegistryCache(resolver, 'AVRO', (registered) => compileAvroDecoder(registered.schema, table, options));
  }

  /** The program for a schema id, compiling it on first use. */
  prepare(id: number): Promise<AvroProgram> {
    return this.programs.prepare(id);
  }

  /** True when `decode` needs no `prepare` first for this id (compiled, or failed for good). */
  prepared(id: number): boolean {
    return this.programs.settled(id);
  }

  /** Decodes one framed message into the sink (its schema id must have been prepared). */
  decode(msg: Uint8Array, sink: RecordSink): boolean {
    return this.programs.get(confluentSchemaId(msg)).bind(sink).decode(msg, CONFLUENT_HEADER_BYTES, msg.length);
  }

  async decodeAsync(msg: Uint8Array, sink: RecordSink): Promise<boolean> {
    const id = confluentSchemaId(msg);
    if (!this.programs.settled(id)) await this.programs.prepare(id);
    return this.decode(msg, sink);
  }
}
