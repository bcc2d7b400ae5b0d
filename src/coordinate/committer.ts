/**
 * The connector's committer: reads the control topic (read_committed, never past the last stable
 * offset), and for every table announced there plans and commits one snapshot of the announced files
 * (src/coordinate/commit-state.ts decides; this file does the I/O around it). The applied control
 * positions travel in the snapshot summary, so a committer that restarts — here or in another process —
 * starts from what the table says, never from "latest".
 *
 * A round: refresh the live identity (control topic id every round, cluster id when that changes; another
 * topic id is another log: cursor, buffer and C start over on it, and tables stored for the old one stop),
 * read new control records into a buffer, then per table (in name order): load it, read its positions,
 * check the announced files exist, plan, and append with a requirement on the snapshot read (a plan made stale by another commit is
 * planned again). A table that cannot be applied stops with its reason; one whose commit fails (catalog
 * refuses, outcome unknown, retries exhausted), or that the catalog does not find while announcements wait
 * for it, is retried next round and held meanwhile like a stopped one (its needs keep its records and C
 * back); either way the others go on. Records every table is past are dropped from the buffer, and that point is committed as the
 * connector position C (connector-position.ts), every round, changed or not, with R: where every table but
 * the stopped, failing and parked ones is, so that a table holding C back does not make the others look
 * behind when retention deletes the log below C (only the tables that lost announcements stop).
 *
 * Tables that move backwards: the committer remembers what it saw applied to each table; a table whose
 * positions went back (rollback, branch reset) or that was replaced (new UUID) stops with
 * `positions-rolled-back` until an operator runs `icefloe positions --reapply|--adopt`. A re-apply whose
 * positions lie below what the buffer still holds makes the committer read the control topic again.
 *
 * Catch-up is incremental: a round reads a bounded step of the control topic (control-buffer.ts), plans
 * and commits what it has (the planner only includes whole announcements), and while it is behind the loop
 * starts the next round right away (`behind()`). Memory: the buffer holds only this connector's records
 * that tables still need, and it is capped: at the cap, records only held tables (stopped, failing, missing)
 * need are dropped — those tables are "parked": not planned until their records are read again from their
 * stored positions, by a restart for stopped ones, and for failing or missing ones by a re-read the
 * committer starts after a back-off (`retryParked`) — and if what remains is still at the cap, reading
 * pauses with an error in the log.
 * This file says what the tables need (trim points, parking candidates, where reading starts); the buffer
 * (control-buffer.ts) reads, holds, counts and drops.
 *
 * Branches: a table whose connector names a commit branch (iceberg.table.<t>.commit-branch or
 * iceberg.tables.default-commit-branch) gets its files and positions on that branch, and its positions are
 * read from that branch's ancestry; main is never touched. A branch that does not exist yet is created by
 * the first commit, forked from main's head (iceberg/append.ts), and until then its positions are main's.
 *
 * In standalone mode it runs in the worker process; distributed mode elects one per table, same protocol.
 */
import { CommitStateUnknownError, errorMessage, IcefloeError, RetriableError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ControlTopicReader, GroupAdmin, KafkaAdmin } from '../consume/port.ts';
import { formatIdentifier, NoSuchTableError, parseIdentifier } from '../commit/port.ts';
import type { Catalog, LoadedTable } from '../commit/port.ts';
import { findCommit } from '../commit/commit-retry.ts';
import { appendFiles, updateProperties } from '../commit/table-ops.ts';
import { isPlanCurrent, planTableCommit } from '../coordinate/commit-state.ts';
import type { StopReason, TablePlan } from '../coordinate/commit-state.ts';
import { readControlPositions } from '../coordinate/control-positions.ts';
import type { ControlIdentity } from '../coordinate/control-positions.ts';
import { sameTable, tableRefString } from '../coordinate/events.ts';
import type { ControlEvent, TableRef } from '../coordinate/events.ts';
import type { ObjectStore } from '../upload/port.ts';
import { SourceReports, sourceKey } from '../coordinate/watermark.ts';
import type { SourceKnowledge } from '../coordinate/watermark.ts';
import type { SourceLogs } from '../coordinate/source-applied.ts';
import type { CrashPoints } from '../core/crash-points.ts';
import type { ControlPositions } from '../coordinate/control-positions.ts';
import { appliedThroughFor, controlGroupId, nextAppliedPositions, reapplyHolds, reapplyKey, readReapplyMark, tableKey } from '../coordinate/connector-position.ts';
import type { ConnectorPositions, RestThrough } from '../coordinate/connector-position.ts';
import { commitConnectorPositions, loadOrSeedConnectorPositions } from '../coordinate/position-store.ts';
import type { PositionStoreOptions } from '../coordinate/position-store.ts';
import { ControlBuffer } from '../coordinate/control-buffer.ts';
import { AnnouncedFiles } from '../coordinate/announced-files.ts';
import type { ControlReadStatus, StoppedNeeds } from '../coordinate/control-buffer.ts';
import { ControlGaps } from '../coordinate/control-gaps.ts';

export type { ControlReadStatus } from '../coordinate/control-buffer.ts';

export interface CommitterDeps {
  readonly connector: ConnectorConfig;
  readonly reader: ControlTopicReader;
  /** GroupAdmin's topic list tells a deleted source topic from one that could not be looked at (lookSource). */
  readonly admin: KafkaAdmin & GroupAdmin;
  readonly catalog: Catalog;
  readonly store: ObjectStore;
  readonly crash: CrashPoints;
  readonly log: Logger;
  readonly nowMs?: () => number;
  /**
   * Runs before every catalog commit and throws to prevent it (distributed mode: the committer's Redis
   * lease is checked and extended, docs/design/cluster.md "The committer").
   */
  readonly beforeCommit?: () => Promise<void>;
}

