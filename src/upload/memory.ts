/**
 * An in-memory ObjectStore for unit tests of the pure parts (committer, SQL catalog on SQLite, writer).
 * Accepts any location scheme (`s3://`, `file://`, `memory://`), so code under test can use the same
 * warehouse URIs as in production. Not for production: no size limit, nothing persists.
 *
 * `beforeOperation` lets a test inject a failure into one call (throw from it) without a fake per test.
 */
import { parseLocation, formatLocation } from './location.ts';
import { ObjectExistsError, ObjectNotFoundError, concatBytes, iterateChunks, resolveRange } from './port.ts';
import type { ByteChunks, GetOptions, ObjectInfo, ObjectStore, PutOptions } from './port.ts';

export type MemoryOperation = 'put' | 'get' | 'head' | 'delete' | 'list';

interface Entry {
  bytes: Uint8Array;
  lastModifiedMs: number;
  etag: string;
}

export interface MemoryStoreOptions {
  /** Called before each operation; throwing fails that operation. */
  beforeOperation?: (op: MemoryOperation, location: string) => void;
  /** Clock for lastModifiedMs (default Date.now). */
  now?: () => number;
}

/** Canonical map key: s3a/s3n fold into s3 so every spelling names one object. */
function canonical(location: string): { key: string; raw: string } {
  const p = parseLocation(location);
  const raw = p.rawScheme;
  return { key: formatLocation({ rawScheme: p.scheme, bucket: p.bucket, key: p.key }), raw };
}

export class MemoryObjectStore implements ObjectStore {
  readonly #objects = new Map<string, Entry>();
  readonly #before: NonNullable<MemoryStoreOptions['beforeOperation']>;
  readonly #now: () => number;
  #version = 0;

  constructor(options: MemoryStoreOptions = {}) {
    this.#before = options.beforeOperation ?? (() => undefined);
    this.#now = options.now ?? Date.now;
  }

  /** Every stored location (canonical spelling), sorted: for assertions. */
  locations(): string[] {
    return [...this.#objects.keys()].sort();
  }

  async put(location: string, body: Uint8Array, options: PutOptions = {}): Promise<ObjectInfo> {
    this.#before('put', location);
    options.signal?.throwIfAborted();
    const { key } = canonical(location);
    if (options.ifAbsent === true && this.#objects.has(key)) throw new ObjectExistsError(location);
    const entry: Entry = { bytes: body.slice(), lastModifiedMs: this.#now(), etag: `"m${++this.#version}"` };
    this.#objects.set(key, entry);
    return { location, size: entry.bytes.byteLength, lastModifiedMs: entry.lastModifiedMs, etag: entry.etag };
  }

  /** Holds the whole object until its last chunk (reported through `onHeldBytes`, as S3 does below its multipart threshold). */
  async putStream(location: string, chunks: ByteChunks, options: PutOptions = {}): Promise<ObjectInfo> {
    const parts: Uint8Array[] = [];
    let held = 0;
    try {
      for await (const c of iterateChunks(chunks)) {
        options.signal?.throwIfAborted();
        parts.push(c.slice());
        held += c.byteLength;
        if (c.byteLength > 0) options.onHeldBytes?.(held);
      }
      return await this.put(location, concatBytes(parts), options);
    } finally {
      if (held > 0) options.onHeldBytes?.(0);
    }
  }

  async get(location: string, options: GetOptions = {}): Promise<Uint8Array> {
    this.#before('get', location);
    const entry = this.#objects.get(canonical(location).key);
    if (entry === undefined) throw new ObjectNotFoundError(location);
    const { start, end } = resolveRange(options.range, entry.bytes.byteLength);
    return entry.bytes.slice(start, end);
  }

  async head(location: string): Promise<ObjectInfo | undefined> {
    this.#before('head', location);
    const entry = this.#objects.get(canonical(location).key);
    if (entry === undefined) return undefined;
    return { location, size: entry.bytes.byteLength, lastModifiedMs: entry.lastModifiedMs, etag: entry.etag };
  }

  async exists(location: string): Promise<boolean> {
    return (await this.head(location)) !== undefined;
  }

  async delete(location: string): Promise<void> {
    this.#before('delete', location);
    this.#objects.delete(canonical(location).key);
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    this.#before('list', prefix);
    const { key: canonicalPrefix, raw } = canonical(prefix);
    const schemeLength = canonicalPrefix.indexOf('://');
    for (const [key, entry] of [...this.#objects.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (!key.startsWith(canonicalPrefix)) continue;
      const location = raw + key.slice(schemeLength);
      yield { location, size: entry.bytes.byteLength, lastModifiedMs: entry.lastModifiedMs, etag: entry.etag };
    }
  }

  async close(): Promise<void> {}
}
