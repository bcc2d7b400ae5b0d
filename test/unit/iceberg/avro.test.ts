import { test } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { avroType, decodeAvroContainer, encodeAvroContainer, readAvroHeader, type AvroCodec } from '../../../src/iceberg/avro.ts';

const schema = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'id', type: 'long', 'field-id': 1 },
    { name: 'maybe', type: ['null', 'long'], default: null, 'field-id': 2 },
    { name: 'name', type: 'string', 'field-id': 3 },
    { name: 'blob', type: ['null', 'bytes'], default: null, 'field-id': 4 },
    { name: 'list', type: { type: 'array', items: 'long', 'element-id': 6 }, 'field-id': 5 },
  ],
};
const records = Array.from({ length: 2500 }, (_, i) => ({
  id: 8744736658442914487n - BigInt(i),
  maybe: i % 3 === 0 ? null : -BigInt(i) * 2n ** 40n,
  name: `row-${i}-é`,
  blob: i % 2 === 0 ? null : Buffer.from([i & 0xff, 0, 0xff]),
  list: [BigInt(i), 2n ** 62n],
}));

function avscRead(bytes: Uint8Array): Promise<unknown[]> {
  // avsc's own container decoder (independent framing code), with a bigint long through parseHook.
  const longType = avro.types.LongType.__with({
    fromBuffer: (b: Buffer) => b.readBigInt64LE(),
    toBuffer: (n: bigint) => {
      const b = Buffer.alloc(8);
      b.writeBigInt64LE(n);
      return b;
    },
    fromJSON: BigInt,
    toJSON: Number,
    isValid: (n: unknown) => typeof n === 'bigint',
    compare: (a: bigint, b: bigint) => (a === b ? 0 : a < b ? -1 : 1),
  });
  return new Promise((resolve, reject) => {
    const out: unknown[] = [];
    const decoder = new avro.streams.BlockDecoder({ parseHook: (s: unknown) => avro.Type.forSchema(s as avro.Schema, { registry: { long: longType } }) } as never);
    decoder.on('data', (r: unknown) => out.push(r));
    decoder.on('error', reject);
    decoder.on('end', () => resolve(out));
    decoder.end(Buffer.from(bytes));
  });
}

const plain = (r: unknown): unknown => JSON.parse(JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)));

for (const codec of ['null', 'deflate', 'snappy', 'zstandard'] as AvroCodec[]) {
  test(`container round trip with codec ${codec}: exact schema text, metadata, bigint longs, several blocks`, () => {
    const bytes = encodeAvroContainer({ schema, metadata: { 'snapshot-id': '8744736658442914487', 'format-version': '2' }, records, codec, blockSize: 1000 });
    const c = decodeAvroContainer(bytes);
    assert.equal(c.codec, codec);
    assert.equal(c.schemaText, JSON.stringify(schema)); // field-id / element-id attributes survive
    assert.equal(c.metadata.get('snapshot-id'), '8744736658442914487');
    assert.equal(c.records.length, records.length);
    assert.deepEqual(plain(c.records), plain(records));
  });
}

test('the container is readable by avsc’s own decoder (null and deflate, its built-in codecs)', async () => {
  for (const codec of ['null', 'deflate'] as AvroCodec[]) {
    const bytes = encodeAvroContainer({ schema, records: records.slice(0, 50), codec });
    assert.deepEqual(plain(await avscRead(bytes)), plain(records.slice(0, 50)));
  }
});

test('output is deterministic for the same input (sync marker derived from content)', () => {
  const a = encodeAvroContainer({ schema, records: records.slice(0, 3) });
  const b = encodeAvroContainer({ schema, records: records.slice(0, 3) });
  assert.deepEqual(a, b);
  const withSync = encodeAvroContainer({ schema, records: records.slice(0, 3), syncMarker: new Uint8Array(16).fill(7) });
  assert.deepEqual([...readAvroHeader(withSync).sync], new Array(16).fill(7));
});

test('corrupt input fails with FatalError; a record that does not fit the schema is a TypeError', () => {
  const bytes = encodeAvroContainer({ schema, records: records.slice(0, 3), codec: 'snappy' });
  const badSync = bytes.slice();
  const last = badSync.length - 1;
  badSync[last] = (badSync[last] as number) ^ 0xff;
  assert.throws(() => decodeAvroContainer(badSync), { name: 'FatalError', message: /sync marker/ });
  const badCrc = bytes.slice();
  badCrc[bytes.length - 17] = (badCrc[bytes.length - 17] as number) ^ 0xff; // last byte of the CRC
  assert.throws(() => decodeAvroContainer(badCrc), { name: 'FatalError', message: /checksum/ });
  assert.throws(() => decodeAvroContainer(new Uint8Array([1, 2, 3, 4])), { name: 'FatalError', message: /magic/ });
  assert.throws(() => encodeAvroContainer({ schema, records: [{ id: 1 }] }), (e: Error) => e instanceof TypeError && /id/.test(e.message));
});

test('avroType maps long to bigint beyond 2^53', () => {
  const t = avroType('long');
  assert.equal(t.fromBuffer(t.toBuffer(2n ** 63n - 1n)), 2n ** 63n - 1n);
});
