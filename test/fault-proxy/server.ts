/**
 * Icefloe's fault-injection proxy for tests: a transparent HTTP forwarder in front of the real S3
 * store, the real Iceberg REST catalog and the real schema registry, into which tests arm faults through a
 * small JSON control API.
 *
 *   node test/fault-proxy/server.ts \
 *     --route s3=127.0.0.1:9100=http://127.0.0.1:9000 \
 *     --route catalog=127.0.0.1:8182=http://127.0.0.1:8181 \
 *     --route registry=127.0.0.1:8082=http://127.0.0.1:8081 \
 *     --control 127.0.0.1:9199
 *
 * `--route NAME=LISTEN_HOST:PORT=UPSTREAM_URL` (repeatable) and `--control HOST:PORT`.
 *
 * Owns: forwarding each request unchanged (method, path+query, headers including Host, body streamed),
 * the armed fault rules, the held requests, and a bounded per-request log of what reached the upstream.
 *
 * Must not: change a forwarded request or response (S3 signs the Host header, the path and the payload
 * hash, so any rewrite breaks SigV4), buffer a body that no fault needs, invent behaviour of the real
 * services (everything not faulted is whatever the upstream answers), or persist anything.
 *
 * Control API (JSON, on the control address):
 *   GET    /health                  {ok, service: "fault-proxy", routes}
 *   POST   /rules                   arm a RuleSpec -> 201 RuleState
 *   GET    /rules                   {rules: RuleState[]}
 *   GET    /rules/:id               RuleState (its `held` counts requests pending right now)
 *   POST   /rules/:id/release       forward every request the rule holds now -> {released}
 *   DELETE /rules/:id               remove one rule (its held requests are forwarded)
 *   DELETE /rules                   remove all rules (held requests are forwarded)
 *   GET    /log[?target=NAME]       {entries: LogEntry[]}, oldest first
 *   DELETE /log                     forget the log
 */
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';

// --- the protocol (client.ts imports these types) -------------------------------------------------

export type Fault =
  | { kind: 'delay'; ms: number }
  | { kind: 'hold' }
  /** Answer without forwarding. `preset` fills code/body/headers; explicit fields override it. */
  | { kind: 'status'; preset?: StatusPreset; code?: number; body?: string; headers?: Record<string, string> }
  | { kind: 'reset' }
  | { kind: 'fail-without-forward' }
  | { kind: 'apply-then-fail' };

/** slowdown: S3's 503 SlowDown error; unavailable: a plain 503. */
export type StatusPreset = 'slowdown' | 'unavailable';

export interface RuleMatch {
  /** Case-insensitive HTTP method. */
  method?: string;
  /** Regular expression tested against the path with its query string, e.g. `^/warehouse/t1/`. */
  path?: string;
  /** The header must be present; with `value`, a regular expression its value must match. */
  header?: { name: string; value?: string };
}

export interface RuleSpec {
  /** Route name, e.g. `s3` or `catalog`. */
  target: string;
  match?: RuleMatch;
  /** How many matching requests the fault applies to: default 1; 0 = until the rule is removed. */
  times?: number;
  fault: Fault;
}

export interface RuleState {
  id: string;
  spec: RuleSpec;
  /** Matching requests the fault has been applied to so far. */
  applied: number;
  /** True once `applied` reached `times`: the rule no longer matches. */
  spent: boolean;
  /** Requests this rule is holding right now (hold faults only). */
  held: number;
  /** Requests released so far (hold faults only). */
  released: number;
}

export interface LogEntry {
  seq: number;
  /** ISO time the request arrived. */
  at: string;
  target: string;
  method: string;
  /** Path with query string, as received. */
  path: string;
  /** The rule that applied, or null when the request passed through. */
  ruleId: string | null;
  fault: Fault['kind'] | null;
  /** Whether the request was sent to the upstream (a held request is not, until released). */
  forwarded: boolean;
  /** The upstream's status, once it answered; null when never forwarded or it failed. */
  upstreamStatus: number | null;
  /** The status the client got; null for a reset, a held request or a client that went away. */
  clientStatus: number | null;
  /** What went wrong, if anything: upstream connection error, client gone, reset. */
  error: string | null;
  durationMs: number | null;
}

// --- state ----------------------------------------------------------------------------------------

interface Route {
  name: string;
  host: string;
  port: number;
  upstream: URL;
}

interface Held {
  release: () => void;
}

interface Rule {
  state: RuleState;
  methodUpper: string | undefined;
  path: RegExp | undefined;
  header: { name: string; value: RegExp | undefined } | undefined;
  held: Set<Held>;
}

