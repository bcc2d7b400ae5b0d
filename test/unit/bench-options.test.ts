/**
 * The command line of `npm run bench` (scripts/lib/bench-options.ts): the storage paths and the tuning keys
 * a tuning run is reproduced from. A benchmark's options are not the product, but a --set that silently
 * lost a key, or a typo'd storage path that ran something else, would make a before/after comparison lie.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError, parseOptions } from '../../scripts/lib/bench-options.ts';

test('--storage defaults to both paths in order, keeps the given order, and rejects an unknown path', () => {
  assert.deepEqual(parseOptions([]).storage, ['embedded', 's3-rest']);
  assert.deepEqual(parseOptions(['--storage=s3-rest,embedded']).storage, ['s3-rest', 'embedded']);
  assert.deepEqual(parseOptions(['--storage=s3-rest']).storage, ['s3-rest']);
  assert.throws(() => parseOptions(['--storage=s3']), UsageError);
  assert.throws(() => parseOptions(['--storage=']), UsageError);
});

test('--set and --worker-set repeat, keep values with "=", and the last of a key wins', () => {
  const o = parseOptions([
    '--set=consumer.override.queued.max.messages.kbytes=16384',
    '--set=iceberg.tables.default-partition-by=bucket(id, 4)',
    '--set=consumer.override.queued.max.messages.kbytes=32768',
    '--set=icefloe.x=a=b',
    '--worker-set=icefloe.shutdown.timeout.ms=60000',
  ]);
  assert.deepEqual(o.set, {
    'consumer.override.queued.max.messages.kbytes': '32768',
    'iceberg.tables.default-partition-by': 'bucket(id, 4)',
    'icefloe.x': 'a=b',
  });
  assert.deepEqual(o.workerSet, { 'icefloe.shutdown.timeout.ms': '60000' });
  assert.deepEqual(parseOptions([]).set, {});
  assert.deepEqual(parseOptions(['--set=empty.value=']).set, { 'empty.value': '' });
  assert.throws(() => parseOptions(['--set=no-equals-sign']), UsageError);
  assert.throws(() => parseOptions(['--set==value']), UsageError);
});
