/**
 * Records that other software writes to a shared control topic, for the tests of point 8 (issue 9): bytes
 * shaped like the Apache Iceberg sink's control events, random bytes, and Icefloe envelopes of a future
 * major version. None of these is a valid Icefloe v1 event.
 */
import { prng } from '../../src/core/prng.ts';
import { CONTROL_FORMAT, controlRecordKey } from '../../src/coordinate/events.ts';

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
