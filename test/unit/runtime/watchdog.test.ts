/**
 * The progress watchdog (src/runtime/watchdog.ts), rule by rule on a hand-driven clock, then on the real
 * SinkTask over the memory fakes with the stall point `task.in-kafka-call` armed to hang the transaction
 * commit: the task fails at once with a trace naming the call, restartable, and is not stuck while idle.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mock, test } from 'node:test';
import { armCrashPoints, parseCrashSpec } from '../../../src/core/crash-points.ts';
import { FatalError } from '../../../src/core/errors.ts';
import { taskState } from '../../../src/runtime/connector-status.ts';
import { restartable } from '../../../src/runtime/task.ts';
import { taskProcessHandle } from '../../../src/runtime/task-process.ts';
import { CallTracker, stallBound, Watchdog } from '../../../src/runtime/watchdog.ts';
import type { StallBound } from '../../../src/runtime/watchdog.ts';
import { Rig, until } from './rig.ts';

const BOUND: StallBound = { ms: 10_000, derivation: 'a test bound' };

/** A watchdog on a clock the test moves; `work` is what the probe answers. */
function harness(bound: StallBound = BOUND) {
  const clock = { now: 0 };
  const calls = new CallTracker(() => clock.now);
  const state: { work: string | undefined; stuck: string[] } = { work: undefined, stuck: [] };
  const dog = new Watchdog({ bound, calls, work: () => state.work, onStuck: (m) => state.stuck.push(m), periodMs: 1_000 });
  /** Moves the clock `ms` in ticks of one period, as the timer would. */
  const advance = (ms: number): void => {
    for (let t = 0; t < ms; t += 1_000) {
      clock.now += 1_000;
      dog.tick();
    }
  };
  return { clock, calls, state, dog, advance };
}

test('the bound: the longest of the transactional call time-out, the session time-out and the retry back-off, plus 30 s; set or turned off by icefloe.task.stall-timeout-ms', () => {
  const derived = stallBound({ transactionTimeoutMs: 60_000, sessionTimeoutMs: 45_000, retryDelayMaxMs: 60_000, configuredMs: null });
  assert.equal(derived.ms, 90_000);
  assert.match(derived.derivation, /transaction\.timeout\.ms\/2 = 30000 ms, session\.timeout\.ms = 45000 ms, errors\.retry\.delay\.max\.ms = 60000 ms\) \+ 30000 ms/);
  assert.equal(stallBound({ transactionTimeoutMs: 6_000, sessionTimeoutMs: 6_000, retryDelayMaxMs: 2_000, configuredMs: null }).ms, 36_000);
  assert.equal(stallBound({ transactionTimeoutMs: 200_000, sessionTimeoutMs: 6_000, retryDelayMaxMs: 2_000, configuredMs: null }).ms, 130_000);
  assert.deepEqual(stallBound({ transactionTimeoutMs: 60_000, sessionTimeoutMs: 45_000, retryDelayMaxMs: 60_000, configuredMs: 5_000 }), { ms: 5_000, derivation: 'icefloe.task.stall-timeout-ms=5000' });
  assert.equal(stallBound({ transactionTimeoutMs: 60_000, sessionTimeoutMs: 45_000, retryDelayMaxMs: 60_000, configuredMs: 0 }).ms, 0);
});

test('a task with nothing to read and no cycle due is never stuck, however long its poll waits', () => {
  const h = harness();
  void h.calls.track('Kafka poll', () => new Promise(() => undefined));
  h.advance(10 * BOUND.ms);
  assert.deepEqual(h.state.stuck, []);
});

test('a task with work that makes no progress is stuck after the bound, not before; the trace names the call, how long, the bound and its derivation', () => {
  const h = harness();
  h.state.work = '1 assigned partition(s) had records beyond its position';
  h.advance(2_000);
  void h.calls.track('Kafka commitTransaction', () => new Promise(() => undefined));
  h.advance(BOUND.ms - 2_000);
  assert.deepEqual(h.state.stuck, [], 'not before the bound');
  h.advance(2_000);
  assert.equal(h.state.stuck.length, 1);
  assert.match(h.state.stuck[0] ?? '', /^task stuck in Kafka commitTransaction for 10\.0 s \(bound 10\.0 s, derived from a test bound\): no poll returned records and no cycle ended for 11\.0 s while 1 assigned partition\(s\) had records beyond its position$/);
  h.advance(5 * BOUND.ms);
  assert.equal(h.state.stuck.length, 1, 'reported once');
});

