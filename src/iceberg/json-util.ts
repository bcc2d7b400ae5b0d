/**
 * Readers for parsed JSON documents (the output of core/json.ts `parseJson`): typed field access that
 * fails with one error class naming the document and the field.
 *
 * Owns: the "malformed document" error policy for every Iceberg JSON codec in this folder. A catalog or
 * metadata document we cannot understand is a `FatalError` (the table cannot be handled safely; stop and
 * say why), never a silently defaulted value. Must not do I/O.
 */
import { FatalError } from '../core/errors.ts';
import { toBigInt } from '../core/json.ts';

export type JsonObject = Readonly<Record<string, unknown>>;

export function malformed(what: string, message: string, cause?: unknown): FatalError {
  return new FatalError(`malformed ${what}: ${message}`, cause === undefined ? { context: { what } } : { cause, context: { what } });
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

export function asObject(v: unknown, what: string): JsonObject {
  if (!isObject(v)) throw malformed(what, 'expected a JSON object');
  return v;
}

export function asArray(v: unknown, what: string): readonly unknown[] {
  if (!Array.isArray(v)) throw malformed(what, 'expected a JSON array');
  return v;
}

export function reqString(o: JsonObject, key: string, what: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw malformed(what, `"${key}" must be a string`);
  return v;
}

export function optString(o: JsonObject, key: string, what: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw malformed(what, `"${key}" must be a string`);
  return v;
}

export function reqInt(o: JsonObject, key: string, what: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw malformed(what, `"${key}" must be an integer`);
  return v;
}

export function optInt(o: JsonObject, key: string, what: string): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw malformed(what, `"${key}" must be an integer`);
  return v;
}

export function reqBool(o: JsonObject, key: string, what: string): boolean {
  const v = o[key];
  if (typeof v !== 'boolean') throw malformed(what, `"${key}" must be a boolean`);
  return v;
}

/** An int64 field: parseJson gives number or bigint depending on size; we always return bigint. */
export function reqLong(o: JsonObject, key: string, what: string): bigint {
  const v = o[key];
  try {
    return toBigInt(v, key);
  } catch (e) {
    throw malformed(what, `"${key}" must be an integer`, e);
  }
}

export function optLong(o: JsonObject, key: string, what: string): bigint | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  return reqLong(o, key, what);
}

export function stringMap(v: unknown, what: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  const o = asObject(v, what);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(o)) {
    // Java writes every property value as a string; tolerate numbers/booleans from hand-written docs.
    if (typeof x === 'string') out[k] = x;
    else if (typeof x === 'number' || typeof x === 'bigint' || typeof x === 'boolean') out[k] = String(x);
    else throw malformed(what, `value of "${k}" must be a string`);
  }
  return out;
}
