/**
 * The report's JSON shape (`quote-batch report --format json`). Scripts rely on it: add fields,
 * never rename or remove them; bump {@link REPORT_VERSION} if a meaning changes. Every key is
 * always present (zeros and `null` rather than missing keys) so a script need not probe.
 */
import type { RowState, JobStatus, RunStatus } from '../ledger/index.js';
import type { AnnouncedSummary } from '../partner/announced-limit.js';

export { DONE_STATES, ERROR_STATES } from '../ledger/index.js';

/** 2: `row_errors` are groups by kind (row numbers, values and ids taken out), with sample rows; `timeline` and `partner` added. */
export const REPORT_VERSION = 2;

/** Attempt kinds, in the order the report lists them. */
export const ATTEMPT_KINDS = ['agent_validate', 'quote', 'lead'] as const;
export type ReportAttemptKind = (typeof ATTEMPT_KINDS)[number];

/** Attempt outcomes recorded by the partner client (`attempts.outcome`). */
export const ATTEMPT_OUTCOMES = ['ok', 'rejected', 'forbidden', 'retryable', 'in_doubt'] as const;

/**
 * Summary statistics of a set of values. Percentiles use the nearest-rank method: the p-th
 * percentile of n sorted values is the value at 1-based position ceil(p/100 × n), so every
 * figure is a value that occurred (and a plain SQL `ORDER BY … LIMIT 1 OFFSET k` reproduces it).
 * All figures but `count` are `null` when `count` is 0.
 */
export interface Stats {
  count: number;
  min: number | null;
  /** Nearest-rank 50th percentile (the lower middle value when `count` is even). */
  median: number | null;
  p90: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  /** Arithmetic mean, rounded to 2 decimals. */
  mean: number | null;
}

/**
 * A histogram bin. Bins are half-open (`from <= v < to`) but the last, which is closed. Bins are
 * equal-width, except that a last overflow bin reaches the maximum when outliers lie beyond 2 × p95.
 */
export interface HistogramBin {
  from: number;
  to: number;
  count: number;
}

export interface StatsWithHistogram extends Stats {
  histogram: HistogramBin[];
}

export interface ReportJob {
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
  /**
   * True when the job is marked `running` but the process of its run is gone (killed or crashed
   * without recording an end): no pid on this host, or no heartbeat for a minute from another. The
   * next `run` (or `resolve`) records that run `crashed` and its rows in flight `in_doubt`.
   */
  process_gone: boolean;
}

export interface ReportRows {
  /** Rows recorded in the ledger for the job (every state). */
  total: number;
  /** Rows per state; every state is listed, zero included. */
  by_state: Record<RowState, number>;
  /** `succeeded / total`, 4 decimals (as the `job_summary` view); null when there are no rows. */
  success_rate: number | null;
  /**
   * `succeeded / (succeeded + rejected + failed + in_doubt)`: the share of rows that reached (or
   * may have reached) the partner and got a quote; null when none did.
   */
  sent_success_rate: number | null;
  /**
   * Of the rows, those another job had dealt with, so that this job did not send them (uat,
   * production): `duplicate` rows whose lead it had sent (`sent_by_other_job`), `rejected` rows
   * whose very request the partner had rejected there (no attempt). A job of a file fixed in place
   * has mostly these: its success rate is low because its leads succeeded before.
   */
  by_other_jobs: {
    sent: number;
    rejected: number;
    /**
     * Of `sent`, rows whose lead the other job only may have sent: its row is `in_doubt` (or
     * `in_flight`) there. Settled there: resolved `pending`, that job's next run sends the lead.
     */
    in_doubt_there: number;
    /** The jobs those rows are in doubt in, ascending. */
    in_doubt_jobs: number[];
  };
  /**
   * Of the `succeeded` rows, those whose 2xx answer could not be read (empty, not JSON, cut at the
   * size limit: an `unreadable_answer` warning in `input_issues_json`): the partner took the
   * request, but no quote number or premium was recorded. Worth a look with the partner.
   */
  unreadable_answers: number;
}

export interface ReportKindAttempts {
  attempts: number;
  /** Distinct rows (quote/lead) or agent e-mails (agent_validate) the attempts were made for. */
  subjects: number;
  /** `attempts - subjects`: attempts beyond the first per row (or per agent). */
  retries: number;
  /** Attempts per outcome (ok, rejected, forbidden, retryable, in_doubt, and any other seen). */
  by_outcome: Record<string, number>;
}

export interface ReportAttempts {
  total: number;
  /** Sum of `retries` over the kinds. */
  retries: number;
  /** Rows with more than one quote/lead attempt. */
  rows_retried: number;
  by_kind: Record<ReportAttemptKind, ReportKindAttempts>;
}

