/**
 * SigV4 for the REST catalog (AWS Glue `glue`, S3 Tables `s3tables`):
 * 1. our signer reproduces AWS's published test vectors (aws-sig-v4-test-suite: get-vanilla,
 *    get-vanilla-query-order-key-case, post-vanilla, post-x-www-form-urlencoded, post-sts-header-before;
 *    credentials AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1, service "service");
 * 2. every request the REST client sends — query strings, a multi-level namespace (%1F in the path,
 *    double-encoded in the canonical path as AWS requires for non-S3 services) and JSON bodies — verifies
 *    against an independent SigV4 implementation written here with node:crypto, running as a local endpoint;
 *    a wrong secret is refused there and surfaces as a ConfigError without the secret in it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { ConfigError } from '../../../src/core/errors.ts';
import { RestCatalog } from '../../../src/commit/rest/catalog.ts';
import { signSigV4 } from '../../../src/commit/rest/sigv4.ts';
import type { Schema } from '../../../src/commit/model.ts';
import { MiniRestCatalog } from '../../helpers/mini-rest-catalog.ts';
import type { RecordedRequest } from '../../helpers/mini-rest-catalog.ts';
import { emptyAppend } from '../../helpers/commits.ts';

const SUITE = {
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  region: 'us-east-1',
  service: 'service',
  contentSha256Header: false, // the suite predates x-amz-content-sha256
};
const SUITE_DATE = new Date('2015-08-30T12:36:00Z');
const STS_TOKEN =
  'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==';
const SCOPE = 'AKIDEXAMPLE/20150830/us-east-1/service/aws4_request';

const VECTORS: { name: string; method: string; url: string; headers?: Record<string, string>; body?: string; token?: string; signed: string; signature: string }[] = [
  { name: 'get-vanilla', method: 'GET', url: 'https://example.amazonaws.com/', signed: 'host;x-amz-date', signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31' },
  {
    name: 'get-vanilla-query-order-key-case',
    method: 'GET',
    url: 'https://example.amazonaws.com/?Param2=value2&Param1=value1',
    signed: 'host;x-amz-date',
    signature: 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500',
  },
  { name: 'post-vanilla', method: 'POST', url: 'https://example.amazonaws.com/', signed: 'host;x-amz-date', signature: '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b' },
  {
    name: 'post-x-www-form-urlencoded',
    method: 'POST',
    url: 'https://example.amazonaws.com/',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'Param1=value1',
    signed: 'content-type;host;x-amz-date',
    signature: 'ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a',
  },
  {
    name: 'post-sts-header-before',
    method: 'POST',
    url: 'https://example.amazonaws.com/',
    token: STS_TOKEN,
    signed: 'host;x-amz-date;x-amz-security-token',
    signature: '85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead',
  },
];

for (const v of VECTORS) {
  test(`SigV4 test suite: ${v.name}`, async () => {
    const headers = await signSigV4(
      { method: v.method, url: new URL(v.url), headers: v.headers ?? {}, ...(v.body === undefined ? {} : { body: v.body }) },
      { ...SUITE, credentials: { ...SUITE.credentials, ...(v.token === undefined ? {} : { sessionToken: v.token }) } },
      SUITE_DATE,
    );
    assert.equal(headers['authorization'], `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=${v.signed}, Signature=${v.signature}`);
    assert.equal(headers['x-amz-date'], '20150830T123600Z');
    if (v.token !== undefined) assert.equal(headers['x-amz-security-token'], v.token);
    assert.equal(headers['x-amz-content-sha256'], undefined);
  });
}

test('the payload hash header is sent (and signed) by default, as Glue and S3 Tables expect', async () => {
  const headers = await signSigV4({ method: 'POST', url: new URL('https://glue.us-east-1.amazonaws.com/iceberg/v1/config'), headers: {}, body: '{}' }, { ...SUITE, contentSha256Header: true }, SUITE_DATE);
  assert.equal(headers['x-amz-content-sha256'], createHash('sha256').update('{}').digest('hex'));
  assert.match(headers['authorization'] ?? '', /SignedHeaders=host;x-amz-content-sha256;x-amz-date,/);
});

// ---- an independent verifier (AWS General Reference, "Create a signed AWS API request") -------------

const rfc3986 = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const hmac = (key: Buffer | string, s: string): Buffer => createHmac('sha256', key).update(s, 'utf8').digest();

/** Why the request's signature is wrong, or undefined when it is right. */
function verify(r: RecordedRequest, secrets: Record<string, string>, service: string, region: string): string | undefined {
  const auth = String(r.headers.authorization ?? '');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(auth);
  if (m === null) return `malformed authorization ${auth}`;
  const [, akid = '', date = '', reg, svc, signedHeaders = '', signature] = m;
  if (reg !== region || svc !== service) return `scope ${reg}/${svc}`;
  const secret = secrets[akid];
  if (secret === undefined) return 'unknown access key';
  const amzDate = String(r.headers['x-amz-date'] ?? '');
  if (!amzDate.startsWith(date)) return 'date mismatch';
  const payloadHash = sha256(r.body);
  if (r.headers['x-amz-content-sha256'] !== undefined && r.headers['x-amz-content-sha256'] !== payloadHash) return 'payload hash header mismatch';
  // Non-S3 services: each segment of the path as sent is URI-encoded once more.
  const canonicalPath = r.path.split('/').map(rfc3986).join('/');
  const query = [...r.query.entries()].map(([k, v]) => [rfc3986(k), rfc3986(v)] as const).sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1));
  const canonicalQuery = query.map(([k, v]) => `${k}=${v}`).join('&');
  const names = signedHeaders.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date')) return 'host and x-amz-date must be signed';
  const canonicalHeaders = names.map((n) => `${n}:${String(r.headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonical = [r.method, canonicalPath, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, `${date}/${region}/${service}/aws4_request`, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
  const expected = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return expected === signature ? undefined : `signature mismatch for canonical request:\n${canonical}`;
}

const schema: Schema = { schemaId: 0, fields: [{ id: 1, name: 'id', required: true, type: { kind: 'long' } }] };

test('every request of the REST client verifies at a SigV4-checking endpoint (paths, %1F, queries, bodies)', async () => {
  const failures: string[] = [];
  const server = await new MiniRestCatalog({
    overrides: { prefix: 'catalogs/123456789012' },
    authorize: (r) => {
      const why = verify(r, { AKIDGLUE: 'glue-secret/key+value' }, 'glue', 'eu-west-1');
      if (why === undefined) return undefined;
      failures.push(`${r.method} ${r.path}: ${why}`);
      return { status: 403, body: { error: { message: 'signature', type: 'ForbiddenException', code: 403 } } };
    },
  }).start();
  try {
    const catalog = new RestCatalog({
      uri: server.uri,
      warehouse: '123456789012:s3tablescatalog/bucket',
      auth: { type: 'sigv4', region: 'eu-west-1', service: 'glue', credentials: async () => ({ accessKeyId: 'AKIDGLUE', secretAccessKey: 'glue-secret/key+value' }) },
    });
    const id = { namespace: ['sales', 'eu west'], name: 'orders' };
    await catalog.createNamespace(id.namespace);
    await catalog.createTable(id, { schema, properties: { note: 'ünïcödé & spaces' } });
    const loaded = await catalog.loadTable(id);
    const append = await emptyAppend(loaded, 'signed-commit');
    await catalog.commitTable(id, append.requirements, append.updates);
    await catalog.listTables(id.namespace);
    await catalog.listNamespaces(['sales']);
    assert.deepEqual(failures, []);
    assert.ok(server.requests.length >= 7);
    assert.ok(server.requests.some((r) => r.path.includes('%1F')), 'a multi-level namespace path was signed');
    assert.ok(server.requests.every((r) => r.headers['x-amz-content-sha256'] !== undefined));

    const wrong = new RestCatalog({
      uri: server.uri,
      auth: { type: 'sigv4', region: 'eu-west-1', service: 'glue', credentials: { accessKeyId: 'AKIDGLUE', secretAccessKey: 'WRONG-SECRET' } },
    });
    await assert.rejects(wrong.loadTable(id), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.doesNotMatch(JSON.stringify({ m: e.message, c: e.context }), /WRONG-SECRET/);
      return true;
    });
  } finally {
    await server.stop();
  }
});
