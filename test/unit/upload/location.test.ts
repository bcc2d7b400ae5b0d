/** Location parsing and joining: one spelling per object, never a `//` inside a key. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../../src/core/errors.ts';
import { formatLocation, joinLocation, parseLocation, stripTrailingSlash } from '../../../src/upload/location.ts';

test('parseLocation: s3, s3a, s3n, file (three spellings), memory', () => {
  assert.deepEqual(parseLocation('s3://warehouse/ns/t/data/x.parquet'), { scheme: 's3', rawScheme: 's3', bucket: 'warehouse', key: 'ns/t/data/x.parquet' });
  assert.equal(parseLocation('s3a://b/k').scheme, 's3');
  assert.equal(parseLocation('S3N://b/k').rawScheme, 's3n');
  assert.deepEqual(parseLocation('s3://bucket'), { scheme: 's3', rawScheme: 's3', bucket: 'bucket', key: '' });
  assert.equal(parseLocation('file:///tmp/wh/x').key, '/tmp/wh/x');
  assert.equal(parseLocation('file://localhost/tmp/wh/x').key, '/tmp/wh/x');
  assert.equal(parseLocation('file:/tmp/wh/x').key, '/tmp/wh/x');
  assert.equal(parseLocation('memory://ns/k').scheme, 'memory');
});

test('parseLocation: bad locations are ConfigErrors naming the location', () => {
  for (const bad of ['warehouse/x', 's3:///key', 'gs://b/k', 'file://relative/path', '']) {
    assert.throws(() => parseLocation(bad), ConfigError, bad);
  }
});

test('formatLocation inverts parseLocation', () => {
  for (const loc of ['s3://b/k/x', 's3a://b/k', 'file:///tmp/a b/c', 'memory://n/k']) assert.equal(formatLocation(parseLocation(loc)), loc);
});

test('joinLocation: exactly one slash between parts, empty parts dropped', () => {
  assert.equal(joinLocation('s3://b/wh/', 'ns', 't'), 's3://b/wh/ns/t');
  assert.equal(joinLocation('s3://b/wh', '/ns/', '', 't/'), 's3://b/wh/ns/t');
  assert.equal(joinLocation('file:///tmp/wh', 'a'), 'file:///tmp/wh/a');
  assert.equal(stripTrailingSlash('s3://b/wh///'), 's3://b/wh');
  assert.equal(stripTrailingSlash('s3://b/'), 's3://b');
  assert.equal(stripTrailingSlash('file:///'), 'file://');
});
