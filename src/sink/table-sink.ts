/**
 * One table as a sink task writes it during commit cycles: the table as loaded (its current schema and
 * default partition spec, with the ids the catalog assigned), the value decoder compiled for that schema,
 * one rolling Parquet writer per partition, and the source offsets each cycle's files cover.
 *
 * Per record, without any row object: the partition source values come from the record's one probe
 * (decode/record-probe.ts, run by the sink writer for every table at once; `probeFields` says what this
 * table reads), the partition tuple picks the writer, then the record is decoded straight into that
 * writer's columns, and the requested Kafka metadata columns are appended before the record closes.
 */
import { randomUUID } from 'node:crypto';
import type { RawRecord } from '../consume/port.ts';
import type { LoadedTable } from '../commit/port.ts';
import type { DataFile } from '../iceberg/data-file.ts';
import type { SourceSpan } from '../coordinate/events.ts';
import type { MetadataFieldSpec } from '../config/kafka-metadata.ts';
import { bindPartitionSpec, isUnpartitioned, partitionPath } from '../iceberg/partition-spec.ts';
import type { BoundPartitionField, PartitionSpec } from '../iceberg/partition-spec.ts';
import { currentSchema, defaultSpec } from '../iceberg/metadata.ts';
import { maxFieldId } from '../iceberg/schema.ts';
import type { IcebergType, NestedField, PartitionValue, Schema } from '../iceberg/types.ts';
import type { RecordSink } from '../decode/sink.ts';
import { joinLocation } from '../upload/location.ts';
import type { ObjectStore } from '../upload/port.ts';
import { buildLayout, DataFileWriter, resolveWriteConfig } from '../write/index.ts';
import type { ColumnLayout, RecordAppender, WriteConfig , WriteMemoryBudget } from '../write/index.ts';
import { FatalError } from '../core/errors.ts';
import { fieldPathOf } from '../decode/probe.ts';
import type { ProbeField, ProbeView } from '../decode/record-probe.ts';
import type { TableDecoder, ValueFormat } from '../decode/value-format.ts';

/** `schema` with the metadata columns appended (fresh ids after its highest), unless it has them. */
export function withMetadataFields(schema: Schema, fields: readonly MetadataFieldSpec[]): Schema {
  let next = maxFieldId(schema);
  const have = new Set(schema.fields.map((f) => f.name));
  const type = (spec: MetadataFieldSpec['type']): IcebergType => {
    if (spec.kind !== 'map') return { kind: spec.kind };
    return { kind: 'map', keyId: ++next, key: { kind: spec.key.kind }, valueId: ++next, valueRequired: spec.valueRequired, value: { kind: spec.value.kind } };
  };
  const extra: NestedField[] = [];
  for (const f of fields) {
    if (have.has(f.name)) continue;
    const id = ++next;
    extra.push({ id, name: f.name, required: false, type: type(f.type), doc: f.doc });
  }
  return extra.length === 0 ? schema : { ...schema, fields: [...schema.fields, ...extra] };
}

// StringConverter keys: Java's `new String(bytes, UTF_8)` replaces malformed input with U+FFFD, as this does.
const LOSSY_UTF8 = new TextDecoder('utf-8');

