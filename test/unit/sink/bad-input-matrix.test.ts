/**
 * The bad-input matrix (issue 14): for each kind of bad record, a batch of good records with the poison
 * record in the middle goes through the real SinkWriter (SqlCatalog on in-memory SQLite, the memory object
 * store, Avro through the real registry adapter against an in-process HTTP registry, or schemaless JSON).
 *
 * - errors.tolerance=none: the good records before it are written; the poison record fails with a
 *   DataError whose `record` is its coordinates, whose message says what is wrong and whose `stage` says
 *   where it arose.
 * - errors.tolerance=all with a dead-letter table and topic (context headers on): every good record is in
 *   the table, exactly once by Kafka coordinates; the poison record is in the dead-letter topic (its
 *   original key, value and headers, plus Connect's `__connect.errors.*` headers) and in the dead-letter
 *   table (coordinates, stage, error), exactly once each; nothing is skipped silently.
 *
 * Tombstones are not bad records: skipped and counted in both modes, never dead-lettered. A schema id the
 * registry does not know is retried (SchemaUnavailableError, never a DataError) until the registry
 * confirms it unknown; only then is it a bad record. See docs/errors.md for the operator's view.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import avro from 'avsc';
import protobuf from 'protobufjs';
import { DataError, isRetriable } from '../../../src/core/errors.ts';
import type { DataStage } from '../../../src/core/errors.ts';
import type { OutgoingRecord, RawRecord } from '../../../src/consume/port.ts';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { SqlCatalog } from '../../../src/commit/sql/catalog.ts';
import { SqliteDriver } from '../../../src/commit/sql/sqlite.ts';
import { createTable } from '../../../src/commit/table-ops.ts';
import { parseConnectorConfig } from '../../../src/config/connector-config.ts';
import type { ConnectorConfig } from '../../../src/config/connector-config.ts';
import type { CycleTableFiles } from '../../../src/coordinate/task-channel.ts';
import { ConfluentSchemaResolver } from '../../../src/decode/registry/schema-registry.ts';
import { SchemaUnavailableError } from '../../../src/decode/registry-port.ts';
import { valueFormat } from '../../../src/decode/value-format.ts';
import { currentSchema } from '../../../src/iceberg/metadata.ts';
import type { IcebergType, NestedField, Schema } from '../../../src/iceberg/types.ts';
import { DLQ_HEADERS } from '../../../src/sink/dead-letters.ts';
import { SinkWriter } from '../../../src/sink/sink-writer.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { prng } from '../../helpers/prng.ts';
import { recordingLogger } from '../runtime/rig.ts';
import type { LogLine } from '../runtime/rig.ts';
import { appendRow, harness, readBack } from '../write/helpers.ts';
import { deepestField, MAX_FIELD_DEPTH } from '../../../src/write/index.ts';

const TOPIC = 'orders';
const PARTITION = 2;
const TABLE = 'db.orders';
const DLQ_TABLE = 'db.orders_dlq';
const DLQ_TOPIC = 'orders-dlq';
const GRACE_MS = 60_000;
const utf8 = new TextEncoder();
const text = (b: Uint8Array | null | undefined): string | undefined => (b === null || b === undefined ? undefined : Buffer.from(b).toString('utf8'));

// -- a schema registry in this process: the real adapter (ConfluentSchemaResolver) talks HTTP to it --------

const registered = new Map<number, { schema: string; schemaType: 'AVRO' | 'PROTOBUF' }>();
let nextId = 1;
/** Registers an Avro schema (or a .proto text); returns its id. */
function register(schema: unknown, schemaType: 'AVRO' | 'PROTOBUF' = 'AVRO'): number {
  const id = nextId++;
  registered.set(id, { schema: typeof schema === 'string' ? schema : JSON.stringify(schema), schemaType });
  return id;
}

const server = createServer((req, res) => {
  const m = /^\/schemas\/ids\/(\d+)/.exec(req.url ?? '');
  const answer = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
    res.end(JSON.stringify(body));
  };
  if (req.url === '/subjects') return answer(200, []);
  const schema = m === null ? undefined : registered.get(Number(m[1]));
  if (schema === undefined) return answer(404, { error_code: 40403, message: 'Schema not found' });
  return answer(200, schema);
});
const listening = new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
test.after(() => server.close());

function framed(id: number, schema: unknown, value: unknown): Uint8Array {
  const body = avro.Type.forSchema(schema as avro.Schema).toBuffer(value);
  const out = new Uint8Array(5 + body.length);
  new DataView(out.buffer).setUint32(1, id);
  out.set(body, 5);
  return out;
}

// -- the writer under test ---------------------------------------------------------------------------------

type Format = 'avro' | 'protobuf' | 'json';

