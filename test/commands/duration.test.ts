import { describe, expect, it } from 'vitest';
import { parseDuration, parseDurationFlag } from '../../src/commands/context.js';
import { MAX_AGE_MS, MAX_WAIT_MS } from '../../src/duration.js';

describe('parseDuration', () => {
  it.each([
    ['90s', 90_000], ['15m', 900_000], ['2h', 7_200_000], ['30d', 2_592_000_000], ['500ms', 500],
    ['20', 20_000], ['1.5m', 90_000], [' 10S ', 10_000], ['0', 0],
  ])('%s → %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', 'abc', '10x', '-5s', '1e3', '5 minutes', 's'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it('names the flag in the usage error', () => {
    expect(() => parseDurationFlag('--max-outage', 1, MAX_WAIT_MS)('soon')).toThrow(/--max-outage expects a duration .* got "soon"/);
    expect(() => parseDurationFlag('--max-outage', 1, MAX_WAIT_MS)('0')).toThrow(/--max-outage/);
    expect(parseDurationFlag('--max-outage', 0, MAX_WAIT_MS)('0')).toBe(0);
  });

  it.each([
    // A Node timer holds at most 2³¹−1 ms (24.8 days); a longer one fires at once.
    ['--max-outage', MAX_WAIT_MS, '24d', 24 * 86_400_000, '25d', '--max-outage expects a duration of at most 24d00h, got "25d"'],
    ['--older-than', MAX_AGE_MS, '36500d', 36_500 * 86_400_000, '99999999999d', '--older-than expects a duration of at most 36500d00h, got "99999999999d"'],
  ])('%s takes at most its longest duration, and names it when refused', (flag, max, longest, longestMs, tooLong, message) => {
    const parse = parseDurationFlag(flag, 1, max);
    expect(parse(longest)).toBe(longestMs);
    expect(() => parse(tooLong)).toThrow(message);
  });
});
