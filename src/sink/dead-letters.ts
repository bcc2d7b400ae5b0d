/**
 * Dead letters: a record that failed with a deterministic data error under errors.tolerance=all, kept
 * instead of skipped. Two destinations, either or both:
 *
 * - the dead-letter TOPIC (Connect's `errors.deadletterqueue.*`): the record's key, value, headers and
 *   timestamp as read, plus Connect's `__connect.errors.*` context headers when enabled. The channel
 *   produces a cycle's dead letters inside the cycle's one Kafka transaction (coordinate/task-channel.ts),
 *   so they are committed exactly when the offsets that consumed their records are: an abandoned cycle
 *   drops them with its files, and the records are read, failed and dead-lettered again.
 * - the dead-letter TABLE (`icefloe.errors.deadletterqueue.table.name`): one row per failure, written by
 *   the sink writer like any other table's rows and announced and committed with them, so it is exactly
 *   once by the same protocol. Its row is encoded here with a fixed Avro schema and read by the same Avro
 *   decoder every Avro topic uses (a format over a resolver that knows that one schema): no second writer
 *   path, and the table is created and evolved like any other.
 *
 * A failed copy (a record that went to some of its tables but not to one) is one dead letter naming that
 * table; a record that reached none of its tables is one dead letter without a table.
 *
 * Owns: the dead-letter record and row formats, Connect's header names, the per-cycle buffer of topic
 * records. Must not: decide what is a data error (the writer does) or produce (the channel does).
 */
import avro from 'avsc';
import type { DataError, DataStage } from '../core/errors.ts';
import type { OutgoingRecord, RawRecord, RecordHeader } from '../consume/port.ts';
import { valueFormat } from '../decode/value-format.ts';
import type { ValueFormat } from '../decode/value-format.ts';
import type { RegisteredSchema, SchemaResolver } from '../decode/registry-port.ts';

/** One failure to keep. */
export interface DeadLetter {
  readonly record: RawRecord;
  readonly error: DataError;
  readonly stage: DataStage;
  /** The table whose copy failed when the record went to its other tables; undefined: it went nowhere. */
  readonly table: string | undefined;
  readonly failedAtMs: number;
}

/** What every dead letter of a task says about where it was made. */
export interface DeadLetterSource {
  readonly connector: string;
  readonly taskId: number;
  /** The effective value converter's class (Connect's executing class at the converter stage). */
  readonly valueConverterClass: string;
  /** The connector class (Connect's executing class at the put stage). */
  readonly connectorClass: string;
}

/** Connect's context header names (DeadLetterQueueReporter), and ours. */
export const DLQ_HEADERS = {
  topic: '__connect.errors.topic',
  partition: '__connect.errors.partition',
  offset: '__connect.errors.offset',
  connector: '__connect.errors.connector.name',
  task: '__connect.errors.task.id',
  stage: '__connect.errors.stage',
  executingClass: '__connect.errors.class.name',
  exceptionClass: '__connect.errors.exception.class.name',
  message: '__connect.errors.exception.message',
  stackTrace: '__connect.errors.exception.stacktrace',
  icefloeStage: '__icefloe.errors.stage',
  icefloeTable: '__icefloe.errors.table',
} as const;

/** Connect's stage for ours: reading the bytes is the value converter's work, the rest the task's put. */
export function connectStage(stage: DataStage): 'VALUE_CONVERTER' | 'TASK_PUT' {
  return stage === 'deserialize' ? 'VALUE_CONVERTER' : 'TASK_PUT';
}

/** The exception class a dead letter names: our error class, qualified as Connect's Java names are. */
export function errorClassName(error: DataError): string {
  return `io.icefloe.errors.${error.name}`;
}

/** Stack traces are cut here: a dead letter must stay well under the broker's message size. */
const MAX_STACK_CHARS = 8 * 1024;
const MAX_MESSAGE_CHARS = 16 * 1024;

