/**
 * Two rules of `npm run bench:peer` that make its warm comparison like for like (scripts/lib/bench-peer-*.ts):
 * the worker that runs a warm-up connector and then the measured one, read one connector at a time, counts
 * only the measured connector's lines (its commits, its first assignment); and the report sets Icefloe warm
 * against Java warm, next to the ratios of the whole-life Icefloe run. A benchmark is not the product, but
 * warm-up commits counted as the measured run's, or a ratio over the wrong pair, would make it lie.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { peerReport } from '../../scripts/lib/bench-peer-report.ts';
import type { PeerOptions, RunResult } from '../../scripts/lib/bench-peer-run.ts';
import { GroupSampler, followConnector, pump } from '../../scripts/lib/bench-worker.ts';
import type { BenchWorker } from '../../scripts/lib/bench-worker.ts';
import type { WorkerProcess } from '../../test/helpers/worker.ts';

test('followConnector() counts only its connector: the warm-up connector before it in the same worker does not', () => {
  const line = (connector: string, time: number, msg: string, extra: Record<string, unknown>): string => JSON.stringify({ time, connector, msg, ...extra });
  const lines = [
    'not json',
    line('warmup', 1000, 'partitions assigned', { task: 0, partitions: ['w[0]'] }),
    line('warmup', 2000, 'table committed', { table: 'ns.warmup', records: '20000', latencyMs: 400 }),
    line('measured', 5000, 'partitions assigned', { task: 0, partitions: ['t[0]', 't[1]'] }),
    line('measured', 9000, 'table committed', { table: 'ns.measured', records: '30000', latencyMs: 300 }),
    line('warmup', 9500, 'table committed', { table: 'ns.warmup', records: '5', latencyMs: 1 }),
  ];
  const w = { lines } as unknown as WorkerProcess;
  // Only the log matters here: the sampler is never started, nothing is sampled.
  const b = { w, sampler: new GroupSampler(-1), connector: undefined } as unknown as BenchWorker;
  const measured = followConnector(b, 'measured');
  pump(measured);
  assert.equal(measured.connector, 'measured');
  assert.equal(measured.committed, 30_000);
  assert.deepEqual(measured.commits.map((c) => c.table), ['ns.measured']);
  assert.equal(measured.firstAssignedAt, 5000);
  const warmup = followConnector(b, 'warmup');
  pump(warmup);
  assert.equal(warmup.committed, 20_005);
  assert.equal(warmup.firstAssignedAt, 1000);
});

function run(label: string, sinkCpuS: number, wallS: number): RunResult {
  return {
    label,
    table: `ns.${label.replaceAll(' ', '_')}`,
    load: '0 0 0',
    wallFromStartS: wallS,
    wallFromAssignS: wallS,
    sink: [{ name: 'p', cpuS: sinkCpuS, hwmBytes: 1 }],
    sinkCpuS,
    startupCpuS: Number.NaN,
    services: [],
    commits: 1,
    latencyMs: [100],
    roundMs: [],
    note: '',
  };
}

const o: PeerOptions = { records: 10, warmupRecords: 5, intervalMs: 1000, javaHeap: '2G', javaOffsetFlushMs: 1000, javaDiscovery: 'service_load', icefloe: true, icefloeWarm: true, javaCold: true, javaWarm: true };

function ratios(runs: RunResult[]): { head: string[]; cpu: string[] } {
  const log = console.log;
  console.log = (): void => undefined;
  try {
    const md = peerReport({ o, bytes: 10e6, loadAtStart: '', uptime: '', install: undefined, runs, checks: new Map(), failures: [] }).split('\n');
    const cells = (l: string | undefined): string[] => (l ?? '').split('|').slice(2, -1).map((c) => c.trim());
    return { head: cells(md.find((l) => l.startsWith('| ratio |'))), cpu: cells(md.find((l) => l.startsWith('| MB of Avro per sink CPU-second'))) };
  } finally {
    console.log = log;
  }
}

test('the report sets Icefloe warm against Java warm, next to the whole-life run against both JVMs', () => {
  // MB per CPU-s: Icefloe 10/20, Icefloe warm 10/10, Java cold 10/80, Java warm 10/40.
  const all = ratios([run('Icefloe', 20, 30), run('Icefloe warm', 10, 30), run('Java cold', 80, 60), run('Java warm', 40, 30)]);
  assert.deepEqual(all.head, ['Icefloe / Java cold', 'Icefloe / Java warm', 'Icefloe warm / Java warm']);
  assert.deepEqual(all.cpu, ['4.00×', '2.00×', '4.00×']);
  // A run left out takes its pairs with it.
  const noWarm = ratios([run('Icefloe', 20, 30), run('Java cold', 80, 60), run('Java warm', 40, 30)]);
  assert.deepEqual(noWarm.head, ['Icefloe / Java cold', 'Icefloe / Java warm']);
  const onlyWarm = ratios([run('Icefloe warm', 10, 30), run('Java warm', 40, 30)]);
  assert.deepEqual(onlyWarm.head, ['Icefloe warm / Java warm']);
  assert.deepEqual(onlyWarm.cpu, ['4.00×']);
});
