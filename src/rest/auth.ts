/**
 * HTTP basic authentication for the REST API, with the credentials file of Connect's
 * PropertyFileLoginModule (`user: password` or `user=password` lines, Java properties syntax). Connect
 * loads it through a REST extension and JAAS, which need a JVM; Icefloe reads the file named by
 * `icefloe.rest.basic-auth.file`. As Connect's JaasBasicAuthFilter, it guards every route, `GET /` and
 * `GET /health` included.
 *
 * Differences from Connect, on purpose: an empty file is refused (Connect lets everyone in), and a 401
 * carries `WWW-Authenticate` and Connect's error body shape.
 *
 * Owns: parsing the file and checking an Authorization header. Must not: log or return a password.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { parseProperties } from '../config/worker-config.ts';
import { ConfigError } from '../core/errors.ts';

export interface BasicAuth {
  readonly realm: string;
  /** Whether an `Authorization` header carries a known user with its password. */
  check(authorization: string | undefined): boolean;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Credentials from the file's text; `source` names the file in errors. */
export function basicAuthFromProperties(text: string, source: string, realm = 'Icefloe'): BasicAuth {
  const users = new Map<string, Buffer>();
  for (const [user, password] of Object.entries(parseProperties(text))) users.set(user, digest(password));
  if (users.size === 0) throw new ConfigError(`${source}: the basic authentication file names no users (Connect would let every request in; Icefloe refuses to start)`);
  return Object.freeze({
    realm,
    check(authorization: string | undefined): boolean {
      if (authorization === undefined) return false;
      const space = authorization.indexOf(' ');
      if (space <= 0 || authorization.slice(0, space).toLowerCase() !== 'basic') return false;
      const decoded = Buffer.from(authorization.slice(space + 1).trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon <= 0) return false;
      const expected = users.get(decoded.slice(0, colon));
      // Compared as digests in constant time, so the answer's timing says nothing about the password.
      return expected !== undefined && timingSafeEqual(expected, digest(decoded.slice(colon + 1)));
    },
  });
}
