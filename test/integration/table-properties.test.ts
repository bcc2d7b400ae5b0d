/**
 * Property updates through table-ops on both catalogs: set, a repeated set that commits nothing, remove;
 * what the catalog stores is what PyIceberg reports, and no snapshot is created by a property change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTable, DEFAULT_TABLE_PROPERTIES, updateProperties } from '../../src/commit/table-ops.ts';
import type { Schema } from '../../src/iceberg/types.ts';
import { readTable } from '../helpers/readers.ts';
import { harness, ident } from '../helpers/tables.ts';
import type { CatalogKind } from '../helpers/tables.ts';

const schema: Schema = { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'long' } }] };

for (const kind of ['rest', 'sql'] as CatalogKind[]) {
  test(`table properties through the ${kind.toUpperCase()} catalog: set, idempotent re-set, remove`, async (t) => {
    const h = await harness(t);
    const catalog = h.catalog(kind);
    const deps = h.deps(catalog);
    const ns = h.namespace();
    const id = ident(ns, 'props');
    const created = await createTable(deps, id, { schema, properties: { 'commit.retry.num-retries': '7' } });
    for (const [k, v] of Object.entries(DEFAULT_TABLE_PROPERTIES)) {
      // format-version is table metadata, not a stored property, in Java-based catalogs.
      if (k !== 'format-version') assert.equal(created.metadata.properties[k], v, k);
    }
    assert.equal(created.metadata.formatVersion, 2);

    const set = await updateProperties(deps, id, { 'icefloe.owner': 'orders-team', 'write.target-file-size-bytes': '67108864' });
    assert.equal(set.metadata.properties['icefloe.owner'], 'orders-team');
    assert.notEqual(set.metadataLocation, created.metadataLocation);

    // The same properties again: nothing to commit, so the metadata file does not change.
    const again = await updateProperties(deps, id, { 'icefloe.owner': 'orders-team' });
    assert.equal(again.metadataLocation, set.metadataLocation);

    const removed = await updateProperties(deps, id, {}, ['icefloe.owner', 'not-there']);
    assert.equal('icefloe.owner' in removed.metadata.properties, false);
    assert.equal(removed.metadata.properties['write.target-file-size-bytes'], '67108864');
    assert.equal(removed.metadata.snapshots.length, 0, 'a property change adds no snapshot');

    const py = await readTable({ table: `${ns}.props`, catalog: h.readerCatalog(catalog) });
    const props = py['properties'] as Record<string, string>;
    assert.equal(props['write.target-file-size-bytes'], '67108864');
    assert.equal(props['commit.retry.num-retries'], '7');
    assert.equal('icefloe.owner' in props, false);
  });
}
