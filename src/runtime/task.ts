/**
 * The sink task: consume → probe (route field, partition source fields) → decode into per-(table,
 * partition) columnar writers → at the end of each commit cycle upload, then ONE Kafka transaction with
 * the announcements on the control topic, a cycle-complete event and the source offsets
 * (docs/architecture.md, "Exactly-once").
 *
 * The rules this loop keeps, and where:
 * - Offsets reach the group only in the cycle's transaction, and only up to records that are in a file
 *   of that cycle (`PartitionState.next` advances after a record is appended to every table it routes to,
 *   or skipped by configuration) — never the consumer's read position, which runs ahead in a batch.
 * - Revocation: `onRevoked` completes the cycle (revoked partitions included) before the partitions move;
 *   if the partitions were lost, or the cycle fails, everything unannounced is abandoned.
 * - Abort: after any failed or aborted transaction the task drops its unannounced files, rewinds every
 *   assigned partition to its committed offset and discards whatever the current poll returned.
 * - A schema change ends the cycle first (files of one announcement share one schema id), then evolves
 *   the table in the catalog, reloads it and writes with the ids the catalog returned.
 * - Fenced (another incarnation took our transactional.id, or we are a zombie): stop, never retry.
 */
import { randomUUID } from 'node:crypto';
import { DataError, IcefloeError, RetriableError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ConverterKind } from '../config/converters.ts';
import { isFenced, partitionKey, requiresAbort } from '../consume/port.ts';
import type { KafkaSource, OutgoingRecord, RawRecord, TopicPartition, TopicPartitionOffset, TransactionalProducer } from '../consume/port.ts';
import { NoSuchTableError, parseIdentifier, TableAlreadyExistsError } from '../commit/port.ts';
import type { Catalog, LoadedTable } from '../commit/port.ts';
import { createTable, evolveSchema } from '../commit/table-ops.ts';
import { controlRecordKey, encodeAnnouncement, encodeControlEvent } from '../coordinate/events.ts';
import type { PartitionAssignment } from '../coordinate/events.ts';
import { evolveTableSchema } from '../iceberg/evolution.ts';
import { metadataFields } from '../config/kafka-metadata.ts';
import type { MetadataFieldSpec } from '../config/kafka-metadata.ts';
import { Router } from '../route/router.ts';
import type { ObjectStore } from '../upload/port.ts';
import { WriteMemoryBudget } from '../write/index.ts';
import type { DataFileWriter } from '../write/index.ts';
import type { CrashPoints } from './crash-points.ts';
import type { TableDecoder, ValueFormat } from './formats.ts';
import { CaptureSink, fieldIdAtPath, projectSchema } from './probe.ts';
import { TableSink, withMetadataFields } from './table-sink.ts';

export interface SinkTaskDeps {
  readonly connector: ConnectorConfig;
  readonly taskId: number;
  readonly source: KafkaSource;
  readonly producer: TransactionalProducer;
  readonly catalog: Catalog;
  /** Data files, manifests (the tables' location schemes). */
  readonly store: ObjectStore;
  readonly format: ValueFormat;
  /** The effective key converter (it decides the type of the key metadata column). */
  readonly keyConverter: ConverterKind;
  readonly crash: CrashPoints;
  readonly log: Logger;
  /** Largest control record (announcements are split above it); default 900 KiB, under Kafka's 1 MiB. */
  readonly maxControlRecordBytes?: number;
  /** Buffered column bytes across the task's writers before the largest is flushed; default 256 MiB. */
  readonly memoryBudgetBytes?: number;
  /** Called after a cycle's transaction committed (wakes an in-process committer). */
  readonly onAnnounced?: () => void;
  readonly nowMs?: () => number;
}

export type TaskState = 'UNASSIGNED' | 'RUNNING' | 'FAILED' | 'STOPPED';

export interface TaskMetrics {
  recordsConsumed: number;
  recordsWritten: number;
  bytesConsumed: number;
  tombstonesSkipped: number;
  errorsSkipped: number;
  unroutedSkipped: number;
  cyclesCommitted: number;
  cyclesAborted: number;
  filesAnnounced: number;
  lastCycleMs: number;
}

interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** The group's committed offset (null: none; undefined: not fetched yet). */
  committed: bigint | null | undefined;
  /** Offset after the last record fully handled since the last commit or rewind; undefined: none yet. */
  next: bigint | undefined;
  maxTs: number | undefined;
  /** What the last cycle-complete said; a lagging report is followed up even by an otherwise empty cycle. */
  reportedCaughtUp: boolean;
}

const POLL_MAX_RECORDS = 4096;
const MAX_BACKOFF_MS = 10_000;

export class SinkTask {
  readonly id: number;
  readonly metrics: TaskMetrics = {
    recordsConsumed: 0,
    recordsWritten: 0,
    bytesConsumed: 0,
    tombstonesSkipped: 0,
    errorsSkipped: 0,
    unroutedSkipped: 0,
    cyclesCommitted: 0,
    cyclesAborted: 0,
    filesAnnounced: 0,
    lastCycleMs: 0,
  };
  state: TaskState = 'UNASSIGNED';
  trace: string | undefined;

  private readonly d: SinkTaskDeps;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly router: Router;
  private readonly metaFields: readonly MetadataFieldSpec[];
  private readonly budget: WriteMemoryBudget;
  private readonly incarnation = randomUUID().slice(0, 8);
  private readonly partitions = new Map<string, PartitionState>();
  private readonly sinks = new Map<string, TableSink>();
  private readonly routeProbes = new Map<string, { decoder: TableDecoder; capture: CaptureSink; fieldId: number } | null>();
  private stopping = false;
  private failed = false;
  private needsRewind = false;
  private cycleCounter = 0;
  private cycleStartMs = 0;
  private cycleRecords = 0;
  private cycleBytes = 0;
  private consecutiveFailures = 0;

  constructor(deps: SinkTaskDeps) {
    this.d = deps;
    this.id = deps.taskId;
    this.log = deps.log.child({ connector: deps.connector.name, task: deps.taskId });
    this.now = deps.nowMs ?? Date.now;
    this.router = new Router(deps.connector.tables);
    this.metaFields = metadataFields(deps.connector.tables, deps.keyConverter);
    this.budget = new WriteMemoryBudget(deps.memoryBudgetBytes ?? 256 * 1024 * 1024);
  }

  /** Asks the loop to finish: the last cycle is committed when the consumer leaves the group. */
  stop(): void {
    this.stopping = true;
  }

  /** Runs until `stop()` (resolves) or a failure the task cannot retry (state FAILED, rejects). */
  async run(): Promise<void> {
    const { source, producer, connector } = this.d;
    try {
      await producer.initTransactions();
      await source.subscribe(connector.topics.kind === 'list' ? { kind: 'list', topics: connector.topics.topics } : { kind: 'regex', pattern: connector.topics.pattern }, {
        onAssigned: (tps) => this.onAssigned(tps),
        onRevoked: (tps, info) => this.onRevoked(tps, info.lost),
      });
      this.state = 'RUNNING';
      this.cycleStartMs = this.now();
      this.log.info('task started', { transactionalId: producer.transactionalId, group: source.groupId });
      while (!this.stopping) {
        try {
          if (this.needsRewind) await this.rewind();
          const batch = await source.poll({ maxRecords: POLL_MAX_RECORDS, timeoutMs: Math.max(1, Math.min(200, this.cycleDeadline() - this.now())) });
          if (this.needsRewind) continue; // the batch was read past an abandoned cycle: re-read instead
          for (const r of batch) {
            const pending = this.handle(r);
            if (pending !== undefined) await pending;
            if (this.needsRewind) break;
          }
          if (!this.needsRewind && this.cycleDue()) await this.completeCycle('trigger');
          this.consecutiveFailures = 0;
        } catch (e) {
          await this.retryLater(e);
        }
      }
      await source.close(); // the final revoke commits the last cycle
      this.state = 'STOPPED';
      this.log.info('task stopped', { ...this.metrics });
    } catch (e) {
      this.failed = true;
      this.state = 'FAILED';
      this.trace = e instanceof Error ? (e.stack ?? e.message) : String(e);
      this.log.error('task failed', { error: describe(e) });
      await this.abandon(e);
      await source.close().catch(() => undefined);
      throw e;
    } finally {
      await producer.close().catch(() => undefined);
    }
  }

  // -- per record -------------------------------------------------------------------------------------

