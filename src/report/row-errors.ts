/**
 * Row errors grouped by kind (see `src/error-groups.ts`), read from the ledger for the run
 * summary and every `report` format, so that they and `check` show the same groups.
 */
import type Database from 'better-sqlite3';
import { describeErrorKind, ErrorGroups, type ErrorGroup } from '../error-groups.js';
import type { RowState } from '../ledger/index.js';
import { sqlList } from './_buckets.js';
import { ERROR_STATES, type ReportRowError } from './types.js';

export interface RowErrorGroups {
  /** The largest groups first (at most `limit`). */
  groups: ReportRowError[];
  /** How many kinds there were in all. */
  kinds: number;
}

/**
 * Groups the rows of job `jobId` in an error state ({@link ERROR_STATES}) by kind. The rows are
 * streamed in row order (the primary key's order: no sort), so memory grows with kinds, not rows,
 * and each group's samples are its first rows.
 */
export function readErrorGroups(db: Database.Database, jobId: number, options: { limit?: number; samples?: number } = {}): RowErrorGroups {
  const groups = new ErrorGroups({ samples: options.samples ?? 3 });
  const firstMessage = new Map<ErrorGroup, string | null>();
  const stmt = db.prepare(
    `SELECT row_number, state, error_code, error_message FROM rows
     WHERE job_id = ? AND state IN (${sqlList(ERROR_STATES)}) ORDER BY row_number`,
  ).raw();
  for (const [row, state, errorCode, message] of stmt.iterate(jobId) as Iterable<[number, RowState, string | null, string | null]>) {
    const group = groups.add({ state, errorCode, message }, row);
    if (!firstMessage.has(group)) firstMessage.set(group, message);
  }
  return {
    kinds: groups.size,
    groups: groups.top(options.limit).map((g) => ({
      state: g.state as RowState,
      error_code: g.code,
      kind: describeErrorKind(g),
      subject: g.subject,
      columns: g.columns,
      states: g.states,
      rows: g.count,
      sample_rows: g.rows,
      error_message: firstMessage.get(g) ?? null,
    })),
  };
}
