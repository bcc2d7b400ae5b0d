/**
 * Reachability (src/consume/confluent/reachability.ts) on librdkafka's own lines, as captured from
 * librdkafka 2.15 against 127.0.0.1:1, no-such-host.invalid:9092, and the stack's PLAINTEXT broker with
 * security.protocol=SSL and SASL_PLAINTEXT. The e2e test (test/e2e/first-hour-errors.test.ts) checks the
 * real client produces them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, RetriableError } from '../../../src/core/errors.ts';
import { RECENT_MS, Reachability, bootstrapAddresses, classifyFailure } from '../../../src/consume/confluent/reachability.ts';

const REFUSED = '[thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)';
const REFUSED_AGAIN = '[thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT, 1 identical error(s) suppressed)';
const DNS = "[thrd:no-such-host.invalid:9092/bootstrap]: no-such-host.invalid:9092/bootstrap: Failed to resolve 'no-such-host.invalid:9092': Name or service not known (after 1ms in state CONNECT)";
const TLS = '[thrd:ssl://127.0.0.1:9092/bootstrap]: ssl://127.0.0.1:9092/bootstrap: SSL handshake failed: Disconnected: SSL connection closed by peer: connecting to a PLAINTEXT broker listener? (after 8ms in state SSL_HANDSHAKE)';
const SASL = "[thrd:sasl_plaintext://127.0.0.1:9092/bootstrap]: sasl_plaintext://127.0.0.1:9092/bootstrap: SASL PLAIN mechanism handshake failed: Broker: Request not valid in current SASL state: broker's supported mechanisms:  (after 1ms in state AUTH_HANDSHAKE)";
const fail = (message: string) => ({ severity: 3, fac: 'FAIL', message });

test('librdkafka failure texts are classified by cause', () => {
  assert.equal(classifyFailure('Connect to ipv4#127.0.0.1:1 failed: Connection refused'), 'refused');
  assert.equal(classifyFailure("Failed to resolve 'x:9092': Name or service not known"), 'dns');
  assert.equal(classifyFailure('host resolution failure'), 'dns');
  assert.equal(classifyFailure('SSL handshake failed: Disconnected: SSL connection closed by peer'), 'tls');
  assert.equal(classifyFailure('SASL PLAIN mechanism handshake failed: Broker: Request not valid'), 'sasl');
  assert.equal(classifyFailure('SASL authentication error: Authentication failed during authentication due to invalid credentials'), 'sasl');
  assert.equal(classifyFailure('Connection setup timed out in state CONNECT'), 'timeout');
  assert.equal(classifyFailure('Disconnected'), 'other');
});

test('bootstrap addresses: scheme removed, the default port added', () => {
  assert.deepEqual(bootstrapAddresses({ 'bootstrap.servers': 'a:9093, PLAINTEXT://b ,c:1' }), ['a:9093', 'b:9092', 'c:1']);
  assert.deepEqual(bootstrapAddresses({ 'metadata.broker.list': 'x' }), ['x:9092']);
});

test('refused: a retriable error naming the address and the cause; never hopeless (the broker may be starting)', () => {
  const r = new Reachability({ 'bootstrap.servers': '127.0.0.1:1' });
  assert.equal(r.describe(), undefined);
  r.onLog(fail(REFUSED));
  r.onLog(fail(REFUSED_AGAIN));
  r.onLog({ severity: 7, fac: 'BROKER', message: '[thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: some debug line' });
  assert.equal(r.hopeless(), false);
  const e = r.unreachable(8_000);
  assert.ok(e instanceof RetriableError);
  assert.equal(
    e.message,
    'cannot reach Kafka at bootstrap.servers=127.0.0.1:1: connection refused: nothing listens on 127.0.0.1:1; is Kafka running there, and is the port right? (librdkafka: Connect to ipv4#127.0.0.1:1 failed: Connection refused); no metadata within 8 s',
  );
  assert.deepEqual(e.context, { bootstrapServers: '127.0.0.1:1', kafkaFailure: 'refused' });
});

test('DNS, TLS and SASL: configuration errors, hopeless once every bootstrap address failed twice', async () => {
  const dns = new Reachability({ 'bootstrap.servers': 'no-such-host.invalid:9092' });
  const waited = dns.whenHopeless();
  dns.onLog(fail(DNS));
  assert.equal(dns.hopeless(), false, 'one attempt is not enough');
  dns.onLog(fail(DNS));
  await waited;
  const e = dns.unreachable(1_000);
  assert.ok(e instanceof ConfigError);
  assert.match(e.message, /^cannot reach Kafka at bootstrap\.servers=no-such-host\.invalid:9092: the host name no-such-host\.invalid does not resolve \(unknown host\): check the name in bootstrap\.servers \(librdkafka: Failed to resolve 'no-such-host\.invalid:9092': Name or service not known\)$/);

  const tls = new Reachability({ 'bootstrap.servers': '127.0.0.1:9092', 'security.protocol': 'ssl' });
  tls.onLog(fail(TLS));
  tls.onLog(fail(TLS));
  assert.ok(tls.hopeless());
  const t = tls.unreachable(1_000);
  assert.ok(t instanceof ConfigError);
  assert.match(t.message, /^cannot reach Kafka at bootstrap\.servers=127\.0\.0\.1:9092: the TLS handshake failed with security\.protocol=SSL: .*check security\.protocol and the ssl\.\* settings \(librdkafka: SSL handshake failed: .*connecting to a PLAINTEXT broker listener\?\)$/);

  const sasl = new Reachability({ 'bootstrap.servers': '127.0.0.1:9092', 'security.protocol': 'SASL_PLAINTEXT', 'sasl.password': 'pw-secret' });
  sasl.onLog(fail(SASL));
  sasl.onLog(fail(SASL));
  const s = sasl.unreachable(1_000);
  assert.ok(s instanceof ConfigError);
  assert.match(s.message, /SASL authentication failed with security\.protocol=SASL_PLAINTEXT: check sasl\.mechanism/);
  assert.ok(!s.message.includes('pw-secret'));
});

test('several bootstrap addresses: each named with its own cause; one that is only refused keeps it retriable', () => {
  const r = new Reachability({ 'bootstrap.servers': 'no-such-host.invalid:9092,127.0.0.1:1' });
  r.onLog(fail(DNS));
  r.onLog(fail(DNS));
  assert.equal(r.hopeless(), false, 'the other address has not failed yet');
  r.onLog(fail(REFUSED));
  r.onLog(fail(REFUSED));
  assert.equal(r.hopeless(), false);
  const e = r.unreachable(8_000);
  assert.ok(e instanceof RetriableError);
  assert.match(e.message, /no-such-host\.invalid:9092: the host name .* does not resolve.*; 127\.0\.0\.1:1: connection refused/);
});

test('explain: a time-out keeps its class and gains the address and the cause; nothing known leaves it as it was', () => {
  const r = new Reachability({ 'bootstrap.servers': '127.0.0.1:1' });
  const timeout = new RetriableError('Kafka connect failed: Local: Timed out (ERR__TIMED_OUT)');
  assert.equal(r.explain(timeout), timeout);
  r.onError({ message: 'all broker connections are down' });
  assert.equal(r.explain(timeout), timeout, 'an event without a cause adds nothing');
  r.onLog(fail(REFUSED));
  const e = r.explain(timeout);
  assert.ok(e instanceof RetriableError);
  assert.match(e.message, /^Kafka connect failed: Local: Timed out \(ERR__TIMED_OUT\): cannot reach Kafka at bootstrap\.servers=127\.0\.0\.1:1: connection refused/);
  const config = new ConfigError('x');
  assert.equal(r.explain(config), config, 'only errors that may mean an unreachable cluster');
  const onlyEvent = new Reachability({ 'bootstrap.servers': 'h:1' });
  onlyEvent.onError({ message: 'host resolution failure' });
  assert.equal(onlyEvent.describe()?.kind, 'dns');
});

test('an old failure explains nothing: a refusal during a restart long ago is not the cause of a slow call now', () => {
  let now = 1_000_000;
  const r = new Reachability({ 'bootstrap.servers': '127.0.0.1:9092' }, () => now);
  r.onLog(fail(REFUSED.replaceAll('127.0.0.1:1', '127.0.0.1:9092')));
  r.onError({ message: 'host resolution failure' });
  const timeout = new RetriableError('Kafka admin failed: Local: Timed out (ERR__TIMED_OUT)');
  assert.notEqual(r.explain(timeout), timeout);
  now += RECENT_MS + 1;
  assert.equal(r.explain(timeout), timeout);
  assert.equal(r.describe(), undefined);
});
