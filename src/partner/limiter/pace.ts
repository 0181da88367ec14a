/**
 * The pace: a send rate learned from 429s (docs/adaptive.md, "The pace"). A CUBIC-shaped token
 * bucket as the AWS SDKs' adaptive retry mode (ClientRateLimiter): cut to beta × the rate the partner
 * accepted, back along a cubic, then beyond. Pure; what it learned is a small plain object
 * (`PaceMemory`) that the next run, or another process, starts from.
 */

/** The pace's constants; docs/adaptive.md says why each has its value. */
export const PACE = {
  beta: 0.95, // a cut paces at this share of what the partner accepted (AWS: 0.7 of the rate sent)
  recoveryS: 4, // seconds from a cut back to the rate it cut from (CUBIC's K)
  startShare: 0.2, // unpaced, 429s start pacing at this share of the last `recentAnswers` above the partner's own …
  recentAnswers: 50,
  burstShare: 0.5, // … or of the last `burstAnswers` (a cap met in the first round trips)
  burstAnswers: 10,
  settleMs: 1000, // answers to requests sent this long after a cut judge it (caps count per second)
  measureAnswers: 20, // answers that measure the share of 429s at a pace …
  checkAnswers: 40, // … and that end an episode of cuts when few are 429s
  judgeBelow: 0.7, // 429s under this share of an episode's highest measured pace are judged: ours, or not
  movedCap: 1.25, // a pace never confirmed that grows this far past its last cap meets none: slow start finds it
  minRate: 0.5, // the slowest pace, requests/s (AWS's minFillRate)
} as const;

/** What one answer tells the pace; the limiter measures the rates and shares. */
export interface PaceAnswer {
  throttled: boolean;
  sentAt: number;
  /** Requests/s the partner accepted lately, counted when they were sent; requests/s we sent. */
  acceptedRate: number;
  sendRate: number;
  /** Share of 429s among the last `recentAnswers` answers and among the last `burstAnswers`. */
  recentShare: number;
  burstShare: number;
  /** Whether the pace held requests back lately (it grows only then). */
  paceLimited: boolean;
  /** Since the first answer, ms: a rate counted over less than a second is a guess from below. */
  answeringForMs: number;
  /** A rate the window could not carry anyway (`--concurrency` / latency): pacing beyond it ends. */
  maxUsefulRate: number;
}

/** What the pace learned, as a plain object: for the next run, or for another process of the job. */
export interface PaceMemory {
  /** Requests/s; null when not pacing. */
  rate: number | null;
  /** The rate the last cut was from (CUBIC's W_max), and seconds paced since (its t). */
  lastMaxRate: number;
  pacedS: number;
  /** The share of 429s the partner gives whatever our rate. */
  ownShare: number;
  /** No request before this time (the limiter clock's ms): a pause every sender honours. */
  pausedUntil: number;
}

interface Measure {
  rate: number;
  share: number;
  throttled: number;
}

/** 429s being answered by cuts: measures of their share at each pace, to tell a cap from 429s that come whatever our rate. */
interface Episode {
  answers: number;
  rateSum: number;
  throttled: number;
  highest: Measure | undefined;
}

export interface PaceState extends PaceMemory {
  /** A limit the partner announces, requests/s: the pace stays within it. */
  readonly ceiling: number | null;
  readonly lastCutAt: number;
  readonly updatedAt: number;
  readonly episode: Episode | undefined;
  /** Grows ×2 per second (TCP's slow start) until the next cut: the pace began from a `guess`, or its cap `moved`. */
  readonly slowStart: 'guess' | 'moved' | false;
  /** An episode ended this run: 429s do end when paced, so they are about a rate (ours, or a cap shared with others). */
  readonly confirmed: boolean;
}

export function createPace(now: number, memory: Partial<PaceMemory> = {}): PaceState {
  const rate = memory.rate ?? null;
  if (rate !== null && !(rate > 0 && Number.isFinite(rate))) throw new RangeError(`a pace must be a positive rate, got ${rate}`);
  return {
    rate, lastMaxRate: memory.lastMaxRate ?? rate ?? 0, pacedS: memory.pacedS ?? PACE.recoveryS, ownShare: memory.ownShare ?? 0,
    pausedUntil: memory.pausedUntil ?? Number.NEGATIVE_INFINITY,
    ceiling: null, lastCutAt: Number.NEGATIVE_INFINITY, updatedAt: now, episode: undefined, slowStart: false, confirmed: false,
  };
}

export function paceMemory({ rate, lastMaxRate, pacedS, ownShare, pausedUntil }: PaceState): PaceMemory {
  return { rate, lastMaxRate, pacedS, ownShare, pausedUntil };
}

/** The rate sends are paced at (the learned one within an announced ceiling), or null. */
export function paceRate(state: PaceState): number | null {
  return state.ceiling === null ? state.rate : Math.min(state.rate ?? Number.POSITIVE_INFINITY, state.ceiling);
}

/** CUBIC's W(t) = W_max (1 + c (t - K)^3), with c scaled so that W(0) = beta × W_max at any rate. */
export function cubic(lastMaxRate: number, pacedS: number): number {
  const c = (1 - PACE.beta) / PACE.recoveryS ** 3;
  return Math.max(PACE.minRate, lastMaxRate * (1 + c * (pacedS - PACE.recoveryS) ** 3));
}

