/**
 * Progress while a job runs: a bar on a terminal, a plain line every few seconds otherwise
 * (cron and CI logs), or a JSON log line with `--json-log`. The line is built by one pure
 * function ({@link formatProgressLine}) that fits it to the terminal's width.
 */
import cliProgress from 'cli-progress';
import type { Io } from '../io.js';
import { ROW_STATES } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { formatDuration } from '../duration.js';
import type { ProgressSnapshot } from './run-job.js';

export interface ProgressReporter {
  update(snapshot: ProgressSnapshot): void;
  stop(): void;
  /** How often the pipeline should call `update`. */
  readonly intervalMs: number;
}

export function createProgressReporter(io: Io, logger: Logger, mode: 'bar' | 'lines' | 'json' | 'none'): ProgressReporter {
  if (mode === 'none') return { update: () => {}, stop: () => {}, intervalMs: 60_000 };
  if (mode === 'bar' && io.stderrTTYStream !== undefined) {
    const bar = new cliProgress.SingleBar({
      stream: io.stderrTTYStream,
      // cli-progress redraws the line; what it says, and how it fits the terminal, is ours.
      // One column short of the width: writing the last column wraps some terminals.
      format: (_options, params, payload: { view?: ProgressView }) =>
        payload.view === undefined ? '' : formatProgressLine(payload.view, params.maxWidth - 1),
      hideCursor: true,
      clearOnComplete: false,
    });
    let started = false;
    return {
      intervalMs: 250,
      update: (s) => {
        const view = progressView(s);
        if (!started) {
          bar.start(view.total, view.done, { view });
          started = true;
        } else {
          bar.setTotal(view.total);
          bar.update(view.done, { view });
        }
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  return {
    intervalMs: 5000,
    update: (s) => {
      const view = progressView(s);
      logger.info(`progress: ${formatProgressLine(view, Number.POSITIVE_INFINITY, { bar: false })}`, {
        event: 'progress',
        job: s.jobId,
        rows_done: view.done,
        rows_total_estimate: view.total,
        rows_total_known: !view.estimated,
        rows_per_second: Number(view.rowsPerSecond.toFixed(1)),
        ...s.counts,
      });
    },
    stop: () => {},
  };
}

/** What the progress line shows, computed from a snapshot of the run. */
export interface ProgressView {
  jobId: number;
  /** Rows done: skipped (finished by an earlier run) and handled by this run. */
  done: number;
  total: number;
  /** True until the file has been read to the end: the total is estimated from the bytes read. */
  estimated: boolean;
  rowsPerSecond: number;
  elapsedMs: number;
  counts: Readonly<Record<string, number>>;
}

export function progressView(s: ProgressSnapshot): ProgressView {
  const done = s.rowsSkipped + s.rowsDoneThisRun;
  // Under --limit the run ends at the limit: the total (and the ETA) is the limit, unless the file
  // holds fewer rows. It is sure once the rows up to the limit have been read.
  const fileTotal = estimateTotalRows(s);
  const limit = s.limit ?? null;
  const total = limit === null ? fileTotal : fileTotal === 0 ? limit : Math.min(limit, fileTotal);
  return {
    jobId: s.jobId,
    done,
    total: Math.max(done, total),
    estimated: s.totalRows === null && (limit === null || s.rowsRead < limit),
    rowsPerSecond: s.elapsedMs > 0 ? (1000 * s.rowsDoneThisRun) / s.elapsedMs : 0,
    elapsedMs: s.elapsedMs,
    counts: s.counts,
  };
}

/**
 * The progress line in at most `width` columns (code points):
 * `job 3 ▕██████░░░░▏ 1,200/~5,000 rows 24% · 80 rows/s · ETA ~48s · 15s elapsed · succeeded 1,150, invalid 50`.
 * A total still estimated (and the ETA that follows from it) is marked `~`. What does not fit is
 * left out, least useful first: the row states one by one, the elapsed time, the bar, the ETA,
 * the rate; the job and the row count are always there (cut with `…` only below about 30 columns).
 */
export function formatProgressLine(view: ProgressView, width: number, options: { bar?: boolean } = {}): string {
  const n = (value: number): string => Math.round(value).toLocaleString('en-US');
  const mark = view.estimated ? '~' : '';
  const percent = view.total > 0 ? ` ${Math.floor((100 * view.done) / view.total)}%` : '';
  const head = `job ${view.jobId}`;
  const count = `${n(view.done)}/${view.total > 0 ? `${mark}${n(view.total)}` : '?'} rows${percent}`;
  const rate = view.rowsPerSecond > 0 ? `${n(view.rowsPerSecond)} rows/s` : undefined;
  const left = view.total - view.done;
  const eta = view.rowsPerSecond > 0 && left > 0 ? `ETA ${mark}${formatDuration((1000 * left) / view.rowsPerSecond)}` : undefined;
  const elapsed = `${formatDuration(view.elapsedMs)} elapsed`;
  const states = ROW_STATES.filter((s) => (view.counts[s] ?? 0) > 0).map((s) => `${s} ${n(view.counts[s] ?? 0)}`);

  const length = (text: string): number => Array.from(text).length;
  const sep = ' · ';
  // Most useful first; each is kept only if it still fits: the rate, the ETA, room for a bar
  // (at least 10 cells, its ends and a space), the elapsed time, then the row states one by one.
  const kept: string[] = [];
  let used = length(head) + 1 + length(count);
  const keep = (part: string | undefined, room = 0): void => {
    if (part !== undefined && used + sep.length + length(part) + room <= width) {
      kept.push(part);
      used += sep.length + length(part);
    }
  };
  keep(rate);
  keep(eta);
  const barRoom = options.bar !== false && used + 13 <= width ? 13 : 0;
  keep(elapsed, barRoom);
  const shown: string[] = [];
  for (const state of states) {
    const more = (shown.length === 0 ? sep.length : 2) + length(state);
    if (used + more + barRoom > width) break;
    shown.push(state);
    used += more;
  }
  if (shown.length > 0) kept.push(shown.join(', '));
  let bar = '';
  if (barRoom > 0) {
    const cells = Math.min(30, width - used - 3);
    const filled = view.total > 0 ? Math.min(cells, Math.round((cells * view.done) / view.total)) : 0;
    bar = ` ▕${'█'.repeat(filled)}${'░'.repeat(cells - filled)}▏`;
  }
  const line = `${head}${bar} ${count}${kept.map((part) => `${sep}${part}`).join('')}`;
  const chars = Array.from(line);
  return chars.length <= width ? line : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}

/**
 * The row total: known once a run has read the whole file; before that, estimated from the
 * bytes read so far (rows per byte × file size).
 */
export function estimateTotalRows(s: ProgressSnapshot): number {
  if (s.totalRows !== null) return s.totalRows;
  // The last record's offset tracks parsing; bytesRead runs a chunk ahead. Offsets are of the
  // decoded stream, so for a compressed file (offset past the file size) use bytesRead.
  const position = s.lastOffset > 0 && s.lastOffset <= s.totalBytes ? s.lastOffset : s.bytesRead;
  if (position <= 0 || s.rowsRead <= 0) return 0;
  return Math.round((s.rowsRead * s.totalBytes) / position);
}