export interface TableCommitStatus {
  readonly table: string;
  readonly state: 'RUNNING' | 'STOPPED';
  /** The branch the table's commits go to, when it is not main (iceberg.table.<t>.commit-branch). */
  readonly branch?: string;
  readonly reason?: StopReason;
  readonly lastSnapshotId?: bigint;
  readonly lastCommitMs?: number;
  readonly validThroughTs?: number;
  /** Kafka timestamp (ms since the epoch) of the oldest announcement for the table not applied yet. */
  readonly oldestUnappliedMs?: number;
  /**
   * Its commits fail with an error a later round may not meet (catalog or store unreachable, refused,
   * outcome unknown): since when, rounds in a row, the last error. Cleared by a round that gets through.
   */
  readonly failing?: { readonly sinceMs: number; readonly count: number; readonly error: string };
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
/**
 * A table parked while its commits fail (or the catalog does not find it) is tried again after this much,
 * doubling each time it is parked again, up to the maximum: each try reads the control topic again from its
 * stored positions, so the others are not made to re-read it every round.
 */
const PARKED_RETRY_MIN_MS = 30_000;
const PARKED_RETRY_MAX_MS = 600_000;
/**
 * The Kafka cluster id is read by a client of its own (a metadata round trip), so not every round: again
 * when the control topic's id changed, after a round that failed (a reconnect may have landed on another
 * cluster), and at least this often.
 */
const CLUSTER_ID_REFRESH_MS = 5 * 60_000;
export class ConnectorCommitter {
  /** Every commit made, for metrics and the benchmark (bounded: the last 10,000). */
  readonly commits: CommitRecord[] = [];
  /** Announcements passed because every source record they carry was applied already (source-applied.ts). */
  droppedAnnouncements = 0;
  private readonly d: CommitterDeps;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly catalog: Catalog;
  /** The control topic read so far: records, byte accounting, cap, parking, counters, cursor. */
  private readonly control: ControlBuffer;
  private readonly tables = new Map<string, TableRef>();
  private readonly status = new Map<string, TableCommitStatus>();
  private clusterId: string | undefined;
  private clusterIdReadMs = 0;
  /**
   * The log (control topic id, cluster id) that the read cursor, the buffer, C and `appliedBefore` belong
   * to; undefined before the first round. Another identity means another log: all of them start over.
   */
  private logIdentity: ControlIdentity | undefined;
  /** Set while a round runs; still set when the next one starts means the last one threw. */
  private roundOpen = false;
  /** Dynamic routing: records deleted before they were read or vouched for (control-gaps.ts, review N3). */
  private readonly gaps: ControlGaps;
  /**
   * Control partitions whose C is a seed above offset 0 while this connector had committed to its tables
   * before: C was re-seeded (its offsets expired after offsets.retention.minutes, or were deleted), so
   * records below the seed may have been this connector's announcements (review N5). A table with no
   * position there cannot show it applied them: it stops instead of starting at the seed.
   */
  private unvouched = new Set<number>();
  private readonly files: AnnouncedFiles;
  /** Consecutive failed rounds per table (for the log; the table is retried every round). */
  private readonly failures = new Map<string, number>();
  /** C as last read or committed (undefined until the first round read it). */
  private connectorPositions: ConnectorPositions | undefined;
  /**
   * Per table, from where it needed the buffer when it was last planned (per control partition): what a
   * table whose commit throws, or that the catalog does not find, still needs (it was not planned this round).
   */
  private readonly lastNeeds = new Map<string, ReadonlyMap<number, bigint>>();
  /** Tables parked while failing or missing: when they are tried again (the buffer read again), and the back-off. */
  private readonly parkedRetry = new Map<string, { atMs: number; delayMs: number }>();
  /** What this committer saw applied to each table (live rollback detection). */
  private readonly appliedBefore = new Map<string, { readonly tableUuid: string; readonly positions: ControlPositions }>();
  /** The latest cycle-complete report per source partition read so far (the watermark's memory). */
  private readonly reports = new SourceReports();
  private readonly partitionCounts = new Map<string, number>();
  /** Where the time of the current round went (the `table committed` line's stepsMs): a step's ms since the previous mark. */
  private steps: Record<string, number> = {};
  private stepMark = 0;
  private roundStartMs = 0;

  constructor(deps: CommitterDeps) {
    this.d = deps;
    this.log = deps.log.child({ connector: deps.connector.name, role: 'committer' });
    this.now = deps.nowMs ?? Date.now;
    this.catalog = commitHooks(deps.catalog, {
      before: async () => {
        this.step('manifests'); // appendFiles wrote the manifests and the manifest list before it commits
        deps.crash.reach('committer.before-catalog-commit');
        await deps.beforeCommit?.();
      },
      after: () => {
        this.step('catalogCommit');
        deps.crash.reach('committer.after-catalog-commit');
      },
    });
    this.gaps = new ControlGaps(deps.connector, this.log);
    this.control = new ControlBuffer({ connector: deps.connector, reader: deps.reader, admin: deps.admin, log: this.log, now: this.now, onEvent: (e) => this.learn(e) });
    this.files = new AnnouncedFiles(deps.store, deps.connector.name);
  }

