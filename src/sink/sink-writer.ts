/**
 * The data path of a sink task: a record's way from its bytes to the partition writer of every table it
 * routes to. Route (static, regex or dynamic; the route field read by a probe), open or auto-create the
 * tables, evolve them when a new writer schema brings something to add or widen, and append the record
 * into the (table, partition) writer's columns. A record is probed ONCE before it is written: one
 * decode of one projection (decode/record-probe.ts) gives its route value and the partition source
 * values of every open table, planned per (writer schema, open tables) and planned again when a table
 * opens or evolves. At the end of a cycle the commit channel
 * (src/coordinate/task-channel.ts) takes the closed files through `complete()`, or drops them through
 * `abort()`.
 *
 * - A schema change ends the cycle first (files of one announcement share one schema id), then evolves
 *   the table in the catalog, reloads it and writes with the ids the catalog returned. A change the table
 *   cannot take (evolution refuses it, or with evolution off the writer schema does not fit) is a data
 *   error of the records with that schema (stage convert), never a configuration error: the next schema
 *   may fit, and errors.tolerance decides.
 * - A table dropped or recreated while the task runs is noticed at the end of the cycle (complete()
 *   loads it again and compares its UUID): the cycle is abandoned and re-read into the table as it is now.
 * - A table that does not exist (auto-create off) with icefloe.tables.unrouted=skip is skipped for
 *   that table only, counted per table; the record's other tables still get it.
 * - A deterministic problem with a record (bad bytes however malformed — not framed, truncated, empty —,
 *   a value that does not fit, a record routed nowhere) fails the task with the record's coordinates
 *   and what is wrong, or — by configuration — is skipped and counted. Every step of a record's way is
 *   under that rule, the first look at its bytes (its schema key) included. Infrastructure errors are
 *   thrown to the task loop, which retries the cycle; a schema the registry cannot give yet
 *   (`SchemaUnavailableError`) is thrown too, and the task holds back that record's partition.
 * - errors.tolerance=all with several tables: a record that fails for one table (a value that does not
 *   fit that table) still goes to the tables it fits, as a missing table's copy does; the failed copy is
 *   counted (`tableCopiesFailed`) and logged with the table (errors.log.enable). A record that fits none
 *   of its tables is skipped as a whole (`errorsSkipped`).
 * - Every skip is counted (and logged) once per Kafka coordinates, however often the record is read
 *   again after an abandoned cycle (skip-ledger.ts).
 *
 * Owns: the tables a task writes, routing and error tolerance per record. Must not: touch Kafka offsets
 * or transactions (the channel does).
 */
import { ConfigError, DataError, FatalError, RetriableError } from '../core/errors.ts';
import type { DataStage } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ConverterKind } from '../config/converters.ts';
import type { OutgoingRecord, RawRecord } from '../consume/port.ts';
import { NoSuchNamespaceError, NoSuchTableError, parseIdentifier, TableAlreadyExistsError } from '../commit/port.ts';
import type { Catalog, LoadedTable } from '../commit/port.ts';
import { createTable, evolveSchema } from '../commit/table-ops.ts';
import type { CycleTableFiles, CycleWriter } from '../coordinate/task-channel.ts';
import { evolveTableSchema } from '../iceberg/evolution.ts';
import { buildPartitionSpec } from '../iceberg/partition-spec.ts';
import type { Schema } from '../iceberg/types.ts';
import { metadataFields } from '../config/kafka-metadata.ts';
import type { MetadataFieldSpec } from '../config/kafka-metadata.ts';
import { Router } from '../route/router.ts';
import type { ObjectStore } from '../upload/port.ts';
import { deepestField, MAX_FIELD_DEPTH, WriteMemoryBudget } from '../write/index.ts';
import type { DataFileWriter } from '../write/index.ts';
import type { ValueFormat } from '../decode/value-format.ts';
import { RecordProbe } from '../decode/record-probe.ts';
import type { ProbeField } from '../decode/record-probe.ts';
import { deadLetterFormat, deadLetterRow, deadLetterTopicRecord } from './dead-letters.ts';
import type { DeadLetter, DeadLetterSource } from './dead-letters.ts';
import { SkipLedger } from './skip-ledger.ts';
import type { SkipKind } from './skip-ledger.ts';
import { TableSink, withMetadataFields } from './table-sink.ts';

