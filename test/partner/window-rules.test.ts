import { describe, expect, it } from 'vitest';
import {
  WINDOW_RULES as R,
  createWindowState,
  effectiveWindow,
  nextWindowState,
  type WindowEvent,
  type WindowState,
} from '../../src/partner/_window-rules.js';

type Ok = Extract<WindowEvent, { type: 'ok' }>;
type Throttled = Extract<WindowEvent, { type: 'throttled' }>;

const ok = (fields: Partial<Ok> = {}): Ok => ({ type: 'ok', latencyMs: 100, sentAt: 0, inFlightAtSend: 64, paceLimited: false, ...fields });
const throttled = (fields: Partial<Throttled> = {}): Throttled => ({
  type: 'throttled', sentAt: 0, sendRate: 50, acceptedRate: 40, sustainedRate: 40, throttledShare: 0.02, ...fields,
});

/** A state after slow start, as a table row sets it up. */
function stateWith(fields: Partial<WindowState>, ceiling = 32): WindowState {
  return { ...createWindowState(ceiling, 0), slowStart: false, ...fields };
}

/**
 * Feeds `n` ok answers of `latencyMs`, one per ms from `from`, each sent at its own time, with the
 * window not in use (so that only the latency rule moves it).
 */
function feedOk(state: WindowState, n: number, latencyMs: number, from: number): WindowState {
  let s = state;
  for (let i = 0; i < n; i += 1) s = nextWindowState(s, ok({ latencyMs, sentAt: from + i, inFlightAtSend: 0 }), from + i);
  return s;
}

describe('createWindowState', () => {
  it.each([
    [32, undefined, 4],
    [2, undefined, 2],
    [32, 10, 10],
    [8, 10, 8],
  ])('ceiling %i, initial window %s → window %i in slow start', (ceiling, initial, window) => {
    const state = createWindowState(ceiling, 0, initial);
    expect(state.window).toBe(window);
    expect(state.slowStart).toBe(true);
    expect(state.rate).toBeUndefined();
  });

  it.each([[0], [1.5], [-3], [Number.NaN]])('refuses the ceiling %s', (ceiling) => {
    expect(() => createWindowState(ceiling, 0)).toThrow(RangeError);
  });

  it('refuses an initial window below 1', () => {
    expect(() => createWindowState(8, 0, 0.5)).toThrow(RangeError);
  });

  // A pace an earlier run settled at (a rate cap it found): paced just below it, as after a 429 met
  // at that rate, with the window's headroom above the requests that pace put in flight.
  it.each<[string, number, number, number, number]>([
    ['ceiling 32, 8 in flight at 40/s', 32, 8, 40, 8 * R.windowHeadroom],
    ['the window stops at the ceiling', 12, 8, 40, 12],
    ['a slow pace', 32, 1, 2, R.windowHeadroom],
  ])('%s: paced below it, returning to it, no slow start', (_label, ceiling, initial, pace, window) => {
    const state = createWindowState(ceiling, 0, initial, pace);
    expect(state.window).toBe(window);
    expect(state.slowStart).toBe(false);
    expect(state.rate).toBeCloseTo(pace * R.rateBackoff, 10);
    expect(state.rateAtThrottle).toBe(pace);
    expect(state.probingRateSince).toBeUndefined();
  });

  it('a paced start does not take the remembered rate for the best this night\'s partner accepts (its cap may have fallen since)', () => {
    const warm = createWindowState(32, 0, 8, 40);
    expect(warm.peakAcceptedRate).toBe(0);
    // The remembered pace is on trial as a pace just started is: it may have been 429s of chance.
    expect(warm.paceTrial).toEqual({ kind: 'warm', since: R.startTrialDelayMs, answers: 0, throttled: 0, floor: (40 * R.rateBackoff) / 2 });
    // A cap now a tenth of the remembered pace is paced at once, with no low trial: still heading
    // down to the cap, the start's trial begins again from this cut.
    const next = nextWindowState(warm, throttled({ sentAt: 100, sendRate: 38, acceptedRate: 4, sustainedRate: 4, throttledShare: 0.9 }), 1000);
    expect(next.rate).toBeCloseTo(38 * (1 - 0.9) * R.rateBackoff, 9);
    expect(next.paceTrial).toMatchObject({ kind: 'warm', since: 1000 + R.startTrialDelayMs, answers: 0 });
  });

  it('a remembered pace this run\'s window cannot carry ends at the first answer, held back or not', () => {
    // Ceiling 8 at 200 ms carries at most 8 × 2 (headroom) / 0.2 s = 80 requests/s.
    const s = nextWindowState(createWindowState(8, 0, 8, 200), ok({ sentAt: 0, latencyMs: 200, inFlightAtSend: 8, paceLimited: false }), 300);
    expect(s.rate).toBeUndefined();
  });

  it('time without answers before the first one (the run starting) counts as one second at most', () => {
    const start = { ...createWindowState(32, 0, 8, 40), smoothedLatencyMs: 200 };
    const late = nextWindowState(start, ok({ sentAt: 29_800, latencyMs: 200, inFlightAtSend: 8, paceLimited: true }), 30_000);
    const prompt = nextWindowState(start, ok({ sentAt: 800, latencyMs: 200, inFlightAtSend: 8, paceLimited: true }), 1000);
    expect(late.rate).toBeCloseTo(prompt.rate as number, 10);
    expect(late.rate).toBeLessThan(42);
  });

  it('a pace below the lowest rate used paces at that rate', () => {
    expect(createWindowState(8, 0, 1, 0.2).rate).toBe(R.minRate);
  });

  it.each([[0], [-1], [Number.NaN], [Number.POSITIVE_INFINITY]])('refuses the pace %s', (pace) => {
    expect(() => createWindowState(8, 0, 4, pace)).toThrow(RangeError);
  });

  it('a paced start returns to the remembered rate within about a second of being held back, then probes past it', () => {
    let s: WindowState = { ...createWindowState(32, 0, 8, 40), smoothedLatencyMs: 200 };
    s = nextWindowState(s, ok({ sentAt: 0, latencyMs: 200, inFlightAtSend: 8, paceLimited: true }), 500);
    expect(s.rate).toBeGreaterThan(40 * R.rateBackoff);
    expect(s.rate).toBeLessThan(40);
    s = nextWindowState(s, ok({ sentAt: 500, latencyMs: 200, inFlightAtSend: 8, paceLimited: true }), 1500);
    expect(s.rate).toBeGreaterThanOrEqual(40);
    s = nextWindowState(s, ok({ sentAt: 1500, latencyMs: 200, inFlightAtSend: 8, paceLimited: true }), 2500);
    expect(s.probingRateSince).toBe(2500);
    s = nextWindowState(s, ok({ sentAt: 2500, latencyMs: 200, inFlightAtSend: 8, paceLimited: true }), 3500);
    expect(s.rate).toBeGreaterThan(40 * (1 + R.rateProbePerS / 2));
  });
});

