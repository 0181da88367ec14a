/**
 * A fixed log-scale latency histogram: constant memory and a constant-time record, however many
 * requests a benchmark sends, with percentiles within 0.5% of the exact value (buckets 1% wide).
 */

/** Latency of one operation at the partner, in milliseconds. */
export interface LatencySummary {
  /** Samples recorded. The other members are 0 while it is 0. */
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

const MIN_MS = 0.01;
const RATIO = 1.01;
const MAX_MS = 3_600_000;
const INV_LN_RATIO = 1 / Math.log(RATIO);
// Bucket 0 holds [0, MIN_MS); bucket i ≥ 1 holds [MIN_MS·RATIO^(i-1), MIN_MS·RATIO^i); the last one everything above.
const BUCKETS = 2 + Math.ceil(Math.log(MAX_MS / MIN_MS) * INV_LN_RATIO);

const round2 = (value: number): number => Math.round(value * 100) / 100;

export class LatencyHistogram {
  private readonly counts = new Uint32Array(BUCKETS);
  private count = 0;
  private sum = 0;
  private min = Number.POSITIVE_INFINITY;
  private max = 0;

  record(ms: number): void {
    const index = ms < MIN_MS ? 0 : Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(ms / MIN_MS) * INV_LN_RATIO));
    this.counts[index]! += 1;
    this.count += 1;
    this.sum += ms;
    if (ms < this.min) this.min = ms;
    if (ms > this.max) this.max = ms;
  }

  /** Nearest-rank percentiles, each the middle of its bucket (clamped to the smallest and largest sample). */
  summary(): LatencySummary {
    if (this.count === 0) return { count: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
    return {
      count: this.count,
      mean: round2(this.sum / this.count),
      p50: round2(this.percentile(0.5)),
      p90: round2(this.percentile(0.9)),
      p99: round2(this.percentile(0.99)),
      max: round2(this.max),
    };
  }

  private percentile(q: number): number {
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    let index = 0;
    for (; index < BUCKETS - 1; index += 1) {
      seen += this.counts[index]!;
      if (seen >= rank) break;
    }
    const middle = index === 0 ? MIN_MS / 2 : MIN_MS * RATIO ** (index - 0.5);
    return Math.min(this.max, Math.max(this.min, middle));
  }
}
