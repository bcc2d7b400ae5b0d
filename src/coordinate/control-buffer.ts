/**
 * The committer's bounded buffer of the control topic: reads it (read_committed, never past the last
 * stable offset) from a read cursor, keeps this connector's records in memory with their key+value bytes,
 * and drops what the committer says no table needs any more.
 *
 * Catch-up is incremental: a read takes at most icefloe.control.read.max-bytes (and CONTROL_READ_MAX_RECORDS
 * records, CONTROL_READ_TIMEOUT_MS), logs its progress, and while it stopped before the end of the control
 * topic `behind()` says so (the loop starts the next round right away). Memory: only this connector's
 * records are buffered (a shared control topic's other records are counted and dropped at once), the
 * buffer holds what tables still need, and it is capped (icefloe.control.buffer.max-bytes): at the cap,
 * records only held tables need (stopped, failing or missing ones) are dropped — those tables are "parked"
 * (not planned again until the control topic is read again from their stored positions: after a restart
 * for stopped ones, when the committer tries them again for the others) — and if what remains is still at
 * the cap, reading pauses with an error in the log.
 *
 * Owns: the buffered records and their byte accounting, the cap and parking, the read counters, the read
 * cursor and the floor (from where on the buffer holds everything). Must not: plan or commit, touch the
 * catalog, or decide where reading starts or what a table needs (the committer, committer.ts, tells it).
 */
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ControlTopicReader, KafkaAdmin, RawRecord, TopicPartitionOffset } from '../consume/port.ts';
import type { ControlRecordRead } from '../coordinate/commit-state.ts';
import type { ControlPositions } from '../coordinate/control-positions.ts';
import { classifyControlRecord } from '../coordinate/events.ts';
import type { ControlEvent } from '../coordinate/events.ts';

/** Per-round bounds of the control read besides icefloe.control.read.max-bytes (constants: no operator needs to tune them). */
const CONTROL_READ_MAX_RECORDS = 10_000;
const CONTROL_READ_TIMEOUT_MS = 10_000;
/** How often the summary of ignored (not ours) control records is logged at most. */
const IGNORED_LOG_INTERVAL_MS = 60_000;

export interface ControlBufferDeps {
  readonly connector: ConnectorConfig;
  readonly reader: ControlTopicReader;
  readonly admin: KafkaAdmin;
  /** The committer's logger (its lines carry the committer's fields). */
  readonly log: Logger;
  readonly now: () => number;
  /** Each of this connector's decoded events as it is buffered (the committer learns tables and reports). */
  readonly onEvent: (event: ControlEvent) => void;
}

/**
 * A table held back (stopped by its plan, its commit failing, or missing from the catalog with announcements
 * waiting) and, per control partition, the offset from which it still needs the buffer.
 */
export interface StoppedNeeds {
  readonly name: string;
  readonly from: ReadonlyMap<number, bigint>;
}

/** Records of a control partition deleted (retention) before they were read: [from, to). */
export interface SkippedRange {
  readonly partition: number;
  readonly from: bigint;
  readonly to: bigint;
}

/** The committer's view of the control topic, for status and metrics. */
export interface ControlReadStatus {
  /** Records and key+value bytes read from the control topic since start (every record, ours or not). */
  readonly readRecords: number;
  readonly readBytes: number;
  /** Records ignored because they are not this connector's: another Icefloe connector's, or not Icefloe's at all. */
  readonly ignoredOtherConnector: number;
  readonly ignoredForeign: number;
  /** This connector's records held in memory now. */
  readonly bufferedRecords: number;
  readonly bufferedBytes: number;
  /** The last round stopped before the end of the control topic (catching up). */
  readonly behind: boolean;
  /**
   * Held tables (stopped, failing, missing) whose records were dropped at the buffer cap: stopped ones
   * resume after a restart, failing and missing ones when the committer tries them again (a re-read).
   */
  readonly parkedTables: readonly string[];
}

