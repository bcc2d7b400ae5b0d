/**
 * The commit-with-retry protocol against a real catalog implementation (the SQL catalog on an in-memory
 * SQLite database and the in-memory object store) wrapped in a fault injector that can lose answers,
 * apply late, or let another writer win. Every test asserts what is in the table afterwards: the commit
 * landed exactly once (or not at all, with the right error), never twice.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type {
  IcefloeError} from '../../../src/core/errors.ts';
import {
  CommitConflictError,
  CommitStateUnknownError,
  ConfigError,
  FatalError,
  RetriableError,
} from '../../../src/core/errors.ts';
import { COMMIT_ID_KEY, ancestry, commitWithRetry, findCommit } from '../../../src/commit/commit-retry.ts';
import type { CommitEvent, CommitPlan } from '../../../src/commit/commit-retry.ts';
import type { TableRequirement, TableUpdate } from '../../../src/commit/model.ts';
import type { Catalog, CommitOptions, CreateTableRequest, LoadedTable, Namespace, TableIdentifier } from '../../../src/commit/port.ts';
import { SqlCatalog } from '../../../src/commit/sql/catalog.ts';
import { SqliteDriver } from '../../../src/commit/sql/sqlite.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { commitIds, emptyAppend } from '../../helpers/commits.ts';

type Fault =
  | 'apply-then-unknown' // the commit lands, the answer is lost
  | 'unknown' // the answer is lost and the commit did not land
  | 'retriable' // refused before reaching the catalog
  | 'config' // refused for good
  | 'other-writer-first' // another writer commits just before ours: a genuine conflict
  | 'lands-after-reload'; // outcome unknown; the commit is still in flight and lands right after our next reload

/** Delegates to a real catalog; commit faults are taken from a queue, one per commit call. */
class FaultyCatalog implements Catalog {
  readonly name = 'faulty';
  readonly inner: Catalog;
  readonly faults: Fault[] = [];
  commits = 0;
  loads = 0;
  #pending: (() => Promise<unknown>) | undefined;

  constructor(inner: Catalog) {
    this.inner = inner;
  }
  listNamespaces(parent?: Namespace): Promise<Namespace[]> {
    return this.inner.listNamespaces(parent);
  }
  namespaceExists(ns: Namespace): Promise<boolean> {
    return this.inner.namespaceExists(ns);
  }
  createNamespace(ns: Namespace, props?: Readonly<Record<string, string>>): Promise<void> {
    return this.inner.createNamespace(ns, props);
  }
  listTables(ns: Namespace): Promise<TableIdentifier[]> {
    return this.inner.listTables(ns);
  }
  tableExists(id: TableIdentifier): Promise<boolean> {
    return this.inner.tableExists(id);
  }
  createTable(id: TableIdentifier, r: CreateTableRequest): Promise<LoadedTable> {
    return this.inner.createTable(id, r);
  }
  async loadTable(id: TableIdentifier): Promise<LoadedTable> {
    this.loads++;
    const table = await this.inner.loadTable(id);
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending !== undefined) await pending(); // lands after the caller's view was taken
    return table;
  }
  dropTable(id: TableIdentifier): Promise<void> {
    return this.inner.dropTable(id);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  async commitTable(id: TableIdentifier, reqs: readonly TableRequirement[], updates: readonly TableUpdate[], o?: CommitOptions): Promise<LoadedTable> {
    this.commits++;
    const fault = this.faults.shift();
    switch (fault) {
      case undefined:
        return this.inner.commitTable(id, reqs, updates, o);
      case 'apply-then-unknown':
        await this.inner.commitTable(id, reqs, updates, o);
        throw new CommitStateUnknownError('answer lost (injected)');
      case 'unknown':
        throw new CommitStateUnknownError('answer lost before applying (injected)');
      case 'retriable':
        throw new RetriableError('connection refused (injected)');
      case 'config':
        throw new ConfigError('bad request (injected)');
      case 'other-writer-first': {
        const table = await this.inner.loadTable(id);
        const other = await emptyAppend(table, `other-${randomUUID()}`);
        await this.inner.commitTable(id, other.requirements, other.updates);
        return this.inner.commitTable(id, reqs, updates, o);
      }
      case 'lands-after-reload':
        this.#pending = () => this.inner.commitTable(id, reqs, updates, o);
        throw new CommitStateUnknownError('time-out (injected); the request is still in flight');
    }
  }
}

