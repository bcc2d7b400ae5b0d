/**
 * The storage paths of `npm run bench`'s load phases (--storage):
 * - embedded: the worker's default catalog, SQLite + a local warehouse in the run's temp directory;
 * - s3-rest: the stack's REST catalog (PostgreSQL behind it) with the data files on S3 (moto), through the
 *   catalog keys of connectors/orders-avro-s3-rest.json pointed at the stack's endpoints, and a fresh
 *   namespace per run.
 * For each run: the connector's catalog keys, the namespace of its tables, and after the run the Parquet
 * files and bytes it wrote (the warehouse directory; for s3-rest, a listing of the tables' locations), then
 * the s3-rest namespace dropped through the catalog's REST API with every object under its tables'
 * locations deleted (moto keeps objects in memory: a million records leave ~100 MB per run), also at the
 * end of a failed run (--keep keeps them). Only the CLI's catalog keys, the REST API and an S3 client: no
 * module of src/, so the load phases still run in an older tree (docs/benchmarks.md, "Before and after").
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { Bench } from './bench-context.ts';
import type { StorageName } from './bench-options.ts';
import { parquetBytesUnder } from './bench-worker.ts';

export interface ParquetOut {
  readonly files: number;
  readonly bytes: number;
}

/** One load run's storage. */
export interface RunStorage {
  readonly name: StorageName;
  /** The namespace of the run's tables ('bench' when embedded: the catalog is the run's own). */
  readonly namespace: string;
  /** Connector catalog keys; undefined for the embedded default (worker properties in the temp directory). */
  readonly catalog: Readonly<Record<string, string>> | undefined;
  /** Parquet files and bytes the run wrote; `dir` is the worker's temp directory. */
  parquet(dir: string): Promise<ParquetOut>;
  /** Drops what the run left in the shared stack (nothing when embedded); idempotent. */
  drop(): Promise<void>;
}

const root = new URL('../../', import.meta.url);

/**
 * The catalog keys of connectors/orders-avro-s3-rest.json with the stack's endpoints. The same as
 * test/helpers/sink-e2e.ts's restCatalogKeys, kept apart on purpose: the bench scripts are copied into
 * older checkouts to measure them ("Before and after"), which have neither that helper nor always the file.
 */
export function restCatalogKeys(b: Bench): Record<string, string> {
  const file = new URL('connectors/orders-avro-s3-rest.json', root);
  const fromFile = existsSync(file)
    ? Object.fromEntries(Object.entries((JSON.parse(readFileSync(file, 'utf8')) as { config: Record<string, string> }).config).filter(([k]) => k === 'iceberg.catalog' || k.startsWith('iceberg.catalog.')))
    : { 'iceberg.catalog.type': 'rest', 'iceberg.catalog.io-impl': 'org.apache.iceberg.aws.s3.S3FileIO', 'iceberg.catalog.s3.path-style-access': 'true' };
  const e = b.stack;
  return {
    ...fromFile,
    'iceberg.catalog': e.catalogName,
    'iceberg.catalog.uri': e.catalogUri,
    'iceberg.catalog.warehouse': e.catalogWarehouse,
    'iceberg.catalog.s3.endpoint': e.s3Endpoint,
    'iceberg.catalog.s3.access-key-id': e.s3AccessKey,
    'iceberg.catalog.s3.secret-access-key': e.s3SecretKey,
    'iceberg.catalog.client.region': e.s3Region,
  };
}

