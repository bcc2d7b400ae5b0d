/**
 * Confluent's wire framing of Schema Registry values, read in one place for the Avro and Protobuf
 * decoders and the value formats: the magic byte 0, the schema's global id as a big-endian int32, and,
 * for Protobuf only, the message-index list that says which message of the schema file the body holds.
 *
 * Owns: reading a frame header and saying precisely what is wrong with one that is not (a DataError:
 * the record's bytes are bad, every retry would fail the same way). Must not: look up schemas, read the
 * body, or allocate on the common path (an Avro header and the Protobuf list `[0]` allocate nothing).
 */
import { DataError } from '../core/errors.ts';

/** Magic byte 0, then the schema id as a big-endian int32; the body (or the Protobuf index list) follows. */
export const CONFLUENT_HEADER_BYTES = 5;

/** Protobuf message paths nest; a count beyond this is corrupt bytes, not a real schema. */
const MAX_MESSAGE_INDEXES = 100;

/**
 * The schema id of a Confluent-framed message. DataError when the message is not framed: empty, a first
 * byte that is not the magic byte 0 (plain JSON or text on a topic read with a registry converter), or
 * shorter than the 5-byte header.
 */
export function confluentSchemaId(msg: Uint8Array): number {
  if (msg.length < CONFLUENT_HEADER_BYTES || msg[0] !== 0) throw notFramed(msg);
  return (((msg[1] as number) << 24) | ((msg[2] as number) << 16) | ((msg[3] as number) << 8) | (msg[4] as number)) >>> 0;
}

function notFramed(msg: Uint8Array): DataError {
  const first = msg[0];
  if (first === undefined) return new DataError('empty message: a Confluent-framed value needs at least its 5-byte header (magic byte 0, schema id)', { stage: 'deserialize' });
  if (first !== 0) {
    const hint = first === 0x7b || first === 0x5b ? ' (it looks like JSON: is value.converter the right one?)' : '';
    return new DataError(`not a Confluent-framed message: the first byte is 0x${first.toString(16).padStart(2, '0')}, not the magic byte 0x00${hint}`, { stage: 'deserialize',
      context: { firstByte: first },
    });
  }
  return new DataError(`Confluent frame truncated: ${msg.length} bytes, the header alone needs ${CONFLUENT_HEADER_BYTES} (magic byte, 4-byte schema id)`, { stage: 'deserialize',
    context: { length: msg.length },
  });
}

/** Where a Protobuf message starts after its index list, and the list itself (null for `[0]`). */
export interface MessageIndexes {
  /** The path to the message in its schema file (top-level index, then nested); null for `[0]`, the first message. */
  readonly indexes: number[] | null;
  /** The offset of the message body. */
  readonly start: number;
}

const FIRST_AT_HEADER: MessageIndexes = { indexes: null, start: CONFLUENT_HEADER_BYTES + 1 };

/**
 * Confluent's Protobuf message-index list after the header: zig-zag varints, the count and then that many
 * indexes; the single byte 0 (count 0) means `[0]`, the file's first message. DataError for a list that
 * is truncated, has a negative or implausible count, or a negative index.
 */
export function confluentMessageIndexes(msg: Uint8Array, offset = CONFLUENT_HEADER_BYTES): MessageIndexes {
  if (offset === CONFLUENT_HEADER_BYTES && msg[offset] === 0) return FIRST_AT_HEADER; // the common case allocates nothing
  const cursor = { pos: offset };
  const count = readZigZag32(msg, cursor);
  if (count === 0) return { indexes: null, start: cursor.pos };
  if (count < 0 || count > MAX_MESSAGE_INDEXES) throw new DataError(`Confluent Protobuf frame has a message-index count of ${count}`, { stage: 'deserialize', context: { count } });
  const indexes: number[] = [];
  for (let i = 0; i < count; i++) {
    const k = readZigZag32(msg, cursor);
    if (k < 0) throw new DataError(`Confluent Protobuf frame has a negative message index ${k}`, { stage: 'deserialize', context: { index: k } });
    indexes.push(k);
  }
  return { indexes, start: cursor.pos };
}

/** A zig-zag varint of at most 5 bytes (an int32) at `cursor.pos`, advancing it. */
function readZigZag32(msg: Uint8Array, cursor: { pos: number }): number {
  let n = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    const b = msg[cursor.pos++];
    if (b === undefined) throw new DataError('Confluent Protobuf frame truncated in its message-index list', { stage: 'deserialize' });
    n |= (b & 0x7f) << shift;
    if (b < 0x80) return (n >>> 1) ^ -(n & 1);
  }
  throw new DataError('Confluent Protobuf frame has a message-index varint longer than 5 bytes', { stage: 'deserialize' });
}
