/**
 * generateOrders (tools/generate/generator.ts) against in-memory ports: what it registers and under which
 * subject, how it batches, keys and places records, how it paces to a rate, and how failures surface.
 * The real Kafka and registry are in test/integration/generate.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, RetriableError } from '../../../src/core/errors.ts';
import type { DeliveredRecord, KafkaAdmin, OutgoingRecord, RecordProducer, TopicSpec, Watermarks } from '../../../src/consume/port.ts';
import type { SchemaRegistrar, SchemaToRegister } from '../../../src/decode/registry-port.ts';
import { generateOrders } from '../../../tools/generate/generator.ts';
import { orderEncoder } from '../../../tools/generate/order-encodings.ts';
import { orderAvroSchema, orderProtobufSchema } from '../../../tools/generate/order-schemas.ts';
import { generateOrderEvents } from '../../../tools/generate/orders.ts';
import type { OrderEvent } from '../../../tools/generate/orders.ts';

/** Assigns offsets per partition like a broker; a null partition goes to partition 0. */
class MemoryProducer implements RecordProducer {
  readonly sent: OutgoingRecord[] = [];
  readonly batches: number[] = [];
  readonly sentAt: number[] = [];
  private readonly next = new Map<number, bigint>();
  failAfter = Number.POSITIVE_INFINITY;
  inFlight = 0;
  maxInFlight = 0;

