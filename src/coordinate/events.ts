/**
 * Control-topic events (docs/architecture.md, "Exactly-once: Durable announcements"): what a task
 * produces to the connector's control topic at the end of a commit cycle, in the same Kafka transaction
 * as its source offsets, and what the per-table committer reads back.
 *
 * - `announcement`: the data files one task wrote for one table in one cycle, with the table UUID,
 *   schema id and partition spec id they were written with, and the source offset spans they cover.
 * - `cycle-complete`: one per task and cycle, after its announcements, listing every assigned source
 *   partition (idle ones too) with its next offset; the committer uses it for the watermark.
 *
 * Codec: JSON (core/json.ts, lossless: every int64 is a bare JSON integer and comes back as bigint), UTF-8.
 * Chosen over Avro because (1) an operator can read the control topic with any console consumer or kcat
 * while debugging a stopped table, (2) it needs no schema registry or writer schema to decode, so the
 * committer can always read events written by any version, and (3) evolution rules are explicit below
 * rather than hidden in Avro resolution. The cost is size (about 2-3x Avro for file metrics), which the
 * split into parts bounds; the control topic carries one record per table per cycle, not per row.
 *
 * Versioning: every record carries `"format":"icefloe-control"` and `"version":"<major>.<minor>"`. A
 * minor version only adds optional fields (readers ignore fields they do not know); a different major
 * version is a `FatalError` (the committer stops rather than misread an announcement and skip or double
 * its files).
 *
 * Sharing the control topic (`classifyControlRecord`): the envelope every version keeps is the record key
 * `controlRecordKey(connector, task)` plus a JSON object whose first members are `format`, `version`,
 * `type`, `connector` in that order. A record is this connector's when its key is one of this connector's
 * keys, or when its envelope names this connector; only such a record is decoded, and only it can stop
 * this connector's tables (unknown major version, or malformed). Every other record — another connector's
 * announcement of any version, another product's event (the Apache sink's Avro control events), garbage,
 * a tombstone — is not ours: the committer ignores and counts it.
 *
 * Splitting: an announcement whose encoding exceeds the record byte limit (the broker's / topic's
 * `max.message.bytes` minus headroom for the record envelope) is split into parts 0..n-1 of the same
 * announcement; each part repeats the header and carries a slice of the source spans and files. A file
 * whose metrics alone exceed a record is announced with fewer metrics (metrics-trim.ts), never dropped. Producer
 * contract: all parts of one announcement and the cycle's `cycle-complete` are produced by one task, in
 * part order, with the same record key (`controlRecordKey`, so the same control partition), in one
 * transaction. `reassembleAnnouncement` rebuilds the announcement and rejects a missing, duplicate or
 * inconsistent part.
 *
 * Owns: event types, their byte codec, splitting and reassembly. Must not: do I/O or read a clock.
 */
import { FatalError } from '../core/errors.ts';
import { parseJson, stringifyJson, toBigInt } from '../core/json.ts';
import type { DataFile, FileContent } from '../iceberg/data-file.ts';
import type { PartitionValue } from '../iceberg/types.ts';
import { trimFileMetrics } from './metrics-trim.ts';
import type { MetricsTrim } from './metrics-trim.ts';

export type { MetricsTrim } from './metrics-trim.ts';

export const CONTROL_FORMAT = 'icefloe-control';
export const CONTROL_VERSION_MAJOR = 1;
export const CONTROL_VERSION_MINOR = 0;

/** A table as announcements name it (same shape as commit/port.ts TableIdentifier). */
export interface TableRef {
  readonly namespace: readonly string[];
  readonly name: string;
}

/** The offsets of one source partition whose records went into an announcement's files. */
export interface SourceSpan {
  readonly topic: string;
  readonly partition: number;
  /** First and last offset (inclusive) of the records of this partition in the files. */
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  /** Largest Kafka record timestamp (ms) among those records; absent if the records carried none. */
  readonly maxTimestampMs?: number;
}

export interface Announcement {
  readonly connector: string;
  readonly taskId: number;
  /** Unique per task and cycle (the task chooses it, e.g. `<task>-<counter>` or a UUID). */
  readonly cycleId: string;
  readonly table: TableRef;
  readonly tableUuid: string;
  /** The schema and partition spec the files were written with (ids the catalog returned). */
  readonly schemaId: number;
  readonly specId: number;
  readonly sourceSpans: readonly SourceSpan[];
  readonly files: readonly DataFile[];
}

