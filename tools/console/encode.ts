/**
 * The byte forms `icefloe produce` writes, from a user's JSON documents: plain JSON (JsonConverter with
 * schemas.enable=false: the text as given), and Avro or Protobuf encoded with the user's schema and
 * Confluent-framed (magic byte 0, the registered schema id, for Protobuf the message-index list), as
 * Confluent's serializers write them. Keys are UTF-8 strings (StringConverter).
 *
 * Every document is checked against the schema before anything is sent, and a mismatch names the document
 * (`stdin line 3`, `--value #2`) and the field path, because avsc and protobufjs would otherwise drop an
 * unknown field or coerce a wrong type silently (protobufjs turns the string "x" into the int 0).
 *
 * Owns: JSON parsing of the input, the schema checks and conversions, the encodings. Must not: do I/O.
 */
import avro from 'avsc';
import { parse as parseLossless } from 'lossless-json';
import protobuf from 'protobufjs';
import { ConfigError } from '../../src/core/errors.ts';
import { parseProtobufSchema } from '../../src/decode/protobuf-schema.ts';
import type { ProtobufSchema } from '../../src/decode/protobuf-schema.ts';
import { confluentFrame, confluentProtobufFrame } from '../generate/order-encodings.ts';

/** One record to produce, as the user gave it. */
export interface InputRecord {
  /** Where it came from, for messages: `stdin line 3`, `--value #2`. */
  readonly origin: string;
  readonly text: string;
}

/** JSON text → a value; integers beyond ±2^53 stay their decimal text (Protobuf int64 takes them exactly). */
export function parseDocument(r: InputRecord): unknown {
  try {
    return parseLossless(r.text, null, (digits: string) => {
      const n = Number(digits);
      return /^-?\d+$/.test(digits) && !Number.isSafeInteger(n) ? digits : n;
    });
  } catch (e) {
    throw new ConfigError(`${r.origin} is not a JSON document: ${(e as Error).message}`);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The key `--key-field NAME` takes from a document: a string as it is, anything else as its JSON text. */
export function keyFromField(r: InputRecord, doc: unknown, field: string): string {
  if (!isObject(doc)) throw new ConfigError(`${r.origin}: --key-field ${field} needs a JSON object, not ${JSON.stringify(doc)}`);
  const v = doc[field];
  if (v === undefined) throw new ConfigError(`${r.origin} has no field '${field}' for --key-field (its fields: ${Object.keys(doc).join(', ') || 'none'})`);
  return typeof v === 'string' ? v : JSON.stringify(v);
}

// --- Avro ------------------------------------------------------------------------------------------

/** The user's Avro schema text as avsc's type; unions take plain (unwrapped) values. */
export function avroType(schema: string): avro.Type {
  let json: unknown;
  try {
    json = JSON.parse(schema);
  } catch (e) {
    throw new ConfigError(`the Avro schema is not JSON: ${(e as Error).message}`);
  }
  try {
    return avro.Type.forSchema(json as avro.Schema, { wrapUnions: false });
  } catch (e) {
    throw new ConfigError(`the Avro schema is not valid: ${(e as Error).message}`);
  }
}

function fail(path: string, what: string): never {
  throw new ConfigError(`${path === '' ? 'the value' : `field ${path}`}: ${what}`);
}

/**
 * A JSON value as avsc's value of `type`: record fields checked by name (unknown ones refused, missing
 * ones take their default), a union's value unwrapped (Avro's wrapped JSON form `{"string": "x"}` is
 * accepted too), bytes and fixed from a string of code points 0–255 (Avro's JSON encoding). Other values
 * pass through and avsc's own check names what does not fit.
 */
function toAvro(type: avro.Type, v: unknown, path: string): unknown {
  if (type instanceof avro.types.RecordType) {
    if (!isObject(v)) fail(path, `expected a record ${type.name ?? ''} (a JSON object), got ${JSON.stringify(v)}`);
    const names = type.fields.map((f) => f.name);
    const unknown = Object.keys(v).filter((k) => !names.includes(k));
    if (unknown.length > 0) {
      const which = unknown.map((k) => (path === '' ? k : `${path}.${k}`)).join(', ');
      throw new ConfigError(`field ${which}: not in record ${type.name ?? ''} (its fields: ${names.join(', ')})`);
    }
    const out: Record<string, unknown> = {};
    for (const f of type.fields) {
      const sub = path === '' ? f.name : `${path}.${f.name}`;
      if (v[f.name] === undefined) {
        const d: unknown = f.defaultValue();
        if (d === undefined) fail(sub, 'missing, and the schema gives it no default');
        out[f.name] = d;
      } else out[f.name] = toAvro(f.type, v[f.name], sub);
    }
    return out;
  }
  if (type instanceof avro.types.UnwrappedUnionType) return unionValue(type.types, v, path);
  if (type instanceof avro.types.ArrayType) {
    if (!Array.isArray(v)) fail(path, `expected an array, got ${JSON.stringify(v)}`);
    return v.map((item, i) => toAvro(type.itemsType, item, `${path}[${i}]`));
  }
  if (type instanceof avro.types.MapType) {
    if (!isObject(v)) fail(path, `expected a map (a JSON object), got ${JSON.stringify(v)}`);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toAvro(type.valuesType as avro.Type, x, `${path}.${k}`)]));
  }
  if ((type instanceof avro.types.BytesType || type instanceof avro.types.FixedType) && typeof v === 'string') {
    if ([...v].some((c) => (c.codePointAt(0) as number) > 255)) fail(path, 'bytes are a string of code points 0-255 (Avro\'s JSON encoding)');
    return Buffer.from(v, 'latin1');
  }
  if (type instanceof avro.types.LongType && typeof v === 'string' && /^-?\d+$/.test(v)) fail(path, `${v} does not fit a JavaScript number exactly (Avro longs are limited to ±2^53 here)`);
  return v;
}

