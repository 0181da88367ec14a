/**
 * The job over time, run by run ({@link ReportTimeline}), and what the partner allowed
 * ({@link ReportPartner}), from `runs`, `rows.updated_at`, `run_samples` and `attempts`.
 * Rows and samples are aggregated by SQLite or streamed: memory grows with buckets, not rows.
 */
import type Database from 'better-sqlite3';
import { STOPPED_IN_FLIGHT, type RunStatus } from '../ledger/index.js';
import { bucketSecondsFor, epochMsSql, percentileOf, round, sqlList } from './_buckets.js';
import {
  DONE_STATES, type ReportPartner, type ReportTimeline, type ReportTimelineBucket, type ReportTimelineSegment,
} from './types.js';

type Db = Database.Database;

/** A crashed run's last heartbeat is up to 10 s before it died: completions this soon after its end are still its own. */
const SLACK_MS = 15_000;
/** A run with a minute of samples is long enough to say where the limit settled. */
const SETTLED_MIN_SAMPLES = 60;

interface RunRow {
  id: number;
  status: RunStatus;
  started_at: string;
  finished_at: string | null;
  heartbeat_at: string | null;
}

interface Span {
  run: RunRow;
  start: number;
  end: number;
  /** Completions in [start, until) belong to this run. */
  until: number;
}

interface BucketSums {
  rowsCompleted: number;
  samples: number;
  limitSum: number;
  limitCount: number;
  inFlightSum: number;
  paceSum: number;
  paceCount: number;
  attempts: number;
  throttled: number;
  errors: number;
  rowsDone: number;
  coveredMs: number;
}

/** A ledger is a file anyone can edit: only finite positive rates are paces. */
const isPace = (pace: unknown): pace is number => typeof pace === 'number' && Number.isFinite(pace) && pace > 0;

const parse = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));
/** ISO text of `ms` for comparing with the ledger's ISO columns (an infinite bound: after every time). */
const iso = (ms: number): string => (Number.isFinite(ms) ? new Date(ms).toISOString() : '9999-12-31T23:59:59.999Z');