/** The pace after one answer, observed at `now`. */
export function paceAfter(state: PaceState, answer: PaceAnswer, now: number): PaceState {
  let s = grown(state, answer, now);
  // One cut per cap period: answers to requests sent before a cut settled say nothing of it. In slow
  // start the first 429 is the cap, whenever it comes.
  const settled = answer.sentAt >= s.lastCutAt + (s.slowStart === 'guess' ? 0 : PACE.settleMs);
  if (s.episode !== undefined && settled) s = counted(s, answer.throttled, answer.sendRate);
  if (!answer.throttled || !settled || !aboveOwnShare(s, answer)) return s;
  const e = s.episode;
  const measured = e !== undefined && e.answers >= PACE.measureAnswers ? measure(e) : undefined;
  if (!s.confirmed && e?.highest !== undefined && measured !== undefined && notOurs(e.highest, measured)) {
    return { ...s, rate: null, episode: undefined, ownShare: measured.share, lastCutAt: now };
  }
  return cut(s, answer, measured, now);
}

/** Unpaced: a fair share of 429s above the partner's own; paced: more than chance explains (two standard deviations and one). */
function aboveOwnShare(state: PaceState, a: PaceAnswer): boolean {
  if (state.rate === null) return a.recentShare >= state.ownShare + PACE.startShare || a.burstShare >= state.ownShare + PACE.burstShare;
  const n = PACE.recentAnswers;
  return a.recentShare * n >= n * state.ownShare + 1 + 2 * Math.sqrt(n * state.ownShare);
}

/**
 * Little's law's check, for a rate: 429s at a clearly lower pace are not about our rate when their
 * share did not halve and what the partner accepted fell with our pace (a cap's acceptances stay at
 * the cap). Half or more refused is a cap whatever it does (a token bucket's burst spent).
 */
function notOurs(high: Measure, now: Measure): boolean {
  // One 429 in a measure is a probe crossing a cap as much as chance: no evidence.
  if (now.rate > high.rate * PACE.judgeBelow || now.share >= 0.5 || now.throttled < 2) return false;
  const accepted = (now.rate * (1 - now.share)) / (high.rate * (1 - high.share));
  return now.share >= high.share / 2 && accepted < (1 + now.rate / high.rate) / 2;
}

/** Along the cubic (or slow start) while the pace holds requests back; pacing ends where the window binds first. */
function grown(state: PaceState, answer: PaceAnswer, now: number): PaceState {
  if (state.rate === null) return { ...state, updatedAt: now };
  // An idle stretch (the run starting, the breaker open) counts as a second at most.
  const dt = answer.paceLimited ? Math.min(1, Math.max(0, now - state.updatedAt) / 1000) : 0;
  const pacedS = state.pacedS + dt;
  const next = state.slowStart ? state.rate * 2 ** dt : cubic(state.lastMaxRate, pacedS);
  // Not past twice what is really sent (as the AWS SDKs' limiter): a pace the window holds back learns nothing.
  // From a guess, slow start doubles only what is sent (senders idle after the first 429s' Retry-After do not count).
  const rate = Math.max(Math.min(state.rate, next), Math.min(next, (state.slowStart === 'guess' ? 1.25 : 2) * answer.sendRate));
  const slowStart = state.slowStart || (!state.confirmed && rate > state.lastMaxRate * PACE.movedCap ? 'moved' : false);
  return { ...state, pacedS, rate: rate > answer.maxUsefulRate ? null : rate, updatedAt: now, slowStart };
}

function cut(state: PaceState, answer: PaceAnswer, measured: Measure | undefined, now: number): PaceState {
  // Counted over less than a second, acceptances are a guess from below: a pace already set is the better one.
  const guess = answer.answeringForMs < PACE.settleMs;
  // A probe crossing a cap (few 429s) is near the pace: a lagging count (a low pace, idle senders) is not taken far below it.
  const crossing = state.rate !== null && state.slowStart !== 'guess' && answer.recentShare < state.ownShare + PACE.startShare;
  const accepted = guess && state.rate !== null && state.slowStart !== 'guess' ? Number.POSITIVE_INFINITY : crossing ? Math.max(answer.acceptedRate, 0.9 * (state.rate ?? 0)) : answer.acceptedRate;
  const from = Math.max(PACE.minRate, Math.min(state.rate ?? Number.POSITIVE_INFINITY, accepted));
  // CUBIC's fast convergence: a cap met below the last is aimed under, which leaves room to other clients.
  const lastMaxRate = state.rate !== null && from < state.lastMaxRate ? (from * (1 + PACE.beta)) / 2 : from;
  const e = state.episode;
  // A measure spans cuts until it has its answers.
  const episode = measured === undefined && e !== undefined ? e : { answers: 0, rateSum: 0, throttled: 0, highest: highest(e?.highest, measured) };
  return { ...state, rate: PACE.beta * from, lastMaxRate, pacedS: 0, lastCutAt: now, slowStart: guess && (state.rate === null || state.slowStart !== false) ? 'guess' : false, episode };
}

/** Every `checkAnswers` answers since a cut settled: few 429s end the episode (pacing ended them); else they are a measure. */
function counted(state: PaceState, throttled: boolean, sendRate: number): PaceState {
  const e = state.episode as Episode;
  const episode = { ...e, answers: e.answers + 1, rateSum: e.rateSum + sendRate, throttled: e.throttled + (throttled ? 1 : 0) };
  if (episode.answers < PACE.checkAnswers) return { ...state, episode };
  if (episode.throttled <= 1 + state.ownShare * episode.answers) {
    return { ...state, episode: undefined, confirmed: true, ownShare: Math.min(state.ownShare, episode.throttled / episode.answers) };
  }
  return { ...state, episode: { answers: 0, rateSum: 0, throttled: 0, highest: highest(e.highest, measure(episode)) } };
}

function measure(e: Episode): Measure {
  return { rate: e.rateSum / e.answers, share: e.throttled / e.answers, throttled: e.throttled };
}

const highest = (a: Measure | undefined, b: Measure | undefined): Measure | undefined => (a === undefined || (b !== undefined && b.rate > a.rate) ? b : a);
