/**
 * The worker's REST API settings (Connect's RestServerConfig and the `topic.tracking.*` keys of
 * WorkerConfig): listeners, the advertised address, CORS, static response headers, admin endpoints, topic
 * tracking, HTTPS key material (`listeners.https.ssl.*`, else `ssl.*`, all or nothing as Connect's
 * SSLUtils reads them) and Icefloe's basic authentication file.
 *
 * Owns: parsing and checking those keys into a typed `RestConfig` (worker-config.ts calls it and adds the
 * problems to the worker's errors). Must not: read a file (the keystore and the credentials file are read
 * by src/rest/listeners.ts when the listener starts) or print a secret (passwords and PEM keys are
 * `Secret`s).
 */
import { ConfigError } from '../core/errors.ts';
import { Secret } from './config-def.ts';
import type { ParsedConfig } from './config-def.ts';

export interface RestListener {
  readonly protocol: 'http' | 'https';
  /** Empty: every interface. */
  readonly host: string;
  /** 0: any free port (tests). */
  readonly port: number;
}

/** One `response.http.headers.config` rule (Jetty's HeaderFilter actions). */
export interface HeaderRule {
  readonly action: 'set' | 'add' | 'setDate' | 'addDate';
  readonly name: string;
  readonly value: string;
}

/** Key material of the HTTPS listeners, from `listeners.https.ssl.*` or else `ssl.*`. */
export interface RestTlsSettings {
  /** Which keys it came from, for messages: `listeners.https.` or `` (the plain `ssl.*` keys). */
  readonly prefix: string;
  /** Upper-cased `ssl.keystore.type`; null when unset (Kafka's default, JKS, which also reads PKCS12 files). */
  readonly keystoreType: string | null;
  /** Absolute (a relative path is taken from the worker's working directory). */
  readonly keystoreLocation: string | null;
  readonly keystorePassword: Secret | null;
  readonly keyPassword: Secret | null;
  /** PEM private key text (`ssl.keystore.type=PEM`). */
  readonly keystoreKey: Secret | null;
  /** PEM certificate chain text (`ssl.keystore.type=PEM`). */
  readonly keystoreCertificateChain: string | null;
  /** `ssl.enabled.protocols` (TLSv1.2, TLSv1.3); null: Node's defaults. */
  readonly enabledProtocols: readonly string[] | null;
}

export interface RestConfig {
  readonly listeners: readonly RestListener[];
  readonly advertisedHostName: string | null;
  readonly advertisedPort: number | null;
  readonly advertisedListener: 'http' | 'https' | null;
  readonly cors: { readonly allowOrigin: string; readonly allowMethods: string };
  readonly responseHeaders: readonly HeaderRule[];
  /** False with `admin.listeners=` (empty): the /admin endpoints are not served. */
  readonly adminEndpoints: boolean;
  readonly topicTracking: { readonly enabled: boolean; readonly allowReset: boolean };
  /** Absolute path of the `user: password` file (`icefloe.rest.basic-auth.file`); null: no authentication. */
  readonly basicAuthFile: string | null;
  readonly tls: RestTlsSettings;
}

/** Connect's listener pattern (RestServer.LISTENER_PATTERN): `protocol://host:port`, IPv6 in brackets. */
const LISTENER = /^(.*):\/\/\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$/;

