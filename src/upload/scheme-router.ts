/**
 * One ObjectStore over several: dispatches each call by the location's scheme (`s3`, `file`, `memory`).
 * The composition root builds it from the configured adapters; the SQL catalog and the writer only see
 * the port. Must not import adapters.
 *
 * A scheme's store may be given as a loader, made on the first call for that scheme: the S3 adapter pulls
 * in the AWS SDK (~0.2 CPU-s to load), which a connector writing local files never needs.
 */
import { ConfigError } from '../core/errors.ts';
import { parseLocation } from './location.ts';
import type { ParsedLocation } from './location.ts';
import type { ByteChunks, GetOptions, ObjectInfo, ObjectStore, PutOptions } from './port.ts';

/** A store, or how to make it when a location of its scheme is first used. */
export type StoreSource = ObjectStore | (() => Promise<ObjectStore>);

export class SchemeRouterStore implements ObjectStore {
  readonly #sources: ReadonlyMap<ParsedLocation['scheme'], StoreSource>;
  /** Stores made or being made, by scheme (a failed load is forgotten: the next call tries again). */
  readonly #stores = new Map<ParsedLocation['scheme'], Promise<ObjectStore>>();

  constructor(stores: Partial<Record<ParsedLocation['scheme'], StoreSource>>) {
    this.#sources = new Map(Object.entries(stores) as [ParsedLocation['scheme'], StoreSource][]);
  }

  #for(location: string): Promise<ObjectStore> {
    const { scheme } = parseLocation(location);
    const made = this.#stores.get(scheme);
    if (made !== undefined) return made;
    const source = this.#sources.get(scheme);
    if (source === undefined) {
      throw new ConfigError(`no object store is configured for ${scheme}:// (location ${location})`, { context: { location } });
    }
    const store = typeof source === 'function' ? source() : Promise.resolve(source);
    this.#stores.set(scheme, store);
    store.catch(() => this.#stores.delete(scheme));
    return store;
  }

  async put(location: string, body: Uint8Array, options?: PutOptions): Promise<ObjectInfo> {
    return (await this.#for(location)).put(location, body, options);
  }
  async putStream(location: string, chunks: ByteChunks, options?: PutOptions): Promise<ObjectInfo> {
    return (await this.#for(location)).putStream(location, chunks, options);
  }
  async get(location: string, options?: GetOptions): Promise<Uint8Array> {
    return (await this.#for(location)).get(location, options);
  }
  async head(location: string): Promise<ObjectInfo | undefined> {
    return (await this.#for(location)).head(location);
  }
  async exists(location: string): Promise<boolean> {
    return (await this.#for(location)).exists(location);
  }
  async delete(location: string): Promise<void> {
    return (await this.#for(location)).delete(location);
  }
  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    yield* (await this.#for(prefix)).list(prefix);
  }
  /** Closes the stores given as they are and those made; a loader never called is not called now. */
  async close(): Promise<void> {
    const given = [...this.#sources.values()].filter((s): s is ObjectStore => typeof s !== 'function');
    const made = await Promise.all([...this.#stores.values()].map((p) => p.catch(() => undefined)));
    const stores = new Set([...given, ...made].filter((s): s is ObjectStore => s !== undefined));
    await Promise.all([...stores].map((s) => s.close()));
  }
}
