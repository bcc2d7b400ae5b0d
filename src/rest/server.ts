/**
 * The Kafka Connect-compatible REST API over a `HerderApi` (reference/connect-rest.md §1): one request
 * pipeline with two entry points, `inject()` for tests and `handler` for node:http/https servers (which
 * src/rest/listeners.ts starts; `buildServer()` never listens).
 *
 * The router is our own, a table of segment patterns (routes.ts): Connect's routing rules are few and
 * exact (trailing slashes, percent-decoded segments, Jersey's 404/405/415 texts, a non-integer task id
 * as 404), and a framework would add its own answers (its 400 for bad JSON, its error bodies) that we
 * would have to undo.
 *
 * Owns: routing, authentication, the 90 s request timeout, mapping refusals to status codes, Connect's
 * error body, CORS and static response headers. Must not: listen, or put a stack trace or a secret in
 * an answer (an unexpected error answers 500 with its message only, URL passwords masked).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { redactUserInfo } from '../config/config-def.ts';
import type { HeaderRule } from '../config/rest-config.ts';
import { RequestRefused, errorMessage } from '../core/errors.ts';
import type { RefusalReason } from '../core/errors.ts';
import { SILENT_LOGGER } from '../core/log.ts';
import type { Logger } from '../core/log.ts';
import type { HerderApi, WorkerHealth } from '../runtime/herder-api.ts';
import type { BasicAuth } from './auth.ts';
import { applyHeaderRules, corsHeaders, isPreflight } from './cors.ts';
import type { CorsSettings } from './cors.ts';
import { ROUTING_TEXT, contentTypeFit, errorReply, json } from './http.ts';
import type { Reply } from './http.ts';
import { ROUTES } from './routes.ts';
import type { Route } from './routes.ts';

export interface RestServerOptions {
  /** Herder calls that do not answer in time get `500 Request timed out` (Connect: 90 s). */
  readonly requestTimeoutMs?: number;
  /** `GET /health` answers `500 unhealthy` when the herder does not answer in time (Connect: 10 s). */
  readonly healthTimeoutMs?: number;
  readonly topicTracking?: { readonly enabled: boolean; readonly allowReset: boolean };
  /** False: the /admin endpoints are not served (`admin.listeners=` empty). */
  readonly adminEndpoints?: boolean;
  /** HTTP basic authentication for every route; undefined: none. */
  readonly auth?: BasicAuth | undefined;
  readonly cors?: CorsSettings;
  readonly responseHeaders?: readonly HeaderRule[];
  /** Where unexpected (500) errors are logged. */
  readonly log?: Logger;
  /** Request bodies larger than this are refused with 413 (default 16 MiB). */
  readonly maxBodyBytes?: number;
  readonly now?: () => number;
}

export interface InjectRequest {
  readonly method: string;
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

export interface InjectResponse {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RestServer {
  inject(req: InjectRequest): Promise<InjectResponse>;
  handler: (req: IncomingMessage, res: ServerResponse) => void;
}

/** The status of each refusal (core/errors.ts); 409 only for transient conflicts and "already exists". */
const REFUSAL_STATUS: Readonly<Record<RefusalReason, number>> = {
  'not-found': 404,
  'already-exists': 409,
  conflict: 409,
  'bad-request': 400,
  forbidden: 403,
  timeout: 500,
  failed: 500,
};

const HEALTH_STATUS: Readonly<Record<WorkerHealth['status'], number>> = { healthy: 200, starting: 503, unhealthy: 500 };

interface Request {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly secure: boolean;
}

/** Splits a request path into percent-decoded segments; empty segments (trailing or doubled slashes) are dropped. */
function segments(path: string): string[] {
  return path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s; // a stray % stays as written
      }
    });
}

function matches(route: Route, parts: readonly string[]): boolean {
  return route.path.length === parts.length && route.path.every((seg, i) => seg.startsWith(':') || seg.startsWith('#') || seg === parts[i]);
}

/** Java's Integer.valueOf: an optional sign and digits within 32 bits; anything else is no integer. */
function int32(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n >= -(2 ** 31) && n < 2 ** 31 ? n : undefined;
}

