/**
 * One Parquet data file, encoded row group by row group with parquet-wasm's streaming writer and
 * streamed to the object store as it is produced.
 *
 * How parquet-wasm 0.8.0 (arrow-rs parquet 59.3.0) streams: `transformParquetStream(ReadableStream of
 * wasm RecordBatch)` runs arrow-rs's AsyncArrowWriter in a wasm task and returns a ReadableStream of
 * file bytes. We feed it one sealed batch at a time (Arrow IPC → `Table.fromIPCStream` → RecordBatch)
 * through a pull-based input stream, so at most one batch is in wasm memory and the writer's next pull
 * tells us the previous batch has been encoded. With `max_row_group_bytes = 1` arrow-rs closes the row
 * group after every batch, so each of our batches is exactly one row group (the row count limit is
 * effectively off); the bytes of a row group come out when it closes (for a tiny one, with the next).
 *
 * Traps handled here:
 * - the wasm task ignores errors from `write`/`close` (`let _ = writer.write(..)`): a failed batch
 *   would silently vanish. We hold back the bytes produced after the input closes (the footer and at
 *   most the last row group), parse the footer, and fail the upload unless the rows, row groups, field
 *   ids on every element, the element names and the page types (V1 only) are exactly what we sent;
 * - `transformParquetStream` resolves only after it has peeked the first batch: enqueue before awaiting;
 * - WriterProperties are consumed by the call: a fresh one per file;
 * - uuid columns get the UUID logical type by a footer edit (footer.ts);
 * - decimal(1, S) is encoded as Decimal128(2, S) (INT32, layout.ts): the footer's precision is set back
 *   to 1, and its ARROW:schema entry (arrow-rs's copy of the encoder's schema) replaced by the declared one.
 * Must not: know about Iceberg metrics (the writer merges them) or retain the file's bytes.
 */
import * as arrow from 'apache-arrow';
import { concatBytes } from '../core/bytes.ts';
import * as pw from 'parquet-wasm';
import { ConfigError, FatalError } from '../core/errors.ts';
import type { ObjectStore, PutOptions } from '../upload/port.ts';
import { PAGE_DATA_V2, decimalPrecisionEdits, editFooter, keyValueEdit, locateFooter, parseFooter, uuidLogicalTypeEdits } from './footer.ts';
import type { FooterEdit, ParsedFooter } from './footer.ts';
import type { ColumnLayout } from './layout.ts';

export type ParquetCodec = 'zstd' | 'snappy' | 'gzip' | 'brotli' | 'lz4_raw' | 'uncompressed';
export type ParquetStatistics = 'none' | 'chunk' | 'page';

export interface ParquetEncoding {
  readonly codec: ParquetCodec;
  /** write.parquet.page-size-bytes */
  readonly pageSizeBytes: number;
  /** write.parquet.dict-size-bytes */
  readonly dictSizeBytes: number;
  /** Footer statistics written by arrow-rs (ours are computed separately); `page` adds the page index. */
  readonly statistics: ParquetStatistics;
  /** Top-level columns written without statistics (uuid columns, see config.ts `parquetStatistics`). */
  readonly statisticsOffColumns?: readonly string[];
  /** Extra footer key/value metadata (e.g. `iceberg.schema`). */
  readonly keyValueMetadata?: ReadonlyMap<string, string>;
}

const CODECS: Record<ParquetCodec, pw.Compression> = {
  zstd: pw.Compression.ZSTD,
  snappy: pw.Compression.SNAPPY,
  gzip: pw.Compression.GZIP,
  brotli: pw.Compression.BROTLI,
  lz4_raw: pw.Compression.LZ4_RAW,
  uncompressed: pw.Compression.UNCOMPRESSED,
};

const STATISTICS: Record<ParquetStatistics, pw.EnabledStatistics> = {
  none: pw.EnabledStatistics.None,
  chunk: pw.EnabledStatistics.Chunk,
  page: pw.EnabledStatistics.Page,
};

