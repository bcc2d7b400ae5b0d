/**
 * The order-event generator (tools/generate/orders.ts): determinism by seed, the shape and ranges of the
 * events, the schemas' evolution (v2 reads v1 under Avro's rules, checked with avsc's resolver, an
 * implementation we did not write), the Avro size, and the framing helpers (decimal bytes, Confluent's
 * Protobuf message-index list read back by our decoder's reader).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import avro from 'avsc';
import { confluentMessageIndexes } from '../../../src/decode/confluent-frame.ts';
import { parseProtobufSchema } from '../../../src/decode/protobuf-schema.ts';
import { avroToIceberg } from '../../../src/decode/avro-schema.ts';
import { connectSchemaToIceberg } from '../../../src/decode/connect-schema.ts';
import {
  confluentFrame,
  confluentMessageIndexBytes,
  confluentProtobufFrame,
  decimalBytes,
  orderEncoder,
  orderKey,
} from '../../../tools/generate/order-encodings.ts';
import { orderAvroSchema, orderConnectSchema, orderProtobufSchema } from '../../../tools/generate/order-schemas.ts';
import { DEFAULT_START_TIME_MS, generateOrderEvents, ORDER_STATUSES, OrderGenerator, REGIONS } from '../../../tools/generate/orders.ts';

describe('order events', () => {
  test('the same seed gives the same events and the same bytes in every format; another seed does not', () => {
    const a = generateOrderEvents(500, { seed: 42 });
    const b = generateOrderEvents(500, { seed: 42 });
    assert.deepStrictEqual(a, b);
    for (const format of ['avro', 'protobuf', 'json', 'json-schema'] as const) {
      const ea = orderEncoder(format, { schemaVersion: 1, schemaId: 9 });
      const eb = orderEncoder(format, { schemaVersion: 1, schemaId: 9 });
      for (let i = 0; i < a.length; i++) assert.deepStrictEqual(ea(a[i]!), eb(b[i]!), `${format} event ${i}`);
    }
    const c = generateOrderEvents(500, { seed: 43 });
    assert.notDeepStrictEqual(a, c);
    const idsA = new Set(a.map((e) => e.order_id));
    assert.ok(c.every((e) => !idsA.has(e.order_id)), 'order ids carry the seed: two seeds never share a key');
    assert.equal(idsA.size, 500, 'order ids are unique within a run');
  });

  test('v2 events are v1 events plus channel: the schema version changes nothing else', () => {
    const v1 = generateOrderEvents(300, { seed: 7, schemaVersion: 1 });
    const v2 = generateOrderEvents(300, { seed: 7, schemaVersion: 2 });
    for (let i = 0; i < v1.length; i++) {
      assert.equal('channel' in v1[i]!, false);
      const { channel, ...rest } = v2[i]!;
      assert.deepStrictEqual(rest, v1[i]);
      assert.ok(channel === null || typeof channel === 'string');
    }
    assert.ok(v2.some((e) => e.channel === null) && v2.some((e) => typeof e.channel === 'string'));
  });

  test('fields stay in their ranges, totals add up, and every value shows up', () => {
    const events = generateOrderEvents(5000, { seed: 3 });
    const regions = new Set<string>();
    const statuses = new Set<string>();
    const attributeCounts = new Set<number>();
    const itemCounts = new Set<number>();
    let nullEmails = 0;
    let notes = 0;
    for (const [i, e] of events.entries()) {
      assert.ok((REGIONS as readonly string[]).includes(e.region), e.region);
      assert.ok((ORDER_STATUSES as readonly string[]).includes(e.status), e.status);
      regions.add(e.region);
      statuses.add(e.status);
      assert.ok(e.items.length >= 1 && e.items.length <= 3);
      itemCounts.add(e.items.length);
      const n = Object.keys(e.attributes).length;
      assert.ok(n <= 3);
      attributeCounts.add(n);
      let total = 0n;
      for (const it of e.items) {
        assert.ok(Number.isInteger(it.quantity) && it.quantity >= 1 && it.quantity <= 7);
        assert.ok(it.unit_price > 0n && it.unit_price < 10n ** 8n, 'fits decimal(10, 2)');
        total += it.unit_price * BigInt(it.quantity);
      }
      assert.equal(e.total, total);
      assert.ok(e.total < 10n ** 10n, 'fits decimal(12, 2)');
      assert.ok(Number.isSafeInteger(e.customer.id));
      if (e.customer.email === null) nullEmails++;
      if (e.note !== null) notes++;
      // Deterministic time: 10 ms apart from the start, at most 5 s late.
      const nominal = DEFAULT_START_TIME_MS + i * 10;
      assert.ok(e.created_at <= nominal && e.created_at > nominal - 5000);
    }
    assert.deepEqual([...regions].sort(), ['apac', 'eu', 'us']);
    assert.equal(statuses.size, 5);
    assert.deepEqual([...itemCounts].sort(), [1, 2, 3]);
    assert.deepEqual([...attributeCounts].sort(), [0, 1, 2, 3]);
    assert.ok(nullEmails > 0 && nullEmails < events.length / 4);
    assert.ok(notes > events.length / 5 && notes < events.length * 0.6);
  });

  test('live mode: event times follow the clock, everything else still follows the seed', () => {
    let now = 1_800_000_000_000;
    const live = new OrderGenerator({ seed: 11, clock: () => now });
    const fixed = new OrderGenerator({ seed: 11 });
    for (let i = 0; i < 200; i++) {
      now += 3;
      const a = live.next();
      const b = fixed.next();
      assert.ok(a.created_at <= now && a.created_at > now - 5000);
      assert.deepStrictEqual({ ...a, created_at: 0 }, { ...b, created_at: 0 });
    }
  });

  test('Avro: about 200 bytes an event (mean within 170–240, framed or not)', () => {
    const encode = orderEncoder('avro', { schemaVersion: 1, schemaId: 1 });
    const events = generateOrderEvents(20_000, { seed: 1 });
    const total = events.reduce((n, e) => n + encode(e).length, 0);
    const framed = total / events.length;
    assert.ok(framed >= 170 && framed <= 240, `mean framed Avro size ${framed.toFixed(1)}`);
    assert.ok(framed - 5 >= 170, `mean Avro body size ${(framed - 5).toFixed(1)}`);
  });

  test('the key is the order id as UTF-8', () => {
    const [e] = generateOrderEvents(1, { seed: 1 });
    assert.deepEqual(Buffer.from(orderKey(e!)).toString('utf8'), e!.order_id);
  });
});

describe('order schemas', () => {
  test('v2 is a BACKWARD-compatible evolution of v1 in Avro terms: a v2 reader reads v1 data', () => {
    const v1 = avro.Type.forSchema(orderAvroSchema(1) as avro.Schema);
    const v2 = avro.Type.forSchema(orderAvroSchema(2) as avro.Schema);
    const resolver = v2.createResolver(v1); // throws when v2 cannot read v1
    const encode = orderEncoder('avro', { schemaVersion: 1, schemaId: 1 });
    for (const e of generateOrderEvents(200, { seed: 5 })) {
      const read = v2.fromBuffer(Buffer.from(encode(e).subarray(5)), resolver) as { channel: unknown; items: { quantity: number }[]; order_id: string };
      assert.equal(read.channel, null, 'the new field takes its default');
      assert.deepEqual(read.items.map((it) => it.quantity), e.items.map((it) => it.quantity), 'int widened to long');
      assert.equal(read.order_id, e.order_id);
    }
    // And not the other way round for the widened field: v1 cannot read v2's long as int (not FORWARD).
    assert.throws(() => v1.createResolver(v2));
  });

  test('every schema parses with our own schema readers', () => {
    for (const v of [1, 2] as const) {
      const avroTable = avroToIceberg(orderAvroSchema(v));
      assert.deepEqual(avroTable.fields.map((f) => f.name), ['order_id', 'region', 'status', 'customer', 'items', 'attributes', 'total', 'currency', 'created_at', 'note', ...(v === 2 ? ['channel'] : [])]);
      const proto = parseProtobufSchema(orderProtobufSchema(v));
      assert.equal(proto.message([0]).fullName, '.io.icefloe.examples.OrderEvent');
      const jsonTable = connectSchemaToIceberg(orderConnectSchema(v));
      assert.deepEqual(jsonTable.fields.map((f) => f.name), avroTable.fields.map((f) => f.name));
      assert.deepEqual(jsonTable.fields.map((f) => f.type.kind), avroTable.fields.map((f) => f.type.kind), 'the Connect schema gives the Avro table');
    }
  });
});

describe('framing', () => {
  test('decimal bytes: big-endian two’s complement in as few bytes as fit', () => {
    const reference = (u: bigint): number[] => {
      for (let n = 1; ; n++) {
        const bits = BigInt(8 * n);
        if (u >= -(1n << (bits - 1n)) && u < 1n << (bits - 1n)) {
          const x = BigInt.asUintN(8 * n, u);
          return Array.from({ length: n }, (_, i) => Number((x >> BigInt(8 * (n - 1 - i))) & 0xffn));
        }
      }
    };
    const values = [0n, 1n, -1n, 127n, 128n, -128n, -129n, 255n, 256n, 32767n, 32768n, -32769n, 8388607n, 8388608n, 2147483647n, -2147483648n, 2147483648n, -2147483649n, 10n ** 18n, -(10n ** 30n)];
    for (const v of values) assert.deepEqual([...decimalBytes(v)], reference(v), String(v));
  });

  test('Confluent framing: magic 0 and the big-endian id', () => {
    assert.deepEqual([...confluentFrame(0x01020304, Uint8Array.of(9, 8))], [0, 1, 2, 3, 4, 9, 8]);
    assert.deepEqual([...confluentFrame(0xffffffff, new Uint8Array(0))], [0, 255, 255, 255, 255]);
  });

  test('Protobuf message indexes: [0] is the single byte 0; other paths are a zig-zag count and indexes, as our decoder reads them', () => {
    assert.deepEqual([...confluentMessageIndexBytes([0])], [0]);
    const body = Uint8Array.of(0x08, 0x01);
    for (const path of [[0], [1], [0, 2], [3, 0, 70], [200]]) {
      const frame = confluentProtobufFrame(77, path, body);
      const { indexes, start } = confluentMessageIndexes(frame);
      assert.deepEqual(indexes ?? [0], path);
      assert.deepEqual([...frame.subarray(start)], [...body]);
    }
    // [1, 2]: count 2 → 4, then 1 → 2 and 2 → 4 (zig-zag).
    assert.deepEqual([...confluentMessageIndexBytes([1, 2])], [4, 2, 4]);
  });
});
