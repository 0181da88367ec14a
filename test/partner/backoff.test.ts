import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { calculateRetryDelay, MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../src/partner/index.js';

const base = { baseMs: 500, capMs: 30_000, retryAfterCapMs: 120_000 };

describe('calculateRetryDelay', () => {
  it.each([
    // attempt, random, expected: full jitter below min(cap, base·2^(attempt-1))
    [1, 0, 0],
    [1, 0.5, 250],
    [2, 0.5, 500],
    [3, 0.5, 1000],
    [4, 0.999, 3996],
    [10, 0.5, 15_000], // 500·2^9 = 256000 > cap 30000
    [1000, 0.5, 15_000], // 2^999 must not overflow past the cap
  ])('attempt %i with random %f waits %i ms', (attempt, random, expected) => {
    expect(calculateRetryDelay({ ...base, attempt, random: () => random })).toBe(expected);
  });

  it('honours Retry-After, with a jitter below the base', () => {
    expect(calculateRetryDelay({ ...base, attempt: 1, retryAfterMs: 2000, random: () => 0 })).toBe(2000);
    expect(calculateRetryDelay({ ...base, attempt: 3, retryAfterMs: 2000, random: () => 0.5 })).toBe(2250);
  });

  it('gives up (null) when Retry-After exceeds the cap', () => {
    expect(calculateRetryDelay({ ...base, attempt: 1, retryAfterMs: 120_001, random: () => 0 })).toBeNull();
    expect(calculateRetryDelay({ ...base, attempt: 1, retryAfterMs: 120_000, random: () => 0 })).toBe(120_000);
  });

  it('stays within the ceiling even for out-of-contract random values', () => {
    expect(calculateRetryDelay({ ...base, attempt: 1, random: () => 1 })).toBe(499);
    expect(calculateRetryDelay({ ...base, attempt: 1, random: () => -3 })).toBe(0);
    expect(calculateRetryDelay({ ...base, attempt: 1, random: () => Number.NaN })).toBe(0);
    expect(calculateRetryDelay({ ...base, attempt: 0, random: () => 0.5 })).toBe(250);
  });

  it('property: without Retry-After the delay is an integer in [0, min(cap, base·2^(attempt-1))]', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, baseMs, capMs, r) => {
          const delay = calculateRetryDelay({ attempt, baseMs, capMs, retryAfterCapMs: 1, random: () => r });
          expect(delay).not.toBeNull();
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(Math.min(capMs, baseMs * 2 ** (attempt - 1)));
        },
      ),
    );
  });

  it('property: Retry-After within the cap is never shortened; beyond it the answer is null', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 600_000 }),
        fc.integer({ min: 0, max: 300_000 }),
        fc.integer({ min: 1, max: 50 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retryAfterMs, retryAfterCapMs, attempt, r) => {
          const delay = calculateRetryDelay({ attempt, retryAfterMs, baseMs: 500, capMs: 30_000, retryAfterCapMs, random: () => r });
          if (retryAfterMs > retryAfterCapMs) {
            expect(delay).toBeNull();
          } else {
            expect(delay).toBeGreaterThanOrEqual(retryAfterMs);
            expect(delay).toBeLessThan(retryAfterMs + 500);
          }
        },
      ),
    );
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-20T18:04:05Z');

  it.each([
    ['2', 2000],
    [' 120 ', 120_000],
    ['0', 0],
    ['Fri, 20 Nov 2026 18:04:07 GMT', 2000],
    ['Fri, 20 Nov 2026 18:04:05 GMT', 0],
    ['Fri, 20 Nov 2026 18:00:00 GMT', 0], // in the past: retry now
    ['Sunday, 22-Nov-26 18:04:05 GMT', 2 * 86_400_000], // obsolete RFC 850 form
    // A broken gateway's numbers and far dates: at most 100 years, a time a date can hold.
    ['18446744073709551615', MAX_RETRY_AFTER_MS],
    ['99999999999999999999999999999999', MAX_RETRY_AFTER_MS],
    ['Sat, 13 Sep 275760 00:00:00 GMT', MAX_RETRY_AFTER_MS],
  ])('reads %j as %i ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it.each([undefined, '', '  ', '-3', '1.5', 'soon', 'abc 12'])('ignores %j', (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it('property: delay-seconds round-trips and an HTTP-date of now+s gives s seconds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 86_400 }), (seconds) => {
        expect(parseRetryAfter(String(seconds), now)).toBe(seconds * 1000);
        expect(parseRetryAfter(new Date(now + seconds * 1000).toUTCString(), now)).toBe(seconds * 1000);
      }),
    );
  });
});