const CONVERTERS: Record<Format, Record<string, string>> = {
  avro: { 'value.converter': 'io.confluent.connect.avro.AvroConverter', 'value.converter.schema.registry.url': 'http://registry.invalid' },
  protobuf: { 'value.converter': 'io.confluent.connect.protobuf.ProtobufConverter', 'value.converter.schema.registry.url': 'http://registry.invalid' },
  json: { 'value.converter': 'org.apache.kafka.connect.json.JsonConverter', 'value.converter.schemas.enable': 'false' },
};

interface Setup {
  readonly format: Format;
  readonly tolerance: 'none' | 'all';
  /** A table made before the records arrive (else auto-created from the first good record's schema). */
  readonly table?: Schema;
  readonly evolve?: boolean;
  readonly config?: Readonly<Record<string, string>>;
}

interface Run {
  readonly writer: SinkWriter;
  readonly catalog: SqlCatalog;
  readonly store: MemoryObjectStore;
  readonly log: LogLine[];
  /** Files of cycles ended early (a schema change) and of the final complete(). */
  readonly cycles: CycleTableFiles[];
  /** Dead-letter topic records taken at each cycle's end. */
  readonly letters: OutgoingRecord[];
  /** Advances the registry adapter's clock (the unknown-id grace window). */
  advance(ms: number): void;
  /** Writes retried because the registry could not give a schema yet. */
  retries: number;
  finish(): Promise<void>;
}

const optional = (id: number, name: string, type: IcebergType): NestedField => ({ id, name, required: false, type });
const required = (id: number, name: string, type: IcebergType): NestedField => ({ id, name, required: true, type });
/** The Kafka metadata columns every table here has, so rows are counted by coordinates. */
const META = (from: number): NestedField[] => [optional(from, '_kafka_metadata_partition', { kind: 'int' }), optional(from + 1, '_kafka_metadata_offset', { kind: 'long' })];
const tableOf = (...fields: NestedField[]): Schema => ({ schemaId: 0, fields: [...fields, ...META(fields.length + 1)] });

async function start(s: Setup): Promise<Run> {
  const url = await listening;
  const store = new MemoryObjectStore();
  const catalog = new SqlCatalog({ name: 'unit', driver: new SqliteDriver({ path: ':memory:' }), store, warehouse: 'memory://warehouse' });
  await catalog.createNamespace(['db']);
  if (s.table !== undefined) await createTable({ catalog, store }, parseIdentifier(TABLE), { schema: s.table });
  const connector = parseConnectorConfig({
    name: 'orders-sink',
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    topics: TOPIC,
    ...CONVERTERS[s.format],
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'iceberg.tables': TABLE,
    'iceberg.tables.auto-create-enabled': 'true',
    'iceberg.tables.evolve-schema-enabled': String(s.evolve === true),
    'iceberg.control.topic': 'control-orders',
    'iceberg.catalog.type': 'sql',
    'iceberg.catalog.uri': 'jdbc:sqlite::memory:',
    'iceberg.catalog.warehouse': 'memory://warehouse',
    'icefloe.tables.kafka-metadata-columns': 'partition,offset',
    'errors.tolerance': s.tolerance,
    'errors.log.enable': 'true',
    ...(s.tolerance === 'all'
      ? { 'icefloe.errors.deadletterqueue.table.name': DLQ_TABLE, 'errors.deadletterqueue.topic.name': DLQ_TOPIC, 'errors.deadletterqueue.context.headers.enable': 'true' }
      : {}),
    ...s.config,
  });
  let now = 1_000_000;
  const resolver = new ConfluentSchemaResolver({ urls: [url], unknownIdGraceMs: GRACE_MS, retries: 0, now: () => now });
  const format = valueFormat(connector.valueConverter as NonNullable<ConnectorConfig['valueConverter']>, resolver, { caseInsensitive: false, forceOptional: true, evolveSchema: s.evolve === true });
  const log: LogLine[] = [];
  const cycles: CycleTableFiles[] = [];
  const letters: OutgoingRecord[] = [];
  const endCycle = async (): Promise<boolean> => {
    cycles.push(...(await writer.complete()));
    letters.push(...writer.takeDeadLetters());
    return true;
  };
  const writer: SinkWriter = new SinkWriter({ connector, taskId: 0, catalog, store, format, keyConverter: 'string', log: recordingLogger(log), endCycle, now: () => 1_700_000_999_000 });
  return { writer, catalog, store, log, cycles, letters, advance: (ms) => (now += ms), retries: 0, finish: async () => void (await endCycle()) };
}

/** Every row of `table` in the cycles' files, read with the table's current schema. */
async function rowsOf(run: Run, table: string): Promise<Record<string, unknown>[]> {
  const schema = currentSchema((await run.catalog.loadTable(parseIdentifier(table))).metadata);
  const name = table.split('.').at(-1);
  const out: Record<string, unknown>[] = [];
  for (const c of run.cycles) {
    if (c.table.name !== name) continue;
    for (const f of c.files) out.push(...(await readBack(await run.store.get(f.filePath), schema)).rows);
  }
  return out;
}

