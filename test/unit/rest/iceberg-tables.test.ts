/**
 * Icefloe's REST extensions under /connectors/{name}/iceberg/ (docs/rest.md "Iceberg tables") over a fake
 * herder: what reaches the herder (the table as decoded from the path, the snapshot id without lost
 * digits, the adopt option), the answers (200 with the report), and the refusals: 404 for an unknown
 * connector before anything else, 400 for a body that is not what the endpoint takes, and the herder's
 * 400 while the connector is not STOPPED.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, rig } from './rig.ts';

const STOPPED = /^Connectors must be in the STOPPED state before their offsets can be modified/;

test('GET /connectors/{c}/iceberg/tables: the committer\'s tables, ids as strings; 404 for an unknown connector', async () => {
  const r = rig();
  r.herder.add('orders');
  const a = await r.req('GET', '/connectors/orders/iceberg/tables');
  assert.equal(a.status, 200);
  assert.deepEqual(a.json, [{ table: 'db.orders', branch: 'main', state: 'RUNNING', reason: null, last_snapshot_id: '9007199254740993', last_commit_ms: 1700000000000 }]);
  assertError(await r.req('GET', '/connectors/nope/iceberg/tables'), 404, 'Connector nope not found');
});

test('POST .../replay: 200 with the report once STOPPED; the snapshot id as a string or a number, no digits lost; the table percent-decoded', async () => {
  const r = rig();
  r.herder.add('orders');
  const body = { snapshot_id: '9007199254740993' };
  assertError(await r.req('POST', '/connectors/orders/iceberg/tables/db.orders/replay', body), 400, STOPPED);
  r.herder.add('orders', {}, 'STOPPED');
  const a = await r.req('POST', '/connectors/orders/iceberg/tables/db.orders/replay', body);
  assert.equal(a.status, 200, a.body);
  assert.equal(a.headers['content-type'], 'application/json');
  assert.deepEqual(a.json, {
    table: 'db.orders',
    branch: 'main',
    snapshotId: '9007199254740993',
    replaced: '9007199254740993',
    replaySnapshotId: '9007199254740995',
    offsets: [{ topic: 'orders', partition: 0, offset: '20' }],
    result: 'rolled back to snapshot 9007199254740993',
  });
  // A JSON number past 2^53 keeps its digits (JSON.parse alone would make it ...992).
  await r.req('POST', '/connectors/orders/iceberg/tables/my%20db.orders/replay', '{"snapshot_id": 9007199254740993}');
  assert.deepEqual(r.herder.calls.filter((c) => c[0] === 'replayTable'), [
    ['replayTable', 'orders', 'db.orders', 9007199254740993n],
    ['replayTable', 'orders', 'db.orders', 9007199254740993n],
    ['replayTable', 'orders', 'my db.orders', 9007199254740993n],
  ]);
});

test('POST .../replay: a body that is not {"snapshot_id": <id>} is a 400 that names the field; an unknown connector is a 404 first', async () => {
  const r = rig();
  r.herder.add('orders', {}, 'STOPPED');
  const url = '/connectors/orders/iceberg/tables/db.orders/replay';
  assertError(await r.req('POST', url), 400, /JSON object with "snapshot_id"/);
  assertError(await r.req('POST', url, {}), 400, /"snapshot_id" must be a snapshot id .*not missing/);
  assertError(await r.req('POST', url, { snapshot_id: 'latest' }), 400, /"snapshot_id" must be a snapshot id .*not latest/);
  assertError(await r.req('POST', url, { snapshot_id: 1.5 }), 400, /not 1\.5/);
  assertError(await r.req('POST', url, { snapshot_id: '9223372036854775808' }), 400, /64-bit/);
  assertError(await r.req('POST', url, { snapshot_id: true }), 400, /not true/);
  assertError(await r.req('POST', url, { snapshotId: '1' }), 400, /^Unknown field\(s\) "snapshotId": the request body takes "snapshot_id"$/);
  assertError(await r.req('POST', url, [1]), 400, /JSON object/);
  assertError(await r.req('POST', url, '{"snapshot_id": '), 400, /^Malformed JSON/);
  assertError(await r.req('POST', url, { snapshot_id: '1' }, { 'content-type': 'text/plain' }), 415, 'HTTP 415 Unsupported Media Type');
  assert.equal(r.herder.calls.filter((c) => c[0] === 'replayTable').length, 0, 'no bad body reached the herder');
  for (const bad of [undefined, {}, { snapshot_id: 'x' }, '{', { other: 1 }, { snapshot_id: '1' }]) {
    assertError(await r.req('POST', '/connectors/nope/iceberg/tables/db.orders/replay', bad), 404, 'Connector nope not found');
  }
});

test('POST .../adopt: 200 with the report once STOPPED; holds_group_offsets optional, a boolean; other bodies 400; unknown connector 404', async () => {
  const r = rig();
  r.herder.add('orders');
  const url = '/connectors/orders/iceberg/tables/db.orders/adopt';
  assertError(await r.req('POST', url), 400, STOPPED);
  r.herder.add('orders', {}, 'STOPPED');
  const a = await r.req('POST', url);
  assert.equal(a.status, 200, a.body);
  assert.deepEqual(a.json, { table: 'db.orders', branch: 'main', action: 'adopt', stored: { '0': '5' }, connectorPosition: null, reapplyMark: null, result: 'adopted' });
  assert.equal((await r.req('POST', url, { holds_group_offsets: true })).status, 200);
  assert.equal((await r.req('POST', url, { holds_group_offsets: false })).status, 200);
  assert.equal((await r.req('POST', url, {})).status, 200);
  assert.deepEqual(r.herder.calls.filter((c) => c[0] === 'adoptTable').map((c) => c[3]), [
    { holdsGroupOffsets: false },
    { holdsGroupOffsets: false },
    { holdsGroupOffsets: true },
    { holdsGroupOffsets: false },
    { holdsGroupOffsets: false },
  ]);
  assertError(await r.req('POST', url, { holds_group_offsets: 'yes' }), 400, '"holds_group_offsets" must be true or false, not yes');
  assertError(await r.req('POST', url, { holds_group_offset: true }), 400, /^Unknown field\(s\) "holds_group_offset"/);
  assertError(await r.req('POST', url, 'null'), 400, /JSON object/);
  assertError(await r.req('POST', '/connectors/nope/iceberg/tables/db.orders/adopt', { holds_group_offsets: 'yes' }), 404, 'Connector nope not found');
  assertError(await r.req('POST', '/connectors/nope/iceberg/tables/db.orders/adopt'), 404, 'Connector nope not found');
  assertError(await r.req('GET', url), 405, 'HTTP 405 Method Not Allowed');
});
