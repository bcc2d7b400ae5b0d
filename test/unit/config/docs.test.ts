import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DOCS_PATH, renderConfigDocs } from '../../../scripts/gen-config-docs.ts';
import { CONNECTOR_CONFIG_DEF } from '../../../src/config/connector-config.ts';
import { CONNECTOR_UNSUPPORTED, WORKER_UNSUPPORTED } from '../../../src/config/unsupported.ts';
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

test('every key refused as "not supported yet" is documented as such, and no other', () => {
  for (const [def, rules] of [
    [CONNECTOR_CONFIG_DEF, CONNECTOR_UNSUPPORTED],
    [WORKER_CONFIG_DEF, WORKER_UNSUPPORTED],
  ] as const) {
    const listed = new Set(rules.map((r) => r.key));
    for (const k of def.keys()) assert.equal(k.doc.startsWith('**Not supported yet**'), listed.has(k.name), k.name);
    for (const p of def.prefixes()) if (listed.has(p.prefix)) assert.ok(p.doc.startsWith('**Not supported yet**'), p.prefix);
    for (const key of listed) if (!key.includes('<') && !key.endsWith('.')) assert.ok(def.key(key) !== undefined, `${key} is defined`);
  }
  const perTable = CONNECTOR_CONFIG_DEF.prefixes().find((p) => p.prefix === 'iceberg.table.');
  assert.match(perTable?.doc ?? '', /id-columns is not supported yet/);
  assert.match(perTable?.doc ?? '', /commit-branch overrides iceberg.tables.default-commit-branch/);
});