  tableStatus(): TableCommitStatus[] {
    return [
      ...this.gaps.status(this.knownKeys(), !this.control.behind()),
      ...[...this.status.values()]
        .map((s) => {
          const ref = this.tables.get(s.table);
          const branch = ref === undefined ? 'main' : this.branchOf(ref);
          return branch === 'main' ? s : { ...s, branch };
        })
        .sort((a, b) => (a.table < b.table ? -1 : 1)),
    ];
  }

  controlStatus(): ControlReadStatus {
    return this.control.status();
  }

  /** The last round read a bounded step and more is committed on the control topic: run the next round now. */
  behind(): boolean {
    return this.control.behind();
  }

  /** Adds the time since the previous mark to a step of this round. */
  private step(name: string): void {
    const now = this.now();
    this.steps[name] = (this.steps[name] ?? 0) + (now - this.stepMark);
    this.stepMark = now;
  }

  /** One round over every table; returns the commits it made. */
  async round(): Promise<CommitRecord[]> {
    this.roundStartMs = this.stepMark = this.now();
    this.steps = {};
    const live = await this.identity();
    this.step('identity');
    const logStart = await this.control.readNew(() => this.startPositions(live));
    // The topic may have been recreated between the identity check and the read, and the records read then
    // taken for the old log's (applied under its identity, and again after the recovery): topic ids never
    // repeat, so the same id after the read proves every read of this round was of one log.
    const after = await this.d.admin.topicId(this.d.connector.control.topic);
    if (after !== live.controlTopicId) {
      this.forgetLog(live, { ...live, controlTopicId: after });
      // The next round reads the identity afresh (the cluster id too) and starts on the new log.
      this.logIdentity = undefined;
      this.clusterId = undefined;
      this.roundOpen = false;
      return [];
    }
    if (this.d.connector.tables.routing.kind === 'dynamic') for (const g of this.control.takeSkipped()) this.gaps.note(g.partition, g.from, g.to);
    else this.control.takeSkipped(); // every table is known: each compares its own position with the log start
    this.step('controlRead');
    const sources = await this.sourceKnowledge();
    this.step('sourceOffsets');
    const names = [...this.tables.keys()].sort();
    const made: CommitRecord[] = [];
    const trimAt = new Map<number, bigint>();
    const stopped: StoppedNeeds[] = [];
    let reread = false;
    /** Tables whose needs are not in trimAt (stopped, failing, missing, parked): R's except list. */
    const except: string[] = [];
    /** Tables held for a cause that may go away on its own (commit failing, table missing): tried again once parked. */
    const recoverable: string[] = [];
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      const ref = this.tables.get(name) as TableRef;
      if (this.control.isParked(name)) {
        except.push(tableKey(ref));
        continue; // its records were dropped: planning it now could skip them
      }
      let result: Awaited<ReturnType<ConnectorCommitter['commitTable']>>;
      try {
        result = await this.commitTable(ref, live, logStart, sources);
        this.failures.delete(name);
        this.clearFailing(name);
      } catch (e) {
        // One table's trouble must not hold the others back (catalog or store unreachable, retries
        // exhausted, the catalog refusing the commit, an unknown outcome, the table not found while
        // announcements wait for it, review N2): it is tried again next round and
        // held like a stopped table meanwhile: its announcements stay in the buffer (parked at the cap) and C
        // stays below them, while C and the trim point move on for the tables that applied (review N8, N9).
        // Anything that is not one of our errors is a bug (or a test's crash) and ends the round. So does a
        // lost lease (distributed mode): another worker commits now, and this committer must not touch any
        // table or C again.
        if (!(e instanceof IcefloeError) || e.code === 'LEASE_LOST') throw e;
        this.tableFailed(name, ref, e);
        stopped.push({ name, from: this.heldNeeds(name) });
        except.push(tableKey(ref));
        recoverable.push(name);
        continue;
      }
      this.parkedRetry.delete(name);
      const { plan, commit } = result;
      if (result.reread === true) reread = true;
      if (commit !== undefined) {
        made.push(commit);
        if (i < names.length - 1) this.d.crash.reach('committer.between-tables');
      }
      // What this table still needs from the buffer: a stopped or waiting table everything from its
      // effective position on each control partition (its stored one, raised by C): trimming those would
      // lose announcements it has not applied yet.
      const pending = result.reread === true || (plan !== undefined && (plan.kind === 'stopped' || plan.waiting > 0));
      const own = new Map<number, bigint>();
      // Never past what was read: positions a stopped table stores may refer to another log (identity).
      for (const [p, end] of this.control.readThrough()) own.set(p, pending ? min(plan?.positions.get(p) ?? 0n, end) : end);
      this.lastNeeds.set(name, own);
      if (plan?.kind === 'stopped') {
        // A stopped table's needs are kept apart: they are the first to go when the buffer is full.
        stopped.push({ name, from: own });
        except.push(tableKey(ref));
      } else {
        for (const [p, o] of own) trimAt.set(p, trimAt.has(p) ? min(trimAt.get(p) as bigint, o) : o);
      }
    }
    for (const [p, end] of this.control.readThrough()) if (!trimAt.has(p)) trimAt.set(p, end);
    this.control.trim(trimAt, stopped);
    if (this.retryParked(recoverable)) reread = true;
    // C may not pass what a stopped, failing or parked table still needs, even when the buffer no longer holds it.
    const appliedThrough = new Map(trimAt);
    for (const from of [...stopped.map((t) => t.from), ...this.control.parkedFrom(), this.gaps.needs(this.knownKeys())]) for (const [p, o] of from) appliedThrough.set(p, min(appliedThrough.get(p) ?? o, o));
    // R: where every table but the excepted ones is (trimAt), whatever holds C back.
    await this.commitConnectorPosition(live, appliedThrough, { through: trimAt, except });
    if (reread) {
      // A table re-applies from below what the buffer holds, or a parked table is tried again: read the
      // control topic again from the lowest position any table needs (startPositions) in the next round;
      // every parked table is read again too.
      this.control.restart();
    }
    this.roundOpen = false;
    return made;
  }

