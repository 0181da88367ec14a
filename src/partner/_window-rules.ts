/**
 * The update rules of the adaptive concurrency limiter (README, "Outcomes, resume and the ledger") as pure functions: the next
 * state from the state, one finished attempt, and the time. No clock, no timers: the limiter
 * (`adaptive-limiter.ts`) feeds them and enforces the result; tests replay them as tables.
 *
 * Two controls, as in TCP congestion control:
 * - a **window**: requests allowed in flight. Slow start grows it by half per round trip until the
 *   first cut; then it grows by one per round trip while it is in use (additive increase). It is
 *   cut multiplicatively on a 429 or a transport/5xx error, and in proportion when the partner's
 *   latency rises well above the lowest latency seen recently (its queue is filling: Little's law).
 * - a **pacing rate**, engaged once 429s are a fair share of the answers: a window cannot hold a
 *   rate cap (latency does not rise when a rate limiter rejects), so the limiter learns the rate
 *   the partner accepted (TCP Westwood's bandwidth estimate), paces a little below it, returns to it
 *   quickly and then probes above it, slowly at first, as CUBIC does around its last maximum.
 *
 * A cut reacts to signals from requests that left after the previous cut only, so one overload
 * costs one cut per round trip, not one per answer that reports it (the start of pacing aside: its
 * evidence is the share of 429s, whenever the requests left).
 *
 * The constants, with why each has its value, are in `_window-constants.ts`.
 */
import { WINDOW_RULES } from './_window-constants.js';

export { WINDOW_RULES };

/** Everything the rules know; a new object after every event (never mutated). */
export interface WindowState {
  /** Largest window (`--concurrency`). */
  readonly ceiling: number;
  /** Requests allowed in flight, in [1, ceiling]; fractional (the limiter admits its floor). */
  readonly window: number;
  /** True until the first cut: the window grows by half per round trip. */
  readonly slowStart: boolean;
  /** When the window or rate was last cut: signals of requests sent before it do not cut again. */
  readonly lastCutAt: number;
  /** Exponentially smoothed latency of `ok` answers, ms. */
  readonly smoothedLatencyMs: number | undefined;
  /** Round medians, exponentially smoothed, ms. */
  readonly latencyTrendMs: number | undefined;
  /** The lowest the smoothed round latency has been recently (the partner without a queue), ms. */
  readonly baselineMs: number | undefined;
  /** When the baseline was last measured or confirmed. */
  readonly baselineAt: number;
  /** A baseline re-measuring round is running (the window is halved meanwhile). */
  readonly probing: boolean;
  /** Only answers to requests sent at or after this count toward the current round. */
  readonly roundStartedAt: number;
  /** Latencies of the current round so far. */
  readonly roundLatencies: readonly number[];
  /** Sum of the requests in flight when each of them was sent. */
  readonly roundInFlightSum: number;
  /** The last latency cut, until a round judges it: the round that caused it and the window before. */
  readonly latencyCut: LatencyCut | undefined;
  /** Pacing rate in requests/s; undefined when not pacing (no 429 yet, or probed past the window). */
  readonly rate: number | undefined;
  /** The rate the partner was estimated to accept at the last 429: pacing returns to it, then probes beyond. */
  readonly rateAtThrottle: number;
  /** When the pacing rate was last moved. */
  readonly rateUpdatedAt: number;
  /** Since when the pacing rate has been at or above `rateAtThrottle` (probing), if it is. */
  readonly probingRateSince: number | undefined;
  /** When a 429 last cut. */
  readonly throttleCutAt: number;
  /** When this run's pacing last started from unpaced sending (a 429 burst); -∞ if it never did. */
  readonly pacingStartedAt: number;
  /** The highest rate the partner was seen to sustain over two seconds (at a 429), requests/s. */
  readonly peakAcceptedRate: number;
  /** A pace below `minPaceShare` of that peak, on trial: the answers to requests sent since it began. */
  readonly paceTrial: PaceTrial | undefined;
  /** When a trial last failed (-∞ if none did). */
  readonly trialFailedAt: number;
  /** The pace when its last trial passed (0: none since pacing started). */
  readonly trialPassedRate: number;
}

