import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { ConfigDef, HIDDEN, Secret, isSecretKey, parseType, problemSummary, redactUserInfo, validators } from '../../../src/config/config-def.ts';

function def(): ConfigDef {
  return new ConfigDef()
    .define({ name: 'name', type: 'STRING', importance: 'HIGH', group: 'Common', doc: 'the name' })
    .define({ name: 'tasks.max', type: 'INT', default: '1', importance: 'HIGH', group: 'Common', width: 'SHORT', displayName: 'Tasks max', validator: validators.range(1), doc: 'tasks' })
    .define({ name: 'big', type: 'LONG', default: '0', importance: 'LOW', doc: 'a long' })
    .define({ name: 'ratio', type: 'DOUBLE', default: '0.5', importance: 'LOW', doc: 'a double' })
    .define({ name: 'flag', type: 'BOOLEAN', default: 'false', importance: 'LOW', group: 'Other', doc: 'a flag' })
    .define({ name: 'items', type: 'LIST', default: '', importance: 'LOW', group: 'Other', doc: 'a list', validator: validators.listOf(['a', 'b', 'c']) })
    .define({ name: 'mode', type: 'STRING', default: 'none', importance: 'MEDIUM', group: 'Other', validator: validators.oneOf(['none', 'all'], { caseInsensitive: true }), doc: 'mode' })
    .define({ name: 'code', type: 'STRING', default: null, importance: 'LOW', validator: validators.matches(/^[a-z]+$/, 'lowercase letters'), doc: 'code' })
    .define({ name: 'cls', type: 'CLASS', default: null, importance: 'LOW', doc: 'a class' })
    .define({ name: 'pw', type: 'PASSWORD', default: null, importance: 'HIGH', doc: 'a password' })
    .define({ name: 'short', type: 'SHORT', default: '3', importance: 'LOW', doc: 'a short' })
    .definePrefix({ prefix: 'sub.', doc: 'sub-map' });
}

test('parseType follows Connect: trims, splits lists, reports the type in the message', () => {
  assert.deepEqual(parseType('INT', ' 42 '), { value: 42 });
  assert.deepEqual(parseType('INT', 'abc'), { problem: 'Not a number of type INT' });
  assert.deepEqual(parseType('INT', '2147483648'), { problem: 'Not a number of type INT' });
  assert.deepEqual(parseType('SHORT', '32768'), { problem: 'Not a number of type SHORT' });
  assert.deepEqual(parseType('LONG', '9007199254740991'), { value: 9007199254740991 });
  assert.deepEqual(parseType('LONG', '9007199254740993'), { problem: 'Not a number of type LONG' });
  assert.deepEqual(parseType('LONG', '1.5'), { problem: 'Not a number of type LONG' });
  assert.deepEqual(parseType('DOUBLE', '1e3'), { value: 1000 });
  assert.deepEqual(parseType('DOUBLE', 'x'), { problem: 'Not a number of type DOUBLE' });
  assert.deepEqual(parseType('BOOLEAN', 'TRUE'), { value: true });
  assert.deepEqual(parseType('BOOLEAN', 'yes'), { problem: 'Expected value to be either true or false' });
  assert.deepEqual(parseType('LIST', ' a , b,c '), { value: ['a', 'b', 'c'] });
  assert.deepEqual(parseType('LIST', '  '), { value: [] });
  assert.deepEqual(parseType('STRING', '  x  '), { value: 'x' });
  const pw = parseType('PASSWORD', ' s3cret ');
  assert.ok('value' in pw && pw.value instanceof Secret && pw.value.reveal() === ' s3cret ');
});

test('parse types every key, applies defaults and keeps the given map untouched', () => {
  const input = { name: ' orders ', 'tasks.max': '3', flag: 'true', items: 'a,b', pw: 'hunter2', 'sub.x.y': '1', 'other.key': 'kept' };
  const copy = { ...input };
  const p = def().parse(input);
  assert.equal(p.errorCount, 0);
  assert.equal(p.string('name'), 'orders');
  assert.equal(p.number('tasks.max'), 3);
  assert.equal(p.number('big'), 0);
  assert.equal(p.number('ratio'), 0.5);
  assert.equal(p.boolean('flag'), true);
  assert.deepEqual(p.list('items'), ['a', 'b']);
  assert.equal(p.string('mode'), 'none');
  assert.equal(p.string('code'), null);
  assert.equal(p.secret('pw')?.reveal(), 'hunter2');
  assert.equal(p.has('tasks.max'), true);
  assert.equal(p.has('big'), false);
  assert.deepEqual(p.prefixed('sub.'), { 'x.y': '1' });
  assert.deepEqual(p.unknown, { 'other.key': 'kept' });
  assert.deepEqual(input, copy);
  assert.deepEqual(p.original, input);
  assert.ok(Object.isFrozen(p.original) && Object.isFrozen(p.prefixed('sub.')));
  assert.throws(() => p.number('name'), /is STRING/);
});

