/**
 * The commit-with-retry protocol against the in-memory catalog (src/commit/memory.ts: the SQL catalog's
 * commit semantics on a Map) and its fault injection, which can lose answers, apply late, or let another
 * writer win. Every test asserts what is in the table afterwards: the commit landed exactly once (or not at
 * all, with the right error), never twice.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { IcefloeError } from '../../../src/core/errors.ts';
import { CommitConflictError, CommitStateUnknownError, ConfigError, FatalError, RetriableError } from '../../../src/core/errors.ts';
import {
  COMMIT_ID_KEY,
  COMMIT_RETRY_DEFAULTS,
  ancestry,
  commitRetryBounds,
  commitWithRetry,
  findCommit,
} from '../../../src/commit/commit-retry.ts';
import type { CommitEvent, CommitPlan, CommitRetryOptions } from '../../../src/commit/commit-retry.ts';
import { MemoryCatalog } from '../../../src/commit/memory.ts';
import type { LoadedTable, TableIdentifier } from '../../../src/commit/port.ts';
import { FakeClock } from '../../helpers/clock.ts';
import { commitIds, emptyAppend } from '../../helpers/commits.ts';

async function setup(properties: Record<string, string> = {}): Promise<{ catalog: MemoryCatalog; id: TableIdentifier }> {
  const catalog = new MemoryCatalog();
  await catalog.createNamespace(['db']);
  const id = { namespace: ['db'], name: 't' };
  await catalog.createTable(id, { schema: { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'long' } }] }, properties });
  return { catalog, id };
}

function appendPlan(commitId: string = randomUUID()): CommitPlan & { builds: number } {
  const plan = {
    commitId,
    builds: 0,
    build(table: LoadedTable) {
      plan.builds++;
      return emptyAppend(table, commitId);
    },
  };
  return plan;
}

/** Waits take no real time. */
const fast = (extra: CommitRetryOptions = {}): CommitRetryOptions => ({ clock: new FakeClock(), ...extra });

test('no fault: one attempt, confirmed by the response', async () => {
  const { catalog, id } = await setup();
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, fast());
  assert.equal(out.status, 'committed');
  assert.equal(out.status === 'committed' && out.resolvedBy, 'response');
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);
});

test('unknown outcome that landed: resolved by finding the commit id on reload, never resent', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('apply-then-unknown');
  const events: CommitEvent['kind'][] = [];
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, fast({ onEvent: (e) => events.push(e.kind) }));
  assert.deepEqual(out.status === 'committed' && [out.status, out.resolvedBy], ['committed', 'reload']);
  assert.equal(catalog.commits, 1, 'no second commit request');
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);
  assert.deepEqual(events, ['attempt', 'unknown-outcome', 'found-applied']);
});

test('unknown outcome that did not land: reload finds nothing, the rebuilt commit lands once', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('unknown', 'unknown');
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, fast());
  assert.equal(out.status === 'committed' && out.resolvedBy, 'response');
  assert.equal(catalog.commits, 3);
  assert.equal(plan.builds, 3, 'each attempt is built against a fresh reload');
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);
});

test('an in-flight commit that lands after our reload: the resend conflicts, the next reload finds it — once', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('lands-after-reload');
  const events: CommitEvent['kind'][] = [];
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, fast({ onEvent: (e) => events.push(e.kind) }));
  assert.equal(out.status === 'committed' && out.resolvedBy, 'reload');
  assert.deepEqual(events, ['attempt', 'unknown-outcome', 'attempt', 'conflict', 'found-applied']);
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId], 'exactly one snapshot carries our commit id');
});

test('a genuine conflict (another writer first): reload, rebuild on top of it, land once', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('other-writer-first');
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, fast());
  assert.equal(out.status, 'committed');
  const ids = commitIds(await catalog.loadTable(id));
  assert.equal(ids.length, 2);
  assert.equal(ids[0], undefined, 'the other writer’s snapshot (it carries no commit id) comes first');
  assert.equal(ids[1], plan.commitId, 'ours is built on top of the other writer’s snapshot');
});

test('a retriable refusal is retried after a reload', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('retriable');
  const plan = appendPlan();
  await commitWithRetry(catalog, id, plan, fast());
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);
});

test('a restarted committer finds its commit already applied and sends nothing', async () => {
  const { catalog, id } = await setup();
  const plan = appendPlan();
  await commitWithRetry(catalog, id, plan, fast());
  const before = catalog.commits;
  const again = await commitWithRetry(catalog, id, appendPlan(plan.commitId), fast());
  assert.equal(again.status, 'already-applied');
  assert.equal(catalog.commits, before);
});

