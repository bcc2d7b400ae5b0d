/**
 * One ObjectStore over several: dispatches each call by the location's scheme (`s3`, `file`, `memory`).
 * The composition root builds it from the configured adapters; the SQL catalog and the writer only see
 * the port. Must not import adapters.
 */
import { ConfigError } from '../core/errors.ts';
import { parseLocation } from './location.ts';
import type { ParsedLocation } from './location.ts';
import type { ByteChunks, GetOptions, ObjectInfo, ObjectStore, PutOptions } from './port.ts';

export class SchemeRouterStore implements ObjectStore {
  readonly #stores: ReadonlyMap<ParsedLocation['scheme'], ObjectStore>;

  constructor(stores: Partial<Record<ParsedLocation['scheme'], ObjectStore>>) {
    this.#stores = new Map(Object.entries(stores) as [ParsedLocation['scheme'], ObjectStore][]);
  }

  #for(location: string): ObjectStore {
    const { scheme } = parseLocation(location);
    const store = this.#stores.get(scheme);
    if (store === undefined) {
      throw new ConfigError(`no object store is configured for ${scheme}:// (location ${location})`, { context: { location } });
    }
    return store;
  }

  async put(location: string, body: Uint8Array, options?: PutOptions): Promise<ObjectInfo> {
    return this.#for(location).put(location, body, options);
  }
  async putStream(location: string, chunks: ByteChunks, options?: PutOptions): Promise<ObjectInfo> {
    return this.#for(location).putStream(location, chunks, options);
  }
  async get(location: string, options?: GetOptions): Promise<Uint8Array> {
    return this.#for(location).get(location, options);
  }
  async head(location: string): Promise<ObjectInfo | undefined> {
    return this.#for(location).head(location);
  }
  async exists(location: string): Promise<boolean> {
    return this.#for(location).exists(location);
  }
  async delete(location: string): Promise<void> {
    return this.#for(location).delete(location);
  }
  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    yield* this.#for(prefix).list(prefix);
  }
  async close(): Promise<void> {
    await Promise.all([...new Set(this.#stores.values())].map((s) => s.close()));
  }
}
