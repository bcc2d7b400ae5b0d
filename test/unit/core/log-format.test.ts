import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../../src/core/errors.ts';
import { JSON_LOGS, prettyFromJson, prettyLine, resolveLogOutput } from '../../../src/core/log-format.ts';
import type { LogFormatSetting } from '../../../src/core/log-format.ts';

/** 2026-12-02T07:08:09.045Z */
const T = Date.UTC(2026, 11, 2, 7, 8, 9, 45);
const plain = { colour: false, timeZone: 'utc' } as const;
const coloured = { colour: true, timeZone: 'utc' } as const;
const ESC = '\x1b';

test('resolveLogOutput: auto is pretty on a terminal and JSON otherwise; json and pretty are what they say', () => {
  const cases: [LogFormatSetting, boolean, string][] = [
    ['auto', true, 'pretty'],
    ['auto', false, 'json'],
    ['json', true, 'json'],
    ['json', false, 'json'],
    ['pretty', true, 'pretty'],
    ['pretty', false, 'pretty'],
  ];
  for (const [setting, tty, format] of cases) assert.equal(resolveLogOutput(setting, { stderrIsTty: tty }).format, format, `${setting} tty=${tty}`);
  assert.deepEqual(resolveLogOutput('auto', { stderrIsTty: false }), JSON_LOGS);
});

test('resolveLogOutput: ICEFLOE_LOG_FORMAT overrides the setting (case and spaces ignored); an empty one does not; a bad one is a ConfigError naming it', () => {
  assert.equal(resolveLogOutput('pretty', { format: 'json', stderrIsTty: true }).format, 'json');
  assert.equal(resolveLogOutput('json', { format: ' Pretty ', stderrIsTty: false }).format, 'pretty');
  assert.equal(resolveLogOutput('json', { format: 'auto', stderrIsTty: true }).format, 'pretty');
  assert.equal(resolveLogOutput('json', { format: 'auto', stderrIsTty: false }).format, 'json');
  assert.equal(resolveLogOutput('pretty', { format: '', stderrIsTty: false }).format, 'pretty');
  assert.throws(
    () => resolveLogOutput('auto', { format: 'fancy', stderrIsTty: true }),
    (e: unknown) => e instanceof ConfigError && e.message === "ICEFLOE_LOG_FORMAT must be one of auto, json, pretty, not 'fancy'",
  );
});

test('resolveLogOutput: colour only on a terminal, and never with NO_COLOR set to something', () => {
  assert.deepEqual(resolveLogOutput('pretty', { stderrIsTty: true }), { format: 'pretty', colour: true });
  assert.deepEqual(resolveLogOutput('pretty', { stderrIsTty: false }), { format: 'pretty', colour: false });
  assert.deepEqual(resolveLogOutput('auto', { stderrIsTty: true, noColor: '1' }), { format: 'pretty', colour: false });
  assert.deepEqual(resolveLogOutput('pretty', { stderrIsTty: true, noColor: '0' }), { format: 'pretty', colour: false }, 'any value counts, even 0');
  assert.deepEqual(resolveLogOutput('pretty', { stderrIsTty: true, noColor: '' }), { format: 'pretty', colour: true }, 'an empty NO_COLOR is unset');
});

test('prettyLine: time, padded level, message; no field, no trailing spaces', () => {
  assert.equal(prettyLine({ level: 30, time: T, msg: 'control topic checked' }, plain), '07:08:09.045 INFO  control topic checked');
  const levels: [number, string][] = [
    [10, 'TRACE'],
    [20, 'DEBUG'],
    [30, 'INFO '],
    [40, 'WARN '],
    [50, 'ERROR'],
    [60, 'FATAL'],
  ];
  for (const [level, label] of levels) assert.equal(prettyLine({ level, time: T, msg: 'm' }, plain), `07:08:09.045 ${label} m`);
  assert.equal(prettyLine({ level: 'notice', time: T, msg: 'm' }, plain), '07:08:09.045 NOTICE m', 'an unknown level as it comes');
  assert.equal(prettyLine({ level: 30, msg: 'm' }, plain), '--:--:--.--- INFO  m', 'no time');
  assert.equal(prettyLine({ level: 30, time: T }, plain), '07:08:09.045 INFO', 'no message');
});

test('prettyLine: the local clock by default', () => {
  // Node reads TZ again when it changes: a zone 5 h 30 min east of UTC shows the offset.
  const saved = process.env['TZ'];
  process.env['TZ'] = 'Asia/Kolkata';
  try {
    assert.equal(prettyLine({ level: 30, time: T, msg: 'm' }, { colour: false }), '12:38:09.045 INFO  m');
    assert.equal(prettyLine({ level: 30, time: T, msg: 'm' }, plain), '07:08:09.045 INFO  m');
  } finally {
    if (saved === undefined) delete process.env['TZ'];
    else process.env['TZ'] = saved;
  }
});

test('prettyLine: connector and task first, then the fields in the record\'s order, two spaces after the message', () => {
  const line = prettyLine({ level: 30, time: T, pid: 41, topic: 'orders', task: 2, table: 'sales.orders', connector: 'orders-sink', records: 1200, msg: 'cycle committed' }, plain);
  assert.equal(line, '07:08:09.045 INFO  cycle committed  connector=orders-sink task=2 pid=41 topic=orders table=sales.orders records=1200');
  assert.equal(prettyLine({ level: 30, time: T, msg: 'm', task: 0 }, plain), '07:08:09.045 INFO  m  task=0');
});

