/**
 * Computes a job's {@link Report} from the figures the ledger reads (`src/ledger/queries/`): the
 * statistics, rounding and buckets are done here. Pure reads, so it works on a ledger another
 * process is writing and on any copy an analyst hands over.
 */
import { QuoteBatchError } from '../errors.js';
import {
  countAttemptsByKind, countAttemptsByOutcome, countCompletionsByBucket, countRowsByState, countRowsRetried, countUnreadableAnswers,
  errorRowBatches, jobExists, latestJobId, readAttemptErrors, readCompletionSpan, readInvalidAgents, readJobFigures, readJobSeconds,
  readLatencies, readPremiums, readRowsByOtherJobs, readRunFigures, ROW_STATES, runMayBeAlive, type RowState, type SqlDb,
} from '../ledger/index.js';
import { groupRowErrors } from '../error-groups.js';
import { percentileOf } from '../percentile.js';
import { bucketSecondsFor, round } from './_buckets.js';
import { niceStep, tidy } from './_nice.js';
import { readPartner, readTimeline } from './timeline.js';
import {
  ATTEMPT_KINDS, ATTEMPT_OUTCOMES, DONE_STATES, REPORT_VERSION, ROW_ERROR_LIMIT,
  type HistogramBin, type Report, type ReportAttempts, type ReportAttemptKind,
  type ReportCompletions, type ReportJob, type ReportKindAttempts, type ReportRowError,
  type ReportRun, type ReportTiming, type Stats, type StatsWithHistogram,
} from './types.js';

const HISTOGRAM_BINS = 20;

/**
 * The job a report or export is about: `jobId` when given (it must exist), else the latest job.
 * Throws a usage error naming the ledger when there is no such job.
 */
export async function resolveJobId(db: SqlDb, jobId: number | undefined, ledgerPath: string): Promise<number> {
  if (jobId !== undefined) {
    if (!(await jobExists(db, jobId))) {
      throw new QuoteBatchError('E_USAGE', `job ${jobId} is not in ledger ${ledgerPath}`, {
        hint: 'list the jobs with `quote-batch jobs --ledger <file>`',
      });
    }
    return jobId;
  }
  const latest = await latestJobId(db);
  if (latest === null) {
    throw new QuoteBatchError('E_USAGE', `ledger ${ledgerPath} has no jobs yet`, {
      hint: 'run `quote-batch run <input> --mapping <file>` first',
    });
  }
  return latest;
}

/** Builds the full report of job `jobId` (which must exist; see {@link resolveJobId}). */
export function buildReport(db: SqlDb, jobId: number, options: { now?: () => Date } = {}): Promise<Report> {
  // One snapshot: every figure comes from the same state of the ledger while a run writes.
  return db.snapshot(async () => {
    const generatedAt = options.now?.() ?? new Date();
    const runs = await readRuns(db, jobId, generatedAt.getTime());
    const job = await readJob(db, jobId, runs);
    const rows = await readRows(db, jobId);
    const attempts = await readAttempts(db, jobId);
    const errors = await rowErrors(db, jobId);
    const attemptErrors = await readAttemptErrors(db, jobId, ROW_ERROR_LIMIT);
    const invalidAgents = await readInvalidAgents(db, jobId, job.environment);
    const premium = withHistogram(await readPremiums(db, jobId));
    const latency: Partial<Record<ReportAttemptKind, StatsWithHistogram>> = {};
    for (const kind of ATTEMPT_KINDS) latency[kind] = withHistogram(await readLatencies(db, jobId, kind));
    const timing = await readTiming(db, jobId, rows.by_state);
    const completions = await readCompletions(db, jobId);
    const timeline = await readTimeline(db, jobId);
    const partner = await readPartner(db, jobId);
    return {
      report_version: REPORT_VERSION,
      generated_at: generatedAt.toISOString(),
      job,
      rows,
      attempts,
      ...errors,
      attempt_errors: attemptErrors.groups,
      attempt_error_groups: attemptErrors.count,
      invalid_agents: invalidAgents,
      premium,
      latency_ms: latency as Record<ReportAttemptKind, StatsWithHistogram>,
      timing,
      completions,
      runs,
      timeline,
      partner,
    } satisfies Report;
  });
}

