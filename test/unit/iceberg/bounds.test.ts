import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  boundBytes,
  fromBoundBytes,
  parseMetricsMode,
  toBoundBytes,
  truncateBinaryMax,
  truncateLowerBound,
  truncateStringMax,
  truncateUpperBound,
} from '../../../src/iceberg/bounds.ts';
import { bigintFromBytes, bigintToMinimalBytes, fromHex, toHex, uuidToBytes } from '../../../src/iceberg/bytes.ts';
import type { PrimitiveType, PrimitiveValue } from '../../../src/iceberg/types.ts';

const T = (kind: PrimitiveType['kind']): PrimitiveType => ({ kind }) as PrimitiveType;

test('Appendix D single-value encodings, byte for byte', () => {
  const cases: [PrimitiveType, PrimitiveValue, string][] = [
    [T('boolean'), true, '01'],
    [T('boolean'), false, '00'],
    [T('int'), 1, '01000000'],
    [T('int'), -2, 'feffffff'],
    [T('date'), 17486, '4e440000'],
    [T('long'), 1n, '0100000000000000'],
    [T('long'), -1n, 'ffffffffffffffff'],
    [T('long'), 8744736658442914487n, 'b78ad3c4a88b5b79'],
    [T('time'), 81068000000n, '008307e012000000'],
    [T('timestamptz'), 1510871468000000n, '00c3262d215e0500'],
    [T('timestamp_ns'), 1n, '0100000000000000'],
    [T('float'), 1, '0000803f'],
    [T('float'), -0, '00000080'],
    [T('double'), 1, '000000000000f03f'],
    [T('double'), -0, '0000000000000080'],
    [T('string'), 'iceberg', '69636562657267'],
    [T('string'), 'é', 'c3a9'],
    [T('binary'), Uint8Array.of(0, 1, 0xff), '0001ff'],
    [{ kind: 'fixed', length: 2 }, Uint8Array.of(0xab, 0xcd), 'abcd'],
    // uuid is big-endian (RFC 4122 order), unlike the little-endian numbers
    [T('uuid'), uuidToBytes('f79c3e09-677c-4bbd-a479-3f349cb785e7'), 'f79c3e09677c4bbda4793f349cb785e7'],
    // decimal: unscaled, minimal big-endian two's complement
    [{ kind: 'decimal', precision: 9, scale: 2 }, 1420n, '058c'],
    [{ kind: 'decimal', precision: 9, scale: 2 }, -50n, 'ce'],
    [{ kind: 'decimal', precision: 9, scale: 2 }, 0n, '00'],
    [{ kind: 'decimal', precision: 9, scale: 2 }, 127n, '7f'],
    [{ kind: 'decimal', precision: 9, scale: 2 }, 128n, '0080'],
    [{ kind: 'decimal', precision: 9, scale: 2 }, -128n, '80'],
    [{ kind: 'decimal', precision: 9, scale: 2 }, -129n, 'ff7f'],
    [{ kind: 'decimal', precision: 38, scale: 0 }, 10n ** 38n - 1n, '4b3b4ca85a86c47a098a223fffffffff'],
  ];
  for (const [type, value, hex] of cases) {
    const bytes = toBoundBytes(type, value);
    assert.equal(toHex(bytes), hex, `${type.kind} ${String(value)}`);
    // exactly sized, own buffer (a view over a bigger buffer was Beam's bug, apache/beam#38580)
    assert.equal(bytes.byteLength, bytes.buffer.byteLength);
    assert.deepEqual(fromBoundBytes(type, bytes), value instanceof Uint8Array ? new Uint8Array(value) : value);
  }
});

test('decoding tolerates promoted columns and rejects wrong lengths', () => {
  assert.equal(fromBoundBytes(T('long'), fromHex('feffffff')), -2n); // int bound on a long column
  assert.equal(fromBoundBytes(T('double'), fromHex('0000803f')), 1); // float bound on a double column
  assert.throws(() => fromBoundBytes(T('int'), fromHex('01')), TypeError);
  assert.throws(() => toBoundBytes(T('long'), 1), TypeError);
  assert.throws(() => toBoundBytes(T('uuid'), Uint8Array.of(1)), TypeError);
});