function withTimeout<T>(work: () => T | Promise<T>, ms: number, onTimeout: () => unknown): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([Promise.resolve().then(work), timeout]).finally(() => clearTimeout(timer));
}

/** What the pipeline needs besides the request. */
interface Pipeline {
  readonly herder: HerderApi;
  readonly routes: readonly Route[];
  readonly requestTimeoutMs: number;
  readonly healthTimeoutMs: number;
  readonly topicTracking: { readonly enabled: boolean; readonly allowReset: boolean };
  readonly log: Logger;
}

/** The answer to an error: a refusal's status and message, anything else 500 with its message (no stack). */
function failure(pl: Pipeline, e: unknown, req: Request): Reply {
  if (e instanceof RequestRefused) return errorReply(REFUSAL_STATUS[e.refusal], e.message);
  const message = redactUserInfo(errorMessage(e));
  pl.log.error('REST request failed', { method: req.method, path: req.url.split('?')[0], error: message });
  return errorReply(500, message);
}

/** KIP-1017: healthy 200, starting 503, unhealthy 500; no answer within the health timeout is unhealthy. */
async function health(pl: Pipeline): Promise<Reply> {
  try {
    const h = await withTimeout(() => pl.herder.health(), pl.healthTimeoutMs, () => new RequestRefused('timeout', 'health'));
    return json(HEALTH_STATUS[h.status], h);
  } catch (e) {
    if (!(e instanceof RequestRefused && e.refusal === 'timeout')) throw e;
    // Connect's WorkerStatus.unhealthy text.
    return json(500, { status: 'unhealthy', message: 'Worker was unable to handle this request and may be unable to handle other requests.' });
  }
}

/** Jersey's routing: 404 for no path, 405 for no method (with Allow), 415 for a non-JSON body, 404 for a non-integer task id. */
async function route(pl: Pipeline, req: Request, method: string, parts: readonly string[], query: URLSearchParams): Promise<Reply> {
  const isHealth = parts.length === 1 && parts[0] === 'health';
  const candidates = isHealth ? [] : pl.routes.filter((r) => matches(r, parts));
  if (!isHealth && candidates.length === 0) return errorReply(404, ROUTING_TEXT[404] as string);
  // Jersey's order: HEAD and GET, OPTIONS, then the resource's other methods.
  const others = [...new Set(candidates.map((r) => r.method).filter((m) => m !== 'GET'))];
  const allow = [...(isHealth || candidates.some((r) => r.method === 'GET') ? ['HEAD', 'GET'] : []), 'OPTIONS', ...others];
  // Jersey answers OPTIONS itself: 200, text/plain, the methods.
  if (method === 'OPTIONS') return { status: 200, headers: { allow: allow.join(','), 'content-type': 'text/plain' }, body: allow.join(', ') };
  if (isHealth) return method === 'GET' ? health(pl) : errorReply(405, ROUTING_TEXT[405] as string, { allow: allow.join(',') });
  const r = candidates.find((c) => c.method === method);
  if (r === undefined) return errorReply(405, ROUTING_TEXT[405] as string, { allow: allow.join(',') });
  if (r.consumes) {
    // Jersey checks the Content-Type header of every request to a JSON resource, with or without a body.
    const fit = contentTypeFit(req.headers['content-type']);
    if (fit === 'other') return errorReply(415, ROUTING_TEXT[415] as string);
    if (fit === 'malformed') return errorReply(400, ROUTING_TEXT[400] as string);
  }
  const params: Record<string, string> = {};
  const ints: Record<string, number> = {};
  for (const [i, seg] of r.path.entries()) {
    const value = parts[i] as string;
    if (seg.startsWith(':')) params[seg.slice(1)] = value;
    if (seg.startsWith('#')) {
      // Jersey cannot convert the path parameter to Integer: its answer is a 404.
      const n = int32(value);
      if (n === undefined) return errorReply(404, ROUTING_TEXT[404] as string);
      ints[seg.slice(1)] = n;
    }
  }
  // Connect's herder queues connector requests until it has joined the cluster and read its configs; so do
  // we (clients that POST as soon as the port answers get the stored state, not an empty one or a 500).
  if (parts[0] === 'connectors') await withTimeout(() => pl.herder.ready(), pl.requestTimeoutMs, () => new RequestRefused('timeout', 'Request timed out'));
  const host = req.headers.host;
  return r.handle({
    herder: pl.herder,
    params,
    ints,
    query,
    body: req.body,
    urlOf: (path) => (host === undefined ? path : `${req.secure ? 'https' : 'http'}://${host}${path}`),
    call: (work) => withTimeout(work, pl.requestTimeoutMs, () => new RequestRefused('timeout', 'Request timed out')),
    topicTracking: pl.topicTracking,
  });
}

