/**
 * Compiling a proto message against a struct's (or the table's) fields: which proto field fills which
 * column, and the two passes that decode one message's bytes.
 *
 * How a message is decoded: a SCAN pass over its bytes records, per known field (a slot), how often it
 * occurs, where its last value starts and the span of its occurrences; an EMIT pass then writes every
 * table field once: singular fields from their last value (or their default / null when absent), repeated
 * fields and maps by re-reading the span of their occurrences (packed and unpacked alike), oneofs from
 * whichever member came last. For a singular field the LAST occurrence wins, and several occurrences of a
 * singular message field are MERGED, as the spec says. Scan state lives in the compiled node
 * (Int32Arrays), reused record after record; a node is never re-entered while active because recursive
 * messages are rejected at compile time.
 *
 * Owns: proto → table resolution by field NAME (the field number only finds the slot a value belongs
 * to), presence (an absent proto3 scalar without presence is its default; with presence, an absent
 * message, wrapper or Timestamp → null; an absent proto2 `required` field → DataError; lists and maps
 * absent → empty), and the wire-type checks of the scan. Must not: allocate per record on the common
 * path (only merged repeated occurrences of a singular message do).
 */
import { columnFor } from './sink.ts';
import { ConfigError } from '../core/errors.ts';
import type { NestedField } from '../iceberg/types.ts';
import { realOneof, valueKind } from './protobuf-schema.ts';
import type { PbField, PbType } from './protobuf-schema.ts';
import type { RecordSink } from './sink.ts';
import { badData, readLength, readVarint, skipValue, truncated, WT_LEN } from './protobuf-reader.ts';
import type { PbReader } from './protobuf-reader.ts';
import { mismatch, NO_VALUE, ProtobufValueCompiler } from './protobuf-values.ts';
import type { Body, BoundValue, Target, ValueSpec } from './protobuf-values.ts';

/** Writes one table field of the message (after the scan), bound to a sink. */
type Emitter = (sink: RecordSink) => (r: PbReader) => void;

/** Field numbers up to this find their slot through an array, larger ones through a Map. */
const DENSE_FIELD_NUMBERS = 4096;

/** The slots of one compiled message (one per proto field that has a column) and their scan state. */
class MessageSlots {
  readonly fields: PbField[] = [];
  readonly wires: number[] = [];
  readonly packed: boolean[] = [];
  /** Per slot, for the record being decoded: occurrences, where the last value starts, first tag, end of last value. */
  count = new Int32Array(0);
  vstart = new Int32Array(0);
  first = new Int32Array(0);
  last = new Int32Array(0);
  /** The message's path for errors ('' at the root). */
  private readonly path: string;

  constructor(prefix: string) {
    this.path = prefix === '' ? '' : prefix.slice(0, -1);
  }

  /** A slot for a proto field; only a repeated scalar also accepts the packed (length-delimited) form. */
  add(f: PbField, spec: ValueSpec, repeated = false): number {
    this.fields.push(f);
    this.wires.push(spec.wire);
    this.packed.push(repeated && spec.packable);
    return this.fields.length - 1;
  }

  /** The singular value of slot s: the last occurrence, several message occurrences merged, or absent. */
  emitSingular(r: PbReader, s: number, v: BoundValue): void {
    const c = this.count[s] as number;
    if (c === 0) {
      v.absent();
      return;
    }
    if (c > 1 && v.body !== undefined) {
      this.mergeOccurrences(r, s, v);
      return;
    }
    r.pos = this.vstart[s] as number;
    v.read(r);
  }

  /** Spec: "a message field that appears more than once is merged" — parse the concatenation of the payloads. */
  private mergeOccurrences(r: PbReader, s: number, v: BoundValue): void {
    const no = (this.fields[s] as PbField).id;
    const end = this.last[s] as number;
    const parts: Uint8Array[] = [];
    r.pos = this.first[s] as number;
    while (r.pos < end) {
      const tag = readVarint(r);
      if (tag >>> 3 !== no) {
        skipValue(r, tag & 7, tag >>> 3, end, this.path);
        continue;
      }
      const len = readLength(r, end, this.path);
      parts.push(r.buf.subarray(r.pos, r.pos + len));
      r.pos += len;
    }
    const total = parts.reduce((a, p) => a + p.length, 0);
    const merged = new Uint8Array(total);
    let o = 0;
    for (const p of parts) {
      merged.set(p, o);
      o += p.length;
    }
    const saved = { buf: r.buf, end: r.end };
    r.buf = merged;
    r.end = total;
    try {
      v.struct?.begin();
      (v.body as Body)(r, 0, total);
      v.struct?.end();
    } finally {
      r.buf = saved.buf;
      r.end = saved.end;
    }
  }