const utf8 = new TextEncoder();
const header = (key: string, value: string): RecordHeader => ({ key, value: utf8.encode(value) });

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** The dead-letter topic's record: the original as read, plus the context headers when enabled. */
export function deadLetterTopicRecord(letter: DeadLetter, topic: string, contextHeaders: boolean, source: DeadLetterSource): OutgoingRecord {
  const r = letter.record;
  const headers: RecordHeader[] = [...r.headers];
  if (contextHeaders) {
    const stage = connectStage(letter.stage);
    headers.push(
      header(DLQ_HEADERS.topic, r.topic),
      header(DLQ_HEADERS.partition, String(r.partition)),
      header(DLQ_HEADERS.offset, r.offset.toString()),
      header(DLQ_HEADERS.connector, source.connector),
      header(DLQ_HEADERS.task, String(source.taskId)),
      header(DLQ_HEADERS.stage, stage),
      header(DLQ_HEADERS.executingClass, stage === 'VALUE_CONVERTER' ? source.valueConverterClass : source.connectorClass),
      header(DLQ_HEADERS.exceptionClass, errorClassName(letter.error)),
      header(DLQ_HEADERS.message, cut(letter.error.message, MAX_MESSAGE_CHARS)),
      header(DLQ_HEADERS.stackTrace, cut(letter.error.stack ?? letter.error.message, MAX_STACK_CHARS)),
      header(DLQ_HEADERS.icefloeStage, letter.stage),
    );
    if (letter.table !== undefined) headers.push(header(DLQ_HEADERS.icefloeTable, letter.table));
  }
  // Connect keeps the original timestamp, or stamps the time of the failure when the record had none.
  const timestamp = r.timestamp === null || r.timestamp < 0 ? letter.failedAtMs : r.timestamp;
  return { topic, key: r.key, value: r.value, headers, timestamp };
}

// -- the dead-letter table ------------------------------------------------------------------------------

/**
 * The dead-letter table's row as an Avro record (its Iceberg schema follows from it: decode/avro-schema.ts).
 * Timestamps are millisecond timestamps (timestamptz columns); headers keep their order and repeats.
 */
export const DEAD_LETTER_AVRO_SCHEMA = {
  type: 'record',
  name: 'DeadLetter',
  namespace: 'io.icefloe',
  fields: [
    { name: 'topic', type: 'string' },
    { name: 'partition', type: 'int' },
    { name: 'offset', type: 'long' },
    { name: 'timestamp', type: ['null', { type: 'long', logicalType: 'timestamp-millis' }], default: null },
    { name: 'key', type: ['null', 'bytes'], default: null },
    { name: 'value', type: ['null', 'bytes'], default: null },
    {
      name: 'headers',
      type: { type: 'array', items: { type: 'record', name: 'Header', fields: [{ name: 'key', type: 'string' }, { name: 'value', type: ['null', 'bytes'], default: null }] } },
    },
    { name: 'stage', type: 'string' },
    { name: 'table', type: ['null', 'string'], default: null },
    { name: 'error_class', type: 'string' },
    { name: 'error_message', type: 'string' },
    { name: 'connector', type: 'string' },
    { name: 'task', type: 'int' },
    { name: 'failed_at', type: { type: 'long', logicalType: 'timestamp-millis' } },
  ],
} as const;

const ROW_SCHEMA_ID = 0;
const ROW_TYPE = avro.Type.forSchema(DEAD_LETTER_AVRO_SCHEMA as unknown as avro.Schema);
const REGISTERED: RegisteredSchema = Object.freeze({ id: ROW_SCHEMA_ID, type: 'AVRO', schema: JSON.stringify(DEAD_LETTER_AVRO_SCHEMA) });

/** A resolver that knows one schema, the dead-letter row's (nothing to fetch: it is ours). */
const ROW_RESOLVER: SchemaResolver = {
  byId: (id) => (id === ROW_SCHEMA_ID ? Promise.resolve(REGISTERED) : Promise.reject(new Error(`the dead-letter row format has no schema id ${id}`))),
};

/** The format the dead-letter table's sink reads its rows with. */
export function deadLetterFormat(): ValueFormat {
  return valueFormat({ className: 'io.icefloe.DeadLetterRow', kind: 'avro', schemasEnable: false }, ROW_RESOLVER, { caseInsensitive: false, forceOptional: false });
}

/** The dead-letter table's row for `letter`, Confluent-framed for `deadLetterFormat()`. */
export function deadLetterRow(letter: DeadLetter, source: DeadLetterSource): Uint8Array {
  const r = letter.record;
  const body = ROW_TYPE.toBuffer({
    topic: r.topic,
    partition: r.partition,
    offset: Number(r.offset),
    timestamp: r.timestamp === null || r.timestamp < 0 ? null : r.timestamp,
    key: r.key === null ? null : Buffer.from(r.key),
    value: r.value === null ? null : Buffer.from(r.value),
    headers: r.headers.map((h) => ({ key: h.key, value: h.value === null ? null : Buffer.from(h.value) })),
    stage: letter.stage,
    table: letter.table ?? null,
    error_class: errorClassName(letter.error),
    error_message: cut(letter.error.message, MAX_MESSAGE_CHARS),
    connector: source.connector,
    task: source.taskId,
    failed_at: letter.failedAtMs,
  });
  const framed = new Uint8Array(5 + body.length);
  framed.set(body, 5); // magic byte 0, schema id 0
  return framed;
}
