import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseJson, stringifyJson } from '../../../src/core/json.ts';
import {
  branchAncestry,
  commitBaseId,
  currentSchema,
  currentSnapshot,
  defaultSpec,
  findInAncestry,
  metadataFilePath,
  newTableMetadata,
  parseMetadataVersion,
  snapshotIdFromUuid,
  type TableMetadata,
} from '../../../src/iceberg/metadata.ts';
import { serializeTableMetadata, tableMetadataFromJson, tableMetadataToJson } from '../../../src/iceberg/metadata-json.ts';
import { buildPartitionSpec } from '../../../src/iceberg/partition-spec.ts';
import type { Schema } from '../../../src/iceberg/types.ts';

const fixtureText = (name: string): string => readFileSync(new URL(`../../fixtures/iceberg/${name}`, import.meta.url), 'utf8');
const JAVA = fixtureText('java-metadata-v2.json');

test('a Java-written v2 metadata file parses with 63-bit ids intact and serialises back to the same document', () => {
  const md = tableMetadataFromJson(JAVA);
  assert.equal(md.formatVersion, 2);
  assert.equal(md.currentSnapshotId, 8744736658442914487n);
  assert.equal(md.refs['main']?.snapshotId, 8744736658442914487n);
  assert.equal(md.refs['before-compaction']?.type, 'tag');
  assert.equal(md.refs['before-compaction']?.maxRefAgeMs, 604800000);
  assert.equal(md.snapshots[1]?.parentSnapshotId, 3051729675574597004n);
  assert.equal(md.lastSequenceNumber, 3n);
  assert.equal(typeof md.snapshots[0]?.sequenceNumber, 'bigint');
  assert.equal(md.snapshotLog[2]?.snapshotId, 8744736658442914487n);
  assert.equal(md.metadataLog.length, 3);
  assert.equal(currentSchema(md).schemaId, 1);
  assert.equal(defaultSpec(md).fields.length, 2);
  // same JSON value (key order of our writer follows Java's parser; compare as values)
  assert.deepEqual(parseJson(serializeTableMetadata(md)), parseJson(JAVA));
  // byte-identical to the fixture once whitespace is normalised: same keys in Java's order
  assert.equal(serializeTableMetadata(md), stringifyJson(parseJson(JAVA)));
  // and a second round trip through text is stable
  const again = tableMetadataFromJson(serializeTableMetadata(md));
  assert.deepEqual(again, md);
  assert.match(serializeTableMetadata(md), /"current-snapshot-id":8744736658442914487/);
});

test('PyIceberg re-serialisation of the same table parses to the same model', () => {
  const fromJava = tableMetadataFromJson(JAVA);
  const fromPy = tableMetadataFromJson(fixtureText('pyiceberg-metadata.json'));
  assert.deepEqual({ ...fromPy, extra: {} }, { ...fromJava, extra: {} });
});

test('v1 documents (schema / partition-spec, no refs) are read compatibly', () => {
  const v1 = {
    'format-version': 1,
    'table-uuid': 'd20125c8-7284-442c-9aea-15fee620737c',
    location: 's3://b/t',
    'last-updated-ms': 1,
    'last-column-id': 1,
    schema: { type: 'struct', fields: [{ id: 1, name: 'x', required: true, type: 'long' }] },
    'partition-spec': [{ name: 'x', transform: 'identity', 'source-id': 1 }],
    properties: {},
    'current-snapshot-id': -1,
    snapshots: [],
  };
  const md = tableMetadataFromJson(v1);
  assert.equal(md.currentSnapshotId, null);
  assert.equal(md.partitionSpecs[0]?.fields[0]?.fieldId, 1000);
  assert.equal(md.lastPartitionId, 1000);
  assert.deepEqual(md.refs, {});
  const out = tableMetadataToJson(md);
  assert.ok('schema' in out && 'partition-spec' in out);
  assert.equal(out['current-snapshot-id'], -1);
});

test('malformed documents fail with FatalError; unknown keys are preserved', () => {
  assert.throws(() => tableMetadataFromJson('{'), { name: 'FatalError' });
  assert.throws(() => tableMetadataFromJson({ 'format-version': 9 }), /unsupported format-version/);
  const doc = parseJson(JAVA) as Record<string, unknown>;
  const md = tableMetadataFromJson({ ...doc, 'encryption-keys': [{ 'key-id': 'k' }] });
  assert.deepEqual(tableMetadataToJson(md)['encryption-keys'], [{ 'key-id': 'k' }]);
  assert.throws(() => tableMetadataFromJson({ ...doc, 'current-schema-id': 42 }), /current-schema-id 42/);
});

