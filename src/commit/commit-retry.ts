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
 * After `maxAttempts`, a still-unresolved unknown outcome is thrown as CommitStateUnknownError (the caller
 * must not delete the commit's files), otherwise the last conflict or retriable error.
 *
 * Owns: that loop and the ancestry lookup. Must not import catalog adapters, read a clock or do I/O of
 * its own (sleep and randomness are injectable).
 */
import { CommitConflictError, CommitStateUnknownError, FatalError, IcefloeError, RetriableError } from '../core/errors.ts';
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

export interface CommitterOptions {
  /** Commit requests sent at most (default 5). */
  readonly maxAttempts?: number;
  /** Loads tried per reload before giving up (default 5). */
  readonly reloadAttempts?: number;
  /** Jittered exponential backoff between attempts (defaults 100 ms, 10 s). */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
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
  options: CommitterOptions = {},
  base?: LoadedTable,
): Promise<CommitOutcome> {
  const ref = plan.ref ?? 'main';
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5);
  const reloadAttempts = Math.max(1, options.reloadAttempts ?? 5);
  const baseDelay = options.baseDelayMs ?? 100;
  const maxDelay = options.maxDelayMs ?? 10_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const random = options.random ?? Math.random;
  const emit = options.onEvent ?? (() => undefined);
  const isApplied = (t: LoadedTable): boolean => (plan.isApplied ? plan.isApplied(t) : findCommit(t.metadata, plan.commitId, ref) !== undefined);
  const context = { table: formatIdentifier(id), commitId: plan.commitId };
  let delayStep = 0;
  const backoff = async (): Promise<void> => {
    delayStep++;
    const ceiling = Math.min(maxDelay, baseDelay * 2 ** (delayStep - 1));
    await sleep(Math.round(ceiling / 2 + (random() * ceiling) / 2));
  };

  /** An attempt whose outcome we do not know yet; set until a reload proves it landed. */
  let unresolved: CommitStateUnknownError | undefined;

  const reload = async (attempt: number): Promise<LoadedTable> => {
    for (let i = 1; ; i++) {
      try {
        return await catalog.loadTable(id);
      } catch (e) {
        if (!(e instanceof RetriableError) || i >= reloadAttempts) {
          if (e instanceof IcefloeError) emit({ kind: 'reload-failed', attempt, error: e });
          // We cannot check: if an attempt's outcome is open, that is still the caller's situation.
          if (unresolved !== undefined) {
            throw new CommitStateUnknownError(`commit ${plan.commitId} to ${context.table}: outcome unknown and the table cannot be reloaded`, {
              cause: e,
              context,
            });
          }
          throw e;
        }
        await backoff();
      }
    }
  };

  let table = base ?? (await reload(0));
  let lastError: IcefloeError | undefined;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (isApplied(table)) {
      emit({ kind: 'found-applied', attempt, afterUnknown: unresolved !== undefined });
      return unresolved !== undefined || attempt > 1
        ? { status: 'committed', resolvedBy: 'reload', table, attempts: attempt - 1 }
        : { status: 'already-applied', table, attempts: 0 };
    }
    const request = await plan.build(table, attempt);
    if (request === undefined) {
      // Nothing left to commit. If an attempt's outcome is open, "nothing left" may be because it landed
      // (the caller's inputs are filtered by what the table holds): either way nothing may be resent.
      return { status: 'nothing-to-commit', table, attempts: attempt - 1 };
    }
    if (plan.guardedByOwnRequirements !== true && !guarded(request, ref)) {
      throw new FatalError(`commit ${plan.commitId} to ${context.table} does not assert the snapshot of ${ref}: it could land twice`, { context });
    }
    emit({ kind: 'attempt', attempt });
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
      lastError = e;
    }
    await backoff();
    table = await reload(attempt);
  }
  // Out of attempts: one last look settles an open outcome if the commit landed meanwhile.
  if (isApplied(table)) {
    emit({ kind: 'found-applied', attempt: maxAttempts + 1, afterUnknown: unresolved !== undefined });
    return { status: 'committed', resolvedBy: 'reload', table, attempts: maxAttempts };
  }
  if (unresolved !== undefined) {
    throw new CommitStateUnknownError(`commit ${plan.commitId} to ${context.table}: outcome still unknown after ${maxAttempts} attempts`, {
      cause: lastError,
      context: { ...context, attempts: maxAttempts },
    });
  }
  throw lastError ?? new FatalError(`commit ${plan.commitId} to ${context.table} made no attempt`, { context });
}