export interface SinkWriterDeps {
  readonly connector: ConnectorConfig;
  readonly taskId: number;
  readonly catalog: Catalog;
  /** Data files, manifests (the tables' location schemes). */
  readonly store: ObjectStore;
  readonly format: ValueFormat;
  /** The effective key converter (it decides the type of the key metadata column). */
  readonly keyConverter: ConverterKind;
  readonly log: Logger;
  /** Buffered column bytes across the task's writers before the largest is flushed; default 256 MiB. */
  readonly memoryBudgetBytes?: number;
  /**
   * Ends the current cycle before a table's schema changes. Resolves true when the cycle was committed,
   * false when it was abandoned (the record must then be read again after the rewind).
   */
  readonly endCycle: (why: string) => Promise<boolean>;
  /** What dead letters say about where they were made; default: the connector's own converter class. */
  readonly deadLetterSource?: DeadLetterSource;
  /** The clock dead letters are stamped with; default Date.now. */
  readonly now?: () => number;
}

/**
 * What became of a record: `written` to every table it routes to, `skipped` by configuration (unrouted,
 * a tombstone, errors.tolerance=all), or `abandoned` (the cycle was abandoned while handling it: read it
 * again after the rewind).
 */
export type WriteOutcome = 'written' | 'skipped' | 'abandoned';

/** Each skip counted once per Kafka coordinates (skip-ledger.ts), however often the record is read again. */
export interface WriterMetrics {
  recordsWritten: number;
  tombstonesSkipped: number;
  /** Records written to no table because of a data error (errors.tolerance=all). */
  errorsSkipped: number;
  unroutedSkipped: number;
  /**
   * Copies of records not written to one of their tables because it does not exist (auto-create off,
   * icefloe.tables.unrouted=skip); the record still goes to its other tables.
   */
  tableCopiesSkipped: number;
  /**
   * Copies of records not written to one of their tables because of a data error for that table
   * (errors.tolerance=all); the record is in its other tables.
   */
  tableCopiesFailed: number;
  /**
   * Records (or, with several tables, failed copies) sent to the dead-letter topic and/or table instead
   * of being skipped (errors.tolerance=all with a dead-letter destination).
   */
  deadLettered: number;
}

/** The metric each kind of skip counts in. */
const SKIP_METRIC: Readonly<Record<SkipKind, keyof WriterMetrics>> = {
  tombstone: 'tombstonesSkipped',
  error: 'errorsSkipped',
  unrouted: 'unroutedSkipped',
  'table-copy-skipped': 'tableCopiesSkipped',
  'table-copy-failed': 'tableCopiesFailed',
  'dead-letter': 'deadLettered',
};

/** Bytes of key, value and headers: what icefloe.errors.record.max-bytes bounds. */
function recordBytes(r: RawRecord): number {
  let n = (r.key?.length ?? 0) + (r.value?.length ?? 0);
  for (const h of r.headers) n += h.key.length + (h.value?.length ?? 0);
  return n;
}

/** Bytes as errors.log.include.messages shows them: base64, cut at 4 KiB of input. */
function shown(bytes: Uint8Array | null): string | null {
  if (bytes === null) return null;
  const max = 4096;
  const b64 = Buffer.from(bytes.subarray(0, max)).toString('base64');
  return bytes.length <= max ? b64 : `${b64}… (${bytes.length} bytes)`;
}

export class SinkWriter implements CycleWriter {
  readonly metrics: WriterMetrics = { recordsWritten: 0, tombstonesSkipped: 0, errorsSkipped: 0, unroutedSkipped: 0, tableCopiesSkipped: 0, tableCopiesFailed: 0, deadLettered: 0 };
  private readonly d: SinkWriterDeps;
  private readonly log: Logger;
  private readonly router: Router;
  private readonly metaFields: readonly MetadataFieldSpec[];
  private readonly budget: WriteMemoryBudget;
  private readonly sinks = new Map<string, TableSink>();
  /** The record probe per writer schema key, for the tables open now (cleared when they change). */
  private readonly probes = new Map<string, RecordProbe>();
  /** Whether records need a probe at all: a route field, or an open partitioned table. */
  private probing: boolean;
  /** Bumped whenever the open tables change, so a probe planned across an await is not kept stale. */
  private tableSet = 0;
  /** Tables found missing this cycle (unrouted=skip): looked up again next cycle, not for every record. */
  private readonly absent = new Set<string>();
  /** Of those, the ones whose namespace is missing too (the message says so: auto-create creates both). */
  private readonly absentNamespaces = new Map<string, string>();
  private readonly skips = new SkipLedger();
  /** This cycle's dead-letter topic records, taken by the channel into the cycle's transaction. */
  private letters: OutgoingRecord[] = [];
  /** Files of tables completed by a `complete()` that failed at a later table: never announced, returned by `abort()`. */
  private completedUnannounced: string[] = [];
  /** The dead-letter table's sink once opened, and the probe of its partition values when it is partitioned. */
  private deadLetterSink: TableSink | undefined;
  /** The opening in progress: a record's failed copies are dead-lettered at once, and must share one sink. */
  private deadLetterOpening: Promise<TableSink> | undefined;
  private deadLetterProbe: RecordProbe | undefined;
  private readonly hasDeadLetters: boolean;
  private readonly letterSource: DeadLetterSource;

