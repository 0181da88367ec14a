import { describe, expect, it } from 'vitest';
import { parseDuration, parseDurationFlag } from '../../src/commands/context.js';

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
    expect(() => parseDurationFlag('--max-outage')('soon')).toThrow(/--max-outage expects a duration .* got "soon"/);
    expect(() => parseDurationFlag('--max-outage')('0')).toThrow(/--max-outage/);
  });
});
