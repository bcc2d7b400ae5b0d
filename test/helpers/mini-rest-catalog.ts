/**
 * A small in-process Iceberg REST catalog for unit tests of the REST client: the calls our client makes,
 * implemented over the Iceberg model (create = newTableMetadata, commit = commitUpdates, so requirement
 * failures answer 409 as a real server does), plus hooks to answer anything else: a status, a reset
 * socket, no answer at all. Every request is recorded (method, path, query, headers, body).
 *
 * It is a fake for the client's own logic; the real protocol is tested against the Apache fixture in
 * test/integration/catalog-rest.test.ts.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { IcefloeError } from '../../src/core/errors.ts';
import { parseJson, stringifyJson } from '../../src/core/json.ts';
import { newTableMetadata } from '../../src/iceberg/metadata.ts';
import { tableMetadataToJson } from '../../src/iceberg/metadata-json.ts';
import type { TableMetadata } from '../../src/iceberg/metadata.ts';
import { partitionSpecFromJson } from '../../src/iceberg/partition-spec.ts';
import { schemaFromJson } from '../../src/iceberg/schema.ts';
import { commitUpdates } from '../../src/iceberg/apply-updates.ts';
import { commitRequestFromJson } from '../../src/iceberg/updates.ts';

export interface RecordedRequest {
  method: string;
  /** Raw path as received (still percent-encoded), without the query. */
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}

/** What a hook does with a request it takes: answer it, reset the socket, or never answer. */
export type HookAction = { status: number; body?: unknown; headers?: Record<string, string> } | 'reset' | 'hang';

export interface Hook {
  method?: string;
  /** Tested against the raw path. */
  path?: RegExp;
  /** How many requests it takes (default 1). */
  times?: number;
  action: HookAction | ((req: RecordedRequest) => HookAction | undefined);
}

export interface MiniRestOptions {
  /** `/v1/config` answer fields. */
  defaults?: Record<string, string>;
  overrides?: Record<string, string>;
  endpoints?: string[];
  idempotencyKeyLifetime?: string;
  /** Checks every request first; answer a status to refuse it (e.g. signature or token checks). */
  authorize?: (req: RecordedRequest) => HookAction | undefined;
  /** Page size for list calls (default: everything at once). */
  pageSize?: number;
}

export class MiniRestCatalog {
  readonly requests: RecordedRequest[] = [];
  readonly hooks: Hook[] = [];
  readonly tables = new Map<string, { metadata: TableMetadata; location: string }>();
  readonly namespaces = new Map<string, Record<string, string>>();
  readonly #options: MiniRestOptions;
  #server: Server | undefined;
  #hanging: ServerResponse[] = [];
  uri = '';