test('nothing to commit: build answers undefined, nothing is sent', async () => {
  const { catalog, id } = await setup();
  const out = await commitWithRetry(catalog, id, { commitId: 'c', build: () => undefined }, fast());
  assert.equal(out.status, 'nothing-to-commit');
  assert.equal(catalog.commits, 0);
});

test('a request that does not assert the branch snapshot is refused before sending (it could land twice)', async () => {
  const { catalog, id } = await setup();
  const plan: CommitPlan = { commitId: 'x', build: () => ({ requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] }) };
  await assert.rejects(commitWithRetry(catalog, id, plan, fast()), FatalError);
  assert.equal(catalog.commits, 0);
});

test('a ConfigError from the catalog is thrown at once, without retry', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('config');
  await assert.rejects(commitWithRetry(catalog, id, appendPlan(), fast()), ConfigError);
  assert.equal(catalog.commits, 1);
});

test('exhausted on unknown outcomes: CommitStateUnknownError (the caller must keep its files), nothing landed', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('unknown', 'unknown', 'unknown');
  await assert.rejects(commitWithRetry(catalog, id, appendPlan(), fast({ retry: { maxAttempts: 3 } })), CommitStateUnknownError);
  assert.equal(catalog.commits, 3);
  assert.deepEqual(commitIds(await catalog.loadTable(id)), []);
});

test('exhausted on conflicts: CommitConflictError; each retry was rebuilt on the newest snapshot, ours never landed', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('other-writer-first', 'other-writer-first');
  const plan = appendPlan();
  await assert.rejects(commitWithRetry(catalog, id, plan, fast({ retry: { maxAttempts: 2 } })), CommitConflictError);
  assert.equal(plan.builds, 2);
  const ids = commitIds(await catalog.loadTable(id));
  assert.equal(ids.length, 2);
  assert.ok(ids.every((c) => c === undefined), 'only the other writer’s snapshots');
});

test('after an unknown outcome, a table that cannot be reloaded leaves the outcome unknown', async () => {
  const { catalog, id } = await setup();
  const base = await catalog.loadTable(id);
  catalog.commitFaults.push('unknown');
  catalog.loadFaults.push('retriable', 'retriable'); // every reload after the lost answer fails
  await assert.rejects(commitWithRetry(catalog, id, appendPlan(), fast({ reloadAttempts: 2 }), base), (e: unknown) => {
    assert.ok(e instanceof CommitStateUnknownError);
    assert.ok((e as IcefloeError).cause instanceof RetriableError);
    return true;
  });
  assert.equal(catalog.commits, 1, 'never resent blindly');
});

test('backoff between attempts grows and is capped', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('unknown', 'unknown', 'unknown', 'unknown');
  const clock = new FakeClock();
  // random 1 is the top of the jitter range: each wait is 3 × the one before, up to the cap.
  await commitWithRetry(catalog, id, appendPlan(), { clock, random: () => 1, retry: { initialDelayMs: 10, maxDelayMs: 500 } });
  assert.deepEqual(clock.sleeps, [30, 90, 270, 500]);
});

test('findCommit walks only the branch’s ancestry and stops where snapshots expired', async () => {
  const { catalog, id } = await setup();
  for (const c of ['c1', 'c2', 'c3']) await commitWithRetry(catalog, id, appendPlan(c), fast());
  const table = await catalog.loadTable(id);
  assert.deepEqual([...ancestry(table.metadata)].map((s) => s.summary[COMMIT_ID_KEY]), ['c3', 'c2', 'c1']);
  assert.equal(findCommit(table.metadata, 'c1')?.summary[COMMIT_ID_KEY], 'c1');
  assert.equal(findCommit(table.metadata, 'c1', 'other-branch'), undefined);
  // Expire the oldest snapshot: its commit id can no longer be found (the caller fails closed on that).
  const oldest = [...ancestry(table.metadata)].at(-1);
  const expired = { ...table.metadata, snapshots: table.metadata.snapshots.filter((s) => s !== oldest) };
  assert.equal(findCommit(expired, 'c1'), undefined);
  assert.equal(findCommit(expired, 'c2')?.summary[COMMIT_ID_KEY], 'c2');
});

test('a property-only commit supplies its own isApplied check', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('apply-then-unknown');
  const commitId = randomUUID();
  const plan: CommitPlan = {
    commitId,
    build: (t) => ({
      requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: t.metadata.refs['main']?.snapshotId ?? null }],
      updates: [{ action: 'set-properties', updates: { [COMMIT_ID_KEY]: commitId } }],
    }),
    isApplied: (t) => t.metadata.properties[COMMIT_ID_KEY] === commitId,
  };
  const out = await commitWithRetry(catalog, id, plan, fast());
  assert.equal(out.status === 'committed' && out.resolvedBy, 'reload');
  assert.equal(catalog.commits, 1);
});