// Long soak runs must not grow the proxy without bound; tests look at recent requests only.
const LOG_LIMIT = 10_000;

const rules = new Map<string, Rule>();
let nextRuleId = 1;
let log: LogEntry[] = [];
let nextSeq = 1;

// Keep-alive to the upstream, like a real client would, so the proxy adds no connection set-up cost.
const upstreamAgent = new Agent({ keepAlive: true });

// Per-connection headers, not end-to-end ones: they describe our hop, not the request. None of them is
// signed by SigV4 (the signer leaves them out), so dropping them keeps signatures valid. `expect` is
// dropped because Node already answered 100-continue to the client before the request reached us.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'expect', 'te', 'upgrade']);

// --- matching -------------------------------------------------------------------------------------

function matches(rule: Rule, route: Route, req: IncomingMessage): boolean {
  const s = rule.state;
  if (s.spent || s.spec.target !== route.name) return false;
  if (rule.methodUpper !== undefined && rule.methodUpper !== req.method) return false;
  if (rule.path !== undefined && !rule.path.test(req.url ?? '/')) return false;
  if (rule.header !== undefined) {
    const v = headerValue(req.headers, rule.header.name);
    if (v === undefined) return false;
    if (rule.header.value !== undefined && !rule.header.value.test(v)) return false;
  }
  return true;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The first armed, unspent rule that matches; counts the application. Rules apply in arming order. */
function takeRule(route: Route, req: IncomingMessage): Rule | undefined {
  for (const rule of rules.values()) {
    if (!matches(rule, route, req)) continue;
    rule.state.applied += 1;
    const times = rule.state.spec.times ?? 1;
    if (times > 0 && rule.state.applied >= times) rule.state.spent = true;
    return rule;
  }
  return undefined;
}

// --- the data path --------------------------------------------------------------------------------

function handleProxied(route: Route, req: IncomingMessage, res: ServerResponse): void {
  const started = performance.now();
  const entry: LogEntry = {
    seq: nextSeq++,
    at: new Date().toISOString(),
    target: route.name,
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    ruleId: null,
    fault: null,
    forwarded: false,
    upstreamStatus: null,
    clientStatus: null,
    error: null,
    durationMs: null,
  };
  log.push(entry);
  if (log.length > LOG_LIMIT) log = log.slice(log.length - LOG_LIMIT);
  const done = (): void => {
    entry.durationMs = Math.round(performance.now() - started);
  };
  res.on('close', () => {
    if (!res.writableFinished && entry.error === null) entry.error = 'client went away before the response';
    done();
  });

  const rule = takeRule(route, req);
  if (rule === undefined) {
    forward(route, req, res, entry, false);
    return;
  }
  entry.ruleId = rule.state.id;
  const fault = rule.state.spec.fault;
  entry.fault = fault.kind;
  switch (fault.kind) {
    case 'delay': {
      const timer = setTimeout(() => {
        if (!res.destroyed) forward(route, req, res, entry, false);
      }, fault.ms);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    case 'hold': {
      // The request (and its body) stays unread in the socket until released: TCP back-pressure
      // holds the client, which sees a request that is simply slow to answer.
      const held: Held = {
        release: () => {
          rule.held.delete(held);
          rule.state.released += 1;
          if (!res.destroyed) forward(route, req, res, entry, false);
        },
      };
      rule.held.add(held);
      // A client that gives up while held is no longer held: forwarding it later would apply a
      // write nobody is waiting for.
      res.on('close', () => rule.held.delete(held));
      return;
    }
    case 'status': {
      const base = fault.preset === undefined ? undefined : preset(req, fault.preset);
      const code = fault.code ?? base?.code ?? 503;
      const body = fault.body ?? base?.body ?? '';
      answer(req, res, entry, { code, body, headers: { ...base?.headers, ...fault.headers } }, rule.state.id);
      return;
    }
    case 'fail-without-forward':
      answer(req, res, entry, errorAnswer(req, 500, 'InternalError', 'InternalServerError', 'fault-proxy: injected 500, request not forwarded'), rule.state.id);
      return;
    case 'reset':
      entry.error = 'reset by fault';
      // RST rather than FIN, so the client sees ECONNRESET as from a dying load balancer.
      req.socket.resetAndDestroy();
      return;
    case 'apply-then-fail':
      forward(route, req, res, entry, true);
      return;
  }
}

/**
 * Injected errors look like the real service's own, so clients parse them as they would a real failure
 * (the S3 SDK throws an "XML parse error" on a plain-text 5xx). A SigV4-signed request (header or
 * presigned query) is answered with S3's XML <Error>; anything else with the Iceberg REST ErrorModel.
 */
function errorAnswer(req: IncomingMessage, code: number, s3Code: string, restType: string, message: string): Answer {
  const signed = /^AWS4-HMAC-SHA256 /.test(headerValue(req.headers, 'authorization') ?? '') || /[?&]X-Amz-Algorithm=/i.test(req.url ?? '');
  if (signed) {
    const body =
      '<?xml version="1.0" encoding="UTF-8"?>\n' +
      `<Error><Code>${s3Code}</Code><Message>${message}</Message>` +
      '<RequestId>fault-proxy</RequestId><HostId>fault-proxy</HostId></Error>';
    return { code, body, headers: { 'content-type': 'application/xml' } };
  }
  const body = JSON.stringify({ error: { message, type: restType, code } });
  return { code, body, headers: { 'content-type': 'application/json' } };
}

interface Answer {
  code: number;
  body: string;
  headers: Record<string, string>;
}

function preset(req: IncomingMessage, name: StatusPreset): Answer {
  switch (name) {
    case 'slowdown':
      // S3's throttling answer, whatever the request: the SDK's retry strategy keys on this code.
      return {
        code: 503,
        body: '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>' +
          '<RequestId>fault-proxy</RequestId><HostId>fault-proxy</HostId></Error>',
        headers: { 'content-type': 'application/xml' },
      };
    case 'unavailable':
      return errorAnswer(req, 503, 'ServiceUnavailable', 'ServiceUnavailableException', 'fault-proxy: injected 503, request not forwarded');
  }
}

const PRESETS: readonly StatusPreset[] = ['slowdown', 'unavailable'];

/** Answer from the proxy itself; the request body is drained so the connection stays usable. */
function answer(req: IncomingMessage, res: ServerResponse, entry: LogEntry, a: Answer, ruleId: string, extra: Record<string, string> = {}): void {
  req.resume();
  if (res.destroyed) return;
  entry.clientStatus = a.code;
  const mark: Record<string, string> = ruleId === '' ? {} : { 'x-fault-proxy-rule': ruleId };
  res.writeHead(a.code, { ...a.headers, ...extra, ...mark, 'content-length': Buffer.byteLength(a.body) });
  res.end(a.body);
}

/**
 * Send the request to the upstream as received and stream the answer back. With `thenFail`, the
 * upstream's answer is read to the end and recorded, and the client gets a 500 instead: the write
 * happened but the client cannot know it.
 */
function forward(route: Route, req: IncomingMessage, res: ServerResponse, entry: LogEntry, thenFail: boolean): void {
  entry.forwarded = true;
  const headers: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
  }
  // `host` stays as the client sent it (SigV4 signs it); the TCP connection goes to the upstream.
  const up = httpRequest({
    host: route.upstream.hostname,
    port: route.upstream.port === '' ? 80 : Number(route.upstream.port),
    method: req.method,
    path: req.url,
    headers,
    agent: upstreamAgent,
  });
  up.on('response', (upRes) => {
    entry.upstreamStatus = upRes.statusCode ?? null;
    if (thenFail) {
      upRes.on('error', (e) => { entry.error = `upstream response: ${e.message}`; });
      upRes.resume();
      upRes.on('end', () => {
        const status = String(entry.upstreamStatus ?? '');
        const msg = `fault-proxy: upstream answered ${status}, client gets 500`;
        const a = errorAnswer(req, 500, 'InternalError', 'InternalServerError', msg);
        answer(req, res, entry, a, entry.ruleId ?? '', { 'x-fault-proxy-upstream-status': status });
      });
      return;
    }
    const outHeaders: string[] = [];
    const raw = upRes.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const k = raw[i] ?? '';
      if (!HOP_BY_HOP.has(k.toLowerCase())) outHeaders.push(k, raw[i + 1] ?? '');
    }
    entry.clientStatus = upRes.statusCode ?? 502;
    res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, outHeaders);
    pipeline(upRes, res, (e) => {
      if (e && entry.error === null) entry.error = `streaming the response: ${e.message}`;
    });
  });
  up.on('error', (e: NodeJS.ErrnoException) => {
    if (entry.error === null) entry.error = `upstream ${route.upstream.origin}: ${e.code ?? e.message}`;
    if (res.headersSent) {
      res.destroy();
    } else {
      const msg = `fault-proxy: upstream ${route.name} at ${route.upstream.origin} failed: ${e.code ?? e.message}`;
      answer(req, res, entry, errorAnswer(req, 502, 'BadGateway', 'BadGatewayException', msg), entry.ruleId ?? '');
    }
  });
  // A client that goes away mid-request takes its upstream request with it.
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  // Streams the body without buffering it; ends `up` when the body ends.
  req.pipe(up);
}

