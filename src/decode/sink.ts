/**
 * The columnar sink a decoder writes into, described structurally so that src/decode does not import
 * src/write (layering: decode may import only core and iceberg). The write stage's `RecordAppender`
 * satisfies `RecordSink` as it is: the method names and signatures below are exactly those of its
 * columns (src/write/columns.ts), and test/unit/decode/sink.test.ts proves it by passing a real one.
 *
 * Owns: nothing but the shape. A decoder looks every column up once (by Iceberg field id) when it is
 * bound to a sink, then, per record, appends each value to its column and calls `endRecord()`; on a
 * DataError it calls `abortRecord()` so no column is left half-written.
 * Must not: grow methods the write stage does not have.
 */

import { physicalKind } from '../iceberg/physical.ts';
import type { IcebergType } from '../iceberg/types.ts';

/** Every column: a null (a DataError from the column when the field is required). */
export interface NullableSink {
  appendNull(): void;
}

export interface BooleanSink extends NullableSink {
  append(v: boolean): void;
}

/** int and date (days). */
export interface IntSink extends NullableSink {
  append(v: number): void;
}

/** long, time, timestamp, timestamptz (µs) and the _ns variants. */
export interface LongSink extends NullableSink {
  append(v: bigint): void;
  /** A safe integer, written without creating a BigInt. */
  appendNumber(v: number): void;
}

export interface FloatSink extends NullableSink {
  append(v: number): void;
}

export interface DoubleSink extends NullableSink {
  append(v: number): void;
}

export interface DecimalSink extends NullableSink {
  appendUnscaledNumber(v: number): void;
  appendUnscaled(v: bigint): void;
  /** Big-endian two's complement unscaled bytes (Avro decimal on bytes or fixed). */
  appendBigEndian(bytes: Uint8Array, start?: number, end?: number): void;
}

export interface StringSink extends NullableSink {
  append(s: string): void;
  /** Raw UTF-8 bytes; invalid UTF-8 is a DataError from the column. */
  appendUtf8(src: Uint8Array, start?: number, end?: number): void;
}

export interface BinarySink extends NullableSink {
  append(src: Uint8Array, start?: number, end?: number): void;
}

/** fixed(L) and uuid (16 bytes, big-endian). */
export interface FixedSink extends NullableSink {
  append(src: Uint8Array, start?: number, end?: number): void;
}

/** struct: begin(); children…; end() (optional children left out become null). */
export interface StructSink extends NullableSink {
  begin(): void;
  end(): void;
}

/** list: begin(); element appends…; end(). The element column is looked up by its own field id. */
export interface ListSink extends NullableSink {
  begin(): void;
  end(): void;
}

/** map: begin(); key and value appends per entry…; end(). Key and value are looked up by field id. */
export interface MapSink extends NullableSink {
  begin(): void;
  end(): void;
}

/** What a decoder needs from the write stage: typed column lookup by field id and record boundaries. */
export interface RecordSink {
  boolean(fieldId: number): BooleanSink;
  /** int and date columns. */
  int(fieldId: number): IntSink;
  /** long, time, timestamp(tz) columns. */
  long(fieldId: number): LongSink;
  float(fieldId: number): FloatSink;
  double(fieldId: number): DoubleSink;
  decimal(fieldId: number): DecimalSink;
  string(fieldId: number): StringSink;
  binary(fieldId: number): BinarySink;
  /** fixed(L) and uuid columns. */
  fixed(fieldId: number): FixedSink;
  struct(fieldId: number): StructSink;
  list(fieldId: number): ListSink;
  map(fieldId: number): MapSink;
  /** Closes the record; true when the owner should be given a chance to flush. */
  endRecord(): boolean;
  /** Drops whatever the unfinished record appended. */
  abortRecord(): void;
}

/** The typed column of field `id` (a table field, list element or map key/value) for its Iceberg type's physical kind. */
export function columnFor(sink: RecordSink, target: { readonly id: number; readonly type: IcebergType }): NullableSink {
  const id = target.id;
  switch (physicalKind(target.type)) {
    case 'boolean':
      return sink.boolean(id);
    case 'int':
      return sink.int(id);
    case 'long':
      return sink.long(id);
    case 'float':
      return sink.float(id);
    case 'double':
      return sink.double(id);
    case 'decimal':
      return sink.decimal(id);
    case 'string':
      return sink.string(id);
    case 'binary':
      return sink.binary(id);
    case 'fixed':
      return sink.fixed(id);
    case 'struct':
      return sink.struct(id);
    case 'list':
      return sink.list(id);
    case 'map':
      return sink.map(id);
  }
}
