/**
 * Binds the REST API's listeners (`listeners`: http and https) to a request handler and works out the
 * address the worker advertises, Connect's way (RestServer.advertisedUrl): `worker_id` is
 * `<rest.advertised.host.name, else the listener's host, else the machine's host name>:<rest.advertised.port,
 * else the advertised listener's bound port>`, the advertised listener being `rest.advertised.listener`,
 * else http when there is one, else https.
 *
 * Owns: node:http/https servers, reading the HTTPS key material (PKCS12 or PEM) and the basic
 * authentication file. Must not: route requests (server.ts does), or put a password in an error.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { ServerOptions as HttpsOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import type { SecureVersion } from 'node:tls';
import type { RestConfig, RestListener, RestTlsSettings } from '../config/rest-config.ts';
import { ConfigError, errorMessage } from '../core/errors.ts';
import { basicAuthFromProperties } from './auth.ts';
import type { BasicAuth } from './auth.ts';

export type RestListenerOptions = Pick<RestConfig, 'listeners' | 'advertisedHostName' | 'advertisedPort' | 'advertisedListener' | 'tls'>;

export interface BoundListener {
  readonly protocol: 'http' | 'https';
  /** As configured ('' = every interface). */
  readonly host: string;
  readonly port: number;
  /** A URL a client on this machine can use (every-interface listeners as localhost). */
  readonly url: string;
}

export interface RestListeners {
  readonly urls: readonly string[];
  readonly bound: readonly BoundListener[];
  /** `host:port` as statuses show it (`worker_id`). */
  readonly workerId: string;
  close(): Promise<void>;
}

const JKS_MAGIC = 0xfeedfeed;
const JCEKS_MAGIC = 0xcececece;

function keyName(tls: RestTlsSettings, key: string): string {
  return `${tls.prefix}ssl.${key}`;
}

function readKeyFile(tls: RestTlsSettings, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new ConfigError(`${keyName(tls, 'keystore.location')}: cannot read ${path}: ${errorMessage(e)}`, { cause: e });
  }
}

/** The TLS options of an https listener from the worker's key material (worker-config checked the keys are there). */
export function tlsOptions(tls: RestTlsSettings): HttpsOptions {
  const out: HttpsOptions = {};
  const protocols = (tls.enabledProtocols ?? []).filter((p): p is SecureVersion => p === 'TLSv1.2' || p === 'TLSv1.3').sort();
  if (protocols.length > 0) {
    out.minVersion = protocols[0] as SecureVersion;
    out.maxVersion = protocols[protocols.length - 1] as SecureVersion;
  }
  if (tls.keystoreType === 'PEM') {
    const passphrase = tls.keyPassword?.reveal();
    if (tls.keystoreKey !== null && tls.keystoreCertificateChain !== null) {
      return { ...out, key: tls.keystoreKey.reveal(), cert: tls.keystoreCertificateChain, ...(passphrase === undefined ? {} : { passphrase }) };
    }
    // One PEM file holding the private key and its certificate chain (Kafka's PEM keystore file).
    const pem = readKeyFile(tls, tls.keystoreLocation as string);
    return { ...out, key: pem, cert: pem, ...(passphrase === undefined ? {} : { passphrase }) };
  }
  const location = tls.keystoreLocation as string;
  const bytes = readKeyFile(tls, location);
  const magic = bytes.length >= 4 ? bytes.readUInt32BE(0) : 0;
  if (magic === JKS_MAGIC || magic === JCEKS_MAGIC) {
    throw new ConfigError(
      `${keyName(tls, 'keystore.location')}: ${location} is a ${magic === JKS_MAGIC ? 'JKS' : 'JCEKS'} keystore, which Node cannot read: convert it with ` +
        `\`keytool -importkeystore -srckeystore ${location} -destkeystore keystore.p12 -deststoretype PKCS12\` and set ${keyName(tls, 'keystore.type')}=PKCS12`,
    );
  }
  const passphrase = tls.keystorePassword?.reveal();
  return { ...out, pfx: bytes, ...(passphrase === undefined ? {} : { passphrase }) };
}

/** The credentials of `icefloe.rest.basic-auth.file`, or undefined when it is not set. */
export function loadBasicAuth(file: string | null): BasicAuth | undefined {
  if (file === null) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`icefloe.rest.basic-auth.file: cannot read ${file}: ${errorMessage(e)}`, { cause: e });
  }
  return basicAuthFromProperties(text, file);
}

/** An https server, or a ConfigError naming the keys when OpenSSL cannot use the key material. */
function httpsServer(tls: RestTlsSettings, handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const options = tlsOptions(tls);
  try {
    return createHttpsServer(options, handler);
  } catch (e) {
    const what = tls.keystoreType === 'PEM' ? `the PEM key and certificate (${keyName(tls, 'keystore.key')}, ${keyName(tls, 'key.password')})` : `the PKCS12 keystore ${tls.keystoreLocation ?? ''} (${keyName(tls, 'keystore.password')})`;
    throw new ConfigError(`https listener: cannot use ${what}: ${errorMessage(e)}`, { cause: e });
  }
}

function listen(server: Server, listener: RestListener): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error): void => reject(new ConfigError(`listeners: cannot listen on ${listener.protocol}://${listener.host}:${listener.port}: ${e.message}`, { cause: e }));
    server.once('error', onError);
    const done = (): void => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    };
    if (listener.host === '') server.listen(listener.port, done);
    else server.listen(listener.port, listener.host, done);
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Connect's choice of the advertised protocol (RestServer.determineAdvertisedProtocol). */
function advertisedProtocol(options: RestListenerOptions): 'http' | 'https' {
  if (options.advertisedListener !== null) return options.advertisedListener;
  if (options.listeners.some((l) => l.protocol === 'http')) return 'http';
  return options.listeners.some((l) => l.protocol === 'https') ? 'https' : 'http';
}

/** Starts every listener (all or none: one that cannot bind closes the others) and answers with their URLs and the worker id. */
export async function startRestListeners(
  options: RestListenerOptions,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<RestListeners> {
  const servers: Server[] = [];
  const bound: BoundListener[] = [];
  try {
    for (const listener of options.listeners) {
      const server: Server = listener.protocol === 'https' ? httpsServer(options.tls, handler) : createServer(handler);
      servers.push(server);
      const port = await listen(server, listener);
      const shownHost = listener.host === '' || listener.host === '0.0.0.0' || listener.host === '::' ? 'localhost' : listener.host.includes(':') ? `[${listener.host}]` : listener.host;
      bound.push({ protocol: listener.protocol, host: listener.host, port, url: `${listener.protocol}://${shownHost}:${port}` });
    }
  } catch (e) {
    await Promise.all(servers.filter((s) => s.listening).map(close));
    throw e;
  }
  const advertised = bound.find((b) => b.protocol === advertisedProtocol(options));
  const host = options.advertisedHostName ?? (advertised !== undefined && advertised.host !== '' ? advertised.host : hostname());
  const port = options.advertisedPort ?? advertised?.port ?? bound[0]?.port ?? 0;
  return {
    urls: bound.map((b) => b.url),
    bound,
    workerId: `${host}:${port}`,
    close: async () => {
      await Promise.all(servers.map(close));
    },
  };
}
