/**
 * A truncated control log stops only the tables it affects (issue 10, review O8), through the committer on
 * memory fakes: one table stops (a missing file) and holds the connector position C back; retention then
 * deletes the log below C. The stopped table lost an announcement and stops with control-records-lost; the
 * other table, idle behind C, lost nothing and goes on (C's R says where it is), live and after a restart.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { announce, CONTROL, expected, Rig, sortCoordinates } from '../runtime/rig.ts';

const ORDERS = 'db.orders';
const OTHER = 'db.other';

test('a truncated control log stops the table that lost an announcement; the table idle behind the held-back C goes on, live and after a restart', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': `${ORDERS},${OTHER}` } }).init();
  t.after(() => rig.close());
  const first = await announce(rig, [10]);
  const live = rig.committer();
  await live.round();
  const before = new Set(await rig.storedDataFiles());
  const second = await announce(rig, [10]);
  // The orders file of the second cycle is lost: orders stops there and holds C back; other commits on.
  for (const path of (await rig.storedDataFiles()).filter((p) => !before.has(p) && p.includes('/orders/'))) await rig.store.delete(path);
  await live.round();
  const status = (c: typeof live, table: string): ReturnType<typeof live.tableStatus>[number] | undefined => c.tableStatus().find((s) => s.table === table);
  assert.equal(status(live, ORDERS)?.reason?.code, 'file-missing');
  assert.equal(status(live, OTHER)?.state, 'RUNNING');

  // Retention deletes the whole control log.
  const [marks] = await rig.kafka.createAdmin().watermarks(CONTROL);
  assert.ok(marks !== undefined);
  rig.kafka.deleteRecordsBefore(CONTROL, 0, marks.high);
  await live.round();
  assert.equal(status(live, ORDERS)?.reason?.code, 'control-records-lost');
  assert.equal(status(live, OTHER)?.state, 'RUNNING', status(live, OTHER)?.reason?.message);

  const restarted = rig.committer();
  await restarted.round();
  assert.equal(status(restarted, ORDERS)?.reason?.code, 'control-records-lost');
  assert.equal(status(restarted, OTHER)?.state, 'RUNNING', status(restarted, OTHER)?.reason?.message);
  const third = await announce(rig, [10]);
  await restarted.round();
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(OTHER)), expected({ 0: [...(first[0] ?? []), ...(second[0] ?? []), ...(third[0] ?? [])] }));
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates(ORDERS)), expected(first), 'nothing after the lost announcement is applied to orders');
});