/** The storage of one load run; `label` names it (with the run id) for the s3-rest namespace. */
export function runStorage(b: Bench, name: StorageName, label: string): RunStorage {
  if (name === 'embedded') {
    return { name, namespace: 'bench', catalog: undefined, parquet: (dir) => Promise.resolve(parquetBytesUnder(join(dir, 'warehouse'))), drop: () => Promise.resolve() };
  }
  const namespace = `${b.runId}_${label}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const rest = new RestApi(b);
  let dropping: Promise<void> | undefined;
  const drop = (): Promise<void> => (dropping ??= b.o.keep ? Promise.resolve(console.log(`  kept: namespace ${namespace} in ${b.stack.catalogUri}`)) : rest.dropNamespace(namespace));
  b.cleanups.push(drop);
  return { name, namespace, catalog: restCatalogKeys(b), parquet: () => rest.parquetUnder(namespace), drop };
}

/** The few REST catalog calls the benchmark needs, and the S3 objects under a table's location. */
class RestApi {
  private readonly b: Bench;
  private base: Promise<string> | undefined;
  private s3client: S3Client | undefined;

  constructor(b: Bench) {
    this.b = b;
  }

  /** `{uri}/v1/{prefix}/`: the prefix from GET /v1/config's overrides, when the server sets one. */
  private url(path: string): Promise<string> {
    this.base ??= (async () => {
      const e = this.b.stack;
      const res = await fetch(`${e.catalogUri}/v1/config?warehouse=${encodeURIComponent(e.catalogWarehouse)}`);
      if (!res.ok) throw new Error(`REST catalog: GET /v1/config: ${res.status}`);
      const prefix = ((await res.json()) as { overrides?: { prefix?: string } }).overrides?.prefix;
      return `${e.catalogUri}/v1/${prefix === undefined ? '' : `${encodeURIComponent(prefix)}/`}`;
    })();
    return this.base.then((base) => `${base}${path}`);
  }

  private async call(method: string, path: string): Promise<unknown> {
    const res = await fetch(await this.url(path), { method });
    if (res.status === 404) return undefined;
    if (!res.ok) throw new Error(`REST catalog: ${method} ${path}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? undefined : res.json().catch(() => undefined);
  }

  private async tables(ns: string): Promise<{ name: string; location: string }[]> {
    const list = (await this.call('GET', `namespaces/${encodeURIComponent(ns)}/tables`)) as { identifiers?: { name: string }[] } | undefined;
    const out: { name: string; location: string }[] = [];
    for (const id of list?.identifiers ?? []) {
      const t = (await this.call('GET', `namespaces/${encodeURIComponent(ns)}/tables/${encodeURIComponent(id.name)}`)) as { metadata?: { location?: string } } | undefined;
      if (t?.metadata?.location !== undefined) out.push({ name: id.name, location: t.metadata.location });
    }
    return out;
  }

  private s3(): S3Client {
    const e = this.b.stack;
    this.s3client ??= new S3Client({ endpoint: e.s3Endpoint, region: e.s3Region, forcePathStyle: true, credentials: { accessKeyId: e.s3AccessKey, secretAccessKey: e.s3SecretKey } });
    return this.s3client;
  }

  /** Every object under an s3:// location: key and size. */
  private async objects(location: string): Promise<{ bucket: string; objects: { key: string; size: number }[] }> {
    const m = /^s3a?:\/\/([^/]+)\/?(.*)$/.exec(location);
    if (m === null) throw new Error(`not an s3:// table location: ${location}`);
    const bucket = m[1] as string;
    const prefix = (m[2] as string).replace(/\/?$/, '/');
    const objects: { key: string; size: number }[] = [];
    let token: string | undefined;
    do {
      const page = await this.s3().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key !== undefined) objects.push({ key: o.Key, size: o.Size ?? 0 });
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return { bucket, objects };
  }

  /** Parquet files and bytes under the locations of the namespace's tables. */
  async parquetUnder(ns: string): Promise<ParquetOut> {
    let files = 0;
    let bytes = 0;
    for (const t of await this.tables(ns)) {
      for (const o of (await this.objects(t.location)).objects) {
        if (!o.key.endsWith('.parquet')) continue;
        files++;
        bytes += o.size;
      }
    }
    return { files, bytes };
  }

  /** Drops the namespace's tables (their objects deleted first), then the namespace; a missing one is no error. */
  async dropNamespace(ns: string): Promise<void> {
    try {
      for (const t of await this.tables(ns)) {
        const { bucket, objects } = await this.objects(t.location);
        await this.call('DELETE', `namespaces/${encodeURIComponent(ns)}/tables/${encodeURIComponent(t.name)}?purgeRequested=false`);
        for (let i = 0; i < objects.length; i += 1000) {
          await this.s3().send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects.slice(i, i + 1000).map((o) => ({ Key: o.key })), Quiet: true } }));
        }
      }
      await this.call('DELETE', `namespaces/${encodeURIComponent(ns)}`);
    } finally {
      this.s3client?.destroy();
      this.s3client = undefined;
    }
  }
}