/** Writer properties for one file (the streaming call consumes them). */
export function writerProperties(e: ParquetEncoding): pw.WriterProperties {
  let b = new pw.WriterPropertiesBuilder()
    .setWriterVersion(pw.WriterVersion.V1) // data page V1 (iceberg-writer.md §1.10, §7 trap 9)
    .setCompression(CODECS[e.codec])
    .setMaxRowGroupSize(0x7fff_ffff)
    .setMaxRowGroupBytes(1) // close the row group after every batch: our batches are the row groups
    .setDataPageSizeLimit(e.pageSizeBytes)
    .setDictionaryPageSizeLimit(e.dictSizeBytes)
    .setStatisticsEnabled(STATISTICS[e.statistics]);
  for (const column of e.statisticsOffColumns ?? []) b = b.setColumnStatisticsEnabled(column, pw.EnabledStatistics.None);
  if (e.keyValueMetadata !== undefined && e.keyValueMetadata.size > 0) b = b.setKeyValueMetadata(new Map(e.keyValueMetadata));
  return b.build();
}

/** The footer entry where arrow-rs stores the Arrow schema it was given (readers such as pyarrow restore types from it). */
const ARROW_SCHEMA_KEY = 'ARROW:schema';
const arrowSchemaValues = new WeakMap<arrow.Schema, string>();

/**
 * An Arrow schema as arrow-rs writes it into ARROW:schema: base64 of an IPC schema message with its
 * continuation marker and length prefix (the first message of an IPC stream; cached per schema).
 */
function arrowSchemaValue(schema: arrow.Schema): string {
  let value = arrowSchemaValues.get(schema);
  if (value === undefined) {
    const stream = arrow.tableToIPC(new arrow.Table(schema), 'stream');
    const length = new DataView(stream.buffer, stream.byteOffset + 4, 4).getInt32(0, true);
    value = Buffer.from(stream.subarray(0, 8 + length)).toString('base64');
    arrowSchemaValues.set(schema, value);
  }
  return value;
}

/** Wasm memory of the (process-wide) parquet-wasm instance: it grows to the largest batch and never shrinks. */
export function wasmMemoryBytes(): number {
  return pw.wasmMemory().buffer.byteLength;
}

/** What the footer says about a finished file. */
export interface FinishedFile {
  readonly location: string;
  readonly sizeBytes: number;
  readonly footer: ParsedFooter;
}

/** The input side: a pull-based stream, so the writer's pull is our "previous batch done" signal. */
class BatchFeed {
  readonly stream: ReadableStream<pw.RecordBatch>;
  private controller: ReadableStreamDefaultController<pw.RecordBatch> | undefined;
  private pending: (() => void) | undefined;
  private waiter: (() => void) | undefined;
  private closed = false;

  constructor() {
    this.stream = new ReadableStream<pw.RecordBatch>(
      {
        start: (c) => {
          this.controller = c;
        },
        pull: () =>
          new Promise<void>((resolve) => {
            this.pending = resolve;
            const w = this.waiter;
            this.waiter = undefined;
            w?.();
          }),
        cancel: () => {
          this.closed = true;
          this.release();
        },
      },
      { highWaterMark: 0 },
    );
  }