async function setup(): Promise<{ catalog: FaultyCatalog; id: TableIdentifier }> {
  const inner = new SqlCatalog({
    name: 'unit',
    driver: new SqliteDriver({ path: ':memory:' }),
    store: new MemoryObjectStore(),
    warehouse: 's3://warehouse/unit',
  });
  await inner.createNamespace(['db']);
  const id = { namespace: ['db'], name: `t_${randomUUID().slice(0, 8)}` };
  await inner.createTable(id, { schema: { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'long' } }] } });
  return { catalog: new FaultyCatalog(inner), id };
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

const fast = { sleep: async () => undefined, random: () => 0 };

test('no fault: one attempt, confirmed by the response', async () => {
  const { catalog, id } = await setup();
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, fast);
  assert.equal(out.status, 'committed');
  assert.equal(out.status === 'committed' && out.resolvedBy, 'response');
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);
});

test('unknown outcome that landed: resolved by finding the commit id on reload, never resent', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('apply-then-unknown');
  const events: CommitEvent['kind'][] = [];
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, { ...fast, onEvent: (e) => events.push(e.kind) });
  assert.deepEqual(out.status === 'committed' && [out.status, out.resolvedBy], ['committed', 'reload']);
  assert.equal(catalog.commits, 1, 'no second commit request');
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);
  assert.deepEqual(events, ['attempt', 'unknown-outcome', 'found-applied']);
});

test('unknown outcome that did not land: reload finds nothing, the rebuilt commit lands once', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('unknown', 'unknown');
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, fast);
  assert.equal(out.status === 'committed' && out.resolvedBy, 'response');
  assert.equal(catalog.commits, 3);
  assert.equal(plan.builds, 3, 'each attempt is built against a fresh reload');
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);
});

test('an in-flight commit that lands after our reload: the resend conflicts, the next reload finds it — once', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('lands-after-reload');
  const events: CommitEvent['kind'][] = [];
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, { ...fast, onEvent: (e) => events.push(e.kind) });
  assert.equal(out.status === 'committed' && out.resolvedBy, 'reload');
  assert.deepEqual(events, ['attempt', 'unknown-outcome', 'attempt', 'conflict', 'found-applied']);
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId], 'exactly one snapshot carries our commit id');
});

test('a genuine conflict (another writer first): reload, rebuild on top of it, land once', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('other-writer-first');
  const plan = appendPlan();
  const out = await commitWithRetry(catalog, id, plan, fast);
  assert.equal(out.status, 'committed');
  const ids = commitIds(await catalog.loadTable(id));
  assert.equal(ids.length, 2);
  assert.match(ids[0] ?? '', /^other-/);
  assert.equal(ids[1], plan.commitId, 'ours is built on top of the other writer’s snapshot');
});

test('a retriable refusal is retried after a reload', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('retriable');
  const plan = appendPlan();
  await commitWithRetry(catalog, id, plan, fast);
  assert.deepEqual(commitIds(await catalog.loadTable(id)), [plan.commitId]);
});

test('a restarted committer finds its commit already applied and sends nothing', async () => {
  const { catalog, id } = await setup();
  const plan = appendPlan();
  await commitWithRetry(catalog, id, plan, fast);
  const before = catalog.commits;
  const again = await commitWithRetry(catalog, id, appendPlan(plan.commitId), fast);
  assert.equal(again.status, 'already-applied');
  assert.equal(catalog.commits, before);
});

