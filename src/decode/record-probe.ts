/**
 * One probe per record: everything a record must reveal before it is written — its route field and the
 * partition source fields of every table it may go to — read by ONE decode of one projection of its
 * writer schema, compiled once per (writer schema, table set).
 *
 * Fields are matched by name path in the writer schema (case-insensitive when asked), as the full decode
 * matches them. The projection keeps the writer's own types, which every format decodes into without a
 * conversion that could fail; a table that declares a field as an Iceberg promotion of the writer's type
 * (int → long, float → double, decimal to a wider precision) gets the value promoted, as the full decode
 * into that table would write it. A table that declares a type no promotion reaches (a JSON timestamp
 * string in a timestamptz column, an Avro timestamp-millis in a long column) needs the decoder's own
 * conversion: such a table's fields are read by a further projection of its own, typed as it declares
 * them — a second decode for that case only, never a different value from the full decode. A failure of
 * that projection (the writer type cannot become the table's, a value that does not convert) is that
 * table's, thrown when it asks for the value, not for every record.
 *
 * Owns: the projection plan, the per-table views of the values, and the route value's string form
 * (Java's `toString` of the field). Must not: route, open tables or know about writers (src/sink/ does),
 * or throw for control flow: what needs a registry fetch is a promise from `prepare`.
 */
import { IcefloeError } from '../core/errors.ts';
import type { IcebergType, PrimitiveValue, Schema } from '../iceberg/types.ts';
import { CaptureSink, fieldAtPath, projectSchema } from './probe.ts';
import type { TableDecoder } from './value-format.ts';

/** A field a table reads before writing: where it is in the table (names) and the type the table declares. */
export interface ProbeField {
  /** The names leading to it (`['meta', 'tenant']`); null when there is nothing to read (the value is null). */
  readonly path: readonly string[] | null;
  readonly type: IcebergType;
}

export interface ProbeRequest {
  /** The writer schema of the records this probe reads (the format's `sourceSchema`). */
  readonly source: Schema;
  /** The route field's names, or null when routing needs no value. */
  readonly routePath: readonly string[] | null;
  /** Per table: the fields it reads, in the order it will ask for them (`ProbeView.value(i)`). */
  readonly tables: ReadonlyMap<string, readonly ProbeField[]>;
  /** `iceberg.tables.schema-case-insensitive`. */
  readonly caseInsensitive: boolean;
}

/** One table's values of the record last read, by the index of the field in its request. */
/** One table's values of the record last read, by the index of the field in its request. */
export interface ProbeView {
  value(field: number): PrimitiveValue | null;
}

type Convert = (v: PrimitiveValue) => PrimitiveValue;

/** Where one reader finds its value: which projection, which writer field, and the promotion to apply. */
interface Slot {
  readonly group: number;
  readonly id: number;
  readonly convert: Convert | undefined;
}

const ABSENT: Slot = { group: -1, id: -1, convert: undefined };
const UTF8 = new TextDecoder('utf-8');

/** A projection with one type per leaf: the writer's own (group 0), or the tables' where they differ. */
interface Group {
  readonly types: Map<number, IcebergType>;
  readonly capture: CaptureSink;
  decoder?: TableDecoder;
  /** A further projection's failure for the record last read (or for good, from `prepare`). */
  failure?: unknown;
  failedForGood?: boolean;
}

export class RecordProbe {
  /** False when there is nothing to read (no route field, no table reads a field of this writer schema). */
  readonly reads: boolean;
  private readonly groups: Group[];
  private readonly route: Slot | undefined;
  private readonly views = new Map<string, ProbeView>();

  /** Plans and compiles the probe; `decoderFor` is the format's (a projection is a table schema to it). */
  constructor(request: ProbeRequest, decoderFor: (projection: Schema) => TableDecoder) {
    const planner = new Planner(request);
    this.route = request.routePath === null ? undefined : planner.slot(request.routePath, undefined);
    const tableSlots = new Map<string, Slot[]>();
    for (const [name, fields] of request.tables) tableSlots.set(name, fields.map((f) => (f.path === null ? ABSENT : planner.slot(f.path, f.type, name))));
    this.groups = planner.groups;
    this.groups.forEach((g, i) => {
      const projection = projectSchema(request.source, new Set(g.types.keys()), g.types);
      if (projection === undefined) return;
      try {
        g.decoder = decoderFor(projection);
      } catch (e) {
        if (i === 0 || !isDeterministic(e)) throw e;
        g.failure = e; // a further projection that cannot be built fails only the tables that read it
        g.failedForGood = true;
      }
    });
    this.reads = this.groups.some((g) => g.decoder !== undefined);
    for (const [name, slots] of tableSlots) this.views.set(name, { value: (i) => this.valueAt(slots[i] ?? ABSENT) });
  }

