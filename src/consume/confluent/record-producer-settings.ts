/**
 * librdkafka settings of the idempotent record producer (record-producer.ts), kept apart from the client so
 * unit tests check them without the native addon (as settings.ts does for the sink's clients).
 *
 * Owns: the defaults and the promises the producer may not be configured away from. Must not: import the
 * client or read the environment.
 */
import { ConfigError } from '../../core/errors.ts';
import type { ClientSettings, LibrdkafkaConfig } from './settings.ts';

/**
 * Defaults a user setting may replace: linger a little longer than librdkafka's 5 ms (fuller batches at
 * high rates, little latency at low ones), and let the local queue hold more than its default 100,000
 * records, so that several sends of thousands of records can be in flight without ERR__QUEUE_FULL.
 */
const DEFAULTS: ClientSettings = {
  'linger.ms': '10',
  'queue.buffering.max.messages': '500000',
};

/**
 * The producer's librdkafka settings: defaults, then the given settings and overrides, then what this
 * producer promises and may not be configured away: idempotence, acks from every in-sync replica, and no
 * transactional.id (this producer never opens a transaction; an id would make librdkafka demand one).
 */
export function recordProducerConfig(base: ClientSettings, overrides?: ClientSettings): LibrdkafkaConfig {
  const out: LibrdkafkaConfig = { ...DEFAULTS };
  for (const layer of [base, overrides]) {
    if (layer !== undefined) for (const [k, v] of Object.entries(layer)) out[k] = String(v);
  }
  if ((out['bootstrap.servers'] ?? out['metadata.broker.list'] ?? '') === '') {
    throw new ConfigError('Kafka setting bootstrap.servers is required', { context: { key: 'bootstrap.servers' } });
  }
  if (out['transactional.id'] !== undefined) {
    throw new ConfigError('Kafka setting transactional.id cannot be used: this producer is not transactional', { context: { key: 'transactional.id' } });
  }
  const idempotence = out['enable.idempotence'];
  if (idempotence !== undefined && idempotence.trim().toLowerCase() !== 'true') {
    throw new ConfigError(`Kafka setting enable.idempotence=${idempotence} cannot be used: retries must not duplicate or reorder records (it must be true)`, {
      context: { key: 'enable.idempotence' },
    });
  }
  out['enable.idempotence'] = 'true';
  for (const key of ['acks', 'request.required.acks']) {
    const acks = out[key];
    if (acks !== undefined && !['all', '-1'].includes(acks.trim().toLowerCase())) {
      throw new ConfigError(`Kafka setting ${key}=${acks} cannot be used: a record counts as delivered only once every in-sync replica has it (it must be all)`, {
        context: { key },
      });
    }
  }
  delete out['request.required.acks'];
  out['acks'] = 'all';
  return out;
}

