/**
 * The connector's committer: reads the control topic (read_committed, never past the last stable
 * offset), and for every table announced there plans and commits one snapshot of the announced files
 * (src/coordinate/commit-state.ts decides; this file does the I/O around it). The applied control
 * positions travel in the snapshot summary, so a committer that restarts — here or in another process —
 * starts from what the table says, never from "latest".
 *
 * A round: refresh the live identity (cluster id, control topic id), read new control records into a
 * buffer, then per table (in name order): load it, read its positions, check the announced files exist,
 * plan, and append with a requirement on the snapshot read (a plan made stale by another commit is
 * planned again). A table that cannot be applied stops with its reason; the others go on. Records every
 * table is past are dropped from the buffer.
 *
 * In standalone mode it runs in the worker process; distributed mode elects one per table, same protocol.
 */
import { IcefloeError, RetriableError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ControlTopicReader, KafkaAdmin, TopicPartitionOffset } from '../consume/port.ts';
import { formatIdentifier, NoSuchTableError, parseIdentifier } from '../commit/port.ts';
import type { Catalog, LoadedTable } from '../commit/port.ts';
import { findCommit } from '../commit/commit-retry.ts';
import { appendFiles } from '../commit/table-ops.ts';
import { isPlanCurrent, planTableCommit, readControlRecord } from '../coordinate/commit-state.ts';
import type { ControlRecordRead, StopReason, TablePlan } from '../coordinate/commit-state.ts';
import { readControlPositions } from '../coordinate/control-positions.ts';
import type { ControlIdentity } from '../coordinate/control-positions.ts';
import { tableRefString } from '../coordinate/events.ts';
import type { TableRef } from '../coordinate/events.ts';
import type { ObjectStore } from '../upload/port.ts';
import type { CrashPoints } from '../core/crash-points.ts';

export interface CommitterDeps {
  readonly connector: ConnectorConfig;
  readonly reader: ControlTopicReader;
  readonly admin: KafkaAdmin;
  readonly catalog: Catalog;
  readonly store: ObjectStore;
  readonly crash: CrashPoints;
  readonly log: Logger;
  readonly nowMs?: () => number;
}

export interface TableCommitStatus {
  readonly table: string;
  readonly state: 'RUNNING' | 'STOPPED';
  readonly reason?: StopReason;
  readonly lastSnapshotId?: bigint;
  readonly lastCommitMs?: number;
  readonly validThroughTs?: number;
  /** Kafka timestamp (ms) of the oldest announcement for the table not yet applied (the retention guard's input). */
  readonly oldestUnappliedMs?: number;
}

export interface CommitRecord {
  readonly table: string;
  readonly snapshotId: bigint | undefined;
  readonly files: number;
  readonly records: bigint;
  /** From the oldest applied announcement's control-record timestamp to the catalog's answer. */
  readonly latencyMs: number | undefined;
  readonly validThroughTs: number | undefined;
}

const MAX_REPLANS = 5;
const FILE_CHECK_CONCURRENCY = 16;

export class ConnectorCommitter {
  /** Every commit made, for metrics and the benchmark (bounded: the last 10,000). */
  readonly commits: CommitRecord[] = [];
  private readonly d: CommitterDeps;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly catalog: Catalog;
  private cursor: Map<number, bigint> | undefined;
  private buffer: ControlRecordRead[] = [];
  private readonly tables = new Map<string, TableRef>();
  private readonly status = new Map<string, TableCommitStatus>();
  private clusterId: string | undefined;
  private readonly existing = new Set<string>();
  /** Consecutive failed rounds per table (for the log; the table is retried every round). */
  private readonly failures = new Map<string, number>();
  /** Each table's control positions as last read from it (to date what it still waits for when it cannot be read). */
  private readonly knownPositions = new Map<string, ReadonlyMap<number, bigint>>();

  constructor(deps: CommitterDeps) {
    this.d = deps;
    this.log = deps.log.child({ connector: deps.connector.name, role: 'committer' });
    this.now = deps.nowMs ?? Date.now;
    this.catalog = afterCommitHook(deps.catalog, () => deps.crash.reach('committer.after-catalog-commit'));
  }

  tableStatus(): TableCommitStatus[] {
    return [...this.status.values()].sort((a, b) => (a.table < b.table ? -1 : 1));
  }

