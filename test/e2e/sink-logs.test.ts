/**
 * The log format on the real stack (issue 11, "logs a person can read"): a worker with
 * `icefloe.log.format=pretty` and a task process writes only pretty lines — the worker's, and its task
 * process's, which decides nothing itself but takes the worker's decision in its spec (its stderr is the
 * worker's; here a pipe, where `auto` would be JSON). A skipped record's warning comes from the task with
 * its coordinates inline and the cause on the next, indented line. The tests' other workers (the default,
 * `auto`, on a pipe) are the JSON side: every other e2e test reads their JSON lines.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unique } from '../helpers/kafka.ts';
import { e2eResources, produceJson, SCHEMALESS_JSON, sinkConnector, stopWorker, uniqueIdent } from '../helpers/sink-e2e.ts';
import { startWorker } from '../helpers/worker.ts';

const TIME = String.raw`\d\d:\d\d:\d\d\.\d{3}`;
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('icefloe.log.format=pretty: the worker and its task process write pretty lines, a skipped record with its coordinates and cause', { timeout: 120_000 }, async (t) => {
  const res = await e2eResources(t);
  const name = unique('logs');
  const topic = unique('logs-src');
  const control = unique('logs-control');
  const table = `${uniqueIdent('e2e_logs')}.events`;
  res.topics.push(topic, control);
  res.tables.push(table);
  const [bad] = await produceJson(topic, 1, [{ partition: 0, value: 'not an object' }, ...Array.from({ length: 5 }, (_, i) => ({ partition: 0, value: { id: i } }))]);
  assert.ok(bad !== undefined);

  const w = startWorker({
    worker: { 'icefloe.tasks.mode': 'process', 'icefloe.log.format': 'pretty' },
    connectors: [
      sinkConnector({
        name,
        topics: topic,
        controlTopic: control,
        config: {
          ...SCHEMALESS_JSON,
          'iceberg.tables': table,
          'iceberg.tables.auto-create-enabled': 'true',
          'iceberg.control.commit.interval-ms': '1000',
          'errors.tolerance': 'all',
          'errors.log.enable': 'true',
        },
      }),
    ],
  });
  res.workers.push(w);
  // The worker's own line, then the committer's (in the worker) once the task's cycle is in the table.
  await w.waitFor(new RegExp(`^${TIME} INFO  task process started  task=0 pid=\\d+$`));
  const committed = await w.waitFor(new RegExp(`^${TIME} INFO  table committed  connector=${esc(name)} .*\\btable=${esc(table)}\\b.*\\brecords=5\\b`), 90_000);
  await stopWorker(w);

  // The task process's lines, in the format it was handed: connector and task first.
  const started = w.lines.filter((l) => new RegExp(`^${TIME} INFO  task started  connector=${esc(name)} task=0 `).test(l));
  assert.equal(started.length, 1, `one pretty 'task started' line from the task process:\n${w.lines.join('\n')}`);
  const skipped = w.lines.findIndex((l) => l.includes('WARN  record skipped (errors.tolerance=all)'));
  assert.ok(skipped >= 0, `the skipped record's warning:\n${w.lines.join('\n')}`);
  assert.match(w.lines[skipped] as string, new RegExp(`^${TIME} WARN  record skipped \\(errors\\.tolerance=all\\)  connector=${esc(name)} task=0 topic=${esc(topic)} partition=0 offset=${bad.offset}`));
  assert.match(w.lines[skipped + 1] as string, /^ {4}error: \S/, 'the cause on the next line, indented');
  assert.ok(committed.length > 0);

  // Not one JSON line from either process, and no colour on a pipe.
  const json = w.lines.filter((l) => l.startsWith('{'));
  assert.deepEqual(json, [], 'no JSON line');
  assert.ok(!w.lines.some((l) => l.includes('\x1b[')), 'no colour off a terminal');
});
