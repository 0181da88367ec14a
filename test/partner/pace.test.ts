// The pace learned from 429s (src/partner/limiter/pace.ts) as tables: the cubic, when 429s start
// and cut a pace, where a cut starts from, growth, and telling a cap from 429s that come whatever
// our rate.
import { describe, expect, it } from 'vitest';
import { createPace, cubic, PACE, paceAfter, paceMemory, paceRate, type PaceAnswer, type PaceState } from '../../src/partner/limiter/pace.js';

const answer = (fields: Partial<PaceAnswer> = {}): PaceAnswer => ({
  throttled: false, sentAt: 10_000, acceptedRate: 40, sendRate: 40, recentShare: 0, burstShare: 0,
  paceLimited: true, answeringForMs: 10_000, maxUsefulRate: 1000, ...fields,
});
const throttled = (fields: Partial<PaceAnswer> = {}): PaceAnswer => answer({ throttled: true, recentShare: 0.02, burstShare: 0.1, ...fields });
/** A pace of `rate` requests/s, long settled (its last cut long ago), at time 10 s. */
const pacedAt = (rate: number, fields: Partial<PaceState> = {}): PaceState => ({ ...createPace(10_000, { rate }), ...fields });

describe('cubic: CUBIC\'s window, as a rate, scaled to any rate', () => {
  it.each([
    [0, PACE.beta * 40],
    [PACE.recoveryS, 40],
    [2 * PACE.recoveryS, 40 * (2 - PACE.beta)],
  ])('W_max 40/s, %s s after the cut → %s/s', (t, rate) => {
    expect(cubic(40, t)).toBeCloseTo(rate, 9);
  });

  it('never below the slowest pace', () => {
    expect(cubic(0.1, 0)).toBe(PACE.minRate);
  });
});

describe('createPace and what it learned', () => {
  it('starts unpaced, or where an earlier run (or another process) left it: at its rate, on the plateau', () => {
    expect(paceRate(createPace(0))).toBeNull();
    const p = createPace(0, { rate: 30 });
    expect(paceRate(p)).toBe(30);
    expect(paceMemory(p)).toEqual({ rate: 30, lastMaxRate: 30, pacedS: PACE.recoveryS, ownShare: 0, pausedUntil: Number.NEGATIVE_INFINITY });
    expect(paceMemory(createPace(0, paceMemory(p)))).toEqual(paceMemory(p));
  });

  it.each([[0], [-1], [Number.NaN], [Number.POSITIVE_INFINITY]])('refuses the rate %s', (rate) => {
    expect(() => createPace(0, { rate })).toThrow(RangeError);
  });

  it('stays within an announced ceiling', () => {
    expect(paceRate({ ...createPace(0), ceiling: 10 })).toBe(10);
    expect(paceRate({ ...createPace(0, { rate: 4 }), ceiling: 10 })).toBe(4);
  });
});

describe('when 429s start pacing, or cut a pace', () => {
  it.each<[string, PaceState, Partial<PaceAnswer>, number | null]>([
    ['unpaced, a 429 now and then is no cap', createPace(0), { recentShare: 0.04 }, null],
    ['unpaced, a fifth of the last 50: paced at beta × what the partner accepted', createPace(0), { recentShare: 0.2, acceptedRate: 40 }, PACE.beta * 40],
    ['unpaced, half of the last 10 (a cap met in the first round trips)', createPace(0), { recentShare: 0.1, burstShare: 0.5, acceptedRate: 40 }, PACE.beta * 40],
    ['unpaced, above a partner\'s own share of 10% by less than a fifth: no cap', { ...createPace(0), ownShare: 0.1 }, { recentShare: 0.25 }, null],
    ['paced, one 429 is the probe crossing the cap: cut', pacedAt(44), { acceptedRate: 40 }, PACE.beta * 40],
    ['paced, at a partner\'s own share of 10%: chance, no cut', pacedAt(44, { ownShare: 0.1 }), { recentShare: 0.12 }, 44],
    ['paced, well above it: cut', pacedAt(44, { ownShare: 0.1 }), { recentShare: 0.3, acceptedRate: 40 }, PACE.beta * 40],
    ['a request sent before the last cut settled: no second cut', pacedAt(44, { lastCutAt: 9_500 }), { acceptedRate: 40 }, 44],
  ])('%s', (_name, state, fields, rate) => {
    const next = paceAfter(state, throttled(fields), 10_000);
    if (rate === null) expect(next.rate).toBeNull();
    else expect(next.rate).toBeCloseTo(rate, 9);
  });
});