  constructor(deps: SinkWriterDeps) {
    this.d = deps;
    this.log = deps.log;
    this.router = new Router(deps.connector.tables);
    this.metaFields = metadataFields(deps.connector.tables, deps.keyConverter);
    this.budget = new WriteMemoryBudget(deps.memoryBudgetBytes ?? deps.connector.memoryBudgetBytes);
    this.probing = this.router.routeFieldPath() !== null;
    const errors = deps.connector.errors;
    this.hasDeadLetters = errors.tolerance === 'all' && (errors.deadLetterTopic !== null || errors.deadLetterTable !== null);
    const c = deps.connector;
    this.letterSource = deps.deadLetterSource ?? { connector: c.name, taskId: deps.taskId, valueConverterClass: c.valueConverter?.className ?? '', connectorClass: c.connectorClass };
  }

  /** Handles one record synchronously when it can; returns a promise when it needs I/O. */
  write(r: RawRecord): WriteOutcome | Promise<WriteOutcome> {
    const msg = r.value;
    if (msg === null) {
      // A tombstone has no row to append (the Apache sink ignores them too); it is consumed and counted.
      return this.skipped('tombstone', r);
    }
    const max = this.d.connector.errors.recordMaxBytes;
    if (max > 0) {
      const size = recordBytes(r);
      if (size > max) return this.dataError(new DataError(`the record's key, value and headers are ${size} bytes, over icefloe.errors.record.max-bytes=${max}`, { stage: 'deserialize', context: { bytes: size } }), r, 'deserialize');
    }
    let tables: readonly string[];
    let probe: RecordProbe | undefined;
    // Everything that looks at the record's bytes is inside: a value that is not even framed fails here
    // first (the schema key reads the frame), and must follow errors.tolerance like any bad record.
    try {
      const probed = this.probe(msg);
      if (probed instanceof Promise) return probed.then(() => this.write(r), (e: unknown) => this.dataError(e, r, 'deserialize'));
      probe = probed;
      const route = this.router.route(probe?.routeValue() ?? null, r.topic, r.partition, r.offset);
      if (route.kind === 'fail') throw route.error;
      if (route.kind === 'skip') return this.skipped('unrouted', r);
      tables = route.tables;
      if (this.absent.size > 0 && tables.some((t) => this.absent.has(t))) {
        tables = this.withoutAbsent(r, tables);
        if (tables.length === 0) return this.skipped('unrouted', r);
      }
      // Fast path: every table open, the writer schema already accepted, nothing to fetch.
      const key = this.d.format.schemaKey(msg);
      for (const t of tables) {
        const sink = this.sinks.get(t);
        if (sink === undefined || !sink.acceptedSchemaKeys.has(key)) return this.writeSlow(r, tables, probe);
        const pending = sink.prepare(msg);
        if (pending !== undefined) {
          pending.catch(() => undefined); // the slow path asks again and handles the outcome
          return this.writeSlow(r, tables, probe);
        }
      }
    } catch (e) {
      return this.dataError(e, r, 'deserialize');
    }
    return this.appendAll(r, tables, probe);
  }

