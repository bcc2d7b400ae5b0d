/**
 * Object locations: the URIs Iceberg metadata stores for files (`s3://bucket/key`, `file:///abs/path`)
 * and the pure helpers to parse, build and join them.
 *
 * Owns: the one parser every store and the SQL catalog use, so that `s3a://`/`s3n://` (written by Hadoop
 * and Spark) name the same object as `s3://`, and so that no path ever gets a `//` inside the key (S3
 * Tables rejects it, iceberg-writer.md §4.3). Must not do I/O.
 */
import { ConfigError } from '../core/errors.ts';

export interface ParsedLocation {
  /** Normalised scheme: `s3` (also for s3a/s3n), `file` or `memory`. */
  readonly scheme: 's3' | 'file' | 'memory';
  /** The scheme as written, so that a listing answers in the caller's own spelling. */
  readonly rawScheme: string;
  /** S3 bucket or memory namespace; '' for file. */
  readonly bucket: string;
  /** S3/memory: the key without a leading slash. file: the absolute path (leading slash kept). */
  readonly key: string;
}

const S3_SCHEMES = new Set(['s3', 's3a', 's3n']);

export function parseLocation(location: string): ParsedLocation {
  // Hadoop's local file system writes `file:/abs/path` (one slash): accept it as file:///abs/path.
  const single = /^file:(\/[^/].*)$/s.exec(location);
  if (single !== null) return { scheme: 'file', rawScheme: 'file', bucket: '', key: single[1] ?? '' };
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/(.*)$/s.exec(location);
  if (m === null) throw new ConfigError(`not an object location URI: ${JSON.stringify(location)}`, { context: { location } });
  const rawScheme = (m[1] ?? '').toLowerCase();
  const rest = m[2] ?? '';
  if (S3_SCHEMES.has(rawScheme) || rawScheme === 'memory') {
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const key = slash < 0 ? '' : rest.slice(slash + 1);
    if (bucket === '') throw new ConfigError(`location has no bucket: ${location}`, { context: { location } });
    return { scheme: rawScheme === 'memory' ? 'memory' : 's3', rawScheme, bucket, key };
  }
  if (rawScheme === 'file') {
    // file:///abs/path (empty authority) or file://localhost/abs/path. Paths are taken literally (no
    // percent-decoding), so what we format is what we parse back.
    const path = rest.startsWith('/') ? rest : rest.startsWith('localhost/') ? rest.slice('localhost'.length) : '';
    if (path === '') throw new ConfigError(`file location must be absolute (file:///...): ${location}`, { context: { location } });
    return { scheme: 'file', rawScheme, bucket: '', key: path };
  }
  throw new ConfigError(`unsupported location scheme ${rawScheme}:// in ${location} (s3, s3a, s3n, file)`, {
    context: { location },
  });
}

/** The inverse of parseLocation (with the raw scheme as written). */
export function formatLocation(p: Pick<ParsedLocation, 'rawScheme' | 'bucket' | 'key'>): string {
  if (p.rawScheme === 'file') return `file://${p.key.startsWith('/') ? '' : '/'}${p.key}`;
  return `${p.rawScheme}://${p.bucket}/${p.key}`;
}

/**
 * Joins path segments onto a base location with exactly one `/` between them: `joinLocation('s3://b/wh/',
 * 'ns', 't')` is `s3://b/wh/ns/t`. Empty segments are dropped; the base's own scheme `//` is kept.
 */
export function joinLocation(base: string, ...segments: string[]): string {
  const schemeEnd = base.indexOf('://');
  const head = schemeEnd < 0 ? '' : base.slice(0, schemeEnd + 3);
  const body = schemeEnd < 0 ? base : base.slice(schemeEnd + 3);
  const parts = [body.replace(/\/+$/, '')];
  for (const s of segments) {
    const trimmed = s.replace(/^\/+|\/+$/g, '');
    if (trimmed !== '') parts.push(trimmed);
  }
  return head + parts.join('/');
}

/** The location with any trailing slashes removed (`s3://b/wh/` → `s3://b/wh`). */
export function stripTrailingSlash(location: string): string {
  const schemeEnd = location.indexOf('://');
  const min = schemeEnd < 0 ? 1 : schemeEnd + 3;
  let end = location.length;
  while (end > min && location[end - 1] === '/') end--;
  return location.slice(0, end);
}