describe('where a cut starts from', () => {
  it.each<[string, PaceState, Partial<PaceAnswer>, number, number]>([
    // [name, state, answer, rate after, lastMaxRate after]
    ['an overshoot: what the partner accepted', pacedAt(60), { recentShare: 0.4, acceptedRate: 20 }, PACE.beta * 20, (20 * (1 + PACE.beta)) / 2],
    ['a crossing: not far below the pace, whatever a lagging count says', pacedAt(30), { acceptedRate: 10 }, PACE.beta * 27, (27 * (1 + PACE.beta)) / 2],
    ['within the first second of answers a pace already set is the better estimate', pacedAt(30), { acceptedRate: 3, answeringForMs: 400 }, PACE.beta * 30, 30],
    // 30/s on the cubic from a cap of 20/s: 20 × (1 + c (t - K)^3) = 30.
    ['a cap met above the last one is aimed at', pacedAt(30, { lastMaxRate: 20, pacedS: PACE.recoveryS + Math.cbrt(0.5 / ((1 - PACE.beta) / PACE.recoveryS ** 3)) }), { acceptedRate: 40 }, PACE.beta * 30, 30],
  ])('%s', (_name, state, fields, rate, lastMax) => {
    const next = paceAfter(state, throttled(fields), 10_000);
    expect(next.rate).toBeCloseTo(rate, 9);
    expect(next.lastMaxRate).toBeCloseTo(lastMax, 9);
    expect(next.lastCutAt).toBe(10_000);
  });

  it('unpaced, within the first second of answers the count is a guess from below: the pace slow-starts from it', () => {
    const next = paceAfter(createPace(0), throttled({ burstShare: 0.6, acceptedRate: 5, answeringForMs: 300 }), 300);
    expect(next.rate).toBeCloseTo(PACE.beta * 5, 9);
    expect(next.slowStart).toBe('guess');
    // Doubling per paced second until its first 429, what is sent following …
    expect(paceAfter(next, answer({ sendRate: 2 * PACE.beta * 5, answeringForMs: 1300 }), 1300).rate).toBeCloseTo(2 * PACE.beta * 5, 9);
    // … not past what is sent while senders sit idle (waiting out the first 429s' Retry-After).
    expect(paceAfter(next, answer({ sendRate: 2, answeringForMs: 1300 }), 1300).rate).toBeCloseTo(PACE.beta * 5, 9);
  });
});

describe('growth', () => {
  it.each<[string, PaceState, Partial<PaceAnswer>, number | null]>([
    ['along the cubic while the pace holds requests back', pacedAt(40, { lastMaxRate: 40, pacedS: 0 }), {}, cubic(40, 1)],
    ['not while it does not', pacedAt(40, { lastMaxRate: 40, pacedS: 0, rate: PACE.beta * 40 }), { paceLimited: false }, PACE.beta * 40],
    ['not past twice what is really sent', pacedAt(40, { lastMaxRate: 40, pacedS: 8, rate: 40 }), { sendRate: 10 }, 40],
    ['pacing ends where the window binds first', pacedAt(40, { lastMaxRate: 40, pacedS: 8 }), { maxUsefulRate: 40 }, null],
  ])('%s', (_name, state, fields, rate) => {
    const next = paceAfter({ ...state, updatedAt: 9_000 }, answer(fields), 10_000);
    if (rate === null) expect(next.rate).toBeNull();
    else expect(next.rate).toBeCloseTo(rate, 9);
  });

  it('a pace never confirmed that grows well past its last cap without a 429 slow-starts (the cap moved, or was no cap)', () => {
    const next = paceAfter({ ...pacedAt(40, { lastMaxRate: 30, pacedS: 12 }), updatedAt: 9_000 }, answer(), 10_000);
    expect(next.rate).toBeGreaterThan(30 * PACE.movedCap);
    expect(next.slowStart).toBe('moved');
  });
});

/** A pace cut at 10 s, fed `answers` settled answers at `sendRate`, `throttledEvery` one a 429. */
function afterAnswers(state: PaceState, answers: number, sendRate: number, throttledEvery: number, from: number): [PaceState, number] {
  let s = state;
  let t = from;
  for (let i = 1; i <= answers; i += 1) {
    t += 1;
    // Only counted: these 429s come with a recent share at the partner's own, so they do not cut.
    s = paceAfter(s, answer({ throttled: throttledEvery > 0 && i % throttledEvery === 0, sentAt: t, sendRate, recentShare: s.ownShare, paceLimited: false }), t);
  }
  return [s, t];
}

describe('episodes: a cap, or 429s whatever our rate', () => {
  it('a cut that ends the 429s confirms pacing: the next episode is a cap\'s', () => {
    const cutState = paceAfter(pacedAt(44), throttled({ acceptedRate: 40 }), 10_000);
    const [s] = afterAnswers(cutState, PACE.checkAnswers, 38, 0, 11_000);
    expect(s.episode).toBeUndefined();
    expect(s.confirmed).toBe(true);
  });

  it.each<[string, number, number | null]>([
    // The highest pace measured 40/s with 10% answered 429; after cuts, 20/s with …
    ['… a share that did not halve, and acceptances that fell with the pace: not ours, pacing stops', 10, null],
    ['… a share that fell as a cap\'s: the cut goes on', 0, PACE.beta * 20],
  ])('%s', (_name, throttledEvery, rate) => {
    let s = paceAfter(pacedAt(44), throttled({ acceptedRate: 40 }), 10_000);
    // A measure at 40/s: 2 429s in 20 answers.
    [s] = afterAnswers(s, PACE.measureAnswers, 40, 10, 11_000);
    s = paceAfter(s, throttled({ sentAt: 12_000, acceptedRate: 21, recentShare: 0.1 }), 12_000);
    expect(s.episode?.highest?.rate).toBe(40);
    // A measure at 20/s (the pace since the cuts), then a 429.
    [s] = afterAnswers({ ...s, rate: 20, lastMaxRate: 20, pacedS: PACE.recoveryS }, PACE.measureAnswers, 20, throttledEvery, 13_000);
    s = paceAfter(s, throttled({ sentAt: 14_000, acceptedRate: 20, recentShare: 0.1 }), 14_000);
    if (rate === null) {
      expect(s.rate).toBeNull();
      // 2 in 20, and the 429 that judged them.
      expect(s.ownShare).toBeCloseTo(3 / 21, 9);
    } else {
      expect(s.rate).toBeCloseTo(rate, 9);
    }
  });
});