test('every error is collected, per key, with Connect message texts', () => {
  const p = def().parse({ 'tasks.max': '0', big: 'x', flag: 'maybe', items: 'a,z,a', mode: 'some', code: 'ABC', short: '99999' });
  const errors = Object.fromEntries(p.errors());
  assert.deepEqual(errors, {
    name: ['Missing required configuration "name" which has no default value.'],
    'tasks.max': ['Invalid value 0 for configuration tasks.max: Value must be at least 1'],
    big: ['Invalid value x for configuration big: Not a number of type LONG'],
    flag: ['Invalid value maybe for configuration flag: Expected value to be either true or false'],
    items: ['Invalid value a,z,a for configuration items: Unknown value(s) z; allowed: a, b, c'],
    mode: ['Invalid value some for configuration mode: String must be one of: none, all'],
    code: ['Invalid value ABC for configuration code: "ABC" is not lowercase letters'],
    short: ['Invalid value 99999 for configuration short: Not a number of type SHORT'],
  });
  assert.equal(p.errorCount, 8);
  assert.equal(def().parse({ name: 'n', mode: 'ALL' }).errorCount, 0, 'case-insensitive oneOf');
  assert.match(def().parse({ name: 'n', items: 'a,a' }).errors().get('items')?.[0] ?? '', /a is listed twice/);
});

test('cross-key errors land on defined keys, or as definition-less values', () => {
  const p = def().parse({ name: 'n', 'sub.token': 'abc' });
  p.addError('name', 'bad name');
  p.addError('name', 'bad name');
  p.addError('sub.token', 'bad token');
  p.addWarning('note');
  assert.deepEqual(Object.fromEntries(p.errors()), { name: ['bad name'], 'sub.token': ['bad token'] });
  assert.equal(p.errorCount, 2);
  assert.deepEqual(p.warnings, ['note']);
  const infos = p.toConfigInfos('X');
  const extra = infos.configs.find((c) => c.value.name === 'sub.token');
  assert.deepEqual(extra, { definition: null, value: { name: 'sub.token', value: HIDDEN, recommended_values: [], errors: ['bad token'], visible: true } });
});

test('toConfigInfos has Connect\'s shape, masks passwords and counts errors', () => {
  const p = def().parse({ 'tasks.max': 'x', pw: 'hunter2', mode: 'all' });
  const infos = p.toConfigInfos('org.example.Sink');
  assert.equal(infos.name, 'org.example.Sink');
  assert.equal(infos.error_count, 2);
  assert.deepEqual(infos.groups, ['Common', 'Other']);
  const byName = new Map(infos.configs.map((c) => [c.value.name, c]));
  assert.deepEqual(byName.get('tasks.max'), {
    definition: { name: 'tasks.max', type: 'INT', required: false, default_value: '1', importance: 'HIGH', documentation: 'tasks', group: 'Common', order_in_group: 2, width: 'SHORT', display_name: 'Tasks max', dependents: [] },
    value: { name: 'tasks.max', value: null, recommended_values: [], errors: ['Invalid value x for configuration tasks.max: Not a number of type INT'], visible: true },
  });
  const name = byName.get('name');
  assert.equal(name?.definition?.required, true);
  assert.equal(name?.definition?.default_value, null);
  assert.equal(byName.get('pw')?.value.value, HIDDEN);
  assert.deepEqual(byName.get('mode')?.value.recommended_values, ['none', 'all']);
  assert.equal(byName.get('big')?.definition?.group, null);
  assert.equal(byName.get('big')?.definition?.order_in_group, -1);
  assert.equal(byName.get('big')?.value.value, '0');
  assert.equal(byName.get('items')?.value.value, '');
  assert.ok(!JSON.stringify(infos).includes('hunter2'));
});

