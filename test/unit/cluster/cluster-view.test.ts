/**
 * A worker's view of its cluster (runtime/cluster/cluster.ts) on fake membership and status logs: placement
 * follows the members, a worker cut off from Redis for longer than the session time-out starts nothing new,
 * statuses are written only when they change, a deleted connector's status is tombstoned.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../../src/core/log.ts';
import type { MemberInfo, Membership } from '../../../src/coordinate/cluster-port.ts';
import { Cluster } from '../../../src/runtime/cluster/cluster.ts';
import type { LocalReport } from '../../../src/runtime/cluster/cluster.ts';
import type { StateLogRecord } from '../../../src/runtime/cluster/state-log.ts';
import type { StateEntry } from '../../../src/runtime/cluster/state-records.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => quiet };

class FakeMembership implements Membership {
  members_: MemberInfo[];
  up = true;
  listeners: ((m: readonly MemberInfo[]) => void)[] = [];
  constructor(ids: string[]) {
    this.members_ = ids.map((workerId) => ({ workerId, url: `http://${workerId}` }));
  }
  join = async (): Promise<void> => undefined;
  leave = async (): Promise<void> => undefined;
  members = (): readonly MemberInfo[] => this.members_;
  onChange = (l: (m: readonly MemberInfo[]) => void): void => void this.listeners.push(l);
  healthy = (): boolean => this.up;
  set(ids: string[]): void {
    this.members_ = ids.map((workerId) => ({ workerId, url: `http://${workerId}` }));
    for (const l of this.listeners) l(this.members_);
  }
}

function rig(ids: string[], me: string, options: { readonly joinGraceMs?: number; readonly startGraceMs?: number; readonly clock?: { now: number } } = {}) {
  const clock = options.clock ?? { now: 0 };
  /** What the herder runs here (the worker's share), as the test sets it. */
  const current = { share: undefined as { taskIds: number[]; committer: boolean } | undefined };
  /** The status log as the test makes it fail: reads (its `unreadable()`), writes (appendAll rejects). */
  const kafka = { unreadable: undefined as { sinceMs: number; error: string } | undefined, writeError: undefined as Error | undefined };
  const written: StateEntry[] = [];
  let onStatus: ((r: StateLogRecord) => void) | undefined;
  const membership = new FakeMembership(ids);
  let reports: LocalReport[] = [];
  const cluster = new Cluster({
    configs: { requestRestart: async () => undefined, onRestart: () => undefined },
    statusLog: {
      start: async (on: (r: StateLogRecord) => void) => {
        onStatus = on;
        return { endOffsets: [], records: 0, elapsedMs: 0 };
      },
      appendAll: async (entries: readonly StateEntry[]) => {
        if (kafka.writeError !== undefined) throw kafka.writeError;
        written.push(...entries);
        entries.forEach((e, i) => onStatus?.({ key: e.key, value: e.value === null ? null : JSON.stringify(e.value), partition: 0, offset: BigInt(written.length + i), timestamp: null, initial: false }));
        return entries.map(() => 0n);
      },
      unreadable: () => kafka.unreadable,
    },
    sessionTimeoutMs: 3000,
    joinGraceMs: options.joinGraceMs ?? 0,
    ...(options.startGraceMs === undefined ? {} : { startGraceMs: options.startGraceMs }),
    log: quiet,
    currentShare: () => current.share ?? { taskIds: [0], committer: false },
    nowMs: () => clock.now,
    reportEveryMs: 3_600_000,
  });
  return {
    cluster,
    membership,
    written,
    current,
    kafka,
    advance: (ms: number) => void (clock.now += ms),
    /** A record another worker wrote to the status topic. */
    foreign: (key: string, value: unknown) => onStatus?.({ key, value: JSON.stringify(value), partition: 0, offset: 999n, timestamp: null, initial: false }),
    /** A record of the status topic as the log hands it over (initial: of the load at the start). */
    foreignRecord: (rec: StateLogRecord) => onStatus?.(rec),
    setReports: (r: LocalReport[]) => void (reports = r),
    start: () => cluster.start({ workerId: me, membership, reports: () => reports }),
  };
}