  /**
   * Closes and uploads every table's open files (the channel announces them). First each table with
   * records is loaded again: a table dropped or replaced since it was opened (a new UUID) would make the
   * announcement unappliable, so the cycle is abandoned instead (the channel rewinds and the records are
   * written again, to the table as it is now).
   */
  async complete(): Promise<CycleTableFiles[]> {
    this.absent.clear();
    this.absentNamespaces.clear();
    await this.checkTablesCurrent();
    const out: CycleTableFiles[] = [];
    try {
      for (const sink of this.allSinks()) {
        if (sink.records === 0) continue;
        const c = await sink.complete();
        out.push({ table: c.table.identifier, tableUuid: c.table.metadata.tableUuid, schemaId: c.schemaId, specId: c.specId, files: c.files, spans: c.spans });
      }
    } catch (e) {
      // A later table's upload failed: the earlier tables' files left their sinks already and the channel
      // never gets them. Kept for abort() to return, so the abandoned cycle leaves no file behind (N7).
      this.completedUnannounced.push(...out.flatMap((t) => t.files.map((f) => f.filePath)));
      throw e;
    }
    return out;
  }

  /** The data tables' sinks, and the dead-letter table's once opened. */
  private allSinks(): TableSink[] {
    const all = [...this.sinks.values()];
    if (this.deadLetterSink !== undefined) all.push(this.deadLetterSink);
    return all;
  }

  /**
   * The cycle's dead-letter topic records, for the cycle's transaction (the channel takes them after
   * `complete()`); they are the writer's no more: a failed transaction abandons the cycle, and its records
   * are read, failed and dead-lettered again.
   */
  takeDeadLetters(): OutgoingRecord[] {
    const taken = this.letters;
    this.letters = [];
    return taken;
  }

  private async checkTablesCurrent(): Promise<void> {
    const named: [string, TableSink][] = [...this.sinks];
    if (this.deadLetterSink !== undefined) named.push([this.d.connector.errors.deadLetterTable as string, this.deadLetterSink]);
    for (const [name, sink] of named) {
      if (sink.records === 0) continue;
      const opened = sink.table.metadata.tableUuid;
      let now: string | undefined;
      try {
        now = (await this.d.catalog.loadTable(parseIdentifier(name))).metadata.tableUuid;
      } catch (e) {
        if (!(e instanceof NoSuchTableError) && !(e instanceof NoSuchNamespaceError)) throw e;
      }
      if (now === opened) continue;
      const what = now === undefined ? 'was dropped' : `was replaced (table UUID ${opened} is now ${now})`;
      this.log.warn('table replaced while its cycle was open: the cycle is abandoned and its records are read again', { table: name, opened, now });
      throw new RetriableError(`table ${name} ${what} since this task opened it; the cycle is abandoned and its records are written again to the table as it is now`, {
        context: { table: name, opened, now },
      });
    }
  }

  /** Drops every table's unannounced records and files; tables are loaded afresh afterwards. */
  async abort(reason: unknown): Promise<string[]> {
    const orphans: string[] = this.completedUnannounced;
    this.completedUnannounced = [];
    for (const sink of this.allSinks()) orphans.push(...(await sink.abort(reason)));
    this.sinks.clear();
    this.deadLetterSink = undefined;
    this.deadLetterProbe = undefined;
    this.letters = [];
    this.absent.clear();
    this.absentNamespaces.clear();
    this.tablesChanged();
    return orphans;
  }

  /** Opens, evolves and prepares every target table first, so a cycle it ends holds none of this record. */
  private async writeSlow(r: RawRecord, tables: readonly string[], probed: RecordProbe | undefined): Promise<WriteOutcome> {
    const msg = r.value as Uint8Array;
    const tableSet = this.tableSet;
    let probe = probed;
    const present: string[] = [];
    try {
      for (const t of tables) {
        let sink = this.sinks.get(t) ?? (this.absent.has(t) ? undefined : await this.openTable(t, msg));
        if (sink === undefined) {
          // A missing table (auto-create off) is skipped by configuration for this table only: the
          // record's other tables still get their copy, and the skip is counted per table.
          const outcome = this.router.unknownTable(t, null, r.topic, r.partition, r.offset, this.absentNamespaces.get(t));
          if (outcome.kind === 'fail') throw outcome.error;
          this.markAbsent(t);
          this.skipped('table-copy-skipped', r, t);
          continue;
        }
        const accepted = await this.acceptSchema(t, sink, msg);
        if (accepted === undefined) return 'abandoned';
        sink = accepted;
        await sink.prepare(msg);
        present.push(t);
      }
      if (present.length === 0) return this.skipped('unrouted', r);
      // A table opened or evolved for this record: the probe planned for the new table set reads it again.
      if (this.tableSet !== tableSet) probe = await this.probeReady(msg);
    } catch (e) {
      if (e instanceof DataError) return this.dataError(e, r, 'convert');
      throw e;
    }
    return this.appendAll(r, present, probe);
  }

