/**
 * Whether a connector may keep acknowledging records to Kafka (docs/sink.md, "A table stops"). Tasks
 * commit source offsets together with their announcements; the announcements are then the only copy of
 * those records until the committer applies them, and the control topic keeps them only for its
 * retention. So:
 *
 * - The control topic must keep announcements by time alone: `checkControlTopicConfig` refuses a
 *   `cleanup.policy` other than `delete` (compaction keeps one record per key — per task — and drops the
 *   older announcements), a finite `retention.bytes`, and a `retention.ms` below the configured minimum.
 * - A table that stops, for any reason, makes the connector unhealthy: the worker fails its tasks, so no
 *   further offset is committed for records no table will hold; the committer keeps running for the
 *   other tables.
 * - A table whose oldest unapplied announcement ages past a share of the retention raises an alarm, and
 *   past a larger share fails the tasks the same way, before retention can delete what was announced.
 * - So does a committer that fails as a whole (every round throws before a table is judged: a foreign
 *   offset on its position group, a reader or admin error that persists, a bug), or, in a cluster, a
 *   committer seat no worker holds: nothing then says how old the unapplied announcements are, so their
 *   age is bounded by how long the committer has not got through (N4), with the same ratios.
 *
 * Owns: the verdicts (pure: the clock and the statuses come in). Must not: act on them (the worker does).
 */
import { ConfigError } from '../core/errors.ts';
import type { ControlConfig } from '../config/connector-config.ts';
import { sourceOffsetsKey } from './control-positions.ts';

/**
 * Checks the control topic's configuration as the broker reports it; returns its `retention.ms` (null:
 * unlimited). Throws a ConfigError naming the setting and the topic.
 */
export function checkControlTopicConfig(topic: string, configs: Readonly<Record<string, string>>, control: Pick<ControlConfig, 'minRetentionMs'>): number | null {
  const refuse = (setting: string, value: string | undefined, why: string): never => {
    throw new ConfigError(`control topic ${topic}: ${setting}=${value ?? '(not reported)'} ${why}. Change it on the topic (kafka-configs --alter --entity-type topics --entity-name ${topic}) or name another topic in iceberg.control.topic`, {
      context: { topic, setting, value },
    });
  };
  const policy = configs['cleanup.policy'];
  if (policy === undefined || policy.split(',').map((s) => s.trim()).join(',') !== 'delete') {
    refuse('cleanup.policy', policy, 'would let Kafka remove announcements before they are applied (compaction keeps only the last record per task); it must be delete');
  }
  const bytes = configs['retention.bytes'];
  if (bytes === undefined || Number(bytes) >= 0) refuse('retention.bytes', bytes, 'bounds the topic by size, so a burst of announcements can delete unapplied ones at any age; it must be -1');
  const ms = Number(configs['retention.ms']);
  if (!Number.isFinite(ms)) refuse('retention.ms', configs['retention.ms'], 'is not a number');
  if (ms < 0) return null;
  if (ms < control.minRetentionMs) {
    refuse('retention.ms', configs['retention.ms'], `is shorter than icefloe.control.topic.min-retention-ms (${control.minRetentionMs}): a stopped table must be repairable before its announcements expire`);
  }
  return ms;
}

/** What the worker needs of a table's status. */
export interface TableHealthInput {
  readonly table: string;
  readonly state: 'RUNNING' | 'STOPPED';
  readonly reason?: { readonly code: string; readonly message: string };
  /** Kafka timestamp (ms) of the oldest announcement for the table not yet applied. */
  readonly oldestUnappliedMs?: number;
}

export interface TableHealth {
  readonly table: string;
  /** now − oldestUnappliedMs, when something waits. */
  readonly unappliedAgeMs?: number;
  /** Past icefloe.control.retention-alarm-ratio of the retention. */
  readonly retentionAlarm: boolean;
  /** Why this table makes the connector fail its tasks; undefined: it does not. */
  readonly failure?: string;
}

/**
 * The committer as a whole, when it does not get through: `failing` (its rounds throw; since the start of
 * the last round that got through, or of the committer) or `vacant` (a cluster: no worker holds its seat,
 * or this worker cannot tell; since this worker first saw it so). Announcements made since then may all
 * be unapplied, so that time is their age.
 */
