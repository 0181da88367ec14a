/**
 * The figures `report` computes a job's report from (`src/report/build-report.ts` does the
 * statistics and rounding): counts, sorted values and rows, each one query on the ledger. Written
 * in the SQL both backends accept; what differs is asked of the {@link Dialect}.
 */
import { sqlList, type SqlDb } from '../sql/db.js';
import { STOPPED_IN_FLIGHT, type JobStatus, type RowState, type RunStatus } from '../schema.js';
import { DONE_STATES } from './states.js';

/** A job as the report shows it (`jobs` columns). */
export interface JobFigures {
  id: number;
  input_path: string;
  input_format: string;
  mapping_path: string;
  environment: string;
  operation: string;
  base_url: string | null;
  status: JobStatus;
  total_rows: number | null;
  created_at: string;
  finished_at: string | null;
}

export function readJobFigures(db: SqlDb, jobId: number): Promise<JobFigures | undefined> {
  return db.get<JobFigures>(
    `SELECT id, input_path, input_format, mapping_path, environment, operation, base_url, status, total_rows,
       created_at, finished_at FROM jobs WHERE id = ?`,
    [jobId],
  );
}

/** The job's rows per state (states without rows left out). */
export function countRowsByState(db: SqlDb, jobId: number): Promise<{ state: RowState; n: number }[]> {
  return db.all('SELECT state, COUNT(*) AS n FROM rows WHERE job_id = ? GROUP BY state', [jobId]);
}

/** A job's rows another job had dealt with, so that this one did not send them (README, "Outcomes"). */
export interface RowsByOtherJobs {
  /** `duplicate` rows whose lead another job had sent (`sent_by_other_job`). */
  sent: number;
  /** `rejected` rows whose very request another job had had rejected (a copied answer: no attempt). */
  rejected: number;
  /** Of `sent`, rows whose lead the other job only may have sent (`in_doubt` or `in_flight` there). */
  in_doubt_there: number;
  /** The jobs those rows are in doubt in, ascending. */
  in_doubt_jobs: number[];
}

/** {@link RowsByOtherJobs} of job `jobId`: for `report` and the run's summary alike. */
export async function readRowsByOtherJobs(db: SqlDb, jobId: number): Promise<RowsByOtherJobs> {
  const counts = await db.get<Omit<RowsByOtherJobs, 'in_doubt_jobs'>>(
    `SELECT COALESCE(SUM(CASE WHEN r.state = 'duplicate' AND r.error_code = 'sent_by_other_job' THEN 1 ELSE 0 END), 0) AS sent,
       COALESCE(SUM(CASE WHEN r.state = 'rejected' AND r.attempts = 0 THEN 1 ELSE 0 END), 0) AS rejected,
       COALESCE(SUM(CASE WHEN o.state IN ('in_doubt', 'in_flight') THEN 1 ELSE 0 END), 0) AS in_doubt_there
     FROM rows r LEFT JOIN rows o ON r.error_code = 'sent_by_other_job' AND o.job_id = r.sent_by_job AND o.row_number = r.sent_by_row
     WHERE r.job_id = ? AND r.state IN ('duplicate', 'rejected')`,
    [jobId],
  ) ?? { sent: 0, rejected: 0, in_doubt_there: 0 };
  const jobs = counts.in_doubt_there === 0 ? [] : (await db.all<{ job_id: number }>(
    `SELECT DISTINCT o.job_id FROM rows r JOIN rows o ON o.job_id = r.sent_by_job AND o.row_number = r.sent_by_row
     WHERE r.job_id = ? AND r.state = 'duplicate' AND r.error_code = 'sent_by_other_job' AND o.state IN ('in_doubt', 'in_flight')
     ORDER BY o.job_id`,
    [jobId],
  )).map((r) => r.job_id);
  return { ...counts, in_doubt_jobs: jobs };
}

/**
 * Of the job's `succeeded` rows, those whose 2xx answer could not be read (an `unreadable_answer`
 * warning in `input_issues_json`). A LIKE on the JSON text, exact for what the ledger writes (a
 * compact JSON array of objects; a `"` inside a string value is written `\"`), in both backends.
 */
export async function countUnreadableAnswers(db: SqlDb, jobId: number): Promise<number> {
  return await db.value<number>(
    `SELECT COUNT(*) FROM rows WHERE job_id = ? AND state = 'succeeded' AND input_issues_json IS NOT NULL
       AND input_issues_json LIKE '%"type":"unreadable!_answer"%' ESCAPE '!'`,
    [jobId],
  ) ?? 0;
}

