/**
 * The concurrency window: how many requests may be in flight (docs/adaptive.md, "The window").
 * AIMD as Netflix concurrency-limits' AIMDLimit, with Gradient2's latency gradient as its queue signal.
 * Pure: the next state from the state, one answer and the time; `index.ts` measures and enforces.
 */

/** The window's constants; docs/adaptive.md says why each has its value. */
export const WINDOW = {
  initial: 4,
  /** Added per answer in slow start (half the window per round trip). */
  slowStartGrowth: 0.5,
  /** Multiplicative decrease on errors that grow with load (AIMDLimit's backoffRatio is 0.9). */
  backoff: 0.8,
  /** Answers (quotes and leads) per measuring round. */
  roundAnswers: 16,
  /** Weight of a round in the smoothed series whose minimum is the baseline. */
  smoothing: 0.25,
  /** A round is queueing above baseline + the larger of these two. */
  latencyTolerance: 0.2,
  latencyFloorMs: 50,
  /** Gradient2's floor: one round never more than halves the window. */
  maxCut: 0.5,
  /** A share of errors above the partner's own by this much is overload. */
  errorMargin: 0.15,
  /** A cut is judged by the first round with at most this share of the requests in flight. */
  checkInFlight: 0.8,
  /** A baseline the smoothed latency has not come near for this long is measured again at half the window. */
  baselineTtlMs: 10_000,
} as const;

/** One answer as the window sees it. Agent validations are not fed (a look-up says nothing of a quote's queue). */
export interface WindowAnswer {
  signal: 'ok' | 'error';
  latencyMs: number;
  /** When its request left, and the requests in flight then (it included). */
  sentAt: number;
  inFlightAtSend: number;
}

interface Round {
  since: number;
  latencies: readonly number[];
  errors: number;
  inFlightSum: number;
}

/** A cut waiting for its check: does its signal fall with the requests in flight (Little's law)? */
interface Cut {
  cause: 'latency' | 'errors';
  /** The round's median latency, or its share of errors. */
  level: number;
  inFlight: number;
  windowBefore: number;
}

export interface WindowState {
  readonly ceiling: number;
  /** Requests allowed in flight, in [1, ceiling]; fractional (whole requests below it are admitted). */
  readonly window: number;
  readonly slowStart: boolean;
  /**
   * Clients (the job's workers) sharing the partner's queue. Each grows by 1/flows of a request per
   * round trip, so together they grow as one (AIMD's additive increase, divided among n flows).
   */
  readonly flows: number;
  /** Answers to requests sent before the last cut neither grow the window nor cut it again. */
  readonly lastCutAt: number;
  /** The partner without a queue: the lowest smoothed round latency, ms; when it was last confirmed. */
  readonly baselineMs: number | undefined;
  readonly baselineAt: number;
  /** A round at half the window measures the baseline again (Envoy's minRTT window, BBR's ProbeRTT). */
  readonly probing: boolean;
  readonly trendMs: number | undefined;
  /** The share of errors the partner gives whatever our load: the lowest smoothed round share. */
  readonly errorFloor: number | undefined;
  readonly errorTrend: number | undefined;
  readonly round: Round;
  readonly cut: Cut | undefined;
}

export function createWindow(ceiling: number, now: number, initial: number = WINDOW.initial, warm = false): WindowState {
  if (!Number.isInteger(ceiling) || ceiling < 1) throw new RangeError(`ceiling must be a positive integer, got ${ceiling}`);
  if (!(initial >= 1)) throw new RangeError(`the initial window must be at least 1, got ${initial}`);
  return {
    ceiling, window: Math.min(ceiling, initial), slowStart: !warm, flows: 1, lastCutAt: Number.NEGATIVE_INFINITY,
    baselineMs: undefined, baselineAt: now, probing: false, trendMs: undefined, errorFloor: undefined, errorTrend: undefined, round: newRound(now), cut: undefined,
  };
}

/** Requests admitted in flight: the window, halved while the baseline is measured again. */
export function effectiveWindow(state: WindowState): number {
  return state.probing ? Math.max(1, state.window / 2) : state.window;
}

