/**
 * Lossless JSON for catalog and metadata documents: snapshot ids, sequence numbers and offsets exceed
 * 2^53, and `JSON.parse` would silently round them.
 *
 * parseJson: integers outside the safe range become bigint; every other number stays a number.
 * stringifyJson: bigint values are written as bare JSON integers.
 * Callers that need an int64 field as bigint whatever its size use `toBigInt`.
 */
import { isInteger, isSafeNumber, parse, stringify } from 'lossless-json';

function parseNumber(text: string): number | bigint {
  return isInteger(text) && !isSafeNumber(text) ? BigInt(text) : Number(text);
}

export function parseJson(text: string): unknown {
  return parse(text, null, parseNumber);
}

export function stringifyJson(value: unknown, space?: number): string {
  const out = stringify(value, undefined, space);
  if (out === undefined) throw new TypeError('value cannot be represented as JSON');
  return out;
}

/** An int64 field read by parseJson (number or bigint) as bigint; throws on anything else. */
export function toBigInt(value: unknown, what = 'value'): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value);
  throw new TypeError(`${what} is not an integer: ${String(value)}`);
}
