/**
 * The Schema Registry adapter: `SchemaResolver` and `SchemaRegistrar` (registry-port.ts) over the HTTP API
 * client of `@kafkajs/confluent-schema-registry` (the user named this package). We use only its API client —
 * `GET /schemas/ids/{id}` and `GET /subjects/{s}/versions/{v}` for references, `POST /subjects/{s}/versions`
 * to register (the data generator) — and never its encoders or decoders: decoding is ours and columnar
 * (avro-decoder.ts, protobuf-decoder.ts).
 *
 * Owns: registry settings from a converter's `value.converter.*` keys (prefix stripped), auth (basic from
 * `basic.auth.user.info` or the URL's user info, bearer from `bearer.auth.token`), per-request timeouts, a
 * cache of answers by id (ids are immutable), failover over a comma-separated URL list, and the one
 * translation of the client's failures into our error classes:
 * - unreachable, timed out, 5xx, 408/429 (and the client's status 400, which is how mappersmith reports a
 *   connection failure) → RetriableError: never DLQ'd, the task retries;
 * - 401/403 → ConfigError (credentials are a configuration, and retrying will not fix them);
 * - 404 on an id → an UNKNOWN ID. Architecture: "an unknown schema id until the registry confirms it" is
 *   retried. The registry confirms it when (a) the same registry answers a sanity request (`GET /subjects`)
 *   at the same base URL — so a wrong path (Apicurio needs `/apis/ccompat/v7`) is a ConfigError, not a flood
 *   of bad records — and (b) the id is still unknown after `unknownIdGraceMs` (default 60 s) since its first
 *   404, which covers a follower registry that has not yet read what the producer registered on the leader.
 *   Until then: RetriableError; after: DataError (the record follows errors.tolerance). Nothing negative is
 *   cached: a later success wins.
 * - an answer that is not a schema → DataError.
 * Registering: 409 (the subject's compatibility rule rejects the schema), 422 (the registry cannot parse
 * it) and 404 (the base URL is not a registry) → ConfigError; the rest as above.
 * Secrets never appear in errors or logs: messages name the URL without its user info and never the
 * configured credentials; the cause kept is the client's error (status, method and URL path only).
 * Must not: parse schemas, or be imported by anything but app.ts and tests (layering).
 */
import type { SchemaRegistryAPIClientArgs } from '@kafkajs/confluent-schema-registry/dist/api/index.js';
import apiModule from '@kafkajs/confluent-schema-registry/dist/api/index.js';
import { ConfigError, DataError, IcefloeError, RetriableError } from '../../core/errors.ts';
import type { RegisteredSchema, ResolvedReference, SchemaRegistrar, SchemaResolver, SchemaToRegister, SchemaType } from '../registry-port.ts';

export type RegistryAuth =
  | { readonly kind: 'basic'; readonly username: string; readonly password: string }
  | { readonly kind: 'bearer'; readonly token: string };