test('placement follows the members: a joining worker takes its share and the herder is told', async (t) => {
  const r = rig(['a:1', 'b:1'], 'a:1');
  await r.start();
  t.after(() => r.cluster.stop());
  r.cluster.setConnectors([{ name: 'orders', tasks: 6, committer: true }]);
  assert.equal(r.cluster.share('orders').taskIds.length, 3);
  let told = 0;
  r.cluster.onPlacement(() => told++);
  r.membership.set(['a:1', 'b:1', 'c:1']);
  assert.equal(told, 1);
  assert.equal(r.cluster.share('orders').taskIds.length, 2);
  const owners = Array.from({ length: 6 }, (_, n) => r.cluster.owner('orders', n));
  assert.deepEqual([...new Set(owners)].sort(), ['a:1', 'b:1', 'c:1']);
  r.membership.set(['a:1', 'b:1', 'c:1']);
  assert.equal(told, 1, 'the same members: nothing to do');
});

test('cut off from Redis for longer than the session time-out, a worker keeps what it runs and starts nothing new', async (t) => {
  const r = rig(['a:1', 'b:1'], 'a:1');
  await r.start();
  t.after(() => r.cluster.stop());
  r.cluster.setConnectors([{ name: 'orders', tasks: 4, committer: true }]);
  r.membership.up = false;
  assert.equal(r.cluster.share('orders').taskIds.length, 2, 'a short outage: placement as before');
  r.advance(3001);
  assert.deepEqual(r.cluster.share('orders'), { taskIds: [0], committer: false }, 'past the session time-out: what it runs now');
  r.membership.up = true;
  assert.equal(r.cluster.share('orders').taskIds.length, 2);
});

test('statuses are written when the topic says otherwise (not when only the generation changed), over another worker\'s report; a deleted connector\'s is tombstoned', async (t) => {
  const r = rig(['a:1'], 'a:1');
  await r.start();
  t.after(() => r.cluster.stop());
  r.cluster.setConnectors([{ name: 'orders', tasks: 1, committer: true }]);
  r.setReports([{ name: 'orders', connector: { state: 'RUNNING' }, tasks: [{ id: 0, state: 'RUNNING' }] }]);
  await r.cluster.report();
  assert.deepEqual(r.written.map((e) => e.key), ['status-connector-orders', 'status-task-orders-0']);
  assert.deepEqual(r.written[1]?.value, { state: 'RUNNING', trace: null, worker_id: 'a:1', generation: 1 });
  assert.deepEqual(r.cluster.reported('orders', 0), { state: 'RUNNING', worker_id: 'a:1' });
  r.membership.set(['a:1', 'b:1']); // a new generation
  await r.cluster.report();
  assert.equal(r.written.length, 2, 'nothing changed but the generation');
  r.setReports([{ name: 'orders', connector: { state: 'RUNNING' }, tasks: [{ id: 0, state: 'FAILED', trace: 'boom' }] }]);
  await r.cluster.report();
  assert.deepEqual(r.written.slice(2).map((e) => [e.key, (e.value as { state: string } | null)?.state]), [['status-task-orders-0', 'FAILED']]);
  // Another worker reported for this task (its view differed for a moment): ours is written again.
  r.foreign('status-task-orders-0', { state: 'RUNNING', trace: null, worker_id: 'b:1', generation: 7 });
  await r.cluster.report();
  assert.deepEqual(r.written.slice(3).map((e) => [e.key, (e.value as { worker_id: string } | null)?.worker_id]), [['status-task-orders-0', 'a:1']]);
  assert.deepEqual(r.cluster.reported('orders', 0), { state: 'FAILED', worker_id: 'a:1', trace: 'boom' });
  r.cluster.setConnectors([]);
  r.setReports([]);
  await r.cluster.report();
  assert.deepEqual(r.written.slice(4).map((e) => [e.key, e.value]), [['status-connector-orders', null]]);
  assert.equal(r.cluster.reported('orders', 'connector'), undefined);
});

