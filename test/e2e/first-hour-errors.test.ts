/**
 * The errors a new user meets in the first hour (issue 11), as `icefloe standalone` shows them: the
 * message on stderr names what is at fault (the Kafka address and the cause, the misspelled key and the
 * key it meant, the missing table and the keys that fix it) and the exit code says which kind of problem
 * it is (2: the configuration, 1: the infrastructure), as src/cli.ts maps them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unique } from '../helpers/kafka.ts';
import { e2eResources, PROCESS_WORKER, produceJson, SCHEMALESS_JSON, sinkConnector, uniqueIdent } from '../helpers/sink-e2e.ts';
import { startWorker } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';
import { freePort } from '../helpers/stack.ts';

const TIMEOUT = 120_000;

/** The worker's stderr line from the CLI ("icefloe standalone: ..."), once it exited. */
function cliError(w: WorkerProcess): string {
  const lines = w.lines.filter((l) => l.startsWith('icefloe standalone: '));
  assert.equal(lines.length, 1, `one error line, printed once:\n${w.lines.join('\n')}`);
  return lines[0] as string;
}

function connector(config: Record<string, string> = {}): { name: string; config: Record<string, string> } {
  return sinkConnector({ name: unique('e2e-first-hour'), topics: unique('e2e-first-hour'), controlTopic: unique('e2e-first-hour-control'), config: { ...SCHEMALESS_JSON, 'iceberg.tables': `${uniqueIdent('e2e')}.t`, 'iceberg.tables.auto-create-enabled': 'true', ...config } });
}

