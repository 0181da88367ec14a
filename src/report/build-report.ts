/**
 * Computes a job's {@link Report} from the ledger. Pure reads over a better-sqlite3 Database, so
 * it works on a ledger another process is writing (WAL) and on any copy an analyst hands over.
 */
import type Database from 'better-sqlite3';
import { QuoteBatchError } from '../errors.js';
import { ROW_STATES, runMayBeAlive, STOPPED_IN_FLIGHT, type RowState } from '../ledger/index.js';
import { bucketSecondsFor, epochMsSql, percentileOf, round, sqlList } from './_buckets.js';
import { niceStep, tidy } from './_nice.js';
import { readErrorGroups } from './row-errors.js';
import { readPartner, readTimeline } from './timeline.js';
import {
  ATTEMPT_KINDS, ATTEMPT_OUTCOMES, DONE_STATES, REPORT_VERSION, ROW_ERROR_LIMIT,
  type HistogramBin, type Report, type ReportAttemptError, type ReportAttempts, type ReportAttemptKind,
  type ReportCompletions, type ReportInvalidAgent, type ReportJob, type ReportKindAttempts, type ReportRowError,
  type ReportRun, type ReportTiming, type Stats, type StatsWithHistogram,
} from './types.js';

type Db = Database.Database;

const HISTOGRAM_BINS = 20;

/**
 * The job a report or export is about: `jobId` when given (it must exist), else the latest job.
 * Throws a usage error naming the ledger when there is no such job.
 */
export function resolveJobId(db: Db, jobId: number | undefined, ledgerPath: string): number {
  if (jobId !== undefined) {
    const found = db.prepare('SELECT id FROM jobs WHERE id = ?').pluck().get(jobId) as number | undefined;
    if (found === undefined) {
      throw new QuoteBatchError('E_USAGE', `job ${jobId} is not in ledger ${ledgerPath}`, {
        hint: 'list the jobs with `quote-batch jobs --ledger <file>`',
      });
    }
    return found;
  }
  const latest = db.prepare('SELECT MAX(id) FROM jobs').pluck().get() as number | null;
  if (latest === null) {
    throw new QuoteBatchError('E_USAGE', `ledger ${ledgerPath} has no jobs yet`, {
      hint: 'run `quote-batch run <input> --mapping <file>` first',
    });
  }
  return latest;
}

/** Builds the full report of job `jobId` (which must exist; see {@link resolveJobId}). */
export function buildReport(db: Db, jobId: number, options: { now?: () => Date } = {}): Report {
  const read = db.transaction(() => {
    // One read transaction: every figure comes from the same snapshot while a run writes.
    const generatedAt = options.now?.() ?? new Date();
    const runs = readRuns(db, jobId, generatedAt.getTime());
    const job = readJob(db, jobId, runs);
    const rows = readRows(db, jobId);
    return {
      report_version: REPORT_VERSION,
      generated_at: generatedAt.toISOString(),
      job,
      rows,
      attempts: readAttempts(db, jobId),
      ...rowErrors(db, jobId),
      ...readAttemptErrors(db, jobId),
      invalid_agents: readInvalidAgents(db, jobId, job.environment),
      premium: withHistogram(
        db.prepare(
          `SELECT total_premium FROM rows WHERE job_id = ? AND state = 'succeeded' AND total_premium IS NOT NULL
           ORDER BY total_premium`,
        ).pluck().all(jobId) as number[],
      ),
      latency_ms: Object.fromEntries(
        ATTEMPT_KINDS.map((kind) => [
          kind,
          withHistogram(
            // Not the requests a stopped process left in flight: no answer came, the time is only a bound.
            db.prepare(`SELECT duration_ms FROM attempts WHERE job_id = ? AND kind = ? AND error_code IS NOT '${STOPPED_IN_FLIGHT}' ORDER BY duration_ms`)
              .pluck().all(jobId, kind) as number[],
          ),
        ]),
      ) as Record<ReportAttemptKind, StatsWithHistogram>,
      timing: readTiming(db, jobId, rows.by_state),
      completions: readCompletions(db, jobId),
      runs,
      timeline: readTimeline(db, jobId),
      partner: readPartner(db, jobId),
    } satisfies Report;
  });
  return read.deferred();
}

function readJob(db: Db, jobId: number, runs: readonly ReportRun[]): ReportJob {
  const stored = db.prepare(
    `SELECT id, input_path, input_format, mapping_path, environment, operation, base_url, status, total_rows,
       created_at, finished_at FROM jobs WHERE id = ?`,
  ).get(jobId) as Omit<ReportJob, 'process_gone'> | undefined;
  if (stored === undefined) throw new QuoteBatchError('E_USAGE', `job ${jobId} is not in the ledger`);
  const running = runs.filter((r) => r.status === 'running');
  return { ...stored, process_gone: stored.status === 'running' && running.length > 0 && running.every((r) => r.process_gone) };
}