  /** Resolves when the encoder asks for the next batch. */
  demand(): Promise<void> {
    if (this.pending !== undefined || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  push(batch: pw.RecordBatch): void {
    if (this.closed || this.controller === undefined) throw new FatalError('parquet encoder input already closed');
    this.controller.enqueue(batch);
    this.release();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.controller?.close();
    this.release();
  }

  private release(): void {
    const p = this.pending;
    this.pending = undefined;
    p?.();
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}

export interface ParquetFileOptions {
  readonly location: string;
  readonly store: Pick<ObjectStore, 'putStream'>;
  readonly layout: ColumnLayout;
  readonly encoding: ParquetEncoding;
  readonly putOptions?: Omit<PutOptions, 'signal' | 'onHeldBytes' | 'chunksHandedOver'>;
  /** Called when `uploadHeldBytes` changes. */
  readonly onUploadHeld?: () => void;
}

/** One file being streamed: write row groups, then finish (or abort). Not reusable. */
export class StreamingParquetFile {
  readonly location: string;
  /** Bytes handed to the store so far (row groups; the footer is added at finish). */
  bytesOut = 0;
  /** What the store holds of this file and has not stored yet (its report; 0 for a store that holds nothing). */
  uploadHeldBytes = 0;
  rowsIn = 0;
  batchesIn = 0;

  private readonly opts: ParquetFileOptions;
  private readonly feed = new BatchFeed();
  private readonly abortController = new AbortController();
  private started = false;
  private closing = false;
  private put: Promise<unknown> | undefined;
  private failure: unknown;
  private failed: Promise<never>;
  private fail!: (e: unknown) => void;
  private footer: ParsedFooter | undefined;
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined;

  constructor(opts: ParquetFileOptions) {
    this.opts = opts;
    this.location = opts.location;
    this.failed = new Promise<never>((_, reject) => {
      this.fail = (e) => {
        if (this.failure === undefined) this.failure = e ?? new FatalError('parquet file failed');
        reject(this.failure);
      };
    });
    this.failed.catch(() => {});
  }

  /** Encodes one sealed batch (Arrow IPC with one record batch) as the next row group. */
  async writeBatch(ipc: Uint8Array, rows: number): Promise<void> {
    this.check();
    const table = pw.Table.fromIPCStream(ipc);
    let batch: pw.RecordBatch | undefined;
    try {
      batch = table.recordBatch(0);
    } finally {
      table.free();
    }
    if (batch === undefined) throw new FatalError('sealed batch has no record batch');
    if (!this.started) {
      this.started = true;
      const out = pw.transformParquetStream(this.feed.stream, writerProperties(this.opts.encoding));
      out.catch(() => {}); // awaited below; a rejection before that must not be "unhandled"
      await this.race(this.feed.demand());
      this.feed.push(batch);
      this.startPut(await this.race(out));
    } else {
      await this.race(this.feed.demand());
      this.feed.push(batch);
    }
    this.rowsIn += rows;
    this.batchesIn++;
    // The next pull means this batch went through the encoder (and its bytes towards the store).
    await this.race(this.feed.demand());
  }

  /** Ends the file: footer checked and patched, upload completed. */
  async finish(): Promise<FinishedFile> {
    this.check();
    if (!this.started) throw new FatalError('finish() on a Parquet file without row groups');
    this.closing = true;
    this.feed.close();
    await this.race(this.put ?? Promise.resolve());
    if (this.footer === undefined) throw new FatalError(`Parquet file ${this.location}: upload ended without a footer`);
    return { location: this.location, sizeBytes: this.bytesOut, footer: this.footer };
  }

  /** Abandons the file: the upload is aborted (the store never shows a partial object). */
  async abort(reason: unknown = new FatalError('data file aborted')): Promise<void> {
    this.fail(reason);
    this.abortController.abort(reason);
    this.feed.close();
    await this.reader?.cancel(reason).catch(() => {});
    await this.put?.catch(() => {});
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  private race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.failed]);
  }

  private startPut(out: ReadableStream<Uint8Array>): void {
    const onHeldBytes = (bytes: number): void => {
      this.uploadHeldBytes = bytes;
      this.opts.onUploadHeld?.();
    };
    const put = this.opts.store.putStream(this.location, this.chunks(out), {
      ...this.opts.putOptions,
      signal: this.abortController.signal,
      onHeldBytes,
      chunksHandedOver: true, // each chunk is a fresh copy out of the encoder's memory, never touched again
    });
    this.put = put.then(
      (v) => {
        // A store that stops reading and still reports success must not leave us waiting for the encoder.
        if (this.footer === undefined) this.fail(new FatalError(`upload of ${this.location} ended before the file was complete`));
        return v;
      },
      (e: unknown) => {
        this.fail(e);
        throw e;
      },
    );
    this.put.catch(() => {});
  }

  private async *chunks(out: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
    const reader = out.getReader();
    this.reader = reader;
    const held: Uint8Array[] = [];
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (this.failure !== undefined) throw this.failure;
        if (done) break;
        if (this.closing) {
          held.push(value);
        } else {
          this.bytesOut += value.byteLength;
          yield value;
        }
      }
      const last = this.finishFooter(concatBytes(held));
      this.bytesOut += last.byteLength;
      yield last;
    } catch (e) {
      this.fail(e);
      throw e;
    } finally {
      // Left early (the store stopped reading, or failed): cancel so the encoder does not block on output.
      if (this.footer === undefined) reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }

