/**
 * The one error module. Every failure Icefloe raises is an `IcefloeError` with a closed `code` and a
 * `retriable` flag; callers decide what to do from the class and the flag, never from message text.
 *
 * Handling classes (one subclass each):
 * - `ConfigError`             a configuration that cannot work; fix it and try again
 * - `DataError`               one record is bad (bytes, schema, value); follows errors.tolerance / DLQ
 * - `RetriableError`          infrastructure hiccup (broker, registry, store, catalog); retry, never DLQ
 * - `CommitConflictError`     the catalog refused our commit's requirements; reload and re-apply
 * - `CommitStateUnknownError` we do not know whether the commit landed; reload and look for our commit id
 * - `FatalError`              an invariant is broken (fenced, identity mismatch); stop and say why
 * - `RequestRefused`          a control request (REST API → herder) that cannot be done; `reason` picks the status
 * - `LeaseLostError`          this process no longer holds a coordination lease (a committer's); stop acting on it
 * Adapters translate foreign errors into these once, at their boundary, keeping the original as `cause`.
 *
 * A failure that is one record's carries the record's Kafka coordinates (`record`): its message starts
 * with them, and `reason` is the message without them, for a line that names them itself (a task's
 * failure line, the worker's summary: runtime/worker.ts).
 */

export const ERROR_CODES = [
  'CONFIG_INVALID',
  'DATA_INVALID',
  'SERVICE_UNAVAILABLE',
  'COMMIT_CONFLICT',
  'COMMIT_STATE_UNKNOWN',
  'FATAL',
  'REQUEST_REFUSED',
  'LEASE_LOST',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorOptions {
  cause?: unknown;
  /** Structured facts for logs and status (never secrets). */
  context?: Readonly<Record<string, unknown>>;
  /** The record whose failure this is (its coordinates also go into `context` as topic, partition, offset). */
  record?: RecordCoordinates;
}

/** Where a record is in Kafka. */
export interface RecordCoordinates {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

/** `topic/partition@offset`, as failure lines and summaries show a record. */
export function formatCoordinates(c: RecordCoordinates): string {
  return `${c.topic}/${c.partition}@${c.offset}`;
}

export class IcefloeError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly context: Readonly<Record<string, unknown>>;
  /** The record whose failure this is, if it is one record's. */
  readonly record: RecordCoordinates | undefined;
  /** The message without the record's coordinates (the whole message when there is no record). */
  readonly reason: string;

  constructor(code: ErrorCode, message: string, retriable: boolean, options: ErrorOptions = {}) {
    const r = options.record;
    super(r === undefined ? message : `record ${formatCoordinates(r)}: ${message}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = retriable;
    this.record = r;
    this.reason = message;
    this.context = r === undefined ? (options.context ?? {}) : { ...options.context, topic: r.topic, partition: r.partition, offset: r.offset.toString() };
  }
}

export class ConfigError extends IcefloeError {
  constructor(message: string, options?: ErrorOptions) {
    super('CONFIG_INVALID', message, false, options);
  }
}

/**
 * Where on a record's way a data error arose (dead-letter records and the DLQ table say it):
 * `deserialize` its bytes could not be read (framing, schema id, truncated or invalid encoding, size);
 * `route` it routes to no table (or a table it may not go to); `convert` a value does not fit its table's
 * column (narrowing, a null where one is required, decimal overflow, a timestamp out of range); `write`
 * the table's writer refused the row.
 */
export type DataStage = 'deserialize' | 'route' | 'convert' | 'write';

export interface DataErrorOptions extends ErrorOptions {
  /** Where the error arose; when not given, the catcher decides from where it caught it. */
  stage?: DataStage;
}

export class DataError extends IcefloeError {
  readonly stage: DataStage | undefined;
  constructor(message: string, options?: DataErrorOptions) {
    super('DATA_INVALID', message, false, options);
    this.stage = options?.stage;
  }
}

export class RetriableError extends IcefloeError {
  constructor(message: string, options?: ErrorOptions) {
    super('SERVICE_UNAVAILABLE', message, true, options);
  }
}

export class CommitConflictError extends IcefloeError {
  constructor(message: string, options?: ErrorOptions) {
    super('COMMIT_CONFLICT', message, true, options);
  }
}

/** Not `retriable`: resending blindly could commit twice. The caller reloads and checks instead. */
export class CommitStateUnknownError extends IcefloeError {
  constructor(message: string, options?: ErrorOptions) {
    super('COMMIT_STATE_UNKNOWN', message, false, options);
  }
}

export class FatalError extends IcefloeError {
  constructor(message: string, options?: ErrorOptions) {
    super('FATAL', message, false, options);
  }
}

/**
 * Why the herder refused a request; the REST layer maps each to one HTTP status (rest/server.ts):
 * not-found 404, already-exists 409, conflict 409 (transient: clients retry), bad-request 400,
 * forbidden 403, timeout 500, failed 500.
 */
export type RefusalReason = 'not-found' | 'already-exists' | 'conflict' | 'bad-request' | 'forbidden' | 'timeout' | 'failed';

/** A control request refused; the message is what the client reads (verbatim where clients match on it). */
export class RequestRefused extends IcefloeError {
  readonly refusal: RefusalReason;
  constructor(refusal: RefusalReason, message: string, options?: ErrorOptions) {
    super('REQUEST_REFUSED', message, refusal === 'conflict', options);
    this.refusal = refusal;
  }
}

/**
 * A coordination lease (distributed mode: the per-table committer's) is no longer ours: Redis refused the
 * token, the renewal failed, or this process's own clock says it may have expired (a frozen process).
 * Not `retriable`: repeating the action cannot succeed; the holder stops what the lease guarded and
 * competes for the lease again like any other worker. `context.lease` names it.
 */
export class LeaseLostError extends IcefloeError {
  constructor(message: string, options?: ErrorOptions) {
    super('LEASE_LOST', message, false, options);
  }
}

/** True only for our own errors that say a retry may succeed; anything foreign is not retriable. */
export function isRetriable(error: unknown): boolean {
  return error instanceof IcefloeError && error.retriable;
}

/** The message of anything thrown, for logs and status (an Error's message, anything else as text). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * What a failure line says about `error`: the coordinates of the record whose failure it is (the first
 * along its `cause` chain that names one) and the cause without them, on one line.
 */
export function describeFailure(error: unknown): { readonly record?: RecordCoordinates; readonly cause: string } {
  let record: RecordCoordinates | undefined;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 10 && record === undefined; e = e.cause, depth++) {
    if (e instanceof IcefloeError) record = e.record;
  }
  const text = error instanceof IcefloeError && error.record !== undefined ? error.reason : errorMessage(error);
  const cause = text.replace(/\s*\n\s*/g, ' ').trim();
  return record === undefined ? { cause } : { record, cause };
}