export class ControlBuffer {
  private readonly d: ControlBufferDeps;
  private cursor: Map<number, bigint> | undefined;
  private buffer: ControlRecordRead[] = [];
  /** Per control partition, the buffer holds every record from this offset on. */
  private bufferFloor = new Map<number, bigint>();
  /** Key+value bytes of each buffered record (for the buffer cap) and their sum. */
  private readonly recordBytes = new WeakMap<ControlRecordRead, number>();
  private bufferBytes = 0;
  /** Held tables whose records were dropped from the buffer: not planned again until a re-read (`restart`) brings them back. */
  private readonly parked = new Set<string>();
  /** What each parked table still needs per control partition: C stays below it. */
  private readonly parkedNeeds = new Map<string, ReadonlyMap<number, bigint>>();
  private readonly reads = { records: 0, bytes: 0, otherConnector: 0, foreign: 0, loggedOther: 0, loggedForeign: 0, loggedAtMs: 0 };
  private lagging = false;
  private bufferFull = false;
  /** Cursor positions the log start had passed when read (since the last `takeSkipped`). */
  private skipped: SkippedRange[] = [];

  constructor(deps: ControlBufferDeps) {
    this.d = deps;
  }

  /** This connector's records held now, in read order (for planning; do not keep across rounds). */
  get records(): readonly ControlRecordRead[] {
    return this.buffer;
  }

  /** Per control partition, the offset read up to (exclusive); empty before the first read. */
  readThrough(): ReadonlyMap<number, bigint> {
    return this.cursor ?? new Map<number, bigint>();
  }

  status(): ControlReadStatus {
    return {
      readRecords: this.reads.records,
      readBytes: this.reads.bytes,
      ignoredOtherConnector: this.reads.otherConnector,
      ignoredForeign: this.reads.foreign,
      bufferedRecords: this.buffer.length,
      bufferedBytes: this.bufferBytes,
      behind: this.lagging,
      parkedTables: [...this.parked].sort(),
    };
  }

  /** The last read took a bounded step and more is committed on the control topic. */
  behind(): boolean {
    return this.lagging;
  }

  /** The table's records were dropped at the cap: planning it now could skip them. */
  isParked(name: string): boolean {
    return this.parked.has(name);
  }

  /** Per control partition, the offset from which the buffer holds every record (where reading started, raised by trims). */
  floor(): ReadonlyMap<number, bigint> {
    return this.bufferFloor;
  }

  /** What the parked tables still need, per control partition. */
  parkedFrom(): Iterable<ReadonlyMap<number, bigint>> {
    return this.parkedNeeds.values();
  }

  /** The buffer no longer holds everything from `positions` on (partitions without one were read from the log start). */
  floorAbove(positions: ControlPositions): boolean {
    for (const [p, floor] of this.bufferFloor) {
      const at = positions.get(p);
      if (at !== undefined && at < floor) return true;
    }
    return false;
  }

