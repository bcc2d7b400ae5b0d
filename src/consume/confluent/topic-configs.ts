/**
 * A topic's configuration (Kafka's DescribeConfigs, API key 32, version 1) over one plain Kafka protocol
 * connection. The librdkafka binding we use (@confluentinc/kafka-javascript 1.10.1) binds no
 * DescribeConfigs on either API surface, and the worker must know the control topic's `cleanup.policy`,
 * `retention.ms` and `retention.bytes` before it trusts the topic with announcements.
 *
 * Transport: PLAINTEXT, or SSL with the librdkafka `ssl.*` file settings (CA, client certificate and key).
 * SASL is not spoken here (its mechanisms would need a second client implementation): a SASL
 * configuration is refused with a `ConfigError` that names the way out (icefloe.control.topic.check-config).
 * Any broker answers a topic's DescribeConfigs, so the bootstrap servers are tried in order.
 *
 * Owns: the request/response encoding of these three calls and the socket. Must not: change anything on
 * the broker.
 */
import { readFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { ConfigError, RetriableError, errorMessage } from '../../core/errors.ts';

const API_DESCRIBE_CONFIGS = 32;
const RESOURCE_TOPIC = 2;
const TIMEOUT_MS = 15_000;
/** Kafka's error codes this call can meet with a meaning of their own. */
const UNKNOWN_TOPIC_OR_PARTITION = 3;
const TOPIC_AUTHORIZATION_FAILED = 29;

/** The settings this module reads (librdkafka names, as the admin client gets them). */
export type WireSettings = Readonly<Record<string, string>>;

/** Every config of `topic` the broker reports (name → value; values the broker hides are absent). */
export async function describeTopicConfigs(settings: WireSettings, topic: string): Promise<Record<string, string>> {
  const protocol = (settings['security.protocol'] ?? 'plaintext').toLowerCase();
  if (protocol.startsWith('sasl')) {
    throw new ConfigError(
      `cannot read the configuration of control topic ${topic} over ${protocol.toUpperCase()} (Icefloe reads topic configs over PLAINTEXT or SSL only): ` +
        'check cleanup.policy=delete, retention.bytes=-1 and retention.ms yourself, then set icefloe.control.topic.check-config=false',
      { context: { topic } },
    );
  }
  const servers = (settings['bootstrap.servers'] ?? settings['metadata.broker.list'] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (servers.length === 0) throw new ConfigError('no bootstrap.servers to read the control topic configuration from');
  let last: unknown;
  for (const server of servers) {
    let socket: Socket | undefined;
    try {
      socket = await open(server, protocol === 'ssl', settings);
      const answer = await exchange(socket, describeRequest(topic, settings['client.id'] ?? 'icefloe-admin'));
      return parseDescribeResponse(answer, topic);
    } catch (e) {
      if (e instanceof ConfigError) throw e;
      last = e;
    } finally {
      socket?.destroy();
    }
  }
  throw new RetriableError(`Kafka admin: could not read the configuration of topic ${topic} from ${servers.join(',')}: ${errorMessage(last)}`, { cause: last });
}

function open(server: string, tls: boolean, settings: WireSettings): Promise<Socket> {
  const colon = server.lastIndexOf(':');
  const host = (colon < 0 ? server : server.slice(0, colon)).replace(/^\[|\]$/g, '').replace(/^[a-zA-Z]+:\/\//, '');
  const port = colon < 0 ? 9092 : Number(server.slice(colon + 1));
  return new Promise<Socket>((resolve, reject) => {
    const file = (k: string): Buffer | undefined => (settings[k] === undefined ? undefined : readFileSync(settings[k]));
    const verify = (settings['enable.ssl.certificate.verification'] ?? 'true').toLowerCase() !== 'false';
    const socket = tls
      ? tlsConnect({
          host,
          port,
          servername: host,
          rejectUnauthorized: verify,
          ...(file('ssl.ca.location') === undefined ? {} : { ca: file('ssl.ca.location') }),
          ...(file('ssl.certificate.location') === undefined ? {} : { cert: file('ssl.certificate.location') }),
          ...(file('ssl.key.location') === undefined ? {} : { key: file('ssl.key.location') }),
          ...(settings['ssl.key.password'] === undefined ? {} : { passphrase: settings['ssl.key.password'] }),
        })
      : netConnect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connect to ${server} timed out`));
    }, TIMEOUT_MS);
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** Sends one size-prefixed request and resolves with the response body after its correlation id. */
function exchange(socket: Socket, request: Buffer): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => reject(new Error('no DescribeConfigs response in time')), TIMEOUT_MS);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      size += d.length;
      if (size < 4) return;
      const all = Buffer.concat(chunks);
      const length = all.readInt32BE(0);
      if (all.length < 4 + length) return;
      clearTimeout(timer);
      resolve(all.subarray(8, 4 + length)); // size, correlation id
    });
    socket.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      reject(new Error('connection closed before the DescribeConfigs response'));
    });
    socket.write(request);
  });
}

function str(s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  const len = Buffer.alloc(2);
  len.writeInt16BE(b.length);
  return Buffer.concat([len, b]);
}

/** DescribeConfigs v1, request header v1: one TOPIC resource, every config, no synonyms. */
export function describeRequest(topic: string, clientId: string): Buffer {
  const head = Buffer.alloc(8);
  head.writeInt16BE(API_DESCRIBE_CONFIGS, 0);
  head.writeInt16BE(1, 2);
  head.writeInt32BE(1, 4); // correlation id
  const resources = Buffer.alloc(5);
  resources.writeInt32BE(1, 0);
  resources.writeInt8(RESOURCE_TOPIC, 4);
  const tail = Buffer.alloc(5);
  tail.writeInt32BE(-1, 0); // config_names: null = all
  tail.writeInt8(0, 4); // include_synonyms: false
  const body = Buffer.concat([head, str(clientId), resources, str(topic), tail]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

/** Parses a DescribeConfigs v1 response body (after the correlation id) for `topic`. */
export function parseDescribeResponse(body: Buffer, topic: string): Record<string, string> {
  let at = 4; // throttle_time_ms
  const i8 = (): number => body.readInt8((at += 1) - 1);
  const i16 = (): number => body.readInt16BE((at += 2) - 2);
  const i32 = (): number => body.readInt32BE((at += 4) - 4);
  const nstr = (): string | null => {
    const n = i16();
    if (n < 0) return null;
    const s = body.toString('utf8', at, at + n);
    at += n;
    return s;
  };
  const results = i32();
  for (let r = 0; r < results; r++) {
    const error = i16();
    const message = nstr();
    i8(); // resource type
    const name = nstr();
    if (error === UNKNOWN_TOPIC_OR_PARTITION) throw new ConfigError(`control topic ${topic} does not exist (DescribeConfigs: UNKNOWN_TOPIC_OR_PARTITION)`, { context: { topic, unknownTopic: true } });
    if (error === TOPIC_AUTHORIZATION_FAILED) {
      throw new ConfigError(`the worker may not describe the configs of control topic ${topic} (TOPIC_AUTHORIZATION_FAILED): grant DescribeConfigs on the topic`, { context: { topic } });
    }
    if (error !== 0) throw new RetriableError(`Kafka admin: DescribeConfigs for topic ${name ?? topic} failed with error ${error}${message === null ? '' : `: ${message}`}`);
    const configs: Record<string, string> = {};
    const n = i32();
    for (let c = 0; c < n; c++) {
      const key = nstr() ?? '';
      const value = nstr();
      i8(); // read_only
      i8(); // config_source
      i8(); // is_sensitive
      const synonyms = i32();
      for (let s = 0; s < synonyms; s++) {
        nstr();
        nstr();
        i8();
      }
      if (value !== null) configs[key] = value;
    }
    if (name === topic) return configs;
  }
  throw new RetriableError(`Kafka admin: DescribeConfigs answered without topic ${topic}`);
}
