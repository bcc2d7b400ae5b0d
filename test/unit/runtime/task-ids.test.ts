/**
 * The worker's check that no other live process runs its task ids (runtime/task-ids.ts), over a scripted
 * group and a fake clock: a predecessor that did not leave is waited out; a member that stays past the
 * wait fails the start with the setting, the ids and the members. The real workers are in
 * test/e2e/sink-task-ids.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../../src/core/errors.ts';
import type { Logger } from '../../../src/core/log.ts';
import type { GroupMemberInfo } from '../../../src/consume/port.ts';
import { checkTaskIdsFree, lingerMs, taskClientId } from '../../../src/runtime/task-ids.ts';
import type { TaskIdCheck } from '../../../src/runtime/task-ids.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => quiet };

function member(clientId: string, memberId = `${clientId}-m`): GroupMemberInfo {
  return { memberId, clientId, clientHost: '/10.0.0.7', assignment: [] };
}

/** A group whose members are `at(nowMs)`, a clock that moves only when the check sleeps. */
function check(at: (nowMs: number) => GroupMemberInfo[], overrides: Partial<TaskIdCheck> = {}): { run: Promise<void>; calls: () => number } {
  let now = 0;
  let calls = 0;
  const run = checkTaskIdsFree({
    inspector: { groupMembers: (groupId) => (assert.equal(groupId, 'connect-orders'), calls++, Promise.resolve(at(now))) },
    connector: 'orders',
    groupId: 'connect-orders',
    taskIds: [2, 3],
    idOffset: 2,
    transactionalIdOf: (id) => `icefloe-orders-${id}`,
    waitMs: lingerMs(6_000),
    log: quiet,
    now: () => now,
    sleep: (ms) => ((now += ms), Promise.resolve()),
    ...overrides,
  });
  return { run, calls: () => calls };
}

test('no member with our task ids: the start goes on at once', async () => {
  const c = check(() => [member('orders-0'), member('orders-1'), member('other-2')]);
  await c.run;
  assert.equal(c.calls(), 1);
});

test('a predecessor that did not leave (a killed worker) is waited out until its session times out', async () => {
  const c = check((now) => (now < 6_000 ? [member(taskClientId('orders', 3)), member('orders-1')] : [member('orders-1')]));
  await c.run;
  assert.equal(c.calls(), 7, 'checked once a second until the member was gone');
});

test('a member that stays past a session time-out and a half is another live worker: the start fails, naming the setting and the ids', async () => {
  const c = check(() => [member('orders-1'), member('orders-2', 'm-2'), member('orders-3', 'm-3')]);
  await assert.rejects(c.run, (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.match(e.message, /^icefloe\.tasks\.id-offset=2: task ids 2, 3 of connector orders are in use by another live process: orders-2 \(member m-2 on \/10\.0\.0\.7\), orders-3 \(member m-3 on \/10\.0\.0\.7\) stayed in consumer group connect-orders for 11000 ms/);
    assert.match(e.message, /register the same transactional\.id \(icefloe-orders-2, icefloe-orders-3\)/);
    assert.match(e.message, /this worker's is 2\.\.3/);
    return true;
  });
  assert.equal(lingerMs(6_000), 11_000);
  assert.equal(lingerMs(45_000), 69_500);
});