test('the retry bounds come from the table’s commit.retry.* properties, with Java’s defaults', async () => {
  assert.deepEqual(commitRetryBounds({}), { maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 60_000, totalTimeoutMs: 1_800_000 });
  assert.deepEqual(COMMIT_RETRY_DEFAULTS, commitRetryBounds({}));
  assert.deepEqual(
    commitRetryBounds({
      'commit.retry.num-retries': '0',
      'commit.retry.min-wait-ms': '5000',
      'commit.retry.max-wait-ms': '2000',
      'commit.retry.total-timeout-ms': ' 10 ',
    }),
    { maxAttempts: 1, initialDelayMs: 2000, maxDelayMs: 2000, totalTimeoutMs: 10 },
    'a minimum above the maximum waits the maximum, as Java does',
  );
  for (const bad of ['-1', 'x', '', '1.5']) {
    assert.throws(() => commitRetryBounds({ 'commit.retry.num-retries': bad }), ConfigError, JSON.stringify(bad));
  }

  const { catalog, id } = await setup({ 'commit.retry.num-retries': '1', 'commit.retry.min-wait-ms': '7', 'commit.retry.max-wait-ms': '7' });
  catalog.commitFaults.push('unknown', 'unknown');
  const clock = new FakeClock();
  await assert.rejects(commitWithRetry(catalog, id, appendPlan(), { clock }), CommitStateUnknownError);
  assert.equal(catalog.commits, 2, 'num-retries 1: two attempts');
  assert.deepEqual(clock.sleeps, [7], 'min-wait = max-wait = 7 ms');
});

test('commit.retry.total-timeout-ms: no attempt starts after it', async () => {
  const props = { 'commit.retry.min-wait-ms': '600', 'commit.retry.max-wait-ms': '600', 'commit.retry.total-timeout-ms': '1000' };
  const { catalog, id } = await setup(props);
  catalog.commitFaults.push('retriable', 'retriable', 'retriable');
  await assert.rejects(commitWithRetry(catalog, id, appendPlan(), fast()), RetriableError);
  assert.equal(catalog.commits, 2, 'attempts at 0 and 600 ms; a third would start at 1200 ms');
});

test('the caller’s retry bounds override the table’s properties; an unusable property sends nothing', async () => {
  const { catalog, id } = await setup({ 'commit.retry.num-retries': '0' });
  catalog.commitFaults.push('retriable', 'retriable');
  const plan = appendPlan();
  await commitWithRetry(catalog, id, plan, fast({ retry: { maxAttempts: 3 } }));
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);

  const broken = await setup({ 'commit.retry.max-wait-ms': 'soon' });
  await assert.rejects(commitWithRetry(broken.catalog, broken.id, appendPlan(), fast()), ConfigError);
  assert.equal(broken.catalog.commits, 0);
});

test('stopping (shouldStop) still takes one last look: a commit that landed is found, never resent', async () => {
  const { catalog, id } = await setup();
  catalog.commitFaults.push('apply-then-unknown');
  const out = await commitWithRetry(catalog, id, appendPlan(), fast({ shouldStop: () => true }));
  assert.equal(out.status === 'committed' && out.resolvedBy, 'reload');
  assert.equal(catalog.commits, 1);
});

test('an abort while an outcome is open is CommitStateUnknownError (keep the files); otherwise the abort reason', async () => {
  const reason = new Error('worker stopping');
  const open = await setup();
  open.catalog.commitFaults.push('unknown');
  const ac = new AbortController();
  const clock = new FakeClock();
  clock.onSleep = () => ac.abort(reason);
  await assert.rejects(commitWithRetry(open.catalog, open.id, appendPlan(), { clock, signal: ac.signal }), (e: unknown) => {
    assert.ok(e instanceof CommitStateUnknownError);
    assert.equal(e.cause, reason);
    return true;
  });
  assert.equal(open.catalog.commits, 1);

  const conflicted = await setup();
  conflicted.catalog.commitFaults.push('retriable');
  const ac2 = new AbortController();
  const clock2 = new FakeClock();
  clock2.onSleep = () => ac2.abort(reason);
  await assert.rejects(commitWithRetry(conflicted.catalog, conflicted.id, appendPlan(), { clock: clock2, signal: ac2.signal }), (e: unknown) => e === reason);
});
