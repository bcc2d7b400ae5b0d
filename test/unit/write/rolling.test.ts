/**
 * The rolling writer: files roll at the target size, row groups stream one at a time, a shared memory
 * budget forces early flushes (or rolls), commit cycles reuse the writer, abort leaves nothing partial,
 * and upload failures are sticky until abort. Every file is read back with hyparquet.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RetriableError } from '../../../src/core/errors.ts';
import type { DataFile } from '../../../src/iceberg/data-file.ts';
import type { Schema } from '../../../src/iceberg/types.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { WriteMemoryBudget, buildLayout, DataFileWriter, DEFAULT_WRITE_CONFIG } from '../../../src/write/index.ts';
import { iterateChunks } from '../../../src/upload/port.ts';
import type { ByteChunks, ObjectInfo, ObjectStore, PutOptions } from '../../../src/upload/port.ts';
import { appendRow, footerOf, harness, harnessOn, prng, readAll, readBack } from './helpers.ts';
import type { Row } from './helpers.ts';

const SCHEMA: Schema = {
  schemaId: 1,
  fields: [
    { id: 1, name: 'id', required: true, type: { kind: 'long' } },
    { id: 2, name: 'word', required: false, type: { kind: 'string' } },
    { id: 3, name: 'x', required: false, type: { kind: 'double' } },
    { id: 4, name: 'tags', required: false, type: { kind: 'list', elementId: 5, elementRequired: true, element: { kind: 'string' } } },
  ],
};

function rows(n: number, seed: number, start = 0): Row[] {
  const rnd = prng(seed);
  const word = (): string => Array.from({ length: 4 + Math.floor(rnd() * 20) }, () => String.fromCharCode(97 + Math.floor(rnd() * 26))).join('');
  return Array.from({ length: n }, (_, i) => ({
    id: BigInt(start + i),
    word: rnd() < 0.1 ? null : word(),
    x: rnd() < 0.1 ? null : rnd() * 1e6,
    tags: rnd() < 0.2 ? null : Array.from({ length: Math.floor(rnd() * 3) }, word),
  }));
}

async function feed(writer: DataFileWriter, data: readonly Row[]): Promise<void> {
  for (const r of data) if (appendRow(writer.appender, SCHEMA.fields, r)) await writer.flushIfNeeded();
}

function totalRecords(files: readonly DataFile[]): number {
  return files.reduce((n, f) => n + Number(f.recordCount), 0);
}

test('rolls at write.target-file-size-bytes: several files near the target, all rows back in order', async () => {
  const target = 256 * 1024;
  const h = harness(SCHEMA, { targetFileSizeBytes: target, rowGroupBufferBytes: 48 * 1024 });
  const data = rows(40_000, 1);
  await feed(h.writer, data);
  const files = await h.writer.complete();
  assert.ok(files.length >= 3, `expected several files, got ${files.length}`);
  assert.equal(totalRecords(files), data.length);
  assert.deepEqual(await readAll(h.store, files, SCHEMA), data);
  for (const [i, f] of files.entries()) {
    const bytes = await h.store.get(f.filePath);
    assert.equal(f.fileSizeInBytes, BigInt(bytes.length), 'fileSizeInBytes is the stored size');
    if (i < files.length - 1) {
      assert.ok(bytes.length >= target, `file ${i} (${bytes.length} B) reached the target before rolling`);
      assert.ok(bytes.length < target + 64 * 1024, `file ${i} (${bytes.length} B) overshoots by less than a row group`);
    }
    const meta = footerOf(bytes);
    assert.ok(meta.row_groups.length > 1, 'a file holds several row groups (streamed one at a time)');
    assert.equal(f.splitOffsets?.length, meta.row_groups.length);
  }
  const m = h.writer.metrics();
  assert.equal(m.filesClosed, files.length);
  assert.equal(m.recordsWritten, data.length);
  assert.ok(m.compressionRatio > 0 && m.compressionRatio < 1);
});

test('row groups are sealed by rows (icefloe.write.row-group-rows) and by buffered bytes', async () => {
  const byRows = harness(SCHEMA, { rowGroupRows: 1000 });
  await feed(byRows.writer, rows(4500, 2));
  const [f1] = await byRows.writer.complete();
  assert.ok(f1);
  const m1 = footerOf(await byRows.store.get(f1.filePath));
  assert.deepEqual(
    m1.row_groups.map((rg) => rg.num_rows),
    [1000n, 1000n, 1000n, 1000n, 500n],
  );

  const byBytes = harness(SCHEMA, { rowGroupBufferBytes: 32 * 1024 });
  await feed(byBytes.writer, rows(10_000, 3));
  const [f2] = await byBytes.writer.complete();
  assert.ok(f2);
  const m2 = footerOf(await byBytes.store.get(f2.filePath));
  assert.ok(m2.row_groups.length >= 10, `${m2.row_groups.length} row groups`);
  // Sizes are checked every 256 records, so a row group holds a multiple of 256 rows (but the last).
  for (const rg of m2.row_groups.slice(0, -1)) assert.equal(Number(rg.num_rows) % 256, 0);
});

/** A store that writes chunks through (as the local store does): it holds nothing of an upload. */
class WriteThroughStore extends MemoryObjectStore {
  override putStream(location: string, chunks: ByteChunks, options: PutOptions = {}): Promise<ObjectInfo> {
    return super.putStream(location, chunks, { ...(options.signal === undefined ? {} : { signal: options.signal }) });
  }
}

