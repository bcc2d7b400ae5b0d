import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../src/core/errors.ts';
import { configProviders, hasReference, parseConfigProviders, resolveConfig, resolveConfigDetailed } from '../../../src/config/config-providers.ts';
import { validateWorkerConfig } from '../../../src/config/worker-config.ts';
import { providerIO } from '../../../src/runtime/provider-io.ts';

const FILE = 'org.apache.kafka.common.config.provider.FileConfigProvider';
const ENV = 'org.apache.kafka.common.config.provider.EnvVarConfigProvider';
const DIR = 'org.apache.kafka.common.config.provider.DirectoryConfigProvider';

function withTempDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'icefloe-providers-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function providers(props: Record<string, string>, env: Record<string, string> = {}) {
  const parsed = parseConfigProviders(props);
  assert.deepEqual(parsed.errors, []);
  return configProviders(parsed.providers, providerIO(env));
}

test('file, env and directory references resolve, several per value and inside longer text', () => {
  withTempDir((dir) => {
    writeFileSync(join(dir, 'catalog.properties'), '# creds\ncatalog.token=t0ken-value\nuser: alice\n');
    mkdirSync(join(dir, 'secrets'));
    writeFileSync(join(dir, 'secrets', 'password'), 'dir-secret');
    const p = providers(
      { 'config.providers': 'file,env,dir', 'config.providers.file.class': FILE, 'config.providers.env.class': 'EnvVarConfigProvider', 'config.providers.dir.class': DIR },
      { ICEBERG_TOKEN: 'env-secret' },
    );
    const raw = {
      'iceberg.catalog.token': `\${file:${dir}/catalog.properties:catalog.token}`,
      'iceberg.catalog.credential': '${env:ICEBERG_TOKEN}',
      'iceberg.catalog.jdbc.password': `\${dir:${dir}/secrets:password}`,
      'iceberg.catalog.uri': `jdbc:postgresql://\${file:${dir}/catalog.properties:user}@db/\${env:ICEBERG_TOKEN}`,
      'transforms.route.replacement': '${topic}-x',
      topics: 'a',
    };
    const r = resolveConfigDetailed(raw, p);
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.config, {
      'iceberg.catalog.token': 't0ken-value',
      'iceberg.catalog.credential': 'env-secret',
      'iceberg.catalog.jdbc.password': 'dir-secret',
      'iceberg.catalog.uri': 'jdbc:postgresql://alice@db/env-secret',
      'transforms.route.replacement': '${topic}-x',
      topics: 'a',
    });
    assert.deepEqual([...r.referencedKeys].sort(), ['iceberg.catalog.credential', 'iceberg.catalog.jdbc.password', 'iceberg.catalog.token', 'iceberg.catalog.uri']);
    assert.equal(raw['iceberg.catalog.token'].startsWith('${file:'), true, 'the raw map is untouched');
    assert.equal(hasReference('${topic}'), false);
  });
});