/** Per metadata column present in the table, how to append a record's value (columns looked up once). */
function metadataAppenders(schema: Schema, fields: readonly MetadataFieldSpec[]): ((sink: RecordAppender) => (r: RawRecord) => void)[] {
  const out: ((sink: RecordAppender) => (r: RawRecord) => void)[] = [];
  for (const spec of fields) {
    const f = schema.fields.find((x) => x.name === spec.name);
    if (f === undefined) continue;
    const id = f.id;
    switch (spec.source.from) {
      case 'topic':
        out.push((s) => {
          const c = s.string(id);
          return (r) => c.append(r.topic);
        });
        break;
      case 'partition':
        out.push((s) => {
          const c = s.int(id);
          return (r) => c.append(r.partition);
        });
        break;
      case 'offset':
        out.push((s) => {
          const c = s.long(id);
          return (r) => c.append(r.offset);
        });
        break;
      case 'timestamp':
        out.push((s) => {
          const c = s.long(id);
          return (r) => (r.timestamp === null || r.timestamp < 0 ? c.appendNull() : c.appendNumber(r.timestamp * 1000));
        });
        break;
      case 'key': {
        const asString = spec.source.as === 'string';
        out.push((s) => {
          const str = asString ? s.string(id) : undefined;
          const bin = asString ? undefined : s.binary(id);
          return (r) => {
            if (r.key === null) (str ?? bin)?.appendNull();
            else if (str !== undefined) str.append(LOSSY_UTF8.decode(r.key));
            else bin?.append(r.key);
          };
        });
        break;
      }
      case 'headers': {
        if (f.type.kind !== 'map') break;
        const keyId = f.type.keyId;
        const valueId = f.type.valueId;
        out.push((s) => {
          const m = s.map(id);
          const k = s.string(keyId);
          const v = s.binary(valueId);
          return (r) => {
            m.begin();
            const seen = new Map<string, Uint8Array | null>();
            for (const h of r.headers) seen.set(h.key, h.value); // a repeated key keeps its last value
            for (const [hk, hv] of seen) {
              k.append(hk);
              if (hv === null) v.appendNull();
              else v.append(hv);
            }
            m.end();
          };
        });
        break;
      }
    }
  }
  return out;
}

/**
 * The writer's appender seen through the decoder's eyes, with the metadata columns filled in just before
 * the record closes. One per writer, so decoders bind (look columns up) once per writer.
 */
class MetadataSink implements RecordSink {
  current: RawRecord | undefined;
  private readonly inner: RecordAppender;
  private readonly appends: ((r: RawRecord) => void)[];

  constructor(inner: RecordAppender, appenders: readonly ((sink: RecordAppender) => (r: RawRecord) => void)[]) {
    this.inner = inner;
    this.appends = appenders.map((a) => a(inner));
  }
  boolean(id: number) {
    return this.inner.boolean(id);
  }
  int(id: number) {
    return this.inner.int(id);
  }
  long(id: number) {
    return this.inner.long(id);
  }
  float(id: number) {
    return this.inner.float(id);
  }
  double(id: number) {
    return this.inner.double(id);
  }
  decimal(id: number) {
    return this.inner.decimal(id);
  }
  string(id: number) {
    return this.inner.string(id);
  }
  binary(id: number) {
    return this.inner.binary(id);
  }
  fixed(id: number) {
    return this.inner.fixed(id);
  }
  struct(id: number) {
    return this.inner.struct(id);
  }
  list(id: number) {
    return this.inner.list(id);
  }
  map(id: number) {
    return this.inner.map(id);
  }
  endRecord(): boolean {
    const r = this.current as RawRecord;
    for (const a of this.appends) a(r);
    return this.inner.endRecord();
  }
  abortRecord(): void {
    this.inner.abortRecord();
  }
}

interface PartitionWriter {
  readonly writer: DataFileWriter;
  readonly sink: MetadataSink;
}

/** Partition writers by their partition values, one map level per partition field. */
type WriterTree = Map<unknown, WriterTree | PartitionWriter>;
/** The key of a null partition value (no value of a partition field can be this object). */
const NULL_KEY = Symbol('null');

interface SpanAcc {
  readonly topic: string;
  readonly partition: number;
  first: bigint;
  last: bigint;
  maxTs: number | undefined;
}

export interface TableSinkOptions {
  readonly table: LoadedTable;
  readonly format: ValueFormat;
  readonly metadataFields: readonly MetadataFieldSpec[];
  /** `iceberg.tables.write-props.*` over the table's own properties. */
  readonly writeProps: Readonly<Record<string, string>>;
  readonly store: ObjectStore;
  readonly budget: WriteMemoryBudget | undefined;
  readonly taskId: number;
}

export interface CycleFiles {
  readonly table: LoadedTable;
  readonly schemaId: number;
  readonly specId: number;
  readonly files: DataFile[];
  readonly spans: SourceSpan[];
  readonly records: number;
}

