/**
 * The rows `export` writes, in row order: their outcome columns (`--format csv|ndjson`), or their
 * position in the input and outcome (`--format source`). Read in batches: an export of a million
 * rows holds one batch.
 */
import type { SqlDb } from '../sql/db.js';
import type { RowState } from '../schema.js';
import { keysetBatches } from './_keyset.js';

/** The outcome columns of a row, in the order an export writes them (CSV header, NDJSON keys). */
export const OUTCOME_COLUMNS = [
  'row_number', 'row_key', 'state', 'http_status', 'error_code', 'error_message', 'agent_email', 'agent_id',
  'transaction_id', 'quote_number', 'total_premium', 'attempts', 'updated_at',
] as const;

/** A row's outcome: its {@link OUTCOME_COLUMNS}, in that order. */
export type RowOutcomeColumns = {
  row_number: number;
  row_key: string | null;
  state: RowState;
  http_status: number | null;
  error_code: string | null;
  error_message: string | null;
  agent_email: string | null;
  agent_id: string | null;
  transaction_id: string | null;
  quote_number: string | null;
  total_premium: number | null;
  attempts: number;
  updated_at: string;
};

/** ` AND state IN (?, …)` for `states`, nothing for none (every state). */
const inStates = (states: readonly RowState[]): string => (states.length === 0 ? '' : ` AND state IN (${states.map(() => '?').join(', ')})`);

/** The rows of job `jobId` in `states` (every row when empty), in row order, in batches. */
export function outcomeBatches(db: SqlDb, jobId: number, states: readonly RowState[]): AsyncGenerator<RowOutcomeColumns[]> {
  return keysetBatches<RowOutcomeColumns>(
    db,
    `SELECT ${OUTCOME_COLUMNS.join(', ')} FROM rows WHERE job_id = ? AND row_number > ?${inStates(states)} ORDER BY row_number LIMIT ?`,
    (after, limit) => [jobId, after, ...states, limit],
    (row) => row.row_number,
  );
}

/** The first `limit` rows of job `jobId` in `states` (row order: the primary key's, no sort), and how many there are in all. */
export async function readFirstOutcomes(db: SqlDb, jobId: number, states: readonly RowState[], limit: number): Promise<{ rows: RowOutcomeColumns[]; total: number }> {
  const where = `WHERE job_id = ?${inStates(states)}`;
  const total = await db.value<number>(`SELECT COUNT(*) FROM rows ${where}`, [jobId, ...states]) ?? 0;
  const rows = await db.all<RowOutcomeColumns>(`SELECT ${OUTCOME_COLUMNS.join(', ')} FROM rows ${where} ORDER BY row_number LIMIT ?`, [jobId, ...states, limit]);
  return { rows, total };
}

/** Rows of job `jobId` in `states` (every row when empty) whose position in the input was not recorded. */
export async function countRowsWithoutPosition(db: SqlDb, jobId: number, states: readonly RowState[]): Promise<number> {
  return await db.value<number>(`SELECT COUNT(*) FROM rows WHERE job_id = ? AND source_offset IS NULL${inStates(states)}`, [jobId, ...states]) ?? 0;
}

/** A row as `export --format source` copies it: where its record starts in the input, and its outcome. */
export interface SourceRow {
  row_number: number;
  source_offset: number | null;
  source_line: number | null;
  state: RowState;
  error_code: string | null;
  error_message: string | null;
}

/** Every row of job `jobId` in row order, in batches (the row after a selected one tells where its record ends). */
export function sourceRowBatches(db: SqlDb, jobId: number): AsyncGenerator<SourceRow[]> {
  return keysetBatches<SourceRow>(
    db,
    `SELECT row_number, source_offset, source_line, state, error_code, error_message FROM rows
     WHERE job_id = ? AND row_number > ? ORDER BY row_number LIMIT ?`,
    (after, limit) => [jobId, after, limit],
    (row) => row.row_number,
  );
}
