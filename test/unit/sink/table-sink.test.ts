import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RawRecord } from '../../../src/consume/port.ts';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { inferIcebergSchema } from '../../../src/decode/connect-schema.ts';
import { newTableMetadata } from '../../../src/iceberg/metadata.ts';
import { bindPartitionSpec, buildPartitionSpec } from '../../../src/iceberg/partition-spec.ts';
import type { PartitionSpec } from '../../../src/iceberg/partition-spec.ts';
import { metadataFields } from '../../../src/config/kafka-metadata.ts';
import { valueFormat } from '../../../src/decode/value-format.ts';
import { RecordProbe } from '../../../src/decode/record-probe.ts';
import { TableSink, withMetadataFields } from '../../../src/sink/table-sink.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import type { ConverterConfig } from '../../../src/config/converters.ts';
import { readBack } from '../write/helpers.ts';

const JSON_CONVERTER: ConverterConfig = {
  className: 'org.apache.kafka.connect.json.JsonConverter',
  kind: 'json',
  schemasEnable: false,
  decimalFormat: 'BASE64',
  schemaRegistryUrls: [],
  props: {},
};
const utf8 = new TextEncoder();
const META = metadataFields({ kafkaMetadata: { columns: ['topic', 'partition', 'offset', 'timestamp', 'key', 'headers'], prefix: '_kafka_metadata_' } }, 'string');

function record(partition: number, offset: bigint, value: object, headers: RawRecord['headers'] = []): RawRecord {
  return { topic: 'orders', partition, offset, timestamp: 1_700_000_000_000 + Number(offset), key: utf8.encode(`k${offset}`), value: utf8.encode(JSON.stringify(value)), headers };
}

const FORMAT = valueFormat(JSON_CONVERTER, undefined, { caseInsensitive: false, forceOptional: false });

/** Appends a record the way the sink writer does: read by a record probe planned for this table first. */
function appendProbed(sink: TableSink, r: RawRecord): void {
  const msg = r.value as Uint8Array;
  const probe = new RecordProbe({ source: inferIcebergSchema({ id: 1, region: 'eu', amount: 1.5 }), routePath: null, tables: new Map([['t', sink.probeFields]]), caseInsensitive: false }, (p) => FORMAT.decoderFor(p));
  probe.read(msg);
  sink.append(r, probe.viewOf('t'));
}

function sinkFor(partitionBy: string): { sink: TableSink; store: MemoryObjectStore } {
  const source = inferIcebergSchema({ id: 1, region: 'eu', amount: 1.5 });
  const schema = withMetadataFields(source, META);
  const md = newTableMetadata({ schema, spec: buildPartitionSpec(schema, partitionBy), location: 's3://wh/t', tableUuid: '00000000-0000-4000-8000-000000000001', nowMs: 0 });
  const store = new MemoryObjectStore();
  const sink = new TableSink({
    table: { identifier: parseIdentifier('db.t'), metadataLocation: 's3://wh/t/metadata/v1.json', metadata: md, config: {} },
    format: FORMAT,
    metadataFields: META,
    writeProps: {},
    store,
    budget: undefined,
    taskId: 3,
  });
  return { sink, store };
}

test('withMetadataFields appends the Kafka columns once, with fresh ids after the highest', () => {
  const source = inferIcebergSchema({ id: 1, tags: ['a'] });
  const s = withMetadataFields(source, META);
  assert.deepEqual(s.fields.map((f) => f.name).slice(-6), META.map((m) => m.name));
  const ids = s.fields.map((f) => f.id);
  assert.equal(new Set(ids).size, ids.length);
  assert.equal(withMetadataFields(s, META), s); // already there: unchanged
});

