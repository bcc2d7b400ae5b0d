/**
 * Where the local stack's services are, for integration and smoke tests.
 *
 * `scripts/stack up` writes `$ICEFLOE_RUN/endpoints.env` (default /tmp/icefloe-stack). Tests read it
 * here and nowhere else. A missing file or a service that does not answer is a failure that names the
 * service and says how to start it — never a skip.
 */
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';

export interface StackEndpoints {
  run: string;
  kafkaBootstrap: string;
  kafkaHome: string;
  java17: string;
  registryUrl: string;
  s3Endpoint: string;
  s3Bucket: string;
  s3AccessKey: string;
  s3SecretKey: string;
  s3Region: string;
  catalogUri: string;
  catalogName: string;
  catalogWarehouse: string;
  postgresUrl: string;
  redisUrl: string;
  proxyS3Endpoint: string;
  proxyCatalogUri: string;
  proxyControlUrl: string;
  python: string;
  duckdbExtensionDir: string;
  /** The Spark reader's venv python (pyspark) and its jars (Iceberg's Spark runtime, AWS bundle), comma-separated. */
  sparkPython: string;
  sparkJars: string;
}

const KEYS: Record<keyof StackEndpoints, string> = {
  run: 'ICEFLOE_RUN',
  kafkaBootstrap: 'ICEFLOE_KAFKA_BOOTSTRAP',
  kafkaHome: 'ICEFLOE_KAFKA_HOME',
  java17: 'ICEFLOE_JAVA17',
  registryUrl: 'ICEFLOE_REGISTRY_URL',
  s3Endpoint: 'ICEFLOE_S3_ENDPOINT',
  s3Bucket: 'ICEFLOE_S3_BUCKET',
  s3AccessKey: 'ICEFLOE_S3_ACCESS_KEY',
  s3SecretKey: 'ICEFLOE_S3_SECRET_KEY',
  s3Region: 'ICEFLOE_S3_REGION',
  catalogUri: 'ICEFLOE_CATALOG_URI',
  catalogName: 'ICEFLOE_CATALOG_NAME',
  catalogWarehouse: 'ICEFLOE_CATALOG_WAREHOUSE',
  postgresUrl: 'ICEFLOE_POSTGRES_URL',
  redisUrl: 'ICEFLOE_REDIS_URL',
  proxyS3Endpoint: 'ICEFLOE_PROXY_S3_ENDPOINT',
  proxyCatalogUri: 'ICEFLOE_PROXY_CATALOG_URI',
  proxyControlUrl: 'ICEFLOE_PROXY_CONTROL_URL',
  python: 'ICEFLOE_PYTHON',
  duckdbExtensionDir: 'ICEFLOE_DUCKDB_EXTENSION_DIR',
  sparkPython: 'ICEFLOE_SPARK_PYTHON',
  sparkJars: 'ICEFLOE_SPARK_JARS',
};

let cached: StackEndpoints | undefined;

function endpointsFile(): string {
  return join(process.env['ICEFLOE_RUN'] ?? '/tmp/icefloe-stack', 'endpoints.env');
}

function readEndpoints(file: string): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new Error(`the local stack is not up (no ${file}): run scripts/stack up`);
  }
  const values = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (line.startsWith('#') || eq < 0) continue;
    values.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return values;
}

/** The stack's endpoints; throws (naming the fix) when the stack was never brought up. */
export function stackEndpoints(): StackEndpoints {
  if (cached !== undefined) return cached;
  const file = endpointsFile();
  const values = readEndpoints(file);
  const out: Partial<StackEndpoints> = {};
  for (const [field, key] of Object.entries(KEYS) as [keyof StackEndpoints, string][]) {
    const v = values.get(key);
    if (v === undefined) throw new Error(`${file} lacks ${key}: re-run scripts/stack up`);
    out[field] = v;
  }
  cached = out as StackEndpoints;
  return cached;
}

/**
 * The REST URL of the stack's reference Kafka Connect worker (scripts/stack.d/connect.sh). Apart from
 * stackEndpoints() on purpose: a stack brought up before the service existed lacks the key, and only
 * the tests that use the worker should fail for that, naming the fix.
 */
export function connectWorkerUrl(): string {
  const file = endpointsFile();
  const url = readEndpoints(file).get('ICEFLOE_CONNECT_URL');
  if (url === undefined) throw new Error(`${file} lacks ICEFLOE_CONNECT_URL (the Kafka Connect reference worker): run scripts/stack start connect`);
  return url;
}

/**
 * The schema registry's URL through the fault proxy (scripts/stack.d/proxy.sh's registry route). Apart from
 * stackEndpoints() for the same reason as connectWorkerUrl: a proxy started before the route existed lacks
 * it, and only the tests that cut the registry should fail for that, naming the fix.
 */
export function proxyRegistryUrl(): string {
  const file = endpointsFile();
  const url = readEndpoints(file).get('ICEFLOE_PROXY_REGISTRY_URL');
  if (url === undefined) throw new Error(`${file} lacks ICEFLOE_PROXY_REGISTRY_URL (the fault proxy's registry route): run scripts/stack stop proxy && scripts/stack start proxy`);
  return url;
}

/**
 * Fails with `<service> at host:port is not reachable` unless something accepts TCP connections there.
 * Smoke tests call it first so that a stopped service reads as that service being down, not as a
 * client library's time-out several seconds later.
 */
export async function requireReachable(service: string, hostPort: string, timeoutMs = 2000): Promise<void> {
  const url = hostPort.includes('://') ? new URL(hostPort) : new URL(`tcp://${hostPort.split(',')[0] ?? ''}`);
  const port = Number(url.port);
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host: url.hostname, port });
    const fail = (why: string): void => {
      socket.destroy();
      reject(new Error(`${service} at ${url.hostname}:${port} is not reachable (${why}): is the stack up? scripts/stack status`));
    };
    socket.setTimeout(timeoutMs, () => fail('timed out'));
    socket.once('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message));
    socket.once('connect', () => {
      socket.end();
      resolve();
    });
  });
}

/** Settings for an S3 client or our S3 store on the stack's S3 (or, given its endpoint, the fault proxy). */
export function s3Settings(endpoint: string = stackEndpoints().s3Endpoint): {
  endpoint: string;
  region: string;
  forcePathStyle: true;
  credentials: { accessKeyId: string; secretAccessKey: string };
} {
  const e = stackEndpoints();
  return { endpoint, region: e.s3Region, forcePathStyle: true, credentials: { accessKeyId: e.s3AccessKey, secretAccessKey: e.s3SecretKey } };
}

/** A loopback TCP port nothing listens on now: bound by the OS, then released (a test binds or refuses it next). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
