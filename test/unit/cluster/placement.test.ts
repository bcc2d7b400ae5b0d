import assert from 'node:assert/strict';
import { test } from 'node:test';
import { place, taskUnit, unitsOf } from '../../../src/runtime/cluster/placement.ts';
import type { PlacedConnector } from '../../../src/runtime/cluster/placement.ts';

const workers = (n: number): string[] => Array.from({ length: n }, (_, i) => `10.0.0.${i + 1}:8083`);
const loads = (m: ReadonlyMap<string, string>): number[] => [...[...m.values()].reduce((acc, w) => acc.set(w, (acc.get(w) ?? 0) + 1), new Map<string, number>()).values()].sort();
const moved = (a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): number => [...a].filter(([u, w]) => b.has(u) && b.get(u) !== w).length;

test('tasks.max is honoured cluster-wide and tasks spread evenly (6 over 3: 2 each)', () => {
  const p = place([{ name: 'orders', tasks: 6, committer: true }], workers(3));
  assert.equal(p.tasks.size, 6);
  assert.deepEqual(loads(p.tasks), [2, 2, 2]);
  for (let n = 0; n < 6; n++) assert.ok(p.tasks.has(taskUnit('orders', n)));
  assert.equal(p.committers.size, 1);
});

test('no worker holds more than one task above another, for many shapes', () => {
  for (let w = 1; w <= 7; w++) {
    for (const counts of [[1], [3, 5], [12], [2, 2, 2, 9]]) {
      const cs: PlacedConnector[] = counts.map((tasks, i) => ({ name: `c${i}`, tasks, committer: true }));
      const p = place(cs, workers(w));
      const l = loads(p.tasks);
      assert.ok(Math.max(...l) - Math.min(...(l.length < w ? [0] : l)) <= 1, `${w} workers, ${counts}: ${l}`);
      const c = loads(p.committers);
      assert.ok(Math.max(...c) - Math.min(...(c.length < Math.min(w, cs.length) ? [0] : c)) <= 1, `committers ${c}`);
    }
  }
});

test('every worker computes the same placement whatever order it lists connectors and workers in', () => {
  const cs: PlacedConnector[] = [{ name: 'a', tasks: 4, committer: true }, { name: 'b', tasks: 3, committer: true }, { name: 'c', tasks: 0, committer: false }];
  const p1 = place(cs, workers(3));
  const p2 = place([...cs].reverse(), [...workers(3)].reverse());
  assert.deepEqual([...p1.tasks].sort(), [...p2.tasks].sort());
  assert.deepEqual([...p1.committers].sort(), [...p2.committers].sort());
  assert.equal(p1.committers.has('c'), false, 'a STOPPED connector has no committer placed');
});

test('a joining worker takes about its share; the others keep most of theirs', () => {
  const cs: PlacedConnector[] = [{ name: 'big', tasks: 60, committer: true }];
  const before = place(cs, workers(3));
  const after = place(cs, workers(4));
  const n = moved(before.tasks, after.tasks);
  const joined = [...after.tasks.values()].filter((w) => w === workers(4)[3]).length;
  assert.equal(joined, 15);
  // 15 must move to the new worker; the load bound may push a few more, never a reshuffle.
  assert.ok(n <= 24, `moved ${n} of 60`);
});

test('a leaving worker\'s tasks go to the others; most other tasks stay', () => {
  const cs: PlacedConnector[] = [{ name: 'big', tasks: 60, committer: true }];
  const before = place(cs, workers(4));
  const gone = workers(4)[2] as string;
  const after = place(cs, workers(4).filter((w) => w !== gone));
  const theirs = [...before.tasks].filter(([, w]) => w === gone).length;
  const n = moved(before.tasks, after.tasks);
  assert.equal(theirs, 15);
  assert.ok(n <= theirs + 9, `moved ${n}, of which ${theirs} had to`);
  assert.deepEqual(loads(after.tasks), [20, 20, 20]);
});

test('unitsOf: a worker\'s task numbers and committer; nothing placed without workers', () => {
  const p = place([{ name: 'x', tasks: 4, committer: true }], workers(2));
  const a = unitsOf(p, 'x', 4, workers(2)[0] as string);
  const b = unitsOf(p, 'x', 4, workers(2)[1] as string);
  assert.deepEqual([...a.taskIds, ...b.taskIds].sort(), [0, 1, 2, 3]);
  assert.equal(a.taskIds.length, 2);
  assert.notEqual(a.committer, b.committer);
  assert.equal(place([{ name: 'x', tasks: 4, committer: true }], []).tasks.size, 0);
});
