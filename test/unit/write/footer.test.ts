/**
 * The writer's own footer reader (Thrift compact) against hyparquet on real files, the UUID logical-type
 * edit, and the checks that catch an encoder that silently dropped data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ColumnMetaData } from 'hyparquet';
import type { Schema } from '../../../src/iceberg/types.ts';
import { FatalError } from '../../../src/core/errors.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import { editFooter, locateFooter, parseFooter, rowGroupStart, uuidLogicalTypeEdits } from '../../../src/write/footer.ts';
import { buildLayout, RecordAppender } from '../../../src/write/index.ts';
import { StreamingParquetFile } from '../../../src/write/parquet.ts';
import { TYPE_MATRIX_SCHEMA, typeMatrixRows } from '../../helpers/type-matrix.ts';
import { appendRow, footerOf, harness, readBack } from './helpers.ts';

async function matrixFile(rowGroupRows = 2): Promise<Uint8Array> {
  const h = harness(TYPE_MATRIX_SCHEMA, { rowGroupRows });
  for (const r of typeMatrixRows()) if (appendRow(h.writer.appender, TYPE_MATRIX_SCHEMA.fields, r)) await h.writer.flushIfNeeded();
  const [f] = await h.writer.complete();
  assert.ok(f);
  return h.store.get(f.filePath);
}

test('parseFooter agrees with hyparquet: rows, schema names and ids, row groups, column chunks', async () => {
  const bytes = await matrixFile();
  const { start, length } = locateFooter(bytes);
  const ours = parseFooter(bytes.subarray(start, start + length));
  const theirs = footerOf(bytes);
  assert.equal(BigInt(ours.numRows), theirs.num_rows);
  assert.deepEqual(
    ours.schema.map((e) => [e.name, e.fieldId, e.numChildren ?? 0]),
    theirs.schema.map((e) => [e.name, e.field_id, e.num_children ?? 0]),
  );
  assert.equal(ours.rowGroups.length, theirs.row_groups.length);
  assert.equal(ours.rowGroups.length, 2, 'two row groups of two rows');
  for (const [i, rg] of ours.rowGroups.entries()) {
    const hrg = theirs.row_groups[i];
    assert.ok(hrg);
    assert.equal(BigInt(rg.numRows), hrg.num_rows);
    assert.equal(rg.columns.length, hrg.columns.length);
    for (const [j, c] of rg.columns.entries()) {
      const m: ColumnMetaData | undefined = hrg.columns[j]?.meta_data;
      assert.ok(m);
      assert.deepEqual(c.path, m.path_in_schema);
      assert.equal(BigInt(c.totalCompressedSize), m.total_compressed_size);
      assert.equal(BigInt(c.dataPageOffset), m.data_page_offset);
      assert.equal(c.dictionaryPageOffset === undefined ? undefined : BigInt(c.dictionaryPageOffset), m.dictionary_page_offset);
      assert.ok(c.pageTypes.length > 0 && c.pageTypes.every((t) => t === 0 || t === 2), 'DATA_PAGE and DICTIONARY_PAGE only');
    }
    assert.ok(rowGroupStart(rg) >= 4);
  }
});

test('the UUID edit: logical type added, footer length updated, data unchanged', async () => {
  const schema: Schema = {
    schemaId: 0,
    fields: [
      { id: 1, name: 'u', required: true, type: { kind: 'uuid' } },
      { id: 2, name: 'nested', required: false, type: { kind: 'list', elementId: 3, elementRequired: false, element: { kind: 'uuid' } } },
    ],
  };
  const h = harness(schema);
  const a = h.writer.appender;
  a.fixed(1).appendUuid('F79C3E09-677C-4BBD-A479-3F349CB785E7');
  a.list(2).begin();
  a.fixed(3).appendUuid('00000000-0000-0000-0000-000000000001');
  a.fixed(3).appendNull();
  a.list(2).end();
  a.endRecord();
  const [f] = await h.writer.complete();
  assert.ok(f);
  const bytes = await h.store.get(f.filePath);
  const meta = footerOf(bytes);
  const uuids = meta.schema.filter((e) => e.type === 'FIXED_LEN_BYTE_ARRAY');
  assert.equal(uuids.length, 2);
  for (const e of uuids) assert.deepEqual(e.logical_type, { type: 'UUID' }, e.name);
  const { rows } = await readBack(bytes, schema);
  assert.deepEqual(Buffer.from(rows[0]?.['u'] as Uint8Array).toString('hex'), 'f79c3e09677c4bbda4793f349cb785e7');
  assert.deepEqual((rows[0]?.['nested'] as (Uint8Array | null)[]).map((b) => (b === null ? null : Buffer.from(b).toString('hex'))), ['00000000000000000000000000000001', null]);
  // Idempotent: an element that already has a logical type is left alone.
  const { start, length } = locateFooter(bytes);
  const footer = parseFooter(bytes.subarray(start, start + length));
  const again = editFooter(bytes, start, uuidLogicalTypeEdits(footer.schema, [1]));
  assert.equal(again, bytes);
});

test('locateFooter refuses bytes without a finished footer', () => {
  assert.throws(() => locateFooter(new Uint8Array(20)), FatalError);
  const fake = new Uint8Array(16);
  fake.set([0xff, 0xff, 0, 0, 0x50, 0x41, 0x52, 0x31], 8); // length 65535 > bytes held
  assert.throws(() => locateFooter(fake), FatalError);
});

test('parseFooter refuses truncated Thrift', async () => {
  const bytes = await matrixFile();
  const { start, length } = locateFooter(bytes);
  assert.throws(() => parseFooter(bytes.subarray(start, start + Math.floor(length / 2))), FatalError);
});

test('a batch the encoder silently drops (parquet-wasm ignores write errors) fails the upload', async () => {
  // Two schemas: the file is opened with the first; a batch of the second is rejected inside the wasm
  // task, which ignores the error. The footer check must notice the missing rows.
  const s1: Schema = { schemaId: 0, fields: [{ id: 1, name: 'a', required: true, type: { kind: 'long' } }] };
  const s2: Schema = { schemaId: 0, fields: [{ id: 1, name: 'a', required: true, type: { kind: 'string' } }] };
  const a1 = new RecordAppender(buildLayout(s1), () => ({ kind: 'none' }));
  const a2 = new RecordAppender(buildLayout(s2), () => ({ kind: 'none' }));
  a1.long(1).append(1n);
  a1.endRecord();
  a2.string(1).append('x');
  a2.endRecord();
  const b1 = a1.seal();
  const b2 = a2.seal();
  assert.ok(b1 && b2);
  const store = new MemoryObjectStore();
  const file = new StreamingParquetFile({
    location: 'memory://wh/t/data/bad.parquet',
    store,
    layout: buildLayout(s1),
    encoding: { codec: 'zstd', pageSizeBytes: 1 << 20, dictSizeBytes: 1 << 20, statistics: 'page' },
  });
  await file.writeBatch(b1.ipc, b1.rows);
  await file.writeBatch(b2.ipc, b2.rows);
  await assert.rejects(file.finish(), (e: Error) => e instanceof FatalError && /expected 2 in 2/.test(e.message));
  assert.deepEqual(store.locations(), [], 'the bad file never appears');
});

test('a store that stops reading but reports success is an error, not a short file', async () => {
  const schema: Schema = { schemaId: 0, fields: [{ id: 1, name: 'a', required: true, type: { kind: 'long' } }] };
  const inner = new MemoryObjectStore();
  const store = {
    async putStream(location: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>) {
      const it = (chunks as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
      await it.next();
      await it.return?.();
      return inner.put(location, new Uint8Array(0));
    },
  };
  const file = new StreamingParquetFile({
    location: 'memory://wh/t/data/short.parquet',
    store,
    layout: buildLayout(schema),
    encoding: { codec: 'zstd', pageSizeBytes: 1 << 20, dictSizeBytes: 1 << 20, statistics: 'page' },
  });
  const a = new RecordAppender(buildLayout(schema), () => ({ kind: 'none' }));
  const batch = (): { ipc: Uint8Array; rows: number } => {
    for (let i = 0; i < 50_000; i++) {
      a.long(1).appendNumber((i * 2654435761) % 2 ** 52); // incompressible enough to leave early
      a.endRecord();
    }
    const b = a.seal();
    assert.ok(b);
    return b;
  };
  // Big enough that the first row group's bytes leave before the file is closed.
  await assert.rejects(
    (async () => {
      for (const b of [batch(), batch(), batch()]) await file.writeBatch(b.ipc, b.rows);
      await file.finish();
    })(),
    FatalError,
  );
});