test('one writer per partition; metadata columns filled per record; spans per source partition', async () => {
  const { sink, store } = sinkFor('region');
  const rows = [
    record(0, 10n, { id: 1, region: 'eu', amount: 1.25 }, [{ key: 'h', value: utf8.encode('v1') }, { key: 'h', value: utf8.encode('v2') }]),
    record(0, 11n, { id: 2, region: 'us', amount: 2.5 }),
    record(2, 7n, { id: 3, region: 'eu', amount: 3.75 }),
  ];
  for (const r of rows) appendProbed(sink, r);
  const cycle = await sink.complete();
  assert.equal(cycle.records, 3);
  assert.deepEqual(cycle.files.map((f) => [f.partition, f.recordCount]).sort(), [[['eu'], 2n], [['us'], 1n]]);
  assert.ok(cycle.files.every((f) => f.filePath.startsWith('s3://wh/t/data/region=') && /\/00003-[0-9a-f-]+-\d{5}\.parquet$/.test(f.filePath)));
  assert.deepEqual(
    cycle.spans.map((s) => [s.partition, s.firstOffset, s.lastOffset, s.maxTimestampMs]).sort(),
    [[0, 10n, 11n, 1_700_000_000_011], [2, 7n, 7n, 1_700_000_000_007]],
  );
  const eu = cycle.files.find((f) => f.partition[0] === 'eu');
  assert.ok(eu !== undefined);
  const { rows: back } = await readBack(await store.get(eu.filePath), sink.schema);
  assert.deepEqual(
    back.map((r) => [r['id'], r['_kafka_metadata_topic'], r['_kafka_metadata_partition'], r['_kafka_metadata_offset'], r['_kafka_metadata_key']]),
    [[1n, 'orders', 0, 10n, 'k10'], [3n, 'orders', 2, 7n, 'k7']],
  );
  // A repeated header keeps its last value (Connect's semantics for a map column).
  assert.deepEqual(back[0]?.['_kafka_metadata_headers'], [['h', utf8.encode('v2')]]);
  // A partitioned table never guesses a partition: without the record's probe values it refuses.
  assert.throws(() => sink.append(record(0, 12n, { id: 4, region: 'eu', amount: 1 })), /needs the record's probe values/);
  // The cycle is over: nothing left buffered, spans reset.
  assert.deepEqual((await sink.complete()).files, []);
});

/** The bucket of a long id under the spec's second field, by the Iceberg transform itself. */
function bucketOf(spec: PartitionSpec, schema: TableSink['schema'], id: bigint): unknown {
  return bindPartitionSpec(spec, schema)[1]?.apply(id);
}

test('two partition fields, nulls and interleaved records: one writer per distinct tuple, every record in its own', async () => {
  const { sink } = sinkFor('region, bucket(id, 4)');
  const rows: RawRecord[] = [];
  const regions = ['eu', 'us', null];
  for (let i = 0; i < 60; i++) rows.push(record(i % 2, BigInt(i), { id: i % 8, region: regions[i % 3], amount: 1 }));
  for (const r of rows) appendProbed(sink, r);
  const cycle = await sink.complete();
  const want = new Map<string, bigint>();
  const spec = buildPartitionSpec(sink.schema, 'region, bucket(id, 4)');
  for (const r of rows) {
    const v = JSON.parse(new TextDecoder().decode(r.value as Uint8Array)) as { id: number; region: string | null };
    const tuple = JSON.stringify([v.region, bucketOf(spec, sink.schema, BigInt(v.id))]);
    want.set(tuple, (want.get(tuple) ?? 0n) + 1n);
  }
  const got = new Map(cycle.files.map((f) => [JSON.stringify(f.partition), f.recordCount]));
  assert.deepEqual(new Map([...got].sort()), new Map([...want].sort()));
  assert.equal(cycle.records, 60);
});

test('abort drops what was buffered and reports nothing to announce', async () => {
  const { sink } = sinkFor('');
  sink.append(record(1, 1n, { id: 1, region: 'eu', amount: 1 }));
  assert.deepEqual(await sink.abort(new Error('test')), []);
  const cycle = await sink.complete();
  assert.equal(cycle.records, 0);
  assert.deepEqual(cycle.files, []);
});
