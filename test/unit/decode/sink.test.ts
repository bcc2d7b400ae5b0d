import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileAvroDecoder } from '../../../src/decode/avro-decoder.ts';
import { avroToIceberg } from '../../../src/decode/avro-schema.ts';
import type { BinarySink, DecimalSink, FixedSink, ListSink, LongSink, MapSink, RecordSink, StringSink, StructSink } from '../../../src/decode/sink.ts';
import { buildLayout, RecordAppender } from '../../../src/write/index.ts';
import type { BinaryColumn, DecimalColumn, FixedColumn, ListColumn, LongColumn, MapColumn, StringColumn, StructColumn } from '../../../src/write/index.ts';
import { harness, readBack } from '../write/helpers.ts';
import { avscType } from './helpers.ts';

// Compile-time proof: the write stage's classes satisfy the decode stage's structural sinks.
type Satisfies<T extends U, U> = T;
export type Proof = [
  Satisfies<RecordAppender, RecordSink>,
  Satisfies<LongColumn, LongSink>,
  Satisfies<StringColumn, StringSink>,
  Satisfies<DecimalColumn, DecimalSink>,
  Satisfies<BinaryColumn, BinarySink>,
  Satisfies<FixedColumn, FixedSink>,
  Satisfies<StructColumn, StructSink>,
  Satisfies<ListColumn, ListSink>,
  Satisfies<MapColumn, MapSink>,
];

test('a real RecordAppender is a RecordSink: decode into it, seal, encode, read back', async () => {
  const schema = {
    type: 'record',
    name: 'S',
    fields: [
      { name: 'id', type: 'long' },
      { name: 'name', type: 'string' },
      { name: 'tags', type: { type: 'array', items: 'string' } },
    ],
  };
  const table = avroToIceberg(schema);
  const appender = new RecordAppender(buildLayout(table), () => ({ kind: 'full' }));
  const sink: RecordSink = appender; // no adapter, no cast
  const program = compileAvroDecoder(schema, table);
  const type = avscType(schema);
  program.decode(sink, type.toBuffer({ id: 1, name: 'a', tags: ['x'] }));
  program.decode(sink, type.toBuffer({ id: 2, name: 'b', tags: [] }));
  assert.equal(appender.rows, 2);
  assert.equal(appender.seal()?.rows, 2);
  // The same program bound to a DataFileWriter's appender: encoded to Parquet and read back by hyparquet.
  const h = harness(table);
  for (const id of [1, 2]) program.decode(h.writer.appender, type.toBuffer({ id, name: `n${id}`, tags: ['t'] }));
  const [file] = await h.writer.close();
  const bytes = await h.store.get(file!.filePath);
  const { rows } = await readBack(bytes, table);
  assert.deepStrictEqual(rows, [
    { id: 1n, name: 'n1', tags: ['t'] },
    { id: 2n, name: 'n2', tags: ['t'] },
  ]);
});
