/**
 * A second process that sends commit wake-ups through the Redis coordination adapter on command, for
 * tests that need a wake-up to reach Redis while the test process itself is busy (its event loop blocked
 * inside a wake-up handler). Usage: fork with argv [redisUrl, keyPrefix, connector]; it sends 'ready' once
 * its queue is connected, answers each 'wake' message by calling wake(connector) and sending 'woken', and
 * closes everything and exits on 'close'.
 */
import { SILENT_LOGGER } from '../../src/core/log.ts';
import { redisCoordination } from '../../src/coordinate/redis/index.ts';

const [redisUrl, keyPrefix, connector] = process.argv.slice(2);
if (redisUrl === undefined || keyPrefix === undefined || connector === undefined) throw new Error('usage: redis-waker.ts <redisUrl> <keyPrefix> <connector>');
const send = (message: string): void => {
  process.send?.(message);
};

const coordination = redisCoordination({
  redisUrl,
  keyPrefix,
  workerId: `waker-${process.pid}`,
  restUrl: 'http://127.0.0.1:0',
  heartbeatMs: 200,
  sessionTimeoutMs: 1500,
  leaseTtlMs: 1000,
  log: SILENT_LOGGER,
});
// Warm the queue's connection up on another connector's queue, so a later wake costs one round trip.
await coordination.wakeups.wake(`${connector}-warm-up`);
process.on('message', (message) => {
  if (message === 'wake') {
    coordination.wakeups.wake(connector).then(
      () => send('woken'),
      (e: unknown) => send(`failed: ${String(e)}`),
    );
  } else if (message === 'close') {
    void coordination.close().then(() => process.disconnect());
  }
});
send('ready');
