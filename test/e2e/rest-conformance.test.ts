/**
 * REST conformance (issue 12): the same scripted sequence of requests (test/helpers/connect-conformance-
 * sequence.ts: every endpoint, the error cases of connect-rest.md §1.2) goes to the stack's real Apache
 * Kafka Connect worker, and the answers are compared step by step: status code, media type, JSON shape.
 *
 * Two runs against the reference worker (each with its own connector names) must agree: this proves the
 * sequence is deterministic, so any difference found against Icefloe is Icefloe's. Then the same
 * sequence goes to an Icefloe standalone worker serving the API (`listeners`), running our Iceberg sink,
 * and must answer with the reference's status codes and shapes. Set
 * ICEFLOE_CONFORMANCE_OUT=<file> to keep the recordings as JSON (docs/design/rest-conformance.md was
 * written from them).
 */
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaJS } from '@confluentinc/kafka-javascript';
import { compareRecordings, deleteRunConnectors, formatMismatches, makeContext, runSequence } from '../helpers/connect-conformance.ts';
import type { Recording, Side, Step } from '../helpers/connect-conformance.ts';
import { conformanceSequence, RECORDS } from '../helpers/connect-conformance-sequence.ts';
import { connectSide, icefloeSide } from '../helpers/connect-conformance-sides.ts';
import { poll } from '../helpers/connect-conformance.ts';
import { e2eResources, uniqueIdent } from '../helpers/sink-e2e.ts';
import { unique } from '../helpers/kafka.ts';
import { startWorker } from '../helpers/worker.ts';
import { connectWorkerUrl, requireReachable, stackEndpoints } from '../helpers/stack.ts';

interface Fixture {
  readonly admin: KafkaJS.Admin;
  readonly topic: string;
  readonly dir: string;
}

/** A topic with a few schemaless JSON records for every connector of the test to consume; cleaned up after. */
async function fixture(t: TestContext): Promise<Fixture> {
  await requireReachable('Kafka Connect reference worker', connectWorkerUrl());
  const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: stackEndpoints().kafkaBootstrap.split(','), logLevel: KafkaJS.logLevel.ERROR } });
  const admin = kafka.admin();
  const topic = `conformance-${randomUUID()}`;
  const dir = mkdtempSync(join(tmpdir(), 'conformance-'));
  await admin.connect();
  t.after(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: Array.from({ length: RECORDS }, (_, i) => ({ value: JSON.stringify({ id: i, name: `n${i}` }) })) });
  await producer.disconnect();
  return { admin, topic, dir };
}

/** One run of the sequence on `side`; its connectors are deleted afterwards whatever happened. */
async function record(t: TestContext, side: Side, topic: string, steps: readonly Step[], run: string): Promise<Recording> {
  const ctx = makeContext(side, topic, `conf-${run}-${randomUUID().slice(0, 8)}`);
  t.after(() => deleteRunConnectors(ctx));
  return await runSequence(ctx, steps);
}

function keep(steps: readonly Step[], runs: readonly Recording[]): void {
  const out = process.env['ICEFLOE_CONFORMANCE_OUT'];
  if (out === undefined || out === '') return;
  writeFileSync(out, JSON.stringify({ steps: steps.map((s) => ({ id: s.id, title: s.title, waits: s.before !== undefined })), recordings: runs }, null, 2));
}

test('REST conformance: the sequence answers alike on two runs against the reference Kafka Connect worker', { timeout: 600_000 }, async (t) => {
  const f = await fixture(t);
  const steps = conformanceSequence();
  const side = connectSide(f.admin, f.dir);
  const a = await record(t, side, f.topic, steps, 'a');
  const b = await record(t, side, f.topic, steps, 'b');
  keep(steps, [a, b]);

  const mismatches = compareRecordings(steps, a, b);
  assert.deepEqual(mismatches, [], formatMismatches(mismatches, a, b));
  // The reference itself went through the states the sequence means it to (else the comparison is empty talk).
  const status = new Map(a.exchanges.map((e) => [e.id, e.status]));
  for (const [id, code] of Object.entries({ create: 201, 'put-create': 201, 'put-update': 200, pause: 202, stop: 204, 'offsets-patch': 200, 'offsets-delete': 200, 'delete-main': 204 })) {
    assert.equal(status.get(id), code, `reference step ${id}`);
  }
});

test('REST conformance: Icefloe answers every step with the reference worker\'s status code and JSON shape', { timeout: 600_000 }, async (t) => {
  const f = await fixture(t);
  const res = await e2eResources(t);
  // No connector files and no --exit-on-failure: the worker is driven through its REST API only.
  const worker = startWorker({ connectors: [], args: [] });
  res.workers.push(worker);
  const baseUrl = await worker.restUrl();
  await poll('the Icefloe REST API healthy', async () => ((await fetch(`${baseUrl}/health`)).status === 200 ? true : undefined), 60_000);

  const steps = conformanceSequence();
  const reference = await record(t, connectSide(f.admin, f.dir), f.topic, steps, 'ref');
  const ours = await record(t, icefloeSide({
    baseUrl,
    admin: f.admin,
    namespace: uniqueIdent('conformance'),
    controlPrefix: unique('conformance-control'),
    // Icefloe answers to the Java names operators use for the same work (src/runtime/loggers.ts).
    logger: 'org.apache.kafka.connect.runtime.Worker',
    onResource: (kind, name) => {
      const list = kind === 'table' ? res.tables : res.topics;
      if (!list.includes(name)) list.push(name);
    },
  }), f.topic, steps, 'ice');
  keep(steps, [reference, ours]);
  // Where Icefloe answers otherwise on purpose, its own answer is asserted instead (docs/rest.md, "Where
  // Icefloe differs"): offsets never move behind what the connector's table holds, which would deliver
  // those records to it a second time (docs/operations.md) — Connect moves them and leaves the sink to cope.
  const byId = new Map(ours.exchanges.map((e) => [e.id, e]));
  const refused = /^Moving \S+ to offset \d+ would deliver records \d+\.\.\d+ again, and table \S+ already holds them/;
  for (const id of ['offsets-patch-back', 'offsets-patch-null', 'offsets-delete']) {
    const e = byId.get(id);
    assert.equal(e?.status, 400, `${id}: Icefloe refuses to move offsets behind what the table holds (${JSON.stringify(e?.body)})`);
    assert.match((e?.body as { message?: string } | undefined)?.message ?? '', refused, id);
  }
  const after = byId.get('offsets-after-delete')?.body as { offsets: { offset: { kafka_offset: number } }[] } | undefined;
  assert.deepEqual(after?.offsets.map((o) => o.offset.kafka_offset), [RECORDS], 'the refused reset left the offsets where the table ends');
  const deliberate = new Set(['offsets-patch-back', 'offsets-patch-null', 'offsets-delete', 'offsets-after-delete']);
  const mismatches = compareRecordings(steps, reference, ours).filter((m) => !deliberate.has(m.step));
  assert.deepEqual(mismatches, [], formatMismatches(mismatches, reference, ours));
});