export function readTimeline(db: Db, jobId: number): ReportTimeline {
  const runs = db.prepare(
    'SELECT id, status, started_at, finished_at, heartbeat_at FROM runs WHERE job_id = ? ORDER BY started_at, id',
  ).all(jobId) as RunRow[];
  // A row `resolve` settled (its last change is a resolution) was completed by no run, however soon
  // after one it was settled.
  const done = `job_id = ? AND state IN (${sqlList(DONE_STATES)}) AND updated_at >= ? AND updated_at < ?
    AND NOT EXISTS (SELECT 1 FROM resolutions z WHERE z.job_id = rows.job_id AND z.row_number = rows.row_number AND z.resolved_at = rows.updated_at)`;
  const lastCompletion = db.prepare(`SELECT MAX(updated_at) FROM rows WHERE ${done}`).pluck();
  const lastSample = db.prepare('SELECT MAX(at) FROM run_samples WHERE run_id = ?').pluck();

  const spans: Span[] = runs.map((run, i) => {
    const start = Date.parse(run.started_at);
    const recorded = run.status === 'crashed'
      ? parse(run.heartbeat_at)
      : parse(run.finished_at) ?? parse(run.heartbeat_at);
    const next = runs[i + 1];
    const until = Math.min(next === undefined ? Number.POSITIVE_INFINITY : Date.parse(next.started_at), (recorded ?? start) + SLACK_MS);
    const last = Math.max(
      recorded ?? start,
      parse(lastCompletion.get(jobId, iso(start), iso(until)) as string | null) ?? start,
      parse(lastSample.get(run.id) as string | null) ?? start,
    );
    return { run, start, end: last, until };
  });
  const activeSeconds = spans.reduce((sum, s) => sum + (s.end - s.start) / 1000, 0);
  const bucketSeconds = bucketSecondsFor(activeSeconds, 1);
  const w = bucketSeconds * 1000;

  const sums = spans.map((s) => Array.from({ length: Math.floor((s.end - s.start) / w) + 1 }, (): BucketSums => ({
    rowsCompleted: 0, samples: 0, limitSum: 0, limitCount: 0, inFlightSum: 0, paceSum: 0, paceCount: 0, attempts: 0, throttled: 0, errors: 0, rowsDone: 0, coveredMs: 0,
  })));
  const at = (i: number, ms: number): BucketSums => {
    const buckets = sums[i] as BucketSums[];
    return buckets[Math.min(Math.max(Math.floor((ms - (spans[i] as Span).start) / w), 0), buckets.length - 1)] as BucketSums;
  };

  const completions = db.prepare(
    `SELECT CAST((${epochMsSql('updated_at')} - ?) / ? AS INTEGER) AS bucket, COUNT(*) AS n FROM rows WHERE ${done} GROUP BY bucket`,
  ).raw();
  let attributed = 0;
  spans.forEach((span, i) => {
    for (const [bucket, n] of completions.iterate(span.start, w, jobId, iso(span.start), iso(span.until)) as Iterable<[number, number]>) {
      at(i, span.start + bucket * w).rowsCompleted += n;
      attributed += n;
    }
  });
  const completed = db.prepare(`SELECT COUNT(*) FROM rows WHERE job_id = ? AND state IN (${sqlList(DONE_STATES)})`).pluck().get(jobId) as number;

  const index = new Map(spans.map((s, i) => [s.run.id, i]));
  let previous = { run: -1, elapsed: 0 };
  for (const [runId, sampleAt, elapsed, limit, inFlight, attempts, throttled, errors, rowsDone, pace] of db.prepare(
    `SELECT run_id, at, elapsed_ms, concurrency_limit, in_flight, attempts, throttled, errors, rows_done, pace_rate FROM run_samples
     WHERE run_id IN (SELECT id FROM runs WHERE job_id = ?) ORDER BY run_id, elapsed_ms`,
  ).raw().iterate(jobId) as Iterable<[number, string, number, number | null, number, number, number, number, number, number | null]>) {
    const i = index.get(runId);
    if (i === undefined) continue;
    // A sample covers the time since the run's previous one (its first, since the run started);
    // it falls in the bucket of its middle (its end may sit on the next bucket's edge).
    const covered = Math.max(0, elapsed - (previous.run === runId ? previous.elapsed : 0));
    previous = { run: runId, elapsed };
    const b = at(i, Date.parse(sampleAt) - covered / 2);
    b.samples += 1;
    if (limit !== null) {
      b.limitSum += limit;
      b.limitCount += 1;
    }
    b.inFlightSum += inFlight;
    if (isPace(pace)) {
      b.paceSum += pace;
      b.paceCount += 1;
    }
    b.attempts += attempts;
    b.throttled += throttled;
    b.errors += errors;
    b.rowsDone += rowsDone;
    b.coveredMs += covered;
  }

  const segments = spans.map((span, i): ReportTimelineSegment => ({
    run_id: span.run.id,
    status: span.run.status,
    start: iso(span.start),
    end: iso(span.end),
    buckets: (sums[i] as BucketSums[]).map((b): ReportTimelineBucket => ({
      rows_completed: b.rowsCompleted,
      samples: b.samples,
      concurrency_limit: b.limitCount === 0 ? null : round(b.limitSum / b.limitCount, 2),
      in_flight: b.samples === 0 ? null : round(b.inFlightSum / b.samples, 2),
      attempts: b.attempts,
      throttled: b.throttled,
      errors: b.errors,
      rows_per_second: b.coveredMs === 0 ? null : round((1000 * b.rowsDone) / b.coveredMs, 2),
      pace_rate: b.paceCount === 0 ? null : round(b.paceSum / b.paceCount, 2),
    })),
  }));
  return { bucket_seconds: bucketSeconds, segments, rows_outside_runs: completed - attributed };
}

/**
 * The limit a run settled at: the nearest-rank median of the limits of its last quarter of samples
 * (at least its last 10), given in time order. Null without samples.
 */
export function settledLimitOf(limits: readonly number[]): { limit: number; samples: number } | null {
  if (limits.length === 0) return null;
  const last = settledSpan(limits).sort((a, b) => a - b);
  // Nearest-rank median, like every percentile of the report: a limit that occurred.
  return { limit: percentileOf(last, 50), samples: last.length };
}

/**
 * The pace (requests/s) a run settled at, from its samples' paces in time order (null: not pacing):
 * the nearest-rank median over the samples its limit is taken from, when it paced in at least half
 * of them (a rate cap it had found); else null. In a run that settled, the pace swings about the cap
 * (cut below it by each 429, probing above it between them). A short run's pace is still climbing
 * from its first cut: its median is low rather than high, and a run starting from it climbs on.
 */
export function settledPaceOf(paces: readonly (number | null)[]): number | null {
  const span = settledSpan(paces);
  const paced = span.filter(isPace).sort((a, b) => a - b);
  return paced.length === 0 || paced.length * 2 < span.length ? null : percentileOf(paced, 50);
}

