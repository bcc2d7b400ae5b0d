/**
 * Every encoding of the order events decodes back with OUR decoders (the columnar Avro and Protobuf
 * decoders with Confluent framing and message indexes, Connect's JsonConverter with and without schemas)
 * into a real DataFileWriter's RecordAppender; the Parquet file read back with hyparquet holds exactly the
 * generated objects. The hand-written Avro encoder is also checked against avsc, an implementation we did
 * not write, and v1 data is read into a v2 table (the sink's side of the mid-stream evolution).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import avro from 'avsc';
import { compileAvroDecoder } from '../../../src/decode/avro-decoder.ts';
import { CONFLUENT_HEADER_BYTES, confluentMessageIndexes, confluentSchemaId } from '../../../src/decode/confluent-frame.ts';
import { avroToIceberg } from '../../../src/decode/avro-schema.ts';
import { connectSchemaToIceberg } from '../../../src/decode/connect-schema.ts';
import { JsonConverterDecoder } from '../../../src/decode/json-decoder.ts';
import { compileProtobufDecoder } from '../../../src/decode/protobuf-decoder.ts';
import { protobufToIceberg } from '../../../src/decode/protobuf-schema.ts';
import { orderEncoder } from '../../../tools/generate/order-encodings.ts';
import { orderAvroSchema, orderConnectSchema, orderProtobufSchema } from '../../../tools/generate/order-schemas.ts';
import { generateOrderEvents } from '../../../tools/generate/orders.ts';
import type { OrderEvent, SchemaVersion } from '../../../tools/generate/orders.ts';
import type { Schema } from '../../../src/iceberg/types.ts';
import { harness, readAll } from '../write/helpers.ts';
import type { Row } from '../write/helpers.ts';
import { expectedRow } from './helpers.ts';

const SCHEMA_ID = 4242;

/** Decodes every value into a fresh writer with `decode`, and returns the rows read back from the file. */
async function decodeAll(table: Schema, values: readonly Uint8Array[], decode: (sink: ReturnType<typeof harness>['writer']['appender'], value: Uint8Array) => void): Promise<Row[]> {
  const h = harness(table);
  for (const v of values) decode(h.writer.appender, v);
  return readAll(h.store, await h.writer.close(), table);
}

function events(version: SchemaVersion, n = 400): OrderEvent[] {
  return generateOrderEvents(n, { seed: 20 + version, schemaVersion: version });
}