/** A latency cut waiting for its check: was the latency a queue, i.e. does it fall with the requests in flight? */
export interface LatencyCut {
  /** The median latency of the round that caused the cut, ms. */
  readonly latencyMs: number;
  /** The mean requests in flight when that round's requests were sent. */
  readonly inFlight: number;
  /** The window before the cut (restored if the latency was not a queue). */
  readonly windowBefore: number;
  /** The baseline then, ms. */
  readonly baselineMs: number;
}

/** A pace on trial (`minPaceShare`, or pacing that has just started): does pacing that low end the 429s? */
export interface PaceTrial {
  /** `start`: pacing just started (`startTrialDelayMs`); `warm`: a pace remembered from an earlier run; `low`: a pace heading below `minPaceShare` of the best. */
  readonly kind: 'start' | 'warm' | 'low';
  /** When it began: answers to requests sent from then on count. */
  readonly since: number;
  readonly answers: number;
  readonly throttled: number;
  /** Half the pace it began at: it is not cut below this before it is judged. */
  readonly floor: number;
}

/** What one finished attempt tells the rules (the limiter adds what it measured around it). */
export type WindowEvent =
  | {
      type: 'ok';
      /** From the request leaving to its answer. */
      latencyMs: number;
      /** When its slot was taken. */
      sentAt: number;
      /** Requests in flight once it had its slot (it included). */
      inFlightAtSend: number;
      /** Whether pacing, not the window or a lack of work, held requests back in the last second. */
      paceLimited: boolean;
    }
  | {
      type: 'throttled';
      sentAt: number;
      /** Requests sent per second over the last second. */
      sendRate: number;
      /** Requests per second the partner accepted over the last two seconds, counted when they were sent. */
      acceptedRate: number;
      /**
       * The same over two whole seconds, however recent the first answer: what the partner is known
       * to sustain (the highest of it is the yardstick of `minPaceShare`).
       */
      sustainedRate: number;
      /** Share of 429s among the last 50 answers (fewer answers so far count as successes). */
      throttledShare: number;
    }
  | { type: 'error'; sentAt: number };

/**
 * The state of a new limiter. `pace` (requests/s), when given, is the rate an earlier run against
 * the partner was paced at when it settled: the new one starts as that run would after a 429 met at
 * that rate — paced `rateBackoff` below it, returning to it within about a second, then probing
 * beyond it — instead of finding the partner's rate cap again by overshooting it. `initialWindow`
 * is then the requests that pace put in flight, and the window keeps its `windowHeadroom` above it.
 */
export function createWindowState(ceiling: number, now: number, initialWindow: number = WINDOW_RULES.initialWindow, pace?: number): WindowState {
  if (!Number.isInteger(ceiling) || ceiling < 1) throw new RangeError(`ceiling must be a positive integer, got ${ceiling}`);
  if (!(initialWindow >= 1)) throw new RangeError(`initialWindow must be at least 1, got ${initialWindow}`);
  if (pace !== undefined && !(pace > 0 && Number.isFinite(pace))) throw new RangeError(`pace must be a positive rate, got ${pace}`);
  const paced = pace === undefined
    ? {}
    : {
        window: Math.min(ceiling, initialWindow * WINDOW_RULES.windowHeadroom),
        slowStart: false,
        rate: Math.max(WINDOW_RULES.minRate, pace * WINDOW_RULES.rateBackoff),
        rateAtThrottle: pace,
        // A remembered pace is tried as a new one is: it may be last night's reading of 429s that
        // were never about our rate.
        paceTrial: startTrial(now, pace * WINDOW_RULES.rateBackoff, 'warm'),
        // Not taken as the highest rate the partner accepted (`minPaceShare`): that was another
        // night, and a cap lowered since below a quarter of it must be paced, not left to the
        // window (a warm start at 30/s against a cap now 4/s: 49% answered 429, rows failed).
      };
  return {
    ceiling,
    window: Math.min(ceiling, initialWindow),
    slowStart: true,
    lastCutAt: Number.NEGATIVE_INFINITY,
    smoothedLatencyMs: undefined,
    latencyTrendMs: undefined,
    baselineMs: undefined,
    baselineAt: now,
    probing: false,
    roundStartedAt: Number.NEGATIVE_INFINITY,
    roundLatencies: [],
    roundInFlightSum: 0,
    latencyCut: undefined,
    rate: undefined,
    rateAtThrottle: 0,
    rateUpdatedAt: now,
    probingRateSince: undefined,
    throttleCutAt: Number.NEGATIVE_INFINITY,
    pacingStartedAt: Number.NEGATIVE_INFINITY,
    peakAcceptedRate: 0,
    paceTrial: undefined,
    trialFailedAt: Number.NEGATIVE_INFINITY,
    trialPassedRate: 0,
    ...paced,
  };
}

