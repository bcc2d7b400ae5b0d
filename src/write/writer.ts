/**
 * DataFileWriter: the rolling Parquet writer for one table partition (one partition value per writer).
 * A decoder appends records through `writer.appender`; the writer seals row groups when they are big
 * enough, streams them through parquet-wasm into the object store, closes a file when it reaches
 * `write.target-file-size-bytes` and starts the next one, and returns the DataFile fields of every
 * closed file as an Iceberg DataFile (iceberg/data-file.ts): metrics from our buffers, column sizes and
 * split offsets from the footer.
 *
 * Lifecycle, per commit cycle: append … `complete()` → closed files to announce; the writer and every
 * column handle stay valid for the next cycle. `abort()` drops buffered rows and the open file (after a
 * failed transaction) and returns the locations of closed files nobody will announce. `close()` ends it.
 *
 * Rules: a record is appended synchronously from its first column to `endRecord()` (flushes only happen
 * between records); when `endRecord()` returns true, await `flushIfNeeded()` (that is also where the
 * shared memory budget gets relieved). Errors are sticky until `abort()`: an upload or encoder failure
 * rejects every later flush, so no file is half-announced.
 * Must not: choose partitions, name files (the caller's `newLocation`) or commit anything.
 */
import { FatalError } from '../core/errors.ts';
import type { MetricsMode } from '../iceberg/bounds.ts';
import { FileContent } from '../iceberg/data-file.ts';
import type { DataFile } from '../iceberg/data-file.ts';
import type { PartitionValue, PrimitiveType } from '../iceberg/types.ts';
import type { ObjectStore, PutOptions } from '../upload/port.ts';
import { RecordAppender } from './appender.ts';
import type { SealedBatch } from './appender.ts';
import type { BudgetMember, PressurePolicy, WriteMemoryBudget } from './budget.ts';
import { DEFAULT_WRITE_CONFIG, metricsModeOf, parquetStatistics } from './config.ts';
import type { WriteConfig } from './config.ts';
import { rowGroupStart } from './footer.ts';
import type { ColumnLayout } from './layout.ts';
import { boundsOf } from './metrics.ts';
import type { AnyStats } from './metrics.ts';
import { StreamingParquetFile } from './parquet.ts';
import type { FinishedFile } from './parquet.ts';

export interface DataFileWriterOptions {
  readonly layout: ColumnLayout;
  readonly store: Pick<ObjectStore, 'putStream'>;
  /** A new, unique location for every file this writer starts. */
  readonly newLocation: () => string;
  /** The partition tuple of every file of this writer (transform results in spec order; [] if unpartitioned). */
  readonly partition: readonly PartitionValue[];
  readonly specId: number;
  /** The sort order the rows are written in (0 = unsorted, the default). */
  readonly sortOrderId?: number;
  readonly config?: WriteConfig;
  /** Shared by all writers of a task; omit for no budget. */
  readonly budget?: WriteMemoryBudget;
  /** Footer key/value metadata for every file (e.g. `iceberg.schema`). */
  readonly keyValueMetadata?: ReadonlyMap<string, string>;
  readonly putOptions?: Omit<PutOptions, 'signal' | 'onHeldBytes' | 'chunksHandedOver'>;
}

export interface WriterMetrics {
  readonly recordsWritten: number;
  readonly rowGroupsWritten: number;
  readonly filesClosed: number;
  readonly bytesWritten: number;
  readonly bufferedRecords: number;
  readonly bufferedBytes: number;
  /** Encoded bytes per raw buffered byte so far (used to size row groups and files ahead of time). */
  readonly compressionRatio: number;
  /** Flushes and rolls the memory budget forced on this writer. */
  readonly forcedFlushes: number;
  readonly forcedRolls: number;
}

const DEFAULT_RATIO = 0.5;

/**
 * parquet-wasm's memory for one row group, per byte of buffered (raw) data: its linear memory grew to
 * 2.4x (64 MiB raw → 152 MiB) to 5x (8 MiB → 40 MiB, fixed costs included) of the largest batch in a
 * measurement (strings, longs, doubles; zstd), plus the batch's Arrow IPC copy on the JS side while it
 * is handed over. The budget also counts the encoder's actual size, so an underestimate is bounded.
 */
const ENCODE_BYTES_PER_RAW_BYTE = 3;

interface OpenFile {
  readonly file: StreamingParquetFile;
  stats: (AnyStats | undefined)[];
}

export class DataFileWriter implements BudgetMember {
  readonly appender: RecordAppender;
  readonly layout: ColumnLayout;
  readonly config: WriteConfig;

  private readonly opts: DataFileWriterOptions;
  private readonly modes: readonly MetricsMode[];
  private readonly statistics: ReturnType<typeof parquetStatistics>;
  private open: OpenFile | undefined;
  private closedFiles: DataFile[] = [];
  private chain: Promise<void> = Promise.resolve();
  private generation = 0;
  private closed = false;
  private rawIn = 0;
  private encodedOut = 0;
  private counters = { records: 0, rowGroups: 0, files: 0, bytes: 0, forcedFlushes: 0, forcedRolls: 0 };

