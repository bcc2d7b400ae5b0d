/**
 * This worker's view of its cluster (docs/design/cluster.md): who is alive (Redis membership), where every
 * unit runs (placement.ts over the live workers and the stored connectors), what the others reported (the
 * status topic), and the restart requests of the config topic. It is the herder's ClusterPort.
 *
 * Placement follows the membership view. While Redis has been unreachable for longer than the session
 * time-out, this worker starts nothing new: the others may have dropped it from their views and started
 * its units, and taking them back would only fence them back and forth. It keeps what it runs.
 *
 * Join grace (as Connect's rebalance waits for the group's members): the views of workers that start or
 * change together differ for up to a poll, and a unit started on a view that has not converged is fenced
 * moments later by its real owner (seen: one worker, seeing only itself, started all 4 tasks; 3 were fenced
 * and restarted). So after its start and after every membership change this worker starts no unit until
 * its view has stayed the same for `joinGraceMs` (after its start: `startGraceMs`); meanwhile it stops at
 * once what is no longer placed here (a unit that moves is then released before its new owner, also
 * waiting out the grace, starts it).
 *
 * Statuses: every 250 ms, what this worker runs is compared with what it last wrote, and what changed is
 * written (`generation` counts this worker's placement changes); a unit it no longer runs is written
 * UNASSIGNED (a reader trusts the owner's record: it must not keep saying RUNNING). A deleted connector's
 * statuses are tombstoned by the worker that ran its connector instance.
 *
 * Owns: the view and the status reports. Must not: start or stop anything itself (the herder does, when
 * told the placement changed).
 */
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import type { MemberInfo, Membership } from '../../coordinate/cluster-port.ts';
import type { ConnectorShare } from '../worker.ts';
import type { ClusterPort, ReportedStatus, RestartRequest } from './cluster-api.ts';
import type { ConfigTopicStore } from './config-store.ts';
import { place, taskUnit, unitsOf } from './placement.ts';
import type { PlacedConnector, Placement } from './placement.ts';
import type { KafkaStateLog } from './state-log.ts';
import { encodeConnectorStatus, encodeConnectorStatusRemoval, encodeTaskStatus, StatusSnapshot } from './state-records.ts';
import type { StateEntry, Status } from './state-records.ts';
import type { ConnectorRunState } from '../herder-api.ts';

/** What this worker runs, as the herder reports it (herder.localReports()). */
export interface LocalReport {
  readonly name: string;
  readonly connector?: { readonly state: string; readonly trace?: string };
  readonly tasks: readonly { readonly id: number; readonly state: string; readonly trace?: string }[];
}

export interface ClusterDeps {
  readonly configs: Pick<ConfigTopicStore, 'requestRestart' | 'onRestart'>;
  readonly statusLog: Pick<KafkaStateLog, 'start' | 'appendAll' | 'unreadable'>;
  readonly sessionTimeoutMs: number;
  /**
   * How long the view must stay unchanged before this worker starts a unit (after its start and after
   * every membership change). app/cluster.ts derives it from the heartbeat: two polls.
   */
  readonly joinGraceMs: number;
  /**
   * The grace after this worker's start (default `joinGraceMs`): workers started together register over
   * the seconds their processes take to come up, and one that has not registered yet is in no view.
   */
  readonly startGraceMs?: number;
  readonly log: Logger;
  /** What this worker runs of a connector now (kept while Redis is out of reach). */
  readonly currentShare: (name: string) => ConnectorShare | undefined;
  readonly nowMs?: () => number;
  /** How often statuses are compared and written (default 250 ms: a status sampled as often sees each state). */
  readonly reportEveryMs?: number;
}

const STATES: ReadonlySet<string> = new Set<ConnectorRunState>(['UNASSIGNED', 'RUNNING', 'PAUSED', 'STOPPED', 'FAILED', 'RESTARTING']);