// -- the matrix --------------------------------------------------------------------------------------------

interface Poison {
  readonly value: Uint8Array | null;
  readonly key?: Uint8Array | null;
}

interface Case {
  readonly name: string;
  readonly format: Format;
  readonly table?: Schema;
  readonly evolve?: boolean;
  readonly config?: Readonly<Record<string, string>>;
  /** The i-th good record's value. */
  readonly good: (i: number) => Uint8Array;
  readonly poison: () => Poison;
  readonly stage: DataStage;
  /** What the error says (the message after the record's coordinates). */
  readonly error: RegExp;
  /** The registry is asked again until it confirms the id unknown (the grace window passes). */
  readonly confirmUnknown?: boolean;
}

const ORDER = { type: 'record', name: 'Order', namespace: 'icefloe.test', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }] };
const ORDER_ID = register(ORDER);
const order = (i: number): Uint8Array => framed(ORDER_ID, ORDER, { id: i, name: `order ${i}` });
const json = (v: unknown): Uint8Array => utf8.encode(JSON.stringify(v));

/** One Avro writer schema with a single field `f` of `type` beside `id`, registered; returns a framer. */
function avroWith(type: unknown, name = 'Row'): (f: unknown, id?: number) => Uint8Array {
  const schema = { type: 'record', name, namespace: 'icefloe.test', fields: [{ name: 'id', type: 'long' }, { name: 'f', type }] };
  const sid = register(schema);
  return (f, id = 0) => framed(sid, schema, { id, f });
}

/** A table with `id` (long) and `f` of `type` (required or not). */
const tableWithF = (type: IcebergType, req = false): Schema => tableOf(optional(1, 'id', { kind: 'long' }), (req ? required : optional)(2, 'f', type));

const AVRO_STRING = avroWith('string', 'WithString');
/** Avro bytes of record {id, f: string} whose string bytes are `raw` (not necessarily UTF-8). */
function avroRawString(raw: Uint8Array): Uint8Array {
  const probe = AVRO_STRING('x'.repeat(raw.length));
  const out = probe.slice();
  out.set(raw, probe.length - raw.length);
  return out;
}

const randomBytes = (): Uint8Array => {
  const rnd = prng(14);
  const b = Uint8Array.from({ length: 64 }, () => Math.floor(rnd() * 256));
  b[0] = 0xa7; // not 0: random bytes that happen to start with the magic byte are the unknown-id case
  return b;
};

const INT = avroWith('int', 'IntRow');
const LONG = avroWith('long', 'LongRow');
const MUST = { type: 'record', name: 'WithMust', namespace: 'icefloe.test', fields: [{ name: 'id', type: 'long' }, { name: 'f', type: 'string' }] };
const MUST_ID = register(MUST);
const WITHOUT_MUST = { type: 'record', name: 'WithoutMust', namespace: 'icefloe.test', fields: [{ name: 'id', type: 'long' }] };
const WITHOUT_MUST_ID = register(WITHOUT_MUST);
const NULLABLE = avroWith(['null', 'string'], 'Nullable');
const DECIMAL = avroWith({ type: 'bytes', logicalType: 'decimal', precision: 12, scale: 2 }, 'Dec');
const unscaled = (n: bigint): Buffer => {
  let hex = (n < 0n ? -n : n).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  const b = Buffer.from(`00${hex}`, 'hex');
  return b;
};
/** Avro's zig-zag varint of a long, for values beyond what avsc takes from a JS number. */
function avroLong(n: bigint): number[] {
  let z = n < 0n ? (-n << 1n) - 1n : n << 1n;
  const out: number[] = [];
  do {
    const b = Number(z & 0x7fn);
    z >>= 7n;
    out.push(z === 0n ? b : b | 0x80);
  } while (z !== 0n);
  return out;
}
const TS = avroWith({ type: 'long', logicalType: 'timestamp-millis' }, 'Ts');
const RECURSIVE = { type: 'record', name: 'Node', namespace: 'icefloe.test', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }, { name: 'next', type: ['null', 'Node'], default: null }] };
const RECURSIVE_ID = register(RECURSIVE);
const NAME_AS_INT = { type: 'record', name: 'Order', namespace: 'icefloe.test', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'int' }] };
const NAME_AS_INT_ID = register(NAME_AS_INT);