  /** Sizes the scan state and returns the scan pass (call once, after every `add`). */
  scanner(t: PbType, prefix: string): (r: PbReader, start: number, end: number) => void {
    const n = this.fields.length;
    this.count = new Int32Array(n);
    this.vstart = new Int32Array(n);
    this.first = new Int32Array(n);
    this.last = new Int32Array(n);
    const wires = Int8Array.from(this.wires);
    const packable = Uint8Array.from(this.packed.map((p) => (p ? 1 : 0)));
    const fields = this.fields;
    const maxNo = t.fieldsArray.reduce((m, f) => Math.max(m, f.id), 0);
    const dense = maxNo <= DENSE_FIELD_NUMBERS;
    let slotOf: Int32Array | Map<number, number>;
    if (dense) {
      const a = new Int32Array(maxNo + 1).fill(-1);
      fields.forEach((f, s) => (a[f.id] = s));
      slotOf = a;
    } else slotOf = new Map(fields.map((f, s) => [f.id, s]));
    const path = this.path;
    return (r, start, end) => {
      const { count, vstart, first, last } = this;
      count.fill(0);
      r.pos = start;
      while (r.pos < end) {
        const tagPos = r.pos;
        const tag = readVarint(r);
        const no = tag >>> 3;
        const wt = tag & 7;
        if (no === 0 || r.hi !== 0) throw badData(path, `invalid field number at byte ${tagPos}`);
        const s = dense ? ((slotOf as Int32Array)[no] ?? -1) : ((slotOf as Map<number, number>).get(no) ?? -1);
        if (s < 0) {
          skipValue(r, wt, no, end, path);
          continue;
        }
        if (wt !== wires[s] && !(wt === WT_LEN && packable[s] === 1)) {
          throw badData(`${prefix}${(fields[s] as PbField).name}`, `wire type ${wt} does not match the field's type ${(fields[s] as PbField).type}`);
        }
        if ((count[s] as number) === 0) first[s] = tagPos;
        count[s] = (count[s] as number) + 1;
        vstart[s] = r.pos;
        skipValue(r, wt, no, end, path);
        last[s] = r.pos;
      }
      if (r.pos !== end) throw truncated(r, path);
    };
  }
}

/** The Protobuf compiler: messages here, values in protobuf-values.ts. */
export class ProtobufCompiler extends ProtobufValueCompiler {
  message(t: PbType, fields: readonly NestedField[], prefix: string): (sink: RecordSink) => Body {
    const find = this.index(fields, prefix);
    const used = new Set<number>();
    const claim = (tf: NestedField, what: string): void => {
      if (used.has(tf.id)) throw new ConfigError(`Protobuf fields of ${t.name} map to table field ${prefix}${tf.name} twice (${what})`);
      used.add(tf.id);
    };
    const slots = new MessageSlots(prefix);
    const emitters: Emitter[] = [];
    const oneofsDone = new Set<unknown>();
    for (const f of t.fieldsArray) {
      const oneof = realOneof(f);
      if (oneof !== null) {
        if (oneofsDone.has(oneof)) continue;
        oneofsDone.add(oneof);
        const tf = find(oneof.name);
        if (tf === undefined) continue; // not in the table: its members are skipped as unknown fields
        if (tf.type.kind !== 'struct') throw mismatch(`${prefix}${tf.name}`, `oneof ${oneof.name}`, tf.type, 'a oneof needs a struct of its members');
        claim(tf, 'oneof');
        emitters.push(this.oneof(oneof.fieldsArray, tf, tf.type.fields, prefix, slots));
        continue;
      }
      const tf = find(f.name);
      if (tf === undefined) continue; // not in the table: skipped as an unknown field
      claim(tf, f.name);
      const target: Target = { id: tf.id, type: tf.type, path: `${prefix}${tf.name}`, optional: !tf.required };
      if (f.map) emitters.push(this.mapField(f, target, slots));
      else if (f.repeated) emitters.push(this.repeatedField(f, target, slots));
      else emitters.push(this.singularField(f, target, slots));
    }
    const scan = slots.scanner(t, prefix);
    return (sink) => {
      const steps = emitters.map((e) => e(sink));
      return (r, start, end) => {
        scan(r, start, end);
        for (let i = 0; i < steps.length; i++) (steps[i] as (r: PbReader) => void)(r);
        r.pos = end;
      };
    };
  }

