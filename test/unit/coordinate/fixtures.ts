/**
 * Builders for the coordinate unit tests: a table with snapshots whose summaries we control, data files,
 * announcements, and a simulated control topic (partitions of offset-ordered records, with transaction
 * markers taking an offset each as Kafka's do).
 */
import { makeDataFile } from '../../../src/iceberg/data-file.ts';
import type { DataFile } from '../../../src/iceberg/data-file.ts';
import { newTableMetadata } from '../../../src/iceberg/metadata.ts';
import type { Snapshot, TableMetadata } from '../../../src/iceberg/metadata.ts';
import type { Schema } from '../../../src/iceberg/types.ts';
import { readControlRecord } from '../../../src/coordinate/commit-state.ts';
import type { ControlRecordRead } from '../../../src/coordinate/commit-state.ts';
import { encodeAnnouncement, encodeControlEvent } from '../../../src/coordinate/events.ts';
import type { Announcement, CycleComplete, SourceSpan, TableRef } from '../../../src/coordinate/events.ts';
import type { ControlIdentity } from '../../../src/coordinate/control-positions.ts';

export const CONNECTOR = 'orders-sink';
export const TABLE: TableRef = { namespace: ['db'], name: 'orders' };
export const OTHER_TABLE: TableRef = { namespace: ['db'], name: 'refunds' };
export const TABLE_UUID = '5f3c1c1e-8a7b-4d1e-9f00-0123456789ab';
export const LIVE: ControlIdentity = { controlTopicId: 'Zc0ntr0lT0p1cId00000000', clusterId: 'cluster-A' };

const SCHEMA: Schema = {
  schemaId: 0,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'note', required: false, type: { kind: 'string' } },
  ],
};

export function emptyTable(): TableMetadata {
  return newTableMetadata({ schema: SCHEMA, location: 's3://wh/db/orders', tableUuid: TABLE_UUID, nowMs: 1_700_000_000_000 });
}

/** Appends a snapshot on main with `summary` (ids count up from 1, or `id`). */
export function withSnapshot(md: TableMetadata, summary: Record<string, string>, id?: bigint): TableMetadata {
  const parent = md.refs['main']?.snapshotId;
  const snapshotId = id ?? BigInt(md.snapshots.length + 1);
  const snap: Snapshot = {
    snapshotId,
    ...(parent === undefined ? {} : { parentSnapshotId: parent }),
    sequenceNumber: md.lastSequenceNumber + 1n,
    timestampMs: md.lastUpdatedMs + 1,
    manifestList: `s3://wh/db/orders/metadata/snap-${snapshotId}.avro`,
    summary: { operation: 'append', ...summary },
  };
  return {
    ...md,
    lastSequenceNumber: snap.sequenceNumber,
    lastUpdatedMs: snap.timestampMs,
    currentSnapshotId: snapshotId,
    snapshots: [...md.snapshots, snap],
    refs: { ...md.refs, main: { snapshotId, type: 'branch' } },
  };
}

/** Drops snapshots (as expiry would) without touching refs or parents. */
export function expire(md: TableMetadata, ids: readonly bigint[]): TableMetadata {
  return { ...md, snapshots: md.snapshots.filter((s) => !ids.includes(s.snapshotId)) };
}

export function file(path: string, records = 10): DataFile {
  return makeDataFile({
    content: 0,
    filePath: path,
    fileFormat: 'PARQUET',
    specId: 0,
    partition: [],
    recordCount: records,
    fileSizeInBytes: 1000 + records,
  });
}

export function announcement(taskId: number, cycleId: string, files: readonly DataFile[], spans: readonly SourceSpan[], over: Partial<Announcement> = {}): Announcement {
  return {
    connector: CONNECTOR,
    taskId,
    cycleId,
    table: TABLE,
    tableUuid: TABLE_UUID,
    schemaId: 0,
    specId: 0,
    sourceSpans: spans,
    files,
    ...over,
  };
}

export function span(topic: string, partition: number, first: bigint, last: bigint, maxTimestampMs?: number): SourceSpan {
  return { topic, partition, firstOffset: first, lastOffset: last, ...(maxTimestampMs === undefined ? {} : { maxTimestampMs }) };
}

export function cycleComplete(taskId: number, cycleId: string, assignments: CycleComplete['assignments']): CycleComplete {
  return { type: 'cycle-complete', connector: CONNECTOR, taskId, cycleId, assignments };
}

/** A control topic: per partition, the next offset and the records so far (values as bytes). */
export class ControlLog {
  readonly partitions: { offset: bigint; value: Uint8Array; timestampMs: number }[][];
  readonly next: bigint[];
  clock = 1_700_000_000_000;

  constructor(partitionCount: number) {
    this.partitions = Array.from({ length: partitionCount }, () => []);
    this.next = Array.from({ length: partitionCount }, () => 0n);
  }

  /** Appends record values to `partition`; returns their offsets. */
  append(partition: number, values: readonly Uint8Array[]): bigint[] {
    const list = this.partitions[partition];
    if (list === undefined) throw new Error(`no partition ${partition}`);
    return values.map((value) => {
      const offset = this.next[partition] ?? 0n;
      this.next[partition] = offset + 1n;
      list.push({ offset, value, timestampMs: this.clock++ });
      return offset;
    });
  }

  /** A transaction commit marker occupies an offset, as in Kafka. */
  marker(partition: number): void {
    this.next[partition] = (this.next[partition] ?? 0n) + 1n;
  }

  /** One task's transaction: its announcements (split as needed) then its cycle-complete, then a marker. */
  transaction(partition: number, announcements: readonly Announcement[], complete?: CycleComplete, maxRecordBytes = 1_000_000): bigint[] {
    const values = announcements.flatMap((a) => encodeAnnouncement(a, maxRecordBytes));
    if (complete !== undefined) values.push(encodeControlEvent(complete));
    const offsets = this.append(partition, values);
    this.marker(partition);
    return offsets;
  }

  /** Records from each partition's `from` offset (0 when absent), optionally only below `until`. */
  read(from: ReadonlyMap<number, bigint>, until?: ReadonlyMap<number, bigint>): ControlRecordRead[] {
    return this.partitions.flatMap((list, p) =>
      list
        .filter((r) => r.offset >= (from.get(p) ?? 0n) && (until?.get(p) === undefined || r.offset < (until.get(p) ?? 0n)))
        .map((r) => readControlRecord(p, r.offset, r.value, r.timestampMs)),
    );
  }
}
