import { describe, expect, it } from 'vitest';
import { settledLimitOf } from '../../src/report/timeline.js';

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