/** A `listeners` entry, or the problem with it. */
export function parseListener(text: string): RestListener | string {
  const m = LISTENER.exec(text.trim());
  if (m === null) return `Listener ${text} doesn't have the right format (protocol://hostname:port).`;
  const protocol = (m[1] as string).toLowerCase();
  if (protocol !== 'http' && protocol !== 'https') return `Listener ${text}: protocol must be either "http" or "https".`;
  const port = Number(m[3]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return `Listener ${text}: port must be 0..65535.`;
  return { protocol, host: m[2] as string, port };
}

/**
 * Parses `response.http.headers.config` (Connect's RestServerConfig rules): comma-separated rules, each
 * `[action] [name]:[value]`, a rule in double quotes when it contains a comma. Throws the problem's text.
 */
export function parseHeaderRules(text: string): HeaderRule[] {
  const rules: HeaderRule[] = [];
  for (const raw of csvSplit(text)) {
    const rule = raw.trim();
    if (rule === '') continue;
    const m = /^(\S+)\s+(.*)$/s.exec(rule);
    if (m === null) throw new ConfigError(`Invalid format of header config '${rule}'. Expected: '[action] [header name]:[header value]'`);
    const action = ['set', 'add', 'setDate', 'addDate'].find((a) => a.toLowerCase() === (m[1] as string).toLowerCase());
    if (action === undefined) throw new ConfigError(`Invalid header config action: '${m[1] as string}'. Expected one of [set, add, setDate, addDate]`);
    const pair = (m[2] as string).trim().split(':');
    if (pair.length !== 2) throw new ConfigError(`Invalid format of header name and header value pair '${m[2] as string}'. Expected: '[header name]:[header value]'`);
    const name = (pair[0] as string).trim();
    if (name === '' || /\s/.test(name)) throw new ConfigError(`Invalid header name '${name}'. The '[header name]' cannot contain whitespace`);
    const value = (pair[1] as string).trim();
    if (action.endsWith('Date') && !/^-?\d+$/.test(value)) throw new ConfigError(`Invalid header config '${rule}': ${action} takes a number of milliseconds`);
    rules.push({ action: action as HeaderRule['action'], name, value });
  }
  return rules;
}

/** Splits on commas outside double quotes, dropping the quotes (Jetty's StringUtil.csvSplit). */
function csvSplit(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (ch === ',' && !quoted) {
      out.push(current);
      current = '';
    } else current += ch;
  }
  out.push(current);
  return out;
}

const KEYSTORE_TYPES = ['PKCS12', 'PEM', 'JKS'];

/**
 * The HTTPS key material, from `listeners.https.*` when any such key is set, else from the plain `ssl.*`
 * keys (Connect's `valuesWithPrefixAllOrNothing`); problems are added to `p` under the key at fault.
 */