test('calls inside calls (a rebalance\'s cycle end inside the poll): the trace names the innermost, inside the others', () => {
  const h = harness();
  h.state.work = 'its cycle was due';
  void h.calls.track('Kafka poll', () => new Promise(() => undefined));
  h.advance(3_000);
  void h.calls.track('Kafka commitTransaction', () => new Promise(() => undefined));
  h.advance(BOUND.ms);
  assert.match(h.state.stuck[0] ?? '', /^task stuck in Kafka commitTransaction for 9\.0 s \(inside Kafka poll for 12\.0 s\) \(bound 10\.0 s/);
});

test('the bound counts from when the work appeared, and progress (records polled, a cycle ended) starts it again', () => {
  const h = harness();
  h.advance(5 * BOUND.ms); // idle for long: that time does not count
  h.state.work = 'its cycle was due';
  h.advance(BOUND.ms - 1_000);
  assert.deepEqual(h.state.stuck, [], 'the bound runs from the work, not from the last progress');
  for (let i = 0; i < 5; i++) {
    h.dog.progress();
    h.advance(BOUND.ms - 1_000);
  }
  assert.deepEqual(h.state.stuck, [], 'progress within each bound');
  h.advance(2_000);
  assert.equal(h.state.stuck.length, 1);
  assert.match(h.state.stuck[0] ?? '', /^task stuck in the task loop \(no call open; the last, none\) for 11\.0 s/);
});

test('a poll that returns records is progress; one that returns none is not', async () => {
  const h = harness();
  const source = h.calls.wrap('Kafka', { poll: (n: number) => Promise.resolve(Array.from({ length: n }, (_, i) => i)) });
  h.state.work = 'records waiting';
  for (let i = 0; i < 4; i++) {
    h.advance(BOUND.ms / 2);
    await source.poll(3);
  }
  assert.deepEqual(h.state.stuck, []);
  for (let i = 0; i < 4; i++) {
    h.advance(BOUND.ms / 2);
    await source.poll(0);
  }
  assert.equal(h.state.stuck.length, 1);
  assert.match(h.state.stuck[0] ?? '', /the last, Kafka poll, ended/);
});

test('time the process did not run (frozen) does not count', () => {
  const h = harness();
  h.state.work = 'records waiting';
  void h.calls.track('object store put', () => new Promise(() => undefined));
  h.advance(3_000);
  h.clock.now += 5 * BOUND.ms; // SIGSTOP, then SIGCONT: the next tick comes late
  h.dog.tick();
  assert.deepEqual(h.state.stuck, []);
  h.advance(BOUND.ms - 3_000);
  assert.deepEqual(h.state.stuck, [], 'only the time it ran counts');
  h.advance(2_000);
  assert.match(h.state.stuck[0] ?? '', /^task stuck in object store put for 12\.0 s \(bound 10\.0 s, derived from a test bound\): no poll returned records and no cycle ended for 11\.0 s/);
});

test('the timer looks by itself every period (mock timers), and a bound of 0 never starts it', () => {
  mock.timers.enable({ apis: ['setInterval'] });
  try {
    const h = harness();
    h.state.work = 'records waiting';
    h.dog.start();
    for (let i = 0; i < 12; i++) {
      h.clock.now += 1_000;
      mock.timers.tick(1_000);
    }
    assert.equal(h.state.stuck.length, 1);
    const off = harness({ ms: 0, derivation: 'off' });
    off.state.work = 'records waiting';
    off.dog.start();
    for (let i = 0; i < 12; i++) {
      off.clock.now += 1_000;
      mock.timers.tick(1_000);
    }
    assert.deepEqual(off.state.stuck, []);
  } finally {
    mock.timers.reset();
  }
});

test('a task hung inside its transaction commit (stall point task.in-kafka-call) fails within its bound, restartable, naming the call', async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  rig.produce(0, 20);
  const lines: string[] = [];
  const crash = armCrashPoints(parseCrashSpec('task.in-kafka-call', '1', 'hang'), () => assert.fail('not a kill'), (line) => lines.push(line));
  const started = performance.now();
  const task = rig.startTask(0, { crash, stallBound: { ms: 300, derivation: 'the test' } });
  const error = await task.ended;
  const took = performance.now() - started;
  assert.deepEqual(lines, ['icefloe: stall point task.in-kafka-call reached (hit 1); the call hangs (never returns)']);
  assert.ok(error instanceof FatalError, String(error));
  assert.match(error.message, /^task stuck in Kafka commitTransaction for 0\.\d s \(bound 0\.3 s, derived from the test\): no poll returned records and no cycle ended for \d\.\d s while its cycle was due/);
  assert.ok(took < 3_000, `failed within its bound and a few periods: ${took} ms`);
  assert.equal(task.task.state, 'FAILED');
  assert.equal(task.task.restartable, true, 'a new incarnation with new clients may succeed');
  assert.equal(restartable(error), true);
  assert.equal(task.task.endedStuck, true);
  assert.match(task.task.trace ?? '', /task stuck in Kafka commitTransaction/);
  assert.equal(rig.committedOffset(0), null, 'nothing of the hung transaction committed');
});

