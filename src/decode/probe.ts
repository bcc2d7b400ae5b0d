/**
 * Reading a few fields of a record before it is decoded into a writer. A record's table (the route
 * field) and its partition (the partition source fields) must be known before its columns are written,
 * because each (table, partition) has its own writer. A probe runs the same columnar decoder, compiled
 * against a projection schema holding only the fields it needs (every other field is skipped by the
 * decoder without being materialised), into a sink that keeps the last value per field id. This module
 * holds those parts (the capture sink, projections, field paths); record-probe.ts plans the one probe a
 * record gets.
 *
 * Values come out in the representation the Iceberg transforms take: int/date as number, long and
 * timestamps as bigint, decimals as the unscaled bigint, strings as string, binary/fixed/uuid as bytes.
 */
import { DataError } from '../core/errors.ts';
import type { RecordSink } from './sink.ts';
import type { IcebergType, NestedField, PrimitiveValue, Schema, StructType } from '../iceberg/types.ts';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

class Slot {
  value: PrimitiveValue | null = null;
  appendNull(): void {
    this.value = null;
  }
}

class ValueSlot extends Slot {
  append(v: PrimitiveValue): void {
    this.value = v;
  }
}

class LongSlot extends ValueSlot {
  appendNumber(v: number): void {
    this.value = BigInt(v);
  }
}

class StringSlot extends ValueSlot {
  appendUtf8(src: Uint8Array, start = 0, end = src.length): void {
    try {
      this.value = UTF8.decode(src.subarray(start, end));
    } catch {
      throw new DataError('a string field holds invalid UTF-8', { stage: 'deserialize' });
    }
  }
}

class BytesSlot extends Slot {
  append(src: Uint8Array, start = 0, end = src.length): void {
    this.value = src.slice(start, end);
  }
}

class DecimalSlot extends Slot {
  appendUnscaledNumber(v: number): void {
    this.value = BigInt(v);
  }
  appendUnscaled(v: bigint): void {
    this.value = v;
  }
  appendBigEndian(bytes: Uint8Array, start = 0, end = bytes.length): void {
    let v = 0n;
    for (let i = start; i < end; i++) v = (v << 8n) | BigInt(bytes[i] as number);
    const bits = BigInt((end - start) * 8);
    if (end > start && ((bytes[start] as number) & 0x80) !== 0) v -= 1n << bits;
    this.value = v;
  }
}

class Nested extends Slot {
  begin(): void {}
  end(): void {}
}

/** A RecordSink that remembers the last value written to each field; `reset()` before each record. */
export class CaptureSink implements RecordSink {
  private readonly slots = new Map<number, Slot>();

  private slot<T extends Slot>(id: number, make: () => T): T {
    let s = this.slots.get(id);
    if (s === undefined) this.slots.set(id, (s = make()));
    return s as T;
  }

  boolean(id: number): ValueSlot {
    return this.slot(id, () => new ValueSlot());
  }
  int(id: number): ValueSlot {
    return this.slot(id, () => new ValueSlot());
  }
  long(id: number): LongSlot {
    return this.slot(id, () => new LongSlot());
  }
  float(id: number): ValueSlot {
    return this.slot(id, () => new ValueSlot());
  }
  double(id: number): ValueSlot {
    return this.slot(id, () => new ValueSlot());
  }
  decimal(id: number): DecimalSlot {
    return this.slot(id, () => new DecimalSlot());
  }
  string(id: number): StringSlot {
    return this.slot(id, () => new StringSlot());
  }
  binary(id: number): BytesSlot {
    return this.slot(id, () => new BytesSlot());
  }
  fixed(id: number): BytesSlot {
    return this.slot(id, () => new BytesSlot());
  }
  struct(id: number): Nested {
    return this.slot(id, () => new Nested());
  }
  list(id: number): Nested {
    return this.slot(id, () => new Nested());
  }
  map(id: number): Nested {
    return this.slot(id, () => new Nested());
  }
  endRecord(): boolean {
    return false;
  }
  abortRecord(): void {
    this.reset();
  }

  /** Forgets every value (a field the record leaves out, or under a null struct, must read as null). */
  reset(): void {
    for (const s of this.slots.values()) s.value = null;
  }

  value(id: number): PrimitiveValue | null {
    return this.slots.get(id)?.value ?? null;
  }
}

/**
 * The schema holding only the fields with the given ids and the structs that lead to them (same ids,
 * names and types, or the type `retype` gives a kept field), or undefined if none of them is in `schema`.
 * Lists and maps are never entered: a route or partition source field cannot live inside one.
 */
export function projectSchema(schema: Schema, ids: ReadonlySet<number>, retype?: ReadonlyMap<number, IcebergType>): Schema | undefined {
  const keep = (fields: readonly NestedField[]): NestedField[] => {
    const out: NestedField[] = [];
    for (const f of fields) {
      const type = retype?.get(f.id);
      if (ids.has(f.id)) out.push(type === undefined ? f : { ...f, type });
      else if (f.type.kind === 'struct') {
        const inner = keep(f.type.fields);
        if (inner.length > 0) out.push({ ...f, type: { kind: 'struct', fields: inner } satisfies StructType });
      }
    }
    return out;
  };
  const fields = keep(schema.fields);
  return fields.length === 0 ? undefined : { ...schema, fields };
}

/** The field at a dotted path (`meta.tenant`), entering structs only; undefined if absent. */
export function fieldAtPath(schema: Schema, path: readonly string[], caseInsensitive: boolean): NestedField | undefined {
  let fields: readonly NestedField[] = schema.fields;
  let found: NestedField | undefined;
  for (const name of path) {
    const want = caseInsensitive ? name.toLowerCase() : name;
    found = fields.find((f) => (caseInsensitive ? f.name.toLowerCase() : f.name) === want);
    if (found === undefined) return undefined;
    fields = found.type.kind === 'struct' ? found.type.fields : [];
  }
  return found;
}


/** The names leading to the field with this id (`['meta', 'tenant']`), entering structs only; undefined if absent. */
export function fieldPathOf(schema: Schema, id: number): string[] | undefined {
  const walk = (fields: readonly NestedField[]): string[] | undefined => {
    for (const f of fields) {
      if (f.id === id) return [f.name];
      if (f.type.kind === 'struct') {
        const inner = walk(f.type.fields);
        if (inner !== undefined) return [f.name, ...inner];
      }
    }
    return undefined;
  };
  return walk(schema.fields);
}
