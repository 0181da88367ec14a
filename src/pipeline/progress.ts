/**
 * Progress while a job runs: a bar on a terminal, a plain line every few seconds otherwise
 * (cron and CI logs), or a JSON log line with `--json-log`.
 */
import cliProgress from 'cli-progress';
import type { Io } from '../io.js';
import type { Logger } from '../log.js';
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
    const bar = new cliProgress.SingleBar(
      {
        stream: io.stderrTTYStream,
        format: 'job {job} |{bar}| {percentage}% | {done} rows | {rate} rows/s | ETA {eta_formatted} | {states}',
        hideCursor: true,
        clearOnComplete: false,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    let started = false;
    return {
      intervalMs: 250,
      update: (s) => {
        const payload = { job: s.jobId, done: s.rowsDoneThisRun, rate: rate(s).toFixed(0), states: statesLine(s) };
        // The bar follows bytes read (the row total is unknown until the file has been read once).
        const total = Math.max(1, s.totalBytes);
        if (!started) {
          bar.start(total, s.bytesRead, payload);
          started = true;
        } else {
          bar.update(s.bytesRead, payload);
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
      const pct = s.totalBytes > 0 ? Math.min(100, (100 * s.bytesRead) / s.totalBytes) : 0;
      logger.info(`progress: job ${s.jobId} ${pct.toFixed(1)}% read, ${s.rowsDoneThisRun} rows done this run, ${rate(s).toFixed(1)} rows/s, ${statesLine(s)}`, {
        event: 'progress',
        job: s.jobId,
        percent_read: Number(pct.toFixed(1)),
        rows_done: s.rowsDoneThisRun,
        rows_per_second: Number(rate(s).toFixed(1)),
        ...s.counts,
      });
    },
    stop: () => {},
  };
}

function rate(s: ProgressSnapshot): number {
  return s.elapsedMs > 0 ? (1000 * s.rowsDoneThisRun) / s.elapsedMs : 0;
}

function statesLine(s: ProgressSnapshot): string {
  return Object.entries(s.counts)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${state} ${n}`)
    .join(', ');
}
