/**
 * The connector's catalog keys: `iceberg.catalog` and the `iceberg.catalog.*` properties (or the
 * worker's default catalog when the connector names none), typed for the catalog and object-store
 * adapters: catalog type, uri, warehouse, credentials, S3 settings.
 *
 * Owns: the catalog rules (a supported type, a uri of the right shape, a warehouse for sql/jdbc) and
 * their messages, naming the connector key or, for the worker's default, `iceberg.catalog`.
 * Must not: connect to anything, or put a secret or a uri password in a message.
 */
import { Secret, invalidMessage, redactUserInfo, safeProps } from './config-def.ts';
import type { ParsedConfig } from './config-def.ts';
import { MESSAGES } from './connector-def.ts';

export interface S3Settings {
  readonly endpoint: string | null;
  readonly region: string | null;
  readonly pathStyleAccess: boolean;
  readonly accessKeyId: string | null;
  readonly secretAccessKey: Secret | null;
  readonly sessionToken: Secret | null;
  /** `s3.request-timeout-ms` (Icefloe's): one S3 request's time-out; null: the store's default (60 s). */
  readonly requestTimeoutMs: number | null;
}

export interface CatalogConfig {
  readonly name: string;
  /** `sql` covers Java's `jdbc` type (the same two tables, PyIceberg calls it sql). */
  readonly type: 'rest' | 'sql';
  readonly uri: string;
  readonly warehouse: string | null;
  readonly credential: Secret | null;
  readonly token: Secret | null;
  readonly s3: S3Settings;
  /** Every catalog property as given (prefix stripped), for the catalog adapter; JSON/inspect show secrets as "[hidden]". */
  readonly props: Readonly<Record<string, string>>;
  /** True when the props came from the worker's default catalog. */
  readonly fromWorker: boolean;
}

/** Names a catalog property in errors: the connector's key, or with the worker's default, `iceberg.catalog`. */
type KeyOf = (property: string) => string;

/** The catalog type from `type` (rest, sql, jdbc) or `catalog-impl` (the two Java classes Icefloe implements). */
function catalogType(p: ParsedConfig, props: Readonly<Record<string, string>>, keyOf: KeyOf): 'rest' | 'sql' | null {
  const rawType = props.type?.trim().toLowerCase();
  const impl = props['catalog-impl']?.trim();
  if (rawType === 'rest') return 'rest';
  if (rawType === 'sql' || rawType === 'jdbc') return 'sql';
  if (rawType !== undefined) {
    p.addError(keyOf('type'), invalidMessage(keyOf('type'), props.type ?? '', 'Icefloe supports the catalog types rest, sql and jdbc: set it to rest for an Iceberg REST catalog, or to jdbc (or sql) for a JDBC catalog in PostgreSQL or SQLite; Icefloe has no Hive, Glue, Nessie or Hadoop client: use the Iceberg REST endpoint of the catalog if it has one'));
  } else if (impl === 'org.apache.iceberg.rest.RESTCatalog') return 'rest';
  else if (impl === 'org.apache.iceberg.jdbc.JdbcCatalog') return 'sql';
  else if (impl !== undefined) {
    p.addError(keyOf('catalog-impl'), invalidMessage(keyOf('catalog-impl'), impl, 'Icefloe supports org.apache.iceberg.rest.RESTCatalog and org.apache.iceberg.jdbc.JdbcCatalog (or type=rest|sql|jdbc)'));
  } else {
    // Java would default to a Hive catalog here; Icefloe has none, and guessing from the uri could write elsewhere.
    p.addError(keyOf('type'), `Missing required configuration "${keyOf('type')}" which has no default value. (rest, sql or jdbc)`);
  }
  return null;
}

function checkUri(p: ParsedConfig, uri: string, type: 'rest' | 'sql' | null, keyOf: KeyOf): void {
  const shownUri = redactUserInfo(uri);
  if (uri === '') p.addError(keyOf('uri'), `Missing required configuration "${keyOf('uri')}" which has no default value.`);
  else if (type === 'rest' && !/^https?:\/\/[^\s/]+/.test(uri)) p.addError(keyOf('uri'), invalidMessage(keyOf('uri'), shownUri, 'A rest catalog uri is an http(s) URL'));
  else if (type === 'sql' && !/^jdbc:(sqlite|postgresql):/.test(uri)) {
    p.addError(keyOf('uri'), invalidMessage(keyOf('uri'), shownUri, 'A sql/jdbc catalog uri is jdbc:sqlite:<file> or jdbc:postgresql://<host>/<db>'));
  }
}

