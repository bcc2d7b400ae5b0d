/**
 * Commit with retry: turns one logical commit (identified by a commit id) into exactly one change of the
 * table, whatever the catalog answers (docs/architecture.md, "Idempotent commits").
 *
 * Protocol, for every attempt:
 *   1. (Re)load the table. If the commit is already in it — a snapshot in the ancestry of the branch
 *      whose summary carries `icefloe.commit-id` = ours — it landed: done. This runs before the first
 *      attempt too (a restarted committer) and after every failure, conflicts included (an attempt whose
 *      outcome was unknown may have landed after we reloaded, and then our resend conflicts with it).
 *   2. Build the request from the table as it is now (caller's `build`, which re-filters its inputs).
 *      It must assert the branch's snapshot (`assert-ref-snapshot-id`), so that two attempts built on the
 *      same state can never both land.
 *   3. Commit. Conflict → back off, go to 1. Unknown outcome → back off, go to 1 (never a blind resend).
 *      Retriable (the request never reached the catalog) → back off, go to 1. Anything else → throw.
 * When the attempts or the time are used up (or the caller stops us), one last reload settles it: our
 * commit there → committed; an unresolved unknown outcome → CommitStateUnknownError (the caller must not
 * delete the commit's files); otherwise the last conflict or retriable error.
 *
 * Bounds come from the table's properties as Iceberg's other writers read them (Java TableProperties,
 * `COMMIT_RETRY_PROPERTIES`), with Java's defaults; the caller's `retry` overrides them field by field.
 * The waits are core/retry.ts's policy.
 *
 * Owns: that loop, the ancestry lookup and the reading of the `commit.retry.*` properties. Must not import
 * catalog adapters, read a clock or do I/O of its own (the clock and randomness are injectable).
 */
import { CommitConflictError, CommitStateUnknownError, ConfigError, FatalError, IcefloeError, RetriableError } from '../core/errors.ts';
import { RetryBudget, checkBounds, retry } from '../core/retry.ts';
import type { RetryBounds, RetryControl } from '../core/retry.ts';
import { ancestors, refSnapshotId } from './model.ts';
import type { Snapshot, TableMetadata, TableRequirement, TableUpdate } from './model.ts';
import { formatIdentifier } from './port.ts';
import type { Catalog, LoadedTable, TableIdentifier } from './port.ts';

/** Snapshot summary key carrying the id of the logical commit that produced the snapshot. */
export const COMMIT_ID_KEY = 'icefloe.commit-id';

export interface CommitRequest {
  readonly requirements: readonly TableRequirement[];
  readonly updates: readonly TableUpdate[];
}

export interface CommitPlan {
  /** Stable across every attempt of this logical commit; `build` writes it into the snapshot summary. */
  readonly commitId: string;
  /** The branch the commit advances (default `main`). */
  readonly ref?: string;
  /**
   * The request against `table` as it is now, or `undefined` when nothing is left to commit (everything
   * it would carry is already in the table). Called once per attempt with a freshly loaded table.
   */
  build(table: LoadedTable, attempt: number): CommitRequest | undefined | Promise<CommitRequest | undefined>;
  /**
   * Whether this commit is already in the table. Default: `findCommit` over the ref's ancestry. A plan
   * whose commit adds no snapshot (a property-only change) supplies its own check.
   */
  isApplied?(table: LoadedTable): boolean;
  /**
   * The plan's requests cannot land twice without asserting the branch's snapshot: a schema change
   * asserts the schema it was computed from, a property change is idempotent. Snapshot-adding plans
   * leave this unset and must assert the branch.
   */
  readonly guardedByOwnRequirements?: boolean;
}

export type CommitEvent =
  | { readonly kind: 'attempt'; readonly attempt: number }
  | { readonly kind: 'conflict' | 'unknown-outcome' | 'retriable'; readonly attempt: number; readonly error: IcefloeError }
  | { readonly kind: 'reload-failed'; readonly attempt: number; readonly error: IcefloeError }
  | { readonly kind: 'found-applied'; readonly attempt: number; readonly afterUnknown: boolean };

/** Iceberg's commit retry table properties (Java `TableProperties.COMMIT_*`), as Spark, Flink and PyIceberg read them. */
export const COMMIT_RETRY_PROPERTIES = {
  numRetries: 'commit.retry.num-retries',
  minWaitMs: 'commit.retry.min-wait-ms',
  maxWaitMs: 'commit.retry.max-wait-ms',
  totalTimeoutMs: 'commit.retry.total-timeout-ms',
} as const;

