/**
 * The Parquet footer of a file we just wrote: a minimal Thrift compact-protocol reader for the parts of
 * `FileMetaData` the writer needs (parquet-format's parquet.thrift), and one surgical edit.
 *
 * Reads: schema elements (name, field_id, children, logical type present, byte position), row groups
 * (rows, start offset for split_offsets) and column chunks (path, compressed size for column_sizes,
 * page types from encoding_stats to check for V1 pages).
 * Edits (`editFooter`): adds the UUID logical type to the FIXED_LEN_BYTE_ARRAY(16) elements of Iceberg
 * uuid columns (arrow-rs writes it only for the `arrow.uuid` extension type, which parquet-wasm 0.8.0 does
 * not enable; Iceberg (spec Appendix A) and Java write `fixed_len_byte_array(16)` annotated UUID); sets a
 * decimal element's declared precision and replaces a key/value entry (decimal(1, s), see layout.ts).
 * Changing bytes inside the footer moves no offset the footer holds (they all point before it), so only
 * the footer length in the trailer changes.
 *
 * Why not hyparquet: it is a test-only dependency here; this reader is ~200 lines and the tests compare
 * it with hyparquet on every file they write.
 */
import { FatalError } from '../core/errors.ts';

const T_STOP = 0;
const T_TRUE = 1;
const T_FALSE = 2;
const T_BYTE = 3;
const T_I16 = 4;
const T_I32 = 5;
const T_I64 = 6;
const T_DOUBLE = 7;
const T_BINARY = 8;
const T_LIST = 9;
const T_SET = 10;
const T_MAP = 11;
const T_STRUCT = 12;
const T_UUID = 13;

/** parquet.thrift PageType */
export const PAGE_DATA_V1 = 0;
export const PAGE_DATA_V2 = 3;

export interface FooterSchemaElement {
  readonly name: string;
  readonly type: number | undefined;
  readonly typeLength: number | undefined;
  readonly repetition: number | undefined;
  readonly numChildren: number | undefined;
  readonly fieldId: number | undefined;
  readonly hasLogicalType: boolean;
  /** Decimal precision as the element declares it (converted-type field 8), when it has one. */
  readonly precision: number | undefined;
  /** Spans (within the footer bytes) of the precision varints: field 8, and the DECIMAL logical type's. */
  readonly precisionSpans: readonly Span[];
  /** Offset of the element's STOP byte within the footer bytes, and the id of its last field (for edits). */
  readonly stopAt: number;
  readonly lastFieldId: number;
}

/** A byte range [start, end) within the footer bytes. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/** One key/value entry of the file's metadata, with the span of its value (length varint and bytes). */
export interface FooterKeyValue {
  readonly key: string;
  readonly valueSpan: Span | undefined;
}

export interface FooterColumn {
  readonly path: readonly string[];
  readonly totalCompressedSize: number;
  readonly numValues: number;
  readonly dataPageOffset: number;
  readonly dictionaryPageOffset: number | undefined;
  readonly codec: number;
  /** Page types seen (from encoding_stats), when the writer recorded them. */
  readonly pageTypes: readonly number[];
}

export interface FooterRowGroup {
  readonly numRows: number;
  readonly fileOffset: number | undefined;
  readonly columns: readonly FooterColumn[];
}

export interface ParsedFooter {
  readonly numRows: number;
  readonly schema: readonly FooterSchemaElement[];
  readonly rowGroups: readonly FooterRowGroup[];
  readonly keyValues: readonly FooterKeyValue[];
}

function corrupt(what: string): FatalError {
  return new FatalError(`unreadable Parquet footer: ${what}`);
}

class CompactReader {
  pos = 0;
  readonly b: Uint8Array;
  constructor(b: Uint8Array) {
    this.b = b;
  }

  byte(): number {
    if (this.pos >= this.b.length) throw corrupt('truncated');
    return this.b[this.pos++] as number;
  }

  /** Unsigned varint; exact up to 2^53. */
  varint(): number {
    let out = 0;
    let mul = 1;
    for (;;) {
      const x = this.byte();
      out += (x & 0x7f) * mul;
      if ((x & 0x80) === 0) return out;
      mul *= 128;
      if (mul > 2 ** 63) throw corrupt('varint too long');
    }
  }