  /** `tables` without those found missing this cycle, each skip counted (unrouted=skip, else this throws). */
  private withoutAbsent(r: RawRecord, tables: readonly string[]): readonly string[] {
    const kept: string[] = [];
    for (const t of tables) {
      if (!this.absent.has(t)) {
        kept.push(t);
        continue;
      }
      const outcome = this.router.unknownTable(t, null, r.topic, r.partition, r.offset, this.absentNamespaces.get(t));
      if (outcome.kind === 'fail') throw outcome.error;
      this.skipped('table-copy-skipped', r, t);
    }
    return kept;
  }

  private markAbsent(table: string): void {
    if (this.absent.has(table)) return;
    this.absent.add(table);
    this.log.warn('table does not exist: records routed to it are skipped for it and written to their other tables (icefloe.tables.unrouted=skip); looked up again next cycle', { table });
  }

  /**
   * Appends the record to each of its tables. A data error for one table is that table's (the decoder
   * rolled the partial row back): with errors.tolerance=all the record still goes to the others.
   */
  private appendAll(r: RawRecord, tables: readonly string[], probe: RecordProbe | undefined): WriteOutcome | Promise<WriteOutcome> {
    let flushes: DataFileWriter[] | undefined;
    let failed: { readonly table: string; readonly error: DataError }[] | undefined;
    for (const t of tables) {
      try {
        const w = (this.sinks.get(t) as TableSink).append(r, probe?.viewOf(t));
        if (w !== undefined) (flushes ??= []).push(w);
      } catch (e) {
        // Not tolerated: the task fails now (its cycle, this record's other copies included, is abandoned).
        if (!(e instanceof DataError) || this.d.connector.errors.tolerance !== 'all') return this.dataError(e, r, 'convert', tables.length > 1 ? t : undefined);
        (failed ??= []).push({ table: t, error: e });
      }
    }
    let pending: Promise<unknown>[] | undefined;
    if (failed !== undefined) {
      const first = failed[0] as { table: string; error: DataError };
      if (failed.length === tables.length) return this.dataError(first.error, r, 'convert', tables.length > 1 ? failed.map((f) => f.table).join(', ') : undefined);
      for (const f of failed) {
        const kept = this.copyFailed(r, f.table, f.error);
        if (kept !== undefined) (pending ??= []).push(kept);
      }
    }
    this.metrics.recordsWritten++;
    if (flushes === undefined && pending === undefined) return 'written';
    return (async () => {
      if (pending !== undefined) await Promise.all(pending);
      for (const w of flushes ?? []) await w.flushIfNeeded();
      return 'written' as const;
    })();
  }

  /**
   * A deterministic problem with this record (for `table`, when only some of its tables are concerned):
   * fail the task naming the record's coordinates, or (errors.tolerance=all) send it to the dead-letter
   * queue when one is configured, else skip and count it. `stage` is where it was caught, for an error
   * that does not say where it arose.
   */
  private dataError(e: unknown, r: RawRecord, stage: DataStage, table?: string): WriteOutcome | Promise<WriteOutcome> {
    if (!(e instanceof DataError)) throw e;
    if (this.d.connector.errors.tolerance !== 'all') {
      // The coordinates are part of the error (its message starts with them; the task's failure line and
      // the worker's summary show them from `record`); an error that named them already keeps its text.
      const reason = e.record !== undefined ? e.reason : e.message;
      throw new DataError(table === undefined ? reason : `table ${table}: ${reason}`, {
        cause: e,
        stage: e.stage ?? stage,
        context: { ...e.context, ...(table === undefined ? {} : { table }) },
        record: { topic: r.topic, partition: r.partition, offset: r.offset },
      });
    }
    // The record went to none of its tables: its dead letter names none (the error says which failed).
    const letter: DeadLetter = { record: r, error: e, stage: e.stage ?? stage, table: undefined, failedAtMs: (this.d.now ?? Date.now)() };
    const tables = table === undefined ? {} : { tables: table };
    if (this.hasDeadLetters) return this.deadLetter(letter, 'record sent to the dead-letter queue (errors.tolerance=all)', tables).then(() => 'skipped' as const);
    if (this.skips.first('error', r)) {
      this.metrics.errorsSkipped++;
      this.logTolerated('record skipped (errors.tolerance=all)', letter, tables);
    }
    return 'skipped';
  }

