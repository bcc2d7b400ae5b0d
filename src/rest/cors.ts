/**
 * The two header features of Connect's REST server that Jetty provides there: CORS
 * (`access.control.allow.origin` / `access.control.allow.methods`, Jetty's CrossOriginFilter with its
 * defaults) and static response headers (`response.http.headers.config`, Jetty's HeaderFilter rules
 * `set|add|setDate|addDate Name: value`).
 *
 * Owns: which headers a reply gains. Must not: change a reply's status or body.
 */
import type { HeaderRule } from '../config/rest-config.ts';

export interface CorsSettings {
  /** Comma-separated origins; `*` anywhere in one is a wildcard (Jetty's rule); empty: CORS off. */
  readonly allowOrigin: string;
  /** Comma-separated methods for preflight answers; empty: Jetty's default GET,POST,HEAD. */
  readonly allowMethods: string;
}

const DEFAULT_METHODS = 'GET,POST,HEAD';
const DEFAULT_HEADERS = 'X-Requested-With,Content-Type,Accept,Origin';

function originMatches(allowed: string, origin: string): boolean {
  return allowed
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '')
    .some((o) => o === '*' || new RegExp(`^${o.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`).test(origin));
}

/**
 * The CORS headers for a request (lower-case names), as Jetty's CrossOriginFilter adds them: the
 * matching origin echoed with credentials allowed; on a preflight (OPTIONS with
 * Access-Control-Request-Method) also the allowed methods and headers and a max age, when the requested
 * method is allowed.
 */
export function corsHeaders(settings: CorsSettings, method: string, headers: Readonly<Record<string, string>>): Record<string, string> {
  const origin = headers.origin;
  if (settings.allowOrigin.trim() === '' || origin === undefined || !originMatches(settings.allowOrigin, origin)) return {};
  const out: Record<string, string> = { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', vary: 'Origin' };
  const requested = headers['access-control-request-method'];
  if (method === 'OPTIONS' && requested !== undefined) {
    const methods = settings.allowMethods.trim() === '' ? DEFAULT_METHODS : settings.allowMethods;
    const allowed = methods.split(',').map((m) => m.trim().toUpperCase());
    if (!allowed.includes(requested.trim().toUpperCase())) return out;
    out['access-control-allow-methods'] = methods;
    out['access-control-allow-headers'] = DEFAULT_HEADERS;
    out['access-control-max-age'] = '1800';
  }
  return out;
}

/** Whether a request is a CORS preflight: it carries no credentials by definition (Fetch standard). */
export function isPreflight(method: string, headers: Readonly<Record<string, string>>): boolean {
  return method === 'OPTIONS' && headers.origin !== undefined && headers['access-control-request-method'] !== undefined;
}

/** `headers` with the rules applied in order (names lower-cased; `*Date` values are milliseconds from `now`). */
export function applyHeaderRules(headers: Readonly<Record<string, string>>, rules: readonly HeaderRule[], now: number): Record<string, string> {
  const out = { ...headers };
  for (const rule of rules) {
    const name = rule.name.toLowerCase();
    const value = rule.action === 'setDate' || rule.action === 'addDate' ? new Date(now + Number(rule.value)).toUTCString() : rule.value;
    const previous = out[name];
    out[name] = (rule.action === 'add' || rule.action === 'addDate') && previous !== undefined ? `${previous}, ${value}` : value;
  }
  return out;
}
