/**
 * Where each unit of work runs in a cluster (docs/design/cluster.md, "Placement"): every worker computes
 * the same answer from the same two inputs — the live workers and the connectors' configs — so no leader
 * has to decide and publish it.
 *
 * Units are tasks (`<connector>-<n>`) and one committer per connector, each kind spread on its own.
 * Rendezvous hashing under a load bound: units in a fixed order, each goes to the worker that ranks
 * highest for it (sha256 of unit and worker) among those with room left — floor(units / workers) each,
 * and one more for the first `units mod workers` that fill up. No worker holds more than one unit above another; a unit moves only when its favourite
 * worker came or went or a bound pushed it, so a joining worker takes about its share and most other
 * units stay where they are.
 *
 * Owns: the rule. Must not: do I/O or read a clock.
 */
import { createHash } from 'node:crypto';

/** A connector as placement sees it: how many tasks it has now (0 while STOPPED or not yet started). */
export interface PlacedConnector {
  readonly name: string;
  readonly tasks: number;
  /** Whether it has a committer to place (false while STOPPED). */
  readonly committer: boolean;
}

export interface Placement {
  /** `<connector>-<n>` → worker id. */
  readonly tasks: ReadonlyMap<string, string>;
  /** connector → worker id. */
  readonly committers: ReadonlyMap<string, string>;
}

export function taskUnit(connector: string, task: number): string {
  return `${connector}-${task}`;
}

/** The placement of every unit over `workers` (ids; none: nothing is placed). */
export function place(connectors: readonly PlacedConnector[], workers: readonly string[]): Placement {
  const sorted = [...connectors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const tasks = sorted.flatMap((c) => Array.from({ length: c.tasks }, (_, n) => taskUnit(c.name, n)));
  const committers = sorted.filter((c) => c.committer).map((c) => c.name);
  return { tasks: spread(tasks, workers, 'task'), committers: spread(committers, workers, 'committer') };
}

/** Each unit to its highest-ranked worker that is under the bound (`kind` keeps the two kinds' rankings apart). */
function spread(units: readonly string[], workers: readonly string[], kind: string): Map<string, string> {
  const out = new Map<string, string>();
  const ids = [...new Set(workers)].sort();
  if (ids.length === 0) return out;
  // floor(units / workers) each, and `extra` of them one more: exactly enough room, and no worker ends more
  // than one unit above another.
  const floor = Math.floor(units.length / ids.length);
  let extra = units.length % ids.length;
  const load = new Map(ids.map((w) => [w, 0]));
  const fits = (w: string): boolean => (load.get(w) ?? 0) < floor || ((load.get(w) ?? 0) === floor && extra > 0);
  for (const unit of units) {
    const ranked = ids.map((w) => ({ w, score: score(`${kind}:${unit}`, w) })).sort((a, b) => (a.score < b.score ? 1 : a.score > b.score ? -1 : a.w < b.w ? -1 : 1));
    const chosen = ranked.find((r) => fits(r.w));
    if (chosen === undefined) continue; // cannot happen: the room is exactly the number of units
    if ((load.get(chosen.w) ?? 0) === floor) extra--;
    out.set(unit, chosen.w);
    load.set(chosen.w, (load.get(chosen.w) ?? 0) + 1);
  }
  return out;
}

/** The first 8 bytes of sha256(unit NUL worker), as an unsigned 64-bit number. */
function score(unit: string, worker: string): bigint {
  return createHash('sha256').update(unit).update('\0').update(worker).digest().readBigUInt64BE(0);
}

/** The task numbers and committer of `connector` that `worker` runs under `placement`. */
export function unitsOf(placement: Placement, connector: string, tasks: number, worker: string): { readonly taskIds: readonly number[]; readonly committer: boolean } {
  const taskIds: number[] = [];
  for (let n = 0; n < tasks; n++) if (placement.tasks.get(taskUnit(connector, n)) === worker) taskIds.push(n);
  return { taskIds, committer: placement.committers.get(connector) === worker };
}
