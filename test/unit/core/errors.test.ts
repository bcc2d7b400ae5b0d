import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CommitConflictError,
  CommitStateUnknownError,
  ConfigError,
  DataError,
  FatalError,
  IcefloeError,
  LeaseLostError,
  RetriableError,
  isRetriable,
} from '../../../src/core/errors.ts';

test('each handling class carries its code and retriable flag', () => {
  const cases: [IcefloeError, string, boolean][] = [
    [new ConfigError('bad key'), 'CONFIG_INVALID', false],
    [new DataError('bad bytes'), 'DATA_INVALID', false],
    [new RetriableError('broker down'), 'SERVICE_UNAVAILABLE', true],
    [new CommitConflictError('ref moved'), 'COMMIT_CONFLICT', true],
    [new CommitStateUnknownError('timeout'), 'COMMIT_STATE_UNKNOWN', false],
    [new FatalError('fenced'), 'FATAL', false],
    [new LeaseLostError('token refused'), 'LEASE_LOST', false],
  ];
  for (const [error, code, retriable] of cases) {
    assert.equal(error.code, code);
    assert.equal(error.retriable, retriable, code);
    assert.equal(isRetriable(error), retriable, code);
    assert.equal(error.name, error.constructor.name);
    assert.ok(error instanceof IcefloeError && error instanceof Error);
  }
});

test('cause and context are kept; foreign errors are never retriable', () => {
  const cause = new Error('ECONNRESET');
  const e = new RetriableError('catalog unreachable', { cause, context: { table: 'db.t' } });
  assert.equal(e.cause, cause);
  assert.deepEqual(e.context, { table: 'db.t' });
  assert.equal(isRetriable(cause), false);
  assert.equal(isRetriable('string'), false);
});
