/**
 * Where the sink's consumer starts reading a newly assigned partition, and what it does when the group's
 * committed offset is no longer in the partition's log (review O6). Shared by the confluent adapter and the
 * in-memory fake, so both behave alike.
 *
 * Icefloe's rule (the design's; Connect's sink consumer would silently reset instead):
 * - no committed offset: start at the earliest offset (Connect's sink default), or where the user's
 *   `auto.offset.reset` says;
 * - a committed offset inside [log start, high watermark]: start there;
 * - a committed offset outside it (records deleted by retention or DeleteRecords, or the topic deleted and
 *   recreated): a `FatalError` naming the partition, the offset, the log's range and the way out — unless
 *   the user configured `auto.offset.reset` (consumer.override. or the worker's consumer.), which then
 *   applies here too, with a warning naming the records skipped.
 *
 * Owns: the decision and its messages. Must not: talk to Kafka.
 */
import { ConfigError, FatalError } from '../core/errors.ts';
import { partitionKey } from './port.ts';
import type { TopicPartition } from './port.ts';

/** A user's `auto.offset.reset`, normalised (librdkafka's and Java's spellings). */
export type OffsetReset = 'earliest' | 'latest' | 'error';

const RESET_SPELLINGS: Readonly<Record<string, OffsetReset>> = {
  earliest: 'earliest',
  smallest: 'earliest',
  beginning: 'earliest',
  latest: 'latest',
  largest: 'latest',
  end: 'latest',
  error: 'error',
  none: 'error', // Java's name for "fail"
};

/** Parses a configured `auto.offset.reset`; undefined when it is not set. */
export function parseOffsetReset(value: string | undefined): OffsetReset | undefined {
  if (value === undefined) return undefined;
  const reset = RESET_SPELLINGS[value.trim().toLowerCase()];
  if (reset === undefined) {
    throw new ConfigError(`auto.offset.reset=${value} is not one of earliest, latest, none (or librdkafka's smallest, largest, beginning, end, error)`, {
      context: { key: 'auto.offset.reset' },
    });
  }
  return reset;
}

/** The log's offsets: records live in [low, high). */
export interface LogRange {
  readonly low: bigint;
  readonly high: bigint;
}

export type StartPosition = { readonly kind: 'offset'; readonly offset: bigint } | { readonly kind: 'earliest' } | { readonly kind: 'latest' };

export interface StartDecision {
  readonly start: StartPosition;
  /** Set when a configured reset moved a committed offset that was outside the log: what to log. */
  readonly reset?: { readonly message: string; readonly fields: Readonly<Record<string, string>> };
}

const WAY_OUT =
  'Icefloe never skips or re-reads records on its own here: move the group\'s offset for this partition ' +
  '(kafka-consumer-groups --reset-offsets) to where the table should continue, or set ' +
  'consumer.override.auto.offset.reset=earliest (or latest) to let the consumer reset, then restart the task';

/** The error for a position outside the log: which partition, which offset, which range, and what to do. */
export function offsetOutOfRangeError(tp: TopicPartition, offset: bigint, log: LogRange | undefined, what = 'the group\'s committed offset'): FatalError {
  const range = log === undefined ? 'the log' : `the log, which holds offsets ${log.low} to ${log.high - 1n} (high watermark ${log.high})`;
  const cause =
    log === undefined
      ? ''
      : offset < log.low
        ? `: records ${offset} to ${log.low - 1n} were deleted (retention or DeleteRecords) before the sink read them`
        : ': the offset is beyond the end of the log (was the topic deleted and recreated?)';
  return new FatalError(`Kafka partition ${partitionKey(tp)}: ${what} ${offset} is outside ${range}${cause}. ${WAY_OUT}`, {
    context: { partition: partitionKey(tp), offset: String(offset), logStart: log === undefined ? null : String(log.low), highWatermark: log === undefined ? null : String(log.high) },
  });
}

/** The group's committed offset of a partition and, with it, the partition's log range; null: none committed. */
export type CommittedInLog = { readonly offset: bigint; readonly log: LogRange } | null;

/** Where to start `tp` given the group's committed offset (with the log's range) and the user's reset (undefined: not configured). */
export function startPosition(tp: TopicPartition, committedInLog: CommittedInLog, reset: OffsetReset | undefined): StartDecision {
  if (committedInLog === null) {
    if (reset === 'error') {
      throw new FatalError(
        `Kafka partition ${partitionKey(tp)}: the group has no committed offset and auto.offset.reset=${reset}: ` +
          'set an offset for the group, or remove the setting (then the partition is read from its earliest offset)',
        { context: { partition: partitionKey(tp) } },
      );
    }
    return { start: reset === 'latest' ? { kind: 'latest' } : { kind: 'earliest' } };
  }
  const { offset: committed, log } = committedInLog;
  if (committed >= log.low && committed <= log.high) return { start: { kind: 'offset', offset: committed } };
  if (reset === undefined || reset === 'error') throw offsetOutOfRangeError(tp, committed, log);
  const parts = [committed < log.low ? `records ${committed} to ${log.low - 1n} were deleted before the sink read them` : 'the committed offset is beyond the end of the log (topic recreated?)'];
  if (reset === 'earliest') parts.push(`auto.offset.reset=earliest continues at offset ${log.low}`);
  else {
    parts.push(`auto.offset.reset=latest continues at offset ${log.high}`);
    if (log.high > log.low) parts.push(`records ${log.low} to ${log.high - 1n} are skipped too`);
  }
  return {
    start: reset === 'earliest' ? { kind: 'earliest' } : { kind: 'latest' },
    reset: {
      message: `committed offset outside the log: ${parts.join('; ')}`,
      fields: { partition: partitionKey(tp), committed: String(committed), logStart: String(log.low), highWatermark: String(log.high) },
    },
  };
}
