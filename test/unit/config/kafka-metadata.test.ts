import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KAFKA_METADATA_COLUMNS, parseConnectorConfig } from '../../../src/config/connector-config.ts';
import type { KafkaMetadataColumn } from '../../../src/config/connector-config.ts';
import { DataError } from '../../../src/core/errors.ts';
import { keyColumnFormat, metadataFields, metadataNameConflicts, metadataValues } from '../../../src/config/kafka-metadata.ts';
import type { KafkaRecordCoordinates } from '../../../src/config/kafka-metadata.ts';

const BASE: Readonly<Record<string, string>> = {
  name: 'orders',
  'connector.class': 'IcebergSink',
  topics: 'orders',
  'iceberg.tables': 'sales.orders',
  'iceberg.catalog.type': 'rest',
  'iceberg.catalog.uri': 'http://127.0.0.1:8181',
};

const cfg = (columns: readonly KafkaMetadataColumn[], prefix = '_kafka_metadata_') => ({ kafkaMetadata: { columns, prefix } });

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

const RECORD: KafkaRecordCoordinates = {
  topic: 'orders',
  partition: 5,
  offset: 9007199254740993n, // 2^53 + 1: must survive exactly
  timestamp: 1_700_000_000_123,
  key: enc('k-1'),
  headers: [['trace', enc('a')], ['empty', null], ['trace', enc('b')]],
};

test('none requested: no fields (the default config)', () => {
  const c = parseConnectorConfig(BASE);
  assert.deepEqual(metadataFields(c.tables, 'avro'), []);
});

test('all six, from the connector config: names with the default prefix, types, optional, canonical order', () => {
  const c = parseConnectorConfig({ ...BASE, 'icefloe.tables.kafka-metadata-columns': 'headers,key,timestamp,offset,partition,topic' });
  const fields = metadataFields(c.tables, 'avro');
  assert.deepEqual(
    fields.map((f) => [f.name, f.type, f.required]),
    [
      ['_kafka_metadata_topic', { kind: 'string' }, false],
      ['_kafka_metadata_partition', { kind: 'int' }, false],
      ['_kafka_metadata_offset', { kind: 'long' }, false],
      ['_kafka_metadata_timestamp', { kind: 'timestamptz' }, false],
      ['_kafka_metadata_key', { kind: 'binary' }, false],
      ['_kafka_metadata_headers', { kind: 'map', key: { kind: 'string' }, value: { kind: 'binary' }, valueRequired: false }, false],
    ],
  );
  assert.deepEqual(fields.map((f) => f.source), [
    { from: 'topic' },
    { from: 'partition' },
    { from: 'offset' },
    { from: 'timestamp', unit: 'micros' },
    { from: 'key', as: 'binary' },
    { from: 'headers', duplicates: 'last-wins' },
  ]);
  assert.ok(fields.every((f) => !('id' in f) && f.doc.length > 0), 'no field ids: the catalog assigns them');
  assert.ok(Object.isFrozen(fields) && fields.every((f) => Object.isFrozen(f)));
});

test('each subset on its own, and a custom prefix', () => {
  for (const column of KAFKA_METADATA_COLUMNS) {
    const fields = metadataFields(cfg([column], 'm_'), 'json');
    assert.deepEqual(fields.map((f) => f.name), [`m_${column}`]);
    assert.equal(fields[0]?.column, column);
  }
  assert.deepEqual(metadataFields(cfg(['offset', 'topic', 'partition']), 'bytes').map((f) => f.column), ['topic', 'partition', 'offset']);
  const c = parseConnectorConfig({ ...BASE, 'icefloe.tables.kafka-metadata-columns': 'offset', 'icefloe.tables.kafka-metadata-prefix': '_k_' });
  assert.deepEqual(metadataFields(c.tables, 'avro').map((f) => f.name), ['_k_offset']);
});

test('the key column is string under StringConverter, the raw bytes otherwise', () => {
  assert.equal(keyColumnFormat('string'), 'string');
  for (const k of ['json', 'bytes', 'avro', 'protobuf'] as const) assert.equal(keyColumnFormat(k), 'binary');
  const [s] = metadataFields(cfg(['key']), 'string');
  assert.deepEqual([s?.type, s?.source], [{ kind: 'string' }, { from: 'key', as: 'string' }]);
  assert.deepEqual(metadataValues(metadataFields(cfg(['key']), 'string'), RECORD), ['k-1']);
  assert.deepEqual(metadataValues(metadataFields(cfg(['key']), 'string'), { ...RECORD, key: new Uint8Array([0x61, 0xff]) }), ['a\ufffd']);
  const raw = metadataValues(metadataFields(cfg(['key']), 'avro'), RECORD);
  assert.ok(raw[0] instanceof Uint8Array && raw[0] === RECORD.key, 'the bytes as consumed');
  assert.deepEqual(metadataValues(metadataFields(cfg(['key']), 'avro'), { ...RECORD, key: null }), [null]);
});

test('values: exact bigint offset, timestamp in µs, headers last-wins, in field order', () => {
  const fields = metadataFields(cfg([...KAFKA_METADATA_COLUMNS]), 'avro');
  const [topic, partition, offset, ts, key, headers] = metadataValues(fields, RECORD);
  assert.equal(topic, 'orders');
  assert.equal(partition, 5);
  assert.equal(offset, 9007199254740993n);
  assert.equal(typeof offset, 'bigint');
  assert.equal(ts, 1_700_000_000_123_000n);
  assert.equal(key, RECORD.key);
  assert.deepEqual(headers, [['trace', enc('b')], ['empty', null]]);
});

test('timestamp: -1 or absent is null, a bigint input works, other negatives are invalid (as in Connect)', () => {
  const ts = metadataFields(cfg(['timestamp']), 'avro');
  assert.deepEqual(metadataValues(ts, { ...RECORD, timestamp: -1 }), [null]);
  assert.deepEqual(metadataValues(ts, { ...RECORD, timestamp: null }), [null]);
  assert.deepEqual(metadataValues(ts, { ...RECORD, timestamp: 0n }), [0n]);
  assert.throws(() => metadataValues(ts, { ...RECORD, timestamp: -5 }), (e: unknown) => e instanceof DataError && /^record orders\/5@9007199254740993: invalid record timestamp -5$/.test(e.message));
});

test('headers: none is an empty map, never null; unique keys pass through unchanged', () => {
  const h = metadataFields(cfg(['headers']), 'avro');
  assert.deepEqual(metadataValues(h, { ...RECORD, headers: [] }), [[]]);
  const unique = [['a', enc('1')], ['b', enc('2')]] as const;
  assert.equal(metadataValues(h, { ...RECORD, headers: unique })[0], unique);
});

test('record fields that collide with metadata column names', () => {
  const fields = metadataFields(cfg(['offset', 'topic']), 'avro');
  assert.deepEqual(metadataNameConflicts(fields, ['id', '_kafka_metadata_offset', '_KAFKA_METADATA_TOPIC'], false), ['_kafka_metadata_offset']);
  assert.deepEqual(metadataNameConflicts(fields, ['id', '_kafka_metadata_offset', '_KAFKA_METADATA_TOPIC'], true), ['_kafka_metadata_offset', '_KAFKA_METADATA_TOPIC']);
  assert.deepEqual(metadataNameConflicts([], ['x'], true), []);
});
