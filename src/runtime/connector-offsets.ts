/**
 * The offsets API of a sink connector (`GET/PATCH/DELETE /connectors/{name}/offsets`, KIP-875;
 * docs/operations.md "The offsets API"): the consumer group's committed offsets as Connect reports them, and changing them the way
 * Connect does — with one rule Connect does not have, because every record must land in each table once:
 * the offsets never move back behind what a table holds, nor while announcements still wait for the
 * committer (coordinate/source-holdings.ts). Such a move is refused (400) with the table, the offsets and
 * the way out (move to just past what the table holds, or roll the table back first: `icefloe replay`).
 * A move forward is allowed and skips the records in between (Connect's meaning: they never reach the
 * tables).
 *
 * Connect's behaviour kept: the group is the connector's (`connect-<name>` or consumer.override.group.id);
 * GET works in any state and lists the group's offsets for the connector's topics (a `topics.regex`
 * connector's: the cluster's topics that match); PATCH validates the body with Connect's messages
 * (SinkUtils.parseSinkConnectorOffsets) and refuses a group with members (500, Connect's text); DELETE
 * deletes the group (a group that does not exist is success, as Connect). The herder checks the STOPPED
 * state first (`offsetsRequireStoppedMessage`).
 *
 * Differences, deliberate: `"offset": null` (reset one partition) commits the offset the task would start
 * from — the partition's log start, or its end under auto.offset.reset=latest — because the Kafka client has
 * no DeleteConsumerGroupOffsets; GET then shows that offset where Connect shows none. An offset past the
 * partition's end, a negative one, or a partition that does not exist is refused (400) instead of failing
 * later (Connect: 500 from the admin call, or a task that fails at its start).
 *
 * Success messages are the connector's own (`The offsets for this connector have been altered successfully`)
 * rather than Connect's "framework-managed ... will need to be manually altered" text: the tables were
 * checked and nothing outside the group needs changing.
 *
 * Owns: the REST contract of offsets for a sink. Must not: check the connector's state (the herder does)
 * or change a table.
 */
import { errorMessage, IcefloeError, RequestRefused } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import { GroupNotEmptyError } from '../consume/port.ts';
import type { GroupAdmin, GroupInspector, KafkaAdmin, Watermarks } from '../consume/port.ts';
import type { OffsetReset } from '../consume/offset-range.ts';
import type { Catalog } from '../commit/port.ts';
import { connectorTopics, holdingKey, liveIdentity, pendingAnnouncements, pendingMessage, sourceHoldings } from '../coordinate/source-holdings.ts';
import type { ConnectorOffsets } from './herder-api.ts';

export const EMPTY_ALTER_MESSAGE = 'Partitions / offsets need to be provided for an alter offsets request';
export const ALTERED_MESSAGE = 'The offsets for this connector have been altered successfully';
export const RESET_MESSAGE = 'The offsets for this connector have been reset successfully';

/** The herder's 400 when the connector is not STOPPED (Connect's text, verbatim). */
export function offsetsRequireStoppedMessage(connector: string): string {
  return `Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/${connector}/stop' endpoint`;
}

const ZOMBIE_ADVICE = 'either because its tasks haven\'t stopped completely yet or the connector was resumed before the request to';
const ZOMBIE_TAIL = 'could be successfully completed. If the connector is in a stopped state, this operation can be safely retried. If it doesn\'t eventually succeed, the Connect cluster may need to be restarted to get rid of the zombie sink tasks.';

/** Connect's 500 text (Worker.alterSinkConnectorOffsets) when the group still has members. */
export function alterMembersMessage(connector: string): string {
  return `Failed to alter consumer group offsets for connector ${connector} ${ZOMBIE_ADVICE} alter its offsets ${ZOMBIE_TAIL}`;
}

/** Connect's 500 text (Worker.resetSinkConnectorOffsets) when the group still has members. */
export function resetMembersMessage(connector: string): string {
  return `Failed to reset consumer group offsets for connector ${connector} ${ZOMBIE_ADVICE} reset its offsets ${ZOMBIE_TAIL}`;
}

export type OffsetsAdmin = KafkaAdmin & GroupAdmin & GroupInspector;

export interface OffsetsDeps {
  readonly admin: OffsetsAdmin;
  readonly catalog: Catalog;
  readonly log: Logger;
  /**
   * Where a task starts a partition without a committed offset: the user's auto.offset.reset
   * (consumer.override. over the worker's consumer.), else earliest (Connect's sink default).
   */
  readonly offsetReset?: OffsetReset;
}

/** One partition of a PATCH body: the offset to commit, or null to reset it. */
export interface SinkOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint | null;
}

/** `GET /connectors/{name}/offsets`: the group's committed offsets (next offset to read) for the connector's topics. */
export async function connectorOffsets(admin: KafkaAdmin & GroupAdmin, connector: ConnectorConfig): Promise<ConnectorOffsets> {
  try {
    const offsets = [];
    for (const topic of await connectorTopics(admin, connector)) {
      for (const o of await admin.groupOffsets(connector.groupId, topic)) {
        offsets.push({ partition: { kafka_topic: o.topic, kafka_partition: o.partition }, offset: { kafka_offset: Number(o.offset) } });
      }
    }
    return { offsets };
  } catch (e) {
    throw refusal(e, `Failed to retrieve consumer group offsets for sink connector ${connector.name}`);
  }
}