function readRows(db: Db, jobId: number): Report['rows'] {
  const byState = Object.fromEntries(ROW_STATES.map((s) => [s, 0])) as Record<RowState, number>;
  for (const { state, n } of db.prepare('SELECT state, COUNT(*) AS n FROM rows WHERE job_id = ? GROUP BY state')
    .all(jobId) as { state: RowState; n: number }[]) {
    byState[state] = n;
  }
  const total = ROW_STATES.reduce((sum, s) => sum + byState[s], 0);
  const sent = byState.succeeded + byState.rejected + byState.failed + byState.in_doubt;
  return {
    total,
    by_state: byState,
    success_rate: total === 0 ? null : round(byState.succeeded / total, 4),
    sent_success_rate: sent === 0 ? null : round(byState.succeeded / sent, 4),
    by_other_jobs: readRowsByOtherJobs(db, jobId),
    unreadable_answers: readUnreadableAnswers(db, jobId),
  };
}

/** `rows.unreadable_answers` of the report ({@link Report}): for `report` and the run's summary alike. */
export function readUnreadableAnswers(db: Db, jobId: number): number {
  return db.prepare(
    `SELECT COUNT(*) FROM rows r WHERE r.job_id = ? AND r.state = 'succeeded' AND r.input_issues_json IS NOT NULL
       AND EXISTS (SELECT 1 FROM json_each(r.input_issues_json) AS i WHERE json_extract(i.value, '$.type') = 'unreadable_answer')`,
  ).pluck().get(jobId) as number;
}

/**
 * Rows of the job another job had dealt with, so that this one did not send them: `duplicate` rows
 * whose lead it had sent (`sent_by_other_job`), `rejected` rows whose very request it had had
 * rejected (a copied answer: no attempt). For `report` and the run's summary alike.
 */
export function readRowsByOtherJobs(db: Db, jobId: number): Report['rows']['by_other_jobs'] {
  const counts = db.prepare(
    `SELECT TOTAL(r.state = 'duplicate' AND r.error_code = 'sent_by_other_job') AS sent, TOTAL(r.state = 'rejected' AND r.attempts = 0) AS rejected,
       TOTAL(o.state IN ('in_doubt', 'in_flight')) AS in_doubt_there
     FROM rows r LEFT JOIN rows o ON r.error_code = 'sent_by_other_job' AND o.job_id = r.sent_by_job AND o.row_number = r.sent_by_row
     WHERE r.job_id = ? AND r.state IN ('duplicate', 'rejected')`,
  ).get(jobId) as Omit<Report['rows']['by_other_jobs'], 'in_doubt_jobs'>;
  const jobs = counts.in_doubt_there === 0 ? [] : db.prepare(
    `SELECT DISTINCT o.job_id FROM rows r JOIN rows o ON o.job_id = r.sent_by_job AND o.row_number = r.sent_by_row
     WHERE r.job_id = ? AND r.state = 'duplicate' AND r.error_code = 'sent_by_other_job' AND o.state IN ('in_doubt', 'in_flight')
     ORDER BY o.job_id`,
  ).pluck().all(jobId) as number[];
  return { ...counts, in_doubt_jobs: jobs };
}

function readAttempts(db: Db, jobId: number): ReportAttempts {
  const byKind = Object.fromEntries(
    ATTEMPT_KINDS.map((kind): [ReportAttemptKind, ReportKindAttempts] => [
      kind,
      { attempts: 0, subjects: 0, retries: 0, by_outcome: Object.fromEntries(ATTEMPT_OUTCOMES.map((o) => [o, 0])) },
    ]),
  ) as Record<ReportAttemptKind, ReportKindAttempts>;
  // Quote/lead attempts carry no agent_email, so COALESCE yields the row; validation attempts
  // are per agent e-mail (one validation may serve many rows).
  for (const r of db.prepare(
    `SELECT kind, COUNT(*) AS n, COUNT(DISTINCT COALESCE(agent_email, row_number)) AS subjects
     FROM attempts WHERE job_id = ? GROUP BY kind`,
  ).all(jobId) as { kind: ReportAttemptKind; n: number; subjects: number }[]) {
    const entry = byKind[r.kind];
    if (entry === undefined) continue; // the schema's CHECK allows only the three kinds
    entry.attempts = r.n;
    entry.subjects = r.subjects;
    entry.retries = r.n - r.subjects;
  }
  for (const r of db.prepare('SELECT kind, outcome, COUNT(*) AS n FROM attempts WHERE job_id = ? GROUP BY kind, outcome')
    .all(jobId) as { kind: ReportAttemptKind; outcome: string; n: number }[]) {
    const entry = byKind[r.kind];
    if (entry !== undefined) entry.by_outcome[r.outcome] = r.n;
  }
  const rowsRetried = db.prepare(
    `SELECT COUNT(*) FROM (SELECT row_number FROM attempts WHERE job_id = ? AND kind IN ('quote', 'lead')
     GROUP BY row_number HAVING COUNT(*) > 1)`,
  ).pluck().get(jobId) as number;
  const kinds = Object.values(byKind);
  return {
    total: kinds.reduce((sum, k) => sum + k.attempts, 0),
    retries: kinds.reduce((sum, k) => sum + k.retries, 0),
    rows_retried: rowsRetried,
    by_kind: byKind,
  };
}

