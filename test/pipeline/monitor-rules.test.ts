import { describe, expect, it } from 'vitest';
import { retriesPileUp, sendsHeldBy } from '../../src/pipeline/monitor.js';

describe('retriesPileUp: when a half minute of 429s and transient failures makes a warn line', () => {
  it.each<[string, number, number, number, boolean]>([
    ['none', 1200, 0, 0, false],
    // A rate cap found and held: adaptive concurrency meets it, 2–3% of requests answered 429.
    ['2.5% of 1,200 requests answered 429', 1200, 30, 0, false],
    ['just under 5%', 1200, 40, 19, false],
    ['5% (429s and failures together)', 1200, 40, 20, true],
    ['a quarter of the requests refused', 1200, 300, 0, true],
    ['a partner failing half of what little is sent', 8, 0, 4, false],
    ['… at least 5 of them', 10, 2, 3, true],
  ])('%s', (_label, attempts, throttled, errors, expected) => {
    expect(retriesPileUp(attempts, throttled, errors)).toBe(expected);
  });
});

describe('sendsHeldBy: whether --rate or the input held a window our side kept below the ceiling', () => {
  it.each<[string, number[], number | null, 'rate' | 'input']>([
    ['no --rate', [40, 40, 40], null, 'input'],
    ['at --rate 40/s every second', [40, 39, 41, 40], 40, 'rate'],
    ['at it half the time (the last second partial)', [40, 38, 33, 12], 40, 'rate'],
    ['a --rate far above what the input gave (--rate 5000, 300/s sent)', [300, 310, 290], 5000, 'input'],
    ['a run shorter than a second, its one sample partial', [15], 40, 'input'],
    ['no samples', [], 40, 'input'],
  ])('%s', (_label, sent, rate, expected) => {
    expect(sendsHeldBy(sent, rate)).toBe(expected);
  });
});
