/**
 * Avro schemas (the parsed JSON a Schema Registry returns) → a resolved Avro model, and that model →
 * an Iceberg schema (docs/reference/iceberg-writer.md §2.2).
 *
 * Owns: Avro schema parsing (named types and namespaces, references, logical types with the spec's
 * "ignore an invalid logical type" rule), recursion detection, the Avro → Iceberg type mapping and fresh
 * ids in Java's order (`assignFreshIds`). Must not: read bytes (avro-decoder.ts does) or talk to a registry.
 *
 * Mapping decisions:
 * - `["null", T]` / `[T, "null"]` → optional T (the only real optional).
 * - Any other union (≥ 2 non-null branches) → Java Iceberg's `SchemaToType.union` shape:
 *   struct<tag: int (required), field0: T0?, field1: T1?, …>, one optional field per non-null branch in
 *   union order; `tag` is the index of the branch among the NON-NULL branches (so `tag = i` ⇔ `field{i}`
 *   is set). If the union also has "null", the struct itself is optional and the null branch is a null
 *   struct. Appending a branch at the end of the union adds a field: stable as the union grows.
 * - enum → string; bytes → binary; fixed(N) → fixed[N]; decimal(P,S) on bytes/fixed → decimal(P,S), or
 *   string when P > 38; uuid (string or fixed 16) → uuid; date → date; time-millis/-micros → time;
 *   timestamp-millis/-micros → timestamptz (an instant); local-timestamp-millis/-micros → timestamp;
 *   timestamp-nanos / local-timestamp-nanos → long on format v2, timestamptz_ns / timestamp_ns on v3.
 * - A record field of type "null" has no Iceberg type on v2: it is left out of the table.
 * - Recursive records → ConfigError (Iceberg types are finite trees).
 */
import { ConfigError } from '../core/errors.ts';
import { assignFreshIds } from '../iceberg/schema.ts';
import type { IcebergType, NestedField, Schema } from '../iceberg/types.ts';

// ---------------------------------------------------------------------------------------------------
// The resolved Avro model
// ---------------------------------------------------------------------------------------------------

export type AvroLogical =
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number }
  | { readonly kind: 'uuid' }
  | { readonly kind: 'date' }
  | { readonly kind: 'time-millis' }
  | { readonly kind: 'time-micros' }
  | { readonly kind: 'timestamp-millis' }
  | { readonly kind: 'timestamp-micros' }
  | { readonly kind: 'timestamp-nanos' }
  | { readonly kind: 'local-timestamp-millis' }
  | { readonly kind: 'local-timestamp-micros' }
  | { readonly kind: 'local-timestamp-nanos' };

export type AvroPrimitiveName = 'null' | 'boolean' | 'int' | 'long' | 'float' | 'double' | 'bytes' | 'string';

export interface AvroPrimitive {
  readonly type: AvroPrimitiveName;
  readonly logical?: AvroLogical;
}
export interface AvroField {
  readonly name: string;
  readonly type: AvroType;
  readonly doc?: string;
}
export interface AvroRecord {
  readonly type: 'record';
  readonly name: string;
  readonly fields: AvroField[];
}
export interface AvroEnum {
  readonly type: 'enum';
  readonly name: string;
  readonly symbols: readonly string[];
}
export interface AvroFixed {
  readonly type: 'fixed';
  readonly name: string;
  readonly size: number;
  readonly logical?: AvroLogical;
}
export interface AvroArray {
  readonly type: 'array';
  readonly items: AvroType;
}
export interface AvroMap {
  readonly type: 'map';
  readonly values: AvroType;
}
export interface AvroUnion {
  readonly type: 'union';
  readonly branches: readonly AvroType[];
}
export type AvroType = AvroPrimitive | AvroRecord | AvroEnum | AvroFixed | AvroArray | AvroMap | AvroUnion;

