import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseJson, stringifyJson } from '../../../src/core/json.ts';
import { CommitConflictError, ConfigError } from '../../../src/core/errors.ts';
import { currentSchema, type Snapshot, type TableMetadata } from '../../../src/iceberg/metadata.ts';
import { serializeTableMetadata, tableMetadataFromJson } from '../../../src/iceberg/metadata-json.ts';
import { applyUpdates, checkRequirements, commitUpdates } from '../../../src/iceberg/apply-updates.ts';
import {
  commitRequestFromJson,
  commitRequestToJson,
  requirementFromJson,
  requirementToJson,
  updateFromJson,
  updateToJson,
  type TableRequirement,
  type TableUpdate,
} from '../../../src/iceberg/updates.ts';

const JAVA = readFileSync(new URL('../../fixtures/iceberg/java-metadata-v2.json', import.meta.url), 'utf8');
const base = (): TableMetadata => tableMetadataFromJson(JAVA);
const HEAD = 8744736658442914487n;
const NEW_ID = 5953405374839286871n;

function snapshot(over: Partial<Snapshot> = {}): Snapshot {
  return {
    snapshotId: NEW_ID,
    parentSnapshotId: HEAD,
    sequenceNumber: 4n,
    timestampMs: 1735689700000,
    manifestList: 's3://bucket/warehouse/db/events/metadata/snap-x.avro',
    summary: { operation: 'append', 'added-records': '1' },
    schemaId: 1,
    ...over,
  };
}

