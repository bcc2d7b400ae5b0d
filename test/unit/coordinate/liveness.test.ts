/**
 * The local liveness view of cluster membership (src/coordinate/redis/liveness.ts), driven by hand:
 * `now` is this process's monotonic clock, snapshots are what a poll of Redis would return.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LivenessView, type PollSnapshot } from '../../../src/coordinate/redis/liveness.ts';
import { parseHeartbeatReply } from '../../../src/coordinate/redis/membership.ts';
import { keysUnder, redisUrlForLogs, wakeQueueName } from '../../../src/coordinate/redis/connection.ts';

const SESSION = 1500;
const SELF = { workerId: 'w-b', url: 'http://b:8083' };

/** A poll at Redis time `redisNow` listing `scores` (workerId → score), with URLs `http://<id>`. */
function snap(redisNow: number, scores: Record<string, number>, left: string[] = []): PollSnapshot {
  const entries = Object.entries(scores);
  return {
    redisNowMs: redisNow,
    scores: new Map(entries),
    urls: new Map(entries.map(([id]) => [id, `http://${id}`])),
    left: new Set(left),
  };
}

const ids = (v: LivenessView): string[] => v.members().map((m) => m.workerId);

test('the view always holds this worker, sorted by workerId with the others', () => {
  const v = new LivenessView(SELF, SESSION);
  assert.deepEqual(v.members(), [SELF]);
  assert.equal(v.observe(0, snap(10_000, { 'w-c': 9_990, 'w-a': 9_995 })), true);
  assert.deepEqual(ids(v), ['w-a', 'w-b', 'w-c']);
  assert.equal(v.members()[0]?.url, 'http://w-a');
  // This worker's own URL wins over whatever Redis lists under its id.
  v.observe(10, snap(10_010, { 'w-b': 10_010, 'w-a': 10_010, 'w-c': 10_010 }));
  assert.deepEqual(v.members().find((m) => m.workerId === 'w-b'), SELF);
  assert.deepEqual(v.watched(), ['w-a', 'w-c']);
});

test('a member stays until its score has not advanced for the session timeout by the LOCAL clock', () => {
  const v = new LivenessView(SELF, SESSION);
  v.observe(0, snap(50_000, { 'w-a': 50_000 }));
  // Redis's clock runs wild (it may be another host's after a restart): irrelevant, only changes count.
  assert.equal(v.observe(1000, snap(999_999, { 'w-a': 50_000 })), false);
  assert.deepEqual(ids(v), ['w-a', 'w-b']);
  assert.equal(v.observe(1499, snap(999_999, { 'w-a': 50_000 })), false);
  assert.equal(v.observe(1500, snap(999_999, { 'w-a': 50_000 })), true);
  assert.deepEqual(ids(v), ['w-b']);
});

test('a flushed Redis changes nothing: absent members stay until they re-register or time out', () => {
  const v = new LivenessView(SELF, SESSION);
  v.observe(0, snap(1000, { 'w-a': 1000, 'w-c': 1000 }));
  // FLUSHDB: the next polls see only what re-registered so far (this worker's own heartbeat).
  assert.equal(v.observe(200, snap(1200, { 'w-b': 1200 })), false);
  assert.equal(v.observe(400, snap(1400, { 'w-b': 1400, 'w-a': 1390 })), false);
  assert.equal(v.observe(600, snap(1600, { 'w-b': 1600, 'w-a': 1590, 'w-c': 1580 })), false);
  assert.deepEqual(ids(v), ['w-a', 'w-b', 'w-c']);
  // w-c re-registered at local 600: it is judged from then on, not from before the flush.
  assert.equal(v.observe(2000, snap(3000, { 'w-b': 3000, 'w-a': 2990, 'w-c': 1580 })), false);
  assert.equal(v.observe(2100, snap(3100, { 'w-b': 3100, 'w-a': 3090, 'w-c': 1580 })), true);
  assert.deepEqual(ids(v), ['w-a', 'w-b']);
});

test('a Redis restart longer than the session timeout: the outage does not count, members come back before anyone is dropped', () => {
  const v = new LivenessView(SELF, SESSION);
  v.observe(0, snap(1000, { 'w-a': 1000, 'w-c': 1000 }));
  // Redis down from local 100 to 4100 (no polls), back empty: only this worker has re-registered.
  assert.equal(v.observe(4100, snap(10, { 'w-b': 10 }), 4000), false, 'nobody dropped for the time nobody could be seen');
  assert.equal(v.observe(4300, snap(210, { 'w-b': 210, 'w-a': 200, 'w-c': 205 })), false);
  assert.deepEqual(ids(v), ['w-a', 'w-b', 'w-c']);
  // One that did not come back is dropped a session timeout after what could be observed.
  assert.equal(v.observe(5500, snap(1410, { 'w-b': 1410, 'w-a': 1400 })), false);
  assert.equal(v.observe(5799, snap(1710, { 'w-b': 1710, 'w-a': 1700 })), false);
  assert.equal(v.observe(5800, snap(1910, { 'w-b': 1910, 'w-a': 1900 })), true);
  assert.deepEqual(ids(v), ['w-a', 'w-b']);
});

