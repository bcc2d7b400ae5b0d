/**
 * The worker heals its tasks (issue 10 points 2 and 3), over scripted task handles: a task that ended
 * unexpectedly is started again after a back-off that grows with each consecutive restart; a task that
 * failed by a decision stays FAILED with its trace; the status shows the restarts; stopping is bounded
 * by task.shutdown.graceful.timeout.ms (a task that does not end is killed). The real task processes are
 * in test/e2e/sink-task-process.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConnectorConfig } from '../../../src/config/connector-config.ts';
import { CommitStateUnknownError, ConfigError, DataError, FatalError, RetriableError } from '../../../src/core/errors.ts';
import type { Logger } from '../../../src/core/log.ts';
import type { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { fencedError } from '../../../src/consume/port.ts';
import { restartable } from '../../../src/runtime/task.ts';
import { failureSummary, StandaloneWorker } from '../../../src/runtime/worker.ts';
import { IDLE_CONTROLS } from './rig.ts';
import type { TaskHandle } from '../../../src/runtime/worker.ts';

const committer = {
  round: () => Promise.resolve([]),
  tableStatus: () => [],
  controlStatus: () => ({ readRecords: 0, readBytes: 0, ignoredOtherConnector: 0, ignoredForeign: 0, bufferedRecords: 0, bufferedBytes: 0, behind: false, parkedTables: [] }),
} as unknown as ConnectorCommitter;

const connector = { name: 'c', tasksMax: 1, control: { commitIntervalMs: 600_000 }, redacted: () => ({}) } as unknown as ConnectorConfig;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(what: string, cond: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

interface Incarnation {
  readonly startedAt: number;
  readonly incarnation: number;
  end(error?: unknown): void;
  killed: boolean;
}

/** A worker whose task incarnations the test ends by hand. */
function rig(options: { shutdownMs?: number; killable?: boolean } = {}) {
  const incarnations: Incarnation[] = [];
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const log: Logger = {
    debug: () => undefined,
    info: (msg, fields = {}) => void lines.push({ level: 'info', msg, fields }),
    warn: (msg, fields = {}) => void lines.push({ level: 'warn', msg, fields }),
    error: (msg, fields = {}) => void lines.push({ level: 'error', msg, fields }),
    child: () => log,
  };
  const worker = new StandaloneWorker({
    log,
    prepareConnector: () => Promise.resolve({ retentionMs: null }),
    createCommitter: () => Promise.resolve({ committer, close: () => Promise.resolve() }),
    restartBackoff: { initialDelayMs: 20, maxDelayMs: 2_000 },
    random: () => 0.999, // the top of each jittered range: every wait about 3 times the one before
    taskShutdownTimeoutMs: options.shutdownMs ?? 50, // the scripted tasks ignore stop(): the bound ends them
    startTask(_c, taskId, _onAnnounced, incarnation): TaskHandle {
      let settle: (error?: unknown) => void = () => undefined;
      const done = new Promise<void>((resolve, reject) => (settle = (e) => (e === undefined ? resolve() : reject(e))));
      const inc: Incarnation = { startedAt: Date.now(), incarnation, end: (e) => settle(e), killed: false };
      incarnations.push(inc);
      let state = 'RUNNING';
      done.catch(() => (state = 'FAILED'));
      return {
        taskId,
        done,
        stop: () => Promise.resolve(),
        fail: (message) => Promise.resolve(settle(new FatalError(message))),
        state: () => ({ state }),
        ...IDLE_CONTROLS,
        ...(options.killable === false ? {} : { kill: () => ((inc.killed = true), settle(new Error('killed'))) }),
      };
    },
  });
  return { worker, incarnations, lines };
}

test('restartable: crashes and broken clients are, decisions are not', () => {
  assert.equal(restartable(new Error('KafkaConsumer is disconnected')), true);
  assert.equal(restartable(new FatalError('Kafka poll failed: Local: Fatal error', { context: { restartable: true } })), true);
  assert.equal(restartable(new ConfigError('bad setting')), false);
  assert.equal(restartable(new DataError('bad record')), false);
  assert.equal(restartable(fencedError('another process uses transactional.id c-0')), false);
  assert.equal(restartable(new FatalError('table db.t stopped')), false);
  // Infrastructure: a time-out, a catalog that lost a commit's answer (creating or evolving a table).
  assert.equal(restartable(new RetriableError('Kafka admin failed: Local: Timed out')), true);
  assert.equal(restartable(new CommitStateUnknownError('commit to db.t lost its answer (503): outcome unknown')), true);
});

