/**
 * `quote-batch export`: one line per row of a job, the file ops hand back to the lead source.
 * Rows come from the ledger in batches (`outcomeBatches`) and are written in chunks, so memory
 * stays flat whatever the job's size.
 */
import { QuoteBatchError } from '../errors.js';
import { outcomeBatches, OUTCOME_COLUMNS, readFirstOutcomes, ROW_STATES, type RowOutcomeColumns, type RowState, type SqlDb } from '../ledger/index.js';
import { formatCsvLine } from './csv.js';

/** The columns of an export, in order (CSV header and NDJSON keys). */
export const EXPORT_COLUMNS = OUTCOME_COLUMNS;

export type ExportFormat = 'csv' | 'ndjson';

/** One exported row (an NDJSON line). */
export type ExportedRow = RowOutcomeColumns;

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
export async function exportRows(db: SqlDb, options: ExportOptions, write: (chunk: string) => void | Promise<void>): Promise<number> {
  let buffer = options.format === 'csv' ? formatCsvLine(EXPORT_COLUMNS) : '';
  let count = 0;
  // In batches: no read stays open while a slow reader holds a chunk back.
  for await (const batch of outcomeBatches(db, options.jobId, options.states ?? [])) {
    for (const row of batch) {
      buffer += options.format === 'csv' ? formatCsvLine(EXPORT_COLUMNS.map((c) => row[c])) : `${JSON.stringify(row)}\n`;
      count += 1;
      if (buffer.length >= CHUNK_CHARS) {
        await write(buffer);
        buffer = '';
      }
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

/** The rows of {@link PROBLEM_STATES} the HTML report lists: at most `limit`, in row order. */
export async function readProblemRows(db: SqlDb, jobId: number, limit = 1000): Promise<ProblemRows> {
  const { rows, total } = await readFirstOutcomes(db, jobId, PROBLEM_STATES, limit);
  return { rows, total, limit };
}