export class Cluster implements ClusterPort {
  readonly #d: ClusterDeps;
  readonly #now: () => number;
  readonly #statuses = new StatusSnapshot();
  readonly #placementListeners: (() => void)[] = [];
  readonly #stateListeners: ((name: string, state: 'FAILED' | 'RUNNING', trace: string | undefined) => void)[] = [];
  #connectors: readonly PlacedConnector[] = [];
  /** Set by start(). */
  #workerId = '';
  #membership: Membership | undefined;
  #workers: readonly string[] = [];
  #placement: Placement = place([], []);
  #generation = 0;
  /** When the grace of the view's last change (or of the start) ends: units start then. */
  #settlesAtMs = 0;
  /** Whether the view has settled since its last change (the placement listeners were told when it did). */
  #settled = false;
  #graceTimer: NodeJS.Timeout | undefined;
  /** Since when Redis is out of reach (undefined: reachable). */
  #unreachableSince: number | undefined;
  /** The status keys this worker wrote (a deleted connector's are tombstoned by the worker that wrote them). */
  readonly #written = new Set<string>();
  /** Status writes failing in a row (Kafka unreachable): since when (wall clock), the last error. */
  #unwritable: { sinceMs: number; error: string } | undefined;
  #timer: NodeJS.Timeout | undefined;
  #reporting: Promise<void> = Promise.resolve();
  #reports: (() => readonly LocalReport[]) | undefined;

  constructor(deps: ClusterDeps) {
    this.#d = deps;
    this.#now = deps.nowMs ?? Date.now;
  }