/** Java's defaults: 4 retries (5 attempts), waits from 100 ms up to 1 minute, 30 minutes in all. */
export const COMMIT_RETRY_DEFAULTS: RetryBounds = { maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 60_000, totalTimeoutMs: 1_800_000 };

/**
 * The retry bounds a table's properties ask for (absent ones: Java's defaults). A value that is not a
 * non-negative integer is a ConfigError naming the property (Java fails the commit on it too). A minimum
 * wait above the maximum waits the maximum, as Java's exponential back-off does.
 */
export function commitRetryBounds(properties: Readonly<Record<string, string>>): RetryBounds {
  const int = (key: string, fallback: number): number => {
    const text = properties[key]?.trim();
    if (text === undefined) return fallback;
    const value = Number(text);
    if (text === '' || !Number.isSafeInteger(value) || value < 0) {
      throw new ConfigError(`table property ${key}=${JSON.stringify(text)} must be a non-negative integer`, { context: { property: key } });
    }
    return value;
  };
  const d = COMMIT_RETRY_DEFAULTS;
  const maxDelayMs = int(COMMIT_RETRY_PROPERTIES.maxWaitMs, d.maxDelayMs);
  return {
    maxAttempts: int(COMMIT_RETRY_PROPERTIES.numRetries, d.maxAttempts - 1) + 1,
    initialDelayMs: Math.min(int(COMMIT_RETRY_PROPERTIES.minWaitMs, d.initialDelayMs), maxDelayMs),
    maxDelayMs,
    totalTimeoutMs: int(COMMIT_RETRY_PROPERTIES.totalTimeoutMs, d.totalTimeoutMs),
  };
}

export interface CommitRetryOptions extends RetryControl {
  /** Overrides the table's `commit.retry.*` properties field by field (tests, tools; operators set the properties). */
  readonly retry?: Partial<RetryBounds>;
  /** Loads tried per reload before giving up (default 5); the waits follow the commit's bounds. */
  readonly reloadAttempts?: number;
  /** For logs and metrics (never carries secrets). */
  readonly onEvent?: (event: CommitEvent) => void;
}

export type CommitOutcome =
  | {
      /** `response`: the catalog confirmed it; `reload`: an unknown outcome resolved by finding the commit id. */
      readonly status: 'committed';
      readonly resolvedBy: 'response' | 'reload';
      readonly table: LoadedTable;
      readonly attempts: number;
    }
  /** The commit id was already in the table before this call sent anything (e.g. a restarted committer). */
  | { readonly status: 'already-applied'; readonly table: LoadedTable; readonly attempts: number }
  /** `build` found nothing left to commit. */
  | { readonly status: 'nothing-to-commit'; readonly table: LoadedTable; readonly attempts: number };

/** The snapshots of `ref`'s ancestry, newest first, as far back as the metadata still holds them. */
export function ancestry(md: TableMetadata, ref = 'main'): Generator<Snapshot> {
  return ancestors(md, refSnapshotId(md, ref));
}

/** The snapshot in `ref`'s ancestry that `commitId` produced, if any. */
export function findCommit(md: TableMetadata, commitId: string, ref = 'main'): Snapshot | undefined {
  for (const snap of ancestry(md, ref)) if (snap.summary[COMMIT_ID_KEY] === commitId) return snap;
  return undefined;
}

function guarded(request: CommitRequest, ref: string): boolean {
  return request.requirements.some((r) => r.type === 'assert-ref-snapshot-id' && r.ref === ref);
}