  /** One round over every table; returns the commits it made. */
  async round(): Promise<CommitRecord[]> {
    const live = await this.identity();
    const logStart = await this.readNew(live);
    const names = [...this.tables.keys()].sort();
    const made: CommitRecord[] = [];
    const trimAt = new Map<number, bigint>();
    let keepBuffer = false;
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      const ref = this.tables.get(name) as TableRef;
      let result: Awaited<ReturnType<ConnectorCommitter['commitTable']>>;
      try {
        result = await this.commitTable(ref, live, logStart);
        this.failures.delete(name);
      } catch (e) {
        // One table's trouble (catalog or store unreachable, retries exhausted) must not hold the others
        // back: it is tried again next round, its announcements kept in the buffer meanwhile.
        if (!(e instanceof IcefloeError) || !e.retriable) throw e;
        const n = (this.failures.get(name) ?? 0) + 1;
        this.failures.set(name, n);
        this.log.warn('table commit failed; retrying next round', { table: name, consecutive: n, error: e.message });
        this.setOldestUnapplied(name, this.oldestBuffered(ref));
        keepBuffer = true;
        continue;
      }
      const { plan, commit } = result;
      if (commit !== undefined) {
        made.push(commit);
        if (i < names.length - 1) this.d.crash.reach('committer.between-tables');
      }
      // What this table still needs from the buffer: a stopped or waiting table everything from its
      // stored position on each control partition — from the start of the buffer where it stores none
      // (a fresh table): trimming those would lose announcements it has not applied yet.
      const cursor = this.cursor ?? new Map<number, bigint>();
      const pending = plan !== undefined && (plan.kind === 'stopped' || plan.waiting > 0);
      for (const [p, end] of cursor) {
        const o = pending ? (plan.positions.get(p) ?? 0n) : end;
        trimAt.set(p, trimAt.has(p) ? min(trimAt.get(p) as bigint, o) : o);
      }
    }
    for (const [p, end] of this.cursor ?? []) if (!trimAt.has(p)) trimAt.set(p, end);
    if (!keepBuffer) this.buffer = this.buffer.filter((r) => r.offset >= (trimAt.get(r.partition) ?? 0n));
    return made;
  }

  private async identity(): Promise<ControlIdentity> {
    this.clusterId ??= await this.d.admin.clusterId();
    return { clusterId: this.clusterId, controlTopicId: await this.d.admin.topicId(this.d.connector.control.topic) };
  }

  /** Reads every committed control record past the cursor; returns each partition's log start offset. */
  private async readNew(live: ControlIdentity): Promise<Map<number, bigint>> {
    const topic = this.d.connector.control.topic;
    const marks = await this.d.admin.watermarks(topic);
    const logStart = new Map(marks.map((m) => [m.partition, m.low]));
    const cursor = (this.cursor ??= await this.startPositions(live));
    for (const m of marks) {
      const at = cursor.get(m.partition);
      if (at === undefined || at < m.low) cursor.set(m.partition, m.low);
    }
    const from: TopicPartitionOffset[] = [...cursor].filter(([p, o]) => (marks.find((m) => m.partition === p)?.lastStable ?? 0n) > o).map(([partition, offset]) => ({ topic, partition, offset }));
    if (from.length === 0) return logStart;
    const read = await this.d.reader.read(from);
    for (const r of read.records) {
      if (r.value === null) continue;
      const rec = readControlRecord(r.partition, r.offset, r.value, r.timestamp ?? undefined);
      this.buffer.push(rec);
      if ('event' in rec && rec.event.type === 'announcement' && rec.event.connector === this.d.connector.name) {
        const name = tableRefString(rec.event.table);
        if (!this.tables.has(name)) this.tables.set(name, rec.event.table);
      }
    }
    for (const e of read.endOffsets) cursor.set(e.partition, e.offset);
    return logStart;
  }

  /**
   * Where the first read starts. With static tables every announcement is for one of them, so reading
   * can start at the lowest position they store (not at the log start: days of retention). A dynamic
   * connector, or a static table without positions yet, needs the whole retained log (an empty map:
   * every partition from its log start).
   */
  private async startPositions(live: ControlIdentity): Promise<Map<number, bigint>> {
    const routing = this.d.connector.tables.routing;
    if (routing.kind === 'dynamic') return new Map();
    const tables = [...new Set(routing.kind === 'all' ? routing.tables : routing.routes.map((r) => r.table))];
    const lowest = new Map<number, bigint>();
    const seen = new Map<number, number>();
    for (const name of tables) {
      let table: LoadedTable;
      try {
        table = await this.catalog.loadTable(parseIdentifier(name));
      } catch (e) {
        if (e instanceof NoSuchTableError) return new Map();
        throw e;
      }
      const read = readControlPositions(table.metadata, this.d.connector.name, live);
      if (read.kind !== 'positions') return new Map();
      for (const [p, o] of read.positions) {
        lowest.set(p, lowest.has(p) ? min(lowest.get(p) as bigint, o) : o);
        seen.set(p, (seen.get(p) ?? 0) + 1);
      }
      const ref = table.identifier;
      this.tables.set(tableRefString(ref), { namespace: ref.namespace, name: ref.name });
    }
    // A control partition some table has no position for may hold announcements it never applied: read
    // that partition from its log start (absent from the map).
    for (const p of [...lowest.keys()]) if (seen.get(p) !== tables.length) lowest.delete(p);
    return lowest;
  }

  private async commitTable(ref: TableRef, live: ControlIdentity, logStart: ReadonlyMap<number, bigint>): Promise<{ plan: TablePlan | undefined; commit?: CommitRecord }> {
    const { connector } = this.d;
    const name = tableRefString(ref);
    const id = parseIdentifier(formatIdentifier(ref));
    for (let attempt = 1; ; attempt++) {
      let table: LoadedTable;
      try {
        table = await this.catalog.loadTable(id);
      } catch (e) {
        if (e instanceof NoSuchTableError) {
          // Dropped with nothing waiting for it (perhaps about to be recreated): nothing to stop for.
          if (this.unappliedBuffered(ref).length === 0) {
            this.running(name, {});
            this.setOldestUnapplied(name, undefined);
            return { plan: undefined };
          }
          this.stop(name, { code: 'table-uuid-mismatch', message: `${name}: announced files wait for a table that does not exist (dropped?)`, context: {} });
          return { plan: undefined };
        }
        throw e;
      }
      const positions = readControlPositions(table.metadata, connector.name, live);
      const missing = await this.missingFiles(ref, positions.kind === 'positions' ? positions.positions : new Map());
      const plan = planTableCommit({
        connector: connector.name,
        table: ref,
        metadata: table.metadata,
        positions,
        live,
        records: this.buffer,
        nowMs: this.now(),
        isFileMissing: (path) => missing.has(path),
        logStartOffsets: logStart,
      });
      if (positions.kind === 'positions' || positions.kind === 'fresh') this.knownPositions.set(name, positions.kind === 'fresh' ? new Map() : positions.positions);
      const oldestUnapplied = plan.oldestUnappliedAgeMs === undefined ? undefined : this.now() - plan.oldestUnappliedAgeMs;
      if (plan.kind === 'stopped') {
        this.stop(name, plan.reason);
        this.setOldestUnapplied(name, oldestUnapplied ?? this.oldestBuffered(ref));
        return { plan };
      }
      if (plan.kind === 'nothing') {
        this.running(name, {});
        this.setOldestUnapplied(name, oldestUnapplied);
        return { plan };
      }
      const outcome = await appendFiles({ catalog: this.catalog, store: this.d.store }, id, {
        commitId: plan.commitId,
        files: plan.files,
        summary: plan.summary,
        isCurrent: (t) => isPlanCurrent(plan, readControlPositions(t.metadata, connector.name, live)),
      });
      if (outcome.status === 'nothing-to-commit') {
        if (attempt >= MAX_REPLANS) throw new RetriableError(`${name}: positions kept moving under ${MAX_REPLANS} plans (another committer for this connector?)`);
        continue; // another commit moved the positions: plan again from the reloaded table
      }
      const snapshot = findCommit(outcome.table.metadata, plan.commitId)?.snapshotId;
      const oldest = plan.applied.map((a) => this.timestampOf(a.partition, a.offsets[0] ?? 0n)).filter((t): t is number => t !== undefined);
      const commit: CommitRecord = {
        table: name,
        snapshotId: snapshot,
        files: plan.files.length,
        records: plan.files.reduce((n, f) => n + f.recordCount, 0n),
        latencyMs: oldest.length === 0 ? undefined : this.now() - Math.min(...oldest),
        validThroughTs: plan.validThroughTs,
      };
      // `already-applied`: the snapshot was there before this committer's first attempt (another committer
      // of the connector, or this one before a restart, made it): logged, but not counted as a commit here.
      if (outcome.status !== 'already-applied') {
        this.commits.push(commit);
        if (this.commits.length > 10_000) this.commits.splice(0, this.commits.length - 10_000);
      }
      this.running(name, { lastSnapshotId: snapshot, lastCommitMs: this.now(), validThroughTs: plan.validThroughTs });
      this.setOldestUnapplied(name, oldestUnapplied);
      this.log.info('table committed', {
        table: name,
        snapshotId: snapshot?.toString(),
        files: commit.files,
        records: commit.records.toString(),
        outcome: outcome.status,
        // committed: confirmed by the catalog's answer (`response`) or, after an unknown outcome, found by its commit id (`reload`).
        ...(outcome.status === 'committed' ? { resolvedBy: outcome.resolvedBy } : {}),
        latencyMs: commit.latencyMs,
        validThroughTs: plan.validThroughTs,
        // The source offsets this snapshot made visible (inclusive), for freshness measurements.
        sourceRanges: plan.sourceRanges.map((r) => ({ topic: r.topic, partition: r.partition, first: r.firstOffset.toString(), last: r.lastOffset.toString() })),
      });
      return { plan, commit };
    }
  }

  /** Announced files (for this table, not yet applied) that are not in the object store. */
  private async missingFiles(ref: TableRef, positions: ReadonlyMap<number, bigint>): Promise<Set<string>> {
    const paths: string[] = [];
    for (const r of this.buffer) {
      if (!('event' in r) || r.event.type !== 'announcement' || r.event.connector !== this.d.connector.name) continue;
      if (r.offset < (positions.get(r.partition) ?? 0n) || tableRefString(r.event.table) !== tableRefString(ref)) continue;
      for (const f of r.event.files) if (!this.existing.has(f.filePath)) paths.push(f.filePath);
    }
    const missing = new Set<string>();
    for (let i = 0; i < paths.length; i += FILE_CHECK_CONCURRENCY) {
      await Promise.all(
        paths.slice(i, i + FILE_CHECK_CONCURRENCY).map(async (p) => {
          if (await this.d.store.exists(p)) this.existing.add(p);
          else missing.add(p);
        }),
      );
    }
    if (this.existing.size > 100_000) this.existing.clear(); // a cache, not a record
    return missing;
  }

  /**
   * The oldest buffered announcement for a table at or past its last known positions (all of them when
   * it was never read): what it waits for when it cannot be planned (catalog unreachable, stopped early).
   */
  private oldestBuffered(ref: TableRef): number | undefined {
    let oldest: number | undefined;
    for (const r of this.unappliedBuffered(ref)) if (r.timestampMs !== undefined && (oldest === undefined || r.timestampMs < oldest)) oldest = r.timestampMs;
    return oldest;
  }

  private unappliedBuffered(ref: TableRef): ControlRecordRead[] {
    const name = tableRefString(ref);
    const known = this.knownPositions.get(name);
    return this.buffer.filter(
      (r) =>
        'event' in r &&
        r.event.type === 'announcement' &&
        r.event.connector === this.d.connector.name &&
        r.offset >= (known?.get(r.partition) ?? 0n) &&
        tableRefString(r.event.table) === name,
    );
  }

  private setOldestUnapplied(name: string, oldestMs: number | undefined): void {
    const prior = this.status.get(name);
    const next: TableCommitStatus = { ...(prior ?? { table: name, state: 'RUNNING' }), ...(oldestMs === undefined ? {} : { oldestUnappliedMs: oldestMs }) };
    if (oldestMs === undefined) delete (next as { oldestUnappliedMs?: number }).oldestUnappliedMs;
    this.status.set(name, next);
  }

  private timestampOf(partition: number, offset: bigint): number | undefined {
    return this.buffer.find((r) => r.partition === partition && r.offset === offset)?.timestampMs;
  }

  private stop(name: string, reason: StopReason): void {
    const prior = this.status.get(name);
    if (prior?.state !== 'STOPPED' || prior.reason?.message !== reason.message) {
      this.log.error('table stopped: nothing is committed to it until an operator repairs it', { table: name, code: reason.code, reason: reason.message });
    }
    this.status.set(name, { ...prior, table: name, state: 'STOPPED', reason });
  }

  private running(name: string, extra: { readonly [K in keyof TableCommitStatus]?: TableCommitStatus[K] | undefined }): void {
    const prior = this.status.get(name);
    const next: TableCommitStatus = { ...prior, ...stripUndefined(extra), table: name, state: 'RUNNING' };
    delete (next as { reason?: StopReason }).reason;
    this.status.set(name, next);
  }
}

function stripUndefined(o: object): Partial<TableCommitStatus> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<TableCommitStatus>;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** The catalog with a hook after every successful commit (the crash point "applied, reply unseen"). */
function afterCommitHook(catalog: Catalog, hook: () => void): Catalog {
  return {
    name: catalog.name,
    listNamespaces: (parent) => catalog.listNamespaces(parent),
    namespaceExists: (ns) => catalog.namespaceExists(ns),
    createNamespace: (ns, props) => catalog.createNamespace(ns, props),
    listTables: (ns) => catalog.listTables(ns),
    tableExists: (id) => catalog.tableExists(id),
    createTable: (id, req) => catalog.createTable(id, req),
    loadTable: (id) => catalog.loadTable(id),
    async commitTable(id, requirements, updates, options) {
      const answer = await catalog.commitTable(id, requirements, updates, options);
      hook();
      return answer;
    },
    dropTable: (id) => catalog.dropTable(id),
    close: () => catalog.close(),
  };
}
