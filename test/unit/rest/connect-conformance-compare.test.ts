/**
 * The REST conformance comparator (test/helpers/connect-conformance.ts): equal status codes and equal JSON
 * shapes pass whatever the values; a missing field, a changed type, a different status code, a different
 * element shape or a missing connector key are each reported, naming the step and the JSON path.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareRecordings, connectorNames, formatMismatches, strictEncode } from '../../helpers/connect-conformance.ts';
import type { Exchange, Recording, Step } from '../../helpers/connect-conformance.ts';

const namesA = connectorNames('run-a');
const namesB = connectorNames('run-b');

function step(id: string, opts: Partial<Step> = {}): Step {
  return { id, title: id, method: 'GET', path: () => `/${id}`, ...opts };
}

function exchange(id: string, status: number, body: unknown, contentType: string | undefined = body === undefined ? undefined : 'application/json'): Exchange {
  const text = body === undefined ? '' : JSON.stringify(body);
  return { id, title: id, method: 'GET', path: `/${id}`, requestContentType: undefined, requestBody: undefined, status, contentType, body, text };
}

function rec(side: string, names: Recording['names'], exchanges: Exchange[]): Recording {
  return { side, names, exchanges };
}

/** The mismatch lines of one step answered `a` by the reference and `b` by the other side. */
function diff(s: Step, a: Exchange, b: Exchange): string[] {
  const m = compareRecordings([s], rec('connect', namesA, [a]), rec('icefloe', namesB, [b]));
  return m.flatMap((x) => x.lines);
}

const status = { name: 'x', connector: { state: 'RUNNING', worker_id: '127.0.0.1:8083', version: '4.3.1' }, tasks: [{ id: 0, state: 'RUNNING', worker_id: 'w', version: '4.3.1' }], type: 'sink' };

test('equal status codes and shapes pass although every value differs', () => {
  const other = { name: 'y', connector: { state: 'PAUSED', worker_id: 'other:1', version: '0.1.0' }, tasks: [{ id: 3, state: 'PAUSED', worker_id: 'v', version: '9' }], type: 'source' };
  assert.deepEqual(diff(step('status'), exchange('status', 200, status), exchange('status', 200, other)), []);
});

test('a field missing on the other side is reported with its path', () => {
  const connector = Object.fromEntries(Object.entries(status.connector).filter(([k]) => k !== 'version'));
  const lines = diff(step('status'), exchange('status', 200, status), exchange('status', 200, { ...status, connector }));
  assert.deepEqual(lines, ['$.connector.version: string vs missing']);
});

test('an extra field on the other side is reported too', () => {
  const lines = diff(step('status'), exchange('status', 200, status), exchange('status', 200, { ...status, extra: 1 }));
  assert.deepEqual(lines, ['$.extra: missing vs number']);
});

test('a type change (string to number, object to string, null to number) is reported', () => {
  assert.deepEqual(diff(step('t'), exchange('t', 200, { id: 0, state: 'RUNNING' }), exchange('t', 200, { id: '0', state: 'RUNNING' })), ['$.id: number vs string']);
  assert.deepEqual(diff(step('t'), exchange('t', 200, { connector: { state: 'RUNNING' } }), exchange('t', 200, { connector: 'RUNNING' })), ['$.connector: object vs string']);
  assert.deepEqual(diff(step('l'), exchange('l', 200, { level: 'INFO', last_modified: null }), exchange('l', 200, { level: 'INFO', last_modified: 0 })), ['$.last_modified: null vs number']);
});

test('a different status code is reported, and with it the different error body', () => {
  const lines = diff(step('unknown'), exchange('unknown', 404, { error_code: 404, message: 'Connector c not found' }), exchange('unknown', 500, { error_code: 500, message: 'boom' }));
  assert.deepEqual(lines, ['status: 404 vs 500']);
  const shape = diff(step('unknown'), exchange('unknown', 404, { error_code: 404, message: 'm' }), exchange('unknown', 404, { error: 'm' }));
  assert.deepEqual(shape, ['$.error_code: number vs missing', '$.message: string vs missing', '$.error: missing vs string']);
});

test('arrays compare by element shape: a field missing in the elements, or an empty array against a full one', () => {
  const tasks = [{ id: 0, state: 'RUNNING', worker_id: 'w' }];
  assert.deepEqual(diff(step('s'), exchange('s', 200, { tasks }), exchange('s', 200, { tasks: [{ id: 0, state: 'RUNNING', worker_id: 'w' }, { id: 1, state: 'FAILED', worker_id: 'w' }] })), []);
  assert.deepEqual(diff(step('s'), exchange('s', 200, { tasks }), exchange('s', 200, { tasks: [{ id: 0, state: 'RUNNING' }] })), ['$.tasks[].worker_id: field only on the first side']);
  assert.deepEqual(diff(step('s'), exchange('s', 200, { tasks: [] }), exchange('s', 200, { tasks })), ['$.tasks[]: empty vs has elements']);
  // An optional field (in some elements only) on one side and in every element on the other.
  assert.deepEqual(diff(step('s'), exchange('s', 200, { tasks: [{ id: 0 }, { id: 1, trace: 't' }] }), exchange('s', 200, { tasks: [{ id: 0, trace: 't' }] })), ['$.tasks[].trace: in some elements only vs in every element']);
});

