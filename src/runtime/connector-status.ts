/**
 * How a running connector's state reads in Connect's status entities: task states, the connector's
 * `trace` saying why it is not progressing, the Java sink's task class. Pure.
 */
import type { ConnectorRunState, ConnectorStateInfo, TargetState, TaskRunState, TaskStateInfo } from './herder-api.ts';
import type { ConnectorStatus } from './worker.ts';
import type { ClusterPort } from './cluster/cluster-api.ts';

/** What the herder knows of a stored connector that its status depends on. */
export interface ConnectorView {
  readonly target: TargetState;
  readonly hasTasks: boolean;
  /** Why it could not start on this worker. */
  readonly startFailure: string | undefined;
  /** Units a restart request marked RESTARTING. */
  readonly restarting: ReadonlySet<'connector' | number>;
}

/** The connector instance's state and trace on this worker (standalone: the connector's). */
export function localConnectorState(e: ConnectorView, status: ConnectorStatus | undefined): { state: ConnectorRunState; trace?: string } {
  if (status === undefined) {
    const state: ConnectorRunState = e.restarting.has('connector') ? 'RESTARTING' : e.startFailure !== undefined ? 'FAILED' : e.target === 'STOPPED' ? 'STOPPED' : e.target === 'PAUSED' && !e.hasTasks ? 'PAUSED' : 'UNASSIGNED';
    return { state, ...(e.startFailure === undefined ? {} : { trace: e.startFailure }) };
  }
  const why = connectorWhy(status);
  return { state: e.restarting.has('connector') ? 'RESTARTING' : status.state, ...(why === undefined ? {} : { trace: why }) };
}

/**
 * Status in a cluster: each unit as its owner under this worker's placement reports it — this worker's own
 * units from its worker (`local`), the others' from the status topic. A report from a worker that is not the
 * unit's owner (it moved; the old worker froze or died) does not count: the unit is UNASSIGNED until its
 * owner reports.
 */
export function clusterConnectorStatus(a: {
  readonly name: string;
  readonly entry: ConnectorView;
  readonly taskIds: readonly number[];
  readonly cluster: ClusterPort;
  readonly me: string;
  readonly local: ConnectorStatus | undefined;
  readonly version?: string;
}): ConnectorStateInfo {
  const { name, entry: e, cluster, me, local } = a;
  const version = a.version === undefined ? {} : { version: a.version };
  const remote = (unit: number | 'connector', owner: string | undefined): { state: TaskRunState; worker_id: string; trace?: string } => {
    const r = owner === undefined ? undefined : cluster.reported(name, unit);
    if (owner === undefined || r === undefined || r.worker_id !== owner) return { state: 'UNASSIGNED', worker_id: owner ?? me };
    const state = (['RUNNING', 'PAUSED', 'FAILED', 'RESTARTING', 'UNASSIGNED'] as const).find((s) => s === r.state) ?? 'UNASSIGNED';
    return { state, worker_id: owner, ...(r.trace === undefined || r.trace === '' ? {} : { trace: r.trace }) };
  };
  const owner = cluster.owner(name, 'connector');
  // Kafka out of reach from here: the status topic says nothing new, so this worker says what it knows.
  const trouble = cluster.statusTopicTrouble();
  const outage = trouble === undefined ? undefined : `Kafka unreachable from worker ${me} since ${new Date(trouble.sinceMs).toISOString()}: the status topic cannot be read or written (${trouble.error}); units of other workers show what those last reported before it`;
  const withOutage = <T extends { readonly trace?: string }>(x: T): T => (outage === undefined ? x : { ...x, trace: x.trace === undefined ? outage : `${outage}\n${x.trace}` });
  let connector: ConnectorStateInfo['connector'];
  if (e.target === 'STOPPED' || (e.target === 'PAUSED' && !e.hasTasks)) connector = { state: e.target === 'STOPPED' ? 'STOPPED' : 'PAUSED', worker_id: owner ?? me, ...version };
  else if (owner === me) connector = { ...localConnectorState(e, local), worker_id: me, ...version };
  else connector = { ...remote('connector', owner), ...version };
  const tasks = a.taskIds.map((n): TaskStateInfo => {
    const taskOwner = cluster.owner(name, n);
    const mine = taskOwner === me ? local?.tasks.find((t) => t.id === n) : undefined;
    if (mine !== undefined) return withOutage({ ...taskState(mine, me, e.restarting.has(n)), ...version });
    // Placed here but not running (yet, or any more): the status topic's record of it is an older one.
    if (taskOwner === me) return withOutage<TaskStateInfo>({ id: n, state: e.restarting.has(n) ? 'RESTARTING' : 'UNASSIGNED', worker_id: me, ...version });
    return withOutage({ id: n, ...remote(n, taskOwner), ...version });
  });
  return { name, connector: withOutage(connector), tasks, type: 'sink' };
}

