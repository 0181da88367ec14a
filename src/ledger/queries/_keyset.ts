/**
 * Big reads in batches by key (`row_number > ? … ORDER BY row_number LIMIT ?`): each batch's query
 * is done before the next is read, so no read stays open while the caller waits between batches —
 * for a reader downstream of an export (`export | less`) that stalls for an hour, a run on the same
 * ledger meanwhile could not checkpoint SQLite's WAL, which would keep growing. Memory holds one
 * batch. Yields whole batches: the caller loops over a batch's rows without an await per row.
 */
import type { SqlDb, SqlValue } from '../sql/db.js';

/** Rows per batch: a few hundred kilobytes of row objects at most. */
export const BATCH_ROWS = 2000;

/** Below every key: the smallest 32-bit integer (the keys are `integer` columns in PostgreSQL, which refuses a wider parameter). */
const BEFORE_EVERY_KEY = -2_147_483_648;

/**
 * The rows of `sql`, a SELECT ordered by an integer key that takes the parameters `params(after,
 * limit)` builds (rows whose key is greater than `after`, at most `limit` of them), batch by batch.
 */
export async function* keysetBatches<T>(
  db: SqlDb,
  sql: string,
  params: (after: number, limit: number) => readonly SqlValue[],
  keyOf: (row: T) => number,
): AsyncGenerator<T[]> {
  let after = BEFORE_EVERY_KEY;
  for (;;) {
    const batch = await db.all<T>(sql, params(after, BATCH_ROWS));
    if (batch.length > 0) yield batch;
    const last = batch.at(-1);
    if (last === undefined || batch.length < BATCH_ROWS) return;
    after = keyOf(last);
  }
}
