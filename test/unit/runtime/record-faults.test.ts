/**
 * Records that cannot be written as they are, through the real task loop on memory fakes (Avro framed
 * for a fake schema registry, or schemaless JSON): malformed values follow errors.tolerance whatever is
 * wrong with their bytes and name their coordinates; every skip is counted once however often a cycle is
 * read again; a record that fails for one of its tables is counted per table; and a record whose schema
 * the registry cannot give yet holds back only its partition, with a growing back-off. Every test ends
 * with the table holding each record that should be there exactly once, by Kafka coordinates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import avro from 'avsc';
import { DataError, RetriableError } from '../../../src/core/errors.ts';
import type { RegisteredSchema, SchemaResolver } from '../../../src/decode/registry-port.ts';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { createTable } from '../../../src/commit/table-ops.ts';
import type { Schema } from '../../../src/iceberg/types.ts';
import { currentSchema } from '../../../src/iceberg/metadata.ts';
import { readBack } from '../write/helpers.ts';
import { expected, logged, Rig, sortCoordinates, TABLE, TOPIC, until } from './rig.ts';

const ORDER = { type: 'record', name: 'Order', fields: [{ name: 'n', type: 'long' }] } as const;
const orderType = avro.Type.forSchema(ORDER as unknown as avro.Schema);

/** A registry that knows only what was `register`ed (an unknown id is retriable, as within the grace period). */
class FakeRegistry implements SchemaResolver {
  readonly known = new Map<number, RegisteredSchema>();
  /** When each id was asked for (ms). */
  readonly asked: { id: number; at: number }[] = [];
  register(id: number): void {
    this.known.set(id, { id, type: 'AVRO', schema: JSON.stringify(ORDER) });
  }
  /** After this many asks for an unknown id, it is confirmed unknown (the adapter's grace period is over). */
  graceAsks = Infinity;
  byId(id: number): Promise<RegisteredSchema> {
    this.asked.push({ id, at: Date.now() });
    const s = this.known.get(id);
    if (s !== undefined) return Promise.resolve(s);
    const asks = this.asked.filter((a) => a.id === id).length;
    if (asks > this.graceAsks) return Promise.reject(new DataError(`schema id ${id} is unknown to the registry (confirmed, test)`));
    return Promise.reject(new RetriableError(`schema id ${id} is unknown to the registry (test)`));
  }
}

/** A Confluent-framed Avro Order with schema id `id`. */
function framed(id: number, n: number): Uint8Array {
  const body = orderType.toBuffer({ n });
  const out = new Uint8Array(5 + body.length);
  new DataView(out.buffer).setUint32(1, id);
  out.set(body, 5);
  return out;
}

const AVRO = { 'value.converter': 'io.confluent.connect.avro.AvroConverter', 'value.converter.schema.registry.url': 'http://registry.invalid:8081' };

/** The four kinds of value a registry converter cannot read: text, empty, 2 bytes, first byte 1. */
const POISON: readonly Uint8Array[] = [new TextEncoder().encode('plain text, not framed'), new Uint8Array(0), new Uint8Array([0, 0]), new Uint8Array([1, 0, 0, 0, 1, 2])];

async function avroRig(config: Record<string, string>, partitions = 2): Promise<{ rig: Rig; registry: FakeRegistry }> {
  const registry = new FakeRegistry();
  registry.register(1);
  const rig = await new Rig({ partitions, resolver: registry, config: { ...AVRO, ...config } }).init();
  return { rig, registry };
}

/** Per partition: valid records with poison ones between them; returns the offsets of each kind. */
function produceInterleaved(rig: Rig, partitions: number): { valid: Record<number, bigint[]>; poison: Record<number, bigint[]> } {
  const valid: Record<number, bigint[]> = {};
  const poison: Record<number, bigint[]> = {};
  let n = 0;
  for (let p = 0; p < partitions; p++) {
    valid[p] = [];
    poison[p] = [];
    for (let i = 0; i < 5; i++) {
      const good = rig.kafka.produce(TOPIC, p, [{ key: `k${n}`, value: framed(1, n++) }, { key: `k${n}`, value: framed(1, n++) }]);
      (valid[p] as bigint[]).push(...good);
      if (i < POISON.length) (poison[p] as bigint[]).push(...rig.kafka.produce(TOPIC, p, [{ key: `bad${n}`, value: POISON[i] as Uint8Array }]));
    }
  }
  return { valid, poison };
}

