/**
 * Smoke: the stack's schema registry (Apicurio's Confluent-compatible API) registers Avro and Protobuf
 * schemas through @kafkajs/confluent-schema-registry, and a Confluent-framed message round-trips:
 * magic byte 0, the 4-byte big-endian schema id, then the payload (Protobuf adds message indexes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import avro from 'avsc';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';

async function registry(): Promise<SchemaRegistry> {
  const { registryUrl } = stackEndpoints();
  await requireReachable('Schema registry', registryUrl);
  return new SchemaRegistry({ host: registryUrl });
}

const orderSchema = {
  type: 'record',
  name: 'Order',
  namespace: 'icefloe.smoke',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'customer', type: 'string' },
    { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
};

test('Schema registry: Avro schema registered, Confluent-framed message round-trips', async () => {
  const sr = await registry();
  const subject = `smoke-avro-${randomUUID()}-value`;
  const { id } = await sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderSchema) }, { subject });
  assert.ok(Number.isInteger(id) && id > 0, `registry returned id ${id}`);
  assert.equal(await sr.getLatestSchemaId(subject), id);

  const type = avro.Type.forSchema(orderSchema as avro.Schema);
  const order = { id: 42, customer: 'Zoë', amount: Buffer.from([0x30, 0x39]), note: null };
  const framed = await sr.encode(id, order);
  assert.equal(framed[0], 0, 'magic byte');
  assert.equal(framed.readUInt32BE(1), id, 'schema id in the frame');
  // The payload after the 5-byte header is plain Avro binary: decode it independently with avsc.
  assert.deepEqual(type.fromBuffer(framed.subarray(5)), order);
  assert.deepEqual(await sr.decode(framed), order);
});

test('Schema registry: Protobuf schema registered, Confluent-framed message round-trips', async () => {
  const sr = await registry();
  const subject = `smoke-proto-${randomUUID()}-value`;
  const schema = `syntax = "proto3";
package icefloe.smoke;
message Order {
  int64 id = 1;
  string customer = 2;
  repeated string tags = 3;
}`;
  const { id } = await sr.register({ type: SchemaType.PROTOBUF, schema }, { subject });
  assert.ok(Number.isInteger(id) && id > 0, `registry returned id ${id}`);
  const framed = await sr.encode(id, { id: 7, customer: 'Ada', tags: ['a', 'b'] });
  assert.equal(framed[0], 0, 'magic byte');
  assert.equal(framed.readUInt32BE(1), id, 'schema id in the frame');
  // Message index list for the first message in the file is the single byte 0.
  assert.equal(framed[5], 0, 'message indexes');
  const decoded = (await sr.decode(framed)) as { id: unknown; customer: string; tags: string[] };
  assert.equal(String(decoded.id), '7');
  assert.equal(decoded.customer, 'Ada');
  assert.deepEqual(decoded.tags, ['a', 'b']);
});
