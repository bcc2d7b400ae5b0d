/**
 * Failing infrastructure, end to end (issue 14): one worker (`icefloe standalone`, tasks as child
 * processes) and one connector (Avro values, the stack's REST catalog on S3) whose S3 store, REST catalog
 * and schema registry are all reached through the fault proxy. The outages run one after another, each
 * while a new batch of records is produced:
 *
 *   1. S3 answers 503 SlowDown to every data-file upload, then holds every upload unanswered (each times
 *      out after iceberg.catalog.s3.request-timeout-ms, 1.5 s here);
 *   2. the catalog answers 503 to everything, then resets every connection;
 *   3. the catalog answers 409 to every commit of the table;
 *   4. the registry answers 503 while the records carry a schema id the worker has not fetched yet;
 *   5. PostgreSQL (the REST catalog's JDBC store) restarts: stopped with the stack's own service script,
 *      started again a few seconds later.
 *
 * During each, GET /connectors/<name>/status (the Kafka Connect REST API) must name the cause in the
 * connector's or the task's `trace` while both stay RUNNING; after each the trace clears and, at the end,
 * the table holds every record exactly once by Kafka coordinates — without any restart by hand.
 * Kafka broker restarts are test/e2e/sink-broker-restart.test.ts; the retry bounds themselves
 * (errors.retry.timeout, errors.retry.delay.max.ms) are test/unit/runtime/infra-retry.test.ts.
 *
 * Restarts a shared service (PostgreSQL, which the catalog and the registry use) for a few seconds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import avro from 'avsc';
import { ConfluentKafkaAdmin, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import { ConfluentSchemaResolver } from '../../src/decode/registry/schema-registry.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import type { RuleSpec } from '../fault-proxy/client.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, unique } from '../helpers/kafka.ts';
import { avroFramed, committedRecords, e2eResources, PROCESS_WORKER, sinkConnector, stopWorker, uniqueIdent } from '../helpers/sink-e2e.ts';
import { ensureStarted, restoreServiceAfter, stopService } from '../helpers/stack-services.ts';
import { proxyRegistryUrl, stackEndpoints } from '../helpers/stack.ts';
import { startWorker, taskFailures } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const TIMEOUT = 240_000;

interface Status {
  readonly connector: { readonly state: string; readonly trace?: string };
  readonly tasks: readonly { readonly id: number; readonly state: string; readonly trace?: string }[];
}

function orderSchema(name: string): { type: 'record'; name: string; fields: { name: string; type: unknown; default?: unknown }[] } {
  return { type: 'record', name, fields: [{ name: 'seq', type: 'long' }, { name: 'label', type: 'string' }] };
}

function framed(id: number, type: avro.Type, seq: number): Buffer {
  return avroFramed(id, type, { seq, label: `order ${seq}` });
}

/** Every text of the status that can say what is wrong, one per line. */
const traces = (s: Status): string => [s.connector.trace, ...s.tasks.map((t) => t.trace)].filter((x) => x !== undefined).join('\n');

