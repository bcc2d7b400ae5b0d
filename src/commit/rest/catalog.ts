/**
 * Catalog adapter for the Apache Iceberg REST catalog protocol (iceberg-writer.md §4.1): the Apache
 * fixture, Polaris, Nessie, Lakekeeper, AWS Glue (`/iceberg`, SigV4 `glue`) and S3 Tables (SigV4
 * `s3tables`), over the built-in fetch.
 *
 * Owns: `GET /v1/config` (defaults → our properties → overrides; `prefix`, `namespace-separator`,
 * `endpoints`, `idempotency-key-lifetime`), request paths, authentication (auth.ts), lossless JSON both
 * ways, and the translation of every answer into the port's error contract, once, here:
 *   commit  409 → CommitConflictError; 5xx, 408, time-out, connection lost after sending →
 *           CommitStateUnknownError; a connection that was never established or 429 → RetriableError
 *           (the request never reached the catalog or was refused before processing); 404 → NoSuchTable;
 *           other 4xx → ConfigError. Never retried here (commit-retry.ts decides, after a reload).
 *   reads   5xx, 408, 429, network, time-out → retried within `readRetry` (core/retry.ts), then RetriableError.
 *   create  409 → AlreadyExists; transient failures → RetriableError (a resend meets 409 if it landed).
 *   401/419 → with OAuth2, the token is dropped and the request sent once more; otherwise ConfigError.
 * Must not: log tokens, keys or a table's vended `config`; request `snapshots=refs` (the committer needs
 * the whole ancestry to find its commit id).
 */
import { randomUUID } from 'node:crypto';
import type {
  IcefloeError} from '../../core/errors.ts';
import {
  CommitConflictError,
  CommitStateUnknownError,
  ConfigError,
  FatalError,
  RetriableError,
} from '../../core/errors.ts';
import { parseJson, stringifyJson } from '../../core/json.ts';
import { checkBounds, retry, systemClock } from '../../core/retry.ts';
import type { RetryBounds, RetryClock } from '../../core/retry.ts';
import {
  UNSORTED_ORDER,
  partitionSpecToJson,
  requirementToJson,
  schemaToJson,
  sortOrderToJson,
  tableMetadataFromJson,
  unpartitionedSpec,
  updateToJson,
} from '../model.ts';
import type { TableRequirement, TableUpdate } from '../model.ts';
import {
  NamespaceAlreadyExistsError,
  NoSuchNamespaceError,
  NoSuchTableError,
  TableAlreadyExistsError,
  formatIdentifier,
} from '../port.ts';
import type { Catalog, CommitOptions, CreateTableRequest, LoadedTable, Namespace, TableIdentifier } from '../port.ts';
import { createAuthenticator } from './auth.ts';
import type { Authenticator, RestAuthConfig } from './auth.ts';

export interface RestCatalogConfig {
  /** Base URI without `/v1`, e.g. http://127.0.0.1:8181 or https://glue.us-east-1.amazonaws.com/iceberg. */
  readonly uri: string;
  /** Our name for the catalog (logs, status). Default `rest`. */
  readonly name?: string;
  /** Sent as `?warehouse=` to /v1/config (S3 Tables: the table bucket ARN; Glue: the account id). */
  readonly warehouse?: string;
  readonly auth?: RestAuthConfig;
  /** Client properties, between the server's defaults and overrides. */
  readonly properties?: Readonly<Record<string, string>>;
  /** Extra headers on every request (e.g. `X-Iceberg-Access-Delegation: vended-credentials`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Per-request time-out (default 30 s: well under the fixture's 2-minute stall when S3 is down). */
  readonly requestTimeoutMs?: number;
  /** Bounds of the retries of a read request (default 3 attempts, waits of 200 ms up to 5 s). */
  readonly readRetry?: Partial<RetryBounds>;
  /** Test seams (`clock` times the retries, `now` the tokens). */
  readonly fetch?: typeof fetch;
  readonly clock?: RetryClock;
  readonly random?: () => number;
  readonly now?: () => number;
}

/** What kind of call: decides how failures translate (see the module header). */
type CallKind = 'read' | 'write' | 'commit';