test('requirements and updates have the REST JSON shapes and round-trip (63-bit ids intact)', () => {
  const reqs: [TableRequirement, unknown][] = [
    [{ type: 'assert-create' }, { type: 'assert-create' }],
    [{ type: 'assert-table-uuid', uuid: 'u' }, { type: 'assert-table-uuid', uuid: 'u' }],
    [{ type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: HEAD }, { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': HEAD }],
    [{ type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: null }, { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }],
    [{ type: 'assert-last-assigned-field-id', lastAssignedFieldId: 16 }, { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 16 }],
    [{ type: 'assert-current-schema-id', currentSchemaId: 1 }, { type: 'assert-current-schema-id', 'current-schema-id': 1 }],
    [{ type: 'assert-last-assigned-partition-id', lastAssignedPartitionId: 1001 }, { type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 1001 }],
    [{ type: 'assert-default-spec-id', defaultSpecId: 1 }, { type: 'assert-default-spec-id', 'default-spec-id': 1 }],
    [{ type: 'assert-default-sort-order-id', defaultSortOrderId: 0 }, { type: 'assert-default-sort-order-id', 'default-sort-order-id': 0 }],
  ];
  for (const [r, json] of reqs) {
    assert.deepEqual(requirementToJson(r), json);
    assert.deepEqual(requirementFromJson(parseJson(stringifyJson(json))), r);
  }
  const md = base();
  const updates: TableUpdate[] = [
    { action: 'assign-uuid', uuid: md.tableUuid },
    { action: 'upgrade-format-version', formatVersion: 2 },
    { action: 'add-schema', schema: currentSchema(md) },
    { action: 'add-schema', schema: currentSchema(md), lastColumnId: 16 },
    { action: 'set-current-schema', schemaId: -1 },
    { action: 'add-spec', spec: md.partitionSpecs[1] as TableMetadata['partitionSpecs'][number] },
    { action: 'set-default-spec', specId: -1 },
    { action: 'add-sort-order', sortOrder: { orderId: 1, fields: [{ transform: { kind: 'identity' }, sourceId: 1, direction: 'asc', nullOrder: 'nulls-first' }] } },
    { action: 'set-default-sort-order', sortOrderId: -1 },
    { action: 'add-snapshot', snapshot: snapshot() },
    { action: 'set-snapshot-ref', refName: 'main', ref: { snapshotId: NEW_ID, type: 'branch' } },
    { action: 'set-snapshot-ref', refName: 'keep', ref: { snapshotId: NEW_ID, type: 'tag', maxRefAgeMs: 10 } },
    { action: 'remove-snapshots', snapshotIds: [HEAD] },
    { action: 'remove-snapshot-ref', refName: 'keep' },
    { action: 'set-properties', updates: { a: 'b' } },
    { action: 'remove-properties', removals: ['a'] },
    { action: 'set-location', location: 's3://x/y' },
  ];
  for (const u of updates) {
    const text = stringifyJson(updateToJson(u));
    assert.deepEqual(updateFromJson(parseJson(text)), u, u.action);
  }
  assert.deepEqual(updateToJson({ action: 'set-snapshot-ref', refName: 'main', ref: { snapshotId: NEW_ID, type: 'branch' } }), {
    action: 'set-snapshot-ref',
    'ref-name': 'main',
    type: 'branch',
    'snapshot-id': NEW_ID,
  });
  const body = stringifyJson(commitRequestToJson([{ type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: HEAD }], [{ action: 'add-snapshot', snapshot: snapshot() }]));
  assert.match(body, /"snapshot-id":8744736658442914487/);
  assert.match(body, /"snapshot-id":5953405374839286871/);
  assert.deepEqual(commitRequestFromJson(parseJson(body)).updates[0], { action: 'add-snapshot', snapshot: snapshot() });
  assert.throws(() => updateFromJson({ action: 'frobnicate' }), ConfigError);
  assert.throws(() => requirementFromJson({ type: 'assert-nothing' }), ConfigError);
});

test('each requirement fails with CommitConflictError when the table moved', () => {
  const md = base();
  const failing: TableRequirement[] = [
    { type: 'assert-create' },
    { type: 'assert-table-uuid', uuid: '00000000-0000-4000-8000-000000000000' },
    { type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: 7160124811247582466n },
    { type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: null },
    { type: 'assert-ref-snapshot-id', ref: 'dev', snapshotId: HEAD },
    { type: 'assert-last-assigned-field-id', lastAssignedFieldId: 15 },
    { type: 'assert-current-schema-id', currentSchemaId: 0 },
    { type: 'assert-last-assigned-partition-id', lastAssignedPartitionId: 1000 },
    { type: 'assert-default-spec-id', defaultSpecId: 0 },
    { type: 'assert-default-sort-order-id', defaultSortOrderId: 1 },
  ];
  for (const r of failing) assert.throws(() => checkRequirements(md, [r]), CommitConflictError, r.type);
  assert.doesNotThrow(() =>
    checkRequirements(md, [
      { type: 'assert-table-uuid', uuid: md.tableUuid.toUpperCase() },
      { type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: HEAD },
      { type: 'assert-ref-snapshot-id', ref: 'dev', snapshotId: null },
      { type: 'assert-last-assigned-field-id', lastAssignedFieldId: 16 },
      { type: 'assert-current-schema-id', currentSchemaId: 1 },
      { type: 'assert-last-assigned-partition-id', lastAssignedPartitionId: 1001 },
      { type: 'assert-default-spec-id', defaultSpecId: 1 },
      { type: 'assert-default-sort-order-id', defaultSortOrderId: 0 },
    ]),
  );
  assert.throws(() => checkRequirements(null, [{ type: 'assert-table-uuid', uuid: 'x' }]), CommitConflictError);
  assert.doesNotThrow(() => checkRequirements(null, [{ type: 'assert-create' }]));
});

test('an append commit applies like a catalog: sequence number, current snapshot, logs', () => {
  const md = base();
  const { metadata, changed } = commitUpdates(
    md,
    {
      requirements: [
        { type: 'assert-table-uuid', uuid: md.tableUuid },
        { type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: HEAD },
      ],
      updates: [
        { action: 'add-snapshot', snapshot: snapshot() },
        { action: 'set-snapshot-ref', refName: 'main', ref: { snapshotId: NEW_ID, type: 'branch' } },
      ],
    },
    { nowMs: 1735689799999, metadataLocation: 's3://bucket/warehouse/db/events/metadata/00003-x.metadata.json' },
  );
  assert.equal(changed, true);
  assert.equal(metadata.lastSequenceNumber, 4n);
  assert.equal(metadata.currentSnapshotId, NEW_ID);
  assert.equal(metadata.refs['main']?.snapshotId, NEW_ID);
  assert.equal(metadata.lastUpdatedMs, 1735689700000); // the added snapshot's time, not now
  assert.deepEqual(metadata.snapshotLog.at(-1), { timestampMs: 1735689700000, snapshotId: NEW_ID });
  assert.deepEqual(metadata.metadataLog.at(-1), { timestampMs: md.lastUpdatedMs, metadataFile: 's3://bucket/warehouse/db/events/metadata/00003-x.metadata.json' });
  assert.equal(metadata.snapshots.length, 4);
  // the base is untouched
  assert.equal(md.snapshots.length, 3);
  // the same commit again conflicts
  assert.throws(
    () => commitUpdates(metadata, { requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', snapshotId: HEAD }], updates: [] }, { nowMs: 0 }),
    CommitConflictError,
  );
});

test('invalid updates are ConfigError; a stale sequence number is a conflict', () => {
  const md = base();
  assert.throws(() => applyUpdates(md, [{ action: 'add-snapshot', snapshot: snapshot({ snapshotId: HEAD }) }], { nowMs: 0 }), /already exists/);
  assert.throws(() => applyUpdates(md, [{ action: 'add-snapshot', snapshot: snapshot({ sequenceNumber: 3n }) }], { nowMs: 0 }), CommitConflictError);
  assert.throws(() => applyUpdates(md, [{ action: 'set-snapshot-ref', refName: 'main', ref: { snapshotId: 1n, type: 'branch' } }], { nowMs: 0 }), /unknown snapshot/);
  assert.throws(() => applyUpdates(md, [{ action: 'set-snapshot-ref', refName: 'main', ref: { snapshotId: HEAD, type: 'tag' } }], { nowMs: 0 }), /must be a branch/);
  assert.throws(() => applyUpdates(md, [{ action: 'set-current-schema', schemaId: -1 }], { nowMs: 0 }), /no schema has been added/);
  assert.throws(() => applyUpdates(md, [{ action: 'set-current-schema', schemaId: 9 }], { nowMs: 0 }), /unknown schema 9/);
  assert.throws(() => applyUpdates(md, [{ action: 'upgrade-format-version', formatVersion: 1 }], { nowMs: 0 }), /downgrade/);
  assert.throws(() => applyUpdates(md, [{ action: 'assign-uuid', uuid: '00000000-0000-4000-8000-000000000000' }], { nowMs: 0 }), ConfigError);
  const spec = { specId: 5, fields: [{ sourceId: 99, fieldId: 1005, name: 'x', transform: { kind: 'identity' } as const }] };
  assert.throws(() => applyUpdates(md, [{ action: 'add-spec', spec }], { nowMs: 0 }), /source column id 99/);
});

test('schemas and specs: equal ones are reused, new ids are max + 1, last ids only grow, -1 means last added', () => {
  const md = base();
  const s1 = currentSchema(md);
  // re-adding the current schema is a no-op
  const same = applyUpdates(md, [{ action: 'add-schema', schema: { ...s1, schemaId: 42 } }], { nowMs: 5 });
  assert.equal(same.changed, false);
  assert.equal(same.metadata, md);
  const extended = { ...s1, schemaId: 42, fields: [...s1.fields, { id: 17, name: 'extra', required: false, type: { kind: 'int' } as const }] };
  const r = applyUpdates(
    md,
    [
      { action: 'add-schema', schema: extended },
      { action: 'set-current-schema', schemaId: -1 },
      { action: 'set-properties', updates: { k: 'v' } },
      { action: 'remove-properties', removals: ['owner'] },
    ],
    { nowMs: 5 },
  );
  assert.equal(r.metadata.currentSchemaId, 2);
  assert.equal(r.metadata.lastColumnId, 17);
  assert.equal(r.metadata.lastUpdatedMs, 5);
  assert.equal(r.metadata.properties['k'], 'v');
  assert.equal(r.metadata.properties['owner'], undefined);
  // switching back to an older schema by id
  const back = applyUpdates(r.metadata, [{ action: 'set-current-schema', schemaId: 0 }], { nowMs: 6 });
  assert.equal(back.metadata.currentSchemaId, 0);
  assert.equal(back.metadata.lastColumnId, 17);
  // specs
  const spec = { specId: 77, fields: [{ sourceId: 3, fieldId: 1002, name: 'payload', transform: { kind: 'identity' } as const }] };
  const sp = applyUpdates(md, [{ action: 'add-spec', spec }, { action: 'set-default-spec', specId: -1 }], { nowMs: 7 });
  assert.equal(sp.metadata.defaultSpecId, 2);
  assert.equal(sp.metadata.lastPartitionId, 1002);
  const reuse = applyUpdates(md, [{ action: 'add-spec', spec: { ...(md.partitionSpecs[1] as (typeof md.partitionSpecs)[number]), specId: 9 } }, { action: 'set-default-spec', specId: -1 }], { nowMs: 7 });
  assert.equal(reuse.changed, false);
});

test('remove-snapshots drops refs to them and the snapshot-log history before them; metadata-log is capped', () => {
  const md = base();
  const r = applyUpdates(md, [{ action: 'remove-snapshots', snapshotIds: [3051729675574597004n] }], { nowMs: 9 });
  assert.equal(r.metadata.snapshots.length, 2);
  assert.equal(r.metadata.refs['before-compaction'], undefined);
  assert.deepEqual(r.metadata.snapshotLog.map((e) => e.snapshotId), [7160124811247582466n, HEAD]);
  const capped = applyUpdates(
    { ...md, properties: { ...md.properties, 'write.metadata.previous-versions-max': '2' } },
    [{ action: 'set-properties', updates: { x: 'y' } }],
    { nowMs: 9, metadataLocation: 's3://m/new.json' },
  );
  assert.deepEqual(capped.metadata.metadataLog.map((e) => e.metadataFile), [md.metadataLog[2]?.metadataFile, 's3://m/new.json']);
  // removing main clears the current snapshot
  const noMain = applyUpdates(md, [{ action: 'remove-snapshot-ref', refName: 'main' }], { nowMs: 9 });
  assert.equal(noMain.metadata.currentSnapshotId, null);
});

test('a table can be created from updates alone (assert-create), as a REST create transaction does', () => {
  const md = base();
  const schema = { ...(md.schemas[0] as TableMetadata['schemas'][number]), schemaId: 0 };
  const created = commitUpdates(
    null,
    {
      requirements: [{ type: 'assert-create' }],
      updates: [
        { action: 'assign-uuid', uuid: '11111111-2222-4333-8444-555555555555' },
        { action: 'upgrade-format-version', formatVersion: 2 },
        { action: 'add-schema', schema },
        { action: 'set-current-schema', schemaId: -1 },
        { action: 'add-spec', spec: { specId: 0, fields: [] } },
        { action: 'set-default-spec', specId: -1 },
        { action: 'add-sort-order', sortOrder: { orderId: 0, fields: [] } },
        { action: 'set-default-sort-order', sortOrderId: -1 },
        { action: 'set-location', location: 's3://b/t' },
        { action: 'set-properties', updates: { owner: 'x' } },
      ],
    },
    { nowMs: 123 },
  ).metadata;
  assert.equal(created.tableUuid, '11111111-2222-4333-8444-555555555555');
  assert.equal(created.currentSchemaId, 0);
  assert.equal(created.lastColumnId, 3);
  assert.equal(created.defaultSpecId, 0);
  assert.equal(created.lastPartitionId, 999);
  assert.equal(created.lastUpdatedMs, 123);
  assert.deepEqual(tableMetadataFromJson(serializeTableMetadata(created)), created);
  assert.throws(() => applyUpdates(null, [{ action: 'set-location', location: 's3://b/t' }], { nowMs: 1 }), /assign-uuid/);
});