function tlsSettings(p: ParsedConfig, httpsUsed: boolean, resolvePath: (path: string) => string): RestTlsSettings {
  const scoped = p.prefixed('listeners.https.');
  const prefix = Object.keys(scoped).length > 0 ? 'listeners.https.' : '';
  const raw = (key: string): string | undefined => (prefix === '' ? p.prefixed('ssl.')[key] : scoped[`ssl.${key}`]);
  const secret = (key: string): Secret | null => {
    const v = raw(key);
    return v === undefined || v === '' ? null : new Secret(v);
  };
  const text = (key: string): string | null => {
    const v = raw(key)?.trim();
    return v === undefined || v === '' ? null : v;
  };
  const type = text('keystore.type')?.toUpperCase() ?? null;
  const settings: RestTlsSettings = {
    prefix,
    keystoreType: type,
    keystoreLocation: ((l) => (l === null ? null : resolvePath(l)))(text('keystore.location')),
    keystorePassword: secret('keystore.password'),
    keyPassword: secret('key.password'),
    keystoreKey: secret('keystore.key'),
    keystoreCertificateChain: text('keystore.certificate.chain'),
    enabledProtocols: text('enabled.protocols')?.split(/\s*,\s*/) ?? null,
  };
  if (!httpsUsed) return settings;
  const key = (k: string): string => `${prefix}ssl.${k}`;
  if (type !== null && !KEYSTORE_TYPES.includes(type)) p.addError(key('keystore.type'), `Invalid value ${type} for configuration ${key('keystore.type')}: an https listener takes PKCS12 or PEM`);
  if (type === 'JKS') {
    p.addError(key('keystore.type'), `JKS keystores are not supported (Node reads PKCS12 and PEM): convert it with \`keytool -importkeystore -srckeystore <file>.jks -destkeystore <file>.p12 -deststoretype PKCS12\` and set ${key('keystore.type')}=PKCS12`);
  }
  if (type === 'PEM') {
    const inline = settings.keystoreKey !== null || settings.keystoreCertificateChain !== null;
    if (inline && (settings.keystoreKey === null || settings.keystoreCertificateChain === null)) {
      p.addError(key('keystore.key'), `${key('keystore.key')} and ${key('keystore.certificate.chain')} go together (PEM text of the private key and of its certificate chain)`);
    } else if (!inline && settings.keystoreLocation === null) {
      p.addError(key('keystore.location'), `An https listener with ${key('keystore.type')}=PEM needs ${key('keystore.location')} (a PEM file with the key and its chain) or ${key('keystore.key')} with ${key('keystore.certificate.chain')}`);
    }
  } else if (settings.keystoreLocation === null) {
    p.addError(key('keystore.location'), `An https listener needs a keystore: ${key('keystore.location')} (a PKCS12 file) with ${key('keystore.password')}, or ${key('keystore.type')}=PEM`);
  }
  const clientAuth = text('client.auth')?.toLowerCase() ?? 'none';
  if (clientAuth !== 'none') {
    p.addError(key('client.auth'), `not supported yet: ${key('client.auth')}=${clientAuth} needs client certificates on the REST listener. Use ${'icefloe.rest.basic-auth.file'} for authentication, or remove it (or set none).`);
  }
  for (const protocol of settings.enabledProtocols ?? []) {
    if (!['TLSv1.2', 'TLSv1.3'].includes(protocol)) p.addError(key('enabled.protocols'), `${key('enabled.protocols')}: ${protocol} is not offered (Node's TLS serves TLSv1.2 and TLSv1.3)`);
  }
  return settings;
}

/** The REST settings of a parsed worker config; problems are added to `p`. `resolvePath` makes file names absolute. */
export function buildRestConfig(p: ParsedConfig, resolvePath: (path: string) => string): RestConfig {
  const listeners: RestListener[] = [];
  const entries = p.list('listeners') ?? [];
  if (entries.length === 0) p.addError('listeners', 'Invalid value for listeners, at least one URL is expected, ex: http://localhost:8080,https://localhost:8443.');
  for (const entry of entries) {
    const parsed = parseListener(entry);
    if (typeof parsed === 'string') p.addError('listeners', parsed);
    else listeners.push(parsed);
  }
  const advertised = p.string('rest.advertised.listener')?.toLowerCase() ?? null;
  let responseHeaders: HeaderRule[] = [];
  try {
    responseHeaders = parseHeaderRules(p.string('response.http.headers.config') ?? '');
  } catch (e) {
    p.addError('response.http.headers.config', (e as Error).message);
  }
  const admin = p.list('admin.listeners');
  const authFile = p.string('icefloe.rest.basic-auth.file');
  return Object.freeze({
    listeners,
    advertisedHostName: p.string('rest.advertised.host.name') || null,
    advertisedPort: p.number('rest.advertised.port'),
    advertisedListener: advertised === 'http' || advertised === 'https' ? advertised : null,
    cors: { allowOrigin: p.string('access.control.allow.origin') ?? '', allowMethods: p.string('access.control.allow.methods') ?? '' },
    responseHeaders,
    // admin.listeners unset: the admin endpoints are on the main listeners; empty: not served at all
    // (a separate admin listener is refused by unsupported.ts).
    adminEndpoints: admin === null || admin.length > 0,
    topicTracking: { enabled: p.boolean('topic.tracking.enable') ?? true, allowReset: p.boolean('topic.tracking.allow.reset') ?? true },
    basicAuthFile: authFile === null || authFile === '' ? null : resolvePath(authFile),
    tls: tlsSettings(p, listeners.some((l) => l.protocol === 'https'), resolvePath),
  });
}