/** Records nested `depth` levels (`child` in `child` …, a `v` at each level), registered once per depth. */
const deepSchemas = new Map<number, { readonly value: (n: number) => Uint8Array }>();
function deep(depth: number): { readonly value: (n: number) => Uint8Array } {
  let d = deepSchemas.get(depth);
  if (d !== undefined) return d;
  let schema: Record<string, unknown> = { type: 'record', name: `L${depth}`, fields: [{ name: 'v', type: 'long' }] };
  for (let l = depth - 1; l >= 0; l--) schema = { type: 'record', name: `L${l}`, fields: [{ name: 'v', type: 'long' }, { name: 'child', type: schema }] };
  const top = { ...schema, namespace: `icefloe.deep${depth}` };
  const id = register(top);
  const type = avro.Type.forSchema(top as avro.Schema);
  d = {
    value: (n) => {
      let v: Record<string, unknown> = { v: n + depth };
      for (let l = depth - 1; l >= 0; l--) v = { v: n + l, child: v };
      return framed(id, type.schema(), v);
    },
  };
  deepSchemas.set(depth, d);
  return d;
}

/** Confluent-framed Protobuf: the message-index list [0] is the single byte 0. */
function protoFramed(id: number, text: string, type: string, value: Record<string, unknown>): Uint8Array {
  const t = protobuf.parse(text, { keepCase: true }).root.lookupType(type);
  const body = t.encode(t.fromObject(value)).finish();
  const out = new Uint8Array(6 + body.length);
  new DataView(out.buffer).setUint32(1, id);
  out.set(body, 6);
  return out;
}
const PROTO_ORDER = 'syntax = "proto3"; package t; message Order { int64 id = 1; string name = 2; }';
const PROTO_ORDER_ID = register(PROTO_ORDER, 'PROTOBUF');
const PROTO_NODE = 'syntax = "proto3"; package t; message Node { int64 id = 1; string name = 2; Node next = 3; }';
const PROTO_NODE_ID = register(PROTO_NODE, 'PROTOBUF');
const protoOrder = (i: number): Uint8Array => protoFramed(PROTO_ORDER_ID, PROTO_ORDER, 't.Order', { id: i, name: `order ${i}` });
const protoNode = (): Uint8Array => protoFramed(PROTO_NODE_ID, PROTO_NODE, 't.Node', { id: 1, name: 'a', next: { id: 2, name: 'b' } });

