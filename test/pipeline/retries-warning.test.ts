import { describe, expect, it } from 'vitest';
import { retriesPileUp } from '../../src/pipeline/monitor.js';

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
