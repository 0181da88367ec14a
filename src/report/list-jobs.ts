/** `quote-batch jobs`: the jobs of a ledger, newest first, with their counts (from `job_summary`). */
import { countUnfinished, readJobSummaries, readRunningRuns, runMayBeAlive, type JobSummary, type SqlDb } from '../ledger/index.js';
import { cleanText, formatInteger, formatTimestamp, padCell, padCellLeft, truncateStart } from './_text.js';

/** One job as `quote-batch jobs --format json` lists it: its `job_summary` row, and whether its process is gone. */
export interface JobListing extends JobSummary {
  /**
   * True when the job is marked `running` but the process of its run is gone (killed or crashed
   * without recording its end). The table shows it `crashed`; the next run records it so.
   */
  process_gone: boolean;
}

export function listJobs(db: SqlDb, nowMs: number = Date.now()): Promise<JobListing[]> {
  return db.snapshot(async () => {
    const jobs = await readJobSummaries(db);
    // A job is gone when it has runs marked running and none of their processes may be alive.
    const alive = new Map<number, boolean>();
    for (const run of await readRunningRuns(db)) {
      alive.set(run.job_id, (alive.get(run.job_id) ?? false) || runMayBeAlive(run, nowMs));
    }
    return jobs.map((j) => ({ ...j, process_gone: j.status === 'running' && alive.get(j.id) === false }));
  });
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
