import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConnectorConfig } from '../../../src/config/connector-config.ts';
import type { Routing } from '../../../src/config/connector-config.ts';
import { ConfigError, DataError } from '../../../src/core/errors.ts';
import { Router, compileRouter, javaOnlyRegexSyntax, tableNameProblem } from '../../../src/route/router.ts';
import type { RouteResult } from '../../../src/route/router.ts';

const BASE: Readonly<Record<string, string>> = {
  name: 'orders',
  'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
  topics: 'orders',
  'iceberg.catalog.type': 'rest',
  'iceberg.catalog.uri': 'http://127.0.0.1:8181',
};

function routerFor(extra: Record<string, string>): Router {
  return compileRouter(parseConnectorConfig({ ...BASE, ...extra }).tables);
}

function tablesOf(r: RouteResult): readonly string[] {
  assert.equal(r.kind, 'tables', `expected tables, got ${JSON.stringify(r)}`);
  return r.kind === 'tables' ? r.tables : [];
}

function failOf(r: RouteResult): Extract<RouteResult, { kind: 'fail' }> {
  assert.equal(r.kind, 'fail');
  return r as Extract<RouteResult, { kind: 'fail' }>;
}

const REGEX = {
  'iceberg.tables': 'sales.eu,sales.us,sales.all,sales.none',
  'iceberg.tables.route-field': 'meta.region',
  'iceberg.table.sales.eu.route-regex': 'eu-.*',
  'iceberg.table.sales.us.route-regex': 'us-.*|ca-.*',
  'iceberg.table.sales.all.route-regex': '.*',
};

test('static without route field: every record to every listed table, value ignored, nothing to decode', () => {
  const r = routerFor({ 'iceberg.tables': 'sales.orders,audit.orders,sales.orders' });
  assert.equal(r.mode, 'all');
  assert.equal(r.routeFieldPath(), null);
  assert.equal(r.routeField, null);
  assert.deepEqual(r.tables(), ['sales.orders', 'audit.orders']); // a table listed twice gets each record once
  assert.deepEqual(tablesOf(r.route(null, 'orders', 0, 0n)), ['sales.orders', 'audit.orders']);
  assert.deepEqual(tablesOf(r.route('anything', 'orders', 0, 1n)), ['sales.orders', 'audit.orders']);
  assert.equal(r.route(null, 'orders', 0, 0n), r.route('x', 'orders', 1, 2n), 'one shared frozen result');
  assert.ok(Object.isFrozen(r.route(null, 'o', 0, 0n)) && Object.isFrozen(tablesOf(r.route(null, 'o', 0, 0n))));
  assert.equal(r.skippedTotal(), 0);
});

test('static with route field: whole-value regex match per table, fan-out to several, in iceberg.tables order', () => {
  const r = routerFor(REGEX);
  assert.equal(r.mode, 'regex');
  assert.deepEqual(r.routeFieldPath(), ['meta', 'region']);
  assert.deepEqual(r.tables(), ['sales.eu', 'sales.us', 'sales.all']); // sales.none has no route-regex: receives nothing
  assert.deepEqual(tablesOf(r.route('eu-west', 't', 0, 1n)), ['sales.eu', 'sales.all']);
  assert.deepEqual(tablesOf(r.route('ca-east', 't', 0, 2n)), ['sales.us', 'sales.all']); // alternation inside the anchors
  assert.deepEqual(tablesOf(r.route('apac', 't', 0, 3n)), ['sales.all']);
  assert.deepEqual(tablesOf(r.route('', 't', 0, 4n)), ['sales.all']); // '' is a value, not null: .* matches it
  // Whole match, like Java's Matcher.matches(): a prefix or substring match is not enough.
  assert.deepEqual(tablesOf(r.route('xeu-west', 't', 0, 5n)), ['sales.all']);
  // Neither engine lets `.` match a line terminator, and `$` here is the end of input: no table, not even `.*`.
  assert.equal(failOf(r.route('us-east\n', 't', 0, 6n)).cause, 'no-match');
  const any = routerFor({ 'iceberg.tables': 'a.b', 'iceberg.tables.route-field': 'k', 'iceberg.table.a.b.route-regex': 'us-east' });
  assert.equal(failOf(any.route('us-east\n', 't', 0, 7n)).cause, 'no-match', 'no trailing line terminator allowed, unlike a Java find() with $');
});

