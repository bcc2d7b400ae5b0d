/**
 * A shared control topic (issue 9 point 8) on the real stack: the real worker (`icefloe standalone`, tasks
 * as child processes) runs one connector whose control topic also carries records that are not its own —
 * bytes shaped like the Apache Iceberg sink's Avro control events, random bytes, a tombstone, another
 * Icefloe connector's valid announcements and that connector's record of an unknown future version —
 * before and while the connector runs. Those are ignored and counted (log line), and every produced
 * source record (topic, partition, offset) lands exactly once. Then a future-version record under this
 * connector's own key stops its table with the reason `unsupported-control-version`, and nothing produced
 * after it is committed; its only task FAILED for good, the worker exits 1 with a summary naming it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import { apacheSinkLikeEvent, futureVersionRecord, garbageRecord, otherConnectorAnnouncement, produceBulk } from '../helpers/foreign-control.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, PROCESS_WORKER, produceOrders, sinkConnector, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

const STOPPED = 'table stopped: nothing is committed to it until an operator repairs it';

/** 20 Apache-sink-like events, 20 garbage records, 20 announcements and a future-version record of another connector, a tombstone. */
async function foreignRecords(control: string, other: string, seed: number): Promise<{ foreign: number; otherConnector: number }> {
  const ann = otherConnectorAnnouncement(other, 20_000);
  const future = futureVersionRecord(other);
  await produceBulk(control, 0, 61, (i) => (i < 20 ? apacheSinkLikeEvent(seed + i) : i < 40 ? garbageRecord(seed + i, 500) : i < 60 ? ann : future));
  await produceBulk(control, 0, 1, () => ({ key: null, value: null }));
  return { foreign: 41, otherConnector: 21 };
}

/** `waitCommitted`, but a stopped table fails at once with its reason. */
async function committedOrStopped(worker: WorkerProcess, table: string, total: number): Promise<void> {
  const stop = worker.waitFor(/table stopped/, 180_000).then((l) => Promise.reject(new Error(`the table stopped: ${l}`)));
  stop.catch(() => undefined);
  await Promise.race([waitCommitted(worker, table, total, 180_000), stop]);
}

test('a control topic shared with other products and connectors: their records are ignored and counted, ours land exactly once; our own future-version record stops our table', { timeout: 600_000 }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('shared-src');
  const control = unique('shared-control');
  const connector = unique('shared-sink');
  const other = unique('other-sink');
  const table = `${uniqueIdent('shared')}.orders`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  await admin.ensureTopic({ name: control, partitions: 1, replicationFactor: 1, configs: { 'cleanup.policy': 'delete', 'retention.ms': String(7 * 86_400_000) } });
  await admin.close();

  const before = await foreignRecords(control, other, 1);
  const first = await produceOrders({ topic, format: 'json', count: 2_000, seed: 21, partitions: 2 });
  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: connector,
        topics: topic,
        controlTopic: control,
        config: { 'value.converter': 'org.apache.kafka.connect.json.JsonConverter', 'value.converter.schemas.enable': 'false', 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true' },
      }),
    ],
  });
  res.workers.push(worker);
  await committedOrStopped(worker, table, 2_000);
  // Foreign traffic while the connector runs, between its own cycles.
  await foreignRecords(control, other, 100);
  const second = await produceOrders({ topic, format: 'json', count: 1_000, seed: 22, partitions: 2 });
  await committedOrStopped(worker, table, 3_000);
  assert.equal(worker.logs(STOPPED).length, 0, 'nothing that is not ours stops our table');
  const ignored = worker.logs('control records of others ignored')[0];
  assert.ok(ignored !== undefined, 'ignored records are logged');
  assert.deepEqual([ignored['totalForeign'], ignored['totalOtherConnector']], [before.foreign, before.otherConnector], 'and counted');

  // A record of this connector (its task 0's key) in a format version this worker does not know.
  await produceBulk(control, 0, 1, () => futureVersionRecord(connector));
  await produceOrders({ topic, format: 'json', count: 500, seed: 23, partitions: 2 });
  const stopped = await worker.waitFor(/table stopped/, 120_000);
  const line = JSON.parse(stopped) as Record<string, unknown>;
  assert.equal(line['code'], 'unsupported-control-version');
  assert.match(String(line['reason']), /newer Icefloe .*upgrade this worker/);
  await sleep(5_000);
  assert.equal(committedRecords(worker, table), 3_000, 'nothing after our unreadable record is committed');
  // Its one table stopped, so its task FAILED for good: the standalone worker ends by itself (issue 11).
  assert.equal(await worker.exited, '1', 'the worker exits 1 by itself');
  assert.ok(worker.lines.some((l) => l.startsWith(`  connector ${connector} task 0: `) && l.includes('unsupported-control-version')), `the summary names the task and why; got:\n${worker.lines.slice(-8).join('\n')}`);
  await assertExactlyOnce(table, [...first.coords, ...second.coords]);
});
