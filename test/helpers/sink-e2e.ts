/**
 * Shared pieces of the sink's end-to-end tests (test/e2e/sink-{e2e,formats,routing}.test.ts): connector
 * configs on the stack's REST catalog and S3 (the catalog keys of connectors/orders-avro-s3-rest.json with
 * the stack's endpoints), order events produced with `runGenerate` while their Kafka coordinates are
 * collected in delivery order, waiting for the worker's committed total, and cleanup of the topics and
 * tables a test made. Names are unique per test (other engineers share the stack).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { runGenerate } from '../../tools/generate/index.ts';
import { parseIdentifier } from '../../src/commit/port.ts';
import { RestCatalog } from '../../src/commit/rest/catalog.ts';
import { ConfluentKafkaAdmin, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import type { OrderEvent, OrderFormat, SchemaVersion } from '../../tools/generate/orders.ts';
import type { Coordinates } from './exactly-once.ts';
import { kafkaSettings } from './kafka.ts';
import { readTable } from './readers.ts';
import { requireReachable, stackEndpoints } from './stack.ts';
import { taskFailures } from './worker.ts';
import type { WorkerProcess } from './worker.ts';

/** A name fit for an Iceberg namespace or table (letters, digits, underscores). */
export function uniqueIdent(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

/** The catalog keys of connectors/orders-avro-s3-rest.json, pointed at the stack's endpoints. */
export function restCatalogKeys(): Record<string, string> {
  const file = JSON.parse(readFileSync(new URL('../../connectors/orders-avro-s3-rest.json', import.meta.url), 'utf8')) as { config: Record<string, string> };
  const keys = Object.fromEntries(Object.entries(file.config).filter(([k]) => k === 'iceberg.catalog' || k.startsWith('iceberg.catalog.')));
  const e = stackEndpoints();
  return {
    ...keys,
    'iceberg.catalog': e.catalogName,
    'iceberg.catalog.uri': e.catalogUri,
    'iceberg.catalog.warehouse': e.catalogWarehouse,
    'iceberg.catalog.s3.endpoint': e.s3Endpoint,
    'iceberg.catalog.s3.access-key-id': e.s3AccessKey,
    'iceberg.catalog.s3.secret-access-key': e.s3SecretKey,
    'iceberg.catalog.client.region': e.s3Region,
  };
}

/** Worker properties of these tests: tasks as child processes. */
export const PROCESS_WORKER: Readonly<Record<string, string>> = { 'icefloe.tasks.mode': 'process' };

/** Connect's JsonConverter without the schema envelope (the table is inferred from the records). */
export const SCHEMALESS_JSON: Readonly<Record<string, string>> = { 'value.converter': 'org.apache.kafka.connect.json.JsonConverter', 'value.converter.schemas.enable': 'false' };

export interface SinkConnectorOptions {
  readonly name: string;
  readonly topics: string;
  readonly controlTopic: string;
  /** Connector keys on top of the defaults below (converters, tables, routing, ...). */
  readonly config: Readonly<Record<string, string>>;
}

/**
 * A connector config: Kafka metadata columns on (topic, partition, offset, timestamp), a 3 s commit
 * interval, its own control topic, the REST catalog on S3, then `config`.
 */
export function sinkConnector(o: SinkConnectorOptions): { name: string; config: Record<string, string> } {
  return {
    name: o.name,
    config: {
      'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
      'tasks.max': '1',
      topics: o.topics,
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'iceberg.control.topic': o.controlTopic,
      'iceberg.control.commit.interval-ms': '3000',
      'icefloe.tables.kafka-metadata-columns': 'topic,partition,offset,timestamp',
      ...restCatalogKeys(),
      ...o.config,
    },
  };
}

/** Connector keys of a registry-framed value converter. */
export function registryConverter(kind: 'avro' | 'protobuf'): Record<string, string> {
  return {
    'value.converter': kind === 'avro' ? 'io.confluent.connect.avro.AvroConverter' : 'io.confluent.connect.protobuf.ProtobufConverter',
    'value.converter.schema.registry.url': stackEndpoints().registryUrl,
  };
}

export interface Produced {
  /** Where each event landed, in generation order (`coords[i]` holds event i of the seed). */
  readonly coords: Coordinates[];
  /** The events as generated, same order (kept only when asked for). */
  readonly events: OrderEvent[];
}

export interface ProduceOrdersOptions {
  readonly topic: string;
  readonly format: OrderFormat;
  readonly count: number;
  readonly seed: number;
  readonly partitions?: number;
  readonly onlyPartitions?: readonly number[];
  readonly schemaVersion?: SchemaVersion;
  readonly startTimeMs?: number;
  /** Keep the events too (default false: big runs keep only the coordinates). */
  readonly keepEvents?: boolean;
}

/**
 * Produces order events with `runGenerate` and returns their coordinates in generation order. Batches are
 * confirmed out of order (several in flight), so each delivered batch is placed by its events' index
 * (the order id ends with the event's index), not by arrival.
 */
export async function produceOrders(o: ProduceOrdersOptions): Promise<Produced> {
  const e = stackEndpoints();
  const coords = new Array<Coordinates>(o.count);
  const events = o.keepEvents === true ? new Array<OrderEvent>(o.count) : [];
  const stats = await runGenerate({
    bootstrapServers: e.kafkaBootstrap,
    registryUrl: e.registryUrl,
    topic: o.topic,
    partitions: o.partitions ?? 6,
    ...(o.onlyPartitions === undefined ? {} : { onlyPartitions: o.onlyPartitions }),
    format: o.format,
    count: o.count,
    ratePerSec: 0,
    seed: o.seed,
    schemaVersion: o.schemaVersion ?? 1,
    ...(o.startTimeMs === undefined ? {} : { startTimeMs: o.startTimeMs }),
    onDelivered: (delivered, evs) => {
      if (delivered.length !== evs.length) throw new Error(`onDelivered: ${delivered.length} deliveries for ${evs.length} events`);
      for (let i = 0; i < evs.length; i++) {
        const ev = evs[i] as OrderEvent;
        const d = delivered[i] as Coordinates;
        const index = eventIndex(ev);
        coords[index] = { topic: d.topic, partition: d.partition, offset: d.offset };
        if (o.keepEvents === true) events[index] = ev;
      }
    },
  });
  if (stats.records !== o.count) throw new Error(`runGenerate delivered ${stats.records} of ${o.count} records`);
  for (let i = 0; i < o.count; i++) if (coords[i] === undefined) throw new Error(`event ${i} has no delivery report`);
  return { coords, events };
}

/** The generator's index of an event: its order id is `ORD-<seed prefix>-<index, 9 digits>`. */
export function eventIndex(e: OrderEvent): number {
  return Number(e.order_id.slice(e.order_id.lastIndexOf('-') + 1));
}

/** Sum of `records` over the worker's 'table committed' lines for `table`. */
export function committedRecords(w: WorkerProcess, table: string): number {
  return w.logs('table committed').filter((l) => l['table'] === table).reduce((n, l) => n + Number(l['records']), 0);
}

/**
 * Waits until the worker's 'table committed' lines for `table` add up to `total` (fails early when the
 * worker exits or a task fails; generous deadline: the machine is shared).
 */
export async function waitCommitted(w: WorkerProcess, table: string, total: number, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = committedRecords(w, table);
    if (n >= total) return;
    const failed = taskFailures(w, undefined, 'for-good');
    if (failed.length > 0) throw new Error(`a task failed while waiting for ${table}: ${JSON.stringify(failed[0])}`);
    if (w.child.exitCode !== null || w.child.signalCode !== null) throw new Error(`the worker exited while waiting for ${table} (${n}/${total} committed); last lines:\n${w.lines.slice(-15).join('\n')}`);
    if (Date.now() > deadline) throw new Error(`${table}: ${n} of ${total} records committed after ${timeoutMs} ms; last lines:\n${w.lines.slice(-15).join('\n')}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Stops the worker gracefully and checks it exited cleanly. */
export async function stopWorker(w: WorkerProcess): Promise<void> {
  const how = await w.stop(120_000);
  if (how !== '0') throw new Error(`the worker exited with ${how}; last lines:\n${w.lines.slice(-20).join('\n')}`);
}

/**
 * Registers cleanup after the test: the worker is killed if still running, then the topics are deleted
 * and the tables dropped (their files stay in S3, as with any drop without purge).
 */
export async function e2eResources(t: TestContext): Promise<{ topics: string[]; tables: string[]; workers: WorkerProcess[] }> {
  const e = stackEndpoints();
  await requireReachable('Schema registry', e.registryUrl);
  await requireReachable('S3 (moto)', e.s3Endpoint);
  await requireReachable('Iceberg REST catalog', e.catalogUri);
  await kafkaSettings();
  const r = { topics: [] as string[], tables: [] as string[], workers: [] as WorkerProcess[] };
  t.after(async () => {
    for (const w of r.workers) if (w.child.exitCode === null && w.child.signalCode === null) await w.kill();
    const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
    for (const topic of r.topics) await admin.deleteTopic(topic).catch(() => undefined);
    await admin.close();
    const catalog = new RestCatalog({ uri: e.catalogUri, name: e.catalogName, warehouse: e.catalogWarehouse });
    for (const table of r.tables) await catalog.dropTable(parseIdentifier(table)).catch(() => undefined);
    await catalog.close();
  });
  return r;
}

// ---------------------------------------------------------------------------------------------------
// Order rows as the independent readers return them (test/readers/read_table.py: decimals as strings,
// timestamps as ISO 8601, maps as [key, value] pairs), normalised for comparison
// ---------------------------------------------------------------------------------------------------

/** How a format's table holds the order's decimals and event time. */
export type OrderShape =
  /** Avro and Connect JSON with schemas: decimal(10,2)/(12,2) columns, created_at timestamptz. */
  | 'decimal'
  /** Protobuf: unit_price and total as int64 unscaled cents, created_at timestamptz. */
  | 'cents'
  /** Plain JSON, inferred: decimals as doubles, created_at a long of epoch ms, attributes a struct. */
  | 'inferred';

function centsText(unscaled: bigint): string {
  return `${unscaled / 100n}.${String(unscaled % 100n).padStart(2, '0')}`;
}

/**
 * An ISO 8601 instant as the readers print it (`2025-01-01T00:00:00.049000+00:00`, microseconds optional)
 * → epoch milliseconds, with the microseconds as a fraction (exact for whole milliseconds).
 */
export function isoToMs(iso: string): number {
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:\d{2})?$/.exec(iso);
  if (m === null) throw new Error(`not an ISO instant: ${iso}`);
  const zone = m[4] === undefined || m[4] === 'Z' ? 'Z' : m[4];
  const whole = Date.parse(`${m[1]}T${m[2]}${zone}`);
  if (Number.isNaN(whole)) throw new Error(`not an ISO instant: ${iso}`);
  const micros = Number((m[3] ?? '').padEnd(6, '0'));
  return whole + micros / 1000;
}

function sortedObject(pairs: unknown): Record<string, unknown> {
  if (pairs === null || pairs === undefined) return {};
  const entries = Array.isArray(pairs) ? (pairs as [string, unknown][]) : Object.entries(pairs as Record<string, unknown>);
  return Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const TIMESTAMP_COLUMNS = new Set(['created_at', '_kafka_metadata_timestamp']);

/**
 * A row read back, normalised: ISO timestamps (timestamptz columns) → epoch ms, the map as an object
 * sorted by key, bigint → number where safe. `shape` says whether created_at is a timestamp or a long.
 */
export function normalizeOrderRow(row: Record<string, unknown>, shape: OrderShape): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (TIMESTAMP_COLUMNS.has(k) && typeof v === 'string' && !(k === 'created_at' && shape === 'inferred')) out[k] = isoToMs(v);
    else if (k === 'attributes') out[k] = shape === 'inferred' ? v : sortedObject(v);
    else out[k] = typeof v === 'bigint' && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  return out;
}

/**
 * The value columns an order event should read back as (normalised like `normalizeOrderRow`). For the
 * inferred shape, `attributeKeys` are the keys the table's attributes struct has (inferred from the first
 * record): a key the struct lacks is not in the table (schemaless JSON keeps the first record's shape).
 */
export function expectedOrderRow(e: OrderEvent, shape: OrderShape, options: { version?: SchemaVersion; attributeKeys?: readonly string[] } = {}): Record<string, unknown> {
  const dec = (u: bigint): unknown => (shape === 'decimal' ? centsText(u) : shape === 'cents' ? Number(u) : Number(centsText(u)));
  const row: Record<string, unknown> = {
    order_id: e.order_id,
    region: e.region,
    status: e.status,
    customer: { id: e.customer.id, name: e.customer.name, email: e.customer.email },
    items: e.items.map((it) => ({ sku: it.sku, quantity: it.quantity, unit_price: dec(it.unit_price) })),
    attributes:
      shape === 'inferred'
        ? Object.fromEntries((options.attributeKeys ?? []).map((k) => [k, e.attributes[k] ?? null]))
        : sortedObject(e.attributes),
    total: dec(e.total),
    currency: e.currency,
    created_at: e.created_at,
    note: e.note,
  };
  if ((options.version ?? 1) === 2) row['channel'] = e.channel ?? null;
  return row;
}

/** The value columns of a normalised row (drops the Kafka metadata columns). */
export function valueColumns(row: Record<string, unknown>, prefix = '_kafka_metadata_'): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith(prefix)));
}

/**
 * A reader filter selecting these coordinates of one topic, for PyIceberg's expression parser and DuckDB's
 * WHERE clause alike: `(_kafka_metadata_partition = p AND _kafka_metadata_offset IN (…)) OR …`.
 */
export function coordinatesFilter(coords: readonly Coordinates[], prefix = '_kafka_metadata_'): string {
  const byPartition = new Map<number, bigint[]>();
  for (const c of coords) byPartition.set(c.partition, [...(byPartition.get(c.partition) ?? []), c.offset]);
  return [...byPartition]
    .sort(([a], [b]) => a - b)
    .map(([p, offsets]) => `(${prefix}partition = ${p} AND ${prefix}offset IN (${offsets.join(', ')}))`)
    .join(' OR ');
}

/**
 * Reads the rows at `produced.coords[i]` for each sampled index with one reader and compares each with the
 * event generated at that index (value columns and Kafka topic/partition/offset). Returns the rows read
 * (normalised), by index.
 */
export async function checkOrderRows(
  table: string,
  topic: string,
  sample: readonly { readonly coords: Coordinates; readonly event: OrderEvent; readonly version?: SchemaVersion }[],
  shape: OrderShape,
  options: { engine?: 'pyiceberg' | 'duckdb'; attributeKeys?: readonly string[] } = {},
): Promise<Record<string, unknown>[]> {
  const engine = options.engine ?? 'pyiceberg';
  const read = await readTable({
    table,
    engine,
    ...(engine === 'duckdb' ? { catalog: { kind: 'rest' as const } } : {}),
    filter: coordinatesFilter(sample.map((s) => s.coords)),
  });
  const byCoord = new Map<string, Record<string, unknown>>();
  for (const r of read.rows ?? []) {
    const n = normalizeOrderRow(r, shape);
    const key = `${String(n['_kafka_metadata_partition'])}/${String(n['_kafka_metadata_offset'])}`;
    assert.ok(!byCoord.has(key), `${engine}: two rows at ${key}`);
    byCoord.set(key, n);
  }
  assert.equal(byCoord.size, sample.length, `${engine}: one row per sampled coordinate`);
  const out: Record<string, unknown>[] = [];
  for (const s of sample) {
    const row = byCoord.get(`${s.coords.partition}/${s.coords.offset}`);
    assert.ok(row !== undefined, `${engine}: no row at ${topic}/${s.coords.partition}/${s.coords.offset}`);
    const expected = expectedOrderRow(s.event, shape, { ...(s.version === undefined ? {} : { version: s.version }), ...(options.attributeKeys === undefined ? {} : { attributeKeys: options.attributeKeys }) });
    assert.deepEqual(valueColumns(row), expected, `${engine}: ${s.event.order_id} at ${s.coords.partition}/${s.coords.offset}`);
    assert.equal(row['_kafka_metadata_topic'], topic);
    assert.equal(typeof row['_kafka_metadata_timestamp'], 'number', `${engine}: the Kafka timestamp column reads as a timestamp`);
    out.push(row);
  }
  return out;
}

/** Every `stride`-th index below `count`, starting at `from` (a spread sample). */
export function strided(count: number, n: number, from = 0): number[] {
  const stride = Math.max(1, Math.floor(count / n));
  const out: number[] = [];
  for (let i = from % stride; i < count && out.length < n; i += stride) out.push(i);
  return out;
}

/**
 * Creates `topic` (if missing) with `partitions` and produces JSON values (schemaless, as JsonConverter
 * with schemas.enable=false reads them) through our idempotent record producer (no app.ts). Returns
 * where each landed, in the order given.
 */
export async function produceJson(topic: string, partitions: number, records: readonly { readonly partition: number | null; readonly key?: string; readonly value: unknown }[]): Promise<Coordinates[]> {
  const settings = await kafkaSettings();
  const admin = await ConfluentKafkaAdmin.connect({ settings });
  try {
    await admin.ensureTopic({ name: topic, partitions, replicationFactor: -1 });
  } finally {
    await admin.close();
  }
  const producer = await ConfluentRecordProducer.connect({ settings, clientId: 'icefloe-e2e-json' });
  try {
    const delivered = await producer.send(
      records.map((r) => ({ topic, partition: r.partition, key: r.key ?? null, value: Buffer.from(JSON.stringify(r.value), 'utf8') })),
    );
    return delivered.map((d) => ({ topic: d.topic, partition: d.partition, offset: d.offset }));
  } finally {
    await producer.close();
  }
}

/** An Avro value in Confluent's frame, as a registry-aware producer writes it: magic byte 0, the schema id, the body. */
export function avroFramed(id: number, type: { toBuffer(value: unknown): Buffer }, value: unknown): Buffer {
  const body = type.toBuffer(value);
  const out = Buffer.alloc(5 + body.length);
  out.writeUInt32BE(id, 1);
  body.copy(out, 5);
  return out;
}
