/**
 * SqlDriver on SQLite through Node's built-in `node:sqlite` (synchronous; each call runs to completion).
 * A file database gets WAL and a busy time-out so that several processes can share one catalog; the
 * compare-and-swap UPDATE is a single statement, atomic under SQLite's database lock.
 *
 * Classification by extended result code: SQLITE_CONSTRAINT_PRIMARYKEY/UNIQUE → unique-violation;
 * SQLITE_BUSY/LOCKED → transient (the statement did not run); "no such table/column" (SQLITE_ERROR on
 * prepare) cannot be told apart by code from other errors and is `other`.
 */
import { DatabaseSync } from 'node:sqlite';
import { SqlDriverError } from './driver.ts';
import type { SqlDriver, SqlValue } from './driver.ts';

export interface SqliteDriverConfig {
  /** A file path, or `:memory:` (one connection: tests). */
  readonly path: string;
  /** How long a statement waits for another writer's lock (default 5 s). */
  readonly busyTimeoutMs?: number;
}

const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_IOERR = 10;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

function classify(e: unknown): SqlDriverError {
  const errcode = typeof e === 'object' && e !== null ? (e as { errcode?: unknown }).errcode : undefined;
  if (typeof errcode !== 'number') return new SqlDriverError('other', undefined, e);
  const primary = errcode & 0xff;
  const code = `SQLITE_${errcode}`;
  if (errcode === SQLITE_CONSTRAINT_PRIMARYKEY || errcode === SQLITE_CONSTRAINT_UNIQUE) return new SqlDriverError('unique-violation', code, e);
  if (primary === SQLITE_BUSY || primary === SQLITE_LOCKED) return new SqlDriverError('transient', code, e);
  // An I/O error during commit leaves the outcome open, as a lost connection does.
  if (primary === SQLITE_IOERR) return new SqlDriverError('connection-lost', code, e);
  return new SqlDriverError('other', code, e);
}

export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  readonly #db: DatabaseSync;

  constructor(config: SqliteDriverConfig) {
    try {
      this.#db = new DatabaseSync(config.path);
      this.#db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(config.busyTimeoutMs ?? 5000))}`);
      if (config.path !== ':memory:') this.#db.exec('PRAGMA journal_mode = WAL');
    } catch (e) {
      throw classify(e);
    }
  }

  async query(sql: string, params: readonly SqlValue[] = []): Promise<Record<string, unknown>[]> {
    try {
      return this.#db.prepare(sql).all(...params) as Record<string, unknown>[];
    } catch (e) {
      throw classify(e);
    }
  }

  async execute(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    try {
      return Number(this.#db.prepare(sql).run(...params).changes);
    } catch (e) {
      throw classify(e);
    }
  }

  async transaction(statements: readonly { sql: string; params?: readonly SqlValue[] }[]): Promise<void> {
    try {
      this.#db.exec('BEGIN IMMEDIATE');
    } catch (e) {
      throw classify(e);
    }
    try {
      for (const s of statements) this.#db.prepare(s.sql).run(...(s.params ?? []));
      this.#db.exec('COMMIT');
    } catch (e) {
      try {
        this.#db.exec('ROLLBACK');
      } catch {
        // the transaction is gone already
      }
      throw classify(e);
    }
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}
