/**
 * Protobuf schemas (the `.proto` text a Schema Registry returns, with its references) → a resolved
 * protobufjs model, and a message of it → an Iceberg schema (docs/reference/iceberg-writer.md §2.3).
 *
 * Owns: parsing proto2/proto3 text with protobufjs (imports resolved from the registry's references and
 * protobufjs' bundled google/protobuf well-known types), message selection by the Confluent message-index
 * path, recursion detection, the Protobuf → Iceberg type mapping and fresh ids in Java's order.
 * Must not: read bytes (protobuf-decoder.ts does) or talk to a registry.
 *
 * Mapping decisions (§2.3):
 * - double, float, bool, string, bytes → double, float, boolean, string, binary;
 *   int32/sint32/sfixed32 → int; int64/sint64/sfixed64 → long; uint32/fixed32 → long (they overflow int);
 *   uint64/fixed64 → decimal(20, 0) (exact: long would wrap above 2^63); enum → string (the symbol; an
 *   unknown number is written as its decimal text).
 * - message → struct (optional: an absent message is null); repeated T → list<T> with required elements;
 *   map<K, V> → map<K, V> (value required for scalars and enums, optional for messages); lists and maps
 *   are required (absent = empty).
 * - oneof → ONE optional struct field named after the oneof, holding every member as an optional field
 *   (null when no member is set; exactly the last member set is non-null). Chosen over flattening so the
 *   table says which fields exclude each other and a new member adds a field inside the struct.
 * - presence: proto3 scalars without presence are required and hold their default (0, "", false, the
 *   enum's zero) when absent, because the wire cannot tell "absent" from "default"; fields with presence
 *   (proto3 `optional`, proto2 `optional`) are optional and null when absent; proto2 `required` is
 *   required. Wrapper types (`google.protobuf.Int64Value` …) → the optional scalar they wrap
 *   (UInt64Value → decimal(20, 0), UInt32Value → long).
 * - google.protobuf.Timestamp → timestamptz (µs; nanoseconds below a microsecond are floored). Other
 *   well-known types (Duration, Any) are ordinary messages; Struct/Value are recursive, hence rejected.
 * - a message with no fields (google.protobuf.Empty) has no Iceberg type: its field is left out.
 * - recursive messages → ConfigError (Iceberg types are finite trees).
 * - field numbers are not Iceberg ids: the decoder matches proto fields to table fields by NAME.
 */
import protobuf from 'protobufjs';
import { ConfigError, DataError } from '../core/errors.ts';
import { assignFreshIds } from '../iceberg/schema.ts';
import type { IcebergType, NestedField, Schema } from '../iceberg/types.ts';

export type PbType = protobuf.Type;
export type PbField = protobuf.Field;

/** Schema text plus the files it imports (a registry answer fits: RegisteredSchema). */
export interface ProtobufSource {
  readonly schema: string;
  readonly references?: readonly { readonly name: string; readonly schema: string }[];
}

const PARSE_OPTIONS = { keepCase: true, alternateCommentMode: false };

/** A parsed .proto file with everything it imports resolved. */
export class ProtobufSchema {
  readonly root: protobuf.Root;
  /** The file's top-level messages in declaration order (Confluent message index 0, 1, …). */
  readonly messages: readonly PbType[];

  constructor(root: protobuf.Root, messages: readonly PbType[]) {
    this.root = root;
    this.messages = messages;
  }

  /** The message a Confluent message-index path names: [i] → i-th top-level, [i, j] → its j-th nested message. */
  message(indexes: readonly number[] = [0]): PbType {
    if (indexes.length === 0) return this.message([0]);
    let list: readonly PbType[] = this.messages;
    let t: PbType | undefined;
    for (const i of indexes) {
      t = list[i];
      // The path comes from the record's frame: a path the schema lacks is that record's bad bytes.
      if (t === undefined) throw new DataError(`Protobuf message index path [${indexes.join(', ')}] names no message of the schema`, { stage: 'deserialize', context: { indexes: indexes.join('.') } });
      list = nestedMessages(t);
    }
    return t as PbType;
  }

  /** A message by its full name (`pkg.Outer.Inner`, with or without a leading dot). */
  byName(name: string): PbType {
    const t = this.root.lookup(name.startsWith('.') ? name : `.${name}`);
    if (!(t instanceof protobuf.Type)) throw new ConfigError(`the Protobuf schema has no message ${name}`);
    return t;
  }
}

function nestedMessages(ns: protobuf.NamespaceBase): PbType[] {
  return ns.nestedArray.filter((n): n is PbType => n instanceof protobuf.Type);
}

/** The namespace a file's declarations live in (its package, or the root). */
function packageOf(root: protobuf.Root, pkg: string | undefined): protobuf.NamespaceBase {
  if (pkg === undefined || pkg === '') return root;
  const ns = root.lookup(pkg);
  return ns instanceof protobuf.Namespace ? ns : root;
}