// --- the control API ------------------------------------------------------------------------------

class BadRequest extends Error {}

function compile(spec: unknown, routes: Route[]): Rule {
  if (typeof spec !== 'object' || spec === null) throw new BadRequest('a rule is a JSON object');
  const s = spec as Partial<RuleSpec>;
  if (typeof s.target !== 'string' || !routes.some((r) => r.name === s.target)) {
    throw new BadRequest(`target must be one of: ${routes.map((r) => r.name).join(', ')}`);
  }
  const times = s.times ?? 1;
  if (!Number.isInteger(times) || times < 0) throw new BadRequest('times must be an integer >= 0');
  const f = s.fault;
  const kinds: Fault['kind'][] = ['delay', 'hold', 'status', 'reset', 'fail-without-forward', 'apply-then-fail'];
  if (typeof f !== 'object' || f === null || !kinds.includes(f.kind)) {
    throw new BadRequest(`fault.kind must be one of: ${kinds.join(', ')}`);
  }
  if (f.kind === 'delay' && !(Number.isFinite(f.ms) && f.ms >= 0)) throw new BadRequest('delay needs ms >= 0');
  if (f.kind === 'status') {
    if (f.preset !== undefined && !PRESETS.includes(f.preset)) throw new BadRequest(`status preset must be one of: ${PRESETS.join(', ')}`);
    if (f.preset === undefined && f.code === undefined) throw new BadRequest('status needs a code or a preset');
    if (f.code !== undefined && !(Number.isInteger(f.code) && f.code >= 100 && f.code <= 599)) throw new BadRequest('status code must be 100..599');
  }
  const m = s.match ?? {};
  const regex = (what: string, src: string | undefined): RegExp | undefined => {
    if (src === undefined) return undefined;
    try {
      return new RegExp(src);
    } catch (e) {
      throw new BadRequest(`${what} is not a valid regular expression: ${(e as Error).message}`);
    }
  };
  if (m.header !== undefined && typeof m.header.name !== 'string') throw new BadRequest('match.header needs a name');
  const id = `r${nextRuleId++}`;
  return {
    state: { id, spec: { ...(s as RuleSpec), times }, applied: 0, spent: false, held: 0, released: 0 },
    methodUpper: m.method?.toUpperCase(),
    path: regex('match.path', m.path),
    header: m.header === undefined ? undefined : { name: m.header.name, value: regex('match.header.value', m.header.value) },
    held: new Set(),
  };
}

