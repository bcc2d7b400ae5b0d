import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromHex, utf8Encode, uuidToBytes } from '../../../src/iceberg/bytes.ts';
import { murmur3Utf8, murmur3x86_32 } from '../../../src/iceberg/murmur3.ts';
import {
  applyTransform,
  bindTransform,
  bucketHash,
  canTransform,
  civilFromDays,
  compareValues,
  daysFromCivil,
  decimalToString,
  humanString,
  parseTransform,
  transformResultType,
  transformToString,
  truncateCodePoints,
  urlEncode,
} from '../../../src/iceberg/transforms.ts';
import type { PrimitiveType } from '../../../src/iceberg/types.ts';

const T = <K extends PrimitiveType['kind']>(kind: K): PrimitiveType => ({ kind }) as PrimitiveType;
const DATE_2017_11_16 = daysFromCivil(2017, 11, 16);
const TS_2017_11_16_22_31_08 = BigInt(DATE_2017_11_16) * 86_400_000_000n + BigInt((22 * 3600 + 31 * 60 + 8) * 1_000_000);

test('murmur3 x86_32 matches the reference values (Guava murmur3_32_fixed, seed 0)', () => {
  assert.equal(murmur3x86_32(new Uint8Array(0)), 0);
  // Reference values from the canonical SMHasher implementation.
  assert.equal(murmur3x86_32(utf8Encode('hello')) >>> 0, 0x248bfa47);
  assert.equal(murmur3x86_32(utf8Encode('The quick brown fox jumps over the lazy dog')) >>> 0, 0x2e4ff723);
});

test('a string hashes as its UTF-8 bytes without encoding them anew: ASCII, multi-byte, surrogate pairs, lone surrogates, long', () => {
  const strings = ['', 'iceberg', 'ORD-rqg5a3-000019703', 'café', '日本語テキスト', 'emoji 🧊 floe', '\ud800 lone', 'x'.repeat(1000), 'é'.repeat(400)];
  for (const s of strings) assert.equal(murmur3Utf8(s), murmur3x86_32(utf8Encode(s)), JSON.stringify(s.slice(0, 20)));
  // After a long string grew the scratch buffer, a short one hashes only its own bytes.
  assert.equal(murmur3Utf8('ab'), murmur3x86_32(utf8Encode('ab')));
  assert.equal(murmur3Utf8('iceberg'), 1210000089); // spec Appendix B
});

test('bucket hash: every test vector of spec Appendix B', () => {
  assert.equal(DATE_2017_11_16, 17486);
  const vectors: [PrimitiveType, Parameters<typeof bucketHash>[1], number][] = [
    [T('int'), 34, 2017239379],
    [T('long'), 34n, 2017239379],
    [{ kind: 'decimal', precision: 9, scale: 2 }, 1420n, -500754589],
    // The spec text says hashInt for date, but its vector only holds for the value widened to long.
    [T('date'), DATE_2017_11_16, -653330422],
    [T('time'), BigInt((22 * 3600 + 31 * 60 + 8) * 1_000_000), -662762989],
    [T('timestamp'), TS_2017_11_16_22_31_08, -2047944441],
    [T('timestamp'), TS_2017_11_16_22_31_08 + 1n, -1207196810],
    // 2017-11-16T14:31:08-08:00 is the same instant
    [T('timestamptz'), TS_2017_11_16_22_31_08, -2047944441],
    [T('timestamptz'), TS_2017_11_16_22_31_08 + 1n, -1207196810],
    [T('timestamp_ns'), TS_2017_11_16_22_31_08 * 1000n, -2047944441],
    [T('timestamp_ns'), TS_2017_11_16_22_31_08 * 1000n + 1001n, -1207196810],
    [T('timestamptz_ns'), TS_2017_11_16_22_31_08 * 1000n, -2047944441],
    [T('timestamptz_ns'), TS_2017_11_16_22_31_08 * 1000n + 1001n, -1207196810],
    [T('string'), 'iceberg', 1210000089],
    [T('uuid'), uuidToBytes('f79c3e09-677c-4bbd-a479-3f349cb785e7'), 1488055340],
    [{ kind: 'fixed', length: 4 }, Uint8Array.of(0, 1, 2, 3), -188683207],
    [T('binary'), Uint8Array.of(0, 1, 2, 3), -188683207],
  ];
  for (const [type, value, expected] of vectors) {
    assert.equal(bucketHash(type, value), expected, `${type.kind} ${String(value)}`);
  }
  // Spec §"Type promotion": 34 and "34" hash differently.
  assert.equal(bucketHash(T('string'), '34'), -427558391);
});