export class TableSink {
  readonly table: LoadedTable;
  readonly schema: Schema;
  readonly spec: PartitionSpec;
  /** Writer schema keys already checked against this table (no evolution needed for them). */
  readonly acceptedSchemaKeys = new Set<string>();
  /**
   * What the record probe must read for this table, one entry per partition field in spec order: its
   * source field's path and type (empty when unpartitioned). A void field reads nothing.
   */
  readonly probeFields: readonly ProbeField[];
  /** Records appended in the current cycle. */
  records = 0;

  /** Files closed by a `complete()` that failed part-way: never announced, returned by `abort()`. */
  private closedUnannounced: string[] = [];

  private readonly opts: TableSinkOptions;
  private readonly layout: ColumnLayout;
  private readonly writeConfig: WriteConfig;
  private readonly decoder: TableDecoder;
  private readonly metaAppenders: ReturnType<typeof metadataAppenders>;
  private readonly bound: BoundPartitionField[];
  /** Every partition writer of the cycle, and the tree that finds one by partition values. */
  private readonly writers: PartitionWriter[] = [];
  private readonly writerTree: WriterTree = new Map();
  private unpartitioned: PartitionWriter | undefined;
  private readonly spans = new Map<string, SpanAcc>();
  private lastSpan: SpanAcc | undefined;
  private fileCounter = 0;

  constructor(opts: TableSinkOptions) {
    this.opts = opts;
    this.table = opts.table;
    const md = opts.table.metadata;
    this.schema = currentSchema(md);
    this.spec = defaultSpec(md);
    this.layout = buildLayout(this.schema);
    this.writeConfig = resolveWriteConfig({ ...md.properties, ...opts.writeProps }).config;
    // Decoders see the table without the metadata columns: those are ours to fill, and a decoder may
    // write a null to every table column the record lacks.
    const metaNames = new Set(opts.metadataFields.map((f) => f.name));
    const valueSchema = { ...this.schema, fields: this.schema.fields.filter((f) => !metaNames.has(f.name)) };
    this.decoder = opts.format.decoderFor(valueSchema);
    this.metaAppenders = metadataAppenders(this.schema, opts.metadataFields);
    this.bound = isUnpartitioned(this.spec) ? [] : bindPartitionSpec(this.spec, this.schema);
    this.probeFields = this.bound.map((b) => ({
      path: b.field.transform.kind === 'void' ? null : (fieldPathOf(this.schema, b.field.sourceId) ?? null),
      type: b.sourceType,
    }));
  }

  /** Registry lookups the record needs before `append` (undefined when none). */
  prepare(msg: Uint8Array): Promise<unknown> | undefined {
    return this.decoder.prepare(msg);
  }

  /**
   * Appends one record (its value must be non-null); `probed` is this table's view of the record's probe
   * (`probeFields`), required when the table is partitioned. Returns the writer to give a flush chance to
   * when the columns asked for one, else undefined. DataError for a value that does not fit.
   */
  append(r: RawRecord, probed?: ProbeView): DataFileWriter | undefined {
    const msg = r.value as Uint8Array;
    const pw = this.writerFor(probed);
    pw.sink.current = r;
    const flush = this.decoder.decode(msg, pw.sink);
    this.records++;
    const span = this.spanOf(r);
    const ts = r.timestamp === null || r.timestamp < 0 ? undefined : r.timestamp;
    if (span === undefined) this.addSpan(r, ts);
    else {
      if (r.offset < span.first) span.first = r.offset;
      if (r.offset > span.last) span.last = r.offset;
      if (ts !== undefined && (span.maxTs === undefined || ts > span.maxTs)) span.maxTs = ts;
    }
    return flush ? pw.writer : undefined;
  }

  /** The span of the record's source partition; records come in runs of one partition, so the last one first. */
  private spanOf(r: RawRecord): SpanAcc | undefined {
    const last = this.lastSpan;
    if (last !== undefined && last.partition === r.partition && last.topic === r.topic) return last;
    const span = this.spans.get(`${r.topic}\u0000${r.partition}`);
    if (span !== undefined) this.lastSpan = span;
    return span;
  }

