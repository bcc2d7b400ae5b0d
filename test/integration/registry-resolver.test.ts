/**
 * The Schema Registry adapter (src/decode/registry/) against the stack's real registry (Apicurio's
 * Confluent-compatible API under /apis/ccompat/v7): schemas registered over HTTP are resolved by id with
 * their type and references, answers are cached, and failures become our error classes (unreachable →
 * RetriableError; an unknown id → RetriableError, then DataError once confirmed; a wrong base path →
 * ConfigError). Subjects are unique per run: other engineers share the registry.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { ConfigError, DataError, RetriableError } from '../../src/core/errors.ts';
import { ConfluentSchemaResolver, registryOptionsFromConverterProps } from '../../src/decode/registry/schema-registry.ts';
import { ConfluentProtobufDecoder } from '../../src/decode/protobuf-decoder.ts';
import { protobufToIceberg } from '../../src/decode/protobuf-schema.ts';
import { requireReachable, stackEndpoints } from '../helpers/stack.ts';
import { harness, readAll } from '../unit/write/helpers.ts';

let url = '';

async function register(subject: string, body: Record<string, unknown>): Promise<number> {
  const res = await fetch(`${url}/subjects/${encodeURIComponent(subject)}/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { id?: number; message?: string };
  assert.equal(res.status, 200, `register ${subject}: ${res.status} ${json.message ?? ''}`);
  assert.ok(typeof json.id === 'number');
  return json.id;
}

const AVRO = { type: 'record', name: 'Order', namespace: 'icefloe.it', fields: [{ name: 'id', type: 'long' }, { name: 'note', type: ['null', 'string'], default: null }] };

const COMMON_PROTO = `syntax = "proto3";
package icefloe.it.common;
message Money {
  string currency = 1;
  int64 units = 2;
}`;

const ORDER_PROTO = `syntax = "proto3";
package icefloe.it;
import "icefloe/it/common.proto";
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  icefloe.it.common.Money total = 2;
  google.protobuf.Timestamp at = 3;
  repeated string tags = 4;
}`;

describe('Schema Registry adapter against the real registry', () => {
  before(async () => {
    url = stackEndpoints().registryUrl;
    await requireReachable('Schema registry', url);
  });

  test('Avro: resolved by id with its type and text; the second lookup is a cache hit', async () => {
    const id = await register(`it-avro-${randomUUID()}-value`, { schema: JSON.stringify(AVRO) });
    const resolver = new ConfluentSchemaResolver(registryOptionsFromConverterProps({ 'schema.registry.url': url }));
    const [a, b] = await Promise.all([resolver.byId(id), resolver.byId(id)]);
    assert.equal(resolver.requests, 1, 'concurrent lookups share one request');
    assert.equal(a, b);
    assert.equal(a.id, id);
    assert.equal(a.type, 'AVRO');
    assert.deepEqual(JSON.parse(a.schema), AVRO);
    await resolver.byId(id);
    assert.equal(resolver.requests, 1, 'cache hit: no second request');
  });

  test('Protobuf with a reference: type, text and the referenced schema; decodes a Confluent frame', async () => {
    const run = randomUUID();
    const commonSubject = `it-proto-common-${run}`;
    await register(commonSubject, { schemaType: 'PROTOBUF', schema: COMMON_PROTO });
    const id = await register(`it-proto-${run}-value`, {
      schemaType: 'PROTOBUF',
      schema: ORDER_PROTO,
      references: [{ name: 'icefloe/it/common.proto', subject: commonSubject, version: 1 }],
    });
    const resolver = new ConfluentSchemaResolver({ urls: [url] });
    const got = await resolver.byId(id);
    assert.equal(got.type, 'PROTOBUF');
    assert.match(got.schema, /message Order/);
    assert.deepEqual(
      got.references?.map((r) => [r.name, r.subject, r.version, r.type]),
      [['icefloe/it/common.proto', commonSubject, 1, 'PROTOBUF']],
    );
    assert.match(got.references?.[0]?.schema ?? '', /message Money/);

    // The resolved schema (with its reference) builds a table and decodes a hand-framed message.
    const table = protobufToIceberg(got);
    const decoder = new ConfluentProtobufDecoder(resolver, table);
    const h = harness(table);
    // id=7 (field 1 varint), total={currency:"EUR", units:5} (field 2), at={seconds:1} (field 3), tags=["a"]
    const body = [0x08, 7, 0x12, 7, 0x0a, 3, 69, 85, 82, 0x10, 5, 0x1a, 2, 0x08, 1, 0x22, 1, 97];
    const frame = Uint8Array.from([0, (id >>> 24) & 255, (id >>> 16) & 255, (id >>> 8) & 255, id & 255, 0, ...body]);
    await decoder.decodeAsync(frame, h.writer.appender);
    const rows = await readAll(h.store, await h.writer.close(), table);
    assert.deepStrictEqual(rows, [{ id: 7n, total: { currency: 'EUR', units: 5n }, at: 1_000_000n, tags: ['a'] }]);
  });

  test('an unreachable registry is a RetriableError, and the message carries no credentials', async () => {
    const resolver = new ConfluentSchemaResolver(
      registryOptionsFromConverterProps({ 'schema.registry.url': 'http://alice:s3cret-pw@127.0.0.1:1/apis/ccompat/v7', 'icefloe.registry.request-timeout-ms': '2000' }),
    );
    await assert.rejects(resolver.byId(1), (e: unknown) => {
      assert.ok(e instanceof RetriableError, String(e));
      assert.ok(e.retriable);
      assert.doesNotMatch(`${e.message} ${JSON.stringify(e.context)} ${String((e.cause as Error | undefined)?.message)}`, /s3cret|alice/);
      return true;
    });
  });

  test('failover: the second URL answers when the first is down', async () => {
    const id = await register(`it-avro-fo-${randomUUID()}-value`, { schema: JSON.stringify(AVRO) });
    const resolver = new ConfluentSchemaResolver({ urls: ['http://127.0.0.1:1', url], requestTimeoutMs: 2000 });
    assert.equal((await resolver.byId(id)).type, 'AVRO');
  });

  test('an unknown id is retriable until the grace window has passed, then a DataError', async () => {
    let now = 1_000;
    const resolver = new ConfluentSchemaResolver({ urls: [url], unknownIdGraceMs: 30_000, now: () => now });
    const unknown = 2_000_000_000;
    await assert.rejects(resolver.byId(unknown), RetriableError);
    now += 29_999;
    await assert.rejects(resolver.byId(unknown), RetriableError);
    now += 1;
    await assert.rejects(resolver.byId(unknown), (e: unknown) => e instanceof DataError && /confirmed/.test(e.message));
  });

  test('a base URL without the Confluent API path is a ConfigError, not an unknown id', async () => {
    const root = new URL(url);
    const resolver = new ConfluentSchemaResolver({ urls: [root.origin] });
    await assert.rejects(resolver.byId(1), ConfigError);
  });
});
