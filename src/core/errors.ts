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
 * Adapters translate foreign errors into these once, at their boundary, keeping the original as `cause`.
 */

export const ERROR_CODES = [
  'CONFIG_INVALID',
  'DATA_INVALID',
  'SERVICE_UNAVAILABLE',
  'COMMIT_CONFLICT',
  'COMMIT_STATE_UNKNOWN',
  'FATAL',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorOptions {
  cause?: unknown;
  /** Structured facts for logs and status (never secrets). */
  context?: Readonly<Record<string, unknown>>;
}

export class IcefloeError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly context: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, retriable: boolean, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = retriable;
    this.context = options.context ?? {};
  }
}

export class ConfigError extends IcefloeError {
  constructor(message: string, options?: ErrorOptions) {
    super('CONFIG_INVALID', message, false, options);
  }
}

export class DataError extends IcefloeError {
  constructor(message: string, options?: ErrorOptions) {
    super('DATA_INVALID', message, false, options);
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

/** True only for our own errors that say a retry may succeed; anything foreign is not retriable. */
export function isRetriable(error: unknown): boolean {
  return error instanceof IcefloeError && error.retriable;
}

/** The message of anything thrown, for logs and status (an Error's message, anything else as text). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
