/**
 * Connect's JsonConverter schemas → Iceberg schemas, and an Iceberg schema inferred from one schemaless
 * JSON record (for a table auto-created from it).
 *
 * Owns: the Connect type mapping (int8/int16/int32 → int, int64 → long, float, double, boolean, string,
 * bytes → binary, array → list, map → map, struct → struct; by logical name Decimal → decimal(P, S),
 * Date → date, Time → time, Timestamp → timestamptz) and the inference rules: an object → struct (keys in
 * order), an integer → long, any other number → double, a string → string, a boolean → boolean, an array
 * → list of its first non-null element's type (an empty or all-null array → list<string>), null → string;
 * an empty object (or one holding only empty objects) has no type and its field is left out, as the Apache
 * sink does — Parquet cannot store an empty struct, so a table created with one could take no row; a later
 * record with keys there adds the field (schema evolution) or has them ignored;
 * every inferred field, element and value is optional (nothing in schemaless JSON promises presence).
 * Must not: read record bytes (json-value.ts) or write columns (json-columns.ts).
 */
import { ConfigError, DataError } from '../core/errors.ts';
import { assignFreshIds } from '../iceberg/schema.ts';
import type { IcebergType, NestedField, Schema } from '../iceberg/types.ts';
import { isObject, JsonNumberText } from './json-value.ts';

export const CONNECT_DECIMAL = 'org.apache.kafka.connect.data.Decimal';
export const CONNECT_DATE = 'org.apache.kafka.connect.data.Date';
export const CONNECT_TIME = 'org.apache.kafka.connect.data.Time';
export const CONNECT_TIMESTAMP = 'org.apache.kafka.connect.data.Timestamp';

/** A Connect schema in JsonConverter's JSON form. */
export interface ConnectSchema {
  readonly type: string;
  readonly optional?: boolean;
  readonly name?: string;
  readonly version?: number;
  readonly parameters?: Readonly<Record<string, string>>;
  readonly field?: string;
  readonly fields?: readonly ConnectSchema[];
  readonly items?: ConnectSchema;
  readonly keys?: ConnectSchema;
  readonly values?: ConnectSchema;
}

export interface JsonToIcebergOptions {
  /** `iceberg.tables.schema-force-optional`. */
  readonly forceOptional?: boolean;
  readonly schemaId?: number;
}

/**
 * The Iceberg schema of a Connect struct schema (JsonConverter envelope `schema`): int8/int16/int32 → int,
 * int64 → long, float → float, double → double, boolean, string, bytes → binary, array → list, map → map,
 * struct → struct; by `name`: Decimal → decimal(P, scale) (P from `connect.decimal.precision`, else 38),
 * Date → date, Time → time, Timestamp → timestamptz (Connect Timestamps are UTC instants). A field is
 * required unless `optional`; map keys are always required. ConfigError for anything else.
 */
