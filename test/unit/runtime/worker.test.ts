import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConnectorConfig } from '../../../src/config/connector-config.ts';
import type { Logger } from '../../../src/core/log.ts';
import type { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { StandaloneWorker } from '../../../src/runtime/worker.ts';
import { IDLE_CONTROLS } from './rig.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => quiet };

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

test('an announcement during a committer round brings the next round soon, not an interval later', async () => {
  const rounds: number[] = [];
  let announce: () => void = () => undefined;
  let inRound: (() => void) | undefined;
  const committer = {
    async round() {
      rounds.push(Date.now());
      inRound?.();
      await sleep(100);
      return [];
    },
    tableStatus: () => [],
    controlStatus: () => ({ readRecords: 0, readBytes: 0, ignoredOtherConnector: 0, ignoredForeign: 0, bufferedRecords: 0, bufferedBytes: 0, behind: false, parkedTables: [] }),
  } as unknown as ConnectorCommitter;
  const connector = {
    name: 'c',
    tasksMax: 1,
    control: { commitIntervalMs: 600_000 },
    redacted: () => ({}),
  } as unknown as ConnectorConfig;
  const worker = new StandaloneWorker({
    log: quiet,
    prepareConnector: () => Promise.resolve({ retentionMs: null }),
    createCommitter: () => Promise.resolve({ committer, close: () => Promise.resolve() }),
    startTask(_c, taskId, onAnnounced) {
      announce = onAnnounced;
      let end: () => void = () => undefined;
      const done = new Promise<void>((resolve) => (end = resolve));
      return { taskId, done, stop: () => Promise.resolve(end()), fail: () => Promise.resolve(), state: () => ({ state: 'RUNNING' }), ...IDLE_CONTROLS };
    },
  });
  await worker.start(connector);
  // The first announcement starts a round; a second one arrives while that round runs (after its read).
  inRound = () => {
    inRound = undefined;
    announce();
  };
  announce();
  const deadline = Date.now() + 10_000; // far below the 10-minute interval
  while (rounds.length < 2 && Date.now() < deadline) await sleep(20);
  await worker.stop();
  assert.ok(rounds.length >= 3, `a round for the announcement made during the first one, then stop()'s last round; got ${rounds.length} rounds`);
});

/** A worker over a scripted committer: `statuses` is what tableStatus() answers after each round. */
async function healthRig(statuses: () => unknown[], retentionMs: number | null, nowMs: () => number) {
  const failed: { task: number; message: string }[] = [];
  const errors: string[] = [];
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m) => void errors.push(m), child: () => log };
  let rounds = 0;
  const committer = {
    round() {
      rounds++;
      return Promise.resolve([]);
    },
    tableStatus: statuses,
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
    nowMs,
    prepareConnector: () => Promise.resolve({ retentionMs }),
    createCommitter: () => Promise.resolve({ committer, close: () => Promise.resolve() }),
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
  await worker.start(connector);
  const waitRounds = async (n: number): Promise<void> => {
    const until = rounds + n;
    while (rounds < until) await sleep(5);
  };
  return { worker, failed, errors, waitRounds };
}

test('a stopped table fails every task of the connector once, with the table and its reason; the committer keeps running', async () => {
  let stopped = false;
  const rig = await healthRig(() => [{ table: 'db.a', state: 'RUNNING' }, stopped ? { table: 'db.b', state: 'STOPPED', reason: { code: 'positions-malformed', message: 'db.b: bad key' } } : { table: 'db.b', state: 'RUNNING' }], null, Date.now);
  await rig.waitRounds(2);
  assert.equal(rig.failed.length, 0);
  stopped = true;
  await rig.waitRounds(3);
  assert.deepEqual(rig.failed.map((f) => f.task), [0, 1], 'each task failed exactly once');
  assert.match(rig.failed[0]?.message ?? '', /table db\.b stopped \(positions-malformed: db\.b: bad key\)/);
  const status = rig.worker.status()[0];
  assert.equal(status?.state, 'FAILED');
  assert.equal(status?.tables.find((t) => t.table === 'db.b')?.state, 'STOPPED');
  assert.ok(rig.errors.some((m) => m.startsWith('connector failed')));
  await rig.worker.stop();
});

test('retention: an alarm past the alarm share, the tasks failed past the stop share', async () => {
  let now = 1_000_000;
  const oldest = now;
  const rig = await healthRig(() => [{ table: 'db.a', state: 'RUNNING', oldestUnappliedMs: oldest }], 100_000, () => now);
  now += 40_000;
  await rig.waitRounds(2);
  assert.equal(rig.worker.status()[0]?.tables[0]?.retentionAlarm, false);
  now += 20_000; // 60 % of retention
  await rig.waitRounds(2);
  assert.equal(rig.worker.status()[0]?.tables[0]?.retentionAlarm, true);
  assert.equal(rig.errors.filter((m) => m.startsWith('retention alarm')).length, 1, 'one alarm, not one per round');
  assert.equal(rig.failed.length, 0);
  now += 25_000; // 85 %
  await rig.waitRounds(2);
  assert.deepEqual(rig.failed.map((f) => f.task), [0, 1]);
  assert.match(rig.failed[0]?.message ?? '', /db\.a: its oldest unapplied announcement is 85 s old, 85 % of control topic icefloe-control-c's retention\.ms \(100000\)/);
  assert.match(rig.failed[0]?.message ?? '', /icefloe\.source-offsets\.c/);
  await rig.worker.stop();
});
