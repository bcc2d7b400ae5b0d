/**
 * The watermark `icefloe.valid-through-ts` on the real stack (issue 9 point 9, review O1): every record
 * with a timestamp at or below the W a snapshot stores is in that snapshot, counted by Kafka coordinates.
 *
 * 1. Two tasks (two workers, one partition each). Worker B's next cycle is held inside its data-file
 *    upload (fault proxy) after it read newer records of its partition; then worker A's partition gets
 *    even newer records, which A announces and a committer commits. Before the fix B's partition did not
 *    hold W back (its last report said "caught up", however old): W jumped to A's newest timestamp while
 *    B's records — older — were not in the table. Now B's partition bounds W at the time its last report
 *    was taken.
 * 2. A transactionally produced source topic (a commit marker after each batch, so next offset < high
 *    watermark for good): its idle partition counts as caught up — the task stops committing an empty
 *    transaction every interval, and W follows newer data of the other partition instead of sticking at
 *    the idle partition's last record.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { ConfluentKafkaAdmin, ConfluentRecordProducer, ConfluentTransactionalProducer } from '../../src/consume/confluent/index.ts';
import type { OutgoingRecord } from '../../src/consume/port.ts';
import { FaultProxy } from '../fault-proxy/client.ts';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import type { Coordinates } from '../helpers/exactly-once.ts';
import { kafkaSettings, sleep, unique } from '../helpers/kafka.ts';
import { e2eResources, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent } from '../helpers/sink-e2e.ts';
import { stackEndpoints } from '../helpers/stack.ts';
import { startWorker, untilWorkers } from '../helpers/worker.ts';
import type { WorkerProcess } from '../helpers/worker.ts';

interface Sent extends Coordinates {
  readonly ts: number;
}

type Commit = Record<string, unknown> & { readonly validThroughTs?: number; readonly sourceRanges: { partition: number; first: string; last: string }[] };

/** The workers' 'table committed' lines for `table`. */
function commits(ws: readonly WorkerProcess[], table: string): Commit[] {
  return ws.flatMap((w) => w.logs('table committed')).filter((l) => l['table'] === table) as Commit[];
}

/** Every record committed (by coordinates) across the commits, each snapshot once. */
function committedKeys(ws: readonly WorkerProcess[], table: string): Set<string> {
  const out = new Set<string>();
  for (const c of commits(ws, table)) for (const r of c.sourceRanges) for (let o = BigInt(r.first); o <= BigInt(r.last); o++) out.add(`${r.partition}/${o}`);
  return out;
}

/** JSON records to one partition with explicit timestamps (now, increasing); returns where they landed. */
async function produceAt(topic: string, partition: number, n: number, tag: string): Promise<Sent[]> {
  const producer = await ConfluentRecordProducer.connect({ settings: await kafkaSettings(), clientId: 'icefloe-e2e-watermark' });
  try {
    const base = Date.now();
    const records: OutgoingRecord[] = Array.from({ length: n }, (_, i) => ({ topic, partition, key: `${tag}-${i}`, value: Buffer.from(JSON.stringify({ tag, i })), timestamp: base + i }));
    const delivered = await producer.send(records);
    return delivered.map((d, i) => ({ topic: d.topic, partition: d.partition, offset: d.offset, ts: base + i }));
  } finally {
    await producer.close();
  }
}

/** The same, in one transaction of a transactional producer (a commit marker follows the records). */
async function produceTransactional(topic: string, partition: number, n: number, tag: string): Promise<Sent[]> {
  const producer = await ConfluentTransactionalProducer.connect({ settings: await kafkaSettings(), transactionalId: unique('wm-upstream') });
  try {
    await producer.initTransactions();
    await producer.beginTransaction();
    const base = Date.now();
    await producer.send(Array.from({ length: n }, (_, i) => ({ topic, partition, key: `${tag}-${i}`, value: Buffer.from(JSON.stringify({ tag, i })), timestamp: base + i })));
    await producer.commitTransaction();
  } finally {
    await producer.close();
  }
  // Offsets: the partition held nothing else, so the batch starts where its records start.
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  try {
    const high = (await admin.watermarks(topic)).find((w) => w.partition === partition)?.high ?? 0n;
    const first = high - BigInt(n) - 1n; // the marker takes the last offset
    return Array.from({ length: n }, (_, i) => ({ topic, partition, offset: first + BigInt(i), ts: 0 }));
  } finally {
    await admin.close();
  }
}

function connector(name: string, topic: string, control: string, table: string, extra: Record<string, string> = {}): { name: string; config: Record<string, string> } {
  return sinkConnector({
    name,
    topics: topic,
    controlTopic: control,
    config: {
      ...SCHEMALESS_JSON,
      'iceberg.tables': table,
      'iceberg.tables.auto-create-enabled': 'true',
      'iceberg.control.commit.interval-ms': '1000',
      ...extra,
    },
  });
}

async function setup(t: TestContext, prefix: string): Promise<{ res: Awaited<ReturnType<typeof e2eResources>>; name: string; topic: string; control: string; namespace: string; table: string }> {
  const res = await e2eResources(t);
  const namespace = uniqueIdent(`e2e_${prefix}`);
  const s = { res, name: unique(prefix), topic: unique(`${prefix}-src`), control: unique(`${prefix}-control`), namespace, table: `${namespace}.events` };
  res.topics.push(s.topic, s.control);
  res.tables.push(s.table);
  const admin = await ConfluentKafkaAdmin.connect({ settings: await kafkaSettings() });
  try {
    await admin.ensureTopic({ name: s.topic, partitions: 2, replicationFactor: -1 });
  } finally {
    await admin.close();
  }
  return s;
}