function unionValue(branches: readonly avro.Type[], v: unknown, path: string): unknown {
  if (v === null && branches.some((b) => b.typeName === 'null')) return null;
  if (isObject(v) && Object.keys(v).length === 1) {
    const [name, inner] = Object.entries(v)[0] as [string, unknown];
    const branch = branches.find((b) => b.branchName === name);
    if (branch !== undefined) return toAvro(branch, inner, path);
  }
  for (const b of branches) {
    if (b.typeName === 'null') continue;
    try {
      const candidate = toAvro(b, v, path);
      if (b.isValid(candidate)) return candidate;
    } catch {
      // not this branch
    }
  }
  return fail(path, `${JSON.stringify(v)} matches no branch of the union [${branches.map((b) => b.branchName).join(', ')}]`);
}

/** Checks a document against the Avro type and encodes it (the body, without the frame). */
export function encodeAvro(type: avro.Type, r: InputRecord, doc: unknown): Uint8Array {
  let value: unknown;
  try {
    value = toAvro(type, doc, '');
  } catch (e) {
    throw new ConfigError(`${r.origin} does not fit the Avro schema: ${(e as Error).message}`);
  }
  const problems: string[] = [];
  type.isValid(value, {
    errorHook: (path: string[], v: unknown, t: avro.Type) => problems.push(`field ${path.join('.') || '(the value)'}: expected ${t.branchName ?? t.typeName}, got ${JSON.stringify(v) ?? 'nothing'}`),
  });
  if (problems.length > 0) throw new ConfigError(`${r.origin} does not fit the Avro schema: ${problems.join('; ')}`);
  return type.toBuffer(value);
}

// --- Protobuf --------------------------------------------------------------------------------------

export interface ProtobufTarget {
  readonly type: protobuf.Type;
  /** Its Confluent message-index path in the file ([0]: the first top-level message). */
  readonly indexes: readonly number[];
}

/** The message to encode (by name, default the file's first) and its message-index path. */
export function protobufTarget(schemaText: string, message: string | undefined): ProtobufTarget {
  const schema: ProtobufSchema = parseProtobufSchema(schemaText);
  if (schema.messages.length === 0) throw new ConfigError('the Protobuf schema declares no message');
  const type = message === undefined ? (schema.messages[0] as protobuf.Type) : schema.byName(message);
  const indexes = indexPath(schema.messages, type);
  if (indexes === null) throw new ConfigError(`message ${message ?? type.name} is not declared in the schema file itself`);
  return { type, indexes };
}