export interface CommitterHealthInput {
  readonly kind: 'failing' | 'vacant';
  readonly sinceMs: number;
  /** The last round's error, or what the seat check saw. */
  readonly detail: string;
}

export interface HealthVerdict {
  readonly tables: readonly TableHealth[];
  /** The committer as a whole, when it does not get through (CommitterHealthInput). */
  readonly committer?: { readonly kind: 'failing' | 'vacant'; readonly ageMs: number; readonly retentionAlarm: boolean };
  /** The first table that fails the connector, with the message for the tasks and the operator. */
  readonly failure?: { readonly table: string; readonly message: string };
}

/** The connector's health from its tables' statuses at `nowMs`. */
export function connectorHealth(
  connector: string,
  control: Pick<ControlConfig, 'topic' | 'retentionAlarmRatio' | 'retentionStopRatio'>,
  retentionMs: number | null,
  tables: readonly TableHealthInput[],
  nowMs: number,
  committer?: CommitterHealthInput,
): HealthVerdict {
  const out: TableHealth[] = [];
  let failure: { table: string; message: string } | undefined;
  const recovery =
    `If announcements were already deleted, reset the consumer group of connector ${connector} to the source offsets the table holds ` +
    `(snapshot summary ${sourceOffsetsKey(connector)}), then restart the worker.`;
  for (const t of tables) {
    const age = t.oldestUnappliedMs === undefined ? undefined : Math.max(0, nowMs - t.oldestUnappliedMs);
    const share = age === undefined || retentionMs === null ? 0 : age / retentionMs;
    let why: string | undefined;
    if (t.state === 'STOPPED') {
      why =
        `table ${t.table} stopped (${t.reason?.code ?? 'unknown'}: ${t.reason?.message ?? 'no reason given'}); the tasks were failed so that nothing more is ` +
        `acknowledged to Kafka. Repair the table as the reason says and restart the worker; the announcements wait on control topic ${control.topic}. ${recovery}`;
    } else if (share >= control.retentionStopRatio) {
      why =
        `table ${t.table}: its oldest unapplied announcement is ${Math.round((age ?? 0) / 1000)} s old, ${Math.round(share * 100)} % of control topic ${control.topic}'s ` +
        `retention.ms (${retentionMs}), past icefloe.control.retention-stop-ratio (${control.retentionStopRatio}); the tasks were failed before retention deletes it. ` +
        `Fix what keeps the table from committing (see the committer's log), or raise retention.ms on the topic, then restart the worker. ${recovery}`;
    }
    out.push({ table: t.table, ...(age === undefined ? {} : { unappliedAgeMs: age }), retentionAlarm: share >= control.retentionAlarmRatio, ...(why === undefined ? {} : { failure: why }) });
    if (why !== undefined && failure === undefined) failure = { table: t.table, message: why };
  }
  if (committer === undefined) return { tables: out, ...(failure === undefined ? {} : { failure }) };
  const ageMs = Math.max(0, nowMs - committer.sinceMs);
  const share = retentionMs === null ? 0 : ageMs / retentionMs;
  if (failure === undefined && share >= control.retentionStopRatio) {
    const what =
      committer.kind === 'failing'
        ? `the committer of connector ${connector} has not got through a round for ${Math.round(ageMs / 1000)} s (last error: ${committer.detail})`
        : `no worker has held the committer seat of connector ${connector} for ${Math.round(ageMs / 1000)} s (${committer.detail})`;
    failure = {
      table: '',
      message:
        `${what}: announcements made since may be unapplied for ${Math.round(share * 100)} % of control topic ${control.topic}'s retention.ms (${retentionMs}), past ` +
        `icefloe.control.retention-stop-ratio (${control.retentionStopRatio}); the tasks were failed before retention deletes them. ` +
        `Fix what keeps the committer from running (see the committer's log${committer.kind === 'vacant' ? ' and which worker should hold the seat' : ''}), or raise retention.ms on the topic, then restart the connector. ${recovery}`,
    };
  }
  return { tables: out, committer: { kind: committer.kind, ageMs, retentionAlarm: share >= control.retentionAlarmRatio }, ...(failure === undefined ? {} : { failure }) };
}