async function commitAll(rig: Rig, table = TABLE): Promise<string[]> {
  await rig.committer().round();
  return sortCoordinates(await rig.tableCoordinates(table));
}

test('errors.tolerance=all: values that are not Confluent-framed (text, empty, 2 bytes, first byte 1) are skipped, counted and logged once each', async (t) => {
  const { rig } = await avroRig({ 'errors.tolerance': 'all', 'errors.log.enable': 'true' });
  t.after(() => rig.close());
  const { valid, poison } = produceInterleaved(rig, 2);
  const task = rig.startTask(0);
  await until('offsets committed', () => rig.committedOffset(0) === 14n && rig.committedOffset(1) === 14n);
  await task.stop();
  assert.equal(task.task.state, 'STOPPED');
  assert.equal(task.task.metrics.errorsSkipped, 8);
  const skipped = logged(rig, 'record skipped (errors.tolerance=all)').map((f) => `${String(f['partition'])}/${String(f['offset'])}`);
  assert.deepEqual(sortCoordinates(skipped), expected(poison), 'each poison record logged once, with its coordinates');
  const reasons = logged(rig, 'record skipped (errors.tolerance=all)').map((f) => String(f['error']));
  assert.ok(reasons.some((e) => /first byte is 0x70/.test(e)) && reasons.some((e) => /empty message/.test(e)));
  assert.ok(reasons.some((e) => /truncated: 2 bytes/.test(e)) && reasons.some((e) => /first byte is 0x01/.test(e)));
  assert.deepEqual(await commitAll(rig), expected(valid));
});

test('errors.tolerance=none: the task fails at the first value that is not framed, naming its coordinates and what is wrong', async (t) => {
  for (const [i, bad] of POISON.entries()) {
    const { rig } = await avroRig({});
    t.after(() => rig.close());
    const good = rig.kafka.produce(TOPIC, 1, [{ value: framed(1, 1) }, { value: framed(1, 2) }]);
    const [at] = rig.kafka.produce(TOPIC, 1, [{ value: bad }, { value: framed(1, 3) }]);
    const task = rig.startTask(0);
    const error = await task.ended;
    assert.equal(task.task.state, 'FAILED', `poison kind ${i}`);
    assert.ok(error instanceof DataError, `poison kind ${i}: a DataError, got ${String(error)}`);
    assert.match(error.message, new RegExp(`^record ${TOPIC}/1@${String(at)}: (not a Confluent-framed message|empty message|Confluent frame truncated)`));
    assert.deepEqual(error.context['offset'], String(at));
    assert.equal(rig.committedOffset(1), null, 'nothing past the failure is committed');
    assert.equal(good.length, 2);
  }
});