test('regex matching is case-sensitive (Pattern.compile without flags); matches() backtracks into alternatives', () => {
  const r = routerFor({ 'iceberg.tables': 'a.lower,a.alt', 'iceberg.tables.route-field': 'k', 'iceberg.table.a.lower.route-regex': 'eu', 'iceberg.table.a.alt.route-regex': 'a|ab' });
  assert.deepEqual(tablesOf(r.route('eu', 't', 0, 0n)), ['a.lower']);
  assert.equal(failOf(r.route('EU', 't', 0, 1n)).cause, 'no-match');
  assert.deepEqual(tablesOf(r.route('ab', 't', 0, 2n)), ['a.alt']);
  // (?i:...) modifiers mean the same in Java and JS: the user opts in explicitly.
  const ci = routerFor({ 'iceberg.tables': 'a.b', 'iceberg.tables.route-field': 'k', 'iceberg.table.a.b.route-regex': '(?i:eu)' });
  assert.deepEqual(tablesOf(ci.route('Eu', 't', 0, 0n)), ['a.b']);
});

test('no match and null route value fail by default, naming topic, partition, offset, field and value', () => {
  const r = routerFor(REGEX);
  const noMatch = failOf(routerFor({ ...REGEX, 'iceberg.table.sales.all.route-regex': 'zz' }).route('apac', 'orders', 3, 9007199254740993n));
  assert.equal(noMatch.cause, 'no-match');
  assert.match(noMatch.reason, /^record orders\/3@9007199254740993: routes to no table: route field "meta.region" \(iceberg.tables.route-field\) value "apac" matches no iceberg.table.<table>.route-regex/);
  assert.match(noMatch.reason, /tables with a route-regex: sales.eu, sales.us, sales.all/);
  assert.match(noMatch.reason, /icefloe.tables.unrouted=skip/);
  assert.ok(noMatch.error instanceof DataError && noMatch.error.retriable === false && noMatch.error.message === noMatch.reason);
  assert.deepEqual(noMatch.error.context, { topic: 'orders', partition: 3, offset: '9007199254740993', routeField: 'meta.region', routeValue: 'apac', cause: 'no-match' });

  const nul = failOf(r.route(null, 'orders', 0, 42n));
  assert.equal(nul.cause, 'null-route-value');
  assert.match(nul.reason, /^record orders\/0@42: routes to no table: route field "meta.region" \(iceberg.tables.route-field\) is null or missing\./);
  assert.equal(r.skippedTotal(), 0, 'failures are not skips');

  const long = failOf(routerFor({ ...REGEX, 'iceberg.table.sales.all.route-regex': 'zz' }).route('x'.repeat(1000), 't', 0, 0n));
  assert.ok(long.reason.length < 600 && /…\(1000 chars\)/.test(long.reason), 'a huge value is cut in the message');
});

test('skip: unrouted records are counted per cause and never fail', () => {
  const r = routerFor({ ...REGEX, 'iceberg.table.sales.all.route-regex': 'zz', 'icefloe.tables.unrouted': 'skip' });
  assert.equal(r.onUnrouted, 'skip');
  assert.deepEqual(r.route('apac', 't', 0, 0n), { kind: 'skip', cause: 'no-match' });
  r.route('apac', 't', 0, 1n);
  r.route(null, 't', 0, 2n);
  assert.deepEqual(tablesOf(r.route('eu-1', 't', 0, 3n)), ['sales.eu']);
  assert.deepEqual(r.skippedCounts(), { 'no-match': 2, 'null-route-value': 1, 'invalid-table-name': 0, 'unknown-table': 0 });
  assert.equal(r.skippedTotal(), 3);
  const snapshot = r.skippedCounts();
  r.route(null, 't', 0, 4n);
  assert.equal(snapshot['null-route-value'], 1, 'counts are a copy');
});