export function connectSchemaToIceberg(schema: unknown, options: JsonToIcebergOptions = {}): Schema {
  if (!isObject(schema) || schema['type'] !== 'struct') throw new ConfigError('a table needs a Connect struct schema at the top level');
  const force = options.forceOptional === true;
  let ph = 0;
  const next = (): number => ++ph;
  const convert = (s: unknown, path: string): IcebergType => {
    if (!isObject(s) || typeof s['type'] !== 'string') throw new ConfigError(`Connect schema at ${path || '<root>'} has no type`);
    const name = s['name'];
    const params = isObject(s['parameters']) ? (s['parameters'] as Record<string, unknown>) : {};
    switch (name) {
      case CONNECT_DECIMAL: {
        const scale = Number(params['scale'] ?? 0);
        const precision = params['connect.decimal.precision'] === undefined ? 38 : Number(params['connect.decimal.precision']);
        if (!Number.isInteger(scale) || !Number.isInteger(precision) || precision < 1 || precision > 38 || scale < 0 || scale > precision) {
          throw new ConfigError(`Connect Decimal at ${path}: precision ${precision} / scale ${scale} do not fit an Iceberg decimal`);
        }
        return { kind: 'decimal', precision, scale };
      }
      case CONNECT_DATE:
        return { kind: 'date' };
      case CONNECT_TIME:
        return { kind: 'time' };
      case CONNECT_TIMESTAMP:
        return { kind: 'timestamptz' };
      default:
        break;
    }
    switch (s['type']) {
      case 'int8':
      case 'int16':
      case 'int32':
        return { kind: 'int' };
      case 'int64':
        return { kind: 'long' };
      case 'float':
        return { kind: 'float' };
      case 'double':
        return { kind: 'double' };
      case 'boolean':
        return { kind: 'boolean' };
      case 'string':
        return { kind: 'string' };
      case 'bytes':
        return { kind: 'binary' };
      case 'array': {
        const items = s['items'];
        return { kind: 'list', elementId: next(), elementRequired: !force && !(isObject(items) && items['optional'] === true), element: convert(items, `${path}.element`) };
      }
      case 'map': {
        const values = s['values'];
        return {
          kind: 'map',
          keyId: next(),
          key: convert(s['keys'], `${path}.key`),
          valueId: next(),
          valueRequired: !force && !(isObject(values) && values['optional'] === true),
          value: convert(values, `${path}.value`),
        };
      }
      case 'struct':
        return { kind: 'struct', fields: fields(s, path) };
      default:
        throw new ConfigError(`Connect schema at ${path || '<root>'}: unknown type ${String(s['type'])}`);
    }
  };
  const fields = (s: Record<string, unknown>, path: string): NestedField[] => {
    const fs = s['fields'];
    if (!Array.isArray(fs)) throw new ConfigError(`Connect struct at ${path || '<root>'} has no fields array`);
    return fs.map((f: unknown) => {
      if (!isObject(f) || typeof f['field'] !== 'string') throw new ConfigError(`Connect struct at ${path || '<root>'} has a field without a name`);
      const name = f['field'];
      const fpath = path === '' ? name : `${path}.${name}`;
      return { id: next(), name, required: !force && f['optional'] !== true, type: convert(f, fpath) };
    });
  };
  const out = fields(schema, '');
  let last = 0;
  return assignFreshIds({ schemaId: options.schemaId ?? 0, fields: out }, () => ++last);
}

/** Schemaless JSON → an Iceberg schema from one record (see the module header for the rules). */
export function inferIcebergSchema(value: unknown, options: { schemaId?: number } = {}): Schema {
  if (!isObject(value)) throw new DataError('schemaless JSON: a table can only be inferred from a JSON object', { stage: 'deserialize' });
  let ph = 0;
  const next = (): number => ++ph;
  /** Undefined: no type can be told from `v` (an object with nothing typed in it). */
  const infer = (v: unknown): IcebergType | undefined => {
    if (typeof v === 'boolean') return { kind: 'boolean' };
    if (typeof v === 'bigint') return { kind: 'long' };
    if (typeof v === 'number') return Number.isInteger(v) ? { kind: 'long' } : { kind: 'double' };
    if (v instanceof JsonNumberText) return /^-?\d+$/.test(v.text) ? { kind: 'long' } : { kind: 'double' };
    if (Array.isArray(v)) {
      const first = v.find((e) => e !== null);
      const element = first === undefined ? { kind: 'string' as const } : infer(first);
      return element === undefined ? undefined : { kind: 'list', elementId: next(), elementRequired: false, element };
    }
    if (isObject(v)) {
      const fields = objectFields(v);
      return fields.length === 0 ? undefined : { kind: 'struct', fields };
    }
    return { kind: 'string' };
  };
  const objectFields = (o: Record<string, unknown>): NestedField[] => {
    const out: NestedField[] = [];
    for (const [name, x] of Object.entries(o)) {
      const type = infer(x);
      if (type !== undefined) out.push({ id: next(), name, required: false, type });
    }
    return out;
  };
  const root = { fields: objectFields(value) };
  let last = 0;
  return assignFreshIds({ schemaId: options.schemaId ?? 0, fields: root.fields }, () => ++last);
}
