/**
 * What the ledger's queries need of a database, whichever it is: run SQL with positional `?`
 * parameters, read rows, and read a consistent snapshot. SQLite (`../sqlite/db.ts`) answers at
 * once; PostgreSQL answers over the network. The SQL that differs between the two is asked of the
 * {@link Dialect}; everything else is written once, in the SQL both understand.
 */

export type SqlValue = string | number | bigint | null;

export interface SqlDb {
  readonly dialect: Dialect;
  /** Every row of a query, as objects keyed by column name. */
  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** The first row, or undefined. */
  get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /** The first column of the first row, or undefined. */
  value<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /** A statement that changes rows: how many it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
  /**
   * Runs `read` in one consistent snapshot, so that figures read by several queries agree while a
   * run writes (a deferred read transaction in SQLite, a repeatable-read one in PostgreSQL).
   */
  snapshot<T>(read: () => Promise<T>): Promise<T>;
}

/** The SQL that differs between SQLite and PostgreSQL. Times are ISO 8601 UTC text in both. */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** Whole epoch milliseconds of an ISO text time (bucket edges stay exact). */
  epochMs(isoText: string): string;
  /** Seconds from one ISO text time to another, as a real number. */
  secondsBetween(fromIso: string, toIso: string): string;
  /** A top-level member of a JSON text column as a number, null when absent or not a number. */
  jsonNumber(jsonText: string, key: string): string;
  /** The greater of two values (SQLite's scalar `max`, PostgreSQL's `GREATEST`). */
  greatest(a: string, b: string): string;
  /**
   * A top-level member of a JSON text column that is `true` or `false` as 1 or 0; null when absent,
   * not a boolean, or the text is not JSON.
   */
  jsonFlag(jsonText: string, key: string): string;
  /**
   * A text expression to ORDER BY in byte order, as SQLite's default BINARY collation sorts, so
   * that ties break the same in both (PostgreSQL's database collation may sort `a_b` after `ab`).
   */
  byteOrder(text: string): string;
}

/** `'a', 'b'`: a list of SQL string literals, for `IN (…)` of constant words. */
export const sqlList = (values: readonly string[]): string => values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', ');
