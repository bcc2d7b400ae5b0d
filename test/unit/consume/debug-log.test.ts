import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { attachDebugLog } from '../../../src/consume/confluent/debug-log.ts';

test('debug log: librdkafka lines go to <dir>/rdkafka-<pid>.log only when a directory is given', () => {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-rdkafka-'));
  type Client = Parameters<typeof attachDebugLog>[0];
  const client = new EventEmitter();
  attachDebugLog(client as unknown as Client, dir);
  const off = new EventEmitter();
  attachDebugLog(off as unknown as Client, undefined);
  client.emit('event.log', { fac: 'CGRPOP', message: 'Group "g" received op OFFSET_FETCH in state up' });
  const file = join(dir, `rdkafka-${process.pid}.log`);
  assert.match(readFileSync(file, 'utf8'), /^\S+Z CGRPOP Group "g" received op OFFSET_FETCH in state up\n$/);
  assert.equal(off.listenerCount('event.log'), 0);
  assert.ok(existsSync(file));
});