  /** Handles one record synchronously when it can; returns a promise when it needs I/O. */
  private handle(r: RawRecord): Promise<void> | undefined {
    this.metrics.recordsConsumed++;
    const msg = r.value;
    if (msg === null) {
      // A tombstone has no row to append (the Apache sink ignores them too); it is consumed and counted.
      this.metrics.tombstonesSkipped++;
      this.done(r);
      return undefined;
    }
    this.cycleBytes += msg.byteLength;
    this.metrics.bytesConsumed += msg.byteLength;
    let tables: readonly string[];
    try {
      const route = this.router.route(this.routeValue(msg), r.topic, r.partition, r.offset);
      if (route.kind === 'fail') throw route.error;
      if (route.kind === 'skip') {
        this.metrics.unroutedSkipped++;
        this.done(r);
        return undefined;
      }
      tables = route.tables;
    } catch (e) {
      if (e instanceof RouteProbePending) return e.promise.then(() => this.handleAgain(r));
      return this.dataError(e, r);
    }
    // Fast path: every table open, the writer schema already accepted, nothing to fetch.
    for (const t of tables) {
      const sink = this.sinks.get(t);
      if (sink === undefined || !sink.acceptedSchemaKeys.has(this.d.format.schemaKey(msg)) || sink.prepare(msg) !== undefined) {
        return this.handleSlow(r, tables);
      }
    }
    return this.appendAll(r, tables);
  }

  /** `handle` minus the counting it already did (after a route probe had to fetch a schema). */
  private handleAgain(r: RawRecord): Promise<void> | undefined {
    this.metrics.recordsConsumed--;
    this.cycleBytes -= r.value?.byteLength ?? 0;
    this.metrics.bytesConsumed -= r.value?.byteLength ?? 0;
    return this.handle(r);
  }

  /** Opens, evolves and prepares every target table first, so a cycle it ends holds none of this record. */
  private async handleSlow(r: RawRecord, tables: readonly string[]): Promise<void> {
    const msg = r.value as Uint8Array;
    try {
      for (const t of tables) {
        let sink = this.sinks.get(t) ?? (await this.openTable(t, msg));
        if (sink === undefined) {
          const outcome = this.router.unknownTable(t, null, r.topic, r.partition, r.offset);
          if (outcome.kind === 'fail') throw outcome.error;
          this.metrics.unroutedSkipped++;
          this.done(r);
          return;
        }
        sink = await this.acceptSchema(t, sink, msg);
        if (this.needsRewind) return;
        await sink.prepare(msg);
      }
    } catch (e) {
      if (e instanceof DataError) return this.dataError(e, r);
      throw e;
    }
    await this.appendAll(r, tables);
  }

  private appendAll(r: RawRecord, tables: readonly string[]): Promise<void> | undefined {
    let flushes: DataFileWriter[] | undefined;
    try {
      for (const t of tables) {
        const w = (this.sinks.get(t) as TableSink).append(r);
        if (w !== undefined) (flushes ??= []).push(w);
      }
    } catch (e) {
      return this.dataError(e, r);
    }
    this.metrics.recordsWritten++;
    this.cycleRecords++;
    this.done(r);
    if (flushes === undefined) return undefined;
    return (async () => {
      for (const w of flushes) await w.flushIfNeeded();
    })();
  }

  /** The record is fully handled: its offset may be committed with this cycle. */
  private done(r: RawRecord): void {
    const p = this.partitionState(r);
    p.next = r.offset + 1n;
    if (r.timestamp !== null && r.timestamp >= 0 && (p.maxTs === undefined || r.timestamp > p.maxTs)) p.maxTs = r.timestamp;
  }

  /** A deterministic problem with this record: fail the task, or (errors.tolerance=all) skip and count it. */
  private dataError(e: unknown, r: RawRecord): Promise<void> | undefined {
    if (!(e instanceof DataError) || this.d.connector.errors.tolerance !== 'all') {
      if (e instanceof DataError) {
        throw new DataError(`record ${r.topic}-${r.partition}@${r.offset}: ${e.message}`, { cause: e, context: { ...e.context, topic: r.topic, partition: r.partition, offset: r.offset.toString() } });
      }
      throw e;
    }
    this.metrics.errorsSkipped++;
    if (this.d.connector.errors.logEnable) this.log.warn('record skipped (errors.tolerance=all)', { topic: r.topic, partition: r.partition, offset: r.offset.toString(), error: e.message });
    this.done(r);
    return undefined;
  }

