/**
 * What a registry-backed decoder keeps per schema id: the thing it built from the registered schema (a
 * compiled Avro program, a parsed Protobuf file), one fetch at a time per id, and the deterministic
 * failures. Shared by the Avro and Protobuf decoders, which differ only in what they build.
 *
 * The rules, in one place:
 * - Ids are immutable in a Confluent-API registry, so a result is cached for the decoder's lifetime.
 * - Concurrent `prepare(id)` calls share one fetch (the adapter may be slow; a batch holds many records
 *   with the same id).
 * - A resolver failure (unreachable registry, an id the registry does not know yet: RetriableError from
 *   the adapter) is NOT cached: the next `prepare` asks again, and the adapter decides when an unknown id
 *   stops being retriable (registry/schema-registry.ts). It is passed on as a `SchemaUnavailableError`
 *   (registry-port.ts), so a task can hold back just the partition of the record that needs the schema.
 * - A schema of the wrong type, or one that does not build (does not parse, does not fit the table), is
 *   cached as a failure: every record with that id fails the same way without asking again.
 * - A build's ConfigError (a recursive schema, a field its column cannot take: string → int, long → int)
 *   becomes a DataError (stage `convert`) naming the id: the schema travels with the records (the producer
 *   chose it), so it is those records' problem and follows errors.tolerance; the previous or next schema
 *   id may well fit. The resolver's own ConfigErrors (credentials, a URL that is not a registry) stay
 *   ConfigErrors: they are the configuration's.
 *
 * Must not: do I/O itself (the resolver is the port), or know about any wire format.
 */
import { ConfigError, DataError, FatalError, IcefloeError } from '../core/errors.ts';
import { SchemaUnavailableError } from './registry-port.ts';
import type { RegisteredSchema, SchemaResolver, SchemaType } from './registry-port.ts';

export class RegistryCache<T> {
  private readonly resolver: SchemaResolver;
  private readonly type: SchemaType;
  private readonly build: (registered: RegisteredSchema) => T;
  private readonly settledById = new Map<number, { readonly ok: T } | IcefloeError>();
  private readonly pending = new Map<number, Promise<T>>();

  /** `build` turns a registered schema of `type` into T; a non-retriable IcefloeError it throws is cached. */
  constructor(resolver: SchemaResolver, type: SchemaType, build: (registered: RegisteredSchema) => T) {
    this.resolver = resolver;
    this.type = type;
    this.build = build;
  }

  /** True when `get(id)` answers without a fetch (built, or failed for good). */
  settled(id: number): boolean {
    return this.settledById.has(id);
  }

  /** The built value for an id; throws its cached failure, or a FatalError when it was never prepared. */
  get(id: number): T {
    const s = this.settledById.get(id);
    if (s === undefined) throw new FatalError(`schema id ${id} was not prepared: await prepare(${id}) before decode`);
    if (s instanceof IcefloeError) throw s;
    return s.ok;
  }

  /** The built value for an id, fetching and building it on first use (one fetch per id at a time). */
  prepare(id: number): Promise<T> {
    const s = this.settledById.get(id);
    if (s !== undefined) return s instanceof IcefloeError ? Promise.reject(s) : Promise.resolve(s.ok);
    let p = this.pending.get(id);
    if (p === undefined) {
      p = this.load(id);
      this.pending.set(id, p);
      const clear = (): void => {
        this.pending.delete(id);
      };
      p.then(clear, clear);
    }
    return p;
  }

  private async load(id: number): Promise<T> {
    let registered: RegisteredSchema;
    try {
      registered = await this.resolver.byId(id); // retriable failures are not cached: the next prepare asks again
    } catch (e) {
      if (e instanceof IcefloeError && e.retriable) throw new SchemaUnavailableError(id, e);
      throw e;
    }
    try {
      if (registered.type !== this.type) throw new DataError(`schema id ${id} is ${registered.type}, not ${this.type}`, { stage: 'deserialize', context: { schemaId: id } });
      const ok = this.build(registered);
      this.settledById.set(id, { ok });
      return ok;
    } catch (thrown) {
      const e = thrown instanceof ConfigError ? new DataError(`schema id ${id} does not fit the table: ${thrown.message}`, { stage: 'convert', cause: thrown, context: { ...thrown.context, schemaId: id } }) : thrown;
      if (e instanceof IcefloeError && !e.retriable) this.settledById.set(id, e);
      throw e;
    }
  }
}