/** The encoder's memory left out, so these budgets can be tiny (it is counted in the tests further down). */
const NO_ENCODER = { encoderMemory: (): number => 0 };

test('a shared memory budget forces early flushes of the largest writers, counted', async () => {
  const budget = new WriteMemoryBudget(200 * 1024, NO_ENCODER);
  const store = new WriteThroughStore();
  const writers = [0, 1, 2].map((i) => harnessOn(store, SCHEMA, {}, budget, `p${i}`).writer);
  const data = [0, 1, 2].map((i) => rows(6000, 10 + i, i * 100_000));
  for (let r = 0; r < 6000; r++) {
    for (const [i, w] of writers.entries()) {
      if (appendRow(w.appender, SCHEMA.fields, data[i]?.[r] as Row)) await w.flushIfNeeded();
    }
  }
  assert.ok(budget.forcedFlushes > 0, 'the budget forced flushes');
  assert.equal(
    writers.reduce((n, w) => n + w.metrics().forcedFlushes, 0),
    budget.forcedFlushes,
  );
  assert.ok(budget.heldBytes <= 200 * 1024 * 1.1, `held ${budget.heldBytes} B stays near the limit`);
  for (const [i, w] of writers.entries()) {
    const files = await w.close();
    assert.equal(files.length, 1, 'flush policy: one file per writer');
    const meta = footerOf(await store.get((files[0] as DataFile).filePath));
    assert.ok(meta.row_groups.length > 1, 'forced flushes made extra row groups');
    assert.deepEqual(await readAll(store, files, SCHEMA), data[i]);
  }
  assert.equal(budget.metrics().members, 0, 'closed writers leave the budget');
});

test('under the roll policy a forced flush also closes the file, counted', async () => {
  const budget = new WriteMemoryBudget(150 * 1024, { policy: 'roll', ...NO_ENCODER });
  const store = new MemoryObjectStore();
  const writers = [0, 1].map((i) => harnessOn(store, SCHEMA, {}, budget, `r${i}`).writer);
  const data = [0, 1].map((i) => rows(8000, 20 + i, i * 100_000));
  for (let r = 0; r < 8000; r++) {
    for (const [i, w] of writers.entries()) {
      if (appendRow(w.appender, SCHEMA.fields, data[i]?.[r] as Row)) await w.flushIfNeeded();
    }
  }
  assert.ok(budget.forcedRolls > 0);
  assert.equal(budget.forcedRolls, budget.forcedFlushes);
  for (const [i, w] of writers.entries()) {
    const files = await w.complete();
    assert.ok(files.length >= 1 + w.metrics().forcedRolls - 1, 'each forced roll closed a file');
    assert.ok(files.length > 1, `writer ${i}: ${files.length} files`);
    assert.equal(totalRecords(files), 8000);
    assert.deepEqual(await readAll(store, files, SCHEMA), data[i]);
  }
});

