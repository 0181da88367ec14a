/**
 * The job over time, run by run ({@link ReportTimeline}), and what the partner allowed
 * ({@link ReportPartner}), from the figures the ledger reads (`src/ledger/queries/timeline.ts`):
 * completions are counted by the ledger and samples streamed, so memory grows with buckets, not rows.
 */
import {
  countAnsweredSamples, countAnswers, countDoneRows, countRunCompletionsByBucket, readAnnouncedRun, readAnsweredSamples, readLastCompletion,
  readRunCeiling, readSampleExtremes, readTimelineRuns, runSampleBatches, type AnsweredSample, type SqlDb, type TimelineRun,
} from '../ledger/index.js';
import { isPace, limitSetBy, SETTLED_MIN_SAMPLES, settledLimitOf, settledPaceOf } from '../partner/settled-limit.js';
import { bucketSecondsFor, round } from './_buckets.js';
import type { ReportAnnounced, ReportPartner, ReportTimeline, ReportTimelineBucket, ReportTimelineSegment } from './types.js';

/** A crashed run's last heartbeat is up to 10 s before it died: completions this soon after its end are still its own. */
const SLACK_MS = 15_000;

interface Span {
  run: TimelineRun;
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

const parse = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));
/** ISO text of `ms` for comparing with the ledger's ISO columns (an infinite bound: after every time). */
const iso = (ms: number): string => (Number.isFinite(ms) ? new Date(ms).toISOString() : '9999-12-31T23:59:59.999Z');

export async function readTimeline(db: SqlDb, jobId: number): Promise<ReportTimeline> {
  const runs = await readTimelineRuns(db, jobId);
  const spans: Span[] = [];
  for (const [i, run] of runs.entries()) {
    const start = Date.parse(run.started_at);
    const recorded = run.status === 'crashed'
      ? parse(run.heartbeat_at)
      : parse(run.finished_at) ?? parse(run.heartbeat_at);
    const next = runs[i + 1];
    const until = Math.min(next === undefined ? Number.POSITIVE_INFINITY : Date.parse(next.started_at), (recorded ?? start) + SLACK_MS);
    const last = Math.max(
      recorded ?? start,
      parse(await readLastCompletion(db, jobId, iso(start), iso(until))) ?? start,
      parse(run.last_sample_at) ?? start,
    );
    spans.push({ run, start, end: last, until });
  }
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

  let attributed = 0;
  for (const [i, span] of spans.entries()) {
    const counted = await countRunCompletionsByBucket(db, jobId, { fromIso: iso(span.start), untilIso: iso(span.until), startMs: span.start, widthMs: w });
    for (const { bucket, n } of counted) {
      at(i, span.start + bucket * w).rowsCompleted += n;
      attributed += n;
    }
  }
  const completed = await countDoneRows(db, jobId);

  for (const [i, span] of spans.entries()) {
    // A sample covers the time since the run's previous one (its first, since the run started);
    // it falls in the bucket of its middle (its end may sit on the next bucket's edge).
    let previousElapsed = 0;
    for await (const batch of runSampleBatches(db, span.run.id)) {
      for (const { at: sampleAt, elapsed_ms: elapsed, concurrency_limit: limit, in_flight: inFlight, attempts, throttled, errors, rows_done: rowsDone, pace_rate: pace } of batch) {
        const covered = Math.max(0, elapsed - previousElapsed);
        previousElapsed = elapsed;
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
    }
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
 * Where the limit settled in a job (the report's figure): in its latest run with a minute of
 * samples up to its last answer, else in the run with the most. (Where the next run starts:
 * `startingLimit` in `src/pipeline/run-job.ts`.)
 */
export async function readSettledLimit(
  db: SqlDb,
  jobId: number,
): Promise<{ runId: number; limit: number; samples: number; pace: number | null; answered: AnsweredSample[] } | null> {
  const perRun = await countAnsweredSamples(db, jobId);
  const run = perRun.filter((r) => r.n >= SETTLED_MIN_SAMPLES).at(-1)
    ?? perRun.reduce<{ run_id: number; n: number } | undefined>((best, r) => (best === undefined || r.n >= best.n ? r : best), undefined);
  if (run === undefined) return null;
  const samples = await readAnsweredSamples(db, run.run_id);
  const settled = settledLimitOf(samples.map((x) => x.lim));
  return settled === null ? null : { runId: run.run_id, ...settled, pace: settledPaceOf(samples.map((x) => x.pace)), answered: samples };
}

export async function readPartner(db: SqlDb, jobId: number): Promise<ReportPartner> {
  const all = await readSampleExtremes(db, jobId);
  const settled = await readSettledLimit(db, jobId);
  const settledCeiling = settled === null ? null : await readRunCeiling(db, settled.runId);
  const answers = await countAnswers(db, jobId);
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
    announced: await readAnnounced(db, jobId),
  };
}

/** The job's latest run's announced limit (see {@link ReportAnnounced}); null when none, or its record is unreadable. */
async function readAnnounced(db: SqlDb, jobId: number): Promise<ReportAnnounced | null> {
  const found = await readAnnouncedRun(db, jobId);
  if (found === null) return null;
  let recorded: Partial<ReportAnnounced>;
  try {
    recorded = JSON.parse(found.announced_json) as Partial<ReportAnnounced>;
  } catch {
    return null;
  }
  const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    run_id: found.run_id,
    headers: typeof recorded.headers === 'string' ? recorded.headers : '',
    windows: Array.isArray(recorded.windows)
      ? recorded.windows.slice(0, 8).map((w: Partial<ReportAnnounced['windows'][number]> | null) => ({ name: typeof w?.name === 'string' ? w.name : null, limit: num(w?.limit), window_s: num(w?.window_s) }))
      : [],
    rate: num(recorded.rate),
    distrusted_after_ms: num(recorded.distrusted_after_ms),
    throttled_under: num(recorded.throttled_under) ?? 0,
    answers_under: num(recorded.answers_under) ?? 0,
    spent_until: typeof recorded.spent_until === 'string' ? recorded.spent_until : null,
    announced_seconds: found.announced,
    paced_seconds: found.paced,
  };
}