  constructor(opts: DataFileWriterOptions) {
    this.opts = opts;
    this.layout = opts.layout;
    this.config = opts.config ?? DEFAULT_WRITE_CONFIG;
    const config = this.config;
    this.modes = opts.layout.leaves.map((n) => metricsModeOf(config, n));
    this.statistics = parquetStatistics(config, opts.layout);
    this.appender = new RecordAppender(opts.layout, (n) => metricsModeOf(config, n));
    this.appender.rowLimit = config.rowGroupRows;
    this.appender.pressure = () => this.pressured();
  }

  /** After `endRecord()` returned true: seals a row group if one is due and relieves the memory budget. */
  async flushIfNeeded(): Promise<void> {
    this.reportHeld();
    if (this.appender.rows >= this.config.rowGroupRows || this.thresholdReached(this.appender.usedBytes())) await this.flush();
    if (this.opts.budget?.over === true) await this.opts.budget.relieve();
  }

  /** Seals the buffered records as a row group now and writes it (a file is opened if none is). */
  flush(): Promise<void> {
    this.ensureOpen();
    const batch = this.appender.seal();
    if (batch !== undefined) this.enqueue(() => this.write(batch, false));
    this.reportHeld();
    return this.chain;
  }

  /**
   * Forced by the memory budget: flush, release buffer capacity, and close the file under `roll` — or
   * when the file's upload holds more than the buffers do (a flush would only move bytes into the upload;
   * closing completes it and frees them). Resolves true when the file was closed.
   */
  async forceFlush(policy: PressurePolicy): Promise<boolean> {
    if (this.closed) return false;
    this.counters.forcedFlushes++;
    const roll = policy === 'roll' || (this.open?.file.uploadHeldBytes ?? 0) > this.appender.usedBytes();
    const batch = this.appender.seal();
    if (batch !== undefined) this.enqueue(() => this.write(batch, roll));
    else if (roll) this.enqueue(() => this.roll());
    if (roll) this.counters.forcedRolls++;
    this.appender.release();
    this.reportHeld();
    await this.chain;
    this.reportHeld();
    return roll;
  }

  /** Files closed by rolling since the last `complete()`/`takeClosedFiles()`. */
  takeClosedFiles(): DataFile[] {
    const out = this.closedFiles;
    this.closedFiles = [];
    return out;
  }

  /** Ends the commit cycle: seals, finishes the open file, returns every file closed since the last call. */
  async complete(): Promise<DataFile[]> {
    this.ensureOpen();
    const batch = this.appender.seal();
    if (batch !== undefined) this.enqueue(() => this.write(batch, false));
    this.enqueue(() => this.roll());
    await this.chain;
    this.reportHeld();
    return this.takeClosedFiles();
  }

  /** complete(), then frees the buffers and leaves the budget; the writer cannot be used afterwards. */
  async close(): Promise<DataFile[]> {
    const files = await this.complete();
    this.closed = true;
    this.appender.release();
    this.opts.budget?.remove(this);
    return files;
  }

  /**
   * Drops buffered records and the open file (its upload is aborted, so it never appears) and clears a
   * sticky failure. Returns the locations of files already closed but not yet handed out: they exist in
   * the store and will never be announced (delete them, or leave them to orphan cleanup).
   */
  async abort(reason: unknown = new FatalError('writer aborted')): Promise<string[]> {
    this.generation++;
    this.appender.abortRecord();
    for (const c of this.appender.columns) c.truncate(0);
    this.appender.rows = 0;
    const open = this.open;
    this.open = undefined;
    await open?.file.abort(reason);
    await this.chain.catch(() => {});
    this.chain = Promise.resolve();
    const abandoned = this.closedFiles.map((f) => f.filePath);
    this.closedFiles = [];
    this.reportHeld();
    return abandoned;
  }

  metrics(): WriterMetrics {
    return {
      recordsWritten: this.counters.records,
      rowGroupsWritten: this.counters.rowGroups,
      filesClosed: this.counters.files,
      bytesWritten: this.counters.bytes,
      bufferedRecords: this.appender.rows,
      bufferedBytes: this.appender.usedBytes(),
      compressionRatio: this.ratio(),
      forcedFlushes: this.counters.forcedFlushes,
      forcedRolls: this.counters.forcedRolls,
    };
  }

  // -- internals -------------------------------------------------------------------------------------

  private ensureOpen(): void {
    if (this.closed) throw new FatalError('data file writer is closed');
  }

  private enqueue(step: () => Promise<void>): void {
    const gen = this.generation;
    // A step queued before an abort() must not run after it (it would open a file for dropped rows).
    this.chain = this.chain.then(() => (gen === this.generation ? step() : undefined));
    this.chain.catch(() => {}); // the caller awaits the same promise; this only marks it handled
  }

  private ratio(): number {
    return this.rawIn > 0 && this.encodedOut > 0 ? this.encodedOut / this.rawIn : DEFAULT_RATIO;
  }

