/**
 * Nested columns: struct (row-aligned children), list (offsets into the element column) and map (offsets
 * into parallel key and value columns), and `AnyColumn`, the union of every column class.
 *
 * Owns: keeping children in step with their parent (a child left out of a struct value becomes null or,
 * if required, a DataError; appends out of step are a FatalError).
 * Must not: know the leaf value types beyond the union (createColumn in columns.ts builds the tree).
 */
import * as arrow from 'apache-arrow';
import { DataError, FatalError } from '../core/errors.ts';
import { Column } from './column-base.ts';
import type { BinaryColumn, FixedColumn, StringColumn } from './column-bytes.ts';
import type { BooleanColumn, DecimalColumn, DoubleColumn, FloatColumn, IntColumn, LongColumn } from './column-primitives.ts';
import type { LayoutNode } from './layout.ts';

export class StructColumn extends Column {
  readonly kind = 'struct';
  readonly children: readonly AnyColumn[];

  constructor(node: LayoutNode, children: readonly AnyColumn[]) {
    super(node);
    this.children = children;
  }

  /** Starts a present struct value; append each child, then call end(). */
  begin(): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  /** Ends the value: optional children left out become null; a required one left out is a DataError. */
  end(): void {
    completeChildren(this.node, this.children, this.length);
  }

  protected resize(): void {}
  protected placeEmpty(): void {
    for (const c of this.children) c.fillAbsent();
  }
  protected dataBytes(): number {
    let n = 0;
    for (const c of this.children) n += c.usedBytes();
    return n;
  }
  protected capacityBytes(): number {
    let n = 0;
    for (const c of this.children) n += c.heldBytes();
    return n;
  }
  protected override truncateChildren(n: number): void {
    for (const c of this.children) c.truncate(n);
  }
  protected override releaseChildren(): void {
    for (const c of this.children) c.release();
  }
  toData(): arrow.Data {
    const n = this.length;
    for (const c of this.children) checkChildLength(this.node, c, n);
    return arrow.makeData({ type: this.node.arrowField.type as arrow.Struct, length: n, ...this.nullProps(), children: this.children.map((c) => c.toData()) });
  }
}

/** Brings every child to `rows` slots: missing optional → null, missing required → DataError, extra → FatalError. */
export function completeChildren(owner: LayoutNode | undefined, children: readonly AnyColumn[], rows: number): void {
  for (const c of children) {
    const len = c.length;
    if (len === rows) continue;
    if (len === rows - 1) {
      if (c.node.required) {
        throw new DataError(`required field ${c.node.path} (id ${c.fieldId}) is missing`, { stage: 'convert', context: { fieldId: c.fieldId, field: c.node.path } });
      }
      c.appendNull();
      continue;
    }
    const where = owner === undefined ? 'record' : owner.path;
    throw new FatalError(`column ${c.node.path} has ${len} values for ${rows} rows of ${where}: appends out of step`, {
      context: { fieldId: c.fieldId, field: c.node.path },
    });
  }
}

/** list: offsets into the element column. */
export class ListColumn extends Column {
  readonly kind = 'list';
  readonly element: AnyColumn;
  offsets = new Int32Array(1);

  constructor(node: LayoutNode, element: AnyColumn) {
    super(node);
    this.element = element;
  }

  /** Starts a list value (no-op, for symmetry); append to `element`, then call end(). */
  begin(): void {}

  /** Ends the list value: its elements are those appended to `element` since the previous end. */
  end(): void {
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.offsets[i + 1] = this.element.length;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const o = new Int32Array(cap + 1);
    o.set(this.offsets.subarray(0, Math.min(this.length, cap) + 1));
    this.offsets = o;
  }
  protected placeEmpty(i: number): void {
    const at = this.offsets[i] as number;
    // Elements appended after begin() of a list that then became null would be orphaned: drop them.
    this.element.truncate(at);
    this.offsets[i + 1] = at;
  }
  protected dataBytes(): number {
    return 4 * (this.length + 1) + this.element.usedBytes();
  }
  protected capacityBytes(): number {
    return this.offsets.byteLength + this.element.heldBytes();
  }
  protected override truncateChildren(n: number): void {
    this.element.truncate(this.offsets[n] as number);
  }
  protected override releaseChildren(): void {
    this.element.release();
  }
  toData(): arrow.Data {
    const n = this.length;
    checkChildLength(this.node, this.element, this.offsets[n] as number);
    return arrow.makeData({
      type: this.node.arrowField.type as arrow.List,
      length: n,
      ...this.nullProps(),
      valueOffsets: this.offsets.subarray(0, n + 1),
      child: this.element.toData(),
    });
  }
}

/** map: offsets into parallel key and value columns (Arrow Map of `key_value` structs). */
export class MapColumn extends Column {
  readonly kind = 'map';
  readonly key: AnyColumn;
  readonly value: AnyColumn;
  offsets = new Int32Array(1);

  constructor(node: LayoutNode, key: AnyColumn, value: AnyColumn) {
    super(node);
    this.key = key;
    this.value = value;
  }

  /** Starts a map value (no-op, for symmetry); append key and value per entry, then call end(). */
  begin(): void {}

  end(): void {
    const k = this.key.length;
    if (this.value.length !== k) {
      throw new FatalError(`map ${this.node.path}: ${k} keys but ${this.value.length} values`, { context: { fieldId: this.fieldId } });
    }
    const i = this.length;
    if (i === this.cap) this.grow(i + 1);
    this.offsets[i + 1] = k;
    if (this.validity !== null) this.setValid(i);
    this.length = i + 1;
  }

  protected resize(cap: number): void {
    const o = new Int32Array(cap + 1);
    o.set(this.offsets.subarray(0, Math.min(this.length, cap) + 1));
    this.offsets = o;
  }
  protected placeEmpty(i: number): void {
    const at = this.offsets[i] as number;
    this.key.truncate(at);
    this.value.truncate(at);
    this.offsets[i + 1] = at;
  }
  protected dataBytes(): number {
    return 4 * (this.length + 1) + this.key.usedBytes() + this.value.usedBytes();
  }
  protected capacityBytes(): number {
    return this.offsets.byteLength + this.key.heldBytes() + this.value.heldBytes();
  }
  protected override truncateChildren(n: number): void {
    const at = this.offsets[n] as number;
    this.key.truncate(at);
    this.value.truncate(at);
  }
  protected override releaseChildren(): void {
    this.key.release();
    this.value.release();
  }
  toData(): arrow.Data {
    const n = this.length;
    const entries = this.offsets[n] as number;
    checkChildLength(this.node, this.key, entries);
    checkChildLength(this.node, this.value, entries);
    const type = this.node.arrowField.type as arrow.Map_;
    const entriesType = type.children[0]?.type as arrow.Struct;
    const child = arrow.makeData({ type: entriesType, length: entries, nullCount: 0, children: [this.key.toData(), this.value.toData()] });
    return arrow.makeData({ type, length: n, ...this.nullProps(), valueOffsets: this.offsets.subarray(0, n + 1), child });
  }
}

function checkChildLength(owner: LayoutNode, child: Column, expected: number): void {
  if (child.length !== expected) {
    throw new FatalError(`column ${child.node.path} has ${child.length} values but ${owner.path} ends at ${expected}: a begin() without end()?`, {
      context: { fieldId: child.fieldId },
    });
  }
}

export type AnyColumn =
  | BooleanColumn
  | IntColumn
  | LongColumn
  | FloatColumn
  | DoubleColumn
  | DecimalColumn
  | StringColumn
  | BinaryColumn
  | FixedColumn
  | StructColumn
  | ListColumn
  | MapColumn;
