/**
 * Decoding rules of a shared control topic (issue 9 point 8, events.ts `classifyControlRecord`): only this
 * connector's records are decoded and only they can stop its tables; another connector's records (any
 * version), another product's (the Apache sink's Avro events), garbage and tombstones are not ours. Every
 * encoding written so far stays readable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyControlRecord, controlEnvelope, controlRecordKey, encodeAnnouncement, encodeControlEvent, isControlKeyOf } from '../../../src/coordinate/events.ts';
import { apacheSinkLikeEvent, futureVersionRecord, garbageRecord } from '../../helpers/foreign-control.ts';
import { announcement, CONNECTOR, cycleComplete, file, span } from './fixtures.ts';

const utf8 = new TextEncoder();
const key = (connector: string, task = 0): Uint8Array => utf8.encode(controlRecordKey(connector, task));
const ann = announcement(0, 'c1', [file('a')], [span('orders', 0, 0n, 9n)]);

test('this connector\'s v1 records (announcement, split parts, cycle-complete) are decoded as ours', () => {
  const one = classifyControlRecord(CONNECTOR, key(CONNECTOR), encodeAnnouncement(ann, 1_000_000)[0] ?? new Uint8Array());
  assert.equal(one.kind, 'ours');
  assert.equal(one.kind === 'ours' ? one.event.type : '', 'announcement');
  const many = announcement(3, 'c2', Array.from({ length: 40 }, (_, i) => file(`f${i}`)), [span('orders', 1, 5n, 50n)]);
  const parts = encodeAnnouncement(many, 2_000);
  assert.ok(parts.length > 1, 'split into parts');
  for (const p of parts) assert.equal(classifyControlRecord(CONNECTOR, key(CONNECTOR, 3), p).kind, 'ours');
  const cc = classifyControlRecord(CONNECTOR, key(CONNECTOR), encodeControlEvent(cycleComplete(0, 'c1', [{ topic: 'orders', partition: 0, nextOffset: 10n, caughtUp: true }])));
  assert.equal(cc.kind === 'ours' ? cc.event.type : cc.kind, 'cycle-complete');
});

test('another connector\'s records are not ours, whatever their version; a foreign product\'s, garbage and tombstones neither', () => {
  const other = 'refunds-sink';
  assert.deepEqual(classifyControlRecord(CONNECTOR, key(other), encodeAnnouncement({ ...ann, connector: other }, 1_000_000)[0] ?? null), { kind: 'other-connector' });
  const future = futureVersionRecord(other);
  assert.deepEqual(classifyControlRecord(CONNECTOR, future.key, future.value), { kind: 'other-connector' });
  for (let seed = 1; seed <= 20; seed++) {
    const apache = apacheSinkLikeEvent(seed);
    assert.deepEqual(classifyControlRecord(CONNECTOR, apache.key, apache.value), { kind: 'foreign' });
    assert.deepEqual(classifyControlRecord(CONNECTOR, null, apache.value), { kind: 'foreign' });
    const g = garbageRecord(seed);
    assert.deepEqual(classifyControlRecord(CONNECTOR, g.key, g.value), { kind: 'foreign' });
  }
  assert.deepEqual(classifyControlRecord(CONNECTOR, key(CONNECTOR), null), { kind: 'foreign' }, 'a tombstone carries no event');
  assert.deepEqual(classifyControlRecord(CONNECTOR, utf8.encode('x'), utf8.encode('{"format":"something-else","version":"9.9"}')), { kind: 'foreign' });
});

test('an unknown future version of this connector is ours and unreadable (it stops our tables): by key or by envelope', () => {
  const future = futureVersionRecord(CONNECTOR);
  const byKey = classifyControlRecord(CONNECTOR, future.key, future.value);
  assert.equal(byKey.kind, 'ours-unreadable');
  assert.equal(byKey.kind === 'ours-unreadable' ? byKey.code : '', 'unsupported-version');
  // A future version that reorders its members still says so when its key is ours.
  const reordered = utf8.encode(JSON.stringify({ version: '3.1', format: 'icefloe-control', somethingNew: true }));
  const r = classifyControlRecord(CONNECTOR, key(CONNECTOR, 7), reordered);
  assert.equal(r.kind === 'ours-unreadable' ? r.code : r.kind, 'unsupported-version');
  // A record whose envelope names this connector is ours even under another key.
  const byEnvelope = classifyControlRecord(CONNECTOR, utf8.encode('whatever'), future.value);
  assert.equal(byEnvelope.kind === 'ours-unreadable' ? byEnvelope.code : byEnvelope.kind, 'unsupported-version');
});

test('garbage under this connector\'s key is ours and malformed: never skipped (it may have been an announcement)', () => {
  const g = garbageRecord(5);
  const c = classifyControlRecord(CONNECTOR, key(CONNECTOR, 2), g.value);
  assert.equal(c.kind === 'ours-unreadable' ? c.code : c.kind, 'malformed');
  const truncated = (encodeAnnouncement(ann, 1_000_000)[0] ?? new Uint8Array()).subarray(0, 80);
  const t = classifyControlRecord(CONNECTOR, key(CONNECTOR), truncated);
  assert.equal(t.kind === 'ours-unreadable' ? t.code : t.kind, 'malformed');
});

test('keys: a connector owns exactly `<name>/<task number>`, so names that prefix each other do not mix', () => {
  assert.equal(isControlKeyOf(key('a', 3), 'a'), true);
  assert.equal(isControlKeyOf(key('a/1', 2), 'a'), false, '"a/1/2" is task 2 of connector "a/1"');
  assert.equal(isControlKeyOf(key('a/1', 2), 'a/1'), true);
  assert.equal(isControlKeyOf(key('ab', 1), 'a'), false);
  assert.equal(isControlKeyOf(utf8.encode('a/'), 'a'), false);
  assert.equal(isControlKeyOf(utf8.encode('a/1x'), 'a'), false);
  assert.equal(isControlKeyOf(null, 'a'), false);
  assert.equal(isControlKeyOf(new Uint8Array([0xff, 0xfe]), 'a'), false);
});

test('the envelope is read from the first bytes, with JSON escapes in the connector name', () => {
  const name = 'we"ird\\näme';
  const bytes = encodeControlEvent({ ...cycleComplete(0, 'c', []), connector: name });
  assert.deepEqual(controlEnvelope(bytes), { major: 1, minor: 0, connector: name });
  assert.equal(classifyControlRecord(name, key(name), bytes).kind, 'ours');
  assert.equal(classifyControlRecord(CONNECTOR, key(name), bytes).kind, 'other-connector');
  assert.equal(controlEnvelope(utf8.encode(' {"format":"icefloe-control"')), undefined);
});