for (const version of [1, 2] as const) {
  describe(`schema v${version}`, () => {
    test('Avro: Confluent frames decode with our compiled decoder to the generated values', async () => {
      const evs = events(version);
      const encode = orderEncoder('avro', { schemaVersion: version, schemaId: SCHEMA_ID });
      const values = evs.map(encode);
      const table = avroToIceberg(orderAvroSchema(version));
      const program = compileAvroDecoder(orderAvroSchema(version), table);
      const rows = await decodeAll(table, values, (sink, v) => {
        assert.equal(confluentSchemaId(v), SCHEMA_ID);
        program.decode(sink, v, CONFLUENT_HEADER_BYTES, v.length);
      });
      assert.deepStrictEqual(rows, evs.map((e) => expectedRow(table, e)));
    });

    test('Avro: the hand-written encoder writes what avsc reads as the same event', () => {
      const type = avro.Type.forSchema(orderAvroSchema(version) as avro.Schema);
      const encode = orderEncoder('avro', { schemaVersion: version, schemaId: SCHEMA_ID });
      const fromBytes = (b: Buffer): bigint => {
        let u = 0n;
        for (const x of b) u = (u << 8n) | BigInt(x);
        return b.length > 0 && (b[0] as number) & 0x80 ? u - (1n << BigInt(8 * b.length)) : u;
      };
      for (const e of events(version, 2000)) {
        const bytes = encode(e);
        const read = type.fromBuffer(Buffer.from(bytes.subarray(5))) as Record<string, unknown> & { items: { unit_price: Buffer }[]; total: Buffer };
        // avsc checks the whole body is consumed (fromBuffer throws on trailing bytes).
        assert.deepStrictEqual(plain({ ...read, items: read.items.map((it) => ({ ...it, unit_price: fromBytes(it.unit_price) })), total: fromBytes(read.total) }), plain(e));
        // And avsc's own encoding is byte for byte ours.
        const own = type.toBuffer({
          ...e,
          items: e.items.map((it) => ({ ...it, unit_price: Buffer.from(decimal(it.unit_price)) })),
          total: Buffer.from(decimal(e.total)),
        });
        assert.deepEqual(Buffer.from(bytes.subarray(5)), own);
      }
    });

    test('Protobuf: frames carry the message index and decode with our decoder to the generated values', async () => {
      const evs = events(version);
      const encode = orderEncoder('protobuf', { schemaVersion: version, schemaId: SCHEMA_ID });
      const proto = orderProtobufSchema(version);
      const table = protobufToIceberg(proto);
      const program = compileProtobufDecoder(proto, table, { message: [0] });
      const rows = await decodeAll(table, evs.map(encode), (sink, v) => {
        assert.equal(confluentSchemaId(v), SCHEMA_ID);
        assert.equal(v[CONFLUENT_HEADER_BYTES], 0, 'the first message of the file: the single index byte 0');
        const { indexes, start } = confluentMessageIndexes(v);
        assert.equal(indexes, null);
        program.decode(sink, v, start, v.length);
      });
      assert.deepStrictEqual(rows, evs.map((e) => expectedRow(table, e)));
      // Decimals are unscaled cents: the same numbers the Avro table holds.
      const avroTable = avroToIceberg(orderAvroSchema(version));
      assert.deepEqual(rows.map((r) => r['total']), evs.map((e) => expectedRow(avroTable, e)['total']));
    });

    test('JSON with schemas (JsonConverter schemas.enable=true) decodes to the generated values', async () => {
      const evs = events(version);
      const encode = orderEncoder('json-schema', { schemaVersion: version });
      const table = connectSchemaToIceberg(orderConnectSchema(version));
      const decoder = new JsonConverterDecoder(table, { schemasEnable: true });
      const values = evs.map(encode);
      const first = decoder.parse(values[0]!);
      assert.deepEqual(first.schema, orderConnectSchema(version), 'each record carries the Connect schema');
      const rows = await decodeAll(table, values, (sink, v) => decoder.decode(v, sink));
      assert.deepStrictEqual(rows, evs.map((e) => expectedRow(table, e)));
    });

    test('plain JSON (schemas.enable=false) decodes into the same table to the generated values', async () => {
      const evs = events(version);
      const encode = orderEncoder('json', { schemaVersion: version });
      const table = connectSchemaToIceberg(orderConnectSchema(version));
      const decoder = new JsonConverterDecoder(table, { schemasEnable: false });
      const values = evs.map(encode);
      const sample = JSON.parse(Buffer.from(values[0]!).toString('utf8')) as Record<string, unknown>;
      assert.equal(typeof sample['total'], 'number', 'decimals are JSON numbers');
      const rows = await decodeAll(table, values, (sink, v) => decoder.decode(v, sink));
      assert.deepStrictEqual(rows, evs.map((e) => expectedRow(table, e)));
    });
  });
}

test('v1 Avro data reads into a v2 table: channel null, quantity widened to long', async () => {
  const evs = events(1);
  const encode = orderEncoder('avro', { schemaVersion: 1, schemaId: SCHEMA_ID });
  const table = avroToIceberg(orderAvroSchema(2));
  const program = compileAvroDecoder(orderAvroSchema(1), table);
  const rows = await decodeAll(table, evs.map(encode), (sink, v) => program.decode(sink, v, CONFLUENT_HEADER_BYTES, v.length));
  assert.deepStrictEqual(rows, evs.map((e) => expectedRow(table, e)));
  assert.ok(rows.every((r) => r['channel'] === null));
  assert.equal(typeof (rows[0]!['items'] as { quantity: unknown }[])[0]!.quantity, 'bigint');
});

/** A value as plain JSON data (avsc decodes records to class instances; bigints become tagged text). */
function plain(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x)));
}

/** Reference decimal bytes for avsc (independent of the generator's decimalBytes). */
function decimal(u: bigint): Uint8Array {
  for (let n = 1; ; n++) {
    const bits = BigInt(8 * n);
    if (u >= -(1n << (bits - 1n)) && u < 1n << (bits - 1n)) {
      const x = BigInt.asUintN(8 * n, u);
      return Uint8Array.from({ length: n }, (_, i) => Number((x >> BigInt(8 * (n - 1 - i))) & 0xffn));
    }
  }
}