  /**
   * errors.tolerance=all: the record is in its other tables, not in `table`; dead-lettered (naming the
   * table) when a dead-letter destination is configured, else counted; logged once either way.
   */
  private copyFailed(r: RawRecord, table: string, e: DataError): Promise<void> | undefined {
    const letter: DeadLetter = { record: r, error: e, stage: e.stage ?? 'convert', table, failedAtMs: (this.d.now ?? Date.now)() };
    if (this.hasDeadLetters) return this.deadLetter(letter, 'record not written to one of its tables; its other tables have it, the dead-letter queue has this copy (errors.tolerance=all)', { table });
    if (!this.skips.first('table-copy-failed', r, table)) return undefined;
    this.metrics.tableCopiesFailed++;
    this.logTolerated('record not written to one of its tables (errors.tolerance=all); its other tables have it', letter, { table });
    return undefined;
  }

  /**
   * Keeps a failure in this cycle's dead letters: a record for the dead-letter topic (produced in the
   * cycle's transaction) and/or a row of the dead-letter table. Done every time the record is handled (an
   * abandoned cycle drops them with everything else); counted and logged once per coordinates.
   */
  private async deadLetter(letter: DeadLetter, what: string, tables: Readonly<Record<string, string>>): Promise<void> {
    const r = letter.record;
    const { deadLetterTopic, deadLetterTable } = this.d.connector.errors;
    if (this.skips.first('dead-letter', r, letter.table)) {
      this.metrics.deadLettered++;
      this.logTolerated(what, letter, tables);
    }
    if (deadLetterTopic !== null) this.letters.push(deadLetterTopicRecord(letter, deadLetterTopic.topic, deadLetterTopic.contextHeaders, this.letterSource));
    if (deadLetterTable === null) return;
    const sink = this.deadLetterSink ?? (await (this.deadLetterOpening ??= this.openDeadLetterTable(deadLetterTable).finally(() => (this.deadLetterOpening = undefined))));
    const value = deadLetterRow(letter, this.letterSource);
    const row: RawRecord = { ...r, value, headers: [] };
    let flush: DataFileWriter | undefined;
    try {
      let view;
      if (this.deadLetterProbe !== undefined) {
        await this.deadLetterProbe.prepare(value);
        this.deadLetterProbe.read(value);
        view = this.deadLetterProbe.viewOf(deadLetterTable);
      }
      await sink.prepare(value);
      flush = sink.append(row, view);
    } catch (e) {
      // The row is ours and its schema fixed: a table that cannot take it is the table's problem, not the record's.
      throw new FatalError(`the dead-letter table ${deadLetterTable} cannot take a dead-letter row: ${e instanceof Error ? e.message : String(e)}; give it the columns Icefloe writes (docs/errors.md) or name another table`, { cause: e, context: { table: deadLetterTable } });
    }
    if (flush !== undefined) await flush.flushIfNeeded();
  }

  /**
   * Opens (or creates: it is Icefloe's own table, whatever iceberg.tables.auto-create-enabled says) the
   * dead-letter table, with the dead-letter row format and no Kafka metadata columns (the row has them).
   */
  private async openDeadLetterTable(name: string): Promise<TableSink> {
    const format = deadLetterFormat();
    const sample = deadLetterRow({ record: { topic: '', partition: 0, offset: 0n, timestamp: null, key: null, value: null, headers: [] }, error: new DataError(''), stage: 'deserialize', table: undefined, failedAtMs: 0 }, this.letterSource);
    const loaded = (await this.loadOrCreate(name, format, sample, [], true)) as LoadedTable;
    const sink = new TableSink({ table: loaded, format, metadataFields: [], writeProps: this.d.connector.tables.writeProps, store: this.d.store, budget: this.budget, taskId: this.d.taskId });
    if (sink.probeFields.length > 0) {
      const source = await format.sourceSchema(sample);
      this.deadLetterProbe = new RecordProbe({ source, routePath: null, tables: new Map([[name, sink.probeFields]]), caseInsensitive: false }, (projection) => format.decoderFor(projection));
    }
    this.deadLetterSink = sink;
    return sink;
  }