/** Java's String.valueOf for a JSON value as Jackson hands it over (a string stays as it is). */
function javaText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return 'null';
  return typeof v === 'object' ? JSON.stringify(v) : String(v as number | boolean);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function bad(message: string): RequestRefused {
  return new RequestRefused('bad-request', message);
}

/**
 * A PATCH body as Connect validates it (ConnectorsResource, SinkUtils.parseSinkConnectorOffsets), with its
 * messages: `offsets` non-empty; each `partition` with `kafka_topic` (not null) and `kafka_partition` (an
 * int, or its decimal text); each `offset` null (or absent: reset) or holding `kafka_offset` (a long, or
 * its text). A partition given twice: the last one counts (Connect's map). Throws `RequestRefused`.
 */
export function parseSinkOffsets(body: unknown): SinkOffset[] {
  const list = isObject(body) ? body['offsets'] : undefined;
  if (list === undefined || list === null || (Array.isArray(list) && list.length === 0)) throw bad(EMPTY_ALTER_MESSAGE);
  if (!Array.isArray(list)) throw bad('The offsets of an alter offsets request must be a JSON array of {"partition", "offset"} objects');
  const out = new Map<string, SinkOffset>();
  for (const entry of list as unknown[]) {
    const partitionMap = isObject(entry) ? entry['partition'] : undefined;
    if (partitionMap === undefined || partitionMap === null) throw bad('The partition for a sink connector offset cannot be null or missing');
    if (!isObject(partitionMap) || !('kafka_topic' in partitionMap) || !('kafka_partition' in partitionMap)) {
      throw bad('The partition for a sink connector offset must contain the keys \'kafka_topic\' and \'kafka_partition\'');
    }
    if (partitionMap['kafka_topic'] === null) throw bad('Kafka topic names must be valid strings and may not be null');
    if (partitionMap['kafka_partition'] === null) throw bad('Kafka partitions must be valid numbers and may not be null');
    const topic = javaText(partitionMap['kafka_topic']);
    const partitionText = javaText(partitionMap['kafka_partition']);
    const partition = /^[+-]?\d+$/.test(partitionText) ? Number(partitionText) : Number.NaN;
    if (!Number.isInteger(partition) || partition < -(2 ** 31) || partition > 2 ** 31 - 1) {
      throw bad(`Failed to parse the following Kafka partition value in the provided offsets: '${partitionText}'. Partition values for sink connectors need to be integers.`);
    }
    const offsetMap = isObject(entry) ? entry['offset'] : undefined;
    let offset: bigint | null = null;
    if (offsetMap !== undefined && offsetMap !== null) {
      if (!isObject(offsetMap) || !('kafka_offset' in offsetMap)) throw bad('The offset for a sink connector should either be null or contain the key \'kafka_offset\'');
      const offsetText = javaText(offsetMap['kafka_offset']);
      const parsed = /^[+-]?\d+$/.test(offsetText) ? BigInt(offsetText) : undefined;
      if (parsed === undefined || parsed < -(2n ** 63n) || parsed > 2n ** 63n - 1n) {
        throw bad(`Failed to parse the following Kafka offset value in the provided offsets: '${offsetText}'. Offset values for sink connectors need to be integers.`);
      }
      offset = parsed;
    }
    out.set(`${topic}\u0000${partition}`, { topic, partition, offset });
  }
  return [...out.values()];
}

/** Where a task starts a partition that has no committed offset. */
function startOf(w: Watermarks, reset: OffsetReset | undefined): bigint {
  return reset === 'latest' ? w.high : w.low;
}

interface Target {
  readonly topic: string;
  readonly partition: number;
  /** The offset the task will read next. */
  readonly offset: bigint;
}

/** The partition's watermarks; a topic or partition that does not exist is the request's fault (400). */
async function watermarksOf(admin: OffsetsAdmin, topics: ReadonlySet<string>): Promise<Map<string, Watermarks>> {
  const existing = new Set(await admin.listTopics());
  const out = new Map<string, Watermarks>();
  for (const topic of topics) {
    if (!existing.has(topic)) throw bad(`Topic ${topic} does not exist in the Kafka cluster: its offsets cannot be altered`);
    for (const w of await admin.watermarks(topic)) out.set(holdingKey(topic, w.partition), w);
  }
  return out;
}

/**
 * The rule of the module header: refuses (400) a target at or below what a table holds, and a target below
 * the group's offset while announcements wait for the committer.
 */
