import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataError } from '../../../src/core/errors.ts';
import { CONFLUENT_HEADER_BYTES, confluentMessageIndexes, confluentSchemaId } from '../../../src/decode/confluent-frame.ts';

const dataError = (pattern: RegExp) => (e: unknown): boolean => e instanceof DataError && pattern.test(e.message);

test('the schema id is the big-endian uint32 after the magic byte', () => {
  assert.equal(CONFLUENT_HEADER_BYTES, 5);
  assert.equal(confluentSchemaId(Uint8Array.from([0, 0, 0, 1, 2, 99])), 258);
  assert.equal(confluentSchemaId(Uint8Array.from([0, 0xff, 0xff, 0xff, 0xff])), 4294967295); // unsigned, not -1
});

test('a message that is not framed says what is wrong with it', () => {
  assert.throws(() => confluentSchemaId(new Uint8Array(0)), dataError(/^empty message/));
  // Plain JSON on a topic read with a registry converter: the first byte, and a hint.
  assert.throws(() => confluentSchemaId(new TextEncoder().encode('{"id":1}')), dataError(/first byte is 0x7b, not the magic byte 0x00 \(it looks like JSON/));
  assert.throws(() => confluentSchemaId(Uint8Array.from([1, 0, 0, 0, 7])), dataError(/first byte is 0x01, not the magic byte 0x00$/));
  // The magic byte is right but the header is cut short: too short, not "not framed".
  assert.throws(() => confluentSchemaId(Uint8Array.from([0, 0, 1])), dataError(/truncated: 3 bytes, the header alone needs 5/));
});

test('Protobuf message indexes: [0] as the single byte 0, a path, and bad lists', () => {
  const header = [0, 0, 0, 0, 1];
  assert.deepStrictEqual(confluentMessageIndexes(Uint8Array.from([...header, 0, 0x08])), { indexes: null, start: 6 });
  // Zig-zag: count 2 → 4, then 1 → 2 and 0 → 0.
  assert.deepStrictEqual(confluentMessageIndexes(Uint8Array.from([...header, 4, 2, 0, 0x08])), { indexes: [1, 0], start: 8 });
  // An explicit [0] is a path too (written by some serializers); only the count 0 is the shorthand.
  assert.deepStrictEqual(confluentMessageIndexes(Uint8Array.from([...header, 2, 0, 0x08])), { indexes: [0], start: 7 });
  // A list after a header of another length (no header at all: offset 0).
  assert.deepStrictEqual(confluentMessageIndexes(Uint8Array.from([2, 6]), 0), { indexes: [3], start: 2 });
  assert.throws(() => confluentMessageIndexes(Uint8Array.from(header)), dataError(/truncated in its message-index list/));
  assert.throws(() => confluentMessageIndexes(Uint8Array.from([...header, 4, 2])), dataError(/truncated in its message-index list/));
  assert.throws(() => confluentMessageIndexes(Uint8Array.from([...header, 1])), dataError(/message-index count of -1/));
  // 100 indexes are allowed (then missing here), 101 are not.
  assert.throws(() => confluentMessageIndexes(Uint8Array.from([...header, 0xc8, 0x01])), dataError(/truncated in its message-index list/));
  assert.throws(() => confluentMessageIndexes(Uint8Array.from([...header, 0xca, 0x01])), dataError(/message-index count of 101/));
  assert.throws(() => confluentMessageIndexes(Uint8Array.from([...header, 2, 3])), dataError(/negative message index -2/));
  assert.throws(() => confluentMessageIndexes(Uint8Array.from([...header, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])), dataError(/longer than 5 bytes/));
});