test('dynamic: the lower-cased value is the table (Locale.ROOT), validated as namespace.table', () => {
  const rest = { 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 'meta.table' };
  const r = routerFor(rest);
  assert.equal(r.mode, 'dynamic');
  assert.equal(r.tables(), null);
  assert.deepEqual(r.routeFieldPath(), ['meta', 'table']);
  assert.deepEqual(tablesOf(r.route('Sales.Orders', 't', 0, 0n)), ['sales.orders']);
  assert.deepEqual(tablesOf(r.route('a.b.c', 't', 0, 1n)), ['a.b.c']); // multi-level namespace a.b
  assert.deepEqual(tablesOf(r.route('ÉTÉ.DATA', 't', 0, 2n)), ['été.data']);
  assert.equal(r.route('sales.orders', 't', 0, 3n), r.route('sales.orders', 't', 1, 4n), 'cached per value: no allocation on a hit');
  for (const bad of ['orders', '', 'sales.', '.orders', 'a..b', ' sales.orders', 'sales.or\u0000ders']) {
    const f = failOf(r.route(bad, 'orders', 2, 7n));
    assert.equal(f.cause, 'invalid-table-name', bad);
    assert.match(f.reason, /^record orders\/2@7: routes to no table: route field "meta.table" \(iceberg.tables.route-field\) value .* does not name a table: /);
  }
  assert.match(failOf(r.route('Orders', 't', 0, 0n)).reason, /value "Orders" does not name a table: "orders" has no namespace/);
  assert.equal(failOf(r.route(null, 't', 0, 0n)).cause, 'null-route-value');

  const skip = routerFor({ ...rest, 'icefloe.tables.unrouted': 'skip' });
  skip.route('orders', 't', 0, 0n);
  skip.route(null, 't', 0, 1n);
  assert.deepEqual(skip.skippedCounts(), { 'no-match': 0, 'null-route-value': 1, 'invalid-table-name': 1, 'unknown-table': 0 });
});

