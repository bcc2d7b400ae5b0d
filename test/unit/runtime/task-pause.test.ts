/**
 * PUT /connectors/{c}/pause at the task (runtime/task.ts `pause`): the open cycle is committed, nothing is
 * consumed while paused, the consumer stays in the group, and after the resume every record lands once,
 * counted by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expected, Rig, sortCoordinates, TOPIC, until } from './rig.ts';

test('a paused task commits its open cycle, consumes nothing while paused, and after the resume every record lands once', async (t) => {
  // max-records 10 per cycle in the rig; a long interval: only the pause ends the partial cycle.
  const rig = await new Rig({ config: { 'icefloe.commit.max-records': '1000' } }).init();
  t.after(() => rig.close());
  const first0 = rig.produce(0, 25);
  const first1 = rig.produce(1, 7);
  const task = rig.startTask(0);
  await until('the first records handled', () => task.task.metrics.recordsConsumed === 32);
  assert.equal(rig.committedOffset(0), null, 'the cycle is open: nothing committed before the pause');
  task.task.pause();
  await until('paused', () => task.task.state === 'PAUSED');
  assert.equal(rig.committedOffset(0), 25n, 'pausing committed the open cycle (partition 0)');
  assert.equal(rig.committedOffset(1), 7n, 'pausing committed the open cycle (partition 1)');
  const more0 = rig.produce(0, 40);
  const more1 = rig.produce(1, 5);
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(task.task.metrics.recordsConsumed, 32, 'nothing is consumed while paused');
  assert.deepEqual(task.source.assignment().map((tp) => tp.partition).sort(), [0, 1], 'still in the group with its partitions');
  assert.deepEqual(task.task.activeTopics, [TOPIC]);
  task.task.resume();
  await until('resumed and caught up', () => task.task.state === 'RUNNING' && task.task.metrics.recordsConsumed === 77);
  await task.stop();
  await rig.committer().round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...first0, ...more0], 1: [...first1, ...more1] }));
});

test('records fetched before the pause took hold are read again after the resume, never skipped', async (t) => {
  const rig = await new Rig({ config: { 'icefloe.commit.max-records': '1000' } }).init();
  t.after(() => rig.close());
  const p0 = rig.produce(0, 10);
  const task = rig.startTask(0);
  await until('handled', () => task.task.metrics.recordsConsumed === 10);
  task.task.pause();
  await until('paused', () => task.task.state === 'PAUSED');
  // The fake consumer ignores its pause once, as a client with prefetched records would.
  const source = task.source;
  const realPause = source.pause.bind(source);
  let leaked = false;
  source.pause = (tps) => {
    if (!leaked) {
      leaked = true;
      return;
    }
    realPause(tps);
  };
  source.resume(source.assignment());
  const later = rig.produce(0, 6);
  await until('the leaked batch was polled and set back', () => leaked);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(task.task.metrics.recordsConsumed, 10, 'a batch polled while paused is not handled');
  task.task.resume();
  await until('caught up', () => task.task.metrics.recordsConsumed === 16);
  await task.stop();
  await rig.committer().round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates()), expected({ 0: [...p0, ...later] }));
});