/** A memory store that also counts, independently of its reports, the bytes of the puts it has not finished. */
class CountingStore extends MemoryObjectStore {
  held = 0;
  override async putStream(location: string, chunks: ByteChunks, options: PutOptions = {}): Promise<ObjectInfo> {
    let mine = 0;
    const counted = async function* (self: CountingStore): AsyncGenerator<Uint8Array> {
      for await (const c of iterateChunks(chunks)) {
        mine += c.byteLength;
        self.held += c.byteLength;
        yield c;
      }
    };
    try {
      return await super.putStream(location, counted(this), options);
    } finally {
      this.held -= mine;
    }
  }
}

test('the budget counts what the store holds of open files: when uploads hold more than buffers, files are closed', async () => {
  const limit = 256 * 1024;
  const budget = new WriteMemoryBudget(limit, NO_ENCODER);
  // The memory store holds each file whole until it closes, as S3 does below its multipart threshold.
  const store = new CountingStore();
  // Small row groups: every flush moves buffered rows into the open file's upload.
  const writers = [0, 1, 2, 3].map((i) => harnessOn(store, SCHEMA, { rowGroupBufferBytes: 24 * 1024 }, budget, `u${i}`).writer);
  const data = [0, 1, 2, 3].map((i) => rows(8000, 30 + i, i * 100_000));
  let worst = 0;
  let uploadSeen = 0;
  for (let r = 0; r < 8000; r++) {
    for (const [i, w] of writers.entries()) {
      if (appendRow(w.appender, SCHEMA.fields, data[i]?.[r] as Row)) await w.flushIfNeeded();
    }
    if (r % 256 === 255) {
      worst = Math.max(worst, store.held + writers.reduce((n, w) => n + w.appender.heldBytes(), 0));
      uploadSeen = Math.max(uploadSeen, budget.metrics().uploadBytes);
    }
  }
  // What the store and the buffers really held, counted apart from the budget, stays near the limit.
  assert.ok(worst <= limit * 1.25, `store + buffers peaked at ${worst} B for a ${limit} B budget`);
  assert.ok(uploadSeen > 0, 'upload bytes are reported to the budget');
  assert.ok(budget.forcedRolls > 0, 'under the flush policy, writers whose uploads held the most closed their files');
  for (const [i, w] of writers.entries()) {
    const files = await w.close();
    assert.ok(files.length > 1, `writer ${i}: ${files.length} files`);
    assert.deepEqual(await readAll(store, files, SCHEMA), data[i]);
  }
  assert.equal(budget.metrics().uploadBytes, 0, 'finished uploads hold nothing');
});

test('the budget counts the encoder: the row group a writer is about to encode, and the encoder memory already grown', async () => {
  const limit = 1024 * 1024;
  const run = async (encoder: number): Promise<{ peakUsed: number; rowGroups: number; encoderBytes: number }> => {
    const budget = new WriteMemoryBudget(limit, { encoderMemory: () => encoder });
    const h = harnessOn(new WriteThroughStore(), SCHEMA, {}, budget, `e${encoder}`);
    let peakUsed = 0;
    for (const r of rows(30_000, 40)) {
      if (appendRow(h.writer.appender, SCHEMA.fields, r)) await h.writer.flushIfNeeded();
      peakUsed = Math.max(peakUsed, h.writer.appender.usedBytes());
    }
    const encoderBytes = budget.metrics().encoderBytes;
    const files = await h.writer.close();
    let rowGroups = 0;
    for (const f of files) rowGroups += footerOf(await h.store.get(f.filePath)).row_groups.length;
    return { peakUsed, rowGroups, encoderBytes };
  };
  const free = await run(0);
  // Buffers plus three times them for the encoder: a row group never grows past about a quarter of the budget.
  assert.ok(free.peakUsed * 4 <= limit * 1.1, `peak row group ${free.peakUsed} B`);
  assert.ok(free.rowGroups > 1);
  // An encoder that has grown already leaves less room: more, smaller row groups.
  const grown = await run(896 * 1024);
  assert.ok(grown.encoderBytes >= 896 * 1024);
  assert.ok(grown.peakUsed < free.peakUsed, `${grown.peakUsed} B < ${free.peakUsed} B`);
  assert.ok(grown.rowGroups > free.rowGroups, `${grown.rowGroups} > ${free.rowGroups} row groups`);
});

