/**
 * The /connectors endpoints over a fake herder: Connect's status codes, Location, bodies, what reaches
 * the herder (strings, injected name, initial state), and the checks Connect's resources make before
 * the herder (name vs URL, nulls, nested values, empty offsets).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SINK_CLASS } from './fake-herder.ts';
import { assertError, rig } from './rig.ts';

const CREATE = { name: 'orders', config: { 'connector.class': SINK_CLASS, 'tasks.max': 2, 'iceberg.tables.auto-create-enabled': true, topics: 'orders' } };

test('POST /connectors: 201, absolute Location, ConnectorInfo; numbers and booleans stored as their text; name injected', async () => {
  const r = rig();
  const a = await r.req('POST', '/connectors', CREATE, { host: 'worker-1:8083' });
  assert.equal(a.status, 201);
  assert.equal(a.headers.location, 'http://worker-1:8083/connectors/orders');
  assert.equal(a.headers['content-type'], 'application/json');
  assert.deepEqual(a.json, {
    name: 'orders',
    config: { 'connector.class': SINK_CLASS, 'tasks.max': '2', 'iceberg.tables.auto-create-enabled': 'true', topics: 'orders', name: 'orders' },
    tasks: [],
    type: 'sink',
  });
  assert.deepEqual(r.herder.calls.at(-1), ['createConnector', 'orders', { 'connector.class': SINK_CLASS, 'tasks.max': '2', 'iceberg.tables.auto-create-enabled': 'true', topics: 'orders', name: 'orders' }, 'STARTED']);
  // A number keeps the digits it was written with (Jackson reads it as text), beyond 2^53 too.
  await r.req('POST', '/connectors', '{"name":"n","config":{"connector.class":"x","a":2.50,"b":12345678901234567890}}');
  assert.deepEqual(r.herder.calls.at(-1)?.[2], { 'connector.class': 'x', a: '2.50', b: '12345678901234567890', name: 'n' });
  // The name is trimmed; a percent-encoded name comes back encoded in Location.
  const spaced = await r.req('POST', '/connectors', { name: '  a b->c:d  ', config: { 'connector.class': SINK_CLASS } }, { host: 'h:1' });
  assert.equal(spaced.headers.location, 'http://h:1/connectors/a%20b-%3Ec:d', 'encoded as a URI path (observed on 4.3.1: %20a-%3Eb)');
  assert.equal(r.herder.calls.at(-1)?.[1], 'a b->c:d');
});

test('POST /connectors: initial_state in any case (another is Jackson\'s 500); name mismatch and nulls 400; nested values 500 as on 4.3.1', async () => {
  const r = rig();
  for (const [given, target] of [['running', 'STARTED'], ['Paused', 'PAUSED'], ['STOPPED', 'STOPPED']] as const) {
    const name = `c-${given}`;
    assert.equal((await r.req('POST', '/connectors', { name, config: { 'connector.class': SINK_CLASS }, initial_state: given })).status, 201);
    assert.equal(r.herder.calls.at(-1)?.[3], target);
  }
  assertError(await r.req('POST', '/connectors', { name: 'x', config: { 'connector.class': SINK_CLASS }, initial_state: 'STARTED' }), 500, /^Cannot construct instance of `InitialState`, problem: No enum constant STARTED/);
  assertError(await r.req('POST', '/connectors', { name: 'a', config: { name: 'b', 'connector.class': SINK_CLASS } }), 400, "Connector name configuration (b) doesn't match connector name in the URL (a)");
  assertError(
    await r.req('POST', '/connectors', { name: 'a', config: { 'connector.class': SINK_CLASS, topics: null, 'x.y': null } }),
    400,
    'Connector configuration is invalid and contains the following 2 error(s):\nNull value can not be supplied as the configuration value.\nNull value can not be supplied as the configuration value.\n' +
      'You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`',
  );
  assertError(await r.req('POST', '/connectors', { name: 'a', config: { 'connector.class': SINK_CLASS, topics: ['a'] } }), 500, 'Cannot deserialize value of type `java.lang.String` from Array value (token `JsonToken.START_ARRAY`) (through reference chain: ["topics"])');
  assertError(await r.req('POST', '/connectors', { name: 'a', config: { 'connector.class': SINK_CLASS, nested: { a: 1 } } }), 500, /^Cannot deserialize value of type `java.lang.String` from Object value .*\["nested"\]/);
  assert.equal(r.herder.calls.filter((c) => c[0] === 'createConnector').length, 3, 'no refused request reached the herder');
});

test('POST /connectors: no name reaches the herder as "" (its validation answers 400); no config or no body is 500; existing is 409', async () => {
  const r = rig();
  assertError(await r.req('POST', '/connectors', { config: { 'connector.class': SINK_CLASS } }), 400, /Connector configuration is invalid/);
  assert.equal(r.herder.calls.at(-1)?.[1], '');
  assertError(await r.req('POST', '/connectors', { name: 'a' }), 500, /no "config" object/);
  assertError(await r.req('POST', '/connectors', ''), 500, /no body/);
  r.herder.add('orders');
  assertError(await r.req('POST', '/connectors', CREATE), 409, 'Connector orders already exists');
  assertError(await r.req('POST', '/connectors', { name: 'b', config: { topics: 'x' } }), 400, /contains no connector type/);
});

test('GET /connectors: names; repeated expand; status,info is not split; connectors without status left out of expand=status', async () => {
  const r = rig();
  r.herder.add('a');
  r.herder.add('b');
  r.herder.noStatus.add('b');
  assert.deepEqual((await r.req('GET', '/connectors')).json, ['a', 'b']);
  assert.deepEqual((await r.req('GET', '/connectors/')).json, ['a', 'b'], 'trailing slash (kcctl)');
  assert.deepEqual((await r.req('GET', '/connectors?search=x&forward=true')).json, ['a', 'b'], 'unknown and forward params ignored');
  const both = (await r.req('GET', '/connectors?expand=status&expand=info')).json as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(both), ['a']);
  assert.deepEqual(Object.keys(both.a ?? {}).sort(), ['info', 'status']);
  assert.equal((both.a?.status as { connector: { state: string } }).connector.state, 'RUNNING');
  const info = (await r.req('GET', '/connectors?expand=info')).json as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(info), ['a', 'b'], 'with info only, a connector without status is listed');
  assert.deepEqual((await r.req('GET', '/connectors?expand=status,info')).json, { a: {}, b: {} });
});

test('GET connector, config, status, tasks, task status: 200 with the herder\'s entity; unknown ones 404 with its message', async () => {
  const r = rig();
  r.herder.add('orders', { topics: 'orders' }, 'STARTED', 2);
  assert.deepEqual((await r.req('GET', '/connectors/orders')).json, {
    name: 'orders',
    config: { 'connector.class': SINK_CLASS, name: 'orders', topics: 'orders' },
    tasks: [{ connector: 'orders', task: 0 }, { connector: 'orders', task: 1 }],
    type: 'sink',
  });
  assert.deepEqual((await r.req('GET', '/connectors/orders/config/')).json, { 'connector.class': SINK_CLASS, name: 'orders', topics: 'orders' });
  const status = await r.req('GET', '/connectors/orders/status');
  assert.equal(status.status, 200);
  assert.equal((status.json as { tasks: unknown[] }).tasks.length, 2);
  const tasks = (await r.req('GET', '/connectors/orders/tasks')).json as { id: unknown }[];
  assert.deepEqual(tasks[1]?.id, { connector: 'orders', task: 1 });
  assert.deepEqual((await r.req('GET', '/connectors/orders/tasks/1/status')).json, { id: 1, state: 'RUNNING', worker_id: 'worker-1:8083' });
  assert.deepEqual(r.herder.calls.findLast((c) => c[0] === 'taskStatus'), ['taskStatus', 'orders', 1], 'the task id reaches the herder as a number');
  assertError(await r.req('GET', '/connectors/nope'), 404, 'Connector nope not found');
  assertError(await r.req('GET', '/connectors/nope/config'), 404, 'Connector nope not found');
  assertError(await r.req('GET', '/connectors/nope/status'), 404, 'No status found for connector nope');
  assertError(await r.req('GET', '/connectors/orders/tasks/7/status'), 404, 'No status found for task orders-7');
});

test('percent-encoded names are decoded (Strimzi sends -> as %2D%3E)', async () => {
  const r = rig();
  r.herder.add('a->b');
  assert.equal((await r.req('GET', '/connectors/a%2D%3Eb/status')).status, 200);
  assert.deepEqual(r.herder.calls.at(-1), ['connectorStatus', 'a->b']);
});

test('PUT config: 201 + Location when it created, 200 when it updated; name mismatch and nulls 400; arrays 500 as on 4.3.1', async () => {
  const r = rig();
  const created = await r.req('PUT', '/connectors/orders/config', { 'connector.class': SINK_CLASS, 'tasks.max': 1 }, { host: 'w:8083' });
  assert.equal(created.status, 201);
  assert.equal(created.headers.location, 'http://w:8083/connectors/orders');
  assert.deepEqual(r.herder.calls.at(-1), ['putConnectorConfig', 'orders', { 'connector.class': SINK_CLASS, 'tasks.max': '1', name: 'orders' }]);
  const updated = await r.req('PUT', '/connectors/orders/config', { 'connector.class': SINK_CLASS, 'tasks.max': '3', name: 'orders' });
  assert.equal(updated.status, 200);
  assert.equal(updated.headers.location, undefined);
  assert.equal((updated.json as { config: Record<string, string> }).config['tasks.max'], '3');
  // `"name": null` is replaced by the URL's name, as Connect's checkAndPutConnectorConfigName does.
  assert.equal((await r.req('PUT', '/connectors/orders/config', { 'connector.class': SINK_CLASS, name: null })).status, 200);
  assertError(await r.req('PUT', '/connectors/orders/config', { 'connector.class': SINK_CLASS, name: 'other' }), 400, "Connector name configuration (other) doesn't match connector name in the URL (orders)");
  assertError(await r.req('PUT', '/connectors/orders/config', { 'connector.class': SINK_CLASS, topics: null }), 400, /contains the following 1 error\(s\):\nNull value can not be supplied as the configuration value\.\n/);
  assertError(await r.req('PUT', '/connectors/orders/config', { 'connector.class': SINK_CLASS, x: [1] }), 500, /from Array value/);
  assertError(await r.req('PUT', '/connectors/orders/config', '["a"]'), 500, /^Cannot deserialize value of type `java.util.LinkedHashMap<java.lang.String,java.lang.String>` from Array value/);
});

test('PATCH config: 200 merged; null deletes a key; a changed name is 400; an unknown connector 404', async () => {
  const r = rig();
  r.herder.add('orders', { topics: 'orders', 'tasks.max': '1' });
  const a = await r.req('PATCH', '/connectors/orders/config', { 'tasks.max': 4, topics: null });
  assert.equal(a.status, 200);
  assert.deepEqual(r.herder.calls.at(-1), ['patchConnectorConfig', 'orders', { 'tasks.max': '4', topics: null }]);
  assert.deepEqual((a.json as { config: unknown }).config, { 'connector.class': SINK_CLASS, name: 'orders', 'tasks.max': '4' });
  assert.equal((await r.req('PATCH', '/connectors/orders/config', { name: 'orders' })).status, 200, 'the same name is fine');
  assertError(await r.req('PATCH', '/connectors/orders/config', { name: 'renamed' }), 400, "Connector name configuration (renamed) doesn't match connector name in the URL (orders)");
  assertError(await r.req('PATCH', '/connectors/nope/config', { a: 'b' }), 404, 'Connector nope not found');
});

test('pause/resume 202, stop 204, DELETE 204, all with empty bodies; unknown connectors 404', async () => {
  const r = rig();
  r.herder.add('orders');
  for (const [method, url, status, call] of [
    ['PUT', '/connectors/orders/pause', 202, 'pauseConnector'],
    ['PUT', '/connectors/orders/resume', 202, 'resumeConnector'],
    ['PUT', '/connectors/orders/stop', 204, 'stopConnector'],
    ['DELETE', '/connectors/orders', 204, 'deleteConnector'],
  ] as const) {
    const a = await r.req(method, url);
    assert.equal(a.status, status, url);
    assert.equal(a.body, '');
    assert.equal(a.headers['content-type'], undefined);
    assert.deepEqual(r.herder.calls.at(-1), [call, 'orders']);
  }
  assertError(await r.req('PUT', '/connectors/nope/pause'), 404, 'Unknown connector nope');
  assertError(await r.req('DELETE', '/connectors/nope'), 404, 'Connector nope not found');
});

test('restart: bare 204 (connector only); includeTasks or onlyFailed 202 with the plan; booleans read as Java does', async () => {
  const r = rig();
  r.herder.add('orders');
  const bare = await r.req('POST', '/connectors/orders/restart');
  assert.equal(bare.status, 204);
  assert.equal(bare.body, '');
  assert.deepEqual(r.herder.calls.at(-1), ['restartConnector', 'orders', { includeTasks: false, onlyFailed: false }]);
  const plan = await r.req('POST', '/connectors/orders/restart?includeTasks=true&onlyFailed=false');
  assert.equal(plan.status, 202);
  assert.equal((plan.json as { connector: { state: string } }).connector.state, 'RESTARTING');
  assert.equal((await r.req('POST', '/connectors/orders/restart?includeTasks=TRUE&onlyFailed=true')).status, 202);
  assert.deepEqual(r.herder.calls.findLast((c) => c[0] === 'restartConnector')?.[2], { includeTasks: true, onlyFailed: true });
  // Boolean.valueOf: anything but "true" is false.
  assert.equal((await r.req('POST', '/connectors/orders/restart?includeTasks=yes')).status, 204);
  assert.equal((await r.req('POST', '/connectors/orders/restart?includeTasks=')).status, 204);
  assert.equal((await r.req('POST', '/connectors/orders/restart?includeTasks=true&includeTasks=false')).status, 202, 'the first value counts');
  assertError(await r.req('POST', '/connectors/nope/restart'), 404, 'Unknown connector: nope');
});

test('task restart: 204; unknown task 404; a task id that is not an integer is Jersey\'s 404', async () => {
  const r = rig();
  r.herder.add('orders');
  const a = await r.req('POST', '/connectors/orders/tasks/0/restart');
  assert.equal(a.status, 204);
  assert.deepEqual(r.herder.calls.at(-1), ['restartTask', 'orders', 0]);
  assertError(await r.req('POST', '/connectors/orders/tasks/3/restart'), 404, 'Unknown task: orders-3');
  const calls = r.herder.calls.length;
  assertError(await r.req('POST', '/connectors/orders/tasks/x/restart'), 404, 'HTTP 404 Not Found');
  assertError(await r.req('GET', '/connectors/orders/tasks/1.5/status'), 404, 'HTTP 404 Not Found');
  assertError(await r.req('GET', '/connectors/orders/tasks/99999999999/status'), 404, 'HTTP 404 Not Found');
  assert.equal(r.herder.calls.length, calls, 'no herder call for a non-integer id');
});

test('offsets: GET 200; PATCH and DELETE 200 with a message while STOPPED, 400 otherwise; PATCH bodies checked as Connect does', async () => {
  const r = rig();
  r.herder.add('orders');
  assert.deepEqual((await r.req('GET', '/connectors/orders/offsets')).json, { offsets: [{ partition: { kafka_topic: 'orders', kafka_partition: 0 }, offset: { kafka_offset: 42 } }] });
  const body = { offsets: [{ partition: { kafka_topic: 'orders', kafka_partition: '1' }, offset: { kafka_offset: '10' } }, { partition: { kafka_topic: 'orders', kafka_partition: 2 }, offset: null }] };
  assertError(await r.req('PATCH', '/connectors/orders/offsets', body), 400, /^Connectors must be in the STOPPED state before their offsets can be modified/);
  assertError(await r.req('DELETE', '/connectors/orders/offsets'), 400, /STOPPED state/);
  r.herder.connectors.get('orders')!.target = 'STOPPED';
  const altered = await r.req('PATCH', '/connectors/orders/offsets', body);
  assert.equal(altered.status, 200);
  assert.match((altered.json as { message: string }).message, /^The Connect framework-managed offsets for this connector have been altered successfully/);
  assert.deepEqual(r.herder.calls.at(-1)?.[2], {
    offsets: [{ partition: { kafka_topic: 'orders', kafka_partition: 1 }, offset: { kafka_offset: 10 } }, { partition: { kafka_topic: 'orders', kafka_partition: 2 }, offset: null }],
  });
  const reset = await r.req('DELETE', '/connectors/orders/offsets');
  assert.equal(reset.status, 200);
  assert.match((reset.json as { message: string }).message, /have been reset successfully/);

  const empty = 'Partitions / offsets need to be provided for an alter offsets request';
  assertError(await r.req('PATCH', '/connectors/orders/offsets', { offsets: [] }), 400, empty);
  assertError(await r.req('PATCH', '/connectors/orders/offsets', {}), 400, empty);
  assertError(await r.req('PATCH', '/connectors/orders/offsets'), 500, /no body/);
  const bad = (partition: unknown, offset: unknown = { kafka_offset: 1 }) => r.req('PATCH', '/connectors/orders/offsets', { offsets: [{ partition, offset }] });
  assertError(await bad(null), 400, 'The partition for a sink connector offset cannot be null or missing');
  assertError(await bad({ kafka_topic: 'a' }), 400, "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'");
  assertError(await bad({ kafka_topic: null, kafka_partition: 0 }), 400, 'Kafka topic names must be valid strings and may not be null');
  assertError(await bad({ kafka_topic: 'a', kafka_partition: null }), 400, 'Kafka partitions must be valid numbers and may not be null');
  assertError(await bad({ kafka_topic: 'a', kafka_partition: 1.5 }), 400, "Failed to parse the following Kafka partition value in the provided offsets: '1.5'. Partition values for sink connectors need to be integers.");
  assertError(await bad({ kafka_topic: 'a', kafka_partition: 0 }, { offset: 1 }), 400, "The offset for a sink connector should either be null or contain the key 'kafka_offset'");
  assertError(await bad({ kafka_topic: 'a', kafka_partition: 0 }, { kafka_offset: 'ten' }), 400, "Failed to parse the following Kafka offset value in the provided offsets: 'ten'. Offset values for sink connectors need to be integers.");
  // An unknown connector is a 404 before its body is read.
  assertError(await r.req('PATCH', '/connectors/nope/offsets', { offsets: [{ partition: null }] }), 404, 'Connector nope not found');
});

test('topics: 200 {name: {topics}} (an unknown connector too); reset 202; the tracking switches answer 403', async () => {
  const r = rig();
  r.herder.add('orders');
  assert.deepEqual((await r.req('GET', '/connectors/orders/topics')).json, { orders: { topics: ['orders'] } });
  assert.deepEqual((await r.req('GET', '/connectors/nope/topics')).json, { nope: { topics: [] } });
  const reset = await r.req('PUT', '/connectors/nope/topics/reset');
  assert.equal(reset.status, 202);
  assert.equal(reset.body, '');
  const noReset = rig({ topicTracking: { enabled: true, allowReset: false } });
  assertError(await noReset.req('PUT', '/connectors/orders/topics/reset'), 403, 'Topic tracking reset is disabled.');
  assert.equal((await noReset.req('GET', '/connectors/orders/topics')).status, 200);
  const off = rig({ topicTracking: { enabled: false, allowReset: true } });
  assertError(await off.req('GET', '/connectors/orders/topics'), 403, 'Topic tracking is disabled.');
  assertError(await off.req('PUT', '/connectors/orders/topics/reset'), 403, 'Topic tracking is disabled.');
});