  /** One WARN line per tolerated failure (errors.log.enable), with the record's contents when asked. */
  private logTolerated(what: string, letter: DeadLetter, tables: Readonly<Record<string, string>>): void {
    const errors = this.d.connector.errors;
    if (!errors.logEnable) return;
    const r = letter.record;
    const contents = errors.logIncludeMessages
      ? { timestamp: r.timestamp, key: shown(r.key), value: shown(r.value), headers: r.headers.map((h) => ({ key: h.key, value: shown(h.value) })) }
      : {};
    this.log.warn(what, { ...(tables['table'] === undefined ? {} : tables), topic: r.topic, partition: r.partition, offset: r.offset.toString(), ...(tables['tables'] === undefined ? {} : tables), stage: letter.stage, error: letter.error.message, ...contents });
  }

  /** A skip by configuration, counted once per coordinates (and table) however often the record is read. */
  private skipped(kind: SkipKind, r: RawRecord, table?: string): 'skipped' {
    if (this.skips.first(kind, r, table)) this.metrics[SKIP_METRIC[kind]]++;
    return 'skipped';
  }

  /**
   * The record read by its probe (route value, partition source values), undefined when no record needs
   * one, or a promise when the probe must be planned or a schema fetched first (then ask again).
   */
  private probe(msg: Uint8Array): RecordProbe | undefined | Promise<void> {
    if (!this.probing) return undefined;
    const key = this.d.format.schemaKey(msg);
    const probe = this.probes.get(key);
    if (probe === undefined) return this.planProbe(key, msg);
    const pending = probe.prepare(msg);
    if (pending !== undefined) return pending.then(() => undefined);
    probe.read(msg);
    return probe;
  }

  private async probeReady(msg: Uint8Array): Promise<RecordProbe | undefined> {
    for (;;) {
      const probe = this.probe(msg);
      if (!(probe instanceof Promise)) return probe;
      await probe;
    }
  }

  /** One projection for the writer schema of `msg` covering the route field and every open table's partition sources. */
  private async planProbe(key: string, msg: Uint8Array): Promise<void> {
    const tableSet = this.tableSet;
    const source = await this.d.format.sourceSchema(msg);
    if (tableSet !== this.tableSet) return; // the tables changed meanwhile: the next ask plans for the new set
    const tables = new Map<string, readonly ProbeField[]>();
    for (const [name, sink] of this.sinks) if (sink.probeFields.length > 0) tables.set(name, sink.probeFields);
    const request = { source, routePath: this.router.routeFieldPath(), tables, caseInsensitive: this.d.connector.tables.caseInsensitive };
    this.probes.set(key, new RecordProbe(request, (projection) => this.d.format.decoderFor(projection)));
  }

  /** The open tables changed: probes are planned again, and only needed for a route field or a partitioned table. */
  private tablesChanged(): void {
    this.tableSet++;
    this.probes.clear();
    this.probing = this.router.routeFieldPath() !== null || [...this.sinks.values()].some((s) => s.probeFields.length > 0);
  }

  // -- tables -----------------------------------------------------------------------------------------

  /** Loads (or auto-creates) a table; undefined when it does not exist and auto-create is off. */
  private async openTable(name: string, msg: Uint8Array): Promise<TableSink | undefined> {
    const loaded = await this.loadOrCreate(name, this.d.format, msg, this.metaFields, this.d.connector.tables.autoCreate);
    return loaded === undefined ? undefined : this.install(name, loaded);
  }

  /**
   * Loads a table, or creates it from `msg`'s schema in `format` (with `metaFields`) when missing and
   * `create`; undefined when it is missing and may not be created.
   */
  private async loadOrCreate(name: string, format: ValueFormat, msg: Uint8Array, metaFields: readonly MetadataFieldSpec[], create: boolean): Promise<LoadedTable | undefined> {
    const { catalog, connector } = this.d;
    const id = parseIdentifier(name);
    let loaded: LoadedTable;
    try {
      loaded = await catalog.loadTable(id);
    } catch (e) {
      // A REST catalog answers a table in a missing namespace with NoSuchNamespace: the table is missing
      // all the same, and auto-create makes both (createTable ensures the namespace).
      if (!(e instanceof NoSuchTableError) && !(e instanceof NoSuchNamespaceError)) throw e;
      if (!create) {
        if (e instanceof NoSuchNamespaceError || !(await catalog.namespaceExists(id.namespace))) this.absentNamespaces.set(name, id.namespace.join('.'));
        return undefined;
      }
      const schema = withMetadataFields(await format.sourceSchema(msg), metaFields);
      checkWritable(schema);
      const { partitionBy, partitionByKey } = connector.tables.settings(name);
      checkPartitionBy(name, schema, partitionBy, partitionByKey);
      try {
        loaded = await createTable({ catalog, store: this.d.store }, id, {
          schema,
          partitionBy,
          properties: connector.tables.autoCreateProps,
        });
        this.log.info('table created', { table: name, schemaId: loaded.metadata.currentSchemaId });
      } catch (err) {
        if (!(err instanceof TableAlreadyExistsError)) throw err;
        loaded = await catalog.loadTable(id); // another task created it first
      }
    }
    return loaded;
  }