  /** The route field's string value (null when absent or null); throws RouteProbePending to fetch a schema. */
  private routeValue(msg: Uint8Array): string | null {
    const path = this.router.routeFieldPath();
    if (path === null) return null;
    const key = this.d.format.schemaKey(msg);
    const probe = this.routeProbes.get(key);
    if (probe === undefined) throw new RouteProbePending(this.buildRouteProbe(key, msg, path));
    if (probe === null) return null;
    const pending = probe.decoder.prepare(msg);
    if (pending !== undefined) throw new RouteProbePending(pending.then(() => undefined));
    probe.capture.reset();
    probe.decoder.decode(msg, probe.capture);
    const v = probe.capture.value(probe.fieldId);
    return v === null ? null : v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : String(v);
  }

  private async buildRouteProbe(key: string, msg: Uint8Array, path: readonly string[]): Promise<void> {
    const source = await this.d.format.sourceSchema(msg);
    const id = fieldIdAtPath(source, path, this.d.connector.tables.caseInsensitive);
    const projection = id === undefined ? undefined : projectSchema(source, new Set([id]));
    this.routeProbes.set(key, projection === undefined || id === undefined ? null : { decoder: this.d.format.decoderFor(projection), capture: new CaptureSink(), fieldId: id });
  }

  // -- tables -----------------------------------------------------------------------------------------

  /** Loads (or auto-creates) a table; undefined when it does not exist and auto-create is off. */
  private async openTable(name: string, msg: Uint8Array): Promise<TableSink | undefined> {
    const { catalog, connector } = this.d;
    const id = parseIdentifier(name);
    let loaded: LoadedTable;
    try {
      loaded = await catalog.loadTable(id);
    } catch (e) {
      if (!(e instanceof NoSuchTableError)) throw e;
      if (!connector.tables.autoCreate) return undefined;
      const schema = withMetadataFields(await this.d.format.sourceSchema(msg), this.metaFields);
      try {
        loaded = await createTable({ catalog, store: this.d.store }, id, {
          schema,
          partitionBy: connector.tables.settings(name).partitionBy,
          properties: connector.tables.autoCreateProps,
        });
        this.log.info('table created', { table: name, schemaId: loaded.metadata.currentSchemaId });
      } catch (err) {
        if (!(err instanceof TableAlreadyExistsError)) throw err;
        loaded = await catalog.loadTable(id); // another task created it first
      }
    }
    return this.install(name, loaded);
  }

  private install(name: string, loaded: LoadedTable): TableSink {
    const sink = new TableSink({
      table: loaded,
      format: this.d.format,
      metadataFields: this.metaFields,
      writeProps: this.d.connector.tables.writeProps,
      store: this.d.store,
      budget: this.budget,
      taskId: this.id,
    });
    this.sinks.set(name, sink);
    return sink;
  }

  /**
   * Checks a writer schema the table has not seen with this sink. With evolution on and something to
   * add or widen: the cycle ends first, the change is committed to the catalog, the table reloaded.
   */
  private async acceptSchema(name: string, sink: TableSink, msg: Uint8Array): Promise<TableSink> {
    const { connector } = this.d;
    const key = this.d.format.schemaKey(msg);
    if (sink.acceptedSchemaKeys.has(key)) return sink;
    if (connector.tables.evolveSchema) {
      const source = withMetadataFields(await this.d.format.sourceSchema(msg), this.metaFields);
      // An inferred schema (schemaless JSON) is a guess from one record: it only adds what the table lacks.
      const options = { caseSensitive: !connector.tables.caseInsensitive, addColumnsOnly: this.d.format.inferredSchemas === true };
      if (evolveTableSchema(sink.table.metadata, source, options).changed) {
        await this.completeCycle('schema-change');
        if (this.needsRewind) return sink;
        const loaded = await evolveSchema({ catalog: this.d.catalog, store: this.d.store }, parseIdentifier(name), source, options);
        this.log.info('table schema evolved', { table: name, schemaId: loaded.metadata.currentSchemaId });
        sink = this.install(name, loaded);
      }
    }
    sink.acceptedSchemaKeys.add(key);
    return sink;
  }

  // -- cycles -----------------------------------------------------------------------------------------

  private cycleDeadline(): number {
    return this.cycleStartMs + this.d.connector.commit.intervalMs;
  }