describe('the window on ok answers', () => {
  it.each<[string, Partial<WindowState>, Partial<Ok>, number]>([
    ['slow start adds half a request per answer', { slowStart: true, window: 4 }, {}, 4 + R.slowStartGrowth],
    ['additive increase adds 1/window per answer (one per round trip)', { window: 10 }, {}, 10.1],
    ['never beyond the ceiling', { slowStart: true, window: 31.8 }, {}, 32],
    ['not while the window is not in use (less than half of it in flight)', { window: 10 }, { inFlightAtSend: 4 }, 10],
    ['not from an answer to a request sent before the last cut', { window: 10, lastCutAt: 50 }, { sentAt: 40 }, 10],
    ['not while the baseline is re-measured', { window: 10, probing: true }, {}, 10],
  ])('%s', (_name, setup, event, window) => {
    const next = nextWindowState(stateWith(setup), ok({ sentAt: 100, ...event }), 200);
    expect(next.window).toBeCloseTo(window, 9);
  });

  it('smooths the latency like TCP SRTT (1/8 of the new sample)', () => {
    const first = nextWindowState(stateWith({}), ok({ latencyMs: 200 }), 1);
    expect(first.smoothedLatencyMs).toBe(200);
    const second = nextWindowState(first, ok({ latencyMs: 280 }), 2);
    expect(second.smoothedLatencyMs).toBeCloseTo(210, 9);
  });
});

describe('the window on errors', () => {
  it.each<[string, Partial<WindowState>, number, number, boolean]>([
    ['cuts multiplicatively and ends slow start', { slowStart: true, window: 20 }, 100, 20 * R.throttleBackoff, false],
    ['never below 1', { window: 1.1 }, 100, 1, false],
    ['once per round trip: not for a request sent before the last cut', { window: 20, lastCutAt: 150 }, 100, 20, false],
  ])('%s', (_name, setup, sentAt, window, slowStart) => {
    const next = nextWindowState(stateWith(setup), { type: 'error', sentAt }, 200);
    expect(next.window).toBeCloseTo(window, 9);
    expect(next.slowStart).toBe(slowStart);
  });
});