const CASES: readonly Case[] = [
  { name: 'random bytes (Avro)', format: 'avro', good: order, poison: () => ({ value: randomBytes() }), stage: 'deserialize', error: /^not a Confluent-framed message: the first byte is 0xa7/ },
  { name: 'random bytes (JSON)', format: 'json', good: (i) => json({ id: i }), poison: () => ({ value: randomBytes() }), stage: 'deserialize', error: /not valid UTF-8|not valid JSON/ },
  { name: 'wrong magic byte', format: 'avro', good: order, poison: () => ({ value: Uint8Array.of(1, ...order(99).subarray(1)) }), stage: 'deserialize', error: /^not a Confluent-framed message: the first byte is 0x01, not the magic byte 0x00/ },
  {
    name: 'a schema id the registry confirms unknown',
    format: 'avro',
    good: order,
    poison: () => ({ value: framed(777_777, ORDER, { id: 1, name: 'x' }) }),
    stage: 'deserialize',
    error: /^schema id 777777 is unknown to the registry at http:\/\/127\.0\.0\.1:\d+\/? \(confirmed: still unknown after 60000 ms\)/,
    confirmUnknown: true,
  },
  {
    name: 'narrowing: an Avro long into an int column (evolution off)',
    format: 'avro',
    table: tableWithF({ kind: 'int' }),
    good: (i) => INT(i, i),
    poison: () => ({ value: LONG(2 ** 40) }),
    stage: 'convert',
    error: /field f: Avro long cannot be written to Iceberg int/,
  },
  { name: 'narrowing: a JSON number beyond int into an int column', format: 'json', table: tableWithF({ kind: 'int' }), good: (i) => json({ id: i, f: i }), poison: () => ({ value: json({ id: 0, f: 2 ** 40 }) }), stage: 'convert', error: /^field f: 1099511627776 is not/ },
  {
    name: 'a required field missing (Avro)',
    format: 'avro',
    table: tableWithF({ kind: 'string' }, true),
    good: (i) => framed(MUST_ID, MUST, { id: i, f: `f${i}` }),
    poison: () => ({ value: framed(WITHOUT_MUST_ID, WITHOUT_MUST, { id: 0 }) }),
    stage: 'convert',
    error: /required field f .*(missing|null)/,
  },
  { name: 'a required field missing (JSON)', format: 'json', table: tableWithF({ kind: 'string' }, true), good: (i) => json({ id: i, f: 'x' }), poison: () => ({ value: json({ id: 0 }) }), stage: 'convert', error: /required field f .*(missing|null)/ },
  { name: 'null in a required column (Avro)', format: 'avro', table: tableWithF({ kind: 'string' }, true), good: (i) => NULLABLE(`f${i}`, i), poison: () => ({ value: NULLABLE(null) }), stage: 'convert', error: /required field f \(id 2\) is null/ },
  { name: 'null in a required column (JSON)', format: 'json', table: tableWithF({ kind: 'string' }, true), good: (i) => json({ id: i, f: 'x' }), poison: () => ({ value: json({ id: 0, f: null }) }), stage: 'convert', error: /required field f \(id 2\) is null/ },
  {
    name: 'decimal overflow (Avro)',
    format: 'avro',
    table: tableWithF({ kind: 'decimal', precision: 5, scale: 2 }),
    good: (i) => DECIMAL(unscaled(BigInt(100 + i)), i),
    poison: () => ({ value: DECIMAL(unscaled(1_234_567_890n)) }),
    stage: 'convert',
    error: /field f \(id 2\): unscaled 1234567890 exceeds decimal\(5, 2\)/,
  },
  { name: 'decimal overflow (JSON)', format: 'json', table: tableWithF({ kind: 'decimal', precision: 5, scale: 2 }), good: (i) => json({ id: i, f: 1.25 }), poison: () => ({ value: json({ id: 0, f: 12345678.9 }) }), stage: 'convert', error: /field f .*decimal\(5, 2\)/ },
  {
    name: 'timestamp out of range (Avro)',
    format: 'avro',
    table: tableWithF({ kind: 'timestamptz' }),
    good: (i) => TS(1_700_000_000_000 + i, i),
    // 2^62 ms: a valid Avro long, but 2^62 × 1000 µs does not fit the column's 64 bits.
    poison: () => ({ value: Uint8Array.of(...TS(0).subarray(0, 6), ...avroLong(2n ** 62n)) }),
    stage: 'convert',
    error: /^field f \(id 2\): timestamptz out of range: 4611686018427387904000 µs since 1970-01-01 does not fit in 64 bits/,
  },
  { name: 'timestamp out of range (JSON)', format: 'json', table: tableWithF({ kind: 'timestamptz' }), good: (i) => json({ id: i, f: 1_700_000_000_000 + i }), poison: () => ({ value: json({ id: 0, f: 2 ** 62 }) }), stage: 'convert', error: /^field f \(id 2\): timestamptz out of range: \d+ µs since 1970-01-01 does not fit in 64 bits/ },
  { name: 'invalid UTF-8 in a string (Avro)', format: 'avro', good: (i) => AVRO_STRING(`s${i}`, i), poison: () => ({ value: avroRawString(Uint8Array.of(0x61, 0xff, 0xfe, 0x62)) }), stage: 'convert', error: /field f \(id 2\): string is not valid UTF-8/ },
  { name: 'invalid UTF-8 (JSON)', format: 'json', good: (i) => json({ id: i, f: `s${i}` }), poison: () => ({ value: Uint8Array.of(...utf8.encode('{"id":0,"f":"a'), 0xff, 0xfe, ...utf8.encode('b"}')) }), stage: 'deserialize', error: /^JSON record is not valid UTF-8/ },
  {
    name: 'a record over icefloe.errors.record.max-bytes',
    format: 'avro',
    config: { 'icefloe.errors.record.max-bytes': '512' },
    good: order,
    poison: () => ({ value: framed(ORDER_ID, ORDER, { id: 0, name: 'x'.repeat(600) }) }),
    stage: 'deserialize',
    error: /^the record's key, value and headers are \d+ bytes, over icefloe\.errors\.record\.max-bytes=512/,
  },
  { name: 'a recursive Avro schema (evolution off)', format: 'avro', good: order, poison: () => ({ value: framed(RECURSIVE_ID, RECURSIVE, { id: 0, name: 'a', next: { id: 1, name: 'b', next: null } }) }), stage: 'convert', error: /schema id \d+ .*recursive at next/ },
  { name: 'a recursive Avro schema (evolution on)', format: 'avro', evolve: true, good: order, poison: () => ({ value: framed(RECURSIVE_ID, RECURSIVE, { id: 0, name: 'a', next: null }) }), stage: 'convert', error: /schema id \d+ .*recursive at next/ },
  { name: 'a recursive Protobuf message (evolution on)', format: 'protobuf', evolve: true, good: protoOrder, poison: () => ({ value: protoNode() }), stage: 'convert', error: /^schema id \d+ cannot become a table schema: Protobuf message .*recursive/ },
  {
    name: '100 levels of nesting (evolution on: the table would need the column)',
    format: 'avro',
    evolve: true,
    good: order,
    poison: () => ({ value: deep(100).value(0) }),
    stage: 'convert',
    error: /^field (child\.){100}v is nested 101 levels deep; Icefloe writes at most 61 levels/,
  },
  {
    name: 'an incompatible type change, string → int (evolution off)',
    format: 'avro',
    good: order,
    poison: () => ({ value: framed(NAME_AS_INT_ID, NAME_AS_INT, { id: 0, name: 7 }) }),
    stage: 'convert',
    error: /schema id \d+ .*field name: Avro int cannot be written to Iceberg string/,
  },
  {
    name: 'an incompatible type change, string → int (evolution on)',
    format: 'avro',
    evolve: true,
    good: order,
    poison: () => ({ value: framed(NAME_AS_INT_ID, NAME_AS_INT, { id: 0, name: 7 }) }),
    stage: 'convert',
    error: /table db\.orders cannot take .*field name/,
  },
];