/** `org.apache.iceberg.connect.IcebergSinkConnector` → `...IcebergSinkTask`, as the Java sink's task class. */
export function taskClass(connectorClass: string): string {
  return connectorClass.endsWith('Connector') ? `${connectorClass.slice(0, -'Connector'.length)}Task` : `${connectorClass}Task`;
}

export function taskState(t: ConnectorStatus['tasks'][number], worker_id: string, restarting: boolean): TaskStateInfo {
  // A task that ended cleanly (stopping) is between incarnations: Connect says UNASSIGNED.
  const known: readonly TaskRunState[] = ['UNASSIGNED', 'RUNNING', 'PAUSED', 'FAILED', 'RESTARTING'];
  const state: TaskRunState = restarting ? 'RESTARTING' : (known.find((k) => k === t.state) ?? 'UNASSIGNED');
  // A FAILED task's trace; otherwise what keeps a running one from progressing, if anything.
  const trace = t.trace !== undefined && t.trace !== '' ? t.trace : t.note;
  // Not Connect's: how often it was restarted and from what (a crash, a stuck task), once it was.
  const restarts = t.restarts > 0 || t.lastFailure !== undefined ? { restarts: t.restarts, ...(t.lastFailure === undefined ? {} : { last_failure: t.lastFailure }) } : {};
  return { id: t.id, state, worker_id, ...(trace === undefined || trace === '' ? {} : { trace }), ...restarts };
}

/**
 * Why a running connector is not progressing, for its status `trace`: a failure, committer rounds that
 * fail, its stopped tables, tables whose commits fail (retried), tables whose announcements wait too long
 * for the control topic's retention.
 */
export function connectorWhy(s: ConnectorStatus): string | undefined {
  const lines: string[] = [];
  if (s.trace !== undefined) lines.push(s.trace);
  const f = s.committerFailing;
  if (f !== undefined) lines.push(`committer rounds failing since ${new Date(f.sinceMs).toISOString()} (${f.count} in a row): ${f.error}`);
  for (const t of s.tables) {
    if (t.state === 'STOPPED') lines.push(`table ${t.table} stopped: ${t.reason === undefined ? 'no reason recorded' : `${t.reason.code}: ${t.reason.message}`}`);
    else if (t.failing !== undefined) lines.push(`table ${t.table}: commits failing since ${new Date(t.failing.sinceMs).toISOString()} (${t.failing.count} round(s) in a row), retried every round: ${t.failing.error}`);
    if (t.state !== 'STOPPED' && t.retentionAlarm === true) lines.push(`table ${t.table} cannot commit: its oldest unapplied announcement is ${Math.round((t.unappliedAgeMs ?? 0) / 1000)} s old, near the control topic's retention`);
  }
  return lines.length === 0 ? undefined : lines.join('\n');
}

/** `tasks.max` of a stored config (1 when absent or not a positive number: the config check refuses those). */
export function tasksMaxOf(config: Readonly<Record<string, string>>): number {
  const n = Number(config['tasks.max'] ?? '1');
  return Number.isSafeInteger(n) && n > 0 ? n : 1;
}
