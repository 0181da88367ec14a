/**
 * Round numbers for the report's scales and histogram bins: steps of 1, 2, 2.5 or 5 × 10^k, and
 * edges without binary floating-point noise. Shared by the data (`build-report.ts`, the bins) and
 * the charts (`_svg.ts`, the axes).
 */

/** The smallest step of 1, 2, 2.5 or 5 × 10^k that is at least `raw` (with `integer`, whole steps only). */
export function niceStep(raw: number, integer = false): number {
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) {
    const step = m * magnitude;
    if (step >= raw && !(integer && !Number.isInteger(step))) return step;
  }
  return 10 * magnitude;
}

/** Drops binary floating-point noise (0.30000000000000004 → 0.3). */
export const tidy = (v: number): number => Number(v.toPrecision(12));