/** Of one sample: the limit, the mean requests in flight, and the 429s and transient failures. */
export interface LimitSample {
  lim: number;
  inFlight: number;
  pushedBack: number;
}

/**
 * What set a run's settled limit, from its samples up to its last answer: `ceiling`, its
 * `--concurrency` (reached: the user's limit, not a finding; unknown for an old run); `partner`,
 * below it, when the run pushed against it (429s or errors) or kept its window in use (half of it
 * in flight) in most samples; `run`, otherwise: our own side held the run back (`--rate`, rows read
 * slower than the partner answers, a small input) and the window never had to shrink.
 */
export function limitSetBy(samples: readonly LimitSample[], settledLimit: number, ceiling: unknown): 'ceiling' | 'partner' | 'run' {
  if (typeof ceiling === 'number' && settledLimit >= ceiling) return 'ceiling';
  const inUse = samples.filter((x) => x.inFlight >= x.lim / 2).length;
  return samples.some((x) => x.pushedBack > 0) || inUse >= samples.length / 2 ? 'partner' : 'run';
}

/** The samples a run's settled figures are taken from: its last quarter, at least its last 10. */
function settledSpan<T>(samples: readonly T[]): T[] {
  return samples.slice(-Math.min(samples.length, Math.max(10, Math.ceil(samples.length / 4))));
}

/**
 * True (SQL) for a sample in which the partner answered a quote or lead (an answer other than a
 * transient failure; a 429 counts). Before migration 8, any answer: its attempts less its errors.
 */
const ANSWERED = (s: string): string => `COALESCE(${s}.submits_answered, ${s}.attempts - ${s}.errors) > 0`;

/**
 * The samples of a run that can say where its limit settled: those up to its last {@link ANSWERED}
 * one. Later ones (an outage that halted the run, a breaker open until Ctrl-C, its probes answered
 * or not) show our back-off, not the partner's limit: the window cut by failures. A run the
 * partner never answered has none. `run`: the SQL of the run's id, constant over the query it
 * bounds (`@run`, an outer table's id).
 */
const answeredUntil = (run: string): string =>
  `(SELECT MAX(a.elapsed_ms) FROM run_samples a WHERE a.run_id = ${run} AND ${ANSWERED('a')})`;

/** A run's samples with a limit, up to its last answer ({@link answeredUntil}), in time order. */
function readAnsweredSamples(db: Db, runId: number): (LimitSample & { pace: number | null })[] {
  return db.prepare(`SELECT concurrency_limit AS lim, in_flight AS inFlight, throttled + errors AS pushedBack, pace_rate AS pace
     FROM run_samples WHERE run_id = @run AND concurrency_limit IS NOT NULL AND elapsed_ms <= ${answeredUntil('@run')} ORDER BY elapsed_ms`)
    .all({ run: runId }) as (LimitSample & { pace: number | null })[];
}

/**
 * Where the limit settled in a job (the report's figure): in its latest run with a minute of
 * samples up to its last answer, else in the run with the most. (Where `run` starts:
 * {@link readStartingLimit}.)
 */
export function readSettledLimit(
  db: Db,
  jobId: number,
): { runId: number; limit: number; samples: number; pace: number | null; answered: LimitSample[] } | null {
  // The bound is worked out once per run: as a subquery of each sample it would be once per sample.
  const perRun = db.prepare(`WITH answered AS (SELECT run_id, MAX(elapsed_ms) AS until FROM run_samples s
       WHERE run_id IN (SELECT id FROM runs WHERE job_id = ?) AND ${ANSWERED('s')} GROUP BY run_id)
     SELECT s.run_id, COUNT(*) AS n FROM answered JOIN run_samples s ON s.run_id = answered.run_id AND s.elapsed_ms <= answered.until
       AND s.concurrency_limit IS NOT NULL
     GROUP BY s.run_id ORDER BY s.run_id`)
    .all(jobId) as { run_id: number; n: number }[];
  const run = perRun.filter((r) => r.n >= SETTLED_MIN_SAMPLES).at(-1)
    ?? perRun.reduce<{ run_id: number; n: number } | undefined>((best, r) => (best === undefined || r.n >= best.n ? r : best), undefined);
  if (run === undefined) return null;
  const samples = readAnsweredSamples(db, run.run_id);
  const settled = settledLimitOf(samples.map((x) => x.lim));
  return settled === null ? null : { runId: run.run_id, ...settled, pace: settledPaceOf(samples.map((x) => x.pace)), answered: samples };
}

