/**
 * Bounded catch-up (issue 9 point 7) on the real stack: the real worker (`icefloe standalone`, tasks as
 * child processes, the committer in the worker process) starts behind a control topic that already holds
 * ICEFLOE_CATCHUP_MB (default 200) MB of announcements — other connectors' valid Icefloe announcements
 * of about 900 KB each, as on a shared control topic — with its own table's announcements behind them.
 *
 * The committer must read the backlog in bounded steps (icefloe.control.read.max-bytes per round, the
 * next round at once while behind, progress logged), reach its own announcements and commit them within
 * minutes, with the worker process's peak RSS (VmHWM) bounded; every produced source record
 * (topic, partition, offset) lands exactly once. Before the change the committer read the whole backlog in
 * one all-or-nothing read within 30 s and kept every decoded record in memory.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ConfluentKafkaAdmin } from '../../src/consume/confluent/index.ts';
import { assertExactlyOnce, duckdbCount } from '../helpers/exactly-once.ts';
import { apacheSinkLikeEvent, otherConnectorAnnouncement, produceBulk } from '../helpers/foreign-control.ts';
import { kafkaSettings, unique } from '../helpers/kafka.ts';
import { e2eResources, PROCESS_WORKER, produceOrders, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker } from '../helpers/worker.ts';

const BACKLOG_MB = Number(process.env['ICEFLOE_CATCHUP_MB'] ?? '200');
const RECORD_BYTES = 900_000;
const COUNT = 3_000;
/** Peak RSS of the worker process allowed (MiB): the runtime and clients take ~150; the backlog must add little. */
const RSS_LIMIT_MIB = Number(process.env['ICEFLOE_CATCHUP_RSS_MIB'] ?? '320');

function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) / 1024;
}

test(`a committer behind ${BACKLOG_MB} MB of control-topic backlog catches up in bounded steps, commits within minutes, with bounded memory`, { timeout: 600_000 }, async (t) => {
  const res = await e2eResources(t);
  const topic = unique('catchup-src');
  const control = unique('catchup-control');
  const connector = unique('catchup-sink');
  const table = `${uniqueIdent('catchup')}.orders`;
  res.topics.push(topic, control);
  res.tables.push(table);

  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  await admin.ensureTopic({ name: control, partitions: 1, replicationFactor: 1, configs: { 'cleanup.policy': 'delete', 'max.message.bytes': '2000000', 'retention.ms': String(7 * 86_400_000) } });
  await admin.close();
  const bulk = otherConnectorAnnouncement(unique('other-sink'), RECORD_BYTES);
  const records = Math.ceil((BACKLOG_MB * 1024 * 1024) / bulk.value.byteLength);
  const started = Date.now();
  // Mostly another connector's announcements; every 50th record another product's event.
  const bytes = await produceBulk(control, 0, records, (i) => (i % 50 === 49 ? apacheSinkLikeEvent(i) : bulk));
  const produceMs = Date.now() - started;
  const produced = await produceOrders({ topic, format: 'json', count: COUNT, seed: 11, partitions: 3 });

  const worker = startWorker({
    worker: PROCESS_WORKER,
    connectors: [
      sinkConnector({
        name: connector,
        topics: topic,
        controlTopic: control,
        config: {
          'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
          'value.converter.schemas.enable': 'false',
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
        },
      }),
    ],
  });
  res.workers.push(worker);
  const pid = worker.child.pid as number;
  let peakRss = 0;
  const sampler = setInterval(() => {
    try {
      peakRss = Math.max(peakRss, procStatus(pid, 'VmRSS'));
    } catch {
      // exited
    }
  }, 200);
  t.after(() => clearInterval(sampler));
  const workerStart = Date.now();
  await waitCommitted(worker, table, COUNT, 300_000);
  const firstCommitMs = Date.now() - workerStart;
  const hwm = procStatus(pid, 'VmHWM');
  clearInterval(sampler);
  await stopWorker(worker);

  const steps = worker.logs('control topic catch-up');
  const caughtUp = worker.logs('control topic caught up');
  const report = { backlogMB: Math.round(bytes / 1048576), records, produceMs, firstCommitMs, steps: steps.length, peakRssMiB: Math.round(peakRss), vmHwmMiB: Math.round(hwm) };
  t.diagnostic(JSON.stringify(report));
  process.stderr.write(`control-catchup: ${JSON.stringify(report)}\n`);
  assert.ok(steps.length >= Math.floor(bytes / (16 * 1024 * 1024)) - 1, `read in bounded steps of 16 MiB: ${steps.length} progress lines`);
  const last = steps.at(-1) as { partitions: { offset: string; endOffset: string }[]; bytes: number };
  assert.ok(last.bytes <= 16 * 1024 * 1024 + RECORD_BYTES + 4096, 'each step within the byte bound (plus the record that crosses it)');
  assert.ok(caughtUp.length >= 1, 'caught up, and said so');
  assert.ok(hwm < RSS_LIMIT_MIB, `worker peak RSS ${Math.round(hwm)} MiB must stay under ${RSS_LIMIT_MIB} MiB behind a ${Math.round(bytes / 1048576)} MB backlog`);
  assert.equal(worker.logs('table stopped: nothing is committed to it until an operator repairs it').length, 0);
  await assertExactlyOnce(table, produced.coords);
  assert.equal(await duckdbCount(table), COUNT);
});