  /**
   * Reads every committed control record past the cursor; returns each partition's log start offset.
   * Before the first read (and after `restart()`), `start` says where reading starts (an empty map: every
   * partition from its log start); the buffer holds everything from there on.
   */
  async readNew(start: () => Promise<Map<number, bigint>>): Promise<Map<number, bigint>> {
    const topic = this.d.connector.control.topic;
    const marks = await this.d.admin.watermarks(topic);
    const logStart = new Map(marks.map((m) => [m.partition, m.low]));
    if (this.cursor === undefined) {
      const from = await start();
      this.bufferFloor = new Map(from);
      this.cursor = from;
    }
    const cursor = this.cursor;
    for (const m of marks) {
      const at = cursor.get(m.partition);
      // Reading goes on at the log start, but the records below it were never read here: the committer is
      // told (takeSkipped), since they may hold announcements of tables it does not know (review N3).
      if (at !== undefined && at < m.low) this.skipped.push({ partition: m.partition, from: at, to: m.low });
      if (at === undefined || at < m.low) cursor.set(m.partition, m.low);
    }
    const from: TopicPartitionOffset[] = [...cursor].filter(([p, o]) => (marks.find((m) => m.partition === p)?.lastStable ?? 0n) > o).map(([partition, offset]) => ({ topic, partition, offset }));
    const wasBehind = this.lagging;
    this.lagging = false;
    if (from.length === 0) {
      if (wasBehind) this.d.log.info('control topic caught up', { readRecords: this.reads.records, readBytes: this.reads.bytes });
      return logStart;
    }
    const { readMaxBytes, bufferMaxBytes } = this.d.connector.control;
    const room = bufferMaxBytes - this.bufferBytes;
    if (room <= 0) {
      // Every table that is not held back still needs all that is held (one waiting for parts past the
      // cap; failing tables are parked like stopped ones): reading more would only grow memory.
      if (!this.bufferFull) this.d.log.error('control buffer full: reading the control topic pauses until tables commit (raise icefloe.control.buffer.max-bytes if this persists)', { bufferedBytes: this.bufferBytes, bufferedRecords: this.buffer.length, bufferMaxBytes });
      this.bufferFull = true;
      return logStart;
    }
    this.bufferFull = false;
    const read = await this.d.reader.read(from, { maxBytes: Math.min(readMaxBytes, room), maxRecords: CONTROL_READ_MAX_RECORDS, timeoutMs: CONTROL_READ_TIMEOUT_MS });
    const bytes = this.takeRecords(read.records);
    for (const e of read.endOffsets) cursor.set(e.partition, e.offset);
    const progress = from.map((f) => ({ partition: f.partition, from: String(f.offset), offset: String(cursor.get(f.partition) ?? f.offset), endOffset: String(marks.find((m) => m.partition === f.partition)?.lastStable ?? 0n) }));
    this.lagging = from.some((f) => (cursor.get(f.partition) ?? f.offset) < (marks.find((m) => m.partition === f.partition)?.lastStable ?? 0n));
    if (this.lagging || wasBehind) {
      this.d.log.info(this.lagging ? 'control topic catch-up' : 'control topic caught up', {
        partitions: progress,
        records: read.records.length,
        bytes,
        bufferedRecords: this.buffer.length,
        bufferedBytes: this.bufferBytes,
      });
    }
    this.logIgnored();
    return logStart;
  }

  /** The ranges the read cursor jumped over since the last call (records deleted before they were read). */
  takeSkipped(): SkippedRange[] {
    const out = this.skipped;
    this.skipped = [];
    return out;
  }

  /**
   * Drops what no table needs (see `trimBuffer`) and raises the floor to what is kept. `running`: per
   * control partition, what running tables need; `stopped`: each stopped table's needs.
   */
  trim(running: ReadonlyMap<number, bigint>, stopped: readonly StoppedNeeds[]): void {
    const floor = this.trimBuffer(running, stopped);
    for (const [p, o] of floor) if (o > (this.bufferFloor.get(p) ?? 0n)) this.bufferFloor.set(p, o);
  }

  /** Forgets what was read: the next read starts again where `start` says; parked tables are read again too. */
  restart(): void {
    this.cursor = undefined;
    this.setBuffer([], 0);
    this.bufferFloor = new Map();
    this.parked.clear();
    this.parkedNeeds.clear();
  }

