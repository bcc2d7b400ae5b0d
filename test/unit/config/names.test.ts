import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateConnectorConfig } from '../../../src/config/connector-config.ts';
import { regexProblem, tableNameProblem } from '../../../src/config/names.ts';

const BASE = {
  name: 'orders',
  'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
  topics: 'orders',
  'iceberg.tables': 'sales.eu,sales.us',
  'iceberg.tables.route-field': 'region',
  'iceberg.catalog.type': 'rest',
  'iceberg.catalog.uri': 'http://127.0.0.1:8181',
};

test('a route-regex in Java-only syntax is a validation error, not a silently different match', () => {
  const ok = validateConnectorConfig({ ...BASE, 'iceberg.table.sales.eu.route-regex': 'eu-.*', 'iceberg.table.sales.us.route-regex': 'us-.*' });
  assert.equal(ok.errorCount, 0, JSON.stringify([...ok.errors]));
  const bad = validateConnectorConfig({ ...BASE, 'iceberg.table.sales.eu.route-regex': '\\Aeu', 'iceberg.table.sales.us.route-regex': 'us-.*' });
  assert.equal(bad.errorCount, 1);
  assert.match([...bad.errors].map(([k, v]) => `${k}: ${String(v)}`).join('\n'), /iceberg\.table\.sales\.eu\.route-regex.*\\A is Java-only/);
});

test('table names need a namespace; regexes must compile', () => {
  assert.equal(tableNameProblem('db.t'), undefined);
  assert.match(tableNameProblem('t') ?? '', /no namespace/);
  assert.match(tableNameProblem('db..t') ?? '', /empty/);
  assert.match(regexProblem('(') ?? '', /Not a valid regular expression/);
  assert.match(regexProblem('[[a]]') ?? '', /nested character class/);
});
