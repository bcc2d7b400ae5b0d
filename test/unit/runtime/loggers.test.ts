import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, RequestRefused } from '../../../src/core/errors.ts';
import { LOGGER_NAMES, LogLevelTracker, LoggerLevels, categoryOf } from '../../../src/runtime/loggers.ts';

function clock(start = 1_700_000_000_000): () => number {
  let t = start;
  return () => ++t;
}

test('GET: every known logger with its effective level, root included; unknown names are Connect\'s 404', () => {
  const levels = new LoggerLevels({ initialLevel: 'info', now: clock() });
  const all = levels.loggers();
  assert.deepEqual(Object.keys(all), [...Object.values(LOGGER_NAMES).flat(), 'root'].sort());
  for (const l of Object.values(all)) assert.deepEqual(l, { level: 'INFO', last_modified: null });
  assert.deepEqual(new LoggerLevels({ initialLevel: 'debug' }).logger('root'), { level: 'DEBUG', last_modified: null });
  assert.deepEqual(new LoggerLevels({ initialLevel: 'silent' }).logger('io.icefloe.runtime.Worker'), { level: 'OFF', last_modified: null });
  for (const unknown of ['org.apache.kafka.connect', 'io.icefloe', 'com.nonexistent.Foo']) {
    assert.throws(() => levels.logger(unknown), (e: unknown) => e instanceof RequestRefused && e.refusal === 'not-found' && e.message === `Logger ${unknown} not found.`);
  }
  assert.throws(() => new LoggerLevels({ initialLevel: 'loud' }), ConfigError);
});

test('PUT: a namespace sets every known logger below it whose level differs, returns the changed names sorted; levels case-insensitive', () => {
  const levels = new LoggerLevels({ now: clock() });
  // The names of one category are one logger: setting a Java name sets Icefloe's too.
  const set = levels.setLevel('org.apache.kafka.connect.runtime', 'debug', 'worker');
  assert.deepEqual(set, [
    'io.icefloe.runtime.SinkTask', 'io.icefloe.runtime.Worker', 'io.icefloe.runtime.WorkerConnector',
    'org.apache.iceberg.connect.IcebergSinkConnector', 'org.apache.iceberg.connect.IcebergSinkTask', 'org.apache.iceberg.connect.channel.Worker',
    'org.apache.kafka.connect.runtime', 'org.apache.kafka.connect.runtime.Worker', 'org.apache.kafka.connect.runtime.WorkerConnector', 'org.apache.kafka.connect.runtime.WorkerSinkTask',
  ]);
  assert.deepEqual(levels.logger('org.apache.kafka.connect.runtime'), { level: 'DEBUG', last_modified: 1_700_000_000_001 });
  assert.deepEqual(levels.logger('io.icefloe.runtime.SinkTask'), { level: 'DEBUG', last_modified: 1_700_000_000_001 });
  assert.deepEqual(levels.logger('io.icefloe.coordinate.Committer'), { level: 'INFO', last_modified: null }, 'not below the namespace');
  // The same level again changes nothing (a 4.3.1 worker answers []), and stamps nothing.
  assert.deepEqual(levels.setLevel('org.apache.kafka.connect.runtime.WorkerSinkTask', 'DEBUG'), []);
  assert.equal(levels.logger('io.icefloe.runtime.SinkTask').last_modified, 1_700_000_000_001);
  // A name is set alone, not its siblings that merely start with the same text (Worker vs WorkerSinkTask).
  assert.deepEqual(levels.setLevel('org.apache.kafka.connect.runtime.Worker', 'Warn', 'cluster'), ['io.icefloe.runtime.Worker', 'org.apache.kafka.connect.runtime.Worker']);
  assert.equal(levels.logger('org.apache.kafka.connect.runtime.WorkerSinkTask').level, 'DEBUG');
  // A name set through PUT is known from then on; one below a set namespace inherits until set itself.
  assert.deepEqual(levels.setLevel('com.example', 'ERROR'), ['com.example']);
  assert.deepEqual(levels.setLevel('com.example.Thing', 'error'), [], 'it inherits ERROR already');
  assert.equal(levels.logger('com.example.Thing').level, 'ERROR');
  const all = levels.setLevel('root', 'TRACE');
  assert.deepEqual(all, Object.keys(levels.loggers()));
  assert.ok(Object.values(levels.loggers()).every((l) => l.level === 'TRACE'));
  for (const bad of ['bogus', '', 'verbose']) {
    assert.throws(() => levels.setLevel('root', bad), (e: unknown) => e instanceof RequestRefused && e.refusal === 'not-found' && e.message === `invalid log level '${bad}'.`);
  }
});

