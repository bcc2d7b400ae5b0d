/**
 * The progress watchdog on the real stack (issue 24, "no silent stall"): each task process is made to
 * hang inside its Kafka transaction commit on purpose (the stall point `task.in-kafka-call`, crash action
 * `hang`: the call never returns, as a client whose callback never comes). The task's watchdog finds it
 * stuck within its bound — derived from the connector's settings: max(transaction.timeout.ms / 2 = 3 s,
 * session.timeout.ms = 6 s, errors.retry.delay.max.ms = 2 s) + 30 s = 36 s — fails it with a trace naming
 * the call, the process ends and the worker restarts the task (the stall point is armed in a task's first
 * incarnation only). The REST status shows the restart and the trace; every record lands exactly once by
 * Kafka coordinates (the hung transaction never committed: the new incarnation's registration aborts it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExactlyOnce } from '../helpers/exactly-once.ts';
import { sleep, unique } from '../helpers/kafka.ts';
import { committedRecords, e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent, waitCommitted } from '../helpers/sink-e2e.ts';
import { startWorker, taskFailures, untilWorkers } from '../helpers/worker.ts';

const PARTITIONS = 4;
/** The bound the settings below derive (see the header). */
const BOUND_MS = 36_000;
/** What a stuck task may take beyond its bound: the watchdog's period, the process's exit, a loaded machine. */
const SLACK_MS = 10_000;

const batch = (from: number, n: number): { partition: number; key: string; value: unknown }[] =>
  Array.from({ length: n }, (_, i) => ({ partition: (from + i) % PARTITIONS, key: `k${from + i}`, value: { id: from + i } }));

interface TaskStatus {
  readonly id: number;
  readonly state: string;
  readonly trace?: string;
  readonly restarts?: number;
  readonly last_failure?: string;
}

test('a task hung inside a Kafka call is failed by its watchdog within its bound, restarted, shown in the REST status; every record lands once', { timeout: 360_000 }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('wdog');
  const topic = unique('wdog-src');
  const control = unique('wdog-control');
  const table = `${uniqueIdent('e2e_wdog')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const produced = await produceJson(topic, PARTITIONS, batch(0, 400));
  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'process', 'consumer.session.timeout.ms': '6000', 'consumer.heartbeat.interval.ms': '500' },
    connectors: [
      sinkConnector({
        name,
        topics: topic,
        controlTopic: control,
        config: {
          'tasks.max': '2',
          ...SCHEMALESS_JSON,
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.control.commit.interval-ms': '1000',
          'producer.override.transaction.timeout.ms': '6000',
          'errors.retry.delay.max.ms': '2000',
        },
      }),
    ],
    env: { ICEFLOE_CRASH_POINT: 'task.in-kafka-call', ICEFLOE_CRASH_ACTION: 'hang' },
    args: [],
  });
  res.workers.push(w);
  const url = `${await w.restUrl()}/connectors/${name}/status`;
  const statuses: TaskStatus[][] = [];
  const sample = async (): Promise<TaskStatus[]> => {
    const r = await fetch(url);
    const tasks = r.ok ? ((await r.json()) as { tasks: TaskStatus[] }).tasks : [];
    statuses.push(tasks);
    return tasks;
  };

  // Both first incarnations hang in a cycle's commit (the line names the stall point), one after the other
  // (the second, often, in the cycle the first one's rebalance asked of it).
  const hungAt: number[] = [];
  const hits = (): number => w.lines.filter((l) => l.startsWith('icefloe: stall point task.in-kafka-call reached')).length;
  await untilWorkers('a task hung at the stall point', () => hits() >= 1, [w], 120_000);
  hungAt.push(Date.now());
  // Meanwhile the status says RUNNING: that is the silent stall the watchdog ends.
  const hung = await sample();
  assert.ok(hung.length === 2 && hung.every((s) => s.state === 'RUNNING'), `hung, yet RUNNING until the watchdog says otherwise: ${JSON.stringify(hung)}`);
  await untilWorkers('the other task hung at the stall point', () => hits() >= 2, [w], 120_000);
  hungAt.push(Date.now());

  // Watch the status until both tasks were restarted, sampling every 500 ms.
  const deadline = Date.now() + BOUND_MS + SLACK_MS + 60_000;
  for (;;) {
    const tasks = await sample();
    if (tasks.length === 2 && tasks.every((s) => s.state === 'RUNNING' && (s.restarts ?? 0) >= 1)) break;
    assert.ok(Date.now() < deadline, `both tasks restarted within their bound; last status: ${JSON.stringify(tasks)}\nlast lines:\n${w.lines.slice(-30).join('\n')}`);
    await sleep(500);
  }
  const failures = taskFailures(w).filter((l) => l['restarting'] === true);
  t.diagnostic(`failures: ${JSON.stringify(failures.map((l) => ({ task: l['task'], error: l['error'], time: l['time'] })))}`);
  assert.equal(failures.length, 2, 'each task failed once, restarting');
  failures.sort((x, y) => Number(x['time']) - Number(y['time']));
  failures.forEach((f, i) => {
    assert.match(String(f['error']), /^task stuck in Kafka commitTransaction for \d+\.\d s (\(inside Kafka poll for \d+\.\d s\) )?\(bound 36\.0 s, derived from max\(transaction\.timeout\.ms\/2 = 3000 ms, session\.timeout\.ms = 6000 ms, errors\.retry\.delay\.max\.ms = 2000 ms\) \+ 30000 ms\): no poll returned records and no cycle ended for \d+\.\d s while /, 'the trace names the call, how long, the bound and its derivation');
    const after = Number(f['time']) - (hungAt[i] as number);
    assert.ok(after >= BOUND_MS - 3_000 && after <= BOUND_MS + SLACK_MS, `failed within its bound of the hang, not before: ${after} ms`);
  });
  const shown = statuses.flat().filter((s) => /task stuck in Kafka commitTransaction/.test(s.last_failure ?? ''));
  assert.ok(shown.length > 0, `the REST status showed the stuck trace: ${JSON.stringify(statuses.slice(-3))}`);
  assert.ok(statuses.flat().some((s) => s.state === 'RESTARTING' && /task stuck in Kafka commitTransaction/.test(s.trace ?? '')) || shown.every((s) => s.restarts === 1), 'RESTARTING with the trace, or restarted once with it');

  // The restarted tasks commit everything, old and new, once.
  produced.push(...(await produceJson(topic, PARTITIONS, batch(400, 400))));
  await waitCommitted(w, table, produced.length, 120_000);
  await stopWorker(w);
  assert.equal(committedRecords(w, table), produced.length);
  await assertExactlyOnce(table, produced);
});