  constructor(options: MiniRestOptions = {}) {
    this.#options = options;
  }

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void this.#handle(req, Buffer.concat(chunks).toString('utf8'), res);
      });
    });
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve));
    this.uri = `http://127.0.0.1:${(this.#server?.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const r of this.#hanging) r.destroy();
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  /** Requests to the catalog API (not /v1/config, not the token endpoint). */
  apiRequests(): RecordedRequest[] {
    return this.requests.filter((r) => !r.path.endsWith('/v1/config') && !r.path.endsWith('/oauth/tokens'));
  }

  async #handle(req: IncomingMessage, body: string, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
    const rec: RecordedRequest = { method: req.method ?? 'GET', path: rawPath, query: url.searchParams, headers: req.headers, body };
    this.requests.push(rec);
    const act = (a: HookAction): void => {
      if (a === 'reset') {
        req.socket.destroy();
        return;
      }
      if (a === 'hang') {
        this.#hanging.push(res);
        return;
      }
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end(a.body === undefined ? '' : typeof a.body === 'string' ? a.body : stringifyJson(a.body));
    };
    const denied = this.#options.authorize?.(rec);
    if (denied !== undefined) return act(denied);
    for (const h of this.hooks) {
      if ((h.times ?? 1) <= 0) continue;
      if (h.method !== undefined && h.method !== rec.method) continue;
      if (h.path !== undefined && !h.path.test(rawPath)) continue;
      const a = typeof h.action === 'function' ? h.action(rec) : h.action;
      if (a === undefined) continue;
      h.times = (h.times ?? 1) - 1;
      return act(a);
    }
    try {
      act(this.#route(rec));
    } catch (e) {
      const status = e instanceof IcefloeError && e.code === 'COMMIT_CONFLICT' ? 409 : e instanceof IcefloeError ? 400 : 500;
      const type = status === 409 ? 'CommitFailedException' : status === 400 ? 'BadRequestException' : 'ServerError';
      act({ status, body: { error: { message: (e as Error).message, type, code: status } } });
    }
  }

  #route(r: RecordedRequest): HookAction {
    const notFound = (type: string, message: string): HookAction => ({ status: 404, body: { error: { message, type, code: 404 } } });
    if (r.path === '/v1/config') {
      const body: Record<string, unknown> = { defaults: this.#options.defaults ?? {}, overrides: this.#options.overrides ?? {} };
      if (this.#options.endpoints !== undefined) body['endpoints'] = this.#options.endpoints;
      if (this.#options.idempotencyKeyLifetime !== undefined) body['idempotency-key-lifetime'] = this.#options.idempotencyKeyLifetime;
      return { status: 200, body };
    }
    const prefix = this.#options.overrides?.['prefix'];
    const base = prefix === undefined ? '/v1' : `/v1/${prefix}`;
    if (!r.path.startsWith(`${base}/`)) return { status: 404, body: { error: { message: `no route ${r.path}`, type: 'NotFound', code: 404 } } };
    const segs = r.path.slice(base.length + 1).split('/').map(decodeURIComponent);
    const page = <T>(items: T[], key: string): HookAction => {
      const size = this.#options.pageSize ?? items.length;
      const start = Number(r.query.get('pageToken') ?? '0');
      const slice = items.slice(start, start + Math.max(size, 1));
      const next = start + slice.length < items.length ? String(start + slice.length) : null;
      return { status: 200, body: { [key]: slice, 'next-page-token': next } };
    };
    // /namespaces
    if (segs[0] !== 'namespaces') return notFound('NotFound', r.path);
    if (segs.length === 1 && r.method === 'GET') {
      const parent = r.query.get('parent');
      const levels = [...this.namespaces.keys()].map((k) => k.split('\u001f'));
      const want = parent === null ? 1 : parent.split('\u001f').length + 1;
      const children = levels.filter((l) => l.length === want && (parent === null || l.slice(0, -1).join('\u001f') === parent));
      return page(children, 'namespaces');
    }
    if (segs.length === 1 && r.method === 'POST') {
      const b = parseJson(r.body) as { namespace: string[]; properties?: Record<string, string> };
      const key = b.namespace.join('\u001f');
      if (this.namespaces.has(key)) return { status: 409, body: { error: { message: 'exists', type: 'AlreadyExistsException', code: 409 } } };
      this.namespaces.set(key, b.properties ?? {});
      return { status: 200, body: { namespace: b.namespace, properties: b.properties ?? {} } };
    }
    const ns = segs[1] ?? '';
    if (!this.namespaces.has(ns)) return notFound('NoSuchNamespaceException', `Namespace does not exist: ${ns}`);
    if (segs.length === 2) return r.method === 'HEAD' ? { status: 204 } : { status: 200, body: { namespace: ns.split('\u001f'), properties: this.namespaces.get(ns) } };
    if (segs[2] !== 'tables') return notFound('NotFound', r.path);
    if (segs.length === 3 && r.method === 'GET') {
      const names = [...this.tables.keys()].filter((k) => k.startsWith(`${ns}/`)).map((k) => ({ namespace: ns.split('\u001f'), name: k.slice(ns.length + 1) }));
      return page(names, 'identifiers');
    }
    if (segs.length === 3 && r.method === 'POST') {
      const b = parseJson(r.body) as Record<string, unknown>;
      const name = String(b['name']);
      const key = `${ns}/${name}`;
      if (this.tables.has(key)) return { status: 409, body: { error: { message: 'Table already exists', type: 'AlreadyExistsException', code: 409 } } };
      const md = newTableMetadata({
        schema: schemaFromJson(b['schema']),
        ...(b['partition-spec'] === undefined ? {} : { spec: partitionSpecFromJson(b['partition-spec']) }),
        location: typeof b['location'] === 'string' ? b['location'] : `s3://mini/${ns.replaceAll('\u001f', '/')}/${name}`,
        properties: (b['properties'] as Record<string, string> | undefined) ?? {},
        tableUuid: randomUUID(),
        nowMs: Date.now(),
      });
      const location = `${md.location}/metadata/00000-${randomUUID()}.metadata.json`;
      this.tables.set(key, { metadata: md, location });
      return { status: 200, body: { 'metadata-location': location, metadata: tableMetadataToJson(md), config: { 'client.region': 'mini-1' } } };
    }
    const key = `${ns}/${segs[3] ?? ''}`;
    const table = this.tables.get(key);
    if (table === undefined) return notFound('NoSuchTableException', `Table does not exist: ${key}`);
    if (r.method === 'GET' || r.method === 'HEAD') {
      return { status: 200, body: { 'metadata-location': table.location, metadata: tableMetadataToJson(table.metadata), config: { token: 'vended-secret' } } };
    }
    if (r.method === 'DELETE') {
      this.tables.delete(key);
      return { status: 204 };
    }
    if (r.method === 'POST') {
      const request = commitRequestFromJson(parseJson(r.body));
      const { metadata, changed } = commitUpdates(table.metadata, request, { nowMs: Date.now(), metadataLocation: table.location });
      if (changed) {
        const n = Number(/\/(\d+)-/.exec(table.location)?.[1] ?? '0') + 1;
        this.tables.set(key, { metadata, location: `${metadata.location}/metadata/${String(n).padStart(5, '0')}-${randomUUID()}.metadata.json` });
      }
      const now = this.tables.get(key) as { metadata: TableMetadata; location: string };
      return { status: 200, body: { 'metadata-location': now.location, metadata: tableMetadataToJson(now.metadata) } };
    }
    return { status: 405 };
  }
}