  /**
   * C after the round: everything below the trim point is applied by every known table (C only grows).
   * Committed every round even when unchanged, so the group's offsets do not expire while the worker
   * runs. A failure is logged, not thrown: the tables' commits stand, and C is committed again next round.
   */
  private async commitConnectorPosition(live: ControlIdentity, appliedThrough: ReadonlyMap<number, bigint>, rest: RestThrough): Promise<void> {
    const current = this.connectorPositions;
    if (current === undefined) return;
    const next = nextAppliedPositions(current, appliedThrough, this.gaps.restBelow(rest, this.knownKeys()));
    // A re-seed says nothing of tables: it becomes `applied` only once every table is at or past it. A table
    // that still needs records below it (stopped below the log start) must not find it `applied` after a
    // restart, which would raise the table past what it lost (review N5). On a first start (static tables,
    // none committed before) no table can be below the seed: C turns `applied` as usual, and R with it. With
    // dynamic routing a re-seed cannot be told from a first start when C is seeded, so the rule always holds.
    const reseeded = (p: number): boolean => this.unvouched.has(p) || this.d.connector.tables.routing.kind === 'dynamic';
    for (const [p, e] of current) if (e.kind === 'seed' && reseeded(p) && appliedThrough.has(p) && (appliedThrough.get(p) as bigint) < e.offset) next.set(p, e);
    try {
      await commitConnectorPositions(this.positionStore(live), next);
      this.connectorPositions = next;
    } catch (e) {
      this.log.warn('committing the connector position failed; retried next round', { error: errorMessage(e) });
    }
  }

  private positionStore(live: ControlIdentity): PositionStoreOptions {
    const c = this.d.connector;
    return { admin: this.d.admin, groupId: controlGroupId(c.control.groupIdPrefix, c.name), topic: c.control.topic, controlTopicId: live.controlTopicId, log: this.log };
  }

  /** A table's commit threw one of our errors: retried next round; stopped (and retried) when not retriable. */
  private tableFailed(name: string, ref: TableRef, e: IcefloeError): void {
    const n = (this.failures.get(name) ?? 0) + 1;
    this.failures.set(name, n);
    const oldest = this.oldestInBuffer(ref);
    // An unknown outcome is safe to retry: the next plan has the same commit id and finds a commit that landed.
    // A table dropped between its load and its commit is the missing table of loadOrDropped met one step
    // later: failing, held, not stopped (review N2).
    if (e.retriable || e instanceof CommitStateUnknownError || e instanceof NoSuchTableError) {
      this.log.warn('table commit failed; retrying next round', { table: name, consecutive: n, error: e.message });
      const prior = this.status.get(name);
      const failing = { sinceMs: prior?.failing?.sinceMs ?? this.now(), count: n, error: e.message };
      this.status.set(name, { ...prior, table: name, state: prior?.state ?? 'RUNNING', ...(oldest === undefined ? {} : { oldestUnappliedMs: oldest }), failing });
      return;
    }
    this.stop(name, { code: 'commit-failed', message: `${name}: the commit failed and cannot be retried as is (${e.code}): ${e.message}; it is tried again every round`, context: { errorCode: e.code, consecutive: n } }, oldest);
  }

  /**
   * What a table that was not planned this round (its commit threw, or the catalog did not find it) still
   * needs from the buffer: what it needed when last planned, or, never planned in this process, everything
   * the buffer holds (its floor: where reading started, at or below the table's positions). Never past what
   * was read.
   */
  private heldNeeds(name: string): Map<number, bigint> {
    const last = this.lastNeeds.get(name);
    const floor = this.control.floor();
    const out = new Map<number, bigint>();
    for (const [p, end] of this.control.readThrough()) out.set(p, min(last?.get(p) ?? floor.get(p) ?? 0n, end));
    return out;
  }

  /**
   * Tables held this round for a cause that may pass (`recoverable`) and parked at the buffer cap are tried
   * again after a back-off: true when one is due, and the control topic is to be read again (from the
   * lowest position any table needs, theirs included) so that they are planned over everything they need.
   */
  private retryParked(recoverable: readonly string[]): boolean {
    const now = this.now();
    for (const name of recoverable) {
      if (!this.control.isParked(name)) continue;
      const prior = this.parkedRetry.get(name);
      if (prior !== undefined && prior.atMs !== Number.POSITIVE_INFINITY) continue; // parked before this round
      const delayMs = prior === undefined ? PARKED_RETRY_MIN_MS : Math.min(prior.delayMs * 2, PARKED_RETRY_MAX_MS);
      this.parkedRetry.set(name, { atMs: now + delayMs, delayMs });
      this.log.warn('table parked while it cannot commit: the others go on; it is tried again later, reading its records again from its stored positions', { table: name, retryInMs: delayMs });
    }
    const due = [...this.parkedRetry].filter(([name, r]) => this.control.isParked(name) && r.atMs <= now).map(([name]) => name);
    if (due.length === 0) return false;
    // Marked as tried: parked again, it waits twice as long; a round that gets through forgets it.
    for (const name of due) this.parkedRetry.set(name, { atMs: Number.POSITIVE_INFINITY, delayMs: this.parkedRetry.get(name)?.delayMs ?? PARKED_RETRY_MIN_MS });
    this.log.info('parked tables are tried again; reading the control topic again from their positions', { tables: due });
    return true;
  }

