/**
 * Applied control positions in snapshot summaries: codec, and the fail-closed read from the branch's
 * ancestry (docs/architecture.md, "Fail closed on identity").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMIT_ID_KEY } from '../../../src/commit/commit-retry.ts';
import {
  commitIdPrefix,
  controlOffsetsKey,
  decodePositions,
  encodePositions,
  positionsSummary,
  readControlPositions,
  startOffset,
  VALID_THROUGH_TS_KEY,
} from '../../../src/coordinate/control-positions.ts';
import { CONNECTOR, emptyTable, expire, LIVE, withSnapshot } from './fixtures.ts';

const MAX = 2n ** 63n - 1n;
const ours = (positions: Map<number, bigint>, extra: Record<string, string> = {}): Record<string, string> => ({
  ...positionsSummary(CONNECTOR, positions, LIVE),
  [COMMIT_ID_KEY]: `${commitIdPrefix(CONNECTOR)}abc`,
  ...extra,
});

test('positions encode as {"<partition>": offset} and decode back, 63-bit safe', () => {
  const p = new Map([
    [2, MAX],
    [0, 15n],
  ]);
  const text = encodePositions(p);
  assert.equal(text, '{"0":15,"2":9223372036854775807}');
  assert.deepEqual(decodePositions(text), new Map([
    [0, 15n],
    [2, MAX],
  ]));
  assert.throws(() => decodePositions('{"a":1}'), TypeError);
  assert.throws(() => decodePositions('{"0":-1}'), TypeError);
  assert.throws(() => decodePositions('[1]'), TypeError);
});

test('a table with no snapshots is fresh: read the control topic from its beginning', () => {
  assert.deepEqual(readControlPositions(emptyTable(), CONNECTOR, LIVE), { kind: 'fresh' });
  assert.equal(startOffset(new Map(), 3), 'beginning');
  assert.equal(startOffset(new Map([[3, 7n]]), 3), 7n);
});

test('positions come from the newest ancestor that carries them, past snapshots of other writers', () => {
  let md = withSnapshot(emptyTable(), ours(new Map([[0, 5n]])));
  md = withSnapshot(md, ours(new Map([[0, 9n], [1, MAX]]), { [VALID_THROUGH_TS_KEY]: '1700000000123' }));
  md = withSnapshot(md, { 'engine-name': 'spark' }); // compaction by another engine, no keys
  const read = readControlPositions(md, CONNECTOR, LIVE);
  assert.equal(read.kind, 'positions');
  assert.ok(read.kind === 'positions');
  assert.deepEqual(read.positions, new Map([[0, 9n], [1, MAX]]));
  assert.equal(read.snapshotId, 2n);
  assert.equal(read.validThroughTs, 1_700_000_000_123);
  // another connector's positions in the same table are not ours
  assert.equal(readControlPositions(md, 'other-connector', LIVE).kind, 'unseeded');
});

test('identity mismatch fails closed: topic recreated, cluster failover, identity keys missing', () => {
  const md = withSnapshot(emptyTable(), ours(new Map([[0, 5n]])));
  const topic = readControlPositions(md, CONNECTOR, { ...LIVE, controlTopicId: 'recreated' });
  assert.deepEqual(topic, {
    kind: 'identity-mismatch',
    stored: { controlTopicId: LIVE.controlTopicId, clusterId: LIVE.clusterId },
    positions: new Map([[0, 5n]]),
    live: { ...LIVE, controlTopicId: 'recreated' },
    snapshotId: 1n,
  });
  assert.equal(readControlPositions(md, CONNECTOR, { ...LIVE, clusterId: 'cluster-B' }).kind, 'identity-mismatch');
  const bare = withSnapshot(emptyTable(), { [controlOffsetsKey(CONNECTOR)]: '{"0":5}' });
  assert.equal(readControlPositions(bare, CONNECTOR, LIVE).kind, 'identity-mismatch');
});

test('expired: the ancestry is cut by expiry before any snapshot with our positions', () => {
  let md = withSnapshot(emptyTable(), ours(new Map([[0, 5n]])));
  md = withSnapshot(md, { 'engine-name': 'spark' });
  md = withSnapshot(md, { 'engine-name': 'spark' });
  md = expire(md, [1n, 2n]);
  assert.deepEqual(readControlPositions(md, CONNECTOR, LIVE), { kind: 'expired', reason: 'ancestry-truncated', scanned: 1 });
});

test('expired: our snapshots exist but not in the ancestry (rolled back / replaced)', () => {
  const mine = withSnapshot(emptyTable(), ours(new Map([[0, 5n]])));
  // a replace: main now points at a new root snapshot without a parent
  const replaced = withSnapshot({ ...mine, refs: {} }, { 'engine-name': 'spark' }, 100n);
  assert.deepEqual(readControlPositions(replaced, CONNECTOR, LIVE), { kind: 'expired', reason: 'connector-snapshots-outside-ancestry', scanned: 1 });
});

test('unseeded: snapshots by other writers only, whole ancestry present: fail closed too (seed deliberately)', () => {
  const md = withSnapshot(withSnapshot(emptyTable(), { 'engine-name': 'spark' }), { 'engine-name': 'trino' });
  assert.deepEqual(readControlPositions(md, CONNECTOR, LIVE), { kind: 'unseeded', snapshots: 2 });
});

test('a malformed stored value is reported, not guessed', () => {
  const md = withSnapshot(emptyTable(), { ...ours(new Map()), [controlOffsetsKey(CONNECTOR)]: 'not json' });
  assert.equal(readControlPositions(md, CONNECTOR, LIVE).kind, 'malformed');
  const wm = withSnapshot(emptyTable(), ours(new Map(), { [VALID_THROUGH_TS_KEY]: '12.5' }));
  assert.equal(readControlPositions(wm, CONNECTOR, LIVE).kind, 'malformed');
});