const GOOD_BEFORE = 5;
const GOOD_AFTER = 5;

function batch(c: Case): { records: RawRecord[]; poisonAt: bigint } {
  const records: RawRecord[] = [];
  let offset = 100n;
  const rec = (value: Uint8Array | null, key: Uint8Array | null): RawRecord => ({
    topic: TOPIC,
    partition: PARTITION,
    offset: offset++,
    timestamp: 1_700_000_000_000 + Number(offset),
    key,
    value,
    headers: [{ key: 'trace', value: utf8.encode(`t${offset}`) }, { key: 'empty', value: null }],
  });
  for (let i = 0; i < GOOD_BEFORE; i++) records.push(rec(c.good(i), utf8.encode(`k${i}`)));
  const p = c.poison();
  const poisonAt = offset;
  records.push(rec(p.value, p.key === undefined ? utf8.encode('poison') : p.key));
  for (let i = GOOD_BEFORE; i < GOOD_BEFORE + GOOD_AFTER; i++) records.push(rec(c.good(i), utf8.encode(`k${i}`)));
  return { records, poisonAt };
}

/** Writes one record; an unknown schema id is retried (as the task holds the partition) after the grace window. */
async function write(run: Run, r: RawRecord, c: Case): Promise<string> {
  for (let retries = 0; ; retries++) {
    try {
      return await run.writer.write(r);
    } catch (e) {
      if (!(e instanceof SchemaUnavailableError) || retries > 0) throw e;
      run.retries++;
      assert.ok(isRetriable(e.cause), 'a schema the registry cannot give yet is retried, never a bad record');
      assert.ok(c.confirmUnknown === true, `${c.name}: no registry wait expected, got ${e.message}`);
      run.advance(GRACE_MS);
    }
  }
}