  /**
   * An announcement for the table is in the buffer past what it applied: past what this committer saw
   * applied to it and past where C (raised by R) says every table applied (whatever its timestamp).
   */
  private waitsInBuffer(ref: TableRef): boolean {
    const name = tableRefString(ref);
    const applied = this.appliedBefore.get(name)?.positions;
    const c = this.connectorPositions === undefined ? new Map<number, bigint>() : appliedThroughFor(this.connectorPositions, ref);
    return this.control.records.some(
      (r) => 'event' in r && r.event.type === 'announcement' && r.event.connector === this.d.connector.name && tableRefString(r.event.table) === name &&
        r.offset >= (applied?.get(r.partition) ?? 0n) && r.offset >= (c.get(r.partition) ?? 0n),
    );
  }

  /** The Kafka timestamp of the oldest announcement in the buffer for the table past what it applied. */
  private oldestInBuffer(ref: TableRef): number | undefined {
    const name = tableRefString(ref);
    const applied = this.appliedBefore.get(name)?.positions;
    let oldest: number | undefined;
    for (const r of this.control.records) {
      if (!('event' in r) || r.event.type !== 'announcement' || r.event.connector !== this.d.connector.name || tableRefString(r.event.table) !== name) continue;
      if (r.offset < (applied?.get(r.partition) ?? 0n) || r.timestampMs === undefined) continue;
      if (oldest === undefined || r.timestampMs < oldest) oldest = r.timestampMs;
    }
    return oldest;
  }

  /**
   * The live identity, read every round. A control topic id other than the last round's means the topic was
   * deleted and recreated (or the cluster failed over: another cluster's topic has its own id): the cursor,
   * the buffer, C and what was seen applied belong to the old log and start over on the new one (review
   * N10). The tables whose positions refer to the old log then stop with positions-identity-mismatch.
   */
  private async identity(): Promise<ControlIdentity> {
    const failedBefore = this.roundOpen;
    this.roundOpen = true;
    const controlTopicId = await this.d.admin.topicId(this.d.connector.control.topic);
    const prior = this.logIdentity;
    if (this.clusterId === undefined || failedBefore || prior?.controlTopicId !== controlTopicId || this.now() - this.clusterIdReadMs >= CLUSTER_ID_REFRESH_MS) {
      this.clusterId = await this.d.admin.clusterId();
      this.clusterIdReadMs = this.now();
    }
    const live: ControlIdentity = { clusterId: this.clusterId, controlTopicId };
    if (prior !== undefined && (prior.controlTopicId !== live.controlTopicId || prior.clusterId !== live.clusterId)) this.forgetLog(prior, live);
    this.logIdentity = live;
    return live;
  }

  /** The control topic is another log now: nothing read of the old one, nor C, may be carried to it. */
  private forgetLog(prior: ControlIdentity, now: ControlIdentity): void {
    this.log.error('the control topic is another log now (deleted and recreated, or a failover to another cluster): the committer reads it from its start and seeds the connector position on it; tables whose positions refer to the old log stop (positions-identity-mismatch)', {
      topic: this.d.connector.control.topic,
      before: prior,
      now,
    });
    this.control.restart();
    this.connectorPositions = undefined;
    this.appliedBefore.clear();
    this.gaps.clear();
  }

  /** The keys (connector-position.ts `tableKey`) of the tables this committer knows. */
  private knownKeys(): Set<string> {
    return new Set([...this.tables.values()].map((t) => tableKey(t)));
  }

  /** What the planner gets of C: C itself, and the partitions where it is a seed that vouches for nothing (N5). */
  private connectorView(): { connectorPositions?: ConnectorPositions; unvouchedSeeds: ReadonlySet<number> } {
    const c = this.connectorPositions;
    const unvouchedSeeds = new Set([...this.unvouched].filter((p) => c?.get(p)?.kind === 'seed'));
    return c === undefined ? { unvouchedSeeds } : { connectorPositions: c, unvouchedSeeds };
  }

  /** Learns from this connector's events as they are read: its tables (dynamic routing) and the watermark's reports. */
  private learn(event: ControlEvent): void {
    const connector = this.d.connector.name;
    if (event.type === 'cycle-complete' && event.connector === connector) this.reports.observe(event);
    if (event.type === 'announcement' && event.connector === connector) {
      const name = tableRefString(event.table);
      if (!this.tables.has(name)) this.tables.set(name, event.table);
    }
  }