test('the connector instance owner\'s FAILED (and RUNNING again) reaches the herder; anyone else\'s report does not', async (t) => {
  const r = rig(['a:1', 'b:1'], 'a:1');
  await r.start();
  t.after(() => r.cluster.stop());
  const name = ['orders', 'clicks', 'views', 'carts', 'pays'].find((n) => {
    r.cluster.setConnectors([{ name: n, tasks: 2, committer: true }]);
    return r.cluster.owner(n, 'connector') === 'b:1';
  }) as string;
  const heard: unknown[] = [];
  r.cluster.onConnectorState((n, state, trace) => heard.push([n, state, trace]));
  r.foreign(`status-connector-${name}`, { state: 'FAILED', trace: 'table sales.orders stopped', worker_id: 'c:1', generation: 1 });
  assert.deepEqual(heard, [], 'not the owner');
  r.foreign(`status-connector-${name}`, { state: 'FAILED', trace: 'table sales.orders stopped', worker_id: 'b:1', generation: 1 });
  r.foreign(`status-connector-${name}`, { state: 'RUNNING', trace: null, worker_id: 'b:1', generation: 2 });
  assert.deepEqual(heard, [[name, 'FAILED', 'table sales.orders stopped'], [name, 'RUNNING', undefined]]);
});

/** Advances the mock timers and the rigs' clock together, in steps of `step` ms. */
async function elapse(t: { mock: { timers: { tick(ms: number): void } } }, clock: { now: number }, ms: number, step = 50): Promise<void> {
  for (let left = ms; left > 0; left -= step) {
    clock.now += Math.min(step, left);
    t.mock.timers.tick(Math.min(step, left));
    await Promise.resolve();
  }
}

test('join grace: a worker starts no unit until its view stayed unchanged for the grace; within it, what moved away stops at once', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const clock = { now: 0 };
  const r = rig(['a:1'], 'a:1', { joinGraceMs: 1_000, clock });
  r.current.share = { taskIds: [], committer: false };
  await r.start();
  t.after(() => r.cluster.stop());
  let told = 0;
  r.cluster.onPlacement(() => told++);
  r.cluster.setConnectors([{ name: 'orders', tasks: 6, committer: true }]);
  assert.deepEqual(r.cluster.share('orders'), { taskIds: [], committer: false }, 'alone in its view at its start: nothing starts');
  await elapse(t, clock, 600);
  r.membership.set(['a:1', 'b:1', 'c:1']); // the others, seen at the next poll
  await elapse(t, clock, 900);
  assert.deepEqual(r.cluster.share('orders'), { taskIds: [], committer: false }, '1.5 s after the start, 0.9 s after the last change: still nothing');
  assert.equal(r.cluster.settled(), false);
  const toldBefore = told;
  await elapse(t, clock, 150);
  assert.equal(r.cluster.settled(), true, 'the view stayed unchanged for the grace');
  assert.ok(told > toldBefore, 'the herder is told to apply the placement');
  const mine = r.cluster.share('orders');
  assert.equal(mine.taskIds.length, 2, 'its share of 6 tasks over 3 workers');
  r.current.share = { taskIds: [...mine.taskIds], committer: mine.committer };
  // b leaves: a's share grows, but only after the grace; nothing it runs that is still placed here stops.
  r.membership.set(['a:1', 'c:1']);
  const within = r.cluster.share('orders');
  assert.deepEqual(within.taskIds, mine.taskIds, 'within the grace: what it ran and still places here, nothing new');
  await elapse(t, clock, 1_050);
  assert.equal(r.cluster.share('orders').taskIds.length, 3, 'after the grace: its share of 6 over 2');
  // A worker joins: what moves to it stops here at once (released before the newcomer, itself in its grace, starts it).
  r.current.share = { taskIds: [...r.cluster.share('orders').taskIds], committer: r.cluster.share('orders').committer };
  r.membership.set(['a:1', 'b:1', 'c:1', 'd:1']);
  const shrunk = r.cluster.share('orders').taskIds;
  const placed = Array.from({ length: 6 }, (_, n) => n).filter((n) => r.cluster.owner('orders', n) === 'a:1');
  assert.ok(shrunk.every((n) => placed.includes(n)), `only units still placed here run: ${JSON.stringify({ shrunk, placed })}`);
});