/**
 * Attempts per kind, and the subjects they were made for: rows for quotes and leads (they carry no
 * agent e-mail), agent e-mails for validations (one validation may serve many rows).
 */
export function countAttemptsByKind(db: SqlDb, jobId: number): Promise<{ kind: string; n: number; subjects: number }[]> {
  return db.all(
    `SELECT kind, COUNT(*) AS n, COUNT(DISTINCT COALESCE(agent_email, CAST(row_number AS TEXT))) AS subjects
     FROM attempts WHERE job_id = ? GROUP BY kind`,
    [jobId],
  );
}

/** Attempts per kind and outcome. */
export function countAttemptsByOutcome(db: SqlDb, jobId: number): Promise<{ kind: string; outcome: string; n: number }[]> {
  return db.all('SELECT kind, outcome, COUNT(*) AS n FROM attempts WHERE job_id = ? GROUP BY kind, outcome', [jobId]);
}

/** Rows with more than one quote or lead attempt. */
export async function countRowsRetried(db: SqlDb, jobId: number): Promise<number> {
  return await db.value<number>(
    `SELECT COUNT(*) FROM (SELECT row_number FROM attempts WHERE job_id = ? AND kind IN ('quote', 'lead')
     GROUP BY row_number HAVING COUNT(*) > 1) AS retried`,
    [jobId],
  ) ?? 0;
}

/** Failed attempts (outcome not `ok`) sharing a kind, HTTP status, error code and outcome. */
export interface AttemptErrorGroup {
  kind: string;
  http_status: number | null;
  error_code: string | null;
  outcome: string;
  attempts: number;
}

/** The `limit` largest groups of failed attempts, and how many groups there are in all. */
export async function readAttemptErrors(db: SqlDb, jobId: number, limit: number): Promise<{ groups: AttemptErrorGroup[]; count: number }> {
  const where = `WHERE job_id = ? AND outcome <> 'ok'`;
  const count = await db.value<number>(
    `SELECT COUNT(*) FROM (SELECT 1 AS one FROM attempts ${where} GROUP BY kind, http_status, error_code, outcome) AS kinds`,
    [jobId],
  ) ?? 0;
  const { byteOrder } = db.dialect;
  const groups = await db.all<AttemptErrorGroup>(
    `SELECT kind, http_status, error_code, outcome, COUNT(*) AS attempts FROM attempts ${where}
     GROUP BY kind, http_status, error_code, outcome
     ORDER BY attempts DESC, ${byteOrder('kind')}, http_status NULLS FIRST, ${byteOrder('error_code')} NULLS FIRST, ${byteOrder('outcome')} LIMIT ?`,
    [jobId, limit],
  );
  return { groups, count };
}

/** An agent that blocked rows of a job (`agent_invalid`), with the partner's message when known. */
export interface InvalidAgentFigures {
  email: string | null;
  message: string | null;
  blocked_rows: number;
}

/** The agents that blocked rows of job `jobId` (of `environment`), most rows first. */
export function readInvalidAgents(db: SqlDb, jobId: number, environment: string): Promise<InvalidAgentFigures[]> {
  // One `agents` row per e-mail of an environment (its key): MAX picks that row's message.
  return db.all(
    `SELECT r.agent_email AS email, MAX(a.message) AS message, COUNT(*) AS blocked_rows
     FROM rows r LEFT JOIN agents a ON a.environment = ? AND a.email = r.agent_email
     WHERE r.job_id = ? AND r.state = 'agent_invalid'
     GROUP BY r.agent_email ORDER BY blocked_rows DESC, ${db.dialect.byteOrder('r.agent_email')} NULLS FIRST`,
    [environment, jobId],
  );
}

/** `total_premium` of the job's succeeded rows, ascending. */
export async function readPremiums(db: SqlDb, jobId: number): Promise<number[]> {
  return (await db.all<{ v: number }>(
    `SELECT total_premium AS v FROM rows WHERE job_id = ? AND state = 'succeeded' AND total_premium IS NOT NULL
     ORDER BY total_premium`,
    [jobId],
  )).map((r) => r.v);
}

/**
 * `duration_ms` of the job's attempts of `kind`, ascending. Not the requests a stopped process left
 * in flight: no answer came, the time is only a bound.
 */
