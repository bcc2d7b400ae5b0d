import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoSuchNamespaceError, parseIdentifier } from '../../../src/commit/port.ts';
import type { LoadedTable, TableIdentifier } from '../../../src/commit/port.ts';
import { DataError } from '../../../src/core/errors.ts';
import type { RawRecord } from '../../../src/consume/port.ts';
import { SqlCatalog } from '../../../src/commit/sql/catalog.ts';
import { SqliteDriver } from '../../../src/commit/sql/sqlite.ts';
import { parseConnectorConfig } from '../../../src/config/connector-config.ts';
import type { ConnectorConfig } from '../../../src/config/connector-config.ts';
import { valueFormat } from '../../../src/decode/value-format.ts';
import type { ValueFormat } from '../../../src/decode/value-format.ts';
import { currentSchema } from '../../../src/iceberg/metadata.ts';
import { SinkWriter } from '../../../src/sink/sink-writer.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { recordingLogger } from '../runtime/rig.ts';
import { readBack } from '../write/helpers.ts';

const utf8 = new TextEncoder();

function connector(extra: Record<string, string>): ConnectorConfig {
  return parseConnectorConfig({
    name: 'orders-sink',
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    topics: 'orders',
    'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'value.converter.schemas.enable': 'false',
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'iceberg.tables.auto-create-enabled': 'true',
    'iceberg.control.topic': 'control-orders',
    'iceberg.catalog.type': 'sql',
    'iceberg.catalog.uri': 'jdbc:sqlite::memory:',
    'iceberg.catalog.warehouse': 'memory://warehouse',
    ...extra,
  });
}

/** The JSON format, counting every decode its decoders make (probe projections and full decodes alike). */
function countingFormat(inner: ValueFormat): { format: ValueFormat; decodes: () => number } {
  let n = 0;
  const format: ValueFormat = {
    schemaKey: (m) => inner.schemaKey(m),
    sourceSchema: (m) => inner.sourceSchema(m),
    decoderFor: (t) => {
      const d = inner.decoderFor(t);
      return { prepare: (m) => d.prepare(m), decode: (m, s) => (n++, d.decode(m, s)) };
    },
    inferredSchemas: inner.inferredSchemas === true,
  };
  return { format, decodes: () => n };
}

async function writerFor(extra: Record<string, string>): Promise<{ writer: SinkWriter; decodes: () => number; store: MemoryObjectStore; catalog: SqlCatalog }> {
  const store = new MemoryObjectStore();
  const catalog = new SqlCatalog({ name: 'unit', driver: new SqliteDriver({ path: ':memory:' }), store, warehouse: 'memory://warehouse' });
  await catalog.createNamespace(['db']);
  const c = connector(extra);
  const counted = countingFormat(valueFormat(c.valueConverter as NonNullable<ConnectorConfig['valueConverter']>, undefined, { caseInsensitive: false, forceOptional: true }));
  const writer = new SinkWriter({ connector: c, taskId: 0, catalog, store, format: counted.format, keyConverter: 'string', log: recordingLogger([]), endCycle: () => Promise.resolve(true) });
  return { writer, decodes: counted.decodes, store, catalog };
}

let offset = 0n;
function record(value: object): RawRecord {
  return { topic: 'orders', partition: 0, offset: offset++, timestamp: 1_700_000_000_000, key: null, value: utf8.encode(JSON.stringify(value)), headers: [] };
}

const TENANTS = ['acme', 'globex', 'both'];
const REGIONS = ['eu', 'us', 'apac'];
const order = (i: number): object => ({ id: i, region: REGIONS[i % 3], meta: { tenant: TENANTS[i % TENANTS.length] } });

test('a routed record is probed once for its route and every target table\'s partition, then decoded once per table', async () => {
  const { writer, decodes, store, catalog } = await writerFor({
    'iceberg.tables': 'db.a,db.b',
    'iceberg.tables.route-field': 'meta.tenant',
    'iceberg.table.db.a.route-regex': 'acme|both',
    'iceberg.table.db.b.route-regex': 'globex|both',
    'iceberg.table.db.a.partition-by': 'region',
    'iceberg.table.db.b.partition-by': 'bucket(id, 4), region',
  });
  // Warm-up: the first records open (auto-create) both tables; that plans the probe again once per table.
  for (let i = 0; i < 3; i++) assert.equal(await writer.write(record(order(i))), 'written');
  const before = decodes();
  const N = 300;
  let targets = 0;
  for (let i = 3; i < 3 + N; i++) {
    const outcome = writer.write(record(order(i)));
    assert.equal(outcome, 'written'); // the steady state is synchronous: nothing to fetch, no table to open
    targets += TENANTS[i % 3] === 'both' ? 2 : 1;
  }
  assert.equal(decodes() - before, N + targets, 'one probe decode per record + one full decode per target table');

  // The partition values are the records' own: every row of a file has the file's region.
  const cycle = await writer.complete();
  for (const t of cycle) {
    const schema = currentSchema((await catalog.loadTable(parseIdentifier(`${t.table.namespace.join('.')}.${t.table.name}`))).metadata);
    const regionAt = t.table.name === 'a' ? 0 : 1;
    for (const f of t.files) {
      const { rows } = await readBack(await store.get(f.filePath), schema);
      assert.ok(rows.length > 0);
      for (const r of rows) assert.equal(r['region'], f.partition[regionAt], `${t.table.name}: ${f.filePath}`);
      if (t.table.name === 'b') assert.ok(typeof f.partition[0] === 'number' && f.partition[0] >= 0 && f.partition[0] < 4);
    }
  }
  assert.deepEqual(cycle.map((t) => t.table.name).sort(), ['a', 'b']);
});