/**
 * Rows in an error state of one kind: the same state, error code and message once row numbers,
 * values and ids are taken out (`src/error-groups.ts`), as the run summary and `check` group them.
 */
export interface ReportRowError {
  state: RowState;
  error_code: string | null;
  /** The group in one line, `state · code · subject (columns …)`; it names no row. */
  kind: string;
  /** What went wrong, without row numbers, values or ids (for a mapping error: the request path and message). */
  subject: string;
  /** Source columns (or NDJSON fields) the group's messages name, at most 8. */
  columns: string[];
  /** State codes the group's messages name, shown as `XX` in `subject` (`State XX is not supported.`): at most 8, then `…` when there were more. */
  states: string[];
  /** How many rows are of this kind. */
  rows: number;
  /** The first rows of the kind (at most 3), in row order. */
  sample_rows: number[];
  /** The message recorded for the first sample row, as it is in the ledger. */
  error_message: string | null;
}

/** Failed attempts (outcome not `ok`) sharing a kind, HTTP status, error code and outcome. */
export interface ReportAttemptError {
  kind: string;
  http_status: number | null;
  error_code: string | null;
  outcome: string;
  attempts: number;
}

export interface ReportInvalidAgent {
  email: string | null;
  /** The partner's message from the `agents` table, when it is known. */
  message: string | null;
  /** Rows of the job left `agent_invalid` by this agent. */
  blocked_rows: number;
}

export interface ReportTiming {
  /** Job wall-clock time: `finished_at` (else the last row update) minus `created_at`, 3 decimals (as `job_summary`). */
  elapsed_seconds: number | null;
  /** Time any run of the job was working: its runs' spans from `started_at` to `finished_at` (else the last heartbeat) together, the workers of a job running at once counted once; 3 decimals. */
  run_seconds: number;
  /** Rows in a state other than `pending`/`in_flight`. */
  rows_completed: number;
  /** `rows_completed / run_seconds`, 2 decimals; null when no run time was recorded. */
  rows_per_second: number | null;
}

/** Rows completed over time, from `rows.updated_at` of rows no longer pending/in flight. */
export interface ReportCompletions {
  /** Start of the first bucket (the earliest completion), ISO UTC; null when nothing completed. */
  start: string | null;
  bucket_seconds: number;
  /** Rows completed in each consecutive bucket. */
  buckets: number[];
}

export interface ReportRun {
  id: number;
  started_at: string;
  finished_at: string | null;
  status: RunStatus;
  tool_version: string;
  /** `finished_at` (else its last sign of life: its latest sample or heartbeat) minus `started_at`, 3 decimals. */
  seconds: number | null;
  /** The run's `--limit` (it stopped after that many rows; `completed` then means it reached it), else null. */
  limit: number | null;
  /**
   * Why the run stopped or halted, as its summary said (`stopped after --max-runtime 20s`, `the partner
   * did not recover within --max-outage …`); null when it ended normally, and for runs recorded before
   * quote-batch kept it.
   */
  end_reason: string | null;
  /** True for a run marked `running` whose process is gone (see {@link ReportJob.process_gone}). */
  process_gone: boolean;
  /** For such a run, its last sign of life (its latest sample or heartbeat); else null. */
  last_seen_at: string | null;
}

/**
 * One bucket of a run on the report's time axis. Completions come from `rows.updated_at`; the
 * rest from `run_samples` (zeros and nulls when the bucket has no sample: a ledger written before
 * quote-batch kept samples, or a pause).
 */
export interface ReportTimelineBucket {
  /** Rows that reached a state other than `pending`/`in_flight` in the bucket. */
  rows_completed: number;
  /** Samples (about one per second) whose middle falls in the bucket. */
  samples: number;
  /** Mean concurrency limit of the samples (requests allowed in flight), 2 decimals. */
  concurrency_limit: number | null;
  /** Mean requests in flight of the samples, 2 decimals. */
  in_flight: number | null;
  /** Partner answers (or failed requests) in the samples. */
  attempts: number;
  /** Of those, 429s. */
  throttled: number;
  /** Of those, other transient failures. */
  errors: number;
  /** Rows done in the samples ÷ the seconds the samples cover, 2 decimals. */
  rows_per_second: number | null;
  /**
   * Mean pacing rate (requests/s) of the samples that were paced, 2 decimals: how fast the limiter
   * let requests leave once the partner had answered 429s. Null when none was (no 429s yet, a
   * partner without a rate cap, `--no-adaptive`, a ledger written before quote-batch kept the pace).
   */
  pace_rate: number | null;
}

