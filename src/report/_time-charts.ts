/**
 * Charts over time, on one axis made of the job's runs ({@link ReportTimeline}): each run takes
 * room for its own time only, and the pause before the next run is a narrow shaded band labelled
 * with its length. Ticks fall on round clock times (UTC).
 */
import { READABLE_SECONDS, timelinePaced } from './_buckets.js';
import { formatDuration, formatLimit } from './_text.js';
import {
  emptyChart, escapeHtml, formatCompact, frame, fx, M, niceScale, PLOT_H, W, xAxis, yAxis, type Scale,
} from './_svg.js';
import type { ReportTimeline, ReportTimelineBucket } from './types.js';

/** Width of the band between two runs. */
const GAP = 18;
/** Least room between two tick labels (an `HH:MM:SS` label is about 50 px). */
const LABEL_SPACING = 64;

export const SERIES_COLORS = {
  rows: '#4c78a8',
  cumulative: '#f58518',
  limit: '#e45756',
  inFlight: '#4c78a8',
  throughput: '#54a24b',
  throttled: '#f2a09f',
  pace: '#7a4fa3',
} as const;

/** Where each run and bucket is drawn. */
class TimeAxis {
  readonly bucketMs: number;
  readonly bw: number;
  readonly #left: number[] = [];
  readonly #starts: number[];

  constructor(readonly timeline: ReportTimeline, readonly right: number) {
    this.bucketMs = timeline.bucket_seconds * 1000;
    this.#starts = timeline.segments.map((s) => Date.parse(s.start));
    const buckets = timeline.segments.reduce((n, s) => n + s.buckets.length, 0);
    const plotW = W - M.left - right;
    this.bw = (plotW - GAP * (timeline.segments.length - 1)) / Math.max(1, buckets);
    let x = M.left;
    for (const s of timeline.segments) {
      this.#left.push(x);
      x += s.buckets.length * this.bw + GAP;
    }
  }

