/**
 * N4 (commit-protocol-2.md): a committer that fails as a whole (every round throws before a table is
 * judged) or, in a cluster, a committer seat no worker holds, never failed the tasks: they kept
 * acknowledging records whose announcements retention then deleted. Now both count like a table that
 * cannot commit: an alarm past icefloe.control.retention-alarm-ratio, the tasks failed past
 * icefloe.control.retention-stop-ratio, the age being how long the committer has not got through.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import type { ConnectorConfig } from '../../../src/config/connector-config.ts';
import { ConfigError } from '../../../src/core/errors.ts';
import type { Logger } from '../../../src/core/log.ts';
import type { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { StandaloneWorker } from '../../../src/runtime/worker.ts';
import type { ConnectorShare, WorkerDeps } from '../../../src/runtime/worker.ts';
import { IDLE_CONTROLS } from './rig.ts';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const RETENTION_MS = 100_000;

async function rig(t: TestContext, options: { round: () => Promise<unknown[]>; share?: ConnectorShare; committerHolder?: WorkerDeps['committerHolder'] }) {
  let now = 1_000_000;
  const failed: { task: number; message: string }[] = [];
  const errors: string[] = [];
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m) => void errors.push(m), child: () => log };
  let rounds = 0;
  const committer = {
    round: () => {
      rounds++;
      return options.round();
    },
    tableStatus: () => [],
    controlStatus: () => ({ readRecords: 0, readBytes: 0, ignoredOtherConnector: 0, ignoredForeign: 0, bufferedRecords: 0, bufferedBytes: 0, behind: false, parkedTables: [] }),
  } as unknown as ConnectorCommitter;
  const connector = {
    name: 'c',
    tasksMax: 2,
    control: { commitIntervalMs: 20, topic: 'icefloe-control-c', retentionAlarmRatio: 0.5, retentionStopRatio: 0.8 },
    redacted: () => ({}),
  } as unknown as ConnectorConfig;
  const worker = new StandaloneWorker({
    log,
    nowMs: () => now,
    healthCheckMs: 5,
    prepareConnector: () => Promise.resolve({ retentionMs: RETENTION_MS }),
    createCommitter: () => Promise.resolve({ committer, close: () => Promise.resolve() }),
    ...(options.committerHolder === undefined ? {} : { committerHolder: options.committerHolder }),
    startTask(_c, taskId) {
      return {
        taskId,
        done: Promise.resolve(),
        stop: () => Promise.resolve(),
        fail: (message: string) => Promise.resolve(void failed.push({ task: taskId, message })),
        state: () => ({ state: 'RUNNING' }),
        ...IDLE_CONTROLS,
      };
    },
  });
  t.after(() => worker.stop());
  await worker.start(connector, options.share === undefined ? {} : { share: options.share });
  return {
    worker,
    failed,
    errors,
    rounds: () => rounds,
    /** Moves the clock, then lets a few health checks run. */
    async advance(ms: number): Promise<void> {
      now += ms;
      await sleep(60);
    },
  };
}

test('N4: a committer whose every round fails (a foreign offset on its position group) fails the tasks before retention can pass, the alarm first', async (t) => {
  const r = await rig(t, { round: () => Promise.reject(new ConfigError('the group cg-control-c holds offsets committed by someone else (metadata "x")')) });
  await r.advance(0);
  assert.ok(r.rounds() >= 1, 'the committer ran and failed');
  await r.advance(40_000);
  assert.equal(r.failed.length, 0);
  assert.equal(r.errors.filter((m) => m.startsWith('retention alarm')).length, 0);
  await r.advance(20_000); // 60 % of retention since the committer started and never got through
  assert.equal(r.errors.filter((m) => m.startsWith('retention alarm')).length, 1, 'one alarm');
  assert.equal(r.failed.length, 0);
  await r.advance(25_000); // 85 %
  assert.deepEqual(r.failed.map((f) => f.task), [0, 1], 'each task failed once');
  assert.match(r.failed[0]?.message ?? '', /the committer of connector c has not got through a round for 85 s \(last error: the group cg-control-c holds offsets committed by someone else/);
  assert.match(r.failed[0]?.message ?? '', /85 % of control topic icefloe-control-c's retention\.ms \(100000\), past icefloe\.control\.retention-stop-ratio \(0\.8\)/);
  const status = r.worker.status()[0];
  assert.equal(status?.state, 'FAILED');
  assert.ok(r.errors.some((m) => m.startsWith('connector failed')));
});

test('N4: the age counts from the last round that got through, not from the first failure', async (t) => {
  let ok = true;
  const r = await rig(t, { round: () => (ok ? Promise.resolve([]) : Promise.reject(new Error('unexpected (a bug)'))) });
  await r.advance(70_000); // rounds get through: no age at all
  assert.equal(r.failed.length, 0);
  ok = false;
  await r.advance(0);
  await r.advance(79_000);
  assert.equal(r.failed.length, 0, '79 % since the last good round');
  await r.advance(2_000);
  assert.deepEqual(r.failed.map((f) => f.task), [0, 1]);
});

test('N4: in a cluster, a worker running tasks of a connector whose committer seat nobody holds fails them past the stop share; a held seat never', async (t) => {
  let holder: string | null = 'worker-b';
  const r = await rig(t, { round: () => Promise.resolve([]), share: { taskIds: [0, 1], committer: false }, committerHolder: () => Promise.resolve(holder) });
  await r.advance(90_000);
  assert.equal(r.failed.length, 0, 'the seat is held elsewhere: that worker judges the tables');
  holder = null;
  await r.advance(0); // seen vacant now
  await r.advance(60_000);
  assert.equal(r.errors.filter((m) => m.startsWith('retention alarm')).length, 1);
  assert.equal(r.failed.length, 0);
  await r.advance(25_000);
  assert.deepEqual(r.failed.map((f) => f.task), [0, 1]);
  assert.match(r.failed[0]?.message ?? '', /no worker has held the committer seat of connector c for 85 s \(no worker holds its lease\)/);
});

test('N4: a seat that cannot be checked (Redis unreachable) counts as vacant', async (t) => {
  const r = await rig(t, { round: () => Promise.resolve([]), share: { taskIds: [0], committer: false }, committerHolder: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379')) });
  await r.advance(0);
  await r.advance(85_000);
  assert.deepEqual(r.failed.map((f) => f.task), [0]);
  assert.match(r.failed[0]?.message ?? '', /the lease cannot be read: connect ECONNREFUSED/);
});