test('secrets: PASSWORD keys and secret-looking names, anywhere; values print as [hidden]', () => {
  const d = def();
  for (const k of ['pw', 'iceberg.catalog.token', 'iceberg.catalog.credential', 'iceberg.catalog.s3.secret-access-key', 'iceberg.catalog.jdbc.password', 'sasl.jaas.config', 'consumer.override.sasl.jaas.config', 'value.converter.basic.auth.user.info', 'ssl.key.password']) {
    assert.ok(isSecretKey(k, d), k);
  }
  for (const k of ['name', 'iceberg.catalog.uri', 'iceberg.catalog.s3.access-key-id', 'topics']) assert.ok(!isSecretKey(k, d), k);
  const p = d.parse({ name: 'n', pw: 'hunter2', 'sub.token': 't0k', 'x.uri': 'jdbc:postgresql://u:pass@h/db?password=pass2' });
  assert.deepEqual(p.secretKeys(), ['pw', 'sub.token']);
  assert.deepEqual(p.redacted(), { name: 'n', pw: HIDDEN, 'sub.token': HIDDEN, 'x.uri': `jdbc:postgresql://u:${HIDDEN}@h/db?password=${HIDDEN}` });
  const s = new Secret('hunter2');
  assert.equal(String(s), HIDDEN);
  assert.equal(JSON.stringify({ s }), `{"s":"${HIDDEN}"}`);
  assert.equal(inspect(s), HIDDEN);
  assert.equal(`${s}`, HIDDEN);
  assert.equal(redactUserInfo('redis://:pw@host:6379'), `redis://:${HIDDEN}@host:6379`);
  assert.equal(redactUserInfo('http://host:8080/x'), 'http://host:8080/x');
});

test('define refuses duplicates and invalid defaults', () => {
  assert.throws(() => def().define({ name: 'name', type: 'STRING', importance: 'LOW', doc: '' }), /defined twice/);
  assert.throws(() => new ConfigDef().define({ name: 'n', type: 'INT', default: 'x', importance: 'LOW', doc: '' }), /default of n is invalid/);
  assert.throws(() => new ConfigDef().define({ name: 'n', type: 'INT', default: '0', importance: 'LOW', doc: '', validator: validators.range(1) }), /default of n is invalid/);
  assert.throws(() => new ConfigDef().definePrefix({ prefix: 'x', doc: '' }), /end with a dot/);
});

test('suggest: the known key an unknown one most likely meant, by edit distance or as a known key\'s start', () => {
  const def = new ConfigDef()
    .define({ name: 'topics', type: 'LIST', default: '', importance: 'HIGH', doc: '' })
    .define({ name: 'tasks.max', type: 'INT', default: '1', importance: 'HIGH', doc: '' })
    .define({ name: 'iceberg.tables', type: 'LIST', default: '', importance: 'HIGH', doc: '' })
    .define({ name: 'iceberg.tables.auto-create-enabled', type: 'BOOLEAN', default: 'false', importance: 'HIGH', doc: '' })
    .definePrefix({ prefix: 'iceberg.table.', doc: '' })
    .definePrefix({ prefix: 'iceberg.catalog.', doc: '' });
  assert.equal(def.suggest('topic'), 'topics');
  assert.equal(def.suggest('Topics'), 'topics', 'case only');
  assert.equal(def.suggest('toipcs'), 'topics', 'a transposition is one edit');
  assert.equal(def.suggest('iceberg.table'), 'iceberg.tables');
  assert.equal(def.suggest('iceberg.catalogs.uri'), 'iceberg.catalog.uri', 'a typo inside a prefix');
  assert.equal(def.suggest('iceberg.tabel.sales.orders.partition-by'), 'iceberg.table.sales.orders.partition-by');
  assert.equal(def.suggest('iceberg.tables.auto-create'), 'iceberg.tables.auto-create-enabled', 'the start of one known key');
  assert.equal(def.suggest('tasks'), 'tasks.max', 'the start of one known key');
  assert.equal(def.suggest('tops'), undefined, 'a short key tolerates one edit only');
  assert.equal(def.suggest('my.own.setting'), undefined);
});

test('problemSummary: each problem once, named by its key, with the unknown key that looks like it', () => {
  const def = new ConfigDef()
    .define({ name: 'topics', type: 'LIST', default: '', importance: 'HIGH', doc: '' })
    .define({ name: 'topics.regex', type: 'STRING', default: '', importance: 'HIGH', doc: '' })
    .define({ name: 'count', type: 'INT', importance: 'HIGH', doc: '' });
  const p = def.parse({ topic: 'a', count: 'x', colour: 'red' });
  p.addError('topics', 'Must configure one of topics or topics.regex');
  p.addError('topics.regex', 'Must configure one of topics or topics.regex');
  p.addError('count', 'Too small');
  assert.deepEqual(problemSummary(p), {
    count: 3,
    text: "Must configure one of topics or topics.regex — the config has 'topic': did you mean topics?; Invalid value x for configuration count: Not a number of type INT; count: Too small",
  });
});