describe('429s before pacing', () => {
  it('a stray 429 cuts the window only, by strayThrottleBackoff, once per second', () => {
    const start = stateWith({ slowStart: true, window: 20 });
    const cut = nextWindowState(start, throttled({ sentAt: 100, throttledShare: 0.02 }), 200);
    expect(cut.window).toBeCloseTo(20 * R.strayThrottleBackoff, 9);
    expect(cut.rate).toBeUndefined();
    expect(cut.slowStart).toBe(false);

    const soon = nextWindowState(cut, throttled({ sentAt: 300, throttledShare: 0.04 }), 700);
    expect(soon.window).toBe(cut.window);
    const later = nextWindowState(cut, throttled({ sentAt: 300, throttledShare: 0.04 }), 200 + R.throttleCutSpacingMs);
    expect(later.window).toBeCloseTo(20 * R.strayThrottleBackoff ** 2, 9);
  });

  it('a fair share of 429s starts pacing below the send rate less that share, returning to the accepted rate', () => {
    const start = stateWith({ window: 30, smoothedLatencyMs: 200 });
    // Sent 100/s, 40% answered 429: the partner takes about 60/s; it accepted 70/s over two seconds.
    const next = nextWindowState(start, throttled({ sentAt: 100, sendRate: 100, acceptedRate: 70, throttledShare: 0.4 }), 200);
    expect(next.rate).toBeCloseTo(60 * R.rateBackoff, 9);
    expect(next.rateAtThrottle).toBe(70);
    // The window keeps room for twice what the rate puts in flight (57/s × 0.2 s × 2 ≈ 22.8).
    expect(next.window).toBeCloseTo(Math.max(30 * R.throttleBackoff, 2 * next.rate! * 0.2), 9);
    expect(next.lastCutAt).toBe(200);
  });

  it('starts pacing even on an answer to a request sent before the last cut (the share is the evidence)', () => {
    const start = stateWith({ window: 16, lastCutAt: 150 });
    const next = nextWindowState(start, throttled({ sentAt: 100, throttledShare: 0.3 }), 200);
    expect(next.rate).toBeDefined();
  });

  it('does not pace when it knows no send rate yet', () => {
    const next = nextWindowState(stateWith({ window: 16 }), throttled({ sendRate: 0, acceptedRate: 0, throttledShare: 0.5 }), 200);
    expect(next.rate).toBeUndefined();
    expect(next.window).toBeCloseTo(16 * R.throttleBackoff, 9);
  });
});