export interface SchemaRegistryOptions {
  /** Base URLs, tried in order on a retriable failure; a path is kept (`http://h:8081/apis/ccompat/v7`). */
  readonly urls: readonly string[];
  readonly auth?: RegistryAuth;
  /** Per HTTP request (default 10 s: shorter than Confluent's 60 s because a hung registry holds a cycle). */
  readonly requestTimeoutMs?: number;
  /** The client's own retries of 5xx answers before we see the failure (default 1). */
  readonly retries?: number;
  /** How long an id may stay unknown (404) before it is a DataError (default 60 s). */
  readonly unknownIdGraceMs?: number;
  /** Clock for the grace window (tests). */
  readonly now?: () => number;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
export const DEFAULT_UNKNOWN_ID_GRACE_MS = 60_000;

/**
 * Registry settings from a converter's settings with the `value.converter.` (or `key.converter.`) prefix
 * stripped — what config/converters.ts keeps as `props`. Keys (Confluent's names, plus two of ours):
 * `schema.registry.url` (comma-separated), `basic.auth.credentials.source` (`URL` — Confluent's default —
 * or `USER_INFO`; `SASL_INHERIT` is not supported), `basic.auth.user.info` (`user:password`; also the
 * older `schema.registry.basic.auth.user.info`), `bearer.auth.credentials.source` (`STATIC_TOKEN`),
 * `bearer.auth.token`, `http.read.timeout.ms`, and ours: `icefloe.registry.request-timeout-ms` (wins over
 * the former), `icefloe.registry.unknown-id-grace-ms`. ConfigError names the key, never its value.
 */
export function registryOptionsFromConverterProps(props: Readonly<Record<string, string>>, prefix = 'value.converter.'): SchemaRegistryOptions {
  const key = (k: string): string => `${prefix}${k}`;
  const rawUrls = (props['schema.registry.url'] ?? '').split(',').map((u) => u.trim()).filter((u) => u !== '');
  if (rawUrls.length === 0) throw new ConfigError(`${key('schema.registry.url')} is required`);
  let urlAuth: RegistryAuth | undefined;
  const urls = rawUrls.map((u) => {
    let parsed: URL;
    try {
      parsed = new URL(u);
    } catch {
      throw new ConfigError(`${key('schema.registry.url')} has an entry that is not a URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`${key('schema.registry.url')} must be http(s)`);
    if (parsed.username !== '' && urlAuth === undefined) {
      urlAuth = { kind: 'basic', username: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) };
    }
    return stripUserInfo(parsed);
  });

  let auth: RegistryAuth | undefined;
  const userInfo = props['basic.auth.user.info'] ?? props['schema.registry.basic.auth.user.info'];
  const basicSource = (props['basic.auth.credentials.source'] ?? '').trim().toUpperCase();
  if (basicSource === 'USER_INFO' || (basicSource === '' && userInfo !== undefined && userInfo !== '')) {
    if (userInfo === undefined || !userInfo.includes(':')) {
      throw new ConfigError(`${key('basic.auth.user.info')} must be user:password when ${key('basic.auth.credentials.source')} is USER_INFO`);
    }
    const colon = userInfo.indexOf(':');
    auth = { kind: 'basic', username: userInfo.slice(0, colon), password: userInfo.slice(colon + 1) };
  } else if (basicSource === 'URL' || basicSource === '') {
    auth = urlAuth;
  } else {
    throw new ConfigError(`${key('basic.auth.credentials.source')}: ${basicSource} is not supported (URL or USER_INFO)`);
  }
  const bearerSource = (props['bearer.auth.credentials.source'] ?? '').trim().toUpperCase();
  const token = props['bearer.auth.token'];
  if (bearerSource !== '' || (token !== undefined && token !== '')) {
    if (bearerSource !== '' && bearerSource !== 'STATIC_TOKEN') {
      throw new ConfigError(`${key('bearer.auth.credentials.source')}: ${bearerSource} is not supported (STATIC_TOKEN)`);
    }
    if (token === undefined || token === '') throw new ConfigError(`${key('bearer.auth.token')} is required with bearer auth`);
    if (auth !== undefined && basicSource !== '') throw new ConfigError(`set either basic auth or bearer auth for the schema registry, not both`);
    auth = { kind: 'bearer', token };
  }

  const ms = (k: string): number | undefined => {
    const v = props[k];
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${key(k)} must be a non-negative integer (milliseconds)`);
    return n;
  };
  const timeout = ms('icefloe.registry.request-timeout-ms') ?? ms('http.read.timeout.ms');
  const grace = ms('icefloe.registry.unknown-id-grace-ms');
  return {
    urls,
    ...(auth === undefined ? {} : { auth }),
    ...(timeout === undefined ? {} : { requestTimeoutMs: timeout }),
    ...(grace === undefined ? {} : { unknownIdGraceMs: grace }),
  };
}

function stripUserInfo(u: URL): string {
  const copy = new URL(u.href);
  copy.username = '';
  copy.password = '';
  return copy.href.replace(/\/+$/, '');
}

type ApiClient = ReturnType<typeof apiModule.default>;
type ApiMiddleware = NonNullable<SchemaRegistryAPIClientArgs['middlewares']>[number];

/** mappersmith Response: what the API client's calls resolve to. */
interface ApiResponse {
  data(): unknown;
}

interface Endpoint {
  readonly url: string;
  readonly api: ApiClient;
}

const SCHEMA_TYPES = new Set<string>(['AVRO', 'PROTOBUF', 'JSON']);

/**
 * The Schema Registry resolver. `byId` answers from the cache when it can; concurrent requests for one id
 * share one fetch; failures are never cached. It also registers schemas (`register`), for the generator.
 */
export class ConfluentSchemaResolver implements SchemaResolver, SchemaRegistrar {
  private readonly endpoints: readonly Endpoint[];
  private readonly timeoutMs: number;
  private readonly graceMs: number;
  private readonly now: () => number;
  private readonly cache = new Map<number, RegisteredSchema>();
  private readonly pending = new Map<number, Promise<RegisteredSchema>>();
  private readonly references = new Map<string, Promise<{ type: SchemaType; schema: string; refs: RawReference[] }>>();
  /** First time each id was answered 404 (the grace window's start). */
  private readonly unknownSince = new Map<number, number>();
  private preferred = 0;
  /** Requests sent (tests check cache hits with it). */
  requests = 0;

  constructor(options: SchemaRegistryOptions) {
    if (options.urls.length === 0) throw new ConfigError('schema registry: no URL');
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.graceMs = options.unknownIdGraceMs ?? DEFAULT_UNKNOWN_ID_GRACE_MS;
    this.now = options.now ?? Date.now;
    const auth = options.auth;
    const middlewares: ApiMiddleware[] = [];
    if (auth?.kind === 'bearer') {
      const header = `Bearer ${auth.token}`;
      middlewares.push(() => ({
        async prepareRequest(next) {
          const request = await next();
          return request.enhance({ headers: { authorization: header } });
        },
      }));
    }
    const retries = options.retries ?? 1;
    this.endpoints = options.urls.map((url) => {
      const clean = stripUserInfo(new URL(url));
      const args: SchemaRegistryAPIClientArgs = {
        host: clean,
        clientId: 'icefloe',
        retry: { retries, maxRetryTimeInSecs: 2, initialRetryTimeInSecs: 0.1 },
        middlewares,
        ...(auth?.kind === 'basic' ? { auth: { username: auth.username, password: auth.password } } : {}),
      };
      return { url: clean, api: apiModule.default(args) };
    });
  }

  /** The cached answer for an id, if any (no request). */
  cached(id: number): RegisteredSchema | undefined {
    return this.cache.get(id);
  }

  async byId(id: number): Promise<RegisteredSchema> {
    const hit = this.cache.get(id);
    if (hit !== undefined) return hit;
    if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new DataError(`schema id ${id} is not a registry id`, { stage: 'deserialize', context: { schemaId: id } });
    let p = this.pending.get(id);
    if (p === undefined) {
      p = this.fetchById(id);
      this.pending.set(id, p);
      const clear = (): void => {
        this.pending.delete(id);
      };
      p.then(clear, clear);
    }
    return p;
  }

  private async fetchById(id: number): Promise<RegisteredSchema> {
    const what = `schema id ${id}`;
    let body: unknown;
    try {
      body = await this.call(what, (api) => api.Schema.find({ id, timeout: this.timeoutMs }) as Promise<ApiResponse>);
    } catch (e) {
      if (e instanceof UnknownAnswer) throw await this.unknownId(id, e.endpoint, e.cause);
      throw e;
    }
    this.unknownSince.delete(id);
    const { type, schema, refs } = parseAnswer(body, what);
    const references = refs.length === 0 ? [] : await this.resolveReferences(refs, new Set());
    const out: RegisteredSchema = references.length === 0 ? { id, type, schema } : { id, type, schema, references };
    this.cache.set(id, out);
    return out;
  }

  /**
   * Registers a schema under a subject and returns its global id; the same schema again returns the same id
   * (the registry's rule, so repeated runs of the generator share one id). Nothing is cached: the registry
   * is the only judge of compatibility.
   */
  async register(subject: string, toRegister: SchemaToRegister): Promise<number> {
    if (subject === '') throw new ConfigError('a schema registry subject may not be empty');
    const what = `the ${toRegister.type} schema of subject ${subject}`;
    const refs = toRegister.references ?? [];
    const body = {
      schema: toRegister.schema,
      // Confluent's API: an absent schemaType means AVRO (older registries reject the field for Avro).
      ...(toRegister.type === 'AVRO' ? {} : { schemaType: toRegister.type }),
      ...(refs.length === 0 ? {} : { references: refs.map((r) => ({ name: r.name, subject: r.subject, version: r.version })) }),
    };
    let answer: unknown;
    try {
      answer = await this.call(what, (api) => api.Subject.register({ subject, body, timeout: this.timeoutMs }) as Promise<ApiResponse>, 'registering');
    } catch (e) {
      if (e instanceof UnknownAnswer) {
        throw new ConfigError(`the schema registry URL ${e.endpoint.url} answered 404 registering ${what}: check schema.registry.url (Apicurio: …/apis/ccompat/v7)`, {
          cause: e.cause,
          context: { registry: e.endpoint.url, subject },
        });
      }
      const status = e instanceof IcefloeError ? e.context['status'] : undefined;
      if (status === 409 || status === 422) {
        const reason = status === 409 ? 'is incompatible with the versions the subject already has' : 'is not a valid schema to the registry';
        const said = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : '';
        throw new ConfigError(`registering ${what} failed: it ${reason} (HTTP ${status})${said}`, { cause: (e as Error).cause, context: { subject, status } });
      }
      throw e;
    }
    const id = typeof answer === 'object' && answer !== null ? (answer as Record<string, unknown>)['id'] : undefined;
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) {
      throw new ConfigError(`the schema registry's answer to registering ${what} carries no schema id: is the URL a Confluent-API registry?`, { context: { subject } });
    }
    return id;
  }

  /** Every reference, transitively, dependencies first and each once. */
  private async resolveReferences(refs: readonly RawReference[], seen: Set<string>): Promise<ResolvedReference[]> {
    const out: ResolvedReference[] = [];
    for (const ref of refs) {
      const key = `${ref.subject}\u0000${ref.version}`;
      if (seen.has(key)) continue;
      seen.add(key);
      let p = this.references.get(key);
      if (p === undefined) {
        p = this.fetchVersion(ref);
        this.references.set(key, p);
        p.catch(() => this.references.delete(key));
      }
      const got = await p;
      out.push(...(await this.resolveReferences(got.refs, seen)));
      out.push({ name: ref.name, subject: ref.subject, version: ref.version, type: got.type, schema: got.schema });
    }
    return out;
  }

  private async fetchVersion(ref: RawReference): Promise<{ type: SchemaType; schema: string; refs: RawReference[] }> {
    const what = `referenced schema ${ref.subject} version ${ref.version}`;
    let body: unknown;
    try {
      body = await this.call(what, (api) => api.Subject.version({ subject: ref.subject, version: ref.version, timeout: this.timeoutMs }) as Promise<ApiResponse>);
    } catch (e) {
      // A schema that references a subject version the registry does not have cannot be resolved later either.
      if (e instanceof UnknownAnswer) throw new DataError(`${what} is unknown to the registry at ${e.endpoint.url}`, { stage: 'deserialize', cause: e.cause });
      throw e;
    }
    return parseAnswer(body, what);
  }

  /** A request with failover across the URLs; 404 comes back as UnknownAnswer, everything else translated. */
  private async call(what: string, request: (api: ApiClient) => Promise<ApiResponse>, doing = 'fetching'): Promise<unknown> {
    let last: IcefloeError | undefined;
    const n = this.endpoints.length;
    for (let k = 0; k < n; k++) {
      const i = (this.preferred + k) % n;
      const endpoint = this.endpoints[i] as Endpoint;
      this.requests++;
      try {
        const response = await request(endpoint.api);
        this.preferred = i;
        return response.data();
      } catch (e) {
        const status = statusOf(e);
        if (status === 404) throw new UnknownAnswer(endpoint, e);
        const translated = translate(e, status, `${doing} ${what}`, endpoint.url);
        if (!translated.retriable) throw translated;
        last = translated;
      }
    }
    throw last ?? new RetriableError(`schema registry unreachable ${doing} ${what}`);
  }

  /** A 404 on an id: ConfigError if the base URL is not a registry, Retriable within the grace window, then DataError. */
  private async unknownId(id: number, endpoint: Endpoint, cause: unknown): Promise<IcefloeError> {
    const context = { schemaId: id, registry: endpoint.url };
    try {
      this.requests++;
      await (endpoint.api.Subject.all({ timeout: this.timeoutMs }) as Promise<ApiResponse>);
    } catch (e) {
      const status = statusOf(e);
      if (status === 404) {
        return new ConfigError(`the schema registry URL ${endpoint.url} does not serve the Confluent API (404 on /subjects): check schema.registry.url (Apicurio: …/apis/ccompat/v7)`, {
          cause: e,
          context,
        });
      }
      return translate(e, status, `fetching schema id ${id}`, endpoint.url);
    }
    const now = this.now();
    const since = this.unknownSince.get(id) ?? now;
    this.unknownSince.set(id, since);
    const waited = now - since;
    if (waited < this.graceMs) {
      return new RetriableError(`schema id ${id} is unknown to the registry at ${endpoint.url} (retrying for up to ${this.graceMs} ms in case it is still propagating)`, {
        cause,
        context: { ...context, unknownForMs: waited },
      });
    }
    return new DataError(`schema id ${id} is unknown to the registry at ${endpoint.url} (confirmed: still unknown after ${waited} ms)`, { stage: 'deserialize',
      cause,
      context: { ...context, unknownForMs: waited },
    });
  }
}

class UnknownAnswer extends Error {
  readonly endpoint: Endpoint;
  constructor(endpoint: Endpoint, cause: unknown) {
    super('404', { cause });
    this.endpoint = endpoint;
  }
}

interface RawReference {
  readonly name: string;
  readonly subject: string;
  readonly version: number;
}

function statusOf(e: unknown): number | undefined {
  if (typeof e === 'object' && e !== null && 'status' in e && typeof e.status === 'number') return e.status;
  return undefined;
}

/** `doingWhat`: the request in words, such as `fetching schema id 5`. */
function translate(e: unknown, status: number | undefined, doingWhat: string, url: string): IcefloeError {
  const context = { registry: url, ...(status === undefined ? {} : { status }) };
  if (status === 401 || status === 403) {
    return new ConfigError(`the schema registry at ${url} refused our credentials (HTTP ${status}) ${doingWhat}: check basic.auth.* / bearer.auth.*`, { cause: e, context });
  }
  // mappersmith reports connection failures and time-outs as status 400; a registry has no 400 for a GET by id.
  const how = status === undefined || status === 400 ? 'unreachable' : `answered HTTP ${status}`;
  return new RetriableError(`schema registry at ${url} ${how} ${doingWhat}`, { cause: e, context });
}

function parseAnswer(body: unknown, what: string): { type: SchemaType; schema: string; refs: RawReference[] } {
  if (typeof body !== 'object' || body === null) throw new DataError(`the registry's answer for ${what} is not a schema`, { stage: 'deserialize' });
  const o = body as Record<string, unknown>;
  const schema = o['schema'];
  if (typeof schema !== 'string') throw new DataError(`the registry's answer for ${what} has no schema text`, { stage: 'deserialize' });
  const t = o['schemaType'] ?? 'AVRO';
  if (typeof t !== 'string' || !SCHEMA_TYPES.has(t)) throw new DataError(`the registry's answer for ${what} has an unknown schemaType`, { stage: 'deserialize' });
  const refs: RawReference[] = [];
  const rawRefs = o['references'];
  if (Array.isArray(rawRefs)) {
    for (const r of rawRefs as unknown[]) {
      const ro = (typeof r === 'object' && r !== null ? r : {}) as Record<string, unknown>;
      const name = ro['name'];
      const subject = ro['subject'];
      const version = ro['version'];
      if (typeof name !== 'string' || typeof subject !== 'string' || typeof version !== 'number') {
        throw new DataError(`the registry's answer for ${what} has a malformed reference`, { stage: 'deserialize' });
      }
      refs.push({ name, subject, version });
    }
  }
  return { type: t as SchemaType, schema, refs };
}