function s3Settings(p: ParsedConfig, props: Readonly<Record<string, string>>, keyOf: KeyOf, secret: (k: string) => Secret | null): S3Settings {
  const pathStyle = (props['s3.path-style-access'] ?? 'false').trim().toLowerCase();
  if (pathStyle !== 'true' && pathStyle !== 'false') p.addError(keyOf('s3.path-style-access'), invalidMessage(keyOf('s3.path-style-access'), props['s3.path-style-access'] ?? '', 'Expected value to be either true or false'));
  const rawTimeout = props['s3.request-timeout-ms']?.trim();
  const timeout = rawTimeout === undefined || rawTimeout === '' ? null : Number(rawTimeout);
  if (timeout !== null && !(Number.isSafeInteger(timeout) && timeout >= 1)) {
    p.addError(keyOf('s3.request-timeout-ms'), invalidMessage(keyOf('s3.request-timeout-ms'), rawTimeout ?? '', 'Expected a whole number of milliseconds, at least 1'));
  }
  return Object.freeze({
    endpoint: props['s3.endpoint']?.trim() || null,
    region: props['client.region']?.trim() || props['s3.region']?.trim() || null,
    pathStyleAccess: pathStyle === 'true',
    accessKeyId: props['s3.access-key-id']?.trim() || null,
    secretAccessKey: secret('s3.secret-access-key'),
    sessionToken: secret('s3.session-token'),
    requestTimeoutMs: timeout !== null && Number.isSafeInteger(timeout) && timeout >= 1 ? timeout : null,
  });
}

function emptyS3(): S3Settings {
  return Object.freeze({ endpoint: null, region: null, pathStyleAccess: false, accessKeyId: null, secretAccessKey: null, sessionToken: null, requestTimeoutMs: null });
}

/**
 * The catalog part of a connector config: at least one `iceberg.catalog.*` property, or the worker's
 * default (`defaultCatalog`, the same vocabulary) when the connector sets none.
 */
export function catalogConfig(p: ParsedConfig, defaultCatalog: Readonly<Record<string, string>> | undefined): CatalogConfig {
  const own = p.prefixed('iceberg.catalog.');
  const fromWorker = Object.keys(own).length === 0 && defaultCatalog !== undefined && Object.keys(defaultCatalog).length > 0;
  const props: Readonly<Record<string, string>> = fromWorker ? safeProps(defaultCatalog ?? {}, 'iceberg.catalog.') : own;
  const name = p.string('iceberg.catalog') ?? 'iceberg';
  const keyOf: KeyOf = (k) => (fromWorker ? `iceberg.catalog` : `iceberg.catalog.${k}`);
  if (Object.keys(props).length === 0) {
    p.addError('iceberg.catalog', MESSAGES.noCatalog);
    return Object.freeze({ name, type: 'rest', uri: '', warehouse: null, credential: null, token: null, s3: emptyS3(), props, fromWorker });
  }
  const type = catalogType(p, props, keyOf);
  const uri = props.uri?.trim() ?? '';
  checkUri(p, uri, type, keyOf);
  const warehouse = props.warehouse?.trim() || null;
  if (type === 'sql' && warehouse === null) p.addError(keyOf('warehouse'), `Missing required configuration "${keyOf('warehouse')}" which has no default value. (a sql/jdbc catalog needs a warehouse location)`);
  const secret = (k: string): Secret | null => (props[k] === undefined || props[k] === '' ? null : new Secret(props[k]));
  return Object.freeze({
    name,
    type: type ?? 'rest',
    uri,
    warehouse,
    credential: secret('credential'),
    token: secret('token'),
    s3: s3Settings(p, props, keyOf, secret),
    props,
    fromWorker,
  });
}