  zigzag(): number {
    const n = this.varint();
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
  }

  binary(): Uint8Array {
    const n = this.varint();
    if (this.pos + n > this.b.length) throw corrupt('truncated binary');
    const out = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  string(): string {
    return new TextDecoder().decode(this.binary());
  }

  /** Field header: undefined at STOP. */
  field(lastId: number): { id: number; type: number } | undefined {
    const h = this.byte();
    if (h === T_STOP) return undefined;
    const type = h & 0x0f;
    const delta = h >> 4;
    const id = delta === 0 ? this.zigzag() : lastId + delta;
    return { id, type };
  }

  list(): { size: number; type: number } {
    const h = this.byte();
    const short = h >> 4;
    return { size: short === 15 ? this.varint() : short, type: h & 0x0f };
  }

  skip(type: number): void {
    switch (type) {
      case T_TRUE:
      case T_FALSE:
        return;
      case T_BYTE:
        this.pos++;
        return;
      case T_I16:
      case T_I32:
      case T_I64:
        this.varint();
        return;
      case T_DOUBLE:
        this.pos += 8;
        return;
      case T_BINARY:
        this.binary();
        return;
      case T_UUID:
        this.pos += 16;
        return;
      case T_LIST:
      case T_SET: {
        const { size, type: et } = this.list();
        for (let i = 0; i < size; i++) {
          if (et === T_TRUE || et === T_FALSE) this.pos++;
          else this.skip(et);
        }
        return;
      }
      case T_MAP: {
        const size = this.varint();
        if (size === 0) return;
        const kv = this.byte();
        for (let i = 0; i < size; i++) {
          this.skip(kv >> 4);
          this.skip(kv & 0x0f);
        }
        return;
      }
      case T_STRUCT: {
        let last = 0;
        for (;;) {
          const f = this.field(last);
          if (f === undefined) return;
          this.skip(f.type);
          last = f.id;
        }
      }
      default:
        throw corrupt(`unknown compact type ${type}`);
    }
  }

  /** Reads a struct, handing each field to `on`, which returns false to have it skipped. */
  struct(on: (id: number, type: number) => boolean): { stopAt: number; lastId: number } {
    let last = 0;
    for (;;) {
      const at = this.pos;
      const f = this.field(last);
      if (f === undefined) return { stopAt: at, lastId: last };
      if (!on(f.id, f.type)) this.skip(f.type);
      last = f.id;
    }
  }

  listOf<T>(read: () => T): T[] {
    const { size } = this.list();
    const out: T[] = [];
    for (let i = 0; i < size; i++) out.push(read());
    return out;
  }
}

function readSchemaElement(r: CompactReader): FooterSchemaElement {
  let name = '';
  let type: number | undefined;
  let typeLength: number | undefined;
  let repetition: number | undefined;
  let numChildren: number | undefined;
  let fieldId: number | undefined;
  let hasLogicalType = false;
  let precision: number | undefined;
  const precisionSpans: Span[] = [];
  const { stopAt, lastId } = r.struct((id, t) => {
    if (id === 1 && t === T_I32) type = r.zigzag();
    else if (id === 2 && t === T_I32) typeLength = r.zigzag();
    else if (id === 3 && t === T_I32) repetition = r.zigzag();
    else if (id === 4 && t === T_BINARY) name = r.string();
    else if (id === 5 && t === T_I32) numChildren = r.zigzag();
    else if (id === 8 && t === T_I32) {
      const start = r.pos;
      precision = r.zigzag();
      precisionSpans.push({ start, end: r.pos });
    } else if (id === 9 && t === T_I32) fieldId = r.zigzag();
    else if (id === 10 && t === T_STRUCT) {
      hasLogicalType = true;
      // LogicalType is a union; member 5 is DecimalType {1: scale, 2: precision}.
      r.struct((member, mt) => {
        if (member !== 5 || mt !== T_STRUCT) return false;
        r.struct((fid, ft) => {
          if (fid !== 2 || ft !== T_I32) return false;
          const start = r.pos;
          r.zigzag();
          precisionSpans.push({ start, end: r.pos });
          return true;
        });
        return true;
      });
    } else return false;
    return true;
  });
  return { name, type, typeLength, repetition, numChildren, fieldId, hasLogicalType, precision, precisionSpans, stopAt, lastFieldId: lastId };
}

function readKeyValue(r: CompactReader): FooterKeyValue {
  let key = '';
  let valueSpan: Span | undefined;
  r.struct((id, t) => {
    if (id === 1 && t === T_BINARY) key = r.string();
    else if (id === 2 && t === T_BINARY) {
      const start = r.pos;
      r.binary();
      valueSpan = { start, end: r.pos };
    } else return false;
    return true;
  });
  return { key, valueSpan };
}

function readColumnMeta(r: CompactReader): FooterColumn {
  let path: string[] = [];
  let totalCompressedSize = 0;
  let numValues = 0;
  let dataPageOffset = 0;
  let dictionaryPageOffset: number | undefined;
  let codec = 0;
  const pageTypes: number[] = [];
  r.struct((id, t) => {
    if (id === 3 && t === T_LIST) path = r.listOf(() => r.string());
    else if (id === 4 && t === T_I32) codec = r.zigzag();
    else if (id === 5 && t === T_I64) numValues = r.zigzag();
    else if (id === 7 && t === T_I64) totalCompressedSize = r.zigzag();
    else if (id === 9 && t === T_I64) dataPageOffset = r.zigzag();
    else if (id === 11 && t === T_I64) dictionaryPageOffset = r.zigzag();
    else if (id === 13 && t === T_LIST) {
      r.listOf(() =>
        r.struct((sid, st) => {
          if (sid === 1 && st === T_I32) {
            pageTypes.push(r.zigzag());
            return true;
          }
          return false;
        }),
      );
    } else return false;
    return true;
  });
  return { path, totalCompressedSize, numValues, dataPageOffset, dictionaryPageOffset, codec, pageTypes };
}

function readColumnChunk(r: CompactReader): FooterColumn {
  let meta: FooterColumn | undefined;
  r.struct((id, t) => {
    if (id === 3 && t === T_STRUCT) {
      meta = readColumnMeta(r);
      return true;
    }
    return false;
  });
  if (meta === undefined) throw corrupt('column chunk without meta_data');
  return meta;
}

function readRowGroup(r: CompactReader): FooterRowGroup {
  let columns: FooterColumn[] = [];
  let numRows = 0;
  let fileOffset: number | undefined;
  r.struct((id, t) => {
    if (id === 1 && t === T_LIST) columns = r.listOf(() => readColumnChunk(r));
    else if (id === 3 && t === T_I64) numRows = r.zigzag();
    else if (id === 5 && t === T_I64) fileOffset = r.zigzag();
    else return false;
    return true;
  });
  return { numRows, fileOffset, columns };
}

/** Parses the Thrift FileMetaData bytes (the footer without its 8-byte trailer). */
export function parseFooter(footer: Uint8Array): ParsedFooter {
  const r = new CompactReader(footer);
  let schema: FooterSchemaElement[] = [];
  let rowGroups: FooterRowGroup[] = [];
  let keyValues: FooterKeyValue[] = [];
  let numRows = 0;
  r.struct((id, t) => {
    if (id === 2 && t === T_LIST) schema = r.listOf(() => readSchemaElement(r));
    else if (id === 3 && t === T_I64) numRows = r.zigzag();
    else if (id === 4 && t === T_LIST) rowGroups = r.listOf(() => readRowGroup(r));
    else if (id === 5 && t === T_LIST) keyValues = r.listOf(() => readKeyValue(r));
    else return false;
    return true;
  });
  return { numRows, schema, rowGroups, keyValues };
}

/** Where the footer sits in the last bytes of a file: [footer][u32 length]["PAR1"]. */
export function locateFooter(tail: Uint8Array): { start: number; length: number } {
  const n = tail.length;
  if (n < 12 || tail[n - 4] !== 0x50 || tail[n - 3] !== 0x41 || tail[n - 2] !== 0x52 || tail[n - 1] !== 0x31) {
    throw corrupt('no PAR1 trailer (the encoder did not finish the file)');
  }
  const length = new DataView(tail.buffer, tail.byteOffset + n - 8, 4).getUint32(0, true);
  const start = n - 8 - length;
  if (start < 0) throw corrupt('footer longer than the bytes held back');
  return { start, length };
}

/** The start of a row group: the first byte of its first column chunk (Java BlockMetaData.getStartingPos). */
export function rowGroupStart(rg: FooterRowGroup): number {
  const first = rg.columns[0];
  if (first === undefined) return rg.fileOffset ?? 0;
  const d = first.dictionaryPageOffset;
  return d !== undefined && d > 0 && d < first.dataPageOffset ? d : first.dataPageOffset;
}

/** A change to the footer bytes: `remove` bytes at `at` (an offset within the footer) replaced by `bytes`. */
export interface FooterEdit {
  readonly at: number;
  readonly remove: number;
  readonly bytes: readonly number[] | Uint8Array;
}

/** The edits adding the UUID logical type to the schema elements at `elementIndexes` (root = 0) that lack one. */
export function uuidLogicalTypeEdits(schema: readonly FooterSchemaElement[], elementIndexes: readonly number[]): FooterEdit[] {
  const edits: FooterEdit[] = [];
  for (const i of elementIndexes) {
    const e = schema[i];
    if (e === undefined) throw corrupt(`no schema element ${i}`);
    if (e.hasLogicalType) continue;
    const delta = 10 - e.lastFieldId;
    // Field 10 (logicalType, a union struct) holding field 14 (UUIDType, an empty struct).
    const header = delta > 0 && delta <= 15 ? [(delta << 4) | T_STRUCT] : [T_STRUCT, 20 /* zigzag(10) */];
    edits.push({ at: e.stopAt, remove: 0, bytes: [...header, (14 << 4) | T_STRUCT, T_STOP, T_STOP] });
  }
  return edits;
}

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/** The edits setting the decimal precision (converted type and logical type) of schema element `index`. */
export function decimalPrecisionEdits(schema: readonly FooterSchemaElement[], index: number, precision: number): FooterEdit[] {
  const e = schema[index];
  if (e === undefined || e.precisionSpans.length === 0) throw corrupt(`schema element ${index} declares no decimal precision`);
  return e.precisionSpans.map((s) => ({ at: s.start, remove: s.end - s.start, bytes: varint(precision * 2) /* zigzag */ }));
}

/** The edit replacing the value of key/value entry `key` (which must exist) by `value`. */
export function keyValueEdit(footer: ParsedFooter, key: string, value: string): FooterEdit {
  const span = footer.keyValues.find((kv) => kv.key === key)?.valueSpan;
  if (span === undefined) throw corrupt(`no key/value entry ${key}`);
  const bytes = new TextEncoder().encode(value);
  const out = new Uint8Array(varint(bytes.length).length + bytes.length);
  out.set(varint(bytes.length));
  out.set(bytes, out.length - bytes.length);
  return { at: span.start, remove: span.end - span.start, bytes: out };
}

/**
 * Returns `tail` (the last bytes of a file: footer, length, `PAR1`) with `edits` applied to the footer
 * that starts at `footerStart`, and the trailer's footer length updated. Every offset the footer holds
 * points before it, so no other byte changes. Edits must not overlap. No edits: `tail` itself.
 */
export function editFooter(tail: Uint8Array, footerStart: number, edits: readonly FooterEdit[]): Uint8Array {
  if (edits.length === 0) return tail;
  const sorted = [...edits].sort((a, b) => a.at - b.at);
  const added = sorted.reduce((s, e) => s + e.bytes.length - e.remove, 0);
  const out = new Uint8Array(tail.length + added);
  let from = 0;
  let to = 0;
  for (const e of sorted) {
    const at = footerStart + e.at;
    if (at < from) throw corrupt('overlapping footer edits');
    out.set(tail.subarray(from, at), to);
    to += at - from;
    out.set(e.bytes, to);
    to += e.bytes.length;
    from = at + e.remove;
  }
  out.set(tail.subarray(from), to);
  const footerLength = out.length - 8 - footerStart;
  new DataView(out.buffer, out.byteOffset + out.length - 8, 4).setUint32(0, footerLength, true);
  return out;
}