/** Parses a .proto file and the files it imports; ConfigError when it does not parse or resolve. */
export function parseProtobufSchema(source: string | ProtobufSource): ProtobufSchema {
  const src: ProtobufSource = typeof source === 'string' ? { schema: source } : source;
  try {
    // Declaration order of the file's own top-level messages, from the file alone (imports may share its package).
    const alone = protobuf.parse(src.schema, new protobuf.Root(), PARSE_OPTIONS);
    const ownNames = nestedMessages(packageOf(alone.root, alone.package)).map((t) => t.fullName);

    const root = new protobuf.Root();
    const wellKnown = new Set<string>();
    const addImports = (imports: readonly string[] | undefined): void => {
      for (const file of imports ?? []) {
        if (wellKnown.has(file)) continue;
        const json = protobuf.common.get(file);
        if (json === null) continue; // a registry reference (parsed below) or missing (resolveAll reports it)
        wellKnown.add(file);
        root.addJSON((json as { nested: Record<string, protobuf.AnyNestedObject> }).nested);
      }
    };
    for (const ref of src.references ?? []) {
      if (protobuf.common.get(ref.name) !== null) {
        addImports([ref.name]);
        continue;
      }
      const parsed = protobuf.parse(ref.schema, root, PARSE_OPTIONS);
      addImports(parsed.imports);
      addImports(parsed.weakImports);
    }
    const main = protobuf.parse(src.schema, root, PARSE_OPTIONS);
    addImports(main.imports);
    addImports(main.weakImports);
    root.resolveAll();
    return new ProtobufSchema(
      root,
      ownNames.map((n) => root.lookupType(n)),
    );
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`Protobuf schema does not parse or resolve: ${(e as Error).message}`, { cause: e });
  }
}

// ---------------------------------------------------------------------------------------------------
// Field classification (shared with the decoder)
// ---------------------------------------------------------------------------------------------------

export const SCALAR_TYPES: Readonly<Record<string, IcebergType>> = {
  double: { kind: 'double' },
  float: { kind: 'float' },
  bool: { kind: 'boolean' },
  string: { kind: 'string' },
  bytes: { kind: 'binary' },
  int32: { kind: 'int' },
  sint32: { kind: 'int' },
  sfixed32: { kind: 'int' },
  int64: { kind: 'long' },
  sint64: { kind: 'long' },
  sfixed64: { kind: 'long' },
  uint32: { kind: 'long' },
  fixed32: { kind: 'long' },
  uint64: { kind: 'decimal', precision: 20, scale: 0 },
  fixed64: { kind: 'decimal', precision: 20, scale: 0 },
};

/** google.protobuf wrapper messages → the scalar type of their `value` field. */
export const WRAPPERS: Readonly<Record<string, string>> = {
  'google.protobuf.DoubleValue': 'double',
  'google.protobuf.FloatValue': 'float',
  'google.protobuf.Int64Value': 'int64',
  'google.protobuf.UInt64Value': 'uint64',
  'google.protobuf.Int32Value': 'int32',
  'google.protobuf.UInt32Value': 'uint32',
  'google.protobuf.BoolValue': 'bool',
  'google.protobuf.StringValue': 'string',
  'google.protobuf.BytesValue': 'bytes',
};

export const TIMESTAMP = 'google.protobuf.Timestamp';

/** The full name without the leading dot. */
export function fullName(t: protobuf.ReflectionObject): string {
  return t.fullName.startsWith('.') ? t.fullName.slice(1) : t.fullName;
}

/** A real oneof (not proto3 `optional`'s synthetic one). */
export function realOneof(f: PbField): protobuf.OneOf | null {
  const o = f.partOf;
  if (o === null) return null;
  if ((f.options as Record<string, unknown> | undefined)?.['proto3_optional'] === true) return null;
  return o;
}

/** What a singular (non-repeated, non-map) field's value is. */
export type ValueKind =
  | { readonly kind: 'scalar'; readonly type: string }
  | { readonly kind: 'enum'; readonly type: protobuf.Enum }
  | { readonly kind: 'timestamp' }
  | { readonly kind: 'wrapper'; readonly type: string }
  | { readonly kind: 'message'; readonly type: PbType };

export function valueKind(typeName: string, resolved: protobuf.Type | protobuf.Enum | null, path: string): ValueKind {
  if (resolved === null) {
    if (SCALAR_TYPES[typeName] === undefined) throw new ConfigError(`Protobuf field ${path}: unknown type ${typeName}`);
    return { kind: 'scalar', type: typeName };
  }
  if (resolved instanceof protobuf.Enum) return { kind: 'enum', type: resolved };
  const name = fullName(resolved);
  if (name === TIMESTAMP) return { kind: 'timestamp' };
  const w = WRAPPERS[name];
  if (w !== undefined) return { kind: 'wrapper', type: w };
  return { kind: 'message', type: resolved };
}

/** The map field's key type name and its value's resolved type (protobufjs keeps both on the MapField). */
export function mapParts(f: PbField): { keyType: string; valueType: string; resolved: protobuf.Type | protobuf.Enum | null } {
  if (!(f instanceof protobuf.MapField)) throw new ConfigError(`Protobuf field ${f.name} is not a map`);
  const mf = f;
  return { keyType: mf.keyType, valueType: mf.type, resolved: mf.resolvedType };
}

