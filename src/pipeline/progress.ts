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
        format: 'job {job} |{bar}| {value}/{total} rows | {rate} rows/s | ETA {eta_formatted} | {states}',
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
        const payload = { job: s.jobId, rate: rate(s).toFixed(0), states: statesLine(s) };
        const done = s.rowsSkipped + s.rowsDoneThisRun;
        const total = Math.max(done, estimateTotalRows(s));
        if (!started) {
          bar.start(total, done, payload);
          started = true;
        } else {
          bar.setTotal(total);
          bar.update(done, payload);
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
      const done = s.rowsSkipped + s.rowsDoneThisRun;
      const total = Math.max(done, estimateTotalRows(s));
      const r = rate(s);
      const eta = r > 0 && total > done ? ` ETA ${Math.ceil((total - done) / r)} s,` : '';
      logger.info(`progress: job ${s.jobId} ${done}/${total} rows, ${r.toFixed(1)} rows/s,${eta} ${statesLine(s)}`, {
        event: 'progress',
        job: s.jobId,
        rows_done: done,
        rows_total_estimate: total,
        rows_per_second: Number(r.toFixed(1)),
        ...s.counts,
      });
    },
    stop: () => {},
  };
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

function rate(s: ProgressSnapshot): number {
  return s.elapsedMs > 0 ? (1000 * s.rowsDoneThisRun) / s.elapsedMs : 0;
}

function statesLine(s: ProgressSnapshot): string {
  return Object.entries(s.counts)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${state} ${n}`)
    .join(', ');
}
