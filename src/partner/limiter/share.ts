/**
 * The workers of one job share the partner's limit (docs/ledger.md, "The partner's limit, shared"):
 * each paces at an even share of what the workers pace at together, as a central allocator divides
 * a capacity among its clients (YouTube's Doorman, its fair-share algorithm). Every worker's own
 * controllers still learn (the cubic grows, 429s cut); once a second the sum of what they learned is
 * divided again among the workers live. So one worker's cut lowers them all, a worker that leaves
 * hands its share to the others, and a worker that joins takes its share from theirs rather than
 * adding to the partner's load. Pure: what the workers published in, a share out.
 */

/** What one worker publishes once a second. */
export interface WorkerLimit {
  /** Requests it allows in flight. */
  limit: number;
  /** Requests/s it paces at; null when it does not pace (its window binds, or it has met no 429). */
  pace: number | null;
  /** The partner's latency without a queue as it measured it, ms; null before it has. */
  baselineMs?: number | null;
  /** When it published, ms (the database's clock). */
  at: number;
}

/** A worker whose last word is older than this has stopped, or is not working the job now. */
export const LIVE_MS = 3000;

export interface JobShare {
  /** Workers live, this one included. */
  workers: number;
  /** The pace each worker keeps to; null when not every live worker paces (the partner's limit is not a rate yet). */
  pace: number | null;
  /** The window a worker that joins starts from (the largest of the live workers'). */
  limit: number | null;
  /**
   * The partner's latency without a queue: the lowest the live workers measured. They share one
   * queue at the partner, so a worker that came later, or whose baseline drifted up, would take the
   * others' queue for the partner's own latency and keep it full (TCP Vegas's persistent queue).
   */
  baselineMs: number | null;
}

/** Each worker's share, from every worker's last word (this one's among them once it has published). */
export function jobShare(workers: readonly WorkerLimit[], now: number): JobShare {
  const live = workers.filter((w) => now - w.at <= LIVE_MS);
  const limit = live.length === 0 ? null : Math.max(...live.map((w) => w.limit));
  const paces = live.map((w) => w.pace);
  const pace = live.length > 0 && paces.every((p): p is number => p !== null && p > 0) ? paces.reduce((a, b) => a + b, 0) / live.length : null;
  const baselines = live.flatMap((w) => (typeof w.baselineMs === 'number' && w.baselineMs > 0 ? [w.baselineMs] : []));
  return { workers: Math.max(1, live.length), pace, limit, baselineMs: baselines.length === 0 ? null : Math.min(...baselines) };
}

/** Where a worker that joins starts: its share of what the live workers pace at together, when they all pace. */
export function joiningShare(others: readonly WorkerLimit[], now: number): JobShare {
  const live = others.filter((w) => now - w.at <= LIVE_MS);
  const { pace, limit, baselineMs } = jobShare(live, now);
  const workers = live.length + 1;
  return { workers, pace: pace === null ? null : (pace * live.length) / workers, limit, baselineMs };
}
