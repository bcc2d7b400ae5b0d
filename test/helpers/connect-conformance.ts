/**
 * The REST conformance harness (issue 12): one scripted sequence of HTTP requests (the steps in
 * connect-conformance-sequence.ts) is sent to a worker, and every answer is recorded (status code,
 * media type, body); then two recordings are compared by status code, media type and JSON shape (field
 * names and JSON types, recursively; values may differ). The reference is a real Apache Kafka Connect
 * worker (the stack's `connect` service); the other side is Icefloe.
 *
 * What "shape" means here, and why:
 * - Objects: the same field names with the same shapes. A field present on one side only is a mismatch.
 * - Arrays: compared by element shape. The elements of one array are merged into one shape (a field's
 *   types are the union over the elements, and a field missing from some elements is optional), because
 *   two workers list different things (Connect's file sink has other config keys than our Iceberg sink).
 *   An empty array matches only an empty array: `tasks: []` after a stop is part of the contract.
 * - Dictionaries (maps whose keys are data, e.g. a connector config or the logger map) are compared like
 *   arrays of their values; the step names them by path. Maps keyed by connector names (`expand`,
 *   `/topics`) instead get their keys replaced by the role of that connector (`<main>`), so the keys
 *   themselves are compared.
 * - Inside merged elements a field that is null in some elements is nullable: null there is data (a key
 *   without a default), so only the non-null types are compared. Elsewhere null is a type like any other.
 */
import { inspect } from 'node:util';

// ---------------------------------------------------------------------------------------------- sides

/** What differs between the two workers under test: where they are and which connector they run. */
export interface Side {
  /** `connect` or `icefloe`: only for messages. */
  readonly label: string;
  readonly baseUrl: string;
  /** The connector class the sequence creates, validates and asks the plugin config of. */
  readonly connectorClass: string;
  /**
   * A config (without `name`) for `connector` that the worker accepts and runs, consuming `topic`; the
   * same for every call with the same connector (a PUT of it changes nothing).
   */
  validConfig(topic: string, connector: string): Record<string, string>;
  /** A config of the same class that validation rejects (create answers 400, validate error_count > 0). */
  invalidConfig(topic: string, connector: string): Record<string, string>;
  /**
   * A logger that exists from the worker's start and that nobody sets (GET /admin/loggers/{name}: its
   * effective level, last_modified null). The PUT steps set `<logger>.conformance.<run prefix>` instead,
   * a new name per run: the level a PUT sets outlives the run on a shared worker.
   */
  readonly logger: string;
  /** Resolves once the sink consumer group of `connector` has no members (so offsets can be altered). */
  awaitGroupEmpty?(connector: string): Promise<void>;
}

/** The roles of the connectors one run creates; a run's names are unique (a shared reference worker). */
export const ROLES = ['main', 'paused', 'stopped', 'odd', 'missing', 'probe'] as const;
export type Role = (typeof ROLES)[number];

export interface RunContext {
  readonly side: Side;
  /** Unique per run: connector names and the logger the run sets start with it. */
  readonly prefix: string;
  /** The topic every connector consumes (records already in it). */
  readonly topic: string;
  /**
   * Connector name of each role. `odd` holds characters that must be percent-encoded in a path; `missing`
   * is never created; `probe` is the name of every create that should fail, so that a worker that wrongly
   * accepts one does not disturb the steps of `main` (the last step deletes it).
   */
  readonly names: Readonly<Record<Role, string>>;
  /** A path segment for a connector name, every character outside [A-Za-z0-9_.~] percent-encoded. */
  enc(role: Role): string;
  /** JSON request helper for polling (not recorded). */
  get(path: string): Promise<{ status: number; json: unknown }>;
}

export function connectorNames(prefix: string): Record<Role, string> {
  return { main: `${prefix}-main`, paused: `${prefix}-paused`, stopped: `${prefix}-stopped`, odd: `${prefix} a->b`, missing: `${prefix}-missing`, probe: `${prefix}-probe` };
}