/** One record of an announcement: `part` of `parts` (0-based); an unsplit announcement is part 0 of 1. */
export interface AnnouncementPart extends Announcement {
  readonly type: 'announcement';
  readonly part: number;
  readonly parts: number;
}

export interface PartitionAssignment {
  readonly topic: string;
  readonly partition: number;
  /** Every record below this offset has been consumed and announced (or routed nowhere, by config). */
  readonly nextOffset: bigint;
  /** Largest record timestamp consumed from this partition so far (ms); absent if none yet. */
  readonly maxTimestampMs?: number;
  /** The task had read to the end of the partition when the cycle closed (nothing else was waiting). */
  readonly caughtUp: boolean;
  /**
   * With `caughtUp`: the high watermark it had read to (past transaction markers, so it may exceed
   * `nextOffset`). A committer that finds the partition still ending there knows nothing arrived since.
   */
  readonly endOffset?: bigint;
}

export interface CycleComplete {
  readonly type: 'cycle-complete';
  readonly connector: string;
  readonly taskId: number;
  readonly cycleId: string;
  /** Every partition assigned to the task, idle ones included. */
  readonly assignments: readonly PartitionAssignment[];
  /**
   * The task's clock when the partitions reported `caughtUp` were last seen read to their end (the
   * start of the poll that saw it, less a fetch round trip): every record appended to them before this
   * time was handled. Absent (older tasks): a caught-up report carries no time and cannot raise the
   * watermark past the partition's own records.
   */
  readonly caughtUpAtMs?: number;
}

export type ControlEvent = AnnouncementPart | CycleComplete;

/** The record key of a task's control events: one key per task keeps its events (and all parts of an
 *  announcement) on one control partition, in order. */
export function controlRecordKey(connector: string, taskId: number): string {
  return `${connector}/${taskId}`;
}

/** `a.b.t`, for keys and messages. */
export function tableRefString(t: TableRef): string {
  return [...t.namespace, t.name].join('.');
}

export function sameTable(a: TableRef, b: TableRef): boolean {
  return a.name === b.name && a.namespace.length === b.namespace.length && a.namespace.every((n, i) => n === b.namespace[i]);
}

// ---------------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------------

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

function b64(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
}

function unb64(s: unknown, what: string): Uint8Array {
  if (typeof s !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) throw bad(what, 'expected base64 text');
  return new Uint8Array(Buffer.from(s, 'base64'));
}

function bad(what: string, message: string, cause?: unknown): FatalError {
  return new FatalError(`malformed control event: ${what}: ${message}`, cause === undefined ? { context: { what } } : { cause, context: { what } });
}

/**
 * Partition tuple values are tagged so the JS type comes back exactly: `{"s":..}` string, `{"n":".."}`
 * number as its shortest round-trip text (so NaN, ±Infinity and -0 survive), `{"l":..}` bigint,
 * `{"y":"base64"}` bytes, `{"b":..}` boolean, `null`.
 */
function partitionValueToJson(v: PartitionValue): unknown {
  if (v === null) return null;
  switch (typeof v) {
    case 'string':
      return { s: v };
    case 'number':
      return { n: Object.is(v, -0) ? '-0' : String(v) };
    case 'bigint':
      return { l: v };
    case 'boolean':
      return { b: v };
    default:
      return { y: b64(v) };
  }
}

function partitionValueFromJson(j: unknown, what: string): PartitionValue {
  if (j === null) return null;
  const o = obj(j, what);
  if ('s' in o && typeof o['s'] === 'string') return o['s'];
  if ('n' in o && typeof o['n'] === 'string') {
    const n = Number(o['n']);
    if (Number.isNaN(n) && o['n'] !== 'NaN') throw bad(what, 'not a number');
    return n;
  }
  if ('l' in o) return long(o['l'], what);
  if ('b' in o && typeof o['b'] === 'boolean') return o['b'];
  if ('y' in o) return unb64(o['y'], what);
  throw bad(what, 'unknown partition value tag');
}

function countsToJson(m: ReadonlyMap<number, bigint> | undefined): unknown {
  return m === undefined ? undefined : [...m].map(([k, v]) => [k, v]);
}