describe('429s while pacing', () => {
  const pacing = (fields: Partial<WindowState> = {}): WindowState =>
    stateWith({ window: 20, smoothedLatencyMs: 200, rate: 42, rateAtThrottle: 40, throttleCutAt: 0, lastCutAt: 0, peakAcceptedRate: 40, ...fields });

  it.each<[string, Partial<Throttled>, number]>([
    ['a stray 429 cuts to a share of the accepted rate', { acceptedRate: 40 }, 40 * R.rateBackoff],
    ['… never more than strayCutLimit below the pace (the count held idle moments)', { acceptedRate: 20 }, 42 * (1 - R.strayCutLimit) * R.rateBackoff],
    ['… never above the pace', { acceptedRate: 60 }, 42 * R.rateBackoff],
    ['a fair share of 429s cuts from the send rate less that share', { sendRate: 42, acceptedRate: 40, throttledShare: 0.5 }, 21 * R.rateBackoff],
  ])('%s', (_name, event, rate) => {
    const next = nextWindowState(pacing(), throttled({ sentAt: 5000, ...event }), 6000);
    expect(next.rate).toBeCloseTo(rate, 9);
    expect(next.throttleCutAt).toBe(6000);
  });

  it('a stray 429 within a second of the last cut changes nothing', () => {
    const state = pacing({ throttleCutAt: 5500, lastCutAt: 5500 });
    expect(nextWindowState(state, throttled({ sentAt: 5600 }), 6000)).toEqual({ ...state });
  });

  it('a fair share of 429s cuts once per round trip, not once per second', () => {
    const state = pacing({ throttleCutAt: 5500, lastCutAt: 5500 });
    const before = nextWindowState(state, throttled({ sentAt: 5400, throttledShare: 0.4 }), 5700);
    expect(before.rate).toBe(42);
    const after = nextWindowState(state, throttled({ sentAt: 5600, throttledShare: 0.4 }), 5800);
    expect(after.rate).toBeLessThan(42);
  });

  it('within a cap\'s second of pacing starting, a fair share of 429s cuts no lower than what the partner accepted', () => {
    // Pacing started at 5000 after slow start's burst: the answers since are that burst's 429s (66%
    // of the last 50), the send rate is still its 81/s, and the cap's count of it refused this
    // request, sent under the new pace. From those alone the pace would fall to 27.5/s × 0.95.
    const state = pacing({ rate: 55, rateAtThrottle: 58, pacingStartedAt: 5000, throttleCutAt: 5000, lastCutAt: 5000, peakAcceptedRate: 28 });
    const event = throttled({ sentAt: 5200, sendRate: 81, acceptedRate: 48, sustainedRate: 29, throttledShare: 0.66 });
    const next = nextWindowState(state, event, 5400);
    expect(next.rate).toBeCloseTo(48 * R.rateBackoff, 9);
    expect(next.rateAtThrottle).toBe(48);
    expect(next.pacingStartedAt).toBe(5000);
    // A cap's second later the send rate less the share counts again: a cap that dropped is followed down.
    const later = nextWindowState(state, { ...event, sentAt: 5000 + R.throttleCutSpacingMs }, 6200);
    expect(later.rate).toBeCloseTo(81 * (1 - 0.66) * R.rateBackoff, 9);
  });

  it.each<[string, Partial<WindowState>, Partial<Throttled>, number]>([
    // Within the second, the higher of the two estimates: here the send rate less the share.
    ['within the second, the send rate less the share when it is the higher', { pacingStartedAt: 5000 }, { sendRate: 81, throttledShare: 0.4, acceptedRate: 30 }, 81 * 0.6 * R.rateBackoff],
    // A remembered pace (a warm start) did not start from a burst: no floor.
    ['a paced (warm) start has no such second', createWindowState(32, 0, 4, 42), { acceptedRate: 48 }, 81 * 0.34 * R.rateBackoff],
    // Pacing that ended and starts again is a start of its own (`cutRate` from no pace): no floor.
    ['pacing starting again within the second of an earlier start', { rate: undefined, pacingStartedAt: 5000 }, { acceptedRate: 48 }, 81 * 0.34 * R.rateBackoff],
  ])('%s', (_name, fields, event, rate) => {
    const state = { ...pacing({ rate: 55, rateAtThrottle: 58, throttleCutAt: 5000, lastCutAt: 5000 }), ...fields };
    const next = nextWindowState(state, throttled({ sentAt: 5200, sendRate: 81, throttledShare: 0.66, ...event }), 5400);
    expect(next.rate).toBeCloseTo(rate, 9);
  });

  it('records when pacing starts from unpaced sending, not when it cuts again', () => {
    const started = nextWindowState(stateWith({ window: 30, smoothedLatencyMs: 200 }), throttled({ sentAt: 100, sendRate: 100, acceptedRate: 70, throttledShare: 0.4 }), 200);
    expect(started.pacingStartedAt).toBe(200);
    const again = nextWindowState(started, throttled({ sentAt: 1500, sendRate: 60, acceptedRate: 50, throttledShare: 0.3 }), 1700);
    expect(again.rate).toBeLessThan(started.rate!);
    expect(again.pacingStartedAt).toBe(200);
  });

  describe('pacing is on trial from its start: do the 429s end when paced?', () => {
    // Unpaced, window 30 at 200 ms: a fair share of 429s starts pacing at 100 × 0.6 × 0.95 = 57/s.
    const START = 200;
    const started = (): WindowState =>
      nextWindowState(stateWith({ window: 30, smoothedLatencyMs: 200, peakAcceptedRate: 70 }), throttled({ sentAt: 100, sendRate: 100, acceptedRate: 70, throttledShare: 0.4 }), START);
    /** Answers to `total` requests sent from `from` on, one a ms, the first `throttledCount` of them 429s (a fifth of the answers each), answered 200 ms later. */
    const answer = (state: WindowState, from: number, total: number, throttledCount: number): WindowState => {
      let s = state;
      for (let i = 0; i < total; i += 1) {
        const sentAt = from + i;
        s = i < throttledCount
          ? nextWindowState(s, throttled({ sentAt, sendRate: 57, acceptedRate: 52, sustainedRate: 52, throttledShare: 0.1 }), sentAt + 200)
          : nextWindowState(s, ok({ sentAt, latencyMs: 200, inFlightAtSend: 12, paceLimited: true }), sentAt + 200);
      }
      return s;
    };
    const judged = START + R.startTrialDelayMs;

    it('counts the answers to requests sent from startTrialDelayMs after the start (the burst\'s count refuses a few paced ones)', () => {
      const s = started();
      expect(s.rate).toBeCloseTo(100 * 0.6 * R.rateBackoff, 9);
      expect(s.paceTrial).toEqual({ kind: 'start', since: judged, answers: 0, throttled: 0, floor: (100 * 0.6 * R.rateBackoff) / 2 });
      expect(answer(s, judged - 10, 10, 0).paceTrial?.answers).toBe(0);
      expect(answer(s, judged, 10, 0).paceTrial?.answers).toBe(10);
    });

    it.each([
      ['none of them 429s: paced below a cap', 0, 'passes'],
      ['trialPassShare of them', Math.floor(R.trialAnswers * R.trialPassShare), 'passes'],
      ['a random 10% of answers, whatever the pace: no cap to pace below', R.trialAnswers / 10, 'fails'],
    ] as const)('after trialAnswers answers, %s', (_name, throttledCount, outcome) => {
      const s = answer(started(), judged, R.trialAnswers, throttledCount);
      expect(s.paceTrial).toBeUndefined();
      // The best rate seen is not lowered by a start's trial (a low pace's trial sets it).
      expect(s.peakAcceptedRate).toBe(70);
      if (outcome === 'passes') {
        expect(s.rate).toBeDefined();
        expect(s.trialFailedAt).toBe(Number.NEGATIVE_INFINITY);
      } else {
        expect(s.rate).toBeUndefined();
        expect(s.trialFailedAt).toBeGreaterThan(judged);
      }
    });

    it('paced at a slow cap, a 429 every few seconds passes (7 of 80 answers over 20 s: the probe past it); a low pace\'s trial would fail', () => {
      const spaced = (state: WindowState): WindowState => {
        let s = state;
        for (let i = 0; i < R.trialAnswers; i += 1) {
          const sentAt = judged + i * 250;
          s = i % 13 === 0
            ? nextWindowState(s, throttled({ sentAt, sendRate: 4, acceptedRate: 3.8, sustainedRate: 3.8, throttledShare: 0.08 }), sentAt + 200)
            : nextWindowState(s, ok({ sentAt, latencyMs: 200, inFlightAtSend: 1, paceLimited: true }), sentAt + 200);
        }
        return s;
      };
      const slow = { ...started(), rate: 3.8, rateAtThrottle: 4, peakAcceptedRate: 4 };
      const passed = spaced(slow);
      expect(passed.paceTrial).toBeUndefined();
      expect(passed.rate).toBeDefined();
      const low = spaced({ ...slow, paceTrial: { kind: 'low', since: judged, answers: 0, throttled: 0, floor: 1.9 } });
      expect(low.rate).toBeUndefined();
      expect(low.trialFailedAt).toBeGreaterThan(judged);
    });

    it('a remembered pace passes by its share of 429s alone; failing, it stops pacing with no cool-down (tonight finds its own)', () => {
      // Last night's 3/s, reached by spiralling under 429s of chance: 8 of 80 answers over 27 s.
      let s: WindowState = { ...createWindowState(8, 0, 1, 3), smoothedLatencyMs: 30 };
      const since = R.startTrialDelayMs;
      for (let i = 0; i < R.trialAnswers; i += 1) {
        const sentAt = since + i * 333;
        s = i % 10 === 0
          ? nextWindowState(s, throttled({ sentAt, sendRate: 3, acceptedRate: 2.7, sustainedRate: 2.7, throttledShare: 0.1 }), sentAt + 30)
          : nextWindowState(s, ok({ sentAt, latencyMs: 30, inFlightAtSend: 1, paceLimited: true }), sentAt + 30);
      }
      expect(s.rate).toBeUndefined();
      expect(s.trialFailedAt).toBe(Number.NEGATIVE_INFINITY);
      // A fair share of 429s paces again at once, on a trial of its own.
      const again = nextWindowState(s, throttled({ sentAt: s.lastCutAt + 1, sendRate: 200, acceptedRate: 150, throttledShare: 0.25 }), s.lastCutAt + 100);
      expect(again.paceTrial).toMatchObject({ kind: 'start' });
    });

    it('a pace cut below retrialShare of where its trial passed is tried again (a trial passed by luck must not let 429s of chance spiral it)', () => {
      const passed = answer(started(), judged, R.trialAnswers, 0);
      expect(passed.trialPassedRate / passed.rate!).toBeCloseTo(1, 2);
      const stray = (state: WindowState, at: number): WindowState =>
        nextWindowState(state, throttled({ sentAt: at - 200, sendRate: state.rate!, acceptedRate: 0.5 * state.rate!, throttledShare: 0.1 }), at);
      let s = passed;
      let at = 3000;
      while (s.paceTrial === undefined && at < 60_000) {
        s = stray(s, at);
        at += 1100;
      }
      expect(s.paceTrial).toMatchObject({ kind: 'start', answers: 0 });
      expect(s.rate!).toBeLessThan(passed.trialPassedRate * R.retrialShare);
      expect(s.rate!).toBeGreaterThan(passed.trialPassedRate * R.retrialShare * 0.8);
    });

    it('a cut for a fair share of 429s (still heading down to the cap) starts the trial again; a stray one does not', () => {
      const s = answer(started(), judged, 30, 0);
      const down = nextWindowState(s, throttled({ sentAt: 1300, sendRate: 57, acceptedRate: 40, throttledShare: 0.3 }), 1500);
      expect(down.paceTrial).toMatchObject({ kind: 'start', since: 1500 + R.startTrialDelayMs, answers: 0 });
      const stray = nextWindowState(s, throttled({ sentAt: 1300, sendRate: 57, acceptedRate: 52, throttledShare: 0.1 }), 1500);
      expect(stray.rate).toBeLessThan(s.rate!);
      expect(stray.paceTrial).toMatchObject({ kind: 'start', since: judged, answers: 31, throttled: 1 });
    });

    it('heading below a quarter of the best rate turns it into a low pace\'s trial', () => {
      const s = nextWindowState(started(), throttled({ sentAt: 400, sendRate: 20, acceptedRate: 12, throttledShare: 0.5 }), 600);
      expect(s.paceTrial).toMatchObject({ kind: 'low', since: 600, answers: 0 });
    });

    it('for trialCooldownMs after it failed, a fair share of 429s does not start pacing: the window answers, once a second', () => {
      const failed = answer(started(), judged, R.trialAnswers, R.trialAnswers / 10);
      const at = failed.trialFailedAt + 2000;
      const overshoot = throttled({ sentAt: at - 200, sendRate: 60, acceptedRate: 45, throttledShare: 0.25 });
      const cut = nextWindowState(failed, overshoot, at);
      expect(cut.rate).toBeUndefined();
      expect(cut.window).toBeCloseTo(failed.window * R.strayThrottleBackoff, 9);
      expect(nextWindowState(cut, { ...overshoot, sentAt: at + 10 }, at + 500).window).toBe(cut.window);
      // After the cool-down, it paces again (on trial again).
      const later = failed.trialFailedAt + R.trialCooldownMs + 1;
      expect(nextWindowState(failed, { ...overshoot, sentAt: later - 200 }, later).paceTrial).toMatchObject({ kind: 'start' });
    });
  });

  describe('a pace heading below a quarter of the best accepted rate is on trial', () => {
    // Best 60/s; a fair share of 429s heads the pace to 8/s, below 15.
    const low = (fields: Partial<WindowState> = {}): WindowState =>
      nextWindowState(pacing({ rate: 12, peakAcceptedRate: 60, ...fields }), throttled({ sentAt: 5000, sendRate: 12, acceptedRate: 8, throttledShare: 0.3 }), 6000);
    /** Answers to requests sent after the trial began: `throttled` of them 429s, the rest ok. */
    const answer = (state: WindowState, total: number, throttledCount: number): WindowState => {
      let s = state;
      for (let i = 0; i < total; i += 1) {
        const sentAt = 6001 + i;
        s = i < throttledCount
          ? nextWindowState(s, throttled({ sentAt, sendRate: 8, acceptedRate: 6, sustainedRate: 6, throttledShare: 0.1 }), sentAt + 200)
          : nextWindowState(s, ok({ sentAt, latencyMs: 200, inFlightAtSend: 2 }), sentAt + 200);
      }
      return s;
    };

    it('it paces there, and counts the answers to requests sent from then on', () => {
      const s = low();
      expect(s.rate).toBeCloseTo(12 * 0.7 * R.rateBackoff, 9);
      expect(s.paceTrial).toEqual({ kind: 'low', since: 6000, answers: 0, throttled: 0, floor: (12 * 0.7 * R.rateBackoff) / 2 });
      // An answer to a request sent before the trial does not count.
      expect(nextWindowState(s, ok({ sentAt: 5999 }), 6100).paceTrial?.answers).toBe(0);
    });

    it.each([
      ['few 429s: the cap did fall that low (a token bucket\'s burst spent), pacing goes on', 2, 'passes'],
      ['at most trialPassShare of them 429s', Math.floor(R.trialAnswers * R.trialPassShare), 'passes'],
      ['a fair share of 429s: they come whatever our rate (chance, a shared quota), pacing stops', 10, 'fails'],
    ] as const)('after trialAnswers answers, %s', (_name, throttledCount, outcome) => {
      const s = answer(low(), R.trialAnswers, throttledCount);
      expect(s.paceTrial).toBeUndefined();
      if (outcome === 'passes') {
        expect(s.rate).toBeDefined();
        expect(s.peakAcceptedRate).toBeCloseTo(12 * 0.7, 9);
        expect(s.trialFailedAt).toBe(Number.NEGATIVE_INFINITY);
      } else {
        expect(s.rate).toBeUndefined();
        expect(s.trialFailedAt).toBeGreaterThan(6000);
      }
    });

    it('before it is judged, its pace is not cut below half of where it began (no spiral by the 429s it tells apart)', () => {
      let s = low();
      const floor = s.paceTrial!.floor;
      for (let i = 1; i <= 10; i += 1) {
        s = nextWindowState(s, throttled({ sentAt: s.lastCutAt + 1, sendRate: 4, acceptedRate: 3, throttledShare: 0.3 }), s.lastCutAt + 300);
      }
      expect(s.paceTrial).toBeDefined();
      expect(s.rate).toBeCloseTo(floor, 9);
    });

    it('for trialCooldownMs after a failed trial, heading that low stops pacing at once', () => {
      const failed = answer(low(), R.trialAnswers, 10);
      const again = (at: number) => nextWindowState(
        { ...failed, rate: 12, rateAtThrottle: 12, lastCutAt: at - 1000 },
        throttled({ sentAt: at - 500, sendRate: 12, acceptedRate: 8, throttledShare: 0.3 }), at,
      );
      expect(again(failed.trialFailedAt + R.trialCooldownMs - 1).rate).toBeUndefined();
      expect(again(failed.trialFailedAt + R.trialCooldownMs + 1).paceTrial).toBeDefined();
    });
  });

  it('keeps pacing when the send rate collapsed but the partner still takes its lower cap (senders waiting out Retry-After)', () => {
    // The cap fell from 40 to 15: half the answers are 429s and most senders wait, so the send rate
    // less the share is 10/s, below a quarter of 40 once backed off; the partner still took 15/s.
    const state = pacing({ rate: 38, peakAcceptedRate: 40 });
    const next = nextWindowState(state, throttled({ sentAt: 5000, sendRate: 20, acceptedRate: 15, throttledShare: 0.5 }), 6000);
    expect(next.rate).toBeCloseTo(10 * R.rateBackoff, 9);
    expect(next.rateAtThrottle).toBe(15);
  });

  it('measures the best rate by what the partner sustained over two whole seconds, not by a start-up burst', () => {
    // Across a cap's second and most of the next, 57 accepted in a second and a bit; 40/s sustained.
    const next = nextWindowState(stateWith({ window: 20 }), throttled({ sentAt: 100, acceptedRate: 57, sustainedRate: 40 }), 200);
    expect(next.peakAcceptedRate).toBe(40);
  });

  it('does not cut the window below the room the new rate needs', () => {
    const next = nextWindowState(pacing({ window: 8 }), throttled({ sentAt: 5000, acceptedRate: 40 }), 6000);
    // 38/s × 0.2 s × 2 = 15.2 > 8: the window stays.
    expect(next.window).toBe(8);
  });
});

