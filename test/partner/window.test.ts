// The concurrency window (src/partner/limiter/window.ts) as tables: growth, the latency gradient,
// the errors that grow with load, and Little's law's check of each cut.
import { describe, expect, it } from 'vitest';
import { createWindow, WINDOW, windowAfter, type WindowAnswer, type WindowState } from '../../src/partner/limiter/window.js';

const ok = (fields: Partial<WindowAnswer> = {}): WindowAnswer => ({ signal: 'ok', latencyMs: 200, sentAt: 0, inFlightAtSend: 32, ...fields });

/**
 * Feeds one round of requests sent together at `from`, answered one per ms after it, the first
 * `errors` of them failures; returns the state and the time after.
 */
function round(state: WindowState, from: number, fields: Partial<WindowAnswer> & { errors?: number } = {}): [WindowState, number] {
  let s = state;
  const { errors = 0, ...answer } = fields;
  for (let i = 1; i <= WINDOW.roundAnswers; i += 1) {
    s = windowAfter(s, ok({ sentAt: from, ...answer, ...(i <= errors ? { signal: 'error' } : {}) }), from + i);
  }
  return [s, from + WINDOW.roundAnswers + 1];
}

/** A window after slow start, with a baseline of 200 ms and no errors measured. */
function settled(window = 32, ceiling = 64): [WindowState, number] {
  const start = { ...createWindow(ceiling, 0, window, true) };
  // Not in use (nothing in flight): only the measuring moves.
  return round(start, 1, { inFlightAtSend: 0 });
}

describe('createWindow', () => {
  it.each([
    [32, undefined, false, 4, true],
    [2, undefined, false, 2, true],
    [32, 10, true, 10, false],
    [8, 10, false, 8, true],
  ])('ceiling %i, initial %s, warm %s → window %i, slow start %s', (ceiling, initial, warm, window, slowStart) => {
    const s = createWindow(ceiling, 0, initial, warm);
    expect(s.window).toBe(window);
    expect(s.slowStart).toBe(slowStart);
  });

  it.each([[0], [1.5], [-3], [Number.NaN]])('refuses the ceiling %s', (ceiling) => {
    expect(() => createWindow(ceiling, 0)).toThrow(RangeError);
  });

  it('refuses an initial window below 1', () => {
    expect(() => createWindow(8, 0, 0.5)).toThrow(RangeError);
  });
});

describe('growth (AIMD: while in use, never from requests sent before a cut)', () => {
  it.each<[string, Partial<WindowState>, Partial<WindowAnswer>, number]>([
    ['slow start: half a request per answer', { slowStart: true, window: 8 }, { inFlightAtSend: 8 }, 8 + WINDOW.slowStartGrowth],
    ['after it: one request per window of answers', { slowStart: false, window: 8 }, { inFlightAtSend: 8 }, 8 + 1 / 8],
    ['three workers sharing the partner\'s queue: a third each, so that together they grow as one', { slowStart: false, window: 8, flows: 3 }, { inFlightAtSend: 8 }, 8 + 1 / 24],
    ['half the window in flight is in use', { slowStart: false, window: 8 }, { inFlightAtSend: 4 }, 8 + 1 / 8],
    ['less is not: a run that cannot fill it learns nothing', { slowStart: false, window: 8 }, { inFlightAtSend: 3 }, 8],
    ['an error grows nothing', { slowStart: true, window: 8 }, { signal: 'error', inFlightAtSend: 8 }, 8],
    ['an answer to a request sent before the last cut', { slowStart: false, window: 8, lastCutAt: 10 }, { sentAt: 9, inFlightAtSend: 8 }, 8],
    ['never past the ceiling', { slowStart: true, window: 16 }, { inFlightAtSend: 16 }, 16],
  ])('%s', (_name, fields, answer, window) => {
    const s = { ...createWindow(16, 0), ...fields };
    expect(windowAfter(s, ok(answer), 20).window).toBeCloseTo(window, 9);
  });
});

