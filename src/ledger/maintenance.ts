/**
 * What ops do to a ledger besides running jobs: settle rows in doubt (`resolve`) and drop old
 * jobs (`prune`). Both hold the job's lock while they change it, so neither can race a run.
 */
import { statSync } from 'node:fs';
import type { Ledger } from './ledger.js';
import { now } from './ledger.js';
import { boundText } from './limits.js';
import type { JobStatus, RowState } from './schema.js';

/** What `resolve` records the partner did with rows in doubt. */
export type Resolution = 'succeeded' | 'pending';
export const RESOLUTIONS: readonly Resolution[] = ['succeeded', 'pending'];

export interface ResolveRequest {
  jobId: number;
  /** The rows to settle, or every row of the job in doubt. */
  rows: readonly number[] | 'all-in-doubt';
  to: Resolution;
  note: string | null;
}

export interface ResolveResult {
  /** Rows settled, in order. Empty when some were refused. */
  resolved: number[];
  /** Rows named that are not in doubt (state null: no such row): when any, nothing was changed. */
  refused: { row: number; state: RowState | null }[];
  /** The job's status after the change (`completed` once every row is final). */
  jobStatus: JobStatus;
  /** Rows of the job still not final (`pending`, `in_flight`, `failed`, `in_doubt`). */
  unfinished: number;
}

/**
 * Settles rows `in_doubt` of a job as `succeeded` (the partner has them) or `pending` (it does not:
 * the next run sends them), one `resolutions` row each, in one transaction under the job's lock.
 * Only rows in doubt are changed: if any row named is in another state (or absent), nothing is.
 * The job becomes `completed` when every row of the whole file is then final.
 */
export function resolveInDoubt(ledger: Ledger, request: ResolveRequest): ResolveResult {
  const { db } = ledger;
  const { jobId } = request;
  const stateOf = db.prepare('SELECT state FROM rows WHERE job_id = ? AND row_number = ?').pluck();
  const settle = db.prepare(
    `UPDATE rows SET state = ?, error_code = NULL, error_message = NULL, updated_at = ? WHERE job_id = ? AND row_number = ?`,
  );
  const record = db.prepare(
    `INSERT INTO resolutions (job_id, row_number, from_state, to_state, note, resolved_at) VALUES (?, ?, 'in_doubt', ?, ?, ?)`,
  );
  const tx = db.transaction((): ResolveResult => {
    let rows: number[];
    if (request.rows === 'all-in-doubt') {
      rows = db.prepare(`SELECT row_number FROM rows WHERE job_id = ? AND state = 'in_doubt' ORDER BY row_number`).pluck().all(jobId) as number[];
    } else {
      rows = [...new Set(request.rows)].sort((a, b) => a - b);
      const refused = rows
        .map((row) => ({ row, state: (stateOf.get(jobId, row) as RowState | undefined) ?? null }))
        .filter((r) => r.state !== 'in_doubt');
      if (refused.length > 0) return { resolved: [], refused, ...jobState(ledger, jobId) };
    }
    const at = now();
    const note = boundText(request.note);
    for (const row of rows) {
      settle.run(request.to, at, jobId, row);
      record.run(jobId, row, request.to, note, at);
    }
    // A resumed run starts reading at the job's resume point, which must not lie past a row to send.
    if (request.to === 'pending' && rows.length > 0) {
      db.prepare('UPDATE jobs SET resume_row = NULL, resume_offset = NULL, resume_line = NULL WHERE id = ? AND resume_row > ?').run(jobId, rows[0]);
    }
    const after = jobState(ledger, jobId);
    const status: JobStatus = after.unfinished === 0 && everyRowRecorded(ledger, jobId) ? 'completed' : after.jobStatus === 'completed' ? 'interrupted' : after.jobStatus;
    if (status !== after.jobStatus) ledger.setJobStatus(jobId, status);
    return { resolved: rows, refused: [], jobStatus: status, unfinished: after.unfinished };
  });
  return ledger.withJobLock(jobId, () => tx.immediate());
}

function jobState(ledger: Ledger, jobId: number): { jobStatus: JobStatus; unfinished: number } {
  const counts = ledger.countsByState(jobId);
  const job = ledger.getJob(jobId);
  return {
    jobStatus: job?.status ?? 'interrupted',
    unfinished: counts.pending + counts.in_flight + counts.failed + counts.in_doubt,
  };
}

/** True when a run read the whole file (`total_rows` known) and every row of it is recorded. */
function everyRowRecorded(ledger: Ledger, jobId: number): boolean {
  const row = ledger.db
    .prepare('SELECT total_rows AS total, (SELECT COUNT(*) FROM rows WHERE job_id = jobs.id) AS recorded FROM jobs WHERE id = ?')
    .get(jobId) as { total: number | null; recorded: number } | undefined;
  return row !== undefined && row.total !== null && row.recorded === row.total;
}