function rowErrors(db: Db, jobId: number): { row_errors: ReportRowError[]; row_error_groups: number } {
  const { groups, kinds } = readErrorGroups(db, jobId, { limit: ROW_ERROR_LIMIT });
  return { row_errors: groups, row_error_groups: kinds };
}

function readAttemptErrors(db: Db, jobId: number): { attempt_errors: ReportAttemptError[]; attempt_error_groups: number } {
  const where = `WHERE job_id = ? AND outcome != 'ok'`;
  const groups = db.prepare(
    `SELECT COUNT(*) FROM (SELECT 1 FROM attempts ${where} GROUP BY kind, http_status, error_code, outcome)`,
  ).pluck().get(jobId) as number;
  const attemptErrors = db.prepare(
    `SELECT kind, http_status, error_code, outcome, COUNT(*) AS attempts FROM attempts ${where}
     GROUP BY kind, http_status, error_code, outcome
     ORDER BY attempts DESC, kind, http_status, error_code, outcome LIMIT ?`,
  ).all(jobId, ROW_ERROR_LIMIT) as ReportAttemptError[];
  return { attempt_errors: attemptErrors, attempt_error_groups: groups };
}

function readInvalidAgents(db: Db, jobId: number, environment: string): ReportInvalidAgent[] {
  return db.prepare(
    `SELECT r.agent_email AS email, a.message AS message, COUNT(*) AS blocked_rows
     FROM rows r LEFT JOIN agents a ON a.environment = ? AND a.email = r.agent_email
     WHERE r.job_id = ? AND r.state = 'agent_invalid'
     GROUP BY r.agent_email ORDER BY blocked_rows DESC, r.agent_email`,
  ).all(environment, jobId) as ReportInvalidAgent[];
}

function readTiming(db: Db, jobId: number, byState: Record<RowState, number>): ReportTiming {
  const elapsed = db.prepare('SELECT duration_seconds FROM job_summary WHERE job_id = ?').pluck().get(jobId) as number | null;
  const runSeconds = db.prepare(
    `SELECT COALESCE(SUM((julianday(COALESCE(finished_at, heartbeat_at, started_at)) - julianday(started_at)) * 86400.0), 0)
     FROM runs WHERE job_id = ?`,
  ).pluck().get(jobId) as number;
  const rowsCompleted = DONE_STATES.reduce((sum, s) => sum + byState[s], 0);
  return {
    elapsed_seconds: elapsed,
    run_seconds: round(runSeconds, 3),
    rows_completed: rowsCompleted,
    rows_per_second: runSeconds > 0 ? round(rowsCompleted / runSeconds, 2) : null,
  };
}

function readCompletions(db: Db, jobId: number): ReportCompletions {
  const done = `job_id = ? AND state IN (${sqlList(DONE_STATES)})`;
  const ms = epochMsSql('updated_at');
  const span = db.prepare(`SELECT MIN(${ms}) AS first, MAX(${ms}) AS last FROM rows WHERE ${done}`)
    .get(jobId) as { first: number | null; last: number | null };
  if (span.first === null || span.last === null) return { start: null, bucket_seconds: 1, buckets: [] };
  const seconds = (span.last - span.first) / 1000;
  const width = bucketSecondsFor(seconds);
  const count = Math.floor(seconds / width) + 1;
  const buckets = new Array<number>(count).fill(0);
  for (const r of db.prepare(
    `SELECT CAST((${ms} - ?) / ? AS INTEGER) AS bucket, COUNT(*) AS n FROM rows WHERE ${done} GROUP BY bucket`,
  ).all(span.first, width * 1000, jobId) as { bucket: number; n: number }[]) {
    const i = Math.min(Math.max(r.bucket, 0), count - 1);
    buckets[i] = (buckets[i] ?? 0) + r.n;
  }
  return { start: new Date(span.first).toISOString(), bucket_seconds: width, buckets };
}