/** One run on the time axis: from its start to its end, in buckets of `bucket_seconds`. */
export interface ReportTimelineSegment {
  run_id: number;
  status: RunStatus;
  /** The run's start (ISO UTC); bucket i covers [start + i·w, start + (i + 1)·w). */
  start: string;
  /**
   * The run's end: `finished_at`, for a crashed run its last heartbeat (its `finished_at` is when the
   * next run found it dead), for a running one its last heartbeat; later when a row or sample says so.
   */
  end: string;
  buckets: ReportTimelineBucket[];
}

/**
 * The job over time, run by run, so that a pause between runs (a crash, a resume the next night)
 * takes no room on a chart. Buckets have one width for every run (at most about 60 in all).
 */
export interface ReportTimeline {
  bucket_seconds: number;
  segments: ReportTimelineSegment[];
  /**
   * Rows completed outside every run (settled by `resolve`, or later than 15 s after the end of
   * the last run started before), left out of the buckets. A completion belongs to the last run
   * started before it, up to 15 s after that run's end, unless `resolve` made it.
   */
  rows_outside_runs: number;
}

/** What the partner allowed: its rate limit as the adaptive concurrency found it, and its 429s. */
export interface ReportPartner {
  /** `run_samples` of the job's runs (0 for a ledger written before samples were kept). */
  samples: number;
  /**
   * The limit the run settled at: the median (nearest-rank) `concurrency_limit` of the last quarter
   * of the samples (at least the last 10) of `settled_run_id`; null without samples.
   */
  settled_limit: number | null;
  /** The run `settled_limit` comes from: the latest run with at least 60 samples, else the one with the most. */
  settled_run_id: number | null;
  /** Samples `settled_limit` is the median of. */
  settled_samples: number;
  /**
   * The pace (requests/s) `settled_run_id` settled at: the median (nearest-rank) `pace_rate` of the
   * same samples, when it was pacing in at least half of them (after the partner's 429s: about its
   * rate limit); null otherwise, and for samples of a quote-batch before schema version 4.
   */
  settled_pace: number | null;
  /**
   * The `--concurrency` of `settled_run_id`: the most its limit could be. A limit settled there is
   * the user's ceiling, not one the partner showed. Null when unknown (no samples, an older run).
   */
  settled_ceiling: number | null;
  /**
   * True when `settled_limit`, below the ceiling, is where our side left the window, not a limit
   * the partner set: `settled_run_id` kept fewer than half of it in flight in most of its samples
   * and met no 429 or transient failure (`--rate` held the sends back, or rows came slower than the
   * partner answered), so the window never had to shrink.
   */
  settled_held_by_run: boolean;
  /** Highest `concurrency_limit` and `in_flight` of any sample. */
  limit_max: number | null;
  in_flight_max: number | null;
  /** Attempts of the job (every kind), from `attempts`. */
  attempts: number;
  /** Of those, answered HTTP 429. */
  throttled: number;
  /** `throttled / attempts`, 4 decimals; null without attempts. */
  throttled_share: number | null;
  /** What the partner announced of its limit in its headers (`RateLimit-*`, `X-RateLimit-*`) in the job's latest run that read it, and how that run used it; null when no run read one. */
  announced: ReportAnnounced | null;
}

/** The limit the partner announced in one run (`runs.announced_json`, docs/ledger.md), and how the run used it. */
export interface ReportAnnounced extends Omit<AnnouncedSummary, 'style'> {
  run_id: number;
  /** Seconds of the run (up to its last answer) in which an announced rate was in force, and of those, paced at it. */
  announced_seconds: number;
  paced_seconds: number;
}

/** Everything `quote-batch report` says about one job. */
export interface Report {
  report_version: typeof REPORT_VERSION;
  generated_at: string;
  job: ReportJob;
  rows: ReportRows;
  attempts: ReportAttempts;
  /** Row errors grouped by kind, most frequent first (at most {@link ROW_ERROR_LIMIT} groups). */
  row_errors: ReportRowError[];
  /** How many kinds there were in all (more than `row_errors.length` when cut). */
  row_error_groups: number;
  /** Failed attempts grouped, most frequent first (at most {@link ROW_ERROR_LIMIT} groups). */
  attempt_errors: ReportAttemptError[];
  attempt_error_groups: number;
  /** Agents that blocked rows of the job, most rows first. */
  invalid_agents: ReportInvalidAgent[];
  /** `total_premium` of succeeded rows. */
  premium: StatsWithHistogram;
  /** `attempts.duration_ms` per attempt kind. */
  latency_ms: Record<ReportAttemptKind, StatsWithHistogram>;
  timing: ReportTiming;
  completions: ReportCompletions;
  runs: ReportRun[];
  /** The runs over time: completions, the concurrency limit, requests in flight, throughput and 429s. */
  timeline: ReportTimeline;
  partner: ReportPartner;
}

export const ROW_ERROR_LIMIT = 100;
