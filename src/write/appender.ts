/**
 * RecordAppender: the record-at-a-time, column-at-a-time write API. A decoder looks its columns up once
 * (by field id), then for every record appends each decoded value straight into its column and calls
 * `endRecord()`. No row object exists anywhere on this path.
 *
 *   const id = appender.long(1), name = appender.string(2), tags = appender.list(3);
 *   const tag = tags.element as StringColumn;
 *   for (const msg of batch) {
 *     id.appendNumber(...); name.append(...);
 *     tags.begin(); for (...) tag.append(...); tags.end();
 *     if (appender.endRecord()) await writer.flushIfNeeded();
 *   }
 *
 * Owns: record boundaries (every top-level column gets exactly one slot per record; an optional one
 * left out becomes null, a required one left out is a DataError), `abortRecord` (drop a half-appended
 * record after a DataError, so it can go to the DLQ without corrupting the batch), and sealing: turning
 * the buffered rows into one Arrow IPC record batch plus that batch's metrics, then reusing the buffers.
 * Must not: do I/O or decide when to flush (the writer does; `endRecord` only reports that it should).
 */
import * as arrow from 'apache-arrow';
import { ConfigError, FatalError } from '../core/errors.ts';
import type { PrimitiveType } from '../iceberg/types.ts';
import {
  BinaryColumn,
  BooleanColumn,
  DecimalColumn,
  DoubleColumn,
  FixedColumn,
  FloatColumn,
  IntColumn,
  ListColumn,
  LongColumn,
  MapColumn,
  StringColumn,
  StructColumn,
  completeChildren,
  createColumn,
} from './columns.ts';
import type { AnyColumn, Column } from './columns.ts';
import type { ColumnLayout, LayoutNode } from './layout.ts';
import { newStats } from './metrics.ts';
import type { AnyStats, BooleanStats, BytesStats, DecimalStats, LongStats, NumberStats } from './metrics.ts';
import type { MetricsMode } from '../iceberg/bounds.ts';

/** One sealed row group: Arrow IPC bytes for the encoder and the metrics of its rows. */
export interface SealedBatch {
  readonly rows: number;
  /** Bytes of buffered data the batch held (its raw size, before encoding). */
  readonly rawBytes: number;
  /** An Arrow IPC stream with exactly one record batch. */
  readonly ipc: Uint8Array;
  /** Per Parquet leaf (by leaf index): metrics of this batch; undefined for leaves without counts. */
  readonly stats: readonly (AnyStats | undefined)[];
}

interface MetricLeaf {
  readonly column: AnyColumn;
  readonly type: PrimitiveType;
  readonly mode: MetricsMode;
  readonly leafIndex: number;
  /** The optional columns from the top-level ancestor down to the leaf: a null in any makes the leaf null. */
  readonly chain: readonly Column[];
}

const PRESSURE_CHECK_MASK = 255; // check sizes every 256 records

export class RecordAppender {
  readonly layout: ColumnLayout;
  /** Top-level columns in schema order. */
  readonly columns: readonly AnyColumn[];
  /** Records completed since the last seal. */
  rows = 0;
  /** Set by the owning writer: the row count that makes `endRecord` ask for a flush. */
  rowLimit = Number.POSITIVE_INFINITY;
  /** Set by the owning writer: asked every 256 records whether buffers or the budget want a flush. */
  pressure: () => boolean = () => false;

  private readonly byId = new Map<number, AnyColumn>();
  private readonly metricLeaves: MetricLeaf[] = [];
  private scratch = new Uint8Array(0);

  constructor(layout: ColumnLayout, modeOf: (node: LayoutNode) => MetricsMode) {
    this.layout = layout;
    this.columns = layout.roots.map(createColumn);
    const walk = (c: AnyColumn, chain: readonly Column[]): void => {
      this.byId.set(c.fieldId, c);
      const here = c.node.required ? chain : [...chain, c];
      if (c instanceof StructColumn) for (const k of c.children) walk(k, here);
      else if (c instanceof ListColumn) walk(c.element, here);
      else if (c instanceof MapColumn) {
        walk(c.key, here);
        walk(c.value, here);
      } else if (!c.node.inRepeated) {
        const mode = modeOf(c.node);
        if (mode.kind !== 'none') {
          this.metricLeaves.push({ column: c, type: c.node.type as PrimitiveType, mode, leafIndex: c.node.leafIndex, chain: here });
        }
      }
    };
    for (const c of this.columns) walk(c, []);
  }

  // -- column lookup (once per decoder, not per record) ------------------------------------------

  /** The column of any field (top level, struct child, list element, map key or value) by field id. */
  column(fieldId: number): AnyColumn {
    const c = this.byId.get(fieldId);
    if (c === undefined) throw new ConfigError(`no field with id ${fieldId} in schema ${this.layout.schema.schemaId}`);
    return c;
  }
  boolean(id: number): BooleanColumn {
    return this.typed(id, BooleanColumn);
  }
  /** int and date columns. */
  int(id: number): IntColumn {
    return this.typed(id, IntColumn);
  }
  /** long, time, timestamp, timestamptz (µs) and the _ns variants. */
  long(id: number): LongColumn {
    return this.typed(id, LongColumn);
  }
  float(id: number): FloatColumn {
    return this.typed(id, FloatColumn);
  }
  double(id: number): DoubleColumn {
    return this.typed(id, DoubleColumn);
  }
  decimal(id: number): DecimalColumn {
    return this.typed(id, DecimalColumn);
  }
  string(id: number): StringColumn {
    return this.typed(id, StringColumn);
  }
  binary(id: number): BinaryColumn {
    return this.typed(id, BinaryColumn);
  }
  /** fixed(L) and uuid columns. */
  fixed(id: number): FixedColumn {
    return this.typed(id, FixedColumn);
  }
  struct(id: number): StructColumn {
    return this.typed(id, StructColumn);
  }
  list(id: number): ListColumn {
    return this.typed(id, ListColumn);
  }
  map(id: number): MapColumn {
    return this.typed(id, MapColumn);
  }

