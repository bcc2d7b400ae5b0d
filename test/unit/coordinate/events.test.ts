/**
 * Control-event codec: exact round trips (63-bit values, every DataFile field, tagged partition values),
 * version handling, splitting under a byte limit and reassembly that notices a missing part.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FatalError } from '../../../src/core/errors.ts';
import { makeDataFile } from '../../../src/iceberg/data-file.ts';
import {
  decodeControlEvent,
  encodeAnnouncement,
  encodeControlEvent,
  reassembleAnnouncement,
} from '../../../src/coordinate/events.ts';
import type { AnnouncementPart, CycleComplete } from '../../../src/coordinate/events.ts';
import { announcement, CONNECTOR, cycleComplete, file, span } from './fixtures.ts';

const MAX = 2n ** 63n - 1n;

const fullFile = makeDataFile({
  content: 0,
  filePath: 's3://wh/db/orders/data/day=2024-01-01/00001-ünïcode-0.parquet',
  fileFormat: 'PARQUET',
  specId: 3,
  partition: [19723, 'EU', MAX, null, true, new Uint8Array([0, 255, 7]), -0, Number.NaN, 1.5, Number.POSITIVE_INFINITY],
  recordCount: MAX,
  fileSizeInBytes: MAX - 1n,
  columnSizes: new Map([
    [1, MAX],
    [2, 0n],
  ]),
  valueCounts: new Map([[1, 9_007_199_254_740_993n]]),
  nullValueCounts: new Map([[1, 0n]]),
  nanValueCounts: new Map(),
  lowerBounds: new Map([[1, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])]]),
  upperBounds: new Map([[1, new Uint8Array([0xff, 0xfe])], [2, new Uint8Array([])]]),
  keyMetadata: new Uint8Array([9, 9]),
  splitOffsets: [4n, MAX],
  sortOrderId: 0,
});

test('an announcement round-trips exactly: every DataFile field, 63-bit counts and offsets, tagged partition values', () => {
  const a = announcement(7, 'cycle-42', [fullFile, file('s3://wh/plain.parquet')], [span('orders', 5, MAX - 10n, MAX - 1n, 1_700_000_000_123)]);
  const records = encodeAnnouncement(a, 1_000_000);
  assert.equal(records.length, 1);
  const decoded = decodeControlEvent(records[0] ?? new Uint8Array());
  assert.deepEqual(decoded, { type: 'announcement', ...a, part: 0, parts: 1 });
  assert.ok(decoded.type === 'announcement');
  const f = decoded.files[0];
  assert.equal(f?.recordCount, MAX);
  assert.ok(Object.is(f?.partition[6], -0));
  assert.ok(Number.isNaN(f?.partition[7]));
  assert.equal(f?.partition[2], MAX);
  assert.deepEqual(f?.upperBounds?.get(2), new Uint8Array([]));
  assert.equal(decoded.sourceSpans[0]?.lastOffset, MAX - 1n);
  // absent optional fields stay absent (no `undefined` keys)
  assert.deepEqual(Object.keys(decoded.files[1] ?? {}).sort(), ['content', 'fileFormat', 'filePath', 'fileSizeInBytes', 'partition', 'recordCount', 'specId']);
});

test('a cycle-complete round-trips with idle partitions and 63-bit next offsets', () => {
  const c: CycleComplete = cycleComplete(2, 'c-1', [
    { topic: 'orders', partition: 0, nextOffset: MAX, maxTimestampMs: 1_700_000_000_000, caughtUp: false },
    { topic: 'orders', partition: 1, nextOffset: 0n, caughtUp: true },
  ]);
  assert.deepEqual(decodeControlEvent(encodeControlEvent(c)), c);
  // debuggable: plain JSON with bare integers
  const text = new TextDecoder().decode(encodeControlEvent(c));
  assert.match(text, /"nextOffset":9223372036854775807/);
  assert.match(text, /"version":"1\.0"/);
});

test('versions: a newer minor with extra fields is read; another major version is a FatalError', () => {
  const c = cycleComplete(1, 'c', []);
  const doc = JSON.parse(new TextDecoder().decode(encodeControlEvent(c))) as Record<string, unknown>;
  const enc = (o: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(o));
  assert.deepEqual(decodeControlEvent(enc({ ...doc, version: '1.7', futureField: { x: 1 } })), c);
  assert.throws(() => decodeControlEvent(enc({ ...doc, version: '2.0' })), (e: unknown) => e instanceof FatalError && /version 2\.0 is not supported/.test(e.message));
  assert.throws(() => decodeControlEvent(enc({ ...doc, version: undefined })), FatalError);
  assert.throws(() => decodeControlEvent(enc({ ...doc, format: 'other' })), FatalError);
  assert.throws(() => decodeControlEvent(enc({ ...doc, type: 'start-commit' })), FatalError);
  assert.throws(() => decodeControlEvent(new Uint8Array([0xff, 0xfe])), FatalError);
});

test('an announcement over the byte limit splits into parts under the limit that reassemble exactly', () => {
  const files = Array.from({ length: 60 }, (_, i) =>
    makeDataFile({ ...fullFile, filePath: `s3://wh/db/orders/data/${String(i).padStart(4, '0')}-${'x'.repeat(i * 7)}.parquet` }),
  );
  const spans = Array.from({ length: 40 }, (_, i) => span('orders', i, BigInt(i) * 1000n, BigInt(i) * 1000n + 999n, 1_700_000_000_000 + i));
  const a = announcement(3, 'cycle-9', files, spans);
  const limit = 4096;
  const records = encodeAnnouncement(a, limit);
  assert.ok(records.length > 3, `expected several parts, got ${records.length}`);
  for (const r of records) assert.ok(r.byteLength <= limit, `part of ${r.byteLength} bytes`);
  const parts = records.map((r) => decodeControlEvent(r) as AnnouncementPart);
  assert.deepEqual(
    parts.map((p) => [p.part, p.parts]),
    parts.map((_, i) => [i, parts.length]),
  );
  // reassembly is order-independent
  const shuffled = [...parts].reverse();
  const re = reassembleAnnouncement(shuffled);
  assert.equal(re.kind, 'complete');
  assert.ok(re.kind === 'complete');
  assert.deepEqual(re.announcement, a);
});

test('reassembly detects a missing part, a duplicate part and parts that disagree', () => {
  const files = Array.from({ length: 30 }, (_, i) => makeDataFile({ ...fullFile, filePath: `s3://wh/f-${i}.parquet` }));
  const parts = encodeAnnouncement(announcement(1, 'c', files, [span('t', 0, 0n, 9n)]), 3000).map((r) => decodeControlEvent(r) as AnnouncementPart);
  assert.ok(parts.length >= 3);
  const withoutMiddle = parts.filter((p) => p.part !== 1);
  assert.deepEqual(reassembleAnnouncement(withoutMiddle), { kind: 'incomplete', parts: parts.length, missing: [1] });
  const [p0] = parts;
  assert.ok(p0 !== undefined);
  assert.equal(reassembleAnnouncement([...parts, p0]).kind, 'inconsistent');
  assert.equal(reassembleAnnouncement(parts.map((p, i) => (i === 2 ? { ...p, schemaId: 9 } : p))).kind, 'inconsistent');
  assert.equal(reassembleAnnouncement(parts.map((p, i) => (i === 2 ? { ...p, cycleId: 'other' } : p))).kind, 'inconsistent');
});

test('a single file larger than the limit is refused (never an oversized record)', () => {
  assert.throws(() => encodeAnnouncement(announcement(1, 'c', [fullFile], []), 300), FatalError);
  assert.equal(CONNECTOR, 'orders-sink');
});
