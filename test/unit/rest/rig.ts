/** A REST server over a FakeHerder, and a request helper that parses JSON answers. */
import assert from 'node:assert/strict';
import { buildServer } from '../../../src/rest/server.ts';
import type { RestServer, RestServerOptions } from '../../../src/rest/server.ts';
import { FakeHerder } from './fake-herder.ts';

export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The parsed body (undefined unless the answer is JSON). */
  readonly json: unknown;
}

export interface Rig {
  readonly herder: FakeHerder;
  readonly server: RestServer;
  req(method: string, url: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
}

export function rig(options: RestServerOptions = {}): Rig {
  const herder = new FakeHerder();
  const server = buildServer(herder, options);
  return {
    herder,
    server,
    async req(method, url, body, headers = {}) {
      const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      const h = text === undefined || 'content-type' in headers ? headers : { 'content-type': 'application/json', ...headers };
      const r = await server.inject({ method, url, headers: h, ...(text === undefined ? {} : { body: text }) });
      return { ...r, json: r.body !== '' && r.headers['content-type'] === 'application/json' ? (JSON.parse(r.body) as unknown) : undefined };
    },
  };
}

/** Asserts Connect's error body: `{"error_code": status, "message": ...}` with a JSON Content-Type. */
export function assertError(a: Answer, status: number, message: string | RegExp): void {
  assert.equal(a.status, status, a.body);
  assert.equal(a.headers['content-type'], 'application/json');
  const body = a.json as { error_code: unknown; message: unknown };
  assert.deepEqual(Object.keys(body).sort(), ['error_code', 'message']);
  assert.equal(body.error_code, status);
  if (typeof message === 'string') assert.equal(body.message, message);
  else assert.match(String(body.message), message);
}