test('unreachable Kafka: the message names bootstrap.servers and the cause (refused, unknown host, TLS against a plaintext listener)', { timeout: TIMEOUT }, async (t) => {
  const port = await freePort();
  const cases = [
    { worker: { 'bootstrap.servers': `127.0.0.1:${port}` }, code: '1', message: new RegExp(`^icefloe standalone: cannot reach Kafka at bootstrap\\.servers=127\\.0\\.0\\.1:${port}: connection refused: nothing listens on 127\\.0\\.0\\.1:${port}; is Kafka running there, and is the port right\\? \\(librdkafka: Connect to ipv4#127\\.0\\.0\\.1:${port} failed: Connection refused\\); no metadata within 8 s$`) },
    { worker: { 'bootstrap.servers': 'no-such-host.invalid:9092' }, code: '2', message: /^icefloe standalone: cannot reach Kafka at bootstrap\.servers=no-such-host\.invalid:9092: the host name no-such-host\.invalid does not resolve \(unknown host\): check the name in bootstrap\.servers \(librdkafka: Failed to resolve 'no-such-host\.invalid:9092'/ },
    // The stack's broker listens in PLAINTEXT: librdkafka's TLS handshake is closed by the peer.
    { worker: { 'security.protocol': 'SSL' }, code: '2', message: /^icefloe standalone: cannot reach Kafka at bootstrap\.servers=127\.0\.0\.1:\d+: the TLS handshake failed with security\.protocol=SSL: .*check security\.protocol and the ssl\.\* settings \(librdkafka: .*SSL/ },
  ];
  const started = Date.now();
  // Side by side: none of them touches the cluster.
  const runs = cases.map((c) => {
    const t0 = Date.now();
    const w = startWorker({ worker: { ...PROCESS_WORKER, ...c.worker }, connectors: [connector()] });
    return { c, w, ended: w.exited.then((code) => ({ code, seconds: (Date.now() - t0) / 1000 })) };
  });
  for (const { c, w, ended } of runs) {
    const { code, seconds } = await ended;
    assert.equal(code, c.code, w.lines.join('\n'));
    assert.match(cliError(w), c.message);
    // Refused waits its 8 s budget (a broker may be starting; the message says so); DNS and TLS are known
    // after librdkafka's first retry, so their messages carry no budget. Times include Node's start-up.
    t.diagnostic(`${c.worker['bootstrap.servers'] ?? c.worker['security.protocol']}: exit ${code} after ${seconds.toFixed(1)} s`);
    assert.ok(seconds < 30, `exited after ${seconds.toFixed(1)} s, not after the old 16 s request time-out plus start-up`);
    if (c.code === '2') assert.doesNotMatch(cliError(w), /no metadata within/);
  }
  t.diagnostic(`all three: ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

test('a misspelled key: the error names it with the key it meant, once; exit 2 before anything connects', { timeout: TIMEOUT }, async () => {
  const typos = [
    { drop: 'topics', add: { topic: 'orders' }, message: "icefloe standalone: connector NAME: 1 configuration error(s): Must configure one of topics or topics.regex — the config has 'topic': did you mean topics?" },
    { drop: 'iceberg.tables', add: { 'iceberg.table': 'sales.orders' }, message: "icefloe standalone: connector NAME: 1 configuration error(s): iceberg.tables: Must specify table name(s) — the config has 'iceberg.table': did you mean iceberg.tables?" },
  ];
  // A worker that cannot reach Kafka: validation comes first, so the typo is what the user sees.
  const runs = typos.map((typo) => {
    const c = connector(typo.add);
    delete c.config[typo.drop];
    return { typo, name: c.name, w: startWorker({ worker: { ...PROCESS_WORKER, 'bootstrap.servers': 'no-such-host.invalid:9092' }, connectors: [c] }) };
  });
  for (const { typo, name, w } of runs) {
    assert.equal(await w.exited, '2', w.lines.join('\n'));
    assert.equal(cliError(w), typo.message.replace('NAME', name));
  }
});

// A static table (iceberg.tables) that is missing is refused before the worker starts (config-errors.test.ts);
// a table a record names through dynamic routing is known missing only when the record comes.
test('a missing table with auto-create off: the failure names the record, the table, its missing namespace, and auto-create first', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-first-hour-missing');
  const ns = uniqueIdent('e2e_missing');
  res.topics.push(topic);
  const [at] = await produceJson(topic, 1, [{ partition: 0, value: { id: 1, target: `${ns}.orders` } }]);
  const c = sinkConnector({
    name: unique('e2e-first-hour-missing'),
    topics: topic,
    controlTopic: unique('e2e-first-hour-control'),
    config: { ...SCHEMALESS_JSON, 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 'target', 'iceberg.tables.auto-create-enabled': 'false' },
  });
  res.topics.push(c.config['iceberg.control.topic'] as string);
  const w = startWorker({ worker: PROCESS_WORKER, connectors: [c] });
  res.workers.push(w);
  const line = await w.waitFor(/"msg":"task \S+ failed/, 90_000);
  const error = String((JSON.parse(line) as { error: unknown }).error);
  assert.equal(
    error,
    `record ${topic}/0@${String(at?.offset)}: cannot be written: table "${ns}.orders" does not exist; its namespace ${ns} does not exist either, and iceberg.tables.auto-create-enabled is false. ` +
      'Fix: set iceberg.tables.auto-create-enabled=true (the connector then creates the namespace and the table from the records\' schema), or create the table in the catalog; ' +
      'only if such records should be dropped, set icefloe.tables.unrouted=skip to skip and count them.',
  );
  // Its only task FAILED for good: the worker exits 1 by itself (docs/sink.md "When tasks fail").
  assert.equal(await w.exited, '1');
});

test('a topic that does not exist: the failure names it and says how to create it', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('e2e-first-hour-nosuchtopic');
  const c = sinkConnector({ name: unique('e2e-first-hour-notopic'), topics: topic, controlTopic: unique('e2e-first-hour-control'), config: { ...SCHEMALESS_JSON, 'iceberg.tables': `${uniqueIdent('e2e')}.t`, 'iceberg.tables.auto-create-enabled': 'true' } });
  res.topics.push(c.config['iceberg.control.topic'] as string);
  const w = startWorker({ worker: PROCESS_WORKER, connectors: [c] });
  res.workers.push(w);
  const line = await w.waitFor(/"msg":"task \S+ failed/, 90_000);
  const error = String((JSON.parse(line) as { error: unknown }).error);
  assert.equal(error, `Kafka poll failed: Broker: Unknown topic or partition (ERR_UNKNOWN_TOPIC_OR_PART): topic ${topic} does not exist on the cluster (the connector's topics): create it (kafka-topics.sh --create, or icefloe generate --topic), or correct topics`);
  assert.equal(await w.exited, '1', 'its only task FAILED for good: the worker exits 1 by itself');
});