const PRIMITIVES = new Set<string>(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Avro spec "Logical Types": a logical type that is invalid for its base type is ignored. */
function logicalOf(json: Record<string, unknown>, base: string, size?: number): AvroLogical | undefined {
  const lt = json['logicalType'];
  switch (lt) {
    case 'decimal': {
      if (base !== 'bytes' && base !== 'fixed') return undefined;
      const precision = json['precision'];
      const scale = json['scale'] ?? 0;
      if (typeof precision !== 'number' || !Number.isInteger(precision) || precision < 1) return undefined;
      if (typeof scale !== 'number' || !Number.isInteger(scale) || scale < 0 || scale > precision) return undefined;
      // A fixed(n) holds at most floor(log10(2^(8n-1) - 1)) digits.
      if (size !== undefined && precision > Math.floor(Math.log10(2) * (8 * size - 1))) return undefined;
      return { kind: 'decimal', precision, scale };
    }
    case 'uuid':
      return base === 'string' || (base === 'fixed' && size === 16) ? { kind: 'uuid' } : undefined;
    case 'date':
    case 'time-millis':
      return base === 'int' ? { kind: lt } : undefined;
    case 'time-micros':
    case 'timestamp-millis':
    case 'timestamp-micros':
    case 'timestamp-nanos':
    case 'local-timestamp-millis':
    case 'local-timestamp-micros':
    case 'local-timestamp-nanos':
      return base === 'long' ? { kind: lt } : undefined;
    default:
      return undefined;
  }
}

/**
 * Parses an Avro schema (parsed JSON, or its text) into the resolved model: named types are resolved
 * (full names and names relative to the enclosing namespace), and a record that contains itself is a
 * ConfigError.
 */
export function parseAvroSchema(schema: unknown): AvroType {
  const json: unknown = typeof schema === 'string' ? parseText(schema) : schema;
  const named = new Map<string, AvroType>();
  const building = new Set<string>();

  const fullName = (name: string, ns: string | undefined): string => (name.includes('.') || ns === undefined || ns === '' ? name : `${ns}.${name}`);
  const define = (full: string, t: AvroType): void => {
    if (named.has(full)) throw new ConfigError(`Avro schema defines ${full} twice`);
    named.set(full, t);
  };

  const walk = (j: unknown, ns: string | undefined, path: string): AvroType => {
    if (typeof j === 'string') {
      if (PRIMITIVES.has(j)) return { type: j as AvroPrimitiveName };
      const full = j.includes('.') ? j : fullName(j, ns);
      if (building.has(full) || building.has(j)) {
        throw new ConfigError(`Avro schema is recursive at ${path || '<root>'} (record ${full} contains itself); Iceberg types are finite trees`, {
          context: { field: path, record: full },
        });
      }
      const t = named.get(full) ?? named.get(j);
      if (t === undefined) throw new ConfigError(`Avro schema references unknown type ${j} at ${path || '<root>'}`, { context: { field: path } });
      return t;
    }
    if (Array.isArray(j)) {
      const branches = j.map((b, i) => walk(b, ns, `${path}[${i}]`));
      if (branches.some((b) => b.type === 'union')) throw new ConfigError(`Avro union directly inside a union at ${path}`);
      return { type: 'union', branches };
    }
    if (!isObject(j)) throw new ConfigError(`not an Avro schema at ${path || '<root>'}: ${JSON.stringify(j)}`);
    const type = j['type'];
    if (typeof type !== 'string' && !Array.isArray(type) && !isObject(type)) throw new ConfigError(`Avro schema without a type at ${path || '<root>'}`);
    if (typeof type !== 'string') return walk(type, ns, path); // {"type": {...}} or {"type": [...]}
    if (PRIMITIVES.has(type)) {
      const logical = logicalOf(j, type);
      return logical === undefined ? { type: type as AvroPrimitiveName } : { type: type as AvroPrimitiveName, logical };
    }
    switch (type) {
      case 'record':
      case 'error': {
        const name = j['name'];
        if (typeof name !== 'string') throw new ConfigError(`Avro record without a name at ${path || '<root>'}`);
        const space = typeof j['namespace'] === 'string' ? j['namespace'] : ns;
        const full = fullName(name, space);
        const innerNs = full.includes('.') ? full.slice(0, full.lastIndexOf('.')) : space;
        const fields: AvroField[] = [];
        const rec: AvroRecord = { type: 'record', name: full, fields };
        building.add(full);
        define(full, rec);
        const fj = j['fields'];
        if (!Array.isArray(fj)) throw new ConfigError(`Avro record ${full} has no fields array`);
        for (const f of fj) {
          if (!isObject(f) || typeof f['name'] !== 'string') throw new ConfigError(`Avro record ${full} has a field without a name`);
          const fname = f['name'];
          const ft = walk(f['type'], innerNs, path === '' ? fname : `${path}.${fname}`);
          fields.push(typeof f['doc'] === 'string' ? { name: fname, type: ft, doc: f['doc'] } : { name: fname, type: ft });
        }
        building.delete(full);
        return rec;
      }
      case 'enum': {
        const name = j['name'];
        const symbols = j['symbols'];
        if (typeof name !== 'string' || !Array.isArray(symbols) || !symbols.every((s) => typeof s === 'string')) {
          throw new ConfigError(`invalid Avro enum at ${path || '<root>'}`);
        }
        const full = fullName(name, typeof j['namespace'] === 'string' ? j['namespace'] : ns);
        const t: AvroEnum = { type: 'enum', name: full, symbols: symbols as string[] };
        define(full, t);
        return t;
      }
      case 'fixed': {
        const name = j['name'];
        const size = j['size'];
        if (typeof name !== 'string' || typeof size !== 'number' || !Number.isInteger(size) || size < 0) {
          throw new ConfigError(`invalid Avro fixed at ${path || '<root>'}`);
        }
        const full = fullName(name, typeof j['namespace'] === 'string' ? j['namespace'] : ns);
        const logical = logicalOf(j, 'fixed', size);
        const t: AvroFixed = logical === undefined ? { type: 'fixed', name: full, size } : { type: 'fixed', name: full, size, logical };
        define(full, t);
        return t;
      }
      case 'array':
        return { type: 'array', items: walk(j['items'], ns, `${path}.element`) };
      case 'map':
        return { type: 'map', values: walk(j['values'], ns, `${path}.value`) };
      default:
        return walk(type, ns, path); // {"type": "com.example.Named"}
    }
  };
  return walk(json, undefined, '');
}

function parseText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // A bare primitive name is valid Avro schema text too.
    if (PRIMITIVES.has(text.trim())) return text.trim();
    throw new ConfigError('Avro schema text is not valid JSON');
  }
}

