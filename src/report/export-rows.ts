/**
 * `quote-batch export`: one line per row of a job, the file ops hand back to the lead source.
 * Rows are streamed from SQLite with `.iterate()` and written in chunks, so memory stays flat
 * whatever the job's size.
 */
import type Database from 'better-sqlite3';
import { QuoteBatchError } from '../errors.js';
import { ROW_STATES, type RowState } from '../ledger/index.js';
import { sqlList } from './_buckets.js';
import { formatCsvLine } from './csv.js';
import { rowsInBatches } from './_keyset.js';

/** The columns of an export, in order (CSV header and NDJSON keys). */
export const EXPORT_COLUMNS = [
  'row_number', 'row_key', 'state', 'http_status', 'error_code', 'error_message', 'agent_email', 'agent_id',
  'transaction_id', 'quote_number', 'total_premium', 'attempts', 'updated_at',
] as const;

export type ExportFormat = 'csv' | 'ndjson';

/** One exported row (an NDJSON line). */
export type ExportedRow = {
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

export interface ExportOptions {
  jobId: number;
  /** Only rows in these states; every row when empty or absent. */
  states?: readonly RowState[];
  format: ExportFormat;
}

/** Bytes gathered before each `write` call: few syscalls, bounded memory. */
const CHUNK_CHARS = 64 * 1024;

/**
 * Writes the rows of a job, in row order, through `write` (called with chunks of whole lines; the
 * next chunk waits for the promise it may return: a slow reader holds the export back). CSV starts
 * with a header line and guards text cells against spreadsheet formulas (see `formatCsvCell`);
 * NDJSON writes values as stored. Resolves with the number of rows written.
 */
export async function exportRows(db: Database.Database, options: ExportOptions, write: (chunk: string) => void | Promise<void>): Promise<number> {
  const states = options.states ?? [];
  const where = states.length === 0 ? '' : ` AND state IN (${states.map((_s, i) => `@s${i}`).join(', ')})`;
  const sql = `SELECT ${EXPORT_COLUMNS.join(', ')} FROM rows WHERE job_id = @job AND row_number > @after${where} ORDER BY row_number LIMIT @limit`;
  const params = { job: options.jobId, ...Object.fromEntries(states.map((s, i) => [`s${i}`, s])) };
  let buffer = options.format === 'csv' ? formatCsvLine(EXPORT_COLUMNS) : '';
  let count = 0;
  // In batches: no read transaction stays open while a slow reader holds a chunk back.
  for (const row of rowsInBatches<ExportedRow>(db, sql, params)) {
    buffer += options.format === 'csv' ? formatCsvLine(EXPORT_COLUMNS.map((c) => row[c])) : `${JSON.stringify(row)}\n`;
    count += 1;
    if (buffer.length >= CHUNK_CHARS) {
      await write(buffer);
      buffer = '';
    }
  }
  if (buffer !== '') await write(buffer);
  return count;
}

/** Parses `--status s1,s2`: known row states, no duplicates; a usage error names a bad one. */
export function parseStates(value: string): RowState[] {
  const states: RowState[] = [];
  for (const part of value.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (!(ROW_STATES as readonly string[]).includes(part)) {
      throw new QuoteBatchError('E_USAGE', `--status: unknown row state "${part}"`, {
        hint: `row states are ${ROW_STATES.join(', ')}`,
      });
    }
    if (!states.includes(part as RowState)) states.push(part as RowState);
  }
  if (states.length === 0) {
    throw new QuoteBatchError('E_USAGE', '--status expects one or more row states separated by commas', {
      hint: `row states are ${ROW_STATES.join(', ')}`,
    });
  }
  return states;
}

/** States listed in the HTML report's table of rows to look at: every state but `succeeded`. */
export const PROBLEM_STATES: readonly RowState[] = ROW_STATES.filter((s) => s !== 'succeeded');

/** The rows the HTML report lists: at most `limit`, in row order, with how many there are in all. */
export interface ProblemRows {
  rows: ExportedRow[];
  total: number;
  limit: number;
}

/** The rows of {@link PROBLEM_STATES} the HTML report lists: at most `limit`, in row order (the primary key's: no sort). */
export function readProblemRows(db: Database.Database, jobId: number, limit = 1000): ProblemRows {
  const where = `WHERE job_id = ? AND state IN (${sqlList(PROBLEM_STATES)})`;
  const total = db.prepare(`SELECT COUNT(*) FROM rows ${where}`).pluck().get(jobId) as number;
  const rows = db.prepare(`SELECT ${EXPORT_COLUMNS.join(', ')} FROM rows ${where} ORDER BY row_number LIMIT ?`)
    .all(jobId, limit) as ExportedRow[];
  return { rows, total, limit };
}
