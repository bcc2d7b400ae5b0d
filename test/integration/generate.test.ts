/**
 * `icefloe generate` against the stack's real Kafka and schema registry: events are produced through our
 * idempotent record producer, their schema registered through our registry adapter, and what arrives is
 * read back with our KafkaSource and decoded with our Confluent Avro / Protobuf decoders fetching the
 * schema from the registry. Every delivered (partition, offset) must be exactly what a consumer reads.
 * Topics and subjects are unique per run: other engineers share the stack.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfluentKafkaAdmin, ConfluentKafkaSource, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import type { DeliveredRecord, RawRecord, RebalanceListener } from '../../src/consume/port.ts';
import { ConfluentAvroDecoder } from '../../src/decode/avro-decoder.ts';
import { avroToIceberg } from '../../src/decode/avro-schema.ts';
import { ConfluentProtobufDecoder } from '../../src/decode/protobuf-decoder.ts';
import { protobufToIceberg } from '../../src/decode/protobuf-schema.ts';
import { ConfluentSchemaResolver } from '../../src/decode/registry/schema-registry.ts';
import { generateOrders } from '../../tools/generate/generator.ts';
import { orderAvroSchema, orderProtobufSchema } from '../../tools/generate/order-schemas.ts';
import type { OrderEvent } from '../../tools/generate/orders.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { FAST_GROUP, kafkaSettings, pollUntil, text, unique } from '../helpers/kafka.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import { harness, readAll } from '../unit/write/helpers.ts';
import type { Row } from '../unit/write/helpers.ts';
import { expectedRow } from '../unit/generate/helpers.ts';

const NO_LISTENER: RebalanceListener = { onAssigned: () => undefined, onRevoked: () => undefined };
const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

let registryUrl = '';

interface Run {
  readonly delivered: DeliveredRecord[];
  readonly events: OrderEvent[];
  readonly schemaId: number | null;
  readonly records: number;
}

/** Runs the generator with real clients; the topic is deleted after the test. */
async function generate(
  t: { after(fn: () => Promise<void>): void },
  options: { topic: string; format: 'avro' | 'protobuf'; count: number; topicPartitions: number; schemaVersion?: 1 | 2; partitions?: number[] },
): Promise<Run> {
  const settings = await kafkaSettings();
  const admin = await ConfluentKafkaAdmin.connect({ settings });
  t.after(async () => {
    await admin.deleteTopic(options.topic).catch(() => undefined);
    await admin.close();
  });
  const producer = await ConfluentRecordProducer.connect({ settings });
  const delivered: DeliveredRecord[] = [];
  const events: OrderEvent[] = [];
  try {
    const stats = await generateOrders({
      producer,
      registrar: new ConfluentSchemaResolver({ urls: [registryUrl] }),
      admin,
      replicationFactor: 1,
      seed: 17,
      ...options,
      onDelivered: (d, e) => {
        delivered.push(...d);
        events.push(...e);
      },
    });
    return { delivered, events, schemaId: stats.schemaId, records: stats.records };
  } finally {
    await producer.close();
  }
}

async function consumeAll(t: { after(fn: () => Promise<void>): void }, topic: string, count: number): Promise<RawRecord[]> {
  const source = await ConfluentKafkaSource.connect({ settings: await kafkaSettings(), overrides: FAST_GROUP, groupId: unique('gen-it') });
  t.after(() => source.close());
  await source.subscribe({ kind: 'list', topics: [topic] }, NO_LISTENER);
  const got = await pollUntil(source, (g) => g.length >= count, 30_000);
  // Anything beyond `count` would be a duplicate: give it a moment to show up.
  got.push(...(await source.poll({ maxRecords: 1000, timeoutMs: 500 })));
  return got;
}

const coord = (r: { partition: number; offset: bigint }): string => `${r.partition}@${r.offset}`;

/** Decodes the values (in the order given) into a table and reads the rows back. */
async function decodeRows(table: Schema, records: readonly RawRecord[], decode: (value: Uint8Array, sink: ReturnType<typeof harness>['writer']['appender']) => Promise<boolean>): Promise<Row[]> {
  const h = harness(table);
  for (const r of records) await decode(r.value as Uint8Array, h.writer.appender);
  return readAll(h.store, await h.writer.close(), table);
}

