/**
 * Records that other software writes to a shared control topic, for the tests of point 8 (issue 9): bytes
 * shaped like the Apache Iceberg sink's control events, random bytes, and Icefloe envelopes of a future
 * major version. None of these is a valid Icefloe v1 event.
 */
import { RdKafka } from '@confluentinc/kafka-javascript';
import { prng } from '../../src/core/prng.ts';
import { CONTROL_FORMAT, controlRecordKey, encodeAnnouncement } from '../../src/coordinate/events.ts';
import { makeDataFile } from '../../src/iceberg/data-file.ts';
import { kafkaSettings } from './kafka.ts';

const utf8 = new TextEncoder();

/**
 * Like the Apache sink's events (Iceberg's AvroEncoderUtil: magic 0xC2 0x01, the writer schema as an Avro
 * string, then the binary datum), keyed like its producer (a UUID-like id).
 */
export function apacheSinkLikeEvent(seed: number): { key: Uint8Array; value: Uint8Array } {
  const schema = utf8.encode('{"type":"record","name":"event","namespace":"org.apache.iceberg.connect.events","fields":[{"name":"id","type":{"type":"fixed","name":"uuid","size":16}},{"name":"type","type":"int"},{"name":"timestamp","type":"long"},{"name":"group_id","type":"string"},{"name":"payload","type":"bytes"}]}');
  const rand = prng(seed);
  const datum = Uint8Array.from({ length: 64 }, () => Math.floor(rand() * 256));
  const value = new Uint8Array(2 + 2 + schema.byteLength + datum.byteLength);
  value.set([0xc2, 0x01], 0);
  // Avro zig-zag varint of the schema length (two bytes suffice for < 8192).
  const z = schema.byteLength * 2;
  value.set([(z & 0x7f) | 0x80, z >> 7], 2);
  value.set(schema, 4);
  value.set(datum, 4 + schema.byteLength);
  return { key: utf8.encode(`cg-control-${seed.toString(16).padStart(8, '0')}-4f1e-9a2b-${seed}`), value };
}

/** `n` random bytes under a random key. */
export function garbageRecord(seed: number, n = 200): { key: Uint8Array; value: Uint8Array } {
  const rand = prng(seed);
  return { key: Uint8Array.from({ length: 12 }, () => Math.floor(rand() * 256)), value: Uint8Array.from({ length: n }, () => Math.floor(rand() * 256)) };
}

/** An Icefloe envelope of major version 2 (unknown to this reader) of `connector`'s task 0, keyed like it. */
export function futureVersionRecord(connector: string): { key: Uint8Array; value: Uint8Array } {
  const value = utf8.encode(JSON.stringify({ format: CONTROL_FORMAT, version: '2.0', type: 'announcement', connector, taskId: 0, cycleId: 'future', table: { tableId: 'x' }, fileRefs: ['s3://nowhere/f.parquet'] }));
  return { key: utf8.encode(controlRecordKey(connector, 0)), value };
}

/**
 * Produces `count` records of `recordBytes` each to partition `partition` of `topic` as fast as the broker
 * takes them (idempotent, not transactional: the committer reads read_committed, which returns them too).
 * `record(i)` gives record i (a null value is a tombstone); returns the bytes produced.
 */
export async function produceBulk(topic: string, partition: number, count: number, record: (i: number) => { key: Uint8Array | null; value: Uint8Array | null }): Promise<number> {
  const producer = new RdKafka.Producer({ ...(await kafkaSettings()), 'enable.idempotence': true, dr_cb: true, 'linger.ms': 20, 'message.max.bytes': 4_000_000, 'queue.buffering.max.kbytes': 262_144 }, {});
  await new Promise<void>((resolve, reject) => producer.connect({}, (err) => (err ? reject(err) : resolve())));
  producer.setPollInterval(10);
  let bytes = 0;
  try {
    let pending = count;
    const done = new Promise<void>((resolve, reject) => {
      if (pending === 0) resolve();
      producer.on('delivery-report', (err) => {
        if (err) reject(err);
        else if (--pending === 0) resolve();
      });
    });
    for (let i = 0; i < count; i++) {
      const r = record(i);
      bytes += (r.key?.byteLength ?? 0) + (r.value?.byteLength ?? 0);
      for (;;) {
        try {
          producer.produce(topic, partition, r.value === null ? null : Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength), r.key === null ? null : Buffer.from(r.key), null);
          break;
        } catch (e) {
          // The local queue is full: let deliveries drain it.
          if (!String(e).includes('Queue full')) throw e;
          await new Promise((res) => setTimeout(res, 20));
        }
      }
    }
    await done;
  } finally {
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  }
  return bytes;
}

/**
 * One part of another connector's announcement (valid Icefloe v1, many files with column metrics), about
 * `bytes` long, keyed `controlRecordKey(connector, 0)`: the bulk of a shared control topic.
 */
export function otherConnectorAnnouncement(connector: string, bytes: number): { key: Uint8Array; value: Uint8Array } {
  const metrics = new Map(Array.from({ length: 20 }, (_, i) => [i + 1, BigInt(1_000 + i)] as [number, bigint]));
  const bounds = new Map(Array.from({ length: 20 }, (_, i) => [i + 1, new Uint8Array(16).fill(i)] as [number, Uint8Array]));
  const files = Array.from({ length: Math.ceil(bytes / 1_000) + 10 }, (_, i) =>
    makeDataFile({ content: 0, filePath: `s3://elsewhere/${connector}/data/${i}.parquet`, fileFormat: 'PARQUET', specId: 0, partition: [], recordCount: 100n, fileSizeInBytes: 4096n, columnSizes: metrics, valueCounts: metrics, nullValueCounts: metrics, lowerBounds: bounds, upperBounds: bounds }),
  );
  const parts = encodeAnnouncement(
    { connector, taskId: 0, cycleId: 'bulk', table: { namespace: ['elsewhere'], name: 't' }, tableUuid: '00000000-0000-4000-8000-000000000000', schemaId: 0, specId: 0, sourceSpans: [{ topic: 'elsewhere', partition: 0, firstOffset: 0n, lastOffset: 99n }], files },
    bytes,
  );
  return { key: new TextEncoder().encode(controlRecordKey(connector, 0)), value: parts[0] as Uint8Array };
}
