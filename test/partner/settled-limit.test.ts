import { describe, expect, it } from 'vitest';
import { limitSetBy, settledLimitOf, settledPaceOf, type LimitSample } from '../../src/partner/settled-limit.js';

describe('settledLimitOf', () => {
  it.each([
    [[], null],
    [[7], { limit: 7, samples: 1 }],
    // Fewer than 10 samples: all of them; nearest-rank median.
    [[32, 4, 6, 5, 6, 7], { limit: 6, samples: 6 }],
    // 40 samples: the last 10 (a quarter would be fewer); the early overshoot does not count.
    [[...Array(30).fill(30), 6, 6, 7, 6, 5, 6, 8, 6, 6, 7], { limit: 6, samples: 10 }],
    // 100 samples: the last quarter, 25.
    [[...Array(75).fill(2), ...Array(25).fill(12)], { limit: 12, samples: 25 }],
  ])('%j → %j', (limits, expected) => {
    expect(settledLimitOf(limits)).toEqual(expected);
  });
});

describe('settledPaceOf', () => {
  it.each<[string, (number | null)[], number | null]>([
    ['no samples', [], null],
    ['never paced', [null, null, null], null],
    // A short run (all its samples count): not pacing in its first second, then climbing.
    ['a short run climbing from its first cut: nearest-rank median', [null, 30, 34, 36, 37], 34],
    ['paced in fewer than half of the samples that count', [null, null, null, 40, 41], null],
    ['paced in exactly half', [null, null, 40, 41], 40],
    // 40 samples: the last 10; a pace early in the run and its end without pace do not count.
    ['pacing that ended before the last samples', [...Array(30).fill(40), ...Array(10).fill(null)], null],
    ['swinging about a cap of 40 at the end', [...Array(30).fill(null), 38, 40, 41, 39, 38, 40, 42, 38, 40, 41], 40],
    ['a zero pace is not a pace', [0, 0, 0, 20], null],
  ])('%s', (_label, paces, expected) => {
    expect(settledPaceOf(paces)).toBe(expected);
  });
});

describe('limitSetBy', () => {
  const sample = (lim: number, inFlight: number, pushedBack = 0): LimitSample => ({ lim, inFlight, pushedBack });
  it.each<[string, LimitSample[], number, unknown, ReturnType<typeof limitSetBy>]>([
    ['a window in use most of the time, below the ceiling', [sample(4, 1), sample(6, 5), sample(9, 8), sample(9, 9)], 9, 32, 'partner'],
    ['a window in use in exactly half of the samples', [sample(4, 1), sample(4, 2)], 4, 32, 'partner'],
    // --rate, or rows read slower than the partner answers: the window never had to shrink.
    ['a window seldom in use, no 429 or failure', [sample(4, 1), sample(4, 1.9), sample(4, 2.5)], 4, 32, 'run'],
    ['a window seldom in use but pushed back once (a 429)', [sample(4, 1), sample(3.2, 1, 1), sample(3.2, 1)], 3.2, 32, 'partner'],
    ['at the ceiling: the user\'s limit, however busy', [sample(8, 8, 3), sample(8, 8)], 8, 8, 'ceiling'],
    ['no recorded ceiling (an old run): below it by definition', [sample(5, 5)], 5, undefined, 'partner'],
  ])('%s', (_label, samples, settled, ceiling, expected) => {
    expect(limitSetBy(samples, settled, ceiling)).toBe(expected);
  });
});