  /**
   * Reads the status topic and follows `membership` (joined: this worker is `workerId`); `reports` is what
   * this worker runs (the herder's).
   */
  async start(a: { readonly workerId: string; readonly membership: Membership; readonly reports: () => readonly LocalReport[] }): Promise<void> {
    this.#workerId = a.workerId;
    this.#membership = a.membership;
    this.#reports = a.reports;
    await this.#d.statusLog.start((r) => {
      const { change, warning } = this.#statuses.apply(r.key, r.value, r.partition, r.offset);
      if (warning !== undefined) this.#d.log.warn(`status topic: ${warning}`);
      // What this worker id reported before this start (a restarted worker keeps its host:port) runs no
      // more: the next report says so (UNASSIGNED) unless this worker runs the unit again by then.
      if (r.initial && change !== null && change.kind !== 'ignored') {
        if (change.status?.workerId === a.workerId) this.#written.add(r.key);
        else this.#written.delete(r.key);
      }
      if (change?.kind === 'connector-status' && !r.initial) this.#connectorState(change.connector, change.status);
    });
    a.membership.onChange((members) => this.#members(members));
    this.#unsettle(this.#d.startGraceMs ?? this.#d.joinGraceMs);
    this.#members(a.membership.members());
    this.#timer = setInterval(() => void this.report(), this.#d.reportEveryMs ?? 250);
    this.#timer.unref();
  }

  /** Stops reporting, after a last report (a worker leaving says what it leaves). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    clearTimeout(this.#graceTimer);
    await this.report();
  }

  // ---- ClusterPort ---------------------------------------------------------------------------------

  setConnectors(connectors: readonly PlacedConnector[]): void {
    this.#connectors = connectors;
    this.#replace();
  }

  share(name: string): ConnectorShare {
    const current = this.#d.currentShare(name) ?? { taskIds: [], committer: false };
    if (this.#frozen()) return current;
    const c = this.#connectors.find((x) => x.name === name);
    const placed = unitsOf(this.#placement, name, c?.tasks ?? 0, this.#workerId);
    if (this.#settled) return placed;
    // Within the join grace: what no longer belongs here stops, nothing new starts.
    return { taskIds: placed.taskIds.filter((n) => current.taskIds.includes(n)), committer: placed.committer && current.committer };
  }

  /** Whether this worker's view has stayed unchanged for the join grace (it starts units only then). */
  settled(): boolean {
    return this.#settled;
  }

  owner(name: string, unit: number | 'connector'): string | undefined {
    return unit === 'connector' ? this.#placement.committers.get(name) : this.#placement.tasks.get(taskUnit(name, unit));
  }

  onPlacement(listener: () => void): void {
    this.#placementListeners.push(listener);
  }

  reported(name: string, unit: number | 'connector'): ReportedStatus | undefined {
    const s = unit === 'connector' ? this.#statuses.connector(name) : this.#statuses.task(name, unit);
    if (s === undefined) return undefined;
    return { state: s.state, worker_id: s.workerId, ...(s.trace === null ? {} : { trace: s.trace }) };
  }

  requestRestart(name: string, request: RestartRequest): Promise<void> {
    return this.#d.configs.requestRestart(name, request);
  }

  onRestart(listener: (name: string, request: RestartRequest) => void): void {
    this.#d.configs.onRestart(listener);
  }

  onConnectorState(listener: (name: string, state: 'FAILED' | 'RUNNING', trace: string | undefined) => void): void {
    this.#stateListeners.push(listener);
  }

  statusTopicTrouble(): { readonly sinceMs: number; readonly error: string } | undefined {
    const read = this.#d.statusLog.unreadable();
    const write = this.#unwritable;
    if (read === undefined) return write === undefined ? undefined : { ...write };
    if (write === undefined) return read;
    return read.sinceMs <= write.sinceMs ? read : { ...write };
  }

  /** A connector status another worker wrote: passed on when it is the instance owner's FAILED or RUNNING. */
  #connectorState(name: string, s: { readonly state: string; readonly workerId: string; readonly trace: string | null } | null): void {
    if (s === null || s.workerId === this.#workerId || s.workerId !== this.owner(name, 'connector')) return;
    if (s.state !== 'FAILED' && s.state !== 'RUNNING') return;
    for (const l of this.#stateListeners) l(name, s.state, s.trace ?? undefined);
  }

  /** The live workers as this worker sees them. */
  workers(): readonly string[] {
    return this.#workers;
  }

  // ---- membership and placement --------------------------------------------------------------------

  #members(members: readonly MemberInfo[]): void {
    const ids = [...new Set([this.#workerId, ...members.map((m) => m.workerId)])].sort();
    if (ids.join(',') === this.#workers.join(',')) return;
    this.#d.log.info('cluster members changed', { workers: ids, before: this.#workers, startsUnitsInMs: this.#d.joinGraceMs });
    this.#workers = ids;
    this.#unsettle(this.#d.joinGraceMs);
    this.#replace();
  }

  /** The view changed (or this worker starts): units start once it has stayed so for `graceMs` (a start's longer grace kept). */
  #unsettle(graceMs: number): void {
    this.#settlesAtMs = Math.max(this.#settled ? 0 : this.#settlesAtMs, this.#now() + graceMs);
    clearTimeout(this.#graceTimer);
    this.#settled = this.#settlesAtMs <= this.#now(); // no grace: the view counts as settled at once
    if (this.#settled) return;
    const check = (): void => {
      const left = this.#settlesAtMs - this.#now();
      if (left > 0) {
        this.#graceTimer = setTimeout(check, left);
        this.#graceTimer.unref();
        return;
      }
      this.#settled = true;
      this.#d.log.info('cluster view settled: starting the units placed here', { workers: this.#workers });
      this.#notify();
    };
    this.#graceTimer = setTimeout(check, this.#settlesAtMs - this.#now());
    this.#graceTimer.unref();
  }

  /** Whether Redis has been out of reach for longer than the session time-out (then nothing new starts). */
  #frozen(): boolean {
    if (this.#membership?.healthy() !== false) {
      this.#unreachableSince = undefined;
      return false;
    }
    this.#unreachableSince ??= this.#now();
    return this.#now() - this.#unreachableSince > this.#d.sessionTimeoutMs;
  }

  #replace(): void {
    const next = place(this.#connectors, this.#workers);
    const same = sameMap(next.tasks, this.#placement.tasks) && sameMap(next.committers, this.#placement.committers);
    this.#placement = next;
    if (same) return;
    this.#notify();
  }

  /** Tells the herder to apply the placement (a new one, or the same one once the view settled). */
  #notify(): void {
    this.#generation++;
    for (const l of this.#placementListeners) {
      try {
        l();
      } catch (e) {
        this.#d.log.error('placement change could not be applied', { error: errorMessage(e) });
      }
    }
  }

  // ---- status reports -----------------------------------------------------------------------------

  /** Whether the status topic's record for the entry's key says what the entry says (generation aside). */
  #topicHas(e: StateEntry): boolean {
    const v = e.value as { state: string; trace: string | null; worker_id: string } | null;
    const m = /^status-task-(.+)-(\d+)$/.exec(e.key);
    const cur = m !== null ? this.#statuses.task(m[1] as string, Number(m[2])) : this.#statuses.connector(e.key.slice('status-connector-'.length));
    return v !== null && cur !== undefined && cur.state === v.state && cur.workerId === v.worker_id && (cur.trace ?? null) === v.trace;
  }

  /** Writes what changed in this worker's statuses since its last write. */
  report(): Promise<void> {
    const run = async (): Promise<void> => {
      const reports = this.#reports?.() ?? [];
      const entries: StateEntry[] = [];
      const seen = new Set<string>();
      const status = (state: string, trace: string | undefined): Status => ({
        state: (STATES.has(state) ? state : 'UNASSIGNED') as ConnectorRunState,
        trace: trace ?? null,
        workerId: this.#workerId,
        generation: this.#generation,
      });
      for (const r of reports) {
        if (r.connector !== undefined) entries.push(encodeConnectorStatus(r.name, status(r.connector.state, r.connector.trace)));
        for (const t of r.tasks) entries.push(encodeTaskStatus(r.name, t.id, status(t.state, t.trace)));
      }
      // Written when the topic says something else — another worker's report for a unit now ours (a view that
      // differed for a moment), or our own older one; the generation alone changing is no news.
      const fresh = entries.filter((e) => {
        seen.add(e.key);
        this.#written.add(e.key);
        return !this.#topicHas(e);
      });
      // A connector this worker reported for and that is gone from the config: its status goes too. A unit
      // it reported and runs no more (moved, stopped, a previous life's): UNASSIGNED, as Connect writes on a
      // revocation — unless another worker's report took its place already. A status reader trusts the
      // owner's record, and a unit that comes back here must not read RUNNING before it runs again.
      const known = new Set(this.#connectors.map((c) => c.name));
      const retired: string[] = [];
      for (const k of [...this.#written]) {
        if (seen.has(k)) continue;
        this.#written.delete(k);
        retired.push(k);
        const unit = unitOfKey(k);
        if (unit === undefined) continue;
        if (!known.has(unit.connector)) {
          if (unit.task === undefined) fresh.push(encodeConnectorStatusRemoval(unit.connector));
          continue;
        }
        const cur = unit.task === undefined ? this.#statuses.connector(unit.connector) : this.#statuses.task(unit.connector, unit.task);
        if (cur === undefined || cur.workerId !== this.#workerId || cur.state === 'UNASSIGNED') continue;
        const gone = status('UNASSIGNED', undefined);
        fresh.push(unit.task === undefined ? encodeConnectorStatus(unit.connector, gone) : encodeTaskStatus(unit.connector, unit.task, gone));
      }
      if (fresh.length === 0) return;
      try {
        await this.#d.statusLog.appendAll(fresh);
        this.#unwritable = undefined;
      } catch (e) {
        // Written again next time: the topic still says something else.
        this.#unwritable = { sinceMs: this.#unwritable?.sinceMs ?? Date.now(), error: errorMessage(e) };
        for (const k of retired) this.#written.add(k); // their UNASSIGNED (or tombstone) is tried again too
        this.#d.log.warn('could not write statuses to the status topic; trying again', { error: errorMessage(e) });
      }
    };
    this.#reporting = this.#reporting.then(run, run);
    return this.#reporting;
  }
}

/** The connector (and task) a status key names. */
function unitOfKey(key: string): { readonly connector: string; readonly task?: number } | undefined {
  if (key.startsWith('status-connector-')) return { connector: key.slice('status-connector-'.length) };
  const m = /^status-task-(.+)-(\d+)$/.exec(key);
  return m === null ? undefined : { connector: m[1] as string, task: Number(m[2]) };
}

function sameMap(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}