  /**
   * Where the first read starts, after reading C (seeding it on the connector's first start). With static
   * tables every announcement is for one of them, so reading starts at C, or lower where a table's stored
   * position is below it (the rollback check looks at [T, C), and an idle table's T is clamped to the log
   * start by the read). A dynamic connector learns its tables from the announcements, so it reads the
   * whole retained log (an empty map: every partition from its log start).
   */
  private async startPositions(live: ControlIdentity): Promise<Map<number, bigint>> {
    const marks = await this.d.admin.watermarks(this.d.connector.control.topic);
    const c = await loadOrSeedConnectorPositions(this.positionStore(live), new Map(marks.map((m) => [m.partition, m.low])));
    this.connectorPositions = c;
    const routing = this.d.connector.tables.routing;
    if (routing.kind === 'dynamic') {
      // Reading starts at the log start; what lies between C and it was deleted unread and unvouched for.
      for (const m of marks) {
        const e = c.get(m.partition);
        const at = e?.offset ?? 0n;
        if (at >= m.low) continue;
        // R: every table but the excepted ones (stopped, failing or parked then) had applied below it; those
        // are named by key, and check their own positions once read (a stopped one holds C back).
        const rest = e?.kind === 'applied' ? e.rest : undefined;
        this.gaps.note(m.partition, at, m.low, rest !== undefined && rest.offset >= m.low ? rest.except : undefined);
      }
      return new Map();
    }
    const from = new Map([...c].map(([p, e]) => [p, e.offset]));
    let ranBefore = false;
    // The dead-letter table is one of the connector's tables like the routed ones (its rows are announced alike).
    const deadLetters = this.d.connector.errors.deadLetterTable;
    const tables = [...new Set([...(routing.kind === 'all' ? routing.tables : routing.routes.map((r) => r.table)), ...(deadLetters === null ? [] : [deadLetters])])];
    for (const name of tables) {
      const id = parseIdentifier(name);
      this.tables.set(tableRefString({ namespace: id.namespace, name: id.name }), { namespace: id.namespace, name: id.name });
      let table: LoadedTable;
      try {
        table = await this.catalog.loadTable(id);
      } catch (e) {
        if (e instanceof NoSuchTableError) continue; // a table created later starts at C
        throw e;
      }
      const branch = this.branchOf(id);
      const read = readControlPositions(table.metadata, this.d.connector.name, live, branch);
      if (read.kind !== 'fresh' && read.kind !== 'unseeded') ranBefore = true; // the connector committed to it
      if (read.kind !== 'positions') continue;
      for (const [p, o] of read.positions) if (from.has(p) && o < (from.get(p) as bigint)) from.set(p, o);
      // A re-apply without positions on some partition reads it from the log start (absent from the map).
      if (reapplyHolds(table.metadata, safeMark(table, this.d.connector.name), read, branch)) for (const p of [...from.keys()]) if (!read.positions.has(p)) from.delete(p);
    }
    this.reseedCheck(c, ranBefore);
    return from;
  }

  /**
   * A seed above offset 0 says records below it are not this connector's; that holds on a first start, not
   * when the connector had committed to its tables before (C's offsets expired or were deleted): then its
   * announcements may be among them. Tables with positions compare them with the log start (a seed never
   * raises them); tables without a position are marked `unvouched` (see there). With dynamic routing no table
   * is known at this point, so only tables with positions are checked (docs/sink.md).
   */
  private reseedCheck(c: ConnectorPositions, ranBefore: boolean): void {
    const seeds = [...c].filter(([, e]) => e.kind === 'seed' && e.offset > 0n);
    this.unvouched = new Set(ranBefore ? seeds.map(([p]) => p) : []);
    if (this.unvouched.size === 0) return;
    this.log.error('the connector position is a seed above the control topic\'s log start although the connector committed to its tables before (its offsets expired or were deleted): announcements below it may have been deleted; tables without a position there stop (control-records-lost)', {
      seeds: Object.fromEntries(seeds.map(([p, e]) => [p, e.offset.toString()])),
    });
  }

  /**
   * An operator's re-apply mark is spent once no announcement of the table is left below what it was
   * marked through; removed then, so a later rollback to the same snapshot is detected again. A failure is only logged:
   * a spent mark acknowledges nothing (connector-position.ts `reapplyHolds`).
   */
  private async clearSpentMark(id: ReturnType<typeof parseIdentifier>, table: LoadedTable, positions: ControlPositions): Promise<void> {
    if (this.control.floorAbove(positions)) return; // the buffer does not reach back: cannot tell yet
    const mark = safeMark(table, this.d.connector.name);
    if (mark === undefined) return;
    // Spent: nothing of the table's is left below `through` (positions stop at the last record applied, so
    // a transaction marker may keep them just below it).
    const left = this.control.records.some(
      (r) => 'event' in r && r.event.type === 'announcement' && r.event.connector === this.d.connector.name && sameTable(r.event.table, { namespace: id.namespace, name: id.name }) &&
        r.offset >= (positions.get(r.partition) ?? 0n) && r.offset < (mark.through.get(r.partition) ?? 0n),
    );
    if (left) return;
    try {
      await updateProperties({ catalog: this.catalog, store: this.d.store }, id, {}, [reapplyKey(this.d.connector.name)]);
      this.log.info('re-apply finished; its mark is removed', { table: formatIdentifier(id) });
    } catch (e) {
      this.log.warn('removing a spent re-apply mark failed; retried after the next commit', { table: formatIdentifier(id), error: errorMessage(e) });
    }
  }

  /** A re-apply (operator's mark) from positions below what the buffer holds, but still in the log. */
  private needsReread(table: LoadedTable, read: ReturnType<typeof readControlPositions>, branch: string): boolean {
    if (read.kind !== 'positions' || !reapplyHolds(table.metadata, safeMark(table, this.d.connector.name), read, branch)) return false;
    return this.control.floorAbove(read.positions);
  }

  /**
   * The branch a table's files and positions go to (iceberg.table.<t>.commit-branch, else
   * iceberg.tables.default-commit-branch, else main): positions are read from its ancestry, never main's.
   */
  private branchOf(ref: TableRef): string {
    return this.d.connector.tables.settings(tableRefString(ref)).commitBranch;
  }