test('bucket[N] = (hash & MAX_INT) % N, negatives included', () => {
  const b16 = bindTransform({ kind: 'bucket', n: 16 }, T('long'));
  assert.equal(b16(34n), (2017239379 & 0x7fffffff) % 16);
  assert.equal(applyTransform({ kind: 'bucket', n: 100 }, { kind: 'decimal', precision: 9, scale: 2 }, 1420n), (-500754589 & 0x7fffffff) % 100);
  // int and long of the same value land in the same bucket (promotion keeps buckets)
  for (const v of [0, -1, 1, 34, -2147483648, 2147483647]) {
    assert.equal(applyTransform({ kind: 'bucket', n: 7 }, T('int'), v), applyTransform({ kind: 'bucket', n: 7 }, T('long'), BigInt(v)));
  }
  // decimal hashing uses minimal two's complement: -1 is [0xff], 128 is [0x00, 0x80]
  assert.equal(bucketHash({ kind: 'decimal', precision: 9, scale: 0 }, -1n), murmur3x86_32(Uint8Array.of(0xff)));
  assert.equal(bucketHash({ kind: 'decimal', precision: 9, scale: 0 }, 128n), murmur3x86_32(Uint8Array.of(0x00, 0x80)));
  assert.equal(b16(null), null);
  assert.equal(b16(undefined), null);
  assert.throws(() => b16(34 as unknown as bigint), TypeError);
});

test('truncate: ints floor toward -inf, decimals on the unscaled value, strings by code point, binary by byte', () => {
  const ti = bindTransform({ kind: 'truncate', width: 10 }, T('int'));
  assert.deepEqual([1, -1, 10, 0, -10, -11, 9, 19].map((v) => ti(v)), [0, -10, 10, 0, -10, -20, 0, 10]);
  const tl = bindTransform({ kind: 'truncate', width: 10 }, T('long'));
  assert.deepEqual([1n, -1n, -9n].map((v) => tl(v)), [0n, -10n, -10n]);
  // spec example: truncate[50] of decimal(9,2) 10.65 -> 10.50
  assert.equal(applyTransform({ kind: 'truncate', width: 50 }, { kind: 'decimal', precision: 9, scale: 2 }, 1065n), 1050n);
  assert.equal(applyTransform({ kind: 'truncate', width: 50 }, { kind: 'decimal', precision: 9, scale: 2 }, -1065n), -1100n);
  assert.equal(applyTransform({ kind: 'truncate', width: 3 }, T('string'), 'iceberg'), 'ice');
  // code points, never a split surrogate pair
  assert.equal(applyTransform({ kind: 'truncate', width: 2 }, T('string'), '😀😁😂'), '😀😁');
  assert.equal(truncateCodePoints('a😀b', 2), 'a😀');
  assert.deepEqual(applyTransform({ kind: 'truncate', width: 3 }, T('binary'), Uint8Array.of(1, 2, 3, 4, 5)), Uint8Array.of(1, 2, 3));
});

test('year/month/day/hour with floor semantics before 1970', () => {
  const y = bindTransform({ kind: 'year' }, T('date'));
  const m = bindTransform({ kind: 'month' }, T('date'));
  const d = bindTransform({ kind: 'day' }, T('date'));
  assert.equal(y(DATE_2017_11_16), 47);
  assert.equal(m(DATE_2017_11_16), 47 * 12 + 10);
  assert.equal(d(DATE_2017_11_16), 17486);
  assert.equal(y(-1), -1); // 1969-12-31
  assert.equal(m(-1), -1);
  assert.equal(y(-365), -1); // 1969-01-01
  assert.equal(y(-366), -2); // 1968-12-31
  assert.equal(m(-31), -1); // 1969-12-01
  assert.equal(m(-32), -2); // 1969-11-30

  const ts = (t: 'year' | 'month' | 'day' | 'hour'): ReturnType<typeof bindTransform> => bindTransform({ kind: t }, T('timestamptz'));
  assert.equal(ts('hour')(-1n), -1);
  assert.equal(ts('day')(-1n), -1);
  assert.equal(ts('month')(-1n), -1);
  assert.equal(ts('year')(-1n), -1);
  assert.equal(ts('hour')(0n), 0);
  assert.equal(ts('day')(TS_2017_11_16_22_31_08), 17486);
  assert.equal(ts('hour')(TS_2017_11_16_22_31_08), 17486 * 24 + 22);
  assert.equal(ts('month')(TS_2017_11_16_22_31_08), 47 * 12 + 10);
  const ns = bindTransform({ kind: 'hour' }, T('timestamp_ns'));
  assert.equal(ns(-1n), -1);
  assert.equal(ns(3_600_000_000_000n), 1);
  assert.equal(transformResultType({ kind: 'day' }, T('timestamp')).kind, 'date');
  assert.equal(transformResultType({ kind: 'hour' }, T('timestamp')).kind, 'int');
  assert.equal(transformResultType({ kind: 'truncate', width: 3 }, T('string')).kind, 'string');
  assert.equal(transformResultType({ kind: 'bucket', n: 3 }, T('string')).kind, 'int');
});