  private cycleDue(): boolean {
    const c = this.d.connector.commit;
    return (
      this.now() >= this.cycleDeadline() ||
      (c.maxRecords !== null && this.cycleRecords >= c.maxRecords) ||
      (c.maxBytes !== null && this.cycleBytes >= c.maxBytes)
    );
  }

  /** Commits the cycle; on failure abandons it (so the records are read again) and rethrows. */
  private async completeCycle(why: string): Promise<void> {
    try {
      await this.commitCycle(why);
    } catch (e) {
      this.metrics.cyclesAborted++;
      await this.abandon(e);
      throw e;
    }
  }

  /**
   * After a retriable failure (broker, registry, catalog or store trouble, an aborted transaction) the
   * cycle is abandoned: back off and read again from the committed offsets, as Connect retries a sink
   * task's RetriableException — for as long as it takes, since nothing was lost and the operator sees
   * every attempt in the log. A transaction the broker made us abort (the group generation moved on: a
   * rebalance under way) is the protocol working (consume/port.ts), so it does not grow the back-off.
   * Anything not retriable (a fenced zombie, a bad configuration, a data error) fails the task.
   */
  private async retryLater(e: unknown): Promise<void> {
    if (isFenced(e) || !(e instanceof RetriableError)) throw e;
    if (!this.needsRewind) await this.abandon(e);
    if (!requiresAbort(e)) this.consecutiveFailures++;
    this.log.warn('cycle abandoned; reading again from the committed offsets', { error: describe(e), consecutive: this.consecutiveFailures });
    await sleep(Math.min(MAX_BACKOFF_MS, 200 * 2 ** Math.max(0, this.consecutiveFailures - 1)));
  }

  private async commitCycle(why: string): Promise<void> {
    const { producer, source, connector, crash } = this.d;
    const started = this.now();
    const reportDue = [...this.partitions.values()].some((p) => !p.reportedCaughtUp);
    if (this.cycleRecords === 0 && !reportDue && ![...this.partitions.values()].some((p) => p.next !== undefined && p.next !== p.committed)) {
      this.cycleStartMs = started;
      return;
    }
    const results = [];
    for (const sink of this.sinks.values()) if (sink.records > 0) results.push(await sink.complete());
    crash.reach('task.after-upload');

    await this.fetchCommitted();
    const cycleId = `${this.incarnation}-${++this.cycleCounter}`;
    const key = controlRecordKey(connector.name, this.id);
    const out: OutgoingRecord[] = [];
    const maxBytes = this.d.maxControlRecordBytes ?? 900 * 1024;
    for (const r of results) {
      if (r.files.length === 0) continue;
      const md = r.table.metadata;
      for (const value of encodeAnnouncement(
        {
          connector: connector.name,
          taskId: this.id,
          cycleId,
          table: r.table.identifier,
          tableUuid: md.tableUuid,
          schemaId: r.schemaId,
          specId: r.specId,
          sourceSpans: r.spans,
          files: r.files,
        },
        maxBytes,
      )) {
        out.push({ topic: connector.control.topic, key, value });
      }
    }
    const assignments: PartitionAssignment[] = [];
    const offsets: TopicPartitionOffset[] = [];
    for (const p of this.partitions.values()) {
      const next = p.next ?? (p.committed === null ? undefined : p.committed);
      if (next === undefined) continue;
      const high = source.highWatermark(p);
      assignments.push({ topic: p.topic, partition: p.partition, nextOffset: next, ...(p.maxTs === undefined ? {} : { maxTimestampMs: p.maxTs }), caughtUp: high !== null && next >= high });
      if (p.next !== undefined && p.next !== p.committed) offsets.push({ topic: p.topic, partition: p.partition, offset: p.next });
    }
    out.push({ topic: connector.control.topic, key, value: encodeControlEvent({ type: 'cycle-complete', connector: connector.name, taskId: this.id, cycleId, assignments }) });

    await producer.beginTransaction();
    try {
      await producer.send(out);
      if (offsets.length > 0) await producer.sendOffsetsToTransaction(offsets, source.groupMetadata());
      crash.reach('task.in-transaction');
      await producer.commitTransaction();
    } catch (e) {
      let aborted = false;
      if (!isFenced(e)) {
        aborted = await producer.abortTransaction().then(
          () => true,
          (err: unknown) => (this.log.warn('abort failed', { error: describe(err) }), false),
        );
      }
      // Only a transaction known to be aborted proves the files were never announced; otherwise they
      // may be (a commit whose answer was lost), and deleting them would lose data: leave them to
      // orphan cleanup.
      if (aborted) await Promise.all(results.flatMap((r) => r.files.map((f) => this.d.store.delete(f.filePath).catch(() => undefined))));
      throw e instanceof IcefloeError ? e : new RetriableError(`commit cycle failed: ${describe(e)}`, { cause: e });
    }
    crash.reach('task.after-announce');

    for (const p of this.partitions.values()) {
      if (p.next !== undefined) p.committed = p.next;
      const a = assignments.find((x) => x.topic === p.topic && x.partition === p.partition);
      if (a !== undefined) p.reportedCaughtUp = a.caughtUp;
    }
    const files = results.reduce((n, r) => n + r.files.length, 0);
    this.metrics.cyclesCommitted++;
    this.metrics.filesAnnounced += files;
    this.metrics.lastCycleMs = this.now() - started;
    this.log.info('cycle committed', { cycle: cycleId, why, records: this.cycleRecords, files, tables: results.length, ms: this.metrics.lastCycleMs });
    this.cycleRecords = 0;
    this.cycleBytes = 0;
    this.cycleStartMs = this.now();
    this.d.onAnnounced?.();
  }