function lowerHeaders(h: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function send(res: ServerResponse, reply: Reply): void {
  res.writeHead(reply.status, { ...reply.headers, 'content-length': String(Buffer.byteLength(reply.body)) });
  res.end(reply.body);
}

/** The node:http handler: reads the body (up to `maxBodyBytes`, else 413), runs the pipeline, writes the answer. */
function nodeHandler(dispatch: (req: Request) => Promise<Reply>, maxBodyBytes: number, fail: (e: unknown, req: Request) => Reply) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Past the limit the rest is read and dropped, so the client (still sending) gets the 413 answer.
      if (size > maxBodyBytes) refused = true;
      else chunks.push(chunk);
    });
    req.on('end', () => {
      if (refused) {
        send(res, errorReply(413, `The request body is larger than ${maxBodyBytes} bytes`));
        return;
      }
      const secure = (req.socket as { encrypted?: boolean }).encrypted === true;
      const request: Request = { method: req.method ?? 'GET', url: req.url ?? '/', headers: lowerHeaders(req.headers), body: Buffer.concat(chunks).toString('utf8'), secure };
      dispatch(request).then(
        (reply) => send(res, reply),
        (e: unknown) => send(res, fail(e, request)),
      );
    });
    req.on('error', () => res.destroy());
  };
}

export function buildServer(herder: HerderApi, options: RestServerOptions = {}): RestServer {
  const pl: Pipeline = {
    herder,
    routes: ROUTES.filter((r) => options.adminEndpoints !== false || r.admin !== true),
    requestTimeoutMs: options.requestTimeoutMs ?? 90_000,
    healthTimeoutMs: options.healthTimeoutMs ?? 10_000,
    topicTracking: options.topicTracking ?? { enabled: true, allowReset: true },
    log: options.log ?? SILENT_LOGGER,
  };
  const now = options.now ?? Date.now;

  const dispatch = async (req: Request): Promise<Reply> => {
    const q = req.url.indexOf('?');
    const path = (q < 0 ? req.url : req.url.slice(0, q)).split('#')[0] as string;
    const query = new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1));
    const method = req.method.toUpperCase();
    let reply: Reply;
    if (options.auth !== undefined && !isPreflight(method, req.headers) && !options.auth.check(req.headers.authorization)) {
      // Connect's JaasBasicAuthFilter text; the challenge header lets curl and browsers ask for credentials.
      reply = errorReply(401, 'User cannot access the resource.', { 'www-authenticate': `Basic realm="${options.auth.realm}", charset="UTF-8"` });
    } else {
      try {
        reply = await route(pl, req, method === 'HEAD' ? 'GET' : method, segments(path), query);
      } catch (e) {
        reply = failure(pl, e, req);
      }
    }
    let headers: Record<string, string> = { ...reply.headers };
    if (options.cors !== undefined) Object.assign(headers, corsHeaders(options.cors, method, req.headers));
    if (options.responseHeaders !== undefined && options.responseHeaders.length > 0) headers = applyHeaderRules(headers, options.responseHeaders, now());
    return { status: reply.status, headers, body: method === 'HEAD' ? '' : reply.body };
  };

  const inject = async (req: InjectRequest): Promise<InjectResponse> => {
    const body = req.body === undefined ? '' : typeof req.body === 'string' ? req.body : req.body.toString('utf8');
    return dispatch({ method: req.method, url: req.url, headers: lowerHeaders(req.headers ?? {}), body, secure: false });
  };

  return { inject, handler: nodeHandler(dispatch, options.maxBodyBytes ?? 16 * 1024 * 1024, (e, req) => failure(pl, e, req)) };
}