  /** x of time `ms` within run segment `i`. */
  x(i: number, ms: number): number {
    return (this.#left[i] as number) + ((ms - (this.#starts[i] as number)) / this.bucketMs) * this.bw;
  }

  /** x of the left edge of bucket `j` of segment `i`. */
  bucketX(i: number, j: number): number {
    return (this.#left[i] as number) + j * this.bw;
  }

  /** Tick labels on round clock times, the bands between runs, run names, and the axis title. */
  render(): string {
    const segments = this.timeline.segments;
    const minSeconds = (LABEL_SPACING * this.timeline.bucket_seconds) / this.bw;
    // Whole seconds at least: the labels read HH:MM:SS.
    const tick = READABLE_SECONDS.find((t) => t >= Math.max(1, minSeconds)) ?? Math.ceil(minSeconds / 86400) * 86400;
    const baseline = M.top + PLOT_H;
    let out = '';
    let lastLabel = Number.NEGATIVE_INFINITY;
    segments.forEach((segment, i) => {
      const start = this.#starts[i] as number;
      const end = start + segment.buckets.length * this.bucketMs;
      for (let t = Math.ceil(start / (tick * 1000)) * tick * 1000; t <= end; t += tick * 1000) {
        const x = this.x(i, t);
        if (x - lastLabel < LABEL_SPACING) continue;
        lastLabel = x;
        out += `<line class="tick" x1="${fx(x)}" x2="${fx(x)}" y1="${baseline}" y2="${baseline + 4}"/>`
          + `<text class="axis x-tick" x="${fx(x)}" y="${baseline + 16}" text-anchor="middle">${escapeHtml(clock(t, tick))}</text>`;
      }
      if (segments.length > 1) {
        out += `<text class="run-label" x="${fx(this.bucketX(i, 0) + 2)}" y="${M.top - 5}">${escapeHtml(`run ${segment.run_id}`)}</text>`;
      }
      const next = segments[i + 1];
      if (next !== undefined) {
        const x = this.bucketX(i, segment.buckets.length);
        const pause = Math.max(0, Date.parse(next.start) - Date.parse(segment.end));
        out += `<rect class="gap" x="${fx(x)}" y="${M.top}" width="${GAP}" height="${PLOT_H}"><title>${escapeHtml(`no run for ${formatDuration(pause)}`)}</title></rect>`
          + `<text class="gap-label" transform="translate(${fx(x + GAP / 2 + 4)},${fx(M.top + PLOT_H / 2)}) rotate(-90)" text-anchor="middle">${escapeHtml(`pause ${formatDuration(pause)}`)}</text>`;
      }
    });
    return out + xAxis(`time (UTC) · ${dates(segments.map((s) => s.start).concat(segments.map((s) => s.end)))}`, this.right);
  }
}

/** `HH:MM:SS` for ticks under a minute apart, else `HH:MM`; `MM-DD` for ticks a day apart. */
function clock(ms: number, tickSeconds: number): string {
  const text = new Date(ms).toISOString();
  if (tickSeconds >= 86400) return text.slice(5, 10);
  return tickSeconds < 60 ? text.slice(11, 19) : text.slice(11, 16);
}

/** The day, or the first and last day, of the axis. */
function dates(isoTimes: readonly string[]): string {
  const days = [...new Set(isoTimes.map((t) => t.slice(0, 10)))].sort();
  return days.length <= 1 ? (days[0] ?? '') : `${days[0]} – ${days[days.length - 1]}`;
}

/** A line through the bucket centres of one series; it breaks between runs and where a bucket has no value. */
function linePath(axis: TimeAxis, scale: Scale, value: (b: ReportTimelineBucket) => number | null, color: string, extra = ''): string {
  // Runs of consecutive values (a null, or a new run segment, breaks the line).
  const lines: string[][] = [];
  axis.timeline.segments.forEach((segment, i) => {
    let current: string[] | null = null;
    segment.buckets.forEach((bucket, j) => {
      const v = value(bucket);
      if (v === null) {
        current = null;
        return;
      }
      if (current === null) lines.push((current = []));
      current.push(`${fx(axis.bucketX(i, j) + axis.bw / 2)},${fx(M.top + PLOT_H * (1 - v / scale.top))}`);
    });
  });
  if (lines.length === 0) return '';
  const d = lines.filter((points) => points.length > 1).map((points) => `M${points.join(' L')}`).join(' ');
  // A lone value (a run shorter than a sample, a gap on both sides) draws nothing as a line: a dot.
  const dots = lines.filter((points) => points.length === 1).map((points) => {
    const [x, y] = (points[0] as string).split(',');
    return `<circle class="mark ${extra}" cx="${x}" cy="${y}" r="3.5" fill="${color}"/>`;
  }).join('');
  const path = d === '' ? '' : `<path class="mark ${extra}" d="${d}" fill="none" stroke="${color}" stroke-width="2.2" stroke-linejoin="round" stroke-linecap="round"/>`;
  return path + dots;
}

function bars(axis: TimeAxis, scale: Scale, value: (b: ReportTimelineBucket) => number, color: string, label: (b: ReportTimelineBucket, v: number) => string): string {
  let out = '';
  axis.timeline.segments.forEach((segment, i) => {
    segment.buckets.forEach((bucket, j) => {
      const v = value(bucket);
      if (!(v > 0)) return;
      const h = (PLOT_H * v) / scale.top;
      out += `<rect class="mark" x="${fx(axis.bucketX(i, j) + 0.5)}" y="${fx(M.top + PLOT_H - h)}" width="${fx(Math.max(1, axis.bw - 1))}" height="${fx(Math.max(1, h))}" fill="${color}">`
        + `<title>${escapeHtml(label(bucket, v))}</title></rect>`;
    });
  });
  return out;
}

const hasSamples = (timeline: ReportTimeline): boolean => timeline.segments.some((s) => s.buckets.some((b) => b.samples > 0));
const NO_SAMPLES = 'no samples: this ledger predates the per-second samples of a run';

/** Rows completed per bucket (bars, left scale) and in total so far (line, its own right scale). */
export function renderCompletionsChart(timeline: ReportTimeline): string {
  const chart = 'completions';
  const title = 'Rows completed over time';
  const all = timeline.segments.flatMap((s) => s.buckets);
  const total = all.reduce((n, b) => n + b.rows_completed, 0);
  if (total === 0) return emptyChart(chart, title, 'no rows completed yet');
  const axis = new TimeAxis(timeline, M.rightScale);
  const perBucket = niceScale(Math.max(...all.map((b) => b.rows_completed)), { integer: true });
  const cumulativeScale = niceScale(total, { integer: true });
  const per = formatDuration(timeline.bucket_seconds * 1000);
  let body = yAxis(perBucket, 'left', `rows per ${per}`) + yAxis(cumulativeScale, 'right', 'rows completed, cumulative');
  body += bars(axis, perBucket, (b) => b.rows_completed, SERIES_COLORS.rows, (b) => `${b.rows_completed.toLocaleString('en-US')} rows`);
  let cumulative = 0;
  let d = '';
  timeline.segments.forEach((segment, i) => {
    const y = (): string => fx(M.top + PLOT_H * (1 - cumulative / cumulativeScale.top));
    d += `${d === '' ? 'M' : 'L'}${fx(axis.bucketX(i, 0))},${y()} `;
    segment.buckets.forEach((bucket, j) => {
      cumulative += bucket.rows_completed;
      d += `L${fx(axis.bucketX(i, j + 1))},${y()} `;
    });
  });
  body += `<path class="mark cumulative" d="${d.trim()}" fill="none" stroke="${SERIES_COLORS.cumulative}" stroke-width="2"/>`;
  body += axis.render();
  return frame(chart, title, body);
}

/**
 * The concurrency limit and the requests in flight (mean per bucket), and the limit the run settled
 * at: labelled as the `--concurrency` ceiling when it settled there (`atCeiling`), as the report's text says.
 */
export function renderConcurrencyChart(timeline: ReportTimeline, settled: number | null, atCeiling = false): string {
  const chart = 'concurrency';
  const title = 'Concurrency limit and requests in flight over time';
  if (!hasSamples(timeline)) return emptyChart(chart, title, NO_SAMPLES);
  const all = timeline.segments.flatMap((s) => s.buckets);
  const scale = niceScale(Math.max(1, ...all.map((b) => Math.max(b.concurrency_limit ?? 0, b.in_flight ?? 0))), { integer: true });
  const axis = new TimeAxis(timeline, M.right);
  let body = yAxis(scale, 'left', 'requests');
  body += linePath(axis, scale, (b) => b.in_flight, SERIES_COLORS.inFlight, 'in-flight');
  body += linePath(axis, scale, (b) => b.concurrency_limit, SERIES_COLORS.limit, 'limit');
  if (settled !== null) {
    const y = fx(M.top + PLOT_H * (1 - settled / scale.top));
    body += `<line class="settled" x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}"/>`
      + `<text class="settled-label" x="${W - M.right - 4}" y="${fx(Number(y) - 4)}" text-anchor="end">${escapeHtml(atCeiling ? `the --concurrency ceiling, ${formatLimit(settled)}` : `settled at ${formatLimit(settled)}`)}</text>`;
  }
  body += axis.render();
  return frame(chart, title, body);
}

/**
 * Rows per second (line, left scale) and the share of answers that were 429s (bars, right scale, %).
 * When the run was paced, the pace too (dashed, requests per second on the left scale): where the
 * limiter held the partner's rate limit, and when that limit moved.
 */
export function renderThroughputChart(timeline: ReportTimeline): string {
  const chart = 'throughput';
  const title = 'Throughput and 429 answers over time';
  if (!hasSamples(timeline)) return emptyChart(chart, title, NO_SAMPLES);
  const all = timeline.segments.flatMap((s) => s.buckets);
  const paced = timelinePaced(timeline);
  const share = (b: ReportTimelineBucket): number => (b.attempts === 0 ? 0 : (100 * b.throttled) / b.attempts);
  const rate = niceScale(Math.max(...all.map((b) => Math.max(b.rows_per_second ?? 0, b.pace_rate ?? 0))));
  const shareScale = niceScale(Math.max(1, ...all.map(share)), { integer: true });
  const axis = new TimeAxis(timeline, M.rightScale);
  let body = yAxis(rate, 'left', paced ? 'rows / s · pace, requests / s' : 'rows / s')
    + yAxis(shareScale, 'right', '429s, % of answers', (v) => `${formatCompact(v)}%`);
  body += bars(axis, shareScale, share, SERIES_COLORS.throttled, (b, v) => `${b.throttled} of ${b.attempts} answers were 429 (${v.toFixed(1)}%)`);
  body += linePath(axis, rate, (b) => b.rows_per_second, SERIES_COLORS.throughput, 'rows-per-second');
  if (paced) body += linePath(axis, rate, (b) => b.pace_rate, SERIES_COLORS.pace, 'pace');
  body += axis.render();
  return frame(chart, title, body);
}