/** The non-null branches of a union and whether it has a null branch. */
export function unionShape(u: AvroUnion): { readonly nonNull: readonly AvroType[]; readonly nullIndex: number } {
  const nullIndex = u.branches.findIndex((b) => b.type === 'null');
  return { nonNull: u.branches.filter((b) => b.type !== 'null'), nullIndex };
}

/** True for `["null", T]` / `[T, "null"]`: an optional T. */
export function isOptionUnion(u: AvroUnion): boolean {
  return u.branches.length === 2 && unionShape(u).nullIndex >= 0;
}

// ---------------------------------------------------------------------------------------------------
// Avro → Iceberg
// ---------------------------------------------------------------------------------------------------

export interface AvroToIcebergOptions {
  /** `iceberg.tables.schema-force-optional`: every field, list element and map value optional. */
  readonly forceOptional?: boolean;
  /** 2 (default) or 3: nanosecond timestamps become long on v2, timestamp(tz)_ns on v3. */
  readonly formatVersion?: 2 | 3;
  /** The schema id of the result (default 0). */
  readonly schemaId?: number;
}

const MAX_DECIMAL_PRECISION = 38;

/**
 * An Iceberg schema for an Avro record schema, with fresh ids numbered from 1 the way Java's
 * `TypeUtil.assignFreshIds` does (what a REST catalog returns on create). The top level must be a record.
 */
