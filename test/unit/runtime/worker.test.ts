import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConnectorConfig } from '../../../src/config/connector-config.ts';
import type { Logger } from '../../../src/core/log.ts';
import type { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { StandaloneWorker } from '../../../src/runtime/worker.ts';

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
  } as unknown as ConnectorCommitter;
  const connector = {
    name: 'c',
    tasksMax: 1,
    control: { commitIntervalMs: 600_000 },
    redacted: () => ({}),
  } as unknown as ConnectorConfig;
  const worker = new StandaloneWorker({
    log: quiet,
    prepareConnector: () => Promise.resolve(),
    createCommitter: () => Promise.resolve({ committer, close: () => Promise.resolve() }),
    startTask(_c, taskId, onAnnounced) {
      announce = onAnnounced;
      let end: () => void = () => undefined;
      const done = new Promise<void>((resolve) => (end = resolve));
      return { taskId, done, stop: () => Promise.resolve(end()), state: () => ({ state: 'RUNNING' }) };
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