test('a skip is counted and logged once however often its cycle is read again (errors, tombstones, unrouted records, skipped table copies)', async (t) => {
  const rig = await new Rig({
    partitions: 1,
    config: {
      'iceberg.tables': `${TABLE},db.missing`,
      'iceberg.tables.auto-create-enabled': 'false',
      'iceberg.tables.route-field': 'r',
      [`iceberg.table.${TABLE}.route-regex`]: 'a|both',
      'iceberg.table.db.missing.route-regex': 'both',
      'icefloe.tables.unrouted': 'skip',
      'errors.tolerance': 'all',
      'errors.log.enable': 'true',
      'icefloe.commit.max-records': '5',
    },
  }).init();
  t.after(() => rig.close());
  const optional = (id: number, name: string, kind: 'string' | 'int' | 'long') => ({ id, name, required: false, type: { kind } }) as const;
  await createTable({ catalog: rig.catalog, store: rig.store }, parseIdentifier(TABLE), {
    schema: { schemaId: 0, fields: [optional(1, 'n', 'long'), optional(2, 'r', 'string'), optional(3, '_kafka_metadata_partition', 'int'), optional(4, '_kafka_metadata_offset', 'long')] },
  });
  const kinds = ['a', 'both', 'none', 'tombstone', 'not json'] as const;
  const written: bigint[] = [];
  for (let i = 0; i < 20; i++) {
    const kind = kinds[i % kinds.length] as (typeof kinds)[number];
    const value = kind === 'tombstone' ? null : kind === 'not json' ? 'not json' : JSON.stringify({ n: i, r: kind });
    const [offset] = rig.kafka.produce(TOPIC, 0, [{ key: `k${i}`, value }]);
    if (kind === 'a' || kind === 'both') written.push(offset as bigint);
  }
  const task = rig.startTask(0);
  // The first two cycles fail at commit: everything is read three times.
  task.producer.failNext('commitTransaction', new RetriableError('broker away (injected)'));
  task.producer.failNext('commitTransaction', new RetriableError('broker away again (injected)'));
  await until('read three times', () => task.task.metrics.recordsConsumed >= 60);
  await task.stop();
  assert.equal(task.task.metrics.cyclesAborted, 2);
  const m = task.task.metrics;
  assert.deepEqual(
    { errorsSkipped: m.errorsSkipped, tombstonesSkipped: m.tombstonesSkipped, unroutedSkipped: m.unroutedSkipped, tableCopiesSkipped: m.tableCopiesSkipped },
    { errorsSkipped: 4, tombstonesSkipped: 4, unroutedSkipped: 4, tableCopiesSkipped: 4 },
    'each skipped record counted once, not once per read',
  );
  assert.equal(logged(rig, 'record skipped (errors.tolerance=all)').length, 4, 'and logged once');
  assert.deepEqual(await commitAll(rig), expected({ 0: written }));
});

/** db.wide: n long; db.narrow: n int — a value beyond 2^31 fits the first only. */
async function twoTables(rig: Rig): Promise<void> {
  const schema = (kind: 'int' | 'long'): Schema => ({
    schemaId: 0,
    fields: [
      { id: 1, name: 'n', required: false, type: { kind } },
      { id: 2, name: '_kafka_metadata_partition', required: false, type: { kind: 'int' } },
      { id: 3, name: '_kafka_metadata_offset', required: false, type: { kind: 'long' } },
    ],
  });
  await createTable({ catalog: rig.catalog, store: rig.store }, parseIdentifier('db.wide'), { schema: schema('long') });
  await createTable({ catalog: rig.catalog, store: rig.store }, parseIdentifier('db.narrow'), { schema: schema('int') });
}

const TWO_TABLES = { 'iceberg.tables': 'db.wide,db.narrow', 'iceberg.tables.auto-create-enabled': 'false' };

test('errors.tolerance=all, two tables: a record that fails for one table is in the other, and the failed copy is counted and logged with the table, once', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { ...TWO_TABLES, 'errors.tolerance': 'all', 'errors.log.enable': 'true', 'icefloe.commit.max-records': '5' } }).init();
  t.after(() => rig.close());
  await twoTables(rig);
  const all: bigint[] = [];
  const small: bigint[] = [];
  const big: bigint[] = [];
  for (let i = 0; i < 12; i++) {
    const n = i % 3 === 0 ? 2 ** 40 + i : i;
    const [offset] = rig.kafka.produce(TOPIC, 0, [{ value: JSON.stringify({ n }) }]);
    all.push(offset as bigint);
    (n > 2 ** 31 ? big : small).push(offset as bigint);
  }
  const [neither] = rig.kafka.produce(TOPIC, 0, [{ value: JSON.stringify({ n: 'not a number' }) }]);
  const task = rig.startTask(0);
  task.producer.failNext('commitTransaction', new RetriableError('broker away (injected)'));
  await until('read twice', () => task.task.metrics.recordsConsumed >= 26);
  await task.stop();
  const m = task.task.metrics;
  assert.equal(m.tableCopiesFailed, big.length, 'one failed copy per record too wide for db.narrow, counted once');
  assert.equal(m.errorsSkipped, 1, 'the record that fits neither table is skipped as a whole');
  const lines = logged(rig, 'record not written to one of its tables (errors.tolerance=all); its other tables have it');
  assert.deepEqual(lines.map((f) => `${String(f['table'])} 0/${String(f['offset'])}`), big.map((o) => `db.narrow 0/${o}`));
  assert.deepEqual(await commitAll(rig, 'db.wide'), expected({ 0: all }), 'db.wide holds every record that fits it');
  assert.deepEqual(sortCoordinates(await rig.tableCoordinates('db.narrow')), expected({ 0: small }), 'db.narrow holds the ones that fit it');
  assert.equal(neither, 12n);
});

