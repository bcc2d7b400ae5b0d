/**
 * Column builders and metric accumulators in isolation: value checks, the number fast paths agreeing
 * with the bigint paths bit for bit, growth, truncation, and Iceberg ordering of min/max.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DataError } from '../../../src/core/errors.ts';
import type { Schema } from '../../../src/iceberg/types.ts';
import { countZeroBits } from '../../../src/write/columns.ts';
import { buildLayout, RecordAppender, resolveWriteConfig } from '../../../src/write/index.ts';
import { BytesStats, DecimalStats, LongStats, NumberStats } from '../../../src/write/metrics.ts';

function appender(schema: Schema): RecordAppender {
  return new RecordAppender(buildLayout(schema), () => ({ kind: 'full' }));
}

const one = (kind: 'long' | 'int' | 'string' | 'binary' | 'uuid', required = true): Schema => ({ schemaId: 0, fields: [{ id: 1, name: 'c', required, type: { kind } }] });

test('LongColumn.appendNumber writes the same bits as append(bigint), across the 32-bit word edges', () => {
  const a = appender(one('long'));
  const c = a.long(1);
  const values = [0, 1, -1, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1, 2 ** 32 - 1, 2 ** 32, -(2 ** 32), 2 ** 53 - 1, -(2 ** 53 - 1), 1_700_000_000_123_456];
  for (const v of values) c.appendNumber(v);
  assert.deepEqual([...c.values.subarray(0, values.length)], values.map(BigInt));
  assert.throws(() => c.appendNumber(2 ** 53), DataError);
  assert.throws(() => c.appendNumber(1.5), DataError);
  assert.throws(() => c.append(2n ** 63n), DataError);
  assert.throws(() => c.append(-(2n ** 63n) - 1n), DataError);
  c.append(-(2n ** 63n));
  c.append(2n ** 63n - 1n);
  assert.equal(c.values[values.length], -(2n ** 63n));
});

test('IntColumn rejects what is not an int32', () => {
  const c = appender(one('int')).int(1);
  c.append(-(2 ** 31));
  c.append(2 ** 31 - 1);
  for (const bad of [2 ** 31, 0.5, Number.NaN]) assert.throws(() => c.append(bad), DataError, String(bad));
});

test('DecimalColumn: precision enforced on every path; big-endian input of any length', () => {
  const schema: Schema = { schemaId: 0, fields: [{ id: 1, name: 'd', required: true, type: { kind: 'decimal', precision: 5, scale: 2 } }] };
  const c = appender(schema).decimal(1);
  c.appendUnscaledNumber(99999);
  c.appendUnscaledNumber(-99999);
  assert.throws(() => c.appendUnscaledNumber(100000), DataError);
  assert.throws(() => c.appendUnscaled(-100000n), DataError);
  assert.throws(() => c.appendBigEndian(Uint8Array.of(0x01, 0x86, 0xa0)), DataError, '100000');
  c.appendBigEndian(Uint8Array.of(0xfe, 0x79, 0x61)); // -99999
  c.appendBigEndian(new Uint8Array(0)); // 0
  c.appendBigEndian(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x85)); // -123, 10 bytes
  const words = [...c.words.subarray(0, 5 * 4)];
  const at = (i: number): bigint => (BigInt(words[4 * i + 3] as number) << 96n) | (BigInt((words[4 * i + 2] as number) >>> 0) << 64n) | (BigInt((words[4 * i + 1] as number) >>> 0) << 32n) | BigInt((words[4 * i] as number) >>> 0);
  assert.deepEqual([0, 1, 2, 3, 4].map(at), [99999n, -99999n, -99999n, 0n, -123n]);
});

test('StringColumn: ASCII fast path, multi-byte, growth past the initial buffer; appendUtf8 validates', () => {
  const a = appender(one('string'));
  const c = a.string(1);
  const values = ['', 'ascii', 'Zoë', '🧊', 'x'.repeat(70_000), 'ü'.repeat(100)];
  for (const v of values) c.append(v);
  const dec = new TextDecoder();
  const got = values.map((_, i) => dec.decode(c.data.subarray(c.offsets[i], c.offsets[i + 1])));
  assert.deepEqual(got, values);
  c.appendUtf8(Buffer.from('東京'));
  c.appendUtf8(Buffer.from('xxABCxx'), 2, 5);
  assert.throws(() => c.appendUtf8(Uint8Array.of(0x61, 0xc3)), DataError, 'truncated sequence');
  assert.throws(() => c.appendUtf8(Uint8Array.of(0xed, 0xa0, 0x80)), DataError, 'encoded surrogate');
  assert.equal(dec.decode(c.data.subarray(c.offsets[7], c.offsets[8])), 'ABC');
});

test('uuid and fixed: exact width; UUID text parsed strictly', () => {
  const c = appender(one('uuid')).fixed(1);
  c.appendUuid('f79c3e09-677c-4bbd-a479-3f349cb785e7');
  assert.equal(Buffer.from(c.bytes.subarray(0, 16)).toString('hex'), 'f79c3e09677c4bbda4793f349cb785e7');
  for (const bad of ['f79c3e09677c4bbda4793f349cb785e7', 'g79c3e09-677c-4bbd-a479-3f349cb785e7', 'f79c3e09-677c-4bbd-a479-3f349cb785e', 'f79c3e09_677c-4bbd-a479-3f349cb785e7']) {
    assert.throws(() => c.appendUuid(bad), DataError, bad);
  }
  assert.throws(() => c.append(new Uint8Array(15)), DataError);
  assert.equal(c.length, 1, 'failed appends leave no slot');
});

test('nulls: required refuses, optional records; truncate recounts nulls', () => {
  assert.throws(() => appender(one('binary')).binary(1).appendNull(), DataError);
  const c = appender(one('binary', false)).binary(1);
  for (let i = 0; i < 100; i++) {
    if (i % 3 === 0) c.appendNull();
    else c.append(Uint8Array.of(i));
  }
  assert.equal(c.nullCount, 34);
  c.truncate(10);
  assert.equal(c.nullCount, 4);
  assert.equal(countZeroBits(Uint8Array.of(0b1010_1010, 0b1), 9), 4);
});

test('LongStats orders by signed high word then unsigned low word', () => {
  const values = [0n, -1n, 4294967295n, 4294967296n, -4294967296n, -(2n ** 63n), 2n ** 63n - 1n, 2147483648n, -2147483649n];
  const words = new Int32Array(new BigInt64Array(values).buffer);
  const s = new LongStats(true);
  s.scan(words, values.length, null);
  assert.equal(s.min(), -(2n ** 63n));
  assert.equal(s.max(), 2n ** 63n - 1n);
  const t = new LongStats(true);
  t.scan(new Int32Array(new BigInt64Array([4294967295n, 2147483648n, -1n]).buffer), 3, null);
  assert.equal(t.min(), -1n);
  assert.equal(t.max(), 4294967295n);
});

test('NumberStats: NaN skipped and counted, -0 below +0 whatever the order, merge keeps both rules', () => {
  const a = new NumberStats(true);
  a.scan(Float64Array.of(0, -0, Number.NaN), 3, null, true);
  assert.ok(Object.is(a.min(), -0) && Object.is(a.max(), 0));
  assert.equal(a.nanCount, 1);
  const b = new NumberStats(true);
  b.scan(Float64Array.of(-0, 0), 2, null, true);
  assert.ok(Object.is(b.min(), -0) && Object.is(b.max(), 0));
  const onlyPos = new NumberStats(true);
  onlyPos.scan(Float64Array.of(0), 1, null, true);
  const onlyNeg = new NumberStats(true);
  onlyNeg.scan(Float64Array.of(-0), 1, null, true);
  onlyPos.merge(onlyNeg);
  assert.ok(Object.is(onlyPos.min(), -0) && Object.is(onlyPos.max(), 0));
  const masked = new NumberStats(true);
  masked.scan(Float64Array.of(-5, 1, 9), 3, Uint8Array.of(0b010), true);
  assert.equal(masked.min(), 1);
  assert.equal(masked.nullCount, 2);
});

test('DecimalStats and BytesStats: signed 128-bit and unsigned byte order', () => {
  const d = new DecimalStats(true);
  const w = new Int32Array(12);
  const put = (i: number, v: bigint): void => {
    const u = BigInt.asUintN(128, v);
    for (let k = 0; k < 4; k++) w[4 * i + k] = Number(BigInt.asIntN(32, u >> BigInt(32 * k)));
  };
  put(0, 10n ** 30n);
  put(1, -(10n ** 37n));
  put(2, 5n);
  d.scan(w, 3, null);
  assert.equal(d.min(), -(10n ** 37n));
  assert.equal(d.max(), 10n ** 30n);
  const b = new BytesStats(true);
  const data = Uint8Array.of(0x7f, 0x80, 0x00, 0xff, 0xff);
  b.scan(data, Int32Array.of(0, 1, 2, 3, 5), 0, 4, null);
  assert.deepEqual(b.min(), Uint8Array.of(0x00));
  assert.deepEqual(b.max(), Uint8Array.of(0xff, 0xff));
});

test('resolveWriteConfig: Iceberg property names, defaults, validation, ignored keys reported', () => {
  const { config, ignored } = resolveWriteConfig({
    'write.target-file-size-bytes': '1048576',
    'write.parquet.compression-codec': 'SNAPPY',
    'write.parquet.compression-level': '3',
    'write.metadata.metrics.column.a.b': 'counts',
  });
  assert.equal(config.targetFileSizeBytes, 1048576);
  assert.equal(config.codec, 'snappy');
  assert.equal(config.rowGroupSizeBytes, 128 * 1024 * 1024);
  assert.deepEqual(config.metricsColumns.get('a.b'), { kind: 'counts' });
  assert.deepEqual(ignored, ['write.parquet.compression-level']);
  assert.equal(resolveWriteConfig({ 'write.parquet.compression-codec': 'lz4' }).config.codec, 'lz4_raw');
  assert.throws(() => resolveWriteConfig({ 'write.parquet.compression-codec': 'lzo' }), /unsupported/);
  assert.throws(() => resolveWriteConfig({ 'write.target-file-size-bytes': '-1' }), /positive/);
  assert.throws(() => resolveWriteConfig({ 'write.metadata.metrics.default': 'truncate(0)' }), /invalid metrics mode/);
});

test('column lookups are typed and fail clearly', () => {
  const a = appender(one('string'));
  assert.throws(() => a.long(1), /is a string column/);
  assert.throws(() => a.column(99), /no field with id 99/);
  assert.throws(() => buildLayout({ schemaId: 0, fields: [{ id: 1, name: 'a', required: true, type: { kind: 'int' } }, { id: 1, name: 'b', required: true, type: { kind: 'int' } }] }), /used twice/);
});
