/**
 * The nearest-rank percentile, the one definition every figure uses (the report's statistics, the
 * limit a run settled at): a value that occurred, which a plain SQL `ORDER BY … LIMIT 1 OFFSET k`
 * reproduces.
 */

/** Nearest-rank percentile of ascending `sorted` (non-empty): the value at 1-based rank ceil(p·n). */
export function percentileOf(sorted: readonly number[], p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}
