/**
 * A stopped service must make its smoke test fail with a message that names it — never pass, never
 * skip. For each service: stop it through scripts/stack, run its smoke file and expect a failure naming
 * the service, start it again and expect the same file to pass (so the failure came from the stop).
 * Runs last (suite `stack`): it restarts every service in turn.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Service → the smoke file that covers it and the name its failure must carry. Dependents come first. */
const SERVICES: [service: string, smokeFile: string, named: string][] = [
  ['proxy', 'test/smoke/fault-proxy.test.ts', 'Fault-injection proxy'],
  ['connect', 'test/smoke/connect.test.ts', 'Kafka Connect reference worker'],
  ['kafka', 'test/smoke/kafka.test.ts', 'Kafka'],
  ['registry', 'test/smoke/registry.test.ts', 'Schema registry'],
  ['catalog', 'test/smoke/catalog.test.ts', 'Iceberg REST catalog'],
  ['redis', 'test/smoke/postgres-redis.test.ts', 'Redis'],
  ['s3', 'test/smoke/s3.test.ts', 'S3'],
  ['postgres', 'test/smoke/postgres-redis.test.ts', 'PostgreSQL'],
];

// Without this, a child `node --test` sees it runs inside a test and runs nothing (and passes).
const childEnv = { ...process.env };
delete childEnv['NODE_TEST_CONTEXT'];

function run(cmd: string, args: string[]): { status: number; output: string } {
  const r = spawnSync(cmd, args, { cwd: root, env: childEnv, encoding: 'utf8', timeout: 300_000 });
  return { status: r.status ?? 1, output: `${r.stdout}\n${r.stderr}` };
}

const stack = (...args: string[]): { status: number; output: string } => run('bash', ['scripts/stack', ...args]);
const smoke = (file: string): { status: number; output: string } => run(process.execPath, ['--test', '--test-reporter=spec', file]);

for (const [service, file, named] of SERVICES) {
  test(`stopping ${service} fails ${file} with a message naming ${named}`, async (t) => {
    const stop = stack('stop', service);
    assert.equal(stop.status, 0, `scripts/stack stop ${service} failed:\n${stop.output}`);
    // Whatever happens below, the service comes back for the tests after this one.
    t.after(() => {
      const start = stack('start', service);
      assert.equal(start.status, 0, `scripts/stack start ${service} failed:\n${start.output}`);
    });
    const down = smoke(file);
    assert.notEqual(down.status, 0, `${file} passed with ${service} stopped:\n${down.output}`);
    assert.match(down.output, new RegExp(`${named}[^\\n]*not reachable`), `failure does not name ${named}:\n${down.output}`);

    const start = stack('start', service);
    assert.equal(start.status, 0, `scripts/stack start ${service} failed:\n${start.output}`);
    const up = smoke(file);
    assert.equal(up.status, 0, `${file} still fails after restarting ${service}:\n${up.output}`);
  });
}

test('after every restart the whole stack reports up', async () => {
  // The registry's connection pool finds its PostgreSQL connections dead after the restart and answers
  // 500 until it has replaced them: allow it a bounded time to do so.
  let status = stack('status');
  for (let waited = 0; status.status !== 0 && waited < 60; waited++) {
    await new Promise((r) => setTimeout(r, 1000));
    status = stack('status');
  }
  assert.equal(status.status, 0, status.output);
  // Services that keep state in PostgreSQL reconnect after its restart. Both pools find their old
  // connections dead only by using them: the REST catalog answers one request with 500 ("terminating
  // connection due to administrator command") and then recovers. A sink must treat such a 500 as an
  // unknown outcome; here, a few tries are allowed before the service counts as broken.
  for (const file of ['test/smoke/catalog.test.ts', 'test/smoke/registry.test.ts']) {
    let r = smoke(file);
    for (let attempt = 1; r.status !== 0 && attempt < 3; attempt++) r = smoke(file);
    assert.equal(r.status, 0, `${file} fails after the PostgreSQL restart:\n${r.output}`);
  }
});
