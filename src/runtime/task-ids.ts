/**
 * The worker's check, before it starts a connector's tasks, that no other live process runs its task ids
 * (review O4). Two standalone workers of one connector whose `icefloe.tasks.id-offset` ranges overlap
 * register the same transactional ids (`<prefix><connector>-<id>`), and each registration fences the
 * other's task: left alone, the one started first loses its tasks for good.
 *
 * A task's consumer joins the connector's group with client.id `<connector>-<id>` (`taskClientId`). A
 * member with that client id at our start is a predecessor that did not leave (a worker killed before its
 * tasks left the group: the coordinator removes it once its session times out) or a live process. So the
 * check waits for such members to go, and fails only when one outlives the wait — a session time-out with
 * slack — naming the setting, the ids and the members.
 *
 * Owns: the rule and its message. Must not: join, fence or change the group (it only describes it).
 */
import { ConfigError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { GroupInspector, GroupMemberInfo } from '../consume/port.ts';

/** The client.id of task `taskId`'s consumer: how the group shows who runs which task. */
export function taskClientId(connector: string, taskId: number): string {
  return `${connector}-${taskId}`;
}

/** librdkafka's default session.timeout.ms (a member that stops heartbeating is removed after it). */
export const DEFAULT_SESSION_TIMEOUT_MS = 45_000;

/** How long a dead member may linger at most: its session time-out, half again, and 2 s for the coordinator. */
export function lingerMs(sessionTimeoutMs: number): number {
  return Math.ceil(sessionTimeoutMs * 1.5) + 2_000;
}

export interface TaskIdCheck {
  readonly inspector: GroupInspector;
  readonly connector: string;
  readonly groupId: string;
  /** The ids this worker is about to run, and the setting that chose them (for the message). */
  readonly taskIds: readonly number[];
  readonly idOffset: number;
  readonly transactionalIdOf: (taskId: number) => string;
  /** How long a dead predecessor may stay a member (`lingerMs` of the session time-out). */
  readonly waitMs: number;
  readonly log: Logger;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

const POLL_MS = 1_000;

/** Resolves once no member of the group uses one of the task ids; throws a ConfigError when one stays. */
export async function checkTaskIdsFree(c: TaskIdCheck): Promise<void> {
  const now = c.now ?? Date.now;
  const sleep = c.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const ours = new Map(c.taskIds.map((id) => [taskClientId(c.connector, id), id]));
  const deadline = now() + c.waitMs;
  let waiting = false;
  for (;;) {
    const taken = (await c.inspector.groupMembers(c.groupId)).filter((m) => ours.has(m.clientId));
    if (taken.length === 0) {
      if (waiting) c.log.info('the earlier members with this worker\'s task ids left the group', { group: c.groupId });
      return;
    }
    if (now() >= deadline) throw new ConfigError(overlapMessage(c, taken, ours));
    if (!waiting) {
      waiting = true;
      c.log.warn('members with this worker\'s task ids are in the connector\'s group: waiting for them to leave (a predecessor that did not leave goes once its session times out; a live worker does not)', {
        group: c.groupId,
        members: taken.map(describe),
        waitMs: c.waitMs,
      });
    }
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - now())));
  }
}

function describe(m: GroupMemberInfo): string {
  return `${m.clientId} (member ${m.memberId} on ${m.clientHost})`;
}

function overlapMessage(c: TaskIdCheck, taken: readonly GroupMemberInfo[], ours: ReadonlyMap<string, number>): string {
  const ids = [...new Set(taken.map((m) => ours.get(m.clientId) as number))].sort((a, b) => a - b);
  const first = c.taskIds.length === 0 ? c.idOffset : Math.min(...c.taskIds);
  const last = c.taskIds.length === 0 ? c.idOffset : Math.max(...c.taskIds);
  return (
    `icefloe.tasks.id-offset=${c.idOffset}: task id${ids.length === 1 ? '' : 's'} ${ids.join(', ')} of connector ${c.connector} ` +
    `${ids.length === 1 ? 'is' : 'are'} in use by another live process: ${taken.map(describe).join(', ')} stayed in consumer group ${c.groupId} ` +
    `for ${c.waitMs} ms, past a session time-out. Two workers with overlapping task ids register the same transactional.id ` +
    `(${ids.map(c.transactionalIdOf).join(', ')}) and fence each other's tasks. Give each worker of this connector its own ` +
    `icefloe.tasks.id-offset range (this worker's is ${first}..${last}), or stop the other worker first.`
  );
}
