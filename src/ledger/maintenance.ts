/**
 * What ops do to a ledger besides running jobs: settle rows in doubt (`resolve`) and drop old
 * jobs (`prune`). Both hold the job's lock while they change it, so neither can race a run.
 */
import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import type { Ledger } from './ledger.js';
import { now } from './ledger.js';
import { boundText } from './limits.js';
import { countUnfinished, type JobStatus, type RowState } from './schema.js';
import type { RowChange } from './types.js';

/** What `resolve` records the partner did with rows in doubt. */
export type Resolution = 'succeeded' | 'pending';
export const RESOLUTIONS: readonly Resolution[] = ['succeeded', 'pending'];

export interface ResolveRequest {
  jobId: number;
  /** The rows to settle, or every row of the job in doubt. */
  rows: readonly number[] | 'all-in-doubt';
  /** What each row becomes, as the pipeline's row-state module decides it. */
  changes: ResolveChanges;
  note: string | null;
}

/** The row changes a resolve applies (decided by `src/pipeline/row-state.ts`). */
export interface ResolveChanges {
  /** A row resolved: `succeeded` or `pending`. */
  resolved: RowChange;
  /** A row a stopped run left in flight. */
  stopped: RowChange;
  /** A row of another job recorded duplicate on the word of a row resolved `pending`. */
  reopened: RowChange;
  /** Such a row whose key appeared earlier in its own job, in a row still to be sent. */
  repeatsEarlier: (rowKey: string) => RowChange;
}

export interface ResolveResult {
  /** Rows settled, in order. Empty when some were refused. */
  resolved: number[];
  /** Runs of the job found still `running` under the lock (their process died): now `crashed`. */
  crashedRuns: number;
  /** Rows those runs left `in_flight`: now `in_doubt` (and settled with the others when named). */
  newlyInDoubt: number;
  /** Rows named that are not in doubt (state null: no such row): when any, nothing was changed. */
  refused: { row: number; state: RowState | null }[];
  /** The job's status after the change (`completed` once every row is final). */
  jobStatus: JobStatus;
  /** Rows of the job still not final (`pending`, `in_flight`, `failed`, `in_doubt`). */
  unfinished: number;
  /** Of those, rows in doubt: a run leaves them (unless `--resend-in-doubt`). */
  inDoubt: number;
  /** True when a run read the whole input (`jobs.total_rows` known): false, a run still has rows to read. */
  readToEnd: boolean;
  /**
   * Rows of other jobs recorded `duplicate` on the word of rows resolved `pending` here (the partner
   * never had the lead): `pending` again, so that the next run of those jobs sends the lead if this
   * job's does not first. Per job, rows in order.
   */
  reopened: { jobId: number; rows: number[] }[];
  /** The same, in jobs a live process is running now: left as they were (run `resolve` again after it). */
  notReopened: { jobId: number; rows: number[] }[];
}

/**
 * Settles rows `in_doubt` of a job as `succeeded` (the partner has them) or `pending` (it does not:
 * the next run sends them), one `resolutions` row each, in one transaction under the job's lock.
 * First, as a run's start does, runs a killed process left `running` become `crashed` and their
 * rows `in_flight` become `in_doubt` (holding the lock proves that process is dead); `--all-in-doubt`
 * does not settle those: nobody has checked them yet.
 * Only rows in doubt are changed: if any row named is in another state (or absent), nothing is
 * (the crashed runs are settled all the same). The job becomes `completed` when every row of the
 * whole file is then final.
 */