test('prettyLine: values quoted (JSON escapes) when empty or holding spaces, quotes, = or control characters; numbers, booleans, null and objects bare', () => {
  const line = prettyLine(
    { level: 40, time: T, msg: 'm', a: 'two words', b: '', c: 'say "hi"', d: 'k=v', e: 'tab\there', f: 'plain-value_1.2:3/x', g: 7, h: false, i: null, j: { x: 1, y: [2, 'z'] }, k: 'C:\\dir' },
    plain,
  );
  assert.equal(
    line,
    '07:08:09.045 WARN  m  a="two words" b="" c="say \\"hi\\"" d="k=v" e="tab\\there" f=plain-value_1.2:3/x g=7 h=false i=null j={"x":1,"y":[2,"z"]} k="C:\\\\dir"',
  );
});

test('prettyLine: errors and traces on the following indented lines, after the fields, whatever their place in the record', () => {
  const trace = 'FatalError: table sales.orders: no such namespace\n    at open (src/sink/sink-writer.ts:10:5)\n    at run (src/runtime/task.ts:20:3)';
  const line = prettyLine({ level: 50, time: T, task: 1, error: 'no such namespace sales', trace, connector: 'c', partition: 3, offset: '17', msg: 'task failed' }, plain);
  assert.equal(
    line,
    [
      '07:08:09.045 ERROR task failed  connector=c task=1 partition=3 offset=17',
      '    error: no such namespace sales',
      '    trace: FatalError: table sales.orders: no such namespace',
      '          at open (src/sink/sink-writer.ts:10:5)',
      '          at run (src/runtime/task.ts:20:3)',
    ].join('\n'),
  );
});

test('prettyLine: a serialized Error shows its stack; any other multi-line value and a multi-line message go on following lines too', () => {
  const err = { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (x.ts:1:1)' };
  assert.equal(prettyLine({ level: 50, time: T, msg: 'crashed', err }, plain), '07:08:09.045 ERROR crashed\n    err: Error: boom\n          at f (x.ts:1:1)');
  assert.equal(prettyLine({ level: 50, time: T, msg: 'crashed', cause: { code: 'E1' } }, plain), '07:08:09.045 ERROR crashed\n    cause: {"code":"E1"}');
  assert.equal(prettyLine({ level: 30, time: T, msg: 'm', sql: 'SELECT 1\nFROM t', n: 1 }, plain), '07:08:09.045 INFO  m  n=1\n    sql: SELECT 1\n      FROM t');
  assert.equal(prettyLine({ level: 30, time: T, msg: 'first\nsecond', n: 1 }, plain), '07:08:09.045 INFO  first  n=1\n    second');
});

test('prettyLine: control characters from a record or a server cannot drive the terminal', () => {
  const line = prettyLine({ level: 40, time: T, msg: `bad ${ESC}[2J value`, value: `x${ESC}]0;title\x07`, error: `e${ESC}[31m\x9b` }, plain);
  assert.ok(!line.includes(ESC) && !line.includes('\x07') && !line.includes('\x9b'), JSON.stringify(line));
  assert.equal(line, '07:08:09.045 WARN  bad \\u001b[2J value  value="x\\u001b]0;title\\u0007"\n    error: e\\u001b[31m\\u009b');
});

test('prettyLine with colour: a dim time, the level in its colour, dim keys; without colour not one escape', () => {
  const record = { level: 50, time: T, msg: 'task failed', connector: 'c', error: 'boom' };
  assert.equal(
    prettyLine(record, coloured),
    `${ESC}[2m07:08:09.045${ESC}[0m ${ESC}[31mERROR${ESC}[0m task failed  ${ESC}[2mconnector=${ESC}[0mc\n    ${ESC}[2merror:${ESC}[0m boom`,
  );
  const colours: [number, string][] = [
    [10, '90'],
    [20, '36'],
    [30, '32'],
    [40, '33'],
    [50, '31'],
    [60, '1;35'],
  ];
  for (const [level, code] of colours) {
    const line = prettyLine({ level, time: T, msg: 'm' }, coloured);
    assert.ok(line.includes(`${ESC}[${code}m`), `level ${level}`);
    // eslint-disable-next-line no-control-regex -- colour codes stripped
    assert.equal(line.replace(/\x1b\[[0-9;]*m/g, ''), prettyLine({ level, time: T, msg: 'm' }, plain), 'the same text once the colours are stripped');
    assert.ok(!prettyLine({ level, time: T, msg: 'm', k: 'v', error: 'e' }, plain).includes(ESC));
  }
  assert.equal(prettyLine({ level: 30, time: T, msg: 'm' }, coloured), `${ESC}[2m07:08:09.045${ESC}[0m ${ESC}[32mINFO${ESC}[0m  m`, 'the padding outside the colour');
});

test('prettyFromJson: a pino line (with its newline) becomes a pretty one; anything else passes unchanged', () => {
  assert.equal(
    prettyFromJson(`{"level":30,"time":${T},"connector":"c","task":0,"msg":"table committed","snapshotId":"123"}\n`, plain),
    '07:08:09.045 INFO  table committed  connector=c task=0 snapshotId=123',
  );
  assert.equal(prettyFromJson('not json\n', plain), 'not json');
  assert.equal(prettyFromJson('[1,2]', plain), '[1,2]');
  assert.equal(prettyFromJson('null', plain), 'null');
});
