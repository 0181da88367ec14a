/**
 * The figures of a job over time (`src/report/timeline.ts` cuts them into buckets run by run): its
 * runs, when rows were completed within a run's span, its per-second samples, and what the partner
 * answered. Samples are read in batches: a night's run has tens of thousands.
 */
import { sqlList, type SqlDb } from '../sql/db.js';
import { STOPPED_IN_FLIGHT, type RunStatus } from '../schema.js';
import { keysetBatches } from './_keyset.js';
import { DONE_STATES } from './states.js';

/** A run on the job's time axis. */
export interface TimelineRun {
  id: number;
  status: RunStatus;
  started_at: string;
  finished_at: string | null;
  heartbeat_at: string | null;
  /** Its latest sample's time; null without samples. */
  last_sample_at: string | null;
}

/** The job's runs in the order they started. */
export function readTimelineRuns(db: SqlDb, jobId: number): Promise<TimelineRun[]> {
  return db.all(
    `SELECT id, status, started_at, finished_at, heartbeat_at, (SELECT MAX(s.at) FROM run_samples s WHERE s.run_id = runs.id) AS last_sample_at
     FROM runs WHERE job_id = ? ORDER BY started_at, id`,
    [jobId],
  );
}

/**
 * The job's done rows (`DONE_STATES`) last changed in [from, until) (ISO times) by a run: a row
 * `resolve` settled (its last change is a resolution) was completed by no run, however soon after one.
 */
const completedBetween = `job_id = ? AND state IN (${sqlList(DONE_STATES)}) AND updated_at >= ? AND updated_at < ?
    AND NOT EXISTS (SELECT 1 FROM resolutions z WHERE z.job_id = rows.job_id AND z.row_number = rows.row_number AND z.resolved_at = rows.updated_at)`;

/** When the last row a run completed in [fromIso, untilIso) was completed; null when none was. */
export async function readLastCompletion(db: SqlDb, jobId: number, fromIso: string, untilIso: string): Promise<string | null> {
  return await db.value<string | null>(`SELECT MAX(updated_at) FROM rows WHERE ${completedBetween}`, [jobId, fromIso, untilIso]) ?? null;
}

/**
 * The rows runs completed in [fromIso, untilIso), counted in buckets of `widthMs` (a whole number)
 * from `startMs`: bucket i covers [start + i·w, start + (i + 1)·w). Buckets without rows left out.
 */
export function countRunCompletionsByBucket(
  db: SqlDb, jobId: number, span: { fromIso: string; untilIso: string; startMs: number; widthMs: number },
): Promise<{ bucket: number; n: number }[]> {
  return db.all(
    `SELECT CAST((${db.dialect.epochMs('updated_at')} - ?) / ? AS INTEGER) AS bucket, COUNT(*) AS n FROM rows WHERE ${completedBetween} GROUP BY bucket`,
    [span.startMs, span.widthMs, jobId, span.fromIso, span.untilIso],
  );
}

/** The job's done rows (`DONE_STATES`), whenever they were completed. */
export async function countDoneRows(db: SqlDb, jobId: number): Promise<number> {
  return await db.value<number>(`SELECT COUNT(*) FROM rows WHERE job_id = ? AND state IN (${sqlList(DONE_STATES)})`, [jobId]) ?? 0;
}

/** One second of a run (`run_samples`, docs/ledger.md). */
export interface RunSampleFigures {
  at: string;
  elapsed_ms: number;
  concurrency_limit: number | null;
  in_flight: number;
  attempts: number;
  throttled: number;
  errors: number;
  rows_done: number;
  pace_rate: number | null;
}

/** The samples of run `runId` in time order, in batches. */
export function runSampleBatches(db: SqlDb, runId: number): AsyncGenerator<RunSampleFigures[]> {
  return keysetBatches<RunSampleFigures>(
    db,
    `SELECT at, elapsed_ms, concurrency_limit, in_flight, attempts, throttled, errors, rows_done, pace_rate FROM run_samples
     WHERE run_id = ? AND elapsed_ms > ? ORDER BY elapsed_ms LIMIT ?`,
    (after, limit) => [runId, after, limit],
    (sample) => sample.elapsed_ms,
  );
}

/** The job's samples: how many, and the highest limit and requests in flight of any. */
export async function readSampleExtremes(db: SqlDb, jobId: number): Promise<{ n: number; max_limit: number | null; max_in_flight: number | null }> {
  // Samples older than schema 5 know only their end's count.
  return await db.get<{ n: number; max_limit: number | null; max_in_flight: number | null }>(
    `SELECT COUNT(*) AS n, MAX(concurrency_limit) AS max_limit, MAX(COALESCE(in_flight_max, in_flight)) AS max_in_flight
     FROM run_samples WHERE run_id IN (SELECT id FROM runs WHERE job_id = ?)`,
    [jobId],
  ) ?? { n: 0, max_limit: null, max_in_flight: null };
}

/** The job's answers (attempts of every kind, not those a stopped process left in flight: none came), and of them the 429s. */
export async function countAnswers(db: SqlDb, jobId: number): Promise<{ attempts: number; throttled: number }> {
  return await db.get<{ attempts: number; throttled: number }>(
    `SELECT COUNT(*) AS attempts, COALESCE(SUM(CASE WHEN http_status = 429 THEN 1 ELSE 0 END), 0) AS throttled
     FROM attempts WHERE job_id = ? AND error_code IS DISTINCT FROM '${STOPPED_IN_FLIGHT}'`,
    [jobId],
  ) ?? { attempts: 0, throttled: 0 };
}