  /** Checks the footer against what we sent and adds the UUID annotations; returns the bytes to store. */
  private finishFooter(tail: Uint8Array): Uint8Array {
    const { start, length } = locateFooter(tail);
    const footer = parseFooter(tail.subarray(start, start + length));
    const where = `Parquet file ${this.location}`;
    if (footer.numRows !== this.rowsIn || footer.rowGroups.length !== this.batchesIn) {
      throw new FatalError(`${where}: encoder wrote ${footer.numRows} rows in ${footer.rowGroups.length} row groups, expected ${this.rowsIn} in ${this.batchesIn}`);
    }
    const expected = this.opts.layout.expectedElements;
    if (footer.schema.length !== expected.length + 1) {
      throw new FatalError(`${where}: ${footer.schema.length - 1} schema elements, expected ${expected.length}`);
    }
    const uuidElements: number[] = [];
    const edits: FooterEdit[] = [];
    expected.forEach((x, i) => {
      const e = footer.schema[i + 1];
      if (e === undefined || e.name !== x.name || e.fieldId !== x.fieldId || (e.numChildren ?? 0) !== x.numChildren) {
        throw new FatalError(
          `${where}: schema element ${i + 1} is ${e?.name}(id ${e?.fieldId}), expected ${x.name}(id ${x.fieldId}); field ids must be on every element`,
        );
      }
      const node = x.fieldId === undefined ? undefined : this.opts.layout.byId.get(x.fieldId);
      if (node?.type.kind === 'uuid') uuidElements.push(i + 1);
      if (x.declaredPrecision !== undefined) {
        const encoded = (node?.arrowField.type as { precision?: number } | undefined)?.precision;
        if (e.precision !== encoded) throw new FatalError(`${where}: decimal ${x.name} has precision ${e.precision}, the encoder was given ${encoded}`);
        edits.push(...decimalPrecisionEdits(footer.schema, i + 1, x.declaredPrecision));
      }
    });
    for (const rg of footer.rowGroups) {
      if (rg.columns.length !== this.opts.layout.leaves.length) throw new FatalError(`${where}: ${rg.columns.length} column chunks, expected ${this.opts.layout.leaves.length}`);
      for (const c of rg.columns) {
        if (c.pageTypes.includes(PAGE_DATA_V2)) throw new FatalError(`${where}: column ${c.path.join('.')} has DATA_PAGE_V2 pages`);
      }
    }
    edits.push(...uuidLogicalTypeEdits(footer.schema, uuidElements));
    const declared = this.opts.layout.declaredArrowSchema;
    if (declared !== undefined && footer.keyValues.some((kv) => kv.key === ARROW_SCHEMA_KEY)) {
      edits.push(keyValueEdit(footer, ARROW_SCHEMA_KEY, arrowSchemaValue(declared)));
    }
    const patched = editFooter(tail, start, edits);
    this.footer = patched === tail ? footer : parseFooter(patched.subarray(start, patched.length - 8));
    return patched;
  }
}


/** Parses `write.parquet.compression-codec` (Iceberg names; `lz4` means LZ4_RAW, never Hadoop LZ4). */
export function parseCodec(text: string): ParquetCodec {
  const s = text.trim().toLowerCase();
  switch (s) {
    case 'zstd':
    case 'snappy':
    case 'gzip':
    case 'brotli':
    case 'uncompressed':
      return s;
    case 'none':
      return 'uncompressed';
    case 'lz4':
    case 'lz4_raw':
      return 'lz4_raw';
    default:
      throw new ConfigError(`unsupported write.parquet.compression-codec: ${JSON.stringify(text)} (zstd, snappy, gzip, brotli, lz4, uncompressed)`);
  }
}
