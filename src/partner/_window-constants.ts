/**
 * The constants of the adaptive limiter's update rules (`_window-rules.ts`), each with why it has its
 * value; docs/adaptive.md gives the measurements behind them.
 */
export const WINDOW_RULES = {
  // The window
  /** Window at the start (at most the ceiling): small, so a partner with a short queue is not flooded. */
  initialWindow: 4,
  /** Slow start adds this per answer: the window grows by half per round trip (TCP doubles it). */
  slowStartGrowth: 0.5,
  /** The window is multiplied by this on an error, or on a 429 with pacing (which holds the rate) … */
  throttleBackoff: 0.8,
  /**
   * … and by this on a stray 429 while not pacing, at most once a second. 429s at random (5% of
   * answers) cut the window as often as they come; at 0.8 a 200 ms partner lost 40% of its
   * throughput to them (a window near 16 of 32: growth of one per round trip against a fifth per
   * second); at 0.9 the growth keeps up. A cap's overshoot brings a fair share within a round trip,
   * and pacing answers it.
   */
  strayThrottleBackoff: 0.9,

  // Latency
  /** Weight of a new latency in the smoothed latency (TCP's SRTT uses 1/8). */
  smoothing: 1 / 8,
  /** Latencies (of `ok` answers) per measuring round: their median is the round's latency. */
  roundSamples: 16,
  /** Weight of a round's median in the smoothed series the baseline is the minimum of. */
  trendSmoothing: 0.25,
  /** A round's latency above baseline × (1 + this) … */
  latencyTolerance: 0.2,
  /** … and above baseline + this many ms is queueing at the partner; below, it is noise or our own CPU. */
  latencyFloorMs: 50,
  /** A latency cut never shrinks the window below this share of it. */
  maxLatencyCut: 0.5,
  /** A baseline not confirmed for this long is re-measured by a round at half the window. */
  baselineTtlMs: 10_000,
  /**
   * A latency cut is judged by the next round that ran with at most this share of the requests in
   * flight of the round that caused it: if its latency did not fall with them, it was not a queue.
   */
  cutCheckInFlightShare: 0.8,

  // Pacing
  /** Share of 429s among the last answers from which a 429 starts pacing (below it, it cuts the window only). */
  pacingShare: 0.2,
  /** The pacing rate is set to this share of the estimated rate the partner accepts. */
  rateBackoff: 0.95,
  /** A stray 429 cuts the pace by at most this share (before `rateBackoff`). */
  strayCutLimit: 0.1,
  /** A stray 429 cuts the rate at most once per this many ms: rate caps count per second. */
  throttleCutSpacingMs: 1000,
  /** Seconds of the exponential return of the pacing rate to the rate of the last 429. */
  rateRecoveryS: 1,
  /** Growth per second of the pacing rate above the rate of the last 429 (probing) … */
  rateProbePerS: 0.02,
  /** … which doubles every this many ms spent above it (probing accelerates, as CUBIC's does). */
  rateProbeDoublingMs: 5_000,
  /** While pacing, the window keeps room for this many times the requests the rate puts in flight. */
  windowHeadroom: 2,
  /**
   * A pace heading below this share of the highest rate the partner accepted is on trial: 429s that
   * pacing that low does not end are not about our rate, and pacing stops.
   */
  minPaceShare: 0.25,
  /** A trial is judged by this many answers to requests sent since it began … */
  trialAnswers: 80,
  /**
   * … and passes when at most this share of them were 429s: the cap really fell that low (paced
   * below a real cap, 0–3% are 429s). At 10%, 429s at a random 10% of answers passed 6 trials in
   * 10, and each pass let the pace spiral down a quarter further.
   */
  trialPassShare: 0.05,
  /**
   * … or at most this many 429s a second of it: paced at a slow cap (4/s), the pace's probe past it
   * meets a 429 every 3–4 s, 6–7% of the answers; 429s at random come as often as the answers do.
   */
  trialPassThrottledPerS: 1,
  /** After a failed trial, a pace heading that low stops pacing at once for this long. */
  trialCooldownMs: 30_000,
  /**
   * Pacing itself is on trial from its start (from unpaced sending, or a remembered pace), as a low
   * pace is, judged by the answers to requests sent from this long after it began (a cap's count of
   * the burst that started it refuses some requests paced after it), or after its last cut for a
   * fair share of 429s (it was still heading down to the cap). 429s that come at the same share
   * whatever our rate (a random 10% of answers) are no rate cap: paced below them, the pace
   * spiralled down to 2/s where a fixed 8 sent 50/s, and the next night started from there.
   */
  startTrialDelayMs: 1000,
  /**
   * A pace cut below this share of the pace its last trial passed at is tried again: 429s of chance
   * that passed a trial by luck (one in ten at 10%) would otherwise cut it a tenth a second, down
   * to 2/s.
   */
  retrialShare: 0.5,
  /** Pacing rates below this (requests/s) are not used. */
  minRate: 0.5,
} as const;