interface CallOptions {
  readonly kind: CallKind;
  readonly method: 'GET' | 'HEAD' | 'POST' | 'DELETE';
  /** Path below `/v1/{prefix}` (already encoded), or an absolute `/v1/...` path when `raw`. */
  readonly path: string;
  readonly raw?: boolean;
  readonly query?: Readonly<Record<string, string>>;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** Which 404 this call means; `type` is the server's error type (NoSuchTableException, ...). */
  readonly notFound?: (type: string | undefined) => IcefloeError;
  /** What 409 means (commit: conflict; create: already exists). */
  readonly conflict?: (detail: string) => IcefloeError;
  /** Statuses that are answers, not errors (e.g. 404 for an exists check). */
  readonly accept?: readonly number[];
}

interface CallResult {
  readonly status: number;
  readonly body: unknown;
}

interface ServerConfig {
  readonly base: string;
  readonly prefixPath: string;
  readonly separator: string;
  readonly endpoints: ReadonlySet<string> | undefined;
  readonly idempotency: boolean;
  readonly properties: Readonly<Record<string, string>>;
}

/** Errno-style codes of failures that happen before a request is on the wire. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function networkCode(e: unknown): string | undefined {
  for (let cur: unknown = e, depth = 0; typeof cur === 'object' && cur !== null && depth < 5; depth++) {
    const c = (cur as { code?: unknown }).code;
    if (typeof c === 'string') return c;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return out;
  for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = typeof x === 'string' ? x : String(x);
  return out;
}

/** The server's `{"error": {message, type, code}}`, reduced to what we may show. */
function errorDetail(body: unknown, status: number): { text: string; type?: string } {
  const err = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  if (typeof err === 'object' && err !== null) {
    const e = err as { message?: unknown; type?: unknown };
    const type = typeof e.type === 'string' ? e.type : undefined;
    const message = typeof e.message === 'string' ? e.message.slice(0, 500) : '';
    return { text: `${status}${type === undefined ? '' : ` ${type}`}${message === '' ? '' : `: ${message}`}`, ...(type === undefined ? {} : { type }) };
  }
  return { text: String(status) };
}

export class RestCatalog implements Catalog {
  readonly name: string;
  readonly #config: RestCatalogConfig;
  readonly #fetch: typeof fetch;
  readonly #readRetry: RetryBounds;
  readonly #clock: RetryClock;
  readonly #random: () => number;
  readonly #auth: Authenticator;
  readonly #timeoutMs: number;
  #server: Promise<ServerConfig> | undefined;