test('a member that never comes back after a flush times out from its last advance', () => {
  const v = new LivenessView(SELF, SESSION);
  v.observe(0, snap(1000, { 'w-a': 1000 }));
  v.observe(100, snap(1100, { 'w-a': 1100 }));
  assert.equal(v.observe(1599, snap(5000, { 'w-b': 5000 })), false);
  assert.equal(v.observe(1600, snap(5100, { 'w-b': 5100 })), true);
  assert.deepEqual(ids(v), ['w-b']);
});

test('a graceful leave drops the member at once; a later heartbeat under the same id is a new member', () => {
  const v = new LivenessView(SELF, SESSION);
  v.observe(0, snap(1000, { 'w-a': 1000 }));
  assert.equal(v.observe(200, snap(1200, {}, ['w-a'])), true);
  assert.deepEqual(ids(v), ['w-b']);
  // The same id registers again (a restart): its score is fresh, so it is in at once.
  assert.equal(v.observe(400, snap(1400, { 'w-a': 1390 })), true);
  assert.deepEqual(ids(v), ['w-a', 'w-b']);
});

test('a left-over entry of a dead worker is not added; a dropped member whose score stands still stays out', () => {
  const v = new LivenessView(SELF, SESSION);
  // First sight: Redis says w-old last beat 5 s ago, more than a session: not a member.
  assert.equal(v.observe(0, snap(10_000, { 'w-old': 5000, 'w-a': 9900 })), true);
  assert.deepEqual(ids(v), ['w-a', 'w-b']);
  // w-a, seen 100 ms old, times out 1400 ms later by the local clock, not 1500.
  assert.equal(v.observe(1399, snap(10_000, { 'w-old': 5000, 'w-a': 9900 })), false);
  assert.equal(v.observe(1400, snap(10_000, { 'w-old': 5000, 'w-a': 9900 })), true);
  // Still listed in Redis with the same score: stays out, however often it is polled.
  for (let t = 1600; t < 5000; t += 200) assert.equal(v.observe(t, snap(10_000, { 'w-old': 5000, 'w-a': 9900 })), false);
  assert.deepEqual(ids(v), ['w-b']);
  // A frozen worker that thaws heartbeats again: back in.
  assert.equal(v.observe(5200, snap(20_000, { 'w-old': 5000, 'w-a': 20_000 })), true);
  assert.deepEqual(ids(v), ['w-a', 'w-b']);
});

test('a URL change is a change of the view', () => {
  const v = new LivenessView(SELF, SESSION);
  v.observe(0, snap(1000, { 'w-a': 1000 }));
  const moved: PollSnapshot = { ...snap(1200, { 'w-a': 1200 }), urls: new Map([['w-a', 'http://elsewhere']]) };
  assert.equal(v.observe(200, moved), true);
  assert.equal(v.members()[0]?.url, 'http://elsewhere');
});

test('the heartbeat reply parses into a snapshot; anything else is refused', () => {
  const s = parseHeartbeatReply(['1700000000123', ['w-a', '1700000000100', 'w-b', '1700000000123'], ['w-a', 'http://a', 'w-b', 'http://b'], ['w-c']]);
  assert.equal(s.redisNowMs, 1_700_000_000_123);
  assert.deepEqual([...s.scores], [['w-a', 1_700_000_000_100], ['w-b', 1_700_000_000_123]]);
  assert.equal(s.urls.get('w-b'), 'http://b');
  assert.deepEqual([...s.left], ['w-c']);
  assert.throws(() => parseHeartbeatReply(['1', [], []]), /four/);
  assert.throws(() => parseHeartbeatReply(['1', [1, 2], [], []]), /members/);
});

test('queue names: safe names kept, others sanitized and told apart by a hash', () => {
  assert.equal(wakeQueueName('orders-sink.v2'), 'wake-orders-sink.v2');
  const a = wakeQueueName('a:b');
  const b = wakeQueueName('a_b');
  const c = wakeQueueName('a b');
  assert.ok(!a.includes(':'), a);
  assert.match(a, /^wake-a_b-[0-9a-f]{12}$/);
  assert.equal(b, 'wake-a_b');
  assert.notEqual(a, c);
  assert.match(wakeQueueName(''), /^wake--[0-9a-f]{12}$/);
});

test('keys live under the prefix; the Redis URL never shows its password', () => {
  const k = keysUnder('icefloe:g1');
  assert.equal(k.members, 'icefloe:g1:members');
  assert.equal(k.lease('db.t'), 'icefloe:g1:lease:db.t');
  assert.equal(k.bullPrefix, 'icefloe:g1:bull');
  assert.equal(keysUnder('icefloe:g1:').leftPrefix, 'icefloe:g1:left:');
  assert.equal(redisUrlForLogs('redis://user:s3cret@redis:6379/2'), 'redis://user:***@redis:6379/2');
  assert.equal(redisUrlForLogs('redis://:s3cret@redis:6379'), 'redis://:***@redis:6379');
  assert.equal(redisUrlForLogs('redis://127.0.0.1:6379/7'), 'redis://127.0.0.1:6379/7');
});
