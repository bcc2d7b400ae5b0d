/**
 * What a connector's tables hold of each source partition, and whether announcements still wait on the
 * control topic: the facts the offsets API (runtime/connector-offsets.ts) and the replay runbook
 * (replay.ts) check before they move a consumer group's offsets, so that no table receives a record twice
 * (docs/operations.md, "The offsets API").
 *
 * A table holds, of a source partition, every record up to the highest offset the connector applied to it
 * (`icefloe.source-applied.<connector>`, source-applied.ts). Offsets moved at or below that offset make the
 * tasks deliver records the table has again: the committer's guard then drops an announcement that lies
 * wholly inside what is held, and stops the table on one that straddles it (source-overlap). Neither writes
 * twice, but a straddling cycle is the usual case, so the offsets API refuses such a move instead.
 *
 * Which snapshots count: every snapshot of the connector the table lists, in or out of the branch's
 * ancestry (a table rolled back without a replay is recovered with `icefloe positions --adopt`, which
 * claims them all, or `--reapply`, which applies them again) — unless the branch's ancestry carries a
 * replay mark (replay.ts): the replay deliberately gave up what was rolled back, so only the ancestry counts.
 *
 * Pending: the committer applies announcements after the tasks committed the offsets they cover, so a
 * group's offsets can be ahead of every table. Nothing waits when the connector position C (position-store.ts)
 * reached the control topic's last stable offset on every partition. A control topic shared with another
 * running connector keeps growing past C, which reads as pending (a refusal, never a wrong answer).
 *
 * Owns: those two facts. Must not: change a table or an offset.
 */
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { KafkaAdmin, GroupAdmin } from '../consume/port.ts';
import { formatIdentifier, NoSuchTableError, parseIdentifier } from '../commit/port.ts';
import type { Catalog, Namespace } from '../commit/port.ts';
import { ancestors, commitBaseId } from '../iceberg/metadata.ts';
import type { Snapshot, TableMetadata } from '../iceberg/metadata.ts';
import { COMMIT_ID_KEY } from '../commit/commit-retry.ts';
import { commitIdPrefix, controlOffsetsKey, readControlPositions } from './control-positions.ts';
import type { ControlIdentity } from './control-positions.ts';
import { controlGroupId } from './connector-position.ts';
import { readConnectorPositions } from './position-store.ts';
import { decodeSourceApplied, sourceAppliedKey, sourceTopicIdsKey } from './source-applied.ts';
import type { AppliedEntry, SourceApplied } from './source-applied.ts';
import { sourceKey } from './watermark.ts';

export const REPLAYED_PREFIX = 'icefloe.replayed.';
/** Summary key of the snapshot a replay commits (replay.ts): JSON {"snapshot-id", "replaced", "offsets"}. */
export const replayedKey = (connector: string): string => REPLAYED_PREFIX + connector;

export interface HoldingsDeps {
  readonly admin: KafkaAdmin & GroupAdmin;
  readonly catalog: Catalog;
  readonly log: Logger;
}

/** Per source partition (`sourceKey`), the highest offset some table holds, and that table. */
export type Holdings = Map<string, { readonly topic: string; readonly partition: number; readonly last: bigint; readonly table: string }>;

export interface PendingPartition {
  readonly partition: number;
  /** C on that partition (null: the connector's committer never committed one). */
  readonly applied: bigint | null;
  readonly lastStable: bigint;
}

/** Which Kafka log the tables' positions must refer to; `controlTopicId` '' when the control topic does not exist. */
export async function liveIdentity(admin: KafkaAdmin & GroupAdmin, connector: ConnectorConfig): Promise<ControlIdentity> {
  const exists = (await admin.listTopics()).includes(connector.control.topic);
  return { clusterId: await admin.clusterId(), controlTopicId: exists ? await admin.topicId(connector.control.topic) : '' };
}

function committedBy(s: Snapshot, connector: string): boolean {
  const id = s.summary[COMMIT_ID_KEY];
  return (id !== undefined && id.startsWith(commitIdPrefix(connector))) || s.summary[controlOffsetsKey(connector)] !== undefined || s.summary[sourceAppliedKey(connector)] !== undefined;
}

/** The connector's topics: its list, or the cluster's topics its regex matches (internal ones left out, as Kafka's subscription does). */
export async function connectorTopics(admin: KafkaAdmin & GroupAdmin, connector: ConnectorConfig): Promise<string[]> {
  const existing = await admin.listTopics();
  const sel = connector.topics;
  const topics = sel.kind === 'list' ? sel.topics.filter((t) => existing.includes(t)) : existing.filter((t) => !t.startsWith('__') && sel.regex.test(t));
  return [...new Set(topics)].sort();
}

