/**
 * ObjectStore adapter for a warehouse on the local file system (`file:///abs/path` locations): for
 * development, single-node deployments and tests.
 *
 * Owns: atomic writes (the bytes go to a hidden temp file in the target directory, are fsynced, then
 * renamed — or hard-linked for create-only puts, which fails atomically when the target exists — so a
 * reader never sees a partial file), and translating errno codes into our error classes once.
 * Must not: follow locations outside `root` when one is configured, or list its own temp files.
 */
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { link, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { ConfigError, FatalError, IcefloeError, RetriableError } from '../../core/errors.ts';
import { formatLocation, parseLocation } from '../location.ts';
import { ObjectExistsError, ObjectNotFoundError, iterateChunks, resolveRange } from '../port.ts';
import type { ByteChunks, GetOptions, ObjectInfo, ObjectStore, PutOptions } from '../port.ts';

export interface LocalStoreOptions {
  /** When set, every location must lie under this directory (a guard against a misconfigured warehouse). */
  readonly root?: string;
  /** fsync files and their directory before a put returns (default true). */
  readonly durable?: boolean;
}

const TEMP_SUFFIX = '.icefloe-tmp';
const RETRIABLE_CODES = new Set(['ENOSPC', 'EIO', 'EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EINTR', 'ETIMEDOUT']);
const CONFIG_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'ELOOP']);

function errnoCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : undefined;
}

/** Translates a file-system error once, here. */
function translate(e: unknown, op: string, location: string): IcefloeError {
  if (e instanceof IcefloeError) return e;
  const code = errnoCode(e);
  const context = { location, op, errno: code };
  if (code === 'ENOENT') return new ObjectNotFoundError(location, { cause: e, context });
  if (code !== undefined && RETRIABLE_CODES.has(code)) return new RetriableError(`local store ${op} ${location} failed (${code})`, { cause: e, context });
  if (code !== undefined && CONFIG_CODES.has(code)) return new ConfigError(`local store cannot ${op} ${location} (${code})`, { cause: e, context });
  return new FatalError(`local store ${op} ${location} failed${code === undefined ? '' : ` (${code})`}`, { cause: e, context });
}

/** Marks a failure of the caller's chunk source, so that it leaves putStream unchanged. */
class SourceFailure {
  readonly error: unknown;
  constructor(error: unknown) {
    this.error = error;
  }
}

export class LocalObjectStore implements ObjectStore {
  readonly #root: string | undefined;
  readonly #durable: boolean;

  constructor(options: LocalStoreOptions = {}) {
    this.#root = options.root === undefined ? undefined : resolve(options.root);
    this.#durable = options.durable ?? true;
  }

