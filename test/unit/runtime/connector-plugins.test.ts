import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestRefused } from '../../../src/core/errors.ts';
import { CONNECTOR_CONFIG_DEF } from '../../../src/config/connector-config.ts';
import { KNOWN_CONVERTERS } from '../../../src/config/converters.ts';
import { ConnectorPlugins, ICEBERG_SINK_VERSION } from '../../../src/runtime/connector-plugins.ts';

const plugins = new ConnectorPlugins({ icefloeVersion: '0.1.0' });

test('plugins: the two sink classes; with connectorsOnly=false also the converters Icefloe decodes, nothing else', () => {
  assert.deepEqual(plugins.plugins(true), [
    { class: 'org.apache.iceberg.connect.IcebergSinkConnector', type: 'sink', version: ICEBERG_SINK_VERSION },
    { class: 'io.icefloe.connect.IcefloeSinkConnector', type: 'sink', version: '0.1.0' },
  ]);
  const all = plugins.plugins(false);
  assert.deepEqual(all.slice(0, 2), plugins.plugins(true));
  assert.deepEqual(
    all.slice(2).map((p) => [p.class, p.type, p.version]),
    Object.keys(KNOWN_CONVERTERS).map((c) => [c, 'converter', '0.1.0']),
  );
  assert.ok(!all.some((p) => p.type === 'transformation' || p.type === 'predicate' || p.type === 'header_converter'), 'none is implemented');
});

test('pluginConfig: by class name and alias; the connector\'s definitions; Connect\'s 404 for an unknown plugin', () => {
  const names = CONNECTOR_CONFIG_DEF.keys().map((k) => k.name);
  for (const alias of ['org.apache.iceberg.connect.IcebergSinkConnector', 'IcebergSinkConnector', 'IcebergSink', 'io.icefloe.connect.IcefloeSinkConnector', 'IcefloeSink', 'io.tabular.iceberg.connect.IcebergSinkConnector']) {
    assert.deepEqual(plugins.pluginConfig(alias).map((d) => d.name), names, alias);
  }
  // The short names are the Apache class's, not the unlisted Tabular class's of the same simple name.
  for (const alias of ['IcebergSinkConnector', 'IcebergSink']) assert.equal(plugins.resolve(alias)?.className, 'org.apache.iceberg.connect.IcebergSinkConnector', alias);
  assert.equal(plugins.connector('JsonConverter'), undefined, 'a converter is no connector');
  const tasksMax = plugins.pluginConfig('IcebergSink').find((d) => d.name === 'tasks.max');
  assert.deepEqual(tasksMax, {
    name: 'tasks.max', type: 'INT', required: false, default_value: '1', importance: 'HIGH', documentation: 'Maximum number of tasks to use for this connector.',
    group: 'Common', order_in_group: 3, width: 'SHORT', display_name: 'Tasks max', dependents: [],
  });
  const json = plugins.pluginConfig('JsonConverter').map((d) => [d.name, d.required, d.default_value]);
  assert.deepEqual(json, [['converter.type', true, null], ['schemas.enable', false, 'true'], ['decimal.format', false, 'BASE64']]);
  assert.ok(plugins.pluginConfig('io.confluent.connect.avro.AvroConverter').some((d) => d.name === 'basic.auth.user.info' && d.type === 'PASSWORD'));
  for (const unknown of ['FileStreamSink', 'icebergsink', 'org.apache.kafka.connect.transforms.RegexRouter']) {
    assert.throws(() => plugins.pluginConfig(unknown), (e: unknown) => e instanceof RequestRefused && e.refusal === 'not-found' && e.message === `Unknown plugin ${unknown}.`);
  }
});