export function avroToIceberg(schema: unknown /* Avro JSON, its text, or a resolveAvroSchema result */, options: AvroToIcebergOptions = {}): Schema {
  const root = resolveAvroSchema(schema);
  if (root.type !== 'record') throw new ConfigError(`a table needs an Avro record schema at the top level, not ${root.type}`);
  const force = options.forceOptional === true;
  const v3 = options.formatVersion === 3;
  let placeholder = 0;
  const ph = (): number => ++placeholder;

  /** Iceberg type and whether the value may be null; undefined for a pure "null". */
  const convert = (t: AvroType, path: string): { type: IcebergType; optional: boolean } | undefined => {
    switch (t.type) {
      case 'null':
        return undefined;
      case 'boolean':
        return { type: { kind: 'boolean' }, optional: false };
      case 'int':
        if (t.logical?.kind === 'date') return { type: { kind: 'date' }, optional: false };
        if (t.logical?.kind === 'time-millis') return { type: { kind: 'time' }, optional: false };
        return { type: { kind: 'int' }, optional: false };
      case 'long':
        switch (t.logical?.kind) {
          case 'time-micros':
            return { type: { kind: 'time' }, optional: false };
          case 'timestamp-millis':
          case 'timestamp-micros':
            return { type: { kind: 'timestamptz' }, optional: false };
          case 'local-timestamp-millis':
          case 'local-timestamp-micros':
            return { type: { kind: 'timestamp' }, optional: false };
          case 'timestamp-nanos':
            return { type: { kind: v3 ? 'timestamptz_ns' : 'long' }, optional: false };
          case 'local-timestamp-nanos':
            return { type: { kind: v3 ? 'timestamp_ns' : 'long' }, optional: false };
          default:
            return { type: { kind: 'long' }, optional: false };
        }
      case 'float':
        return { type: { kind: 'float' }, optional: false };
      case 'double':
        return { type: { kind: 'double' }, optional: false };
      case 'string':
        return { type: { kind: t.logical?.kind === 'uuid' ? 'uuid' : 'string' }, optional: false };
      case 'bytes':
        return { type: decimalOr(t.logical, { kind: 'binary' }), optional: false };
      case 'enum':
        return { type: { kind: 'string' }, optional: false };
      case 'fixed':
        if (t.logical?.kind === 'uuid') return { type: { kind: 'uuid' }, optional: false };
        return { type: decimalOr(t.logical, { kind: 'fixed', length: t.size }), optional: false };
      case 'array': {
        const el = convert(t.items, `${path}.element`);
        if (el === undefined) throw new ConfigError(`Avro array of null at ${path} has no Iceberg type`, { context: { field: path } });
        return { type: { kind: 'list', elementId: ph(), elementRequired: !(el.optional || force), element: el.type }, optional: false };
      }
      case 'map': {
        const v = convert(t.values, `${path}.value`);
        if (v === undefined) throw new ConfigError(`Avro map of null at ${path} has no Iceberg type`, { context: { field: path } });
        return {
          type: { kind: 'map', keyId: ph(), key: { kind: 'string' }, valueId: ph(), valueRequired: !(v.optional || force), value: v.type },
          optional: false,
        };
      }
      case 'record':
        return { type: { kind: 'struct', fields: recordFields(t, path) }, optional: false };
      case 'union': {
        const { nonNull, nullIndex } = unionShape(t);
        if (nonNull.length === 0) return undefined;
        if (nonNull.length === 1) {
          const inner = convert(nonNull[0] as AvroType, path);
          return inner === undefined ? undefined : { type: inner.type, optional: nullIndex >= 0 || inner.optional };
        }
        const fields: NestedField[] = [{ id: ph(), name: 'tag', required: true, type: { kind: 'int' } }];
        nonNull.forEach((b, i) => {
          const bt = convert(b, `${path}.field${i}`);
          if (bt === undefined) return;
          fields.push({ id: ph(), name: `field${i}`, required: false, type: bt.type });
        });
        return { type: { kind: 'struct', fields }, optional: nullIndex >= 0 };
      }
    }
  };

  const decimalOr = (logical: AvroLogical | undefined, otherwise: IcebergType): IcebergType => {
    if (logical?.kind !== 'decimal') return otherwise;
    // iceberg-writer.md §2.2: P ≤ 38, else string (the decoder formats the unscaled value).
    if (logical.precision > MAX_DECIMAL_PRECISION) return { kind: 'string' };
    return { kind: 'decimal', precision: logical.precision, scale: logical.scale };
  };

  const recordFields = (r: AvroRecord, path: string): NestedField[] => {
    const out: NestedField[] = [];
    for (const f of r.fields) {
      const fpath = path === '' ? f.name : `${path}.${f.name}`;
      const c = convert(f.type, fpath);
      if (c === undefined) continue; // a field that is always null has no type on v2
      const field: NestedField = { id: ph(), name: f.name, required: !(c.optional || force), type: c.type };
      out.push(f.doc === undefined ? field : { ...field, doc: f.doc });
    }
    return out;
  };

  const fields = recordFields(root, '');
  let last = 0;
  return assignFreshIds({ schemaId: options.schemaId ?? 0, fields }, () => ++last);
}

/** Results of resolveAvroSchema, so they can be passed back in without re-parsing. */
const PARSED = new WeakSet<object>();

/** parseAvroSchema, remembering the result as parsed (so it can be handed to avroToIceberg and compile). */
export function resolveAvroSchema(schema: unknown): AvroType {
  if (typeof schema === 'object' && schema !== null && PARSED.has(schema)) return schema as AvroType;
  const t = parseAvroSchema(schema);
  PARSED.add(t);
  return t;
}