function view(rule: Rule): RuleState {
  return { ...rule.state, held: rule.held.size };
}

function releaseAll(rule: Rule): number {
  const held = [...rule.held];
  for (const h of held) h.release();
  return held.length;
}

function sendJson(res: ServerResponse, code: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequest('the body is not JSON');
  }
}

async function handleControl(routes: Route[], req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://control');
  const parts = url.pathname.split('/').filter((p) => p !== '');
  const method = req.method ?? 'GET';
  const [first, id, action] = parts;

  if (method === 'GET' && first === 'health' && parts.length === 1) {
    sendJson(res, 200, {
      ok: true,
      service: 'fault-proxy',
      routes: routes.map((r) => ({ name: r.name, listen: `${r.host}:${r.port}`, upstream: r.upstream.origin })),
    });
    return;
  }
  if (first === 'rules') {
    if (parts.length === 1 && method === 'POST') {
      const rule = compile(await readJson(req), routes);
      rules.set(rule.state.id, rule);
      sendJson(res, 201, view(rule));
      return;
    }
    if (parts.length === 1 && method === 'GET') {
      sendJson(res, 200, { rules: [...rules.values()].map(view) });
      return;
    }
    if (parts.length === 1 && method === 'DELETE') {
      // Clearing makes the proxy transparent again: whatever was held goes through, so no test
      // leaves a request hanging behind it.
      let released = 0;
      for (const rule of rules.values()) released += releaseAll(rule);
      const removed = rules.size;
      rules.clear();
      sendJson(res, 200, { removed, released });
      return;
    }
    const rule = id === undefined ? undefined : rules.get(id);
    if (rule === undefined) {
      sendJson(res, 404, { error: `no rule ${id ?? ''}` });
      return;
    }
    if (parts.length === 2 && method === 'GET') {
      sendJson(res, 200, view(rule));
      return;
    }
    if (parts.length === 2 && method === 'DELETE') {
      rules.delete(rule.state.id);
      sendJson(res, 200, { removed: 1, released: releaseAll(rule) });
      return;
    }
    if (parts.length === 3 && action === 'release' && method === 'POST') {
      sendJson(res, 200, { released: releaseAll(rule) });
      return;
    }
  }
  if (first === 'log' && parts.length === 1) {
    if (method === 'GET') {
      const target = url.searchParams.get('target');
      sendJson(res, 200, { entries: target === null ? log : log.filter((e) => e.target === target) });
      return;
    }
    if (method === 'DELETE') {
      const removed = log.length;
      log = [];
      sendJson(res, 200, { removed });
      return;
    }
  }
  sendJson(res, 404, { error: `no control route ${method} ${url.pathname}` });
}