  async send(records: readonly OutgoingRecord[]): Promise<DeliveredRecord[]> {
    this.batches.push(records.length);
    this.sentAt.push(Date.now());
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise((resolve) => setTimeout(resolve, 2));
    this.inFlight--;
    if (this.batches.length > this.failAfter) throw new RetriableError('broker gone');
    return records.map((r) => {
      this.sent.push(r);
      const partition = r.partition ?? 0;
      const offset = this.next.get(partition) ?? 0n;
      this.next.set(partition, offset + 1n);
      return { topic: r.topic, partition, offset };
    });
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

class MemoryRegistry implements SchemaRegistrar {
  readonly registered: { subject: string; schema: SchemaToRegister }[] = [];
  private readonly ids = new Map<string, number>();

  register(subject: string, schema: SchemaToRegister): Promise<number> {
    this.registered.push({ subject, schema });
    const key = `${schema.type}\u0000${schema.schema}`;
    if (!this.ids.has(key)) this.ids.set(key, 100 + this.ids.size);
    return Promise.resolve(this.ids.get(key) as number);
  }
}

class MemoryAdmin implements KafkaAdmin {
  readonly topics = new Map<string, number>();
  ensureTopic(spec: TopicSpec): Promise<boolean> {
    if (this.topics.has(spec.name)) return Promise.resolve(false);
    this.topics.set(spec.name, spec.partitions);
    return Promise.resolve(true);
  }
  partitionCount(topic: string): Promise<number> {
    return Promise.resolve(this.topics.get(topic) ?? 0);
  }
  deleteTopic(): Promise<void> {
    return Promise.reject(new Error('not in this test'));
  }
  clusterId(): Promise<string> {
    return Promise.reject(new Error('not in this test'));
  }
  topicId(): Promise<string> {
    return Promise.reject(new Error('not in this test'));
  }
  watermarks(): Promise<Watermarks[]> {
    return Promise.reject(new Error('not in this test'));
  }
  groupOffsets(): Promise<never[]> {
    return Promise.reject(new Error('not in this test'));
  }
  commitGroupOffsets(): Promise<void> {
    return Promise.reject(new Error('not in this test'));
  }
  topicConfigs(): Promise<Record<string, string>> {
    return Promise.reject(new Error('not in this test'));
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

describe('generateOrders', () => {
  test('avro: registers v1 under <topic>-value once, sends every event framed with that id, keyed by order id', async () => {
    const producer = new MemoryProducer();
    const registrar = new MemoryRegistry();
    const deliveredEvents: OrderEvent[] = [];
    const delivered: DeliveredRecord[] = [];
    const stats = await generateOrders({
      producer,
      registrar,
      topic: 'orders',
      format: 'avro',
      count: 4500,
      seed: 9,
      schemaVersion: 1,
      startTimeMs: 1_000_000,
      onDelivered: (d, e) => {
        delivered.push(...d);
        deliveredEvents.push(...e);
      },
    });
    assert.deepEqual(registrar.registered, [{ subject: 'orders-value', schema: { type: 'AVRO', schema: JSON.stringify(orderAvroSchema(1)) } }]);
    assert.equal(stats.schemaId, 100);
    assert.equal(stats.records, 4500);
    assert.deepEqual(producer.batches, [2000, 2000, 500], 'batches of 2,000 at rate 0');
    const expected = generateOrderEvents(4500, { seed: 9, startTimeMs: 1_000_000 });
    const encode = orderEncoder('avro', { schemaVersion: 1, schemaId: 100 });
    assert.equal(stats.bytes, expected.reduce((n, e) => n + encode(e).length, 0));
    // The records in order, and what onDelivered saw, are exactly the seed's events.
    assert.equal(producer.sent.length, 4500);
    for (let i = 0; i < expected.length; i += 97) {
      const r = producer.sent[i]!;
      assert.equal(r.topic, 'orders');
      assert.equal(r.partition, null, 'the key chooses the partition');
      assert.equal(r.key, expected[i]!.order_id);
      assert.deepEqual(r.value, encode(expected[i]!));
    }
    assert.deepStrictEqual(deliveredEvents, expected);
    assert.equal(delivered.length, 4500);
  });

  test('protobuf registers the .proto text; the JSON formats register nothing and need no registry', async () => {
    const registrar = new MemoryRegistry();
    const pb = await generateOrders({ producer: new MemoryProducer(), registrar, topic: 't', format: 'protobuf', count: 10, schemaVersion: 2 });
    assert.deepEqual(registrar.registered, [{ subject: 't-value', schema: { type: 'PROTOBUF', schema: orderProtobufSchema(2) } }]);
    assert.equal(pb.schemaId, 100);
    for (const format of ['json', 'json-schema'] as const) {
      const producer = new MemoryProducer();
      const stats = await generateOrders({ producer, topic: 't', format, count: 10 });
      assert.equal(stats.schemaId, null);
      assert.equal(stats.records, 10);
      assert.equal(Buffer.from(producer.sent[0]!.value!).toString('utf8')[0], '{');
    }
    await assert.rejects(generateOrders({ producer: new MemoryProducer(), topic: 't', format: 'avro', count: 1 }), ConfigError);
  });

  test('the same schema registered again gets the same id (the registrar decides; the generator just asks)', async () => {
    const registrar = new MemoryRegistry();
    const a = await generateOrders({ producer: new MemoryProducer(), registrar, topic: 't', format: 'avro', count: 1 });
    const b = await generateOrders({ producer: new MemoryProducer(), registrar, topic: 't', format: 'avro', count: 1 });
    const c = await generateOrders({ producer: new MemoryProducer(), registrar, topic: 't', format: 'avro', count: 1, schemaVersion: 2 });
    assert.equal(a.schemaId, b.schemaId);
    assert.notEqual(c.schemaId, a.schemaId);
  });

  test('only the chosen partitions, in turn; the admin creates the topic and rejects partitions it lacks', async () => {
    const admin = new MemoryAdmin();
    const producer = new MemoryProducer();
    await generateOrders({ producer, admin, topicPartitions: 3, topic: 'p', format: 'json', count: 9, partitions: [0, 2] });
    assert.equal(admin.topics.get('p'), 3);
    assert.deepEqual(producer.sent.map((r) => r.partition), [0, 2, 0, 2, 0, 2, 0, 2, 0]);
    await assert.rejects(
      generateOrders({ producer, admin, topic: 'p', format: 'json', count: 1, partitions: [1, 3] }),
      (e: unknown) => e instanceof ConfigError && /no partition 3/.test(e.message),
    );
    assert.equal(admin.topics.get('p'), 3, 'an existing topic is left as it is');
  });

  test('paces to the rate: 200 events at 1,000/s take about 0.2 s, in batches of 50', async () => {
    const producer = new MemoryProducer();
    const t0 = Date.now();
    const stats = await generateOrders({ producer, topic: 'r', format: 'json', count: 200, ratePerSec: 1000 });
    const took = Date.now() - t0;
    assert.deepEqual(producer.batches, [50, 50, 50, 50]);
    // The last batch is due at 150 ms; delivery adds a little.
    assert.ok(took >= 145, `took ${took} ms`);
    assert.ok(took < 1500, `took ${took} ms`);
    // Batch k is due at k × 50 ms (a late timer is caught up by the next batch, so only the span is exact).
    const span = producer.sentAt[3]! - producer.sentAt[0]!;
    assert.ok(span >= 145, `the fourth batch went ${span} ms after the first`);
    assert.equal(stats.records, 200);
  });

  test('at rate 0 several batches are in flight at once, at most maxInFlight', async () => {
    const producer = new MemoryProducer();
    await generateOrders({ producer, topic: 'f', format: 'json', count: 1000, batchSize: 10, maxInFlight: 4 });
    assert.equal(producer.maxInFlight, 4);
  });

  test('a failed send stops the run and surfaces its error after the in-flight sends settle', async () => {
    const producer = new MemoryProducer();
    producer.failAfter = 2;
    await assert.rejects(generateOrders({ producer, topic: 'x', format: 'json', count: 10_000, batchSize: 100, maxInFlight: 2 }), RetriableError);
    assert.ok(producer.batches.length < 100, 'it stopped early');
    assert.equal(producer.inFlight, 0);
  });

  test('bad options are ConfigErrors before anything is sent', async () => {
    const producer = new MemoryProducer();
    const base = { producer, topic: 't', format: 'json' as const, count: 1 };
    for (const bad of [
      { ...base, count: -1 },
      { ...base, count: 1.5 },
      { ...base, ratePerSec: -5 },
      { ...base, partitions: [] },
      { ...base, partitions: [-1] },
      { ...base, topic: '' },
      { ...base, format: 'xml' as never },
      { ...base, schemaVersion: 3 as never },
    ]) {
      await assert.rejects(generateOrders(bad), ConfigError, JSON.stringify({ ...bad, producer: undefined }));
    }
    assert.equal(producer.batches.length, 0);
  });
});