async function readJob(db: SqlDb, jobId: number, runs: readonly ReportRun[]): Promise<ReportJob> {
  const stored = await readJobFigures(db, jobId);
  if (stored === undefined) throw new QuoteBatchError('E_USAGE', `job ${jobId} is not in the ledger`);
  const running = runs.filter((r) => r.status === 'running');
  return { ...stored, process_gone: stored.status === 'running' && running.length > 0 && running.every((r) => r.process_gone) };
}

async function readRows(db: SqlDb, jobId: number): Promise<Report['rows']> {
  const byState = Object.fromEntries(ROW_STATES.map((s) => [s, 0])) as Record<RowState, number>;
  for (const { state, n } of await countRowsByState(db, jobId)) byState[state] = n;
  const total = ROW_STATES.reduce((sum, s) => sum + byState[s], 0);
  const sent = byState.succeeded + byState.rejected + byState.failed + byState.in_doubt;
  return {
    total,
    by_state: byState,
    success_rate: total === 0 ? null : round(byState.succeeded / total, 4),
    sent_success_rate: sent === 0 ? null : round(byState.succeeded / sent, 4),
    by_other_jobs: await readRowsByOtherJobs(db, jobId),
    unreadable_answers: await countUnreadableAnswers(db, jobId),
  };
}

async function readAttempts(db: SqlDb, jobId: number): Promise<ReportAttempts> {
  const byKind = Object.fromEntries(
    ATTEMPT_KINDS.map((kind): [ReportAttemptKind, ReportKindAttempts] => [
      kind,
      { attempts: 0, subjects: 0, retries: 0, by_outcome: Object.fromEntries(ATTEMPT_OUTCOMES.map((o) => [o, 0])) },
    ]),
  ) as Record<ReportAttemptKind, ReportKindAttempts>;
  for (const r of await countAttemptsByKind(db, jobId)) {
    const entry = byKind[r.kind as ReportAttemptKind];
    if (entry === undefined) continue; // the schema's CHECK allows only the three kinds
    entry.attempts = r.n;
    entry.subjects = r.subjects;
    entry.retries = r.n - r.subjects;
  }
  for (const r of await countAttemptsByOutcome(db, jobId)) {
    const entry = byKind[r.kind as ReportAttemptKind];
    if (entry !== undefined) entry.by_outcome[r.outcome] = r.n;
  }
  const rowsRetried = await countRowsRetried(db, jobId);
  const kinds = Object.values(byKind);
  return {
    total: kinds.reduce((sum, k) => sum + k.attempts, 0),
    retries: kinds.reduce((sum, k) => sum + k.retries, 0),
    rows_retried: rowsRetried,
    by_kind: byKind,
  };
}

async function rowErrors(db: SqlDb, jobId: number): Promise<{ row_errors: ReportRowError[]; row_error_groups: number }> {
  const { groups, kinds } = await groupRowErrors(errorRowBatches(db, jobId), { limit: ROW_ERROR_LIMIT });
  return { row_errors: groups, row_error_groups: kinds };
}

async function readTiming(db: SqlDb, jobId: number, byState: Record<RowState, number>): Promise<ReportTiming> {
  const seconds = await readJobSeconds(db, jobId);
  const rowsCompleted = DONE_STATES.reduce((sum, s) => sum + byState[s], 0);
  return {
    elapsed_seconds: seconds.elapsed,
    run_seconds: round(seconds.runs, 3),
    rows_completed: rowsCompleted,
    rows_per_second: seconds.runs > 0 ? round(rowsCompleted / seconds.runs, 2) : null,
  };
}

async function readCompletions(db: SqlDb, jobId: number): Promise<ReportCompletions> {
  const span = await readCompletionSpan(db, jobId);
  if (span.first_ms === null || span.last_ms === null) return { start: null, bucket_seconds: 1, buckets: [] };
  const seconds = (span.last_ms - span.first_ms) / 1000;
  const width = bucketSecondsFor(seconds);
  const count = Math.floor(seconds / width) + 1;
  const buckets = new Array<number>(count).fill(0);
  for (const r of await countCompletionsByBucket(db, jobId, span.first_ms, Math.round(width * 1000))) {
    const i = Math.min(Math.max(r.bucket, 0), count - 1);
    buckets[i] = (buckets[i] ?? 0) + r.n;
  }
  return { start: new Date(span.first_ms).toISOString(), bucket_seconds: width, buckets };
}

async function readRuns(db: SqlDb, jobId: number, nowMs: number): Promise<ReportRun[]> {
  return (await readRunFigures(db, jobId)).map(({ pid, hostname, heartbeat_at, last_sign, ...r }) => {
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