test('no route field and no partitioned table: no probe at all', async () => {
  const { writer, decodes } = await writerFor({ 'iceberg.tables': 'db.plain' });
  await writer.write(record(order(0)));
  const before = decodes();
  for (let i = 1; i <= 50; i++) assert.equal(writer.write(record(order(i))), 'written');
  assert.equal(decodes() - before, 50);
});

/** A catalog that answers a table in a missing namespace with NoSuchNamespace, as the REST spec allows. */
class NamespaceFirstCatalog extends SqlCatalog {
  override async loadTable(id: TableIdentifier): Promise<LoadedTable> {
    if (!(await this.namespaceExists(id.namespace))) throw new NoSuchNamespaceError(id.namespace);
    return super.loadTable(id);
  }
}

test('a table whose namespace is missing: auto-create makes both; with auto-create off the failure says so and names the fix first', async () => {
  const writerWith = (extra: Record<string, string>): { writer: SinkWriter; catalog: SqlCatalog } => {
    const store = new MemoryObjectStore();
    const catalog = new NamespaceFirstCatalog({ name: 'unit', driver: new SqliteDriver({ path: ':memory:' }), store, warehouse: 'memory://warehouse' });
    const c = connector({ 'iceberg.tables': 'sales.orders', ...extra });
    const format = valueFormat(c.valueConverter as NonNullable<ConnectorConfig['valueConverter']>, undefined, { caseInsensitive: false, forceOptional: true });
    return { writer: new SinkWriter({ connector: c, taskId: 0, catalog, store, format, keyConverter: 'string', log: recordingLogger([]), endCycle: () => Promise.resolve(true) }), catalog };
  };
  const on = writerWith({});
  assert.equal(await on.writer.write(record({ id: 1 })), 'written');
  assert.ok(await on.catalog.namespaceExists(['sales']));
  assert.ok(await on.catalog.tableExists(parseIdentifier('sales.orders')));

  const off = writerWith({ 'iceberg.tables.auto-create-enabled': 'false' });
  const r = record({ id: 2 });
  await assert.rejects(async () => off.writer.write(r), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.match(e.message, new RegExp(`^record orders/0@${r.offset}: cannot be written: table "sales\\.orders" does not exist; its namespace sales does not exist either, and iceberg\\.tables\\.auto-create-enabled is false\\. Fix: set iceberg\\.tables\\.auto-create-enabled=true \\(the connector then creates the namespace and the table`));
    return true;
  });
});

test('N7: a cycle whose upload fails part-way leaves no file behind: abort() returns what the earlier tables and writers already uploaded', async () => {
  let failing = true;
  const store = new MemoryObjectStore({
    beforeOperation: (op, location) => {
      // db.b's last writer (region apac) cannot upload: db.a's files and db.b's other writers' are stored by then.
      if (failing && op === 'put' && location.endsWith('.parquet') && location.includes('/b/') && location.includes('region=apac')) throw new Error('S3 unreachable (injected)');
    },
  });
  const catalog = new SqlCatalog({ name: 'unit', driver: new SqliteDriver({ path: ':memory:' }), store, warehouse: 'memory://warehouse' });
  await catalog.createNamespace(['db']);
  const c = connector({ 'iceberg.tables': 'db.a,db.b', 'iceberg.tables.default-partition-by': 'region' });
  const format = valueFormat(c.valueConverter as NonNullable<ConnectorConfig['valueConverter']>, undefined, { caseInsensitive: false, forceOptional: true });
  const writer = new SinkWriter({ connector: c, taskId: 0, catalog, store, format, keyConverter: 'string', log: recordingLogger([]), endCycle: () => Promise.resolve(true) });
  for (let i = 0; i < 30; i++) assert.equal(await writer.write(record(order(i))), 'written');
  const dataFiles = async (): Promise<string[]> => {
    const out: string[] = [];
    for await (const o of store.list('memory://warehouse')) if (o.location.endsWith('.parquet')) out.push(o.location);
    return out.sort();
  };
  const failure = await writer.complete().then(() => undefined, (e: unknown) => e);
  assert.ok(failure instanceof Error, 'the cycle fails');
  const uploaded = await dataFiles();
  assert.equal(uploaded.length, 5, `db.a's three files and db.b's eu and us files are in the store: ${uploaded.join(', ')}`);
  const orphans = await writer.abort(failure);
  assert.deepEqual([...orphans].sort(), uploaded, 'every file already uploaded is handed back, for the channel to delete');
  assert.deepEqual(await writer.abort(failure), [], 'once');
  // The next cycle starts clean: the records written again land in files of their own.
  failing = false;
  for (let i = 0; i < 3; i++) assert.equal(await writer.write(record(order(i))), 'written');
  const cycle = await writer.complete();
  assert.equal(cycle.flatMap((t) => t.files).length, 6);
});