  private addSpan(r: RawRecord, ts: number | undefined): void {
    const span = { topic: r.topic, partition: r.partition, first: r.offset, last: r.offset, maxTs: ts };
    this.spans.set(`${r.topic}\u0000${r.partition}`, span);
    this.lastSpan = span;
  }

  /**
   * The record's partition writer, found through a tree of maps keyed by each partition value in turn
   * (no key string or value array built per record; binary values are keyed by their hex form).
   */
  private writerFor(probed: ProbeView | undefined): PartitionWriter {
    const n = this.bound.length;
    if (n === 0) return (this.unpartitioned ??= this.track(this.newWriter([])));
    if (probed === undefined) throw new FatalError(`table ${this.table.identifier.name}: a partitioned table needs the record's probe values`);
    let level = this.writerTree;
    for (let i = 0; ; i++) {
      const v = (this.bound[i] as BoundPartitionField).apply(probed.value(i));
      const key = v === null ? NULL_KEY : v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v;
      const next = level.get(key);
      if (i === n - 1) {
        if (next !== undefined) return next as PartitionWriter;
        const pw = this.track(this.newWriter(this.bound.map((b, j) => b.apply(probed.value(j)))));
        level.set(key, pw);
        return pw;
      }
      if (next === undefined) level.set(key, (level = new Map()));
      else level = next as WriterTree;
    }
  }

  private track(pw: PartitionWriter): PartitionWriter {
    this.writers.push(pw);
    return pw;
  }

  /** Forgets every writer and span (after a cycle completed or was dropped). */
  private reset(): void {
    this.writers.length = 0;
    this.writerTree.clear();
    this.unpartitioned = undefined;
    this.spans.clear();
    this.lastSpan = undefined;
    this.records = 0;
  }

  private newWriter(values: PartitionValue[]): PartitionWriter {
    const md = this.table.metadata;
    const dir = values.length === 0 ? joinLocation(md.location, 'data') : joinLocation(md.location, 'data', ...partitionPath(this.spec, this.schema, values).split('/'));
    const prefix = `${String(this.opts.taskId).padStart(5, '0')}-${randomUUID()}`;
    const writer = new DataFileWriter({
      layout: this.layout,
      store: this.opts.store,
      newLocation: () => joinLocation(dir, `${prefix}-${String(++this.fileCounter).padStart(5, '0')}.parquet`),
      partition: values,
      specId: this.spec.specId,
      config: this.writeConfig,
      ...(this.opts.budget === undefined ? {} : { budget: this.opts.budget }),
    });
    return { writer, sink: new MetadataSink(writer.appender, this.metaAppenders) };
  }

  /**
   * Closes every writer (uploading the open files) and hands over the cycle's files and source spans. When
   * one writer fails, the files the writers before it closed have left their bookkeeping already: they are
   * kept here for `abort()` to return, so a cycle that fails part-way leaves no file behind (N7).
   */
  async complete(): Promise<CycleFiles> {
    const files: DataFile[] = [];
    try {
      for (const pw of this.writers) files.push(...(await pw.writer.close()));
    } catch (e) {
      this.closedUnannounced.push(...files.map((f) => f.filePath));
      throw e;
    }
    const spans: SourceSpan[] = [...this.spans.values()].map((s) => ({
      topic: s.topic,
      partition: s.partition,
      firstOffset: s.first,
      lastOffset: s.last,
      ...(s.maxTs === undefined ? {} : { maxTimestampMs: s.maxTs }),
    }));
    const records = this.records;
    this.reset();
    return { table: this.table, schemaId: this.schema.schemaId, specId: this.spec.specId, files, spans, records };
  }

  /** Drops everything buffered or open; returns files already uploaded that will never be announced. */
  async abort(reason: unknown): Promise<string[]> {
    const abandoned: string[] = this.closedUnannounced;
    this.closedUnannounced = [];
    for (const pw of this.writers) {
      abandoned.push(...(await pw.writer.abort(reason).catch(() => [])));
      pw.writer.appender.release();
    }
    this.reset();
    return abandoned;
  }
}