describe('the pacing rate between 429s', () => {
  const pacing = stateWith({ rate: 36, rateAtThrottle: 40, rateUpdatedAt: 0, smoothedLatencyMs: 200 });

  it('returns exponentially to the rate of the last 429 while pacing holds requests back', () => {
    const next = nextWindowState(pacing, ok({ paceLimited: true, sentAt: 400 }), 500);
    // Half of the gap in half a second (time constant 1 s, linearised), plus the slow probe.
    expect(next.rate).toBeCloseTo(36 + 4 * 0.5 + 40 * R.rateProbePerS * 0.5, 9);
  });

  it('does not move while the senders, not pacing, are the limit', () => {
    const next = nextWindowState(pacing, ok({ paceLimited: false, sentAt: 400 }), 500);
    expect(next.rate).toBe(36);
    expect(next.rateUpdatedAt).toBe(500);
  });

  it('probes beyond it, slowly at first and faster the longer it goes unthrottled', () => {
    let s = stateWith({ rate: 40, rateAtThrottle: 40, rateUpdatedAt: 0, probingRateSince: 0, smoothedLatencyMs: 200 });
    const growthAt = (t: number): number => {
      const before = s.rate as number;
      s = nextWindowState(s, ok({ paceLimited: true, sentAt: t - 100 }), t);
      return ((s.rate as number) - before) / before;
    };
    const early = growthAt(100);
    for (let t = 200; t < 10_000; t += 100) growthAt(t);
    const late = growthAt(10_000);
    expect(early).toBeCloseTo(R.rateProbePerS * 0.1, 3);
    // Two doubling times later, the probe grows about four times as fast.
    expect(late / early).toBeGreaterThan(3.5);
    expect(late / early).toBeLessThan(4.5);
  });

  it('ends once the window alone would bind first (the learned rate no longer matters)', () => {
    // Ceiling 32 at 200 ms carries 160/s; with headroom 2, pacing above 320/s is pointless.
    const state = stateWith({ rate: 319, rateAtThrottle: 300, rateUpdatedAt: 0, smoothedLatencyMs: 200, probingRateSince: 0 });
    expect(nextWindowState(state, ok({ paceLimited: true, sentAt: 900, latencyMs: 200 }), 1000).rate).toBeUndefined();
  });
});