test('inside array elements null is data (a key without a default): only the non-null types count', () => {
  const defs = (values: unknown[]): unknown => values.map((v) => ({ name: 'k', default_value: v }));
  assert.deepEqual(diff(step('p'), exchange('p', 200, defs([null, '1'])), exchange('p', 200, defs(['x']))), []);
  assert.deepEqual(diff(step('p'), exchange('p', 200, defs([null, '1'])), exchange('p', 200, defs([1]))), ['$[].default_value: type null|string vs number']);
});

test('dictionaries (config maps) compare by value shape, whatever their keys', () => {
  const s = step('config', { dicts: [''] });
  assert.deepEqual(diff(s, exchange('config', 200, { 'connector.class': 'A', file: '/tmp/x' }), exchange('config', 200, { 'connector.class': 'B', 'iceberg.tables': 't', name: 'n' })), []);
  assert.deepEqual(diff(s, exchange('config', 200, { 'tasks.max': '1' }), exchange('config', 200, { 'tasks.max': 1 })), ['$.*: type string vs number']);
  // Without the dictionary marking, differing keys are differing fields.
  assert.ok(diff(step('config'), exchange('config', 200, { file: 'x' }), exchange('config', 200, { table: 'y' })).length > 0);
});

test('maps keyed by connector names compare after renaming each run name to its role; other connectors are dropped', () => {
  const s = step('expand', { connectorKeyed: [''] });
  const body = (names: Recording['names'], extra: Record<string, unknown> = {}): unknown => ({ [names.main]: { status }, [names.odd]: { status }, ...extra });
  assert.deepEqual(diff(s, exchange('expand', 200, body(namesA, { 'someone-else': { status } })), exchange('expand', 200, body(namesB))), []);
  const missingOdd = { [namesB.main]: { status } };
  assert.deepEqual(diff(s, exchange('expand', 200, body(namesA)), exchange('expand', 200, missingOdd)), ['$.<odd>: object vs missing']);
});

test('lists of connector names keep only the run names', () => {
  const s = step('list', { connectorList: true });
  assert.deepEqual(diff(s, exchange('list', 200, [namesA.main, 'other-run']), exchange('list', 200, [namesB.main])), []);
  assert.deepEqual(diff(s, exchange('list', 200, ['other-run']), exchange('list', 200, [namesB.main])), ['$[]: empty vs has elements']);
});

test('where the reference answers JSON the other side must say so; an extra Content-Type is fine', () => {
  assert.deepEqual(diff(step('h'), exchange('h', 200, { status: 'healthy', message: 'm' }), exchange('h', 200, { status: 'healthy', message: 'm' }, 'text/plain')), [
    'content-type: application/json vs text/plain',
  ]);
  // Connect's Jersey 404 carries no Content-Type; ours may.
  assert.deepEqual(diff(step('r'), exchange('r', 404, { error_code: 404, message: 'HTTP 404 Not Found' }, undefined), exchange('r', 404, { error_code: 404, message: 'x' })), []);
});

test('a Location the reference sends must be there and name the same connector (after its run name is replaced)', () => {
  const created = (location: string | undefined, names: Recording['names']): Exchange => ({ ...exchange('create', 201, { name: names.odd }), location });
  const s = step('create');
  const loc = (n: string): string => `http://127.0.0.1:8383/connectors/${encodeURIComponent(n)}`;
  assert.deepEqual(compareRecordings([s], rec('connect', namesA, [created(loc(namesA.odd), namesA)]), rec('icefloe', namesB, [created(`/connectors/${strictEncode(namesB.odd)}`, namesB)])).flatMap((m) => m.lines), []);
  assert.deepEqual(compareRecordings([s], rec('connect', namesA, [created(loc(namesA.odd), namesA)]), rec('icefloe', namesB, [created(undefined, namesB)])).flatMap((m) => m.lines), ['location: /connectors/<odd> vs (none)']);
  assert.deepEqual(compareRecordings([s], rec('connect', namesA, [created(loc(namesA.odd), namesA)]), rec('icefloe', namesB, [created(loc(namesB.main), namesB)])).flatMap((m) => m.lines), ['location: /connectors/<odd> vs /connectors/<main>']);
});

test('an empty body against a JSON body, and a step one side never answered, are mismatches', () => {
  assert.deepEqual(diff(step('pause'), exchange('pause', 202, undefined), exchange('pause', 202, { ok: true })), ['$: empty vs object']);
  const m = compareRecordings([step('a'), step('b')], rec('connect', namesA, [exchange('a', 200, {}), exchange('b', 200, {})]), rec('icefloe', namesB, [exchange('a', 200, {})]));
  assert.deepEqual(m.map((x) => [x.step, x.lines]), [['b', ['not recorded on icefloe']]]);
});

test('the report names the step, the lines and both answers', () => {
  const a = rec('connect', namesA, [exchange('status', 200, status)]);
  const b = rec('icefloe', namesB, [exchange('status', 404, { error_code: 404, message: 'No status found' })]);
  const text = formatMismatches(compareRecordings([step('status')], a, b), a, b);
  assert.match(text, /1 step\(s\) differ \(connect = expected, icefloe = got\)/);
  assert.match(text, /- status \(status\): GET \/status/);
  assert.match(text, /status: 200 vs 404/);
  assert.match(text, /icefloe: 404 \{"error_code":404/);
});

test('connector names are percent-encoded entirely outside letters, digits and _.~ (as Strimzi does)', () => {
  assert.equal(strictEncode('a->b c'), 'a%2D%3Eb%20c');
  assert.equal(strictEncode('é'), '%C3%A9');
});