// ---------------------------------------------------------------------------------------------------
// Protobuf → Iceberg
// ---------------------------------------------------------------------------------------------------

export interface ProtobufToIcebergOptions {
  /** Which message: a full name, or a Confluent message-index path (default [0], the file's first message). */
  readonly message?: string | readonly number[];
  /** `iceberg.tables.schema-force-optional`: every field, list element and map value optional. */
  readonly forceOptional?: boolean;
  /** The schema id of the result (default 0). */
  readonly schemaId?: number;
}

/** The message a source and options name (parsing the source when it is text). */
export function selectMessage(source: string | ProtobufSource | ProtobufSchema, message: string | readonly number[] = [0]): PbType {
  const schema = source instanceof ProtobufSchema ? source : parseProtobufSchema(source);
  return typeof message === 'string' ? schema.byName(message) : schema.message(message);
}

/**
 * An Iceberg schema for a Protobuf message, with fresh ids numbered from 1 the way Java's
 * `TypeUtil.assignFreshIds` does (what a REST catalog returns on create).
 */
export function protobufToIceberg(source: string | ProtobufSource | ProtobufSchema, options: ProtobufToIcebergOptions = {}): Schema {
  const root = selectMessage(source, options.message);
  const force = options.forceOptional === true;
  let placeholder = 0;
  const ph = (): number => ++placeholder;
  const building = new Set<string>();

  const value = (k: ValueKind, path: string): IcebergType | undefined => {
    switch (k.kind) {
      case 'scalar':
        return SCALAR_TYPES[k.type] as IcebergType;
      case 'enum':
        return { kind: 'string' };
      case 'timestamp':
        return { kind: 'timestamptz' };
      case 'wrapper':
        return SCALAR_TYPES[k.type] as IcebergType;
      case 'message': {
        const fields = messageFields(k.type, path);
        return fields.length === 0 ? undefined : { kind: 'struct', fields };
      }
    }
  };

  const messageFields = (t: PbType, path: string): NestedField[] => {
    const name = fullName(t);
    if (building.has(name)) {
      throw new ConfigError(`Protobuf message ${name} is recursive at ${path || '<root>'}; Iceberg types are finite trees`, { context: { field: path, message: name } });
    }
    building.add(name);
    const out: NestedField[] = [];
    const oneofsDone = new Set<protobuf.OneOf>();
    for (const f of t.fieldsArray) {
      const oneof = realOneof(f);
      if (oneof !== null) {
        if (oneofsDone.has(oneof)) continue;
        oneofsDone.add(oneof);
        const opath = path === '' ? oneof.name : `${path}.${oneof.name}`;
        const members: NestedField[] = [];
        for (const m of oneof.fieldsArray) {
          const mt = value(valueKind(m.type, m.resolvedType, `${opath}.${m.name}`), `${opath}.${m.name}`);
          if (mt !== undefined) members.push({ id: ph(), name: m.name, required: false, type: mt });
        }
        if (members.length > 0) out.push({ id: ph(), name: oneof.name, required: false, type: { kind: 'struct', fields: members } });
        continue;
      }
      const fpath = path === '' ? f.name : `${path}.${f.name}`;
      const c = fieldType(f, fpath);
      if (c === undefined) continue;
      out.push({ id: ph(), name: f.name, required: c.required && !force, type: c.type });
    }
    building.delete(name);
    return out;
  };

  const fieldType = (f: PbField, path: string): { type: IcebergType; required: boolean } | undefined => {
    if (f.map) {
      const { keyType, valueType, resolved } = mapParts(f);
      const key = SCALAR_TYPES[keyType];
      if (key === undefined || key.kind === 'float' || key.kind === 'double' || key.kind === 'binary') {
        throw new ConfigError(`Protobuf map ${path}: key type ${keyType} is not allowed`);
      }
      const vk = valueKind(valueType, resolved, `${path}.value`);
      const v = value(vk, `${path}.value`);
      if (v === undefined) throw new ConfigError(`Protobuf map ${path}: its value type has no Iceberg type (a message without fields)`);
      const valueRequired = (vk.kind === 'scalar' || vk.kind === 'enum') && !force;
      return { type: { kind: 'map', keyId: ph(), key, valueId: ph(), valueRequired, value: v }, required: true };
    }
    const vk = valueKind(f.type, f.resolvedType, f.repeated ? `${path}.element` : path);
    const v = value(vk, f.repeated ? `${path}.element` : path);
    if (v === undefined) {
      if (f.repeated) throw new ConfigError(`Protobuf repeated field ${path}: its element type has no Iceberg type (a message without fields)`);
      return undefined;
    }
    if (f.repeated) return { type: { kind: 'list', elementId: ph(), elementRequired: !force, element: v }, required: true };
    if (vk.kind === 'message' || vk.kind === 'timestamp' || vk.kind === 'wrapper') return { type: v, required: false };
    return { type: v, required: !f.hasPresence || f.required };
  };

  const fields = messageFields(root, '');
  let last = 0;
  return assignFreshIds({ schemaId: options.schemaId ?? 0, fields }, () => ++last);
}
