/**
 * The independent Iceberg readers (PyIceberg and DuckDB, in the stack's Python venv; Spark in its own)
 * from Node tests: runs test/readers/read_table.py (or read_spark.py for engine 'spark') with the stack's
 * endpoints and parses its JSON answer losslessly (snapshot ids exceed 2^53, so unsafe integers come back
 * as bigint).
 */
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isInteger, isSafeNumber, parse } from 'lossless-json';
import { stackEndpoints } from './stack.ts';

const SCRIPT = fileURLToPath(new URL('../readers/read_table.py', import.meta.url));
const SPARK_SCRIPT = fileURLToPath(new URL('../readers/read_spark.py', import.meta.url));

export interface ReaderArgs {
  /** read (default); create / append: a PyIceberg append (a foreign snapshot); footer: Parquet field ids of each data file. */
  mode?: 'read' | 'create' | 'append' | 'footer' | 'history';
  engine?: 'pyiceberg' | 'duckdb' | 'spark';
  catalog?: { kind: 'rest' | 'sql'; uri?: string; name?: string; warehouse?: string };
  table: string;
  filter?: string;
  order_by?: string[];
  /** Only these top-level columns. */
  columns?: string[];
  snapshot_id?: bigint;
  metadata_location?: string;
  rows?: Record<string, unknown>[];
  replace?: boolean;
  /** Spark: column lists read again in the same session (only primitive columns: the vectorized reader). */
  projections?: string[][];
  /** Spark: further reads in the same session, of this table or others (a session costs ~10 s). */
  queries?: { table?: string; filter?: string; columns?: string[]; order_by?: string[] }[];
  /** Read: also report the data files the scan used (`scanned_files`; PyIceberg adds `live_files`, DuckDB
   *  sets `files_scanned` from EXPLAIN ANALYZE). See test/readers/read_table.py. */
  files?: boolean;
}

export type ReaderResult = Record<string, unknown> & { rows?: Record<string, unknown>[] };

/** Mode `footer`: field ids by Iceberg column path (`a.b`, `tags.element`, `m.key`, `m.value.x`), and each leaf's storage. */
export interface FooterResult {
  readonly snapshot_id: number | bigint | null;
  /** PyIceberg's view of the table's current schema. */
  readonly schema_field_ids: Record<string, number>;
  /** Each data file of the current snapshot, as pyarrow.parquet reads its footer (null: no field id). */
  readonly files: {
    file_path: string;
    record_count: number;
    field_ids: Record<string, number | null>;
    /** Leaf columns by Parquet path: physical type, pyarrow's logical type JSON, fixed length (0 if none). */
    columns: Record<string, { physical_type: string; logical_type: Record<string, unknown>; length: number }>;
  }[];
}

/** The Parquet footers of the current snapshot's data files, read by pyarrow (mode `footer`). */
export async function readFooters(args: Omit<ReaderArgs, 'mode'>): Promise<FooterResult> {
  return (await readTable({ ...args, mode: 'footer' })) as unknown as FooterResult;
}

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
    ICEFLOE_SPARK_JARS: e.sparkJars,
    JAVA_HOME: dirname(dirname(e.java17)),
  };
  const [python, script] = args.engine === 'spark' ? [e.sparkPython, SPARK_SCRIPT] : [e.python, SCRIPT];
  const json = JSON.stringify(args, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return new Promise((resolve, reject) => {
    execFile(python, [script, json], { env, maxBuffer: 256 * 1024 * 1024, timeout: 300_000 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(stderr.trim() || error.message, { cause: error }));
        return;
      }
      resolve(parse(stdout, null, parseNumber) as ReaderResult);
    });
  });
}