  /** A oneof into a struct of its members: the member set last wins (a oneof holds one value); none → null. */
  private oneof(members: readonly PbField[], tf: NestedField, memberFields: readonly NestedField[], prefix: string, slots: MessageSlots): Emitter {
    const opath = `${prefix}${tf.name}`;
    const mfind = this.index(memberFields, `${opath}.`);
    const compiled: { slot: number; spec: ValueSpec }[] = [];
    for (const m of members) {
      const mf = mfind(m.name);
      if (mf === undefined) continue;
      const spec = this.value(valueKind(m.type, m.resolvedType, `${opath}.${m.name}`), { id: mf.id, type: mf.type, path: `${opath}.${mf.name}`, optional: true });
      compiled.push({ slot: slots.add(m, spec), spec });
    }
    return (sink) => {
      const col = sink.struct(tf.id);
      const bound = compiled.map((m) => ({ slot: m.slot, v: m.spec.bind(sink) }));
      return (r) => {
        let win = -1;
        let at = -1;
        for (let i = 0; i < bound.length; i++) {
          const s = (bound[i] as { slot: number }).slot;
          if ((slots.count[s] as number) > 0 && (slots.last[s] as number) > at) {
            at = slots.last[s] as number;
            win = i;
          }
        }
        if (win < 0) {
          col.appendNull();
          return;
        }
        const b = bound[win] as { slot: number; v: BoundValue };
        col.begin();
        slots.emitSingular(r, b.slot, b.v);
        col.end();
      };
    };
  }

  /** A map field: its entries re-read from the span of its occurrences. */
  private mapField(f: PbField, target: Target, slots: MessageSlots): Emitter {
    const entry = this.mapEntry(f, target);
    const s = slots.add(f, { wire: WT_LEN, packable: false, bind: () => NO_VALUE });
    const no = f.id;
    const path = target.path;
    return (sink) => {
      const col = sink.map(target.id);
      const e = entry(sink);
      return (r) => {
        col.begin();
        if ((slots.count[s] as number) > 0) {
          const end = slots.last[s] as number;
          r.pos = slots.first[s] as number;
          while (r.pos < end) {
            const tag = readVarint(r);
            if (tag >>> 3 !== no) {
              skipValue(r, tag & 7, tag >>> 3, end, path);
              continue;
            }
            const n = readLength(r, end, path);
            const ps = r.pos;
            e(r, ps, ps + n);
          }
        }
        col.end();
      };
    };
  }

  /** A repeated field into a list: every occurrence in the span, packed runs and single values alike. */
  private repeatedField(f: PbField, target: Target, slots: MessageSlots): Emitter {
    const vk = valueKind(f.type, f.resolvedType, target.path);
    const tt = target.type;
    if (tt.kind !== 'list') throw mismatch(target.path, `repeated ${f.type}`, tt, 'a repeated field needs a list');
    const spec = this.value(vk, { id: tt.elementId, type: tt.element, path: `${target.path}.element`, optional: !tt.elementRequired });
    const s = slots.add(f, spec, true);
    const path = target.path;
    const packable = spec.packable;
    const wire = spec.wire;
    const no = f.id;
    return (sink) => {
      const col = sink.list(target.id);
      const v = spec.bind(sink);
      return (r) => {
        col.begin();
        if ((slots.count[s] as number) > 0) {
          const end = slots.last[s] as number;
          r.pos = slots.first[s] as number;
          while (r.pos < end) {
            const tag = readVarint(r);
            const wt = tag & 7;
            if (tag >>> 3 !== no) {
              skipValue(r, wt, tag >>> 3, end, path);
              continue;
            }
            if (wt === WT_LEN && packable) {
              const n = readLength(r, end, path);
              const pe = r.pos + n;
              while (r.pos < pe) v.read(r);
              if (r.pos !== pe) throw badData(path, 'packed values overrun their length');
            } else {
              if (wt !== wire) throw badData(path, `wire type ${wt} is not ${wire}`);
              v.read(r);
            }
          }
        }
        col.end();
      };
    };
  }

  /** A singular field: its last value, or what its presence rules say for an absent one. */
  private singularField(f: PbField, target: Target, slots: MessageSlots): Emitter {
    const vk = valueKind(f.type, f.resolvedType, target.path);
    const spec = this.value(vk, target);
    const presence = f.hasPresence;
    const required = f.required;
    const s = slots.add(f, spec);
    const path = target.path;
    return (sink) => {
      const v = spec.bind(sink);
      const col = columnFor(sink, target);
      // Absent: a field with presence is null (required: a DataError); a proto3 implicit scalar is its default.
      const absent = required
        ? (): void => {
            throw badData(path, 'required field is missing');
          }
        : presence || vk.kind === 'message' || vk.kind === 'timestamp' || vk.kind === 'wrapper'
          ? (): void => col.appendNull()
          : v.absent;
      const bv: BoundValue = { ...v, absent };
      return (r) => slots.emitSingular(r, s, bv);
    };
  }
}
