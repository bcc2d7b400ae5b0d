/**
 * The idempotent record producer's librdkafka settings (src/consume/confluent/record-producer-settings.ts): the
 * promises it may not be configured away from, and defaults a user may replace. Pure: no broker.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../../src/core/errors.ts';
import { recordProducerConfig } from '../../../src/consume/confluent/record-producer-settings.ts';

test('idempotent with acks=all, batching defaults, user settings and overrides layered on top', () => {
  const c = recordProducerConfig({ 'bootstrap.servers': 'b:9092', 'linger.ms': '50' }, { 'client.id': 'x' });
  assert.equal(c['enable.idempotence'], 'true');
  assert.equal(c['acks'], 'all');
  assert.equal(c['linger.ms'], '50', 'a user value replaces a default');
  assert.equal(c['client.id'], 'x');
  assert.equal(c['bootstrap.servers'], 'b:9092');
  assert.equal(c['transactional.id'], undefined);
});

test('acks -1 and request.required.acks are the same promise; anything weaker is a ConfigError', () => {
  assert.equal(recordProducerConfig({ 'bootstrap.servers': 'b', acks: '-1' })['acks'], 'all');
  const viaAlias = recordProducerConfig({ 'bootstrap.servers': 'b', 'request.required.acks': 'all' });
  assert.equal(viaAlias['acks'], 'all');
  assert.equal(viaAlias['request.required.acks'], undefined);
  for (const bad of [{ acks: '1' }, { 'request.required.acks': '0' }, { 'enable.idempotence': 'false' }, { 'transactional.id': 't' }, { 'bootstrap.servers': '' }]) {
    assert.throws(() => recordProducerConfig({ 'bootstrap.servers': 'b', ...bad }), ConfigError, JSON.stringify(bad));
  }
});
