/**
 * Stopping and starting one service of the stack from a test (`scripts/stack stop|start SERVICE`), on the
 * stack test/helpers/stack.ts reads (ICEFLOE_RUN; the stack recorded its ports in its run directory).
 * A test that stops a service brings it back in every exit path: it starts it again in a finally block,
 * and `restoreServiceAfter` registers an `after` hook that starts it if it is still down (so the next
 * test, and the test's own cleanup, find it up).
 */
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stackEndpoints } from './stack.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

function stack(...args: string[]): { status: number; output: string } {
  // The stack the tests use (ICEFLOE_RUN, default /tmp/icefloe-stack), whatever else the environment says.
  const env: NodeJS.ProcessEnv = { ...process.env, ICEFLOE_RUN: stackEndpoints().run };
  delete env['NODE_TEST_CONTEXT'];
  const r = spawnSync('bash', ['scripts/stack', ...args], { cwd: root, env, encoding: 'utf8', timeout: 180_000 });
  return { status: r.status ?? 1, output: `${r.stdout}\n${r.stderr}` };
}

export function stopService(service: string): void {
  const r = stack('stop', service);
  if (r.status !== 0) throw new Error(`scripts/stack stop ${service} failed:\n${r.output}`);
}

/** Starts the service unless it is up, and waits until it is ready (the stack's readiness check). */
export function ensureStarted(service: string): void {
  const r = stack('start', service);
  if (r.status !== 0) throw new Error(`scripts/stack start ${service} failed:\n${r.output}`);
}

/** Registers the `after` hook that brings `service` back whatever happens to the test. */
export function restoreServiceAfter(t: TestContext, service: string): void {
  t.after(() => ensureStarted(service));
}