test('commit cycles: complete() hands out the files, the writer and its column handles carry on', async () => {
  const h = harness(SCHEMA);
  const id = h.writer.appender.long(1);
  assert.deepEqual(await h.writer.complete(), [], 'nothing buffered: no file');
  const first = rows(100, 4);
  await feed(h.writer, first);
  const cycle1 = await h.writer.complete();
  const second = rows(50, 5, 1000);
  await feed(h.writer, second);
  id.append(99n); // the handle taken before the first cycle still works
  h.writer.appender.endRecord();
  const cycle2 = await h.writer.complete();
  assert.equal(cycle1.length, 1);
  assert.equal(cycle2.length, 1);
  assert.notEqual(cycle1[0]?.filePath, cycle2[0]?.filePath);
  assert.deepEqual(await readAll(h.store, cycle1, SCHEMA), first);
  const back = await readAll(h.store, cycle2, SCHEMA);
  assert.deepEqual(back.slice(0, 50), second);
  assert.deepEqual(back[50], { id: 99n, word: null, x: null, tags: null });
});

test('abort(): the open file never appears, rolled files are returned as abandoned, the writer is reusable', async () => {
  const h = harness(SCHEMA, { targetFileSizeBytes: 64 * 1024, rowGroupBufferBytes: 16 * 1024 });
  await feed(h.writer, rows(5000, 6));
  await h.writer.flush();
  const rolled = h.store.locations();
  assert.ok(rolled.length >= 1, 'some files rolled already');
  const abandoned = await h.writer.abort();
  assert.deepEqual(abandoned.sort(), rolled, 'the closed files nobody took are reported');
  assert.deepEqual(h.store.locations(), rolled, 'the file open at abort was never stored');
  const after = rows(10, 7);
  await feed(h.writer, after);
  const files = await h.writer.complete();
  assert.equal(files.length, 1);
  assert.deepEqual(await readAll(h.store, files, SCHEMA), after);
});

test('an upload failure rejects the flush and stays sticky until abort()', async () => {
  let failing = true;
  const inner = new MemoryObjectStore();
  const store: Pick<ObjectStore, 'putStream'> = {
    async putStream(location, chunks, options) {
      if (failing) {
        // Consume a little, then fail as S3 would on a dropped connection.
        const it = (chunks as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
        await it.next();
        await it.return?.();
        throw new RetriableError('connection reset (injected)');
      }
      return inner.putStream(location, chunks, options);
    },
  };
  let n = 0;
  const writer = new DataFileWriter({
    layout: buildLayout(SCHEMA),
    store,
    newLocation: () => `memory://wh/t/data/f${n++}.parquet`,
    partition: [],
    specId: 0,
    config: DEFAULT_WRITE_CONFIG,
  });
  await feed(writer, rows(300, 8));
  await assert.rejects(writer.complete(), RetriableError);
  await assert.rejects(writer.flush(), RetriableError, 'sticky');
  failing = false;
  assert.deepEqual(await writer.abort(), []);
  const again = rows(300, 8);
  await feed(writer, again);
  const files = await writer.complete();
  assert.equal(files.length, 1);
  const { rows: back } = await readBack(await inner.get((files[0] as DataFile).filePath), SCHEMA);
  assert.deepEqual(back, again);
});

test('DataFile fields: partition tuple, spec id, sort order, bigint counts; footer key/value metadata', async () => {
  const store = new MemoryObjectStore();
  const writer = new DataFileWriter({
    layout: buildLayout(SCHEMA),
    store,
    newLocation: () => 'memory://wh/t/data/day=2024-01-01/x.parquet',
    partition: [19723, 'EU', null],
    specId: 3,
    sortOrderId: 1,
    keyValueMetadata: new Map([['iceberg.schema', '{"type":"struct","schema-id":1,"fields":[]}']]),
  });
  await feed(writer, rows(10, 9));
  const [f] = await writer.close();
  assert.ok(f);
  assert.equal(f.content, 0);
  assert.equal(f.fileFormat, 'PARQUET');
  assert.deepEqual(f.partition, [19723, 'EU', null]);
  assert.equal(f.specId, 3);
  assert.equal(f.sortOrderId, 1);
  assert.equal(f.recordCount, 10n);
  assert.equal(typeof f.fileSizeInBytes, 'bigint');
  const kv = footerOf(await store.get(f.filePath)).key_value_metadata ?? [];
  assert.equal(kv.find((e) => e.key === 'iceberg.schema')?.value, '{"type":"struct","schema-id":1,"fields":[]}');
  assert.throws(() => writer.flush(), /closed/);
});