export async function commitWithRetry(
  catalog: Catalog,
  id: TableIdentifier,
  plan: CommitPlan,
  options: CommitRetryOptions = {},
  base?: LoadedTable,
): Promise<CommitOutcome> {
  const ref = plan.ref ?? 'main';
  const reloadAttempts = Math.max(1, options.reloadAttempts ?? 5);
  const emit = options.onEvent ?? (() => undefined);
  const isApplied = (t: LoadedTable): boolean => (plan.isApplied ? plan.isApplied(t) : findCommit(t.metadata, plan.commitId, ref) !== undefined);
  const context = { table: formatIdentifier(id), commitId: plan.commitId };
  const boundsOf = (t: LoadedTable | undefined): RetryBounds => checkBounds({ ...commitRetryBounds(t?.metadata.properties ?? {}), ...options.retry });
  /** An attempt whose outcome we do not know yet; set until a reload proves it landed. */
  let unresolved: CommitStateUnknownError | undefined;
  /** Whatever stopped us, an open outcome is still the caller's situation: it must keep the files. */
  const stillOpen = (e: unknown, why: string): unknown =>
    unresolved === undefined ? e : new CommitStateUnknownError(`commit ${plan.commitId} to ${context.table}: outcome unknown and ${why}`, { cause: e, context });

  /** Loads the table, retrying within the commit's bounds and what is left of its time (never less than one load). */
  const reload = async (attempt: number, bounds: RetryBounds, remainingMs: number): Promise<LoadedTable> => {
    try {
      return await retry(() => catalog.loadTable(id), {
        ...options,
        bounds: { ...bounds, maxAttempts: reloadAttempts, totalTimeoutMs: Math.max(0, remainingMs) },
        retriable: (e) => e instanceof RetriableError,
      });
    } catch (e) {
      if (e instanceof IcefloeError) emit({ kind: 'reload-failed', attempt, error: e });
      throw stillOpen(e, 'the table cannot be reloaded');
    }
  };

  let table = base ?? (await reload(0, boundsOf(undefined), Infinity));
  const bounds = boundsOf(table);
  const budget = new RetryBudget(bounds, options);
  for (;;) {
    const next = budget.attempts + 1;
    if (isApplied(table)) {
      emit({ kind: 'found-applied', attempt: next, afterUnknown: unresolved !== undefined });
      return unresolved !== undefined || next > 1
        ? { status: 'committed', resolvedBy: 'reload', table, attempts: next - 1 }
        : { status: 'already-applied', table, attempts: 0 };
    }
    const request = await plan.build(table, next);
    if (request === undefined) {
      // Nothing left to commit. If an attempt's outcome is open, "nothing left" may be because it landed
      // (the caller's inputs are filtered by what the table holds): either way nothing may be resent.
      return { status: 'nothing-to-commit', table, attempts: next - 1 };
    }
    if (plan.guardedByOwnRequirements !== true && !guarded(request, ref)) {
      throw new FatalError(`commit ${plan.commitId} to ${context.table} does not assert the snapshot of ${ref}: it could land twice`, { context });
    }
    let attempt: number;
    try {
      attempt = budget.start();
    } catch (e) {
      throw stillOpen(e, 'the commit was stopped');
    }
    emit({ kind: 'attempt', attempt });
    let error: IcefloeError;
    try {
      const committed = await catalog.commitTable(id, request.requirements, request.updates);
      return { status: 'committed', resolvedBy: 'response', table: committed, attempts: attempt };
    } catch (e) {
      if (e instanceof CommitConflictError) {
        emit({ kind: 'conflict', attempt, error: e });
      } else if (e instanceof CommitStateUnknownError) {
        unresolved = e;
        emit({ kind: 'unknown-outcome', attempt, error: e });
      } else if (e instanceof RetriableError) {
        emit({ kind: 'retriable', attempt, error: e });
      } else {
        throw e;
      }
      error = e;
    }
    const delay = budget.nextDelay();
    let goOn = delay !== undefined;
    try {
      if (delay !== undefined) goOn = await budget.wait(delay);
    } catch (e) {
      throw stillOpen(e, 'the retry was aborted');
    }
    table = await reload(attempt, bounds, budget.remainingMs());
    if (!goOn) return settle(table, error);
  }

  /** Out of attempts or time, or stopped: the last look settles an open outcome if the commit landed meanwhile. */
  function settle(last: LoadedTable, lastError: IcefloeError): CommitOutcome {
    const attempts = budget.attempts;
    if (isApplied(last)) {
      emit({ kind: 'found-applied', attempt: attempts + 1, afterUnknown: unresolved !== undefined });
      return { status: 'committed', resolvedBy: 'reload', table: last, attempts };
    }
    if (unresolved !== undefined) {
      throw new CommitStateUnknownError(`commit ${plan.commitId} to ${context.table}: outcome still unknown after ${attempts} attempts`, {
        cause: lastError,
        context: { ...context, attempts },
      });
    }
    throw lastError;
  }
}