test('nothing to commit: build answers undefined, nothing is sent', async () => {
  const { catalog, id } = await setup();
  const out = await commitWithRetry(catalog, id, { commitId: 'c', build: () => undefined }, fast);
  assert.equal(out.status, 'nothing-to-commit');
  assert.equal(catalog.commits, 0);
});

test('a request that does not assert the branch snapshot is refused before sending (it could land twice)', async () => {
  const { catalog, id } = await setup();
  const plan: CommitPlan = { commitId: 'x', build: () => ({ requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] }) };
  await assert.rejects(commitWithRetry(catalog, id, plan, fast), FatalError);
  assert.equal(catalog.commits, 0);
});

test('a ConfigError from the catalog is thrown at once, without retry', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('config');
  await assert.rejects(commitWithRetry(catalog, id, appendPlan(), fast), ConfigError);
  assert.equal(catalog.commits, 1);
});

test('exhausted on unknown outcomes: CommitStateUnknownError (the caller must keep its files), nothing landed', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('unknown', 'unknown', 'unknown');
  await assert.rejects(commitWithRetry(catalog, id, appendPlan(), { ...fast, maxAttempts: 3 }), CommitStateUnknownError);
  assert.equal(catalog.commits, 3);
  assert.deepEqual(commitIds(await catalog.loadTable(id)), []);
});

test('exhausted on conflicts: CommitConflictError; each retry was rebuilt on the newest snapshot, ours never landed', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('other-writer-first', 'other-writer-first');
  const plan = appendPlan();
  await assert.rejects(commitWithRetry(catalog, id, plan, { ...fast, maxAttempts: 2 }), CommitConflictError);
  assert.equal(plan.builds, 2);
  const ids = commitIds(await catalog.loadTable(id));
  assert.equal(ids.length, 2);
  assert.ok(ids.every((c) => c?.startsWith('other-')), 'only the other writer’s snapshots');
});

test('after an unknown outcome, a table that cannot be reloaded leaves the outcome unknown', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('unknown');
  const original = catalog.loadTable.bind(catalog);
  let loads = 0;
  catalog.loadTable = async (tid) => {
    if (++loads > 1) throw new RetriableError('catalog down (injected)');
    return original(tid);
  };
  await assert.rejects(commitWithRetry(catalog, id, appendPlan(), { ...fast, reloadAttempts: 2 }), (e: unknown) => {
    assert.ok(e instanceof CommitStateUnknownError);
    assert.ok((e as IcefloeError).cause instanceof RetriableError);
    return true;
  });
});

test('backoff between attempts grows and is capped', async () => {
  const { catalog, id } = await setup();
  catalog.faults.push('unknown', 'unknown', 'unknown', 'unknown');
  const sleeps: number[] = [];
  await commitWithRetry(catalog, id, appendPlan(), {
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 1,
    baseDelayMs: 100,
    maxDelayMs: 500,
  });
  assert.deepEqual(sleeps, [100, 200, 400, 500]);
});

test('findCommit walks only the branch’s ancestry and stops where snapshots expired', async () => {
  const { catalog, id } = await setup();
  for (const c of ['c1', 'c2', 'c3']) await commitWithRetry(catalog, id, appendPlan(c), fast);
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
  catalog.faults.push('apply-then-unknown');
  const commitId = randomUUID();
  const plan: CommitPlan = {
    commitId,
    build: (t) => ({
      requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: t.metadata.refs['main']?.snapshotId ?? null }],
      updates: [{ action: 'set-properties', updates: { [COMMIT_ID_KEY]: commitId } }],
    }),
    isApplied: (t) => t.metadata.properties[COMMIT_ID_KEY] === commitId,
  };
  const out = await commitWithRetry(catalog, id, plan, fast);
  assert.equal(out.status === 'committed' && out.resolvedBy, 'reload');
  assert.equal(catalog.commits, 1);
});
