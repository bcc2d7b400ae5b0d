/**
 * A JSON record's value from its bytes, once: UTF-8 checked, then `JSON.parse`, with integers beyond
 * ±2^53 read exactly — when the text has a run of 16+ digits it is parsed with a reviver that reads each
 * number's source text (ES2025 JSON.parse source access), giving a BigInt for an integer and a
 * `JsonNumberText` for a long fraction (decimals).
 *
 * Owns: what a parsed record value may hold (plain JSON values, bigint, JsonNumberText). Must not: know
 * Connect's envelope or any table (connect-schema.ts, json-columns.ts and json-decoder.ts do). Not the
 * same as core/json.ts `parseJson`, which reads catalog and metadata documents (text, lossless-json).
 */
import { DataError } from '../core/errors.ts';

/** A JSON number too long for a double, kept as its source text (decimals). */
export class JsonNumberText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const LONG_DIGITS = /\d{16}/;

type Reviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown;
/** Exact numbers: integers beyond ±2^53 → BigInt, long fractions → their text (JSON.parse source access). */
const exactNumbers: Reviver = (_key, value, context) => {
  if (typeof value !== 'number' || context?.source === undefined) return value;
  const src = context.source;
  if (Number.isSafeInteger(value) || !/\d{16}/.test(src)) return value;
  return /^-?\d+$/.test(src) ? BigInt(src) : new JsonNumberText(src);
};

/** JSON text (UTF-8 bytes) → a JS value; DataError with the parser's reason when it is not JSON. */
export function parseJsonBytes(buf: Uint8Array, offset = 0, end = buf.length): unknown {
  let text: string;
  try {
    text = utf8.decode(buf.subarray(offset, end));
  } catch {
    throw new DataError('JSON record is not valid UTF-8', { stage: 'deserialize' });
  }
  try {
    return LONG_DIGITS.test(text) ? (JSON.parse(text, exactNumbers as Parameters<typeof JSON.parse>[1]) as unknown) : (JSON.parse(text) as unknown);
  } catch (e) {
    throw new DataError(`record is not valid JSON: ${(e as Error).message}`, { stage: 'deserialize', cause: e });
  }
}

/** A JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
