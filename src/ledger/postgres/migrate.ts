/**
 * Creates and migrates the PostgreSQL ledger's schema. Several workers may start at once on an
 * empty database: a transaction-scoped advisory lock lets one migrate while the others wait, then
 * find it done. A schema newer than this build knows is refused rather than misread.
 */
import type pg from 'pg';
import { QuoteBatchError } from '../../errors.js';
import type { PgTarget } from './target.js';
import { PG_MIGRATIONS, PG_SCHEMA_VERSION } from './schema.js';

export async function migrate(client: pg.PoolClient, target: PgTarget, options: { readonly: boolean }): Promise<void> {
  const schema = target.schema;
  const version = async (): Promise<number | null> => {
    const exists = await client.query<{ found: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'schema_version') AS found`, [schema]);
    if (exists.rows[0]?.found !== true) return null;
    return (await client.query<{ version: number }>(`SELECT version FROM "${schema}".schema_version`)).rows[0]?.version ?? 0;
  };
  const found = await version();
  if (found !== null && found > PG_SCHEMA_VERSION) {
    throw new QuoteBatchError('E_LEDGER', `ledger ${target.display} has schema version ${found}, newer than this quote-batch knows (${PG_SCHEMA_VERSION})`, {
      hint: 'upgrade quote-batch to the version the other workers run',
    });
  }
  if (found === PG_SCHEMA_VERSION) return;
  if (options.readonly) {
    throw new QuoteBatchError('E_LEDGER', `ledger ${target.display} has no quote-batch schema "${schema}" (or an older one)`, {
      hint: 'run `quote-batch run … --ledger <the same connection string>` once to create it, or check ?schema=',
    });
  }
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`quote-batch:migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(`SET LOCAL search_path TO "${schema}"`);
    await client.query('CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)');
    const at = (await client.query<{ version: number }>('SELECT version FROM schema_version')).rows[0]?.version;
    if (at === undefined) await client.query('INSERT INTO schema_version (version) VALUES (0)');
    for (let v = at ?? 0; v < PG_SCHEMA_VERSION; v += 1) {
      await client.query(PG_MIGRATIONS[v] as string);
      await client.query('UPDATE schema_version SET version = $1', [v + 1]);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