test('three workers started at the same moment, a connector created at once: every task is started once, on its final owner', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const clock = { now: 0 };
  const ids = ['a:1', 'b:1', 'c:1'];
  /** Registrations in Redis so far; each worker sees them at its polls (every 500 ms from its own start). */
  const registered: string[] = [];
  const starts: string[] = [];
  const workers = ids.map((id) => {
    const w = rig([], id, { joinGraceMs: 1_000, clock });
    w.current.share = { taskIds: [], committer: false };
    /** The herder: on every placement change, make the worker's share what the cluster says. */
    const apply = (): void => {
      const share = w.cluster.share('orders');
      const cur = w.current.share ?? { taskIds: [], committer: false };
      for (const n of share.taskIds) if (!cur.taskIds.includes(n)) starts.push(`orders-${n}@${id}`);
      if (share.committer && !cur.committer) starts.push(`committer@${id}`);
      w.current.share = { taskIds: [...share.taskIds], committer: share.committer };
    };
    return { id, w, apply };
  });
  const timers: NodeJS.Timeout[] = [];
  for (const [i, x] of workers.entries()) {
    // Started 100 ms apart: each registers, then sees the registered workers at once (its heartbeat's answer).
    await elapse(t, clock, i === 0 ? 0 : 100);
    registered.push(x.id);
    x.w.membership.members_ = registered.map((workerId) => ({ workerId, url: `http://${workerId}` }));
    await x.w.start();
    t.after(() => x.w.cluster.stop());
    x.w.cluster.onPlacement(x.apply);
    x.w.cluster.setConnectors([{ name: 'orders', tasks: 4, committer: true }]); // the config topic read at its start
    x.apply();
    const poll = (): void => {
      if ([...registered].sort().join() !== x.w.membership.members().map((m) => m.workerId).sort().join()) x.w.membership.set([...registered]);
      timers.push(setTimeout(poll, 500));
    };
    timers.push(setTimeout(poll, 500));
  }
  await elapse(t, clock, 5_000);
  for (const tm of timers) clearTimeout(tm);
  const final = workers[0]?.w.cluster as Cluster;
  const expected = [0, 1, 2, 3].map((n) => `orders-${n}@${final.owner('orders', n) ?? '?'}`).concat(`committer@${final.owner('orders', 'connector') ?? '?'}`).sort();
  assert.deepEqual([...starts].sort(), expected, 'each unit started once, where every view places it');
});

test('a unit this worker reported and runs no more is written UNASSIGNED; so is what its previous life (same worker id) left RUNNING', async (t) => {
  const r = rig(['a:1'], 'a:1');
  // Before this start, a:1 (the same host:port) ran task 1 and reported it RUNNING; b:1 reported task 2.
  const initial: StateLogRecord[] = [
    { key: 'status-task-orders-1', value: JSON.stringify({ state: 'RUNNING', trace: null, worker_id: 'a:1', generation: 3 }), partition: 0, offset: 1n, timestamp: null, initial: true },
    { key: 'status-task-orders-2', value: JSON.stringify({ state: 'RUNNING', trace: null, worker_id: 'b:1', generation: 3 }), partition: 0, offset: 2n, timestamp: null, initial: true },
  ];
  await r.start();
  for (const rec of initial) r.foreignRecord(rec); // as the status log's initial load hands them over
  t.after(() => r.cluster.stop());
  r.cluster.setConnectors([{ name: 'orders', tasks: 3, committer: true }]);
  r.setReports([{ name: 'orders', connector: { state: 'RUNNING' }, tasks: [{ id: 0, state: 'RUNNING' }] }]);
  await r.cluster.report();
  const states = (from: number): string[][] => r.written.slice(from).map((e) => [e.key, (e.value as { state: string } | null)?.state ?? 'null', (e.value as { worker_id: string } | null)?.worker_id ?? '']);
  assert.deepEqual(states(0), [
    ['status-connector-orders', 'RUNNING', 'a:1'],
    ['status-task-orders-0', 'RUNNING', 'a:1'],
    ['status-task-orders-1', 'UNASSIGNED', 'a:1'],
  ], 'its previous life\'s task 1 is not running here: UNASSIGNED; b:1\'s report is left alone');
  // Task 0 stops here (moved away): UNASSIGNED, once.
  r.setReports([{ name: 'orders', connector: { state: 'RUNNING' }, tasks: [] }]);
  await r.cluster.report();
  assert.deepEqual(states(3), [['status-task-orders-0', 'UNASSIGNED', 'a:1']]);
  await r.cluster.report();
  assert.equal(r.written.length, 4, 'written once');
  // A unit whose new owner reported already is left to it.
  r.setReports([{ name: 'orders', connector: { state: 'RUNNING' }, tasks: [{ id: 0, state: 'RUNNING' }] }]);
  await r.cluster.report();
  r.foreign('status-task-orders-0', { state: 'RUNNING', trace: null, worker_id: 'c:1', generation: 9 });
  r.setReports([{ name: 'orders', connector: { state: 'RUNNING' }, tasks: [] }]);
  const before = r.written.length;
  await r.cluster.report();
  assert.equal(r.written.length, before, 'c:1 runs it now: nothing written over its report');
});