  /**
   * The watermark's view of the source partitions: every partition of the connector's topics (a topics
   * list; with a regex only the partitions reported so far are known), each one's log start and end as
   * of now, and the latest report of each.
   */
  private async sourceKnowledge(): Promise<SourceKnowledge & { readonly logs: SourceLogs }> {
    const topics = this.d.connector.topics;
    // Each source topic's live id and log ends: whether the source offsets a table applied still name the
    // live log's records (source-applied.ts); the planner reads them from here.
    const logs: LiveSourceLogs = { topicIds: new Map(), ends: new Map(), gone: new Set() };
    if (topics.kind !== 'list') {
      // A regex: the topics reported so far; the watermark keeps to the reports alone.
      for (const topic of new Set([...this.reports.latest.values()].map((r) => r.assignment.topic))) await this.lookSource(topic, logs);
      return { reports: this.reports.latest, logs };
    }
    const endsAtMs = this.now();
    const partitions = new Set<string>();
    for (const topic of topics.topics) {
      await this.lookSource(topic, logs);
      for (let p = 0; p < (this.partitionCounts.get(topic) ?? 0); p++) partitions.add(sourceKey(topic, p));
    }
    return { partitions, reports: this.reports.latest, ends: logs.ends, endsAtMs, logs };
  }

  /**
   * One source topic's id and its partitions' log ends, into `logs`. A topic that cannot be described now
   * (broker trouble) counts with what was seen last, without ends or id (its partitions are then only as
   * far as their reports vouch, and what its tables applied is judged next round); one the cluster lists no
   * more is `gone` (what its tables applied is vouched for by nothing). The id is read before the ends, so a
   * topic recreated in between shows a log that does not reach the applied offsets rather than a new id
   * with the old log's ends.
   */
  private async lookSource(topic: string, logs: LiveSourceLogs): Promise<void> {
    const id = await this.d.admin.topicId(topic).catch(() => undefined);
    const marks = await this.d.admin.watermarks(topic).catch(() => undefined);
    if (marks !== undefined) this.partitionCounts.set(topic, marks.length);
    for (const m of marks ?? []) logs.ends.set(sourceKey(topic, m.partition), { low: m.low, high: m.high });
    if (id !== undefined && marks !== undefined) logs.topicIds.set(topic, id);
    else if ((await this.d.admin.listTopics().catch(() => undefined))?.includes(topic) === false) logs.gone.add(topic);
  }

  private async commitTable(ref: TableRef, live: ControlIdentity, logStart: ReadonlyMap<number, bigint>, sources: SourceKnowledge): Promise<{ plan: TablePlan | undefined; commit?: CommitRecord; reread?: boolean }> {
    const { connector } = this.d;
    const name = tableRefString(ref);
    const id = parseIdentifier(formatIdentifier(ref));
    const branch = this.branchOf(ref);
    for (let attempt = 1; ; attempt++) {
      this.step('otherTables'); // the tables committed before this one in the round
      const table = await this.loadOrDropped(ref);
      this.step('tableLoad');
      if (table === 'dropped') return { plan: undefined };
      const positions = readControlPositions(table.metadata, connector.name, live, branch);
      const reread = this.needsReread(table, positions, branch);
      if (reread) {
        this.log.info('table re-applies from below what the committer holds; reading the control topic again', { table: name });
        return { plan: undefined, reread };
      }
      const missing = await this.files.missing(this.control.records, ref, positions.kind === 'positions' ? positions.positions : new Map());
      this.step('fileChecks');
      const before = this.appliedBefore.get(name);
      const plan = planTableCommit({
        connector: connector.name,
        table: ref,
        metadata: table.metadata,
        positions,
        live,
        records: this.control.records,
        nowMs: this.now(),
        isFileMissing: (path) => missing.has(path),
        logStartOffsets: logStart,
        ...this.connectorView(),
        ...(before === undefined ? {} : { appliedBefore: before }),
        readToEnd: !this.control.behind(),
        sources,
        branch,
      });
      if (plan.kind === 'stopped') {
        this.stop(name, plan.reason, plan.oldestUnappliedMs);
        return { plan };
      }
      // Reloaded and not behind (or acknowledged by the operator): what the table holds now is the baseline.
      if (positions.kind === 'positions') this.appliedBefore.set(name, { tableUuid: table.metadata.tableUuid, positions: positions.positions });
      if (plan.kind === 'nothing') {
        this.running(name, { oldestUnappliedMs: plan.oldestUnappliedMs });
        return { plan };
      }
      if (plan.dropped.length > 0 && attempt === 1) {
        this.droppedAnnouncements += plan.dropped.length;
        this.log.warn('announcements whose source records the table holds already are passed without committing their files', {
          table: name,
          dropped: plan.dropped.length,
          totalDropped: this.droppedAnnouncements,
          at: plan.dropped.map((d) => `${d.partition}@${d.offsets[0] ?? 0n}`),
          spans: plan.dropped.flatMap((d) => d.announcement.sourceSpans.map((sp) => `${sp.topic}[${sp.partition}] ${sp.firstOffset}..${sp.lastOffset}`)),
        });
      }
      const outcome = await appendFiles({ catalog: this.catalog, store: this.d.store }, id, {
        commitId: plan.commitId,
        files: plan.files,
        summary: plan.summary,
        branch,
        isCurrent: (t) => isPlanCurrent(plan, readControlPositions(t.metadata, connector.name, live, branch)),
      });
      if (outcome.status === 'nothing-to-commit') {
        if (attempt >= MAX_REPLANS) throw new RetriableError(`${name}: positions kept moving under ${MAX_REPLANS} plans (another committer for this connector?)`);
        continue; // another commit moved the positions: plan again from the reloaded table
      }
      this.step(outcome.status === 'committed' ? 'catalogCommit' : 'other');
      const snapshot = findCommit(outcome.table.metadata, plan.commitId, branch)?.snapshotId;
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
      this.appliedBefore.set(name, { tableUuid: table.metadata.tableUuid, positions: plan.positions });
      await this.clearSpentMark(id, outcome.table, plan.positions);
      this.running(name, { lastSnapshotId: snapshot, lastCommitMs: this.now(), validThroughTs: plan.validThroughTs, oldestUnappliedMs: plan.oldestUnappliedMs });
      this.log.info('table committed', {
        table: name,
        ...(branch === 'main' ? {} : { branch }),
        snapshotId: snapshot?.toString(),
        files: commit.files,
        records: commit.records.toString(),
        outcome: outcome.status,
        // committed: confirmed by the catalog's answer (`response`) or, after an unknown outcome, found by its commit id (`reload`).
        ...(outcome.status === 'committed' ? { resolvedBy: outcome.resolvedBy } : {}),
        latencyMs: commit.latencyMs,
        // Where latencyMs went: from the oldest announcement to this round's start (the task's transaction
        // commit, the wake-up delay, or a round already running), then the round's steps up to the answer.
        ...(oldest.length === 0 ? {} : { waitMs: this.roundStartMs - Math.min(...oldest) }),
        stepsMs: { ...this.steps },
        validThroughTs: plan.validThroughTs,
        // The source offsets this snapshot made visible (inclusive), for freshness measurements.
        sourceRanges: plan.sourceRanges.map((r) => ({ topic: r.topic, partition: r.partition, first: r.firstOffset.toString(), last: r.lastOffset.toString() })),
      });
      return { plan, commit };
    }
  }

