/** `quote-batch jobs`: the jobs of a ledger, newest first, with their counts (from `job_summary`). */
import type Database from 'better-sqlite3';
import { countUnfinished, runMayBeAlive, type JobStatus } from '../ledger/index.js';
import { cleanText, formatInteger, formatTimestamp, padCell, padCellLeft, truncateStart } from './_text.js';

/** One job as `quote-batch jobs --format json` lists it. */
export interface JobListing {
  id: number;
  input_path: string;
  environment: string;
  operation: string;
  status: JobStatus;
  total_rows: number | null;
  rows_recorded: number;
  pending: number;
  in_flight: number;
  succeeded: number;
  rejected: number;
  agent_invalid: number;
  invalid: number;
  duplicate: number;
  failed: number;
  in_doubt: number;
  success_rate: number | null;
  created_at: string;
  finished_at: string | null;
  /**
   * True when the job is marked `running` but the process of its run is gone (killed or crashed
   * without recording its end). The table shows it `crashed`; the next run records it so.
   */
  process_gone: boolean;
}

export function listJobs(db: Database.Database, nowMs: number = Date.now()): JobListing[] {
  return db.transaction(() => {
    const jobs = db.prepare(
      `SELECT job_id AS id, input_path, environment, operation, status, total_rows, rows_recorded, pending, in_flight,
         succeeded, rejected, agent_invalid, invalid, duplicate, failed, in_doubt, success_rate, created_at, finished_at
       FROM job_summary ORDER BY job_id DESC`,
    ).all() as Omit<JobListing, 'process_gone'>[];
    // A job is gone when it has runs marked running and none of their processes may be alive.
    const alive = new Map<number, boolean>();
    for (const run of db.prepare(`SELECT job_id, pid, hostname, heartbeat_at FROM runs WHERE status = 'running'`)
      .all() as { job_id: number; pid: number | null; hostname: string | null; heartbeat_at: string | null }[]) {
      alive.set(run.job_id, (alive.get(run.job_id) ?? false) || runMayBeAlive(run, nowMs));
    }
    return jobs.map((j) => ({ ...j, process_gone: j.status === 'running' && alive.get(j.id) === false }));
  }).deferred();
}

/** The status the table shows: `crashed` for a job marked running whose run's process is gone. */
const shownStatus = (j: JobListing): string => (j.process_gone ? 'crashed' : j.status);

/** True when no run read the job's input to its end: a further run reads more rows than are open. */
const unread = (j: JobListing): boolean => j.total_rows === null && j.status !== 'completed';

/**
 * Two lines per job: the figures (80 columns), then the input file, cut from the left to `width`.
 * `fix` = rejected + agent_invalid + invalid (data to correct); `open` = pending + in_flight +
 * failed + in_doubt (what a further run would still handle), followed by `+` when no run read the
 * input to its end (a `--limit` run, an interrupted one): a further run reads more rows.
 */
export function renderJobsTable(jobs: readonly JobListing[], width = 100): string {
  if (jobs.length === 0) return 'no jobs in this ledger yet\n';
  const lines = [
    `${padCellLeft('id', 4)} ${padCell('status', 11)} ${padCell('env', 10)} ${padCell('op', 5)} ${padCellLeft('rows', 7)} ${padCellLeft('ok', 7)} ${padCellLeft('fix', 5)} ${padCellLeft('open', 7)} started`,
  ];
  for (const j of jobs) {
    const toFix = j.rejected + j.agent_invalid + j.invalid;
    const open = `${formatInteger(countUnfinished(j))}${unread(j) ? '+' : ''}`;
    lines.push(
      `${padCellLeft(String(j.id), 4)} ${padCell(shownStatus(j), 11)} ${padCell(cleanText(j.environment), 10)} ${padCell(cleanText(j.operation), 5)} ${padCellLeft(formatInteger(j.rows_recorded), 7)} ${padCellLeft(formatInteger(j.succeeded), 7)} ${padCellLeft(formatInteger(toFix), 5)} ${padCellLeft(open, 7)} ${formatTimestamp(j.created_at).slice(0, 16)}`,
      `     ${truncateStart(cleanText(j.input_path), Math.max(75, width - 5))}`,
    );
  }
  if (jobs.some(unread)) lines.push('open +: the input is not read to its end yet; the next run reads more rows');
  if (jobs.some((j) => j.process_gone)) {
    lines.push(
      'crashed: the run was killed or crashed before it could record it (its process is gone);',
      '         the next run (or resolve) records it and puts its rows in flight in doubt',
    );
  }
  return `${lines.join('\n')}\n`;
}