/** Percent-encodes everything but unreserved letters and digits (Strimzi sends `->` as `%2D%3E`). */
export function strictEncode(s: string): string {
  return [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

// ---------------------------------------------------------------------------------------------- steps

export interface Step {
  /** Stable id, unique in the sequence: what a mismatch and the design note refer to. */
  readonly id: string;
  /** What the step checks, in words. */
  readonly title: string;
  readonly method: string;
  /** Path and query; may use ctx.enc(role) and ctx.names. */
  path(ctx: RunContext): string;
  /** A JSON body (serialised here) ... */
  body?(ctx: RunContext): unknown;
  /** ... or a raw body text (bad JSON). */
  readonly rawBody?: string;
  /** The request's Content-Type; default `application/json` when there is a body. */
  readonly contentType?: string;
  /** Runs before the request and is not recorded: waiting for an asynchronous state change. */
  before?(ctx: RunContext): Promise<void>;
  /** Paths (dot-separated, `*` any key, `[]` array elements, '' the body) of maps whose keys are data. */
  readonly dicts?: readonly string[];
  /** The body (or the object at these paths) is keyed by connector names: keep and rename this run's. */
  readonly connectorKeyed?: readonly string[];
  /** The body is a list of connector names: keep only this run's (the reference worker is shared). */
  readonly connectorList?: boolean;
}

export interface Exchange {
  readonly id: string;
  readonly title: string;
  readonly method: string;
  readonly path: string;
  readonly requestContentType: string | undefined;
  readonly requestBody: string | undefined;
  readonly status: number;
  /** The media type of the response, without parameters; undefined when there is none. */
  readonly contentType: string | undefined;
  /** The Location header (201 answers), as sent. */
  readonly location?: string | undefined;
  /** The parsed JSON body, the text when it is not JSON, undefined when empty. */
  readonly body: unknown;
  /** The raw response text. */
  readonly text: string;
}

export interface Recording {
  readonly side: string;
  readonly names: Readonly<Record<Role, string>>;
  readonly exchanges: readonly Exchange[];
}

async function send(baseUrl: string, method: string, path: string, body: string | undefined, contentType: string | undefined): Promise<Omit<Exchange, 'id' | 'title' | 'method' | 'path' | 'requestContentType' | 'requestBody'>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (contentType !== undefined) headers['content-type'] = contentType;
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(100_000) };
  if (body !== undefined) init.body = body;
  const r = await fetch(`${baseUrl}${path}`, init);
  const text = await r.text();
  let parsed: unknown = undefined;
  if (text !== '') {
    try {
      parsed = JSON.parse(text) as unknown;
    } catch {
      parsed = text;
    }
  }
  const ct = r.headers.get('content-type');
  const location = r.headers.get('location') ?? undefined;
  return { status: r.status, contentType: ct === null ? undefined : (ct.split(';')[0] ?? '').trim().toLowerCase(), location, body: parsed, text };
}

export function makeContext(side: Side, topic: string, prefix: string): RunContext {
  const names = connectorNames(prefix);
  return {
    side,
    prefix,
    topic,
    names,
    enc: (role) => strictEncode(names[role]),
    async get(path) {
      const r = await send(side.baseUrl, 'GET', path, undefined, undefined);
      return { status: r.status, json: r.body };
    },
  };
}

/** Sends the sequence to one side, recording every answer; `onStep` sees each exchange as it comes. */
export async function runSequence(ctx: RunContext, steps: readonly Step[], onStep?: (e: Exchange) => void): Promise<Recording> {
  const ids = new Set<string>();
  const exchanges: Exchange[] = [];
  for (const step of steps) {
    if (ids.has(step.id)) throw new Error(`duplicate step id ${step.id}`);
    ids.add(step.id);
    if (step.before !== undefined) {
      try {
        await step.before(ctx);
      } catch (e) {
        throw new Error(`${ctx.side.label}: before step ${step.id} (${step.title}): ${(e as Error).message}`, { cause: e });
      }
    }
    const path = step.path(ctx);
    const requestBody = step.rawBody ?? (step.body === undefined ? undefined : JSON.stringify(step.body(ctx)));
    const requestContentType = step.contentType ?? (requestBody === undefined ? undefined : 'application/json');
    const answer = await send(ctx.side.baseUrl, step.method, path, requestBody, requestContentType);
    const e: Exchange = { id: step.id, title: step.title, method: step.method, path, requestContentType, requestBody, ...answer };
    exchanges.push(e);
    onStep?.(e);
  }
  return { side: ctx.side.label, names: ctx.names, exchanges };
}