for (const c of CASES) {
  test(`${c.name}, errors.tolerance=none: the task fails at the poison record with a DataError naming it, the reason and the stage`, async () => {
    const run = await start({ format: c.format, tolerance: 'none', ...(c.table === undefined ? {} : { table: c.table }), ...(c.evolve === undefined ? {} : { evolve: c.evolve }), ...(c.config === undefined ? {} : { config: c.config }) });
    const { records, poisonAt } = batch(c);
    let failure: unknown;
    for (const r of records) {
      try {
        assert.equal(await write(run, r, c), 'written', `${c.name}: good record ${r.offset}`);
      } catch (e) {
        failure = e;
        assert.equal(r.offset, poisonAt, `${c.name}: only the poison record fails (${String(e)})`);
        break;
      }
    }
    assert.ok(failure instanceof DataError, `${c.name}: a DataError, got ${failure instanceof Error ? failure.stack : String(failure)}`);
    assert.deepEqual(failure.record, { topic: TOPIC, partition: PARTITION, offset: poisonAt });
    assert.ok(failure.message.startsWith(`record ${TOPIC}/${PARTITION}@${poisonAt}: `), failure.message);
    assert.match(failure.reason, c.error);
    assert.equal(failure.stage, c.stage, `${c.name}: stage (${failure.message})`);
    assert.equal(run.retries, c.confirmUnknown === true ? 1 : 0, 'retried while the registry had not confirmed the id unknown');
  });

  test(`${c.name}, errors.tolerance=all: every good record is written and the poison record alone is dead-lettered (topic and table)`, async () => {
    const run = await start({ format: c.format, tolerance: 'all', ...(c.table === undefined ? {} : { table: c.table }), ...(c.evolve === undefined ? {} : { evolve: c.evolve }), ...(c.config === undefined ? {} : { config: c.config }) });
    const { records, poisonAt } = batch(c);
    const poison = records.find((r) => r.offset === poisonAt) as RawRecord;
    for (const r of records) {
      assert.equal(await write(run, r, c), r.offset === poisonAt ? 'skipped' : 'written', `${c.name}: record ${r.offset}`);
    }
    await run.finish();
    assert.equal(run.retries, c.confirmUnknown === true ? 1 : 0, 'retried while the registry had not confirmed the id unknown');
    const m = run.writer.metrics;
    assert.deepEqual(
      { written: m.recordsWritten, deadLettered: m.deadLettered, errorsSkipped: m.errorsSkipped, tombstones: m.tombstonesSkipped },
      { written: GOOD_BEFORE + GOOD_AFTER, deadLettered: 1, errorsSkipped: 0, tombstones: 0 },
    );

    // The table: every good record, once, by Kafka coordinates.
    const rows = await rowsOf(run, TABLE);
    const good = records.filter((r) => r.offset !== poisonAt).map((r) => `${r.partition}/${r.offset}`);
    assert.deepEqual(rows.map((r) => `${String(r['_kafka_metadata_partition'])}/${String(r['_kafka_metadata_offset'])}`).sort(), good.sort());

    // The dead-letter topic: the original record, plus Connect's context headers.
    assert.equal(run.letters.length, 1, 'one dead-letter topic record');
    const letter = run.letters[0] as OutgoingRecord;
    assert.equal(letter.topic, DLQ_TOPIC);
    assert.deepEqual(letter.key, poison.key);
    assert.deepEqual(letter.value, poison.value);
    assert.equal(letter.timestamp, poison.timestamp);
    const headers = letter.headers ?? [];
    assert.deepEqual(headers.slice(0, poison.headers.length), poison.headers, 'the original headers first, as they were');
    const h = new Map(headers.slice(poison.headers.length).map((x) => [x.key, text(x.value)]));
    assert.equal(h.get(DLQ_HEADERS.topic), TOPIC);
    assert.equal(h.get(DLQ_HEADERS.partition), String(PARTITION));
    assert.equal(h.get(DLQ_HEADERS.offset), String(poisonAt));
    assert.equal(h.get(DLQ_HEADERS.stage), c.stage === 'deserialize' ? 'VALUE_CONVERTER' : 'TASK_PUT');
    assert.equal(h.get(DLQ_HEADERS.icefloeStage), c.stage);
    assert.equal(h.get(DLQ_HEADERS.exceptionClass), 'io.icefloe.errors.DataError');
    assert.match(h.get(DLQ_HEADERS.message) ?? '', c.error);
    assert.ok((h.get(DLQ_HEADERS.stackTrace) ?? '').includes('DataError'), 'a stack trace');
    assert.equal(h.get(DLQ_HEADERS.connector), 'orders-sink');

    // The dead-letter table: one row saying where the record came from and why.
    const dead = await rowsOf(run, DLQ_TABLE);
    assert.equal(dead.length, 1, 'one dead-letter table row');
    const row = dead[0] as Record<string, unknown>;
    assert.deepEqual({ topic: text(row['topic'] as Uint8Array) ?? row['topic'], partition: row['partition'], offset: BigInt(row['offset'] as bigint), stage: text(row['stage'] as Uint8Array) ?? row['stage'] }, { topic: TOPIC, partition: PARTITION, offset: poisonAt, stage: c.stage });
    assert.match(String(text(row['error_message'] as Uint8Array) ?? row['error_message']), c.error);
    assert.deepEqual(row['value'] === null || row['value'] === undefined ? null : Uint8Array.from(row['value'] as Uint8Array), poison.value);
    assert.deepEqual(Uint8Array.from(row['key'] as Uint8Array), poison.key);

    // The operator's log line: the record's coordinates, the stage and the reason.
    const lines = run.log.filter((l) => l.msg.startsWith('record sent to the dead-letter queue'));
    assert.equal(lines.length, 1);
    assert.deepEqual([lines[0]?.fields['offset'], lines[0]?.fields['stage']], [String(poisonAt), c.stage]);
  });
}

test('a tombstone (null value) is not a bad record: skipped and counted in both modes, never dead-lettered', async () => {
  for (const tolerance of ['none', 'all'] as const) {
    const run = await start({ format: 'avro', tolerance });
    const c: Case = { name: 'tombstone', format: 'avro', good: order, poison: () => ({ value: null }), stage: 'deserialize', error: /./ };
    const { records, poisonAt } = batch(c);
    for (const r of records) assert.equal(await write(run, r, c), r.offset === poisonAt ? 'skipped' : 'written', `${tolerance}: ${r.offset}`);
    await run.finish();
    const m = run.writer.metrics;
    assert.deepEqual({ tombstones: m.tombstonesSkipped, deadLettered: m.deadLettered, errorsSkipped: m.errorsSkipped, written: m.recordsWritten }, { tombstones: 1, deadLettered: 0, errorsSkipped: 0, written: 10 }, tolerance);
    assert.equal(run.letters.length, 0, 'no dead-letter topic record');
    assert.equal(run.cycles.filter((t) => t.table.name === 'orders_dlq').length, 0, 'no dead-letter table row');
    assert.equal((await rowsOf(run, TABLE)).length, 10);
  }
});