function readRuns(db: Db, jobId: number, nowMs: number): ReportRun[] {
  return (db.prepare(
    // A run still marked running has lasted until its last sign of life: its latest sample (about one a
    // second) or heartbeat (one every 10 s).
    `SELECT id, started_at, finished_at, status, end_reason, tool_version, pid, hostname, heartbeat_at, last_sign,
       (julianday(COALESCE(finished_at, last_sign)) - julianday(started_at)) * 86400.0 AS seconds,
       CASE WHEN json_valid(options_json) THEN json_extract(options_json, '$.limit') END AS "limit"
     FROM (SELECT *, NULLIF(max(COALESCE(heartbeat_at, ''),
                                COALESCE((SELECT MAX(s.at) FROM run_samples s WHERE s.run_id = runs.id), '')), '') AS last_sign
           FROM runs WHERE job_id = ?)
     ORDER BY id`,
  ).all(jobId) as Array<RunColumns>).map(({ pid, hostname, heartbeat_at, last_sign, ...r }) => {
    const gone = r.status === 'running' && !runMayBeAlive({ pid, hostname, heartbeat_at }, nowMs);
    return {
      ...r,
      seconds: r.seconds === null ? null : round(r.seconds, 3),
      limit: typeof r.limit === 'number' && Number.isInteger(r.limit) && r.limit > 0 ? r.limit : null,
      process_gone: gone,
      last_seen_at: gone ? last_sign : null,
    };
  });
}

/** A `runs` row as {@link readRuns} selects it. */
type RunColumns = Omit<ReportRun, 'limit' | 'process_gone' | 'last_seen_at'> & {
  limit: unknown;
  pid: number | null;
  hostname: string | null;
  heartbeat_at: string | null;
  last_sign: string | null;
};

// --- statistics -----------------------------------------------------------------------------

/** {@link Stats} of ascending `sorted`. */
export function computeStats(sorted: readonly number[]): Stats {
  const n = sorted.length;
  if (n === 0) return { count: 0, min: null, median: null, p90: null, p95: null, p99: null, max: null, mean: null };
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: n,
    min: sorted[0] as number,
    median: percentileOf(sorted, 50),
    p90: percentileOf(sorted, 90),
    p95: percentileOf(sorted, 95),
    p99: percentileOf(sorted, 99),
    max: sorted[n - 1] as number,
    mean: round(sum / n, 2),
  };
}

/**
 * Equal-width bins of a "nice" width (1, 2, 2.5 or 5 × 10^k) covering ascending `sorted`. When a
 * few outliers lie far out (max > 2 × p95, e.g. 30 s time-outs among 100 ms calls), the equal bins
 * stop at the p95 and one last overflow bin reaches the maximum, so the bulk stays readable. (The
 * p95, not the p99: time-outs are often more than 1% of the calls of a run that had trouble.)
 */
export function computeHistogram(sorted: readonly number[], bins = HISTOGRAM_BINS): HistogramBin[] {
  const n = sorted.length;
  if (n === 0) return [];
  const min = sorted[0] as number;
  const max = sorted[n - 1] as number;
  if (max === min) return [{ from: min, to: max, count: n }];
  const p95 = percentileOf(sorted, 95);
  const top = max > 2 * p95 && p95 > min ? p95 : max;
  const step = niceStep((top - min) / bins);
  const from = Math.floor(min / step) * step;
  let count = Math.max(1, Math.ceil((top - from) / step - 1e-9));
  if (top < max && from + count * step <= top) count += 1; // p95 itself sits in an equal bin
  const result: HistogramBin[] = Array.from({ length: count }, (_, i) => ({
    from: tidy(from + i * step),
    to: tidy(from + (i + 1) * step),
    count: 0,
  }));
  if (top < max) result.push({ from: tidy(from + count * step), to: max, count: 0 });
  const lastBin = result[result.length - 1] as HistogramBin;
  lastBin.to = Math.max(lastBin.to, max); // the last bin is closed and always holds the maximum
  const last = result.length - 1;
  for (const v of sorted) {
    let i = Math.min(last, Math.max(0, Math.floor((v - from) / step)));
    // The division may land a hair off at an edge: the published (tidied) edges decide.
    while (i < last && v >= (result[i + 1] as HistogramBin).from) i += 1;
    while (i > 0 && v < (result[i] as HistogramBin).from) i -= 1;
    (result[i] as HistogramBin).count += 1;
  }
  return result;
}

function withHistogram(sorted: readonly number[]): StatsWithHistogram {
  return { ...computeStats(sorted), histogram: computeHistogram(sorted) };
}