test('outages of S3, the catalog (5xx, 409s), the registry and PostgreSQL: the status names each while it lasts, then every record lands once', { timeout: TIMEOUT }, async (t) => {
  const started = Date.now();
  const res = await e2eResources(t);
  const e = stackEndpoints();
  const proxy = new FaultProxy(e.proxyControlUrl);
  const topic = unique('e2e-infra');
  const control = unique('e2e-control');
  const ns = uniqueIdent('e2e');
  const table = `${ns}.orders`;
  const name = unique('e2e-infra');
  res.topics.push(topic, control);
  res.tables.push(table);
  const subject = `${topic}-value`;
  const registry = new ConfluentSchemaResolver({ urls: [e.registryUrl] });
  t.after(async () => {
    for (const q of ['', '?permanent=true']) await fetch(`${e.registryUrl}/subjects/${encodeURIComponent(subject)}${q}`, { method: 'DELETE' }).catch(() => undefined);
  });
  const v1 = orderSchema(uniqueIdent('Order'));
  const id1 = await registry.register(subject, { type: 'AVRO', schema: JSON.stringify(v1) });
  const type = avro.Type.forSchema(v1 as avro.Schema);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  try {
    await admin.ensureTopic({ name: topic, partitions: 2, replicationFactor: -1 });
  } finally {
    await admin.close();
  }
  const producer = await ConfluentRecordProducer.connect({ settings: await kafkaSettings(), clientId: 'icefloe-e2e-infra-faults' });
  t.after(() => producer.close());
  const produced: Coordinates[] = [];
  let seq = 0;
  let writer = { id: id1, type };
  const produce = async (n: number): Promise<void> => {
    const records = Array.from({ length: n }, (_, i) => ({ topic, partition: i % 2, key: null, value: framed(writer.id, writer.type, seq++) }));
    for (const d of await producer.send(records)) produced.push({ topic: d.topic, partition: d.partition, offset: d.offset });
  };

  const worker = startWorker({
    worker: PROCESS_WORKER,
    args: [], // stays up whatever happens: its REST status is what the test reads
    connectors: [
      sinkConnector({
        name,
        topics: topic,
        controlTopic: control,
        config: {
          'value.converter': 'io.confluent.connect.avro.AvroConverter',
          'value.converter.schema.registry.url': proxyRegistryUrl(),
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.catalog.uri': e.proxyCatalogUri,
          'iceberg.catalog.s3.endpoint': e.proxyS3Endpoint,
          'iceberg.catalog.s3.request-timeout-ms': '1500',
          'iceberg.control.commit.interval-ms': '1000',
          // Short waits, so each recovery is seen within seconds (the default cap is 60 s).
          'errors.retry.delay.max.ms': '2000',
          'errors.tolerance': 'all', // never consulted: nothing here is a bad record
        },
      }),
    ],
  });
  res.workers.push(worker);
  const base = await worker.restUrl();
  const status = async (): Promise<Status> => (await (await fetch(`${base}/connectors/${name}/status`)).json()) as Status;
  const until = async (w: WorkerProcess, what: string, check: () => boolean | Promise<boolean>, timeoutMs = 45_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (w.child.exitCode !== null) throw new Error(`waiting for ${what}: the worker exited:\n${w.lines.slice(-15).join('\n')}`);
      if (Date.now() > deadline) throw new Error(`no ${what} after ${timeoutMs} ms; status ${JSON.stringify(await status())}\n${w.lines.slice(-15).join('\n')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const seen: Record<string, string> = {};
  /**
   * One outage: start it, produce `n` records, wait until the status names it (`cause`) with the connector
   * and its task RUNNING, end it, and wait until everything produced so far is committed and no trace is left.
   */
  const outage = async (label: string, cause: RegExp, begin: () => Promise<void>, end: () => Promise<void>): Promise<void> => {
    const t0 = Date.now();
    await begin();
    try {
      await produce(20);
      await until(worker, `a status naming ${label}`, async () => {
        const s = await status();
        if (!cause.test(traces(s))) return false;
        assert.equal(s.connector.state, 'RUNNING', `${label}: the connector stays RUNNING`);
        assert.deepEqual(s.tasks.map((x) => x.state), ['RUNNING'], `${label}: the task stays RUNNING`);
        seen[label] = traces(s);
        return true;
      });
    } finally {
      await end();
    }
    await until(worker, `everything committed after ${label}`, () => committedRecords(worker, table) >= produced.length, 60_000);
    await until(worker, `the status clear after ${label}`, async () => traces(await status()) === '');
    t.diagnostic(`${label}: ${Date.now() - t0} ms; status said: ${seen[label]?.replaceAll('\n', ' | ')}`);
  };
  const withRule = (spec: RuleSpec): { begin: () => Promise<void>; end: () => Promise<void> } => {
    let id: string | undefined;
    return {
      begin: async () => {
        id = await proxy.arm(spec);
      },
      end: async () => {
        if (id !== undefined) await proxy.remove(id);
      },
    };
  };
  const icebergError = (code: number, type: string, message: string): string => JSON.stringify({ error: { message, type, code } });

  // The table exists and the first records are in, before anything fails.
  await produce(20);
  await until(worker, 'the first records committed', () => committedRecords(worker, table) >= produced.length, 60_000);
  assert.equal(traces(await status()), '');

  const s3 = withRule({ target: 's3', match: { method: 'PUT', path: `/${ns}/.*\\.parquet` }, times: 0, fault: { kind: 'status', preset: 'slowdown' } });
  await outage('S3 503 SlowDown', /failed after \d+ attempt\(s\): SlowDown, HTTP 503/, s3.begin, s3.end);

  const s3Hold = withRule({ target: 's3', match: { method: 'PUT', path: `/${ns}/.*\\.parquet` }, times: 0, fault: { kind: 'hold' } });
  await outage('S3 timing out', /S3 put \S+ failed after \d+ attempt\(s\): no answer within 1500 ms \(the request timed out\)/, s3Hold.begin, s3Hold.end);

  const catalogDown = withRule({ target: 'catalog', times: 0, fault: { kind: 'status', code: 503, body: icebergError(503, 'ServiceUnavailableException', 'catalog down (injected by the fault proxy)'), headers: { 'content-type': 'application/json' } } });
  await outage('the catalog down (503)', /answered 503 ServiceUnavailableException: catalog down \(injected by the fault proxy\)/, catalogDown.begin, catalogDown.end);

  const catalogReset = withRule({ target: 'catalog', times: 0, fault: { kind: 'reset' } });
  await outage('the catalog resetting connections', /REST catalog|ECONNRESET|socket|fetch failed/i, catalogReset.begin, catalogReset.end);

  const conflicts = withRule({
    target: 'catalog',
    match: { method: 'POST', path: `/v1/.*namespaces/${ns}/tables/orders$` },
    times: 0,
    fault: { kind: 'status', code: 409, body: icebergError(409, 'CommitFailedException', 'Requirement failed: injected conflict (fault proxy)'), headers: { 'content-type': 'application/json' } },
  });
  await outage('409 to every commit', /conflicted: 409 CommitFailedException: Requirement failed: injected conflict/, conflicts.begin, conflicts.end);

  // A schema the worker has not fetched: registered directly (not through the proxy), then the proxy cuts the registry.
  const v2 = { ...v1, fields: [...v1.fields, { name: 'note', type: ['null', 'string'], default: null }] };
  writer = { id: await registry.register(subject, { type: 'AVRO', schema: JSON.stringify(v2) }), type: avro.Type.forSchema(v2 as avro.Schema) };
  assert.notEqual(writer.id, id1);
  const registryDown = withRule({ target: 'registry', times: 0, fault: { kind: 'status', code: 503, body: JSON.stringify({ error_code: 50301, message: 'registry down (injected by the fault proxy)' }), headers: { 'content-type': 'application/json' } } });
  await outage('the registry down (503)', /wait for a record's schema from the registry .*answered HTTP 503/, registryDown.begin, registryDown.end);

  restoreServiceAfter(t, 'postgres');
  await outage(
    'PostgreSQL restarting',
    /REST catalog \S+ answered 500 \S*SQLException/,
    async () => stopService('postgres'),
    async () => ensureStarted('postgres'),
  );

  await stopWorker(worker);
  assert.equal(taskFailures(worker).length, 0, 'no task failed');
  await assertExactlyOnce(table, produced);
  t.diagnostic(`${produced.length} records, ${Date.now() - started} ms in all`);
});
