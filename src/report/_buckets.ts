/** Time buckets shared by the report's over-time figures, and the small helpers (rounding, labels, whether a run was paced) its modules share. */
import { formatTimestamp } from './_text.js';
import { describeWindow } from '../partner/announced-limit.js';
import { formatDuration } from '../duration.js';
import type { Report, ReportAnnounced, ReportPartner, ReportRun, ReportTimeline } from './types.js';

/** Most buckets an over-time figure has: a bar every 9 px or so of a chart. */
export const MAX_TIME_BUCKETS = 60;

/** Durations a person reads easily, in seconds: the widths of time buckets, and (from 1 s) the spacing of clock ticks. */
export const READABLE_SECONDS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

/** The narrowest readable width (at least `min` seconds) that cuts `seconds` into fewer than {@link MAX_TIME_BUCKETS} buckets. */
export function bucketSecondsFor(seconds: number, min = 0): number {
  return READABLE_SECONDS.find((w) => w >= min && seconds / w < MAX_TIME_BUCKETS)
    ?? Math.ceil(seconds / MAX_TIME_BUCKETS / 86400) * 86400;
}

export function round(value: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.round(value * f) / f;
}


/**
 * What the partner announced of its limit and what the run made of it, in a sentence (without a
 * final stop): `40 requests per second (X-RateLimit-Limit-Second (Kong)) in run 3: it paced the sends
 * in 48 of 50 s`.
 */
export function announcedSentence(a: ReportAnnounced): string {
  const windows = a.windows.length === 0 ? 'a limit' : a.windows.map((w) => describeWindow({ limit: w.limit, windowS: w.window_s, remaining: null, longestResetS: 0 })).join(', ');
  const what = `${windows}${a.headers === '' ? '' : ` (${a.headers})`} in run ${a.run_id}`;
  if (a.distrusted_after_ms !== null) {
    return `${what}, but it was not kept to: ${a.throttled_under} of the ${a.answers_under} requests sent within it were answered 429, so the run ignored it after ${formatDuration(a.distrusted_after_ms)} and learned the pace from the 429s`;
  }
  if (a.spent_until !== null) return `${what}: its quota was spent, until ${a.spent_until}`;
  if (a.rate === null) return `${what}: a quota, not a rate; the run kept within what was left of it`;
  if (a.paced_seconds > 0) return `${what}: it paced the sends in ${a.paced_seconds} of the ${a.announced_seconds} s it was in force`;
  return `${what}: the run kept within it without being held back by it`;
}

/** True when some run of the timeline was paced: the partner answered 429s and the limiter paced its sends. */
export function timelinePaced(timeline: ReportTimeline): boolean {
  return timeline.segments.some((s) => s.buckets.some((b) => b.pace_rate !== null));
}

/** A run's status as people read it: `completed (--limit 20)` for a run that stopped at its `--limit`. */
export function runStatusLabel(run: ReportRun): string {
  if (run.process_gone) return 'crashed (not yet recorded)';
  return run.limit === null || run.status !== 'completed' ? run.status : `completed (--limit ${run.limit})`;
}

/** True when the job's newest run stopped at its `--limit`: it completed, and no run read the input to its end. */
function stoppedAtLimit(report: Report): ReportRun | undefined {
  const last = report.runs.at(-1);
  return last !== undefined && last.limit !== null && last.status === 'completed' && report.job.total_rows === null ? last : undefined;
}

/**
 * The job's status as people read it: a job whose newest run stopped at its `--limit` is `interrupted`
 * (rows of the input were not read), and says so.
 */
export function jobStatusLabel(report: Report): string {
  if (report.job.process_gone) return crashedJobLabel(report.runs);
  const last = stoppedAtLimit(report);
  const status = report.job.status;
  return status === 'interrupted' && last !== undefined ? `${status} (run ${last.id} stopped at --limit ${last.limit})` : status;
}

/** A job still marked `running` whose run's process is gone: `crashed (run 3's process is gone)`. */
function crashedJobLabel(runs: readonly ReportRun[]): string {
  const gone = runs.filter((r) => r.process_gone).map((r) => r.id);
  return `crashed (${gone.length === 1 ? `run ${gone[0]}'s process is` : `the processes of runs ${gone.join(', ')} are`} gone)`;
}

/**
 * What a report says under a job that is not completed about why its last run stopped: a run whose
 * process is gone, when it was last seen alive and what the next run does about it; else the reason
 * the last run recorded (a halt, --max-runtime, a signal). Undefined when there is nothing to say.
 */
export function stoppedNote(report: Report): string | undefined {
  if (report.job.process_gone) {
    const seen = report.runs.filter((r) => r.process_gone).at(-1)?.last_seen_at ?? null;
    const inFlight = report.rows.by_state.in_flight;
    const rows = inFlight === 1 ? 'its 1 row in flight' : `its ${inFlight} rows in flight`;
    return `${seen === null ? 'the run stopped without recording it' : `last sign of life ${formatTimestamp(seen)}`}; `
      + `the next run (or resolve) records it crashed and ${rows} in doubt`;
  }
  const last = report.runs.at(-1);
  if (report.job.status === 'completed' || last === undefined || last.end_reason === null) return undefined;
  return `run ${last.id} ${last.status}: ${last.end_reason}`;
}

/** True when the limit settled at its run's `--concurrency`: the user's ceiling, not a limit the partner showed. */
export function settledAtCeiling(partner: ReportPartner): boolean {
  return partner.settled_limit !== null && partner.settled_ceiling !== null && partner.settled_limit >= partner.settled_ceiling;
}
