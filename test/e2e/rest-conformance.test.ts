/**
 * REST conformance (issue 12): the same scripted sequence of requests (test/helpers/connect-conformance-
 * sequence.ts: every endpoint, the error cases of connect-rest.md §1.2) goes to the stack's real Apache
 * Kafka Connect worker, and the answers are compared step by step: status code, media type, JSON shape.
 *
 * For now both sides are the reference worker (two runs with their own connector names): this proves the
 * sequence is deterministic, i.e. that any difference found against Icefloe is Icefloe's. Set
 * ICEFLOE_CONFORMANCE_OUT=<file> to keep the recordings as JSON (docs/design/rest-conformance.md was
 * written from them).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaJS } from '@confluentinc/kafka-javascript';
import { compareRecordings, deleteRunConnectors, formatMismatches, makeContext, poll, runSequence } from '../helpers/connect-conformance.ts';
import type { Recording, Side } from '../helpers/connect-conformance.ts';
import { conformanceSequence } from '../helpers/connect-conformance-sequence.ts';
import { connectWorkerUrl, requireReachable, stackEndpoints } from '../helpers/stack.ts';

const FILE_SINK = 'org.apache.kafka.connect.file.FileStreamSinkConnector';

function kafkaClient(): InstanceType<typeof KafkaJS.Kafka> {
  return new KafkaJS.Kafka({ kafkaJS: { brokers: stackEndpoints().kafkaBootstrap.split(','), logLevel: KafkaJS.logLevel.ERROR } });
}

/** The reference side: Connect's file sink writing into `dir`. */
function connectSide(admin: KafkaJS.Admin, dir: string): Side {
  return {
    label: 'connect',
    baseUrl: connectWorkerUrl(),
    connectorClass: FILE_SINK,
    validConfig: (topic) => ({ 'connector.class': FILE_SINK, 'tasks.max': '1', topics: topic, file: join(dir, 'sink.txt') }),
    invalidConfig: (topic) => ({ 'connector.class': FILE_SINK, 'tasks.max': 'many', topics: topic, file: join(dir, 'sink.txt') }),
    logger: 'org.apache.kafka.connect.runtime.Worker',
    async awaitGroupEmpty(connector) {
      await poll(`consumer group connect-${connector} without members`, async () => {
        const { groups } = await admin.describeGroups([`connect-${connector}`]);
        return groups.every((g) => g.members.length === 0) ? true : undefined;
      });
    },
  };
}

test('REST conformance: the sequence answers alike on two runs against the reference Kafka Connect worker', { timeout: 600_000 }, async (t) => {
  const url = connectWorkerUrl();
  await requireReachable('Kafka Connect reference worker', url);
  const kafka = kafkaClient();
  const admin = kafka.admin();
  const producer = kafka.producer();
  const topic = `conformance-${randomUUID()}`;
  const dir = mkdtempSync(join(tmpdir(), 'conformance-'));
  await admin.connect();
  t.after(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  await producer.connect();
  await producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ value: JSON.stringify({ id: i }) })) });
  await producer.disconnect();

  const steps = conformanceSequence();
  const side = connectSide(admin, dir);
  const runs: Recording[] = [];
  for (const run of ['a', 'b']) {
    const ctx = makeContext(side, topic, `conf-${run}-${randomUUID().slice(0, 8)}`);
    t.after(() => deleteRunConnectors(ctx));
    runs.push(await runSequence(ctx, steps));
  }
  const [a, b] = runs as [Recording, Recording];
  const out = process.env['ICEFLOE_CONFORMANCE_OUT'];
  if (out !== undefined && out !== '') writeFileSync(out, JSON.stringify({ steps: steps.map((s) => ({ id: s.id, title: s.title, waits: s.before !== undefined })), recordings: runs }, null, 2));

  const mismatches = compareRecordings(steps, a, b);
  assert.deepEqual(mismatches, [], formatMismatches(mismatches, a, b));
  // The reference itself went through the states the sequence means it to (else the comparison is empty talk).
  const status = new Map(a.exchanges.map((e) => [e.id, e.status]));
  for (const [id, code] of Object.entries({ create: 201, 'put-create': 201, 'put-update': 200, pause: 202, stop: 204, 'offsets-patch': 200, 'offsets-delete': 200, 'delete-main': 204 })) {
    assert.equal(status.get(id), code, `reference step ${id}`);
  }
});