  constructor(config: RestCatalogConfig) {
    this.name = config.name ?? 'rest';
    this.#config = config;
    this.#fetch = config.fetch ?? fetch;
    this.#readRetry = checkBounds({ maxAttempts: 3, initialDelayMs: 200, maxDelayMs: 5000, totalTimeoutMs: Infinity, ...config.readRetry });
    this.#clock = config.clock ?? systemClock;
    this.#random = config.random ?? Math.random;
    this.#timeoutMs = config.requestTimeoutMs ?? 30_000;
    this.#auth = createAuthenticator(config.auth, {
      baseUri: config.uri,
      fetch: this.#fetch,
      now: config.now ?? Date.now,
      timeoutMs: this.#timeoutMs,
    });
  }

  /** Fetches /v1/config once (again after a failure). Called lazily by every operation. */
  init(): Promise<ServerConfig> {
    this.#server ??= this.#loadConfig().catch((e: unknown) => {
      this.#server = undefined;
      throw e;
    });
    return this.#server;
  }

  /** The merged catalog properties (defaults → ours → overrides), e.g. for the FileIO settings. */
  async properties(): Promise<Readonly<Record<string, string>>> {
    return (await this.init()).properties;
  }

  async #loadConfig(): Promise<ServerConfig> {
    const base = this.#config.uri.replace(/\/+$/, '');
    const query: Record<string, string> = this.#config.warehouse === undefined ? {} : { warehouse: this.#config.warehouse };
    const res = await this.#call({ base, prefixPath: '', separator: '%1F', endpoints: undefined, idempotency: false, properties: {} }, {
      kind: 'read',
      method: 'GET',
      path: '/v1/config',
      raw: true,
      query,
    });
    const body = (typeof res.body === 'object' && res.body !== null ? res.body : {}) as Record<string, unknown>;
    const properties = { ...stringRecord(body['defaults']), ...this.#config.properties, ...stringRecord(body['overrides']) };
    const endpoints = Array.isArray(body['endpoints']) ? new Set(body['endpoints'].filter((x): x is string => typeof x === 'string')) : undefined;
    const prefix = properties['prefix'] ?? '';
    const uriOverride = stringRecord(body['overrides'])['uri'];
    return {
      base: (uriOverride ?? base).replace(/\/+$/, ''),
      // The prefix is a path segment the server chose (S3 Tables: an encoded ARN): used as given.
      prefixPath: prefix === '' ? '' : `/${prefix.replace(/^\/+|\/+$/g, '')}`,
      // Sent URL-encoded (spec: namespace-separator); %1F (the unit separator) by default.
      separator: properties['namespace-separator'] ?? '%1F',
      endpoints,
      idempotency: body['idempotency-key-lifetime'] !== undefined,
      properties,
    };
  }

  #supports(server: ServerConfig, endpoint: string): boolean {
    return server.endpoints?.has(endpoint) ?? false;
  }

  #ns(server: ServerConfig, namespace: Namespace): string {
    if (namespace.length === 0) throw new ConfigError('an empty namespace is not allowed');
    return namespace.map((level) => encodeURIComponent(level)).join(server.separator);
  }

  #tablePath(server: ServerConfig, id: TableIdentifier): string {
    return `/namespaces/${this.#ns(server, id.namespace)}/tables/${encodeURIComponent(id.name)}`;
  }

  /** One logical call: reads retried, auth refreshed once, everything translated. */
  async #call(server: ServerConfig, o: CallOptions): Promise<CallResult> {
    let reauthorized = false;
    const send = async (): Promise<CallResult> => {
      try {
        return await this.#once(server, o);
      } catch (e) {
        if (!(e instanceof AuthRejected)) throw e;
        if (!reauthorized && this.#auth.invalidate()) {
          reauthorized = true;
          return send(); // a fresh token is not a retry of a transient failure
        }
        throw new ConfigError(`REST catalog ${this.name} refused our credentials (${e.status})`, {
          context: { catalog: this.name, status: e.status, path: o.path },
        });
      }
    };
    if (o.kind !== 'read') return send();
    return retry(send, { bounds: this.#readRetry, clock: this.#clock, random: this.#random, retriable: (e) => e instanceof RetriableError });
  }

  async #once(server: ServerConfig, o: CallOptions): Promise<CallResult> {
    const path = o.raw === true ? o.path : `/v1${server.prefixPath}${o.path}`;
    const url = new URL(server.base + path);
    for (const [k, v] of Object.entries(o.query ?? {})) url.searchParams.set(k, v);
    const body = o.body === undefined ? undefined : stringifyJson(o.body);
    const headers: Record<string, string> = { accept: 'application/json', ...this.#config.headers, ...o.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const context = { catalog: this.name, method: o.method, path };
    const auth = await this.#auth.headers({ method: o.method, url, headers, ...(body === undefined ? {} : { body }) });
    let res: Response;
    let text: string;
    try {
      res = await this.#fetch(url, {
        method: o.method,
        headers: { ...headers, ...auth },
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      text = o.method === 'HEAD' ? '' : await res.text();
    } catch (e) {
      const code = networkCode(e);
      const notSent = code !== undefined && NOT_SENT_CODES.has(code);
      const ctx = { ...context, ...(code === undefined ? {} : { errno: code }) };
      if (o.kind === 'commit' && !notSent) {
        throw new CommitStateUnknownError(`commit to REST catalog ${this.name} lost its answer (${code ?? 'time-out'}): outcome unknown`, {
          cause: e,
          context: ctx,
        });
      }
      throw new RetriableError(`REST catalog ${this.name} is not reachable (${code ?? 'time-out'})`, { cause: e, context: ctx });
    }
    const status = res.status;
    let parsed: unknown = undefined;
    if (text !== '') {
      try {
        parsed = parseJson(text);
      } catch (e) {
        if (status >= 200 && status < 300) {
          if (o.kind === 'commit') {
            throw new CommitStateUnknownError(`REST catalog ${this.name} answered a commit with something that is not JSON`, { cause: e, context });
          }
          throw new FatalError(`REST catalog ${this.name} answered something that is not JSON`, { cause: e, context });
        }
      }
    }
    if ((status >= 200 && status < 300) || o.accept?.includes(status) === true) return { status, body: parsed };
    const detail = errorDetail(parsed, status);
    const ctx = { ...context, status, ...(detail.type === undefined ? {} : { errorType: detail.type }) };
    if (status === 401 || status === 419) throw new AuthRejected(status);
    if (status === 409 && o.conflict !== undefined) throw o.conflict(detail.text);
    if (status === 404 && o.notFound !== undefined) throw o.notFound(detail.type);
    if (o.kind === 'commit') {
      if (status >= 500 || status === 408) {
        throw new CommitStateUnknownError(`REST catalog ${this.name} answered the commit with ${detail.text}: outcome unknown`, { context: ctx });
      }
      if (status === 429) throw new RetriableError(`REST catalog ${this.name} is throttling commits (${detail.text})`, { context: ctx });
      throw new ConfigError(`REST catalog ${this.name} refused the commit: ${detail.text}`, { context: ctx });
    }
    if (status >= 500 || status === 408 || status === 429) {
      throw new RetriableError(`REST catalog ${this.name} answered ${detail.text}`, { context: ctx });
    }
    throw new ConfigError(`REST catalog ${this.name} refused ${o.method} ${path}: ${detail.text}`, { context: ctx });
  }

  #loaded(id: TableIdentifier, body: unknown, config: Record<string, string>): LoadedTable {
    const o = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const location = o['metadata-location'];
    if (typeof location !== 'string') throw new FatalError(`REST catalog ${this.name} answered no metadata-location for ${formatIdentifier(id)}`);
    return { identifier: id, metadataLocation: location, metadata: tableMetadataFromJson(o['metadata']), config };
  }

  async listNamespaces(parent?: Namespace): Promise<Namespace[]> {
    const server = await this.init();
    const out: Namespace[] = [];
    let pageToken: string | undefined;
    do {
      const query: Record<string, string> = {};
      if (parent !== undefined && parent.length > 0) query['parent'] = parent.join(decodeURIComponent(server.separator));
      if (pageToken !== undefined) query['pageToken'] = pageToken;
      const res = await this.#call(server, {
        kind: 'read',
        method: 'GET',
        path: '/namespaces',
        query,
        notFound: () => new NoSuchNamespaceError(parent ?? []),
      });
      const body = (res.body ?? {}) as { namespaces?: unknown; 'next-page-token'?: unknown };
      for (const ns of Array.isArray(body.namespaces) ? body.namespaces : []) {
        if (Array.isArray(ns)) out.push(ns.map(String));
      }
      pageToken = typeof body['next-page-token'] === 'string' && body['next-page-token'] !== '' ? body['next-page-token'] : undefined;
    } while (pageToken !== undefined);
    return out;
  }

  async namespaceExists(namespace: Namespace): Promise<boolean> {
    const server = await this.init();
    const head = this.#supports(server, 'HEAD /v1/{prefix}/namespaces/{namespace}');
    const res = await this.#call(server, {
      kind: 'read',
      method: head ? 'HEAD' : 'GET',
      path: `/namespaces/${this.#ns(server, namespace)}`,
      accept: [404],
    });
    return res.status !== 404;
  }

  async createNamespace(namespace: Namespace, properties: Readonly<Record<string, string>> = {}): Promise<void> {
    const server = await this.init();
    await this.#call(server, {
      kind: 'write',
      method: 'POST',
      path: '/namespaces',
      body: { namespace: [...namespace], properties: { ...properties } },
      conflict: () => new NamespaceAlreadyExistsError(namespace),
    });
  }

  async listTables(namespace: Namespace): Promise<TableIdentifier[]> {
    const server = await this.init();
    const out: TableIdentifier[] = [];
    let pageToken: string | undefined;
    do {
      const res = await this.#call(server, {
        kind: 'read',
        method: 'GET',
        path: `/namespaces/${this.#ns(server, namespace)}/tables`,
        query: pageToken === undefined ? {} : { pageToken },
        notFound: () => new NoSuchNamespaceError(namespace),
      });
      const body = (res.body ?? {}) as { identifiers?: unknown; 'next-page-token'?: unknown };
      for (const ident of Array.isArray(body.identifiers) ? body.identifiers : []) {
        const i = ident as { namespace?: unknown; name?: unknown };
        if (Array.isArray(i.namespace) && typeof i.name === 'string') out.push({ namespace: i.namespace.map(String), name: i.name });
      }
      pageToken = typeof body['next-page-token'] === 'string' && body['next-page-token'] !== '' ? body['next-page-token'] : undefined;
    } while (pageToken !== undefined);
    return out;
  }

  async tableExists(id: TableIdentifier): Promise<boolean> {
    const server = await this.init();
    const head = this.#supports(server, 'HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}');
    const res = await this.#call(server, { kind: 'read', method: head ? 'HEAD' : 'GET', path: this.#tablePath(server, id), accept: [404] });
    return res.status !== 404;
  }

  async createTable(id: TableIdentifier, request: CreateTableRequest): Promise<LoadedTable> {
    const server = await this.init();
    const body: Record<string, unknown> = {
      name: id.name,
      schema: schemaToJson(request.schema),
      'partition-spec': partitionSpecToJson(request.partitionSpec ?? unpartitionedSpec(0)),
      'write-order': sortOrderToJson(request.sortOrder ?? UNSORTED_ORDER),
      properties: { ...request.properties },
      'stage-create': false,
    };
    if (request.location !== undefined) body['location'] = request.location;
    const res = await this.#call(server, {
      kind: 'write',
      method: 'POST',
      path: `/namespaces/${this.#ns(server, id.namespace)}/tables`,
      body,
      conflict: () => new TableAlreadyExistsError(id),
      notFound: () => new NoSuchNamespaceError(id.namespace),
    });
    return this.#loaded(id, res.body, stringRecord((res.body as { config?: unknown } | undefined)?.config));
  }

  async loadTable(id: TableIdentifier): Promise<LoadedTable> {
    const server = await this.init();
    const res = await this.#call(server, {
      kind: 'read',
      method: 'GET',
      path: this.#tablePath(server, id),
      notFound: (type) => missing(id, type),
    });
    return this.#loaded(id, res.body, stringRecord((res.body as { config?: unknown } | undefined)?.config));
  }

  async commitTable(
    id: TableIdentifier,
    requirements: readonly TableRequirement[],
    updates: readonly TableUpdate[],
    options: CommitOptions = {},
  ): Promise<LoadedTable> {
    const server = await this.init();
    const headers: Record<string, string> = {};
    // Only where the server promises to honour it (spec: idempotency-key-lifetime); a UUIDv7 per request.
    if (server.idempotency) headers['idempotency-key'] = options.idempotencyKey ?? uuidV7(Date.now());
    const res = await this.#call(server, {
      kind: 'commit',
      method: 'POST',
      path: this.#tablePath(server, id),
      headers,
      body: {
        identifier: { namespace: [...id.namespace], name: id.name },
        requirements: requirements.map(requirementToJson),
        updates: updates.map(updateToJson),
      },
      conflict: (detail) =>
        new CommitConflictError(`commit to ${formatIdentifier(id)} conflicted: ${detail}`, { context: { table: formatIdentifier(id) } }),
      notFound: (type) => missing(id, type),
    });
    return this.#loaded(id, res.body, {});
  }

  async dropTable(id: TableIdentifier): Promise<void> {
    const server = await this.init();
    await this.#call(server, {
      kind: 'write',
      method: 'DELETE',
      path: this.#tablePath(server, id),
      query: { purgeRequested: 'false' },
      notFound: (type) => missing(id, type),
    });
  }

  async close(): Promise<void> {}
}

/** A 404 on a table path: the server's error type says whether the namespace or the table is missing. */
function missing(id: TableIdentifier, type: string | undefined): IcefloeError {
  return type === 'NoSuchNamespaceException' ? new NoSuchNamespaceError(id.namespace) : new NoSuchTableError(id);
}

/** Raised inside #once for 401/419 so that #call can refresh credentials once. */
class AuthRejected extends Error {
  readonly status: number;
  constructor(status: number) {
    super(`authentication rejected (${status})`);
    this.status = status;
  }
}

/** RFC 9562 UUIDv7: 48-bit ms timestamp, version 7, variant 10, random rest. */
export function uuidV7(nowMs: number): string {
  const hex = randomUUID().replaceAll('-', '');
  const ts = nowMs.toString(16).padStart(12, '0').slice(-12);
  const v = `${ts}7${hex.slice(13, 16)}${((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 32)}`;
  return `${v.slice(0, 8)}-${v.slice(8, 12)}-${v.slice(12, 16)}-${v.slice(16, 20)}-${v.slice(20, 32)}`;
}
