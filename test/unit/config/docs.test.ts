import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DOCS_PATH, renderConfigDocs } from '../../../scripts/gen-config-docs.ts';
import { CONNECTOR_CONFIG_DEF } from '../../../src/config/connector-config.ts';
import { WORKER_CONFIG_DEF } from '../../../src/config/worker-config.ts';

test('docs/configuration.md is generated from the ConfigDefs and up to date', () => {
  const current = readFileSync(DOCS_PATH, 'utf8');
  assert.ok(current === renderConfigDocs(), 'docs/configuration.md is out of date: run node scripts/gen-config-docs.ts');
});

test('every key and prefix is documented', () => {
  const text = renderConfigDocs();
  for (const def of [CONNECTOR_CONFIG_DEF, WORKER_CONFIG_DEF]) {
    for (const k of def.keys()) assert.ok(text.includes(`| \`${k.name}\` |`), k.name);
    for (const p of def.prefixes()) assert.ok(text.includes(`\`${p.pattern ?? `${p.prefix}*`}\``), p.prefix);
  }
});