/** Deletes every connector of the run that still exists (after a failed run; the reference worker is shared). */
export async function deleteRunConnectors(ctx: RunContext): Promise<void> {
  for (const role of ROLES) {
    await send(ctx.side.baseUrl, 'DELETE', `/connectors/${ctx.enc(role)}`, undefined, undefined).catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------- polling

export async function poll<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : ` (last error: ${String(last)})`}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

interface StatusBody {
  connector?: { state?: string };
  tasks?: { id: number; state: string }[];
}

/**
 * Waits until GET /connectors/{c}/status shows the connector in `state` and, when `tasks` is given, that
 * many tasks all in `taskState` (default: `state`).
 */
export async function waitForState(ctx: RunContext, role: Role, state: string, tasks?: number, taskState: string = state): Promise<void> {
  await poll(`${ctx.side.label}: ${ctx.names[role]} ${state} with ${tasks ?? 'any'} task(s) ${taskState}`, async () => {
    const r = await ctx.get(`/connectors/${ctx.enc(role)}/status`);
    if (r.status !== 200) return undefined;
    const s = r.json as StatusBody;
    if (s.connector?.state !== state) return undefined;
    if (tasks === undefined) return true;
    const ts = s.tasks ?? [];
    return ts.length === tasks && ts.every((t) => t.state === taskState) ? true : undefined;
  });
}

/** Waits until the connector is gone: GET /connectors/{c} answers 404. */
export async function waitForGone(ctx: RunContext, role: Role): Promise<void> {
  await poll(`${ctx.side.label}: ${ctx.names[role]} deleted`, async () => ((await ctx.get(`/connectors/${ctx.enc(role)}`)).status === 404 ? true : undefined));
}

/** Waits until GET /connectors/{c}/offsets lists at least one partition with an offset. */
export async function waitForOffsets(ctx: RunContext, role: Role): Promise<void> {
  await poll(`${ctx.side.label}: committed offsets of ${ctx.names[role]}`, async () => {
    const r = await ctx.get(`/connectors/${ctx.enc(role)}/offsets`);
    const offsets = (r.json as { offsets?: unknown[] } | undefined)?.offsets;
    return r.status === 200 && Array.isArray(offsets) && offsets.length > 0 ? true : undefined;
  });
}

/** Waits until GET /connectors/{c}/topics lists the run's topic. */
export async function waitForTopics(ctx: RunContext, role: Role): Promise<void> {
  await poll(`${ctx.side.label}: active topics of ${ctx.names[role]}`, async () => {
    const r = await ctx.get(`/connectors/${ctx.enc(role)}/topics`);
    const topics = (r.json as Record<string, { topics?: string[] }> | undefined)?.[ctx.names[role]]?.topics;
    return r.status === 200 && topics?.includes(ctx.topic) === true ? true : undefined;
  });
}

// ---------------------------------------------------------------------------------------------- shapes

/**
 * A JSON shape: a primitive type name, an object's fields, or an array's merged element shape (or a
 * dictionary's merged value shape). Merged shapes carry per-field type unions and optionality.
 */
export type Shape =
  | { readonly kind: 'null' | 'boolean' | 'number' | 'string' }
  | { readonly kind: 'object'; readonly fields: ReadonlyMap<string, Shape> }
  | { readonly kind: 'array' | 'dict'; readonly element: Merged | undefined }
  | { readonly kind: 'text' }
  | { readonly kind: 'empty' };

/** The union of several shapes: each kind seen, with objects' fields merged. */
export interface Merged {
  readonly kinds: ReadonlySet<string>;
  /** Field name -> merged shape and in how many of the `objects` elements it appears. */
  readonly fields: ReadonlyMap<string, { shape: Merged; count: number }>;
  readonly objects: number;
  /** Merged elements of nested arrays / dicts. */
  readonly element: Merged | undefined;
  readonly arrays: number;
  readonly emptyArrays: number;
}

function pathMatches(pattern: string, path: readonly string[]): boolean {
  const p = pattern === '' ? [] : pattern.split('.');
  return p.length === path.length && p.every((seg, i) => seg === '*' || seg === path[i]);
}

/** The shape of a JSON value; `dicts` names the paths of maps whose keys are data. */
export function shapeOf(value: unknown, dicts: readonly string[] = [], path: readonly string[] = []): Shape {
  if (value === undefined) return { kind: 'empty' };
  if (value === null) return { kind: 'null' };
  if (typeof value === 'boolean') return { kind: 'boolean' };
  if (typeof value === 'number') return { kind: 'number' };
  if (typeof value === 'string') return { kind: 'string' };
  if (Array.isArray(value)) {
    const elems = value.map((v) => shapeOf(v, dicts, [...path, '[]']));
    return { kind: 'array', element: elems.length === 0 ? undefined : mergeAll(elems) };
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (dicts.some((d) => pathMatches(d, path))) {
      const vals = entries.map(([, v]) => shapeOf(v, dicts, [...path, '*']));
      return { kind: 'dict', element: vals.length === 0 ? undefined : mergeAll(vals) };
    }
    return { kind: 'object', fields: new Map(entries.map(([k, v]) => [k, shapeOf(v, dicts, [...path, k])])) };
  }
  return { kind: 'text' };
}

function emptyMerged(): { kinds: Set<string>; fields: Map<string, { shape: Merged; count: number }>; objects: number; element: Merged | undefined; arrays: number; emptyArrays: number } {
  return { kinds: new Set(), fields: new Map(), objects: 0, element: undefined, arrays: 0, emptyArrays: 0 };
}

function mergeInto(acc: ReturnType<typeof emptyMerged>, s: Shape): void {
  acc.kinds.add(s.kind === 'dict' ? 'dict' : s.kind);
  if (s.kind === 'object') {
    acc.objects++;
    for (const [k, v] of s.fields) {
      const prev = acc.fields.get(k);
      acc.fields.set(k, { shape: prev === undefined ? mergeAll([v]) : mergeMerged(prev.shape, mergeAll([v])), count: (prev?.count ?? 0) + 1 });
    }
  } else if (s.kind === 'array' || s.kind === 'dict') {
    acc.arrays++;
    if (s.element === undefined) acc.emptyArrays++;
    else acc.element = acc.element === undefined ? s.element : mergeMerged(acc.element, s.element);
  }
}

function mergeAll(shapes: readonly Shape[]): Merged {
  const acc = emptyMerged();
  for (const s of shapes) mergeInto(acc, s);
  return acc;
}

function mergeMerged(a: Merged, b: Merged): Merged {
  const fields = new Map<string, { shape: Merged; count: number }>(a.fields);
  for (const [k, v] of b.fields) {
    const prev = fields.get(k);
    fields.set(k, prev === undefined ? v : { shape: mergeMerged(prev.shape, v.shape), count: prev.count + v.count });
  }
  const element = a.element === undefined ? b.element : b.element === undefined ? a.element : mergeMerged(a.element, b.element);
  return { kinds: new Set([...a.kinds, ...b.kinds]), fields, objects: a.objects + b.objects, element, arrays: a.arrays + b.arrays, emptyArrays: a.emptyArrays + b.emptyArrays };
}

const show = (s: ReadonlySet<string>): string => [...s].sort().join('|');

/** Differences between two merged shapes (elements of arrays or dictionaries), as `path: ...` lines. */
function diffMerged(a: Merged, b: Merged, path: string, out: string[]): void {
  const ka = new Set([...a.kinds].filter((k) => k !== 'null'));
  const kb = new Set([...b.kinds].filter((k) => k !== 'null'));
  // Null inside merged elements is data (a key without a default): compare the other types.
  if (ka.size > 0 && kb.size > 0 && show(ka) !== show(kb)) out.push(`${path}: type ${show(a.kinds)} vs ${show(b.kinds)}`);
  if (a.objects > 0 && b.objects > 0) {
    for (const k of new Set([...a.fields.keys(), ...b.fields.keys()])) {
      const fa = a.fields.get(k);
      const fb = b.fields.get(k);
      if (fa === undefined || fb === undefined) {
        out.push(`${path}.${k}: field only on the ${fa === undefined ? 'second' : 'first'} side`);
        continue;
      }
      const optA = fa.count < a.objects;
      const optB = fb.count < b.objects;
      if (optA !== optB) out.push(`${path}.${k}: ${optA ? 'in some elements only' : 'in every element'} vs ${optB ? 'in some elements only' : 'in every element'}`);
      diffMerged(fa.shape, fb.shape, `${path}.${k}`, out);
    }
  }
  if (a.arrays > 0 && b.arrays > 0) {
    const allEmptyA = a.emptyArrays === a.arrays;
    const allEmptyB = b.emptyArrays === b.arrays;
    if (allEmptyA !== allEmptyB) out.push(`${path}[]: ${allEmptyA ? 'always empty' : 'has elements'} vs ${allEmptyB ? 'always empty' : 'has elements'}`);
    else if (a.element !== undefined && b.element !== undefined) diffMerged(a.element, b.element, `${path}[]`, out);
  }
}

/** Differences between two shapes, as `path: expected vs got` lines (empty when equal). */
export function diffShapes(a: Shape, b: Shape, path = '$', out: string[] = []): string[] {
  if (a.kind !== b.kind) {
    out.push(`${path}: ${a.kind} vs ${b.kind}`);
    return out;
  }
  if (a.kind === 'object' && b.kind === 'object') {
    for (const k of new Set([...a.fields.keys(), ...b.fields.keys()])) {
      const fa = a.fields.get(k);
      const fb = b.fields.get(k);
      if (fa === undefined) out.push(`${path}.${k}: missing vs ${fb?.kind ?? '?'}`);
      else if (fb === undefined) out.push(`${path}.${k}: ${fa.kind} vs missing`);
      else diffShapes(fa, fb, `${path}.${k}`, out);
    }
  } else if ((a.kind === 'array' || a.kind === 'dict') && (b.kind === 'array' || b.kind === 'dict')) {
    const sfx = a.kind === 'array' ? '[]' : '.*';
    if ((a.element === undefined) !== (b.element === undefined)) out.push(`${path}${sfx}: ${a.element === undefined ? 'empty' : 'has elements'} vs ${b.element === undefined ? 'empty' : 'has elements'}`);
    else if (a.element !== undefined && b.element !== undefined) diffMerged(a.element, b.element, `${path}${sfx}`, out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------- normalising

/** Replaces this run's connector names by their roles (`<main>`) wherever they are object keys. */
function renameConnectorKeys(value: unknown, names: Readonly<Record<Role, string>>, at: readonly string[], path: readonly string[] = []): unknown {
  const roleOf = new Map(Object.entries(names).map(([role, name]) => [name, `<${role}>`]));
  if (Array.isArray(value)) return value.map((v) => renameConnectorKeys(v, names, at, [...path, '[]']));
  if (value === null || typeof value !== 'object') return value;
  const keyed = at.some((p) => pathMatches(p, path));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const role = roleOf.get(k);
    // A map keyed by connector names on a shared worker holds other runs' connectors too: drop them.
    if (keyed && role === undefined) continue;
    out[keyed && role !== undefined ? role : k] = renameConnectorKeys(v, names, at, [...path, keyed ? '*' : k]);
  }
  return out;
}

/** The body as compared: connector-keyed maps renamed to roles, name lists filtered to this run's. */
export function normalisedBody(step: Step, rec: Recording, body: unknown): unknown {
  let b = body;
  if (step.connectorList === true && Array.isArray(b)) {
    const ours = new Set(Object.values(rec.names));
    b = b.filter((n) => typeof n === 'string' && ours.has(n));
  }
  if (step.connectorKeyed !== undefined) b = renameConnectorKeys(b, rec.names, step.connectorKeyed);
  return b;
}

/** A Location header as compared: its decoded path, with this run's connector names replaced by roles. */
export function locationPath(location: string | undefined, names: Readonly<Record<Role, string>>): string | undefined {
  if (location === undefined) return undefined;
  let path: string;
  try {
    path = decodeURIComponent(new URL(location, 'http://base.invalid').pathname);
  } catch {
    return location;
  }
  for (const [role, name] of Object.entries(names).sort((x, y) => y[1].length - x[1].length)) path = path.split(name).join(`<${role}>`);
  return path;
}

export interface Mismatch {
  readonly step: string;
  readonly title: string;
  readonly request: string;
  readonly lines: readonly string[];
}

/**
 * Compares two recordings of the same sequence step by step: status code, media type (where `a` sends
 * one) and body shape. `a` is the reference (expected), `b` the side under test (got).
 */
export function compareRecordings(steps: readonly Step[], a: Recording, b: Recording): Mismatch[] {
  const out: Mismatch[] = [];
  const byId = (r: Recording): Map<string, Exchange> => new Map(r.exchanges.map((e) => [e.id, e]));
  const ea = byId(a);
  const eb = byId(b);
  for (const step of steps) {
    const x = ea.get(step.id);
    const y = eb.get(step.id);
    if (x === undefined || y === undefined) {
      out.push({ step: step.id, title: step.title, request: step.method, lines: [`not recorded on ${x === undefined ? a.side : b.side}`] });
      continue;
    }
    const lines: string[] = [];
    if (x.status !== y.status) lines.push(`status: ${x.status} vs ${y.status}`);
    // Where the reference answers JSON, so must the other side; Connect sends no Content-Type on its
    // Jersey-made 404/405/415 bodies, and connect-rest.md recommends always sending one: not a mismatch.
    if (x.contentType !== undefined && x.contentType !== y.contentType) lines.push(`content-type: ${x.contentType} vs ${y.contentType ?? '(none)'}`);
    const la = locationPath(x.location, a.names);
    const lb = locationPath(y.location, b.names);
    if (la !== undefined && la !== lb) lines.push(`location: ${la} vs ${lb ?? '(none)'}`);
    const sa = shapeOf(normalisedBody(step, a, x.body), step.dicts);
    const sb = shapeOf(normalisedBody(step, b, y.body), step.dicts);
    lines.push(...diffShapes(sa, sb));
    if (lines.length > 0) out.push({ step: step.id, title: step.title, request: `${x.method} ${x.path} | ${y.method} ${y.path}`, lines });
  }
  return out;
}

const clip = (s: string, n = 300): string => (s.length > n ? `${s.slice(0, n)}…` : s);

/** A readable report of mismatches, with both answers of each step. */
export function formatMismatches(mismatches: readonly Mismatch[], a: Recording, b: Recording): string {
  if (mismatches.length === 0) return `${a.side} and ${b.side} agree on every step`;
  const find = (r: Recording, id: string): Exchange | undefined => r.exchanges.find((e) => e.id === id);
  const parts = mismatches.map((m) => {
    const x = find(a, m.step);
    const y = find(b, m.step);
    return [
      `- ${m.step} (${m.title}): ${m.request}`,
      ...m.lines.map((l) => `    ${l}`),
      `    ${a.side}: ${x?.status ?? '-'} ${clip(x?.text ?? '')}`,
      `    ${b.side}: ${y?.status ?? '-'} ${clip(y?.text ?? '')}`,
    ].join('\n');
  });
  return `${mismatches.length} step(s) differ (${a.side} = expected, ${b.side} = got):\n${parts.join('\n')}`;
}

/** For debugging a shape. */
export function describeShape(s: Shape): string {
  return inspect(s, { depth: 8, breakLength: 120 });
}