test('nesting: 60 levels of records are written and read back whole; 100 levels refuse to create a table no file of which could be flushed', async () => {
  const deepest = deep(60);
  const run = await start({ format: 'avro', tolerance: 'none' });
  const c: Case = { name: 'deep', format: 'avro', good: (i) => deepest.value(i), poison: () => ({ value: deepest.value(99) }), stage: 'convert', error: /./ };
  for (const r of batch(c).records) assert.equal(await write(run, r, c), 'written');
  await run.finish();
  const rows = await rowsOf(run, TABLE);
  assert.equal(rows.length, GOOD_BEFORE + 1 + GOOD_AFTER);
  let node = rows.find((r) => r['v'] === 99n) as Record<string, unknown>;
  assert.ok(node !== undefined, 'the middle record');
  for (let d = 1; d <= 60; d++) node = node['child'] as Record<string, unknown>;
  assert.equal(node['v'], 99n + 60n);

  // The first record makes the table (auto-create): one too deep is refused before the table exists.
  const refused = await start({ format: 'avro', tolerance: 'none' });
  const [first] = batch({ ...c, good: () => deep(100).value(0) }).records;
  await assert.rejects(Promise.resolve(refused.writer.write(first as RawRecord)), (e: unknown) => e instanceof DataError && e.stage === 'convert' && /^field (child\.){100}v is nested 101 levels deep; Icefloe writes at most 61 levels/.test(e.reason));
  assert.equal(await refused.catalog.tableExists(parseIdentifier(TABLE)), false);
});

test('narrowing with evolution on is no bad record: the table widens int to long and takes the record', async () => {
  const run = await start({ format: 'avro', tolerance: 'none', evolve: true, table: tableWithF({ kind: 'int' }) });
  const c: Case = { name: 'widen', format: 'avro', good: (i) => INT(i, i), poison: () => ({ value: LONG(2 ** 40) }), stage: 'convert', error: /./ };
  for (const r of batch(c).records) assert.equal(await write(run, r, c), 'written');
  await run.finish();
  const f = currentSchema((await run.catalog.loadTable(parseIdentifier(TABLE))).metadata).fields.find((x) => x.name === 'f');
  assert.deepEqual(f?.type, { kind: 'long' });
  assert.equal((await rowsOf(run, TABLE)).length, GOOD_BEFORE + 1 + GOOD_AFTER);
});

test('the writer nesting limit is exact: 61 levels of lists and maps flush, 62 do not (a parquet-wasm upgrade that moves it fails here)', async () => {
  // A list level is 1 Arrow field (its element is the next list); a map level 2 (its entries struct, the value).
  const lists = (levels: number): NestedField => {
    let id = 1000;
    let type: IcebergType = { kind: 'long' };
    for (let l = 0; l < levels; l++) type = { kind: 'list', elementId: id++, element: type, elementRequired: false };
    return optional(1, 'l', type);
  };
  const maps = (levels: number): NestedField => {
    let id = 1000;
    let type: IcebergType = { kind: 'long' };
    for (let l = 0; l < levels; l++) type = { kind: 'map', keyId: id++, key: { kind: 'string' }, valueId: id++, value: type, valueRequired: false };
    return optional(1, 'm', type);
  };
  const flushes = async (field: NestedField, extra: number): Promise<boolean> => {
    // `extra` struct levels on top make the total depth exact.
    let f = field;
    for (let s = 0; s < extra; s++) f = optional(2000 + s, `s${s}`, { kind: 'struct', fields: [f] });
    const schema: Schema = { schemaId: 0, fields: [f] };
    const h = harness(schema);
    appendRow(h.writer.appender, schema.fields, {});
    try {
      await h.writer.complete();
      return true;
    } catch (e) {
      assert.match(String(e), /DepthLimitReached/);
      return false;
    }
  };
  // 60 list levels: the field and 60 elements, 61 deep; one struct more is 62.
  assert.equal(deepestField({ schemaId: 0, fields: [lists(60)] }).depth, 61);
  assert.equal(await flushes(lists(60), 0), true);
  assert.equal(await flushes(lists(60), 1), false);
  // 30 map levels: the field and 30 × (entries, value), 61 deep.
  assert.equal(deepestField({ schemaId: 0, fields: [maps(30)] }).depth, 61);
  assert.equal(await flushes(maps(30), 0), true);
  assert.equal(await flushes(maps(30), 1), false);
  assert.equal(MAX_FIELD_DEPTH, 61);
});

test('a recursive Protobuf message into a table without its recursive field (evolution off) is written without it, as any field the table lacks', async () => {
  const run = await start({ format: 'protobuf', tolerance: 'none' });
  const c: Case = { name: 'proto', format: 'protobuf', good: protoOrder, poison: () => ({ value: protoNode() }), stage: 'convert', error: /./ };
  for (const r of batch(c).records) assert.equal(await write(run, r, c), 'written');
  await run.finish();
  const rows = await rowsOf(run, TABLE);
  assert.equal(rows.length, GOOD_BEFORE + 1 + GOOD_AFTER);
  assert.deepEqual(Object.keys(rows[0] ?? {}).sort(), ['_kafka_metadata_offset', '_kafka_metadata_partition', 'id', 'name']);
});