test('civil date conversions agree with Date for a wide range', () => {
  for (let days = -800_000; days <= 800_000; days += 997) {
    const dt = new Date(days * 86_400_000);
    const c = civilFromDays(days);
    assert.deepEqual(c, { year: dt.getUTCFullYear(), month: dt.getUTCMonth() + 1, day: dt.getUTCDate() });
    assert.equal(daysFromCivil(c.year, c.month, c.day), days);
  }
});

test('transform strings parse and print; unknown ones are kept but cannot be applied', () => {
  for (const s of ['identity', 'bucket[16]', 'truncate[4]', 'year', 'month', 'day', 'hour', 'void']) {
    assert.equal(transformToString(parseTransform(s)), s);
  }
  assert.deepEqual(parseTransform(' bucket[ 8 ] '), { kind: 'bucket', n: 8 });
  const unknown = parseTransform('zorder');
  assert.deepEqual(unknown, { kind: 'unknown', text: 'zorder' });
  assert.equal(canTransform(unknown, T('int')), false);
  assert.throws(() => parseTransform('bucket[0]'), { name: 'ConfigError' });
  assert.throws(() => parseTransform('bucket[x]'), { name: 'ConfigError' });
  assert.throws(() => bindTransform({ kind: 'hour' }, T('date')), { name: 'ConfigError' });
  assert.throws(() => bindTransform({ kind: 'bucket', n: 2 }, T('double')), { name: 'ConfigError' });
  assert.equal(canTransform({ kind: 'truncate', width: 2 }, T('uuid')), false);
  assert.equal(applyTransform({ kind: 'void' }, T('string'), 'x'), null);
});

test('human strings match Java Transform.toHumanString', () => {
  assert.equal(humanString({ kind: 'day' }, T('date'), 17486), '2017-11-16');
  assert.equal(humanString({ kind: 'month' }, T('int'), 47 * 12 + 10), '2017-11');
  assert.equal(humanString({ kind: 'month' }, T('int'), -1), '1969-12');
  assert.equal(humanString({ kind: 'year' }, T('int'), 47), '2017');
  assert.equal(humanString({ kind: 'hour' }, T('int'), 17486 * 24 + 22), '2017-11-16-22');
  assert.equal(humanString({ kind: 'hour' }, T('int'), -1), '1969-12-31-23');
  assert.equal(humanString({ kind: 'identity' }, T('timestamp'), TS_2017_11_16_22_31_08), '2017-11-16T22:31:08');
  assert.equal(humanString({ kind: 'identity' }, T('timestamptz'), TS_2017_11_16_22_31_08 + 500_000n), '2017-11-16T22:31:08.5+00:00');
  assert.equal(humanString({ kind: 'identity' }, T('time'), 81_060_000_000n), '22:31');
  assert.equal(humanString({ kind: 'identity' }, { kind: 'decimal', precision: 9, scale: 2 }, 1420n), '14.20');
  assert.equal(humanString({ kind: 'identity' }, { kind: 'decimal', precision: 9, scale: 2 }, -5n), '-0.05');
  assert.equal(humanString({ kind: 'identity' }, T('binary'), Uint8Array.of(0, 1, 2, 3)), 'AAECAw==');
  assert.equal(humanString({ kind: 'identity' }, T('uuid'), uuidToBytes('f79c3e09-677c-4bbd-a479-3f349cb785e7')), 'f79c3e09-677c-4bbd-a479-3f349cb785e7');
  assert.equal(humanString({ kind: 'identity' }, T('double'), 1), '1.0');
  assert.equal(humanString({ kind: 'identity' }, T('double'), 1e10), '1.0E10');
  assert.equal(humanString({ kind: 'identity' }, T('float'), Math.fround(0.1)), '0.1');
  assert.equal(humanString({ kind: 'bucket', n: 4 }, T('int'), 3), '3');
  assert.equal(humanString({ kind: 'identity' }, T('string'), null), 'null');
  assert.equal(decimalToString(1n, 10), '1E-10');
  assert.equal(decimalToString(0n, 2), '0.00');
});

test('URL encoding follows java.net.URLEncoder', () => {
  assert.equal(urlEncode('a b/c=d&é*-._~'), 'a+b%2Fc%3Dd%26%C3%A9*-._%7E');
});

test('compareValues: -0.0 before +0.0, strings by code point, bytes unsigned', () => {
  assert.equal(compareValues(T('double'), -0, 0), -1);
  assert.equal(compareValues(T('double'), 0, -0), 1);
  // U+FFFF sorts before U+1F600 by code point although its UTF-16 unit is larger
  assert.equal(compareValues(T('string'), '\uffff', '😀'), -1);
  assert.equal(compareValues(T('binary'), Uint8Array.of(0x80), Uint8Array.of(0x7f)), 1);
  assert.equal(compareValues(T('long'), -2n, 1n), -1);
});

test('fromHex helper sanity', () => {
  assert.deepEqual(fromHex('058c'), Uint8Array.of(5, 0x8c));
});