test('errors.tolerance=all with a dead-letter table, three tables: each failed copy of a record is one dead-letter row naming its table, the first ones too', async (t) => {
  // db.narrow and db.narrow2 both refuse a value beyond 2^31: the first such record dead-letters two copies
  // at once, while the dead-letter table is still being opened (both must land in the one sink).
  const rig = await new Rig({ partitions: 1, config: { 'iceberg.tables': 'db.wide,db.narrow,db.narrow2', 'iceberg.tables.auto-create-enabled': 'false', 'errors.tolerance': 'all', 'icefloe.errors.deadletterqueue.table.name': 'db.dlq' } }).init();
  t.after(() => rig.close());
  await twoTables(rig);
  await createTable({ catalog: rig.catalog, store: rig.store }, parseIdentifier('db.narrow2'), { schema: (await rig.catalog.loadTable(parseIdentifier('db.narrow'))).metadata.schemas[0] as Schema });
  const big: bigint[] = [];
  for (let i = 0; i < 6; i++) {
    const n = i % 2 === 0 ? 2 ** 40 + i : i;
    const [offset] = rig.kafka.produce(TOPIC, 0, [{ value: JSON.stringify({ n }) }]);
    if (n > 2 ** 31) big.push(offset as bigint);
  }
  const task = rig.startTask(0);
  await until('read', () => task.task.metrics.recordsConsumed >= 6);
  await task.stop();
  assert.equal(task.task.metrics.deadLettered, big.length * 2, 'one dead letter per failed copy');
  await rig.committer().round();
  const dlq = parseIdentifier('db.dlq');
  const schema = currentSchema((await rig.catalog.loadTable(dlq)).metadata);
  const rows: string[] = [];
  for (const path of await rig.tableFiles('db.dlq')) for (const r of (await readBack(await rig.store.get(path), schema)).rows) rows.push(`${String(r['table'])} ${String(r['offset'])}`);
  assert.deepEqual(rows.sort(), big.flatMap((o) => [`db.narrow ${o}`, `db.narrow2 ${o}`]).sort());
});

test('errors.tolerance=none, two tables: a record that fails for one table fails the task naming the record and the table; nothing of it is committed', async (t) => {
  const rig = await new Rig({ partitions: 1, config: { ...TWO_TABLES, 'icefloe.commit.max-records': '1000000' } }).init();
  t.after(() => rig.close());
  await twoTables(rig);
  rig.kafka.produce(TOPIC, 0, [{ value: JSON.stringify({ n: 1 }) }, { value: JSON.stringify({ n: 2 ** 40 }) }]);
  const task = rig.startTask(0);
  const error = await task.ended;
  assert.ok(error instanceof DataError);
  assert.match(error.message, new RegExp(`^record ${TOPIC}/0@1: table db\\.narrow: field n`));
  assert.equal(rig.committedOffset(0), null);
  assert.equal(rig.committedAnnouncements(), 0, 'the copy already in db.wide was never announced');
});

/** The logged waits of a task's holds on a partition, in order. */
function waits(rig: Rig, task: number, partition: number): { tries: number; retryInMs: number; offset: string }[] {
  return logged(rig, "partition paused: a record's schema cannot be fetched yet; the task's other partitions go on")
    .filter((f) => f['task'] === task && f['partition'] === partition)
    .map((f) => ({ tries: Number(f['tries']), retryInMs: Number(f['retryInMs']), offset: String(f['offset']) }));
}