  /** Committed offsets of partitions we have not asked about yet (reported for idle partitions). */
  private async fetchCommitted(): Promise<void> {
    const missing = [...this.partitions.values()].filter((p) => p.committed === undefined);
    if (missing.length === 0) return;
    for (const c of await this.d.source.committed(missing)) {
      const p = this.partitions.get(partitionKey(c));
      if (p !== undefined) p.committed = c.offset;
    }
  }

  /** Drops every unannounced record and file; the loop rewinds to the committed offsets before reading on. */
  private async abandon(reason: unknown): Promise<void> {
    const orphans: string[] = [];
    for (const sink of this.sinks.values()) orphans.push(...(await sink.abort(reason)));
    this.sinks.clear();
    for (const p of this.partitions.values()) p.next = undefined;
    this.cycleRecords = 0;
    this.cycleBytes = 0;
    this.cycleStartMs = this.now();
    this.needsRewind = true;
    // Uploaded but never announced: no snapshot can reference them. Best effort; orphan cleanup is the backstop.
    await Promise.all(orphans.map((path) => this.d.store.delete(path).catch(() => undefined)));
  }

  private async rewind(): Promise<void> {
    await this.d.source.rewindToCommitted();
    for (const p of this.partitions.values()) p.committed = undefined;
    this.needsRewind = false;
  }

  // -- rebalances -------------------------------------------------------------------------------------

  private onAssigned(tps: readonly TopicPartition[]): void {
    for (const tp of tps) {
      this.partitions.set(partitionKey(tp), { topic: tp.topic, partition: tp.partition, committed: undefined, next: undefined, maxTs: undefined, reportedCaughtUp: true });
    }
    this.log.info('partitions assigned', { partitions: tps.map(partitionKey) });
  }

  private async onRevoked(tps: readonly TopicPartition[], lost: boolean): Promise<void> {
    this.log.info('partitions revoked', { partitions: tps.map(partitionKey), lost });
    if (lost || this.failed) await this.abandon(new RetriableError('partitions lost'));
    else {
      try {
        await this.completeCycle('revoke');
      } catch (e) {
        // Abandoned: nothing of the cycle is announced, so the next owner reads it again.
        if (isFenced(e) || !(e instanceof RetriableError)) throw e;
        this.log.warn('cycle abandoned at revocation', { error: describe(e) });
      }
    }
    for (const tp of tps) this.partitions.delete(partitionKey(tp));
  }

  private partitionState(r: TopicPartition): PartitionState {
    const k = partitionKey(r);
    let p = this.partitions.get(k);
    if (p === undefined) {
      // Records only come from assigned partitions, which onAssigned registered; this is a safety net.
      p = { topic: r.topic, partition: r.partition, committed: undefined, next: undefined, maxTs: undefined, reportedCaughtUp: true };
      this.partitions.set(k, p);
    }
    return p;
  }
}

/** Thrown inside `handle` when the route probe for a new writer schema must be built first. */
class RouteProbePending extends Error {
  readonly promise: Promise<void>;
  constructor(promise: Promise<void>) {
    super('route probe pending');
    this.promise = promise;
  }
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