test('categories: any name of a category sets it; OFF is silent; the change hook gets every category after a change', () => {
  const levels = new LoggerLevels({ now: clock() });
  const seen: unknown[] = [];
  const stop = levels.onChange((l) => seen.push(l));
  assert.deepEqual(levels.categoryLevels(), { worker: 'info', connector: 'info', task: 'info', committer: 'info' });
  levels.setLevel('io.icefloe', 'DEBUG');
  assert.deepEqual(levels.categoryLevels(), { worker: 'debug', connector: 'debug', task: 'debug', committer: 'debug' });
  levels.setLevel('org.apache.iceberg.connect.channel.Coordinator', 'off');
  levels.setLevel('org.apache.kafka.connect.runtime.WorkerSinkTask', 'ALL');
  assert.deepEqual(levels.categoryLevels(), { worker: 'debug', connector: 'debug', task: 'trace', committer: 'silent' });
  levels.setLevel('io.icefloe.coordinate', 'warn');
  assert.equal(levels.categoryLevels().committer, 'warn');
  assert.equal(seen.length, 4);
  levels.setLevel('io.icefloe.coordinate', 'WARN');
  assert.equal(seen.length, 4, 'no change, no call');
  assert.deepEqual(seen.at(-1), levels.categoryLevels());
  stop();
  levels.setLevel('root', 'error');
  assert.equal(seen.length, 4, 'unsubscribed');
  assert.deepEqual(levels.categoryLevels(), { worker: 'error', connector: 'error', task: 'error', committer: 'error' });
});

test('the tracker applies category levels to live loggers by their bindings', () => {
  assert.equal(categoryOf({}), 'worker');
  assert.equal(categoryOf({ connector: 'c' }), 'connector');
  assert.equal(categoryOf({ connector: 'c', task: 1 }), 'task');
  assert.equal(categoryOf({ task: 1 }), 'task');
  assert.equal(categoryOf({ connector: 'c', role: 'committer' }), 'committer');

  const tracker = new LogLevelTracker('info');
  const worker = { level: '' };
  const task = { level: '' };
  const committer = { level: '' };
  tracker.track(worker, {});
  tracker.track(task, { connector: 'c', task: 0 });
  tracker.track(committer, { connector: 'c', role: 'committer' });
  assert.deepEqual([worker.level, task.level, committer.level], ['info', 'info', 'info']);
  const levels = new LoggerLevels();
  levels.onChange((l) => tracker.apply(l));
  levels.setLevel('org.apache.kafka.connect.runtime.WorkerSinkTask', 'DEBUG');
  assert.deepEqual([worker.level, task.level, committer.level], ['info', 'debug', 'info']);
  const late = { level: '' };
  tracker.track(late, { task: 3 });
  assert.equal(late.level, 'debug', 'a logger created after the change starts at the current level');
  assert.equal(tracker.size, 4);
});

test('with real pino loggers: a child\'s level follows its category, its parent\'s does not', async () => {
  const { default: pino } = await import('pino');
  const lines: string[] = [];
  const root = pino({ level: 'info' }, { write: (l: string) => lines.push(l) });
  const tracker = new LogLevelTracker('info');
  tracker.track(root, {});
  const task = root.child({ connector: 'c', task: 0 });
  tracker.track(task, { connector: 'c', task: 0 });
  const levels = new LoggerLevels();
  levels.onChange((l) => tracker.apply(l));
  task.debug('hidden before');
  levels.setLevel('io.icefloe.runtime.SinkTask', 'DEBUG');
  task.debug('task debug');
  root.debug('worker debug');
  levels.setLevel('root', 'OFF');
  task.error('silenced');
  assert.deepEqual(lines.map((l) => (JSON.parse(l) as { msg: string }).msg), ['task debug']);
});