  private install(name: string, loaded: LoadedTable): TableSink {
    const sink = new TableSink({
      table: loaded,
      format: this.d.format,
      metadataFields: this.metaFields,
      writeProps: this.d.connector.tables.writeProps,
      store: this.d.store,
      budget: this.budget,
      taskId: this.d.taskId,
    });
    this.sinks.set(name, sink);
    this.tablesChanged();
    return sink;
  }

  /**
   * Checks a writer schema the table has not seen with this sink. With evolution on and something to
   * add or widen: the cycle ends first, the change is committed to the catalog, the table reloaded.
   * Undefined when the cycle had to be abandoned instead.
   */
  private async acceptSchema(name: string, sink: TableSink, msg: Uint8Array): Promise<TableSink | undefined> {
    const { connector } = this.d;
    const key = this.d.format.schemaKey(msg);
    if (sink.acceptedSchemaKeys.has(key)) return sink;
    if (connector.tables.evolveSchema) {
      const source = withMetadataFields(await this.d.format.sourceSchema(msg), this.metaFields);
      checkWritable(source);
      // An inferred schema (schemaless JSON) is a guess from one record: it only adds what the table lacks.
      const options = { caseSensitive: !connector.tables.caseInsensitive, addColumnsOnly: this.d.format.inferredSchemas === true };
      if (evolvable(name, () => evolveTableSchema(sink.table.metadata, source, options).changed)) {
        if (!(await this.d.endCycle('schema-change'))) return undefined;
        const loaded = await evolveSchema({ catalog: this.d.catalog, store: this.d.store }, parseIdentifier(name), source, options);
        this.log.info('table schema evolved', { table: name, schemaId: loaded.metadata.currentSchemaId });
        sink = this.install(name, loaded);
      }
    }
    sink.acceptedSchemaKeys.add(key);
    return sink;
  }
}

/**
 * A record schema nested deeper than the Parquet writer can write (write/layout.ts MAX_FIELD_DEPTH) would
 * make a table, or a column, no file of which can ever be flushed: refused before the table is created or
 * evolved, as the records' problem (a DataError, stage `convert`, naming the deepest field).
 */
function checkWritable(schema: Schema): void {
  const deepest = deepestField(schema);
  if (deepest.depth <= MAX_FIELD_DEPTH) return;
  throw new DataError(`field ${deepest.path} is nested ${deepest.depth} levels deep; Icefloe writes at most ${MAX_FIELD_DEPTH} levels (the Parquet writer's Arrow IPC limit)`, {
    stage: 'convert',
    context: { field: deepest.path, depth: deepest.depth },
  });
}

/**
 * Whether a writer schema changes the table. A change evolution refuses (string → int, int → string,
 * optional → required) is the records' problem, not the configuration's: the schema travels with them and
 * the previous or next one may fit. So it is a DataError (stage `convert`) naming the table and the field,
 * which follows errors.tolerance, as the same schema is with evolution off (registry-cache.ts).
 */
function evolvable(table: string, changed: () => boolean): boolean {
  try {
    return changed();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new DataError(`table ${table} cannot take the record's schema: ${e.message}`, { stage: 'convert', cause: e, context: { ...e.context, table } });
  }
}

/**
 * A partition spec that does not fit the records' schema (a column that is not there) fails the task with
 * the table, the key to fix and the columns there are: a configuration error, never an unpartitioned table.
 */
function checkPartitionBy(table: string, schema: Schema, partitionBy: string, key: string): void {
  if (partitionBy === '') return;
  try {
    buildPartitionSpec(schema, partitionBy);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const columns = schema.fields.map((f) => f.name).join(', ');
    throw new ConfigError(`cannot create table ${table}: ${key}=${partitionBy}: ${e.message} (its columns: ${columns}); fix ${key}`, { cause: e, context: { ...e.context, table, key } });
  }
}
