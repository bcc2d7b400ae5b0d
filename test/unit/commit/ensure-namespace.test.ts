/**
 * ensureNamespace under a concurrent creator: two tasks auto-creating tables in a new namespace race to
 * create it. The loser may get AlreadyExists, or — Iceberg's JdbcCatalog behind the REST fixture — a 500
 * (a duplicate-key SQL error) that our REST adapter reports as a RetriableError. Either way the namespace
 * exists, which is all that was asked; a failure that leaves no namespace is still thrown.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RetriableError } from '../../../src/core/errors.ts';
import { ensureNamespace, NamespaceAlreadyExistsError } from '../../../src/commit/port.ts';
import type { Catalog, Namespace } from '../../../src/commit/port.ts';

/** A catalog whose createNamespace lets "another writer" create the namespace, then fails with `error`. */
function racingCatalog(error: (ns: Namespace) => Error, otherWriterWins: boolean): { catalog: Catalog; created: string[] } {
  const created: string[] = [];
  const unused = (): never => {
    throw new Error('not used by ensureNamespace');
  };
  const catalog: Catalog = {
    name: 'racing',
    listNamespaces: unused,
    namespaceExists: (ns) => Promise.resolve(created.includes(ns.join('.'))),
    createNamespace: (ns) => {
      if (otherWriterWins) created.push(ns.join('.'));
      return Promise.reject(error(ns));
    },
    listTables: unused,
    tableExists: unused,
    createTable: unused,
    loadTable: unused,
    commitTable: unused,
    dropTable: unused,
    close: () => Promise.resolve(),
  };
  return { catalog, created };
}

test('ensureNamespace: losing the race with AlreadyExists or with a server error both leave the namespace, and succeed', async () => {
  const exists = racingCatalog((ns) => new NamespaceAlreadyExistsError(ns), true);
  await ensureNamespace(exists.catalog, ['sales']);
  const serverError = racingCatalog(() => new RetriableError('REST catalog icefloe answered 500 UncheckedSQLException: Failed to execute: INSERT INTO iceberg_namespace_properties'), true);
  await ensureNamespace(serverError.catalog, ['sales']);
  assert.deepEqual(serverError.created, ['sales']);
});

test('ensureNamespace: a failure that leaves no namespace is thrown', async () => {
  const { catalog } = racingCatalog(() => new RetriableError('REST catalog icefloe answered 503'), false);
  await assert.rejects(ensureNamespace(catalog, ['sales']), /answered 503/);
});