  /**
   * The table; `dropped` when it does not exist and nothing waits for it (running: perhaps about to be
   * recreated). When announcements wait for it, a retriable error: the table is failing, held like a
   * stopped one (review N2), and tried every round. Not stopped: a catalog replica that lags or a rename and
   * back last a round or two, and a stop would fail the connector's tasks for good; a table that stays away
   * is judged by the retention ratios like any failing one (and its tasks fail on their own, writing to a
   * table that does not exist). The same table coming back gets its announcements applied; a table created
   * anew under the name stops at them (table-uuid-mismatch, planned from its own state).
   */
  private async loadOrDropped(ref: TableRef): Promise<LoadedTable | 'dropped'> {
    const name = tableRefString(ref);
    try {
      return await this.catalog.loadTable(parseIdentifier(formatIdentifier(ref)));
    } catch (e) {
      if (!(e instanceof NoSuchTableError)) throw e;
      if (!this.waitsInBuffer(ref)) {
        this.running(name, {});
        return 'dropped';
      }
      throw new RetriableError(`${name}: announced files wait for a table the catalog does not find (dropped? renamed? a lagging replica?); they are kept and tried every round: if the same table comes back (register_table, a rename back) they are applied, a table created anew under the name stops at them`, { cause: e });
    }
  }

  private timestampOf(partition: number, offset: bigint): number | undefined {
    return this.control.records.find((r) => r.partition === partition && r.offset === offset)?.timestampMs;
  }

  /** The table's commits got through (or it had nothing to commit): its status no longer says they fail. */
  private clearFailing(name: string): void {
    const prior = this.status.get(name);
    if (prior?.failing === undefined) return;
    const next: TableCommitStatus = { ...prior };
    delete (next as { failing?: TableCommitStatus['failing'] }).failing;
    this.status.set(name, next);
  }

  private stop(name: string, reason: StopReason, oldestUnappliedMs: number | undefined): void {
    const prior = this.status.get(name);
    if (prior?.state !== 'STOPPED' || prior.reason?.message !== reason.message) {
      this.log.error('table stopped: nothing is committed to it until an operator repairs it', { table: name, code: reason.code, reason: reason.message });
    }
    const next: TableCommitStatus = { ...prior, table: name, state: 'STOPPED', reason, ...(oldestUnappliedMs === undefined ? {} : { oldestUnappliedMs }) };
    if (oldestUnappliedMs === undefined) delete (next as { oldestUnappliedMs?: number }).oldestUnappliedMs;
    delete (next as { failing?: TableCommitStatus['failing'] }).failing; // the reason says it all now
    this.status.set(name, next);
  }

  private running(name: string, extra: { readonly [K in keyof TableCommitStatus]?: TableCommitStatus[K] | undefined }): void {
    const prior = this.status.get(name);
    const next: TableCommitStatus = { ...prior, ...stripUndefined(extra), table: name, state: 'RUNNING' };
    delete (next as { reason?: StopReason }).reason;
    // Nothing unapplied is news too: the age alarm must clear.
    if (extra.oldestUnappliedMs === undefined) delete (next as { oldestUnappliedMs?: number }).oldestUnappliedMs;
    this.status.set(name, next);
  }
}

/** The operator's re-apply mark, if any; a malformed one acknowledges nothing (the planner says the same). */
interface LiveSourceLogs {
  readonly topicIds: Map<string, string>;
  readonly ends: Map<string, { low: bigint; high: bigint }>;
  readonly gone: Set<string>;
}

function safeMark(table: LoadedTable, connector: string): ReturnType<typeof readReapplyMark> {
  try {
    return readReapplyMark(table.metadata, connector);
  } catch {
    return undefined;
  }
}

function stripUndefined(o: object): Partial<TableCommitStatus> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<TableCommitStatus>;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** The catalog with a hook after every successful commit (the crash point "applied, reply unseen"). */
function commitHooks(catalog: Catalog, hooks: { readonly before: () => Promise<void>; readonly after: () => void }): Catalog {
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
      await hooks.before();
      const answer = await catalog.commitTable(id, requirements, updates, options);
      hooks.after();
      return answer;
    },
    dropTable: (id) => catalog.dropTable(id),
    close: () => catalog.close(),
  };
}
