/**
 * Where a run's adaptive limit settled, from its per-second samples (`run_samples`): the limit, the
 * pace, and whether the partner or our own side set them. Pure rules over samples the ledger reads;
 * the run's summary (`pipeline/monitor.ts`), the next run's warm start (`pipeline/run-job.ts`) and
 * `report` all take them from here, so the three never disagree (docs/adaptive.md).
 */
import { percentileOf } from '../percentile.js';

/** A run with a minute of samples is long enough to say where the limit settled. */
export const SETTLED_MIN_SAMPLES = 60;

/** Of one sample: the limit, the mean requests in flight, and the 429s and transient failures. */
export interface LimitSample {
  lim: number;
  inFlight: number;
  pushedBack: number;
}

/** A ledger is a file anyone can edit: only finite positive rates are paces. */
export const isPace = (pace: unknown): pace is number => typeof pace === 'number' && Number.isFinite(pace) && pace > 0;

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
export function settledSpan<T>(samples: readonly T[]): T[] {
  return samples.slice(-Math.min(samples.length, Math.max(10, Math.ceil(samples.length / 4))));
}
