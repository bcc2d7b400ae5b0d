/**
 * Header values that are null or empty, between our Kafka clients and Kafka's own Java clients (the
 * stack's jars), which tell the two apart:
 * - our producers write null as a null header and an empty value as an empty one, whatever buffer the
 *   empty value came in (the binding would write a Buffer over a zero-length ArrayBuffer as null);
 * - our source reads what Java wrote: null stays null (the binding's conversion, src/common.cc ToV8Object,
 *   as patched by scripts/patch-kafka-binding.ts), empty stays empty and bytes stay bytes.
 * Every record is matched by its offset.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfluentKafkaSource, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import type { RebalanceListener } from '../../src/consume/port.ts';
import { javaConsume, javaProduce } from '../helpers/kafka-java.ts';
import { FAST_GROUP, kafkaSettings, pollUntil, text, unique, withTopics } from '../helpers/kafka.ts';

const NO_LISTENER: RebalanceListener = { onAssigned: () => undefined, onRevoked: () => undefined };

test('our producers write a null header value as null and an empty one as empty, as Kafka\'s Java consumer reads them', async (t) => {
  const topic = unique('hdr-out');
  await withTopics(t, [{ name: topic, partitions: 1 }]);
  const producer = await ConfluentRecordProducer.connect({ settings: await kafkaSettings() });
  t.after(() => producer.close());
  const delivered = await producer.send([
    {
      topic,
      partition: 0,
      key: 'k0',
      value: Buffer.from('v0'),
      headers: [
        { key: 'null', value: null },
        { key: 'empty', value: new Uint8Array(0) }, // over a zero-length ArrayBuffer: the binding sends it as null
        { key: 'alloc', value: Buffer.alloc(0) },
        { key: 'view', value: Buffer.from('xyz').subarray(1, 1) },
        { key: 'bytes', value: Buffer.from('abc') },
      ],
    },
  ]);
  assert.deepEqual(delivered.map((d) => d.offset), [0n]);
  const [read] = await javaConsume(topic, 1);
  assert.deepEqual(read?.headers, [
    ['null', null],
    ['empty', ''],
    ['alloc', ''],
    ['view', ''],
    ['bytes', 'abc'],
  ]);
});

test('our source reads what Java wrote: a null header value stays null, empty stays empty, bytes stay bytes', async (t) => {
  const topic = unique('hdr-in');
  await withTopics(t, [{ name: topic, partitions: 1 }]);
  await javaProduce(topic, [
    { headers: [['null', null], ['empty', ''], ['bytes', 'abc']], key: 'k0', value: 'v0' },
    { headers: [['other', 'x']], key: null, value: 'v1' },
  ]);
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), overrides: FAST_GROUP, groupId: unique('connect-hdr') });
  t.after(() => source.close());
  await source.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  const got = await pollUntil(source, (g) => g.length >= 2);
  assert.deepEqual(got.map((r) => r.offset), [0n, 1n]);
  const headers = (got[0]?.headers ?? []).map((h) => [h.key, h.value === null ? null : text(h.value)]);
  assert.deepEqual(headers, [['null', null], ['empty', ''], ['bytes', 'abc']]);
  assert.deepEqual(got[1]?.headers.map((h) => [h.key, text(h.value)]), [['other', 'x']]);
  assert.equal(got[1]?.key, null);
});