  /** Buffers this connector's records of a read; counts and drops the others. Returns the bytes read. */
  private takeRecords(records: readonly RawRecord[]): number {
    const connector = this.d.connector.name;
    let bytes = 0;
    for (const r of records) {
      const size = (r.key?.byteLength ?? 0) + (r.value?.byteLength ?? 0);
      bytes += size;
      const c = classifyControlRecord(connector, r.key, r.value);
      if (c.kind === 'foreign' || c.kind === 'other-connector') {
        if (c.kind === 'foreign') this.reads.foreign++;
        else this.reads.otherConnector++;
        continue;
      }
      const at = { partition: r.partition, offset: r.offset, ...(r.timestamp === null ? {} : { timestampMs: r.timestamp }) };
      const rec: ControlRecordRead = c.kind === 'ours' ? { ...at, event: c.event } : { ...at, error: c.error, ...(c.code === 'unsupported-version' ? { unsupportedVersion: true } : {}) };
      this.buffer.push(rec);
      this.recordBytes.set(rec, size);
      this.bufferBytes += size;
      if (c.kind === 'ours') this.d.onEvent(c.event);
    }
    this.reads.records += records.length;
    this.reads.bytes += bytes;
    return bytes;
  }

  /** Logs the records ignored since the last such line (a shared control topic), at most once a minute. */
  private logIgnored(): void {
    const r = this.reads;
    const other = r.otherConnector - r.loggedOther;
    const foreign = r.foreign - r.loggedForeign;
    if ((other === 0 && foreign === 0) || this.d.now() - r.loggedAtMs < IGNORED_LOG_INTERVAL_MS) return;
    this.d.log.info('control records of others ignored', { otherConnector: other, foreign, totalOtherConnector: r.otherConnector, totalForeign: r.foreign });
    r.loggedOther = r.otherConnector;
    r.loggedForeign = r.foreign;
    r.loggedAtMs = this.d.now();
  }

  /**
   * Keeps what running tables need (from `running`, per control partition) and what held ones need
   * (each from its positions), unless that is over the buffer cap: then only what running tables need is
   * kept, and the held tables that lose records by it are parked (not planned again until a re-read: a
   * plan over a buffer with a hole would skip announcements).
   */
  private trimBuffer(running: ReadonlyMap<number, bigint>, stopped: readonly StoppedNeeds[]): ReadonlyMap<number, bigint> {
    const keepAt = new Map(running);
    for (const t of stopped) for (const [p, o] of t.from) keepAt.set(p, min(keepAt.get(p) ?? o, o));
    const kept = this.buffer.filter((r) => r.offset >= (keepAt.get(r.partition) ?? 0n));
    const keptBytes = this.bytesOf(kept);
    if (keptBytes < this.d.connector.control.bufferMaxBytes || stopped.length === 0) {
      this.setBuffer(kept, keptBytes);
      return keepAt;
    }
    const below = (r: ControlRecordRead): boolean => r.offset < (running.get(r.partition) ?? 0n);
    const lean = this.buffer.filter((r) => !below(r));
    const losing = stopped.filter((t) => this.buffer.some((r) => below(r) && r.offset >= (t.from.get(r.partition) ?? 0n))).map((t) => t.name);
    for (const t of stopped) {
      if (!losing.includes(t.name)) continue;
      this.parked.add(t.name);
      this.parkedNeeds.set(t.name, t.from);
    }
    const leanBytes = this.bytesOf(lean);
    this.d.log.warn('control buffer full: dropped the records only stopped or failing tables need; each is read again from its stored positions (a stopped table after a restart, a failing one when it is tried again)', {
      tables: losing,
      droppedBytes: keptBytes - leanBytes,
      bufferMaxBytes: this.d.connector.control.bufferMaxBytes,
    });
    this.setBuffer(lean, leanBytes);
    return running;
  }

  private bytesOf(records: readonly ControlRecordRead[]): number {
    return records.reduce((n, r) => n + (this.recordBytes.get(r) ?? 0), 0);
  }

  private setBuffer(records: ControlRecordRead[], bytes: number): void {
    this.buffer = records;
    this.bufferBytes = bytes;
    // Reading paused at the cap and the tables made room: the next round reads on at once.
    if (this.bufferFull && bytes < this.d.connector.control.bufferMaxBytes) this.lagging = true;
  }
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
