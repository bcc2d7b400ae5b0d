/**
 * The independent Iceberg readers (PyIceberg and DuckDB, in the stack's Python venv) from Node tests:
 * runs test/readers/read_table.py with the stack's endpoints and parses its JSON answer losslessly
 * (snapshot ids exceed 2^53, so unsafe integers come back as bigint).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isInteger, isSafeNumber, parse } from 'lossless-json';
import { stackEndpoints } from './stack.ts';

const SCRIPT = fileURLToPath(new URL('../readers/read_table.py', import.meta.url));

export interface ReaderArgs {
  mode?: 'read' | 'create';
  engine?: 'pyiceberg' | 'duckdb';
  catalog?: { kind: 'rest' | 'sql'; uri?: string; name?: string; warehouse?: string };
  table: string;
  filter?: string;
  order_by?: string[];
  snapshot_id?: bigint;
  metadata_location?: string;
  rows?: Record<string, unknown>[];
  replace?: boolean;
}

export type ReaderResult = Record<string, unknown> & { rows?: Record<string, unknown>[] };

function parseNumber(text: string): number | bigint {
  return isInteger(text) && !isSafeNumber(text) ? BigInt(text) : Number(text);
}

/** Runs the reader; rejects with its own message (which names an unreachable service) on failure. */
export function readTable(args: ReaderArgs): Promise<ReaderResult> {
  const e = stackEndpoints();
  const env = {
    ...process.env,
    ICEFLOE_CATALOG_URI: e.catalogUri,
    ICEFLOE_CATALOG_NAME: e.catalogName,
    ICEFLOE_CATALOG_WAREHOUSE: e.catalogWarehouse,
    ICEFLOE_POSTGRES_URL: e.postgresUrl,
    ICEFLOE_S3_ENDPOINT: e.s3Endpoint,
    ICEFLOE_S3_ACCESS_KEY: e.s3AccessKey,
    ICEFLOE_S3_SECRET_KEY: e.s3SecretKey,
    ICEFLOE_S3_REGION: e.s3Region,
    ICEFLOE_DUCKDB_EXTENSION_DIR: e.duckdbExtensionDir,
  };
  const json = JSON.stringify(args, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return new Promise((resolve, reject) => {
    execFile(e.python, [SCRIPT, json], { env, maxBuffer: 256 * 1024 * 1024, timeout: 300_000 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(stderr.trim() || error.message, { cause: error }));
        return;
      }
      resolve(parse(stdout, null, parseNumber) as ReaderResult);
    });
  });
}