export async function readLatencies(db: SqlDb, jobId: number, kind: string): Promise<number[]> {
  return (await db.all<{ v: number }>(
    `SELECT duration_ms AS v FROM attempts WHERE job_id = ? AND kind = ? AND error_code IS DISTINCT FROM '${STOPPED_IN_FLIGHT}' ORDER BY duration_ms`,
    [jobId, kind],
  )).map((r) => r.v);
}

/**
 * The job's wall-clock seconds (`job_summary.duration_seconds`), and the seconds its runs worked:
 * each run's `finished_at` (else its last heartbeat) minus its `started_at`, summed.
 */
export async function readJobSeconds(db: SqlDb, jobId: number): Promise<{ elapsed: number | null; runs: number }> {
  const elapsed = await db.value<number | null>('SELECT duration_seconds FROM job_summary WHERE job_id = ?', [jobId]) ?? null;
  const spans = await db.all<{ start_ms: number; end_ms: number }>(
    `SELECT ${db.dialect.epochMs('started_at')} AS start_ms, ${db.dialect.epochMs('COALESCE(finished_at, heartbeat_at, started_at)')} AS end_ms
     FROM runs WHERE job_id = ?`,
    [jobId],
  );
  return { elapsed, runs: unionSeconds(spans.map((s) => [Number(s.start_ms), Number(s.end_ms)])) };
}

/** Seconds covered by the spans (epoch ms) together: the workers of a job run at once, and count once. */
export function unionSeconds(spans: readonly (readonly [number, number])[]): number {
  const sorted = [...spans].filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const [start, stop] of sorted) {
    if (stop <= end) continue;
    total += stop - Math.max(start, end);
    end = stop;
  }
  return total / 1000;
}

/** When the job's first and last done rows (`DONE_STATES`) were last changed, epoch ms; null without one. */
export async function readCompletionSpan(db: SqlDb, jobId: number): Promise<{ first_ms: number | null; last_ms: number | null }> {
  const ms = db.dialect.epochMs('updated_at');
  return await db.get<{ first_ms: number | null; last_ms: number | null }>(
    `SELECT MIN(${ms}) AS first_ms, MAX(${ms}) AS last_ms FROM rows WHERE job_id = ? AND state IN (${sqlList(DONE_STATES)})`,
    [jobId],
  ) ?? { first_ms: null, last_ms: null };
}

/**
 * The job's done rows counted in buckets of `widthMs` (a whole number) from `startMs` by when they
 * were last changed: bucket i covers [start + i·w, start + (i + 1)·w). Buckets without rows left out.
 */
export function countCompletionsByBucket(db: SqlDb, jobId: number, startMs: number, widthMs: number): Promise<{ bucket: number; n: number }[]> {
  // Whole numbers on both sides: the division truncates (a floor: no row is before the start) in both backends.
  return db.all(
    `SELECT CAST((${db.dialect.epochMs('updated_at')} - ?) / ? AS INTEGER) AS bucket, COUNT(*) AS n FROM rows
     WHERE job_id = ? AND state IN (${sqlList(DONE_STATES)}) GROUP BY bucket`,
    [startMs, widthMs, jobId],
  );
}

/** A run of a job as the report lists it, with what tells whether its process may still be alive. */
export interface RunFigures {
  id: number;
  started_at: string;
  finished_at: string | null;
  status: RunStatus;
  end_reason: string | null;
  tool_version: string;
  pid: number | null;
  hostname: string | null;
  heartbeat_at: string | null;
  /** Its last sign of life: its latest sample (about one a second) or heartbeat (one every 10 s). */
  last_sign: string | null;
  /** `finished_at`, else `last_sign`, minus `started_at`. */
  seconds: number | null;
  /** `options_json`'s `limit` (`--limit`) when it is a number. */
  limit: number | null;
}

/** The job's runs in id order. */
export function readRunFigures(db: SqlDb, jobId: number): Promise<RunFigures[]> {
  const { greatest, jsonNumber, secondsBetween } = db.dialect;
  return db.all(
    `SELECT id, started_at, finished_at, status, end_reason, tool_version, pid, hostname, heartbeat_at, last_sign,
       ${secondsBetween('started_at', 'COALESCE(finished_at, last_sign)')} AS seconds,
       ${jsonNumber('options_json', 'limit')} AS "limit"
     FROM (SELECT runs.*, NULLIF(${greatest("COALESCE(heartbeat_at, '')", "COALESCE((SELECT MAX(s.at) FROM run_samples s WHERE s.run_id = runs.id), '')")}, '') AS last_sign
           FROM runs WHERE job_id = ?) AS job_runs
     ORDER BY id`,
    [jobId],
  );
}