const WAIT = { initialDelayMs: 20, maxDelayMs: 400 };

test('a schema the registry does not know yet holds back only its partition, with a growing back-off; the rest is committed meanwhile', async (t) => {
  const { rig, registry } = await avroRig({ 'icefloe.commit.max-records': '10' });
  t.after(() => rig.close());
  const p0 = rig.kafka.produce(TOPIC, 0, Array.from({ length: 12 }, (_, i) => ({ value: framed(1, i) })));
  const p1 = rig.kafka.produce(TOPIC, 1, [...[0, 1, 2].map((i) => ({ value: framed(1, i) })), ...[3, 4, 5, 6, 7].map((i) => ({ value: framed(2, i) })), { value: framed(1, 8) }]);
  const task = rig.startTask(0, { schemaWaitBackoff: WAIT, random: () => 0.5 });
  await until('partition 0 and the head of partition 1 committed', () => rig.committedOffset(0) === 12n && rig.committedOffset(1) === 3n);
  await until('five waits', () => waits(rig, 0, 1).length >= 5);
  // The other partition goes on: new records are handled and committed while partition 1 waits.
  const more = rig.kafka.produce(TOPIC, 0, Array.from({ length: 10 }, (_, i) => ({ value: framed(1, 100 + i) })));
  await until('partition 0 committed on', () => rig.committedOffset(0) === 22n);
  assert.equal(rig.committedOffset(1), 3n, 'partition 1 committed up to the record that waits, not past it');
  assert.equal(task.task.metrics.cyclesAborted, 0);
  assert.equal(logged(rig, 'cycle abandoned; reading again from the committed offsets').length, 0, 'no cycle was abandoned');

  const w = waits(rig, 0, 1);
  assert.ok(w.every((x) => x.offset === String(p1[3])), 'each wait is at the first record with the unknown id');
  assert.deepEqual(w.slice(0, 5).map((x) => x.tries), [1, 2, 3, 4, 5]);
  // Decorrelated jitter with random 0.5: each delay is initial + (3 × previous − initial) / 2, capped.
  const delays = w.map((x) => x.retryInMs);
  let previous = WAIT.initialDelayMs;
  for (const d of delays) {
    const want = Math.min(WAIT.maxDelayMs, Math.floor(WAIT.initialDelayMs + 0.5 * (3 * previous - WAIT.initialDelayMs)));
    assert.equal(d, want, `delays ${delays.join(', ')}`);
    previous = want;
  }
  const asked = registry.asked.filter((a) => a.id === 2).map((a) => a.at);
  for (let i = 1; i < asked.length && i < delays.length; i++) {
    assert.ok((asked[i] as number) - (asked[i - 1] as number) >= (delays[i - 1] as number) - 2, `registry asked again only after the wait (${asked.join(', ')})`);
  }

  registry.register(2);
  await until('partition 1 written to its end', () => task.task.metrics.recordsWritten === 31);
  await task.stop();
  assert.equal(rig.committedOffset(1), 9n);
  assert.equal(logged(rig, 'partition resumed: the record waiting for its schema went through').length, 1);
  assert.equal(task.task.metrics.schemaWaits, waits(rig, 0, 1).length);
  assert.deepEqual(await commitAll(rig), expected({ 0: [...p0, ...more], 1: p1 }));
});