export function resolveInDoubt(ledger: Ledger, request: ResolveRequest): ResolveResult {
  const { db } = ledger;
  const { jobId } = request;
  const stateOf = db.prepare('SELECT state FROM rows WHERE job_id = ? AND row_number = ?').pluck();
  const settle = db.prepare(
    `UPDATE rows SET state = ?, error_code = ?, error_message = ?, updated_at = ? WHERE job_id = ? AND row_number = ?`,
  );
  const record = db.prepare(
    `INSERT INTO resolutions (job_id, row_number, from_state, to_state, note, resolved_at) VALUES (?, ?, 'in_doubt', ?, ?, ?)`,
  );
  const tx = db.transaction((): ResolveResult => {
    // --all-in-doubt settles the rows in doubt as the operator saw them (`export --status in_doubt`):
    // those a killed run left in flight become in doubt only now, unchecked, and are left so.
    const named = request.rows;
    const all = named === 'all-in-doubt';
    const rows = all
      ? db.prepare(`SELECT row_number FROM rows WHERE job_id = ? AND state = 'in_doubt' ORDER BY row_number`).pluck().all(jobId) as number[]
      : [...new Set(named)].sort((a, b) => a - b);
    const crashed = settleCrashedRuns(ledger, jobId, request.changes.stopped);
    if (!all) {
      // Named rows are checked after settling: a row a killed run left in flight may be named.
      const refused = rows
        .map((row) => ({ row, state: (stateOf.get(jobId, row) as RowState | undefined) ?? null }))
        .filter((r) => r.state !== 'in_doubt');
      if (refused.length > 0) return { resolved: [], refused, ...crashed, ...jobState(ledger, jobId), reopened: [], notReopened: [] };
    }
    const at = now();
    const note = boundText(request.note);
    const { resolved } = request.changes;
    for (const row of rows) {
      settle.run(resolved.state, resolved.errorCode ?? null, resolved.errorMessage ?? null, at, jobId, row);
      record.run(jobId, row, resolved.state, note, at);
    }
    const toSend = resolved.state === 'pending';
    if (toSend && rows.length > 0) forgetResumePointPast(db, jobId, rows[0] as number);
    const dependents = toSend ? reopenDependents(ledger, jobId, rows, request.changes, at) : { reopened: [], notReopened: [] };
    const after = jobState(ledger, jobId);
    const status: JobStatus = after.unfinished === 0 && everyRowRecorded(ledger, jobId) ? 'completed' : after.jobStatus === 'completed' ? 'interrupted' : after.jobStatus;
    if (status !== after.jobStatus) ledger.setJobStatus(jobId, status);
    return { resolved: rows, refused: [], ...crashed, ...after, jobStatus: status, ...dependents };
  });
  return ledger.withJobLock(jobId, () => tx.immediate());
}

/** Most links followed from a row resolved `pending` to the rows recorded duplicate on its word, and on theirs. */
const MAX_REOPEN_HOPS = 64;

/**
 * Rows of other jobs recorded `duplicate` (`sent_by_other_job`) because of rows of `jobId` now
 * resolved `pending` (or because of such duplicates in turn) become `pending` again, in the jobs
 * whose lock this process can take: the lead was never sent, and their job would otherwise call it
 * sent for good. Each is recorded in `resolutions` (from `duplicate`); their job is `interrupted`
 * again and reads its input from the start. Call inside the resolving transaction.
 */