/** The window after one answer, observed at `now`. */
export function windowAfter(state: WindowState, answer: WindowAnswer, now: number): WindowState {
  let next = state;
  // Grows while in use (half of it in flight, as AIMDLimit checks): a run that cannot fill it learns nothing.
  if (answer.signal === 'ok' && !state.probing && answer.sentAt >= state.lastCutAt && answer.inFlightAtSend >= state.window / 2) {
    const step = state.slowStart ? WINDOW.slowStartGrowth : 1 / (state.window * state.flows);
    next = { ...next, window: Math.min(state.ceiling, state.window + step) };
  }
  if (answer.sentAt < state.round.since) return next;
  const r = state.round;
  const round: Round = {
    since: r.since,
    latencies: answer.signal === 'ok' ? [...r.latencies, Math.max(0, answer.latencyMs)] : r.latencies,
    errors: r.errors + (answer.signal === 'error' ? 1 : 0),
    inFlightSum: r.inFlightSum + answer.inFlightAtSend,
  };
  const answers = round.latencies.length + round.errors;
  // Errors alone enough to put a whole round over the partner's own share need not wait for the rest.
  const overloaded = round.errors > ((state.errorFloor ?? 0) + WINDOW.errorMargin) * WINDOW.roundAnswers;
  return answers < WINDOW.roundAnswers && !overloaded ? { ...next, round } : endRound({ ...next, round: newRound(now) }, round, answers, now);
}

/**
 * Once per round: the latency gradient (Gradient2: the window × (baseline + allowance/2) / round,
 * at most halved) when the round is well above the baseline, else AIMD's decrease when errors
 * exceed the partner's own share. Each cut is then checked by Little's law: a queue's latency, or
 * overload's errors, fall with the requests in flight; a signal that did not fall even half as far
 * is the partner's own (or other clients'): the cut is undone and that level becomes the baseline.
 */
function endRound(state: WindowState, round: Round, answers: number, now: number): WindowState {
  const latency = round.latencies.length >= answers / 2 ? median(round.latencies) : undefined;
  // Over a whole round, also when its errors decided it early.
  const share = round.errors / Math.max(answers, WINDOW.roundAnswers);
  const inFlight = round.inFlightSum / answers;
  const trendMs = latency === undefined ? state.trendMs : smooth(state.trendMs, latency);
  const errorTrend = smooth(state.errorTrend, share);
  let s: WindowState = {
    ...state, trendMs, errorTrend,
    baselineMs: min(state.baselineMs, trendMs), errorFloor: min(state.errorFloor, errorTrend),
  };
  const cut = state.cut;
  if (cut !== undefined && inFlight <= cut.inFlight * WINDOW.checkInFlight) {
    s = { ...s, cut: undefined };
    if (cut.cause === 'latency' && latency !== undefined && s.baselineMs !== undefined && !fell(cut, latency, inFlight, s.baselineMs)) {
      return { ...s, window: Math.max(s.window, cut.windowBefore), baselineMs: latency, trendMs: latency };
    }
    if (cut.cause === 'errors' && s.errorFloor !== undefined && !fell(cut, share, inFlight, s.errorFloor)) {
      return { ...s, window: Math.max(s.window, cut.windowBefore), errorFloor: Math.max(share, errorTrend), errorTrend: Math.max(share, errorTrend) };
    }
  }
  if (state.baselineMs === undefined || state.errorFloor === undefined) return s;
  if (state.probing && latency !== undefined) return { ...s, probing: false, baselineMs: latency, trendMs: latency, baselineAt: now };
  const base = s.baselineMs as number;
  const allowance = Math.max(base * WINDOW.latencyTolerance, WINDOW.latencyFloorMs);
  // A baseline that only a cut's undoing moved up may be our own queue's: it is measured again.
  if (trendMs === undefined || trendMs <= base + allowance / 2) s = { ...s, baselineAt: now };
  else if (now - s.baselineAt > WINDOW.baselineTtlMs) return { ...s, probing: true };
  if (latency !== undefined && trendMs !== undefined && trendMs > base + allowance / 2 && latency > base + allowance) {
    const factor = Math.max(WINDOW.maxCut, (base + allowance / 2) / latency);
    return cutTo(s, { cause: 'latency', level: latency, inFlight, windowBefore: s.cut?.windowBefore ?? s.window }, factor, now);
  }
  if (share > (s.errorFloor as number) + WINDOW.errorMargin) {
    return cutTo(s, { cause: 'errors', level: share, inFlight, windowBefore: s.cut?.windowBefore ?? s.window }, WINDOW.backoff, now);
  }
  return s;
}

/** Whether a signal at `level` with `inFlight` requests fell at least half as far as Little's law says it would have. */
function fell(cut: Cut, level: number, inFlight: number, floor: number): boolean {
  const rise = cut.level - floor;
  const expected = rise * (inFlight / cut.inFlight);
  return level - floor <= (rise + expected) / 2;
}

function cutTo(state: WindowState, cut: Cut, factor: number, now: number): WindowState {
  return { ...state, window: Math.max(1, state.window * factor), slowStart: false, lastCutAt: now, cut };
}

function newRound(now: number): Round {
  return { since: now, latencies: [], errors: 0, inFlightSum: 0 };
}

const smooth = (prev: number | undefined, value: number): number => (prev === undefined ? value : prev + WINDOW.smoothing * (value - prev));
const min = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