describe('icefloe generate against the real Kafka and schema registry', () => {
  before(async () => {
    registryUrl = stackEndpoints().registryUrl;
    await requireReachable('Schema registry', registryUrl);
    await kafkaSettings();
  });

  test('Avro: 2,000 events to a new 3-partition topic; what is consumed is exactly what was delivered, and decodes to the events', async (t) => {
    const topic = unique('gen-avro');
    const run = await generate(t, { topic, format: 'avro', count: 2000, topicPartitions: 3 });
    assert.equal(run.records, 2000);
    assert.equal(run.delivered.length, 2000);
    assert.ok(run.schemaId !== null);

    const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
    t.after(() => admin.close());
    assert.equal(await admin.partitionCount(topic), 3, 'the generator created the topic with 3 partitions');

    const got = await consumeAll(t, topic, 2000);
    assert.equal(got.length, 2000, 'no record missing, none twice');
    assert.deepEqual(new Set(got.map(coord)), new Set(run.delivered.map(coord)));
    assert.equal(new Set(run.delivered.map(coord)).size, 2000);
    assert.deepEqual(new Set(got.map((r) => r.partition)), new Set([0, 1, 2]), 'keys spread the events over every partition');

    // The registry holds the schema under <topic>-value with the id the frames carry.
    const resolver = new ConfluentSchemaResolver({ urls: [registryUrl] });
    const registered = await resolver.byId(run.schemaId);
    assert.equal(registered.type, 'AVRO');
    assert.deepEqual(JSON.parse(registered.schema), orderAvroSchema(1));
    assert.equal(await resolver.register(`${topic}-value`, { type: 'AVRO', schema: JSON.stringify(orderAvroSchema(1)) }), run.schemaId, 'registering again: the same id');

    // Each record: key = order id, value = the delivered event, decoded by our decoder through the registry.
    const byCoord = new Map(run.delivered.map((d, i) => [coord(d), run.events[i] as OrderEvent]));
    const table = avroToIceberg(orderAvroSchema(1));
    const decoder = new ConfluentAvroDecoder(resolver, table);
    const rows = await decodeRows(table, got, (v, sink) => decoder.decodeAsync(v, sink));
    got.forEach((r, i) => {
      const event = byCoord.get(coord(r)) as OrderEvent;
      assert.equal(text(r.key), event.order_id);
      assert.deepStrictEqual(rows[i], expectedRow(table, event));
    });

    // v2 registers as a new version of the same subject (BACKWARD compatible) and gets its own id.
    const v2 = await generate(t, { topic, format: 'avro', count: 10, topicPartitions: 3, schemaVersion: 2 });
    assert.ok(v2.schemaId !== null && v2.schemaId !== run.schemaId);
  });

  test('Protobuf: 200 events decode with our ConfluentProtobufDecoder from the registry (message indexes on)', async (t) => {
    const topic = unique('gen-proto');
    const run = await generate(t, { topic, format: 'protobuf', count: 200, topicPartitions: 2 });
    assert.ok(run.schemaId !== null);
    const got = await consumeAll(t, topic, 200);
    assert.equal(got.length, 200);
    assert.deepEqual(new Set(got.map(coord)), new Set(run.delivered.map(coord)));

    const resolver = new ConfluentSchemaResolver({ urls: [registryUrl] });
    const registered = await resolver.byId(run.schemaId);
    assert.equal(registered.type, 'PROTOBUF');
    const table = protobufToIceberg(orderProtobufSchema(1));
    const decoder = new ConfluentProtobufDecoder(resolver, table);
    const rows = await decodeRows(table, got, (v, sink) => decoder.decodeAsync(v, sink));
    const byCoord = new Map(run.delivered.map((d, i) => [coord(d), run.events[i] as OrderEvent]));
    got.forEach((r, i) => assert.deepStrictEqual(rows[i], expectedRow(table, byCoord.get(coord(r)) as OrderEvent)));
  });

  test('the CLI with --only-partitions puts records only in those partitions and prints its summary', async (t) => {
    const topic = unique('gen-cli');
    const { kafkaBootstrap } = stackEndpoints();
    const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
    t.after(async () => {
      await admin.deleteTopic(topic).catch(() => undefined);
      await admin.close();
    });
    const r = spawnSync(
      process.execPath,
      [cli, 'generate', '--topic', topic, '--count', '300', '--partitions', '4', '--only-partitions', '1,3', '--format', 'json', '--bootstrap-servers', kafkaBootstrap, '--registry-url', registryUrl],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^generated 300 json records to ${topic}: \\d+\\.\\d\\d MB in \\d+\\.\\d\\d s, \\d+ records/s\\n$`));
    const marks = await admin.watermarks(topic);
    assert.deepEqual(marks.map((m) => [m.partition, m.high]), [[0, 0n], [1, 150n], [2, 0n], [3, 150n]]);
  });
});