test('the status topic\'s trouble (reads failing, or this worker\'s writes) is known to the view until Kafka answers again', async (t) => {
  const r = rig(['a:1'], 'a:1');
  await r.start();
  t.after(() => r.cluster.stop());
  r.cluster.setConnectors([{ name: 'orders', tasks: 1, committer: true }]);
  assert.equal(r.cluster.statusTopicTrouble(), undefined);
  r.kafka.writeError = new Error('Local: Message timed out');
  r.setReports([{ name: 'orders', connector: { state: 'RUNNING' }, tasks: [{ id: 0, state: 'RUNNING' }] }]);
  await r.cluster.report();
  assert.match(r.cluster.statusTopicTrouble()?.error ?? '', /Message timed out/);
  r.kafka.unreadable = { sinceMs: 1, error: 'Local: Broker transport failure' };
  assert.deepEqual(r.cluster.statusTopicTrouble(), { sinceMs: 1, error: 'Local: Broker transport failure' }, 'the older of the two');
  // Task 0 stops here while writes fail: its UNASSIGNED is written once Kafka answers again.
  r.kafka.writeError = undefined;
  await r.cluster.report();
  r.kafka.writeError = new Error('Local: Message timed out');
  r.setReports([{ name: 'orders', connector: { state: 'RUNNING' }, tasks: [] }]);
  await r.cluster.report();
  r.kafka.unreadable = undefined;
  r.kafka.writeError = undefined;
  await r.cluster.report();
  assert.equal(r.cluster.statusTopicTrouble(), undefined, 'written again: no trouble');
  assert.deepEqual(r.written.slice(-1).map((e) => [e.key, (e.value as { state: string } | null)?.state]), [['status-task-orders-0', 'UNASSIGNED']], 'the UNASSIGNED that failed is written after the outage');
});

test('after its start a worker waits the longer start grace (workers started together register over seconds), a change within it included', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const clock = { now: 0 };
  const r = rig(['a:1'], 'a:1', { joinGraceMs: 1_000, startGraceMs: 3_000, clock });
  r.current.share = { taskIds: [], committer: false };
  await r.start();
  t.after(() => r.cluster.stop());
  r.cluster.setConnectors([{ name: 'orders', tasks: 4, committer: true }]);
  await elapse(t, clock, 500);
  r.membership.set(['a:1', 'b:1']);
  await elapse(t, clock, 1_600);
  assert.equal(r.cluster.settled(), false, '1.6 s after the change, 2.1 s after the start: the start grace runs on');
  assert.deepEqual(r.cluster.share('orders'), { taskIds: [], committer: false });
  r.membership.set(['a:1', 'b:1', 'c:1']); // a worker that came up 2.1 s after the others
  await elapse(t, clock, 950);
  assert.equal(r.cluster.settled(), false, 'the start grace is over, the last change\'s is not');
  await elapse(t, clock, 100);
  assert.equal(r.cluster.settled(), true);
  assert.ok(r.cluster.share('orders').taskIds.length >= 1);
});
