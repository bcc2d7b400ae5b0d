/**
 * The REST module's HTTP vocabulary: the reply every route returns, Connect's error body, and reading
 * request bodies the way Connect's Jackson reader does (config maps of strings with JSON numbers and
 * booleans kept as their text, `null` kept for the caller to judge, objects and arrays refused).
 *
 * Owns: replies, body and query parsing. Must not: call the herder, or put a stack trace or a secret in
 * a reply (error messages come from RequestRefused or an error's message, never its stack).
 */
import { RequestRefused } from '../core/errors.ts';

export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Empty for 202/204 and HEAD. */
  readonly body: string;
}

export const JSON_TYPE = 'application/json';

/** A JSON answer (Jersey writes `application/json` without a charset). */
export function json(status: number, value: unknown, headers: Readonly<Record<string, string>> = {}): Reply {
  return { status, headers: { 'content-type': JSON_TYPE, ...headers }, body: JSON.stringify(value) };
}

/** 202 or 204 with no body, as Connect's `Response.accepted()` / void resources. */
export function empty(status: 202 | 204): Reply {
  return { status, headers: {}, body: '' };
}

/** Connect's ErrorMessage: `error_code` always equals the status. */
export function errorReply(status: number, message: string | null, headers: Readonly<Record<string, string>> = {}): Reply {
  return json(status, { error_code: status, message }, headers);
}

/** Jersey's own texts for routing failures (`HTTP 404 Not Found`, ...). */
export const ROUTING_TEXT: Readonly<Record<number, string>> = {
  404: 'HTTP 404 Not Found',
  405: 'HTTP 405 Method Not Allowed',
  415: 'HTTP 415 Unsupported Media Type',
  400: 'HTTP 400 Bad Request',
};

/**
 * A JSON number as written in the request (`2.50` stays "2.50"): Jackson hands a number to a String
 * field as its text, so a config value `2` is stored as "2" and a large offset loses no digits.
 */
export class NumberText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/**
 * Parses a request body. Malformed JSON is a 500 with the parser's message: Connect registers no mapper
 * for Jackson's parse errors, so a real worker answers 500 (reference/connect-rest.md, checked against
 * 4.3.1). An empty body is `undefined` (Jackson gives the resource a null entity).
 */
export function parseBody(body: string): unknown {
  if (body.trim() === '') return undefined;
  try {
    // The reviver's third argument (source text access, V8 12+) keeps every number's text; duplicate
    // keys keep the last value, as Jackson's map reader does.
    const reviver = (_key: string, value: unknown, context?: { source?: string }): unknown =>
      typeof value === 'number' && context?.source !== undefined ? new NumberText(context.source) : value;
    return JSON.parse(body, reviver as (key: string, value: unknown) => unknown);
  } catch (e) {
    throw new RequestRefused('failed', `Malformed JSON in the request body: ${(e as Error).message}`);
  }
}

/** A scalar as Jackson's String deserializer takes it: strings as they are, numbers and booleans as text. */
function scalarText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v instanceof NumberText) return v.text;
  if (typeof v === 'boolean') return String(v);
  return undefined;
}

/** Jackson's token name for a value that is not what the entity wants. */
function token(v: unknown): string {
  return Array.isArray(v) ? 'Array value (token `JsonToken.START_ARRAY`)' : v instanceof NumberText ? 'Number value' : typeof v === 'object' && v !== null ? 'Object value (token `JsonToken.START_OBJECT`)' : `${typeof v} value`;
}

/**
 * A body that Jackson cannot bind (an array where Connect wants a map, an object where it wants a
 * string): Connect registers no mapper for these, so a real worker answers 500 with Jackson's text
 * (observed on 4.3.1: docs/design/rest-conformance.md). Ours names the field the same way.
 */
export function unbindable(javaType: string, value: unknown, field: string | undefined): RequestRefused {
  const where = field === undefined ? '' : ` (through reference chain: ["${field}"])`;
  return new RequestRefused('failed', `Cannot deserialize value of type \`${javaType}\` from ${token(value)}${where}`);
}

/**
 * A config map (`Map<String, String>` in Connect): every value a string, JSON numbers and booleans as
 * their text, `null` kept (PUT/POST refuse it, PATCH deletes with it). A nested object or array, or a
 * body that is no object, is Jackson's 500 as on a real worker: Connect configs are flat strings.
 */
export function configMap(value: unknown): Record<string, string | null> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof NumberText) {
    throw unbindable('java.util.LinkedHashMap<java.lang.String,java.lang.String>', value, undefined);
  }
  const out: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === null) {
      out[k] = null;
      continue;
    }
    const text = scalarText(v);
    if (text === undefined) throw unbindable('java.lang.String', v, k);
    out[k] = text;
  }
  return out;
}

/** The keys of `map` whose value is null. */
export function nullKeys(map: Readonly<Record<string, string | null>>): string[] {
  return Object.keys(map).filter((k) => map[k] === null);
}

/** Connect's message for a config that fails validation on create/update (AbstractHerder). */
export function invalidConfigMessage(errors: readonly string[]): string {
  return (
    `Connector configuration is invalid and contains the following ${errors.length} error(s):\n${errors.join('\n')}\n` +
    'You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`'
  );
}

export const NULL_VALUE_ERROR = 'Null value can not be supplied as the configuration value.';

/** `map` without nulls, or a 400 listing one validation error per null value (Connect's text). */
export function withoutNulls(map: Readonly<Record<string, string | null>>): Record<string, string> {
  const nulls = nullKeys(map);
  if (nulls.length > 0) throw new RequestRefused('bad-request', invalidConfigMessage(nulls.map(() => NULL_VALUE_ERROR)));
  return map as Record<string, string>;
}

/** A scalar body field as Jackson's String reader takes it (number/boolean as text, null/absent undefined). */
export function stringField(obj: Readonly<Record<string, unknown>>, key: string): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  const text = scalarText(v);
  if (text === undefined) throw unbindable('java.lang.String', v, key);
  return text;
}

/** A JSON object body (Jackson's 500 for anything else, as Connect). */
export function objectBody(value: unknown, javaType: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof NumberText) throw unbindable(javaType, value, undefined);
  return value as Record<string, unknown>;
}

/**
 * A boolean query parameter as JAX-RS reads one (`Boolean.valueOf`): "true" in any case is true, any
 * other value false, absent or empty the default; a repeated parameter counts by its first value
 * (observed on 4.3.1: `connectorsOnly=` lists connectors only, `connectorsOnly=nope` lists everything).
 */
export function booleanParam(query: URLSearchParams, name: string, defaultValue: boolean): boolean {
  const v = query.get(name);
  return v === null || v === '' ? defaultValue : v.toLowerCase() === 'true';
}

/**
 * How a `@Consumes(application/json)` resource takes a request's Content-Type (parameters ignored):
 * JSON or a wildcard is read, another media type is a 415 (whether or not a body comes with it, as
 * Jersey), and a header that is no media type a 400.
 */
export function contentTypeFit(contentType: string | undefined): 'json' | 'other' | 'malformed' {
  if (contentType === undefined || contentType.trim() === '') return 'json';
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (!/^[^\s/]+\/[^\s/]+$/.test(type)) return 'malformed';
  return type === 'application/json' || type === 'application/*' || type === '*/*' ? 'json' : 'other';
}