export async function checkTablesConsistent(deps: OffsetsDeps, connector: ConnectorConfig, targets: readonly Target[], committed: ReadonlyMap<string, bigint>): Promise<void> {
  const live = await liveIdentity(deps.admin, connector);
  const holdings = await sourceHoldings(deps, connector, live);
  for (const t of targets) {
    const held = holdings.get(holdingKey(t.topic, t.partition));
    if (held !== undefined && t.offset <= held.last) {
      throw bad(
        `Moving ${t.topic}[${t.partition}] to offset ${t.offset} would deliver records ${t.offset}..${held.last} again, and table ${held.table} already holds them ` +
          `(through offset ${held.last}): Icefloe writes each record to a table once, so the offsets cannot move back behind what a table holds. ` +
          `Use offset ${held.last + 1n} or later, or roll the table back to an earlier snapshot first (icefloe replay; docs/operations.md "The offsets API")`,
      );
    }
  }
  const movesBack = targets.filter((t) => t.offset < (committed.get(holdingKey(t.topic, t.partition)) ?? t.offset + 1n));
  if (movesBack.length === 0) return;
  const pending = await pendingAnnouncements(deps, connector, live);
  if (pending.length > 0) throw bad(pendingMessage(connector.name, pending));
}

async function committedOffsets(admin: OffsetsAdmin, groupId: string, topics: Iterable<string>): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  for (const topic of topics) for (const o of await admin.groupOffsets(groupId, topic)) out.set(holdingKey(o.topic, o.partition), o.offset);
  return out;
}

/** `PATCH /connectors/{name}/offsets` (connector STOPPED): validates, checks the tables, commits. Resolves with the message. */
export async function alterConnectorOffsets(deps: OffsetsDeps, connector: ConnectorConfig, body: unknown): Promise<string> {
  const requested = parseSinkOffsets(body);
  const { admin } = deps;
  try {
    if ((await admin.groupMembers(connector.groupId)).length > 0) throw new RequestRefused('failed', alterMembersMessage(connector.name));
    const topics = new Set(requested.map((r) => r.topic));
    const marks = await watermarksOf(admin, topics);
    const targets: Target[] = requested.map((r) => {
      const w = marks.get(holdingKey(r.topic, r.partition));
      if (w === undefined) throw bad(`Partition ${r.partition} of topic ${r.topic} does not exist: its offset cannot be altered`);
      if (r.offset !== null && r.offset < 0n) throw bad(`The offset ${r.offset} for ${r.topic}[${r.partition}] is negative: Kafka offsets start at 0`);
      if (r.offset !== null && r.offset > w.high) {
        throw bad(`The offset ${r.offset} for ${r.topic}[${r.partition}] is past the partition's end (${w.high}): the task could not start there`);
      }
      return { topic: r.topic, partition: r.partition, offset: r.offset ?? startOf(w, deps.offsetReset) };
    });
    await checkTablesConsistent(deps, connector, targets, await committedOffsets(admin, connector.groupId, topics));
    deps.log.info('altering the connector\'s consumer group offsets', { connector: connector.name, group: connector.groupId, offsets: targets.map((t) => `${t.topic}[${t.partition}]=${t.offset}`) });
    try {
      await admin.commitGroupOffsets(connector.groupId, targets.map((t) => ({ ...t, metadata: null })));
    } catch (e) {
      // A member joined meanwhile (the coordinator refuses a commit from outside the generation).
      if ((await admin.groupMembers(connector.groupId).catch(() => [])).length > 0) throw new RequestRefused('failed', alterMembersMessage(connector.name), { cause: e });
      throw e;
    }
    return ALTERED_MESSAGE;
  } catch (e) {
    throw refusal(e, `Failed to alter consumer group offsets for connector ${connector.name}`);
  }
}

/**
 * `DELETE /connectors/{name}/offsets` (connector STOPPED): checks the tables as if every partition of the
 * connector's topics started where a task without offsets starts, then deletes the group.
 */
export async function resetConnectorOffsets(deps: OffsetsDeps, connector: ConnectorConfig): Promise<string> {
  const { admin } = deps;
  try {
    if ((await admin.groupMembers(connector.groupId)).length > 0) throw new RequestRefused('failed', resetMembersMessage(connector.name));
    const topics = await connectorTopics(admin, connector);
    const marks = await watermarksOf(admin, new Set(topics));
    const targets = [...marks.values()].map((w) => ({ topic: w.topic, partition: w.partition, offset: startOf(w, deps.offsetReset) }));
    await checkTablesConsistent(deps, connector, targets, await committedOffsets(admin, connector.groupId, topics));
    deps.log.info('resetting the connector\'s offsets: deleting its consumer group', { connector: connector.name, group: connector.groupId });
    try {
      await admin.deleteGroup(connector.groupId);
    } catch (e) {
      if (e instanceof GroupNotEmptyError) throw new RequestRefused('failed', resetMembersMessage(connector.name), { cause: e });
      throw e;
    }
    return RESET_MESSAGE;
  } catch (e) {
    throw refusal(e, `Failed to reset consumer group offsets for sink connector ${connector.name}`);
  }
}

/** A refusal as it is, anything else a 500 with Connect's wrapper text and the cause. */
function refusal(e: unknown, what: string): RequestRefused {
  if (e instanceof RequestRefused) return e;
  return new RequestRefused('failed', `${what}: ${errorMessage(e)}`, { cause: e, ...(e instanceof IcefloeError ? { context: e.context } : {}) });
}