/** The state after `event`, observed at `now` (ms, monotonic). */
export function nextWindowState(state: WindowState, event: WindowEvent, now: number): WindowState {
  switch (event.type) {
    case 'ok':
      return onOk(state, event, now);
    case 'throttled':
      return onThrottled(state, event, now);
    case 'error':
      return onError(state, event, now);
  }
}

/** Requests the limiter admits in flight: the window, halved while the baseline is re-measured. */
export function effectiveWindow(state: WindowState): number {
  return state.probing ? Math.max(1, state.window / 2) : state.window;
}

function onOk(state: WindowState, event: Extract<WindowEvent, { type: 'ok' }>, now: number): WindowState {
  const latency = Math.max(0, event.latencyMs);
  const smoothed = state.smoothedLatencyMs === undefined ? latency : state.smoothedLatencyMs + WINDOW_RULES.smoothing * (latency - state.smoothedLatencyMs);
  let next: WindowState = { ...judgedTrial(state, event.sentAt, false, now), smoothedLatencyMs: smoothed, window: grownWindow(state, event) };
  next = paced(next, event.paceLimited, now);
  if (event.sentAt < state.roundStartedAt) return next;
  const roundLatencies = [...state.roundLatencies, latency];
  const roundInFlightSum = state.roundInFlightSum + event.inFlightAtSend;
  if (roundLatencies.length < WINDOW_RULES.roundSamples) return { ...next, roundLatencies, roundInFlightSum };
  return endRound(next, median(roundLatencies), roundInFlightSum / roundLatencies.length, now);
}

/**
 * Slow start adds half a request per answer (half the window per round trip; TCP doubles, but a
 * rate cap that admits bursts is found late, and the overshoot is paid in 429s), then one per
 * window of answers (one per round trip). Only while the window is in use (half of it in flight,
 * as Netflix's AIMD limit checks): a run that cannot fill its window learns nothing about the
 * partner from it. Not while re-measuring, nor from answers to requests sent before the last cut
 * (those saw the old window).
 */
function grownWindow(state: WindowState, event: Extract<WindowEvent, { type: 'ok' }>): number {
  if (state.probing || event.sentAt < state.lastCutAt || event.inFlightAtSend < state.window / 2) return state.window;
  const step = state.slowStart ? WINDOW_RULES.slowStartGrowth : 1 / state.window;
  return Math.min(state.ceiling, state.window + step);
}

/**
 * Moves the pacing rate while pacing holds requests back: an exponential return to the rate of the
 * last 429, then a probe beyond it that starts slowly and accelerates (the partner may have raised
 * its cap, or the estimate was low). Pacing ends once the window alone would stop below the rate
 * (the ceiling binds first, so the learned rate no longer matters), whether or not the pace holds
 * requests back. A stretch without answers (the run starting, the breaker open) counts as one
 * second at most: an idle pacer banks no growth.
 */
function paced(state: WindowState, paceLimited: boolean, now: number): WindowState {
  if (state.rate === undefined) return state;
  const latency = state.smoothedLatencyMs ?? 0;
  const windowBound = latency > 0 ? (state.ceiling * WINDOW_RULES.windowHeadroom * 1000) / latency : Number.POSITIVE_INFINITY;
  if (state.rate > windowBound) return { ...state, rate: undefined, rateUpdatedAt: now };
  const seconds = Math.min(1, Math.max(0, now - state.rateUpdatedAt) / 1000);
  if (!paceLimited || seconds === 0) return { ...state, rateUpdatedAt: now };
  const target = state.rateAtThrottle;
  let rate = state.rate;
  let probingSince = state.probingRateSince;
  if (rate < target) {
    rate += (target - rate) * Math.min(1, seconds / WINDOW_RULES.rateRecoveryS) + target * WINDOW_RULES.rateProbePerS * seconds;
  } else {
    probingSince ??= now;
    const growth = WINDOW_RULES.rateProbePerS * 2 ** ((now - probingSince) / WINDOW_RULES.rateProbeDoublingMs);
    rate += rate * growth * seconds;
  }
  return { ...state, rate: rate > windowBound ? undefined : rate, rateUpdatedAt: now, probingRateSince: probingSince };
}

