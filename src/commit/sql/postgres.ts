/**
 * SqlDriver on PostgreSQL through `pg` (a pool). Statements use `?`; they are renumbered to `$n` here.
 *
 * A connection is taken from the pool before a statement is sent, so a failure to connect is known to be
 * `not-sent`; a failure after that without a SQLSTATE (socket closed, client-side query time-out) is
 * `connection-lost`, as are SQLSTATE classes 08 (connection exception) and 57P01/57P02 (the server was
 * shut down under us, possibly after committing).
 *
 * `pg` is loaded when the first statement runs, not when this module is: the composition root imports
 * this driver for every catalog, and most connectors of a process never use PostgreSQL.
 *
 * Must not: log the connection string (it carries the password).
 */
import type pg from 'pg';
import { SqlDriverError } from './driver.ts';
import type { SqlDriver, SqlErrorKind, SqlValue } from './driver.ts';

export interface PostgresDriverConfig {
  /** postgresql://user:password@host:port/database */
  readonly connectionString: string;
  /** Pool size (default 4). */
  readonly maxConnections?: number;
  /** Client-side time-out of one statement (default 30 s). */
  readonly queryTimeoutMs?: number;
  /** Time-out to obtain a connection (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Schema to use (sets search_path), e.g. to isolate tests. Default: the server's. */
  readonly schema?: string;
}

const TRANSIENT_STATES = new Set(['40001', '40P01', '53300', '57P03', '55P03']);
const LOST_STATES = new Set(['57P01', '57P02']);

function errno(e: unknown): string | undefined {
  const c = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  return typeof c === 'string' ? c : undefined;
}

type Pg = typeof pg;
let loading: Promise<Pg> | undefined;
function loadPg(): Promise<Pg> {
  loading ??= import('pg').then((m) => m.default);
  loading.catch(() => (loading = undefined));
  return loading;
}

/** Classifies a failure of a statement sent on an established connection. */
function classify(pg: Pg, e: unknown): SqlDriverError {
  if (e instanceof pg.DatabaseError && e.code !== undefined) {
    const state = e.code;
    let kind: SqlErrorKind = 'other';
    if (state === '23505') kind = 'unique-violation';
    else if (state.startsWith('08') || LOST_STATES.has(state)) kind = 'connection-lost';
    else if (TRANSIENT_STATES.has(state)) kind = 'transient';
    else if (state === '42P01' || state === '42703' || state === '3F000') kind = 'undefined-object';
    return new SqlDriverError(kind, state, e);
  }
  return new SqlDriverError('connection-lost', errno(e), e);
}

function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

export class PostgresDriver implements SqlDriver {
  readonly dialect = 'postgres' as const;
  readonly #config: PostgresDriverConfig;
  /** Made with the first statement. */
  #pool: { readonly pg: Pg; readonly pool: pg.Pool } | undefined;
  #closed = false;

  constructor(config: PostgresDriverConfig) {
    this.#config = config;
  }

  async #connect(): Promise<{ readonly pg: Pg; readonly pool: pg.Pool }> {
    const closed = (): SqlDriverError => new SqlDriverError('not-sent', undefined, new Error('the PostgreSQL driver is closed'));
    if (this.#pool !== undefined) return this.#pool;
    if (this.#closed) throw closed();
    const pg = await loadPg();
    // Another call may have made it, or close() come, while `pg` loaded.
    if (this.#pool !== undefined) return this.#pool;
    if (this.#closed) throw closed();
    const config = this.#config;
    const pool = new pg.Pool({
      connectionString: config.connectionString,
      max: config.maxConnections ?? 4,
      query_timeout: config.queryTimeoutMs ?? 30_000,
      connectionTimeoutMillis: config.connectTimeoutMs ?? 10_000,
      ...(config.schema === undefined ? {} : { options: `-c search_path=${config.schema}` }),
    });
    // An idle connection the server drops must not crash the process; the next checkout replaces it.
    pool.on('error', () => undefined);
    this.#pool = { pg, pool };
    return this.#pool;
  }

  async #client(): Promise<{ readonly pg: Pg; readonly client: pg.PoolClient }> {
    const { pg, pool } = await this.#connect();
    try {
      return { pg, client: await pool.connect() };
    } catch (e) {
      // Connecting failed: nothing was sent. A server that refuses us for good (bad password 28P01,
      // unknown database 3D000) is `other`, which the catalog reports as a configuration problem.
      if (e instanceof pg.DatabaseError && e.code !== undefined && (e.code.startsWith('28') || e.code.startsWith('3D'))) {
        throw new SqlDriverError('other', e.code, e);
      }
      throw new SqlDriverError('not-sent', errno(e), e);
    }
  }

  async #run<T>(fn: (client: pg.PoolClient, pg: Pg) => Promise<T>): Promise<T> {
    const { pg, client } = await this.#client();
    let broken: Error | undefined;
    try {
      return await fn(client, pg);
    } catch (e) {
      const err = e instanceof SqlDriverError ? e : classify(pg, e);
      if (err.kind === 'connection-lost') broken = err;
      throw err;
    } finally {
      client.release(broken); // a broken connection is destroyed, not returned to the pool
    }
  }

  async query(sql: string, params: readonly SqlValue[] = []): Promise<Record<string, unknown>[]> {
    return this.#run(async (c) => (await c.query(numbered(sql), [...params])).rows as Record<string, unknown>[]);
  }

  async execute(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return this.#run(async (c) => (await c.query(numbered(sql), [...params])).rowCount ?? 0);
  }

  async transaction(statements: readonly { sql: string; params?: readonly SqlValue[] }[]): Promise<void> {
    await this.#run(async (c, pg) => {
      await c.query('BEGIN');
      try {
        for (const s of statements) await c.query(numbered(s.sql), [...(s.params ?? [])]);
        await c.query('COMMIT');
      } catch (e) {
        const err = classify(pg, e);
        if (err.kind !== 'connection-lost') await c.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#pool?.pool.end();
  }
}