test('a held partition moved by a rebalance is forgotten by its old owner and starts unpaused at its committed offset with the new one; the one that stays stays held', async (t) => {
  const { rig, registry } = await avroRig({ 'icefloe.commit.max-records': '1000000', 'iceberg.control.commit.interval-ms': '50' });
  t.after(() => rig.close());
  const p0 = rig.kafka.produce(TOPIC, 0, [{ value: framed(1, 0) }, { value: framed(2, 1) }, { value: framed(1, 2) }]);
  const p1 = rig.kafka.produce(TOPIC, 1, [{ value: framed(1, 10) }, { value: framed(1, 11) }, { value: framed(2, 12) }]);
  const a = rig.startTask(0, { schemaWaitBackoff: WAIT, random: () => 0.5 });
  await until('task 0 holds both partitions', () => waits(rig, 0, 0).length >= 2 && waits(rig, 0, 1).length >= 2);
  await until('the handled heads committed', () => rig.committedOffset(0) === 1n && rig.committedOffset(1) === 2n);
  const b = rig.startTask(1, { schemaWaitBackoff: WAIT, random: () => 0.5 });
  await until('partition 1 moved to task 1', () => b.source.assignment().some((tp) => tp.partition === 1));
  await until('task 1 holds partition 1 itself', () => waits(rig, 1, 1).length >= 1);
  assert.equal(waits(rig, 1, 1)[0]?.tries, 1, 'the new owner starts its own wait');
  assert.equal(waits(rig, 1, 1)[0]?.offset, String(p1[2]), 'from the committed offset, at the same record');
  const before = waits(rig, 0, 0).length;
  await until('task 0 still holds partition 0, its back-off growing', () => waits(rig, 0, 0).length > before);
  assert.equal(waits(rig, 0, 0).at(-1)?.tries, waits(rig, 0, 0).length, 'the hold on the partition task 0 kept went on');
  registry.register(2);
  await until('both partitions committed to their ends', () => rig.committedOffset(0) === 3n && rig.committedOffset(1) === 3n);
  await Promise.all([a.stop(), b.stop()]);
  assert.equal(a.task.state, 'STOPPED');
  assert.equal(b.task.state, 'STOPPED');
  assert.deepEqual(await commitAll(rig), expected({ 0: p0, 1: p1 }));
});

test('a partition held at its very first record (no committed offset yet) commits nothing for it while it waits', async (t) => {
  const { rig, registry } = await avroRig({ 'icefloe.commit.max-records': '10' });
  t.after(() => rig.close());
  const p0 = rig.kafka.produce(TOPIC, 0, Array.from({ length: 12 }, (_, i) => ({ value: framed(1, i) })));
  const p1 = rig.kafka.produce(TOPIC, 1, Array.from({ length: 4 }, (_, i) => ({ value: framed(2, i) })));
  const task = rig.startTask(0, { schemaWaitBackoff: WAIT, random: () => 0.5 });
  await until('partition 0 committed', () => rig.committedOffset(0) === 12n);
  await until('partition 1 waited twice', () => waits(rig, 0, 1).length >= 2);
  assert.equal(rig.committedOffset(1), null, 'the read position of the held partition is not committed as its end');
  registry.register(2);
  await until('partition 1 written', () => task.task.metrics.recordsWritten === 16);
  await task.stop();
  assert.equal(rig.committedOffset(1), 4n);
  assert.deepEqual(await commitAll(rig), expected({ 0: p0, 1: p1 }));
});

test('a schema id still unknown after the grace period: the waiting record becomes a bad record (skipped with tolerance=all), and its partition goes on', async (t) => {
  const { rig, registry } = await avroRig({ 'errors.tolerance': 'all', 'icefloe.commit.max-records': '1000000' });
  t.after(() => rig.close());
  registry.graceAsks = 3;
  const p1 = rig.kafka.produce(TOPIC, 1, [{ value: framed(1, 0) }, { value: framed(2, 1) }, { value: framed(2, 2) }, { value: framed(1, 3) }]);
  const task = rig.startTask(0, { schemaWaitBackoff: WAIT, random: () => 0.5 });
  await until('the partition read to its end', () => task.task.metrics.recordsWritten === 2 && task.task.metrics.errorsSkipped === 2);
  await task.stop();
  assert.equal(waits(rig, 0, 1).length, 3, 'held while the registry said "not yet"');
  assert.deepEqual(logged(rig, 'partition resumed: the record waiting for its schema went through').map((f) => f['outcome']), ['skipped']);
  assert.equal(rig.committedOffset(1), 4n);
  assert.deepEqual(await commitAll(rig), expected({ 1: [p1[0] as bigint, p1[3] as bigint] }));
});