test('minimal two complement helpers round-trip', () => {
  for (const v of [0n, 1n, -1n, 127n, 128n, -128n, -129n, 255n, 256n, 2n ** 63n, -(2n ** 63n), 10n ** 38n]) {
    assert.equal(bigintFromBytes(bigintToMinimalBytes(v)), v);
  }
});

test('string bounds truncate by code point; upper bounds are rounded up, never cut inside UTF-8', () => {
  assert.equal(truncateLowerBound(T('string'), 'abcdefghijklmnopqrstuvwxyz', 16), 'abcdefghijklmnop');
  assert.equal(truncateUpperBound(T('string'), 'abcdefghijklmnopqrstuvwxyz', 16), 'abcdefghijklmnoq');
  assert.equal(truncateStringMax('short', 16), 'short'); // fits: unchanged
  // 4-byte characters count as one code point
  assert.equal(truncateStringMax('😀😀😀', 2), '😀😁');
  // the last code point cannot be incremented: increment the previous one and drop the rest
  assert.equal(truncateStringMax('a\u{10FFFF}\u{10FFFF}z', 3), 'b');
  // no valid upper bound at all
  assert.equal(truncateStringMax('\u{10FFFF}\u{10FFFF}x', 2), null);
  // skip the surrogate range: U+D7FF + 1 is U+E000, so the bound stays valid UTF-8
  const up = truncateStringMax('\uD7FFzz', 1);
  assert.equal(up, '\uE000');
  assert.doesNotThrow(() => new TextDecoder('utf-8', { fatal: true }).decode(toBoundBytes(T('string'), up as string)));
});

test('binary bounds truncate by byte; upper bound increments the last byte below 0xff', () => {
  assert.deepEqual(truncateLowerBound(T('binary'), Uint8Array.of(1, 2, 3), 2), Uint8Array.of(1, 2));
  assert.deepEqual(truncateBinaryMax(Uint8Array.of(1, 2, 3), 2), Uint8Array.of(1, 3));
  assert.deepEqual(truncateBinaryMax(Uint8Array.of(1, 0xff, 3), 2), Uint8Array.of(2));
  assert.equal(truncateBinaryMax(Uint8Array.of(0xff, 0xff, 3), 2), null);
  assert.deepEqual(truncateBinaryMax(Uint8Array.of(1, 2), 2), Uint8Array.of(1, 2));
});

test('boundBytes applies the metrics mode and never emits NaN', () => {
  const long = 'x'.repeat(20);
  assert.deepEqual(boundBytes(T('string'), 'a', long), { lower: toBoundBytes(T('string'), 'a'), upper: toBoundBytes(T('string'), 'x'.repeat(15) + 'y') });
  assert.deepEqual(boundBytes(T('string'), 'a', long, { kind: 'full' }).upper, toBoundBytes(T('string'), long));
  assert.deepEqual(boundBytes(T('string'), 'a', 'b', { kind: 'counts' }), {});
  assert.deepEqual(boundBytes(T('double'), Number.NaN, Number.NaN), {});
  assert.deepEqual(boundBytes(T('double'), -0, 1), { lower: toBoundBytes(T('double'), -0), upper: toBoundBytes(T('double'), 1) });
  assert.deepEqual(boundBytes(T('string'), 'a', '\u{10FFFF}'.repeat(17)).upper, undefined);
  assert.deepEqual(boundBytes(T('long'), 5n, 9n, { kind: 'truncate', length: 1 }), { lower: toBoundBytes(T('long'), 5n), upper: toBoundBytes(T('long'), 9n) });
});

test('metrics modes parse like Java MetricsModes.fromString', () => {
  assert.deepEqual(parseMetricsMode('truncate(16)'), { kind: 'truncate', length: 16 });
  assert.deepEqual(parseMetricsMode('Full'), { kind: 'full' });
  assert.deepEqual(parseMetricsMode('none'), { kind: 'none' });
  assert.deepEqual(parseMetricsMode('counts'), { kind: 'counts' });
  assert.throws(() => parseMetricsMode('truncate(0)'), { name: 'ConfigError' });
  assert.throws(() => parseMetricsMode('some'), { name: 'ConfigError' });
});