describe('the latency rule', () => {
  const round = R.roundSamples;

  /** A round of `round` answers of `latencyMs`, one per ms from `from`, each sent with `inFlight` in flight. */
  const feedRound = (state: WindowState, latencyMs: number, inFlight: number, from: number): WindowState => {
    let s = state;
    for (let i = 0; i < round; i += 1) s = nextWindowState(s, ok({ latencyMs, sentAt: from + i, inFlightAtSend: inFlight }), from + i);
    return s;
  };
  /** A window of 32 in use at a 200 ms baseline, then a round at `latencyMs` that cuts it. */
  const cutAt = (latencyMs: number): WindowState => {
    let s = feedRound(stateWith({ window: 32 }), 200, 32, 0);
    s = feedRound(s, latencyMs, 32, 1000);
    s = feedRound(s, latencyMs, 32, 2000);
    expect(s.window).toBeLessThan(32);
    expect(s.latencyCut).toMatchObject({ latencyMs, inFlight: 32, windowBefore: 32, baselineMs: 200 });
    return s;
  };

  // Little's law checks each latency cut: a queue's rise above the baseline falls with the requests
  // in flight; the partner's own latency (or other clients' queue) does not.
  it.each([
    // [what, latency after the cut, in flight after it, baseline after, window after (from the cut's)]
    ['the partner\'s own latency rose 5×: the same latency at half the requests', 1000, 16, 1000, 'restored'],
    ['within noise of it: 10% lower at half the requests', 900, 16, 900, 'restored'],
    ['a queue: the rise halves with the requests in flight', 600, 16, 200, 'kept'],
    ['a queue draining more slowly than Little\'s law (rise ×0.7 at half)', 760, 16, 200, 'kept'],
  ] as const)('after a latency cut, %s', (_what, after, inFlight, baseline, window) => {
    const cut = cutAt(1000);
    const cutWindow = cut.window;
    const s = feedRound(cut, after, inFlight, 3000);
    expect(s.latencyCut === undefined || s.latencyCut.latencyMs !== 1000).toBe(true);
    if (window === 'restored') {
      expect(s.baselineMs).toBe(baseline);
      expect(s.latencyTrendMs).toBe(after);
      expect(s.window).toBe(32);
    } else {
      expect(s.baselineMs).toBe(200);
      expect(s.window).toBeLessThanOrEqual(cutWindow);
    }
  });

  it('a round that did not run with clearly fewer requests in flight leaves the cut to the next one', () => {
    const cut = cutAt(1000);
    // Slow start had outgrown the round that caused the cut: as many in flight after it.
    let s = feedRound(cut, 1000, 30, 3000);
    expect(s.baselineMs).toBe(200);
    expect(s.latencyCut).toMatchObject({ windowBefore: 32 });
    s = feedRound(s, 1000, 12, 4000);
    expect(s.baselineMs).toBe(1000);
    expect(s.window).toBe(32);
  });

  it('a 429 or an error after a latency cut leaves nothing to judge', () => {
    const cut = cutAt(1000);
    const s = nextWindowState(cut, { type: 'error', sentAt: 2500 }, 2600);
    expect(s.latencyCut).toBeUndefined();
    expect(feedRound(s, 1000, 12, 3000).baselineMs).toBe(200);
  });

  it('re-measures a stale baseline even while every round reads as queueing', () => {
    // Cuts that cannot be judged (the window not in use: in flight never falls) must not go on for
    // ever: once the baseline is baselineTtlMs old, a round at half the window measures it again.
    let s = feedRound(stateWith({ window: 32 }), 200, 8, 0);
    let t = 1000;
    for (; !s.probing && t < 60_000; t += 1000) s = feedRound(s, 1000, 8, t);
    expect(s.probing).toBe(true);
    expect(t).toBeGreaterThan(R.baselineTtlMs);
    s = feedRound(s, 1000, 8, t);
    expect(s.baselineMs).toBe(1000);
  });

  it('the first round sets the baseline; a round within the allowance keeps the window', () => {
    let s = feedOk(stateWith({ window: 20 }), round, 200, 0);
    expect(s.baselineMs).toBe(200);
    s = feedOk(s, round, 245, 1000);
    expect(s.window).toBe(20);
    expect(s.lastCutAt).toBe(Number.NEGATIVE_INFINITY);
  });

  it('cuts in proportion when the partner queues: latency well above the baseline, relatively and absolutely', () => {
    let s = feedOk(stateWith({ window: 40 }), round, 200, 0);
    // Queueing doubles the latency: the smoothed latency rises past half the allowance (225 ms),
    // the round past all of it (250 ms), and the window is cut to what would give 225 ms.
    s = feedOk(s, round, 400, 1000);
    expect(s.latencyTrendMs).toBe(250);
    expect(s.window).toBeCloseTo((40 * 225) / 400, 9);
    expect(s.slowStart).toBe(false);
    expect(s.lastCutAt).toBe(1000 + round - 1);
  });

  it('never cuts below half the window in one round', () => {
    let s = feedOk(stateWith({ window: 40 }), round, 100, 0);
    s = feedOk(s, round, 5000, 1000);
    expect(s.window).toBeGreaterThanOrEqual(20);
  });

  it.each([
    ['a rise within the absolute floor (our own event loop, not the partner)', 2, 40],
    ['a rise within the relative tolerance of a slow partner', 1000, 1190],
  ])('does not cut on %s', (_name, base, risen) => {
    let s = feedOk(stateWith({ window: 32 }), round, base, 0);
    for (let r = 1; r <= 8; r += 1) s = feedOk(s, round, risen, r * 1000);
    expect(s.window).toBeGreaterThanOrEqual(32);
  });

  it('does not cut on one slow round while the smoothed latency stays near the baseline', () => {
    let s = feedOk(stateWith({ window: 32 }), round, 200, 0);
    s = feedOk(s, round, 290, 1000);
    expect(s.latencyTrendMs).toBeCloseTo(222.5, 9);
    expect(s.window).toBeGreaterThanOrEqual(32);
  });

  it('ignores answers to requests sent before the round began', () => {
    let s = feedOk(stateWith({ window: 20 }), round, 200, 0);
    const startedAt = s.roundStartedAt;
    for (let i = 0; i < round; i += 1) s = nextWindowState(s, ok({ latencyMs: 900, sentAt: startedAt - 1 }), startedAt + i);
    expect(s.roundLatencies).toEqual([]);
    expect(s.window).toBeGreaterThanOrEqual(20);
  });

  it('re-measures a baseline not confirmed for baselineTtlMs with a round at half the window', () => {
    let s = feedOk(stateWith({ window: 20 }), round, 200, 0);
    // The partner's own latency rose for good, within the allowance: no cut, but the smoothed
    // latency no longer comes near the baseline.
    let t = 1000;
    for (; !s.probing && t < 60_000; t += 1000) s = feedOk(s, round, 245, t);
    expect(s.probing).toBe(true);
    expect(t).toBeGreaterThan(R.baselineTtlMs);
    expect(s.window).toBe(20);
    expect(effectiveWindow(s)).toBe(10);
    s = feedOk(s, round, 240, t);
    expect(s.probing).toBe(false);
    expect(s.baselineMs).toBe(240);
    expect(effectiveWindow(s)).toBe(20);
  });
});
