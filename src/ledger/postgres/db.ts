/**
 * The PostgreSQL ledger's connection: a `pg` pool (what pg-boss and graphile-worker build on: plain
 * SQL, no ORM, a maintained driver), its own schema, and the ledger's queries on it (`SqlDb`). Every
 * pool and checked-out client has an `error` handler (an unhandled one crashes the process when the
 * server goes away); statements and idle transactions time out. The connection string's password is
 * never shown: {@link displayTarget} and {@link PgTarget.redact} take it out of every text.
 */
import pg from 'pg';
import { QuoteBatchError } from '../../errors.js';
import type { Dialect, SqlDb, SqlValue } from '../sql/db.js';
import type { PgTarget } from './target.js';

export const POSTGRES_DIALECT: Dialect = {
  name: 'postgres',
  epochMs: (t) => `(FLOOR(EXTRACT(EPOCH FROM (${t})::timestamptz) * 1000)::bigint)`,
  secondsBetween: (from, to) => `(EXTRACT(EPOCH FROM ((${to})::timestamptz - (${from})::timestamptz))::double precision)`,
  jsonNumber: (json, key) => `(CASE WHEN jsonb_typeof((${json})::jsonb -> '${key}') = 'number' THEN ((${json})::jsonb ->> '${key}')::double precision END)`,
  greatest: (a, b) => `GREATEST(${a}, ${b})`,
  jsonFlag: (json, key) => `(CASE WHEN jsonb_typeof((${json})::jsonb -> '${key}') = 'boolean' THEN CASE WHEN ((${json})::jsonb -> '${key}')::boolean THEN 1 ELSE 0 END END)`,
  byteOrder: (text) => `(${text} COLLATE "C")`,
};

// int8 (counts, ids) and numeric as numbers, as SQLite gives them; the counts stay far below 2^53.
const TYPES = {
  getTypeParser: (oid: number, format?: string): ((value: string) => unknown) => {
    if (oid === 20 || oid === 1700) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface PgPoolOptions {
  /** Connections at most. */
  max?: number;
  /** Longest statement, ms. */
  statementTimeoutMs?: number;
}

/** Opens a pool on the target's schema; every connection and error is handled, every text redacted. */
export function openPool(target: PgTarget, options: PgPoolOptions = {}): pg.Pool {
  const statementTimeout = options.statementTimeoutMs ?? 30_000;
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max: options.max ?? 4,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    application_name: 'quote-batch',
    options: `-c search_path=${target.schema},public -c statement_timeout=${statementTimeout} -c idle_in_transaction_session_timeout=${Math.max(statementTimeout, 60_000)}`,
    types: TYPES,
  } as pg.PoolConfig);
  // A connection the server closed: the pool drops it; the next query reports the failure.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** `?` placeholders as PostgreSQL's `$1, $2, …` (the queries are written with `?`, outside quotes). */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  let quoted = false;
  let out = '';
  for (const ch of sql) {
    if (ch === "'") quoted = !quoted;
    out += ch === '?' && !quoted ? `$${++n}` : ch;
  }
  return out;
}

/** A query runner: the pool, or one client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

const placeheld = new Map<string, string>();
function pgSql(sql: string): string {
  let text = placeheld.get(sql);
  if (text === undefined) {
    text = numberPlaceholders(sql);
    if (placeheld.size < 2000) placeheld.set(sql, text);
  }
  return text;
}

export class PgDb implements SqlDb {
  readonly dialect = POSTGRES_DIALECT;
  /** The client of the snapshot under way, if any: its queries run there. */
  #snapshot: pg.PoolClient | undefined;

  constructor(readonly pool: pg.Pool, private readonly target: PgTarget) {}

  async #query<T>(sql: string, params: readonly SqlValue[]): Promise<pg.QueryResult<T & pg.QueryResultRow>> {
    try {
      return await (this.#snapshot ?? this.pool).query<T & pg.QueryResultRow>(pgSql(sql), params as unknown[]);
    } catch (error) {
      throw pgFault(error, this.target);
    }
  }

  async all<T>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return (await this.#query<T>(sql, params)).rows;
  }

  async get<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return (await this.#query<T>(sql, params)).rows[0];
  }

  async value<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    const row = (await this.#query<Record<string, unknown>>(sql, params)).rows[0];
    return row === undefined ? undefined : (Object.values(row)[0] as T);
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<{ changes: number }> {
    return { changes: (await this.#query(sql, params)).rowCount ?? 0 };
  }

  async snapshot<T>(read: () => Promise<T>): Promise<T> {
    if (this.#snapshot !== undefined) return read();
    const client = await this.pool.connect().catch((error: unknown) => {
      throw pgFault(error, this.target);
    });
    this.#snapshot = client;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const result = await read();
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      this.#snapshot = undefined;
      client.release();
    }
  }
}

/**
 * A database failure as one line naming the ledger (no password) and what went wrong; the server's
 * code (SQLSTATE) is kept for the callers that branch on it.
 */
export function pgFault(error: unknown, target: PgTarget): QuoteBatchError {
  if (error instanceof QuoteBatchError) return error;
  const e = error as { code?: string; message?: string };
  const code = typeof e.code === 'string' ? e.code : undefined;
  const what = target.redact(String(e.message ?? error)).replace(/\s+/g, ' ');
  return new QuoteBatchError('E_LEDGER', `ledger ${target.display}: ${what}${code === undefined ? '' : ` (${code})`}`, {
    hint: connectionHint(code),
    cause: error,
  });
}

function connectionHint(code: string | undefined): string {
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT' || code === '57P01' || code === '57P03') {
    return 'check that the PostgreSQL server is up and reachable from this host, then run the same command again (it resumes)';
  }
  if (code === '28P01' || code === '28000') return 'check the user and password (PGPASSWORD, ~/.pgpass or the URL) the ledger connects with';
  if (code === '3D000') return 'create the database first (createdb), or name one that exists';
  if (code === '42501') return 'grant the ledger\'s user CREATE on the database (for its schema) or name a schema it owns';
  return 'run the same command again once the database is back: the job resumes where it stopped';
}