export interface PruneOptions {
  /** Drop jobs whose last activity is older than this many ms. */
  olderThanMs: number;
  /** Also drop jobs that never completed (rows left `failed` or `in_doubt` are then lost). */
  includeUnfinished: boolean;
  /** Only say what would be dropped. */
  dryRun: boolean;
  /** The present (for tests). */
  now?: Date;
}

export interface PruneCandidate {
  id: number;
  status: JobStatus;
  input_path: string;
  /** The latest of: created, finished, a run's start, end or heartbeat, a resolution. */
  last_activity: string;
  rows: number;
}

export interface PruneResult {
  /** Jobs before this moment were eligible. */
  cutoff: string;
  /** Jobs dropped (or, with `dryRun`, that would be). */
  dropped: PruneCandidate[];
  /** Eligible jobs left alone because another live process holds them. */
  inUse: PruneCandidate[];
}

/**
 * Drops old jobs with their rows, attempts, runs, run samples and resolutions, in one
 * transaction, holding each job's lock (a job another process holds is left alone); then deletes
 * the dropped jobs' lock files. The `agents` cache is kept (its `job_id` is cleared).
 */
export function pruneJobs(ledger: Ledger, options: PruneOptions): PruneResult {
  const { db } = ledger;
  const cutoff = new Date((options.now ?? new Date()).getTime() - options.olderThanMs).toISOString();
  const candidates = db
    .prepare(
      `SELECT j.id, j.status, j.input_path, j.rows, MAX(j.created_at, COALESCE(j.finished_at, ''),
         COALESCE((SELECT MAX(MAX(started_at, COALESCE(finished_at, ''), COALESCE(heartbeat_at, ''))) FROM runs WHERE job_id = j.id), ''),
         COALESCE((SELECT MAX(resolved_at) FROM resolutions WHERE job_id = j.id), '')) AS last_activity
       FROM (SELECT *, (SELECT COUNT(*) FROM rows WHERE job_id = jobs.id) AS rows FROM jobs) j
       WHERE (j.status = 'completed' OR ?) AND last_activity < ?
       ORDER BY j.id`,
    )
    .all(options.includeUnfinished ? 1 : 0, cutoff) as PruneCandidate[];
  if (options.dryRun) return { cutoff, dropped: candidates, inUse: [] };

  const dropped: PruneCandidate[] = [];
  const inUse: PruneCandidate[] = [];
  for (const job of candidates) (ledger.tryLockJob(job.id) ? dropped : inUse).push(job);
  if (dropped.length === 0) return { cutoff, dropped, inUse };
  const ids = JSON.stringify(dropped.map((job) => job.id));
  const inJobs = 'IN (SELECT value FROM json_each(?))';
  const drop = db.transaction(() => {
    db.prepare(`DELETE FROM run_samples WHERE run_id IN (SELECT id FROM runs WHERE job_id ${inJobs})`).run(ids);
    for (const table of ['resolutions', 'attempts', 'rows', 'runs']) db.prepare(`DELETE FROM ${table} WHERE job_id ${inJobs}`).run(ids);
    db.prepare(`UPDATE agents SET job_id = NULL WHERE job_id ${inJobs}`).run(ids);
    db.prepare(`DELETE FROM jobs WHERE id ${inJobs}`).run(ids);
  });
  try {
    drop.immediate();
  } catch (error) {
    for (const job of dropped) ledger.unlockJob(job.id);
    throw error;
  }
  for (const job of dropped) ledger.removeJobLock(job.id);
  return { cutoff, dropped, inUse };
}

export interface VacuumResult {
  /** Bytes of the ledger file and its WAL before and after. */
  bytesBefore: number;
  bytesAfter: number;
  /** Set when the vacuum was not done: the jobs other processes hold. */
  skippedForJobs: number[];
}

/**
 * Returns the space of deleted rows to the file system (VACUUM, then a WAL checkpoint that
 * truncates the log). VACUUM rewrites the whole file and holds the ledger's write lock meanwhile,
 * so it is done only when no other process works on any job of the ledger, whose locks are held
 * meanwhile so that no run starts halfway.
 */
export function vacuumLedger(ledger: Ledger): VacuumResult {
  const bytesBefore = ledgerBytes(ledger.path);
  const unfinished = ledger.db.prepare(`SELECT id FROM jobs WHERE status != 'completed' ORDER BY id`).pluck().all() as number[];
  const taken: number[] = [];
  const busy: number[] = [];
  try {
    for (const id of unfinished) (ledger.tryLockJob(id) ? taken : busy).push(id);
    if (busy.length > 0) return { bytesBefore, bytesAfter: bytesBefore, skippedForJobs: busy };
    ledger.db.exec('VACUUM');
    ledger.db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    for (const id of taken) ledger.unlockJob(id);
  }
  return { bytesBefore, bytesAfter: ledgerBytes(ledger.path), skippedForJobs: [] };
}

function ledgerBytes(path: string): number {
  let total = 0;
  for (const suffix of ['', '-wal']) {
    try {
      total += statSync(path + suffix).size;
    } catch {
      // no WAL file: nothing to add
    }
  }
  return total;
}