function reopenDependents(ledger: Ledger, jobId: number, rows: readonly number[], changes: ResolveChanges, at: string): Pick<ResolveResult, 'reopened' | 'notReopened'> {
  const { db } = ledger;
  // In row order: of a job's rows that share a key, the first is reopened, the others repeat it.
  const dependentsOf = db.prepare(
    `SELECT job_id, row_number FROM rows WHERE sent_by_job = ? AND sent_by_row = ? AND state = 'duplicate' AND error_code = 'sent_by_other_job'
     ORDER BY job_id, row_number`,
  );
  // A row of the job before it with the same key that counts (as the run's duplicate check counts rows).
  // Its key, when it appeared earlier in the job in a row that counts.
  const earlierWithKey = db.prepare(
    `SELECT r1.row_key FROM rows r1 JOIN rows r2 ON r2.job_id = r1.job_id AND r2.row_key = r1.row_key
      WHERE r1.job_id = ? AND r1.row_number = ? AND r2.row_number < r1.row_number AND r2.state NOT IN ('duplicate', 'invalid')
      ORDER BY r2.row_number LIMIT 1`,
  ).pluck();
  const change = db.prepare(
    `UPDATE rows SET state = ?, error_code = ?, error_message = ?, sent_by_job = NULL, sent_by_row = NULL, updated_at = ?
     WHERE job_id = ? AND row_number = ?`,
  );
  const record = db.prepare(
    `INSERT INTO resolutions (job_id, row_number, from_state, to_state, note, resolved_at) VALUES (?, ?, 'duplicate', ?, ?, ?)`,
  );
  const apply = (to: RowChange, dep: { job_id: number; row_number: number }): void => {
    change.run(to.state, to.errorCode ?? null, to.errorMessage ?? null, at, dep.job_id, dep.row_number);
  };
  const reopened = new Map<number, number[]>();
  const notReopened = new Map<number, number[]>();
  const locked = new Set<number>();
  const busy = new Set<number>();
  let frontier = rows.map((row) => ({ job_id: jobId, row_number: row }));
  try {
    for (let hop = 0; hop < MAX_REOPEN_HOPS && frontier.length > 0; hop += 1) {
      const next: { job_id: number; row_number: number }[] = [];
      for (const from of frontier) {
        for (const dep of dependentsOf.all(from.job_id, from.row_number) as { job_id: number; row_number: number }[]) {
          if (dep.job_id === jobId) continue;
          if (!locked.has(dep.job_id) && !busy.has(dep.job_id)) (ledger.tryLockJob(dep.job_id) ? locked : busy).add(dep.job_id);
          if (busy.has(dep.job_id)) {
            push(notReopened, dep.job_id, dep.row_number);
            continue;
          }
          const earlierKey = earlierWithKey.get(dep.job_id, dep.row_number) as string | undefined;
          if (earlierKey !== undefined) {
            // Its key appeared earlier in its own job, in a row that is (now) to be sent: it stays a
            // duplicate, of that row. Reopened, both would be sent: the lead twice.
            apply(changes.repeatsEarlier(earlierKey), dep);
            continue;
          }
          apply(changes.reopened, dep);
          record.run(dep.job_id, dep.row_number, changes.reopened.state, `reopened: its lead's row ${from.row_number} of job ${from.job_id} was resolved pending (never sent)`, at);
          push(reopened, dep.job_id, dep.row_number);
          next.push(dep);
        }
      }
      frontier = next;
    }
    for (const [job, jobRows] of reopened) {
      if (ledger.getJob(job)?.status === 'completed') ledger.setJobStatus(job, 'interrupted');
      forgetResumePointPast(db, job, Math.min(...jobRows));
    }
  } finally {
    for (const job of locked) ledger.unlockJob(job);
  }
  const listed = (m: Map<number, number[]>): { jobId: number; rows: number[] }[] =>
    [...m].sort(([a], [b]) => a - b).map(([job, r]) => ({ jobId: job, rows: [...new Set(r)].sort((a, b) => a - b) }));
  return { reopened: listed(reopened), notReopened: listed(notReopened) };
}

/** A resumed run starts reading at the job's resume point, which must not lie past a row to send (`row`): then it reads from the start. */
function forgetResumePointPast(db: Database.Database, jobId: number, row: number): void {
  db.prepare('UPDATE jobs SET resume_row = NULL, resume_offset = NULL, resume_line = NULL WHERE id = ? AND resume_row > ?').run(jobId, row);
}

