/**
 * The status a worker of a cluster answers (runtime/connector-status.ts clusterConnectorStatus, behind the
 * herder's GET /connectors/{name}/status): a unit placed here shows what runs here, never an older record
 * of the status topic; and while the status topic cannot be read (Kafka unreachable), the answering worker
 * says so in the connector's and every task's trace, as a standalone worker's status names the outage.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClusterPort, ReportedStatus } from '../../../src/runtime/cluster/cluster-api.ts';
import { clusterConnectorStatus } from '../../../src/runtime/connector-status.ts';
import type { ConnectorStatus } from '../../../src/runtime/worker.ts';

/** Tasks 0, 1 on a:1 (this worker, also the committer's), 2, 3 on b:1; `reported`: the status topic. */
function fakeCluster(reported: Record<string, ReportedStatus>, trouble?: { sinceMs: number; error: string }): ClusterPort {
  return {
    setConnectors: () => undefined,
    share: () => ({ taskIds: [0, 1], committer: true }),
    owner: (_name, unit) => (unit === 'connector' || unit < 2 ? 'a:1' : 'b:1'),
    onPlacement: () => undefined,
    reported: (_name, unit) => reported[String(unit)],
    requestRestart: async () => undefined,
    onRestart: () => undefined,
    statusTopicTrouble: () => trouble,
    onConnectorState: () => undefined,
  };
}

const entry = { target: 'STARTED' as const, hasTasks: true, startFailure: undefined, restarting: new Set<'connector' | number>() };

function local(tasks: ConnectorStatus['tasks']): ConnectorStatus {
  return { name: 'orders', state: 'RUNNING', tasks, tables: [], committer: true };
}

test('a task placed here that does not run here (not started yet, or stopped) is UNASSIGNED, whatever an older record of this worker id says', () => {
  const reported = {
    '1': { state: 'RUNNING', worker_id: 'a:1' }, // this worker's previous report (or a previous life's)
    '2': { state: 'RUNNING', worker_id: 'b:1' },
    '3': { state: 'RUNNING', worker_id: 'a:1' }, // not b:1's: the task moved there and b:1 has not reported yet
  };
  const s = clusterConnectorStatus({ name: 'orders', entry, taskIds: [0, 1, 2, 3], cluster: fakeCluster(reported), me: 'a:1', local: local([{ id: 0, state: 'RUNNING', restarts: 0 }]) });
  assert.deepEqual(s.tasks.map((t) => [t.id, t.state, t.worker_id]), [[0, 'RUNNING', 'a:1'], [1, 'UNASSIGNED', 'a:1'], [2, 'RUNNING', 'b:1'], [3, 'UNASSIGNED', 'b:1']]);
  assert.equal(s.connector.state, 'RUNNING');
  assert.equal(s.connector.trace, undefined, 'no outage: no trace');
});

test('while the status topic cannot be read (Kafka unreachable), the answering worker names the outage in the connector\'s and every task\'s trace, its own units\' traces kept', () => {
  const since = Date.parse('2026-12-07T22:00:00.000Z');
  const reported = { '2': { state: 'RUNNING', worker_id: 'b:1' }, '3': { state: 'RUNNING', worker_id: 'b:1' } };
  const trouble = { sinceMs: since, error: 'Kafka read-control: Local: Broker transport failure' };
  const s = clusterConnectorStatus({
    name: 'orders',
    entry,
    taskIds: [0, 1, 2, 3],
    cluster: fakeCluster(reported, trouble),
    me: 'a:1',
    local: local([{ id: 0, state: 'RUNNING', note: 'retrying: 3 failure(s) in a row', restarts: 0 }, { id: 1, state: 'RUNNING', restarts: 0 }]),
  });
  const named = (trace: string | undefined): boolean => trace !== undefined && trace.includes('Kafka unreachable from worker a:1 since 2026-12-07T22:00:00.000Z') && trace.includes('Broker transport failure');
  assert.ok(named(s.connector.trace), `connector: ${s.connector.trace}`);
  for (const t of s.tasks) assert.ok(named(t.trace), `task ${t.id}: ${t.trace}`);
  assert.match(s.tasks[0]?.trace ?? '', /retrying: 3 failure\(s\) in a row/, 'its own task\'s trace is kept');
  assert.match(s.tasks[2]?.trace ?? '', /show what those last reported/, 'another worker\'s task: its state is as old as the outage');
  // Kafka back: no trace left.
  const after = clusterConnectorStatus({ name: 'orders', entry, taskIds: [0, 1, 2, 3], cluster: fakeCluster(reported), me: 'a:1', local: local([{ id: 0, state: 'RUNNING', restarts: 0 }, { id: 1, state: 'RUNNING', restarts: 0 }]) });
  assert.deepEqual([after.connector.trace, ...after.tasks.map((t) => t.trace)], [undefined, undefined, undefined, undefined, undefined]);
});