  private typed<T extends AnyColumn>(id: number, ctor: abstract new (...args: never[]) => T): T {
    const c = this.column(id);
    if (!(c instanceof ctor)) throw new ConfigError(`field ${c.node.path} (id ${id}) is a ${c.kind} column, not ${ctor.name}`);
    return c;
  }

  // -- records ---------------------------------------------------------------------------------------

  /**
   * Closes the current record. Returns true when the owning writer should be given a chance to flush
   * (`await writer.flushIfNeeded()`): the row group is full, or buffers/the memory budget are over.
   */
  endRecord(): boolean {
    const n = this.rows + 1;
    const cols = this.columns;
    for (let i = 0; i < cols.length; i++) {
      if ((cols[i] as AnyColumn).length !== n) completeChildren(undefined, cols, n);
    }
    this.rows = n;
    return n >= this.rowLimit || ((n & PRESSURE_CHECK_MASK) === 0 && this.pressure());
  }

  /** Drops whatever the current (unfinished) record appended, at every nesting level. */
  abortRecord(): void {
    for (const c of this.columns) c.truncate(this.rows);
  }

  /** Bytes of data buffered since the last seal. */
  usedBytes(): number {
    let n = 0;
    for (const c of this.columns) n += c.usedBytes();
    return n;
  }

  /** Bytes held by the buffers, including capacity kept for reuse. */
  heldBytes(): number {
    let n = 0;
    for (const c of this.columns) n += c.heldBytes();
    return n + this.scratch.byteLength;
  }

  /** Frees buffer capacity (only between records with nothing buffered). */
  release(): void {
    if (this.rows !== 0) return;
    for (const c of this.columns) c.release();
    this.scratch = new Uint8Array(0);
  }

  /**
   * Seals the buffered records: computes their metrics, serialises them as one Arrow IPC record batch
   * (a copy), and resets the columns for reuse. Undefined when nothing is buffered.
   */
  seal(): SealedBatch | undefined {
    const n = this.rows;
    if (n === 0) return undefined;
    for (const c of this.columns) {
      if (c.length !== n) throw new FatalError(`column ${c.node.path} has ${c.length} values for ${n} records (an unfinished record?)`);
    }
    const stats: (AnyStats | undefined)[] = new Array<AnyStats | undefined>(this.layout.leaves.length).fill(undefined);
    for (const m of this.metricLeaves) stats[m.leafIndex] = this.scan(m, n);
    const rawBytes = this.usedBytes();
    const data = arrow.makeData({ type: this.layout.arrowStruct, length: n, nullCount: 0, children: this.columns.map((c) => c.toData()) });
    const batch = new arrow.RecordBatch(this.layout.arrowSchema, data);
    const ipc = arrow.tableToIPC(new arrow.Table([batch]), 'stream');
    for (const c of this.columns) c.truncate(0);
    this.rows = 0;
    return { rows: n, rawBytes, ipc, stats };
  }

  private mask(chain: readonly Column[], n: number): Uint8Array | null {
    let first: Uint8Array | null = null;
    let combined: Uint8Array | null = null;
    for (const c of chain) {
      const bm = c.nullBitmap();
      if (bm === null) continue;
      if (first === null) {
        first = bm;
        continue;
      }
      const bytes = (n + 7) >>> 3;
      if (combined === null) {
        if (this.scratch.length < bytes) this.scratch = new Uint8Array(bytes);
        combined = this.scratch;
        for (let i = 0; i < bytes; i++) combined[i] = first[i] as number;
      }
      for (let i = 0; i < bytes; i++) combined[i]! &= bm[i] as number;
    }
    return combined ?? first;
  }

  private scan(m: MetricLeaf, n: number): AnyStats | undefined {
    const s = newStats(m.type, m.mode);
    if (s === undefined) return undefined;
    const mask = this.mask(m.chain, n);
    const c = m.column;
    switch (c.kind) {
      case 'int':
        (s as NumberStats).scan(c.values, n, mask, false);
        break;
      case 'float':
      case 'double':
        (s as NumberStats).scan(c.values, n, mask, true);
        break;
      case 'long':
        (s as LongStats).scan(c.words, n, mask);
        break;
      case 'boolean':
        (s as BooleanStats).scan(c.bits, n, mask);
        break;
      case 'decimal':
        (s as DecimalStats).scan(c.words, n, mask);
        break;
      case 'string':
      case 'binary':
        (s as BytesStats).scan(c.data, c.offsets, 0, n, mask);
        break;
      case 'fixed':
        (s as BytesStats).scan(c.bytes, null, c.width, n, mask);
        break;
      default:
        throw new Error(`not a leaf: ${c.kind}`);
    }
    return s;
  }
}
