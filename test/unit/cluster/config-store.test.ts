/**
 * The cluster's connector store over the config topic (runtime/cluster/config-store.ts) on a fake log that
 * hands every appended record back, as the real one does after reading it: what a save writes and in which
 * order, what other workers' records tell the herder (coalesced per read), and which restart requests count.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../../src/core/log.ts';
import { ConfigTopicStore } from '../../../src/runtime/cluster/config-store.ts';
import type { ConfigLog } from '../../../src/runtime/cluster/config-store.ts';
import type { StateLogRecord } from '../../../src/runtime/cluster/state-log.ts';
import type { StateEntry } from '../../../src/runtime/cluster/state-records.ts';
import type { StoredConnector } from '../../../src/runtime/herder.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => quiet };
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** One topic shared by several stores, as the config topic is shared by the workers. */
class FakeTopic {
  readonly records: { key: string; value: string | null }[] = [];
  readonly readers: ((r: StateLogRecord) => void)[] = [];
  log(): ConfigLog {
    return {
      topic: 'configs',
      start: async (onRecord: (r: StateLogRecord) => void) => {
        this.records.forEach((r, i) => onRecord({ ...r, partition: 0, offset: BigInt(i), timestamp: null, initial: true }));
        this.readers.push(onRecord);
        return { endOffsets: [], records: this.records.length, elapsedMs: 0 };
      },
      appendAll: async (entries: readonly StateEntry[]) => {
        const offsets: bigint[] = [];
        for (const e of entries) {
          const record = { key: e.key, value: e.value === null ? null : JSON.stringify(e.value) };
          const offset = BigInt(this.records.push(record) - 1);
          offsets.push(offset);
          for (const r of this.readers) r({ ...record, partition: 0, offset, timestamp: null, initial: false });
        }
        return offsets;
      },
    };
  }
}

const CONFIG = { 'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector', 'tasks.max': '2', topics: 'orders', name: 'orders' };

test('a save writes the target state before the config, then the task configs and their commit; an identical save writes nothing', async () => {
  const topic = new FakeTopic();
  const store = new ConfigTopicStore(topic.log(), quiet, () => 1000);
  await store.start();
  await store.save([{ name: 'orders', config: CONFIG, target: 'PAUSED' }]);
  assert.deepEqual(topic.records.map((r) => r.key), ['target-state-orders', 'connector-orders', 'task-orders-0', 'task-orders-1', 'commit-orders']);
  assert.deepEqual(JSON.parse(topic.records[0]?.value ?? ''), { state: 'PAUSED', 'state.v2': 'PAUSED' });
  assert.deepEqual(JSON.parse(topic.records[1]?.value ?? ''), { properties: CONFIG });
  assert.deepEqual(store.load(), [{ name: 'orders', config: CONFIG, target: 'PAUSED' }]);
  await store.save([{ name: 'orders', config: CONFIG, target: 'PAUSED' }]);
  assert.equal(topic.records.length, 5, 'nothing changed, nothing written');
  await store.save([{ name: 'orders', config: CONFIG, target: 'STOPPED', tasks: false }]);
  assert.deepEqual(topic.records.slice(5).map((r) => [r.key, JSON.parse(r.value ?? 'null')]), [
    ['target-state-orders', { state: 'PAUSED', 'state.v2': 'STOPPED' }],
    ['commit-orders', { tasks: 0 }],
  ]);
  assert.deepEqual(store.load(), [{ name: 'orders', config: CONFIG, target: 'STOPPED', tasks: false }]);
  await store.save([]);
  assert.deepEqual(store.load(), [], 'a connector left out of a save is deleted (tombstones)');
  assert.ok(topic.records.slice(7).every((r) => r.value === null));
});

test('another worker\'s changes reach the herder once per read, with what the topic now says', async () => {
  const topic = new FakeTopic();
  const mine = new ConfigTopicStore(topic.log(), quiet);
  const theirs = new ConfigTopicStore(topic.log(), quiet);
  await mine.start();
  await theirs.start();
  const seen: [string, StoredConnector | undefined][] = [];
  mine.watch((name, stored) => seen.push([name, stored]));
  await theirs.save([{ name: 'orders', config: CONFIG, target: 'STARTED' }]);
  await tick();
  assert.deepEqual(seen, [['orders', { name: 'orders', config: CONFIG, target: 'STARTED' }]], 'five records, one change');
  await theirs.save([]);
  await tick();
  assert.deepEqual(seen.at(-1), ['orders', undefined]);
});

test('restart requests count only when appended after the worker\'s initial read', async () => {
  const topic = new FakeTopic();
  const early = new ConfigTopicStore(topic.log(), quiet, () => 5);
  await early.start();
  await early.save([{ name: 'orders', config: CONFIG, target: 'STARTED' }]);
  await early.requestRestart('orders', { kind: 'task', task: 1 });
  const late = new ConfigTopicStore(topic.log(), quiet);
  const heard: unknown[] = [];
  late.onRestart((name, request) => heard.push([name, request]));
  await late.start();
  assert.deepEqual(heard, [], 'an old request is not replayed by a worker that starts later');
  await early.requestRestart('orders', { kind: 'connector', options: { includeTasks: true, onlyFailed: false } });
  assert.deepEqual(heard, [['orders', { kind: 'connector', options: { includeTasks: true, onlyFailed: false } }]]);
  assert.deepEqual(JSON.parse(topic.records.find((r) => r.key === 'restart-task-orders-1')?.value ?? ''), { 'requested-ms': 5 });
});