test('ancestry helpers and the newest snapshot carrying a summary key', () => {
  const md = tableMetadataFromJson(JAVA);
  assert.equal(currentSnapshot(md)?.snapshotId, 8744736658442914487n);
  assert.deepEqual(branchAncestry(md).map((s) => s.snapshotId), [8744736658442914487n, 7160124811247582466n, 3051729675574597004n]);
  // the head (a compaction by another engine) lacks the key; its parent has it
  const found = findInAncestry(md, 'icefloe.control-offsets.orders-sink');
  assert.equal(found.snapshot?.snapshotId, 7160124811247582466n);
  assert.equal(found.value, '{"0":42,"1":7}');
  assert.equal(found.truncated, false);
  const missing = findInAncestry(md, 'icefloe.control-offsets.other');
  assert.deepEqual(missing, { scanned: 3, truncated: false });
  // with the parent expired the walk is cut short, and says so (fail closed)
  const expired: TableMetadata = { ...md, snapshots: md.snapshots.filter((s) => s.snapshotId !== 7160124811247582466n) };
  assert.deepEqual(findInAncestry(expired, 'icefloe.control-offsets.orders-sink'), { scanned: 1, truncated: true });
  // no branch at all
  assert.deepEqual(findInAncestry({ ...md, refs: {} }, 'x'), { scanned: 0, truncated: false });
});

test('a branch is searched from its own head; one that does not exist yet from main\'s, which its first commit forks from', () => {
  const md = tableMetadataFromJson(JAVA);
  const key = 'icefloe.control-offsets.orders-sink';
  const withBranch: TableMetadata = { ...md, refs: { ...md.refs, audit: { snapshotId: 3051729675574597004n, type: 'branch' } } };
  assert.deepEqual(findInAncestry(withBranch, key, 'audit'), { scanned: 1, truncated: false }, 'main\'s newer snapshots are not the branch\'s');
  assert.equal(commitBaseId(withBranch, 'audit'), 3051729675574597004n);
  assert.equal(findInAncestry(md, key, 'stage').snapshot?.snapshotId, 7160124811247582466n);
  assert.equal(commitBaseId(md, 'stage'), 8744736658442914487n);
  assert.equal(commitBaseId({ ...md, refs: {} }, 'stage'), undefined);
});

test('snapshot ids come from a caller UUID the way Java derives them (halves XORed, sign bit masked)', () => {
  // msb 0xf79c3e09677c4bbd ^ lsb 0xa4793f349cb785e7, top bit cleared
  const expected = (0xf79c3e09677c4bbdn ^ 0xa4793f349cb785e7n) & 0x7fffffffffffffffn;
  assert.equal(snapshotIdFromUuid('f79c3e09-677c-4bbd-a479-3f349cb785e7'), expected);
  assert.ok(expected > 2n ** 53n);
  assert.equal(snapshotIdFromUuid('ffffffff-ffff-ffff-0000-000000000000'), 0x7fffffffffffffffn);
  assert.throws(() => snapshotIdFromUuid('nope'), TypeError);
});

test('metadata file names', () => {
  const md = tableMetadataFromJson(JAVA);
  assert.equal(
    metadataFilePath(md, 4, '0b5c6d7e-1f2a-4b3c-9d4e-5f6a7b8c9d0e'),
    's3://bucket/warehouse/db/events/metadata/00004-0b5c6d7e-1f2a-4b3c-9d4e-5f6a7b8c9d0e.metadata.json',
  );
  assert.equal(parseMetadataVersion('s3://x/metadata/00042-0b5c6d7e-1f2a-4b3c-9d4e-5f6a7b8c9d0e.metadata.json'), 42);
  assert.equal(parseMetadataVersion('v7.metadata.json'), 7);
  assert.equal(parseMetadataVersion('junk.json'), -1);
});

test('newTableMetadata renumbers like a Java catalog: fresh ids from 1, spec ids from 1000, no snapshot', () => {
  const schema: Schema = {
    schemaId: 5,
    fields: [
      { id: 50, name: 'id', required: true, type: { kind: 'long' } },
      { id: 51, name: 'loc', required: false, type: { kind: 'struct', fields: [{ id: 52, name: 'lat', required: false, type: { kind: 'double' } }] } },
      { id: 53, name: 'ts', required: false, type: { kind: 'timestamptz' } },
    ],
  };
  const spec = buildPartitionSpec(schema, 'day(ts)', { lastPartitionId: 1500, specId: 4 });
  const md = newTableMetadata({
    schema,
    spec,
    location: 's3://b/wh/db/t/',
    tableUuid: '9c12d441-03fe-4693-9a96-a0705ddf69c1',
    nowMs: 1000,
    properties: { 'format-version': '2', owner: 'me' },
  });
  assert.deepEqual(
    currentSchema(md).fields.map((f) => f.id),
    [1, 2, 3],
  );
  assert.equal(md.lastColumnId, 4);
  assert.deepEqual(md.partitionSpecs[0], { specId: 0, fields: [{ sourceId: 3, fieldId: 1000, name: 'ts_day', transform: { kind: 'day' } }] });
  assert.equal(md.lastPartitionId, 1000);
  assert.equal(md.location, 's3://b/wh/db/t');
  assert.deepEqual(md.properties, { owner: 'me' });
  assert.equal(md.currentSnapshotId, null);
  const json = tableMetadataToJson(md);
  assert.equal(json['current-snapshot-id'], -1);
  assert.equal(json['last-partition-id'], 1000);
  assert.deepEqual(json['sort-orders'], [{ 'order-id': 0, fields: [] }]);
  assert.deepEqual(tableMetadataFromJson(stringifyJson(json)), md);
});