test('every unresolvable reference is an error naming the key and the placeholder, never a resolved value', () => {
  withTempDir((dir) => {
    writeFileSync(join(dir, 'a.properties'), 'present=SECRET-A\n');
    mkdirSync(join(dir, 'allowed'));
    writeFileSync(join(dir, 'outside.properties'), 'k=SECRET-B\n');
    const p = providers(
      {
        'config.providers': 'file,env,dir',
        'config.providers.file.class': FILE,
        'config.providers.file.param.allowed.paths': `${dir}/allowed, ${dir}/a.properties`,
        'config.providers.env.class': ENV,
        'config.providers.env.param.allowlist.pattern': 'ICEBERG_.*',
        'config.providers.dir.class': DIR,
      },
      { ICEBERG_SET: 'SECRET-C', OTHER: 'SECRET-D' },
    );
    const raw = {
      'k.unknown': '${vault:secret/x:token}',
      'k.missing-var': '${env:ICEBERG_UNSET}',
      'k.not-allowed-var': '${env:OTHER}',
      'k.env-path': '${env:/x:ICEBERG_SET}',
      'k.missing-key': `\${file:${dir}/a.properties:absent}`,
      'k.missing-file': `\${file:${dir}/allowed/none.properties:k}`,
      'k.outside': `\${file:${dir}/outside.properties:k}`,
      'k.traversal': `\${file:${dir}/allowed/../outside.properties:k}`,
      'k.dir-key': `\${dir:${dir}:../outside.properties}`,
      'k.partly': `ok=\${env:ICEBERG_SET} bad=\${env:ICEBERG_UNSET}`,
    };
    const r = resolveConfigDetailed(raw, p);
    const byKey = new Map(r.problems.map((x) => [x.key, x.message]));
    assert.deepEqual([...byKey.keys()].sort(), Object.keys(raw).sort());
    for (const [key, message] of byKey) assert.ok(message.startsWith(`${key}: cannot resolve \${`), message);
    assert.match(byKey.get('k.unknown') ?? '', /cannot resolve \$\{vault:secret\/x:token\}: no config provider named vault \(the worker's config.providers: file, env, dir\)/);
    assert.match(byKey.get('k.missing-var') ?? '', /environment variable ICEBERG_UNSET is not set/);
    assert.match(byKey.get('k.not-allowed-var') ?? '', /OTHER is not allowed by config.providers.env.param.allowlist.pattern/);
    assert.match(byKey.get('k.env-path') ?? '', /takes no path/);
    assert.match(byKey.get('k.missing-key') ?? '', /a.properties has no key absent/);
    assert.match(byKey.get('k.missing-file') ?? '', /cannot read .*none.properties \(ENOENT\)/);
    assert.match(byKey.get('k.outside') ?? '', /is outside config.providers.file.param.allowed.paths/);
    assert.match(byKey.get('k.traversal') ?? '', /is outside config.providers.file.param.allowed.paths/);
    assert.match(byKey.get('k.dir-key') ?? '', /is not a file name/);
    // A value with one failed reference keeps its raw text whole (never half-resolved).
    assert.equal(r.config['k.partly'], raw['k.partly']);
    const all = JSON.stringify(r.problems);
    for (const secret of ['SECRET-A', 'SECRET-B', 'SECRET-C', 'SECRET-D']) assert.ok(!all.includes(secret), secret);

    assert.throws(() => resolveConfig(raw, p), (e: unknown) => e instanceof ConfigError && /10 config provider reference\(s\) cannot be resolved/.test(e.message) && !e.message.includes('SECRET'));
  });
});

test('worker keys: config.providers is supported; bad declarations fail on their key', () => {
  const ok = validateWorkerConfig({ 'config.providers': 'file,env', 'config.providers.file.class': FILE, 'config.providers.env.class': ENV }, { baseDir: '/srv' });
  assert.deepEqual([...ok.errors], []);
  assert.deepEqual(ok.config?.configProviders.map((p) => [p.name, p.kind]), [['file', 'file'], ['env', 'env']]);

  const bad = validateWorkerConfig(
    {
      'config.providers': 'file,vault,env,nocls',
      'config.providers.file.class': FILE,
      'config.providers.file.param.allowed.paths': 'relative/dir',
      'config.providers.file.param.bogus': 'x',
      'config.providers.vault.class': 'io.strimzi.kafka.KubernetesSecretConfigProvider',
      'config.providers.env.class': ENV,
      'config.providers.env.param.allowlist.pattern': '(',
      'config.providers.stray.class': FILE,
    },
    { baseDir: '/srv' },
  );
  assert.deepEqual([...bad.errors.keys()].sort(), [
    'config.providers.env.param.allowlist.pattern',
    'config.providers.file.param.allowed.paths',
    'config.providers.file.param.bogus',
    'config.providers.nocls.class',
    'config.providers.vault.class',
  ]);
  assert.match(bad.errors.get('config.providers.nocls.class')?.[0] ?? '', /Missing required configuration "config.providers.nocls.class"/);
  assert.match(bad.errors.get('config.providers.vault.class')?.[0] ?? '', /Icefloe implements .*FileConfigProvider/);
  assert.match(bad.errors.get('config.providers.file.param.allowed.paths')?.[0] ?? '', /Path relative\/dir is not absolute/);
  assert.ok(bad.warnings.some((w) => w.includes('config.providers.stray.class is ignored')), bad.warnings.join('\n'));
});
