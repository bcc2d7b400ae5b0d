/**
 * The object-store port: where data files, manifests, manifest lists and (for the SQL catalog) table
 * metadata files are written and read. Adapters: `s3/` (S3 and S3-compatible stores), `local/` (a
 * warehouse on the local file system) and `memory.ts` (unit tests).
 *
 * Owns: the operations the sink needs and their error contract. Every adapter translates its foreign
 * errors once, at its boundary:
 * - a transient failure (throttling, 5xx, connection reset, time-out) that survived the adapter's own
 *   bounded retries → `RetriableError`;
 * - a missing object on `get` → `ObjectNotFoundError` (`head` answers `undefined` instead);
 * - `put(..., {ifAbsent: true})` onto an existing object → `ObjectExistsError`;
 * - bad credentials, a missing bucket, an unusable path → `ConfigError`.
 * Must not: know about Iceberg, retry forever, or log object contents or credentials.
 *
 * Locations are URIs (`s3://bucket/key`, `file:///abs/path`, `memory://ns/key`); see location.ts.
 */
import { FatalError } from '../core/errors.ts';
import type { ErrorOptions } from '../core/errors.ts';

/** The body of a streaming put: chunks in order, sync or async. Chunks are not retained after use. */
export type ByteChunks = Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

export interface PutOptions {
  /** Create only: fail with ObjectExistsError when the object exists (S3 `If-None-Match: *`). */
  readonly ifAbsent?: boolean;
  readonly contentType?: string;
  /** Cancels the put; a multipart upload in progress is aborted. */
  readonly signal?: AbortSignal;
  /**
   * putStream: called whenever the bytes of this put the store holds in memory and has not stored yet
   * change (queued chunks, parts in flight), and with 0 when it ends, so a memory budget can count them.
   * A store that writes each chunk through holds nothing and may never call it.
   */
  readonly onHeldBytes?: (bytes: number) => void;
  /**
   * putStream: the caller hands each chunk over (it never touches it again), so the store may keep it
   * without a copy. Without it a store copies what it keeps (a producer may reuse its buffer).
   */
  readonly chunksHandedOver?: boolean;
}

/** A byte range: `{start, end}` (end exclusive, default: to the end) or the last `suffix` bytes. */
export type ByteRange = { readonly start: number; readonly end?: number } | { readonly suffix: number };

export interface GetOptions {
  readonly range?: ByteRange;
  readonly signal?: AbortSignal;
}

export interface ObjectInfo {
  /** The object's location, in the scheme spelling the caller used. */
  readonly location: string;
  readonly size: number;
  /** Epoch milliseconds; orphan cleanup compares it with its age threshold. */
  readonly lastModifiedMs: number;
  readonly etag?: string;
}

export interface ObjectStore {
  /** Writes the whole object at once. */
  put(location: string, body: Uint8Array, options?: PutOptions): Promise<ObjectInfo>;
  /**
   * Writes an object from chunks with bounded memory (S3: multipart above a threshold; the upload is
   * aborted if the source or any part fails). The object appears only when complete, never partially.
   */
  putStream(location: string, chunks: ByteChunks, options?: PutOptions): Promise<ObjectInfo>;
  /** The object's bytes (or a range of them). Missing → ObjectNotFoundError. */
  get(location: string, options?: GetOptions): Promise<Uint8Array>;
  /** Size, mtime and etag; undefined when the object does not exist. */
  head(location: string): Promise<ObjectInfo | undefined>;
  exists(location: string): Promise<boolean>;
  /** Deletes the object; deleting a missing object succeeds. */
  delete(location: string): Promise<void>;
  /** Every object whose location starts with `prefix` (a plain string prefix, not a directory). */
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /** Releases connections. */
  close(): Promise<void>;
}

/**
 * The object does not exist. A FatalError: whoever expected it (a catalog's metadata pointer, an
 * announced data file) has found a broken invariant and must stop the table, not retry.
 * Proposed for core/errors.ts as a general NotFoundError (code NOT_FOUND).
 */
export class ObjectNotFoundError extends FatalError {
  readonly location: string;
  constructor(location: string, options?: ErrorOptions) {
    super(`object not found: ${location}`, { ...options, context: { location, ...options?.context } });
    this.location = location;
  }
}

/** A create-only put found the object already there (S3 412 on `If-None-Match: *`). */
export class ObjectExistsError extends FatalError {
  readonly location: string;
  constructor(location: string, options?: ErrorOptions) {
    super(`object already exists: ${location}`, { ...options, context: { location, ...options?.context } });
    this.location = location;
  }
}

export { concatBytes } from '../core/bytes.ts';

/** Resolves a ByteRange against an object size into [start, end) (clamped). */
export function resolveRange(range: ByteRange | undefined, size: number): { start: number; end: number } {
  if (range === undefined) return { start: 0, end: size };
  if ('suffix' in range) return { start: Math.max(0, size - range.suffix), end: size };
  const end = Math.min(size, range.end ?? size);
  return { start: Math.min(Math.max(0, range.start), end), end };
}

/** Iterates sync and async chunk sources alike. */
export async function* iterateChunks(chunks: ByteChunks): AsyncGenerator<Uint8Array> {
  for await (const c of chunks as AsyncIterable<Uint8Array>) yield c;
}