test('a task whose assignment was lost and whose consumer does not get back into the group is stuck after the bound (the issue 24 stall: librdkafka\'s group handle stuck after a broker restart), restartable; one that rejoins is not', { timeout: 15_000 }, async (t) => {
  const rig = await new Rig().init();
  t.after(() => rig.close());
  rig.produce(0, 10);
  rig.produce(1, 10);
  // Rejoins: a session time-out, then the partitions come back at once.
  const healthy = rig.startTask(0, { stallBound: { ms: 300, derivation: 'the test' } });
  await until('committed', () => rig.committedOffset(0) === 10n && rig.committedOffset(1) === 10n);
  rig.kafka.expireMember({ groupId: healthy.source.groupId, memberId: healthy.source.memberId });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(healthy.task.state, 'RUNNING', 'a consumer that rejoined is not stuck');
  assert.equal(healthy.source.assignment().length, 2);
  await healthy.stop();

  // Does not rejoin: nothing to read as far as the task can tell, yet it must not sit there forever.
  const stuck = rig.startTask(0, { stallBound: { ms: 300, derivation: 'the test' } });
  await until('partitions assigned', () => stuck.source.assignment().length === 2);
  rig.kafka.stallRejoins(stuck.clientId);
  rig.kafka.expireMember({ groupId: stuck.source.groupId, memberId: stuck.source.memberId });
  const started = performance.now();
  const error = await stuck.ended;
  assert.ok(error instanceof FatalError, String(error));
  assert.match(error.message, /^task stuck in .* while its assignment was lost \d+ s ago \(the consumer group session timed out\) and no partition came back: its consumer has not rejoined the group$/);
  assert.ok(performance.now() - started < 3_000, 'within its bound and a few periods');
  assert.equal(stuck.task.restartable, true, 'new clients may rejoin');
});

test('an idle task and a busy one with a short bound are not stuck: they poll, commit and stop', async (t) => {
  const rig = await new Rig().init(); // a 10-minute commit interval: no cycle is due while idle
  t.after(() => rig.close());
  const task = rig.startTask(0, { stallBound: { ms: 300, derivation: 'the test' } });
  await new Promise((resolve) => setTimeout(resolve, 1_500)); // idle: nothing to read, no cycle due
  rig.produce(0, 95);
  rig.produce(1, 7);
  await until('offsets committed', () => rig.committedOffset(0) === 95n && rig.committedOffset(1) === 7n);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  assert.equal(task.task.state, 'RUNNING');
  assert.equal(await task.stop(), undefined);
  assert.equal(task.task.state, 'STOPPED');
});

test('the REST task status says how often a task was restarted and from what; a task never restarted shows Connect\'s fields only', () => {
  const trace = 'task stuck in Kafka commitTransaction for 36.2 s (bound 36.0 s, derived from ...)';
  assert.deepEqual(taskState({ id: 0, state: 'RUNNING', restarts: 0 }, 'w:1', false), { id: 0, state: 'RUNNING', worker_id: 'w:1' });
  assert.deepEqual(taskState({ id: 0, state: 'RESTARTING', trace, restarts: 0, lastFailure: trace }, 'w:1', false), { id: 0, state: 'RESTARTING', worker_id: 'w:1', trace, restarts: 0, last_failure: trace });
  assert.deepEqual(taskState({ id: 1, state: 'RUNNING', restarts: 1, lastFailure: trace }, 'w:1', false), { id: 1, state: 'RUNNING', worker_id: 'w:1', restarts: 1, last_failure: trace });
});

/** A forked child as taskProcessHandle sees it: messages, exit, kill. */
function fakeChild(): ChildProcess & { signals: string[] } {
  const child = new EventEmitter() as ChildProcess & { signals: string[] };
  child.signals = [];
  Object.assign(child, { pid: 4242, connected: true, send: () => true, kill: (signal: string) => (child.signals.push(signal), child.emit('exit', null, signal), true) });
  return child;
}

test('the worker kills a task process whose event loop said nothing for longer than the bound (restartable, naming it); one that keeps saying it is alive, or never spoke, is left alone', async () => {
  const silent = fakeChild();
  const lively = fakeChild();
  const mute = fakeChild();
  const log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => log };
  const handles = [silent, lively, mute].map((c) => taskProcessHandle(0, c, log, () => undefined, 1_500));
  const outcome = handles[0]?.done.then(() => 'stopped', (e: unknown) => e);
  silent.emit('message', { type: 'alive' });
  const alive = setInterval(() => lively.emit('message', { type: 'alive' }), 200);
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  clearInterval(alive);
  assert.deepEqual(silent.signals, ['SIGKILL']);
  const error = await outcome;
  assert.ok(error instanceof FatalError);
  assert.match(error.message, /^task process stuck: its event loop said nothing for \d\.\d s \(bound 1\.5 s, the task's watchdog bound\); killed$/);
  assert.equal(restartable(error), true);
  assert.deepEqual(lively.signals, []);
  assert.deepEqual(mute.signals, [], 'a child never heard from is not judged');
  lively.emit('exit', 0, null);
  mute.emit('exit', 0, null);
});