  #path(location: string): string {
    const p = parseLocation(location);
    if (p.scheme !== 'file') throw new ConfigError(`the local store serves file:// locations, not ${location}`, { context: { location } });
    const path = resolve(p.key);
    if (this.#root !== undefined && path !== this.#root && !path.startsWith(this.#root + sep)) {
      throw new ConfigError(`location ${location} is outside the local warehouse root ${this.#root}`, { context: { location } });
    }
    return path;
  }

  async put(location: string, body: Uint8Array, options: PutOptions = {}): Promise<ObjectInfo> {
    return this.#write(location, options, async (fh) => {
      let at = 0;
      while (at < body.byteLength) {
        const { bytesWritten } = await fh.write(body, at, body.byteLength - at);
        at += bytesWritten;
      }
    });
  }

  async putStream(location: string, chunks: ByteChunks, options: PutOptions = {}): Promise<ObjectInfo> {
    return this.#write(location, options, async (fh) => {
      const it = iterateChunks(chunks);
      for (;;) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await it.next();
        } catch (e) {
          throw new SourceFailure(e);
        }
        if (next.done === true) break;
        const chunk = next.value;
        options.signal?.throwIfAborted();
        let at = 0;
        while (at < chunk.byteLength) {
          const { bytesWritten } = await fh.write(chunk, at, chunk.byteLength - at);
          at += bytesWritten;
        }
      }
    });
  }

  async #write(location: string, options: PutOptions, fill: (fh: FileHandle) => Promise<void>): Promise<ObjectInfo> {
    const path = this.#path(location);
    const dir = dirname(path);
    const temp = join(dir, `.${basename(path)}.${randomUUID()}${TEMP_SUFFIX}`);
    let tempExists = false;
    try {
      options.signal?.throwIfAborted();
      await mkdir(dir, { recursive: true });
      const fh = await open(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
      tempExists = true;
      try {
        await fill(fh);
        if (this.#durable) await fh.sync();
      } finally {
        await fh.close();
      }
      options.signal?.throwIfAborted();
      if (options.ifAbsent === true) {
        try {
          await link(temp, path); // atomic create-only: EEXIST when the target is there
        } catch (e) {
          if (errnoCode(e) === 'EEXIST') throw new ObjectExistsError(location, { cause: e });
          throw e;
        }
        await unlink(temp);
      } else {
        await rename(temp, path);
      }
      tempExists = false;
      if (this.#durable) await this.#syncDir(dir);
      const s = await stat(path);
      return { location, size: s.size, lastModifiedMs: s.mtimeMs };
    } catch (e) {
      if (tempExists) await unlink(temp).catch(() => undefined);
      if (e instanceof SourceFailure) throw e.error; // the caller's own failure, unchanged
      if (options.signal?.aborted === true && !(e instanceof IcefloeError)) throw options.signal.reason;
      throw translate(e, 'put', location);
    }
  }

  async #syncDir(dir: string): Promise<void> {
    const fh = await open(dir, constants.O_RDONLY);
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  async get(location: string, options: GetOptions = {}): Promise<Uint8Array> {
    const path = this.#path(location);
    try {
      const fh = await open(path, constants.O_RDONLY);
      try {
        const { size } = await fh.stat();
        const { start, end } = resolveRange(options.range, size);
        const out = new Uint8Array(end - start);
        let at = 0;
        while (at < out.byteLength) {
          const { bytesRead } = await fh.read(out, at, out.byteLength - at, start + at);
          if (bytesRead === 0) break;
          at += bytesRead;
        }
        return at === out.byteLength ? out : out.slice(0, at);
      } finally {
        await fh.close();
      }
    } catch (e) {
      throw translate(e, 'get', location);
    }
  }

  async head(location: string): Promise<ObjectInfo | undefined> {
    const path = this.#path(location);
    try {
      const s = await stat(path);
      return s.isFile() ? { location, size: s.size, lastModifiedMs: s.mtimeMs } : undefined;
    } catch (e) {
      if (errnoCode(e) === 'ENOENT' || errnoCode(e) === 'ENOTDIR') return undefined;
      throw translate(e, 'head', location);
    }
  }

  async exists(location: string): Promise<boolean> {
    return (await this.head(location)) !== undefined;
  }

  async delete(location: string): Promise<void> {
    const path = this.#path(location);
    try {
      await unlink(path);
    } catch (e) {
      if (errnoCode(e) === 'ENOENT') return;
      throw translate(e, 'delete', location);
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    const parsed = parseLocation(prefix);
    const path = this.#path(prefix);
    // A prefix ending in '/' is a directory; otherwise its parent directory holds the candidates.
    const keepSlash = parsed.key.endsWith('/') ? sep : '';
    const wanted = path + keepSlash;
    const start = keepSlash === '' ? dirname(path) : path;
    const stack = [start];
    const found: string[] = [];
    while (stack.length > 0) {
      const dir = stack.pop() as string;
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (errnoCode(e) === 'ENOENT' || errnoCode(e) === 'ENOTDIR') continue;
        throw translate(e, 'list', prefix);
      }
      for (const ent of entries) {
        const full = join(dir, ent.name);
        if (ent.isDirectory()) {
          if (wanted.startsWith(full + sep) || (full + sep).startsWith(wanted) || full.startsWith(wanted)) stack.push(full);
        } else if (ent.isFile() && full.startsWith(wanted) && !ent.name.endsWith(TEMP_SUFFIX)) {
          found.push(full);
        }
      }
    }
    found.sort();
    for (const full of found) {
      let s;
      try {
        s = await stat(full);
      } catch (e) {
        if (errnoCode(e) === 'ENOENT') continue; // deleted while listing
        throw translate(e, 'list', prefix);
      }
      yield { location: formatLocation({ rawScheme: 'file', bucket: '', key: full }), size: s.size, lastModifiedMs: s.mtimeMs };
    }
  }

  async close(): Promise<void> {}
}