/**
 * The latency rule, once per round of answers: a round well above the baseline (relatively *and*
 * absolutely) means requests queue at the partner, and the window is cut to what would have kept
 * the latency half-way into the tolerance (Little's law: at a fixed throughput, in-flight requests
 * scale with latency).
 *
 * The baseline is the lowest the latency has been: the minimum of a smoothed series of round
 * medians (a minimum of raw rounds would follow their noise down and make the rule jumpy). It
 * follows a partner whose own latency rose, but cannot drift up with the queue it is there to
 * detect, in two ways:
 * - a cut is checked by Little's law: once a round has run with clearly fewer requests in flight
 *   than the round that caused the cut, a queue's latency has fallen with them. If it has not fallen
 *   even half as far, the latency is the partner's own (or other clients' queue, which our window
 *   does not drain): that round's latency becomes the baseline and the cut is undone;
 * - a baseline the smoothed latency has not come near for `baselineTtlMs` is re-measured by a round
 *   at half the window, queueing or not.
 */
function endRound(state: WindowState, latency: number, inFlight: number, now: number): WindowState {
  const fresh = { ...state, roundStartedAt: now, roundLatencies: [], roundInFlightSum: 0, latencyCut: undefined };
  if (state.probing || state.baselineMs === undefined || state.latencyTrendMs === undefined) {
    return { ...fresh, probing: false, baselineMs: latency, baselineAt: now, latencyTrendMs: latency };
  }
  const cut = state.latencyCut;
  const judged = cut !== undefined && cut.inFlight > 0 && inFlight <= cut.inFlight * WINDOW_RULES.cutCheckInFlightShare;
  if (judged && notAQueue(cut, latency, inFlight)) {
    return { ...fresh, baselineMs: latency, baselineAt: now, latencyTrendMs: latency, window: Math.max(state.window, cut.windowBefore) };
  }
  // A cut this round could not judge (it did not run with fewer requests in flight: slow start had
  // outgrown the round that caused the cut, or the window was not in use) waits for the next round.
  const pending = judged ? undefined : cut;
  const trend = state.latencyTrendMs + WINDOW_RULES.trendSmoothing * (latency - state.latencyTrendMs);
  const baseline = Math.min(state.baselineMs, trend);
  const allowance = Math.max(baseline * WINDOW_RULES.latencyTolerance, WINDOW_RULES.latencyFloorMs);
  // A smoothed latency within half the allowance confirms the baseline; a higher one is queueing
  // when the round itself is beyond the whole allowance (one slow round alone is noise).
  const queueing = trend > baseline + allowance / 2;
  const baselineAt = queueing ? state.baselineAt : now;
  const stale = now - baselineAt > WINDOW_RULES.baselineTtlMs;
  const next = { ...fresh, latencyTrendMs: trend, baselineMs: baseline, baselineAt, latencyCut: pending };
  if (queueing && latency > baseline + allowance && !stale) {
    const factor = Math.max(WINDOW_RULES.maxLatencyCut, (baseline + allowance / 2) / latency);
    const latencyCut = { latencyMs: latency, inFlight, windowBefore: pending?.windowBefore ?? state.window, baselineMs: baseline };
    return { ...next, window: Math.max(1, state.window * factor), slowStart: false, lastCutAt: now, latencyCut };
  }
  return { ...next, probing: stale };
}

/**
 * Whether a round's latency, with fewer requests in flight than the round that caused `cut`, did
 * not fall even half as far as a queue's would: a queue's rise above the baseline scales with the
 * requests in flight (Little's law, at the same throughput).
 */
function notAQueue(cut: LatencyCut, latency: number, inFlight: number): boolean {
  const rise = cut.latencyMs - cut.baselineMs;
  const queueRise = rise * (inFlight / cut.inFlight);
  return latency - cut.baselineMs > (rise + queueRise) / 2;
}

/**
 * A 429. A stray one cuts the window, like an error. Once 429s are a
 * fair share of the answers (slow start overshot a rate cap; the cap dropped), the limiter paces
 * below what the partner accepted, cutting again once per round trip while the share stays that
 * high. While pacing, a stray 429 cuts the rate at most once per `throttleCutSpacingMs` (rate caps
 * count per second). Every rate cut also cuts the window, but not below the room the new rate
 * needs: pacing, not the window, holds a rate.
 */