function boundsToJson(m: ReadonlyMap<number, Uint8Array> | undefined): unknown {
  return m === undefined ? undefined : [...m].map(([k, v]) => [k, b64(v)]);
}

/** Every DataFile field (spec "Manifests" data_file), with absent optional fields omitted, so the file
 *  decodes to a deep-equal object: maps keep their order, empty maps stay empty maps. */
export function dataFileToJson(f: DataFile): Record<string, unknown> {
  const out: Record<string, unknown> = {
    content: f.content,
    path: f.filePath,
    format: f.fileFormat,
    specId: f.specId,
    partition: f.partition.map(partitionValueToJson),
    recordCount: f.recordCount,
    fileSize: f.fileSizeInBytes,
    columnSizes: countsToJson(f.columnSizes),
    valueCounts: countsToJson(f.valueCounts),
    nullValueCounts: countsToJson(f.nullValueCounts),
    nanValueCounts: countsToJson(f.nanValueCounts),
    lowerBounds: boundsToJson(f.lowerBounds),
    upperBounds: boundsToJson(f.upperBounds),
    keyMetadata: f.keyMetadata === undefined ? undefined : b64(f.keyMetadata),
    splitOffsets: f.splitOffsets,
    equalityIds: f.equalityIds,
    sortOrderId: f.sortOrderId,
    referencedDataFile: f.referencedDataFile,
  };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Decoding helpers
// ---------------------------------------------------------------------------------------------------

type Obj = Readonly<Record<string, unknown>>;

function obj(v: unknown, what: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(what, 'expected an object');
  return v as Obj;
}

function arr(v: unknown, what: string): readonly unknown[] {
  if (!Array.isArray(v)) throw bad(what, 'expected an array');
  return v;
}

function str(o: Obj, key: string, what: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw bad(what, `"${key}" must be a string`);
  return v;
}

function int(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw bad(what, 'expected an integer');
  return v;
}

function long(v: unknown, what: string): bigint {
  if (typeof v !== 'number' && typeof v !== 'bigint') throw bad(what, 'expected an integer');
  try {
    return toBigInt(v, what);
  } catch (e) {
    throw bad(what, 'expected an integer', e);
  }
}

function optTimestamp(o: Obj, key: string, what: string): { maxTimestampMs?: number } {
  const v = o[key];
  return v === undefined || v === null ? {} : { maxTimestampMs: int(v, `${what}.${key}`) };
}

function countsFromJson(v: unknown, what: string): Map<number, bigint> {
  return new Map(
    arr(v, what).map((e, i) => {
      const pair = arr(e, `${what}[${i}]`);
      if (pair.length !== 2) throw bad(`${what}[${i}]`, 'expected [fieldId, value]');
      return [int(pair[0], `${what}[${i}]`), long(pair[1], `${what}[${i}]`)];
    }),
  );
}

function boundsFromJson(v: unknown, what: string): Map<number, Uint8Array> {
  return new Map(
    arr(v, what).map((e, i) => {
      const pair = arr(e, `${what}[${i}]`);
      if (pair.length !== 2) throw bad(`${what}[${i}]`, 'expected [fieldId, base64]');
      return [int(pair[0], `${what}[${i}]`), unb64(pair[1], `${what}[${i}]`)];
    }),
  );
}

export function dataFileFromJson(j: unknown, what = 'data file'): DataFile {
  const o = obj(j, what);
  const content = int(o['content'], `${what}.content`);
  if (content !== 0 && content !== 1 && content !== 2) throw bad(`${what}.content`, `unknown content ${content}`);
  const opt = <T>(key: string, f: (v: unknown, w: string) => T): Record<string, T> => (o[key] === undefined ? {} : { [key]: f(o[key], `${what}.${key}`) });
  return {
    content: content as FileContent,
    filePath: str(o, 'path', what),
    fileFormat: str(o, 'format', what),
    specId: int(o['specId'], `${what}.specId`),
    partition: arr(o['partition'], `${what}.partition`).map((v, i) => partitionValueFromJson(v, `${what}.partition[${i}]`)),
    recordCount: long(o['recordCount'], `${what}.recordCount`),
    fileSizeInBytes: long(o['fileSize'], `${what}.fileSize`),
    ...opt('columnSizes', countsFromJson),
    ...opt('valueCounts', countsFromJson),
    ...opt('nullValueCounts', countsFromJson),
    ...opt('nanValueCounts', countsFromJson),
    ...opt('lowerBounds', boundsFromJson),
    ...opt('upperBounds', boundsFromJson),
    ...opt('keyMetadata', unb64),
    ...opt('splitOffsets', (v, w) => arr(v, w).map((x, i) => long(x, `${w}[${i}]`))),
    ...opt('equalityIds', (v, w) => arr(v, w).map((x, i) => int(x, `${w}[${i}]`))),
    ...opt('sortOrderId', int),
    ...opt('referencedDataFile', (v, w) => {
      if (typeof v !== 'string') throw bad(w, 'expected a string');
      return v;
    }),
  };
}

function spanToJson(s: SourceSpan): Record<string, unknown> {
  return {
    topic: s.topic,
    partition: s.partition,
    firstOffset: s.firstOffset,
    lastOffset: s.lastOffset,
    ...(s.maxTimestampMs === undefined ? {} : { maxTimestampMs: s.maxTimestampMs }),
  };
}

function spanFromJson(j: unknown, what: string): SourceSpan {
  const o = obj(j, what);
  const span: SourceSpan = {
    topic: str(o, 'topic', what),
    partition: int(o['partition'], `${what}.partition`),
    firstOffset: long(o['firstOffset'], `${what}.firstOffset`),
    lastOffset: long(o['lastOffset'], `${what}.lastOffset`),
    ...optTimestamp(o, 'maxTimestampMs', what),
  };
  if (span.firstOffset < 0n || span.lastOffset < span.firstOffset) throw bad(what, 'offsets must satisfy 0 <= firstOffset <= lastOffset');
  return span;
}

function header(type: ControlEvent['type']): Record<string, unknown> {
  return { format: CONTROL_FORMAT, version: `${CONTROL_VERSION_MAJOR}.${CONTROL_VERSION_MINOR}`, type };
}

function partToJson(p: AnnouncementPart): Record<string, unknown> {
  return {
    ...header('announcement'),
    connector: p.connector,
    taskId: p.taskId,
    cycleId: p.cycleId,
    table: { namespace: [...p.table.namespace], name: p.table.name },
    tableUuid: p.tableUuid,
    schemaId: p.schemaId,
    specId: p.specId,
    part: p.part,
    parts: p.parts,
    sourceSpans: p.sourceSpans.map(spanToJson),
    files: p.files.map(dataFileToJson),
  };
}

function cycleCompleteToJson(c: CycleComplete): Record<string, unknown> {
  return {
    ...header('cycle-complete'),
    connector: c.connector,
    taskId: c.taskId,
    cycleId: c.cycleId,
    assignments: c.assignments.map((a) => ({
      topic: a.topic,
      partition: a.partition,
      nextOffset: a.nextOffset,
      ...(a.maxTimestampMs === undefined ? {} : { maxTimestampMs: a.maxTimestampMs }),
      caughtUp: a.caughtUp,
      ...(a.endOffset === undefined ? {} : { endOffset: a.endOffset }),
    })),
    ...(c.caughtUpAtMs === undefined ? {} : { caughtUpAtMs: c.caughtUpAtMs }),
  };
}

/** Encodes one control event (an announcement part, or a cycle-complete) as one record value. */
export function encodeControlEvent(e: ControlEvent): Uint8Array {
  return utf8.encode(stringifyJson(e.type === 'announcement' ? partToJson(e) : cycleCompleteToJson(e)));
}

/** Decodes one record value. Unknown major version, wrong format marker or malformed content: FatalError. */
export function decodeControlEvent(bytes: Uint8Array): ControlEvent {
  let text: string;
  let doc: unknown;
  try {
    text = utf8Decoder.decode(bytes);
    doc = parseJson(text);
  } catch (e) {
    throw bad('record', 'not UTF-8 JSON', e);
  }
  const o = obj(doc, 'record');
  if (o['format'] !== CONTROL_FORMAT) throw bad('record', `format must be "${CONTROL_FORMAT}"`);
  const version = o['version'];
  const m = typeof version === 'string' ? /^(\d+)\.(\d+)$/.exec(version) : null;
  if (m === null) throw bad('record', '"version" must be "<major>.<minor>"');
  if (Number(m[1]) !== CONTROL_VERSION_MAJOR) {
    throw new FatalError(`control event version ${String(version)} is not supported (this worker reads major version ${CONTROL_VERSION_MAJOR})`, {
      context: { version, supportedMajor: CONTROL_VERSION_MAJOR },
    });
  }
  const type = o['type'];
  const common = { connector: str(o, 'connector', 'record'), taskId: int(o['taskId'], 'taskId'), cycleId: str(o, 'cycleId', 'record') };
  if (type === 'announcement') {
    const t = obj(o['table'], 'table');
    const part = int(o['part'], 'part');
    const parts = int(o['parts'], 'parts');
    if (parts < 1 || part < 0 || part >= parts) throw bad('record', `part ${part} of ${parts} is out of range`);
    return {
      type,
      ...common,
      table: { namespace: arr(t['namespace'], 'table.namespace').map((n, i) => (typeof n === 'string' ? n : failStr(`table.namespace[${i}]`))), name: str(t, 'name', 'table') },
      tableUuid: str(o, 'tableUuid', 'record'),
      schemaId: int(o['schemaId'], 'schemaId'),
      specId: int(o['specId'], 'specId'),
      part,
      parts,
      sourceSpans: arr(o['sourceSpans'], 'sourceSpans').map((s, i) => spanFromJson(s, `sourceSpans[${i}]`)),
      files: arr(o['files'], 'files').map((f, i) => dataFileFromJson(f, `files[${i}]`)),
    };
  }
  if (type === 'cycle-complete') {
    return {
      type,
      ...common,
      assignments: arr(o['assignments'], 'assignments').map((a, i) => {
        const w = `assignments[${i}]`;
        const ao = obj(a, w);
        if (typeof ao['caughtUp'] !== 'boolean') throw bad(w, '"caughtUp" must be a boolean');
        return {
          topic: str(ao, 'topic', w),
          partition: int(ao['partition'], `${w}.partition`),
          nextOffset: long(ao['nextOffset'], `${w}.nextOffset`),
          ...optTimestamp(ao, 'maxTimestampMs', w),
          caughtUp: ao['caughtUp'],
          ...(ao['endOffset'] === undefined || ao['endOffset'] === null ? {} : { endOffset: long(ao['endOffset'], `${w}.endOffset`) }),
        };
      }),
      ...(o['caughtUpAtMs'] === undefined || o['caughtUpAtMs'] === null ? {} : { caughtUpAtMs: int(o['caughtUpAtMs'], 'caughtUpAtMs') }),
    };
  }
  throw bad('record', `unknown event type ${JSON.stringify(String(type))}`);
}

/** How the committer treats one record of a (possibly shared) control topic; see "Sharing" above. */
export type ControlRecordClass =
  | { readonly kind: 'ours'; readonly event: ControlEvent }
  /** This connector's record that cannot be read: it stops this connector's tables (never skipped). */
  | { readonly kind: 'ours-unreadable'; readonly code: 'unsupported-version' | 'malformed'; readonly error: string }
  /** An Icefloe record of another connector (any version): not decoded, ignored. */
  | { readonly kind: 'other-connector' }
  /** Not an Icefloe record (another product, garbage, a tombstone): ignored. */
  | { readonly kind: 'foreign' };

/** The header of an Icefloe envelope, read from the first bytes without decoding the rest. */
export interface ControlEnvelope {
  readonly major: number;
  readonly minor: number;
  readonly connector: string;
}

const ENVELOPE_PREFIX_BYTES = 1024;
/** Not fatal: a prefix may cut a multi-byte character (the replacement character lands past the header). */
const prefixDecoder = new TextDecoder('utf-8');
const ENVELOPE_RE = /^\{"format":"icefloe-control","version":"(\d+)\.(\d+)","type":"(?:[^"\\]|\\.)*","connector":("(?:[^"\\]|\\.)*")/;

/** Whether `key` is `controlRecordKey(connector, n)` for some task number n. */
export function isControlKeyOf(key: Uint8Array | null, connector: string): boolean {
  if (key === null) return false;
  let text: string;
  try {
    text = utf8Decoder.decode(key);
  } catch {
    return false;
  }
  const prefix = `${connector}/`;
  return text.startsWith(prefix) && /^\d+$/.test(text.slice(prefix.length));
}

/** The envelope header when `value` starts like an Icefloe control record (any version), else undefined. */
export function controlEnvelope(value: Uint8Array): ControlEnvelope | undefined {
  const head = prefixDecoder.decode(value.subarray(0, ENVELOPE_PREFIX_BYTES));
  const m = ENVELOPE_RE.exec(head);
  if (m === null) return undefined;
  let connector: unknown;
  try {
    connector = JSON.parse(m[3] as string);
  } catch {
    return undefined;
  }
  return typeof connector === 'string' ? { major: Number(m[1]), minor: Number(m[2]), connector } : undefined;
}

/**
 * Sorts one control record for `connector`'s committer. Only records that are ours (by key or by
 * envelope) are decoded, so a shared topic's foreign traffic costs a key comparison and a short regex,
 * never a full parse. An unreadable record of ours is `unsupported-version` when its JSON says
 * `"format":"icefloe-control"` with another major version, else `malformed`.
 */
export function classifyControlRecord(connector: string, key: Uint8Array | null, value: Uint8Array | null): ControlRecordClass {
  if (value === null) return { kind: 'foreign' };
  const envelope = controlEnvelope(value);
  if (!isControlKeyOf(key, connector) && envelope?.connector !== connector) return envelope === undefined ? { kind: 'foreign' } : { kind: 'other-connector' };
  try {
    return { kind: 'ours', event: decodeControlEvent(value) };
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    return { kind: 'ours-unreadable', code: isUnsupportedControlVersion(value) ? 'unsupported-version' : 'malformed', error };
  }
}

/** A JSON object with `"format":"icefloe-control"` and a version whose major this reader does not know. */
export function isUnsupportedControlVersion(value: Uint8Array): boolean {
  let doc: unknown;
  try {
    doc = parseJson(utf8Decoder.decode(value));
  } catch {
    return false;
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return false;
  const o = doc as Obj;
  const m = typeof o['version'] === 'string' ? /^(\d+)\.(\d+)$/.exec(o['version']) : null;
  return o['format'] === CONTROL_FORMAT && m !== null && Number(m[1]) !== CONTROL_VERSION_MAJOR;
}

function failStr(what: string): never {
  throw bad(what, 'expected a string');
}

// ---------------------------------------------------------------------------------------------------
// Splitting and reassembly
// ---------------------------------------------------------------------------------------------------

/**
 * The announcement as one or more records, each at most `maxRecordBytes` long. Spans and files are
 * packed in order (spans first), greedily; the sizes are exact because JSON without whitespace is the
 * header plus each item's own text plus one comma between items. A file whose metrics alone would not fit
 * next to the header keeps its data fields and gives up metrics until it fits (metrics-trim.ts: bounds
 * first, the widest columns first; then whole count maps); `onTrimmed` hears of each such file. A span,
 * or a file that does not fit even without metrics, is a FatalError (raise the topic's max.message.bytes).
 */
export function encodeAnnouncement(a: Announcement, maxRecordBytes: number, onTrimmed?: (trim: MetricsTrim) => void): Uint8Array[] {
  const base = (part: number, parts: number, sourceSpans: readonly SourceSpan[], files: readonly DataFile[]): AnnouncementPart => ({
    type: 'announcement',
    connector: a.connector,
    taskId: a.taskId,
    cycleId: a.cycleId,
    table: a.table,
    tableUuid: a.tableUuid,
    schemaId: a.schemaId,
    specId: a.specId,
    part,
    parts,
    sourceSpans,
    files,
  });
  const whole = encodeControlEvent(base(0, 1, a.sourceSpans, a.files));
  if (whole.byteLength <= maxRecordBytes) return [whole];

  // Header size with the widest possible part numbers, so renumbering can only shrink a part.
  const headerBytes = encodeControlEvent(base(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, [], [])).byteLength;
  const spanSizes = a.sourceSpans.map((s) => utf8.encode(stringifyJson(spanToJson(s))).byteLength);
  const fileSizes = a.files.map(fileJsonBytes);
  interface Bin {
    spans: SourceSpan[];
    files: DataFile[];
    size: number;
  }
  const bins: Bin[] = [];
  let bin: Bin = { spans: [], files: [], size: headerBytes };
  const add = (size: number, count: number, push: (b: Bin) => void, what: string): void => {
    const extra = size + (count > 0 ? 1 : 0);
    if (bin.size + extra > maxRecordBytes && (bin.spans.length > 0 || bin.files.length > 0)) {
      bins.push(bin);
      bin = { spans: [], files: [], size: headerBytes };
      return add(size, 0, push, what);
    }
    if (bin.size + extra > maxRecordBytes) {
      throw new FatalError(`${what} of the announcement for ${tableRefString(a.table)} alone exceeds the control record limit of ${maxRecordBytes} bytes`, {
        context: { table: tableRefString(a.table), maxRecordBytes, itemBytes: size, headerBytes },
      });
    }
    push(bin);
    bin.size += extra;
  };
  a.sourceSpans.forEach((s, i) => add(spanSizes[i] ?? 0, bin.spans.length, (b) => b.spans.push(s), `source span ${i}`));
  a.files.forEach((f, i) => {
    let file = f;
    let size = fileSizes[i] ?? 0;
    if (headerBytes + size > maxRecordBytes) {
      const trim = trimFileMetrics(f, maxRecordBytes - headerBytes, fileJsonBytes);
      if (trim.fits) {
        file = trim.file;
        size = trim.bytesAfter;
        onTrimmed?.(trim);
      }
    }
    add(size, bin.files.length, (b) => b.files.push(file), `data file ${f.filePath}`);
  });
  bins.push(bin);
  return bins.map((b, i) => {
    const bytes = encodeControlEvent(base(i, bins.length, b.spans, b.files));
    if (bytes.byteLength > maxRecordBytes) throw new FatalError(`announcement part ${i} is ${bytes.byteLength} bytes, over ${maxRecordBytes} (size accounting bug)`);
    return bytes;
  });
}

/** The bytes a data file takes in an announcement's `files` array. */
function fileJsonBytes(f: DataFile): number {
  return utf8.encode(stringifyJson(dataFileToJson(f))).byteLength;
}

/** Identity of one announcement: its parts share it. */
export function announcementKey(p: Pick<Announcement, 'connector' | 'taskId' | 'cycleId' | 'table'>): string {
  return JSON.stringify([p.connector, p.taskId, p.cycleId, [...p.table.namespace, p.table.name]]);
}

export type Reassembly =
  | { readonly kind: 'complete'; readonly announcement: Announcement }
  | { readonly kind: 'incomplete'; readonly parts: number; readonly missing: readonly number[] }
  | { readonly kind: 'inconsistent'; readonly message: string };

/**
 * Rebuilds one announcement from its parts (given in any order). Missing parts → `incomplete` with their
 * numbers; a duplicate part number, parts that disagree on the part count or on the header, or parts of
 * different announcements → `inconsistent`. Never guesses.
 */
export function reassembleAnnouncement(parts: readonly AnnouncementPart[]): Reassembly {
  const first = parts[0];
  if (first === undefined) return { kind: 'inconsistent', message: 'no parts' };
  const key = announcementKey(first);
  const byIndex = new Map<number, AnnouncementPart>();
  for (const p of parts) {
    if (announcementKey(p) !== key) return { kind: 'inconsistent', message: 'parts of different announcements' };
    if (p.parts !== first.parts) return { kind: 'inconsistent', message: `part counts differ (${first.parts} vs ${p.parts})` };
    if (p.tableUuid !== first.tableUuid || p.schemaId !== first.schemaId || p.specId !== first.specId) {
      return { kind: 'inconsistent', message: 'parts disagree on table uuid, schema id or spec id' };
    }
    if (byIndex.has(p.part)) return { kind: 'inconsistent', message: `part ${p.part} appears twice` };
    byIndex.set(p.part, p);
  }
  const missing: number[] = [];
  for (let i = 0; i < first.parts; i++) if (!byIndex.has(i)) missing.push(i);
  if (missing.length > 0) return { kind: 'incomplete', parts: first.parts, missing };
  const ordered = [...byIndex.entries()].sort((a, b) => a[0] - b[0]).map(([, p]) => p);
  return {
    kind: 'complete',
    announcement: {
      connector: first.connector,
      taskId: first.taskId,
      cycleId: first.cycleId,
      table: first.table,
      tableUuid: first.tableUuid,
      schemaId: first.schemaId,
      specId: first.specId,
      sourceSpans: ordered.flatMap((p) => p.sourceSpans),
      files: ordered.flatMap((p) => p.files),
    },
  };
}