test('unknown table (dynamic, auto-create off) takes the same outcome, reported by the runtime', () => {
  const rest = { 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 'tbl' };
  const f = failOf(routerFor(rest).unknownTable('sales.nope', 'Sales.Nope', 'orders', 1, 5n));
  assert.equal(f.cause, 'unknown-table');
  // The fix comes first (auto-create, or creating the table); skipping is the last option, not the advice.
  assert.equal(
    f.reason,
    'record orders/1@5: cannot be written: table "sales.nope" (from route field "tbl" (iceberg.tables.route-field) value "Sales.Nope") does not exist, and iceberg.tables.auto-create-enabled is false. ' +
      'Fix: set iceberg.tables.auto-create-enabled=true (the connector then creates the table from the records\' schema), or create the table in the catalog; ' +
      'only if such records should be dropped, set icefloe.tables.unrouted=skip to skip and count them.',
  );
  assert.ok(f.reason.indexOf('auto-create-enabled=true') < f.reason.indexOf('unrouted=skip'));
  // A missing namespace is named, and auto-create is said to create it too (createTable ensures it).
  const ns = failOf(routerFor(rest).unknownTable('sales.nope', null, 'orders', 1, 7n, 'sales'));
  assert.match(ns.reason, /^record orders\/1@7: cannot be written: table "sales\.nope" does not exist; its namespace sales does not exist either, and iceberg\.tables\.auto-create-enabled is false\. Fix: set iceberg\.tables\.auto-create-enabled=true \(the connector then creates the namespace and the table/);
  // Static routing (iceberg.tables) names the table without a route field.
  const stat = failOf(routerFor({ 'iceberg.tables': 'sales.orders' }).unknownTable('sales.orders', null, 'orders', 0, 1n));
  assert.match(stat.reason, /^record orders\/0@1: cannot be written: table "sales\.orders" does not exist, and iceberg\.tables\.auto-create-enabled is false\. Fix: set iceberg\.tables\.auto-create-enabled=true/);
  const skip = routerFor({ ...rest, 'icefloe.tables.unrouted': 'skip' });
  assert.deepEqual(skip.unknownTable('sales.nope', 'sales.nope', 'orders', 1, 6n), { kind: 'skip', cause: 'unknown-table' });
  assert.equal(skip.skippedCounts()['unknown-table'], 1);
});

test('the decision cache is bounded and stays correct past its limit', () => {
  const r = routerFor({ 'iceberg.tables.dynamic-enabled': 'true', 'iceberg.tables.route-field': 'tbl' });
  for (let i = 0; i < 10_000; i++) assert.deepEqual(tablesOf(r.route(`NS.T${i}`, 't', 0, BigInt(i))), [`ns.t${i}`]);
  assert.deepEqual(tablesOf(r.route('NS.T0', 't', 0, 0n)), ['ns.t0']);
});

test('construction: regexes recompiled once with Java semantics; bad or Java-only regexes are ConfigErrors', () => {
  const routing = (regex: RegExp): Routing => ({ kind: 'regex', field: 'k', routes: [{ table: 'a.b', regex }] });
  // Flags that would change the meaning (stateful g/y, m, i) are dropped; an unanchored regex is anchored.
  const r = new Router({ routing: routing(/eu/gimy), unrouted: 'fail' });
  assert.deepEqual(tablesOf(r.route('eu', 't', 0, 0n)), ['a.b']);
  assert.deepEqual(tablesOf(r.route('eu', 't', 0, 1n)), ['a.b']); // no lastIndex state
  assert.equal(failOf(new Router({ routing: routing(/eu/), unrouted: 'fail' }).route('EU', 't', 0, 0n)).cause, 'no-match');
  assert.equal(failOf(new Router({ routing: routing(/eu/), unrouted: 'fail' }).route('xeux', 't', 0, 0n)).cause, 'no-match');

  assert.throws(() => new Router({ routing: routing(new RegExp('\\Aeu')), unrouted: 'fail' }), (e: unknown) => e instanceof ConfigError && /iceberg.table.a.b.route-regex: \\A is Java-only/.test(e.message));
  assert.throws(() => routerFor({ 'iceberg.tables': 'a.b', 'iceberg.tables.route-field': 'k', 'iceberg.table.a.b.route-regex': '\\p{Alpha}+' }), (e: unknown) => e instanceof ConfigError && /\\p is Java-only/.test(e.message));
  // What cannot compile never gets this far: config validation refuses it with the key's name.
  assert.throws(() => routerFor({ 'iceberg.tables': 'a.b', 'iceberg.tables.route-field': 'k', 'iceberg.table.a.b.route-regex': '(' }), (e: unknown) => e instanceof ConfigError && /iceberg.table.a.b.route-regex/.test(e.message));
  assert.throws(() => new Router({ routing: { kind: 'all', tables: [] }, unrouted: 'fail' }), ConfigError);
  assert.throws(() => new Router({ routing: { kind: 'dynamic', field: '' }, unrouted: 'fail' }), ConfigError);
  // Route field with no route-regex anywhere: Java would drop every record; here it cannot start.
  assert.throws(() => routerFor({ 'iceberg.tables': 'a.b', 'iceberg.tables.route-field': 'k' }), (e: unknown) => e instanceof ConfigError && /no table in iceberg.tables has an iceberg.table.<table>.route-regex/.test(e.message));
  // Guava Splitter.on('.') keeps empty segments: the decoder sees exactly what Java would look up.
  assert.deepEqual(new Router({ routing: { kind: 'dynamic', field: 'a..b' }, unrouted: 'fail' }).routeFieldPath(), ['a', '', 'b']);
});

test('javaOnlyRegexSyntax flags constructs JS would silently read differently, and nothing shared', () => {
  for (const ok of ['eu-.*', 'a|ab', '[a-z0-9_]+', '\\d{3}\\.\\w+', 'x\\-y', '[\\]a]', '\\\\A', '(?i:eu)', '\\bword\\b', '\\x41\\u0042', 'a/b']) {
    assert.equal(javaOnlyRegexSyntax(ok), undefined, ok);
  }
  for (const [bad, what] of [['\\Aeu', '\\A'], ['eu\\z', '\\z'], ['\\Qa.b\\E', '\\Q'], ['\\p{L}', '\\p'], ['[\\P{L}]', '\\P'], ['\\h', '\\h'], ['\\x{41}', '\\x{'], ['[a-z&&[^b]]', 'character class'], ['[a[b]]', 'nested'], ['[]a]', 'literal ]'], ['\\v', '\\v']] as const) {
    assert.ok(javaOnlyRegexSyntax(bad)?.includes(what), `${bad}: ${javaOnlyRegexSyntax(bad)}`);
  }
});

test('tableNameProblem', () => {
  assert.equal(tableNameProblem('db.t'), undefined);
  assert.equal(tableNameProblem('a.b.c'), undefined);
  assert.match(tableNameProblem('t') ?? '', /no namespace/);
  assert.match(tableNameProblem('a..t') ?? '', /empty/);
  assert.match(tableNameProblem('a. t') ?? '', /whitespace/);
  assert.match(tableNameProblem('a.t\n') ?? '', /whitespace|control/);
});