function onThrottled(state: WindowState, event: Extract<WindowEvent, { type: 'throttled' }>, now: number): WindowState {
  const judged = judgedTrial(state, event.sentAt, true, now);
  // A failed trial has just stopped pacing: this 429 was its last piece of evidence.
  if (state.rate !== undefined && judged.rate === undefined) return judged;
  const seen = { ...judged, peakAcceptedRate: Math.max(judged.peakAcceptedRate, event.sustainedRate) };
  const overshoot = event.throttledShare >= WINDOW_RULES.pacingShare;
  // After a failed trial, pacing does not start again for a while: the window alone answers 429s.
  const mayPace = now - state.trialFailedAt >= WINDOW_RULES.trialCooldownMs;
  if (state.rate === undefined && overshoot && mayPace) return cutRate(seen, event, now);
  if (event.sentAt < state.lastCutAt) return seen;
  const stray = !overshoot || state.rate === undefined;
  if (stray && now - state.throttleCutAt < WINDOW_RULES.throttleCutSpacingMs) return seen;
  return state.rate === undefined ? { ...cutWindow(seen, now, WINDOW_RULES.strayThrottleBackoff), throttleCutAt: now } : cutRate(seen, event, now);
}

/**
 * Paces below what the partner accepts and cuts the window too. Two estimates of that rate:
 * - the requests accepted per second over the last seconds: smooth, but it lags a change and it
 *   also counts our own idle moments;
 * - the send rate less the share of 429s among the last answers: it follows a change at once, but
 *   the share lags the send rate.
 * A fair share of 429s means the rate or the cap has just changed (slow start, a lower cap): the
 * cut starts from the second estimate (within a cap's second of pacing starting, from the higher
 * of the two), and the pace returns to the first if that is higher. A stray
 * 429 means the pace has just crossed the cap: the cut starts from the first estimate, but never
 * more than `strayCutLimit` below the pace (the count may hold a stretch with little to send).
 *
 * 429s that pacing far below the best rate the partner ever sustained would not end come whatever
 * our rate (a quota shared with other clients, or chance): pacing stops rather than spiral down,
 * and the window alone answers them, as it does stray 429s.
 */
function cutRate(state: WindowState, event: Extract<WindowEvent, { type: 'throttled' }>, now: number): WindowState {
  const pace = state.rate ?? Number.POSITIVE_INFINITY;
  let from: number;
  let target: number;
  const overshoot = event.throttledShare >= WINDOW_RULES.pacingShare;
  if (overshoot) {
    const sendEstimate = event.sendRate * (1 - event.throttledShare);
    // Within a cap's second of pacing starting, the send rate and the share still describe the
    // unpaced burst that started it, and the cap's count of it refuses requests the new pace sent:
    // from them alone a cold start went from 58/s to 26 and 10 within 400 ms, against a cap of 40.
    // The cut then starts from no lower than what the partner was seen to accept.
    const burst = state.rate !== undefined && event.sentAt < state.pacingStartedAt + WINDOW_RULES.throttleCutSpacingMs;
    from = Math.min(pace, burst ? Math.max(sendEstimate, event.acceptedRate) : sendEstimate);
    target = Math.max(from, Math.min(pace, event.acceptedRate));
  } else {
    from = Math.min(pace, Math.max(event.acceptedRate, pace * (1 - WINDOW_RULES.strayCutLimit)));
    target = from;
  }
  const cutTo = Math.max(WINDOW_RULES.minRate, from * WINDOW_RULES.rateBackoff);
  // Judged by where the pace is headed (`target`), not by where it starts: the send rate less the
  // share of 429s collapses while many senders wait out a Retry-After, though the partner still
  // takes its (lower) cap. Heading below a quarter of the best rate is tried (`judgedTrial`): a
  // token bucket's burst spent, or a cap cut by three quarters, must be paced; 429s that come
  // whatever our rate must not spiral the pace down.
  const low = target * WINDOW_RULES.rateBackoff < state.peakAcceptedRate * WINDOW_RULES.minPaceShare;
  if (!(from > 0) || !Number.isFinite(from) || (low && state.paceTrial === undefined && now - state.trialFailedAt < WINDOW_RULES.trialCooldownMs)) {
    return stoppedPacing(state, now);
  }
  const trial = state.paceTrial;
  let paceTrial: PaceTrial | undefined;
  if (low && trial?.kind !== 'low') paceTrial = { kind: 'low', since: now, answers: 0, throttled: 0, floor: cutTo / 2 };
  // Pacing that starts, or is still heading down to a cap (a fair share of 429s), is judged once it got there.
  else if (state.rate === undefined) paceTrial = startTrial(now, cutTo);
  else if (trial !== undefined && trial.kind !== 'low' && overshoot) paceTrial = startTrial(now, cutTo, trial.kind);
  else if (trial === undefined && state.trialPassedRate > 0 && cutTo < state.trialPassedRate * WINDOW_RULES.retrialShare) paceTrial = startTrial(now, cutTo);
  else paceTrial = trial;
  // Before a trial is judged, the 429s it is there to tell apart may come whatever the pace: they
  // would spiral it down, one cut per round trip, while it waits for its answers.
  const rate = Math.max(cutTo, paceTrial?.floor ?? 0);
  const room = (WINDOW_RULES.windowHeadroom * rate * (state.smoothedLatencyMs ?? 0)) / 1000;
  const window = Math.max(1, state.window * WINDOW_RULES.throttleBackoff, Math.min(state.window, room));
  return {
    ...state, window, slowStart: false, lastCutAt: now, throttleCutAt: now, latencyCut: undefined, paceTrial,
    rate, rateAtThrottle: target, rateUpdatedAt: now, probingRateSince: undefined,
    pacingStartedAt: state.rate === undefined ? now : state.pacingStartedAt,
  };
}

