/**
 * A job's rows in row order, read in batches by key (`row_number > @after … LIMIT`): each batch's
 * statement is done before the next is read, so no read transaction stays open while the caller
 * waits between rows — for a reader downstream of an export (`export | less`) that stalls for an
 * hour, a run on the same ledger meanwhile could not checkpoint its WAL, which would keep growing.
 */
import type Database from 'better-sqlite3';

/** Rows per batch: a few hundred kilobytes of row objects at most. */
const BATCH_ROWS = 2000;

/**
 * Yields the rows of `sql`, a SELECT of a table with `row_number` ordered by it that takes the
 * named parameters `@after` (rows with a greater `row_number`) and `@limit`, plus `params`.
 */
export function* rowsInBatches<T extends { row_number: number }>(db: Database.Database, sql: string, params: Record<string, unknown>): Generator<T> {
  const stmt = db.prepare(sql);
  let after = Number.MIN_SAFE_INTEGER;
  for (;;) {
    const batch = stmt.all({ ...params, after, limit: BATCH_ROWS }) as T[];
    yield* batch;
    const last = batch.at(-1);
    if (last === undefined || batch.length < BATCH_ROWS) return;
    after = last.row_number;
  }
}