function push(map: Map<number, number[]>, key: number, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/**
 * What `Ledger.startRun` does to earlier runs, for a caller holding the job's lock without starting
 * a run; a job left `running` is `interrupted`. Call inside a write transaction.
 */
function settleCrashedRuns(ledger: Ledger, jobId: number, stopped: RowChange): { crashedRuns: number; newlyInDoubt: number } {
  const { crashedRuns, newlyInDoubt } = ledger.settleCrashedRuns(jobId, stopped);
  if (ledger.getJob(jobId)?.status === 'running') ledger.setJobStatus(jobId, 'interrupted');
  return { crashedRuns, newlyInDoubt };
}

function jobState(ledger: Ledger, jobId: number): { jobStatus: JobStatus; unfinished: number; inDoubt: number; readToEnd: boolean } {
  const counts = ledger.countsByState(jobId);
  const job = ledger.getJob(jobId);
  return {
    jobStatus: job?.status ?? 'interrupted',
    unfinished: countUnfinished(counts),
    inDoubt: counts.in_doubt,
    readToEnd: job?.total_rows !== null && job?.total_rows !== undefined,
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
  /** Rows (or attempts, samples) deleted per transaction; default {@link PRUNE_BATCH_ROWS}. */
  batchRows?: number;
  /**
   * Called after each committed batch, when no transaction of this connection is open: where a
   * caller may report progress, and where another process's writes get their turn.
   */
  onBatch?: (progress: { jobId: number; deleted: number }) => void;
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
  /**
   * Eligible jobs kept because an older unfinished job of the same input, mapping, environment and
   * operation stays: only the newest job of those four is resumed, and without this one a run of
   * the file would resume the older job and send again what this one sent.
   */
  keptForOlder: PruneCandidate[];
}

/**
 * Rows deleted per transaction by `prune`: each transaction holds the ledger's write lock for a
 * few tens of milliseconds, so a run writing meanwhile waits that long, not for the whole prune.
 */
export const PRUNE_BATCH_ROWS = 10_000;

/**
 * Drops old jobs with their rows, attempts, runs, run samples and resolutions, one job at a time:
 * it takes the job's lock (a job another process holds is left alone), deletes the job's records
 * in batches of {@link PRUNE_BATCH_ROWS} (one transaction each), the job itself last, then deletes
 * its lock file and releases it. So at most one lock is held, whatever the number of jobs, and a
 * concurrent run's writes get in between batches. A prune stopped halfway leaves a job partly
 * deleted but still listed and eligible: the next prune finishes it. The `agents` cache is kept
 * (its `job_id` is cleared).
 */
export function pruneJobs(ledger: Ledger, options: PruneOptions): PruneResult {
  const { db } = ledger;
  const cutoff = new Date((options.now ?? new Date()).getTime() - options.olderThanMs).toISOString();
  const eligibleSql = (oneJob: string): string =>
    `SELECT j.id, j.status, j.input_path, j.rows, MAX(j.created_at, COALESCE(j.finished_at, ''),
       COALESCE((SELECT MAX(MAX(started_at, COALESCE(finished_at, ''), COALESCE(heartbeat_at, ''))) FROM runs WHERE job_id = j.id), ''),
       COALESCE((SELECT MAX(resolved_at) FROM resolutions WHERE job_id = j.id), '')) AS last_activity
     FROM (SELECT *, (SELECT COUNT(*) FROM rows WHERE job_id = jobs.id) AS rows FROM jobs ${oneJob}) j
     WHERE (j.status = 'completed' OR @unfinished) AND last_activity < @cutoff
     ORDER BY j.id`;
  const params = { unfinished: options.includeUnfinished ? 1 : 0, cutoff };
  const candidates = db.prepare(eligibleSql('')).all(params) as PruneCandidate[];
  // Read again under the job's lock: a job resumed (or finished) since the list was made has new activity.
  const stillEligible = db.prepare(eligibleSql('WHERE id = @job'));
  const olderUnfinished = db.prepare(
    `SELECT o.id FROM jobs o JOIN jobs j ON j.id = ?
     WHERE o.input_sha256 = j.input_sha256 AND o.mapping_sha256 = j.mapping_sha256 AND o.environment = j.environment
       AND o.operation = j.operation AND o.id < j.id AND o.status != 'completed'`,
  ).pluck();
  const eligible = new Set(candidates.map((job) => job.id));
  const keptForOlder = candidates.filter((job) => (olderUnfinished.all(job.id) as number[]).some((id) => !eligible.has(id)));
  const kept = new Set(keptForOlder.map((job) => job.id));
  const toDrop = candidates.filter((job) => !kept.has(job.id));
  if (options.dryRun) return { cutoff, dropped: toDrop, inUse: [], keptForOlder };

  const drop = jobDropper(db, options.batchRows ?? PRUNE_BATCH_ROWS, options.onBatch);
  const dropped: PruneCandidate[] = [];
  const inUse: PruneCandidate[] = [];
  for (const job of toDrop) {
    if (!ledger.tryLockJob(job.id)) {
      inUse.push(job);
      continue;
    }
    if (stillEligible.get({ ...params, job: job.id }) === undefined) {
      ledger.unlockJob(job.id);
      continue;
    }
    try {
      drop(job.id);
    } catch (error) {
      ledger.unlockJob(job.id);
      throw error;
    }
    ledger.removeJobLock(job.id);
    dropped.push(job);
  }
  return { cutoff, dropped, inUse, keptForOlder };
}

/** Deletes one job's records in batches (see {@link pruneJobs}); the statements are prepared once. */
function jobDropper(db: Database.Database, limit: number, onBatch: PruneOptions['onBatch']): (jobId: number) => void {
  const runsOf = 'SELECT id FROM runs WHERE job_id = @job';
  const batches = [
    `DELETE FROM run_samples WHERE (run_id, elapsed_ms) IN
       (SELECT run_id, elapsed_ms FROM run_samples WHERE run_id IN (${runsOf}) LIMIT @limit)`,
    'DELETE FROM resolutions WHERE id IN (SELECT id FROM resolutions WHERE job_id = @job LIMIT @limit)',
    'DELETE FROM attempts WHERE id IN (SELECT id FROM attempts WHERE job_id = @job LIMIT @limit)',
    'DELETE FROM rows WHERE job_id = @job AND row_number IN (SELECT row_number FROM rows WHERE job_id = @job LIMIT @limit)',
  ].map((sql) => db.prepare(sql));
  const runs = db.prepare('DELETE FROM runs WHERE job_id = ?');
  const agents = db.prepare('UPDATE agents SET job_id = NULL WHERE job_id = ?');
  const job = db.prepare('DELETE FROM jobs WHERE id = ?');
  const last = db.transaction((jobId: number) => {
    runs.run(jobId);
    agents.run(jobId);
    job.run(jobId);
  });
  return (jobId) => {
    let deleted = 0;
    for (const batch of batches) {
      // Each statement is its own transaction (autocommit); fewer than `limit` deleted means done.
      let n: number;
      do {
        n = batch.run({ job: jobId, limit }).changes;
        deleted += n;
        onBatch?.({ jobId, deleted });
      } while (n >= limit);
    }
    last.immediate(jobId);
  };
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
 * so it is done only when no other process works on any job of the ledger. To know that with one
 * lock open at a time (a ledger may hold thousands of unfinished jobs), each unfinished job's lock
 * is tried and released in turn while this connection holds the ledger's write lock, so a run that
 * starts during the probe waits for it (it must write to create its job or run). VACUUM itself
 * cannot run in that transaction: a run starting in the moment between the two waits for VACUUM,
 * and one that outwaits its busy timeout stops with a one-line `E_LEDGER` (ledger busy) error.
 */
export function vacuumLedger(ledger: Ledger): VacuumResult {
  const { db } = ledger;
  const bytesBefore = ledgerBytes(ledger.path);
  const probe = db.transaction((): number[] => {
    const unfinished = db.prepare(`SELECT id FROM jobs WHERE status != 'completed' ORDER BY id`).pluck().all() as number[];
    const busy: number[] = [];
    for (const id of unfinished) {
      if (ledger.tryLockJob(id)) ledger.unlockJob(id);
      else busy.push(id);
    }
    return busy;
  });
  const busy = probe.immediate();
  if (busy.length > 0) return { bytesBefore, bytesAfter: bytesBefore, skippedForJobs: busy };
  db.exec('VACUUM');
  db.pragma('wal_checkpoint(TRUNCATE)');
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