function indexPath(list: readonly protobuf.Type[], target: protobuf.Type): number[] | null {
  for (let i = 0; i < list.length; i++) {
    const t = list[i] as protobuf.Type;
    if (t === target) return [i];
    const nested = indexPath(t.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type), target);
    if (nested !== null) return [i, ...nested];
  }
  return null;
}

const INT32 = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32']);
const UNSIGNED = new Set(['uint32', 'fixed32', 'uint64', 'fixed64']);

/** A 64-bit integer as a number or decimal text, within its type's range (protobufjs would wrap it silently). */
function int64InRange(type: string, v: unknown): boolean {
  if (!(typeof v === 'number' && Number.isInteger(v)) && !(typeof v === 'string' && /^-?\d+$/.test(v))) return false;
  const n = BigInt(v);
  return UNSIGNED.has(type) ? n >= 0n && n < 1n << 64n : n >= -(1n << 63n) && n < 1n << 63n;
}
const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

function checkScalar(type: string, resolved: protobuf.ReflectionObject | null, v: unknown, path: string): void {
  if (resolved instanceof protobuf.Type) return checkMessage(resolved, v, path);
  if (resolved instanceof protobuf.Enum) {
    if (typeof v === 'string' && v in resolved.values) return;
    if (typeof v === 'number' && Number.isInteger(v)) return;
    return fail(path, `expected a symbol of enum ${resolved.name} (${Object.keys(resolved.values).join(', ')}), got ${JSON.stringify(v)}`);
  }
  const ok =
    INT32.has(type) ? typeof v === 'number' && Number.isInteger(v) && (UNSIGNED.has(type) ? v >= 0 && v < 2 ** 32 : v >= -(2 ** 31) && v < 2 ** 31)
    : INT64.has(type) ? int64InRange(type, v)
    : type === 'double' || type === 'float' ? typeof v === 'number' || v === 'NaN' || v === 'Infinity' || v === '-Infinity'
    : type === 'bool' ? typeof v === 'boolean'
    : type === 'string' ? typeof v === 'string'
    : type === 'bytes' ? typeof v === 'string' && /^[A-Za-z0-9+/_-]*={0,2}$/.test(v)
    : true;
  if (!ok) fail(path, `expected ${type === 'bytes' ? 'bytes (base64 text)' : type}, got ${JSON.stringify(v)}`);
}

/** Field names and JSON types of a document against a message, recursively (protobufjs checks neither). */
function checkMessage(type: protobuf.Type, v: unknown, path: string): void {
  if (!isObject(v)) return fail(path, `expected a message ${type.name} (a JSON object), got ${JSON.stringify(v)}`);
  for (const [name, x] of Object.entries(v)) {
    const f = type.fields[name];
    const sub = path === '' ? name : `${path}.${name}`;
    if (f === undefined) fail(sub, `not a field of message ${type.name} (its fields: ${Object.keys(type.fields).join(', ')})`);
    if (x === null) continue;
    f.resolve();
    if (f instanceof protobuf.MapField) {
      if (!isObject(x)) fail(sub, `expected a map (a JSON object), got ${JSON.stringify(x)}`);
      for (const [k, item] of Object.entries(x)) checkScalar(f.type, f.resolvedType, item, `${sub}.${k}`);
    } else if (f.repeated) {
      if (!Array.isArray(x)) fail(sub, `expected an array, got ${JSON.stringify(x)}`);
      x.forEach((item, i) => checkScalar(f.type, f.resolvedType, item, `${sub}[${i}]`));
    } else checkScalar(f.type, f.resolvedType, x, sub);
  }
}

/** Checks a document against the message and encodes it (the body, without the frame). */
export function encodeProtobuf(target: ProtobufTarget, r: InputRecord, doc: unknown): Uint8Array {
  try {
    checkMessage(target.type, doc, '');
    return target.type.encode(target.type.fromObject(doc as Record<string, unknown>)).finish();
  } catch (e) {
    throw new ConfigError(`${r.origin} does not fit Protobuf message ${target.type.name}: ${(e as Error).message}`);
  }
}

export { confluentFrame, confluentProtobufFrame };