  /** Registry lookups the probe needs before `read` (undefined when none). */
  prepare(msg: Uint8Array): Promise<unknown> | undefined {
    let pending: Promise<unknown>[] | undefined;
    for (let i = 0; i < this.groups.length; i++) {
      const g = this.groups[i] as Group;
      if (g.failedForGood === true) continue;
      let p = g.decoder?.prepare(msg);
      if (p === undefined) continue;
      if (i > 0) {
        p = p.catch((e: unknown) => {
          if (!isDeterministic(e)) throw e;
          g.failure = e;
          g.failedForGood = true;
        });
      }
      (pending ??= []).push(p);
    }
    return pending === undefined ? undefined : pending.length === 1 ? pending[0] : Promise.all(pending);
  }

  /** Decodes the record's projected fields (once per projection: normally once); DataError for bad bytes. */
  read(msg: Uint8Array): void {
    const main = this.groups[0] as Group;
    if (main.decoder !== undefined) {
      main.capture.reset();
      main.decoder.decode(msg, main.capture);
    }
    for (let i = 1; i < this.groups.length; i++) {
      const g = this.groups[i] as Group;
      if (g.failedForGood === true || g.decoder === undefined) continue;
      g.failure = undefined;
      g.capture.reset();
      try {
        g.decoder.decode(msg, g.capture);
      } catch (e) {
        if (!isDeterministic(e)) throw e;
        g.failure = e;
      }
    }
  }

  /** The route field of the record last read, as a string (Java's `toString`; bytes as UTF-8); null when absent or null. */
  routeValue(): string | null {
    const v = this.route === undefined ? null : this.valueAt(this.route);
    return v === null ? null : v instanceof Uint8Array ? UTF8.decode(v) : String(v);
  }

  /** A table's values of the record last read; undefined for a table the probe was not planned for. */
  viewOf(table: string): ProbeView | undefined {
    return this.views.get(table);
  }

  private valueAt(s: Slot): PrimitiveValue | null {
    if (s.group < 0) return null;
    const g = this.groups[s.group] as Group;
    if (g.failure !== undefined) throw g.failure;
    const v = g.capture.value(s.id);
    return v === null || s.convert === undefined ? v : s.convert(v);
  }
}

/** A failure that every retry would repeat (bad bytes, a type that cannot convert), as opposed to a fetch. */
function isDeterministic(e: unknown): boolean {
  return e instanceof IcefloeError && !e.retriable;
}

/** Assigns each reader a leaf of a projection, typed as described in the module header. */
class Planner {
  readonly groups: Group[] = [{ types: new Map(), capture: new CaptureSink() }];
  private readonly request: ProbeRequest;

  constructor(request: ProbeRequest) {
    this.request = request;
  }

  /** Per table that needs one, its further projection (by group index). */
  private readonly further = new Map<string, number>();

  /** The slot of one reader: the route (`type` undefined: the writer's own type) or a table's field. */
  slot(path: readonly string[], type: IcebergType | undefined, table?: string): Slot {
    const field = fieldAtPath(this.request.source, path, this.request.caseInsensitive);
    if (field === undefined) return ABSENT; // not in this writer schema: null, as the full decode leaves it
    const { id } = field;
    const own = field.type;
    if (type === undefined || sameType(own, type)) return this.inMain(id, own, undefined);
    const convert = promotion(own, type);
    if (convert !== undefined) return this.inMain(id, own, convert);
    return { group: this.furtherGroup(table ?? '', id, type), id, convert: undefined };
  }

  private inMain(id: number, own: IcebergType, convert: Convert | undefined): Slot {
    (this.groups[0] as Group).types.set(id, own);
    return { group: 0, id, convert };
  }

  /** The table's own further projection (one per table, so a failure there is that table's alone), with `id` typed `want`. */
  private furtherGroup(table: string, id: number, want: IcebergType): number {
    let g = this.further.get(table);
    if (g === undefined) {
      g = this.groups.push({ types: new Map(), capture: new CaptureSink() }) - 1;
      this.further.set(table, g);
    }
    (this.groups[g] as Group).types.set(id, want);
    return g;
  }
}

function sameType(a: IcebergType, b: IcebergType): boolean {
  if (a.kind === 'decimal' && b.kind === 'decimal') return a.precision === b.precision && a.scale === b.scale;
  if (a.kind === 'fixed' && b.kind === 'fixed') return a.length === b.length;
  return a.kind === b.kind && a.kind !== 'struct' && a.kind !== 'list' && a.kind !== 'map';
}

const toLong: Convert = (v) => (typeof v === 'number' ? BigInt(v) : v);
const unchanged: Convert = (v) => v;

/** The Iceberg type promotions (spec "Schema Evolution") as value conversions; undefined for any other pair. */
function promotion(from: IcebergType, to: IcebergType): Convert | undefined {
  if (from.kind === 'int' && to.kind === 'long') return toLong;
  if (from.kind === 'float' && to.kind === 'double') return unchanged; // a float is already an exact JS number
  if (from.kind === 'decimal' && to.kind === 'decimal' && from.scale === to.scale && from.precision <= to.precision) return unchanged; // the unscaled value
  return undefined;
}
