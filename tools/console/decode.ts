/**
 * A Kafka record as the JSON line `icefloe consume` prints: partition, offset, timestamp (ISO 8601), key,
 * value, and how the value was read. A Confluent-framed value (magic byte 0, a schema id the registry
 * knows) is decoded with its writer schema, Avro with avsc and Protobuf with protobufjs — libraries
 * independent of the sink's columnar decoders, so what a user sees does not depend on the code under test.
 * Anything else is JSON when it parses, else a UTF-8 string, else hex. Keys are read the same way.
 *
 * Owns: the output line. Must not: talk to the registry except through the resolver port.
 */
import avro from 'avsc';
import { IcefloeError } from '../../src/core/errors.ts';
import type { RawRecord } from '../../src/consume/port.ts';
import { confluentMessageIndexes, confluentSchemaId } from '../../src/decode/confluent-frame.ts';
import { parseProtobufSchema } from '../../src/decode/protobuf-schema.ts';
import type { SchemaResolver } from '../../src/decode/registry-port.ts';

/** How a key or value was read. */
export type ReadAs = 'avro' | 'protobuf' | 'json' | 'string' | 'hex' | 'null';

interface Decoded {
  readonly as: ReadAs;
  /** JSON text of the value (JSON input is kept as its own text: numbers keep every digit). */
  readonly json: string;
  readonly schemaId?: number;
  /** Why a framed value could not be decoded (it is then shown as hex). */
  readonly error?: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON text of a decoded value: buffers as strings of code points 0–255 (Avro's JSON form), bigints exactly. */
function stringify(v: unknown): string {
  return JSON.stringify(v, function (this: Record<string, unknown>, key: string, x: unknown) {
    const raw = this[key];
    if (raw instanceof Uint8Array) return Buffer.from(raw).toString('latin1');
    return typeof x === 'bigint' ? x.toString() : x;
  });
}

export class RecordPrinter {
  readonly #resolver: SchemaResolver | undefined;
  readonly #avro = new Map<number, avro.Type>();
  readonly #protobuf = new Map<number, (body: Uint8Array, indexes: readonly number[]) => unknown>();

  /** Without a resolver framed values are shown as hex (with the reason). */
  constructor(resolver: SchemaResolver | undefined) {
    this.#resolver = resolver;
  }

  /** The record's JSON line. */
  async line(r: RawRecord): Promise<string> {
    const key = await this.decode(r.key, true);
    const value = await this.decode(r.value);
    const parts = [
      `"partition":${r.partition}`,
      `"offset":${r.offset.toString()}`,
      `"timestamp":${r.timestamp === null ? 'null' : JSON.stringify(new Date(r.timestamp).toISOString())}`,
      `"key":${key.json}`,
      `"value":${value.json}`,
      `"format":${JSON.stringify(value.as)}`,
    ];
    if (value.schemaId !== undefined) parts.push(`"schemaId":${value.schemaId}`);
    if (value.error !== undefined) parts.push(`"error":${JSON.stringify(value.error)}`);
    if (key.as !== 'string' && key.as !== 'null') parts.push(`"keyFormat":${JSON.stringify(key.as)}`);
    if (r.headers.length > 0) {
      const headers = r.headers.map((h) => `${JSON.stringify(h.key)}:${h.value === null ? 'null' : JSON.stringify(Buffer.from(h.value).toString('utf8'))}`);
      parts.push(`"headers":{${headers.join(',')}}`);
    }
    return `{${parts.join(',')}}`;
  }

  /** A key is shown as its text unless it is framed or not UTF-8 (StringConverter keys are the common case). */
  private async decode(bytes: Uint8Array | null, isKey = false): Promise<Decoded> {
    if (bytes === null) return { as: 'null', json: 'null' };
    if (bytes.length >= 5 && bytes[0] === 0) {
      // Text never starts with byte 0: these bytes are framed, or neither JSON nor text.
      return this.framed(bytes);
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      return { as: 'hex', json: JSON.stringify(Buffer.from(bytes).toString('hex')) };
    }
    if (isKey) return { as: 'string', json: JSON.stringify(text) };
    try {
      JSON.parse(text);
      // Its own text, on one line: big numbers keep their digits.
      return { as: 'json', json: text.includes('\n') || text.includes('\r') ? JSON.stringify(JSON.parse(text)) : text.trim() };
    } catch {
      return { as: 'string', json: JSON.stringify(text) };
    }
  }

  /** A framed value decoded with its writer schema; hex, with the reason, when that is not possible. */
  private async framed(bytes: Uint8Array): Promise<Decoded> {
    const id = confluentSchemaId(bytes);
    const hex = JSON.stringify(Buffer.from(bytes).toString('hex'));
    if (this.#resolver === undefined) return { as: 'hex', json: hex, schemaId: id, error: 'Confluent-framed, but no schema registry to read it with' };
    try {
      const cachedAvro = this.#avro.get(id);
      if (cachedAvro !== undefined) return { as: 'avro', json: stringify(cachedAvro.fromBuffer(Buffer.from(bytes.subarray(5)))), schemaId: id };
      const cachedPb = this.#protobuf.get(id);
      if (cachedPb !== undefined) {
        const { indexes, start } = confluentMessageIndexes(bytes);
        return { as: 'protobuf', json: stringify(cachedPb(bytes.subarray(start), indexes ?? [0])), schemaId: id };
      }
      const schema = await this.#resolver.byId(id);
      if (schema.type === 'AVRO') this.#avro.set(id, avro.Type.forSchema(JSON.parse(schema.schema) as avro.Schema, { wrapUnions: false }));
      else if (schema.type === 'PROTOBUF') {
        const parsed = parseProtobufSchema(schema);
        this.#protobuf.set(id, (body, indexes) => {
          const t = parsed.message(indexes);
          return t.toObject(t.decode(body), { longs: String, enums: String, bytes: String, defaults: true, json: true });
        });
      } else return { as: 'hex', json: hex, schemaId: id, error: `schema id ${id} is a ${schema.type} schema, which consume does not decode` };
      return await this.framed(bytes);
    } catch (e) {
      const why = e instanceof IcefloeError || e instanceof Error ? e.message : String(e);
      return { as: 'hex', json: hex, schemaId: id, error: `schema id ${id}: ${why}` };
    }
  }
}

