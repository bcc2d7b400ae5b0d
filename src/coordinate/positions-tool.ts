/**
 * `icefloe positions`: what an operator runs when a table stopped with `positions-rolled-back` (or to
 * look at a table's positions). Three actions on one table of one connector:
 *   show       the table's stored positions T, the connector position C, and any recovery mark;
 *   --reapply  the announcements the table lost are applied again, from its current (rolled-back)
 *              positions: sets the table property icefloe.reapply.<connector> (connector-position.ts),
 *              which makes the committer plan the table from T instead of raising it to C, until T reaches
 *              what it had applied (C as it was when marked, raised by R and by the positions of the
 *              snapshots the table still lists: the ones it was rolled back from; the committer then removes
 *              the mark); refused when that is not above T anywhere (nothing could be re-applied). Nothing is written twice:
 *              the table no longer holds what is re-applied, and the snapshot ids and commit ids of the
 *              re-application are the committer's usual ones. Announcements already deleted by retention
 *              cannot come back: the table then stops as control-records-lost.
 *   --adopt    the table stays as it is: commits one snapshot without files whose positions are at least
 *              everything applied before (T, C, and the positions of every snapshot of this connector the
 *              table still lists), with summary key icefloe.adopted.<connector>. Rolled-back announcements
 *              are not applied again. On a table without positions (recreated, or written by others first)
 *              this seeds them at C; so it does on a table whose positions belong to another control topic
 *              or cluster (positions-identity-mismatch): that stopped table holds C at the start of the live
 *              log (the committer never carries old-log offsets to it), so nothing announced there is skipped. With `holdsGroupOffsets` (--holds-group-offsets) the snapshot also
 *              records that the table holds every source record below the connector's consumer group's
 *              committed offsets (a table the Apache Iceberg sink or another Connect sink wrote under the
 *              same group): moving the offsets back into them is then refused (docs/operations.md) and a
 *              re-delivery of them is never applied twice.
 * Both are single catalog commits (a property update asserting nothing else changed, an append asserting
 * the snapshot it read), so they happen once or not at all. A running worker takes an --adopt and a
 * --reapply at its next round (a --reapply below what its buffer holds makes it read the control topic
 * again); nothing needs a restart.
 *
 * A connector that commits the table to a branch (iceberg.table.<t>.commit-branch, or the default) has its
 * positions there: every action reads and writes that branch, never main.
 *
 * Owns: the three actions. Must not: lower C or delete anything from a table.
 */
