/**
 * Authentication for the REST catalog: none, a static bearer token, OAuth2 client credentials, or AWS
 * SigV4. Each is an `Authenticator` that answers the headers for one request.
 *
 * OAuth2 (RFC 6749 §4.4, what Iceberg's `credential=id:secret` + `oauth2-server-uri` configure): the token
 * is fetched on first use, cached, refreshed before it expires (`refreshMarginMs`, or half its lifetime
 * when that is shorter), fetched once for concurrent callers, and dropped when the catalog answers 401.
 * Must not: log or put into an error the client secret, the token, or a token response body.
 */
import { ConfigError, RetriableError } from '../../core/errors.ts';
import { parseJson } from '../../core/json.ts';
import { signSigV4 } from './sigv4.ts';
import type { AwsCredentials, AwsCredentialsProvider } from './sigv4.ts';

export type RestAuthConfig =
  | { readonly type: 'none' }
  | { readonly type: 'bearer'; readonly token: string }
  | {
      readonly type: 'oauth2';
      /** Default `<uri>/v1/oauth/tokens` (deprecated in the spec, but what Java and PyIceberg default to). */
      readonly tokenEndpoint?: string;
      readonly clientId: string;
      readonly clientSecret: string;
      /** Default `catalog` (Iceberg's default scope). */
      readonly scope?: string;
      readonly audience?: string;
      readonly resource?: string;
      /** How the client authenticates to the token endpoint (default `body`, as Iceberg's clients do). */
      readonly clientAuth?: 'body' | 'basic';
      /** Refresh this long before expiry (default 60 s). */
      readonly refreshMarginMs?: number;
    }
  | {
      readonly type: 'sigv4';
      readonly region: string;
      /** `glue` (default) or `s3tables`. */
      readonly service?: string;
      readonly credentials: AwsCredentials | AwsCredentialsProvider;
    };

export interface OutgoingRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

export interface Authenticator {
  /** Headers to add to this request. */
  headers(request: OutgoingRequest): Promise<Record<string, string>>;
  /** The catalog answered 401/419: drop cached credentials. True if a resend may succeed. */
  invalidate(): boolean;
}

export interface AuthDeps {
  readonly baseUri: string;
  readonly fetch: typeof fetch;
  readonly now: () => number;
  readonly timeoutMs: number;
}

export function createAuthenticator(config: RestAuthConfig | undefined, deps: AuthDeps): Authenticator {
  switch (config?.type ?? 'none') {
    case 'none':
      return { headers: async () => ({}), invalidate: () => false };
    case 'bearer': {
      const { token } = config as Extract<RestAuthConfig, { type: 'bearer' }>;
      return { headers: async () => ({ authorization: `Bearer ${token}` }), invalidate: () => false };
    }
    case 'oauth2':
      return new OAuth2ClientCredentials(config as Extract<RestAuthConfig, { type: 'oauth2' }>, deps);
    case 'sigv4': {
      const c = config as Extract<RestAuthConfig, { type: 'sigv4' }>;
      return {
        headers: (request) =>
          signSigV4(request, { region: c.region, service: c.service ?? 'glue', credentials: c.credentials }, new Date(deps.now())),
        invalidate: () => false,
      };
    }
  }
}

interface CachedToken {
  readonly token: string;
  /** Epoch ms after which we fetch a new one; Infinity when the server gave no lifetime. */
  readonly refreshAt: number;
}

export class OAuth2ClientCredentials implements Authenticator {
  readonly #config: Extract<RestAuthConfig, { type: 'oauth2' }>;
  readonly #deps: AuthDeps;
  readonly #endpoint: string;
  #cached: CachedToken | undefined;
  #inFlight: Promise<CachedToken> | undefined;
  /** Token requests made so far (for tests and metrics). */
  fetches = 0;

  constructor(config: Extract<RestAuthConfig, { type: 'oauth2' }>, deps: AuthDeps) {
    this.#config = config;
    this.#deps = deps;
    this.#endpoint = config.tokenEndpoint ?? `${deps.baseUri.replace(/\/+$/, '')}/v1/oauth/tokens`;
  }

  async headers(): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.token()}` };
  }

  invalidate(): boolean {
    this.#cached = undefined;
    return true;
  }

  async token(): Promise<string> {
    const cached = this.#cached;
    if (cached !== undefined && this.#deps.now() < cached.refreshAt) return cached.token;
    this.#inFlight ??= this.#fetchToken().finally(() => {
      this.#inFlight = undefined;
    });
    const fresh = await this.#inFlight;
    this.#cached = fresh;
    return fresh.token;
  }

  async #fetchToken(): Promise<CachedToken> {
    const c = this.#config;
    const form = new URLSearchParams({ grant_type: 'client_credentials', scope: c.scope ?? 'catalog' });
    if (c.audience !== undefined) form.set('audience', c.audience);
    if (c.resource !== undefined) form.set('resource', c.resource);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    if (c.clientAuth === 'basic') {
      const enc = (s: string): string => encodeURIComponent(s);
      headers['authorization'] = `Basic ${Buffer.from(`${enc(c.clientId)}:${enc(c.clientSecret)}`).toString('base64')}`;
    } else {
      form.set('client_id', c.clientId);
      form.set('client_secret', c.clientSecret);
    }
    const context = { tokenEndpoint: this.#endpoint, clientId: c.clientId };
    this.fetches++;
    const started = this.#deps.now();
    let res: Response;
    try {
      res = await this.#deps.fetch(this.#endpoint, {
        method: 'POST',
        headers,
        body: form.toString(),
        signal: AbortSignal.timeout(this.#deps.timeoutMs),
      });
    } catch (e) {
      throw new RetriableError(`OAuth2 token endpoint ${this.#endpoint} is not reachable`, { cause: e, context });
    }
    const text = await res.text().catch(() => '');
    if (!res.ok) {
      // RFC 6749 §5.2: `error` is a code such as invalid_client; never echo the rest of the body.
      let code: string | undefined;
      try {
        const body = parseJson(text) as { error?: unknown };
        if (typeof body.error === 'string') code = body.error;
      } catch {
        code = undefined;
      }
      const ctx = { ...context, status: res.status, ...(code === undefined ? {} : { oauthError: code }) };
      if (res.status >= 500 || res.status === 429) throw new RetriableError(`OAuth2 token endpoint answered ${res.status}`, { context: ctx });
      throw new ConfigError(`OAuth2 token request refused (${res.status}${code === undefined ? '' : ` ${code}`}): check the client id, secret and scope`, {
        context: ctx,
      });
    }
    let body: { access_token?: unknown; expires_in?: unknown; token_type?: unknown };
    try {
      body = parseJson(text) as typeof body;
    } catch (e) {
      throw new ConfigError(`OAuth2 token endpoint ${this.#endpoint} answered something that is not JSON`, { cause: e, context });
    }
    if (typeof body.access_token !== 'string' || body.access_token === '') {
      throw new ConfigError(`OAuth2 token endpoint ${this.#endpoint} answered no access_token`, { context });
    }
    const lifetimeMs = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : undefined;
    const margin = lifetimeMs === undefined ? 0 : Math.min(c.refreshMarginMs ?? 60_000, lifetimeMs / 2);
    return { token: body.access_token, refreshAt: lifetimeMs === undefined ? Infinity : started + lifetimeMs - margin };
  }
}