/** What one table holds of each source partition (module header); empty for a table the connector never wrote. */
export function tableHolds(md: TableMetadata, connector: string, live: ControlIdentity, branch: string): SourceApplied {
  const read = readControlPositions(md, connector, live, branch);
  if (read.kind === 'fresh' || read.kind === 'unseeded') return new Map();
  const ancestry = [...ancestors(md, commitBaseId(md, branch))];
  const replayed = ancestry.some((s) => s.summary[replayedKey(connector)] !== undefined);
  return highestApplied(replayed ? ancestry : md.snapshots, connector);
}

/** The highest source offsets applied over `snapshots` (a malformed value adds nothing). */
export function highestApplied(snapshots: readonly Snapshot[], connector: string): Map<string, AppliedEntry> {
  const out = new Map<string, AppliedEntry>();
  for (const s of snapshots) {
    const text = s.summary[sourceAppliedKey(connector)];
    if (text === undefined) continue;
    try {
      for (const [k, v] of decodeSourceApplied(text, s.summary[sourceTopicIdsKey(connector)])) if (v.last > (out.get(k)?.last ?? -1n)) out.set(k, v);
    } catch {
      // a malformed old snapshot adds nothing
    }
  }
  return out;
}

/**
 * The tables the connector routes to: the configured ones; with dynamic routing, every table of the
 * catalog one of whose snapshots this connector committed (a table it never wrote holds nothing of it).
 */
export async function connectorTables(catalog: Catalog, connector: ConnectorConfig): Promise<string[]> {
  const routing = connector.tables.routing;
  const deadLetters = connector.errors.deadLetterTable === null ? [] : [connector.errors.deadLetterTable];
  if (routing.kind === 'all') return [...new Set([...routing.tables, ...deadLetters])];
  if (routing.kind === 'regex') return [...new Set([...routing.routes.map((r) => r.table), ...deadLetters])];
  const out: string[] = [];
  const walk = async (parent?: Namespace): Promise<void> => {
    for (const ns of await catalog.listNamespaces(parent)) {
      for (const id of await catalog.listTables(ns)) {
        const t = await catalog.loadTable(id).catch((e: unknown) => (e instanceof NoSuchTableError ? undefined : Promise.reject(e)));
        if (t !== undefined && t.metadata.snapshots.some((s) => committedBy(s, connector.name))) out.push(formatIdentifier(id));
      }
      await walk(ns);
    }
  };
  await walk();
  return out;
}

/**
 * What the connector's tables hold, per source partition the highest offset over all of them. `override`
 * replaces what a table holds (the replay computes a rolled-back table's own).
 */
export async function sourceHoldings(deps: HoldingsDeps, connector: ConnectorConfig, live: ControlIdentity, override: ReadonlyMap<string, SourceApplied> = new Map()): Promise<Holdings> {
  const out: Holdings = new Map();
  for (const name of await connectorTables(deps.catalog, connector)) {
    let holds = override.get(name);
    if (holds === undefined) {
      const table = await deps.catalog.loadTable(parseIdentifier(name)).catch((e: unknown) => (e instanceof NoSuchTableError ? undefined : Promise.reject(e)));
      if (table === undefined) continue; // not created yet: holds nothing
      holds = tableHolds(table.metadata, connector.name, live, connector.tables.settings(name).commitBranch);
    }
    for (const [k, v] of holds) if (v.last > (out.get(k)?.last ?? -1n)) out.set(k, { ...v, table: name });
  }
  return out;
}

/** Control partitions where announcements may still wait for the committer (module header); [] when none. */
export async function pendingAnnouncements(deps: HoldingsDeps, connector: ConnectorConfig, live: ControlIdentity): Promise<PendingPartition[]> {
  if (live.controlTopicId === '') return [];
  const control = connector.control;
  const c = await readConnectorPositions({ admin: deps.admin, groupId: controlGroupId(control.groupIdPrefix, connector.name), topic: control.topic, controlTopicId: live.controlTopicId, log: deps.log });
  const out: PendingPartition[] = [];
  for (const m of await deps.admin.watermarks(control.topic)) {
    const applied = c?.get(m.partition)?.offset ?? null;
    if (m.lastStable > (applied ?? m.low)) out.push({ partition: m.partition, applied, lastStable: m.lastStable });
  }
  return out;
}

/** Why offsets cannot move back while announcements wait, in one sentence an operator can act on. */
export function pendingMessage(connector: string, pending: readonly PendingPartition[]): string {
  const where = pending.map((p) => `control partition ${p.partition}: applied through ${p.applied ?? 'nothing'}, log end ${p.lastStable}`).join('; ');
  return `the committer of connector ${connector} has not applied every announcement on its control topic yet (${where}): ` +
    'the tables may still receive records below the group\'s offsets, so the offsets cannot move back now. Resume the connector until its tables caught up (or stopped), stop it, then try again';
}

/** The key of a source partition in `Holdings`. */
export function holdingKey(topic: string, partition: number): string {
  return sourceKey(topic, partition);
}

