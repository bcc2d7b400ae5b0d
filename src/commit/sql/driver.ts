/**
 * The SQL catalog's database seam: PostgreSQL (postgres.ts, `pg`) and SQLite (sqlite.ts, `node:sqlite`)
 * behind one small interface, so catalog.ts holds the JdbcCatalog logic once.
 *
 * Owns: `?` placeholders (the PostgreSQL driver renumbers them), and the classification of driver errors
 * into the few kinds the catalog decides on — by SQLSTATE / SQLite result code / errno, never by message:
 *   unique-violation  a primary key already exists (table or namespace property exists)
 *   not-sent          the statement never reached the database (connect failed): nothing happened
 *   transient         the statement ran and failed as a whole (busy, serialization, too many
 *                     connections): nothing happened, a retry may succeed
 *   connection-lost   the connection failed while the statement was out: a write may or may not have
 *                     committed (the catalog turns this into CommitStateUnknownError for a commit)
 *   undefined-object  a table or column is missing (catalog tables absent, v0 schema)
 *   other             anything else: a bug or a misconfiguration
 */
export type SqlValue = string | number | null;

export type SqlErrorKind = 'unique-violation' | 'not-sent' | 'transient' | 'connection-lost' | 'undefined-object' | 'other';

/** A driver failure, classified. Never leaves commit/sql/: catalog.ts translates it into our errors. */
export class SqlDriverError extends Error {
  readonly kind: SqlErrorKind;
  /** SQLSTATE, SQLite result code or errno, for the error context. */
  readonly code: string | undefined;
  constructor(kind: SqlErrorKind, code: string | undefined, cause: unknown) {
    super(`SQL ${kind}${code === undefined ? '' : ` (${code})`}`, { cause });
    this.kind = kind;
    this.code = code;
  }
}

export interface SqlDriver {
  readonly dialect: 'postgres' | 'sqlite';
  /** Rows of a query. Throws SqlDriverError. */
  query(sql: string, params?: readonly SqlValue[]): Promise<Record<string, unknown>[]>;
  /** Runs a statement; answers the number of rows it changed. Throws SqlDriverError. */
  execute(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Runs statements in one transaction (all or nothing). Throws SqlDriverError. */
  transaction(statements: readonly { sql: string; params?: readonly SqlValue[] }[]): Promise<void>;
  close(): Promise<void>;
}