test('a task that ends unexpectedly is started again, each wait longer; the status shows the restarts', async (t) => {
  const r = rig();
  t.after(() => r.worker.stop());
  await r.worker.start(connector);
  for (let n = 1; n <= 4; n++) {
    r.incarnations[n - 1]?.end(new Error(`task 0 process exited with SIGKILL (crash ${n})`));
    await until(`restart ${n}`, () => r.incarnations.length === n + 1);
  }
  assert.deepEqual(r.incarnations.map((i) => i.incarnation), [0, 1, 2, 3, 4], 'the worker counts the incarnations (a crash point is armed in the first only)');
  const waits = r.incarnations.slice(1).map((inc, i) => inc.startedAt - (r.incarnations[i] as Incarnation).startedAt);
  for (let i = 1; i < waits.length; i++) assert.ok((waits[i] as number) > (waits[i - 1] as number), `the back-off grows: ${waits.join(', ')} ms`);
  const logged = r.lines.filter((l) => l.level === 'error' && l.msg.startsWith('task c-0 failed: '));
  assert.deepEqual(logged.map((l) => l.fields['restarts']), [1, 2, 3, 4]);
  assert.ok(logged.every((l) => l.fields['restarting'] === true));
  assert.match(logged[3]?.msg ?? '', /^task c-0 failed: task 0 process exited with SIGKILL \(crash 4\); restarting it in \d+\.\d s$/);
  const status = r.worker.status()[0]?.tasks[0];
  assert.equal(status?.state, 'RUNNING');
  assert.equal(status?.restarts, 4);
  assert.match(status?.lastFailure ?? '', /crash 4/);
});

test('a task that failed by a decision stays FAILED with its trace: no restart', async (t) => {
  for (const decision of [new ConfigError('Kafka poll failed: unknown topic'), new DataError('not JSON'), fencedError('another process uses transactional.id c-0')]) {
    const r = rig();
    t.after(() => r.worker.stop());
    await r.worker.start(connector);
    r.incarnations[0]?.end(decision);
    await sleep(200); // ten times the first back-off
    assert.equal(r.incarnations.length, 1, `${decision.message}: not restarted`);
    assert.equal(r.worker.status()[0]?.tasks[0]?.state, 'FAILED');
    assert.equal(r.worker.status()[0]?.tasks[0]?.restarts, 0);
    const failed = r.lines.filter((l) => l.level === 'error' && l.msg.startsWith('task c-0 failed'));
    assert.deepEqual(failed.map((l) => [l.msg, l.fields['restarting']]), [[`task c-0 failed: ${decision.message}`, false]], 'one failure line');
  }
});

test('no restart once the worker stops, nor while a restart waits out its back-off', async () => {
  const r = rig();
  await r.worker.start(connector);
  r.incarnations[0]?.end(new Error('crash'));
  await r.worker.stop(); // during the back-off
  await sleep(100);
  assert.equal(r.incarnations.length, 1);
});

test('stopping is bounded: a task that does not end within task.shutdown.graceful.timeout.ms is killed', async () => {
  const r = rig({ shutdownMs: 150 });
  await r.worker.start(connector);
  const started = Date.now();
  await r.worker.stop(); // the scripted task ignores stop()
  const took = Date.now() - started;
  assert.ok(r.incarnations[0]?.killed, 'killed');
  assert.ok(took >= 140 && took < 2_000, `stop took ${took} ms`);
  assert.ok(r.lines.some((l) => l.msg.startsWith('task did not stop within task.shutdown.graceful.timeout.ms')));
});

test('a task that cannot be killed (in the worker process) does not hold the stop past the bound', async () => {
  const r = rig({ shutdownMs: 100, killable: false });
  await r.worker.start(connector);
  const started = Date.now();
  await r.worker.stop();
  assert.ok(Date.now() - started < 2_000);
});

test('whenAllFailed settles once every task of every connector FAILED for good, not while one runs or restarts', async (t) => {
  const r = rig();
  t.after(() => r.worker.stop());
  await r.worker.start({ ...connector, name: 'a', tasksMax: 2 } as unknown as ConnectorConfig);
  await r.worker.start({ ...connector, name: 'b' } as unknown as ConnectorConfig);
  let settled = false;
  void r.worker.whenAllFailed().then(() => (settled = true));
  const [a0, a1, b0] = r.incarnations;
  a0?.end(new DataError('not JSON', { record: { topic: 'orders', partition: 3, offset: 1520n } }));
  b0?.end(new ConfigError('cannot create table db.t: iceberg.tables.default-partition-by=bucket(x, 8): column x is not in the table schema'));
  a1?.end(new Error('task 1 process exited with SIGKILL')); // a crash: restarted
  await until('the restart', () => r.incarnations.length === 4);
  await sleep(50);
  assert.equal(settled, false, 'a task runs again: not all failed');
  assert.deepEqual(r.worker.failures().failed.map((f) => `${f.connector}-${f.task}`), ['a-0', 'b-0']);
  r.incarnations[3]?.end(new FatalError('fenced'));
  await until('all failed', () => settled);
  const { failed, total } = r.worker.failures();
  assert.equal(total, 3);
  assert.equal(
    failureSummary(failed, total, 'all-failed'),
    [
      'icefloe standalone: every task has FAILED (3 of 3) and none will be restarted: the worker stops:',
      '  connector a task 0 at orders/3@1520: not JSON',
      '  connector a task 1: fenced',
      '  connector b task 0: cannot create table db.t: iceberg.tables.default-partition-by=bucket(x, 8): column x is not in the table schema',
      'fix the cause and start the worker again (docs/sink.md "When tasks fail")',
      '',
    ].join('\n'),
  );
  const line = r.lines.find((l) => l.msg.startsWith('task a-0 failed'));
  assert.equal(line?.msg, 'task a-0 failed at orders/3@1520: not JSON', 'the failure line names the task, the record and the cause');
  assert.deepEqual([line?.fields['topic'], line?.fields['partition'], line?.fields['offset'], line?.fields['restarting']], ['orders', 3, '1520', false]);
});

