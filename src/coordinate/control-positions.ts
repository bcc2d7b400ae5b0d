/**
 * Applied control-topic positions in the snapshot summary (docs/architecture.md, "Idempotent commits" and
 * "Fail closed on identity"): the codec of the summary keys a committer writes with every snapshot, and
 * the fail-closed reading of them from the newest snapshot in the branch's ancestry that carries them.
 *
 * Keys (all written together, in every snapshot Icefloe commits for a connector):
 *   icefloe.control-offsets.<connector>   JSON {"<controlPartition>": nextOffsetExclusive, ...}
 *   icefloe.control-topic-id.<connector>  the control topic's Kafka topic id (changes when recreated)
 *   icefloe.kafka-cluster-id.<connector>  the Kafka cluster id (changes on failover to another cluster)
 *   icefloe.valid-through-ts              the watermark (ms since epoch), see commit-state.ts
 *   icefloe.source-offsets.<connector>    JSON {"<topic>": {"<partition>": [first, last]}}, for operators
 *   icefloe.source-applied.<connector>    JSON {"<topic>": {"<partition>": last}}: the highest source offset
 *                                         ever applied, carried forward (source-applied.ts)
 * The identity keys are per connector (two connectors on two clusters may write one table).
 *
 * Branches: the positions of a connector that commits to a branch (iceberg.tables.default-commit-branch,
 * iceberg.table.<t>.commit-branch) are read from that branch's ancestry, never main's; a branch that does
 * not exist yet from main's, which its first commit forks from (iceberg/metadata.ts `commitBaseId`).
 *
 * Reading, fail closed. The outcome is one of:
 *   positions          the newest ancestor carrying our offsets key was found and its identity matches;
 *   fresh              the table has no snapshots at all (or none the branch builds on, and none of this
 *                      connector's): nothing can have been applied, read the control topic from its beginning;
 *   identity-mismatch  the stored topic id or cluster id differs from the live one (topic recreated,
 *                      failover), or is missing: stored offsets would point into a different log;
 *   expired            snapshots exist, none in the ancestry carries our key, and either the walk was cut
 *                      short by expired snapshots (an expired one may have carried it), or some snapshot of
 *                      the table (in or out of the ancestry) was committed by this connector (commit-id
 *                      prefix or offsets key) — its positions were rolled back or replaced away;
 *   unseeded           snapshots exist, the whole ancestry is present, and nothing in the table was ever
 *                      committed by this connector (another engine wrote it first);
 *   malformed          the stored value cannot be parsed.
 * Only `positions` and `fresh` let a committer proceed. Every other outcome stops the table with its reason
 * until an operator re-seeds positions deliberately (`icefloe positions --adopt`; the offsets API later): "fail closed" means never choosing a
 * start position (earliest or latest) by guess, because a wrong guess either commits announcements twice
 * or silently skips them. `unseeded` is its own kind because its usual cause is benign (pointing the sink at
 * an existing table) and its repair differs (seed "from the beginning"), but the architecture rule — a table
 * with snapshots but no positions in its ancestry stops — applies to it as well.
 *
 * Owns: key names, value codecs, the read outcome. Must not: do I/O or read a clock.
 */
import { parseJson, stringifyJson, toBigInt } from '../core/json.ts';
import { MAIN_BRANCH, commitBaseId, findInAncestry } from '../iceberg/metadata.ts';
import type { Snapshot, TableMetadata } from '../iceberg/metadata.ts';
import { COMMIT_ID_KEY } from '../commit/commit-retry.ts';
import { sourceAppliedKey, sourceTopicIdsKey } from './source-applied.ts';

export const CONTROL_OFFSETS_PREFIX = 'icefloe.control-offsets.';
export const CONTROL_TOPIC_ID_PREFIX = 'icefloe.control-topic-id.';
export const KAFKA_CLUSTER_ID_PREFIX = 'icefloe.kafka-cluster-id.';
export const SOURCE_OFFSETS_PREFIX = 'icefloe.source-offsets.';
export const VALID_THROUGH_TS_KEY = 'icefloe.valid-through-ts';

export const controlOffsetsKey = (connector: string): string => CONTROL_OFFSETS_PREFIX + connector;
export const controlTopicIdKey = (connector: string): string => CONTROL_TOPIC_ID_PREFIX + connector;
export const kafkaClusterIdKey = (connector: string): string => KAFKA_CLUSTER_ID_PREFIX + connector;
export const sourceOffsetsKey = (connector: string): string => SOURCE_OFFSETS_PREFIX + connector;

/** Commit ids Icefloe writes for a connector start with this (commit-state.ts `commitIdFor`). */
export function commitIdPrefix(connector: string): string {
  return `icefloe:${connector}:`;
}

/** Control partition → next offset to read (exclusive end of what was applied). */
export type ControlPositions = ReadonlyMap<number, bigint>;

/** Which Kafka log the positions refer to. */
export interface ControlIdentity {
  readonly controlTopicId: string;
  readonly clusterId: string;
}