/**
 * Counts an answer toward a pace on trial and judges it after `trialAnswers` answers to requests
 * sent since it began: few 429s mean the cap really fell that low (the trial's rate becomes the
 * best the partner takes); a fair share means pacing does not end them, and pacing stops (the
 * window alone answers them, as stray 429s), not to be tried that low again for a while.
 */
function judgedTrial(state: WindowState, sentAt: number, throttled: boolean, now: number): WindowState {
  const trial = state.paceTrial;
  if (trial === undefined) return state;
  if (state.rate === undefined) return { ...state, paceTrial: undefined };
  if (sentAt < trial.since) return state;
  const counted = { ...trial, answers: trial.answers + 1, throttled: trial.throttled + (throttled ? 1 : 0) };
  if (counted.answers < WINDOW_RULES.trialAnswers) return { ...state, paceTrial: counted };
  const seconds = Math.max(0, now - trial.since) / 1000;
  const fewPerSecond = trial.kind === 'start' && counted.throttled <= seconds * WINDOW_RULES.trialPassThrottledPerS;
  if (counted.throttled / counted.answers <= WINDOW_RULES.trialPassShare || fewPerSecond) {
    // A low pace that ends the 429s is the best the partner takes now.
    return { ...state, paceTrial: undefined, peakAcceptedRate: trial.kind === 'low' ? state.rateAtThrottle : state.peakAcceptedRate, trialPassedRate: state.rate };
  }
  // A remembered pace that fails leaves this night to find its own: pacing may start again at once.
  return trial.kind === 'warm' ? stoppedPacing(state, now) : { ...stoppedPacing(state, now), trialFailedAt: now };
}

/** The trial of pacing that starts (or still heads down to a cap) at `rate`, or of a remembered pace (`warm`): see `startTrialDelayMs`. */
function startTrial(now: number, rate: number, kind: 'start' | 'warm' = 'start'): PaceTrial {
  return { kind, since: now + WINDOW_RULES.startTrialDelayMs, answers: 0, throttled: 0, floor: rate / 2 };
}

/** Pacing ends (the 429s are not about our rate): the window alone answers them, cut once for this one. */
function stoppedPacing(state: WindowState, now: number): WindowState {
  return { ...cutWindow(state, now), rate: undefined, throttleCutAt: now, paceTrial: undefined, trialPassedRate: 0 };
}

/** Multiplicative decrease of the window, ending slow start. */
function cutWindow(state: WindowState, now: number, backoff: number = WINDOW_RULES.throttleBackoff): WindowState {
  // A latency cut waiting for its check can no longer be judged by the latency that follows.
  return { ...state, window: Math.max(1, state.window * backoff), slowStart: false, lastCutAt: now, latencyCut: undefined };
}

/** A 5xx or a transport failure: an overloaded partner often answers so; cut the window once per round trip. */
function onError(state: WindowState, event: Extract<WindowEvent, { type: 'error' }>, now: number): WindowState {
  return event.sentAt < state.lastCutAt ? state : cutWindow(state, now);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