test('two tasks: a partition whose newer records are not announced yet holds the watermark back', { timeout: 240_000 }, async (t) => {
  const { res, name, topic, control, namespace, table } = await setup(t, 'wm2');
  const e = stackEndpoints();
  const proxy = new FaultProxy(e.proxyControlUrl);
  const worker = (index: number): WorkerProcess => {
    const w = startWorker({
      worker: { 'icefloe.tasks.mode': 'in-process', 'icefloe.catalog': 'none', 'icefloe.tasks.id-offset': String(index) },
      connectors: [connector(name, topic, control, table, { 'iceberg.catalog.s3.endpoint': e.proxyS3Endpoint })],
    });
    res.workers.push(w);
    return w;
  };
  const held = (w: WorkerProcess): number | undefined => {
    let p: number | undefined;
    for (const l of w.logs('partitions assigned')) for (const k of l['partitions'] as string[]) if (k.startsWith(`${topic}[`)) p = Number(k.slice(topic.length + 1, -1));
    return p;
  };
  const w0 = worker(0);
  const w1 = worker(1);
  await untilWorkers('one partition each', () => held(w0) !== undefined && held(w1) !== undefined && held(w0) !== held(w1), [w0, w1]);
  const [a, b] = [w0, w1];
  const pa = held(a) as number;
  const pb = held(b) as number;
  const sent: Sent[] = [...(await produceAt(topic, pa, 20, 'a0')), ...(await produceAt(topic, pb, 20, 'b0'))];
  await untilWorkers('the first records committed', () => committedKeys([a, b], table).size >= sent.length, [a, b]);
  await sleep(1500); // both tasks report once more, caught up

  // B reads newer records and ends its cycle, held in its data-file upload: nothing of it is announced.
  const hold = await proxy.arm({ target: 's3', match: { method: 'PUT', path: `/${namespace}/.*\\.parquet` }, times: 1, fault: { kind: 'hold' } });
  t.after(() => proxy.remove(hold).catch(() => undefined));
  const bNew = await produceAt(topic, pb, 20, 'b1');
  await proxy.waitHeld(hold, 1, 30_000);
  await sleep(1000);
  // A's partition gets newer records still; A announces them and a committer commits them.
  const aNew = await produceAt(topic, pa, 20, 'a1');
  const aLast = `${pa}/${aNew.at(-1)?.offset}`;
  await untilWorkers("A's newer records committed", () => committedKeys([a, b], table).has(aLast), [a, b]);
  const withA = commits([a, b], table).filter((c) => c.sourceRanges.some((r) => r.partition === pa && BigInt(r.last) >= (aNew.at(-1)?.offset ?? 0n)));
  const w = Math.max(...withA.map((c) => c.validThroughTs ?? Number.NEGATIVE_INFINITY));
  const bOldest = Math.min(...bNew.map((r) => r.ts));
  t.diagnostic(`W of the commit with A's newer records: ${w}; B's unannounced records from ${bOldest} (${bOldest - w} ms later); A's newest ${aNew.at(-1)?.ts}`);
  const inTable = committedKeys([a, b], table);
  const overClaimed = bNew.filter((r) => r.ts <= w && !inTable.has(`${r.partition}/${r.offset}`));
  assert.equal(overClaimed.length, 0, `W=${w} claims ${overClaimed.length} records of B's partition (ts ${bOldest}..) that are not in the table`);

  await proxy.release(hold);
  sent.push(...bNew, ...aNew);
  await untilWorkers('every record committed', () => committedKeys([a, b], table).size >= sent.length, [a, b]);
  await stopWorker(a);
  await stopWorker(b);
  await assertExactlyOnce(table, sent);
});

test('a transactionally produced topic: its idle partition counts as caught up (no empty cycle every interval, W follows newer data)', { timeout: 240_000 }, async (t) => {
  const { res, name, topic, control, table } = await setup(t, 'wmtx');
  const w = startWorker({ worker: { 'icefloe.tasks.mode': 'in-process' }, connectors: [connector(name, topic, control, table)] });
  res.workers.push(w);
  // Partition 0 gets one transaction and stays idle; partition 1 gets one transaction now and one later.
  const sent: Sent[] = [...(await produceTransactional(topic, 0, 20, 'p0')), ...(await produceTransactional(topic, 1, 20, 'p1a'))];
  const p0Newest = Date.now();
  await untilWorkers('the first records committed', () => committedKeys([w], table).size >= sent.length, [w]);
  await sleep(1500);
  const cyclesBefore = w.logs('cycle committed').length;
  await sleep(6000); // six intervals, nothing new (an idle task reports every tenth)
  const idleCycles = w.logs('cycle committed').length - cyclesBefore;
  const later = await produceTransactional(topic, 1, 20, 'p1b');
  const laterAt = Date.now();
  sent.push(...later);
  await untilWorkers('the later records committed', () => committedKeys([w], table).size >= sent.length, [w]);
  await sleep(2500); // the next report (caught up after the later batch) and its commit, if any
  const ws = commits([w], table).map((c) => c.validThroughTs ?? Number.NEGATIVE_INFINITY);
  const wLast = Math.max(...ws);
  t.diagnostic(`idle cycles in 6 s: ${idleCycles}; W ${wLast} (idle partition's newest record ${p0Newest}, later batch ${laterAt})`);
  await stopWorker(w);
  await assertExactlyOnce(table, sent);
  assert.ok(idleCycles <= 1, `an idle task committed ${idleCycles} cycles in 6 intervals`);
  assert.ok(wLast > p0Newest, `W (${wLast}) is stuck at or below the idle partition's last record (${p0Newest})`);
});
