/** The rows of a job in an error state, streamed in row order, for grouping by kind (`src/error-groups.ts`). */
import { sqlList, type SqlDb } from '../sql/db.js';
import type { RowState } from '../schema.js';
import { keysetBatches } from './_keyset.js';
import { ERROR_STATES } from './states.js';

/** A row in an error state ({@link ERROR_STATES}) as grouping reads it. */
export interface ErrorRow {
  row_number: number;
  state: RowState;
  error_code: string | null;
  error_message: string | null;
}

/** The rows of job `jobId` in an error state, in row order (the primary key's: no sort), in batches. */
export function errorRowBatches(db: SqlDb, jobId: number): AsyncGenerator<ErrorRow[]> {
  return keysetBatches<ErrorRow>(
    db,
    `SELECT row_number, state, error_code, error_message FROM rows
     WHERE job_id = ? AND row_number > ? AND state IN (${sqlList(ERROR_STATES)}) ORDER BY row_number LIMIT ?`,
    (after, limit) => [jobId, after, limit],
    (row) => row.row_number,
  );
}