/**
 * Where adaptive concurrency can start instead of from a cold start: where the limit settled in the
 * latest run sent to a partner (environment, operation and base URL; this job's or another's:
 * tonight's new job after last night's). Only adaptive runs the partner answered count (an answer
 * other than a transient failure: a 429 counts, a refused connection does not), and not runs that
 * halted (an outage, a refused key) or failed: their last limits say more about that night than
 * about the partner; nor, so, a run stopped (Ctrl-C, --max-runtime) while the partner never
 * answered. A run killed and not yet settled (still `running`) counts as the crash it was.
 * Preferred: the latest run with a minute of samples, else the latest.
 *
 * Its samples count up to its last answer ({@link answeredUntil}). `used` tells whether that limit
 * is one the partner set ({@link limitSetBy}); otherwise it is a floor to grow from.
 *
 * `pace`: when the partner set the limit, the pace that run settled at ({@link settledPaceOf}); else null.
 */
export function readStartingLimit(
  db: Db,
  partner: { environment: string; operation: string; baseUrl: string },
): { jobId: number; runId: number; limit: number; samples: number; used: boolean; pace: number | null } | null {
  const run = db.prepare(
    `SELECT runId, jobId, ceiling FROM (
       SELECT r.id AS runId, r.job_id AS jobId, json_extract(r.options_json, '$.concurrency') AS ceiling,
              (SELECT COUNT(*) FROM (SELECT 1 FROM run_samples s WHERE s.run_id = r.id AND s.concurrency_limit IS NOT NULL
                                     AND s.elapsed_ms <= ${answeredUntil('r.id')} LIMIT ${SETTLED_MIN_SAMPLES})) AS n
       FROM runs r JOIN jobs j ON j.id = r.job_id
       WHERE j.environment = ? AND j.operation = ? AND rtrim(j.base_url, '/') = rtrim(?, '/')
         AND r.status NOT IN ('halted', 'failed') AND json_extract(r.options_json, '$.adaptive') IS NOT 0)
     WHERE n > 0 ORDER BY n >= ${SETTLED_MIN_SAMPLES} DESC, runId DESC LIMIT 1`,
  ).get(partner.environment, partner.operation, partner.baseUrl) as { runId: number; jobId: number; ceiling: unknown } | undefined;
  if (run === undefined) return null;
  const samples = readAnsweredSamples(db, run.runId);
  const settled = settledLimitOf(samples.map((x) => x.lim));
  if (settled === null) return null;
  const used = limitSetBy(samples, settled.limit, run.ceiling) === 'partner';
  const pace = used ? settledPaceOf(samples.map((x) => x.pace)) : null;
  return { jobId: run.jobId, runId: run.runId, ...settled, used, pace };
}

export function readPartner(db: Db, jobId: number): ReportPartner {
  // Samples older than schema 5 know only their end's count.
  const all = db.prepare('SELECT COUNT(*) AS n, MAX(concurrency_limit) AS max_limit, MAX(COALESCE(in_flight_max, in_flight)) AS max_in_flight FROM run_samples WHERE run_id IN (SELECT id FROM runs WHERE job_id = ?)')
    .get(jobId) as { n: number; max_limit: number | null; max_in_flight: number | null };
  const settled = readSettledLimit(db, jobId);
  const ceiling = settled === null ? undefined
    : db.prepare(`SELECT json_extract(options_json, '$.concurrency') AS c FROM runs WHERE id = ?`).get(settled.runId) as { c: unknown } | undefined;
  const settledCeiling = typeof ceiling?.c === 'number' ? ceiling.c : null;
  // Answers: not the requests a stopped process left in flight (none came).
  const answers = db.prepare(`SELECT COUNT(*) AS attempts, TOTAL(http_status = 429) AS throttled FROM attempts WHERE job_id = ? AND error_code IS NOT '${STOPPED_IN_FLIGHT}'`)
    .get(jobId) as { attempts: number; throttled: number };
  return {
    samples: all.n,
    settled_limit: settled?.limit ?? null,
    settled_run_id: settled?.runId ?? null,
    settled_samples: settled?.samples ?? 0,
    settled_pace: settled?.pace ?? null,
    settled_ceiling: settledCeiling,
    settled_held_by_run: settled !== null && limitSetBy(settled.answered, settled.limit, settledCeiling) === 'run',
    limit_max: all.max_limit,
    in_flight_max: all.max_in_flight,
    attempts: answers.attempts,
    throttled: answers.throttled,
    throttled_share: answers.attempts === 0 ? null : round(answers.throttled / answers.attempts, 4),
  };
}
