/**
 * librdkafka's own log lines of a test worker's clients (src/consume/confluent/debug-log.ts): a directory
 * to pass as the worker's ICEFLOE_KAFKA_DEBUG_DIR, and the tails of its files for a failure message. The
 * broker tests turn on the group, topic and transaction contexts (`cgrp,topic,eos`), so that a task found
 * stuck after an outage shows what its consumer and producer were doing (issue 24): `topic` carries the
 * OffsetFetch replies of `committed()` with their count of unstable partitions (offsets pending in an
 * open or unfinished transaction, which a read_committed consumer waits for).
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ClientLogs {
  readonly dir: string;
  /** The worker's `env` addition. */
  readonly env: Readonly<Record<string, string>>;
  /** The worker properties that turn librdkafka's debug contexts on for the task clients. */
  readonly props: Readonly<Record<string, string>>;
  /** The last `lines` lines of each client's file. */
  tails(lines?: number): string;
}

export function clientLogs(contexts = process.env['ICEFLOE_TEST_KAFKA_DEBUG'] ?? 'cgrp,topic,eos'): ClientLogs {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-rdkafka-'));
  return {
    dir,
    env: { ICEFLOE_KAFKA_DEBUG_DIR: dir },
    props: { 'consumer.debug': contexts, 'producer.debug': contexts },
    tails(lines = 25) {
      return `librdkafka (${dir}):\n` + readdirSync(dir)
        .map((f) => `--- ${f}\n${readFileSync(join(dir, f), 'utf8').trimEnd().split('\n').slice(-lines).join('\n')}`)
        .join('\n');
    },
  };
}
