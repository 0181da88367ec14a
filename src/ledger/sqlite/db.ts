/** The ledger's queries on a better-sqlite3 connection (see `../sql/db.ts`): synchronous underneath. */
import type Database from 'better-sqlite3';
import type { Dialect, SqlDb, SqlValue } from '../sql/db.js';

export const SQLITE_DIALECT: Dialect = {
  name: 'sqlite',
  epochMs: (t) => `(CAST(strftime('%s', ${t}) AS INTEGER) * 1000 + CAST(substr(strftime('%f', ${t}), 4) AS INTEGER))`,
  secondsBetween: (from, to) => `((julianday(${to}) - julianday(${from})) * 86400.0)`,
  jsonNumber: (json, key) => `(CASE WHEN json_valid(${json}) AND json_type(${json}, '$.${key}') IN ('integer', 'real') THEN json_extract(${json}, '$.${key}') END)`,
  greatest: (a, b) => `max(${a}, ${b})`,
  jsonFlag: (json, key) => `(CASE WHEN json_valid(${json}) AND json_type(${json}, '$.${key}') IN ('true', 'false') THEN json_extract(${json}, '$.${key}') END)`,
  byteOrder: (text) => text,
};

export class SqliteDb implements SqlDb {
  readonly dialect = SQLITE_DIALECT;
  readonly #statements = new Map<string, Database.Statement>();

  constructor(readonly db: Database.Database) {}

  #prepare(sql: string): Database.Statement {
    let stmt = this.#statements.get(sql);
    if (stmt === undefined) {
      stmt = this.db.prepare(sql);
      this.#statements.set(sql, stmt);
    }
    return stmt;
  }

  all<T>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return Promise.resolve(this.#prepare(sql).pluck(false).all(...params) as T[]);
  }

  get<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return Promise.resolve(this.#prepare(sql).pluck(false).get(...params) as T | undefined);
  }

  value<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return Promise.resolve(this.#prepare(sql).pluck(true).get(...params) as T | undefined);
  }

  run(sql: string, params: readonly SqlValue[] = []): Promise<{ changes: number }> {
    return Promise.resolve({ changes: this.#prepare(sql).run(...params).changes });
  }

  async snapshot<T>(read: () => Promise<T>): Promise<T> {
    // One connection, used by nobody else meanwhile: a read transaction may span the awaits.
    if (this.db.inTransaction) return read();
    this.db.exec('BEGIN DEFERRED');
    try {
      return await read();
    } finally {
      if (this.db.inTransaction) this.db.exec('COMMIT');
    }
  }
}