// --- start-up -------------------------------------------------------------------------------------

function parseHostPort(s: string, what: string): { host: string; port: number } {
  const i = s.lastIndexOf(':');
  const port = Number(s.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`${what}: expected HOST:PORT, got '${s}'`);
  return { host: s.slice(0, i), port };
}

function parseArgs(argv: string[]): { routes: Route[]; control: { host: string; port: number } } {
  const routes: Route[] = [];
  let control: { host: string; port: number } | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    if ((arg === '--route' || arg === '--control') && value === undefined) throw new Error(`${arg} needs a value`);
    if (arg === '--route' && value !== undefined) {
      // NAME=LISTEN_HOST:PORT=UPSTREAM_URL; the upstream URL may itself hold '=' only in a query, which it never has.
      const m = /^([A-Za-z0-9_-]+)=([^=]+)=(https?:\/\/.+)$/.exec(value);
      if (m?.[1] === undefined || m[2] === undefined || m[3] === undefined) {
        throw new Error(`--route: expected NAME=LISTEN_HOST:PORT=http://UPSTREAM_HOST:PORT, got '${value}'`);
      }
      const upstream = new URL(m[3]);
      if (upstream.protocol !== 'http:') throw new Error(`--route ${m[1]}: only http:// upstreams are supported`);
      if (routes.some((r) => r.name === m[1])) throw new Error(`--route ${m[1]} given twice`);
      routes.push({ name: m[1], ...parseHostPort(m[2], `--route ${m[1]}`), upstream });
      i++;
    } else if (arg === '--control' && value !== undefined) {
      control = parseHostPort(value, '--control');
      i++;
    } else {
      throw new Error(`unknown argument '${arg ?? ''}'`);
    }
  }
  if (routes.length === 0 || control === undefined) {
    throw new Error('usage: server.ts --route NAME=LISTEN_HOST:PORT=http://UPSTREAM_HOST:PORT ... --control HOST:PORT');
  }
  return { routes, control };
}

function listen(server: Server, host: string, port: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new Error(`${what}: cannot listen on ${host}:${port}: ${e.message}`)));
    server.listen(port, host, () => resolve());
  });
}

async function main(): Promise<void> {
  const { routes, control } = parseArgs(process.argv.slice(2));
  for (const route of routes) {
    const server = createServer((req, res) => handleProxied(route, req, res));
    // Large uploads through a held or delayed request must not be cut off by Node's default timeouts.
    server.requestTimeout = 0;
    server.headersTimeout = 60_000;
    // Longer than the SDK's idle reuse, so a client rarely reuses a connection we are just closing.
    server.keepAliveTimeout = 30_000;
    await listen(server, route.host, route.port, `route ${route.name}`);
    console.log(`fault-proxy: ${route.name} on ${route.host}:${route.port} -> ${route.upstream.origin}`);
  }
  const controlServer = createServer((req, res) => {
    handleControl(routes, req, res).catch((e: unknown) => {
      const bad = e instanceof BadRequest;
      if (!bad) console.error('fault-proxy: control request failed', e);
      if (!res.headersSent) sendJson(res, bad ? 400 : 500, { error: (e as Error).message });
    });
  });
  await listen(controlServer, control.host, control.port, 'control');
  console.log(`fault-proxy: control on ${control.host}:${control.port}`);
}

// Only when run as a program: client.ts imports this module's types (erased), never its code.
if (import.meta.main) {
  main().catch((e: unknown) => {
    console.error(`fault-proxy: ${(e as Error).message}`);
    process.exit(1);
  });
}