  private thresholdReached(used: number): boolean {
    if (used === 0) return false;
    const c = this.config;
    if (used >= c.rowGroupBufferBytes) return true;
    const encoded = used * this.ratio();
    if (encoded >= c.rowGroupSizeBytes) return true;
    // Close the file's last row group early enough that the file lands near its target size.
    return (this.open?.file.bytesOut ?? 0) + encoded >= c.targetFileSizeBytes;
  }

  private pressured(): boolean {
    this.reportHeld();
    return this.thresholdReached(this.appender.usedBytes()) || this.opts.budget?.over === true;
  }

  private reportHeld(): void {
    if (this.opts.budget === undefined) return;
    if (this.closed) {
      this.opts.budget.remove(this);
      return;
    }
    this.opts.budget.report(this, {
      buffers: this.appender.heldBytes(),
      upload: this.open?.file.uploadHeldBytes ?? 0,
      encode: Math.ceil(this.appender.usedBytes() * ENCODE_BYTES_PER_RAW_BYTE),
    });
  }

  private async write(batch: SealedBatch, rollAfter: boolean): Promise<void> {
    const gen = this.generation;
    let open = this.open;
    if (open === undefined) {
      const file = new StreamingParquetFile({
        location: this.opts.newLocation(),
        store: this.opts.store,
        layout: this.layout,
        encoding: {
          codec: this.config.codec,
          pageSizeBytes: this.config.pageSizeBytes,
          dictSizeBytes: this.config.dictSizeBytes,
          statistics: this.statistics.statistics,
          statisticsOffColumns: this.statistics.offColumns,
          ...(this.opts.keyValueMetadata === undefined ? {} : { keyValueMetadata: this.opts.keyValueMetadata }),
        },
        ...(this.opts.putOptions === undefined ? {} : { putOptions: this.opts.putOptions }),
        onUploadHeld: () => this.reportHeld(),
      });
      open = { file, stats: [...batch.stats] };
      this.open = open;
    } else {
      const stats = open.stats;
      batch.stats.forEach((s, i) => {
        const into = stats[i];
        if (s === undefined) return;
        if (into === undefined) stats[i] = s;
        else into.merge(s);
      });
    }
    const before = open.file.bytesOut;
    await open.file.writeBatch(batch.ipc, batch.rows);
    if (gen !== this.generation) return;
    this.rawIn += batch.rawBytes;
    this.encodedOut += open.file.bytesOut - before;
    this.counters.records += batch.rows;
    this.counters.rowGroups++;
    if (rollAfter || open.file.bytesOut >= this.config.targetFileSizeBytes) await this.roll();
  }

  private async roll(): Promise<void> {
    const open = this.open;
    if (open === undefined) return;
    const gen = this.generation;
    this.open = undefined;
    const before = open.file.bytesOut;
    const finished = await open.file.finish();
    if (gen !== this.generation) return;
    this.encodedOut += finished.sizeBytes - before;
    this.counters.files++;
    this.counters.bytes += finished.sizeBytes;
    this.closedFiles.push(this.dataFile(finished, open.file.rowsIn, open.stats));
  }

  private dataFile(f: FinishedFile, rows: number, stats: readonly (AnyStats | undefined)[]): DataFile {
    const leaves = this.layout.leaves;
    const columnSizes = new Map<number, bigint>();
    for (const rg of f.footer.rowGroups) {
      rg.columns.forEach((c, i) => {
        const id = (leaves[i] as (typeof leaves)[number]).fieldId;
        columnSizes.set(id, (columnSizes.get(id) ?? 0n) + BigInt(c.totalCompressedSize));
      });
    }
    const valueCounts = new Map<number, bigint>();
    const nullValueCounts = new Map<number, bigint>();
    const nanValueCounts = new Map<number, bigint>();
    const lowerBounds = new Map<number, Uint8Array>();
    const upperBounds = new Map<number, Uint8Array>();
    leaves.forEach((leaf, i) => {
      const s = stats[i];
      if (s === undefined) return;
      const t = leaf.type as PrimitiveType;
      valueCounts.set(leaf.fieldId, BigInt(s.valueCount));
      nullValueCounts.set(leaf.fieldId, BigInt(s.nullCount));
      if (t.kind === 'float' || t.kind === 'double') nanValueCounts.set(leaf.fieldId, BigInt(s.nanCount));
      const b = boundsOf(t, s, this.modes[i] as MetricsMode);
      if (b.lower !== undefined) lowerBounds.set(leaf.fieldId, b.lower);
      if (b.upper !== undefined) upperBounds.set(leaf.fieldId, b.upper);
    });
    return {
      content: FileContent.DATA,
      filePath: f.location,
      fileFormat: 'PARQUET',
      specId: this.opts.specId,
      partition: this.opts.partition,
      recordCount: BigInt(rows),
      fileSizeInBytes: BigInt(f.sizeBytes),
      columnSizes,
      valueCounts,
      nullValueCounts,
      nanValueCounts,
      lowerBounds,
      upperBounds,
      splitOffsets: f.footer.rowGroups.map((rg) => BigInt(rowGroupStart(rg))).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      sortOrderId: this.opts.sortOrderId ?? 0,
    };
  }
}