describe('latency: Gradient2\'s gradient when a round is queueing', () => {
  // Baseline 200 ms: the allowance is max(20% of it, 50 ms) = 50 ms.
  it.each<[string, number, number]>([
    ['within half the allowance: no cut', 220, 32],
    ['a queue: cut to window × (baseline + allowance/2) / round', 300, 32 * (225 / 300)],
    ['never more than halved in one round', 1000, 32 * WINDOW.maxCut],
  ])('%s (round median %i ms)', (_name, latencyMs, window) => {
    let [s, t] = settled();
    // The smoothed series must rise past half the allowance too: rounds at that latency, then the judged one.
    let cutAt: number | undefined;
    for (let r = 0; r < 8 && cutAt === undefined; r += 1) {
      [s, t] = round(s, t, { latencyMs, inFlightAtSend: 0 });
      if (s.window < 32) cutAt = r;
    }
    expect(s.window).toBeCloseTo(window, 6);
    if (window < 32) expect(s.cut?.cause).toBe('latency');
  });

  it('our own CPU adds a few tens of ms: under the 50 ms floor, a 20 ms baseline is not cut at 60 ms', () => {
    let s = createWindow(64, 0, 32, true);
    let t = 1;
    [s, t] = round(s, t, { latencyMs: 20, inFlightAtSend: 0 });
    for (let r = 0; r < 10; r += 1) [s, t] = round(s, t, { latencyMs: 60, inFlightAtSend: 0 });
    expect(s.window).toBe(32);
  });

  it.each<[string, number, boolean]>([
    // The cut round had 32 in flight at 300 ms: a queue's rise (100 ms) scales with the requests in flight.
    ['latency that fell with fewer in flight was a queue: the cut stands', 250, false],
    ['latency that did not fall is the partner\'s own: the cut is undone, and it is the baseline', 300, true],
  ])('%s', (_name, latencyMs, undone) => {
    let [s, t] = settled();
    for (let r = 0; r < 8 && s.cut === undefined; r += 1) [s, t] = round(s, t, { latencyMs: 300, inFlightAtSend: 32 });
    const cutTo = s.window;
    expect(cutTo).toBeLessThan(32);
    // A round with clearly fewer in flight (16 of 32) judges it.
    [s, t] = round(s, t, { latencyMs, inFlightAtSend: 16 });
    expect(s.cut).toBeUndefined();
    if (undone) {
      expect(s.window).toBeGreaterThanOrEqual(32);
      expect(s.baselineMs).toBe(300);
    } else {
      expect(s.window).toBeLessThan(32);
    }
  });
});

describe('errors: overload only when they grow with load', () => {
  it.each<[string, number, number]>([
    ['a few, as the partner fails now and then: no cut', 2, 32],
    ['over its own share by the margin: AIMD\'s decrease, decided as soon as they are that many', 16, 32 * WINDOW.backoff],
  ])('%s (%i errors in a round)', (_name, errors, window) => {
    let [s, t] = settled();
    // Not in use (the ok answers grow nothing), so that only the errors move it.
    [s, t] = round(s, t, { errors, inFlightAtSend: 0 });
    expect(s.window).toBeCloseTo(window, 9);
  });

  it.each<[string, number, boolean]>([
    ['errors that fell with the requests in flight were overload: the cut stands', 0, false],
    ['errors that did not fall are the partner\'s own: the cut is undone and their share is its floor', 8, true],
  ])('%s', (_name, errorsAfter, undone) => {
    let [s, t] = settled();
    [s, t] = round(s, t, { errors: 8, inFlightAtSend: 32 });
    expect(s.cut?.cause).toBe('errors');
    [s, t] = round(s, t, { errors: errorsAfter, inFlightAtSend: 16 });
    if (undone) {
      expect(s.window).toBeGreaterThanOrEqual(32);
      expect(s.errorFloor).toBeGreaterThan(WINDOW.errorMargin);
      // As many errors again are the partner's own now: no cut.
      const before = s.window;
      [s, t] = round(s, t, { errors: Math.round((s.errorFloor ?? 0) * WINDOW.roundAnswers), inFlightAtSend: 0 });
      expect(s.window).toBe(before);
    } else {
      expect(s.window).toBeLessThan(32 * WINDOW.backoff + 1);
    }
  });
});