import { createHash } from 'node:crypto';
import { ConfigError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { GroupAdmin, KafkaAdmin } from '../consume/port.ts';
import { parseIdentifier } from '../commit/port.ts';
import type { Catalog, LoadedTable } from '../commit/port.ts';
import { appendFiles, updateProperties } from '../commit/table-ops.ts';
import type { ObjectStore } from '../upload/port.ts';
import { commitIdPrefix, controlOffsetsKey, controlTopicIdKey, decodePositions, encodePositions, kafkaClusterIdKey, positionsSummary, readControlPositions } from './control-positions.ts';
import type { ControlIdentity, PositionsRead } from './control-positions.ts';
import { adoptedKey, appliedThroughFor, controlGroupId, encodeReapplyMark, reapplyKey } from './connector-position.ts';
import { readConnectorPositions } from './position-store.ts';
import { encodeSourceApplied, encodeSourceTopicIds, sourceAppliedKey, sourceTopicIdsKey, vouchedFor } from './source-applied.ts';
import type { SourceLogs } from './source-applied.ts';
import { connectorTopics, highestApplied } from './source-holdings.ts';
import { sourceKey } from './watermark.ts';

export type PositionsAction = 'show' | 'reapply' | 'adopt';

export interface PositionsToolDeps {
  readonly connector: ConnectorConfig;
  readonly admin: KafkaAdmin & GroupAdmin;
  readonly catalog: Catalog;
  readonly store: ObjectStore;
  readonly log: Logger;
}

export interface PositionsReport {
  readonly table: string;
  /** The branch whose positions are shown and changed (the connector's commit branch for the table). */
  readonly branch: string;
  readonly action: PositionsAction;
  readonly stored: Record<string, string> | string;
  readonly connectorPosition: Record<string, string> | null;
  readonly reapplyMark: string | null;
  /** What the action did, in a sentence. */
  readonly result: string;
}

export interface PositionsOptions {
  /** --adopt: the table holds every source record below the group's committed offsets (module header). */
  readonly holdsGroupOffsets?: boolean;
}

export async function runPositionsTool(deps: PositionsToolDeps, tableName: string, action: PositionsAction, options: PositionsOptions = {}): Promise<PositionsReport> {
  const { connector, admin } = deps;
  const live: ControlIdentity = { clusterId: await admin.clusterId(), controlTopicId: await admin.topicId(connector.control.topic) };
  const c = await readConnectorPositions({
    admin,
    groupId: controlGroupId(connector.control.groupIdPrefix, connector.name),
    topic: connector.control.topic,
    controlTopicId: live.controlTopicId,
    log: deps.log,
  });
  const id = parseIdentifier(tableName);
  // The branch the connector commits the table to: its positions live there (and an --adopt commits there).
  const branch = connector.tables.settings(tableName).commitBranch;
  const table = await deps.catalog.loadTable(id);
  const read = readControlPositions(table.metadata, connector.name, live, branch);
  const report = (result: string, t: LoadedTable = table): PositionsReport => ({
    table: tableName,
    branch,
    action,
    stored: describeRead(readControlPositions(t.metadata, connector.name, live, branch)),
    connectorPosition: c === undefined ? null : Object.fromEntries([...c].map(([p, e]) => [String(p), `${e.offset} (${e.kind})${e.rest === undefined ? '' : `, R ${e.rest.offset} (except ${e.rest.except.length} table(s))`}`])),
    reapplyMark: t.metadata.properties[reapplyKey(connector.name)] ?? null,
    result,
  });
  if (action === 'show') return report(read.kind === 'positions' ? 'unchanged' : `unchanged (positions: ${read.kind})`);
  if (action === 'reapply') {
    if (read.kind !== 'positions') throw new ConfigError(`${tableName} has no positions of connector ${connector.name} to re-apply from (${read.kind}); use --adopt`);
    if (c === undefined) throw new ConfigError(`connector ${connector.name} has no connector position yet (its committer never ran): nothing to re-apply`);
    // What the table had applied before it was rolled back: C, raised by R where the connector says this
    // table applied further (connector-position.ts), and raised by every snapshot of this connector the
    // table still lists. C alone is not enough: another table stopped or failing holds C back, and a
    // rolled-back table is excepted from R, so C can lie at or below the table's own positions; a mark
    // through C would then hold nothing, and the live committer would keep the table stopped (review N6).
    const through = new Map(appliedThroughFor(c, id));
    for (const [p, o] of listedPositions(table, connector.name, live)) if (o > (through.get(p) ?? -1n)) through.set(p, o);
    if (![...through].some(([p, o]) => (read.positions.get(p) ?? -1n) < o)) {
      throw new ConfigError(
        `${tableName}: nothing to re-apply that can be told from the table and the connector position: its positions (${encodePositions(read.positions)}) are at or past C (${encodePositions(through)}), and no snapshot it lists carries positions beyond them (expired?). ` +
          'Restart the connector: a restarted committer reads the control topic from the table\'s own positions and applies what follows them; or --adopt to keep the table as it is',
      );
    }
    const mark = encodeReapplyMark({ snapshotId: read.snapshotId, through });
    const after = await updateProperties({ catalog: deps.catalog, store: deps.store }, id, { [reapplyKey(connector.name)]: mark });
    return report(`marked: the committer applies the table's announcements again from its positions (snapshot ${read.snapshotId}) up to ${encodePositions(through)}`, after);
  }
  if (options.holdsGroupOffsets === true && action !== 'adopt') throw new ConfigError('--holds-group-offsets goes with --adopt');
  // Kept as a guard, but only what the live source logs vouch for: offsets of a deleted and recreated topic
  // (or of a log that no longer reaches them) name other records now (source-applied.ts, N1).
  const logs = await liveSourceLogs(admin, connector);
  const holds = vouchedFor(highestApplied(table.metadata.snapshots, connector.name), logs);
  if (options.holdsGroupOffsets === true) {
    for (const topic of await connectorTopics(admin, connector)) {
      const topicId = logs.topicIds.get(topic);
      for (const o of await admin.groupOffsets(connector.groupId, topic)) {
        const k = sourceKey(topic, o.partition);
        if (o.offset > 0n && o.offset - 1n > (holds.get(k)?.last ?? -1n)) holds.set(k, { topic, partition: o.partition, last: o.offset - 1n, ...(topicId === undefined ? {} : { topicId }) });
      }
    }
  }
  const adopted = adoptPositions(table, read, c === undefined ? undefined : appliedThroughFor(c, id), connector.name, live);
  const commitId = `${commitIdPrefix(connector.name)}adopt-${createHash('sha256').update(`${table.metadata.tableUuid}:${String(read.kind === 'positions' ? read.snapshotId : read.kind)}:${encodePositions(adopted)}`).digest('hex').slice(0, 24)}`;
  const outcome = await appendFiles({ catalog: deps.catalog, store: deps.store }, id, {
    commitId,
    files: [],
    summary: { ...positionsSummary(connector.name, adopted, live), [adoptedKey(connector.name)]: encodePositions(adopted), [sourceAppliedKey(connector.name)]: encodeSourceApplied(holds), [sourceTopicIdsKey(connector.name)]: encodeSourceTopicIds(holds) },
    branch,
    // Asserts the positions it adopted from: another commit in between means the operator decides again.
    isCurrent: (t) => sameRead(readControlPositions(t.metadata, connector.name, live, branch), read),
  });
  if (outcome.status === 'nothing-to-commit') throw new ConfigError(`${tableName} changed while adopting (another commit landed): run the command again`);
  let after = outcome.table;
  if (after.metadata.properties[reapplyKey(connector.name)] !== undefined) after = await updateProperties({ catalog: deps.catalog, store: deps.store }, id, {}, [reapplyKey(connector.name)]);
  return report(`adopted: the table keeps what it holds; its positions are now ${encodePositions(adopted)}`, after);
}

/** At least everything applied before: T, C (raised by R), and every snapshot of this connector on this log the table lists. */
function adoptPositions(table: LoadedTable, read: PositionsRead, c: ReadonlyMap<number, bigint> | undefined, connector: string, live: ControlIdentity): Map<number, bigint> {
  const out = new Map<number, bigint>();
  const raise = (p: number, o: bigint): void => {
    if (o > (out.get(p) ?? -1n)) out.set(p, o);
  };
  if (read.kind === 'positions') for (const [p, o] of read.positions) raise(p, o);
  for (const [p, o] of c ?? []) raise(p, o);
  for (const [p, o] of listedPositions(table, connector, live)) raise(p, o);
  return out;
}

/** Per control partition, the highest position any snapshot of this connector on this log the table lists carries. */
function listedPositions(table: LoadedTable, connector: string, live: ControlIdentity): Map<number, bigint> {
  const out = new Map<number, bigint>();
  for (const s of table.metadata.snapshots) {
    const text = s.summary[controlOffsetsKey(connector)];
    if (text === undefined || s.summary[controlTopicIdKey(connector)] !== live.controlTopicId || s.summary[kafkaClusterIdKey(connector)] !== live.clusterId) continue;
    try {
      for (const [p, o] of decodePositions(text)) if (o > (out.get(p) ?? -1n)) out.set(p, o);
    } catch {
      // a malformed old snapshot adds nothing
    }
  }
  return out;
}

function sameRead(a: PositionsRead, b: PositionsRead): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'positions' && b.kind === 'positions') return a.snapshotId === b.snapshotId;
  return true;
}

function describeRead(read: PositionsRead): Record<string, string> | string {
  if (read.kind !== 'positions') return read.kind;
  return Object.fromEntries([...read.positions].map(([p, o]) => [String(p), o.toString()]));
}

/** Each of the connector's source topics' live id and log ends (a topic that cannot be described vouches for nothing). */
async function liveSourceLogs(admin: KafkaAdmin & GroupAdmin, connector: ConnectorConfig): Promise<SourceLogs> {
  const topicIds = new Map<string, string>();
  const ends = new Map<string, { low: bigint; high: bigint }>();
  // A configured topic the cluster does not have (deleted, not recreated): what a table applied of it is
  // vouched for by nothing.
  const listed = new Set(await admin.listTopics());
  const gone = new Set(connector.topics.kind === 'list' ? connector.topics.topics.filter((t) => !listed.has(t)) : []);
  for (const topic of await connectorTopics(admin, connector)) {
    topicIds.set(topic, await admin.topicId(topic));
    for (const m of await admin.watermarks(topic)) ends.set(sourceKey(topic, m.partition), { low: m.low, high: m.high });
  }
  return { topicIds, ends, gone };
}