export type PositionsRead =
  | {
      readonly kind: 'positions';
      readonly positions: ControlPositions;
      readonly identity: ControlIdentity;
      /** The watermark stored with them, if any (carried forward, never regressed). */
      readonly validThroughTs?: number;
      /** The snapshot they were read from. */
      readonly snapshotId: bigint;
      /** Its `icefloe.source-applied.<connector>` value, undecoded (source-applied.ts). */
      readonly sourceApplied?: string;
      /** Its `icefloe.source-topic-ids.<connector>` value, undecoded (absent in snapshots of older versions). */
      readonly sourceTopicIds?: string;
    }
  | { readonly kind: 'fresh' }
  | {
      readonly kind: 'identity-mismatch';
      readonly stored: { readonly controlTopicId: string | null; readonly clusterId: string | null };
      /** The stored positions (they refer to the stored log, not the live one). */
      readonly positions: ControlPositions;
      readonly live: ControlIdentity;
      readonly snapshotId: bigint;
    }
  | {
      readonly kind: 'expired';
      readonly reason: 'ancestry-truncated' | 'connector-snapshots-outside-ancestry';
      readonly scanned: number;
    }
  | { readonly kind: 'unseeded'; readonly snapshots: number }
  | { readonly kind: 'malformed'; readonly key: string; readonly snapshotId: bigint; readonly message: string };

export function encodePositions(p: ControlPositions): string {
  const entries = [...p].sort((a, b) => a[0] - b[0]);
  return stringifyJson(Object.fromEntries(entries.map(([k, v]) => [String(k), v])));
}

/** Throws TypeError on anything but `{"<non-negative int>": <non-negative int>}`. */
export function decodePositions(text: string): Map<number, bigint> {
  const doc = parseJson(text);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new TypeError('control offsets must be a JSON object');
  const out = new Map<number, bigint>();
  for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
    if (!/^(0|[1-9]\d*)$/.test(k) || !Number.isSafeInteger(Number(k))) throw new TypeError(`control partition ${JSON.stringify(k)} is not a partition number`);
    const offset = toBigInt(v, `offset of control partition ${k}`);
    if (offset < 0n) throw new TypeError(`offset of control partition ${k} is negative`);
    out.set(Number(k), offset);
  }
  return out;
}

/** The summary entries for positions and identity (commit-state adds the watermark and source offsets). */
export function positionsSummary(connector: string, positions: ControlPositions, identity: ControlIdentity): Record<string, string> {
  return {
    [controlOffsetsKey(connector)]: encodePositions(positions),
    [controlTopicIdKey(connector)]: identity.controlTopicId,
    [kafkaClusterIdKey(connector)]: identity.clusterId,
  };
}

function committedByConnector(s: Snapshot, connector: string): boolean {
  const id = s.summary[COMMIT_ID_KEY];
  return (id !== undefined && id.startsWith(commitIdPrefix(connector))) || s.summary[controlOffsetsKey(connector)] !== undefined;
}

/**
 * The applied positions of `connector` for `branch` of the table, or why they cannot be trusted (see the
 * module header for each outcome).
 */
export function readControlPositions(md: TableMetadata, connector: string, live: ControlIdentity, branch: string = MAIN_BRANCH): PositionsRead {
  if (md.snapshots.length === 0) return { kind: 'fresh' };
  const key = controlOffsetsKey(connector);
  const found = findInAncestry(md, key, branch);
  const snap = found.snapshot;
  if (snap === undefined || found.value === undefined) {
    if (found.truncated) return { kind: 'expired', reason: 'ancestry-truncated', scanned: found.scanned };
    if (md.snapshots.some((s) => committedByConnector(s, connector))) return { kind: 'expired', reason: 'connector-snapshots-outside-ancestry', scanned: found.scanned };
    // Nothing to build on (neither the branch nor main has a snapshot; others wrote only other branches):
    // the branch starts empty and nothing of this connector's can be in it.
    if (commitBaseId(md, branch) === undefined) return { kind: 'fresh' };
    return { kind: 'unseeded', snapshots: md.snapshots.length };
  }
  let positions: Map<number, bigint>;
  try {
    positions = decodePositions(found.value);
  } catch (e) {
    return { kind: 'malformed', key, snapshotId: snap.snapshotId, message: e instanceof Error ? e.message : String(e) };
  }
  const storedTopic = snap.summary[controlTopicIdKey(connector)] ?? null;
  const storedCluster = snap.summary[kafkaClusterIdKey(connector)] ?? null;
  if (storedTopic !== live.controlTopicId || storedCluster !== live.clusterId) {
    return { kind: 'identity-mismatch', stored: { controlTopicId: storedTopic, clusterId: storedCluster }, positions, live, snapshotId: snap.snapshotId };
  }
  const wm = snap.summary[VALID_THROUGH_TS_KEY];
  let validThroughTs: number | undefined;
  if (wm !== undefined) {
    validThroughTs = Number(wm);
    if (!/^-?\d+$/.test(wm) || !Number.isSafeInteger(validThroughTs)) {
      return { kind: 'malformed', key: VALID_THROUGH_TS_KEY, snapshotId: snap.snapshotId, message: `not a millisecond timestamp: ${JSON.stringify(wm)}` };
    }
  }
  return {
    kind: 'positions',
    positions,
    identity: { controlTopicId: storedTopic, clusterId: storedCluster },
    ...(validThroughTs === undefined ? {} : { validThroughTs }),
    snapshotId: snap.snapshotId,
    ...(snap.summary[sourceAppliedKey(connector)] === undefined ? {} : { sourceApplied: snap.summary[sourceAppliedKey(connector)] as string }),
    ...(snap.summary[sourceTopicIdsKey(connector)] === undefined ? {} : { sourceTopicIds: snap.summary[sourceTopicIdsKey(connector)] as string }),
  };
}

/** Where to start reading each control partition: the stored position, or the beginning of the log for a
 *  partition this table never applied anything from (never "latest", apache/iceberg#18006). */
export function startOffset(positions: ControlPositions, partition: number): bigint | 'beginning' {
  return positions.get(partition) ?? 'beginning';
}
