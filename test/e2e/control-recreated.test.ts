/**
 * The control topic deleted and recreated while the real worker runs (review commit-protocol-2 N10, issue
 * 24), on the stack's Kafka and REST catalog on S3: `icefloe standalone`, tasks as child processes, the
 * committer in the worker.
 *
 * The worker commits a first batch; the test deletes the control topic and creates it again (a new topic
 * id, a log from offset 0) and produces a second batch. The committer must see the new topic id: the table,
 * whose positions refer to the old topic, stops with positions-identity-mismatch and the worker fails its
 * tasks (nothing more is acknowledged); the connector position on the new topic is not carried over from
 * the old one. The documented recovery — `icefloe positions … --adopt`, then a restart — must land every
 * record of both batches exactly once, by Kafka coordinates (before the fix the adopted position skipped
 * what the tasks had announced on the new topic).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, PROCESS_WORKER, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker } from '../helpers/worker.ts';

const TIMEOUT = 600_000;
const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;
const CONTROL_CONFIGS = { 'cleanup.policy': 'delete', 'retention.bytes': '-1', 'retention.ms': String(7 * 24 * 3600 * 1000) };

function records(from: number, count: number): { partition: number; value: unknown }[] {
  return Array.from({ length: count }, (_, i) => ({ partition: (from + i) % 2, value: { id: from + i, note: `r${from + i}` } }));
}

test('N10: the control topic deleted and recreated under a running worker: the table stops (positions-identity-mismatch), the tasks are failed, and --adopt plus a restart land every record once', { timeout: TIMEOUT }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('n10-src');
  const control = unique('n10-control');
  const name = unique('n10');
  const table = `${uniqueIdent('n10')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  t.after(() => admin.close());
  await admin.ensureTopic({ name: topic, partitions: 2, replicationFactor: -1 });
  await admin.ensureTopic({ name: control, partitions: 1, replicationFactor: -1, configs: CONTROL_CONFIGS });
  const connector = sinkConnector({ name, topics: topic, controlTopic: control, config: { ...SCHEMALESS_JSON, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.tables': table, 'tasks.max': '2' } });

  // Several cycles on the old topic, so its log ends well past where the new one starts.
  const before: Coordinates[] = [];
  const worker = startWorker({ worker: PROCESS_WORKER, connectors: [connector] });
  res.workers.push(worker);
  for (let i = 0; i < 3; i++) {
    before.push(...(await produceJson(topic, 2, records(i * 100, 100))));
    await waitCommitted(worker, table, before.length, 180_000);
  }

  const oldId = await admin.topicId(control);
  await admin.deleteTopic(control);
  // Deletion completes in the background: create the topic again once the broker lets us (the tasks'
  // producers may create it first, as the broker's auto-create does; either way it gets a new id).
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      await admin.ensureTopic({ name: control, partitions: 1, replicationFactor: -1, configs: CONTROL_CONFIGS });
      const id = await admin.topicId(control);
      if (id !== oldId) break;
    } catch {
      // marked for deletion still, or not known to this broker's metadata yet
    }
    if (Date.now() > deadline) throw new Error(`${control} was not recreated within 120 s`);
    await sleep(500);
  }
  const after = await produceJson(topic, 2, records(300, 100));

  const failed = await worker.waitFor(/"msg":"connector failed/, 240_000);
  assert.match(failed, /positions-identity-mismatch/, 'the table stops on the new topic id');
  assert.ok(worker.logs('the control topic is another log now (deleted and recreated, or a failover to another cluster): the committer reads it from its start and seeds the connector position on it; tables whose positions refer to the old log stop (positions-identity-mismatch)').length >= 1);
  assert.equal(committedRecords(worker, table), before.length, 'nothing committed from the new topic before the operator decides');
  const how = await Promise.race([worker.exited, sleep(120_000).then(() => 'still running')]);
  if (how === 'still running') await stopWorker(worker).catch(() => undefined);

  // The documented recovery: adopt the table on the new topic, then start the worker again.
  writeFileSync(join(worker.dir, 'positions-worker.properties'), `bootstrap.servers=${stackEndpoints().kafkaBootstrap}\n`);
  const run = spawnSync(process.execPath, [CLI, 'positions', 'positions-worker.properties', `${name}.json`, '--table', table, '--adopt'], { cwd: worker.dir, encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.status, 0, `icefloe positions --adopt failed: ${run.stderr}`);
  assert.match(run.stdout, /"result": "adopted/);

  const again = startWorker({ worker: PROCESS_WORKER, connectors: [connector] });
  res.workers.push(again);
  await waitCommitted(again, table, after.length, 300_000);
  await stopWorker(again);
  await assertExactlyOnce(table, [...before, ...after]);
});
