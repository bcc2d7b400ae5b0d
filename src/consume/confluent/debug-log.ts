/**
 * librdkafka's own log lines to a file, for reproducing a client-level problem (issue 24: a stall after a
 * broker outage): with `ICEFLOE_KAFKA_DEBUG_DIR` set, every client of this process appends its `event.log`
 * lines to `<dir>/rdkafka-<pid>.log`. librdkafka logs debug lines only for the contexts its `debug` setting
 * names (a worker's `consumer.debug=cgrp,topic,broker,protocol`, `producer.debug=eos,broker`, or a
 * connector's `consumer.override.debug`); without that only its warnings and errors come.
 *
 * Owns: the file sink. Must not: be on unless asked (the lines may name hosts, never credentials).
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

export function attachDebugLog(client: { on(event: 'event.log', listener: (e: never) => void): unknown }, dir: string | undefined = process.env['ICEFLOE_KAFKA_DEBUG_DIR']): void {
  if (dir === undefined || dir === '') return;
  const file = join(dir, `rdkafka-${process.pid}.log`);
  client.on('event.log', (e: { fac?: unknown; message?: unknown }) => {
    try {
      appendFileSync(file, `${new Date().toISOString()} ${String(e.fac)} ${String(e.message)}\n`);
    } catch {
      // a diagnostic: never a reason for the client to fail
    }
  });
}
